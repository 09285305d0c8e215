# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_version compared whole (issue 43): every refusal and problem as the user reads it, the behaviour dicts whole,
each limit on both sides (upgrade and skew windows, the support window, the security month), the tables' defaults."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv

STATES_23 = ['ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED', 'NONDRAINED_IDLE']
LIST_24 = 'expected a comma-separated list of ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE (Slurm 24.11)'
LIST_26 = 'expected a comma-separated list of ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE (Slurm 26.05), START_ONLY or REBOOT_ONLY alone'


def test_the_policy_constants():
    assert (sv.NEWEST_KNOWN, sv.OLDEST, sv.SUPPORT_MONTHS) == ((26, 5), (22, 5), 18)
    assert (sv.TOPOLOGY_YAML_FROM, sv.GRES_GPUS_EXCLUSIVE_FROM, sv.CGROUP_V1_DEPRECATED_FROM, sv.CONFIGLESS_TASK_PROLOG_FROM) == (
        (25, 5), (26, 5), (25, 5), (25, 11))
    assert sv.GPUS_PER_NODE_ENV == {'srun': 'SLURM_GPUS_PER_NODE', 'sbatch': 'SBATCH_GPUS_PER_NODE', 'salloc': 'SALLOC_GPUS_PER_NODE'}


@pytest.mark.parametrize('text, message', [
    ('  9.1.1 \n', "'9.1.1' is not a Slurm version: expected e.g. 'slurm 24.11.5' or '24.11.5-4+deb13u1'"),
    ('slurm-22.05.8', "'slurm-22.05.8' is not a Slurm version: expected e.g. 'slurm 24.11.5' or '24.11.5-4+deb13u1'"),
    ('22.07.1', "'22.07.1' names Slurm 22.07, which is not a Slurm release; releases: 20.02, 20.11, 21.08, 22.05"),
    ('slurm 19.05.1', "'slurm 19.05.1' names Slurm 19.05, which is not a Slurm release; releases: 20.02"),
    (None, 'a Slurm version must be a string, got None'),
    ((24, 11), 'a Slurm version must be a string, got (24, 11)'),
])
def test_parse_version_refusals_whole(text, message):
    with pytest.raises(ValueError) as err:
        sv.parse_version(text)
    assert str(err.value) == message


def test_parse_version_reads_after_a_colon_and_a_tab():
    assert sv.parse_version('2:25.11.1-1') == (25, 11, 1)
    assert sv.parse_version('slurm\t26.05.4') == (26, 5, 4)
    assert sv.parse_version('27.05.0') == (27, 5, 0)      # past the known releases: computed


def test_names_and_releases():
    assert (sv.release_name((24, 5, 1)), sv.version_name((24, 5, 1, 9)), sv.version_name([26, 11, 0])) == ('24.05', '24.05.1', '26.11.0')
    assert sv.major_releases((27, 5))[-4:] == [(25, 11), (26, 5), (26, 11), (27, 5)]
    assert sv.major_releases((26, 11, 3))[-2:] == [(26, 5), (26, 11)]
    assert sv.major_releases((19, 5)) == [(20, 2)]
    assert sv.major_releases((20, 2)) == [(20, 2)]


@pytest.mark.parametrize('installed, target, message', [
    ((24, 6), (24, 11), '24.06 is not a Slurm major release'),
    ((24, 11), (25, 6, 1), '25.06 is not a Slurm major release'),
])
def test_releases_ahead_refusals_whole(installed, target, message):
    with pytest.raises(ValueError) as err:
        sv.releases_ahead(installed, target)
    assert str(err.value) == message


