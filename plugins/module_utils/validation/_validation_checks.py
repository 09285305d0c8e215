# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pass/fail decisions of the validation playbook's node, Slurm and MPI stages (pure logic).

Every function returns check records as ``_validation_report`` renders them:
``{"stage", "node", "check", "status": pass|fail|skip, "reason"[, "value", "threshold", "hosts"]}``.
The modules only collect (NVML, files, commands, job output) and hand the observations here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import expand
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._healthcheck import node_owner
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._munge_key import problems as munge_key_problems
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._drain_tag import MAX_REASON, format_tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._nodes import parse_nodes
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._job_dispatch import dispatch_settings, slurm_stage_dispatch
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import threshold_for
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    InputError, require_bool, require_choice, require_dict, require_int, require_list, require_match, require_str, require_unit, require_word,
    show, slurm_name)

NODE_CHECKS = ('nvml', 'gpu_count', 'gpu_models', 'mig_layout', 'gres_conf', 'munge', 'slurmd', 'node_state', 'enroot', 'pyxis')
# Base states and flags of ``scontrol -o show node`` that keep a node from taking jobs.
BAD_BASE_STATES = ('DOWN', 'ERROR', 'FAIL', 'FUTURE', 'UNKNOWN', 'DRAINED', 'DRAINING', 'DRAIN')
BAD_FLAGS = ('DRAIN', 'FAIL', 'NOT_RESPONDING', 'INVALID_REG', 'POWERED_DOWN', 'POWER_DOWN', 'POWERING_DOWN', 'REBOOT_ISSUED')
MPI_PATHS = ('srun_pmi', 'srun_plain', 'mpirun', 'pyxis')
# Settings in a job's environment known to slow collectives, with why.
SLOW_ENV = (
    ('OMPI_MCA_pml', re.compile(r'^\^.*\bucx\b|^ob1$'),
     'keeps Open MPI off UCX (seed 002: srun + pyxis with OMPI_MCA_pml=^ucx ran all_reduce at half the mpirun bandwidth)'),
    ('OMPI_MCA_btl', re.compile(r'^(tcp|self,tcp|tcp,self)$'), 'limits Open MPI to TCP'),
    ('NCCL_IB_DISABLE', re.compile(r'^1$'), 'turns InfiniBand off for NCCL (sockets only)'),
    ('NCCL_NET', re.compile(r'^Socket$', re.IGNORECASE), 'forces NCCL onto TCP sockets'),
    ('NCCL_P2P_DISABLE', re.compile(r'^1$'), 'turns NVLink/PCIe peer-to-peer off for NCCL'),
    ('NCCL_SHM_DISABLE', re.compile(r'^1$'), 'turns shared-memory transport off for NCCL'),
    ('NCCL_DEBUG', re.compile(r'^(TRACE)$', re.IGNORECASE), 'NCCL_DEBUG=TRACE logs every call and slows collectives'),
)

_MPI_HELLO = re.compile(r'^(?:\s*\d+:\s*)?mpi_hello rank (\d+) of (\d+) on (\S+)')


def is_false(value):
    """True for a flag that says no: False, 0, or the strings false/no/0/off (values that went through a template)."""
    if isinstance(value, str):
        return value.strip().lower() in ('false', 'no', '0', 'off')
    return value is False or value == 0  # (True is not 0; None is not 0)


def record(stage, node, check, status, reason, **extra):
    item = {'stage': stage, 'node': node, 'check': check, 'status': status, 'reason': reason}
    for key, value in extra.items():
        if value is not None:
            item[key] = value
    return item


