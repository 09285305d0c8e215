#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_preflight
short_description: Read what a node has before the bring-up changes anything (Slurm packages, OS, GPUs)
version_added: 0.1.0
description:
  - Reads one node and returns the reading; it judges nothing beyond its own options. C(playbooks/node_preflight.yml) runs
    it on every node and judges all readings at once (C(plugins/module_utils/preflight/_node.py)) before the first change.
  - The OS release (C(/etc/os-release) - C(ID), C(VERSION_ID), C(VERSION_CODENAME)).
  - The installed version of each package of O(packages) (from O(installed), the package facts, when given; else
    C(dpkg-query -W), or C(rpm -q) on the RHEL family).
  - With O(source=distro) the version the package manager would install (C(apt-cache policy), or
    C(dnf -q -C repoquery) from the cache on the RHEL family); with O(source=local) the name and version of each package
    file of O(local_package_files) (from the file name) and of O(local_package_dir) on the node (C(dpkg-deb -f) or
    C(rpm -qp)).
  - With O(gpus), the GPUs through the collection's NVML client (name, index, MIG capable, current and pending MIG mode,
    MIG profiles and instances where MIG is on, the processes NVML lists), the driver version, the processes holding
    C(/dev/nvidia<minor>) (with their systemd unit and whether they are a Slurm job), the loaded C(nvidia*) kernel modules,
    and the state of C(nvidia-fabricmanager). A node without the NVML bindings or the driver is read as such, not failed.
  - Runs only commands that read; never writes. Every option is checked before anything is read; a bad one fails naming
    the option, the value and what is valid.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  packages:
    description: The Slurm packages to read (package names of the node's distribution).
    type: list
    elements: str
    default: [slurmctld, slurmd, slurmdbd, slurm-client]
  installed:
    description:
      - The node's installed packages as C(ansible.builtin.package_facts) gives them (name -> list of C({version})); when
        given, no package manager is asked for the installed versions.
    type: dict
  source:
    description: Where the Slurm packages come from (the slurm role's C(slurm_install_source)).
    type: str
    choices: [distro, local]
    default: distro
  local_package_files:
    description:
      - With O(source=local), the package files the slurm role would install (C(slurm_local_packages), or the files of
        C(slurm_local_package_dir) on the Ansible controller); file names as Debian (C(name_version_arch.deb)) or RPM
        (C(name-version-release.arch.rpm)) name them.
    type: list
    elements: str
    default: []
  local_package_dir:
    description: With O(source=local), a directory on the node holding the package files (read with C(dpkg-deb -f) or C(rpm -qp)).
    type: path
  gpus:
    description: Read the GPUs (NVML), the processes holding them, the NVIDIA kernel modules and the fabric manager.
    type: bool
    default: true
  os_release:
    description: The node's os-release file.
    type: path
    default: /etc/os-release
  module_root:
    description: Where the loaded kernel modules are listed.
    type: path
    default: /sys/module
'''

EXAMPLES = r'''
- name: Read the node
  gpucluster.bringup.node_preflight:
    packages: [slurmd, slurm-client]
    installed: "{{ _site_packages.ansible_facts.packages | default(omit) }}"
  register: node_reading
'''

RETURN = r'''
reading:
  description: What the node has.
  returned: success
  type: dict
  contains:
    os:
      description: C(id), C(version_id), C(codename), C(pretty_name) of C(/etc/os-release) (C(error) when it cannot be read).
      type: dict
    os_family:
      description: C(Debian), C(RedHat), or null for another family.
      type: str
    source:
      description: O(source).
      type: str
    packages:
      description: Package name -> C({installed, candidate}) (null where not installed, or no candidate).
      type: dict
    package_error:
      description: Why a package manager could not be asked (null when it answered).
      type: str
    local_files:
      description: C([{file, name, version}]) of the local package files.
      type: list
      elements: dict
    nvml:
      description:
        - C(available), C(reason) (C(bindings) - the Python NVML bindings are not installed yet; C(library) - the NVIDIA
          driver's C(libnvidia-ml.so.1) cannot be loaded or NVML does not start; C(error) - a call failed), C(error),
          C(driver_version), C(gpus) (the mig planner's GPU state - index, uuid, name, mig_capable, mig_current,
          mig_pending, profiles, instances, processes, minor).
      type: dict
    nvidia_smi:
      description:
        - Only where the NVML bindings are not installed yet (C(nvml.reason) V(bindings)) - the GPUs as the driver's
          C(nvidia-smi --query-gpu=index,name) lists them - C(gpus) (each with C(index) and C(name)), or C(error); the MIG layout is then
          checked against the catalogue's profiles of that model.
      type: dict
    cgroup:
      description:
        - The cgroup version the node mounts at C(/sys/fs/cgroup) (C(v2) or C(v1), as Slurm's C(CgroupPlugin=autodetect) tells
          them; null when C(/proc/self/mounts) cannot be read or shows neither).
      type: str
    holders:
      description: The processes holding C(/dev/nvidia<minor>) - C([{pid, name, unit, job, gpu, device}]).
      type: list
      elements: dict
    modules:
      description: The loaded C(nvidia*) kernel modules.
      type: list
      elements: str
    fabric_manager:
      description: C({state, version}) of C(nvidia-fabricmanager), or C({error}) when systemd could not be asked.
      type: dict
'''

import ctypes
import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_baseline as gb
from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_holders_io as holders_io
from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml as nvml
from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight._node import cgroup_version, package_file
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, require_match
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_nvml import Nvml

PROC_DIR = '/proc'
DEV_DIR = '/dev'
LIBRARY = 'libnvidia-ml.so.1'
PACKAGE = r'[A-Za-z0-9][A-Za-z0-9._+-]*'
PACKAGE_TEXT = 'a package name (letters, digits, ".", "_", "+" and "-", starting with a letter or digit)'
FILE_TEXT = 'a package file name such as slurm-smd-slurmd_24.11.5-1_amd64.deb or slurm-slurmd-24.11.5-1.el9.x86_64.rpm'
C_LOCALE = {'LC_ALL': 'C', 'LANG': 'C', 'LANGUAGE': 'C'}


def check_params(params):
    """Every option, before anything is read; raises InputError."""
    for index, name in enumerate(params['packages'] or []):
        require_match('packages[%d]' % index, name, PACKAGE, PACKAGE_TEXT)
    if not params['packages']:
        raise InputError('packages is [], expected at least one %s' % PACKAGE_TEXT)
    installed = params['installed']
    if installed is not None:
        for name, entries in installed.items():
            if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get('version'), str) for e in entries):
                raise InputError('installed[%r] is %r, expected a list of {version: ...} as package_facts gives it'
                                 % (name, entries if len(repr(entries)) <= 120 else repr(entries)[:117] + '...'))
    for index, name in enumerate(params['local_package_files']):
        if not isinstance(name, str) or package_file(name) is None:
            raise InputError('local_package_files[%d] is %r, expected %s' % (index, name, FILE_TEXT))
    if params['local_package_files'] and params['source'] != 'local':
        raise InputError('local_package_files is given with source %r, expected source: local (or no local_package_files)' % params['source'])
    directory = params['local_package_dir']
    if directory is not None:
        if params['source'] != 'local':
            raise InputError('local_package_dir is given with source %r, expected source: local (or no local_package_dir)' % params['source'])
        if '\x00' in directory or not os.path.isabs(directory):
            raise InputError('local_package_dir is %r, expected an absolute path of a directory on the node' % directory)
        if not os.path.isdir(directory):
            raise InputError('local_package_dir is %r, which is not a directory on the node; expected the directory holding the '
                             'package files' % directory)
    for name in ('os_release', 'module_root'):
        value = params[name]
        if not value or '\x00' in value or not os.path.isabs(value):
            raise InputError('%s is %r, expected an absolute path' % (name, value))


def read_os_release(path):
    try:
        with open(path, 'rb') as handle:
            text = handle.read(65536).decode('utf-8', 'replace')
    except (IOError, OSError) as exc:
        return {'error': '%s cannot be read: %s' % (path, exc)}
    values = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition('=')
        if sep and re.match(r'^[A-Z_][A-Z0-9_]*$', key):
            values[key] = value.strip().strip('"\'')
    return {'id': values.get('ID'), 'id_like': values.get('ID_LIKE'), 'version_id': values.get('VERSION_ID'),
            'codename': values.get('VERSION_CODENAME') or None, 'pretty_name': values.get('PRETTY_NAME')}


def os_family(osr):
    words = ' '.join(str(osr.get(k) or '') for k in ('id', 'id_like')).lower().split()
    if any(w in ('debian', 'ubuntu') for w in words):
        return 'Debian'
    if any(w in ('rhel', 'fedora', 'centos', 'rocky', 'almalinux') for w in words):
        return 'RedHat'
    return None


def _run(module, argv):
    """``(rc, stdout, stderr)`` of a read-only command found on the PATH; rc None when the program is not there."""
    binary = module.get_bin_path(argv[0])
    if not binary:
        return None, '', '%s: not found' % argv[0]
    rc, out, err = module.run_command([binary] + list(argv[1:]), environ_update=C_LOCALE)
    return rc, out or '', err or ''


def _answer(module, argv):
    """``(rc or None, output)`` as ``_gpu_baseline.ask_fabric_manager`` reads a command."""
    rc, out, err = _run(module, argv)
    return rc, out if out.strip() else err


def parse_apt_policy(text):
    """Package -> ``{installed, candidate}`` of ``apt-cache policy`` output (None for ``(none)``)."""
    found, current = {}, None
    for line in text.splitlines():
        head = re.match(r'^(\S+):\s*$', line)
        if head:
            current = head.group(1).split(':')[0] if head.group(1).count(':') == 1 else head.group(1)
            found[current] = {'installed': None, 'candidate': None}
            continue
        field = re.match(r'^\s+(Installed|Candidate):\s*(\S+)', line)
        if field and current is not None:
            value = None if field.group(2) == '(none)' else field.group(2)
            found[current][field.group(1).lower()] = value
    return found


def read_packages(module, params, family):
    """``(packages, error)``: name -> {installed, candidate}."""
    names = list(dict.fromkeys(params['packages']))
    packages = dict((name, {'installed': None, 'candidate': None}) for name in names)
    errors = []
    if params['installed'] is not None:
        for name in names:
            entries = params['installed'].get(name) or []
            packages[name]['installed'] = entries[0]['version'] if entries else None
    elif family == 'Debian':
        rc, out, err = _run(module, ['dpkg-query', '-W', '-f=${Package}\t${Version}\t${db:Status-Abbrev}\n'] + names)
        if rc is None:
            errors.append(err)
        for line in out.splitlines():
            parts = line.split('\t')
            if len(parts) == 3 and parts[0].split(':')[0] in packages and parts[2].startswith('ii'):
                packages[parts[0].split(':')[0]]['installed'] = parts[1]
    elif family == 'RedHat':
        rc, out, err = _run(module, ['rpm', '-q', '--qf', '%{NAME}\t%{VERSION}-%{RELEASE}\n'] + names)
        if rc is None:
            errors.append(err)
        for line in out.splitlines():
            parts = line.split('\t')
            if len(parts) == 2 and parts[0] in packages:
                packages[parts[0]]['installed'] = parts[1]
    # the candidates also with source local: the slurmdbd role installs from the distribution
    if family == 'Debian':
        rc, out, err = _run(module, ['apt-cache', 'policy'] + names)
        if rc != 0:
            errors.append('apt-cache policy: %s' % (' '.join(err.split())[:200] or 'exit %s' % rc))
        for name, values in parse_apt_policy(out).items():
            if name in packages:
                packages[name]['candidate'] = values['candidate']
                if params['installed'] is None and packages[name]['installed'] is None:
                    packages[name]['installed'] = values['installed']
    elif family == 'RedHat':
        rc, out, err = _run(module, ['dnf', '-q', '-C', 'repoquery', '--latest-limit=1', '--queryformat',
                                     '%{name}\t%{version}-%{release}\n'] + names)
        if rc != 0:
            errors.append('dnf repoquery: %s' % (' '.join(err.split())[:200] or 'exit %s' % rc))
        for line in out.splitlines():
            parts = line.split('\t')
            if len(parts) == 2 and parts[0] in packages:
                packages[parts[0]]['candidate'] = parts[1]
    else:
        errors.append('no package manager this module knows (Debian or RHEL family)')
    return packages, '; '.join(e for e in errors if e) or None


def read_local_files(module, params):
    files = [package_file(name) for name in params['local_package_files']]
    directory = params['local_package_dir']
    if directory:
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if not os.path.isfile(path) or not name.endswith(('.deb', '.rpm')):
                continue
            if name.endswith('.deb'):
                _rc, out, _err = _run(module, ['dpkg-deb', '-f', path, 'Package', 'Version'])
                fields = dict(line.split(': ', 1) for line in out.splitlines() if ': ' in line)
                entry = {'file': name, 'name': fields.get('Package'), 'version': fields.get('Version')}
            else:
                _rc, out, _err = _run(module, ['rpm', '-qp', '--qf', '%{NAME}\t%{VERSION}-%{RELEASE}', path])
                parts = out.strip().split('\t')
                entry = {'file': name, 'name': parts[0], 'version': parts[1]} if len(parts) == 2 else {'file': name}
            if not entry.get('name') or not entry.get('version'):
                entry = package_file(name) or dict(entry, name=None, version=None)
            files.append(entry)
    return files


def library_loads():
    try:
        ctypes.CDLL(LIBRARY)
    except OSError as exc:
        return str(exc)
    return None


def read_nvml(bindings):
    pynvml, missing = bindings
    if pynvml is None:
        why = library_loads()
        if why:
            return {'available': False, 'reason': 'library', 'error': why}
        return {'available': False, 'reason': 'bindings', 'error': missing}
    try:
        with nvml.session(pynvml) as client:
            driver = client.driver_version()
            gpus = Nvml(client).read_node()
    except nvml.NvmlError as exc:
        return {'available': False, 'reason': 'library' if exc.kind == 'uninitialized' else 'error', 'error': str(exc)}
    return {'available': True, 'reason': None, 'error': None, 'driver_version': driver, 'gpus': gpus}


def read_smi_gpus(module):
    """The node's GPUs as the driver's nvidia-smi lists them (index, name), for a node without the NVML bindings yet:
    ``{'gpus': [...]}`` or ``{'error': why}``."""
    rc, out, err = _run(module, ['nvidia-smi', '--query-gpu=index,name', '--format=csv,noheader'])
    if rc != 0:
        return {'error': (err or out).strip() or 'nvidia-smi exited %s' % rc}
    gpus = []
    for line in out.splitlines():
        fields = [field.strip() for field in line.split(',', 1)]
        if len(fields) != 2 or not fields[0].isdigit() or not fields[1]:
            return {'error': 'nvidia-smi --query-gpu=index,name printed %r, expected "<index>, <name>" lines' % line}
        gpus.append({'index': int(fields[0]), 'name': fields[1]})
    return {'gpus': gpus}


def holders(minors):
    """Processes with /dev/nvidia<minor> open: ``[{pid, name, unit, job, gpu, device}]``."""
    return holders_io.holders(minors, PROC_DIR, DEV_DIR)


def read_cgroup_version(path='/proc/self/mounts'):
    """The node's cgroup version (``_preflight_node.cgroup_version``), None when the mount table cannot be read."""
    try:
        with open(path) as handle:
            return cgroup_version(handle.read())
    except (OSError, UnicodeDecodeError):
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type='list', elements='str', default=['slurmctld', 'slurmd', 'slurmdbd', 'slurm-client']),
            installed=dict(type='dict'),
            source=dict(type='str', choices=['distro', 'local'], default='distro'),
            local_package_files=dict(type='list', elements='str', default=[]),
            local_package_dir=dict(type='path'),
            gpus=dict(type='bool', default=True),
            os_release=dict(type='path', default='/etc/os-release'),
            module_root=dict(type='path', default='/sys/module'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        check_params(params)
    except InputError as exc:
        module.fail_json(msg=str(exc))
    try:
        osr = read_os_release(params['os_release'])
        family = os_family(osr)
        packages, error = read_packages(module, params, family)
        reading = {'os': osr, 'os_family': family, 'source': params['source'], 'packages': packages, 'package_error': error,
                   'local_files': read_local_files(module, params) if params['source'] == 'local' else [],
                   'nvml': {'available': False, 'reason': 'not read', 'error': None}, 'holders': [], 'modules': [],
                   'fabric_manager': {}, 'cgroup': read_cgroup_version()}
        if params['gpus']:
            reading['nvml'] = read_nvml(nvml.import_bindings())
            if reading['nvml'].get('reason') == 'bindings':
                # a fresh node: the driver answers, the nvml stage has not installed the bindings yet
                reading['nvidia_smi'] = read_smi_gpus(module)
            gpus = reading['nvml'].get('gpus') or []
            reading['holders'] = holders([(g['index'], g.get('minor')) for g in gpus])
            reading['modules'] = gb.loaded_modules(params['module_root'])
            if gpus:
                asked = gb.ask_fabric_manager(lambda argv: _answer(module, argv))
                reading['fabric_manager'] = {'error': asked['fabric_manager_error']} if asked.get('fabric_manager_error') else {
                    'state': asked['fabric_manager_state'], 'version': gb.parse_fm_version(asked.get('fabric_manager_version'))}
    except (OSError, ValueError, TypeError, KeyError) as exc:
        module.fail_json(msg='the node cannot be read: %s: %s' % (type(exc).__name__, exc))
    module.exit_json(changed=False, reading=reading)


if __name__ == '__main__':
    main()
