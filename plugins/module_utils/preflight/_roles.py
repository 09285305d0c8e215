# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight of site.yml: every role's inputs, checked before the first change.

The action plugin ``gpucluster.bringup.preflight`` reads each role's
``meta/argument_specs.yml`` and ``defaults/main.yml``, takes for every host a
role runs on the host's value of each variable (inventory or extra vars, else
the role default), templates it, and hands plain data to this module:

* ``plugin_utils/_preflight_spec.py`` (controller side) has Ansible's own
  ArgumentSpecValidator judge every value against its argument spec entry
  (type, choices, elements, required, sub-options, unknown keys) and words
  each answer; this module gets the values as Ansible converts them;
* :func:`argument_problems` checks what :data:`ARGUMENT_SPEC` cannot say of the
  preflight task's own options (group names, a role given twice or without
  groups, hosts the inventory does not have) before any role value is looked at;
* :func:`role_problems` makes the checks each role makes in its own preflight
  that need no facts (the MIG layout is in the catalogue, the package source
  has its location, the database password rules, numbers in the range the role
  can use, partition hostlists that parse, the fabric file on the controller ...);
* :func:`report` groups the problems of all hosts: identical problems of
  several hosts become one line naming the hosts as a hostlist;
* :func:`nvml_plugin_problem` judges, on each GPU node of the slurm role with
  ``slurm_gres_autodetect: nvml``, what the node says about Slurm's NVML
  plugin: before anything changes, apt's dry run of the role's packages
  (:func:`parse_apt_simulation`); after the install, whether ``gpu_nvml.so``
  is in Slurm's plugin directory.

Secrets (options with ``no_log``, or named like a password, key, secret,
token or credentials) are named, never shown.

Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils import _distributions as distributions
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _node_type as node_type
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _mig_layouts as mig_layouts
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot as _enroot_settings
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_conf
from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress, expand, natural_key
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, require_int
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import validate_node_name
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_munge import (munge_key_errors, munge_key_file_errors,
                                                                                            munge_key_path_errors, munge_key_source_errors)
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import parse_block_sizes

COLLECTION = 'gpucluster.bringup'

# The inventory groups, fixed: the playbooks run on them and the roles read them (README, "Using it on a real cluster").
CONTROLLER_GROUP = 'slurm_controller'
COMPUTE_GROUP = 'slurm_compute'
GPU_GROUP = 'gpu_nodes'
LOGIN_GROUP = 'slurm_login'
SLURMDBD_GROUP = 'slurmdbd'

# The roles of site.yml and the inventory groups each runs on (the playbooks
# slurm_munge.yml, nvml.yml, mig_layout.yml, accounting.yml, slurm_cluster.yml, enroot.yml).
SITE_ROLES = (
    ('munge', (CONTROLLER_GROUP, COMPUTE_GROUP, SLURMDBD_GROUP, LOGIN_GROUP)),
    ('nvml', (GPU_GROUP,)),
    ('mig', (GPU_GROUP,)),
    ('slurmdbd', (SLURMDBD_GROUP,)),
    ('slurm_healthcheck', (COMPUTE_GROUP,)),
    ('slurm', (CONTROLLER_GROUP, COMPUTE_GROUP, LOGIN_GROUP)),
    ('enroot', (CONTROLLER_GROUP, COMPUTE_GROUP, LOGIN_GROUP)),
    ('pyxis', (CONTROLLER_GROUP, COMPUTE_GROUP, LOGIN_GROUP)),
)

_SECRET_WORDS = ('pass', 'key', 'secret', 'token', 'credential')
# names that hold where or who, never the secret itself (munge_key_path, munge_key_src)
_NOT_SECRET_SUFFIXES = ('_path', '_group', '_dir', '_user', '_src')
_MAX_SHOWN = 80
_DB_NAME = re.compile(r'^[A-Za-z0-9_]+$')
_DB_HOST = re.compile(r'^[A-Za-z0-9_.:%-]+$')
_PARTITION_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
_ENROOT_HOOK = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*\.sh$')
_HOOK_NAME = re.compile(r'^[0-9]{2}-[A-Za-z0-9]+-[A-Za-z0-9._-]+$')


def is_secret(name, spec=None):
    """True when the value of option ``name`` must never be shown."""
    if spec and spec.get('no_log'):
        return True
    lowered = name.lower()
    if lowered.endswith(_NOT_SECRET_SUFFIXES):
        return False
    return any(word in lowered for word in _SECRET_WORDS)


def show(value):
    """A short, plain rendering of a value: strings quoted, long values cut."""
    if isinstance(value, bool):
        text = 'true' if value else 'false'
    elif value is None:
        text = 'null'
    else:
        text = repr(value)
    if len(text) > _MAX_SHOWN:
        text = text[:_MAX_SHOWN - 3] + '...'
    return text


def _hosts_of(groups, name):
    hosts = groups.get(name) if isinstance(groups, dict) else None
    return list(hosts or [])


def _flag(value):
    return value is True


def _whole_number(value):
    """The number a key of a free-form dictionary (no spec: slurmdbd_conf) holds, as slurmdbd reads it; None if none."""
    try:
        return require_int('value', value)
    except InputError:
        return None


def _munge(host, values, groups, controller_file=None):
    problems = []
    if 'munge_key_path' in values:
        problems.extend(munge_key_path_errors(values['munge_key_path']))
    problems.extend(munge_key_source_errors(values.get('munge_key_b64'), values.get('munge_key_src')))
    src = values.get('munge_key_src')
    # (an absolute path only: a relative one is found by the role's file lookup, whose search path differs by play)
    if isinstance(src, str) and src.startswith('/') and controller_file is not None:
        problems.extend(munge_key_file_errors(src, controller_file(src)))
    if not _hosts_of(groups, CONTROLLER_GROUP):
        problems.append('inventory group %s has no hosts; its first host holds the munge key' % CONTROLLER_GROUP)
    if isinstance(values.get('munge_key_b64'), str):
        problems.extend(munge_key_errors(values['munge_key_b64']))
    return problems


def _mig(host, values, groups):
    layout = values.get('mig_layout')
    if not isinstance(layout, str) or not layout:
        return []
    custom = values.get(mig_layouts.CUSTOM)
    if not isinstance(custom, dict):
        return []  # not templated (the action leaves it out), or not a dictionary (the argument spec names it)
    catalogue = mig_layouts.layouts(custom)
    if layout not in catalogue:
        return ['mig_layout is %s, not a shipped layout or one of %s; valid layouts: %s (or "" to leave MIG alone)'
                % (show(layout), mig_layouts.CUSTOM, ', '.join(sorted(str(k) for k in catalogue)))]
    gpus = catalogue[layout]
    if not isinstance(gpus, list) or not gpus:
        return ['layout %s is %s; a layout is a non-empty list of GPU entries ({gpu, model, mig, instances}, the gpus option of '
                '%s.nvidia_mig)' % (show(layout), show(gpus), COLLECTION)]
    problems = ['layout %s entry %d is %s; expected a dictionary {gpu, model, mig, instances}' % (show(layout), index, show(entry))
                for index, entry in enumerate(gpus) if not isinstance(entry, dict)]
    integration = values.get('mig_slurm_integration')
    if _flag(integration) and host in _hosts_of(groups, COMPUTE_GROUP) and not _hosts_of(groups, CONTROLLER_GROUP):
        problems.append('mig_slurm_integration is on and %s is in %s, but inventory group %s has no host to run scontrol on; '
                        'add the controller or set mig_slurm_integration: false' % (host, COMPUTE_GROUP, CONTROLLER_GROUP))
    return problems


