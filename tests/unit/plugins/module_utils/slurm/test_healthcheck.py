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


COMMAND = ' must be a command name or path (no spaces, not starting with "-")'
MUNGE_KEY = ' must be the absolute path of the munge key such as "/etc/munge/munge.key", or "" not to check it'


@pytest.mark.parametrize('data, message', [
    ({'gpus': 8, 'zz': 1}, 'unknown health check setting(s) gpus, zz; valid settings: auto_resume, check_device_files, dev_root, '
                           'disabled_checks, driver_min, driver_proc, ecc_uncorrected_max, events_file, fabric_manager_bin, gpu_count, '
                           'gpu_models, ib_counter_max, ib_hcas, ib_ports, ib_rate_gbps, ib_sysfs_root, mig_layout, mig_minors_path, '
                           'module_root, munge_key_path, munge_user, node_name, nvlink_error_max, nvlinks_active, periodic_budget, '
                           'prolog_budget, reason_prefix, resume_after_passes, scontrol, state_file, status_file, systemctl, '
                           'temperature_margin, throttle_reasons, xid_drain, xid_source'),
    ({'gpu_count': 1.0}, 'gpu_count 1.0 must be a whole number of GPUs (0 or more), or null not to check it'),
    ({'gpu_models': ['H100', ' ']}, 'gpu_models [\'H100\', \' \'] must be a list of model-name substrings such as ["H100", "A100-SXM4-40GB"]'),
    ({'gpu_models': [7]}, 'gpu_models [7] must be a list of model-name substrings such as ["H100", "A100-SXM4-40GB"]'),
    ({'mig_layout': 'x'}, 'mig_layout \'x\' must be a mapping of GPU index to a list of MIG profiles, e.g. {"0": ["3g.40gb", "1g.10gb"]}'),
    ({'mig_layout': {0: ['1g.10gb+me', 7]}}, 'mig_layout["0"] has 7, which is not a MIG profile name such as "1g.10gb" or "1g.10gb+me"'),
    ({'mig_layout': {'0': 'x'}}, 'mig_layout["0"] = \'x\' must be a list of MIG profiles such as ["1g.10gb", "1g.10gb"]'),
    ({'mig_layout': {'-1': []}}, "mig_layout key '-1' is not a GPU index (0, 1, ...)"),
    ({'ecc_uncorrected_max': True}, 'ecc_uncorrected_max True must be a whole number (0 or more), or null not to check ECC'),
    ({'ecc_uncorrected_max': 0.5}, 'ecc_uncorrected_max 0.5 must be a whole number (0 or more), or null not to check ECC'),
    ({'reason_prefix': 7}, 'reason_prefix 7 must be a word such as "gpuhc" (letters, digits, "-", "_")'),
    ({'reason_prefix': '1hc'}, 'reason_prefix \'1hc\' must be a word such as "gpuhc" (letters, digits, "-", "_")'),
    ({'check_device_files': 1}, 'check_device_files 1 must be true or false'),
    ({'node_name': 5}, 'node_name 5 must be a string'),
    ({'dev_root': None}, 'dev_root None must be a string'),
    ({'mig_minors_path': None}, 'mig_minors_path None must be a string'),
    ({'status_file': None}, 'status_file None must be a string'),
    ({'systemctl': None}, 'systemctl None must be a string'),
    ({'fabric_manager_bin': None}, 'fabric_manager_bin None must be a string'),
    ({'node_name': '-x'}, 'node_name \'-x\' is not a Slurm node name: letters, digits, "_", "-" and "." (no spaces, commas or "="), starting '
                          'with a letter or digit, at most 64 characters'),
    ({'scontrol': ''}, "scontrol ''" + COMMAND),
    ({'scontrol': '-v'}, "scontrol '-v'" + COMMAND),
    ({'systemctl': '-h'}, "systemctl '-h'" + COMMAND),
    ({'fabric_manager_bin': 'nv fm'}, "fabric_manager_bin 'nv fm'" + COMMAND),
    ({'fabric_manager_bin': 'nv\tfm'}, "fabric_manager_bin 'nv\\tfm'" + COMMAND),
    ({'munge_key_path': 'etc/munge.key'}, "munge_key_path 'etc/munge.key'" + MUNGE_KEY),
    ({'munge_key_path': '/etc/munge/'}, "munge_key_path '/etc/munge/'" + MUNGE_KEY),
    ({'munge_key_path': 5}, 'munge_key_path 5' + MUNGE_KEY),
    ({'munge_user': 'Munge'}, 'munge_user \'Munge\' must be a user name such as "munge"'),
    ({'munge_user': None}, 'munge_user None must be a user name such as "munge"'),
    ({'resume_after_passes': True}, 'resume_after_passes True must be a whole number of passing runs (1 or more)'),
    ({'resume_after_passes': None}, 'resume_after_passes None must be a whole number of passing runs (1 or more)'),
    ({'periodic_budget': True}, 'periodic_budget True must be a number of seconds above 0'),
    ({'periodic_budget': -0.5}, 'periodic_budget -0.5 must be a number of seconds above 0'),
    ({'prolog_budget': 'x'}, "prolog_budget 'x' must be a number of seconds above 0"),
    ({'state_file': None}, 'state_file None must be a string (a path; "" for none)'),
    ({'events_file': None}, 'events_file None must be a string (a path; "" for none)'),
    ({'ib_sysfs_root': None}, 'ib_sysfs_root None must be a string (a path; "" for none)'),
    ({'module_root': None}, 'module_root None must be a string (a path; "" for none)'),
    ({'driver_proc': 1}, 'driver_proc 1 must be a string (a path; "" for none)'),
    ({'disabled_checks': 'xid'}, "disabled_checks 'xid' must be a list of check names; valid: nvml, gpu-count, gpu-model, gpu-error, xid, "
                                 "ecc, mig, device-files, driver, persistence, fabric-manager, fabric, nvlink, pcie, thermal, ib, gpudirect, "
                                 "munge-key"),
    ({'xid_source': None}, 'xid_source None must be "journal", "dmesg" or the absolute path of a kernel log such as /var/log/kern.log'),
    ({'xid_drain': [0]}, 'xid_drain [0] must be a list of Xid numbers such as [48, 79, 95]'),
    ({'xid_drain': [True]}, 'xid_drain [True] must be a list of Xid numbers such as [48, 79, 95]'),
    ({'xid_drain': 79}, 'xid_drain 79 must be a list of Xid numbers such as [48, 79, 95]'),
    ({'nvlinks_active': [18]}, 'nvlinks_active [18] must be a mapping of GPU index to the number of active NVLinks, e.g. {"0": 18}'),
    ({'nvlinks_active': {'0': True}}, 'nvlinks_active["0"] True must be a whole number of links (0 or more)'),
    ({'nvlinks_active': {'0': None}}, 'nvlinks_active["0"] None must be a whole number of links (0 or more)'),
    ({'nvlinks_active': {'x1': 2}}, "nvlinks_active key 'x1' is not a GPU index (0, 1, ...)"),
    ({'nvlink_error_max': [1]}, 'nvlink_error_max [1] must be a mapping of counter name to the most allowed, e.g. {"replay": 0}'),
    ({'ib_counter_max': None}, 'ib_counter_max None must be a mapping of counter name to the most allowed, e.g. {"symbol_error": 0}'),
    ({'ib_counter_max': {'link_downed': 'x'}}, 'ib_counter_max["link_downed"] \'x\' must be a whole number (0 or more), or null not to check it'),
    ({'ib_counter_max': {'replay': 0}}, "ib_counter_max has 'replay', which is not a counter; valid: symbol_error, link_error_recovery, "
                                        "link_downed, port_rcv_errors, port_rcv_remote_physical_errors, port_rcv_switch_relay_errors, "
                                        "port_xmit_discards, port_xmit_constraint_errors, port_rcv_constraint_errors, "
                                        "local_link_integrity_errors, excessive_buffer_overrun_errors, VL15_dropped"),
    ({'throttle_reasons': 'hw_slowdown'}, "throttle_reasons 'hw_slowdown' must be a list of clock event reasons; valid: gpu_idle, "
                                          "applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost, sw_thermal, hw_thermal, "
                                          "hw_power_brake, display_clocks"),
    ({'temperature_margin': -1}, 'temperature_margin -1 must be a whole number of degrees C (0 or more), or null not to check temperature'),
    ({'ib_ports': -1}, 'ib_ports -1 must be a whole number of InfiniBand ports (0 or more), or null not to check them'),
    ({'ib_hcas': [7]}, 'ib_hcas [7] must be a list of InfiniBand device names such as ["mlx5_0", "mlx5_1"], or null not to check them'),
    ({'ib_rate_gbps': True}, 'ib_rate_gbps True must be the rate in Gb/sec each InfiniBand port must run at (e.g. 400), or null'),
    ({'ib_rate_gbps': -1.5}, 'ib_rate_gbps -1.5 must be the rate in Gb/sec each InfiniBand port must run at (e.g. 400), or null'),
    ({'ib_rate_gbps': '400'}, "ib_rate_gbps '400' must be the rate in Gb/sec each InfiniBand port must run at (e.g. 400), or null"),
])
def test_load_config_error_messages(data, message):
    with pytest.raises(ValueError) as info:
        hc.load_config(data)
    assert str(info.value) == message