@pytest.mark.parametrize('installed, target, problem', [
    ((22, 5, 8), (24, 11, 5),
     'Slurm 22.05.8 cannot be upgraded to 24.11.5 in one step: 24.11 is 4 major releases ahead and 24.11 upgrades from at most 3 releases '
     'back (SchedMD; its slurmdbd refuses an older database: "Database schema is too old"); upgrade through 22.05 -> 23.11 -> 24.11'),
    ((22, 5, 8), (24, 5, 1),
     'Slurm 22.05.8 cannot be upgraded to 24.05.1 in one step: 24.05 is 3 major releases ahead and 24.05 upgrades from at most 2 releases '
     'back (SchedMD; its slurmdbd refuses an older database: "Database schema is too old"); upgrade through 22.05 -> 23.11 -> 24.05'),
    ((22, 5, 8), (23, 11, 0), ''),       # exactly the window (2)
    ((24, 11, 5), (24, 5, 1),
     'Slurm 24.11.5 cannot be downgraded to 24.05.1: state files and the accounting database are only converted forward; restore the '
     'backup taken before the upgrade instead'),
    ((24, 11, 5), (24, 11, 1), ''),      # a micro downgrade is no major one
])
def test_upgrade_problem_whole(installed, target, problem):
    assert sv.upgrade_problem(installed, target) == problem


def test_upgrade_path_steps_as_far_as_each_window():
    assert sv.upgrade_path((20, 2, 1), (26, 5, 0)) == ['20.02', '21.08', '23.02', '24.11', '26.05']
    assert sv.upgrade_path((26, 5, 0), (26, 5, 9)) == ['26.05']


def test_behaviour_whole():
    assert sv.behaviour((23, 11, 2)) == {
        'version': '23.11.2', 'release': '23.11', 'reconfigure_restarts': True, 'topology_block': True, 'topology_file': 'topology.conf',
        'gres_gpus_exclusive': False, 'healthcheck_node_states': STATES_23, 'cgroup_v1_deprecated': False,
        'configless_task_prolog': False, 'upgrade_window': 2}
    assert sv.behaviour((23, 2, 7))['reconfigure_restarts'] is False and sv.behaviour((23, 2, 7))['topology_block'] is False
    assert sv.behaviour((24, 11, 0))['upgrade_window'] == 3


def test_unread_behaviour_is_the_oldest_release_without_a_version():
    assert sv.unread_behaviour() == {
        'version': '', 'release': '', 'reconfigure_restarts': False, 'topology_block': False, 'topology_file': 'topology.conf',
        'gres_gpus_exclusive': False, 'healthcheck_node_states': ['ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED'], 'cgroup_v1_deprecated': False,
        'configless_task_prolog': False, 'upgrade_window': 2}


@pytest.mark.parametrize('value, version, problem', [
    ('ANY, CYCLE', (24, 11, 5), "HealthCheckNodeState is ANY, CYCLE, %s (slurmctld ignores ' CYCLE')" % LIST_24),
    ('NONDRAINED_IDLE', (22, 5, 8),
     'HealthCheckNodeState is NONDRAINED_IDLE, expected a comma-separated list of ALLOC, ANY, CYCLE, IDLE, MIXED (Slurm 22.05); '
     "NONDRAINED_IDLE (Slurm 23.02 on) (slurmctld ignores 'NONDRAINED_IDLE')"),
    ('busy,START_ONLY', (24, 11, 5),
     "HealthCheckNodeState is busy,START_ONLY, %s; START_ONLY (Slurm 25.11 on) (slurmctld ignores 'BUSY', 'START_ONLY')" % LIST_24),
    ('START_ONLY,REBOOT_ONLY', (24, 11, 5),
     'HealthCheckNodeState is START_ONLY,REBOOT_ONLY, %s; START_ONLY (Slurm 25.11 on), REBOOT_ONLY (Slurm 26.05 on) (slurmctld ignores '
     "'START_ONLY', 'REBOOT_ONLY')" % LIST_24),
    ('REBOOT_ONLY', (25, 11, 8),
     'HealthCheckNodeState is REBOOT_ONLY, expected a comma-separated list of ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE '
     "(Slurm 25.11), START_ONLY alone; REBOOT_ONLY (Slurm 26.05 on) (slurmctld ignores 'REBOOT_ONLY')"),
    ('ANY,START_ONLY', (26, 5, 3), 'HealthCheckNodeState is ANY,START_ONLY, %s: a *_ONLY state cannot be combined with another' % LIST_26),
    ('START_ONLY,REBOOT_ONLY', (26, 5, 3),
     'HealthCheckNodeState is START_ONLY,REBOOT_ONLY, %s: a *_ONLY state cannot be combined with another' % LIST_26),
    ('reboot_only', (26, 5, 3), ''),
    ('', (24, 11, 5), "HealthCheckNodeState is '', %s" % LIST_24),
    (None, (24, 11, 5), 'HealthCheckNodeState is None, %s' % LIST_24),
    (['ANY'], (26, 5, 3), "HealthCheckNodeState is ['ANY'], %s" % LIST_26),
    (',ANY', (26, 5, 3), 'HealthCheckNodeState is ,ANY, %s' % LIST_26),
    ('BUSY', (26, 5, 3), "HealthCheckNodeState is BUSY, %s (slurmctld ignores 'BUSY')" % LIST_26),
])
def test_healthcheck_node_state_problem_whole(value, version, problem):
    assert sv.healthcheck_node_state_problem(value, version) == problem


