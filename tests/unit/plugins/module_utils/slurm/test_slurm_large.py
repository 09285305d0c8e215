# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SchedMD's large-cluster settings (plugins/module_utils/slurm/_slurm_large.py) and the slurm role's tasks/large.yml.

- The pure logic in tables: where the settings start, the values at 1,024 and 10,000 nodes, TreeWidth by Slurm
  release, the admin's overrides winning in slurm.conf's merge, the warnings, the files (never lowering what a host
  has), bad input.
- tasks/large.yml run by a real ansible-playbook on this machine (local connection) with STAND-INS for ``sysctl`` and
  ``systemctl`` (scripts in a temporary PATH keeping a kernel's and systemd's values in a JSON file, applying sysctl
  files and drop-ins as the real programs do) and the files under a temporary directory: check mode, a first and a
  second run, the tier turned off, a small cluster.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.gpucluster.bringup.plugins.filter.slurm import FilterModule
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_large import (
    PATHS,
    dropin_lines,
    large_system_files,
    large_system_settings,
    message_hops,
    override_warnings,
    sysctl_conf_lines,
    tree_width_default,
    tree_width_rule,
)

FILTERS = FilterModule().filters()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
HW = {'NodeName': 'gpu-01', 'CPUs': 2, 'Boards': 1, 'SocketsPerBoard': 1, 'CoresPerSocket': 2, 'ThreadsPerCore': 1, 'RealMemory': 24000}

# What Debian 13's units and kernel have (slurmctld.service and slurmd.service of 24.11.5-4+deb13u1; Linux >= 5.4)
DEBIAN13_SLURMCTLD = {'TasksMax': 'infinity', 'LimitNOFILE': '65536', 'LimitNOFILESoft': '65536', 'LimitSTACK': 'infinity',
                      'LimitSTACKSoft': '8388608', 'LimitAS': 'infinity', 'LimitASSoft': 'infinity', 'LimitDATA': 'infinity',
                      'LimitDATASoft': 'infinity', 'LimitRSS': 'infinity', 'LimitRSSSoft': 'infinity'}
DEBIAN13_SLURMD = {'TasksMax': 'infinity', 'LimitNOFILE': '131072', 'LimitNOFILESoft': '131072'}
KERNEL = {'fs.file-max': '9223372036854775807', 'net.core.somaxconn': '4096', 'net.ipv4.tcp_max_syn_backlog': '512'}


def show(values):
    return ''.join('%s=%s\n' % item for item in values.items())


def sysctl_out(values):
    return ''.join('%s = %s\n' % item for item in values.items())


# --- where the settings start ----------------------------------------------------------------------------------------

@pytest.mark.parametrize('nodes, mode, threshold, applies', [
    (2, 'auto', 1024, False),
    (1023, 'auto', 1024, False),
    (1024, 'auto', 1024, True),       # the guide: "clusters containing 1,024 nodes or more"
    (10000, 'auto', 1024, True),
    (300, 'auto', 256, True),         # a site that moves the threshold
    (255, 'auto', 256, False),
    (2, 'always', 1024, True),
    (0, 'always', 1024, True),
    (10000, 'never', 1024, False),
])
def test_where_the_settings_apply(nodes, mode, threshold, applies):
    found = large_system_settings(nodes, '24.11.5', mode, threshold)
    assert found['applies'] is applies
    assert bool(found['sysctl']) is applies and bool(found['systemd']['slurmctld']) is applies


@pytest.mark.parametrize('nodes, mode', [(2, 'auto'), (1023, 'auto'), (50000, 'never')])
def test_below_the_threshold_nothing(nodes, mode):
    found = large_system_settings(nodes, '24.11.5', mode)
    assert (found['slurm_conf'], found['sysctl'], found['systemd'], found['settings'], found['unit_properties']) == (
        {}, {}, {'slurmctld': {}, 'slurmd': {}}, [], {'slurmctld': [], 'slurmd': []})


def test_a_small_clusters_slurm_conf_is_unchanged():
    """The contribution of a 2-node cluster is empty: slurm.conf's lines are those of a merge without it."""
    nodes = [{'name': 'gpu-01', 'hardware': HW}, {'name': 'gpu-02', 'hardware': dict(HW, NodeName='gpu-02')}]
    settings = {'ClusterName': 'gpucluster', 'SlurmdTimeout': 300}
    small = FILTERS['slurm_large_system'](2, '24.11.5')
    assert FILTERS['slurm_conf_lines'](nodes, settings, {}, contributions=[small['slurm_conf']]) == \
        FILTERS['slurm_conf_lines'](nodes, settings, {}, contributions=[])


# --- the values at 1,024 and 10,000 nodes ----------------------------------------------------------------------------