@pytest.mark.parametrize('data, key, value', [
    # the lowest value each setting accepts, and the forms it is normalised from
    ({'gpu_count': 0}, 'gpu_count', 0),
    ({'ecc_uncorrected_max': 0}, 'ecc_uncorrected_max', 0),
    ({'ecc_uncorrected_max': None}, 'ecc_uncorrected_max', None),
    ({'resume_after_passes': 1}, 'resume_after_passes', 1),
    ({'prolog_budget': 0.01}, 'prolog_budget', 0.01),
    ({'periodic_budget': 1}, 'periodic_budget', 1),
    ({'temperature_margin': None}, 'temperature_margin', None),
    ({'temperature_margin': 0}, 'temperature_margin', 0),
    ({'ib_ports': 0}, 'ib_ports', 0),
    ({'ib_rate_gbps': 0.5}, 'ib_rate_gbps', 0.5),
    ({'xid_drain': [1]}, 'xid_drain', [1]),
    ({'xid_source': 'dmesg'}, 'xid_source', 'dmesg'),
    ({'xid_source': '/var/log/kern.log'}, 'xid_source', '/var/log/kern.log'),
    ({'munge_key_path': None}, 'munge_key_path', ''),
    ({'munge_user': '_munge-1'}, 'munge_user', '_munge-1'),
    ({'reason_prefix': 'a-b_1'}, 'reason_prefix', 'a-b_1'),
    ({'scontrol': '/usr/bin/scontrol'}, 'scontrol', '/usr/bin/scontrol'),
    ({'node_name': 'gpu-01'}, 'node_name', 'gpu-01'),
    ({'nvlinks_active': {'0': 0, 3: 18}}, 'nvlinks_active', {0: 0, 3: 18}),
    ({'nvlink_error_max': {'replay': None, 'crc_data': 0}}, 'nvlink_error_max', {'replay': None, 'crc_data': 0}),
    ({'mig_layout': {'0': ['3g.40gb', '1g.10gb+me']}}, 'mig_layout', {0: ['1g.10gb+me', '3g.40gb']}),
    ({'mig_layout': {}}, 'mig_layout', {}),
    ({'ib_hcas': []}, 'ib_hcas', []),
])
def test_load_config_accepts(data, key, value):
    assert hc.load_config(data)[key] == value