@pytest.mark.parametrize('argv, env, problem', [
    (['srun', '--gres=gpu', '--gpus-per-node=1'], None,
     'srun combines --gres=gpu and --gpus-per-node=1, which Slurm 26.05 refuses (mutually exclusive since 26.05): expected one of them'),
    (['srun', '--gres=shard:1, gpu:2', '--gpus-per-node', '1'], None,
     'srun combines --gres=shard:1, gpu:2 and --gpus-per-node 1, which Slurm 26.05 refuses (mutually exclusive since 26.05): expected one '
     'of them'),
    (['srun', '--gpus-per-node=1', '--gres'], None, ''),                # --gres last, without its value
    (['srun', '--gres=gpu:1', '--gpus-per-node'], None,
     'srun combines --gres=gpu:1 and --gpus-per-node , which Slurm 26.05 refuses (mutually exclusive since 26.05): expected one of them'),
    (['srun', '--gres=gpus:1', '--gpus-per-node=1'], None, ''),
    (['srun', '--gres=gpu:1'], {'SLURM_GPUS_PER_NODE': 0},
     'srun combines --gres=gpu:1 and SLURM_GPUS_PER_NODE=0 in its environment, which Slurm 26.05 refuses (mutually exclusive since '
     '26.05): expected one of them'),
    (['salloc', '--gres=gpu:1'], {'SALLOC_GPUS_PER_NODE': '2'},
     'salloc combines --gres=gpu:1 and SALLOC_GPUS_PER_NODE=2 in its environment, which Slurm 26.05 refuses (mutually exclusive since '
     '26.05): expected one of them'),
    (['srun', '--gres=gpu:1', '--gpus-per-node=1'], {'SLURM_GPUS_PER_NODE': '8'},
     'srun combines --gres=gpu:1 and --gpus-per-node=1, which Slurm 26.05 refuses (mutually exclusive since 26.05): expected one of them'),
    (['mpirun', '--gres=gpu:1'], {'SLURM_GPUS_PER_NODE': '8'}, ''),
    (['srun', '--gres=gpu:1'], {'SLURM_GPUS_PER_NODE': ''}, ''),
    (['/opt/slurm/bin/sbatch', '--gres=gpu:1'], {'SBATCH_GPUS_PER_NODE': '4'},
     '/opt/slurm/bin/sbatch combines --gres=gpu:1 and SBATCH_GPUS_PER_NODE=4 in its environment, which Slurm 26.05 refuses (mutually '
     'exclusive since 26.05): expected one of them'),
    ([], {'SLURM_GPUS_PER_NODE': '8'}, ''),
    (['--gres=gpu:1', '--gpus-per-node=1'], None, ''),                   # the program's own name is no option
])
def test_gpu_request_problem_whole(argv, env, problem):
    assert sv.gpu_request_problem(argv, (26, 5, 0), env) == problem


