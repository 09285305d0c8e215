# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test oracle for the MIG planner: the exhaustive optimum, random transitions, and a simulator check.

Shared by ``benchmarks/mig_transitions.py`` and
``test_mig_plan_optimum.py``; not part of the collection's plugins.

The optimum is computed without any of the planner's code:

* :func:`final_layouts` lists every layout (set of ``(profile id, start)``)
  that realises the wanted instances with valid placements of the GPU's
  profile table, by plain enumeration (combinations of starts per profile,
  rejecting overlaps);
* :func:`optimum` tries every subset of the existing GPU instances to keep
  and accepts it when some final layout contains all of them at their
  placements (a valid completion); the optimum keeps the most.

Compute-instance splits do not enter the count: a kept GPU instance can
always be re-split (its compute instances are destroyed and created inside
it), so the count of GPU instances destroyed is decided by placements alone.

Random transitions are built with the simulator's own driver operations
(``nvmlsim.node``), so every *from* layout is one the simulated driver
accepts, and :func:`apply_in_simulator` replays a plan through the same
operations: a placement the driver would refuse raises there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import itertools

from nvmlsim import models, node

MIG_MODELS = tuple(key for key in sorted(models.MODELS) if models.MODELS[key].mig_capable)


# --------------------------------------------------------------------- the optimum

def _span(start, size):
    return set(range(start, start + size))


def final_layouts(gpu, instances):
    """Every final layout for the wanted ``instances`` (the module's option format) on ``gpu``.

    A layout is a frozenset of ``(profile_id, start)``.  Respects each
    profile's valid starts, its instance count, the compute slices of the
    GPU, explicit placements, and no memory-slice overlap.
    """
    by_name = dict((prof['name'], prof) for prof in gpu['profiles'])
    free = {}
    fixed = {}
    for spec in instances:
        prof = by_name[spec['profile']]
        count = spec.get('count') or 1
        if spec.get('placement') is not None:
            fixed.setdefault(prof['id'], []).extend([spec['placement']] * count)
        else:
            free[prof['id']] = free.get(prof['id'], 0) + count
    profiles = dict((prof['id'], prof) for prof in gpu['profiles'])
    wanted_ids = sorted(set(free) | set(fixed))
    slices = sum(profiles[pid]['slices'] * (free.get(pid, 0) + len(fixed.get(pid, ()))) for pid in wanted_ids)
    if slices > max(prof['slices'] for prof in gpu['profiles']):
        return []
    layouts = []

    def walk(pos, used, chosen):
        if pos == len(wanted_ids):
            layouts.append(frozenset(chosen))
            return
        pid = wanted_ids[pos]
        prof = profiles[pid]
        pinned = fixed.get(pid, [])
        if free.get(pid, 0) + len(pinned) > prof['instance_count']:
            return
        starts = [start for start, _size in prof['placements']]
        if any(start not in starts for start in pinned) or len(set(pinned)) != len(pinned):
            return
        others = [start for start in starts if start not in pinned]
        size = prof['placements'][0][1]
        for combo in itertools.combinations(others, free.get(pid, 0)):
            taken = set(used)
            ok = True
            for start in list(pinned) + list(combo):
                span = _span(start, size)
                if span & taken:
                    ok = False
                    break
                taken |= span
            if ok:
                walk(pos + 1, taken, chosen + [(pid, start) for start in list(pinned) + list(combo)])

    walk(0, set(), [])
    return layouts


def optimum(gpu, instances, busy=()):
    """The fewest GPU instances to destroy, by trying every subset of the existing ones to keep.

    Returns ``{"destroyed": n, "busy_kept": b, "keep_sets": [frozenset of gi ids, ...]}``
    where ``keep_sets`` are all the optimal subsets, or None when the wanted
    layout has no valid placement at all.  With ``busy`` (GI ids that run
    processes) the optimum keeps as many busy GIs as possible first, then
    as many GIs as possible: what a planner must do to avoid destroying work.
    """
    layouts = final_layouts(gpu, instances)
    if not layouts:
        return None
    current = [(gi['gi_id'], (gi['profile_id'], gi['start'])) for gi in gpu['instances']]
    best = None
    keep_sets = []
    for size in range(len(current), -1, -1):
        for subset in itertools.combinations(current, size):
            keys = frozenset(key for _gi_id, key in subset)
            if not any(keys <= layout for layout in layouts):
                continue
            score = (sum(1 for gi_id, _key in subset if gi_id in busy), size)
            ids = frozenset(gi_id for gi_id, _key in subset)
            if best is None or score > best:
                best, keep_sets = score, [ids]
            elif score == best:
                keep_sets.append(ids)
    return {'destroyed': len(current) - best[1], 'busy_kept': best[0], 'keep_sets': keep_sets}


