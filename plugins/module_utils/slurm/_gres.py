# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm GPU GRES model: build it from what a node reports, render gres.conf.

The module ``slurm_gres_facts`` collects plain data (NVML, the mig-minors
table, sysfs) and hands it to :func:`build_gres`, which returns the facts.
This file also parses ``slurmd -G`` output (Slurm 22.05) and compares it with
the facts, for checks on a real node.

GRES index order
----------------
Without AutoDetect, Slurm 22.05 numbers the ``gpu`` GRES of a node in this
order (``_merge_config()`` in ``src/common/gres.c``): for each type in the
order the node's slurm.conf ``Gres=`` lists it, the gres.conf records of that
type in file order, each ``File=`` range in its written order.  The facts
list GPU types in order of first appearance (GPUs by NVML index, MIG devices
by MIG device index), render gres.conf lines grouped in that same order and
give ``node_gres`` in that order too, so the ``index`` of each entry is the
index Slurm assigns as long as slurm.conf uses ``node_gres`` verbatim.
``SLURM_JOB_GPUS`` / ``SLURM_STEP_GPUS`` carry these indices.

Standard library only; bad input raises ``ValueError`` naming the bad value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import (
    compress,
    expand,
    format_int_ranges,
    parse_int_ranges,
)
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import gres_type_map
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_minors import (
    cap_device,
    instance_minors,
)

# Model-name substring -> GRES type: the catalogue's (catalogue._gpus), one per GPU family.
DEFAULT_TYPE_MAP = gres_type_map()

DEFAULT_MPS_COUNT = 100

UUID_MAP_HEADER = (
    '# GRES index -> device UUID, written by gpucluster.bringup.slurm_gres_facts.\n'
    '# Fields: <gres index> <type> <unique id>.  The index is the Slurm gpu GRES\n'
    '# index (SLURM_JOB_GPUS, SLURM_STEP_GPUS); the id is what CUDA_VISIBLE_DEVICES\n'
    '# accepts (MIG-... for a MIG instance, GPU-... for a full GPU).\n'
)

_TYPE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._+-]*$')


def merge_type_map(overrides):
    """Built-in model map updated with ``overrides`` (model substring -> type)."""
    merged = dict(DEFAULT_TYPE_MAP)
    seen = {}
    for key, value in (overrides or {}).items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError('type_map key %r must be a non-empty model-name substring such as "A100"' % (key,))
        if key.lower() in seen:
            raise ValueError('type_map keys "%s" and "%s" differ only in case (matching ignores case); keep one' % (seen[key.lower()], key))
        seen[key.lower()] = key
        if not isinstance(value, str) or not _TYPE_NAME.match(value):
            raise ValueError(
                'type_map value %r for "%s" is not a valid Slurm GRES type: use letters, digits, ".", "_", "+", "-" (e.g. "a100")'
                % (value, key))
        merged[key] = value
    return merged


def gpu_type(model, type_map):
    """Short type for a GPU product name: the value of the longest key found in it.

    ``'NVIDIA A100 80GB PCIe'`` -> ``'a100'`` (``A100`` beats ``A10``).
    Matching ignores case; of keys of equal length the one listed last wins
    (entries given by the user come after the built-in ones).
    """
    found = None
    for key in type_map:
        if key.lower() in model.lower() and (found is None or len(key) >= len(found)):
            found = key
    if found is None:
        raise ValueError(
            'GPU model "%s" matches no key of type_map (keys: %s); add one, e.g. type_map: {"%s": "<short type>"}'
            % (model, ', '.join(sorted(type_map)), model))
    return type_map[found]


def mig_profile_name(slice_count, memory_mb):
    """MIG profile name from NVML device attributes: ``(1, 9728)`` -> ``'1g.10gb'``.

    Same rule as Slurm's NVML autodetection: ``<gpuInstanceSliceCount>g.``
    followed by ``memorySizeMB / 1024`` rounded half away from zero, ``gb``.
    """
    if slice_count <= 0 or memory_mb <= 0:
        raise ValueError('MIG device reports %d slices and %d MB of memory; both must be positive' % (slice_count, memory_mb))
    return '%dg.%dgb' % (slice_count, int(math.floor(memory_mb / 1024.0 + 0.5)))


def slurm_autodetect_type(model):
    """The type Slurm's NVML autodetection gives a GPU: lower case, spaces as ``_``."""
    return model.strip().lower().replace(' ', '_')