def _slurmdbd_conf_problems(conf):
    """slurmdbd_conf's keys the role reads: the database and account names, the port, never the password."""
    if not isinstance(conf, dict):
        return []
    problems = []
    for key, value in sorted(conf.items(), key=lambda item: str(item[0]).lower()):
        name = 'slurmdbd_conf.%s' % key
        lower = str(key).lower()
        if lower == 'storagepass':
            problems.append('%s: set the database password with slurmdbd_storage_pass (the value is not shown)' % name)
        elif lower in ('storageloc', 'storageuser') and (not isinstance(value, str) or not _DB_NAME.match(value)):
            problems.append("%s is %s; use letters, digits and '_'" % (name, show(value)))
        elif lower == 'storageport':
            number = _whole_number(value)
            if number is None or not 1 <= number <= 65535:
                problems.append('%s is %s; expected %s' % (name, show(value), _range_text('int', 1, 65535, 'a TCP port')))
    return problems


def _slurmdbd(host, values, groups):
    problems = []
    members = _hosts_of(groups, SLURMDBD_GROUP)
    if len(members) != 1:
        problems.append('inventory group %s must hold exactly one host (where slurmdbd runs), it holds %d%s'
                        % (SLURMDBD_GROUP, len(members), (': ' + ', '.join(members)) if members else ''))
    elif host != members[0]:
        problems.append('run %s.slurmdbd on the slurmdbd host %s (group %s), not on %s' % (COLLECTION, members[0], SLURMDBD_GROUP, host))
    password = values.get('slurmdbd_storage_pass')
    if isinstance(password, str) and password and (len(password) < 8 or re.search(r'[#\s"\'\\]', password)):
        problems.append('slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, '
                        "at least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); "
                        'the value is not shown')
    problems.extend(_slurmdbd_conf_problems(values.get('slurmdbd_conf')))
    accounting = values.get('slurmdbd_accounting')
    for key, value in sorted(accounting.items(), key=lambda item: str(item[0])) if isinstance(accounting, dict) else ():
        number = _whole_number(value)
        if str(key).lower() == 'jobacctgatherfrequency' and value is not None and (number is None or number < 0):
            problems.append('slurmdbd_accounting.%s is %s; expected %s' % (key, show(value), _range_text('int', 0, None, 'seconds; 0 turns the sampling off')))
    value = values.get('slurmdbd_storage_user_host')
    if isinstance(value, str) and not _DB_HOST.match(value):
        problems.append("slurmdbd_storage_user_host is %s; expected a host name, an address or '%%'" % show(value))
    for name in ('slurmdbd_qos', 'slurmdbd_accounts', 'slurmdbd_users'):
        entries = values.get(name)
        if isinstance(entries, list):
            for index, entry in enumerate(entries):
                if isinstance(entry, dict) and not (isinstance(entry.get('name'), str) and entry['name']):
                    problems.append('%s[%d] lacks name (required)' % (name, index))
    return problems


_CONF_SERVER = re.compile(r'^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::(\d{1,5}))?$')


def _configless_problems(values):
    """slurm_configless: SlurmctldParameters must keep enable_configless, the servers must be host[:port] or dns."""
    problems = []
    overrides = values.get('slurm_conf_overrides')
    for key, value in (overrides.items() if isinstance(overrides, dict) else ()):
        if str(key).lower() == 'slurmctldparameters' and \
                'enable_configless' not in [part.strip().lower() for part in str(value or '').split(',')]:
            problems.append('slurm_configless is true but slurm_conf_overrides sets %s=%s without enable_configless: '
                            'slurmctld would refuse to serve the files; add enable_configless to it (comma-separated)'
                            % (key, value if value is not None else '(removed)'))
    servers = values.get('slurm_configless_server')
    if isinstance(servers, list):
        if 'dns' in servers and len(servers) > 1:
            problems.append('slurm_configless_server is [dns] (the DNS SRV record) or a list of host[:port]; got %s' % servers)
        for server in servers:
            match = _CONF_SERVER.match(str(server)) if server != 'dns' else True
            if not match or (match is not True and match.group(1) and not 0 < int(match.group(1)) < 65536):
                problems.append('slurm_configless_server: "%s" is not host[:port] (e.g. ctl or ctl:6817), nor dns' % server)
    return problems


def _topology_problems(values, groups, controller_file=None):
    """slurm_topology: tree needs one fabric source (a file on the controller that is there, or a host and a command); the
    name mapping is a map or a pattern; block sizes as Slurm takes them."""
    topology = values.get('slurm_topology')
    settings = values.get('slurm_topology_settings')
    settings = settings if isinstance(settings, dict) else {}
    problems = []
    if topology == 'tree':
        src, host = settings.get('ibnetdiscover_src'), settings.get('ibnetdiscover_host')
        if bool(src) == bool(host):
            command = ' '.join(settings.get('ibnetdiscover_command') or ['ibnetdiscover'])
            problems.append('slurm_topology is tree: give the fabric as ibnetdiscover prints it with one of '
                            'slurm_topology_settings.ibnetdiscover_src (a file on the Ansible controller) or '
                            'slurm_topology_settings.ibnetdiscover_host (an inventory host to run %s on); %s'
                            % (command, 'both are set' if src else 'neither is set'))
        elif host and host not in _hosts_of(groups, 'all'):
            problems.append('slurm_topology_settings.ibnetdiscover_host is %s, which is not a host of the inventory' % show(host))
        elif host:
            command = settings.get('ibnetdiscover_command')
            if isinstance(command, list) and (not command or not all(isinstance(word, str) and word for word in command)):
                problems.append('slurm_topology_settings.ibnetdiscover_command is %s; expected the command (argv) to run on %s, a '
                                'non-empty list of non-empty words such as [ibnetdiscover]' % (show(command), host))
        elif isinstance(src, str) and controller_file is not None:
            reason = controller_file(src)
            if reason:
                problems.append("slurm_topology_settings.ibnetdiscover_src is %s; expected a file on the Ansible controller holding "
                                "ibnetdiscover's output: %s" % (repr(src) if len(src) < 400 else show(src), reason))
        name_map_src = settings.get('node_name_map_src')
        if isinstance(name_map_src, str) and name_map_src and controller_file is not None:
            reason = controller_file(name_map_src)
            if reason:
                problems.append("slurm_topology_settings.node_name_map_src is %s; expected a file on the Ansible controller in "
                                "ibnetdiscover's --node-name-map format: %s" % (repr(name_map_src) if len(name_map_src) < 400 else show(name_map_src), reason))
        regex = settings.get('name_regex')
        if regex and settings.get('name_map'):
            problems.append('slurm_topology_settings.name_map and slurm_topology_settings.name_regex are both set; give one of them')
        if isinstance(regex, str) and regex:
            try:
                re.compile(regex)
            except re.error as exc:
                problems.append('slurm_topology_settings.name_regex %s is not a regular expression: %s' % (show(regex), exc))
    sizes = settings.get('block_sizes')
    if topology == 'block' and sizes:
        name = 'slurm_topology_settings.block_sizes'
        small = _range_problems({'slurm_topology_settings': {'type': 'dict', 'options': {'block_sizes': {'type': 'list'}}}},
                                {'slurm_topology_settings': {'block_sizes': sizes}},
                                {name: ('int', 1, None, 'nodes in a block; the planning base block size first, e.g. [18, 36, 72]')})
        if small:
            return problems + small
        try:
            parse_block_sizes(sizes)
        except ValueError as exc:
            problems.append('slurm_topology_settings.%s' % exc)
    return problems


