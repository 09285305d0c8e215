#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurmdbd_convert
short_description: Run slurmdbd in the foreground until it has converted its database, then stop it
version_added: 0.1.0
description:
  - Starts C(slurmdbd -D -v) as the Slurm user, the way SchedMD's upgrade guide asks for after a major upgrade, reads its
    output until it says C(slurmdbd version ... started) (the schema conversion is over and it listens), then stops it
    with SIGTERM so that the service manager can start it again.
  - Run it with C(async) and a long O(timeout) - the conversion can take an hour on a large database, longer than a
    service manager's start timeout or an SSH connection waits.
  - Fails when slurmdbd exits before it is ready (for example C(Database schema is too old for this version of Slurm to
    upgrade)), naming its error lines, or when O(timeout) passes; the output is returned in both cases.
  - The slurmdbd service must be stopped first; the database is changed by slurmdbd itself, not by this module.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
    details: In check mode nothing runs and the task reports a change; the options are checked as in a real run.
  diff_mode:
    support: none
options:
  executable:
    description: The slurmdbd program, an absolute path (not under C(/proc) or C(/sys)) of a regular file O(user) may execute.
    type: path
    default: /usr/sbin/slurmdbd
  user:
    description:
      - The user slurmdbd runs as (the C(SlurmUser) of C(slurmdbd.conf), C(User=) of its systemd unit); it must exist.
      - Another user than the module's own needs the module to run as root (C(become)).
    type: str
    default: slurm
  timeout:
    description: Seconds to wait for the conversion, 1 to 86400 (a day); slurmdbd is killed after them.
    type: int
    default: 7200
  output_lines:
    description: How many of the last output lines to return, 0 to 100000.
    type: int
    default: 60
'''

EXAMPLES = r'''
- name: Convert the accounting database with the new slurmdbd (foreground, up to two hours)
  gpucluster.bringup.slurmdbd_convert:
    timeout: 7200
  async: 7260
  poll: 15
'''

RETURN = r'''
seconds:
  description: How long slurmdbd ran until it was ready (or failed).
  returned: when it ran
  type: float
conversion:
  description: The output lines that speak of the conversion.
  returned: when it ran
  type: list
  elements: str
errors:
  description: The C(error:) and C(fatal:) lines of its output.
  returned: when it ran
  type: list
  elements: str
output:
  description: The last O(output_lines) lines of its output.
  returned: when it ran
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_upgrade import dbd_outcome
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurmdbd_run import check_params, run_foreground


def main():
    module = AnsibleModule(
        argument_spec=dict(
            executable=dict(type='path', default='/usr/sbin/slurmdbd'),
            user=dict(type='str', default='slurm'),
            timeout=dict(type='int', default=7200),
            output_lines=dict(type='int', default=60),
        ),
        supports_check_mode=True,
    )
    try:
        params = check_params(module.params)
    except InputError as exc:
        module.fail_json(msg=str(exc))
    if module.check_mode:
        module.exit_json(changed=True, msg='check mode: slurmdbd would run in the foreground to convert its database')
    try:
        lines, code, timed_out, seconds = run_foreground(params['executable'], params['user'], params['timeout'])
    except OSError as exc:
        module.fail_json(msg='executable %s could not be started as %s: %s; expected the slurmdbd program'
                         % (params['executable'], params['user'], exc.strerror or exc))
    outcome = dbd_outcome(lines, code, timed_out)
    tail = lines[-params['output_lines']:] if params['output_lines'] else []
    result = dict(seconds=round(seconds, 1), conversion=outcome['conversion'], errors=outcome['errors'], output=tail)
    if not outcome['ok']:
        module.fail_json(msg=outcome['message'], **result)
    module.exit_json(changed=True, msg=outcome['message'], **result)


if __name__ == '__main__':
    main()
