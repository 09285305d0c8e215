# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _healthcheck: configuration, checks, scontrol parsing, drain/resume decisions."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc

# scontrol -o show node, Slurm 22.05.8 (Debian 12), drained by hand with a reason.
SCONTROL_DRAINED = (
    'NodeName=gpu-01 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=N/A AvailableFeatures=(null) '
    'ActiveFeatures=(null) Gres=gpu:h100:8 NodeAddr=gpu-01 NodeHostName=gpu-01  RealMemory=1 AllocMem=0 FreeMem=N/A '
    'Sockets=2 Boards=1 State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=batch  '
    'BootTime=None SlurmdStartTime=None LastBusyTime=Unknown CfgTRES=cpu=2,mem=1M,billing=2 AllocTRES= CapWatts=n/a '
    'CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s '
    'Reason=healthcheck: gpu-count: 7 GPUs, expected 8 (missing index 3) [root@2026-11-21T06:10:36]\n')
SCONTROL_IDLE = ('NodeName=gpu-02 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 '
                 'Partitions=batch BootTime=None CfgTRES=cpu=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0\n')

# the munge key's permissions have their own tables (test_munge_key_*); these GPU tables do not observe it
CONFIG = hc.load_config({'gpu_count': 2, 'gpu_models': ['H100'], 'mig_layout': {'1': ['1g.10gb', '1g.10gb']}, 'munge_key_path': ''})


def gpu(index, **extra):
    base = {'index': index, 'name': 'NVIDIA H100 80GB HBM3', 'pci_bus_id': '00000000:%02X:00.0' % (0x1B + index), 'minor': index,
            'mig_current': False, 'mig_pending': False, 'mig_devices': []}
    base.update(extra)
    return base


MIG_GPU = dict(mig_current=True, mig_pending=True, mig_devices=[{'profile': '1g.10gb', 'gi': 9, 'ci': 0}, {'profile': '1g.10gb', 'gi': 10, 'ci': 0}])
MINORS = 'config 1\nmonitor 2\ngpu1/gi9/access 219\ngpu1/gi9/ci0/access 220\ngpu1/gi10/access 228\ngpu1/gi10/ci0/access 229\n'
ALL_FILES = ['/dev/nvidiactl', '/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia-caps/nvidia-cap219', '/dev/nvidia-caps/nvidia-cap220',
             '/dev/nvidia-caps/nvidia-cap228', '/dev/nvidia-caps/nvidia-cap229']
HEALTHY = {'nvml_error': None, 'gpus': [gpu(0), gpu(1, **MIG_GPU)]}


def texts(failures):
    return [f.text() for f in failures]


# ------------------------------------------------------------------ config

def test_load_config_fills_defaults():
    config = hc.load_config({})
    assert config['gpu_count'] is None and config['mig_layout'] is None and config['reason_prefix'] == 'gpuhc'
    assert CONFIG['mig_layout'] == {1: ['1g.10gb', '1g.10gb']}