def test_load_config_defaults():
    config = hc.load_config({})
    assert config == dict(hc.DEFAULTS, munge_key_path='/etc/munge/munge.key')
    assert (config['xid_drain'], config['throttle_reasons']) == ([48, 61, 62, 64, 74, 79, 95, 119, 120, 140, 154],
                                                                 ['hw_slowdown', 'sw_thermal', 'hw_thermal', 'hw_power_brake'])
    assert (config['scontrol'], config['systemctl'], config['fabric_manager_bin'], config['munge_user']) == (
        'scontrol', 'systemctl', 'nv-fabricmanager', 'munge')
    assert (config['auto_resume'], config['resume_after_passes'], config['prolog_budget'], config['periodic_budget']) == (True, 2, 3.0, 30.0)
    assert (config['nvlink_error_max'], config['ib_counter_max'], config['temperature_margin']) == ({'recovery': 0}, {'link_downed': 10}, 0)


# ------------------------------------------------------------------ the fleet checks through find_failures

NO_GPU_CHECKS = {'gpu_count': None, 'check_device_files': False, 'munge_key_path': ''}


def ib_port(hca, layer='InfiniBand', state='ACTIVE'):
    return {'hca': hca, 'port': 1, 'state': state, 'phys_state': 'LinkUp', 'rate': '400 Gb/sec', 'rate_gbps': 400.0, 'link_layer': layer,
            'counters': {}}