SLURMCTLD = {'TasksMax': 'infinity', 'LimitNOFILE': 65536, 'LimitSTACK': 'infinity', 'LimitAS': 'infinity', 'LimitDATA': 'infinity',
             'LimitRSS': 'infinity'}
SLURMD = {'TasksMax': 'infinity', 'LimitNOFILE': 8192}


@pytest.mark.parametrize('nodes, version, slurm_conf, somaxconn', [
    # 24.11 (default TreeWidth 16): the square root of 1,024 (2 hops), the cube root of 10,000 rounded up (3 hops)
    (1024, '24.11.5', {'TreeWidth': 32}, 1024),
    (10000, '24.11.5', {'TreeWidth': 22}, 4096),
    # 22.05 (default 50): the rule never beats 50 below 125,001 nodes
    (1024, '22.05.8', {}, 1024),
    (10000, '22.05.8', {}, 4096),
    # somaxconn: a burst of one message per node, from the guide's 1024 up to Slurm's listen() backlog of 4096
    (3000, '24.11.5', {}, 3000),
])
def test_values(nodes, version, slurm_conf, somaxconn):
    found = large_system_settings(nodes, version)
    assert found['slurm_conf'] == slurm_conf
    assert found['sysctl'] == {'fs.file-max': 32832, 'net.core.somaxconn': somaxconn, 'net.ipv4.tcp_max_syn_backlog': somaxconn}
    assert found['systemd'] == {'slurmctld': SLURMCTLD, 'slurmd': SLURMD}
    assert found['unit_properties']['slurmd'] == ['TasksMax', 'LimitNOFILE', 'LimitNOFILESoft']


def test_every_setting_names_its_source_and_where_it_starts():
    found = large_system_settings(10000, '24.11.5')
    assert [(e['file'], e['key']) for e in found['settings']][:4] == [
        ('slurm.conf', 'TreeWidth'), ('sysctl', 'fs.file-max'), ('sysctl', 'net.core.somaxconn'), ('sysctl', 'net.ipv4.tcp_max_syn_backlog')]
    for entry in found['settings']:
        assert entry['source'].startswith('https://slurm.schedmd.com/big_sys.html'), entry
        assert entry['quote'] and entry['from_nodes'] == 1024, entry
    assert 'the cube root for larger systems' in found['settings'][0]['quote']
    assert 'We recommend a limit of at least 32,832.' in found['settings'][1]['quote']
    # with a threshold of 256 TreeWidth still starts where 24.11's default of 16 is beaten: 257 nodes
    assert large_system_settings(300, '24.11.5', 'auto', 256)['settings'][0]['from_nodes'] == 257


# --- TreeWidth by release --------------------------------------------------------------------------------------------

@pytest.mark.parametrize('nodes, width', [
    (1, 1), (4, 2), (5, 3), (256, 16), (257, 17), (1024, 32), (2500, 50),
    (2501, 14), (4096, 16), (4097, 17), (10000, 22), (125000, 50), (125001, 51),
])
def test_tree_width_rule(nodes, width):
    assert tree_width_rule(nodes) == width


@pytest.mark.parametrize('width, nodes, hops', [
    (16, 4368, 3), (16, 4369, 4),     # slurm.conf(5) of 24.11: "4368 nodes can be contacted with three message hops"
    (50, 2550, 2),                    # slurm.conf(5) of 22.05: "over 2500 nodes can be contacted with two message hops"
    (32, 1024, 2), (8, 10000, 5), (22, 10000, 3), (1, 3, 3),
])
def test_message_hops(width, nodes, hops):
    assert message_hops(width, nodes) == hops


@pytest.mark.parametrize('version, default', [
    ('22.05.8', 50), ('slurm 21.08.5', 50), ('24.11.5', 16), ('slurm-wlm 24.11.5', 16), ('26.05.5-1', 16), ((25, 5, 0), 16),
    ('23.02.7', None), ('23.11.4', None), ('24.05.2', None), ('', None), (None, None),
])
def test_tree_width_default(version, default):
    assert tree_width_default(version) == default


@pytest.mark.parametrize('nodes, version, width', [
    (256, '24.11.5', None), (257, '24.11.5', 17), (1024, '24.11.5', 32), (2500, '24.11.5', 50),
    (2501, '24.11.5', None), (4096, '24.11.5', None), (4097, '24.11.5', 17), (10000, '24.11.5', 22),
    (1024, '22.05.8', None), (10000, '22.05.8', None), (125000, '22.05.8', None), (125001, '22.05.8', 51),
    # default not verified here, or no version read yet: only above 50, which beats both defaults
    (10000, '23.11.4', None), (10000, None, None), (125001, '24.05.2', 51), (125001, '', 51),
])
def test_tree_width_by_release(nodes, version, width):
    found = large_system_settings(nodes, version, 'always')
    assert found['slurm_conf'] == ({'TreeWidth': width} if width else {})