@pytest.mark.parametrize('data,message', [
    ([], r'the health check configuration must be a JSON object, got \[\]'),
    ({'gpus': 8}, r'unknown health check setting\(s\) gpus; valid settings: auto_resume, check_device_files, '),
    ({'gpu_count': -1}, r'gpu_count -1 must be a whole number of GPUs \(0 or more\), or null not to check it'),
    ({'gpu_count': True}, r'gpu_count True must be a whole number'),
    ({'gpu_models': 'H100'}, r"gpu_models 'H100' must be a list of model-name substrings such as \[\"H100\", \"A100-SXM4-40GB\"\]"),
    ({'gpu_models': ['']}, r"gpu_models \[''\] must be a list"),
    ({'mig_layout': ['1g.10gb']}, r"mig_layout \['1g.10gb'\] must be a mapping of GPU index to a list of MIG profiles"),
    ({'mig_layout': {'gpu0': []}}, r"mig_layout key 'gpu0' is not a GPU index \(0, 1, ...\)"),
    ({'mig_layout': {'0': '1g.10gb'}}, r"mig_layout\[\"0\"\] = '1g.10gb' must be a list of MIG profiles"),
    ({'mig_layout': {'0': ['1g.10GB']}}, r"mig_layout\[\"0\"\] has '1g.10GB', which is not a MIG profile name such as \"1g.10gb\""),
    ({'ecc_uncorrected_max': -2}, r'ecc_uncorrected_max -2 must be a whole number \(0 or more\), or null not to check ECC'),
    ({'reason_prefix': 'health check'}, r"reason_prefix 'health check' must be a word such as \"gpuhc\""),
    ({'auto_resume': 'yes'}, r"auto_resume 'yes' must be true or false"),
    ({'scontrol': None}, r'scontrol None must be a string'),
])
def test_load_config_errors(data, message):
    with pytest.raises(ValueError, match=message):
        hc.load_config(data)


# ------------------------------------------------------------------ checks

def test_required_files():
    assert [p for _i, p in hc.required_files(HEALTHY['gpus'], MINORS)] == ALL_FILES


@pytest.mark.parametrize('minors,message', [
    (None, r'GPU 1 has MIG devices but the mig-minors table \(/m\) could not be read'),
    ('gpu1/gi9/access 219\n', r'GPU 1 \(00000000:1C:00.0\) has no line for gpu1/gi9/ci0/access in /m'),
    ('gpu1/gi9/ci0/access 220\n', r'GPU 1 \(00000000:1C:00.0\) has no line for gpu1/gi9/access in /m'),
])
def test_required_files_errors(minors, message):
    with pytest.raises(ValueError, match=message):
        hc.required_files(HEALTHY['gpus'], minors, '/m')


def test_healthy_node_has_no_failures():
    assert hc.find_failures(CONFIG, HEALTHY, ALL_FILES, MINORS) == []


