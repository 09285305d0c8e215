#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: enroot_import
short_description: Import a container image into an enroot squashfs file, atomically and idempotently
version_added: 0.1.0
description:
  - Runs C(enroot import) to turn a container image into a squashfs file at O(dest), and
    optionally C(enroot create) to unpack it as the named container C(pyxis_<name>), the one
    C(srun --container-name=<name>) uses with pyxis.
  - The import writes into a temporary directory next to O(dest) and renames the finished
    file into place, so a failed, timed-out or interrupted import (SIGTERM, SIGINT, SIGHUP)
    leaves no partial file at O(dest) and no temporary directory behind.
  - Idempotent. Next to O(dest) the module keeps an import record, C(<dest>.import.json), with
    the URI, the image digest (when it can be known) and the file size. A later run leaves
    the file alone when it exists, matches the record and, for C(docker://) images, the
    registry still serves the recorded digest (C(enroot digest)). For a digest-pinned URI
    (C(...@sha256:<hex>)) the pinned digest is recorded and compared, without asking the
    registry. When the digest cannot be known (C(dockerd://), C(podman://), an enroot without
    the C(digest) command, a registry that cannot be reached) an existing file is kept.
  - Every option is checked before anything runs (URI form, O(dest) and its directory, O(name),
    ranges, O(arch), O(executable), O(container_record_dir)); bad input fails with one message
    naming the option, the value and what is valid, and nothing on the host changes.
  - A file at O(dest) that has no import record was not made by this module; it is kept
    unless O(force=true).
author:
  - gpucluster.bringup contributors (@gpucluster)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
    details: Queries the registry digest and the container list (read-only), reports what would change, writes nothing.
  diff_mode:
    support: full
    details: Shows the image file, its URI and digest, and the container before and after.
options:
  uri:
    description:
      - The image, as enroot 4.x names it.
      - For a registry, C(docker://[USER@][REGISTRY/]IMAGE[:TAG][@sha256:DIGEST]), where the first
        part is the registry when it holds a C(.) or a C(:port) (C(docker://nvcr.io/nvidia/pytorch:24.01-py3),
        C(docker://127.0.0.1:5000/test/tiny:1.0)) and otherwise a Docker Hub name
        (C(docker://ubuntu), C(docker://nvidia/cuda:12.4.1-base-ubuntu22.04)); or enroot's own
        C(docker://[USER@]REGISTRY#IMAGE[:TAG][@sha256:DIGEST]) (C(docker://nvcr.io#nvidia/pytorch:24.01-py3)).
        A digest pins the image (a tag next to it is ignored, as enroot ignores it).
      - A reference without a scheme, as C(srun --container-image) takes it (C(127.0.0.1:5000/test/tiny:1.0),
        C(nvcr.io#nvidia/pytorch:24.01-py3), C(ubuntu:24.04)), is read as C(docker://) and the reference, as pyxis
        reads it; RV(uri) returns the C(docker://) form. A file path (C(/shared/x.sqsh)) is refused, it needs no import.
      - C(dockerd://IMAGE[:TAG]) for the local Docker daemon, C(podman://IMAGE[:TAG]) for local Podman storage.
      - In an sbatch script C(#SBATCH --container-image=host:5000#img:tag) is cut at the C(#); use the
        C(/) form there.
    type: str
    required: true
  dest:
    description:
      - Absolute path of the squashfs file to write, e.g. C(/shared/images/pytorch+24.01-py3.sqsh).
        Its directory must exist, be writable by the user the module runs as and not be on a
        kernel pseudo file system (C(/proc), C(/sys), C(/dev)) - unless the file is there and current,
        then a user who can only read it (an image root imported into a shared directory) gets the
        container of O(name) from it, and the module fails only if the image must be imported again.
      - An existing directory stands for the file enroot would name by default in it
        (C(nvidia+pytorch+24.01-py3.sqsh) for C(docker://nvcr.io#nvidia/pytorch:24.01-py3));
        RV(dest) returns the file.
    type: path
    required: true
  name:
    description:
      - Also unpack the image as the enroot container C(pyxis_<name>), so that
        C(srun --container-name=<name>) finds it with pyxis' C(container_scope=global).
      - The container is recreated when the image file changes (see O(container_record_dir)).
      - Containers live in the C(ENROOT_DATA_PATH) of the user the module runs as.
    type: str
  force:
    description: Import again (and recreate the container) even when the file and digest are current.
    type: bool
    default: false
  retries:
    description:
      - Transfer retries for each download (C(ENROOT_TRANSFER_RETRIES) for this import only).
      - Left out, the node's C(enroot.conf) stays in force (the enroot role's C(enroot_conf.ENROOT_TRANSFER_RETRIES)).
    type: int
  connect_timeout:
    description:
      - Seconds to wait for a connection to the registry (C(ENROOT_CONNECT_TIMEOUT) for this import only).
      - Left out, the node's C(enroot.conf) stays in force (the enroot role's C(enroot_conf.ENROOT_CONNECT_TIMEOUT)); the
        module's own manifest query then waits 30 seconds.
    type: int
  timeout:
    description:
      - Seconds the whole import may take; the import is stopped and cleaned up after that.
        The registry digest query (C(enroot digest)) before it has the same limit of its own.
        V(0) means no limit.
    type: int
    default: 0
  arch:
    description:
      - Image architecture to import (C(enroot import --arch)), as C(uname -m) names it -
        V(x86_64), V(aarch64) or V(ppc64le); the host's by default.
    type: str
  executable:
    description: The enroot command, a name looked up in C(PATH) or an absolute path.
    type: str
    default: enroot
  container_record_dir:
    description:
      - Directory where the module remembers which image file (path, size, mtime, digest) each
        named container was created from, so that a container is recreated when the image file
        changes, also when another host re-imported a file on shared storage.
      - An absolute path; created when missing. Defaults to C(~/.local/state/gpucluster.bringup/enroot)
        of the user the module runs as.
    type: path
notes:
  - enroot reads its settings from the environment first, then C(enroot.conf); registry
    credentials come from C($ENROOT_CONFIG_PATH/.credentials). For an internal plain-HTTP
    registry set C(enroot_conf.ENROOT_ALLOW_HTTP=true) for the role gpucluster.bringup.enroot, which writes
    C(ENROOT_ALLOW_HTTP) to C(/etc/enroot/enroot.conf), the only place pyxis jobs read it from. The
    task's C(environment) keyword reaches this module's enroot only, not the jobs.
  - Some enroot releases cannot import a tag that holds only an OCI image manifest from a
    Distribution 2.8 registry (404 "OCI manifest found, but accept header does not support
    OCI manifests"); the module reports that case in so many words.
seealso:
  - name: enroot import
    description: The enroot command this module runs.
    link: https://github.com/NVIDIA/enroot/blob/master/doc/cmd/import.md
"""

EXAMPLES = r"""
- name: Import PyTorch from NGC to the shared image directory
  gpucluster.bringup.enroot_import:
    uri: docker://nvcr.io#nvidia/pytorch:24.01-py3
    dest: /shared/images/nvidia+pytorch+24.01-py3.sqsh
    timeout: 3600

- name: Unpack it on every node as the named container srun --container-name=pytorch uses
  gpucluster.bringup.enroot_import:
    uri: docker://nvcr.io#nvidia/pytorch:24.01-py3
    dest: /shared/images/nvidia+pytorch+24.01-py3.sqsh
    name: pytorch

- name: Import a digest-pinned image (no registry call once the file holds that digest)
  gpucluster.bringup.enroot_import:
    uri: docker://nvcr.io/nvidia/pytorch@sha256:7a982606367a3542274d4dc4fb30de0f0eb6e03ee560f26b4bd00975af405b0a
    dest: /shared/images/

# An internal plain-HTTP registry: set enroot_conf.ENROOT_ALLOW_HTTP: true for the role
# gpucluster.bringup.enroot (enroot.conf, read by pyxis jobs too); the environment
# keyword below reaches this task's enroot only.
- name: Import from an internal plain-HTTP registry
  gpucluster.bringup.enroot_import:
    uri: docker://registry.cluster.internal:5000/ml/base:2024.06
    dest: /shared/images/ml+base+2024.06.sqsh
  environment:
    ENROOT_ALLOW_HTTP: "yes"
"""

RETURN = r"""
dest:
  description: The squashfs file.
  returned: always
  type: str
  sample: /shared/images/nvidia+pytorch+24.01-py3.sqsh
uri:
  description: The image URI, with C(docker://) in front when O(uri) had no scheme.
  returned: always
  type: str
  sample: docker://nvcr.io#nvidia/pytorch:24.01-py3
digest:
  description: The image digest the registry serves (or served at import, or the one pinned in the URI), when it can be known.
  returned: always
  type: str
  sample: sha256:7a982606367a3542274d4dc4fb30de0f0eb6e03ee560f26b4bd00975af405b0a
imported:
  description: Whether the image was (or in check mode would be) imported.
  returned: always
  type: bool
container:
  description: The enroot container name, C(pyxis_<name>), when O(name) is set.
  returned: when O(name) is set
  type: str
  sample: pyxis_pytorch
created:
  description: Whether the container was (or would be) created.
  returned: when O(name) is set
  type: bool
container_reason:
  description: Why the container was or was not (re)created.
  returned: when O(name) is set
  type: str
  sample: the image file changed since the container was created
reason:
  description: Why the image was or was not imported.
  returned: always
  type: str
  sample: the image file holds digest sha256:7a98..., the one the registry serves
actions:
  description: What was done (or would be done in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["import docker://nvcr.io#nvidia/pytorch:24.01-py3", "create pyxis_pytorch"]
error_kind:
  description:
    - On failure, the class of the error - V(invalid_uri), V(invalid_name), V(bad_dest), V(bad_option),
      V(missing_enroot), V(missing_command), V(plain_http), V(tls), V(unreachable), V(auth), V(not_found),
      V(oci_manifest), V(registry_error), V(bad_manifest), V(checksum), V(no_space), V(capabilities), V(timeout), V(interrupted) or V(unknown).
  returned: on failure
  type: str
  sample: oci_manifest
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot._enroot_import_io import EnrootImport


def main():
    module = AnsibleModule(
        argument_spec=dict(
            uri=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            name=dict(type='str'),
            force=dict(type='bool', default=False),
            retries=dict(type='int'),
            connect_timeout=dict(type='int'),
            timeout=dict(type='int', default=0),
            arch=dict(type='str'),
            executable=dict(type='str', default='enroot'),
            container_record_dir=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    EnrootImport(module, open_url).run()


if __name__ == '__main__':
    main()