# --- the admin's overrides win -----------------------------------------------------------------------------------------

@pytest.mark.parametrize('overrides, line', [
    ({}, 'TreeWidth=32'),
    ({'treewidth': 8}, 'treewidth=8'),
    ({'TreeWidth': None}, None),
])
def test_overrides_win_over_the_contribution(overrides, line):
    large = FILTERS['slurm_large_system'](1024, 'slurm-wlm 24.11.5')
    lines = FILTERS['slurm_conf_lines']([{'name': 'gpu-01', 'hardware': HW}], {'ClusterName': 'gpucluster'}, overrides,
                                        contributions=[large['slurm_conf'], {'HealthCheckInterval': 300}])
    widths = [text for text in lines if text.lower().startswith('treewidth=')]
    assert widths == ([line] if line else [])
    assert 'HealthCheckInterval=300' in lines


# --- warnings --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('nodes, version, overrides, mode, expected', [
    (2000, '24.11.5', {'SlurmdTimeout': 60}, 'auto',
     ['slurm_conf_overrides sets SlurmdTimeout=60 on a cluster of 2000 compute nodes: SchedMD\'s Large Cluster Administration '
      'Guide (https://slurm.schedmd.com/big_sys.html) calls "SlurmdTimeout values of 120 seconds or more" reasonable for really '
      'large clusters (slurmctld pings each slurmd every half of it); the role\'s default is 300']),
    (2000, '24.11.5', {'slurmdtimeout': '119'}, 'auto', ['slurmdtimeout=119']),
    (2000, '24.11.5', {'SlurmdTimeout': 120}, 'auto', []),
    (2000, '24.11.5', {'SlurmdTimeout': None}, 'auto', []),   # removed: Slurm's default, 300
    (10000, '24.11.5', {'TreeWidth': 8}, 'auto',
     ['slurm_conf_overrides sets TreeWidth=8 on a cluster of 10000 compute nodes: slurmctld\'s messages then need 5 hops to reach '
      'every node, where the width of SchedMD\'s Large Cluster Administration Guide (https://slurm.schedmd.com/big_sys.html: the '
      'cube root of the node count), 22, needs 3; remove the override or set TreeWidth to at least 22']),
    (10000, '24.11.5', {'TreeWidth': 22}, 'auto', []),
    (10000, '24.11.5', {'TreeWidth': 64}, 'auto', []),        # wider: fewer hops, not against the guide
    (1024, '24.11.5', {'TreeWidth': None}, 'auto', ["removes TreeWidth, which leaves Slurm's default of 16 on a cluster of 1024"]),
    (1024, '22.05.8', {'TreeWidth': None}, 'auto', []),       # 50 is wider than 32
    (1024, '', {'TreeWidth': None}, 'auto', []),              # not known yet: at most 50, wider than 32
    (200000, '', {'TreeWidth': None}, 'auto', ["removes TreeWidth, which leaves Slurm's default (at most 50)"]),
    (10000, '24.11.5', {'SlurmdTimeout': 30, 'TreeWidth': 'x'}, 'auto', ['SlurmdTimeout=30']),
    (500, '24.11.5', {'SlurmdTimeout': 60, 'TreeWidth': 2}, 'auto', []),   # below the threshold
    (10000, '24.11.5', {'SlurmdTimeout': 60}, 'never', []),
    (2, '24.11.5', {'SlurmdTimeout': 60, 'TreeWidth': 1}, 'always', ['SlurmdTimeout=60', 'TreeWidth=1']),
])
def test_override_warnings(nodes, version, overrides, mode, expected):
    found = override_warnings(nodes, version, overrides, mode)
    assert len(found) == len(expected), found
    for text, part in zip(found, expected):
        assert part in text


def test_warnings_filter_takes_extra_vars_text():
    assert FILTERS['slurm_large_system_warnings'](600, '', {'SlurmdTimeout': 60}, 'auto', '512') != []
    assert FILTERS['slurm_large_system_warnings'](600, '', None, 'auto', '512') == []


# --- the files: never lower what the host has ---------------------------------------------------------------------------

