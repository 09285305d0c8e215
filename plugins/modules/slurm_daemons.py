#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_daemons
short_description: Which Slurm daemons run on a host, and whether an upgraded package replaced their program
version_added: 0.1.0
description:
  - Reads the main PID of each systemd unit of O(daemons) and where C(/proc/PID/exe) points. A program whose file was
    replaced by a package upgrade (the link ends with C( (deleted)), or, where the link cannot be read, the program file
    C(/usr/sbin/<daemon>) changed after the process started) still runs the old release - on a host with slurmdbd
    and slurmctld, upgrading slurmdbd's packages replaces slurmctld's program too, and its step of the upgrade is still
    to do.
  - Changes nothing. Every name is checked before C(systemctl) runs, and the units follow C(--) on its command line,
    so no name can be read as one of its options.
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
  daemons:
    description:
      - The systemd units to read (at least one), with or without C(.service) - letters, digits, C(:), C(_), C(.), a
        backslash, C(@) and C(-), not starting with C(-) or C(@), at most 256 characters with C(.service). The results
        name them without C(.service).
    type: list
    elements: str
    default: [slurmdbd, slurmctld, slurmd]
'''

EXAMPLES = r'''
- name: Read which Slurm daemons run an old program
  gpucluster.bringup.slurm_daemons:
  register: daemons
'''

RETURN = r'''
daemons:
  description: Per daemon - C(pid) (0 when not running), C(running), C(program) (the target of C(/proc/PID/exe), empty where it cannot be read) and C(replaced).
  returned: always
  type: dict
replaced:
  description: The running daemons whose program was replaced.
  returned: always
  type: list
  elements: str
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import require_unit
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, show

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_upgrade import (
    process_start,
    program_replaced,
    systemctl_main_pids,
)


def _boot_time():
    with open('/proc/stat') as handle:
        for line in handle:
            if line.startswith('btime '):
                return int(line.split()[1])
    return 0


def _running(name, pid):
    """(program, replaced) of the daemon's process ``pid``."""
    program = ''
    try:
        program = os.readlink('/proc/%d/exe' % pid)
    except OSError:
        pass
    started = ctime = None
    if not program:
        try:
            with open('/proc/%d/stat' % pid) as handle:
                started = process_start(handle.read(), _boot_time(), os.sysconf('SC_CLK_TCK'))
            ctime = os.stat(os.path.realpath('/usr/sbin/%s' % name)).st_ctime
        except (OSError, ValueError, IndexError):
            started = ctime = None
    return program, program_replaced(program, started, ctime)


def check_daemons(daemons):
    """The unit names of ``daemons`` without ``.service``, each once, in order; raises ``InputError`` on the first bad one."""
    if not daemons:
        raise InputError('daemons is %s, expected at least one name, each a systemd unit name such as "slurmd" or "slurmd.service"' % show(daemons))
    names = []
    for index, name in enumerate(daemons):
        base = require_unit('daemons[%d]' % index, name)
        if base not in names:
            names.append(base)
    return names


def main():
    module = AnsibleModule(
        argument_spec=dict(daemons=dict(type='list', elements='str', default=['slurmdbd', 'slurmctld', 'slurmd'])),
        supports_check_mode=True,
    )
    try:
        names = check_daemons(module.params['daemons'])
    except InputError as exc:
        module.fail_json(msg=str(exc))
    # "--": a unit name is never one of systemctl's options (the names are checked too)
    rc, out, err = module.run_command(['systemctl', 'show', '--property=Id,MainPID', '--'] + ['%s.service' % name for name in names])
    if rc != 0:
        module.fail_json(msg='systemctl show failed: %s' % err.strip(), rc=rc)
    pids = systemctl_main_pids(out)
    daemons = {}
    for name in names:
        pid = pids.get(name, 0)
        program, replaced = _running(name, pid) if pid else ('', False)
        daemons[name] = {'pid': pid, 'running': bool(pid), 'program': program, 'replaced': replaced}
    module.exit_json(changed=False, daemons=daemons, replaced=[name for name in names if daemons[name]['replaced']])


if __name__ == '__main__':
    main()