def _clip(text, limit=300):
    text = ' '.join(str(text or '').split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


# ---------------------------------------------------------------- scontrol

def parse_scontrol_nodes(text):
    """``scontrol -o show node`` (one node per line) as ``{name: node}`` (``slurm._nodes.parse_nodes``: ``state`` the base
    state, ``flags`` the sorted ``+`` flags, ``reason``, ``reason_user``, ``reason_time``, ``comment`` ...).

    Raises ``ValueError`` naming the line when a ``NodeName=`` line has no ``State=`` or one that is not Slurm's."""
    return parse_nodes(text)


def node_problem(node):
    """Why the node cannot take jobs (text), or ``''`` when it can."""
    bad = [flag for flag in node['flags'] if flag in BAD_FLAGS]
    if node['state'] in BAD_BASE_STATES or bad:
        state = '+'.join([node['state']] + node['flags'])
        reason = (' (reason: "%s"%s)' % (node['reason'], ' set by %s' % node['reason_user'] if node['reason_user'] else '')
                  if node['reason'] else ' (no reason given)')
        return 'node is %s%s' % (state, reason)
    return ''


def node_state_record(stage, name, nodes):
    if name not in nodes:
        return record(stage, name, 'node_state', 'fail', 'Slurm does not know a node called %s (scontrol show node lists: %s)'
                      % (name, ', '.join(sorted(nodes)) or 'none'))
    problem = node_problem(nodes[name])
    if problem:
        # held='admin': a person set this state (node_owner); the validation reports it and never drains over it
        # (held='loop': the closed loop's drain, likewise never drained over: its tag is the loop's state)
        owner = node_owner(nodes[name])  # (no reason: 'slurm', so not held)
        held = owner if owner in ('admin', 'loop') else None
        return record(stage, name, 'node_state', 'fail', problem, held=held)
    return record(stage, name, 'node_state', 'pass', 'node is %s' % '+'.join([nodes[name]['state']] + nodes[name]['flags']))


# ---------------------------------------------------------------- gres.conf

def _gres_conf_units(lines):
    """``{(name, type): count}`` of device units the lines declare (File= hostlists expanded; Count= without File=)."""
    units = {}
    for line in lines:
        fields = dict(pair.split('=', 1) for pair in line.split() if '=' in pair)
        name = fields.get('Name')
        if not name:
            continue
        key = (name, fields.get('Type') or '-')
        if 'File' in fields:
            # the whole value is one hostlist: File=/dev/nvidia[0-1,3] is 3 devices (a comma may sit inside brackets)
            try:
                count = len(expand(fields['File']))
            except ValueError:  # not a hostlist: one device per comma-separated item
                count = len(fields['File'].split(','))
        elif 'MultipleFiles' in fields:
            count = 1
        else:
            try:
                count = int(fields.get('Count', '1'))
            except ValueError:
                count = 1
        units[key] = units.get(key, 0) + count
    return units


def gres_conf_lines(text, node=None):
    """Significant lines of a gres.conf: comments and blanks dropped, whitespace collapsed.

    With ``node``, the lines of a gres.conf for several nodes (configless Slurm serves one file with
    ``NodeName=gpu-[01-04] Name=gpu ...`` lines) are read as that node's slurmd reads them: a line whose
    ``NodeName=`` hostlist names another node is dropped, and the ``NodeName=`` field of the others is
    removed.
    """
    lines = []
    for raw in (text or '').splitlines():
        fields = raw.split('#', 1)[0].split()
        if node is not None and fields and fields[0].lower().startswith('nodename='):
            try:
                names = expand(fields[0].split('=', 1)[1])
            except ValueError:
                names = [fields[0].split('=', 1)[1]]
            if node not in names:
                continue
            fields = fields[1:]
        if fields:
            lines.append(' '.join(fields))
    return lines


def gres_conf_record(stage, node, path, actual_text, expected_lines):
    """gres.conf on the node against what ``slurm_gres_facts`` computes from NVML now."""
    if actual_text is None:
        return record(stage, node, 'gres_conf', 'fail', '%s is missing or unreadable; slurm_gres_facts computes %d line(s)' % (path, len(expected_lines)))
    actual = gres_conf_lines(actual_text, node)
    expected = gres_conf_lines('\n'.join(expected_lines))
    if actual == expected:
        return record(stage, node, 'gres_conf', 'pass', '%s equals what slurm_gres_facts computes (%d line(s))' % (path, len(expected)))
    problems = []
    have, want = _gres_conf_units(actual), _gres_conf_units(expected)
    for key in sorted(set(have) | set(want)):
        if have.get(key, 0) != want.get(key, 0):
            label = key[0] if key[1] == '-' else '%s:%s' % key
            problems.append('%s: %d in %s, %d computed from NVML' % (label, have.get(key, 0), path, want.get(key, 0)))
    missing = [line for line in expected if line not in actual]
    extra = [line for line in actual if line not in expected]
    if missing:
        problems.append('missing line "%s"%s' % (missing[0], ' (+%d more)' % (len(missing) - 1) if len(missing) > 1 else ''))
    if extra:
        problems.append('unexpected line "%s"%s' % (extra[0], ' (+%d more)' % (len(extra) - 1) if len(extra) > 1 else ''))
    if not problems:
        problems.append('same lines in a different order')
    return record(stage, node, 'gres_conf', 'fail', '%s differs from what slurm_gres_facts computes now: %s' % (path, '; '.join(problems)))


# ---------------------------------------------------------------- node checks

def _expect_gpu_count(name, value):
    return require_int(name, value, minimum=0, allow_none=True)


def _expect_gpu_models(name, value):
    return require_list(name, value or [], element=require_str)


# What a node must have, one key per node check that takes a setting: node_check's option ``expect``
# (the validate role fills gpu_count and gpu_models from the inventory's gpucluster_node_type). Key -> the check of its value; a new
# check with a setting adds its key here and its judgement to node_records.
EXPECT = {'gpu_count': _expect_gpu_count, 'gpu_models': _expect_gpu_models}


def check_expect(name, expect):
    """node_check's ``expect``: a dict of the keys of ``EXPECT``, each value as its check wants it."""
    require_dict(name, expect, allowed=sorted(EXPECT))
    for key in sorted(expect):
        EXPECT[key]('%s.%s' % (name, key), expect[key])
    return expect


def _validate_expect(expect):
    known = tuple(EXPECT) + ('enroot', 'pyxis', 'container_gpu', 'gres_conf_path', 'node_name')
    unknown = sorted(set(expect) - set(known))
    if unknown:
        raise ValueError('unknown node check expectation(s) %s; valid: %s' % (', '.join(unknown), ', '.join(known)))
    for key in sorted(set(expect) & set(EXPECT)):
        EXPECT[key](key, expect[key])  # InputError, a ValueError


def node_records(node, observed, expect, stage='node'):
    """All node checks of one node, in the order of ``NODE_CHECKS``.

    ``observed`` keys (each optional; a missing key makes its check ``skip``):
    ``nvml_error`` (text or None), ``gpus`` ([{index, name}]), ``mig`` ({actions: [...], reset_required: [...]}
    from ``nvidia_mig`` in check mode, or None when no layout is wanted), ``gres_conf`` ({path, text, expected}),
    ``munge`` ({rc, output}), ``munge_key`` (``_munge_key.observe``), ``services`` ({unit: state}), ``scontrol`` (``scontrol -o show node`` text),
    ``enroot`` ({rc, output, conf_present, conf_path}, and on a GPU node ``nvidia_cli``: the path of libnvidia-container's
    ``nvidia-container-cli``, which enroot's NVIDIA hook runs, or None), ``pyxis`` ({rc, output}).
    ``expect``: ``gpu_count``, ``gpu_models``, ``enroot`` (bool), ``pyxis`` (bool), ``container_gpu`` (bool: a GPU node
    without ``nvidia-container-cli`` fails the enroot check; otherwise the pass names the absence), ``node_name``.
    """
    _validate_expect(expect)
    name = expect.get('node_name') or node
    records = []
    nvml_error = observed.get('nvml_error')
    gpus = observed.get('gpus')
    if 'nvml_error' not in observed and gpus is None:
        records.append(record(stage, node, 'nvml', 'skip', 'not checked: NVML was not queried (not a GPU node)'))
    elif nvml_error:
        records.append(record(stage, node, 'nvml', 'fail', 'NVML does not answer: %s' % _clip(nvml_error)))
    else:
        records.append(record(stage, node, 'nvml', 'pass', 'NVML answers: %d GPU(s)' % len(gpus or [])))
    gpus = gpus or []
    count = expect.get('gpu_count')
    if nvml_error or observed.get('gpus') is None or count is None:
        records.append(record(stage, node, 'gpu_count', 'skip', 'not checked: %s' % (
            'NVML does not answer' if nvml_error else 'no expected GPU count' if count is None else 'NVML was not queried')))
    elif len(gpus) != count:
        records.append(record(stage, node, 'gpu_count', 'fail', 'NVML sees %d GPU(s), expected %d' % (len(gpus), count),
                              value=len(gpus), threshold=count))
    else:
        records.append(record(stage, node, 'gpu_count', 'pass', '%d GPU(s) as expected' % count, value=count))
    models = expect.get('gpu_models') or []
    if nvml_error or observed.get('gpus') is None or not models:
        records.append(record(stage, node, 'gpu_models', 'skip', 'not checked: %s' % (
            'NVML does not answer' if nvml_error else 'no expected models' if not models else 'NVML was not queried')))
    else:
        wrong = ['GPU %s is %s' % (g.get('index'), g.get('name')) for g in gpus
                 if not any(m.lower() in str(g.get('name', '')).lower() for m in models)]
        if wrong:
            records.append(record(stage, node, 'gpu_models', 'fail', '%s; expected %s' % ('; '.join(wrong), ' or '.join(models))))
        else:
            names = sorted(set(str(g.get('name')) for g in gpus))
            records.append(record(stage, node, 'gpu_models', 'pass', 'models %s match %s' % (', '.join(names) or 'none', ' or '.join(models))))
    records.append(_mig_record(stage, node, observed.get('mig'), nvml_error))
    gres = observed.get('gres_conf')
    if gres is None:
        records.append(record(stage, node, 'gres_conf', 'skip', 'not checked: no GRES computed for this node (not a GPU node)'))
    elif gres.get('error'):
        records.append(record(stage, node, 'gres_conf', 'fail', 'slurm_gres_facts could not compute the GRES to compare %s with: %s' % (
            gres['path'], _clip(gres['error']))))
    else:
        records.append(gres_conf_record(stage, node, gres['path'], gres.get('text'), gres['expected']))
    records.append(_munge_record(stage, node, observed.get('munge'), (observed.get('services') or {}).get('munge'), observed.get('munge_key')))
    services = observed.get('services') or {}
    if 'slurmd' not in services:
        records.append(record(stage, node, 'slurmd', 'skip', 'not checked: slurmd state unknown'))
    elif services['slurmd'] == 'active':
        records.append(record(stage, node, 'slurmd', 'pass', 'slurmd is active'))
    else:
        records.append(record(stage, node, 'slurmd', 'fail', 'slurmd is %s' % (services['slurmd'] or 'not running')))
    if observed.get('scontrol') is None:
        records.append(record(stage, node, 'node_state', 'skip', 'not checked: scontrol was not run'))
    elif observed.get('scontrol_error'):
        records.append(record(stage, node, 'node_state', 'fail', 'scontrol show node %s failed: %s' % (name, _clip(observed['scontrol_error']))))
    else:
        rec = node_state_record(stage, name, parse_scontrol_nodes(observed['scontrol']))
        rec['node'] = node
        records.append(rec)
    records.append(_enroot_record(stage, node, observed.get('enroot'), expect.get('enroot'), expect.get('container_gpu')))
    records.append(_pyxis_record(stage, node, observed.get('pyxis'), expect.get('pyxis')))
    return records


def _mig_record(stage, node, mig, nvml_error):
    if nvml_error:
        return record(stage, node, 'mig_layout', 'skip', 'not checked: NVML does not answer')
    if mig is None:
        return record(stage, node, 'mig_layout', 'skip', 'not checked: no wanted MIG layout for this node')
    if mig.get('error'):
        return record(stage, node, 'mig_layout', 'fail', 'the wanted MIG layout could not be compared: %s' % _clip(mig['error']))
    actions = mig.get('actions') or []
    pending = mig.get('reset_required') or []
    if actions:
        return record(stage, node, 'mig_layout', 'fail', 'MIG layout differs from the wanted one; nvidia_mig would: %s%s' % (
            '; '.join(actions[:3]), ' (+%d more)' % (len(actions) - 3) if len(actions) > 3 else ''))
    if pending:
        return record(stage, node, 'mig_layout', 'fail', 'MIG mode change pending a GPU reset on GPU(s) %s' % ', '.join(str(p) for p in pending))
    return record(stage, node, 'mig_layout', 'pass', 'MIG layout equals the wanted one')


def _munge_record(stage, node, munge, service_state, key=None):
    """munged active, a credential round-trips, and (``key``: a ``_munge_key.observe`` result) the key is private."""
    if munge is None and service_state is None and key is None:
        return record(stage, node, 'munge', 'skip', 'not checked: munge was not queried')
    if service_state is not None and service_state != 'active':
        return record(stage, node, 'munge', 'fail', 'munge is %s' % (service_state or 'not running'))
    if key is not None:
        found = munge_key_problems(key)
        if found:
            return record(stage, node, 'munge', 'fail', '; '.join(found))
    if munge is not None and munge.get('rc') != 0:
        return record(stage, node, 'munge', 'fail', 'munge -n | unmunge failed (rc %s): %s' % (munge.get('rc'), _clip(munge.get('output'))))
    if munge is not None and 'STATUS:' in (munge.get('output') or '') and 'Success' not in munge['output']:
        return record(stage, node, 'munge', 'fail', 'unmunge did not decode a fresh credential: %s' % _clip(munge['output']))
    done = []
    if service_state is not None:
        done.append('munge is active')
    if munge is not None:
        done.append('a credential round-trips')
    if key is not None:
        done.append('%s is private to %s (mode %04o, directory 0700)' % (key['path'], key.get('user') or 'munge', key['key']['mode'] & 0o7777))
    return record(stage, node, 'munge', 'pass', ', '.join(done))


def _enroot_record(stage, node, enroot, wanted, container_gpu=False):
    if not wanted:
        return record(stage, node, 'enroot', 'skip', 'not checked: enroot not expected (validate_node.enroot is false)')
    if enroot is None or enroot.get('rc') is None:
        return record(stage, node, 'enroot', 'fail', 'enroot is not installed (no enroot command in PATH)')
    if enroot['rc'] != 0:
        return record(stage, node, 'enroot', 'fail', 'enroot version failed (rc %s): %s' % (enroot['rc'], _clip(enroot.get('output'))))
    if not enroot.get('conf_present'):
        return record(stage, node, 'enroot', 'fail', 'enroot %s is installed but %s is missing' % (
            _clip(enroot.get('output'), 40), enroot.get('conf_path')))
    reason = 'enroot %s installed, %s present' % (_clip(enroot.get('output'), 40), enroot.get('conf_path'))
    if 'nvidia_cli' not in enroot:
        # not a GPU node (NVML not queried): containers there get no GPUs anyway
        return record(stage, node, 'enroot', 'pass', reason)
    if enroot['nvidia_cli']:
        return record(stage, node, 'enroot', 'pass', '%s, %s for its NVIDIA hook (GPU containers)' % (reason, enroot['nvidia_cli']))
    # enroot's hook 98-nvidia.sh (enroot 4.1.2 conf/hooks/98-nvidia.sh) runs for an image that sets NVIDIA_VISIBLE_DEVICES
    # (CUDA images do) and stops the container with "Command not found: nvidia-container-cli"
    missing = ("nvidia-container-cli (libnvidia-container's tools) is not in PATH: enroot's NVIDIA hook 98-nvidia.sh stops "
               "every container whose image sets NVIDIA_VISIBLE_DEVICES (CUDA images), so GPU containers cannot start")
    if container_gpu:
        return record(stage, node, 'enroot', 'fail', '%s, but %s; install libnvidia-container-tools (or set validate_node.container_gpu '
                      'to false where no GPU container runs)' % (reason, missing))
    return record(stage, node, 'enroot', 'pass', '%s; %s (not required: validate_node.container_gpu is false)' % (reason, missing))


def _pyxis_record(stage, node, pyxis, wanted):
    if not wanted:
        return record(stage, node, 'pyxis', 'skip', 'not checked: pyxis not expected (validate_node.pyxis is false)')
    if pyxis is None or pyxis.get('rc') is None:
        return record(stage, node, 'pyxis', 'fail', 'srun is not installed on this node, cannot tell whether pyxis loads')
    if '--container-image' in (pyxis.get('output') or ''):
        return record(stage, node, 'pyxis', 'pass', 'pyxis is loaded: srun --help lists --container-image')
    return record(stage, node, 'pyxis', 'fail', 'pyxis is not loaded: srun --help does not list --container-image%s' % (
        ' (srun said: %s)' % _clip(pyxis.get('output'), 200) if pyxis.get('rc') else ''))


# ---------------------------------------------------------------- jobs

def _job_failure(kind, result):
    """Reason text for a job that exited non-zero or timed out."""
    if result.get('timed_out'):
        return '%s timed out after %ss' % (kind, result.get('timeout'))
    text = (result.get('stderr') or '') + '\n' + (result.get('stdout') or '')
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if re.search(r'error|fail|abort|denied|refused|invalid|unable|cannot|not ', line, re.IGNORECASE)]
    first = errors[0] if errors else (lines[-1] if lines else 'no output')
    return '%s failed (rc %s): %s' % (kind, result.get('rc'), _clip(first, 240))