def test_sysctl_file_raises_only():
    large = large_system_settings(1024, '24.11.5')
    lines = sysctl_conf_lines(large, sysctl_out(KERNEL))
    settings = [line for line in lines if not line.startswith('#')]
    assert settings == ['net.ipv4.tcp_max_syn_backlog = 1024']
    assert '# fs.file-max: the host has more than 32832 already, left as it is' in lines
    assert '# net.core.somaxconn: the host has more than 1024 already, left as it is' in lines
    # an old kernel (somaxconn 128), a key this kernel lacks
    lines = sysctl_conf_lines(large, 'fs.file-max = 32832\nnet.core.somaxconn = 128\n')
    assert [line for line in lines if not line.startswith('#')] == ['fs.file-max = 32832', 'net.core.somaxconn = 1024']
    assert '# net.ipv4.tcp_max_syn_backlog: not in this kernel, left out' in lines


def test_dropins_raise_only_and_keep_a_higher_hard_limit():
    large = large_system_settings(1024, '24.11.5')
    ctld = [line for line in dropin_lines(large, 'slurmctld', show(DEBIAN13_SLURMCTLD)) if not line.startswith('#')]
    assert ctld == ['[Service]', 'TasksMax=infinity', 'LimitNOFILE=65536', 'LimitSTACK=infinity', 'LimitAS=infinity', 'LimitDATA=infinity',
                    'LimitRSS=infinity']
    slurmd = dropin_lines(large, 'slurmd', show(DEBIAN13_SLURMD))
    assert [line for line in slurmd if not line.startswith('#')] == ['[Service]', 'TasksMax=infinity']
    assert '# LimitNOFILE: the unit allows more than 8192 already, left as it is' in slurmd
    # systemd's own default (soft 1024, hard 524288) and 512 tasks: the soft limit goes up, the hard one stays
    plain = {'TasksMax': '512', 'LimitNOFILE': '524288', 'LimitNOFILESoft': '1024'}
    assert [line for line in dropin_lines(large, 'slurmd', show(plain)) if not line.startswith('#')] == [
        '[Service]', 'TasksMax=infinity', 'LimitNOFILE=8192:524288']
    # nothing read (a unit systemctl does not show): nothing written
    assert [line for line in dropin_lines(large, 'slurmd', '') if not line.startswith('#')] == ['[Service]']


GUIDE_URL = 'https://slurm.schedmd.com/big_sys.html'
HEADER = ["# from SchedMD's Large Cluster Administration Guide, %s." % GUIDE_URL,
          '# A value is written where the host has less or the same; what it has higher is left out.']


def test_the_files_a_host_with_low_limits_gets_whole():
    # what an admin reads on the controller: every value with its source and why this value
    large = large_system_settings(1024, '24.11.5')
    assert {key: value for key, value in large.items() if key != 'settings'} == {
        'applies': True, 'reason': 'auto: 1024 compute nodes, at least slurm_large_system_min_nodes (1024)', 'nodes': 1024,
        'mode': 'auto', 'threshold': 1024, 'slurm_conf': {'TreeWidth': 32},
        'sysctl': {'fs.file-max': 32832, 'net.core.somaxconn': 1024, 'net.ipv4.tcp_max_syn_backlog': 1024},
        'systemd': {'slurmctld': {'TasksMax': 'infinity', 'LimitNOFILE': 65536, 'LimitSTACK': 'infinity', 'LimitAS': 'infinity',
                                  'LimitDATA': 'infinity', 'LimitRSS': 'infinity'},
                    'slurmd': {'TasksMax': 'infinity', 'LimitNOFILE': 8192}},
        'unit_properties': {'slurmctld': ['TasksMax', 'LimitNOFILE', 'LimitNOFILESoft', 'LimitSTACK', 'LimitSTACKSoft', 'LimitAS',
                                          'LimitASSoft', 'LimitDATA', 'LimitDATASoft', 'LimitRSS', 'LimitRSSSoft'],
                            'slurmd': ['TasksMax', 'LimitNOFILE', 'LimitNOFILESoft']}}
    kernel = sysctl_out({'fs.file-max': 1024, 'net.core.somaxconn': 128, 'net.ipv4.tcp_max_syn_backlog': 128})
    assert sysctl_conf_lines(large, kernel) == [
        '# Managed by gpucluster.bringup.slurm (slurm_large_system): kernel settings for a large cluster,'] + HEADER + [
        '# fs.file-max: %s (System Configuration)' % GUIDE_URL,
        '#   the guide\'s "at least 32,832"',
        'fs.file-max = 32832',
        '# net.core.somaxconn: %s (System Configuration); listen(2)' % GUIDE_URL,
        "#   a burst of one message per node (epilog completions of a job on every node), at least the guide's 1024, at most 4096: "
        "Slurm's own listen() backlog (SLURM_DEFAULT_LISTEN_BACKLOG), beyond which listen(2) caps it",
        'net.core.somaxconn = 1024',
        '# net.ipv4.tcp_max_syn_backlog: %s (System Configuration); listen(2)' % GUIDE_URL,
        '#   as large as somaxconn, so that the burst the accept queue takes is not dropped before it; listen(2): "The maximum length '
        'of the queue for incomplete sockets can be set using /proc/sys/net/ipv4/tcp_max_syn_backlog" (where syncookies are off)',
        'net.ipv4.tcp_max_syn_backlog = 1024']
    unit = {'TasksMax': '512', 'LimitNOFILE': '1024', 'LimitNOFILESoft': '1024', 'LimitSTACK': '8388608', 'LimitSTACKSoft': '8388608'}
    unit.update(('Limit%s%s' % (key, soft), '1000') for key in ('AS', 'DATA', 'RSS') for soft in ('', 'Soft'))
    limits = '%s (User Limits)' % GUIDE_URL
    assert dropin_lines(large, 'slurmctld', show(unit)) == [
        "# Managed by gpucluster.bringup.slurm (slurm_large_system): slurmctld's limits for a large cluster,"] + HEADER + [
        '# Read when slurmctld starts: a change restarts it.',
        '[Service]',
        '# TasksMax: %s (Thread/Process Limit)' % GUIDE_URL,
        '#   the guide\'s "special value infinity" instead of the 512 tasks some distributions allow a service',
        'TasksMax=infinity',
        "# LimitNOFILE: %s; SchedMD's slurmctld.service" % limits,
        "#   open file count: the value of SchedMD's own slurmctld.service, as Debian 13's 24.11.5 package ships it",
        'LimitNOFILE=65536',
        "# LimitSTACK: %s; SchedMD's slurmd.service" % limits,
        "#   stack size: unlimited, as SchedMD's slurmd.service has it",
        'LimitSTACK=infinity',
        '# LimitAS: %s' % limits, '#   memory size: the address space (ulimit -v)', 'LimitAS=infinity',
        '# LimitDATA: %s' % limits, '#   memory size: the data segment (ulimit -d)', 'LimitDATA=infinity',
        '# LimitRSS: %s' % limits, '#   memory size: bash\'s "max memory size" (ulimit -m, RLIMIT_RSS)', 'LimitRSS=infinity']


