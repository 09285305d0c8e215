#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_check
short_description: Validation node checks of one Slurm GPU node, as report records
version_added: 0.1.0
description:
  - Collects what the node says (NVML, C(gres.conf), munge, the systemd state of munge and slurmd, the node's Slurm
    state, enroot, pyxis) and returns one check record per check, with status V(pass), V(fail) or V(skip) and the
    reason, in the shape C(gpucluster.bringup.validation_report) renders.
  - The MIG layout is compared by the caller with C(gpucluster.bringup.nvidia_mig) in check mode; pass its result as
    O(mig_result). The C(gres.conf) lines to expect come from C(gpucluster.bringup.slurm_gres_facts); pass them as
    O(gres_conf_expected).
  - Optionally reads the log of the slurm role's prolog/epilog hook runner and returns the last failed hook.
  - Nothing on the node is changed. Bad input (a negative count, a unit name with a space, a malformed O(mig_result)) fails the
    task before any command runs, naming the option.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
requirements:
  - nvidia-ml-py (the C(pynvml) module) on the node when O(nvml=true)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  checks:
    description:
      - Which checks to report, of V(nvml), V(gpu_count), V(gpu_models), V(mig_layout), V(gres_conf), V(munge),
        V(slurmd), V(node_state), V(enroot), V(pyxis). The units of O(services) other than munge and slurmd are always reported.
    type: list
    elements: str
    choices: [nvml, gpu_count, gpu_models, mig_layout, gres_conf, munge, slurmd, node_state, enroot, pyxis]
    default: [nvml, gpu_count, gpu_models, mig_layout, gres_conf, munge, slurmd, node_state, enroot, pyxis]
  node_name:
    description: The Slurm node name of this host (for C(scontrol show node)). Default is the short host name.
    type: str
  nvml:
    description: Query NVML (driver answers, GPU count and models). V(false) on nodes without GPUs.
    type: bool
    default: true
  expect:
    description:
      - What the node must have, one key per check that takes a setting; a check whose key is not given is reported
        V(skip).
      - C(gpu_count) (a whole number, 0 or more) - the GPUs NVML must see (check C(gpu_count)).
      - C(gpu_models) (a list of strings) - substrings of the NVML product name, one of which every GPU must match
        (check C(gpu_models)); empty does not check.
      - Any other key fails the task, naming the valid ones.
    type: dict
    default: {}
  mig_result:
    description:
      - The registered result of C(gpucluster.bringup.nvidia_mig) run in check mode with the wanted layout. The layout
        passes when it would change nothing and no MIG mode change is pending. Not checked when unset.
    type: dict
  gres_conf_path:
    description: The node's C(gres.conf).
    type: path
    default: /etc/slurm/gres.conf
  gres_conf_expected:
    description: The C(gres.conf) lines C(slurm_gres_facts) computes now. Not checked when unset.
    type: list
    elements: str
  gres_facts_error:
    description: The error C(slurm_gres_facts) failed with on this node; the C(gres_conf) check then fails with it.
    type: str
  services:
    description: systemd units that must be active (C(systemctl is-active)). Units named munge and slurmd get their own checks.
    type: list
    elements: str
    default: [munge, slurmd]
  munge_roundtrip:
    description: Encode and decode a credential with C(munge -n | unmunge).
    type: bool
    default: true
  munge_key_check:
    description:
      - Check that the munge key is private (the C(munge) check fails otherwise) - O(munge_key_path) of mode 0400 or 0600
        owned by O(munge_user), in a directory of mode 0700 owned by O(munge_user). Whoever can read the key can forge
        credentials for any user. Only the file modes and owners are read, never the key.
    type: bool
    default: true
  munge_key_path:
    description: The munge key (munged's C(--key-file)).
    type: path
    default: /etc/munge/munge.key
  munge_user:
    description: The user munged runs as, which must own the key and its directory.
    type: str
    default: munge
  slurm_state:
    description: Check the node's Slurm state (not drained, down or not responding) with C(scontrol -o show node).
    type: bool
    default: true
  enroot:
    description: enroot must be installed (C(enroot version)) and configured (O(enroot_conf_path) present).
    type: bool
    default: false
  enroot_conf_path:
    description: enroot's configuration file.
    type: path
    default: /etc/enroot/enroot.conf
  container_gpu:
    description:
      - GPU containers must start. On a GPU node (O(nvml=true)) with O(enroot=true) the C(enroot) check looks for
        libnvidia-container's C(nvidia-container-cli) in PATH, which enroot's NVIDIA hook C(98-nvidia.sh) runs for every
        image that sets C(NVIDIA_VISIBLE_DEVICES) (CUDA images) and without which such a container does not start.
      - V(true) fails the C(enroot) check when it is absent; V(false) passes it and names the absence in the reason.
    type: bool
    default: false
  pyxis:
    description: pyxis must be loaded (C(srun --help) lists C(--container-image)).
    type: bool
    default: false
  hook_log:
    description: Read the hook runner's log (journal identifier O(hook_log_ident)) and return the last failed hook.
    type: bool
    default: false
  hook_log_ident:
    description: Syslog identifier of the hook runner.
    type: str
    default: slurm-hooks
  hook_log_lines:
    description: How many of the newest log lines to read (1 to 1000000).
    type: int
    default: 500
  hook_log_files:
    description: Syslog files searched for O(hook_log_ident) lines when the journal has none (or there is no C(journalctl)).
    type: list
    elements: path
    default: [/var/log/syslog, /var/log/messages]
'''

EXAMPLES = r'''
- name: Compare the MIG layout with the wanted one
  gpucluster.bringup.nvidia_mig:
    gpus:
      - {gpu: all, instances: [{profile: 3g.40gb, count: 2}]}
  check_mode: true
  register: mig

- name: Node checks
  gpucluster.bringup.node_check:
    expect:
      gpu_count: 8
      gpu_models: [H100]
    mig_result: "{{ mig }}"
    gres_conf_expected: "{{ ansible_facts.slurm_gres.gres_conf_lines }}"
    enroot: true
    container_gpu: true
    pyxis: true
  register: node
'''

RETURN = r'''
records:
  description: One check record per check (stage V(node)), in the order nvml, gpu_count, gpu_models, mig_layout,
    gres_conf, munge, slurmd, node_state, enroot, pyxis, then one per other unit of O(services).
  returned: always
  type: list
  elements: dict
  sample: [{stage: node, node: gpu-01, check: gres_conf, status: fail, reason: "/etc/slurm/gres.conf differs ..."}]
passed:
  description: No check failed.
  returned: always
  type: bool
failed_checks:
  description: Names of the failed checks.
  returned: always
  type: list
  elements: str
node_name:
  description: The Slurm node name the checks used.
  returned: always
  type: str
gpus:
  description: The GPUs NVML lists (C(index), C(name)); empty when NVML was not queried or does not answer.
  returned: always
  type: list
  elements: dict
versions:
  description:
    - What the node runs, for the validation report - C(slurm) (C(slurmd -V), else C(slurmctld -V)), C(driver)
      (NVML's nvmlSystemGetDriverVersion) and C(cuda) (nvmlSystemGetCudaDriverVersion as V(12.4)); null where not known
      (NVML not queried or not answering, no Slurm daemon installed).
  returned: always
  type: dict
  sample: {slurm: 22.05.8, driver: 550.54.15, cuda: '12.4'}
hook_failure:
  description: The last failed hook in the runner's log (phase, job, hook, rc, status, output), or null.
  returned: when O(hook_log=true)
  type: dict
hook_log:
  description: The last 50 lines of the hook runner's log.
  returned: when O(hook_log=true)
  type: str
'''

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._munge_key import observe as observe_munge_key
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_version import parse_version, version_name
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import (
    NODE_CHECKS, check_node_input, node_records, record, slurm_name)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_resume import last_hook_failure
from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml as nvml


def cuda_version(number):
    """NVML's CUDA driver version (``1000 * major + 10 * minor``) as text: ``12040`` -> ``12.4``; None stays None."""
    if number is None:
        return None
    return '%d.%d' % (int(number) // 1000, int(number) % 1000 // 10)


def _driver_versions(client):
    """``{'driver', 'cuda'}`` as NVML gives them, None for one it does not."""
    versions = {}
    for key, read in (('driver', client.driver_version), ('cuda', lambda: cuda_version(client.optional('nvmlSystemGetCudaDriverVersion')))):
        try:
            versions[key] = read()
        except nvml.NvmlError:
            versions[key] = None
    return versions


def query_nvml():
    """The GPUs NVML lists (index and name), and the driver and CUDA versions, through the collection's NVML client."""
    pynvml, missing = nvml.import_bindings()
    if pynvml is None:
        return {'nvml_error': missing}
    try:
        with nvml.session(pynvml) as client:
            gpus = []
            for index in range(client.count()):
                handle = client.handle(index)
                gpus.append({'index': index, 'name': nvml.text(client.call('nvmlDeviceGetName', handle))})
            return {'nvml_error': None, 'gpus': gpus, 'versions': _driver_versions(client)}
    except nvml.NvmlError as exc:
        return {'nvml_error': str(exc)}


def _mig(result):
    if result is None:
        return None
    if result.get('failed') or 'actions' not in result:
        # a failed nvidia_mig run registered with failed_when: false has no actions, only its msg
        return {'error': result.get('msg') or 'nvidia_mig returned no actions'}
    return {'actions': list(result.get('actions') or []),
            'reset_required': [gpu.get('index') for gpu in result.get('gpus') or [] if gpu.get('reset_required')]}


class NodeChecker(object):
    """Observes this node (one method per observation) and judges it with the pure checks of _validation_checks."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.name = self.params['node_name'] or socket.gethostname().split('.')[0]
        self.observed = {}

    def _run(self, argv, **kwargs):
        return self.module.run_command(argv, **kwargs)

    def _bin(self, name):
        return self.module.get_bin_path(name)

    def check(self):
        """The module's result: the check records of this node."""
        params = self.params
        observed = self.observed
        if params['nvml']:
            observed.update(query_nvml())
        observed['mig'] = _mig(params['mig_result'])
        self.observe_gres_conf()
        observed['services'] = self.services()
        if params['munge_roundtrip']:
            observed['munge'] = self.munge_roundtrip()
        if params['munge_key_check'] and 'munge' in params['checks']:
            observed['munge_key'] = observe_munge_key(params['munge_key_path'], params['munge_user'])
        if params['slurm_state']:
            self.observe_slurm()
        if params['enroot']:
            observed['enroot'] = self.enroot()
        if params['pyxis']:
            observed['pyxis'] = self.pyxis()
        records = self.records()
        versions = dict(observed.get('versions') or {'driver': None, 'cuda': None}, slurm=self.slurm_version())
        result = dict(changed=False, records=records, failed_checks=[r['check'] for r in records if r['status'] == 'fail'],
                      node_name=self.name, gpus=observed.get('gpus') or [], versions=versions)
        result['passed'] = not result['failed_checks']
        if params['hook_log']:
            text = self.hook_log()
            result['hook_log'] = '\n'.join(text.splitlines()[-50:])
            result['hook_failure'] = last_hook_failure(text)
        return result

    def observe_gres_conf(self):
        params = self.params
        if params['gres_facts_error']:
            self.observed['gres_conf'] = {'path': params['gres_conf_path'], 'error': params['gres_facts_error']}
        elif params['gres_conf_expected'] is not None:
            text = None
            try:
                with open(params['gres_conf_path']) as handle:
                    text = handle.read()
            except (IOError, OSError, ValueError):
                text = None
            self.observed['gres_conf'] = {'path': params['gres_conf_path'], 'text': text, 'expected': params['gres_conf_expected']}

    def services(self):
        systemctl = self._bin('systemctl')
        services = {}
        for unit in self.params['services']:
            if systemctl:
                # "--": a unit name is never an option of systemctl (check_node_input refused a leading "-" too)
                dummy, out, err = self._run([systemctl, 'is-active', '--', unit])
                services[unit] = (out or err).strip().splitlines()[0] if (out or err).strip() else 'unknown'
            else:
                services[unit] = 'unknown (no systemctl)'
        return services

    def munge_roundtrip(self):
        munge, unmunge = self._bin('munge'), self._bin('unmunge')
        if not munge or not unmunge:
            return {'rc': 127, 'output': 'munge/unmunge not found in PATH'}
        rc, cred, err = self._run([munge, '-n'])
        if rc != 0:
            return {'rc': rc, 'output': err or cred}
        rc, out, err = self._run([unmunge], data=cred, binary_data=True)
        return {'rc': rc, 'output': out + err}

    def observe_slurm(self):
        scontrol = self._bin('scontrol')
        if not scontrol:
            self.observed['scontrol'] = ''
            self.observed['scontrol_error'] = 'scontrol is not installed'
            return
        # the name is node_name (checked as a Slurm node name) or the short host name, checked too: scontrol would
        # read a leading "-" as an option
        try:
            slurm_name('node_name', self.name, 'a Slurm node name (set node_name where the host name is not one)')
        except InputError as exc:
            self.observed['scontrol'] = ''
            self.observed['scontrol_error'] = str(exc)
            return
        rc, out, err = self._run([scontrol, '-o', 'show', 'node', self.name])
        self.observed['scontrol'] = out
        if rc != 0:
            self.observed['scontrol_error'] = (err or out).strip() or 'rc %d' % rc

    def slurm_version(self):
        """The version the node's Slurm daemon prints (``slurmd -V``: ``slurm 22.05.8``), else slurmctld's; None without either."""
        for daemon in ('slurmd', 'slurmctld'):
            path = self._bin(daemon)
            if path:
                rc, out, err = self._run([path, '-V'])
                if rc == 0:
                    try:
                        return version_name(parse_version(out or err))
                    except ValueError:
                        pass
        return None

    def enroot(self):
        conf_path = self.params['enroot_conf_path']
        enroot = self._bin('enroot')
        if not enroot:
            return {'rc': None, 'conf_path': conf_path}
        rc, out, err = self._run([enroot, 'version'])
        found = {'rc': rc, 'output': (out or err).strip(), 'conf_path': conf_path, 'conf_present': os.path.isfile(conf_path)}
        if self.params['nvml']:
            # a GPU node: enroot's 98-nvidia.sh hook needs nvidia-container-cli (libnvidia-container) to give containers GPUs
            found['nvidia_cli'] = self._bin('nvidia-container-cli')
        return found

    def pyxis(self):
        srun = self._bin('srun')
        if not srun:
            return {'rc': None}
        rc, out, err = self._run([srun, '--help'])
        return {'rc': rc, 'output': out + err}

    def records(self):
        params = self.params
        name = self.name
        try:
            records = node_records(name, self.observed, dict(params['expect'], enroot=params['enroot'], pyxis=params['pyxis'],
                                                             container_gpu=params['container_gpu'], node_name=name))
        except ValueError as exc:
            raise InputError(str(exc))
        records = [rec for rec in records if rec['check'] in params['checks']]
        for unit, state in self.observed['services'].items():
            if unit in NODE_CHECKS:
                continue
            records.append(record('node', name, unit, 'pass' if state == 'active' else 'fail', '%s is %s' % (unit, state)))
        return records

    def hook_log(self):
        """The hook runner's recent log lines: from the journal, else from the first log file that exists."""
        params = self.params
        journalctl = self._bin('journalctl')
        if journalctl:
            rc, out, dummy = self._run([journalctl, '--no-pager', '-o', 'cat', '-t', params['hook_log_ident'], '-n', str(params['hook_log_lines'])])
            if rc == 0 and out:
                return out
        for path in params['hook_log_files']:
            if os.path.isfile(path):
                try:
                    with open(path, errors='replace') as handle:
                        lines = [line for line in handle if params['hook_log_ident'] in line]
                except (IOError, OSError) as exc:
                    self.module.warn('cannot read %s: %s' % (path, exc))
                    continue
                return ''.join(lines[-params['hook_log_lines']:])
        return ''


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type='list', elements='str', choices=list(NODE_CHECKS), default=list(NODE_CHECKS)),
            node_name=dict(type='str'),
            nvml=dict(type='bool', default=True),
            expect=dict(type='dict', default={}),
            mig_result=dict(type='dict'),
            gres_conf_path=dict(type='path', default='/etc/slurm/gres.conf'),
            gres_conf_expected=dict(type='list', elements='str'),
            gres_facts_error=dict(type='str'),
            services=dict(type='list', elements='str', default=['munge', 'slurmd']),
            munge_roundtrip=dict(type='bool', default=True),
            munge_key_check=dict(type='bool', default=True),
            munge_key_path=dict(type='path', default='/etc/munge/munge.key'),
            munge_user=dict(type='str', default='munge'),
            slurm_state=dict(type='bool', default=True),
            enroot=dict(type='bool', default=False),
            enroot_conf_path=dict(type='path', default='/etc/enroot/enroot.conf'),
            container_gpu=dict(type='bool', default=False),
            pyxis=dict(type='bool', default=False),
            hook_log=dict(type='bool', default=False),
            hook_log_ident=dict(type='str', default='slurm-hooks'),
            hook_log_lines=dict(type='int', default=500),
            hook_log_files=dict(type='list', elements='path', default=['/var/log/syslog', '/var/log/messages']),
        ),
        supports_check_mode=True,
    )
    try:
        check_node_input(module.params)
        result = NodeChecker(module).check()
    except InputError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
