# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import re

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_version import (
    behaviour,
    major_releases,
    parse_version,
    releases_ahead,
    upgrade_path,
    upgrade_problem,
    upgrade_window,
)


@pytest.mark.parametrize('text, expected', [
    ('slurm 22.05.8', (22, 5, 8)),            # slurmd -V of SchedMD's build
    ('slurm-wlm 24.11.5', (24, 11, 5)),       # Debian's build
    ('slurm-wlm 24.11.5\n', (24, 11, 5)),
    ('24.11.5-4+deb13u1', (24, 11, 5)),       # the package version
    ('22.05.8-4+deb12u3', (22, 5, 8)),
    ('1:26.05.5-1', (26, 5, 5)),              # with an epoch
    ('slurm 25.05.0-0rc1', (25, 5, 0)),
    ('slurm 23.02.7', (23, 2, 7)),
    ('slurm 23.2.7', (23, 2, 7)),             # the minor without its 0
])
def test_parse_version(text, expected):
    assert parse_version(text) == expected


@pytest.mark.parametrize('text, message', [
    ('', "'' is not a Slurm version"),
    ('slurm', "'slurm' is not a Slurm version"),
    ('9.1.1', "'9.1.1' is not a Slurm version"),
    ('22.07.1', "names Slurm 22.07, which is not a Slurm release"),
    ('24.06.1', "names Slurm 24.06, which is not a Slurm release"),
    (None, 'must be a string'),
    (24.11, 'must be a string'),
])
def test_parse_version_errors(text, message):
    with pytest.raises(ValueError, match=message.replace('.', r'\.').replace('(', r'\(')):
        parse_version(text)


def test_major_releases_extend_past_the_known_ones():
    assert major_releases((26, 5))[-5:] == [(24, 5), (24, 11), (25, 5), (25, 11), (26, 5)]
    assert major_releases((22, 5))[-2:] == [(21, 8), (22, 5)]


@pytest.mark.parametrize('installed, target, ahead', [
    ((22, 5, 8), (22, 5, 9), 0),
    ((22, 5, 8), (23, 2, 0), 1),
    ((22, 5, 8), (23, 11, 0), 2),
    ((22, 5, 8), (24, 11, 5), 4),
    ((24, 11, 5), (26, 5, 5), 3),
    ((24, 11, 5), (22, 5, 8), -4),
])
def test_releases_ahead(installed, target, ahead):
    assert releases_ahead(installed, target) == ahead


@pytest.mark.parametrize('target, window', [
    ((23, 2, 0), 2), ((23, 11, 0), 2), ((24, 5, 0), 2), ((24, 11, 0), 3), ((26, 5, 5), 3),
])
def test_upgrade_window(target, window):
    assert upgrade_window(target) == window


@pytest.mark.parametrize('installed, target, problem', [
    ((24, 11, 5), (24, 11, 6), ''),
    ((22, 5, 8), (23, 11, 1), ''),        # two ahead: 23.11 takes 22.05
    ((23, 2, 7), (24, 11, 5), ''),        # three ahead: 24.11 takes 23.02
    ((24, 11, 5), (26, 5, 5), ''),        # Debian 13 to forky
    ((22, 5, 8), (24, 5, 1), 'upgrade through 22.05 -> 23.11 -> 24.05'),
    ((22, 5, 8), (24, 11, 5), 'Slurm 22.05.8 cannot be upgraded to 24.11.5 in one step: 24.11 is 4 major releases ahead '
                              'and 24.11 upgrades from at most 3 releases back'),
    ((22, 5, 8), (24, 11, 5), 'upgrade through 22.05 -> 23.11 -> 24.11'),
    ((24, 11, 5), (24, 5, 1), 'cannot be downgraded to 24.05.1'),
])
def test_upgrade_problem(installed, target, problem):
    found = upgrade_problem(installed, target)
    if problem:
        assert problem in found
    else:
        assert found == ''