def cpu_list_from_mask(words, word_bits=64):
    """CPU ids set in an NVML affinity mask (a sequence of 64-bit words)."""
    cpus = []
    for position, word in enumerate(words):
        word = int(word)
        bit = 0
        while word:
            if word & 1:
                cpus.append(position * word_bits + bit)
            word >>= 1
            bit += 1
    return cpus


def cores_of_cpus(cpus, topology, gpu_label='GPU'):
    """Slurm abstract core indices for a list of CPU ids.

    ``topology`` maps each online CPU id to ``(physical_package_id, core_id)``
    (sysfs ``/sys/devices/system/cpu/cpuN/topology``).  Slurm numbers cores
    0..n-1 across the node, socket by socket; the index of a core here is the
    rank of its ``(package, core_id)`` pair.  Hyperthread siblings map to the
    same core.
    """
    if not topology:
        raise ValueError('cannot map the CPUs of %s to cores: no CPU topology was read; set cores: false to leave Cores= out' % gpu_label)
    ranks = {}
    for pair in sorted(set(topology.values())):
        ranks[pair] = len(ranks)
    cores = set()
    for cpu in cpus:
        if cpu not in topology:
            raise ValueError(
                '%s is local to CPU %d, which the CPU topology does not list (known CPUs: %s); set cores: false to leave Cores= out'
                % (gpu_label, cpu, format_int_ranges(topology)))
        cores.add(ranks[topology[cpu]])
    return sorted(cores)


def _gpu_label(gpu):
    return 'GPU %d (%s, /dev/nvidia%d)' % (gpu['index'], gpu['name'], gpu['minor'])


MAX_SHARE_COUNT = 4294967295


def _check_count(option, value, what):
    # Ansible's int type lets a boolean through (True is an int): refused here
    if value is not None and (isinstance(value, bool) or not 1 <= value <= MAX_SHARE_COUNT):
        raise ValueError('%s %r must be a whole number from 1 to %d (%s)' % (option, value, MAX_SHARE_COUNT, what))


def _check_path(option, value):
    if not value.startswith('/') or '\0' in value or '\n' in value:
        raise ValueError('%s %r must be an absolute path (starting with "/")' % (option, value))


def check_options(params):
    """Check what slurm_gres_facts' argument spec cannot say before the node is read; raise ``ValueError`` naming the
    first bad option.

    ``params`` is the module's parameters, already checked by its argument spec (types, choices, ``shard_count``
    required with ``sharing: shard``): here the ranges, the paths being absolute, the ``type_map`` entries and
    ``autodetect: nvml`` needing ``slurm_plugin_dirs``.
    """
    _check_count('mps_count', params['mps_count'], 'Count= of each Name=mps line, shares of one GPU')
    _check_count('shard_count', params['shard_count'], 'Count= of each Name=shard line')
    merge_type_map(params['type_map'])
    _check_path('mig_minors_path', params['mig_minors_path'])
    _check_path('device_root', params['device_root'])
    for directory in params['slurm_plugin_dirs']:
        _check_path('slurm_plugin_dirs entry', directory)
    if params['autodetect'] == 'nvml' and not params['slurm_plugin_dirs']:
        raise ValueError('autodetect nvml needs slurm_plugin_dirs, the directories to look for gpu_nvml.so in; the list is empty')


def _check_nvml_plugin(autodetect, nvml_plugin, plugin_dirs):
    """Raise ValueError when autodetect nvml finds no gpu_nvml.so on the node."""
    if autodetect == 'nvml' and not nvml_plugin:
        raise ValueError(
            'autodetect nvml needs the Slurm gpu/nvml plugin (gpu_nvml.so), which is not in any of: %s; install it (Debian: the '
            'package slurm-wlm-nvml-plugin, in the contrib component; Ubuntu: the same package, in multiverse; SchedMD\'s slurm-smd '
            'packages: in slurm-smd when built with nvml.h present; the RHEL family: a Slurm built with NVML) '
            'or use autodetect: off' % ', '.join(plugin_dirs or ['(no directories given)']))


def _whole_gpu_entry(gpu, label, gpu_cores, parent, type_map, autodetect):
    """The GRES entry of a GPU outside MIG mode."""
    entry = {
        'name': 'gpu', 'type': gpu_type(gpu['name'], type_map), 'files': [parent], 'cores': gpu_cores,
        'count': 1, 'unique_id': gpu['uuid'], 'index': None, 'gpu_index': gpu['index'],
        'gpu_minor': gpu['minor'], 'model': gpu['name'], 'mig': None,
    }
    if autodetect == 'nvml' and entry['type'].lower() not in slurm_autodetect_type(gpu['name']):
        raise ValueError(
            'with autodetect nvml the type "%s" of %s must be part of the name Slurm detects ("%s"); change type_map'
            % (entry['type'], label, slurm_autodetect_type(gpu['name'])))
    return entry


