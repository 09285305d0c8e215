# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Plan a declarative MIG layout: validate first, then change as little as possible.

Pure functions, standard library only.  The module ``nvidia_mig`` reads the
node through NVML, builds the *GPU state* below, calls :func:`plan_node` and
applies the result; nothing here talks to a GPU.

GPU state (one dict per GPU, as read from NVML)::

    {"index": 0, "uuid": "GPU-...", "name": "NVIDIA A100-SXM4-80GB",
     "mig_capable": True, "mig_current": True, "mig_pending": True,
     "profiles": [                       # None: table unreadable (MIG mode off)
         {"name": "3g.40gb", "id": 9, "slices": 3, "instance_count": 2,
          "memory_mb": 40192, "placements": [[0, 4], [4, 4]],
          "ci_profiles": [               # None: no GI of this profile to ask
              {"name": "1c.3g.40gb", "id": 0, "slices": 1, "instance_count": 3,
               "placements": [[0, 1], [1, 1], [2, 1]]}, ...]}, ...],
     "instances": [
         {"gi_id": 2, "profile_id": 9, "start": 4, "size": 4,
          "compute_instances": [{"ci_id": 0, "profile": "3g.40gb", "profile_id": 2,
                                 "start": 0, "size": 3, "uuid": "MIG-..."}]}],
     "processes": [{"pid": 4242, "name": "python3", "gi_id": 2, "ci_id": 0}]}

``processes`` entries with ``gi_id`` None hold the whole GPU.