@pytest.mark.parametrize('observed, expected', [
    # the fabric manager down is the cause: the GPUs' fabric state is not repeated
    ({'nvswitch': True, 'fabric_manager_state': 'inactive', 'driver_version': '570.133.20',
      'gpus': [gpu(0, fleet={'fabric': {'state': 1, 'status': 0}})]},
     ["fabric-manager: nvidia-fabricmanager is inactive on this NVSwitch system: the GPUs join no NVLink fabric and CUDA jobs fail; "
      "systemctl enable --now nvidia-fabricmanager (the package of the driver's version, 570.133.20)"]),
    # the fabric manager could not be asked: the GPUs' fabric state speaks
    ({'nvswitch': True, 'fabric_manager_state': 'inactive', 'fabric_manager_error': 'systemctl: not found', 'driver_version': '570.133.20',
      'gpus': [gpu(0, fleet={'fabric': {'state': 3, 'status': 5}})]},
     ['fabric: GPU 0 (00000000:1B:00.0) NVLink fabric registration failed (status 5); see the nvidia-fabricmanager log']),
    ({'nvswitch': False, 'fabric_manager_state': 'inactive', 'gpus': [gpu(0, fleet={'fabric': {'state': 2, 'status': 0}})]},
     ["fabric: GPU 0 (00000000:1B:00.0) NVLink fabric state IN_PROGRESS: nvidia-fabricmanager is not running or has not registered the "
      "GPU; systemctl start nvidia-fabricmanager (its version must be the driver's, see nvidia-smi)"]),
    ({'driver_version': '525.60.12', 'gpus': [gpu(0, fleet={'persistence': False, 'pcie': {'width': 8, 'max_width': 16}})]},
     ['driver: NVIDIA driver 525.60.12 is older than 525.60.13 (the oldest that supports NVIDIA H100 80GB HBM3); install 525.60.13 or newer',
      'persistence: GPU 0 (00000000:1B:00.0) persistence mode is off; run nvidia-persistenced (systemctl enable --now nvidia-persistenced)',
      'pcie: GPU 0 (00000000:1B:00.0) PCIe link is x8, the GPU and slot do x16; reseat the GPU or check the riser/slot']),
    # a GPU in error names no model for the driver's minimum
    ({'driver_version': '525.60.12', 'gpus': [gpu(0, name='NVIDIA H200', error='lost'), gpu(1, name='NVIDIA A100-SXM4-40GB')]},
     ['gpu-error: GPU 0 (00000000:1B:00.0): lost']),
    ({'gpus': [gpu(0, fleet={'clock_reasons': 0x40, 'temperature': 91})]},
     ['thermal: GPU 0 (00000000:1B:00.0) clocks are held down by hw_thermal (91 C); check cooling and power']),
    # NVML does not answer: only the Xids (from the kernel log) and InfiniBand are judged
    ({'nvml_error': 'Driver Not Loaded', 'driver_version': '1.0', 'xids': [{'pci': '0000:1b:00', 'code': 79, 'text': 'off the bus'}],
      'gpus': [gpu(0, fleet={'persistence': False})], 'ib_ports': [ib_port('mlx5_0', state='DOWN')]},
     ['nvml: NVML does not answer: Driver Not Loaded',
      'xid: GPU 0 (00000000:1B:00.0) had Xid 79 since boot (last: 79, off the bus); reboot the node (RMA if it recurs)',
      'ib: InfiniBand mlx5_0 port 1 is DOWN (physical LinkUp), expected ACTIVE/LinkUp; check the cable, transceiver and switch port']),
    # the InfiniBand tree unread: a warning, no failure
    ({'gpus': [], 'ib_ports': [ib_port('mlx5_0', state='DOWN')], 'ib_error': 'permission denied', 'modules': []}, []),
    ({'gpus': [], 'ib_ports': [ib_port('mlx5_0'), ib_port('mlx5_1', layer='Ethernet')], 'modules': ['nvidia'], 'driver_proc': None,
      'kernel_release': '6.1.0-28-amd64'},
     ['gpudirect: no GPUDirect RDMA for the 1 InfiniBand ports: nvidia_peermem is not loaded and DMA-BUF is not possible (the driver '
      'version file is unreadable); modprobe nvidia_peermem (and list it in '
      '/etc/modules-load.d), or use the open kernel modules']),
    ({'gpus': [], 'ib_ports': [ib_port('mlx5_0')], 'modules': ['nvidia', 'nvidia_peermem']}, []),
    # without the modules read, GPUDirect is not judged
    ({'gpus': [], 'ib_ports': [ib_port('mlx5_0')]}, []),
])
def test_fleet_failures_in_the_periodic_tier(observed, expected):
    config = hc.load_config(dict(NO_GPU_CHECKS, ib_counter_max={}))
    assert texts(hc.find_failures(config, dict({'nvml_error': None}, **observed))) == expected