def srun_record(node, result, stage='slurm'):
    """``srun -N1 -w NODE hostname``: passes when the job ran on NODE."""
    if result.get('rc') != 0 or result.get('timed_out'):
        return record(stage, node, 'srun', 'fail', _job_failure('srun -w %s' % node, result))
    host = (result.get('stdout') or '').strip().splitlines()
    host = host[-1].strip() if host else ''
    if host.split('.')[0] != node:
        return record(stage, node, 'srun', 'fail', 'srun -w %s ran on "%s"' % (node, host or 'nowhere (no output)'))
    return record(stage, node, 'srun', 'pass', 'srun -w %s ran on %s' % (node, host))


def parse_gres_probe(text):
    """The ``key=value`` lines the GPU probe job prints (``CUDA_VISIBLE_DEVICES``, ``SLURM_STEP_GPUS``)."""
    values = {}
    for line in (text or '').splitlines():
        line = re.sub(r'^\s*\d+:\s*', '', line.strip())
        if '=' in line:
            key, value = line.split('=', 1)
            if re.match(r'^[A-Z_]+$', key):
                values[key] = value.strip()
    return values


def gres_job_record(node, result, gpus, stage='slurm'):
    """A ``--gres=gpu:N`` job on NODE: it must see N devices in CUDA_VISIBLE_DEVICES."""
    if not gpus:
        return record(stage, node, 'gres_job', 'skip', 'not checked: no GPUs configured for %s' % node)
    if result.get('rc') != 0 or result.get('timed_out'):
        return record(stage, node, 'gres_job', 'fail', _job_failure('srun --gres=gpu:%d -w %s' % (gpus, node), result))
    values = parse_gres_probe(result.get('stdout'))
    visible = [v for v in values.get('CUDA_VISIBLE_DEVICES', '').split(',') if v]
    if len(visible) != gpus:
        return record(stage, node, 'gres_job', 'fail', 'a --gres=gpu:%d job sees CUDA_VISIBLE_DEVICES=%s (%d device(s)), expected %d' % (
            gpus, values.get('CUDA_VISIBLE_DEVICES', '<unset>'), len(visible), gpus), value=len(visible), threshold=gpus)
    return record(stage, node, 'gres_job', 'pass', 'a --gres=gpu:%d job sees %d device(s): CUDA_VISIBLE_DEVICES=%s' % (
        gpus, len(visible), values.get('CUDA_VISIBLE_DEVICES')), value=len(visible))