def _applied(values, lines, dropin):
    """What the host has after the lines are applied (sysctl -p; daemon-reload of a drop-in)."""
    values = dict(values)
    for line in lines:
        if line.startswith(('#', '[')) or '=' not in line:
            continue
        key, value = [part.strip() for part in line.split('=', 1)]
        soft, _sep, hard = value.partition(':')
        values[key] = hard or soft
        if dropin and key.startswith('Limit'):
            values[key + 'Soft'] = soft
    return values


@pytest.mark.parametrize('nodes, kernel, units', [
    (1024, KERNEL, {'slurmctld': DEBIAN13_SLURMCTLD, 'slurmd': DEBIAN13_SLURMD}),
    (10000, {'fs.file-max': '8192', 'net.core.somaxconn': '128', 'net.ipv4.tcp_max_syn_backlog': '128'},
     {'slurmctld': {'TasksMax': '512', 'LimitNOFILE': '4096', 'LimitNOFILESoft': '1024', 'LimitSTACK': 'infinity', 'LimitSTACKSoft': '8388608',
                    'LimitAS': 'infinity', 'LimitASSoft': 'infinity', 'LimitDATA': 'infinity', 'LimitDATASoft': 'infinity',
                    'LimitRSS': 'infinity', 'LimitRSSSoft': 'infinity'},
      'slurmd': {'TasksMax': '512', 'LimitNOFILE': '524288', 'LimitNOFILESoft': '1024'}}),
])
def test_a_second_run_writes_the_same_files(nodes, kernel, units):
    large = large_system_settings(nodes, '24.11.5')
    first = sysctl_conf_lines(large, sysctl_out(kernel))
    assert sysctl_conf_lines(large, sysctl_out(_applied(kernel, first, False))) == first
    for daemon, values in units.items():
        first = dropin_lines(large, daemon, show(values))
        after = _applied(values, first, True)
        assert dropin_lines(large, daemon, show(after)) == first
        for key, value in values.items():     # never lowered
            assert after[key] == value or after[key] == 'infinity' or int(after[key]) > int(value), (daemon, key)


