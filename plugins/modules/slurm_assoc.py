#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: slurm_assoc
short_description: Slurm accounting as code - cluster, QOS, accounts and users with sacctmgr
version_added: 0.1.0
description:
  - Makes the Slurm accounting database hold the cluster, QOS, accounts and users (associations)
    given, using C(sacctmgr) on a host where it can reach slurmdbd (the slurmctld host).
  - Reads the current records with C(sacctmgr --parsable2 --noheader show ...), compares only the
    settings given (names, descriptions and organizations case-insensitively, TRES lists in any
    order, memory in any unit, times in any Slurm time format) and runs C(sacctmgr -i add|modify|delete)
    only for what differs, so a second run changes nothing.
  - Removes a QOS, account or user only when it is listed with C(state=absent) (or O(state=absent)
    for every listed item) or, for everything not listed, with O(purge=true). Slurm's own C(root) account and user and
    C(normal) QOS are never removed.
  - After changing anything the module reads the records again and fails if they still differ
    from what was asked (a setting sacctmgr silently ignored).
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
    details: Reads the database (read-only) and reports the commands it would run.
  diff_mode:
    support: full
    details: Shows the QOS, accounts and users of the cluster before and after.
options:
  cluster:
    description:
      - The cluster, the C(ClusterName) of slurm.conf. Added to the database when missing.
    type: str
    required: true
  qos:
    description:
      - QOS to manage. Each item has C(name), optionally C(state) (V(present) or V(absent)), and any
        C(sacctmgr add qos) option as a key, in any case, for example C(MaxTRESPerUser=gres/gpu=8),
        C(MaxTRESPerJob), C(MaxTRESPerNode), C(MaxTRESPerAccount), C(MinTRESPerJob), C(GrpTRES),
        C(GrpTRESMins), C(GrpTRESRunMins), C(MaxJobsPerUser), C(MaxSubmitJobsPerUser),
        C(MaxJobsPerAccount), C(MaxSubmitJobsPerAccount), C(GrpJobs), C(GrpSubmitJobs), C(MaxWall),
        C(GrpWall), C(MaxTRESMinsPerJob), C(Priority), C(Flags) (a list), C(Preempt) (a list),
        C(PreemptMode), C(GraceTime) (seconds), C(UsageFactor), C(UsageThreshold), C(Description).
      - TRES values are C(name=count) strings (C(gres/gpu=8,cpu=64)) or dictionaries. The list replaces the whole limit;
        a TRES left out of it is removed from the limit.
      - V(-1) (or V(UNLIMITED)) removes a limit, as C(sacctmgr) documents it; V(-1) resets C(UsageFactor) to its default 1.
        Any other negative number, an empty or null value, a fraction where a whole number is wanted, a TRES count of
        V(-1), a TRES name without its type (C(gpu) instead of C(gres/gpu)) or an unknown flag fails the module before
        it changes anything.
      - Times (C(MaxWall), C(GrpWall), C(GraceTime)) are C(MM), C(MM:SS), C(HH:MM:SS), C(D-HH), C(D-HH:MM) or
        C(D-HH:MM:SS), or a bare number (minutes, seconds for C(GraceTime)). Slurm keeps wall-clock limits in whole
        minutes and rounds seconds up; the module compares them the same way.
    type: list
    elements: dict
    default: []
  accounts:
    description:
      - Accounts to manage in O(cluster). Each item has C(name), optionally C(state), C(parent)
        (default C(root)), C(description), C(organization), and any association option as a key,
        that is C(Fairshare), C(QOS) (a list), C(DefaultQOS), C(GrpTRES), C(GrpTRESMins), C(GrpTRESRunMins),
        C(GrpJobs), C(GrpSubmitJobs), C(GrpWall), C(MaxJobs), C(MaxSubmitJobs), C(MaxTRESPerJob),
        C(MaxTRESPerNode), C(MaxTRESMinsPerJob), C(MaxWall), C(Priority).
      - A limit set on an account is inherited by the associations below it that do not set it.
      - C(Fairshare) is a whole number from 1 to 2147483646 or V(parent); V(-1) resets it to 1. C(DefaultQOS) must be
        one of the association's C(QOS) (V(-1) clears it).
    type: list
    elements: dict
    default: []
  users:
    description:
      - Users to manage in O(cluster). Each item has C(name), C(accounts) (a list of account names, or
        of dictionaries with C(name) and association options for that account only), optionally
        C(state), C(default_account) (default the first account), C(admin_level) (V(none),
        V(operator), V(administrator)), and association options as keys that apply to each of the
        user's accounts.
      - A user listed with state present is removed from accounts not in its list only with O(purge=true).
    type: list
    elements: dict
    default: []
  state:
    description: The state of listed items that do not set their own C(state).
    type: str
    choices: [present, absent]
    default: present
  purge:
    description:
      - Also remove every QOS, account, user and user association of O(cluster) that is not listed
        (except C(root) and C(normal)).
    type: bool
    default: false
  executable:
    description: The sacctmgr command, a name looked up in C(PATH) or an absolute path.
    type: str
    default: sacctmgr