_PARTITION_NODES = 'expected ALL, a hostlist (gpu-[01-04]) or a list of node names'


@functools.lru_cache(maxsize=1024)
def _hostlist_problem(nodes):
    """``(stage, why)`` of the hostlist ``nodes``: ``(None, '')`` when it expands to valid node names, else the stage that
    refused it (``expand`` or ``name``) and the reason.

    Kept per hostlist: every host's check reads the same partitions (over a large inventory, expanding them for each
    host again was a cost that grew with the square of the hosts).
    """
    try:
        names = expand(nodes)
    except ValueError as exc:
        return 'expand', str(exc)
    for node in names:
        try:
            validate_node_name(node)
        except ValueError as exc:
            return 'name', str(exc)
    return None, ''


def _partition_nodes_problems(index, name, nodes):
    """``nodes`` of partition ``index`` as the slurm role reads them (ALL, a hostlist it expands, or node names)."""
    label = ' (partition %s)' % name if isinstance(name, str) and name else ''
    path = 'slurm_partitions[%d].nodes' % index
    if isinstance(nodes, str):
        if nodes == 'ALL':
            return []
        if nodes.strip().lower() == 'all':
            return ['%s is %s%s; expected ALL (upper case: Slurm reads any other spelling as a node name), a hostlist (gpu-[01-04]) '
                    'or a list of node names' % (path, show(nodes), label)]
        stage, problem = _hostlist_problem(str(nodes))
        if stage == 'expand':
            return ['%s is %s%s: %s; %s' % (path, show(nodes), label, problem, _PARTITION_NODES)]
        if stage == 'name':
            return ['%s is %s%s: %s' % (path, show(nodes), label, problem)]
        return []
    problems = []
    for position, node in enumerate(nodes):
        try:
            validate_node_name(node)
        except ValueError:
            problems.append('%s[%d] is %s%s; expected a node name (letters, digits, "-" and "."; no brackets: a list holds the '
                            'names themselves, a hostlist such as gpu-[01-04] is given as the whole value of nodes)'
                            % (path, position, show(node), label))
    return problems


def login_problems(host, values, groups):
    """A login node (inventory group slurm_login, optional) runs the client commands only: it may not also be the controller or a
    compute node (the slurm role would install and start slurmctld or slurmd there too). Its name is not a Slurm node
    name, so any inventory host name is valid; it needs no GPU (the GPU group's hosts must be compute hosts already)."""
    if host not in _hosts_of(groups, LOGIN_GROUP):
        return []
    problems = []
    for other, what, role in ((CONTROLLER_GROUP, 'the controller (slurmctld)', 'controller'),
                              (COMPUTE_GROUP, 'a compute node (slurmd)', 'compute node')):
        if host in _hosts_of(groups, other):
            problems.append('this host is in inventory groups %s and %s, %s; expected a login node in %s only '
                            '(client commands, no Slurm daemon): take it out of one of the two groups (the %s can submit '
                            'jobs already)' % (LOGIN_GROUP, other, what, LOGIN_GROUP, role))
    return problems


def _slurm(host, values, groups, controller_file=None):
    problems = _topology_problems(values, groups, controller_file)
    problems.extend(login_problems(host, values, groups))
    if values.get('slurm_cluster_name') == '':
        problems.append("slurm_cluster_name is ''; expected the name of the cluster (slurm.conf ClusterName, the cluster's name in "
                        'the accounting database), e.g. gpucluster')
    if _flag(values.get('slurm_pam_slurm_adopt')) and values.get('slurm_cgroup_enabled') is False:
        # (the host is not named in the message: the report names the hosts, and groups the same problem of several)
        problems.append('slurm_pam_slurm_adopt needs slurm_cgroup_enabled (proctrack/cgroup and task/cgroup hold the adopted ssh sessions); '
                        'slurm_cgroup_enabled is false here')
    if values.get('slurm_gres_autodetect') == 'nvml' and values.get('slurm_gres_enabled') is False \
            and host in _hosts_of(groups, GPU_GROUP):
        problems.append('slurm_gres_autodetect is nvml but slurm_gres_enabled is false on this GPU node: the Gres= of its slurm.conf line comes from '
                        'the GRES facts, so Slurm would ignore the GPUs AutoDetect finds; set slurm_gres_enabled: true or '
                        "slurm_gres_autodetect: 'off'")
    if _flag(values.get('slurm_configless')):
        problems.extend(_configless_problems(values))
    if values.get('slurm_install_source') == 'local' and values.get('slurm_local_package_dir') == '':
        problems.append('slurm_install_source is "local" but slurm_local_package_dir is empty: '
                        'name the directory (on the Ansible controller) that holds the Slurm package files')
    partitions = values.get('slurm_partitions')
    if isinstance(partitions, list):
        if not partitions:
            problems.append('slurm_partitions is empty; Slurm needs at least one partition ({name, nodes, default, options})')
        seen, defaults = set(), 0
        for index, part in enumerate(partitions):
            if not isinstance(part, dict):
                continue
            name = part.get('name')
            if isinstance(name, str):
                if not _PARTITION_NAME.match(name) or name.lower() == 'default':
                    problems.append('slurm_partitions[%d].name is %s; use letters, digits, ".", "_", "-" (and not DEFAULT)' % (index, show(name)))
                elif name in seen:
                    problems.append('slurm_partitions[%d].name %s is defined twice' % (index, show(name)))
                seen.add(name)
            nodes = part.get('nodes')
            if nodes is not None and not isinstance(nodes, (str, list)):
                problems.append('slurm_partitions[%d].nodes is %s; expected ALL, a hostlist (gpu-[01-04]) or a list of node names'
                                % (index, show(nodes)))
            elif nodes == '' or nodes == []:
                problems.append('slurm_partitions[%d].nodes is empty; name ALL, a hostlist or a list of node names' % index)
            elif nodes is not None:
                problems.extend(_partition_nodes_problems(index, name, nodes))
            if part.get('default') is True:
                defaults += 1
        if defaults > 1:
            problems.append('slurm_partitions: %d partitions are marked default; at most one may be' % defaults)
    hooks = values.get('slurm_hooks_extra')
    if isinstance(hooks, list):
        for index, hook in enumerate(hooks):
            if isinstance(hook, dict) and isinstance(hook.get('name'), str) and not _HOOK_NAME.match(hook['name']):
                problems.append('slurm_hooks_extra[%d].name is %s; expected NN-class-name (e.g. 60-all-site-check)' % (index, show(hook['name'])))
    return problems