@pytest.mark.parametrize('nodes, daemons, systemd, present, absent', [
    (1024, ['slurmctld'], True, ['sysctl', 'slurmctld'], ['slurmd']),
    (1024, ['slurmd'], True, ['slurmd'], ['sysctl', 'slurmctld']),
    (1024, ['slurmctld', 'slurmd'], True, ['sysctl', 'slurmctld', 'slurmd'], []),
    (1024, ['slurmctld'], False, ['sysctl'], ['slurmctld', 'slurmd']),   # no systemd: no drop-in
    (2, ['slurmctld', 'slurmd'], True, [], ['sysctl', 'slurmctld', 'slurmd']),   # small: the role's files removed
])
def test_files_of_a_host(nodes, daemons, systemd, present, absent):
    large = large_system_settings(nodes, '24.11.5')
    entries = large_system_files(large, daemons, systemd, sysctl_out(KERNEL), {'slurmctld': show(DEBIAN13_SLURMCTLD)})
    files = dict((e['dest'], e) for e in entries if e.get('state') != 'directory')
    assert sorted(files) == sorted(PATHS.values())
    for name in present:
        assert 'content' in files[PATHS[name]] and files[PATHS[name]]['mode'] == '0644', name
    for name in absent:
        assert files[PATHS[name]] == {'dest': PATHS[name], 'state': 'absent'}, name
    dirs = [e['dest'] for e in entries if e.get('state') == 'directory']
    assert dirs == [os.path.dirname(PATHS[name]) for name in ('slurmctld', 'slurmd') if name in present]


def test_files_filter_reads_registered_results():
    large = FILTERS['slurm_large_system'](1024, '24.11.5')
    units = {'results': [{'item': 'slurmd', 'stdout': show(DEBIAN13_SLURMD)}, {'item': 'slurmctld', 'skipped': True}]}
    entries = FILTERS['slurm_large_system_files'](large, ['slurmd'], True, {'stdout': ''}, units, {'slurmd': '/tmp/x/d.conf'})
    assert entries[-2:] == [{'dest': '/tmp/x', 'state': 'directory', 'mode': '0755'},
                            {'dest': '/tmp/x/d.conf', 'content': '\n'.join(dropin_lines(large, 'slurmd', show(DEBIAN13_SLURMD))) + '\n',
                             'mode': '0644'}]


# --- bad input -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('args, message', [
    ((-1, '24.11.5'), r"node_count \(the hosts of the compute group\) must be a whole number of compute nodes, 0 or more; got -1"),
    (('1024', '24.11.5'), r"must be a whole number of compute nodes, 0 or more; got '1024'"),
    ((10.5, '24.11.5'), r'got 10\.5'),
    ((True, '24.11.5'), r'got True'),
    ((None, '24.11.5'), r'got None'),
    ((1024, '24.11.5', 'sometimes'), r"slurm_large_system must be one of auto, always, never; got 'sometimes'"),
    ((1024, '24.11.5', True), r'slurm_large_system must be one of auto, always, never; got True'),
    ((1024, '24.11.5', 'auto', 0), r'slurm_large_system_min_nodes must be a whole number of compute nodes, 1 or more; got 0'),
    ((1024, '24.11.5', 'auto', '512'), r"slurm_large_system_min_nodes must be .*; got '512'"),
    ((1024, '24.06.1'), r"names Slurm 24\.06, which is not a Slurm release"),
    ((1024, 24.11), r"the Slurm version must be a text such as '24\.11\.5', a tuple such as \(24, 11, 5\), or empty when not known; got 24\.11"),
])
def test_bad_input_is_one_clear_error(args, message):
    with pytest.raises(ValueError, match=message):
        large_system_settings(*args)


@pytest.mark.parametrize('call, message', [
    (lambda: override_warnings(1024, '24.11.5', ['TreeWidth']), r"slurm_conf_overrides must be a dictionary of slurm.conf keys; got \['TreeWidth'\]"),
    (lambda: override_warnings(-5, '24.11.5', {}), r'got -5'),
    (lambda: dropin_lines(large_system_settings(1024), 'slurmdbd', ''), r"daemon must be one of slurmctld, slurmd; got 'slurmdbd'"),
    (lambda: large_system_files(large_system_settings(1024), ['munged']), r"daemons must be among slurmctld, slurmd; got 'munged'"),
    (lambda: tree_width_rule(-1), r'got -1'),
])
def test_bad_input_elsewhere(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_filter_errors_are_filter_errors():
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="slurm_large_system must be one of auto, always, never; got 'big'"):
        FILTERS['slurm_large_system'](1024, '', 'big')


# --- tasks/large.yml, run for real with stand-ins of sysctl and systemctl -------------------------------------------------

