# -*- coding: utf-8 -*-
"""Connection plugin of the SIMULATED cluster only (not part of the collection): podman exec with pipelining.

containers.podman.podman runs every module in four `podman exec` calls (make a temporary directory, chmod the
module file, run it, remove the directory) plus a `podman mount` per task: it cannot pipeline, because it runs
`podman exec` without stdin attached. This subclass attaches stdin (`podman exec -i`) when Ansible pipes a
module, so a module runs in one `podman exec`, as it runs in one ssh command on a real cluster with
pipelining on; the container is mounted only when a file is copied. The container may be named apart from
ansible_host (ansible_podman_container), so that one inventory holds both a node's address for ssh and its
container for this plugin. Everything else is the parent's.
On the simulated cluster a second site.yml took 213 s with the parent plugin and 118 s with this one
(2 cores, same converged cluster, changed=0 both times).

Found through ANSIBLE_CONNECTION_PLUGINS (scripts/cluster.sh, molecule.yml and the molecule tests set it).
"""
from __future__ import annotations

import os
import shlex

import yaml
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible_collections.containers.podman.plugins.connection.podman import DOCUMENTATION as _PODMAN_DOCUMENTATION
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection


def _documentation():
    """The parent's documentation with this plugin's name and a pipelining option that is on by default."""
    doc = yaml.safe_load(_PODMAN_DOCUMENTATION)
    doc["name"] = "podman_pipelined"
    doc["short_description"] = "podman exec with pipelining (the simulated cluster's connection)"
    doc["options"]["pipelining"] = {
        "description": ["Run modules through stdin in one podman exec, as ssh does with pipelining on."],
        "type": "boolean", "default": True, "vars": [{"name": "ansible_pipelining"}, {"name": "ansible_podman_pipelining"}]}
    doc["options"]["podman_container"] = {
        "description": ["The container to exec in, when it is not ansible_host (an inventory whose ansible_host is the",
                        "node's address for ssh)."],
        "type": "string", "vars": [{"name": "ansible_podman_container"}]}
    return yaml.safe_dump(doc)


DOCUMENTATION = _documentation()


class Connection(PodmanConnection):
    """containers.podman.podman with pipelining (podman exec -i) and a lazy mount."""

    transport = "podman_pipelined"
    has_pipelining = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._mount_tried = False

    def _connect(self):
        if self.get_option("podman_container"):
            self._container_id = self.get_option("podman_container")
        # no `podman mount` per task: a piped module needs no file in the container
        super(PodmanConnection, self)._connect()  # pylint: disable=bad-super-call
        self._connected = True

    def _ensure_mount(self):
        if not self._mount_tried:
            self._mount_tried = True
            PodmanConnection._connect(self)  # mounts the container's filesystem (or leaves podman cp)

    def exec_command(self, cmd, in_data=None, sudoable=False):
        super(PodmanConnection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)  # pylint: disable=bad-super-call
        args = ["exec", "-i"] if in_data is not None else ["exec"]
        if self.user:
            args.extend(("--user", self.user))
        return self._podman(args, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)

    def put_file(self, in_path, out_path):
        self._ensure_mount()
        return super().put_file(in_path, out_path)

    def fetch_file(self, in_path, out_path):
        self._ensure_mount()
        if self._mount_point and not os.path.lexists(to_bytes(self._mount_point) + to_bytes(in_path, errors="surrogate_or_strict")):
            # a file on a volume or bind mount of the container is not in the container's mounted root file system
            # (the parent read it there and failed with ENOENT): podman cp reads it through the container's mounts
            mount_point, self._mount_point = self._mount_point, None
            try:
                return super().fetch_file(in_path, out_path)
            finally:
                self._mount_point = mount_point
        return super().fetch_file(in_path, out_path)
