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
short_description: Which Slurm daemons run on a host, whether an upgraded package replaced their program, and what they have not applied
version_added: 0.1.0
description:
  - Reads the main PID of each systemd unit of O(daemons) and where C(/proc/PID/exe) points. A program whose file was
    replaced by a package upgrade (the link ends with C( (deleted)), or, where the link cannot be read, the program file
    C(/usr/sbin/<daemon>) changed after the process started) still runs the old release - on a host with slurmdbd
    and slurmctld, upgrading slurmdbd's packages replaces slurmctld's program too, and its step of the upgrade is still
    to do.
  - Reads the pending-restart marker of each daemon (C(<pending_dir>/<daemon>.json), written by
    M(gpucluster.bringup.install_files) before it replaced a file the daemon reads). A marker is settled once the daemon
    took the change - its running process started after the marker was written, it is not running, the node rebooted, or
    (a reconfigure marker) O(reconfigured) names it; the others are returned in RV(pending).
  - Changes nothing, except that with O(settle) the settled markers are removed (not in check mode). Every name is
    checked before C(systemctl) runs, and the units follow C(--) on its command line, so no name can be read as one of
    its options.
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
  settle:
    description: Remove the markers of O(daemons) that are settled (RV(settled)).
    type: bool
    default: false
  fail_pending:
    description: Fail, naming each daemon, the change and the command that applies it, when a marker of O(daemons) is still pending.
    type: bool
    default: false
  reconfigured:
    description: The daemons a reconfigure of this run applied the files to (C(scontrol reconfigure) returned 0); settles their reconfigure markers.
    type: list
    elements: str
    default: []
  pending_dir:
    description: Where the markers are kept.
    type: path
    default: /var/lib/gpucluster/pending
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
pending:
  description: >-
    Per daemon of O(daemons) with a change it has not taken - C(action) (V(restart) or V(reconfigure)), C(reasons) (the
    files that changed), C(message) (one line naming the daemon, the host, the change and the command that applies it).
  returned: always
  type: dict
  sample: {slurmctld: {action: reconfigure, reasons: ["/etc/slurm/slurm.conf changed (content): MaxJobCount"]}}
settled:
  description: Per daemon whose marker is settled, why (removed with O(settle), outside check mode).
  returned: always
  type: dict
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils import _pending_restart as pending_logic
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _pending_restart_io as pending_io
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


def check_reconfigured(names):
    """The names of ``reconfigured`` (a list: the argument spec's) without ``.service``; raises ``InputError`` on the first bad one."""
    return [require_unit('reconfigured[%d]' % index, name, 'slurmctld') for index, name in enumerate(names)]


def read_pending(module, names, daemons):
    """(pending, settled) of the markers of ``names``; with settle, the settled ones are removed."""
    directory = module.params['pending_dir']
    reconfigured = check_reconfigured(module.params['reconfigured'])
    current, host = pending_io.boot_id(), os.uname()[1]
    pending, settled = {}, {}
    for name in names:
        try:
            marker = pending_io.read_marker(directory, name, current)
        except (IOError, OSError) as exc:
            module.fail_json(msg='the pending-restart marker of %s in %s cannot be read: %s' % (name, directory, exc.strerror or exc))
        if marker is None:
            continue
        pid = daemons[name]['pid']
        why = pending_logic.settled(marker, current, pending_io.process_started(pid) if pid else None, name in reconfigured)
        if not why:
            pending[name] = {'action': marker['action'], 'reasons': marker.get('reasons', []), 'message': pending_logic.describe(host, marker)}
            continue
        settled[name] = why
        if module.params['settle'] and not module.check_mode:
            try:
                pending_io.remove_marker(directory, name)
            except (IOError, OSError) as exc:
                module.fail_json(msg='the pending-restart marker %s cannot be removed: %s' % (pending_io.path_of(directory, name), exc.strerror or exc))
    return pending, settled


def main():
    module = AnsibleModule(
        argument_spec=dict(
            daemons=dict(type='list', elements='str', default=['slurmdbd', 'slurmctld', 'slurmd']),
            settle=dict(type='bool', default=False),
            fail_pending=dict(type='bool', default=False),
            reconfigured=dict(type='list', elements='str', default=[]),
            pending_dir=dict(type='path', default='/var/lib/gpucluster/pending'),
        ),
        supports_check_mode=True,
    )
    try:
        names = check_daemons(module.params['daemons'])
        check_reconfigured(module.params['reconfigured'])
        pending_logic.check_dir(module.params['pending_dir'])
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
    pending, settled = read_pending(module, names, daemons)
    if pending and module.params['fail_pending']:
        module.fail_json(msg='; '.join(pending[name]['message'] for name in names if name in pending), daemons=daemons, pending=pending,
                         settled=settled, changed=bool(settled) and module.params['settle'])
    module.exit_json(changed=bool(settled) and module.params['settle'], daemons=daemons, replaced=[name for name in names if daemons[name]['replaced']],
                     pending=pending, settled=settled)


if __name__ == '__main__':
    main()