@pytest.mark.parametrize('observed,files,expected', [
    ({'nvml_error': 'nvmlInit failed: Driver Not Loaded', 'gpus': []}, [],
     ['nvml: NVML does not answer: nvmlInit failed: Driver Not Loaded']),
    ({'gpus': [gpu(0)]}, ALL_FILES[:2],
     ['gpu-count: NVML sees 1 GPUs, expected 2']),
    ({'gpus': [gpu(0, name='NVIDIA A100-SXM4-40GB'), gpu(1, **MIG_GPU)]}, ALL_FILES,
     ['gpu-model: GPU 0 (00000000:1B:00.0) is a NVIDIA A100-SXM4-40GB, expected H100']),
    ({'gpus': [gpu(0, error='nvmlDeviceGetName failed: GPU is lost'), gpu(1, **MIG_GPU)]}, ALL_FILES,
     ['gpu-error: GPU 0 (00000000:1B:00.0): nvmlDeviceGetName failed: GPU is lost']),
    ({'gpus': [{'index': 0, 'error': 'nvmlDeviceGetHandleByIndex failed: GPU is lost'}, gpu(1, **MIG_GPU)]}, ALL_FILES,
     ['gpu-error: GPU 0: nvmlDeviceGetHandleByIndex failed: GPU is lost']),
    ({'gpus': [gpu(0, retired_pages_pending=True, remap_pending=True), gpu(1, remap_failure=True, remap_pending=True, **MIG_GPU)]},
     ALL_FILES,
     ['gpu-error: GPU 0 (00000000:1B:00.0) has retired memory pages pending a GPU reset',
      'gpu-error: GPU 0 (00000000:1B:00.0) has memory row remapping pending a GPU reset',
      'gpu-error: GPU 1 (00000000:1C:00.0) has a failed memory row remapping']),
    ({'gpus': [gpu(0, ecc_uncorrected=3), gpu(1, ecc_uncorrected=0, **MIG_GPU)]}, ALL_FILES,
     ['ecc: GPU 0 (00000000:1B:00.0) has 3 uncorrected ECC errors since the driver loaded (at most 0 allowed)']),
    ({'gpus': [gpu(0), gpu(1)]}, ALL_FILES[:3],
     ['mig: GPU 1 (00000000:1C:00.0) is not in MIG mode, expected 1g.10gb,1g.10gb']),
    ({'gpus': [gpu(0, mig_current=True, mig_pending=True), gpu(1, **MIG_GPU)]}, ALL_FILES,
     ['mig: GPU 0 (00000000:1B:00.0) is in MIG mode, expected a whole GPU']),
    ({'gpus': [gpu(0, mig_pending=True), gpu(1, **MIG_GPU)]}, ALL_FILES,
     ['mig: GPU 0 (00000000:1B:00.0) has MIG mode enable pending until a GPU reset']),
    ({'gpus': [gpu(0), gpu(1, mig_current=True, mig_pending=True, mig_devices=[{'profile': '2g.20gb', 'gi': 9, 'ci': 0}])]},
     ALL_FILES[:5], ['mig: GPU 1 (00000000:1C:00.0) has MIG instances 2g.20gb, expected 1g.10gb,1g.10gb']),
    ({'gpus': [gpu(0), gpu(1, mig_current=True, mig_pending=True, mig_devices=[])]}, ALL_FILES[:3],
     ['mig: GPU 1 (00000000:1C:00.0) has MIG instances none, expected 1g.10gb,1g.10gb']),
    (HEALTHY, [f for f in ALL_FILES if f != '/dev/nvidia1'],
     ['device-files: GPU 1 (00000000:1C:00.0) /dev/nvidia1 missing']),
    (HEALTHY, [f for f in ALL_FILES if f != '/dev/nvidia-caps/nvidia-cap229'],
     ['device-files: GPU 1 (00000000:1C:00.0) /dev/nvidia-caps/nvidia-cap229 missing']),
    (HEALTHY, ALL_FILES[1:], ['device-files: /dev/nvidiactl missing']),
])
def test_failures(observed, files, expected):
    assert texts(hc.find_failures(CONFIG, observed, files, MINORS)) == expected


@pytest.mark.parametrize('gpu_count,mig_layout,expected', [
    (0, {}, []),  # a node that is to have no GPU: no driver, no NVML is fine
    (0, None, []),
    (0, {1: ['1g.10gb']}, ['nvml: NVML does not answer: nvmlInit failed: Driver Not Loaded']),
    (2, {}, ['nvml: NVML does not answer: nvmlInit failed: Driver Not Loaded']),
    (None, None, ['nvml: NVML does not answer: nvmlInit failed: Driver Not Loaded']),
])
def test_nvml_is_needed_only_where_gpus_are_expected(gpu_count, mig_layout, expected):
    config = dict(CONFIG, gpu_count=gpu_count, mig_layout=mig_layout)
    observed = {'nvml_error': 'nvmlInit failed: Driver Not Loaded', 'gpus': []}
    assert texts(hc.find_failures(config, observed, [], None)) == expected


def test_device_file_check_reports_an_unreadable_minors_table():
    assert texts(hc.find_failures(CONFIG, HEALTHY, ALL_FILES, None)) == [
        'device-files: GPU 1 has MIG devices but the mig-minors table (/proc/driver/nvidia-caps/mig-minors) could not be read']


def test_checks_that_are_not_configured_are_skipped():
    config = hc.load_config({'check_device_files': False, 'ecc_uncorrected_max': None, 'munge_key_path': ''})
    observed = {'gpus': [gpu(0, name='Tesla T4', ecc_uncorrected=9, mig_current=True, mig_pending=True)]}
    assert hc.find_failures(config, observed, [], None) == []