def container_record(node, result, image, stage='slurm'):
    if not image:
        return record(stage, node, 'container_job', 'skip', 'not checked: no container image given (validate_jobs.container_image)')
    if result.get('rc') != 0 or result.get('timed_out'):
        return record(stage, node, 'container_job', 'fail', _job_failure('srun --container-image=%s -w %s' % (image, node), result))
    return record(stage, node, 'container_job', 'pass', 'a pyxis job ran in %s on %s' % (image, node))


def parse_mpi_list(text):
    """MPI plugin types of ``srun --mpi=list`` (``pmix``, ``pmi2``, ``none``, ``pmix_v4``, ...)."""
    types = []
    for line in (text or '').splitlines():
        line = line.strip()
        match = re.match(r'^(?:srun:\s*)?(?:MPI plugin types are\.*:?|specific pmix plugin versions available:)?\s*(.*)$', line)
        # (the split leaves no blank and no comma in a token)
        for token in re.split(r'[\s,]+', match.group(1) if match else ''):
            if re.match(r'^(none|pmi2|pmix(_v\d+)?|cray_shasta|openmpi|mvapich|pmi|mpichgm|mpichmx|lam|mpich1_p4|mpich1_shmem)$', token):
                if token not in types:
                    types.append(token)
    return types


def choose_mpi_plugin(available, wanted='auto'):
    """The ``--mpi=`` value for MPI jobs: ``wanted`` when given, else pmix, then pmi2; ``None`` when none is offered."""
    if wanted and wanted != 'auto':
        if wanted not in available:
            raise ValueError('srun offers no MPI plugin %r; it offers: %s' % (wanted, ', '.join(available) or 'none'))
        return wanted
    for name in ('pmix', 'pmi2'):
        if name in available:
            return name
    versions = [name for name in available if name.startswith('pmix_')]
    return versions[0] if versions else None