Wanted state (the module's ``gpus`` option, normalised)::

    [{"gpu": "all" | 3 | "GPU-...", "model": "A100" or None, "mig": True,
      "instances": [{"profile": "3g.40gb", "count": 1, "placement": 4 or None,
                     "compute_instances": ["1c.3g.40gb", "2c.3g.40gb"] or None}]}]

Semantics follow NVML: a GPU instance (GI) occupies the memory slices of its
placement (``start``, ``size``) and creation fails on overlap
(``nvmlDeviceGetGpuInstancePossiblePlacements_v2``); all GIs together use at
most the GPU's compute slices; a profile allows at most ``instance_count``
GIs.  A compute instance (CI) occupies compute slices of its GI the same way.
``compute_instances`` omitted means one CI spanning the whole GI (what
``nvidia-smi mig -cgi ... -C`` creates).

Every problem raises :class:`MigPlanError` with one sentence that names the
GPU (index and UUID), the bad value and what would be valid.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import SHAPES, mig_profiles, shape_instances


class MigPlanError(Exception):
    """The wanted MIG state cannot be applied; the message says why."""


def gpu_label(gpu):
    """``GPU 0 (GPU-..., NVIDIA A100-SXM4-80GB)`` -- how every message names a GPU."""
    return 'GPU %s (%s, %s)' % (gpu['index'], gpu['uuid'], gpu['name'])


def _span(start, size):
    return set(range(start, start + size))


def _placement_text(start, size):
    return '%d:%d' % (start, size)


def _proc_text(procs):
    return ', '.join('pid %s (%s)' % (p['pid'], p.get('name') or '?') for p in procs)


def _profile_by_name(gpu, name):
    for prof in gpu['profiles']:
        if prof['name'] == name:
            return prof
    return None


def _profile_by_id(gpu, profile_id):
    for prof in gpu['profiles'] or ():
        if prof['id'] == profile_id:
            return prof
    return None


def _total_slices(gpu):
    """Compute slices of the GPU: those of its largest GPU-instance profile."""
    return max(prof['slices'] for prof in gpu['profiles'])


# --------------------------------------------------------------------- request shape

_ENTRY_KEYS = ('gpu', 'model', 'mig', 'instances', 'shape')
_INSTANCE_KEYS = ('profile', 'count', 'placement', 'compute_instances')
_INDEX_TEXT = re.compile(r'^[0-9]+$')


def _show(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + '...'


def _is_whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_keys(where, value, allowed):
    if not isinstance(value, dict):
        raise MigPlanError('%s is %s (%s), expected a dict with the keys %s' % (where, _show(value), type(value).__name__, ', '.join(allowed)))
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        raise MigPlanError('%s has the unknown key%s %s; valid keys: %s' % (
            where, 's' if len(unknown) > 1 else '', ', '.join(unknown), ', '.join(allowed)))


def _check_instance(where, spec):
    _check_keys(where, spec, _INSTANCE_KEYS)
    profile = spec.get('profile')
    if not isinstance(profile, str) or not profile.strip() or profile != profile.strip() or ' ' in profile:
        raise MigPlanError('%s.profile is %s, expected a MIG profile name such as 1g.10gb or 3g.40gb (no spaces)' % (where, _show(profile)))
    count = spec.get('count', 1)
    if count is not None and (not _is_whole(count) or count < 1):
        raise MigPlanError('%s.count is %s, expected a whole number of 1 or more' % (where, _show(count)))
    placement = spec.get('placement')
    if placement is not None:
        if not _is_whole(placement) or placement < 0:
            raise MigPlanError('%s.placement is %s, expected a start memory slice (a whole number of 0 or more; '
                               'nvidia-smi mig -lgipp lists the valid ones)' % (where, _show(placement)))
        if count not in (None, 1):
            raise MigPlanError('%s.placement is %s with count %s; an explicit placement is for one instance (count 1)' % (
                where, placement, count))
    cis = spec.get('compute_instances')
    if cis is not None:
        if not isinstance(cis, (list, tuple)) or not cis:
            raise MigPlanError('%s.compute_instances is %s, expected a non-empty list of compute instance profiles such as '
                               '[1c.3g.40gb, 2c.3g.40gb], or leave it out for one compute instance spanning the GPU instance' % (where, _show(cis)))
        for pos, name in enumerate(cis):
            if not isinstance(name, str) or not name.strip() or ' ' in name.strip():
                raise MigPlanError('%s.compute_instances[%d] is %s, expected a compute instance profile name such as 1c.3g.40gb' % (
                    where, pos, _show(name)))


def container_problem(wanted):
    """What is wrong with the nesting of the ``gpus`` option (lists of dicts), or None.

    For the module to replace Ansible's own type errors on ``gpus`` (such as
    "dictionary requested, could not parse JSON or key=value"), which do
    not say which option or value is wrong.
    """
    if not isinstance(wanted, (list, tuple)):
        return 'gpus is %s, expected a list of GPU entries ({gpu: ..., instances: [...]})' % _show(wanted)
    for number, entry in enumerate(wanted):
        where = 'gpus[%d]' % number
        if not isinstance(entry, dict):
            return '%s is %s (%s), expected a dict with the keys %s' % (where, _show(entry), type(entry).__name__, ', '.join(_ENTRY_KEYS))
        instances = entry.get('instances')
        if instances is not None and not isinstance(instances, (list, tuple)):
            return '%s.instances is %s, expected a list of instances ({profile: ..., count: ...})' % (where, _show(instances))
        for pos, spec in enumerate(instances or ()):
            if not isinstance(spec, dict):
                return '%s.instances[%d] is %s (%s), expected a dict with the keys %s' % (
                    where, pos, _show(spec), type(spec).__name__, ', '.join(_INSTANCE_KEYS))
    return None


def check_request(wanted):
    """Check the shape of the ``gpus`` option before any GPU is read.

    Everything that does not depend on the GPUs: entry and instance keys,
    types, GPU selectors, counts of 1 or more, placements of 0 or more
    (with count 1), non-empty compute-instance lists, no instances with
    ``mig: false``.  The first problem raises :class:`MigPlanError` naming
    the option (``gpus[0].instances[1].count``), the value and what is
    valid; what depends on a GPU's profile table is checked by
    :func:`plan_node`, still before anything changes.
    """
    problem = container_problem(wanted)
    if problem:
        raise MigPlanError(problem)
    for number, entry in enumerate(wanted):
        where = 'gpus[%d]' % number
        _check_keys(where, entry, _ENTRY_KEYS)
        selector = entry.get('gpu', 'all')
        if _is_whole(selector):
            selector = str(selector)
        valid = isinstance(selector, str) and (
            selector == 'all' or bool(_INDEX_TEXT.match(selector.strip())) or (_is_uuid(selector) and len(selector.strip()) > 4))
        if not valid:
            raise MigPlanError('%s.gpu is %s, expected a GPU index (0, 1, ...), a GPU UUID (GPU-...) or "all"' % (where, _show(selector)))
        model = entry.get('model')
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise MigPlanError('%s.model is %s, expected part of a GPU name such as A100 or H100 80GB, or leave it out' % (where, _show(model)))
        mig = entry.get('mig', True)
        if not isinstance(mig, bool):
            # null too: it would read as false and destroy every instance of the GPU.
            raise MigPlanError('%s.mig is %s, expected true or false' % (where, _show(mig)))
        instances = entry.get('instances')
        shape = entry.get('shape')
        if shape is not None:
            if not isinstance(shape, str) or not shape.strip() or ' ' in shape:
                raise MigPlanError('%s.shape is %s, expected a layout shape (1g, 2g, 3g, 4g, 7g, balanced) or a MIG profile name such as '
                                   '1g.10gb' % (where, _show(shape)))
            if instances or mig is False:
                raise MigPlanError('%s: shape %s is given with %s; a shape stands for the instances, give one or the other' % (
                    where, shape, 'mig: false' if mig is False else 'instances'))
        if instances is None:
            continue
        if instances and mig is False:
            raise MigPlanError('%s: instances are given with mig: false; remove them or set mig: true' % where)
        for pos, spec in enumerate(instances):
            _check_instance('%s.instances[%d]' % (where, pos), spec)


# --------------------------------------------------------------------- selection

def _is_uuid(text):
    return isinstance(text, str) and text.upper().startswith('GPU-')


def select_gpus(gpus, wanted):
    """Map each GPU to the wanted entry that selects it.

    Returns a list of ``(gpu, entry, entry_number)`` in GPU index order.  An
    index out of range, an unknown UUID, a model mismatch on an explicitly
    named GPU, or a GPU selected twice raises :class:`MigPlanError`.
    """
    by_index = dict((gpu['index'], gpu) for gpu in gpus)
    chosen = {}
    for number, entry in enumerate(wanted):
        selector = entry.get('gpu', 'all')
        model = entry.get('model')
        if selector == 'all':
            # a size shape (all-balanced, all-1g, ...) is for the GPUs with MIG: "all" passes over the others (as the
            # per-model entries of those layouts did); a profile name (all-1g.10gb) selects every GPU, as before
            picked = [gpu for gpu in gpus if (not model or model.lower() in gpu['name'].lower())
                      and (entry.get('shape') not in SHAPES or gpu['mig_capable'])]
        else:
            if _is_uuid(selector):
                matches = [gpu for gpu in gpus if gpu['uuid'].lower() == selector.lower()]
                if not matches:
                    raise MigPlanError('gpus[%d]: no GPU has UUID %s; this node has %s' % (
                        number, selector, ', '.join(gpu['uuid'] for gpu in gpus) or 'no GPUs'))
            else:
                try:
                    index = int(selector)
                except (TypeError, ValueError):
                    raise MigPlanError('gpus[%d]: gpu %r is not a GPU index, a GPU UUID (GPU-...) or "all"' % (number, selector))
                if index not in by_index:
                    raise MigPlanError('gpus[%d]: GPU index %s is out of range; this node has GPU indices %s' % (
                        number, selector, ', '.join(str(i) for i in sorted(by_index)) or 'none'))
                matches = [by_index[index]]
            gpu = matches[0]
            if model and model.lower() not in gpu['name'].lower():
                raise MigPlanError('gpus[%d]: %s is not a %s GPU (model filter %r)' % (number, gpu_label(gpu), model, model))
            picked = [gpu]
        for gpu in picked:
            if gpu['index'] in chosen:
                raise MigPlanError('gpus[%d]: %s is already selected by gpus[%d]; select each GPU once' % (
                    number, gpu_label(gpu), chosen[gpu['index']][2]))
            chosen[gpu['index']] = (gpu, entry, number)
    return [chosen[index] for index in sorted(chosen)]


# --------------------------------------------------------------------- validation

_CI_NAME = re.compile(r'^(\d+)c\.(.+)$')


def ci_profile_choices(gpu, gi_prof):
    """Names of the CI profiles a GI of ``gi_prof`` offers, or None when unknown."""
    if gi_prof.get('ci_profiles') is None:
        return None
    return [ci['name'] for ci in gi_prof['ci_profiles']]


def _ci_slices(gi_prof, name):
    """Compute slices of CI profile ``name`` in a GI of ``gi_prof`` (table or ``<c>c.<gi>`` form)."""
    for ci in gi_prof.get('ci_profiles') or ():
        if ci['name'] == name:
            return ci['slices']
    if name == gi_prof['name']:
        return gi_prof['slices']
    match = _CI_NAME.match(name)
    if match and match.group(2) == gi_prof['name']:
        return int(match.group(1))
    return None


def _validate_cis(gpu, where, gi_prof, names):
    """Check a compute-instance split of one GI against the GI's CI table."""
    if not names:
        raise MigPlanError('%s: %s compute_instances is empty; give at least one profile (for example %s) or leave it out' % (
            gpu_label(gpu), where, gi_prof['name']))
    table = gi_prof.get('ci_profiles')
    if table is not None:
        valid = [ci['name'] for ci in table]
        for name in names:
            if name not in valid:
                raise MigPlanError('%s: %s compute instance profile %r is not offered by a %s GPU instance; valid: %s' % (
                    gpu_label(gpu), where, name, gi_prof['name'], ', '.join(valid)))
            limit = [ci['instance_count'] for ci in table if ci['name'] == name][0]
            if names.count(name) > limit:
                raise MigPlanError('%s: %s asks for %d x %s compute instances; a %s GPU instance holds at most %d' % (
                    gpu_label(gpu), where, names.count(name), name, gi_prof['name'], limit))
    else:
        for name in names:
            slices = _ci_slices(gi_prof, name)
            if slices is None or slices < 1 or slices > gi_prof['slices']:
                raise MigPlanError('%s: %s compute instance profile %r is not valid in a %s GPU instance; use <N>c.%s with N below %d, or %s' % (
                    gpu_label(gpu), where, name, gi_prof['name'], gi_prof['name'], gi_prof['slices'], gi_prof['name']))
    total = sum(_ci_slices(gi_prof, name) for name in names)
    if total > gi_prof['slices']:
        raise MigPlanError('%s: %s compute instances %s need %d compute slices; a %s GPU instance has %d' % (
            gpu_label(gpu), where, ', '.join(names), total, gi_prof['name'], gi_prof['slices']))


def expand_instances(gpu, entry):
    """Validate an entry's ``instances`` against the GPU's table; return one item per wanted GI.

    Item: ``{"profile": name, "profile_id": id, "size": mem slices,
    "start": fixed start or None, "cis": tuple of CI profile names}``.
    """
    items = []
    valid_names = [prof['name'] for prof in sorted(gpu['profiles'], key=lambda p: (
        p['slices'], p['placements'][0][1] if p['placements'] else 0, p.get('memory_mb', 0), p['name']))]
    for number, spec in enumerate(entry.get('instances') or ()):
        name = spec.get('profile')
        where = 'instances[%d]' % number
        prof = _profile_by_name(gpu, name)
        if prof is None:
            raise MigPlanError('%s: %s profile %r is not a MIG profile of this GPU; valid: %s' % (
                gpu_label(gpu), where, name, ', '.join(valid_names)))
        count = spec.get('count')
        if count is None:
            count = 1
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise MigPlanError('%s: %s count %r of %s is not valid; give a whole number of 1 or more' % (
                gpu_label(gpu), where, count, name))
        starts = [start for start, _size in prof['placements']]
        placement = spec.get('placement')
        if placement is not None:
            if isinstance(placement, bool) or not isinstance(placement, int) or placement not in starts:
                raise MigPlanError('%s: %s placement %r is not a valid start for %s; valid starts: %s' % (
                    gpu_label(gpu), where, placement, name, ', '.join(str(s) for s in starts)))
            if count != 1:
                raise MigPlanError('%s: %s gives placement %s with count %d; an explicit placement is for one instance (count 1)' % (
                    gpu_label(gpu), where, placement, count))
        cis = spec.get('compute_instances')
        if cis is None:
            cis = [name]
        else:
            _validate_cis(gpu, where, prof, list(cis))
        size = prof['placements'][0][1] if prof['placements'] else 0
        items.extend({'profile': name, 'profile_id': prof['id'], 'size': size, 'start': placement,
                      'cis': tuple(sorted(cis))} for _copy in range(count))
    # Profile limits, compute slices, explicit overlaps, and whether any placement exists at all.
    for prof in gpu['profiles']:
        wanted = sum(1 for item in items if item['profile_id'] == prof['id'])
        if wanted > prof['instance_count']:
            raise MigPlanError('%s: too many %s instances: %d wanted, this GPU allows at most %d' % (
                gpu_label(gpu), prof['name'], wanted, prof['instance_count']))
    needed = sum(_profile_by_id(gpu, item['profile_id'])['slices'] for item in items)
    if needed > _total_slices(gpu):
        raise MigPlanError('%s: the instances %s need %d compute slices; this GPU has %d' % (
            gpu_label(gpu), layout_text(items), needed, _total_slices(gpu)))
    fixed = [item for item in items if item['start'] is not None]
    for first, second in itertools.combinations(fixed, 2):
        if _span(first['start'], first['size']) & _span(second['start'], second['size']):
            raise MigPlanError('%s: placements %s of %s and %s of %s overlap' % (
                gpu_label(gpu), _placement_text(first['start'], first['size']), first['profile'],
                _placement_text(second['start'], second['size']), second['profile']))
    if _fit_gis(gpu, items, set()) is None:
        raise MigPlanError('%s: the instances %s cannot be placed together on this GPU (no combination of valid placements fits)' % (
            gpu_label(gpu), layout_text(items)))
    return items


def layout_text(items):
    """``3g.40gb, 2 x 1g.10gb`` for a list of wanted items or instances."""
    counts = {}
    order = []
    for item in items:
        name = item['profile']
        if name not in counts:
            order.append(name)
            counts[name] = 0
        counts[name] += 1
    return ', '.join(name if counts[name] == 1 else '%d x %s' % (counts[name], name) for name in order) or 'none'


# --------------------------------------------------------------------- placement search

def _fit(items, occupied, options, score=None):
    """Place ``items`` without overlap; ``options(item)`` lists its (start, size) choices.

    Exact backtracking over at most eight slots: most constrained items
    first, identical items in increasing start order (no permutations of
    the same layout).  Without ``score`` the first solution is returned;
    with it every solution is scored (``score(placements)``, lower is
    better) and the best returned.  Placements are in ``items`` order;
    None when nothing fits.
    """
    order = sorted(range(len(items)), key=lambda i: (len(options(items[i])), -items[i].get('size', 0), i))
    result = [None] * len(items)
    best = []

    def key_of(item):
        return (item.get('profile_id'), item.get('profile'), item.get('start'))

    def step(pos, used, last_start):
        if pos == len(order):
            if score is None:
                best.append(list(result))
                return True
            value = score(result)
            if not best or value < best[0][0]:
                best[:] = [(value, list(result))]
            return False
        item = items[order[pos]]
        floor = last_start.get(key_of(item), -1)
        for start, size in options(item):
            if start <= floor:
                continue
            span = _span(start, size)
            if span & used:
                continue
            result[order[pos]] = (start, size)
            saved = last_start.get(key_of(item))
            last_start[key_of(item)] = start
            if step(pos + 1, used | span, last_start):
                return True
            if saved is None:
                del last_start[key_of(item)]
            else:
                last_start[key_of(item)] = saved
        return False

    step(0, set(occupied), {})
    if not best:
        return None
    return best[0] if score is None else best[0][1]


def _blocked(gpu, used):
    """How many placements (of any profile) overlap the memory slices ``used``."""
    return sum(1 for prof in gpu['profiles'] for start, size in prof['placements'] if _span(start, size) & used)


def _fit_gis(gpu, items, occupied, best=False):
    """Placements for new GIs next to ``occupied`` memory slices.

    With ``best`` the placements keep the most room: they block the fewest
    placements of any profile (what the driver itself prefers), then the
    lowest starts.
    """
    def options(item):
        prof = _profile_by_id(gpu, item['profile_id'])
        return [(start, size) for start, size in prof['placements'] if item['start'] is None or start == item['start']]

    def score(placements):
        used = set(occupied)
        for start, size in placements:
            used |= _span(start, size)
        return (_blocked(gpu, used), sorted(placements))
    return _fit(items, occupied, options, score if best else None)


def fit_cis(gi_prof, kept, names):
    """Placements for new CIs ``names`` next to kept CIs (dicts with start/size), or None
    when they do not fit or a name is not in the table.

    Without a CI table the driver's own placement is trusted (returns
    ``None`` placements for each name).
    """
    table = gi_prof.get('ci_profiles')
    if table is None:
        return [None] * len(names)
    by_name = dict((ci['name'], ci) for ci in table)
    if any(name not in by_name for name in names):
        return None
    items = [{'profile': name, 'size': by_name[name]['slices']} for name in names]
    occupied = set()
    for ci in kept:
        occupied |= _span(ci['start'], ci['size'])
    return _fit(items, occupied, lambda item: [tuple(p) for p in by_name[item['profile']]['placements']])


# --------------------------------------------------------------------- planning one GPU

def _busy(gpu, gi_id, ci_id=None):
    return [p for p in gpu['processes'] if p.get('gi_id') == gi_id and gi_id is not None and (ci_id is None or p.get('ci_id') == ci_id)]


def _ci_names(gi):
    return tuple(sorted(ci['profile'] for ci in gi['compute_instances']))


def _instance_view(gpu, gi):
    prof = _profile_by_id(gpu, gi['profile_id'])
    return {'gi_id': gi['gi_id'], 'profile': prof['name'] if prof else 'profile id %s' % gi['profile_id'],
            'profile_id': gi['profile_id'], 'start': gi['start'], 'size': gi['size'],
            'compute_instances': [dict(ci) for ci in gi['compute_instances']]}


def _match(current, items, keep):
    """Assign kept GIs (indices into ``current``) to wanted items; None when impossible."""
    assignment = {}
    free = set(range(len(items)))
    # GIs sitting on an explicit placement must take that item.
    for gi_pos in keep:
        gi = current[gi_pos]
        fixed = [i for i in free if items[i]['start'] == gi['start'] and items[i]['profile_id'] == gi['profile_id']]
        if fixed:
            assignment[gi_pos] = fixed[0]
            free.discard(fixed[0])
    for exact in (True, False):
        for gi_pos in keep:
            if gi_pos in assignment:
                continue
            gi = current[gi_pos]
            for i in sorted(free):
                item = items[i]
                if item['profile_id'] != gi['profile_id'] or item['start'] is not None:
                    continue
                if exact and item['cis'] != _ci_names(gi):
                    continue
                assignment[gi_pos] = i
                free.discard(i)
                break
    if len(assignment) != len(keep):
        return None
    return assignment


def _search(gpu, current, items):
    """Best (keep-assignment, placements) for ``items`` given ``current`` GIs.

    Tries every subset of the GIs that could be kept (at most seven on
    today's GPUs: 128 subsets) and scores them: keep GIs with processes
    first, then as many GIs as possible, then as many unchanged CI splits
    as possible, then the placements that leave the most room for later
    instances, then the lowest placements.
    """
    candidates = [pos for pos, gi in enumerate(current)
                  if any(item['profile_id'] == gi['profile_id'] and item['start'] in (None, gi['start']) for item in items)]
    best = None
    for size in range(len(candidates), -1, -1):
        for keep in itertools.combinations(candidates, size):
            assignment = _match(current, items, keep)
            if assignment is None:
                continue
            occupied = set()
            for pos in keep:
                occupied |= _span(current[pos]['start'], current[pos]['size'])
            rest = [i for i in range(len(items)) if i not in assignment.values()]
            placed = _fit_gis(gpu, [items[i] for i in rest], occupied, best=True)
            if placed is None:
                continue
            used = set(occupied)
            for start, size in placed:
                used |= _span(start, size)
            score = (sum(1 for pos in keep if _busy(gpu, current[pos]['gi_id'])),
                     len(keep),
                     sum(1 for pos, i in assignment.items() if items[i]['cis'] == _ci_names(current[pos])),
                     -_blocked(gpu, used),
                     tuple(-start for start, _size in sorted(placed)))
            if best is None or score > best[0]:
                best = (score, assignment, dict(zip(rest, placed)))
    # The empty keep set always fits: expand_instances() checked the items fit an empty GPU.
    return best[1], best[2]


def _plan_cis(gpu, gi, gi_prof, wanted_names, force, refusals):
    """CI changes inside a kept GI: (destroy list, create list of (name, start or None))."""
    current = list(gi['compute_instances'])
    wanted = list(wanted_names)
    if _ci_names(gi) == tuple(sorted(wanted)):
        return [], []
    # Keep CIs whose profile is still wanted, busy ones first.
    current.sort(key=lambda ci: (not _busy(gpu, gi['gi_id'], ci['ci_id']), ci['ci_id']))
    kept, remaining = [], list(wanted)
    for ci in current:
        if ci['profile'] in remaining:
            remaining.remove(ci['profile'])
            kept.append(ci)
    placed = fit_cis(gi_prof, kept, remaining)
    if placed is None:
        kept, remaining = [], list(wanted)
        placed = fit_cis(gi_prof, [], remaining) or [None] * len(remaining)
    destroy = [ci for ci in gi['compute_instances'] if ci not in kept]
    for ci in destroy:
        procs = _busy(gpu, gi['gi_id'], ci['ci_id'])
        if procs and not force:
            refusals.append('%s: refusing to destroy compute instance %d of GPU instance %d (%s) used by %s; set force to destroy it anyway' % (
                gpu_label(gpu), ci['ci_id'], gi['gi_id'], ci['profile'], _proc_text(procs)))
    create = [(name, None if pos is None else pos[0]) for name, pos in zip(remaining, placed)]
    return [{'gi_id': gi['gi_id'], 'ci_id': ci['ci_id'], 'profile': ci['profile'], 'profile_id': ci['profile_id']} for ci in destroy], create


def _shaped(gpu, entry, label):
    """``entry`` with the instances of its ``shape`` (``catalogue._gpus.shape_instances`` on this GPU's own table); as
    given without a shape or without a table yet (MIG mode off, model unknown: planned again once the mode is on)."""
    shape = entry.get('shape')
    if not shape or not gpu['mig_capable'] or gpu['profiles'] is None:
        return entry
    try:
        return dict(entry, instances=shape_instances(gpu['profiles'], shape))
    except ValueError as exc:
        raise MigPlanError('%s: %s' % (label, exc))


def plan_gpu(gpu, entry, force=False):
    """Plan one GPU. Returns the plan dict (see :func:`plan_node`)."""
    label = gpu_label(gpu)
    want_mig = bool(entry.get('mig', True))
    entry = _shaped(gpu, entry, label)
    instances = entry.get('instances') or []
    plan = {'index': gpu['index'], 'uuid': gpu['uuid'], 'name': gpu['name'], 'set_mode': None, 'deferred': False,
            'destroy_gis': [], 'destroy_cis': [], 'create_gis': [], 'create_cis': [], 'keep': [], 'refusals': []}
    gpu_procs = list(gpu['processes'])
    if not gpu['mig_capable']:
        if want_mig:
            raise MigPlanError('%s does not support MIG; set mig: false for it or select MIG GPUs with the model filter' % label)
        plan['changed'] = False
        return plan
    if not want_mig and instances:
        raise MigPlanError('%s: instances are given with mig: false; remove them or set mig: true' % label)
    current = list(gpu['instances'])
    # Instances can only be made while MIG mode is on; with it off they are
    # validated now (when a table is known) and created after the mode change.
    plan['deferred'] = bool(want_mig and not gpu['mig_current'] and (instances or entry.get('shape')))
    items = []
    if want_mig and gpu['profiles'] is not None:
        items = expand_instances(gpu, entry)
    if gpu['mig_pending'] != want_mig:
        plan['set_mode'] = want_mig
        if gpu_procs and not force and gpu['mig_current'] != want_mig:
            plan['refusals'].append('%s: refusing to %s MIG mode while processes use the GPU: %s; stop them or set force' % (
                label, 'enable' if want_mig else 'disable', _proc_text(gpu_procs)))
    keep, placed, destroy = {}, {}, []
    if not want_mig:
        destroy = current
    elif gpu['mig_current'] and gpu['profiles'] is not None:
        keep, placed = _search(gpu, current, items)
        destroy = [gi for pos, gi in enumerate(current) if pos not in keep]
    for gi in destroy:
        view = _instance_view(gpu, gi)
        plan['destroy_gis'].append(view)
        procs = _busy(gpu, gi['gi_id'])
        if procs and not force:
            plan['refusals'].append('%s: refusing to destroy GPU instance %d (%s at %s) used by %s; set force to destroy it anyway' % (
                label, gi['gi_id'], view['profile'], _placement_text(gi['start'], gi['size']), _proc_text(procs)))
    for pos, i in sorted(keep.items(), key=lambda kv: current[kv[0]]['gi_id']):
        gi = current[pos]
        plan['keep'].append(gi['gi_id'])
        gi_prof = _profile_by_id(gpu, gi['profile_id'])
        destroy_cis, create_cis = _plan_cis(gpu, gi, gi_prof, items[i]['cis'], force, plan['refusals'])
        plan['destroy_cis'].extend(destroy_cis)
        if create_cis:
            plan['create_cis'].append({'gi_id': gi['gi_id'], 'profile': gi_prof['name'], 'compute_instances': create_cis})
    for i in sorted(placed, key=lambda n: placed[n]):
        item = items[i]
        start, size = placed[i]
        gi_prof = _profile_by_id(gpu, item['profile_id'])
        # Every split that passes _validate_cis() fits an empty GI on the real tables
        # (A100, H100, H200); should one not, the driver places the CIs itself.
        cis = fit_cis(gi_prof, [], list(item['cis'])) or [None] * len(item['cis'])
        plan['create_gis'].append({'profile': item['profile'], 'profile_id': item['profile_id'], 'start': start, 'size': size,
                                   'compute_instances': [(name, None if pos is None else pos[0]) for name, pos in zip(item['cis'], cis)]})
    plan['changed'] = bool(plan['set_mode'] is not None or plan['destroy_gis'] or plan['destroy_cis']
                           or plan['create_gis'] or plan['create_cis'])
    return plan


def plan_node(gpus, wanted, force=False):
    """Validate the whole wanted state, then plan every selected GPU.

    Returns a list of per-GPU plans::

        {"index", "uuid", "name", "set_mode": None | bool, "deferred": bool,
         "keep": [gi ids], "destroy_gis": [instance views], "destroy_cis": [...],
         "create_gis": [{"profile", "profile_id", "start", "size",
                         "compute_instances": [(ci profile, start or None)]}],
         "create_cis": [{"gi_id", "profile", "compute_instances": [...]}],
         "refusals": [], "changed": bool}

    ``deferred`` means MIG mode is off and the profile table cannot be read
    yet: the instances are planned again once MIG mode is on.  Nothing is
    returned until every GPU validated; the first problem raises
    :class:`MigPlanError`, and so does any refusal (a busy instance or GPU
    that would have to change while ``force`` is off).
    """
    _complete_tables(gpus)
    plans = [plan_gpu(gpu, entry, force) for gpu, entry, _number in select_gpus(gpus, wanted)]
    for plan in plans:
        if plan['refusals']:
            raise MigPlanError(plan['refusals'][0])
    return plans


def _complete_tables(gpus):
    """Lend tables between GPUs of the same model.

    A GPU with MIG mode off cannot report its profiles; another GPU of the
    same model that can lends its table, so the request is validated before
    anything changes.  Without such a GPU, the MIG User Guide's table of
    the model is used when the catalogue has one (``catalogue._gpus.mig_profiles``).
    CI tables are lent the same way between GI profiles.
    """
    by_name = {}
    for gpu in gpus:
        if gpu.get('profiles'):
            table = by_name.setdefault(gpu['name'], {})
            for prof in gpu['profiles']:
                if prof.get('ci_profiles') is not None:
                    table[prof['id']] = prof['ci_profiles']
    donors = dict((gpu['name'], gpu['profiles']) for gpu in gpus if gpu.get('profiles'))
    for gpu in gpus:
        if gpu.get('mig_capable') and gpu.get('profiles') is None:
            if gpu['name'] in donors:
                gpu['profiles'] = [dict(prof) for prof in donors[gpu['name']]]
            else:
                gpu['profiles'] = mig_profiles(gpu['name'])
        for prof in gpu.get('profiles') or ():
            if prof.get('ci_profiles') is None and prof['id'] in by_name.get(gpu['name'], {}):
                prof['ci_profiles'] = by_name[gpu['name']][prof['id']]


# --------------------------------------------------------------------- reporting

def describe_layout(gpu):
    """Before/after text of a GPU for the diff: mode and instances by placement."""
    if not gpu.get('mig_capable'):
        return 'MIG not supported'
    mode = 'enabled' if gpu['mig_current'] else 'disabled'
    if gpu['mig_pending'] != gpu['mig_current']:
        mode += ' (pending %s)' % ('enabled' if gpu['mig_pending'] else 'disabled')
    parts = []
    for gi in sorted(gpu['instances'], key=lambda g: g['start']):
        prof = _profile_by_id(gpu, gi['profile_id'])
        name = prof['name'] if prof else 'profile id %s' % gi['profile_id']
        cis = _ci_names(gi)
        text = '%s@%s' % (name, _placement_text(gi['start'], gi['size']))
        if cis != (name,):
            text += '[%s]' % ' '.join(cis) if cis else '[no compute instance]'
        parts.append(text)
    return 'MIG %s: %s' % (mode, ', '.join(parts) if parts else 'no instances')


def plan_actions(plan):
    """Human-readable action lines of one GPU plan, in apply order."""
    label = 'GPU %s' % plan['index']
    lines = []
    if plan['set_mode'] is not None:
        lines.append('%s: %s MIG mode' % (label, 'enable' if plan['set_mode'] else 'disable'))
    for ci in plan['destroy_cis']:
        lines.append('%s: destroy compute instance %d (%s) of GPU instance %d' % (label, ci['ci_id'], ci['profile'], ci['gi_id']))
    for gi in plan['destroy_gis']:
        lines.append('%s: destroy GPU instance %d (%s at %s)' % (label, gi['gi_id'], gi['profile'], _placement_text(gi['start'], gi['size'])))
    for gi in plan['create_gis']:
        lines.append('%s: create GPU instance %s at %s with compute instances %s' % (
            label, gi['profile'], _placement_text(gi['start'], gi['size']), ', '.join(name for name, _start in gi['compute_instances'])))
    for group in plan['create_cis']:
        lines.append('%s: create compute instances %s in GPU instance %d' % (
            label, ', '.join(name for name, _start in group['compute_instances']), group['gi_id']))
    if plan['deferred']:
        lines.append('%s: create the instances once MIG mode is on (profile table unreadable while MIG is off)' % label)
    return lines


def recreate_all_counts(gpu, items):
    """(destroyed, created) GPU instances of the "recreate every instance of a changed GPU" strategy.

    mig-parted's behaviour: a GPU whose layout differs loses all its
    instances and gets the wanted ones created from scratch; a GPU whose
    layout is the same (same profiles, same CI splits, explicit placements
    honoured) is left alone.
    """
    current = sorted((gi['profile_id'], _ci_names(gi)) for gi in gpu['instances'])
    wanted = sorted((item['profile_id'], item['cis']) for item in items)
    placed = set((gi['profile_id'], gi['start']) for gi in gpu['instances'])
    if current == wanted and all((item['profile_id'], item['start']) in placed for item in items if item['start'] is not None):
        return 0, 0
    return len(gpu['instances']), len(items)


def predicted_state(gpu, plan):
    """The GPU state after ``plan`` (for check mode's diff); new instances have ``gi_id`` None."""
    after = dict(gpu)
    gone = set(gi['gi_id'] for gi in plan['destroy_gis'])
    gone_cis = set((ci['gi_id'], ci['ci_id']) for ci in plan['destroy_cis'])
    instances = []
    for gi in gpu['instances']:
        if gi['gi_id'] in gone:
            continue
        kept = dict(gi)
        kept['compute_instances'] = [ci for ci in gi['compute_instances'] if (gi['gi_id'], ci['ci_id']) not in gone_cis]
        for group in plan['create_cis']:
            if group['gi_id'] == gi['gi_id']:
                kept['compute_instances'] += [{'ci_id': None, 'profile': name, 'start': start} for name, start in group['compute_instances']]
        instances.append(kept)
    for new in plan['create_gis']:
        instances.append({'gi_id': None, 'profile_id': new['profile_id'], 'start': new['start'], 'size': new['size'],
                          'compute_instances': [{'ci_id': None, 'profile': name, 'start': start} for name, start in new['compute_instances']]})
    after['instances'] = instances
    if plan['set_mode'] is not None:
        after['mig_pending'] = plan['set_mode']
        if not gpu['processes']:
            after['mig_current'] = plan['set_mode']
    return after