def test_failures_come_in_check_order():
    observed = {'gpus': [gpu(0, ecc_uncorrected=1, mig_pending=True)]}
    assert [f.check for f in hc.find_failures(CONFIG, observed, [], MINORS)] == ['gpu-count', 'ecc', 'mig', 'device-files', 'device-files']


# ------------------------------------------------------------------ scontrol and decisions

def test_parse_scontrol_drained():
    node = hc.parse_scontrol_node(SCONTROL_DRAINED)
    assert (node['name'], node['state'], node['flags'], node['reason'], node['reason_user'], node['reason_time']) == (
        'gpu-01', 'IDLE', ['DRAIN'], 'healthcheck: gpu-count: 7 GPUs, expected 8 (missing index 3)', 'root', '2026-11-21T06:10:36')


def test_parse_scontrol_idle():
    node = hc.parse_scontrol_node(SCONTROL_IDLE)
    assert (node['name'], node['state'], node['flags'], node['reason'], node['reason_user']) == ('gpu-02', 'IDLE', [], '', '')


@pytest.mark.parametrize('text,message', [
    ('Node gpu-09 not found\n', r"scontrol printed no \"NodeName=\" line: 'Node gpu-09 not found'"),
    ('NodeName=gpu-01 Arch=x86_64\n', r"scontrol line for gpu-01 has no State=: 'NodeName=gpu-01 Arch=x86_64'"),
])
def test_parse_scontrol_errors(text, message):
    with pytest.raises(ValueError, match=message):
        hc.parse_scontrol_node(text)


def node(state='IDLE', flags=(), reason=''):
    return {'name': 'gpu-01', 'state': state, 'flags': set(flags), 'reason': reason, 'reason_user': 'root'}


MISSING = [hc.Failure('device-files', 3, 'GPU 3 (00000000:61:00.0) /dev/nvidia3 missing')]
OURS = 'gpuhc:periodic:device-files: GPU 3 (00000000:61:00.0) /dev/nvidia3 missing'
# the tag of earlier releases is ours too
LEGACY = 'healthcheck: device-files: GPU 3 (00000000:61:00.0) /dev/nvidia3 missing'
PROLOG = 'gpuhc:prolog:xid: GPU 0 (00000000:1B:00.0) had Xid 79 since boot'