def _enroot(host, values, groups):
    problems = []
    source = values.get('enroot_package_source')
    # keep (the vendor's enroot, installed already) needs no location. It is not refused together with enroot_version or
    # the other package options: they have defaults, so the controller cannot tell a pin from a default, and keep never
    # reads them (no conflict: the installed enroot is used whatever its version). What keep needs is on the node: an
    # enroot that answers "enroot version", 3.4.0 or later (enroot.conf.d) - the role's preflight checks that there.
    needs = {'url': 'enroot_release_url', 'mirror': 'enroot_mirror_url', 'local': 'enroot_local_dir'}
    if source in needs and values.get(needs[source]) == '':
        problems.append('enroot_package_source is %s but %s is empty; set it (%s)'
                        % (show(source), needs[source], {'url': 'the base URL of the release assets',
                                                         'mirror': 'the base URL of a web server holding the release .deb files',
                                                         'local': 'a directory on the Ansible controller holding the release .deb files'}[source]))
    conf = values.get('enroot_conf')
    if isinstance(conf, dict):
        # the key names and the types of the role's keys, as the role's enroot_conf filter checks them
        try:
            _enroot_conf.settings(conf)
        except ValueError as exc:
            problems.append(str(exc))
    credentials = values.get('enroot_credentials')
    if isinstance(credentials, list):
        for index, entry in enumerate(credentials):
            if isinstance(entry, dict) and not all(isinstance(entry.get(k), str) and entry[k] for k in ('machine', 'login', 'password')):
                # the role's own message; the machine is a host name, never the secret
                problems.append('enroot_credentials[%d] (machine %s) needs the keys machine, login and password, all non-empty'
                                % (index, entry.get('machine') if isinstance(entry.get('machine'), str) and entry['machine'] else '<missing>'))
    disabled = values.get('enroot_hooks_disabled')
    if isinstance(disabled, list):
        bad = [str(name) for name in disabled if not isinstance(name, str) or not _ENROOT_HOOK.match(name)]
        if bad:
            problems.append('enroot_hooks_disabled names %s; expected the file names of hooks in /etc/enroot/hooks.d '
                            '(such as 10-cgroups.sh or 99-mellanox.sh: no directory, ending in .sh)' % ', '.join(show(b) for b in bad))
    mode = values.get('enroot_shared_dir_mode')
    if isinstance(mode, str) and not re.match(r'^[0-7]{3,4}$', mode):
        problems.append('enroot_shared_dir_mode is %s; expected an octal mode such as "1777"' % show(mode))
    if 'enroot_registry_ca_certificates' in values:
        text = _ca_problem(values['enroot_registry_ca_certificates'])
        if text:
            problems.append('enroot_registry_ca_certificates %s' % text)
    conf = conf if isinstance(conf, dict) else {}
    checks = [('ENROOT_SQUASH_OPTIONS', _enroot_settings.squash_options_problem)]
    checks += [(key, _enroot_settings.enroot_path_problem) for key in _enroot_conf.PATHS]
    for key, problem in checks:
        if isinstance(conf.get(key), str):
            text = problem(conf[key])
            if text:
                problems.append('enroot_conf.%s %s' % (key, text))
    return problems


def _ca_problem(value):
    try:
        _enroot_settings.ca_bundle(value)
    except ValueError as exc:
        return str(exc)
    return None


def _pyxis(host, values, groups):
    problems = []
    conf = values.get('pyxis_conf') if isinstance(values.get('pyxis_conf'), dict) else {}
    importer = conf.get('importer')
    if isinstance(importer, str) and importer and not importer.startswith('/'):
        problems.append('pyxis_conf.importer must be an absolute path to an executable on the nodes, got %s' % show(importer))
    runtime = conf.get('runtime_path')
    if isinstance(runtime, str) and not re.match(r'^/[^ ]*$', runtime):
        problems.append('pyxis_conf.runtime_path must be an absolute path without spaces, got %s' % show(runtime))
    return problems


# Numbers in the range a role can use: option -> (type, least, most, what the number is). ``least`` of a float is
# exclusive (above 0), of an int inclusive. Only values of the right type are ranged (spec_problems names the others).
_RANGES = {
    'mig_slurm_wait.drain_timeout': ('int', 0, None, 'seconds to wait for the jobs of a drained node'),
    'mig_slurm_wait.drain_poll': ('int', 1, None, 'seconds between job checks'),
    'mig_slurm_wait.register_timeout': ('int', 1, None, 'seconds to wait for the node to register'),
    'slurmdbd_port': ('int', 1, 65535, 'a TCP port'),
    'slurmdbd_wait_timeout': ('int', 1, None, 'seconds to wait for slurmdbd'),
    'slurm_healthcheck_interval': ('int', 0, None, 'seconds; 0 never runs the check'),
    'slurm_healthcheck_settings.ecc_uncorrected_max': ('int', 0, None, 'errors; null does not check ECC'),
    'slurm_healthcheck_settings.resume_after_passes': ('int', 1, None, 'passing runs in a row'),
    'slurm_healthcheck_settings.xid_drain': ('int', 1, None, 'Xid numbers'),
    'slurm_healthcheck_settings.temperature_margin': ('int', 0, None, 'degrees C; null does not check temperature'),
    'slurm_healthcheck_settings.ib_ports': ('int', 0, None, 'InfiniBand ports; null records what the node has'),
    'slurm_healthcheck_settings.prolog_budget': ('float', 0, None, 'seconds'),
    'slurm_healthcheck_settings.periodic_budget': ('float', 0, None, 'seconds'),
    'slurm_healthcheck_settings.ib_rate_gbps': ('float', 0, None, 'Gb/s'),
    'slurm_memory_reserve_mb': ('int', 0, None, 'MB'),
    'slurm_gres_mps_count': ('int', 1, None, 'the Count of each Name=mps line'),
    'slurm_gres_shard_count': ('int', 1, None, 'the Count of each Name=shard line'),
    'slurm_restart_batch_size': ('int', 1, None, 'nodes whose slurmd restarts at a time'),
    'slurm_large_system_min_nodes': ('int', 1, None, 'the compute host count from which the large-cluster settings apply'),
    'slurm_hooks_settings.timeout': ('int', 1, None, 'seconds a hook may run'),
    'enroot_conf.ENROOT_MAX_PROCESSORS': ('int', 0, None, "0 leaves enroot's default"),
    'enroot_conf.ENROOT_MAX_CONNECTIONS': ('int', 0, None, 'parallel layer downloads'),
    'enroot_conf.ENROOT_CONNECT_TIMEOUT': ('int', 0, None, 'seconds'),
    'enroot_conf.ENROOT_TRANSFER_TIMEOUT': ('int', 0, None, 'seconds, 0 for none'),
    'enroot_conf.ENROOT_TRANSFER_RETRIES': ('int', 0, None, 'retries'),
}