def test_a_skipped_or_disabled_check_is_not_reported():
    config = hc.load_config(dict(NO_GPU_CHECKS, disabled_checks=['persistence']))
    observed = {'nvml_error': None, 'gpus': [gpu(0, fleet={'persistence': False, 'pcie': {'width': 8, 'max_width': 16}})],
                'skipped': ['pcie']}
    assert hc.find_failures(config, observed) == []
    assert [f.check for f in hc.find_failures(config, dict(observed, skipped=None))] == ['pcie']


@pytest.mark.parametrize('observed, expected', [
    ({}, []),
    ({'xid_error': 'journalctl: not found', 'ib_error': 'EACCES', 'fabric_manager_error': 'systemctl: timeout'},
     ['cannot read the kernel log for Xids: journalctl: not found', 'cannot read the InfiniBand ports: EACCES',
      'cannot ask for the fabric manager: systemctl: timeout']),
    ({'ib_error': 'EACCES'}, ['cannot read the InfiniBand ports: EACCES']),
])
def test_warnings(observed, expected):
    assert hc.warnings(observed) == expected


def test_baseline_with_the_fleet_and_the_infiniband_tree():
    links = [{'link': n, 'active': n != 2} for n in range(4)]
    observed = {'gpus': [gpu(1, fleet={'nvlinks': links}), gpu(0, fleet={'nvlinks': []}), gpu(2, fleet=None)],
                'ib_ports': [ib_port('mlx5_0'), ib_port('mlx5_1', layer='Ethernet')]}
    assert hc.baseline(observed) == {'gpu_count': 3, 'gpu_models': ['NVIDIA H100 80GB HBM3'], 'mig_layout': {}, 'nvlinks_active': {'1': 3},
                                     'ib_ports': 1, 'ib_rate_gbps': 400.0}
    assert 'ib_ports' not in hc.baseline(dict(observed, ib_error='EACCES'))
    assert hc.baseline({'gpus': [], 'ib_ports': []}) == {'gpu_count': 0, 'gpu_models': [], 'mig_layout': {}, 'ib_ports': 0,
                                                         'ib_rate_gbps': None}