@pytest.mark.parametrize('failures,current,auto,resume,passes,action,message,after', [
    (MISSING, node(), False, False, 0, 'drain', 'failing: draining gpu-01: ' + OURS, 0),
    (MISSING, node('MIXED'), False, False, 0, 'drain', 'failing: draining gpu-01: ' + OURS, 0),
    (MISSING, node('DOWN', ['NOT_RESPONDING']), False, False, 0, 'drain', 'failing: draining gpu-01: ' + OURS, 0),
    (MISSING, node('IDLE', ['DRAIN'], OURS), True, False, 1, 'none', 'failing (%s); gpu-01 is already drained for it' % OURS, 0),
    (MISSING, node('IDLE', ['DRAIN'], 'gpuhc:periodic:gpu-count: NVML sees 7 GPUs, expected 8'), False, False, 0, 'drain',
     'failing: draining gpu-01: ' + OURS, 0),
    (MISSING, node('IDLE', ['DRAIN'], LEGACY), False, False, 0, 'drain', 'failing: draining gpu-01: ' + OURS, 0),
    (MISSING, node('IDLE', ['DRAIN'], 'bad fan, ticket 123'), False, False, 0, 'none',
     'failing (%s); gpu-01 is already drained by someone else ("bad fan, ticket 123"), left as it is' % OURS, 0),
    (MISSING, node('ALLOCATED', ['DRAIN'], 'maintenance'), True, True, 0, 'none',
     'failing (%s); gpu-01 is already drained by someone else ("maintenance"), left as it is' % OURS, 0),
    ([], node(), True, True, 0, 'none', 'healthy', 0),
    ([], node('IDLE', ['DRAIN'], OURS), False, False, 0, 'none',
     'healthy; gpu-01 stays drained ("%s") until it is resumed (resume playbook or --resume)' % OURS, 1),
    # K = 2 passes in a row: the first pass counts, the second resumes
    ([], node('IDLE', ['DRAIN'], OURS), True, False, 0, 'none',
     'healthy (1 of 2 passing runs in a row); gpu-01 stays drained ("%s") until run 2' % OURS, 1),
    ([], node('IDLE', ['DRAIN'], OURS), True, False, 1, 'resume',
     'healthy 2 runs in a row: resuming gpu-01, drained by this check ("%s")' % OURS, 0),
    ([], node('IDLE', ['DRAIN'], PROLOG), True, False, 1, 'resume',
     'healthy 2 runs in a row: resuming gpu-01, drained by this check ("%s")' % PROLOG, 0),
    ([], node('IDLE', ['DRAIN'], LEGACY), True, False, 1, 'resume',
     'healthy 2 runs in a row: resuming gpu-01, drained by this check ("%s")' % LEGACY, 0),
    ([], node('IDLE', ['DRAIN'], OURS), False, True, 0, 'resume', 'healthy: resuming gpu-01, drained by this check ("%s")' % OURS, 0),
    ([], node('DRAINED', [], OURS), False, True, 0, 'resume', 'healthy: resuming gpu-01, drained by this check ("%s")' % OURS, 0),
    ([], node('IDLE', ['DRAIN'], 'bad fan, ticket 123'), True, True, 5, 'none',
     'healthy; gpu-01 is drained by someone else ("bad fan, ticket 123"), not resumed', 0),
    ([], node('IDLE', ['DRAIN'], 'healthcheckers meeting'), True, True, 5, 'none',
     'healthy; gpu-01 is drained by someone else ("healthcheckers meeting"), not resumed', 0),
    ([], node('IDLE', ['DRAIN'], 'gpuhc is the new name: ask bob'), True, True, 5, 'none',
     'healthy; gpu-01 is drained by someone else ("gpuhc is the new name: ask bob"), not resumed', 0),
])
def test_decide(failures, current, auto, resume, passes, action, message, after):
    decision = hc.decide(failures, current, 'gpuhc', auto, resume, passes=passes, resume_after=2)
    assert (decision.action, decision.message, decision.passes) == (action, message, after)


@pytest.mark.parametrize('passes,resume_after,action', [(0, 1, 'resume'), (1, 3, 'none'), (2, 3, 'resume'), (7, 3, 'resume')])
def test_decide_resumes_after_k_passes(passes, resume_after, action):
    assert hc.decide([], node('IDLE', ['DRAIN'], OURS), 'gpuhc', passes=passes, resume_after=resume_after).action == action


DEEP = 'gpuhc:deep:dcgm: Memory on GPU 1: row remap failure'


@pytest.mark.parametrize('failures, tier, passes, resume', [
    ([], 'periodic', 1, False), ([], 'periodic', 9, True), ([], 'prolog', 3, False), (MISSING, 'periodic', 0, False),
    (MISSING, 'prolog', 0, False),
])
def test_a_deep_tier_drain_is_left_to_the_deep_tier(failures, tier, passes, resume):
    # what the deep tier found (a DCGM diagnostic, a slow copy) the other tiers cannot see: their passes do not resume it
    # and their failures do not replace its reason
    decision = hc.decide(failures, node('IDLE', ['DRAIN'], DEEP), 'gpuhc', True, resume, tier=tier, passes=passes)
    assert (decision.action, decision.passes) == ('none', passes)
    assert decision.message.endswith('gpu-01 stays drained by the deep tier ("%s") until a deep run passes (playbooks/health_deep.yml)' % DEEP)
    assert decision.message.startswith('failing (gpuhc:%s:' % tier if failures else 'healthy')


