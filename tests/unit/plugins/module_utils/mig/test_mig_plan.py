# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Planner tables.  GPU states are built from the simulator's profile tables
(``nvmlsim.models``: the MIG User Guide's tables), never invented here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from nvmlsim import models

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import mig_profiles
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_plan import (
    MigPlanError, check_request, ci_profile_choices, describe_layout, expand_instances, plan_actions, plan_node, predicted_state,
    recreate_all_counts, select_gpus)

UUID = 'GPU-00000000-0000-0000-0000-00000000000%d'


def table(model_key):
    """The profile table of a model, in the planner's input format."""
    model = models.MODELS[model_key]
    rows = []
    for prof in model.profiles:
        cis = [{'name': ci.name[4:], 'id': ci.profile_id, 'slices': ci.slices, 'instance_count': ci.instances,
                'placements': [[s, ci.size] for s in ci.starts]} for ci in models.ci_profiles(model, prof)]
        rows.append({'name': prof.name, 'id': prof.profile_id, 'slices': prof.slices, 'instance_count': prof.instances,
                     'memory_mb': prof.memory_mib, 'placements': [[s, prof.mem_slices] for s in prof.starts],
                     'ci_profiles': cis})
    return rows


def gi(model_key, profile, start, gi_id=None, cis=None):
    """An existing GPU instance of ``profile`` at ``start`` (one full CI unless ``cis``)."""
    model = models.MODELS[model_key]
    prof = model.profile_by_name(profile)
    assert start in prof.starts
    ci_rows = []
    next_start = 0
    for ci_id, name in enumerate(cis or [profile]):
        ci = [c for c in models.ci_profiles(model, prof) if c.name[4:] == name][0]
        ci_rows.append({'ci_id': ci_id, 'profile': name, 'profile_id': ci.profile_id, 'start': next_start, 'size': ci.size,
                        'uuid': 'MIG-%s-%d-%d' % (profile, start, ci_id)})
        next_start += ci.size
    return {'gi_id': models.gi_id_for_placement(start, prof.mem_slices) if gi_id is None else gi_id,
            'profile_id': prof.profile_id, 'start': start, 'size': prof.mem_slices, 'compute_instances': ci_rows}


def gpu(index=0, model_key='a100-sxm4-80gb', mig=True, pending=None, instances=(), processes=()):
    model = models.MODELS[model_key]
    return {'index': index, 'uuid': UUID % index, 'name': model.name, 'mig_capable': model.mig_capable,
            'mig_current': mig if model.mig_capable else False,
            'mig_pending': (mig if pending is None else pending) if model.mig_capable else False,
            'profiles': (table(model_key) if mig else None) if model.mig_capable else None,
            'instances': list(instances), 'processes': list(processes)}


def layout(plan_gpu_state, plan):
    """Apply a plan to a copy of the state (the way NVML would) and return sorted (profile, start) pairs."""
    state = plan_gpu_state
    names = dict((p['id'], p['name']) for p in state['profiles'])
    destroyed = set(g['gi_id'] for g in plan['destroy_gis'])
    result = [(names[g['profile_id']], g['start']) for g in state['instances'] if g['gi_id'] not in destroyed]
    result += [(g['profile'], g['start']) for g in plan['create_gis']]
    spans = []
    for name, start in result:
        size = [p for p in state['profiles'] if p['name'] == name][0]['placements'][0][1]
        spans.append(set(range(start, start + size)))
    for i, first in enumerate(spans):
        for second in spans[i + 1:]:
            assert not first & second, 'plan overlaps: %r' % result
    return sorted(result)


def want(*instances, **kwargs):
    entry = {'gpu': kwargs.get('gpu', 0), 'mig': kwargs.get('mig', True), 'instances': list(instances)}
    if 'model' in kwargs:
        entry['model'] = kwargs['model']
    return entry


def inst(profile, count=None, placement=None, cis=None):
    spec = {'profile': profile}
    if count is not None:
        spec['count'] = count
    if placement is not None:
        spec['placement'] = placement
    if cis is not None:
        spec['compute_instances'] = cis
    return spec


A80 = 'a100-sxm4-80gb'
A40 = 'a100-sxm4-40gb'
H100 = 'h100-sxm5-80gb'
H200 = 'h200-sxm5-141gb'

# ------------------------------------------------------------------ fit and placement from an empty GPU

FIT_CASES = [
    # (model, wanted instances, expected sorted (profile, start))
    (A80, [inst('1g.10gb', 7)], [('1g.10gb', s) for s in range(7)]),
    (A80, [inst('7g.80gb')], [('7g.80gb', 0)]),
    (A40, [inst('3g.20gb'), inst('2g.10gb'), inst('1g.5gb', 2)],   # seed 000's all-balanced
     None),
    (A80, [inst('4g.40gb'), inst('3g.40gb')], [('3g.40gb', 4), ('4g.40gb', 0)]),
    (A80, [inst('3g.40gb', 2)], [('3g.40gb', 0), ('3g.40gb', 4)]),
    (A80, [inst('1g.20gb', 4)], [('1g.20gb', 0), ('1g.20gb', 2), ('1g.20gb', 4), ('1g.20gb', 6)]),
    (A80, [inst('2g.20gb', 3), inst('1g.10gb')], [('1g.10gb', 6), ('2g.20gb', 0), ('2g.20gb', 2), ('2g.20gb', 4)]),
    (A80, [inst('3g.40gb'), inst('1g.10gb', 4)], [('1g.10gb', 0), ('1g.10gb', 1), ('1g.10gb', 2), ('1g.10gb', 3), ('3g.40gb', 4)]),
    (A80, [inst('3g.40gb', placement=0), inst('2g.20gb'), inst('1g.10gb')], [('1g.10gb', 6), ('2g.20gb', 4), ('3g.40gb', 0)]),
    (H100, [inst('1g.10gb+me'), inst('1g.10gb', 6)], [('1g.10gb', s) for s in range(1, 7)] + [('1g.10gb+me', 0)]),
    (H200, [inst('3g.71gb'), inst('2g.35gb'), inst('1g.18gb', 2)], [('1g.18gb', 0), ('1g.18gb', 1), ('2g.35gb', 2), ('3g.71gb', 4)]),
    # A lone 3g goes to 4:4, leaving 0:4 for a 4g (the driver's own preference).
    (A80, [inst('3g.40gb')], [('3g.40gb', 4)]),
]


@pytest.mark.parametrize('model_key, instances, expected', FIT_CASES)
def test_fit_from_empty(model_key, instances, expected):
    state = gpu(model_key=model_key)
    plans = plan_node([state], [want(*instances)])
    result = layout(state, plans[0])
    if expected is None:
        # all-balanced on A100 40GB: 3g.20gb + 2g.10gb + 2 x 1g.5gb, checked for overlap by layout()
        assert sorted(name for name, _start in result) == ['1g.5gb', '1g.5gb', '2g.10gb', '3g.20gb']
    else:
        assert result == sorted(expected)
    assert plans[0]['destroy_gis'] == [] and plans[0]['changed'] is True


# ------------------------------------------------------------------ minimal changes

MINIMAL_CASES = [
    # id, model, current GIs (profile, start), wanted, kept starts, destroyed starts, created (profile, start)
    ('identical', A80, [('3g.40gb', 4), ('2g.20gb', 0), ('1g.10gb', 2), ('1g.10gb', 3)],
     [inst('3g.40gb'), inst('2g.20gb'), inst('1g.10gb', 2)], [0, 2, 3, 4], [], []),
    ('7x1g to 3g+4x1g', A80, [('1g.10gb', s) for s in range(7)],
     [inst('3g.40gb'), inst('1g.10gb', 4)], [0, 1, 2, 3], [4, 5, 6], [('3g.40gb', 4)]),
    ('grow one 1g', A80, [('1g.10gb', 0), ('1g.10gb', 5)],
     [inst('1g.10gb', 3)], [0, 5], [], [('1g.10gb', 1)]),
    # Keeping 4 and 5 leaves 0:4 free for a 4g; keeping 0 and 1 would not.
    ('shrink', A80, [('1g.10gb', s) for s in range(7)], [inst('1g.10gb', 2)], [4, 5], [0, 1, 2, 3, 6], []),
    ('kept 1g blocks 3g at 0, use 4', A80, [('1g.10gb', 1)],
     [inst('3g.40gb'), inst('1g.10gb')], [1], [], [('3g.40gb', 4)]),
    ('kept 1g in both halves must move one', A80, [('1g.10gb', 1), ('1g.10gb', 5)],
     [inst('3g.40gb'), inst('1g.10gb', 2)], [1], [5], [('1g.10gb', 0), ('3g.40gb', 4)]),
    ('explicit placement moves an instance', A80, [('3g.40gb', 0)],
     [inst('3g.40gb', placement=4)], [], [0], [('3g.40gb', 4)]),
    ('all-1g to all-balanced', A80, [('1g.10gb', s) for s in range(7)],
     [inst('3g.40gb'), inst('2g.20gb'), inst('1g.10gb', 2)], [2, 3], [0, 1, 4, 5, 6], [('2g.20gb', 0), ('3g.40gb', 4)]),
    ('balanced to 7g', H100, [('3g.40gb', 4), ('2g.20gb', 0), ('1g.10gb', 2), ('1g.10gb', 3)],
     [inst('7g.80gb')], [], [0, 2, 3, 4], [('7g.80gb', 0)]),
    ('empty wanted destroys all', H100, [('4g.40gb', 0), ('3g.40gb', 4)], [], [], [0, 4], []),
]


def _state_with(model_key, current, processes=()):
    return gpu(model_key=model_key, instances=[gi(model_key, name, start) for name, start in current], processes=processes)


@pytest.mark.parametrize('case_id, model_key, current, instances, kept, destroyed, created', MINIMAL_CASES,
                         ids=[case[0] for case in MINIMAL_CASES])
def test_minimal_changes(case_id, model_key, current, instances, kept, destroyed, created):
    state = _state_with(model_key, current)
    plan = plan_node([state], [want(*instances)])[0]
    by_id = dict((g['gi_id'], g['start']) for g in state['instances'])
    assert sorted(by_id[i] for i in plan['keep']) == kept
    assert sorted(g['start'] for g in plan['destroy_gis']) == destroyed
    assert sorted((g['profile'], g['start']) for g in plan['create_gis']) == sorted(created)
    assert plan['changed'] is bool(destroyed or created)
    layout(state, plan)
    # Never worse than recreating the whole GPU.
    items = expand_instances(state, want(*instances))
    rec_destroyed, rec_created = recreate_all_counts(state, items)
    assert len(plan['destroy_gis']) <= rec_destroyed and len(plan['create_gis']) <= rec_created


def test_busy_instance_is_kept_when_possible():
    # 7 x 1g -> 3g + 3 x 1g: idle, the 3g goes to 4:4 and three 1g of 0-3 stay (slot 3 stays usable);
    # a job on the 1g at start 5 makes the planner put the 3g at 0:4 and keep 4, 5, 6.
    current = [('1g.10gb', s) for s in range(7)]
    wanted = [want(inst('3g.40gb'), inst('1g.10gb', 3))]
    plan = plan_node([_state_with(A80, current)], wanted)[0]
    assert sorted(g['start'] for g in plan['destroy_gis']) == [3, 4, 5, 6]
    assert [(g['profile'], g['start']) for g in plan['create_gis']] == [('3g.40gb', 4)]
    busy_gi = models.gi_id_for_placement(5, 1)
    state = _state_with(A80, current, processes=[{'pid': 99, 'name': 'train.py', 'gi_id': busy_gi, 'ci_id': 0}])
    plan = plan_node([state], wanted)[0]
    assert busy_gi in plan['keep']
    assert sorted(g['start'] for g in plan['destroy_gis']) == [0, 1, 2, 3]
    assert [(g['profile'], g['start']) for g in plan['create_gis']] == [('3g.40gb', 0)]


# ------------------------------------------------------------------ compute instances

def test_compute_instance_split_of_kept_instance():
    state = _state_with(A80, [('3g.40gb', 4)])
    plan = plan_node([state], [want(inst('3g.40gb', cis=['1c.3g.40gb', '2c.3g.40gb']))])[0]
    assert plan['keep'] == [2] and plan['destroy_gis'] == [] and plan['create_gis'] == []
    assert [(c['gi_id'], c['profile']) for c in plan['destroy_cis']] == [(2, '3g.40gb')]
    assert plan['create_cis'] == [{'gi_id': 2, 'profile': '3g.40gb', 'compute_instances': [('1c.3g.40gb', 2), ('2c.3g.40gb', 0)]}]
    assert plan_actions(plan) == [
        'GPU 0: destroy compute instance 0 (3g.40gb) of GPU instance 2',
        'GPU 0: create compute instances 1c.3g.40gb, 2c.3g.40gb in GPU instance 2']


def test_compute_instances_partly_kept():
    state = gpu(model_key=H100, instances=[gi(H100, '7g.80gb', 0, cis=['4c.7g.80gb', '2c.7g.80gb'])])
    plan = plan_node([state], [want(inst('7g.80gb', cis=['4c.7g.80gb', '1c.7g.80gb', '1c.7g.80gb', '1c.7g.80gb']))])[0]
    assert [c['profile'] for c in plan['destroy_cis']] == ['2c.7g.80gb']
    assert [name for name, _start in plan['create_cis'][0]['compute_instances']] == ['1c.7g.80gb'] * 3
    assert sorted(start for _name, start in plan['create_cis'][0]['compute_instances']) == [4, 5, 6]


def test_kept_instances_go_to_the_wanted_entry_with_their_own_split():
    # two 3g.40gb, one split and one whole: each is kept for the wanted instance of its own split, so no compute instance changes
    state = gpu(model_key=A80, instances=[gi(A80, '3g.40gb', 0, cis=['1c.3g.40gb', '2c.3g.40gb']), gi(A80, '3g.40gb', 4)])
    plan = plan_node([state], [want(inst('3g.40gb'), inst('3g.40gb', cis=['2c.3g.40gb', '1c.3g.40gb']))])[0]
    assert (plan['keep'], plan['destroy_cis'], plan['create_cis'], plan['changed']) == ([1, 2], [], [], False)


def test_predicted_state_after_a_plan():
    state = gpu(model_key=A80, instances=[gi(A80, '3g.40gb', 4, cis=['1c.3g.40gb', '2c.3g.40gb']), gi(A80, '2g.20gb', 0)])
    plan = plan_node([state], [want(inst('3g.40gb', cis=['1c.3g.40gb', '1c.3g.40gb', '1c.3g.40gb']), inst('1g.10gb', 2))])[0]
    after = predicted_state(state, plan)
    assert after['instances'] == [
        {'gi_id': 2, 'profile_id': 9, 'start': 4, 'size': 4, 'compute_instances': [
            {'ci_id': 0, 'profile': '1c.3g.40gb', 'profile_id': 0, 'start': 0, 'size': 1, 'uuid': 'MIG-3g.40gb-4-0'},
            {'ci_id': None, 'profile': '1c.3g.40gb', 'start': 1}, {'ci_id': None, 'profile': '1c.3g.40gb', 'start': 2}]},
        {'gi_id': None, 'profile_id': 19, 'start': 0, 'size': 1, 'compute_instances': [{'ci_id': None, 'profile': '1g.10gb', 'start': 0}]},
        {'gi_id': None, 'profile_id': 19, 'start': 1, 'size': 1, 'compute_instances': [{'ci_id': None, 'profile': '1g.10gb', 'start': 0}]}]
    assert dict(after, instances=None) == dict(state, instances=None)
    assert describe_layout(after) == 'MIG enabled: 1g.10gb@0:1, 1g.10gb@1:1, 3g.40gb@4:4[1c.3g.40gb 1c.3g.40gb 1c.3g.40gb]'
    assert [len(gi_['compute_instances']) for gi_ in state['instances']] == [2, 1]     # the state itself is left as it was


@pytest.mark.parametrize('processes, current', [([], False), ([{'pid': 7, 'name': 'python', 'gi_id': None}], True)])
def test_predicted_state_of_a_mode_change(processes, current):
    state = gpu(model_key=A80, processes=processes)
    plan = {'set_mode': False, 'destroy_gis': [], 'destroy_cis': [], 'create_gis': [], 'create_cis': []}
    after = predicted_state(state, plan)
    assert (after['mig_pending'], after['mig_current'], after['instances']) == (False, current, [])
    assert predicted_state(state, dict(plan, set_mode=None))['mig_pending'] is True


def test_ci_profile_choices():
    state = gpu(model_key=A80)
    three = [prof for prof in state['profiles'] if prof['name'] == '3g.40gb'][0]
    assert ci_profile_choices(state, three) == ['1c.3g.40gb', '2c.3g.40gb', '3g.40gb']
    assert ci_profile_choices(state, dict(three, ci_profiles=None)) is None


def test_an_instance_of_a_profile_the_table_lacks_is_named_by_its_id():
    odd = gpu(model_key=A80, instances=[dict(gi(A80, '3g.40gb', 4), profile_id=99)])
    plan = plan_node([odd], [want(inst('7g.80gb'))], force=True)[0]
    assert [(view['gi_id'], view['profile'], view['profile_id']) for view in plan['destroy_gis']] == [(2, 'profile id 99', 99)]


def test_new_instance_with_split_gets_ci_placements():
    state = gpu(model_key=A80)
    plan = plan_node([state], [want(inst('7g.80gb', cis=['3c.7g.80gb', '3c.7g.80gb', '1c.7g.80gb']))])[0]
    assert sorted(plan['create_gis'][0]['compute_instances']) == [('1c.7g.80gb', 3), ('3c.7g.80gb', 0), ('3c.7g.80gb', 4)]


# ------------------------------------------------------------------ mode changes and no-ops

def test_matching_gpu_untouched_and_other_gpu_planned():
    balanced = [('3g.40gb', 4), ('2g.20gb', 0), ('1g.10gb', 2), ('1g.10gb', 3)]
    gpus = [gpu(index=i, model_key=A80, instances=[gi(A80, n, s) for n, s in balanced]) for i in range(2)]
    wanted = [{'gpu': 'all', 'mig': True, 'instances': [inst('3g.40gb'), inst('2g.20gb'), inst('1g.10gb', 2)]}]
    plans = plan_node(gpus, wanted)
    assert [p['changed'] for p in plans] == [False, False]
    assert all(plan_actions(p) == [] for p in plans)
    wanted = [{'gpu': 0, 'instances': [inst('3g.40gb'), inst('2g.20gb'), inst('1g.10gb', 2)]},
              {'gpu': 1, 'instances': [inst('3g.40gb'), inst('2g.20gb'), inst('1g.20gb')]}]
    plans = plan_node(gpus, wanted)
    assert [p['changed'] for p in plans] == [False, True]
    assert plan_actions(plans[1]) == ['GPU 1: destroy GPU instance 9 (1g.10gb at 2:1)', 'GPU 1: destroy GPU instance 10 (1g.10gb at 3:1)',
                                      'GPU 1: create GPU instance 1g.20gb at 2:2 with compute instances 1g.20gb']


@pytest.mark.parametrize('mig, pending, want_mig, set_mode, destroys', [
    (False, False, True, True, 0),
    (True, True, True, None, 0),
    (True, False, True, True, 0),     # cancel a pending disable
    (False, True, True, None, 0),     # already pending: nothing to set, reset still needed
    (True, True, False, False, 2),    # disable: instances go first
    (False, False, False, None, 0),
    (False, True, False, False, 0),
])
def test_mode_changes(mig, pending, want_mig, set_mode, destroys):
    state = gpu(model_key=A80, mig=mig, pending=pending)
    if mig:
        state['instances'] = [gi(A80, '4g.40gb', 0), gi(A80, '3g.40gb', 4)]
    entry = {'gpu': 0, 'mig': want_mig, 'instances': [inst('4g.40gb'), inst('3g.40gb')] if want_mig else []}
    plan = plan_node([state], [entry])[0]
    assert plan['set_mode'] is set_mode
    assert len(plan['destroy_gis']) == destroys
    assert plan['deferred'] is (want_mig and not mig)


def test_mode_off_table_borrowed_from_same_model():
    gpus = [gpu(index=0, model_key=A80, mig=True), gpu(index=1, model_key=A80, mig=False)]
    with pytest.raises(MigPlanError) as err:
        plan_node(gpus, [{'gpu': 1, 'instances': [inst('1g.5gb')]}])
    assert str(err.value) == ("GPU 1 (GPU-00000000-0000-0000-0000-000000000001, NVIDIA A100-SXM4-80GB): instances[0] profile '1g.5gb' is not "
                              "a MIG profile of this GPU; valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb")
    plan = plan_node(gpus, [{'gpu': 1, 'instances': [inst('1g.10gb')]}])[0]
    assert plan['set_mode'] is True and plan['deferred'] is True and plan['create_gis'] == []
    assert plan_actions(plan) == ['GPU 1: enable MIG mode',
                                  'GPU 1: create the instances once MIG mode is on (profile table unreadable while MIG is off)']


def test_non_mig_gpu_with_mig_false_is_fine():
    plans = plan_node([gpu(index=0, model_key='l40s')], [{'gpu': 'all', 'mig': False}])
    assert plans[0]['changed'] is False


def test_model_filter_selects():
    gpus = [gpu(index=0, model_key=A80), gpu(index=1, model_key='l40s'), gpu(index=2, model_key=A80)]
    chosen = select_gpus(gpus, [{'gpu': 'all', 'model': 'a100', 'mig': True}])
    assert [g['index'] for g, _entry, _n in chosen] == [0, 2]
    chosen = select_gpus(gpus, [{'gpu': UUID % 2, 'mig': True}])
    assert [g['index'] for g, _entry, _n in chosen] == [2]


# ------------------------------------------------------------------ describe

def test_describe_layout():
    state = gpu(model_key=A80, instances=[gi(A80, '3g.40gb', 4, cis=['1c.3g.40gb', '2c.3g.40gb']), gi(A80, '4g.40gb', 0)])
    assert describe_layout(state) == 'MIG enabled: 4g.40gb@0:4, 3g.40gb@4:4[1c.3g.40gb 2c.3g.40gb]'
    assert describe_layout(gpu(model_key=A80, mig=False, pending=True)) == 'MIG disabled (pending enabled): no instances'
    assert describe_layout(gpu(model_key='l40s')) == 'MIG not supported'


# ------------------------------------------------------------------ every failure message

G0 = 'GPU 0 (GPU-00000000-0000-0000-0000-000000000000, NVIDIA A100-SXM4-80GB)'
G0H = 'GPU 0 (GPU-00000000-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3)'

ERROR_CASES = [
    ('unknown profile', gpu(), [want(inst('3g.20gb'))],
     G0 + ": instances[0] profile '3g.20gb' is not a MIG profile of this GPU; valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"),
    ('too many', gpu(), [want(inst('1g.10gb', 8))],
     G0 + ': too many 1g.10gb instances: 8 wanted, this GPU allows at most 7'),
    ('too many +me', gpu(model_key=H100), [want(inst('1g.10gb+me', 2))],
     G0H + ': too many 1g.10gb+me instances: 2 wanted, this GPU allows at most 1'),
    ('compute slices', gpu(), [want(inst('4g.40gb'), inst('2g.20gb', 2))],
     G0 + ': the instances 4g.40gb, 2 x 2g.20gb need 8 compute slices; this GPU has 7'),
    ('impossible placement', gpu(), [want(inst('3g.40gb', 2), inst('1g.10gb'))],
     G0 + ': the instances 2 x 3g.40gb, 1g.10gb cannot be placed together on this GPU (no combination of valid placements fits)'),
    ('impossible memory', gpu(), [want(inst('1g.20gb', 4), inst('1g.10gb'))],
     G0 + ': the instances 4 x 1g.20gb, 1g.10gb cannot be placed together on this GPU (no combination of valid placements fits)'),
    ('bad placement', gpu(), [want(inst('3g.40gb', placement=2))],
     G0 + ': instances[0] placement 2 is not a valid start for 3g.40gb; valid starts: 0, 4'),
    ('placement with count', gpu(), [want(inst('1g.10gb', count=2, placement=1))],
     G0 + ': instances[0] gives placement 1 with count 2; an explicit placement is for one instance (count 1)'),
    ('overlapping placements', gpu(), [want(inst('4g.40gb', placement=0), inst('2g.20gb', placement=2))],
     G0 + ': placements 0:4 of 4g.40gb and 2:2 of 2g.20gb overlap'),
    ('bad count', gpu(), [want(inst('1g.10gb', count=0))],
     G0 + ": instances[0] count 0 of 1g.10gb is not valid; give a whole number of 1 or more"),
    ('unknown ci profile', gpu(), [want(inst('3g.40gb', cis=['4c.3g.40gb']))],
     G0 + ": instances[0] compute instance profile '4c.3g.40gb' is not offered by a 3g.40gb GPU instance; "
     "valid: 1c.3g.40gb, 2c.3g.40gb, 3g.40gb"),
    ('too many ci', gpu(), [want(inst('4g.40gb', cis=['2c.4g.40gb'] * 3))],
     G0 + ': instances[0] asks for 3 x 2c.4g.40gb compute instances; a 4g.40gb GPU instance holds at most 2'),
    ('ci slices', gpu(), [want(inst('3g.40gb', cis=['2c.3g.40gb', '3g.40gb']))],
     G0 + ': instances[0] compute instances 2c.3g.40gb, 3g.40gb need 5 compute slices; a 3g.40gb GPU instance has 3'),
    ('empty ci list', gpu(), [want(inst('3g.40gb', cis=[]))],
     G0 + ': instances[0] compute_instances is empty; give at least one profile (for example 3g.40gb) or leave it out'),
    ('index out of range', gpu(), [want(gpu=8)],
     'gpus[0]: GPU index 8 is out of range; this node has GPU indices 0'),
    ('bad selector', gpu(), [want(gpu='first')],
     'gpus[0]: gpu \'first\' is not a GPU index, a GPU UUID (GPU-...) or "all"'),
    ('unknown uuid', gpu(), [want(gpu='GPU-ffffffff')],
     'gpus[0]: no GPU has UUID GPU-ffffffff; this node has GPU-00000000-0000-0000-0000-000000000000'),
    ('model mismatch', gpu(), [want(gpu=0, model='H100')],
     "gpus[0]: " + G0 + " is not a H100 GPU (model filter 'H100')"),
    ('selected twice', gpu(), [{'gpu': 'all', 'mig': True}, want(gpu=0)],
     'gpus[1]: ' + G0 + ' is already selected by gpus[0]; select each GPU once'),
    ('no mig support', gpu(model_key='l40s'), [want(inst('1g.10gb'))],
     'GPU 0 (GPU-00000000-0000-0000-0000-000000000000, NVIDIA L40S) does not support MIG; set mig: false for it or select MIG GPUs with the model filter'),
    ('instances with mig false', gpu(), [want(inst('1g.10gb'), mig=False)],
     G0 + ': instances are given with mig: false; remove them or set mig: true'),
    ('busy gpu instance', _state_with(A80, [('3g.40gb', 0)], processes=[{'pid': 4242, 'name': 'python3', 'gi_id': 1, 'ci_id': 0}]),
     [want(inst('4g.40gb'))],
     G0 + ': refusing to destroy GPU instance 1 (3g.40gb at 0:4) used by pid 4242 (python3); set force to destroy it anyway'),
    ('busy compute instance', _state_with(A80, [('3g.40gb', 0)], processes=[{'pid': 7, 'name': 'job', 'gi_id': 1, 'ci_id': 0}]),
     [want(inst('3g.40gb', cis=['1c.3g.40gb'] * 3))],
     G0 + ': refusing to destroy compute instance 0 of GPU instance 1 (3g.40gb) used by pid 7 (job); set force to destroy it anyway'),
    ('busy mode change', gpu(mig=False, processes=[{'pid': 1, 'name': 'nvidia-persistenced', 'gi_id': None, 'ci_id': None}]),
     [want()],
     G0 + ': refusing to enable MIG mode while processes use the GPU: pid 1 (nvidia-persistenced); stop them or set force'),
]


@pytest.mark.parametrize('case_id, state, wanted, message', ERROR_CASES, ids=[case[0] for case in ERROR_CASES])
def test_errors(case_id, state, wanted, message):
    with pytest.raises(MigPlanError) as err:
        plan_node([state], wanted)
    assert str(err.value) == message


def test_ci_name_checked_without_table():
    # No GI of this profile exists anywhere, so the CI table is unknown: the <N>c.<gi> form is checked.
    state = gpu()
    for prof in state['profiles']:
        prof['ci_profiles'] = None
    plan = plan_node([state], [want(inst('3g.40gb', cis=['1c.3g.40gb', '2c.3g.40gb']))])[0]
    assert plan['create_gis'][0]['compute_instances'] == [('1c.3g.40gb', None), ('2c.3g.40gb', None)]
    with pytest.raises(MigPlanError) as err:
        plan_node([state], [want(inst('3g.40gb', cis=['3c.4g.40gb']))])
    assert str(err.value) == (G0 + ": instances[0] compute instance profile '3c.4g.40gb' is not valid in a 3g.40gb GPU instance; "
                              "use <N>c.3g.40gb with N below 3, or 3g.40gb")


def test_force_skips_refusals():
    state = _state_with(A80, [('3g.40gb', 0)], processes=[{'pid': 4242, 'name': 'python3', 'gi_id': 1, 'ci_id': 0}])
    plan = plan_node([state], [want(inst('4g.40gb'))], force=True)[0]
    assert [g['gi_id'] for g in plan['destroy_gis']] == [1]


def test_recreate_all_counts():
    state = _state_with(A80, [('1g.10gb', s) for s in range(7)])
    assert recreate_all_counts(state, expand_instances(state, want(inst('1g.10gb', 7)))) == (0, 0)
    assert recreate_all_counts(state, expand_instances(state, want(inst('3g.40gb'), inst('1g.10gb', 4)))) == (7, 5)


# ------------------------------------------------------------------ tables for GPUs in MIG mode off

@pytest.mark.parametrize('model_key', sorted(key for key in models.MODELS if models.MODELS[key].mig_capable))
def test_catalogue_table_matches_the_simulator(model_key):
    # The catalogue's copy of the guide's tables equals the simulator's (names, ids, slices, counts, placements).
    def rows(profiles):
        return sorted((p['name'], p['id'], p['slices'], p['instance_count'], [list(x) for x in p['placements']]) for p in profiles)
    assert rows(mig_profiles(models.MODELS[model_key].name)) == rows(table(model_key))


def test_catalogue_tables_only_for_known_names():
    assert mig_profiles('NVIDIA A30') is None and mig_profiles('NVIDIA L40S') is None and mig_profiles('NVIDIA X9000') is None


def test_mig_off_gpu_validated_with_guide_table():
    state = gpu(model_key=H100, mig=False)
    with pytest.raises(MigPlanError) as err:
        plan_node([state], [want(inst('1g.5gb'))])
    assert str(err.value) == (G0H + ": instances[0] profile '1g.5gb' is not a MIG profile of this GPU; "
                              "valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb")
    with pytest.raises(MigPlanError) as err:
        plan_node([gpu(model_key=H100, mig=False)], [want(inst('1g.10gb', 8))])
    assert str(err.value) == G0H + ': too many 1g.10gb instances: 8 wanted, this GPU allows at most 7'
    plan = plan_node([gpu(model_key=H100, mig=False)], [want(inst('3g.40gb'), inst('4g.40gb'))])[0]
    assert plan['deferred'] is True and plan['set_mode'] is True and plan['create_gis'] == []


# ------------------------------------------------------------------ request shape (before any GPU is read)

def entry(**kwargs):
    return dict({'gpu': 'all', 'model': None, 'mig': True, 'instances': []}, **kwargs)


def spec(**kwargs):
    return dict({'profile': '1g.10gb', 'count': 1, 'placement': None, 'compute_instances': None}, **kwargs)


SHAPE_CASES = [
    ('not a list', 'all', "gpus is 'all', expected a list of GPU entries ({gpu: ..., instances: [...]})"),
    ('instance not a dict', [entry(instances=['1g.10gb'])],
     "gpus[0].instances[0] is '1g.10gb' (str), expected a dict with the keys profile, count, placement, compute_instances"),
    ('entry not a dict', [3], 'gpus[0] is 3 (int), expected a dict with the keys gpu, model, mig, instances, shape'),
    ('unknown entry key', [entry(colour='red')], 'gpus[0] has the unknown key colour; valid keys: gpu, model, mig, instances, shape'),
    ('shape with instances', [entry(shape='1g', instances=[spec()])],
     'gpus[0]: shape 1g is given with instances; a shape stands for the instances, give one or the other'),
    ('shape with mig false', [entry(shape='balanced', mig=False)],
     'gpus[0]: shape balanced is given with mig: false; a shape stands for the instances, give one or the other'),
    ('shape not a word', [entry(shape='3g 40gb')],
     "gpus[0].shape is '3g 40gb', expected a layout shape (1g, 2g, 3g, 4g, 7g, balanced) or a MIG profile name such as 1g.10gb"),
    ('unknown instance keys', [entry(instances=[spec(size=2, slot=1)])],
     'gpus[0].instances[0] has the unknown keys size, slot; valid keys: profile, count, placement, compute_instances'),
    ('negative index', [entry(gpu='-1')], 'gpus[0].gpu is \'-1\', expected a GPU index (0, 1, ...), a GPU UUID (GPU-...) or "all"'),
    ('word selector', [entry(gpu='first')], 'gpus[0].gpu is \'first\', expected a GPU index (0, 1, ...), a GPU UUID (GPU-...) or "all"'),
    ('bare uuid prefix', [entry(gpu='GPU-')], 'gpus[0].gpu is \'GPU-\', expected a GPU index (0, 1, ...), a GPU UUID (GPU-...) or "all"'),
    ('empty model', [entry(model=' ')], "gpus[0].model is ' ', expected part of a GPU name such as A100 or H100 80GB, or leave it out"),
    ('mig not bool', [entry(mig='yes please')], "gpus[0].mig is 'yes please', expected true or false"),
    ('mig null', [entry(mig=None)], 'gpus[0].mig is None, expected true or false'),
    ('gpu null', [entry(gpu=None)], 'gpus[0].gpu is None, expected a GPU index (0, 1, ...), a GPU UUID (GPU-...) or "all"'),
    ('instances not a list', [entry(instances='1g.10gb')],
     "gpus[0].instances is '1g.10gb', expected a list of instances ({profile: ..., count: ...})"),
    ('instances with mig false', [entry(mig=False, instances=[spec()])],
     'gpus[0]: instances are given with mig: false; remove them or set mig: true'),
    ('empty profile', [entry(instances=[spec(profile='')])],
     "gpus[0].instances[0].profile is '', expected a MIG profile name such as 1g.10gb or 3g.40gb (no spaces)"),
    ('profile with space', [entry(instances=[spec(profile='MIG 1g.10gb')])],
     "gpus[0].instances[0].profile is 'MIG 1g.10gb', expected a MIG profile name such as 1g.10gb or 3g.40gb (no spaces)"),
    ('zero count', [entry(instances=[spec(), spec(count=0)])], 'gpus[0].instances[1].count is 0, expected a whole number of 1 or more'),
    ('negative count', [entry(instances=[spec(count=-3)])], 'gpus[0].instances[0].count is -3, expected a whole number of 1 or more'),
    ('bool count', [entry(instances=[spec(count=True)])], 'gpus[0].instances[0].count is True, expected a whole number of 1 or more'),
    ('negative placement', [entry(instances=[spec(placement=-1)])],
     'gpus[0].instances[0].placement is -1, expected a start memory slice (a whole number of 0 or more; nvidia-smi mig -lgipp lists the valid ones)'),
    ('placement with count', [entry(instances=[spec(count=2, placement=1)])],
     'gpus[0].instances[0].placement is 1 with count 2; an explicit placement is for one instance (count 1)'),
    ('empty ci list', [entry(instances=[spec(compute_instances=[])])],
     'gpus[0].instances[0].compute_instances is [], expected a non-empty list of compute instance profiles such as [1c.3g.40gb, 2c.3g.40gb], '
     'or leave it out for one compute instance spanning the GPU instance'),
    ('empty ci name', [entry(instances=[spec(compute_instances=['1c.3g.40gb', ''])])],
     "gpus[0].instances[0].compute_instances[1] is '', expected a compute instance profile name such as 1c.3g.40gb"),
    # a value is shown as its repr, clipped to 80 characters
    ('long value clipped', [entry(mig='y' * 100)], "gpus[0].mig is '%s..., expected true or false" % ('y' * 76)),
    ('80 characters shown whole', [entry(mig='y' * 78)], "gpus[0].mig is '%s', expected true or false" % ('y' * 78)),
    ('81 characters clipped', [entry(mig='y' * 79)], "gpus[0].mig is '%s..., expected true or false" % ('y' * 76)),
    ('long list clipped', 'z' * 90, "gpus is '%s..., expected a list of GPU entries ({gpu: ..., instances: [...]})" % ('z' * 76)),
    ('model not a string', [entry(model=80)], 'gpus[0].model is 80, expected part of a GPU name such as A100 or H100 80GB, or leave it out'),
    ('uuid selector lower case too short', [entry(gpu='gpu-')],
     'gpus[0].gpu is \'gpu-\', expected a GPU index (0, 1, ...), a GPU UUID (GPU-...) or "all"'),
    ('float selector', [entry(gpu=1.0)], 'gpus[0].gpu is 1.0, expected a GPU index (0, 1, ...), a GPU UUID (GPU-...) or "all"'),
    ('shape empty', [entry(shape=' ')],
     "gpus[0].shape is ' ', expected a layout shape (1g, 2g, 3g, 4g, 7g, balanced) or a MIG profile name such as 1g.10gb"),
    ('shape not a string', [entry(shape=7)],
     'gpus[0].shape is 7, expected a layout shape (1g, 2g, 3g, 4g, 7g, balanced) or a MIG profile name such as 1g.10gb'),
    ('one unknown instance key', [entry(instances=[spec(size=2)])],
     'gpus[0].instances[0] has the unknown key size; valid keys: profile, count, placement, compute_instances'),
    ('instance of a later entry', [entry(), entry(gpu=1, instances=[spec(), 'x'])],
     "gpus[1].instances[1] is 'x' (str), expected a dict with the keys profile, count, placement, compute_instances"),
    ('profile padded', [entry(instances=[spec(profile=' 1g.10gb')])],
     "gpus[0].instances[0].profile is ' 1g.10gb', expected a MIG profile name such as 1g.10gb or 3g.40gb (no spaces)"),
    ('profile not a string', [entry(instances=[spec(profile=None)])],
     'gpus[0].instances[0].profile is None, expected a MIG profile name such as 1g.10gb or 3g.40gb (no spaces)'),
    ('float count', [entry(instances=[spec(count=2.0)])], 'gpus[0].instances[0].count is 2.0, expected a whole number of 1 or more'),
    ('bool placement', [entry(instances=[spec(placement=False)])],
     'gpus[0].instances[0].placement is False, expected a start memory slice (a whole number of 0 or more; nvidia-smi mig -lgipp lists the valid ones)'),
    ('ci list a string', [entry(instances=[spec(compute_instances='1c.3g.40gb')])],
     "gpus[0].instances[0].compute_instances is '1c.3g.40gb', expected a non-empty list of compute instance profiles such as "
     "[1c.3g.40gb, 2c.3g.40gb], or leave it out for one compute instance spanning the GPU instance"),
    ('ci name with a space', [entry(instances=[spec(compute_instances=['1c 3g'])])],
     "gpus[0].instances[0].compute_instances[0] is '1c 3g', expected a compute instance profile name such as 1c.3g.40gb"),
    ('ci name not a string', [entry(instances=[spec(compute_instances=[1])])],
     'gpus[0].instances[0].compute_instances[0] is 1, expected a compute instance profile name such as 1c.3g.40gb'),
]


@pytest.mark.parametrize('case_id, wanted, message', SHAPE_CASES, ids=[case[0] for case in SHAPE_CASES])
def test_check_request(case_id, wanted, message):
    with pytest.raises(MigPlanError) as err:
        check_request(wanted)
    assert str(err.value) == message


@pytest.mark.parametrize('wanted', [
    [],
    [entry(), entry(gpu='3', mig=False), entry(gpu='GPU-5c1e7d4e', model='A100')],
    [entry(gpu=0, instances=[spec(count=None), spec(profile='3g.40gb', placement=4, compute_instances=['1c.3g.40gb', '2c.3g.40gb'])])],
    [{'gpu': '1'}, {'instances': None}],
    [entry(gpu=' 2 ', shape='1g'), entry(gpu='gpu-5c1e', shape='balanced'), entry(gpu=7, mig=False, instances=[])],
    [entry(instances=(spec(placement=0, count=None, compute_instances=(' 1c.3g.40gb ',)),))],
    ({'gpu': 'all'},),
])
def test_check_request_accepts(wanted):
    assert check_request(wanted) is None


# ------------------------------------------------------------------ layout shapes (the mig role's all-balanced, all-1g, ...)

@pytest.mark.parametrize('model_key, shape, profiles', [
    ('h200-sxm5-141gb', 'balanced', ['1g.18gb', '1g.18gb', '2g.35gb', '3g.71gb']),
    ('a100-sxm4-40gb', '1g', ['1g.5gb'] * 7),
    ('b200', '2g', ['2g.45gb'] * 3),
    ('gb300', '7g', ['7g.278gb']),
    ('a100-sxm4-40gb', '1g.10gb', ['1g.10gb'] * 4),
])
def test_a_shape_is_planned_with_the_gpus_own_table(model_key, shape, profiles):
    plan = plan_node([gpu(model_key=model_key)], [entry(shape=shape)])[0]
    assert sorted(item['profile'] for item in plan['create_gis']) == profiles


def test_a_shape_on_a_mig_off_gpu_without_a_table_waits_for_the_mode_change():
    state = {'index': 0, 'uuid': UUID % 0, 'name': 'NVIDIA H100 NVL', 'mig_capable': True, 'mig_current': False, 'mig_pending': False,
             'profiles': None, 'instances': [], 'processes': []}
    plan = plan_node([state], [entry(shape='balanced')])[0]
    assert (plan['deferred'], plan['set_mode'], plan['create_gis']) == (True, True, [])


def test_a_shape_the_gpu_lacks():
    with pytest.raises(MigPlanError) as err:
        plan_node([gpu(model_key='h100-sxm5-80gb')], [entry(shape='1g.5gb')])
    assert str(err.value) == (G0H + ": shape '1g.5gb' is not a MIG profile of this GPU nor one of 1g, 2g, 3g, 4g, 7g, balanced; valid profiles: "
                              "1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb")


def test_a_shape_for_all_gpus_passes_over_the_gpus_without_mig():
    # as the per-model entries of the earlier layouts did: the L40S stays whole, selected by no entry
    plans = plan_node([gpu(0, model_key='l40s'), gpu(1, model_key='h100-sxm5-80gb')], [entry(shape='7g')])
    assert [(plan['index'], [item['profile'] for item in plan['create_gis']]) for plan in plans] == [(1, ['7g.80gb'])]


def test_a_profile_named_shape_selects_every_gpu():
    # all-1g.10gb was {gpu: all, instances: [...]}: a GPU without MIG in it fails, as it did
    with pytest.raises(MigPlanError) as err:
        plan_node([gpu(0, model_key='l40s'), gpu(1, model_key='h100-sxm5-80gb')], [entry(shape='1g.10gb')])
    assert 'does not support MIG' in str(err.value)


def test_plan_actions_of_a_mode_change_off():
    plan = {'index': 3, 'set_mode': False, 'destroy_cis': [], 'destroy_gis': [], 'create_gis': [], 'create_cis': [], 'deferred': False}
    assert plan_actions(plan) == ['GPU 3: disable MIG mode']
    assert plan_actions(dict(plan, set_mode=True, deferred=True)) == [
        'GPU 3: enable MIG mode', 'GPU 3: create the instances once MIG mode is on (profile table unreadable while MIG is off)']


def test_describe_layout_names_an_unknown_profile_by_its_id():
    odd = gpu(model_key=A80, instances=[dict(gi(A80, '3g.40gb', 4), profile_id=99)])
    assert describe_layout(odd) == 'MIG enabled: profile id 99@4:4[3g.40gb]'


def test_the_model_filter_ignores_case():
    gpus = [gpu(index=0, model_key=A80)]
    assert [number for _gpu, _entry, number in select_gpus(gpus, [want(gpu=0, model='a100-sxm4')])] == [0]