STANDIN = r'''#!%(python)s
# STAND-IN for sysctl and systemctl (tests/unit/plugins/module_utils/slurm/test_slurm_large.py): the kernel's and
# systemd's values in the JSON file $LARGE_STATE; "sysctl -p FILE" sets the file's values, "systemctl daemon-reload"
# applies the drop-ins named in the state over the units' own values.
import json, os, sys
path = os.environ['LARGE_STATE']
with open(path) as handle:
    state = json.load(handle)
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
state['calls'].append([name] + args)
if name == 'sysctl' and args[0] == '-e':
    for key in args[1:]:
        if key in state['kernel']:
            print('%%s = %%s' %% (key, state['kernel'][key]))
elif name == 'sysctl' and args[0] == '-p':
    for line in open(args[1]):
        if line.strip() and not line.startswith('#'):
            key, value = [part.strip() for part in line.split('=', 1)]
            state['kernel'][key] = value
            print('%%s = %%s' %% (key, value))
elif name == 'systemctl' and args[0] == 'show':
    props = args[1].split('=', 1)[1].split(',')
    unit = state['units'][args[2].replace('.service', '')]
    for prop in props:
        print('%%s=%%s' %% (prop, unit['now'].get(prop, unit['base'].get(prop, ''))))
elif name == 'systemctl' and args[0] == 'daemon-reload':
    for unit_name, unit in state['units'].items():
        unit['now'] = dict(unit['base'])
        dropin = state['dropins'][unit_name]
        if os.path.exists(dropin):
            for line in open(dropin):
                if '=' in line and not line.startswith('#'):
                    key, value = line.strip().split('=', 1)
                    soft, _sep, hard = value.partition(':')
                    unit['now'][key] = hard or soft
                    if key.startswith('Limit'):
                        unit['now'][key + 'Soft'] = soft
else:
    sys.exit('stand-in: %%s %%s not handled' %% (name, args))
with open(path, 'w') as handle:
    json.dump(state, handle)
'''

PLAY = '''
- name: The slurm role's large-cluster tasks on this machine
  hosts: ctl
  gather_facts: false
  tasks:
    - name: The role's tasks
      ansible.builtin.include_role:
        name: gpucluster.bringup.slurm
        tasks_from: %s
        public: true
    - name: Say what the role decided
      ansible.builtin.debug:
        msg: "DECIDED {{ {'changed': _slurm_large_changed, 'slurm_conf': _slurm_large.slurm_conf} | to_json }}"
'''