@pytest.mark.parametrize('installed, target, path', [
    ((22, 5, 8), (22, 5, 9), ['22.05']),
    ((22, 5, 8), (24, 11, 5), ['22.05', '23.11', '24.11']),
    ((21, 8, 1), (26, 5, 5), ['21.08', '23.02', '24.11', '26.05']),
])
def test_upgrade_path(installed, target, path):
    assert upgrade_path(installed, target) == path
    # every step is inside its target's window
    for old, new in zip(path, path[1:]):
        assert upgrade_problem(parse_version(old + '.0'), parse_version(new + '.0')) == ''


@pytest.mark.parametrize('version, reconfigure_restarts', [
    ((22, 5, 8), False), ((23, 2, 7), False), ((23, 11, 0), True), ((24, 11, 5), True),
])
def test_behaviour(version, reconfigure_restarts):
    found = behaviour(version)
    assert found['reconfigure_restarts'] is reconfigure_restarts
    # topology/block came with the same release (23.11)
    assert found['topology_block'] is reconfigure_restarts
    assert found['version'] == '%d.%02d.%d' % version


# --- the version policy (issue 46) ------------------------------------------------------------------------------------

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))


@pytest.mark.parametrize('release, released, ends', [
    ((21, 8), (2021, 8), (2023, 2)),
    ((22, 5), (2022, 5), (2023, 11)),
    ((23, 11), (2023, 11), (2025, 5)),
    ((24, 11), (2024, 11), (2026, 5)),    # issue 46: 24.11 left SchedMD's support in May 2026
    ((25, 5), (2025, 5), (2026, 11)),
    ((26, 5), (2026, 5), (2027, 11)),
])
def test_support_window(release, released, ends):
    found = sv.support(release)
    assert (found['released'], found['ends'], found['known']) == (released, ends, True)


def test_support_of_a_release_after_the_known_ones_and_of_no_release():
    assert sv.support((26, 11)) == {'release': '26.11', 'released': (2026, 11), 'ends': (2028, 5), 'known': False}
    with pytest.raises(ValueError, match='24.06 is not a Slurm major release'):
        sv.support((24, 6))


@pytest.mark.parametrize('today, releases', [
    ('2026-04-30', ['24.11', '25.05', '25.11']),          # the month before 26.05
    ('2026-05-01', ['25.05', '25.11', '26.05']),          # issue 46: the current releases
    (datetime.date(2026, 10, 1), ['25.05', '25.11', '26.05']),
    ('2026-11-01', ['25.11', '26.05']),                   # 26.11 is not known here yet: not named
    ('2028-01-01', []),
])
def test_supported_releases(today, releases):
    assert [release_name(r) for r in sv.supported_releases(today)] == releases


def release_name(release):
    return '%d.%02d' % release


@pytest.mark.parametrize('version, today, expected', [
    ((24, 11, 5), '2026-04-30', []),
    ((24, 11, 5), '2026-05-01',
     ["Slurm 24.11.5 is past SchedMD's support: 24.11 (released November 2024) was supported until May 2026; SchedMD supports 25.05, "
      '25.11, 26.05 on 2026-05-01 (of the releases this collection knows) and fixes security problems only there; an upgrade from 24.11 '
      'reaches 26.05 in one step']),
    ((22, 5, 8), '2026-10-01',
     ["Slurm 22.05.8 is past SchedMD's support: 22.05 (released May 2022) was supported until November 2023; SchedMD supports 25.05, "
      '25.11, 26.05 on 2026-10-01 (of the releases this collection knows) and fixes security problems only there; upgrade through '
      '22.05 -> 23.11 -> 25.05 -> 26.05']),
    # the security releases of September 2026
    ((25, 5, 3), '2026-08-31', []),
    ((25, 5, 3), '2026-09-01', ['Slurm 25.05.3 lacks the fixes of 25.05.9 (eight CVEs, September 2026): upgrade to 25.05.9 or later']),
    ((25, 11, 7), '2026-10-01', ['Slurm 25.11.7 lacks the fixes of 25.11.8 (eight CVEs, September 2026): upgrade to 25.11.8 or later']),
    ((26, 5, 3), '2026-10-01', ['Slurm 26.05.3 lacks the fixes of 26.05.4 (eight CVEs, September 2026): upgrade to 26.05.4 or later']),
    ((25, 5, 9), '2026-10-01', []),
    ((26, 5, 4), '2026-10-01', []),
    ((26, 11, 0), '2026-12-01', ["Slurm 26.11.0 is newer than the releases this collection knows (up to 26.05): its behaviour is taken as "
                                 "26.05's"]),
    # past the whole known table: nothing supported known here
    ((26, 5, 9), '2028-01-01', ["Slurm 26.05.9 is past SchedMD's support: 26.05 (released May 2026) was supported until November 2027; "
                                'SchedMD supports no release known here on 2028-01-01 (of the releases this collection knows) and fixes '
                                'security problems only there; upgrade to a current release']),
])
def test_support_warnings(version, today, expected):
    assert sv.support_warnings(version, today) == expected