# --------------------------------------------------------------------- simulated GPUs

def sim_gpu(model_key, index=0):
    """An empty simulated GPU in MIG mode (the dict ``nvmlsim.node`` works on)."""
    return {'index': index, 'minor': index, 'model': model_key, 'uuid': 'GPU-%08d-0000-0000-0000-%012d' % (index, index),
            'mig_current': node.MIG_ENABLE, 'mig_pending': node.MIG_ENABLE, 'gpu_instances': [], 'processes': []}


def _ci_table(model, gi_prof):
    return [{'name': ci.name[4:], 'id': ci.profile_id, 'slices': ci.slices, 'instance_count': ci.instances,
             'placements': [[start, ci.size] for start in ci.starts]} for ci in models.ci_profiles(model, gi_prof)]


def planner_state(gpu):
    """The planner's GPU state (what ``nvidia_mig`` reads through NVML) of a simulated GPU."""
    model = node.model_of(gpu)
    profiles = []
    for prof in model.profiles:
        profiles.append({'name': prof.name, 'id': prof.profile_id, 'slices': prof.slices, 'instance_count': prof.instances,
                         'memory_mb': prof.memory_mib, 'placements': [[start, prof.mem_slices] for start in prof.starts],
                         'ci_profiles': _ci_table(model, prof)})
    instances = []
    for gi in sorted(gpu['gpu_instances'], key=lambda g: g['id']):
        gi_prof = model.profile_by_id(gi['profile_id'])
        names = dict((ci.profile_id, ci.name[4:]) for ci in models.ci_profiles(model, gi_prof))
        instances.append({'gi_id': gi['id'], 'profile_id': gi['profile_id'], 'start': gi['start'], 'size': gi['size'],
                          'compute_instances': [{'ci_id': ci['id'], 'profile': names[ci['profile_id']], 'profile_id': ci['profile_id'],
                                                 'start': ci['start'], 'size': ci['size'], 'uuid': ci['uuid']}
                                                for ci in sorted(gi['compute_instances'], key=lambda c: c['id'])]})
    return {'index': gpu['index'], 'uuid': gpu['uuid'], 'name': model.name, 'mig_capable': True, 'mig_current': True,
            'mig_pending': True, 'profiles': profiles, 'instances': instances,
            'processes': [{'pid': p['pid'], 'name': p.get('name'), 'gi_id': p.get('gi'), 'ci_id': p.get('ci')} for p in gpu['processes']]}


def _ci_id_by_name(gpu, gi, name):
    model = node.model_of(gpu)
    for ci in models.ci_profiles(model, model.profile_by_id(gi['profile_id'])):
        if ci.name[4:] == name:
            return ci.profile_id
    raise AssertionError('no compute instance profile %s in %s' % (name, gi))


def _random_split(gpu, gi, rng):
    """Random compute instances filling part or all of ``gi`` (at least one)."""
    model = node.model_of(gpu)
    table = models.ci_profiles(model, model.profile_by_id(gi['profile_id']))
    if rng.random() < 0.6:
        node.create_compute_instance(gpu, gi['id'], table[-1].profile_id)  # the full-GI compute instance
        return
    while True:
        room = [ci for ci in table if node.remaining_ci_capacity(gpu, gi, ci) > 0]
        if not room:
            return
        node.create_compute_instance(gpu, gi['id'], rng.choice(room).profile_id)
        if gi['compute_instances'] and rng.random() < 0.3:
            return


def random_layout(gpu, rng, stop=0.12):
    """Add random GPU instances at random free placements until full (or, each step, with chance ``stop``)."""
    model = node.model_of(gpu)
    while True:
        choices = [(prof, start) for prof in model.profiles if node.remaining_gi_capacity(gpu, prof) > 0
                   for start in node.free_starts(gpu, prof)]
        if not choices or (gpu['gpu_instances'] and rng.random() < stop):
            return gpu
        prof, start = rng.choice(choices)
        gi = node.create_gpu_instance(gpu, prof.profile_id, start=start)
        _random_split(gpu, gi, rng)