class Cluster(object):
    """A one-host cluster (the controller is also a compute node) counted as ``nodes`` compute nodes."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.paths = dict((name, str(tmp_path / 'root' / path.lstrip('/'))) for name, path in PATHS.items())
        os.makedirs(os.path.dirname(self.paths['sysctl']))
        os.makedirs(str(tmp_path / 'bin'))
        for name in ('sysctl', 'systemctl'):
            script = tmp_path / 'bin' / name
            script.write_text(STANDIN % {'python': sys.executable})
            script.chmod(0o755)
        self.state = tmp_path / 'state.json'
        self.state.write_text(json.dumps({
            'calls': [], 'kernel': KERNEL,
            'units': {'slurmctld': {'base': DEBIAN13_SLURMCTLD, 'now': DEBIAN13_SLURMCTLD},
                      'slurmd': {'base': DEBIAN13_SLURMD, 'now': DEBIAN13_SLURMD}},
            'dropins': {'slurmctld': self.paths['slurmctld'], 'slurmd': self.paths['slurmd']}}))

    def run(self, nodes, mode='auto', check=False, tasks='large.yml', extra=None):
        compute = ['ctl'] + ['node-%05d' % i for i in range(1, nodes)]
        inventory = {'all': {'hosts': {'ctl': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}},
                             'children': {'slurm_controller': {'hosts': {'ctl': None}},
                                          'slurm_compute': {'hosts': dict((name, None) for name in compute)}}}}
        (self.tmp / 'hosts.json').write_text(json.dumps(inventory))
        (self.tmp / 'vars.json').write_text(json.dumps(dict({'_slurm_large_paths': self.paths, 'slurm_large_system': mode,
                                                             '_slurm_ctl_behaviour': {'version': '24.11.5'}}, **(extra or {}))))
        (self.tmp / 'play.yml').write_text(PLAY % tasks)
        env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
        env.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
                   ANSIBLE_LOCAL_TEMP=str(self.tmp / 'ansible-tmp'), ANSIBLE_REMOTE_TEMP=str(self.tmp / 'ansible-remote-tmp'),
                   LARGE_STATE=str(self.state), PATH=str(self.tmp / 'bin') + os.pathsep + os.environ.get('PATH', ''))
        done = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(self.tmp / 'hosts.json'),
                               str(self.tmp / 'play.yml'), '-e', '@%s' % (self.tmp / 'vars.json')] + (['--check'] if check else []),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env, cwd=str(self.tmp),
                              check=False)
        assert done.returncode == 0, done.stdout
        recap = re.search(r'^ctl\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0', done.stdout, re.M)
        decided = re.search(r'"DECIDED (.*)"\n', done.stdout)
        assert recap and decided, done.stdout
        state = json.loads(self.state.read_text())
        self.output = done.stdout
        return int(recap.group(1)), json.loads(decided.group(1).replace('\\"', '"')), state

    def read(self, name):
        path = self.paths[name]
        return open(path).read() if os.path.exists(path) else None


def test_role_large_cluster_check_mode_first_run_second_run_and_off(tmp_path):
    cluster = Cluster(tmp_path)

    # check mode writes nothing, applies nothing
    changed, decided, state = cluster.run(1024, check=True)
    assert changed >= 1 and [cluster.read(name) for name in PATHS] == [None, None, None]
    assert [call[:2] for call in state['calls']] == [['sysctl', '-e'], ['systemctl', 'show'], ['systemctl', 'show']]

    # the first run: the files, sysctl -p, daemon-reload; both daemons would restart (restart.yml)
    changed, decided, state = cluster.run(1024)
    assert decided['slurm_conf'] == {'TreeWidth': 32}
    assert set(cluster.paths.values()) <= set(decided['changed'])
    assert [line for line in cluster.read('sysctl').splitlines() if not line.startswith('#')] == ['net.ipv4.tcp_max_syn_backlog = 1024']
    assert [line for line in cluster.read('slurmd').splitlines() if not line.startswith('#')] == ['[Service]', 'TasksMax=infinity']
    assert 'LimitNOFILE=65536' in cluster.read('slurmctld').splitlines()
    assert state['kernel'] == dict(KERNEL, **{'net.ipv4.tcp_max_syn_backlog': '1024'})
    assert [call[:2] for call in state['calls'][3:]] == [['sysctl', '-e'], ['systemctl', 'show'], ['systemctl', 'show'],
                                                         ['sysctl', '-p'], ['systemctl', 'daemon-reload']]
    assert changed == 2      # the files and sysctl -p (a daemon-reload reports no change)

    # the second run changes nothing, restarts nothing
    changed, decided, state = cluster.run(1024)
    assert (changed, decided['changed']) == (0, [])
    assert [call[:2] for call in state['calls'][8:]] == [['sysctl', '-e'], ['systemctl', 'show'], ['systemctl', 'show']]

    # never: the role's files removed, systemd reloaded, both daemons would restart; the kernel keeps its values
    changed, decided, state = cluster.run(1024, mode='never')
    assert [cluster.read(name) for name in PATHS] == [None, None, None]
    assert sorted(decided['changed']) == sorted(cluster.paths.values()) and decided['slurm_conf'] == {}
    assert [call[:2] for call in state['calls'][11:]] == [['systemctl', 'daemon-reload']]
    assert state['kernel']['net.ipv4.tcp_max_syn_backlog'] == '1024'
    assert state["units"]["slurmd"]["now"] == DEBIAN13_SLURMD
    changed, decided, state = cluster.run(1024, mode='never')
    assert (changed, decided['changed'], len(state['calls'])) == (0, [], 12)


def test_role_small_cluster_changes_nothing_and_asks_nothing(tmp_path):
    cluster = Cluster(tmp_path)
    changed, decided, state = cluster.run(2)
    assert (changed, decided, state['calls']) == (0, {'changed': [], 'slurm_conf': {}}, [])
    assert [cluster.read(name) for name in PATHS] == [None, None, None]


@pytest.mark.parametrize('nodes, overrides, warned', [
    (1024, {'SlurmdTimeout': 60, 'TreeWidth': 8}, ['sets SlurmdTimeout=60 on a cluster of 1024 compute nodes',
                                                   'sets TreeWidth=8 on a cluster of 1024 compute nodes']),
    (2, {'SlurmdTimeout': 60, 'TreeWidth': 8}, []),
])
def test_role_preflight_warns_and_goes_on(tmp_path, nodes, overrides, warned):
    cluster = Cluster(tmp_path)
    changed, decided, state = cluster.run(nodes, tasks='preflight.yml', extra={'slurm_conf_overrides': overrides})
    task = re.search(r"TASK \[gpucluster.bringup.slurm : Warn where slurm_conf_overrides go against SchedMD's Large Cluster "
                     r"Administration Guide\][^\n]*\n(.*?)\n\n", cluster.output, re.S)
    assert task, cluster.output
    if warned:
        assert task.group(1).startswith('ok: [ctl]'), task.group(1)
        for part in warned:
            assert part in task.group(1)
    else:
        assert task.group(1).startswith('skipping: [ctl]'), task.group(1)
    assert (changed, state['calls']) == (0, [])