def _mig_entries(gpu, label, gpu_cores, parent, mig_minors, mig_device_files, mig_minors_source, dev_dir):
    """The GRES entries of the MIG instances of a GPU in MIG mode."""
    mig_devices = sorted(gpu.get('mig_devices') or [], key=lambda m: m['index'])
    if not mig_devices:
        raise ValueError('%s is in MIG mode but has no MIG instances; create instances first or disable MIG mode' % label)
    if mig_minors is None:
        raise ValueError('%s is in MIG mode but no mig-minors table was read (%s)' % (label, mig_minors_source))
    entries = []
    for mig in mig_devices:
        gi_minor, ci_minor = instance_minors(mig_minors, gpu['minor'], mig['gi_id'], mig['ci_id'], mig_minors_source)
        profile = mig_profile_name(mig['slice_count'], mig['memory_mb'])
        gi_file = cap_device(gi_minor, dev_dir + '/nvidia-caps')
        ci_file = cap_device(ci_minor, dev_dir + '/nvidia-caps')
        files = [parent, gi_file, ci_file] if mig_device_files == 'multiple' else [ci_file]
        entries.append({
            'name': 'gpu', 'type': profile, 'files': files, 'cores': gpu_cores, 'count': 1,
            'unique_id': mig['uuid'], 'index': None, 'gpu_index': gpu['index'], 'gpu_minor': gpu['minor'],
            'model': gpu['name'],
            'mig': {'mig_index': mig['index'], 'gi_id': mig['gi_id'], 'ci_id': mig['ci_id'],
                    'gi_minor': gi_minor, 'ci_minor': ci_minor, 'profile': profile},
        })
    return entries


def _gpu_groups(node, type_map, mig_device_files, autodetect, cores, mig_minors_source, dev_dir, warnings):
    """([(type, [entry, ...])] in order of first appearance, the entries of whole GPUs); appends to warnings."""
    groups = []
    by_type = {}
    full_gpu_entries = []
    for gpu in sorted(node.get('gpus') or [], key=lambda g: g['index']):
        label = _gpu_label(gpu)
        if bool(gpu.get('mig_current')) != bool(gpu.get('mig_pending')):
            warnings.append('%s has a MIG mode change pending (now %s, after reset %s); the facts describe the current mode'
                            % (label, 'enabled' if gpu.get('mig_current') else 'disabled',
                               'enabled' if gpu.get('mig_pending') else 'disabled'))
        gpu_cores = None
        if cores and gpu.get('cpus'):
            gpu_cores = format_int_ranges(cores_of_cpus(gpu['cpus'], node.get('cpu_topology'), label))
        parent = '%s/nvidia%d' % (dev_dir, gpu['minor'])
        if not gpu.get('mig_current'):
            entry = _whole_gpu_entry(gpu, label, gpu_cores, parent, type_map, autodetect)
            full_gpu_entries.append(entry)
            _add(groups, by_type, entry)
            continue
        for entry in _mig_entries(gpu, label, gpu_cores, parent, node.get('mig_minors'), mig_device_files,
                                  mig_minors_source, dev_dir):
            _add(groups, by_type, entry)
    return groups, full_gpu_entries


def _check_device_files(gpu_entries, file_exists):
    """Raise ValueError when a device file the entries name does not exist."""
    paths = []
    for entry in gpu_entries:
        paths.extend(path for path in entry['files'] if path not in paths)
    missing = [path for path in paths if not file_exists(path)]
    if missing:
        raise ValueError('device files named by the GRES entries do not exist: %s' % ', '.join(missing))