_MPI_HINTS = (
    (re.compile(r'orte_ess_init failed|ess_init failed|OPAL_ERR_NOT_INITIALIZED|PMIx_Init failed|PMI2?_Init'),
     'the MPI library found no PMI server: srun launched it without PMI support (use srun --mpi=pmix or pmi2)'),
    (re.compile(r'MPI plugin.*(not found|could not be loaded)|mpi/pmix.*(Couldn.t|cannot)|Cannot create mpi', re.IGNORECASE),
     "the Slurm MPI plugin does not load on the node"),
    (re.compile(r'allow-run-as-root|running as root', re.IGNORECASE), 'mpirun refuses to run as root'),
    (re.compile(r'ORTE was unable to reliably start|orted.*(not found|exited)|daemon.*failed to report', re.IGNORECASE),
     'mpirun could not start its daemons on the allocated nodes'),
    (re.compile(r'No such file or directory|command not found|not found', re.IGNORECASE), 'a program was not found on a node'),
)


def mpi_hint(text):
    """A short cause for a failing MPI launch, from known messages; ``''`` when none matches."""
    for pattern, hint in _MPI_HINTS:
        if pattern.search(text or ''):
            return hint
    return ''


def mpi_record(path, label, result, expected_ranks, hosts, required, stage='mpi'):
    """One MPI launch path: every rank of one world of ``expected_ranks`` must report in.

    A path that fails is ``fail`` when it is in ``required`` and ``skip`` (reported, not gating) otherwise.
    """
    if path not in MPI_PATHS:
        raise ValueError('unknown MPI path %r; valid paths: %s' % (path, ', '.join(MPI_PATHS)))
    if result is None or result.get('skipped'):
        why = (result or {}).get('reason') or 'not run'
        return record(stage, path, 'launch', 'fail' if path in required else 'skip', '%s: %s' % (label, why), hosts=hosts or None)
    ranks = {}
    sizes = set()
    lines = 0
    for line in (result.get('stdout') or '').splitlines():
        match = _MPI_HELLO.match(line.strip())
        if match:
            lines += 1
            ranks[int(match.group(1))] = match.group(3)
            sizes.add(int(match.group(2)))
    problem = None
    if result.get('rc') != 0 or result.get('timed_out'):
        problem = _job_failure(label, result)
        hint = mpi_hint((result.get('stderr') or '') + (result.get('stdout') or ''))
        if hint:
            problem += ' -- %s' % hint
    elif sizes == {1} and expected_ranks > 1:
        problem = '%s: each of the %d tasks started as its own 1-rank world (no PMI wiring between srun and MPI)' % (label, lines)
    elif sorted(ranks) != list(range(expected_ranks)) or sizes != {expected_ranks}:
        problem = '%s: %d of %d ranks reported (world size %s)' % (label, len(ranks), expected_ranks, ','.join(str(s) for s in sorted(sizes)) or 'unknown')
    if problem:
        status = 'fail' if path in required else 'skip'
        if status == 'skip':
            problem = 'FAILING, not required (validate_mpi_settings.required_paths): ' + problem
        return record(stage, path, 'launch', status, problem, hosts=hosts or None)
    seen = sorted(set(ranks.values()))
    return record(stage, path, 'launch', 'pass', '%s: %d ranks in one world on %s' % (label, expected_ranks, ', '.join(seen)), hosts=hosts or None)


def slow_env_warnings(env, source):
    """Warnings for settings in ``env`` (a dict, or ``env`` output text) known to slow collectives."""
    if isinstance(env, str):
        parsed = {}
        for line in env.splitlines():
            line = re.sub(r'^\s*\d+:\s*', '', line)
            if '=' in line:
                key, value = line.split('=', 1)
                parsed[key.strip()] = value.strip()
        env = parsed
    warnings = []
    for key, pattern, why in SLOW_ENV:
        value = env.get(key)
        if value is not None and pattern.search(str(value)):
            warnings.append('%s sets %s=%s, which %s' % (source, key, value, why))
    return warnings


# ---------------------------------------------------------------- report helpers

def missing_node_records(records, nodes, stage='node'):
    """A ``fail`` record for every node of ``nodes`` that has no record of ``stage`` (unreachable, or its tasks failed)."""
    have = set(rec.get('node') for rec in records if rec.get('stage') == stage)
    return [record(stage, node, 'reachable', 'fail', 'no %s check results from %s: the host was unreachable or its tasks failed' % (stage, node))
            for node in nodes if node not in have]


def drain_reasons(records, nodes, limit=MAX_REASON):
    """``{node: "validate: <stage>/<check>: <reason>"}`` (the drain tag, ``slurm._drain_tag``) of the first failure naming
    each node of ``nodes``.

    Only failures that point at one node count: a failed multi-node run (``hosts`` with several nodes, such as
    the fabric run) does not say which node is at fault and drains none. Nodes not in ``nodes`` (not Slurm
    compute nodes) are left out, and so are nodes an admin drained or set down (their ``node_state`` record is
    ``held='admin'``): the admin's reason stays.
    """
    reasons = {}
    # a node an admin drained or set down keeps the admin's reason (a drain of ours would replace it, and resume.yml
    # would then take the node for one of ours)
    held = set(rec.get('node') for rec in records if rec.get('check') == 'node_state' and rec.get('held') in ('admin', 'loop'))
    for rec in records:
        hosts = rec.get('hosts') or [rec.get('node')]
        if held.intersection(hosts):
            continue
        if rec.get('status') != 'fail' or len(hosts) != 1:
            continue
        for host in hosts:
            if host in nodes and host not in reasons:
                reasons[host] = format_tag('validate', rec['check'], rec.get('reason', ''), scope=rec['stage'], limit=limit)
    return reasons


# ---------------------------------------------------------------- job plans

# What a --gres=gpu job sees. Device files are not probed: the GRES index is not the /dev/nvidiaN minor in general.
GRES_PROBE = 'echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-}"; echo "SLURM_STEP_GPUS=${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS-}}"'
SLURM_PLAN_KEYS = ('nodes', 'srun', 'partition', 'time_limit', 'timeout', 'pyxis', 'container_image', 'env', 'dispatch', 'dispatch_min_nodes',
                   'allocation_wait', 'salloc')
MPI_PLAN_KEYS = ('nodes', 'binary', 'srun', 'salloc', 'mpirun', 'mpirun_args', 'partition', 'time_limit', 'timeout', 'container_image',
                 'container_mounts', 'env', 'skip_reason', 'no_pmi_path', 'no_pmi_timeout')