def test_baseline_error_messages():
    with pytest.raises(ValueError) as info:
        hc.baseline({'gpus': [gpu(1, error='GPU is lost'), gpu(0, error='first')]})
    assert str(info.value) == 'cannot record the GPUs of this node: GPU 0 (00000000:1B:00.0): first'
    with pytest.raises(ValueError) as info:
        hc.baseline({'nvml_error': 'Driver Not Loaded'})
    assert str(info.value) == 'cannot record the GPUs of this node: Driver Not Loaded'


def test_failures_of_a_gpu_in_error_are_that_error_only():
    broken = gpu(0, error='GPU is lost', retired_pages_pending=True, ecc_uncorrected=9, mig_pending=True)
    config = dict(CONFIG, mig_layout={0: ['1g.10gb'], 1: ['1g.10gb', '1g.10gb']})
    assert texts(hc.find_failures(config, {'gpus': [broken, gpu(1, **MIG_GPU)]}, ALL_FILES, MINORS)) == [
        'gpu-error: GPU 0 (00000000:1B:00.0): GPU is lost']


@pytest.mark.parametrize('extra, expected', [
    ({'ecc_uncorrected': 2}, []),
    ({'ecc_uncorrected': 3}, ['ecc: GPU 0 (00000000:1B:00.0) has 3 uncorrected ECC errors since the driver loaded (at most 2 allowed)']),
    ({'mig_current': True, 'mig_pending': False}, ['mig: GPU 0 (00000000:1B:00.0) has MIG mode disable pending until a GPU reset']),
    ({'name': 'NVIDIA h100 PCIe'}, []),
])
def test_gpu_checks_at_their_limits(extra, expected):
    config = hc.load_config({'gpu_count': 1, 'gpu_models': ['A100', 'H100'], 'mig_layout': {}, 'ecc_uncorrected_max': 2,
                             'check_device_files': False, 'munge_key_path': ''})
    assert texts(hc.find_failures(config, {'gpus': [gpu(0, **extra)]})) == expected


def test_gpu_model_names_every_model_expected():
    config = hc.load_config({'gpu_models': ['A100', 'H100'], 'check_device_files': False, 'munge_key_path': ''})
    assert texts(hc.find_failures(config, {'gpus': [gpu(0, name='Tesla T4')]})) == [
        'gpu-model: GPU 0 (00000000:1B:00.0) is a Tesla T4, expected A100 or H100']


def test_required_files_of_gpus_without_a_minor_or_in_error():
    gpus = [{'index': 0, 'minor': None}, gpu(1, error='lost'), gpu(2, minor=6)]
    assert hc.required_files(gpus) == [(None, '/dev/nvidiactl'), (2, '/dev/nvidia6')]


# ------------------------------------------------------------------ decisions: the exact words

def test_decide_leaves_a_node_an_admin_set_down():
    decision = hc.decide(MISSING, node('DOWN', [], 'disk replaced, ticket 9'), 'gpuhc')
    assert (decision.action, decision.reason, decision.passes) == ('none', None, 0)
    assert decision.message == 'failing (%s); gpu-01 is down by an admin: disk replaced, ticket 9, left as it is' % OURS


def test_decide_drains_a_node_slurm_set_down():
    decision = hc.decide(MISSING, node('DOWN', ['NOT_RESPONDING'], 'Not responding'), 'gpuhc')
    assert (decision.action, decision.reason) == ('drain', OURS)