@pytest.mark.parametrize('today', ['2026-13-01', '1.10.2026', 20261001, ''])
def test_today_is_checked(today):
    with pytest.raises(ValueError, match=r"today is .*, expected a date such as '2026-09-30'"):
        sv.support_warnings((24, 11, 5), today)


def test_today_defaults_to_the_calendar():
    assert sv.as_date() == datetime.date.today()


@pytest.mark.parametrize('version, refused', [((21, 8, 5), True), ((20, 11, 9), True), ((22, 5, 0), False), ((26, 5, 3), False)])
def test_too_old(version, refused):
    assert sv.too_old(version) is refused


@pytest.mark.parametrize('daemon, version, ctl, expected', [
    ('slurmdbd', (24, 11, 5), (24, 11, 5), ''),
    ('slurmdbd', (26, 5, 3), (24, 11, 5), ''),                           # 3 after: 26.05's slurmdbd takes it
    ('slurmdbd', (24, 11, 5), (26, 5, 3), "Slurm's version rules: slurmdbd >= slurmctld >= slurmd and the client commands; expected "
                                          'slurmdbd of release 26.05 or newer'),
    ('slurmdbd', (24, 11, 5), (22, 5, 8), "4 releases after it, and slurmdbd 24.11 talks to slurmctld of at most 3 releases back "
                                          "(SchedMD's upgrade rules); expected the same release on both"),
    ('slurmd', (24, 11, 5), (26, 5, 3), ''),
    ('client', (24, 5, 8), (26, 5, 3), "4 releases before it, and slurmctld 26.05 talks to at most 3 releases back (SchedMD's upgrade "
                                       'rules); expected release 26.05 or at most 3 before it'),
    ('slurmd', (26, 5, 3), (25, 11, 8), "Slurm's version rules: slurmdbd >= slurmctld >= slurmd and the client commands; expected "
                                        'release 25.11 or older for slurmd'),
    ('client', (26, 5, 3), (25, 11, 8), 'expected release 25.11 or older for the client commands'),
    ('slurmd', (22, 5, 8), (24, 5, 1), '3 releases before it, and slurmctld 24.05 talks to at most 2 releases back'),
])
def test_skew_problem(daemon, version, ctl, expected):
    found = sv.skew_problem(daemon, version, ctl)
    assert (found == '') if expected == '' else (expected in found), found


def test_skew_problem_names_a_daemon_it_does_not_know():
    with pytest.raises(ValueError, match="daemon is 'slurmctld', expected slurmdbd, slurmd, sackd or client"):
        sv.skew_problem('slurmctld', (24, 11, 5), (24, 11, 5))


def test_policy_rows():
    rows = sv.policy_rows()
    assert [row[0] for row in rows] == ['21.08', '22.05', '23.02', '23.11', '24.05', '24.11', '25.05', '25.11', '26.05']
    assert rows[0][3].startswith('refused: ') and all(row[3] == 'runs' for row in rows[1:])
    assert rows[5][1:3] == ['November 2024', 'May 2026']
    assert rows[-1][5] == '26.05.4 (eight CVEs, September 2026)'
    assert [row[4] for row in rows] == ['2'] * 5 + ['3'] * 4