# Seconds the srun-without-PMI path may run: Open MPI ranks started without PMI
# fail at once (orte_ess_init failed) or, in singleton mode, hang.
NO_PMI_TIMEOUT = 60


def _export(env):
    for key in sorted(env or {}):
        if not re.match(r'^[A-Za-z_][A-Za-z0-9_]*$', key):
            raise ValueError('environment variable name %r is not valid (letters, digits and _)' % (key,))
    return '--export=' + ','.join(['ALL'] + ['%s=%s' % (key, env[key]) for key in sorted(env or {})])


def slurm_jobs(plan):
    """``validation_jobs`` jobs of the Slurm stage: srun on every node, a --gres=gpu job per GPU node, a pyxis job, the job environment.

    ``plan``: ``nodes`` ([{name, gpus, usable}]; ``usable`` False: the node cannot take jobs, its jobs are reported
    skipped instead of waiting in the queue), ``srun``, ``partition``, ``time_limit`` (minutes), ``timeout`` (seconds),
    ``pyxis`` (bool), ``container_image``, ``env`` (exported to every job); ``dispatch`` (``auto``, ``per_node``,
    ``allocation``), ``dispatch_min_nodes``, ``allocation_wait``, ``salloc``: the per-node jobs as steps of one allocation
    per round and node type (``_job_dispatch.slurm_stage_dispatch``; a node with ``busy`` true keeps its own jobs).
    """
    _check_plan(plan, SLURM_PLAN_KEYS, 'Slurm')
    # checked before any job is made, like the rest of the plan
    dispatch_settings(plan.get('dispatch'), plan.get('dispatch_min_nodes'), plan.get('allocation_wait'))
    nodes = plan.get('nodes') or []
    if not nodes or not all(isinstance(n, dict) and n.get('name') for n in nodes):
        raise ValueError('Slurm plan nodes must be a non-empty list of {name, gpus, usable}, got %r' % (nodes,))
    _check_slurm_nodes(nodes)
    srun = plan.get('srun') or 'srun'
    common = ['--time=%s' % (plan.get('time_limit') or 2), _export(plan.get('env'))]
    if plan.get('partition'):
        common.append('--partition=%s' % plan['partition'])
    timeout = plan.get('timeout') or 120
    image = plan.get('container_image') or ''
    jobs = []
    for node in nodes:
        if is_false(node.get('usable')):
            for suffix, check in (('', 'srun'), ('/gres', 'gres_job'), ('/container', 'container_job')):
                jobs.append({'name': node['name'] + suffix, 'kind': 'skip', 'check': check,
                             'reason': 'not run: %s cannot take jobs (see its node_state check)' % node['name']})
            continue
        base = [srun, '--nodes=1', '--ntasks=1', '--nodelist=%s' % node['name']] + common
        jobs.append({'name': node['name'], 'kind': 'srun', 'round': 0, 'timeout': timeout, 'argv': base + ['--job-name=validate-srun', 'hostname']})
        try:
            gpus = int(node.get('gpus') or 0)
        except (TypeError, ValueError):
            raise ValueError('node %s: gpus is %r, expected a whole number' % (node['name'], node.get('gpus')))
        if gpus:
            jobs.append({'name': node['name'] + '/gres', 'kind': 'gres', 'round': 1, 'timeout': timeout, 'gpus': gpus,
                         'argv': base + ['--job-name=validate-gres', '--gres=gpu:%d' % gpus, 'sh', '-c', GRES_PROBE]})
        if not plan.get('pyxis'):
            jobs.append({'name': node['name'] + '/container', 'kind': 'skip', 'check': 'container_job',
                         'reason': 'not checked: pyxis not expected (validate_node.pyxis is false)'})
        elif not image:
            jobs.append({'name': node['name'] + '/container', 'kind': 'skip', 'check': 'container_job',
                         'reason': 'not checked: no container image given (validate_jobs.container_image)'})
        else:
            jobs.append({'name': node['name'] + '/container', 'kind': 'container', 'round': 2, 'timeout': timeout, 'image': image,
                         'argv': base + ['--job-name=validate-container', '--container-image=%s' % image, 'true']})
    usable = [n for n in nodes if not is_false(n.get('usable'))]
    if usable:
        jobs.append({'name': 'job-environment', 'kind': 'env', 'round': 0, 'timeout': timeout,
                     'argv': [srun, '--nodes=1', '--ntasks=1', '--nodelist=%s' % usable[0]['name']] + common + ['--job-name=validate-env', 'env']})
    return slurm_stage_dispatch(jobs, nodes, plan)


