# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one reader of ``scontrol -o show node``: lines as Slurm 22.05 and 24.11 print them (field order of
src/api/node_info.c), reasons with spaces, "=", brackets, a Comment= after them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _nodes

OS_22 = 'OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)  '
# Slurm 22.05.8 (Debian 12): two spaces after OS=, ExtSensors* before Reason=
LINE_22 = ('NodeName=gpu-01 Arch=x86_64 CoresPerSocket=16 CPUAlloc=0 CPUEfctv=64 CPUTot=64 CPULoad=0.12 AvailableFeatures=(null) '
           'ActiveFeatures=(null) Gres=gpu:h100:8(S:0-1) NodeAddr=gpu-01 NodeHostName=gpu-01 Version=22.05.8 ' + OS_22 +
           'RealMemory=515000 AllocMem=0 FreeMem=501234 Sockets=2 Boards=1 State=%(state)s ThreadsPerCore=2 TmpDisk=0 Weight=1 '
           'Owner=N/A MCS_label=N/A Partitions=gpu,debug BootTime=2026-11-20T08:00:00 SlurmdStartTime=2026-11-21T06:00:00 '
           'LastBusyTime=2026-11-21T06:10:00 CfgTRES=cpu=64,mem=515000M,billing=64,gres/gpu=8 AllocTRES= CapWatts=n/a '
           'CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s%(rest)s')
# Slurm 24.11: CPUSpecList, ResumeAfterTime, no ExtSensors*, Comment=/Extra= after Reason=
LINE_24 = ('NodeName=gpu-02 Arch=x86_64 CoresPerSocket=32 CPUAlloc=8 CPUEfctv=128 CPUTot=128 CPULoad=3.02 AvailableFeatures=h100,ib '
           'ActiveFeatures=h100,ib Gres=gpu:h100:8(S:0-1),gpu:1g.10gb:0 NodeAddr=10.0.0.2 NodeHostName=gpu-02 Version=24.11.1 '
           'OS=Linux 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023  RealMemory=2000000 AllocMem=64000 FreeMem=1900000 '
           'Sockets=2 Boards=1 State=%(state)s ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu '
           'BootTime=2026-11-19T10:11:12 SlurmdStartTime=2026-11-19T10:12:00 LastBusyTime=2026-11-21T06:10:00 ResumeAfterTime=None '
           'CfgTRES=cpu=128,mem=2000000M,billing=128,gres/gpu=8 AllocTRES=cpu=8,mem=64000M,gres/gpu=1 CurrentWatts=0 AveWatts=0%(rest)s')


def line(template, state='IDLE', rest=''):
    return template % {'state': state, 'rest': rest}


@pytest.mark.parametrize('template', [LINE_22, LINE_24], ids=['slurm-22.05', 'slurm-24.11'])
@pytest.mark.parametrize('rest, reason, user, when, comment', [
    ('', '', '', '', ''),
    (' Reason=gpuhc:periodic:xid: GPU 3 (00000000:61:00.0) had Xid 79 [root@2026-11-21T06:12:01]',
     'gpuhc:periodic:xid: GPU 3 (00000000:61:00.0) had Xid 79', 'root', '2026-11-21T06:12:01', ''),
    # spaces, "=" and brackets in the reason; a Comment= (free text) after it
    (' Reason=disk swap, see ticket=123 [rack 4] [alice@2026-11-21T06:12:01] Comment=back Monday, ask Bob=x',
     'disk swap, see ticket=123 [rack 4]', 'alice', '2026-11-21T06:12:01', 'back Monday, ask Bob=x'),
    # no [user@time] (slurmctld's own reason on a DOWN node can come without one), then Extra=
    (' Reason=Not responding Extra={"rack": 4}', 'Not responding', '', '', ''),
    (' Reason=validate: node/gres_conf: gres.conf has gpu:h100:7 [slurm@2026-11-21T06:12:01] Comment=x InstanceId=i-1 InstanceType=p5',
     'validate: node/gres_conf: gres.conf has gpu:h100:7', 'slurm', '2026-11-21T06:12:01', 'x'),
    # a reason of two lines: Slurm prints the second after 8 spaces in its one-line form
    (' Reason=first line [root@2026-11-21T06:12:01]        second line', 'first line second line', 'root', '2026-11-21T06:12:01', ''),
    (' Comment=only a comment Reason=x', '', '', '', 'only a comment Reason=x'),
])
def test_reason_and_comment(template, rest, reason, user, when, comment):
    node = _nodes.parse_node_line(line(template, 'IDLE+DRAIN', rest))
    assert (node['reason'], node['reason_user'], node['reason_time'], node['comment']) == (reason, user, when, comment)
    assert (node['state'], node['flags']) == ('IDLE', ['DRAIN'])