@pytest.mark.parametrize('failures, message', [
    ([], 'healthy; gpu-01 stays drained by the deep tier ("%s") until a deep run passes (playbooks/health_deep.yml)' % DEEP),
    (MISSING, 'failing (%s); gpu-01 stays drained by the deep tier ("%s") until a deep run passes (playbooks/health_deep.yml)' % (OURS, DEEP)),
])
def test_decide_deep_tier_messages(failures, message):
    assert hc.decide(failures, node('IDLE', ['DRAIN'], DEEP), 'gpuhc').message == message
    # the deep tier itself decides on its own drain
    assert hc.decide(failures, node('IDLE', ['DRAIN'], DEEP), 'gpuhc', resume=True, tier='deep').action == ('drain' if failures else 'resume')


def test_decide_prolog_tier_message():
    decision = hc.decide([], node('MIXED', ['DRAIN'], PROLOG), 'gpuhc', tier='prolog', passes=1)
    assert (decision.action, decision.message, decision.passes) == (
        'none', 'healthy (prolog tier); gpu-01 stays drained ("%s")' % PROLOG, 1)


def test_decide_with_another_prefix():
    theirs = 'site:periodic:xid: GPU 0 had Xid 79'
    assert hc.decide([], node('IDLE', ['DRAIN'], theirs), 'site', passes=1).action == 'resume'
    assert hc.decide([], node('IDLE', ['DRAIN'], theirs), 'gpuhc', passes=1).action == 'none'
    assert hc.decide(MISSING, node(), 'site').reason == 'site:periodic:device-files: GPU 3 (00000000:61:00.0) /dev/nvidia3 missing'


def test_decision_and_failure_objects():
    decision = hc.Decision('drain', 'why', 'gpuhc:periodic:xid: x', passes=3)
    assert (decision.action, decision.message, decision.reason, decision.passes) == ('drain', 'why', 'gpuhc:periodic:xid: x', 3)
    assert hc.Decision('none', 'healthy').passes == 0 and hc.Decision('none', 'healthy').reason is None
    with pytest.raises(ValueError) as info:
        decision.argv('scontrol', 'gpu 01')
    assert str(info.value).startswith("node_name 'gpu 01' is not a Slurm node name: ")
    failure = hc.Failure('ecc', None, 'GPU 0 has 3 uncorrected ECC errors')
    assert (failure.check, failure.gpu, failure.detail) == ('ecc', None, 'GPU 0 has 3 uncorrected ECC errors')
    assert repr(failure) == "Failure('ecc: GPU 0 has 3 uncorrected ECC errors')"
    assert failure.as_dict() == {'check': 'ecc', 'gpu': None, 'detail': 'GPU 0 has 3 uncorrected ECC errors'}


def test_show_node_argv():
    assert hc.show_node_argv('/usr/bin/scontrol', 'gpu-01') == ['/usr/bin/scontrol', '-o', 'show', 'node', 'gpu-01']
    with pytest.raises(ValueError) as info:
        hc.check_node_name('-gpu', what='--node')
    assert str(info.value).startswith("--node '-gpu' is not a Slurm node name: ")
    assert hc.check_node_name('gpu-01.rack2') == 'gpu-01.rack2'


@pytest.mark.parametrize('current, text', [
    (node('DOWN', [], 'disk replaced'), 'down by an admin: disk replaced'),
    (node('IDLE', ['DRAIN'], 'Kill task failed'), 'drained by Slurm: Kill task failed'),
    (node('IDLE', ['DRAIN'], OURS), 'drained by gpucluster.bringup: ' + OURS),
    (node('IDLE', ['DRAIN'], 'gpuloop:reset:xid: GPU 0'), 'drained by the closed loop of gpucluster.bringup: gpuloop:reset:xid: GPU 0'),
    (node('IDLE', ['NOT_RESPONDING'], ''), 'not responding by Slurm: no reason given'),
])
def test_owner_text(current, text):
    assert hc.owner_text(current) == text