def test_gpu_request_problem_before_2605_and_with_numbers():
    assert sv.gpu_request_problem(['srun', '--gres=gpu:1', '--gpus-per-node=1'], (25, 11, 9)) == ''
    assert sv.gpu_request_problem(['srun', '--gres', 'gpu:1', '--gpus-per-node', 2], (26, 5)) == (
        'srun combines --gres gpu:1 and --gpus-per-node 2, which Slurm 26.05 refuses (mutually exclusive since 26.05): expected one of them')


def test_month_names_and_dates():
    assert [sv.month_name((2026, m)) for m in (1, 12)] == ['January 2026', 'December 2026']
    assert sv.support((24, 5)) == {'release': '24.05', 'released': (2024, 5), 'ends': (2025, 11), 'known': True}
    assert sv.support((26, 5, 1)) == {'release': '26.05', 'released': (2026, 5), 'ends': (2027, 11), 'known': True}
    assert sv.support((20, 11))['ends'] == (2022, 5)
    day = datetime.date(2026, 9, 30)
    assert sv.as_date(day) is day
    assert sv.as_date(' 2026-09-30\n') == day
    assert sv.as_date(datetime.datetime(2026, 9, 30, 12, 0)) == datetime.datetime(2026, 9, 30, 12, 0)
    with pytest.raises(ValueError) as err:
        sv.as_date('2026-02-30')
    assert str(err.value) == "today is '2026-02-30', expected a date such as '2026-09-30'"
    with pytest.raises(ValueError) as err:
        sv.support((24, 6))
    assert str(err.value) == '24.06 is not a Slurm major release'


@pytest.mark.parametrize('today, releases', [
    ('2025-10-31', [(24, 5), (24, 11), (25, 5)]),    # 24.05's last month
    ('2025-11-01', [(24, 11), (25, 5), (25, 11)]),   # 24.05 ends, 25.11 starts
])
def test_supported_releases_on_both_sides_of_a_month(today, releases):
    assert sv.supported_releases(today) == releases


@pytest.mark.parametrize('version, today, warnings', [
    ((23, 11, 1), '2026-05-01',
     ["Slurm 23.11.1 is past SchedMD's support: 23.11 (released November 2023) was supported until May 2025; SchedMD supports 25.05, "
      '25.11, 26.05 on 2026-05-01 (of the releases this collection knows) and fixes security problems only there; an upgrade from 23.11 '
      'reaches 25.05 in one step']),
    ((25, 5, 1), '2027-01-01',
     ["Slurm 25.05.1 is past SchedMD's support: 25.05 (released May 2025) was supported until November 2026; SchedMD supports 25.11, "
      '26.05 on 2027-01-01 (of the releases this collection knows) and fixes security problems only there; an upgrade from 25.05 reaches '
      '26.05 in one step',
      'Slurm 25.05.1 lacks the fixes of 25.05.9 (eight CVEs, September 2026): upgrade to 25.05.9 or later']),
    ((25, 5, 8), '2026-10-31', ['Slurm 25.05.8 lacks the fixes of 25.05.9 (eight CVEs, September 2026): upgrade to 25.05.9 or later']),
    ((25, 5, 1), '2026-10-31', ['Slurm 25.05.1 lacks the fixes of 25.05.9 (eight CVEs, September 2026): upgrade to 25.05.9 or later']),
    ((25, 5, 10), '2026-10-31', []),
    ((25, 5, 9), '2026-10-31', []),                                           # the fixed version itself
    ((25, 5, 3), '2026-08-31', []),                                           # the month before the security release
    ((25, 5, 3), '2026-09-01', ['Slurm 25.05.3 lacks the fixes of 25.05.9 (eight CVEs, September 2026): upgrade to 25.05.9 or later']),
    ((24, 11, 5), '2026-04-30', []),                                          # the last month of its support
    ((24, 11, 5), '2026-05-31',                                               # the month its support ends
     ["Slurm 24.11.5 is past SchedMD's support: 24.11 (released November 2024) was supported until May 2026; SchedMD supports 25.05, "
      '25.11, 26.05 on 2026-05-31 (of the releases this collection knows) and fixes security problems only there; an upgrade from 24.11 '
      'reaches 26.05 in one step']),
    ((26, 11, 2), '2026-09-01', ["Slurm 26.11.2 is newer than the releases this collection knows (up to 26.05): its behaviour is taken "
                                 "as 26.05's"]),
])
def test_support_warnings_whole(version, today, warnings):
    assert sv.support_warnings(version, today) == warnings