def wanted_of(gpu, rng, pin=0.2, split=0.5):
    """The module's ``instances`` option describing the layout of ``gpu``.

    Each instance is pinned to its placement with chance ``pin``; a
    non-default compute-instance split is kept with chance ``split``;
    the rest are grouped into counts.
    """
    state = planner_state(gpu)
    names = dict((prof['id'], prof['name']) for prof in state['profiles'])
    specs = []
    groups = {}
    for gi in state['instances']:
        name = names[gi['profile_id']]
        cis = sorted(ci['profile'] for ci in gi['compute_instances'])
        cis = cis if cis != [name] and cis and rng.random() < split else None
        if rng.random() < pin:
            specs.append({'profile': name, 'count': 1, 'placement': gi['start'], 'compute_instances': cis})
        else:
            key = (name, tuple(cis) if cis else None)
            groups[key] = groups.get(key, 0) + 1
    for (name, cis), count in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or ())):
        specs.append({'profile': name, 'count': count, 'placement': None, 'compute_instances': list(cis) if cis else None})
    rng.shuffle(specs)
    return specs


def random_transition(model_key, rng):
    """``(from GPU, wanted instances)``: a random *from* layout and a *to* layout.

    Half the targets are independent random layouts, half are edits of the
    *from* layout (some instances removed, then random ones added), which
    is where keeping instances matters most.
    """
    before = random_layout(sim_gpu(model_key), rng, stop=rng.choice((0.05, 0.15, 0.35)))
    target = sim_gpu(model_key)
    if rng.random() < 0.5:
        random_layout(target, rng, stop=rng.choice((0.05, 0.2, 0.5)))
    else:
        for gi in before['gpu_instances']:
            if rng.random() < 0.6:
                made = node.create_gpu_instance(target, gi['profile_id'], start=gi['start'])
                _random_split(target, made, rng)
        if rng.random() < 0.8:
            random_layout(target, rng, stop=0.3)
    return before, wanted_of(target, rng)


# --------------------------------------------------------------------- replaying a plan

def apply_in_simulator(gpu, plan):
    """Replay a planner's plan on a copy of a simulated GPU through the simulated driver; return the copy.

    Same order as the module's applier: compute instances, then GPU
    instances (their compute instances first) are destroyed, then GPU
    instances are created with their compute instances, then compute
    instances in kept GPU instances.  The driver raises on anything invalid.
    """
    gpu = copy.deepcopy(gpu)
    for ci in plan['destroy_cis']:
        node.destroy_compute_instance(gpu, ci['gi_id'], ci['ci_id'])
    for gi in plan['destroy_gis']:
        for ci in gi['compute_instances']:
            node.destroy_compute_instance(gpu, gi['gi_id'], ci['ci_id'])
        node.destroy_gpu_instance(gpu, gi['gi_id'])

    def create_cis(gi, cis):
        for name, start in sorted(cis, key=lambda c: (c[1] is None, c[1])):
            node.create_compute_instance(gpu, gi['id'], _ci_id_by_name(gpu, gi, name), start=start)
    for new in plan['create_gis']:
        gi = node.create_gpu_instance(gpu, new['profile_id'], start=new['start'], size=new['size'])
        create_cis(gi, new['compute_instances'])
    for group in plan['create_cis']:
        create_cis(node.gpu_instance(gpu, group['gi_id']), group['compute_instances'])
    return gpu


def layout_problems(gpu, instances):
    """What is wrong with ``gpu``'s layout for the wanted ``instances`` (empty list: it is exactly the wanted one)."""
    state = planner_state(gpu)
    names = dict((prof['id'], prof['name']) for prof in state['profiles'])
    have = [(names[gi['profile_id']], gi['start'], tuple(sorted(ci['profile'] for ci in gi['compute_instances'])))
            for gi in state['instances']]
    problems = []
    rest = list(have)
    loose = []
    for spec in instances:
        cis = tuple(sorted(spec.get('compute_instances') or [spec['profile']]))
        for _copy in range(spec.get('count') or 1):
            if spec.get('placement') is None:
                loose.append((spec['profile'], cis))
                continue
            match = [item for item in rest if item == (spec['profile'], spec['placement'], cis)]
            if match:
                rest.remove(match[0])
            else:
                problems.append('no %s with compute instances %s at placement %s' % (spec['profile'], ', '.join(cis), spec['placement']))
    if sorted((name, cis) for name, _start, cis in rest) != sorted(loose):
        problems.append('instances %s, wanted %s' % (sorted(rest), sorted(loose)))
    return problems