def _sharing_entries(sharing, count, gpu_entries, full_gpu_entries, autodetect, mig_device_files, warnings):
    """The mps/shard entries, one per GPU outside MIG mode; appends to warnings."""
    if sharing == 'none':
        return []
    if not full_gpu_entries:
        raise ValueError('sharing %s needs a GPU outside MIG mode, but every GPU of this node is in MIG mode' % sharing)
    if autodetect == 'off' and mig_device_files == 'multiple' and len(full_gpu_entries) < len(gpu_entries):
        raise ValueError(
            'sharing %s cannot be combined with MIG instances written as MultipleFiles: with mps or shard configured, '
            'Slurm 22.05 splits every MultipleFiles record into one GPU per file (three per MIG instance); '
            'use mig_device_files: ci_only, or sharing: none' % sharing)
    mig_gpus = sorted(set(e['gpu_index'] for e in gpu_entries if e['mig'] is not None))
    if mig_gpus:
        # Slurm's mps/shard GRES count whole GPUs; MPS on a MIG instance is not offered (docs/gpu-sharing.md)
        warnings.append('sharing %s applies to the GPUs outside MIG mode only; the MIG instances of GPU %s are '
                        'scheduled whole (gpu:<profile>), not shared' % (sharing, ', '.join(str(i) for i in mig_gpus)))
    return [{
        'name': sharing, 'type': None, 'files': list(entry['files']), 'cores': None, 'count': count,
        'unique_id': None, 'index': None, 'gpu_index': entry['gpu_index'], 'gpu_minor': entry['gpu_minor'],
        'model': entry['model'], 'mig': None,
    } for entry in gpu_entries if entry['mig'] is None]


def build_gres(node, type_map=None, mig_device_files='multiple', sharing='none', mps_count=DEFAULT_MPS_COUNT,
               shard_count=None, autodetect='off', nvml_plugin=None, plugin_dirs=(), cores=True,
               mig_minors_source='mig-minors', dev_dir='/dev', file_exists=None):
    """Build the GRES facts for one node.

    ``node`` is plain data::

        {'gpus': [{'index': 0, 'minor': 0, 'name': 'NVIDIA A100 80GB PCIe',
                   'uuid': 'GPU-...', 'cpus': [0, 1, ...] or None,
                   'mig_current': False, 'mig_pending': False,
                   'mig_devices': [{'index': 0, 'uuid': 'MIG-...', 'gi_id': 7,
                                    'ci_id': 0, 'slice_count': 1,
                                    'memory_mb': 9728}, ...]}, ...],
         'mig_minors': <parse_mig_minors() result or None>,
         'cpu_topology': {cpu: (package, core_id)} or None}

    ``file_exists`` (a function of a path) checks the device files the entries
    name; slurmd refuses to start when one is missing.
    Returns ``(facts, warnings)``.
    """
    _check_nvml_plugin(autodetect, nvml_plugin, plugin_dirs)
    type_map = merge_type_map(type_map)

    warnings = []
    groups, full_gpu_entries = _gpu_groups(node, type_map, mig_device_files, autodetect, cores, mig_minors_source,
                                           dev_dir, warnings)
    gpu_entries = [entry for _type, members in groups for entry in members]
    if autodetect == 'off':
        for index, entry in enumerate(gpu_entries):
            entry['index'] = index

    if file_exists is not None:
        _check_device_files(gpu_entries, file_exists)

    count = mps_count if sharing == 'mps' else shard_count
    sharing_entries = _sharing_entries(sharing, count, gpu_entries, full_gpu_entries, autodetect, mig_device_files, warnings)

    lines = render_gres_conf(groups, sharing_entries, mig_device_files, autodetect)
    node_gres = ','.join(['gpu:%s:%d' % (gres_type, len(members)) for gres_type, members in groups] +
                         (['%s:%d' % (sharing, sum(e['count'] for e in sharing_entries))] if sharing_entries else []))
    gres_types = ','.join((['gpu'] if gpu_entries else []) + ([sharing] if sharing_entries else []))
    uuid_map = {}
    if autodetect == 'off':
        uuid_map = dict((str(entry['index']), entry['unique_id']) for entry in gpu_entries)
    facts = {
        'entries': gpu_entries + sharing_entries,
        'gres_conf_lines': lines,
        'gres_conf_comments': autodetect_comments(gpu_entries, nvml_plugin, node_gres) if autodetect == 'nvml' else [],
        'node_gres': node_gres,
        'gres_types': gres_types,
        'uuid_map': uuid_map,
        'uuid_map_content': render_uuid_map(gpu_entries) if autodetect == 'off' else '',
        'autodetect': autodetect,
        'nvml_plugin': nvml_plugin,
        'mig_device_files': mig_device_files,
    }
    return facts, warnings


def _add(groups, by_type, entry):
    if entry['type'] not in by_type:
        by_type[entry['type']] = []
        groups.append((entry['type'], by_type[entry['type']]))
    by_type[entry['type']].append(entry)