def mpi_jobs(plan):
    """``validation_jobs`` jobs of the MPI stage: one small MPI program through each launch path of ``MPI_PATHS``.

    ``plan``: ``nodes`` (names, one rank each), ``binary`` (the MPI program on the nodes), ``srun``, ``salloc``,
    ``mpirun``, ``mpirun_args``, ``partition``, ``time_limit``, ``timeout``, ``container_image`` (pyxis path; the
    binary's directory is mounted), ``container_mounts``, ``env``, ``skip_reason`` (every path is reported skipped with it),
    ``no_pmi_path`` (run the srun path without PMI, else it is reported skipped), ``no_pmi_timeout`` (its timeout,
    at most ``timeout``; default ``NO_PMI_TIMEOUT``).
    """
    _check_plan(plan, MPI_PLAN_KEYS, 'MPI')
    nodes = require_list('nodes', plan.get('nodes') or [], element=lambda item, name: slurm_name(item, name, 'a Slurm node name'))
    labels = {'srun_pmi': 'srun --mpi={mpi}', 'srun_plain': 'srun --mpi=none (no PMI)', 'mpirun': 'mpirun in a salloc allocation',
              'pyxis': 'srun --mpi={mpi} --container-image'}
    if plan.get('skip_reason') or not nodes or not plan.get('binary'):
        reason = plan.get('skip_reason') or ('no MPI program: %s' % ('no node can run it' if not nodes else 'binary not given'))
        return [{'name': path, 'kind': 'skip', 'path': path, 'label': labels[path], 'reason': reason, 'hosts': nodes or None,
                 'ranks': len(nodes) or 1} for path in MPI_PATHS]
    srun = plan.get('srun') or 'srun'
    alloc = ['--nodes=%d' % len(nodes), '--nodelist=%s' % ','.join(nodes), '--ntasks-per-node=1', '--time=%s' % (plan.get('time_limit') or 2)]
    if plan.get('partition'):
        alloc.append('--partition=%s' % plan['partition'])
    export = _export(plan.get('env'))
    timeout = plan.get('timeout') or 180
    binary = plan['binary']
    job = dict(kind='mpi', timeout=timeout, ranks=len(nodes), hosts=nodes)
    root_ok = dict(plan.get('env') or {}, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    jobs = [
        dict(job, name='srun_pmi', path='srun_pmi', label=labels['srun_pmi'], round=0,
             argv=[srun] + alloc + [export, '--job-name=validate-mpi', '--mpi={mpi}', binary]),
        dict(job, name='srun_plain', path='srun_plain', label=labels['srun_plain'], round=1,
             timeout=min(timeout, plan.get('no_pmi_timeout') or NO_PMI_TIMEOUT),
             argv=[srun] + alloc + [export, '--job-name=validate-mpi', '--mpi=none', binary])
        if plan.get('no_pmi_path') else
        {'name': 'srun_plain', 'kind': 'skip', 'path': 'srun_plain', 'label': labels['srun_plain'], 'hosts': nodes, 'ranks': len(nodes),
         'reason': 'not run: the srun path without PMI runs only when asked (validate_mpi_settings.no_pmi_path); '
                   'Open MPI then fails with orte_ess_init failed or hangs until its timeout'},
        dict(job, name='mpirun', path='mpirun', label=labels['mpirun'], round=2, env=root_ok,
             argv=[plan.get('salloc') or 'salloc'] + alloc + ['--job-name=validate-mpi', plan.get('mpirun') or 'mpirun']
             + list(plan.get('mpirun_args') or []) + [binary]),
    ]
    image = plan.get('container_image')
    if image:
        mounts = plan.get('container_mounts') or '%s:%s' % ((binary.rsplit('/', 1)[0] or '/',) * 2)
        jobs.append(dict(job, name='pyxis', path='pyxis', label=labels['pyxis'], round=3,
                         argv=[srun] + alloc + [export, '--job-name=validate-mpi', '--mpi={mpi}', '--container-image=%s' % image,
                                                '--container-mounts=%s' % mounts, binary]))
    else:
        jobs.append({'name': 'pyxis', 'kind': 'skip', 'path': 'pyxis', 'label': labels['pyxis'], 'hosts': nodes, 'ranks': len(nodes),
                     'reason': 'not run: no MPI container image given (validate_mpi_settings.container_image)'})
    return jobs


# ---------------------------------------------------------------- input checks (before anything runs)

USER_NAME = r'[a-z_][a-z0-9_-]{0,31}'
# Slurm's --time: minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]], or UNLIMITED.
SLURM_TIME = r'0*[1-9]\d*|\d+:\d+|\d+:\d+:\d+|\d+-\d+(:\d+){0,2}|UNLIMITED|INFINITE|unlimited|infinite'
ENV_NAME = r'[A-Za-z_][A-Za-z0-9_]*'
JOB_KINDS = ('srun', 'gres', 'container', 'mpi', 'nccl', 'env', 'skip')


def slurm_names(name, values, what='a Slurm node name'):
    """``values`` (a list) as Slurm names, each checked by :func:`slurm_name` (``name[i]`` in the message).

    The builders of Slurm command lines call it on what they put there: a name that starts with "-" would be read
    as an option by scontrol and sacctmgr (their getopt takes options anywhere on the line), a "," or "=" would
    change a node list or a key=value argument."""
    if not isinstance(values, (list, tuple)):
        raise InputError('%s is %s, expected a list of Slurm names' % (name, show(values)))
    for index, value in enumerate(values):
        slurm_name('%s[%d]' % (name, index), value, what)
    return list(values)


def check_env(name, env):
    """A job environment: a dict of variable names to scalar values (strings, numbers, booleans)."""
    if env is None:
        return {}
    require_dict(name, env)
    for key, value in env.items():
        require_match('%s key' % name, key, ENV_NAME, 'an environment variable name (letters, digits and "_", not starting with a digit)')
        if value is None or isinstance(value, (dict, list, tuple)):
            raise InputError('%s[%s] is %s, expected a string or number' % (name, key, show(value)))
    return env


def check_time_limit(name, value):
    """A Slurm ``--time`` value: whole minutes (1 or more) or a Slurm time string such as ``"0:30:00"`` or ``"1-00:00:00"``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return require_int(name, value, minimum=1, unit='minutes')
    return require_match(name, value, SLURM_TIME, 'a Slurm time limit: minutes (1 or more), "MM:SS", "HH:MM:SS", "D-HH[:MM[:SS]]" or UNLIMITED')


def check_mig_result(name, result):
    """The registered result of ``nvidia_mig`` in check mode (a dict: node_check's argument spec): ``actions`` a list of
    strings, ``gpus`` a list of dicts."""
    if result.get('failed') or 'actions' not in result:
        return result
    require_list(name + '.actions', result['actions'], allow_none=True, element=require_str)
    require_list(name + '.gpus', result.get('gpus'), allow_none=True, element=require_dict)
    return result


def check_node_input(params):
    """``node_check``'s options beyond the argument spec; raises ``InputError`` naming the option, the value and what is valid."""
    if params.get('node_name'):
        slurm_name('node_name', params['node_name'], 'a Slurm node name')
    check_expect('expect', params.get('expect') or {})
    if params.get('mig_result') is not None:
        check_mig_result('mig_result', params['mig_result'])
    for index, unit in enumerate(params.get('services') or []):
        require_unit('services[%d]' % index, unit)
    for key in ('gres_conf_path', 'enroot_conf_path'):  # a path: not empty
        require_str(key, params.get(key))
    if params.get('munge_key_check', True):
        require_match('munge_key_path', params.get('munge_key_path'), r'/.*[^/]', 'an absolute path to a file such as /etc/munge/munge.key')
        require_match('munge_user', params.get('munge_user'), USER_NAME, 'a user name such as "munge"')
    require_word('hook_log_ident', params.get('hook_log_ident'), 'a syslog identifier such as "slurm-hooks" (no spaces, not starting with "-")')
    require_int('hook_log_lines', params.get('hook_log_lines'), minimum=1, maximum=1000000)
    for index, path in enumerate(params.get('hook_log_files') or []):
        require_str('hook_log_files[%d]' % index, path)


# Plan keys that become a command word (argv[0], or the program srun/salloc start), with what each is.
COMMAND_WORDS = (('srun', 'the srun command or its path'), ('salloc', 'the salloc command or its path'),
                 ('mpirun', 'the mpirun command or its path'), ('scancel', 'the scancel command or its path'),
                 ('binary', 'the path of the program on the nodes'))


def command_words(plan):
    """The plan's commands and program (:data:`COMMAND_WORDS`), each one word that cannot be read as an option."""
    for key, what in COMMAND_WORDS:
        if plan.get(key):
            require_word(key, plan[key], '%s (one word: no spaces, not starting with "-")' % what)


def _plan_str(name, value):
    return require_str(name, value, allow_empty=True, allow_none=True)


def check_run_settings(plan, timeout_keys=('timeout',)):
    """The run settings every job plan shares: its timeouts (seconds), ``time_limit`` (srun --time) and ``env``."""
    for key in timeout_keys:
        if plan.get(key) is not None:
            require_int(key, plan[key], minimum=1, unit='seconds')
    if plan.get('time_limit') not in (None, ''):
        check_time_limit('time_limit', plan['time_limit'])
    check_env('env', plan.get('env'))


def _check_plan(plan, keys, what):
    if not isinstance(plan, dict):
        raise ValueError('the %s plan must be a dict with keys %s, got %r' % (what, ', '.join(keys), plan))
    unknown = sorted(set(plan) - set(keys))
    if unknown:
        raise ValueError('unknown %s plan key(s) %s; valid keys: %s' % (what, ', '.join(unknown), ', '.join(keys)))
    check_run_settings(plan, ('timeout', 'no_pmi_timeout'))
    slurm_name('partition', plan.get('partition') or '', 'a Slurm partition name', allow_empty=True)
    for key in ('srun', 'salloc', 'mpirun', 'binary', 'container_image', 'container_mounts', 'skip_reason'):
        _plan_str(key, plan.get(key))
    # commands, and the program srun/salloc/mpirun start: srun and salloc read every word before the program as
    # their own option, so the program (and the mpirun salloc starts) must not look like one
    command_words(plan)
    for key in ('pyxis', 'no_pmi_path'):
        if plan.get(key) is not None:
            require_bool(key, plan[key])
    if plan.get('mpirun_args') is not None:
        require_list('mpirun_args', plan['mpirun_args'], element=require_str)


def _check_slurm_nodes(nodes):
    require_list('nodes', nodes, min_items=1, element=require_dict)
    for index, node in enumerate(nodes):
        slurm_name('nodes[%d].name' % index, node.get('name'), 'a Slurm node name')
        require_int('nodes[%d].gpus' % index, node.get('gpus') or 0, minimum=0)
        if node.get('usable') is not None:
            require_bool('nodes[%d].usable' % index, node['usable'])
        if node.get('busy') is not None:
            require_bool('nodes[%d].busy' % index, node['busy'])


def check_jobs(jobs, label='jobs', mpi_paths=MPI_PATHS):
    """Validate (and normalise the numbers of) ``validation_jobs`` jobs before any runs; raises ``InputError``.

    Each job: ``name`` non-empty, ``timeout`` 1 or more seconds, ``round`` 0 or more, ``gpus`` 0 or more, ``ranks``
    1 or more, ``env`` variable names to scalars, ``argv`` a non-empty list (except ``kind: skip``) whose first item
    is not empty, ``hosts`` non-empty names, ``path`` for ``kind: mpi``, and ``expect`` only on ``kind: nccl``, where
    it must be a valid ``_nccl`` expectation (unknown keys, unknown topologies and bad numbers are refused).
    """
    for index, job in enumerate(jobs):
        where = '%s[%d]' % (label, index)
        require_dict(where, job)
        require_str(where + '.name', job.get('name'))
        where = '%s[%d] (%s)' % (label, index, job['name'])
        kind = require_choice(where + '.kind', job.get('kind'), JOB_KINDS)
        job['timeout'] = require_int(where + '.timeout', job.get('timeout'), minimum=1, unit='seconds')
        job['round'] = require_int(where + '.round', job.get('round'), minimum=0)
        job['gpus'] = require_int(where + '.gpus', job.get('gpus'), minimum=0, allow_none=True)
        job['ranks'] = require_int(where + '.ranks', job.get('ranks'), minimum=1, allow_none=True)
        check_env(where + '.env', job.get('env'))
        if kind != 'skip':
            if not job.get('argv'):
                raise InputError('%s.argv is %s, expected the command as a non-empty list (every kind but skip runs one)'
                                 % (where, show(job.get('argv'))))
            # a job's argv is its command line, run as given (its options are the user's on purpose); only the command
            # itself must be one: a word not starting with "-"
            require_list(where + '.argv', job['argv'], min_items=1)
            require_str(where + '.argv[0]', job['argv'][0])
            require_word(where + '.argv[0]', job['argv'][0], 'the command to run, a name or path (no spaces, not starting with "-")')
        require_list(where + '.hosts', job.get('hosts'), allow_none=True, element=require_str)
        if kind == 'mpi' and not job.get('path'):
            raise InputError('%s (kind mpi) needs a path: %s' % (where, ', '.join(mpi_paths)))
        if job.get('path') is not None:
            require_choice(where + '.path', job['path'], mpi_paths)
        if job.get('expect') is not None:
            if kind != 'nccl':
                raise InputError('%s.expect is %s, but only kind nccl jobs take an expectation (this job is kind %s)'
                                 % (where, show(job['expect']), kind))
            try:
                threshold_for(job['expect'])
            except (ValueError, TypeError, AttributeError) as exc:
                raise InputError('%s.expect is %s: %s' % (where, show(job['expect']), exc))
    names = [job['name'] for job in jobs]
    duplicates = sorted(set(n for n in names if names.count(n) > 1))
    if duplicates:
        raise InputError('job names must be unique, these repeat: %s' % ', '.join(duplicates))
    return jobs


def check_jobs_input(params):
    """``validation_jobs``' top-level options the argument spec cannot check: ``stage``, ``mpi_plugin``, ``srun``."""
    require_word('stage', params.get('stage'), 'a stage name such as "slurm" (no spaces)')
    require_match('mpi_plugin', params.get('mpi_plugin'), r'auto|[a-z][a-z0-9_]*',
                  'auto or a Slurm MPI plugin type such as pmix, pmix_v4, pmi2 or none')
    require_word('srun', params.get('srun'), 'the srun command or its path')