@pytest.mark.parametrize('daemon, version, ctl, problem', [
    ('slurmdbd', (24, 5, 1), (23, 2, 1), ''),                                       # exactly its window (2)
    ('slurmdbd', (24, 5, 1), (22, 5, 1), "3 releases after it, and slurmdbd 24.05 talks to slurmctld of at most 2 releases back "
                                         "(SchedMD's upgrade rules); expected the same release on both"),
    ('sackd', (23, 2, 1), (24, 11, 1), ''),                                         # exactly slurmctld's window (3)
    ('sackd', (22, 5, 1), (24, 11, 1), "4 releases before it, and slurmctld 24.11 talks to at most 3 releases back (SchedMD's upgrade "
                                       'rules); expected release 24.11 or at most 3 before it'),
    ('sackd', (25, 5, 1), (24, 11, 1), "Slurm's version rules: slurmdbd >= slurmctld >= slurmd and the client commands; expected release "
                                       '24.11 or older for sackd'),
    ('client', (24, 11, 1), (24, 11, 9), ''),
    ('client', (25, 5, 1), (24, 11, 9), "Slurm's version rules: slurmdbd >= slurmctld >= slurmd and the client commands; expected "
                                        'release 24.11 or older for the client commands'),
    ('slurmd', (22, 5, 1), (24, 5, 1), "3 releases before it, and slurmctld 24.05 talks to at most 2 releases back (SchedMD's upgrade "
                                       'rules); expected release 24.05 or at most 2 before it'),
])
def test_skew_problem_whole(daemon, version, ctl, problem):
    assert sv.skew_problem(daemon, version, ctl) == problem


def test_skew_problem_refusal_whole():
    with pytest.raises(ValueError) as err:
        sv.skew_problem(None, (24, 11, 5), (24, 11, 5))
    assert str(err.value) == 'daemon is None, expected slurmdbd, slurmd, sackd or client'


def test_too_old_on_both_sides():
    assert (sv.too_old((22, 2, 9)), sv.too_old((22, 5)), sv.too_old((21, 8, 9))) == (True, False, True)


def test_the_tables_whole():
    assert sv.behaviour_table(first=(25, 11)) == '\n'.join([
        '| release | topology file the role writes | --gres=gpu:N with --gpus-per-node | HealthCheckNodeState values | cgroup v1 node '
        '| configless sends TaskProlog/TaskEpilog |',
        '|---|---|---|---|---|---|',
        '| 25.11 | topology.yaml | taken | ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE, START_ONLY | deprecated: the node preflight '
        "warns | yes (from slurm.conf's directory) |",
        '| 26.05 | topology.yaml | refused (mutually exclusive) | ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE, START_ONLY, REBOOT_ONLY | '
        "deprecated: the node preflight warns | yes (from slurm.conf's directory) |"])
    assert sv.behaviour_table().split('\n')[2].startswith('| 22.05 | topology.conf | taken | ALLOC, ANY, CYCLE, IDLE, MIXED | supported | no |')
    assert sv.policy_table(first=(26, 5)) == '\n'.join([
        "| release | released | SchedMD's support ends | the collection | upgrade from at most (releases back) | security releases |",
        '|---|---|---|---|---|---|',
        '| 26.05 | May 2026 | November 2027 | runs | 3 | 26.05.4 (eight CVEs, September 2026) |'])
    assert sv.policy_rows(last=(21, 8)) == [['21.08', 'August 2021', 'February 2023', 'refused: ' + sv.TOO_OLD_WHY, '2', '-']]
    assert sv.policy_table().split('\n')[2].startswith('| 21.08 | August 2021 | February 2023 | refused: ')
    assert len(sv.policy_rows()) == 9 and len(sv.behaviour_table().split('\n')) == 2 + 8