def _line(name, gres_type, key, files, cores=None, count=None):
    parts = ['Name=%s' % name]
    if gres_type:
        parts.append('Type=%s' % gres_type)
    if count is not None:
        parts.append('Count=%d' % count)
    parts.append('%s=%s' % (key, files))
    if cores:
        parts.append('Cores=%s' % cores)
    return ' '.join(parts)


def autodetect_comments(gpu_entries, nvml_plugin, node_gres):
    """The comment lines gres.conf carries with AutoDetect=nvml: what NVML shows now, one GPU entry each.

    slurmd detects the GPUs itself; the list makes gres.conf change when the
    node's GPUs or MIG instances change (the role restarts slurmd, which then
    detects them again) even where the counts of slurm.conf stay the same.
    """
    lines = ['AutoDetect=nvml (slurm_gres_autodetect): slurmd finds the GPUs itself when it starts, through',
             '%s; slurm.conf declares Gres=%s.' % (nvml_plugin, node_gres),
             'What NVML shows now (type, device files, cores); when this list changes the role restarts slurmd,',
             'which then detects them again:']
    for entry in gpu_entries:
        lines.append('  %s %s%s' % (entry['type'], ','.join(entry['files']), (' ' + entry['cores']) if entry['cores'] else ''))
    return lines


def render_gres_conf(groups, sharing_entries, mig_device_files='multiple', autodetect='off'):
    """gres.conf lines for the grouped GPU entries and the sharing entries.

    One line per full GPU (``File=``); per MIG instance one ``MultipleFiles=``
    line, or with ``ci_only`` one ``File=`` hostlist line for each run of
    instances with the same type and cores.  ``autodetect='nvml'`` replaces
    the GPU lines with ``AutoDetect=nvml``.
    """
    lines = []
    if autodetect == 'nvml':
        lines.append('AutoDetect=nvml')
    else:
        for gres_type, members in groups:
            run = []
            for entry in members:
                if entry['mig'] is None:
                    lines.append(_line('gpu', gres_type, 'File', entry['files'][0], entry['cores']))
                elif mig_device_files == 'multiple':
                    lines.append(_line('gpu', gres_type, 'MultipleFiles', ','.join(entry['files']), entry['cores']))
                else:
                    if run and run[-1]['cores'] != entry['cores']:
                        lines.append(_ci_run_line(gres_type, run))
                        run = []
                    run.append(entry)
            if run:
                lines.append(_ci_run_line(gres_type, run))
    for entry in sharing_entries:
        lines.append(_line(entry['name'], None, 'File', entry['files'][0], count=entry['count']))
    return lines


def _ci_run_line(gres_type, run):
    return _line('gpu', gres_type, 'File', compress([e['files'][0] for e in run]), run[0]['cores'])


def render_uuid_map(gpu_entries):
    """The GRES index -> UUID file: a header, then ``<index> <type> <uuid>`` lines."""
    body = ''.join('%d %s %s\n' % (e['index'], e['type'], e['unique_id']) for e in gpu_entries)
    return UUID_MAP_HEADER + body


# --- slurmd -G -------------------------------------------------------------

# Slurm 22.05 src/common/gres.c _log_gres_slurmd_conf(), printed by slurmd -G:
#   slurmd-gpu01: Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-15 CoreCnt=64 (null)
# and src/plugins/gres/common/gres_common.c print_gres_conf() (debug and
# autodetect messages; newer releases log this form only):
#   GRES[gpu] Type:a100 Count:1 Cores(64):0-15  Links:(null) Flags:HAS_FILE,HAS_TYPE,ENV_NVML File:/dev/nvidia0 UniqueId:(null)
_GRES_NAME_LINE = re.compile(r'(?:^|\s)Gres Name=(\S+) (.*)$')
_GRES_BRACKET_LINE = re.compile(
    r'GRES\[(?P<name>[^\]]+)\] Type:(?P<type>\S+) Count:(?P<count>\d+) Cores\((?P<cpu_cnt>-?\d+)\):(?P<cores>\S+)\s+'
    r'Links:(?P<links>\S+) Flags:(?P<flags>\S*) File:(?P<file>\S+)(?: UniqueId:(?P<unique_id>\S+))?\s*$')
_KEY_VALUE = re.compile(r'(\w+)=(\S+)')


def _null(value):
    return None if value in (None, '(null)', '') else value