def _range_text(kind, least, most, what):
    if kind == 'float':
        return 'a number of %s above %s' % (what, least)
    if most is not None:
        return '%s, a whole number from %d to %d' % (what, least, most)
    return 'a whole number, %d or more (%s)' % (least, what)


def _ranged_values(options, values, ranges):
    """``(name, value, spec)`` of each value ``ranges`` names, set and not null, in name order; a name ``var.key`` is the key of
    the dict option ``var`` (``slurm_healthcheck_settings.resume_after_passes``)."""
    found = []
    for name in sorted(ranges):
        var, _dot, key = name.partition('.')
        value, spec = values.get(var), options.get(var) or {}
        if key:
            value = value.get(key) if isinstance(value, dict) else None
            spec = (spec.get('options') or {}).get(key) or {}
        if value is not None:
            found.append((name, value, spec))
    return found


def _range_problems(options, values, ranges=None):
    """Numbers outside the range their role can use (``ranges``, else ``_RANGES``), one line each."""
    ranges = _RANGES if ranges is None else ranges
    problems = []
    for name, value, spec in _ranged_values(options, values, ranges):
        kind, least, most, what = ranges[name]
        items = [(name, value)]
        if isinstance(value, list):
            items = [('%s[%d]' % (name, index), item) for index, item in enumerate(value)]
        for path, number in items:
            if not isinstance(number, (int, float)) or isinstance(number, bool):
                continue
            low = number <= least if kind == 'float' else number < least
            if low or (most is not None and number > most):
                problems.append('%s is %s; expected %s' % (path, show(number), _range_text(kind, least, most, what)))
    return problems


_ROLE_CHECKS = {'munge': _munge, 'mig': _mig, 'slurmdbd': _slurmdbd, 'slurm': _slurm, 'enroot': _enroot, 'pyxis': _pyxis}


def role_problems(role, host, options, values, groups, controller_file=None):
    """Problems of one host's values for ``role``: the role's own fact-free checks, what its argument spec cannot say.

    ``options`` are the role's main entry point options, ``values`` the
    host's templated values as Ansible's argument validation converts them, those
    with a problem of their own left out (``plugin_utils/_preflight_spec.spec_problems``
    judges them first; options that could not be templated are left out too),
    ``groups`` the inventory groups (name to host list). ``controller_file``
    (the action's, optional) says what is wrong with a file the role reads on
    the Ansible controller: ``controller_file(path)`` is ``''`` when it is a
    readable file, else the reason (``there is no such file ...``).
    """
    problems = _range_problems(options, values)
    if node_type.VARIABLE in options:
        # the one node type: what its argument spec cannot say (its model against the catalogue: the site's check,
        # which has the inventory's preflight_gpu_models)
        problems.extend(node_type.problems(values.get(node_type.VARIABLE), extra=None))
    check = _ROLE_CHECKS.get(role)
    if role in ('slurm', 'munge'):
        problems.extend(check(host, values, groups, controller_file))
    elif check:
        problems.extend(check(host, values, groups))
    return problems


# Strategies that let each host run ahead of the others (ansible.builtin.free, host_pinned, mitogen_free ...). The
# collection's plays read other hosts' results of the same play (the slurm play renders every host's slurm.conf from
# every compute node's facts) and stop every host on one failure (any_errors_fatal, which these strategies ignore).
# Measured under free: the controller reached slurm.conf first and failed (docs/scale.md, "Ansible-side scale").
_FREE_STRATEGIES = ('free', 'host_pinned')


def strategy_problem(strategy):
    """The problem of running the collection's plays under ``strategy`` (the play's), or None for a linear one."""
    if not isinstance(strategy, str) or not strategy:
        return None
    name = strategy.rsplit('.', 1)[-1]
    if name in _FREE_STRATEGIES or any(name.endswith('_' + free) for free in _FREE_STRATEGIES):
        return ("the play's strategy is %r (the play's strategy keyword, ANSIBLE_STRATEGY or ansible.cfg); the collection's plays need a "
                "linear one (linear, or mitogen_linear): their tasks read other hosts' results of the same play and stop "
                "every host on one failure (any_errors_fatal), which %s ignores" % (strategy, name))
    return None


# The preflight task's own options (plugins/action/preflight.py takes them; plugins/modules/preflight.py documents them).
ARGUMENT_SPEC = dict(
    controller_group=dict(type='str', default=CONTROLLER_GROUP),
    compute_group=dict(type='str', default=COMPUTE_GROUP),
    gpu_group=dict(type='str', default=GPU_GROUP),
    roles=dict(type='list', elements='dict', options=dict(
        name=dict(type='str', required=True, choices=[name for name, groups in SITE_ROLES]),
        groups=dict(type='list', elements='str', required=True),
    )),
    hosts=dict(type='list', elements='str'),
    inventory=dict(type='bool', default=True),
)
_GROUP_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')
_GROUP_WORDS = "an inventory group name (letters, digits, '_', '-', '.'; e.g. slurm_compute)"
_UNSET_HOSTS = 'leave hosts unset for the hosts of the play'
_MAX_LISTED = 120


def _group_problem(path, value):
    if isinstance(value, str) and _GROUP_NAME.match(value):
        return None
    return '%s is %s; expected %s' % (path, show(value), _GROUP_WORDS)


def _roles_problems(roles):
    """What the spec cannot say of ``roles`` (as Ansible converts it): a role given twice, a role without groups."""
    problems, seen = [], {}
    for index, entry in enumerate(roles):
        path = 'roles[%d]' % index
        name = entry['name']
        if name in seen:
            problems.append('%s.name is %s, given twice (also %s); give each role once, with every group it runs on'
                            % (path, show(name), seen[name]))
        else:
            seen[name] = path
        if not entry['groups']:
            problems.append('%s.groups is %s; expected one or more inventory groups whose hosts run role %s (e.g. [slurm_compute]; '
                            '[all] for every host)' % (path, show(entry['groups']), name))
        problems.extend(p for p in (_group_problem('%s.groups[%d]' % (path, i), g) for i, g in enumerate(entry['groups'])) if p)
    return problems