def test_docs_carry_the_policy_table():
    """docs/slurm-versions.md holds the table policy_table() renders, between its two markers."""
    with open(os.path.join(ROOT, 'docs', 'slurm-versions.md')) as handle:
        text = handle.read()
    found = re.search(r'<!-- policy table: .*? -->\n(.*?)\n<!-- end of the policy table -->', text, re.S)
    assert found, 'docs/slurm-versions.md has no policy table between its markers'
    assert found.group(1) == sv.policy_table(), 'docs/slurm-versions.md: put this table between the markers:\n' + sv.policy_table()


# --- 26.05 behaviour changes where the collection generates jobs or config (issue 46, item 3) -------------------------

@pytest.mark.parametrize('version, topology_file, exclusive, cgroup_v1_deprecated, configless_task_prolog', [
    ((22, 5, 8), 'topology.conf', False, False, False),
    ((24, 11, 5), 'topology.conf', False, False, False),
    ((25, 5, 9), 'topology.yaml', False, True, False),
    ((25, 11, 8), 'topology.yaml', False, True, True),
    ((26, 5, 3), 'topology.yaml', True, True, True),
    ((26, 11, 0), 'topology.yaml', True, True, True),
])
def test_behaviour_of_the_recent_releases(version, topology_file, exclusive, cgroup_v1_deprecated, configless_task_prolog):
    found = behaviour(version)
    assert found['topology_file'] == topology_file
    assert found['gres_gpus_exclusive'] is exclusive
    assert found['cgroup_v1_deprecated'] is cgroup_v1_deprecated
    assert found['configless_task_prolog'] is configless_task_prolog


@pytest.mark.parametrize('version, states', [
    ((22, 5, 8), ['ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED']),
    ((23, 2, 7), ['ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED', 'NONDRAINED_IDLE']),
    ((24, 11, 5), ['ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED', 'NONDRAINED_IDLE']),
    ((25, 11, 0), ['ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED', 'NONDRAINED_IDLE', 'START_ONLY']),
    ((26, 5, 3), ['ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED', 'NONDRAINED_IDLE', 'START_ONLY', 'REBOOT_ONLY']),
])
def test_healthcheck_node_states(version, states):
    assert sv.healthcheck_node_states(version) == states
    assert behaviour(version)['healthcheck_node_states'] == states


@pytest.mark.parametrize('value, version, fragments', [
    ('ANY,CYCLE', (22, 5, 8), []),
    ('any,cycle', (24, 11, 5), []),
    ('CYCLE', (22, 5, 8), []),
    ('ANY, CYCLE', (24, 11, 5), ["HealthCheckNodeState is ANY, CYCLE, expected", "(slurmctld ignores ' CYCLE')"]),
    ('NONDRAINED_IDLE,CYCLE', (24, 11, 5), []),
    ('START_ONLY', (25, 11, 0), []),
    ('REBOOT_ONLY', (26, 5, 3), []),
    ('NONDRAINED_IDLE', (22, 5, 8), ['HealthCheckNodeState is NONDRAINED_IDLE, expected a comma-separated list of ALLOC, ANY, CYCLE, IDLE, '
                                     'MIXED (Slurm 22.05)', 'NONDRAINED_IDLE (Slurm 23.02 on)']),
    ('START_ONLY', (24, 11, 5), ['HealthCheckNodeState is START_ONLY', 'NONDRAINED_IDLE (Slurm 24.11)', 'START_ONLY (Slurm 25.11 on)']),
    ('REBOOT_ONLY', (25, 11, 8), ['HealthCheckNodeState is REBOOT_ONLY', 'START_ONLY alone', 'REBOOT_ONLY (Slurm 26.05 on)']),
    ('ANY,START_ONLY', (26, 5, 3), ['HealthCheckNodeState is ANY,START_ONLY', 'START_ONLY or REBOOT_ONLY alone',
                                    'a *_ONLY state cannot be combined with another']),
    ('BUSY', (26, 5, 3), ['HealthCheckNodeState is BUSY, expected a comma-separated list of ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE '
                          '(Slurm 26.05)']),
    ('ANY,', (26, 5, 3), ['HealthCheckNodeState is ANY,, expected']),
    ('', (24, 11, 5), ["HealthCheckNodeState is '', expected"]),
    (None, (24, 11, 5), ['HealthCheckNodeState is None, expected']),
])
def test_healthcheck_node_state_problem(value, version, fragments):
    problem = sv.healthcheck_node_state_problem(value, version)
    if not fragments:
        assert problem == ''
    for fragment in fragments:
        assert fragment in problem