def test_the_prolog_tier_drains_but_never_resumes():
    drain = hc.decide(MISSING, node('MIXED'), 'gpuhc', tier='prolog')
    assert drain.reason == 'gpuhc:prolog:device-files: GPU 3 (00000000:61:00.0) /dev/nvidia3 missing'
    stay = hc.decide([], node('MIXED', ['DRAIN'], PROLOG), 'gpuhc', tier='prolog', passes=5)
    assert (stay.action, stay.passes) == ('none', 5)


@pytest.mark.parametrize('reason,expected', [
    (OURS, {'tier': 'periodic', 'check': 'device-files'}),
    (PROLOG, {'tier': 'prolog', 'check': 'xid'}),
    (LEGACY, {'tier': 'periodic', 'check': 'device-files'}),
    ('gpuhc:deep:nccl: busbw 12 GB/s', {'tier': 'deep', 'check': 'nccl'}),
    ('bad fan, ticket 123', None),
    ('validate: nodes/gpu: 7 GPUs', None),
    ('prolog hook 10-all-gpu-healthcheck failed (exit 1)', None),
    ('', None),
])
def test_parse_tag(reason, expected):
    assert hc.parse_tag(reason) == expected


def test_decision_commands():
    drain = hc.decide(MISSING, node(), 'gpuhc')
    assert drain.argv('scontrol', 'gpu-01') == ['scontrol', 'update', 'nodename=gpu-01', 'state=drain', 'reason=' + OURS]
    resume = hc.decide([], node('IDLE', ['DRAIN'], OURS), 'gpuhc', resume=True)
    assert resume.argv('/usr/bin/scontrol', 'gpu-01') == ['/usr/bin/scontrol', 'update', 'nodename=gpu-01', 'state=resume']
    assert hc.decide([], node(), 'gpuhc').argv('scontrol', 'gpu-01') is None


@pytest.mark.parametrize('failures,tier,limit,expected', [
    (MISSING, 'periodic', 200, OURS),
    (MISSING * 3, 'periodic', 200, OURS + ' (+2 more)'),
    ([hc.Failure('gpu-error', 0, 'GPU 0: "lost"\nreally')], 'prolog', 200, "gpuhc:prolog:gpu-error: GPU 0: 'lost' really"),
    (MISSING * 2, 'periodic', 40, 'gpuhc:periodic:device-files... (+1 more)'),
])
def test_reason_text(failures, tier, limit, expected):
    text = hc.reason_text('gpuhc', failures, tier, limit)
    assert text == expected
    assert len(text) <= limit


def test_reason_text_needs_a_failure():
    with pytest.raises(ValueError, match='a drain reason needs at least one failure'):
        hc.reason_text('gpuhc', [])


# ------------------------------------------------------------------ baseline

def test_baseline_records_what_the_node_has():
    assert hc.baseline(HEALTHY) == {'gpu_count': 2, 'gpu_models': ['NVIDIA H100 80GB HBM3'], 'mig_layout': {'1': ['1g.10gb', '1g.10gb']}}
    assert hc.load_config(hc.baseline(HEALTHY))['mig_layout'] == {1: ['1g.10gb', '1g.10gb']}


@pytest.mark.parametrize('observed,message', [
    ({'nvml_error': 'nvmlInit failed: Driver Not Loaded'}, r'cannot record the GPUs of this node: nvmlInit failed: Driver Not Loaded'),
    ({'gpus': [gpu(0), {'index': 1, 'error': 'nvmlDeviceGetHandleByIndex failed: GPU is lost'}]},
     r'cannot record the GPUs of this node: GPU 1: nvmlDeviceGetHandleByIndex failed: GPU is lost'),
])
def test_baseline_errors(observed, message):
    with pytest.raises(ValueError, match=message):
        hc.baseline(observed)


# ------------------------------------------------------------------ munge key