def _hosts_problems(hosts, groups):
    if not hosts:
        return ['hosts is %s; expected one or more inventory hosts (%s)' % (show(hosts), _UNSET_HOSTS)]
    known = set()
    for members in (groups.values() if isinstance(groups, dict) else ()):
        known.update(h for h in (members or []) if isinstance(h, str))
    listed = _host_text(known) if known else ''
    if len(listed) > _MAX_LISTED:
        listed = listed[:_MAX_LISTED - 3] + '...'
    problems = []
    for index, host in enumerate(hosts):
        if host not in known:
            problems.append('hosts[%d] is %s, which is not a host of the inventory; expected %s'
                            % (index, show(host), 'hosts of the inventory (%s)' % listed if listed else 'hosts, and the inventory has none'))
    return problems


def argument_problems(args, groups):
    """What the spec (:data:`ARGUMENT_SPEC`) cannot say of the preflight task's own options, one line each.

    ``args``: the options as Ansible's validator converts them (``plugin_utils/_preflight_spec.task_option_problems``
    judges types, choices and keys first); ``groups``: the inventory groups (name to host list). Checked before any
    role value: a role without groups, or hosts the inventory does not have, would otherwise check nothing and pass.
    """
    problems = []
    for name in ('controller_group', 'compute_group', 'gpu_group'):
        problem = _group_problem(name, args[name]) if args.get(name) is not None else None
        if problem:
            problems.append(problem)
    if args.get('roles') is not None:
        problems.extend(_roles_problems(args['roles']))
    if args.get('hosts') is not None:
        problems.extend(_hosts_problems(args['hosts'], groups))
    return problems


def _host_text(hosts):
    hosts = sorted(hosts, key=natural_key)
    try:
        return compress(hosts)
    except ValueError:
        return ', '.join(hosts)


def report(inventory_errors, problems):
    """The lines of one failure: inventory problems first, then ``(host, role, message)`` problems grouped.

    The same message of the same role on several hosts is one line naming the
    hosts (as a Slurm hostlist).
    """
    lines = list(inventory_errors)
    grouped = []
    index = {}
    for host, role, message in problems:
        key = (role, message)
        if key not in index:
            index[key] = len(grouped)
            grouped.append((role, message, []))
        hosts = grouped[index[key]][2]
        if host not in hosts:
            hosts.append(host)
    for role, message, hosts in grouped:
        lines.append('%s: %s (role %s.%s)' % (_host_text(hosts), message, COLLECTION, role))
    return lines


def options_failure_message(lines):
    """The failure for bad options of the preflight task itself: a count, then one line per problem."""
    return ('the preflight task has %d bad option%s, nothing was checked or changed:\n%s'
            % (len(lines), '' if len(lines) == 1 else 's', '\n'.join(lines)))


def failure_message(lines):
    """The whole failure: a count, then one line per problem."""
    return ('the inventory has %d problem%s, nothing was changed:\n%s'
            % (len(lines), '' if len(lines) == 1 else 's', '\n'.join(lines)))


# --- Slurm's NVML plugin on the GPU nodes (slurm role, slurm_gres_autodetect: nvml) -------------------------------------
#
# The slurm role asks each such node two things and hands the answers to nvml_plugin_problem():
#   before anything changes (Debian family, packages from the distribution): apt's dry run of exactly the packages the
#   role would install there (ansible.builtin.apt in check mode, which runs apt-get --simulate install in the C locale),
#   which names what apt would do or why it cannot;
#   after the install: which of Slurm's plugin directories holds gpu_nvml.so.
# Without the plugin, slurmd with AutoDetect=nvml finds no GPU, registers 0 GPUs against the Gres= of slurm.conf, and
# the node goes INVALID_REG (drained).

NVML_PLUGIN_FILE = 'gpu_nvml.so'
NVML_DOC = 'docs/slurm-gres-autodetect.md'
NVML_OFF_CHOICE = ("keep slurm_gres_autodetect: 'off' (the default: the collection's slurm_gres_facts writes the GPU lines of gres.conf "
                   'from NVML itself, with the same Gres= in slurm.conf)')

# apt-get's words, and those of ansible.builtin.apt, which asks python-apt before it runs apt-get
_APT_MISSING = (
    re.compile(r'^(?:E|Error): Unable to locate package (?P<name>\S+?)\s*$'),
    re.compile(r"^(?:E|Error): Package '?(?P<name>[^'\s]+?)'? has no installation candidate\s*$"),
    re.compile(r"^No package matching '(?P<name>[^']+)' is available"),
    re.compile(r'^no available installation candidate for (?P<name>\S+)'),
)
# " slurm-wlm-nvml-plugin : Depends: slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2) but 22.05.8-4+deb12u3 is to be installed"
# continuation lines hold a further relation of the same package, or (after " or") another alternative of the same one
_APT_BROKEN = re.compile(r'^\s*(?P<package>[A-Za-z0-9][A-Za-z0-9.+:-]*) : (?P<rest>.*)$')
_APT_RELATION = re.compile(r'^\s*(?:(?P<kind>Depends|PreDepends|Pre-Depends|Breaks|Conflicts|Recommends): )?'
                           r'(?P<name>[A-Za-z0-9][A-Za-z0-9.+:-]*)(?: \((?P<op><<|<=|=|>=|>>) (?P<version>[^)\s]+)\))?'
                           r' but (?P<why>.+?)(?P<more> or)?\s*$')
_APT_KIND_WORDS = {'Depends': 'depends on', 'PreDepends': 'pre-depends on', 'Pre-Depends': 'pre-depends on', 'Breaks': 'breaks',
                   'Conflicts': 'conflicts with', 'Recommends': 'recommends'}
_APT_WHY_VERSION = re.compile(r'^(?P<version>\S+) is (?P<state>to be installed|installed)$')
# ansible.builtin.apt names the candidate it asks apt-get for: ... --simulate install 'slurmd=22.05.8-4+deb12u3' ...
_APT_REQUESTED = re.compile(r"'(?P<name>[A-Za-z0-9][A-Za-z0-9.+:-]*)=(?P<version>[^'\s]+)'")
_APT_INST = re.compile(r'^Inst (?P<name>\S+) (?:\[(?P<old>[^\]]+)\] )?\((?P<version>\S+)')
_APT_REMV = re.compile(r'^Remv (?P<name>\S+)')