def parse_slurmd_gres(text):
    """Parse ``slurmd -G`` output (stdout and stderr together).

    Returns ``{'records': [...], 'errors': [...], 'warnings': [...]}``; each
    record has ``name``, ``type``, ``count``, ``file`` (as printed), ``files``
    (expanded), ``cores``, ``links``, ``flags`` and ``unique_id`` (``None``
    where Slurm printed ``(null)`` or did not print the field), in the order
    slurmd printed them.
    """
    records, errors, warnings = [], [], []
    for raw in text.splitlines():
        line = raw.rstrip()
        match = _GRES_BRACKET_LINE.search(line)
        if match:
            record = {
                'name': match.group('name'), 'type': _null(match.group('type')), 'count': int(match.group('count')),
                'file': _null(match.group('file')), 'cores': _null(match.group('cores')),
                'links': _null(match.group('links')), 'flags': _null(match.group('flags')),
                'unique_id': _null(match.group('unique_id')),
            }
        else:
            match = _GRES_NAME_LINE.search(line)
            if not match:
                lowered = line.lower()
                if 'error:' in lowered or 'fatal:' in lowered:
                    errors.append(line)
                elif 'warning' in lowered:
                    warnings.append(line)
                continue
            fields = dict(_KEY_VALUE.findall(match.group(2)))
            if 'Count' not in fields:
                errors.append(line)
                continue
            record = {
                'name': match.group(1), 'type': _null(fields.get('Type')), 'count': int(fields['Count']),
                'file': _null(fields.get('File')), 'cores': _null(fields.get('Cores')),
                'links': _null(fields.get('Links')), 'flags': _null(fields.get('Flags')),
                'unique_id': _null(fields.get('UniqueId')),
            }
        record['files'] = expand(record['file']) if record['file'] else []
        records.append(record)
    return {'records': records, 'errors': errors, 'warnings': warnings}


def _units_from_records(records):
    """One comparable unit per GRES device: split File ranges, keep MultipleFiles together."""
    units = []
    for record in records:
        if record['count'] == 0:
            continue  # slurmd lists zero-count MPS/shard shadows of MIG devices
        cores = tuple(parse_int_ranges(record['cores'])) if record['cores'] else None
        if record['name'] != 'gpu':
            units.append((record['name'], None, tuple(record['files']), None, record['count']))
        elif len(record['files']) == record['count']:
            units.extend(('gpu', record['type'], (one,), cores, 1) for one in record['files'])
        else:
            units.append(('gpu', record['type'], tuple(record['files']), cores, record['count']))
    return units


def _units_from_entries(entries):
    units = []
    for entry in entries:
        cores = tuple(parse_int_ranges(entry['cores'])) if entry.get('cores') else None
        if entry['name'] == 'gpu':
            units.append(('gpu', entry['type'], tuple(entry['files']), cores, entry['count']))
        else:
            units.append((entry['name'], None, tuple(entry['files']), None, entry['count']))
    return units


def _unit_text(unit):
    name, gres_type, files, cores, count = unit
    text = '%s%s files=%s' % (name, ':' + gres_type if gres_type else '', ','.join(files))
    if cores is not None:
        text += ' cores=%s' % format_int_ranges(cores)
    if name != 'gpu' or count != 1:
        text += ' count=%d' % count
    return text


def compare_gres(entries, slurmd_output):
    """Compare the facts' ``entries`` with what ``slurmd -G`` printed.

    ``slurmd_output`` is the text or the :func:`parse_slurmd_gres` result.
    Returns ``{'equal', 'order_equal', 'missing', 'unexpected', 'errors'}``:
    ``missing`` are entries slurmd did not list, ``unexpected`` are devices
    slurmd listed that the facts do not have, ``order_equal`` says whether
    the gpu devices come in the same order (the GRES index order), and
    ``equal`` is true only when nothing is missing or unexpected, the order
    matches and slurmd logged no error.
    """
    parsed = parse_slurmd_gres(slurmd_output) if isinstance(slurmd_output, str) else slurmd_output
    expected = _units_from_entries(entries)
    actual = _units_from_records(parsed['records'])
    remaining = list(actual)
    missing = []
    for unit in expected:
        if unit in remaining:
            remaining.remove(unit)
        else:
            missing.append(_unit_text(unit))
    unexpected = [_unit_text(unit) for unit in remaining]
    order_equal = [u for u in expected if u[0] == 'gpu'] == [u for u in actual if u[0] == 'gpu']
    return {
        'equal': not missing and not unexpected and order_equal and not parsed['errors'],
        'order_equal': order_equal,
        'missing': missing,
        'unexpected': unexpected,
        'errors': list(parsed['errors']),
    }