@pytest.mark.parametrize('argv, version, problem', [
    (['srun', '--gres=gpu:8', '--gpus-per-node=8', 'true'], (26, 5, 3),
     'srun combines --gres=gpu:8 and --gpus-per-node=8, which Slurm 26.05 refuses (mutually exclusive since 26.05): expected one of them'),
    (['sbatch', '--gres', 'gpu:h100:2', '--gpus-per-node', '2', 'job.sh'], (26, 5, 3),
     'sbatch combines --gres gpu:h100:2 and --gpus-per-node 2, which Slurm 26.05 refuses'),
    (['salloc', '--gres=shard:2,gpu:1', '--gpus-per-node=1'], (26, 11, 0), 'salloc combines --gres=shard:2,gpu:1 and --gpus-per-node=1'),
    (['srun', '--gres=gpu:8', '--gpus-per-node=8', 'true'], (25, 11, 8), ''),
    (['srun', '--gres=shard:2', '--gpus-per-node=1', 'true'], (26, 5, 3), ''),
    (['srun', '--gres=gpu:8', 'true'], (26, 5, 3), ''),
    (['srun', '--gpus-per-node=8', 'true'], (26, 5, 3), ''),
])
def test_gpu_request_problem(argv, version, problem):
    found = sv.gpu_request_problem(argv, version)
    assert found.startswith(problem) if problem else found == ''


@pytest.mark.parametrize('argv, env, problem', [
    # an srun inside a job of sbatch --gpus-per-node: the job's environment carries SLURM_GPUS_PER_NODE
    (['/usr/bin/srun', '--gres=gpu:1', 'true'], {'SLURM_GPUS_PER_NODE': '8'},
     '/usr/bin/srun combines --gres=gpu:1 and SLURM_GPUS_PER_NODE=8 in its environment, which Slurm 26.05 refuses'),
    (['sbatch', '--gres=gpu:1', 'job.sh'], {'SBATCH_GPUS_PER_NODE': '1'}, 'sbatch combines --gres=gpu:1 and SBATCH_GPUS_PER_NODE=1'),
    (['sbatch', '--gres=gpu:1', 'job.sh'], {'SLURM_GPUS_PER_NODE': '1'}, ''),
    (['srun', '--gres=gpu:1', 'true'], {'SLURM_GPUS_PER_NODE': ''}, ''),
    (['srun', '--gres=gpu:1', 'true'], None, ''),
])
def test_gpu_request_problem_reads_the_environment(argv, env, problem):
    found = sv.gpu_request_problem(argv, (26, 5, 3), env)
    assert found.startswith(problem) if problem else found == ''


def test_docs_carry_the_behaviour_table():
    """docs/slurm-versions.md holds the per-release behaviour table behaviour_table() renders, between its markers."""
    with open(os.path.join(ROOT, 'docs', 'slurm-versions.md')) as handle:
        text = handle.read()
    found = re.search(r'<!-- behaviour table: .*? -->\n(.*?)\n<!-- end of the behaviour table -->', text, re.S)
    assert found, 'docs/slurm-versions.md has no behaviour table between its markers'
    assert found.group(1) == sv.behaviour_table(), 'docs/slurm-versions.md: put this table between the markers:\n' + sv.behaviour_table()