def parse_apt_simulation(stdout, stderr='', msg=''):
    """What ``LC_ALL=C apt-get -s install PACKAGE...`` says (or ``ansible.builtin.apt`` in check mode: ``msg`` too), as plain data.

    Returns ``{'missing': [...], 'requested': {name: version}, 'installs': {name: version}, 'removes': [...], 'unmet':
    [...], 'errors': [...]}``: ``missing`` the requested packages apt has no candidate for (unknown, or known with no
    installable version), ``requested`` the versions ``ansible.builtin.apt`` asked apt-get for,
    ``unmet`` one entry per unmet relation ``{'package', 'kind', 'alternatives': [{'name', 'op', 'version', 'why',
    'have', 'state'}], 'text'}`` (``have``/``state``: the version apt would have and whether it is ``to be
    installed`` or ``installed``, when apt names one), ``errors`` apt's error lines (``E:`` in apt 2, ``Error:`` in
    apt 3).
    """
    result = {'missing': [], 'requested': {}, 'installs': {}, 'removes': [], 'unmet': [], 'errors': []}
    for found in _APT_REQUESTED.finditer(msg or ''):
        result['requested'][found.group('name')] = found.group('version')
    current = None
    for raw in '\n'.join([msg or '', stdout or '', stderr or '']).splitlines():
        line = raw.rstrip()
        for pattern in _APT_MISSING:
            found = pattern.match(line)
            if found and found.group('name') not in result['missing']:
                result['missing'].append(found.group('name'))
        if line.startswith(('E: ', 'Error: ')):
            if line not in result['errors']:
                result['errors'].append(line)
            current = None
            continue
        found = _APT_INST.match(line)
        if found:
            result['installs'][found.group('name')] = found.group('version')
            continue
        found = _APT_REMV.match(line)
        if found:
            result['removes'].append(found.group('name'))
            continue
        broken = _APT_BROKEN.match(line)
        relation = _APT_RELATION.match(broken.group('rest')) if broken else None
        if relation and relation.group('kind'):
            current = {'package': broken.group('package'), 'kind': relation.group('kind'), 'alternatives': [], 'text': line.strip(),
                       'open': False}
            result['unmet'].append(current)
        elif current is not None and not broken:
            relation = _APT_RELATION.match(line)
            if relation is None:
                current = None
                continue
            if relation.group('kind') and not current['open']:
                current = {'package': current['package'], 'kind': relation.group('kind'), 'alternatives': [], 'text': '%s : %s' % (
                    current['package'], line.strip()), 'open': False}
                result['unmet'].append(current)
            else:
                current['text'] += ' ' + line.strip()
        else:
            current = None
            continue
        why = relation.group('why')
        have = _APT_WHY_VERSION.match(why)
        current['alternatives'].append({
            'name': relation.group('name'), 'op': relation.group('op'), 'version': relation.group('version'), 'why': why,
            'have': have.group('version') if have else None, 'state': have.group('state') if have else None})
        current['open'] = bool(relation.group('more'))
    for entry in result['unmet']:
        entry.pop('open', None)
    return result


def _relation_text(alternative):
    if alternative['op']:
        return '%s (%s %s)' % (alternative['name'], alternative['op'], alternative['version'])
    return alternative['name']


def _apt_label(found, name):
    """``name`` with the version apt names for it (asked for, or to install), when it names one."""
    version = found['requested'].get(name) or found['installs'].get(name)
    return '%s %s' % (name, version) if version else name


def _major(value):
    found = re.match(r'^\s*([0-9]+)', str(value or ''))
    return int(found.group(1)) if found else None


def _nvml_apt_problem(node):
    apt = node.get('apt') or {}
    host, package = node['host'], node.get('package') or 'slurm-wlm-nvml-plugin'
    found = parse_apt_simulation(apt.get('stdout'), apt.get('stderr'), apt.get('msg'))
    debian = str(node.get('distribution') or '') == 'Debian'
    major = _major(node.get('distribution_major_version'))
    reasons, choices = [], []
    if package in found['missing']:
        why, choice = distributions.contrib_words(distributions.find(node.get('distribution'), node.get('distribution_major_version')),
                                                  package)
        reasons.append('apt has no installation candidate for %s: %s' % (package, why))
        choices.append(choice + (' (Debian 12\'s plugin then still needs Slurm held at the plugin\'s own version: see %s)' % NVML_DOC
                                 if debian and major == 12 else ''))
    others = [name for name in found['missing'] if name != package]
    if others:
        reasons.append('apt has no installation candidate for %s%s, which the role installs with it (are the package lists out of date?)'
                       % (', '.join(others), ' either' if package in found['missing'] else ''))
    pinned = None
    for entry in found['unmet']:
        alternatives = entry['alternatives']
        versioned = [a for a in alternatives if a['op'] and a['have']]
        if len(alternatives) == 1 and versioned:
            alt = versioned[0]
            reasons.append('%s %s %s, but %s %s %s' % (
                _apt_label(found, entry['package']), _APT_KIND_WORDS.get(entry['kind'], entry['kind']), _relation_text(alt), alt['name'], alt['have'],
                'is installed' if alt['state'] == 'installed' else 'is what apt would install'))
            if entry['kind'] in ('Depends', 'PreDepends', 'Pre-Depends') and pinned is None:
                pinned = alt
        elif alternatives and all(a['why'] == 'it is not installable' for a in alternatives):
            names = ' | '.join(_relation_text(a) for a in alternatives)
            if any('nvidia-ml' in a['name'] for a in alternatives):
                reasons.append("%s depends on %s, which no package of this node provides and apt cannot install: the NVIDIA driver's "
                               'NVML library is not installed from a package apt knows' % (_apt_label(found, entry['package']), names))
                choices.append("install the driver's NVML library as a package (NVIDIA's CUDA repository for Debian, or libnvidia-ml1 "
                               "from Debian's non-free component where the node runs Debian's own driver; a driver from NVIDIA's .run "
                               'installer is not known to dpkg)')
            else:
                reasons.append('%s depends on %s, which apt cannot install' % (_apt_label(found, entry['package']), names))
        else:
            reasons.append('apt says: %s' % ' '.join(entry['text'].split()))
    if pinned is not None:
        if pinned['op'] == '=':
            choices.append('pin Slurm to the plugin\'s version: hold every Slurm package (%s, slurmd, slurmctld, '
                           'slurm-client and the other slurm-wlm packages) at %s with an apt preferences file (Pin: version %s) from '
                           'a mirror that still carries it, such as snapshot.debian.org, or install those package files with '
                           'slurm_install_source: local; that gives up what %s fixed'
                           % (pinned['name'], pinned['version'], pinned['version'], pinned['have']))
        else:
            choices.append('hold Slurm at a version that satisfies %s (an apt preferences file, or package files with '
                           'slurm_install_source: local)' % _relation_text(pinned))
        if debian and major is not None and major < 13:
            choices.append('move the GPU nodes to Debian 13, whose slurm-wlm-nvml-plugin (24.11.5) accepts any Slurm 24.11.5 '
                           '(slurm-wlm-basic-plugins >= 24.11.5, << 24.11.6)')
    if found['removes']:
        reasons.append('apt would remove %s to install it' % ', '.join(found['removes']))
    # registered with failed_when: false, the result says failed: false; apt's failures always carry a msg
    failed = bool(apt.get('msg')) or apt.get('rc') not in (0, None)
    no_python_apt = re.match(r'^(\S*python\S*-apt) must be installed to use check mode', str(apt.get('msg') or ''))
    if no_python_apt and not reasons:
        reasons.append('apt could not be asked: %s is not installed here, and ansible.builtin.apt needs it for a dry run'
                       % no_python_apt.group(1))
        choices.append('install %s on the node (apt-get install %s; site.yml\'s earlier roles install it with their first package) '
                       'and run again' % (no_python_apt.group(1), no_python_apt.group(1)))
    if failed and not reasons:
        detail = '; '.join(found['errors']) or ' '.join(str(apt.get('msg') or apt.get('stderr') or apt.get('stdout') or 'no output').split())[:300]
        reasons.append('apt failed%s: %s' % (' (exit %s)' % apt['rc'] if apt.get('rc') not in (0, None) else '', detail))
    if not reasons:
        return ''
    return ("%s: slurm_gres_autodetect is nvml, but apt cannot install %s (Slurm's NVML plugin, %s) on this node; nothing was changed. "
            'Why: %s. Choose one: %s' % (host, package, NVML_PLUGIN_FILE, '; '.join(reasons), '; or '.join([NVML_OFF_CHOICE] + choices)))