def munge_seen(key_mode=0o400, dir_mode=0o700, key_uid=103):
    return {'path': '/etc/munge/munge.key', 'user': 'munge', 'uid': 103, 'key': {'mode': 0o100000 | key_mode, 'uid': key_uid},
            'dir': {'mode': 0o040000 | dir_mode, 'uid': 103}}


def test_munge_key_is_checked_by_default():
    config = hc.load_config({})
    assert (config['munge_key_path'], config['munge_user']) == ('/etc/munge/munge.key', 'munge')


@pytest.mark.parametrize('munge_key, expected', [
    (munge_seen(), []),
    (munge_seen(key_mode=0o600), []),
    (munge_seen(key_mode=0o644), ['munge-key: munge key /etc/munge/munge.key has mode 0644, expected 0400 or 0600 (no group or other access: '
                                  "whoever reads the key can forge any user's credentials)"]),
    (munge_seen(dir_mode=0o755), ['munge-key: munge key directory /etc/munge has mode 0755, expected 0700']),
    (munge_seen(key_uid=0), ['munge-key: munge key /etc/munge/munge.key is owned by uid 0, expected munge (uid 103)']),
    (None, ['munge-key: the permissions of the munge key /etc/munge/munge.key were not observed']),
])
def test_munge_key_failures(munge_key, expected):
    config = hc.load_config({'gpu_count': 0, 'mig_layout': {}})
    observed = {'nvml_error': 'nvmlInit failed: Driver Not Loaded', 'gpus': [], 'munge_key': munge_key}
    assert texts(hc.find_failures(config, observed, [], None)) == expected


def test_munge_key_comes_after_the_gpu_checks_and_drains_with_its_name():
    config = dict(CONFIG, munge_key_path='/etc/munge/munge.key')
    observed = dict(HEALTHY, gpus=[gpu(0)], munge_key=munge_seen(key_mode=0o644))
    failures = hc.find_failures(config, observed, ALL_FILES, MINORS)
    assert [f.check for f in failures] == ['gpu-count', 'munge-key']
    decision = hc.decide(failures[1:], hc.parse_scontrol_node(SCONTROL_IDLE), 'gpuhc')
    assert decision.action == 'drain'
    assert decision.reason.startswith("gpuhc:periodic:munge-key: munge key /etc/munge/munge.key has mode 0644, expected 0400 or 0600")


def test_an_empty_munge_key_path_does_not_check_it():
    config = hc.load_config({'gpu_count': 0, 'mig_layout': {}, 'munge_key_path': ''})
    assert hc.find_failures(config, {'nvml_error': 'x', 'gpus': [], 'munge_key': munge_seen(key_mode=0o666)}) == []


@pytest.mark.parametrize('data, message', [
    ({'munge_key_path': 'etc/munge/munge.key'}, r'munge_key_path .etc/munge/munge.key. must be the absolute path of the munge key'),
    ({'munge_key_path': '/etc/munge/'}, r'munge_key_path ./etc/munge/. must be the absolute path'),
    ({'munge_key_path': 5}, r'munge_key_path 5 must be the absolute path'),
    ({'munge_user': 'Munge User'}, r"munge_user 'Munge User' must be a user name such as \"munge\""),
    ({'munge_user': ''}, r"munge_user '' must be a user name"),
    ({'munge_user': None}, r'munge_user None must be a user name'),
])
def test_load_config_munge_errors(data, message):
    with pytest.raises(ValueError, match=message):
        hc.load_config(data)


def test_a_failure_as_the_status_file_records_it():
    """The health check program writes each failure with these keys into its status file (and its JSON output)."""
    failure = hc.Failure('xid', 3, 'Xid 79 (GPU has fallen off the bus)')
    assert failure.as_dict() == {'check': 'xid', 'gpu': 3, 'detail': 'Xid 79 (GPU has fallen off the bus)'}
    assert failure.text() == 'xid: Xid 79 (GPU has fallen off the bus)'