notes:
  - Limits on a TRES (C(gres/gpu), C(gres/gpu:a100), ...) need that TRES in the database; slurmctld
    registers the TRES of C(AccountingStorageTRES) when it starts. The module fails, naming them,
    when a TRES is unknown.
  - Slurm keeps names in lower case, so cluster, QOS, account and user names must be given in lower case (the module
    fails naming the lower-case spelling otherwise).
  - The whole of O(qos), O(accounts) and O(users) is checked before the first C(sacctmgr) command; a bad value fails
    the module naming the item, the setting, the value and what is valid, and nothing is changed.
  - Partition-specific associations are left alone.
seealso:
  - name: sacctmgr
    description: The Slurm command this module runs.
    link: https://slurm.schedmd.com/sacctmgr.html
  - name: Resource limits
    description: How Slurm applies association and QOS limits.
    link: https://slurm.schedmd.com/resource_limits.html
"""

EXAMPLES = r"""
- name: QOS with GPU limits, accounts and users of the cluster
  gpucluster.bringup.slurm_assoc:
    cluster: gpucluster
    qos:
      - name: gpu8
        MaxTRESPerUser: gres/gpu=8
        Priority: 10
      - name: interactive
        MaxWall: "4:00:00"
        MaxTRESPerJob: {gres/gpu: 2, mem: 64G}
        Flags: [DenyOnLimit]
    accounts:
      - name: research
        description: Research groups
        Fairshare: 10
        QOS: [normal, gpu8, interactive]
      - name: ml
        parent: research
        GrpTRES: gres/gpu=16
    users:
      - name: alice
        accounts: [ml, {name: research, Fairshare: 3}]
        QOS: [normal, gpu8]
        DefaultQOS: normal

- name: Remove everything that is not in the inventory
  gpucluster.bringup.slurm_assoc:
    cluster: gpucluster
    qos: "{{ slurm_qos }}"
    accounts: "{{ slurm_accounts }}"
    users: "{{ slurm_users }}"
    purge: true

- name: Remove one user from the cluster
  gpucluster.bringup.slurm_assoc:
    cluster: gpucluster
    users:
      - name: mallory
        state: absent
"""

RETURN = r"""
actions:
  description: The sacctmgr commands run (or, in check mode, that would run), in order.
  returned: always
  type: list
  elements: dict
  contains:
    command:
      description: The command as an argument list.
      type: list
      elements: str
      sample: [sacctmgr, -i, modify, qos, where, name=gpu8, set, MaxTRESPerUser=gres/gpu=8]
    summary:
      description: What the command changes.
      type: str
      sample: "modify QOS gpu8: MaxTRESPerUser gres/gpu=4 -> gres/gpu=8"