def _nvml_missing_problem(node):
    if node.get('found'):
        return ''
    host, package = node['host'], node.get('package') or ''
    family, source = node.get('os_family'), node.get('install_source')
    dirs = ', '.join(node.get('plugin_dirs') or []) or '(no directory)'
    if family == 'Debian' and source == 'local' and node.get('flavour') == 'smd':
        hint = ("SchedMD's slurm-smd package of slurm_local_package_dir was built without NVML (gpu_nvml.so is in slurm-smd only "
                "when NVIDIA's nvml.h was present at build time): install libnvidia-ml-dev (or the CUDA toolkit's nvml.h) on the build "
                'host, rebuild the packages (debuild -b -uc -us) and run again')
    elif family == 'Debian' and source == 'local':
        hint = ('add the %s package file (the same version as the other Slurm packages) to slurm_local_package_dir, and to '
                'slurm_local_packages when that lists the files' % (package or 'slurm-wlm-nvml-plugin'))
    elif family == 'Debian':
        hint = ('%s is installed: `dpkg -L %s` names the directory of its %s; when that is not Slurm\'s PluginDir, set PluginDir in '
                'slurm_conf_overrides to it' % (package, package, NVML_PLUGIN_FILE)) if package else 'install Slurm\'s NVML plugin'
    elif family == 'RedHat' and source == 'local':
        hint = ('the slurm RPM of slurm_local_package_dir was built without NVML: rebuild it with rpmbuild --with nvml '
                "(with NVIDIA's nvml.h present) and run again")
    elif family == 'RedHat':
        hint = ("the RHEL family has no separate plugin package: %s is in the slurm package only when Slurm was built with NVML "
                "(SchedMD's slurm.spec: rpmbuild --with nvml, with NVIDIA's nvml.h present), and this node's was not; build Slurm "
                'with NVML and install its RPMs with slurm_install_source: local' % NVML_PLUGIN_FILE)
    else:
        hint = 'install a Slurm built with NVML'
    return ("%s: slurm_gres_autodetect is nvml, but Slurm's NVML plugin %s is not in %s after the install: slurmd would detect no GPU, "
            'register 0 of the Gres= in slurm.conf and the node would go INVALID_REG (drained). %s; or set '
            "slurm_gres_autodetect: 'off'" % (host, NVML_PLUGIN_FILE, dirs, hint[0].upper() + hint[1:]))


def nvml_plugin_problem(node):
    """The problem of one GPU node with ``slurm_gres_autodetect: nvml``, one plain message naming the node, or ``''``.

    ``node`` is plain data: ``host``; ``package`` (the plugin's package, empty where Slurm's own package holds the
    plugin); ``os_family``, ``distribution``, ``distribution_major_version`` and ``install_source``
    (``slurm_install_source``); ``flavour`` (``smd`` for SchedMD's slurm-smd packages of a local directory, optional);
    then either ``apt`` (the registered result of ``ansible.builtin.apt`` in check mode, or ``{rc, stdout, stderr}`` of
    ``LC_ALL=C apt-get -s install``, for the role's packages, before anything changes) or ``plugin_dirs`` and ``found``
    (Slurm's plugin directories and the paths of ``gpu_nvml.so`` found there, after the install).
    """
    if not isinstance(node, dict) or not isinstance(node.get('host'), str):
        raise ValueError('nvml_plugin_problem needs {host, package, os_family, ...} and apt or found; got %r' % (node,))
    if 'apt' in node:
        return _nvml_apt_problem(node)
    if 'found' in node:
        return _nvml_missing_problem(node)
    raise ValueError('nvml_plugin_problem needs apt (the dry run) or found (the plugin paths) for %s' % node['host'])


def bindings_package_problem(node):
    """The nvml role's question before it installs nvidia-ml-py's package: can apt install it on this node?

    ``node``: ``host``, ``package`` (python3-pynvml) and ``apt``, the registered result of ``ansible.builtin.apt`` in
    check mode for that package (the same dry run as the slurm role's, read by :func:`parse_apt_simulation`; registered
    with ``failed_when: false``, so apt's words decide, not the result's ``failed``); ``distribution`` and
    ``distribution_major_version`` (Ansible's facts) name the component to enable (Debian: contrib; Ubuntu:
    multiverse). The problem as one line naming the node and what to do, or ``''`` when apt names no problem (it would
    install the package).
    """
    apt = node.get('apt') or {}
    package = node['package']
    found = parse_apt_simulation(apt.get('stdout', ''), apt.get('stderr', ''), apt.get('msg', ''))
    if not (found['missing'] or found['unmet'] or found['errors']):
        return ''
    head = ('%s: apt cannot install %s (nvidia-ml-py, the Python NVML bindings the collection\'s modules import); nothing was '
            'changed. ' % (node['host'], package))
    if package in found['missing']:
        row = distributions.find(node.get('distribution'), node.get('distribution_major_version'))
        if row['id'] == 'ubuntu':
            where = ("Ubuntu carries it in the multiverse component, which this node's apt sources do not enable. Add multiverse to "
                     'them (%s) and run again' % (row['enable'] or 'add-apt-repository multiverse'))
        elif row['id'] == 'debian' or not node.get('distribution'):
            where = ('Debian ships it in the contrib component, which this node\'s apt sources do not enable. Add contrib to them '
                     '(e.g. "Components: main contrib non-free non-free-firmware", where Debian\'s NVIDIA driver packages are too) '
                     'and run again')
        else:
            where = ('%s offers no package of that name to this node (Debian ships it in contrib, Ubuntu in multiverse). Enable '
                     'the component that carries it and run again' % node.get('distribution'))
        return head + ('apt has no installation candidate for it: %s, or install nvidia-ml-py yourself and set nvml_bindings: none '
                       '(or nvml_bindings: pip)' % where)
    return head + 'apt says: %s' % '; '.join([entry['text'] for entry in found['unmet']] + found['errors'])