@pytest.mark.parametrize('template, name, fields, gres, partitions, boot', [
    (LINE_22, 'gpu-01', {'OS': OS_22[3:].strip(), 'CfgTRES': 'cpu=64,mem=515000M,billing=64,gres/gpu=8', 'AllocTRES': '',
                         'ExtSensorsTemp': 'n/s'}, 'gpu:h100:8(S:0-1)', ['gpu', 'debug'], '2026-11-20T08:00:00'),
    (LINE_24, 'gpu-02', {'OS': 'Linux 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023', 'ResumeAfterTime': 'None',
                         'AllocTRES': 'cpu=8,mem=64000M,gres/gpu=1'}, 'gpu:h100:8(S:0-1),gpu:1g.10gb:0', ['gpu'], '2026-11-19T10:11:12'),
])
def test_every_field(template, name, fields, gres, partitions, boot):
    node = _nodes.parse_node_line(line(template, rest=' Reason=x [root@2026-11-21T06:12:01] Comment=c'))
    assert (node['name'], node['gres'], node['partitions'], node['boot_time']) == (name, gres, partitions, boot)
    for key, value in fields.items():
        assert node['fields'][key] == value, key
    assert node['fields']['Reason'] == 'x' and node['fields']['Comment'] == 'c'


@pytest.mark.parametrize('state, base, marks, flags', [
    ('IDLE', 'IDLE', '', []),
    ('IDLE*+DRAIN', 'IDLE', '*', ['DRAIN']),
    ('DOWN$+NOT_RESPONDING', 'DOWN', '$', ['NOT_RESPONDING']),
    ('MIXED~', 'MIXED', '~', []),
    ('IDLE+DRAIN+DRAIN+DYNAMIC_NORM', 'IDLE', '', ['DRAIN', 'DYNAMIC_NORM']),
    ('ALLOCATED+COMPLETING+RESERVED', 'ALLOCATED', '', ['COMPLETING', 'RESERVED']),
])
def test_states(state, base, marks, flags):
    node = _nodes.parse_node_line(line(LINE_24, state))
    assert (node['state'], node['marks'], node['flags']) == (base, marks, flags)
    assert _nodes.state_text(node) == '+'.join([base] + flags)


@pytest.mark.parametrize('text, fragments', [
    ('NodeName=gpu-01 State=idle Reason=x', ['State=idle, expected Slurm state words']),
    ('NodeName=gpu-01 State=IDLE+ Reason=x', ['State=IDLE+, expected']),
    ('NodeName=gpu-01 State=IDLE++DRAIN', ['State=IDLE++DRAIN, expected']),
    ('NodeName=gpu-01 State=', ['has no State=']),
    ('NodeName=gpu-01 Arch=x86_64', ['scontrol line for gpu-01 has no State=']),
    ('NodeName= State=IDLE', ['empty NodeName=']),
    ('', ['no "NodeName=" line']),
    ('slurm_load_node error: Invalid node name specified', ['no "NodeName=" line', 'Invalid node name']),
])
def test_bad_lines_are_errors_naming_them(text, fragments):
    with pytest.raises(ValueError) as err:
        _nodes.parse_node(text + '\n')
    assert str(err.value).startswith('scontrol '), err.value
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, err.value)


def test_a_listing():
    text = (line(LINE_22, 'IDLE+DRAIN', ' Reason=a b [root@2026-11-21T06:12:01]') + '\n\n' + line(LINE_24, 'MIXED') + '\n')
    nodes = _nodes.parse_nodes(text)
    assert sorted(nodes) == ['gpu-01', 'gpu-02']
    assert nodes['gpu-01']['reason'] == 'a b' and nodes['gpu-02']['state'] == 'MIXED'
    assert _nodes.is_drained(nodes['gpu-01']) and not _nodes.is_drained(nodes['gpu-02'])


def test_a_bad_line_in_a_listing_names_its_number():
    with pytest.raises(ValueError, match=r'State=idle, .* \(line 2\)$'):
        _nodes.parse_nodes('NodeName=a State=IDLE\nNodeName=b State=idle\n')


def test_sinfo_names():
    assert _nodes.parse_sinfo_names('gpu-01\ngpu-02\n\ngpu-01\n') == ['gpu-01', 'gpu-02']