accounting:
  description:
    - The QOS, accounts (with their associations in O(cluster)) and users (with their associations)
      after the run, values as sacctmgr prints them. In check mode, the current records with the
      given settings applied.
  returned: always
  type: dict
  sample:
    qos: {gpu8: {MaxTRESPerUser: gres/gpu=8, Priority: 10}}
    accounts: {ml: {parent: research, GrpTRES: gres/gpu=16, Fairshare: 1}}
    users: {alice: {DefaultAccount: ml, accounts: {ml: {QOS: "gpu8,normal"}}}}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _sacctmgr as acct


class SacctmgrError(Exception):
    """A sacctmgr command failed."""


class Sacctmgr(object):
    """Runs sacctmgr; every failure names the command and what it printed."""

    def __init__(self, module, executable):
        self.module = module
        self.path = module.get_bin_path(executable, required=False) if '/' not in executable else executable
        if not self.path:
            module.fail_json(msg='the sacctmgr command "%s" was not found in PATH; install the Slurm client '
                                 '(Debian: slurm-client) on this host or set executable' % executable)

    def run(self, argv):
        command = [self.path] + argv
        rc, out, err = self.module.run_command(command)
        if rc != 0:
            text = (err.strip() or out.strip() or 'no output').replace('\n', ' | ')
            raise SacctmgrError('"%s" failed (rc=%d): %s' % (' '.join(['sacctmgr'] + argv), rc, text))
        return out

    def read(self, cluster):
        outputs = {}
        for name, argv in acct.read_commands(cluster).items():
            outputs[name] = self.run(argv)
        return acct.parse_state(cluster, outputs)


def run_module(module):
    params = module.params
    default_state = params['state']

    def with_state(items):
        return [dict(item, state=item.get('state', default_state)) for item in items]

    try:
        desired = acct.desired_state(params['cluster'], with_state(params['qos']), with_state(params['accounts']),
                                     with_state(params['users']))
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    sacctmgr = Sacctmgr(module, params['executable'])
    try:
        current = sacctmgr.read(desired['cluster'])
    except SacctmgrError as exc:
        module.fail_json(msg='cannot read the accounting database: %s; is slurmdbd running and reachable '
                             '(AccountingStorageHost in slurm.conf, munge)?' % exc)
    except ValueError as exc:
        module.fail_json(msg='cannot parse sacctmgr output: %s' % exc)
    trouble = acct.problems(desired, current, params['purge'])
    if trouble:
        module.fail_json(msg='; '.join(trouble), problems=trouble)
    actions = acct.plan(desired, current, params['purge'])
    before = acct.summarize(current)
    done = []
    after = acct.summarize(acct.expected_state(desired, current, params['purge']))
    if actions and not module.check_mode:
        for action in actions:
            try:
                sacctmgr.run(['-i'] + action.argv)
            except SacctmgrError as exc:
                module.fail_json(msg='%s while trying to %s' % (exc, action.summary), actions=done)
            done.append(action.as_dict())
        try:
            final = sacctmgr.read(desired['cluster'])
        except (SacctmgrError, ValueError) as exc:
            module.fail_json(msg='the changes were made but reading them back failed: %s' % exc, actions=done)
        left = acct.plan(desired, final, params['purge'])
        if left:
            module.fail_json(msg='sacctmgr accepted the changes but these still differ: %s'
                                 % '; '.join(a.summary for a in left), actions=done)
        after = acct.summarize(final)
    result = {'changed': bool(actions), 'actions': [a.as_dict() for a in actions], 'accounting': after}
    if module._diff:
        result['diff'] = {'before': before, 'after': after}
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cluster=dict(type='str', required=True),
            qos=dict(type='list', elements='dict', default=[]),
            accounts=dict(type='list', elements='dict', default=[]),
            users=dict(type='list', elements='dict', default=[]),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            purge=dict(type='bool', default=False),
            executable=dict(type='str', default='sacctmgr'),
        ),
        supports_check_mode=True,
    )
    run_module(module)


if __name__ == '__main__':
    main()
