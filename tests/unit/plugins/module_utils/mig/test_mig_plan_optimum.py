# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The MIG planner against the exhaustive optimum, on seeded random transitions of every MIG model.

For every transition the planner must destroy exactly as many GPU
instances as the optimum (``mig_optimum.optimum``: every subset of the
existing instances to keep, checked for a valid completion), its plan must
replay through the simulated driver without a refusal, and the result must
be the wanted layout (profiles, explicit placements, compute-instance
splits), with the planner's kept instances still there under their ids.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random

import pytest

from nvmlsim import node

from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_plan
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_plan import plan_node
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.mig import mig_optimum
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.mig.mig_optimum import (
    MIG_MODELS, apply_in_simulator, final_layouts, layout_problems, optimum, planner_state, random_transition, sim_gpu)

TRANSITIONS_PER_MODEL = 300
BUSY_TRANSITIONS_PER_MODEL = 100


def check(before, wanted, force=False, busy=()):
    """Plan ``before`` -> ``wanted``; return a list of what is wrong (empty: optimal and valid)."""
    state = planner_state(before)
    state['processes'] = [{'pid': 1000 + gi_id, 'name': 'job', 'gi_id': gi_id, 'ci_id': 0} for gi_id in busy]
    plan = plan_node([state], [{'gpu': 0, 'mig': True, 'instances': wanted}], force=force)[0]
    best = optimum(state, wanted, busy=set(busy))
    problems = []
    if len(plan['destroy_gis']) != best['destroyed']:
        problems.append('destroys %d GPU instances, the optimum is %d' % (len(plan['destroy_gis']), best['destroyed']))
    if frozenset(plan['keep']) not in best['keep_sets']:
        problems.append('keeps %s, optimal: %s' % (sorted(plan['keep']), [sorted(keep) for keep in best['keep_sets']]))
    after = apply_in_simulator(before, plan)
    problems.extend(layout_problems(after, wanted))
    missing = set(plan['keep']) - set(gi['id'] for gi in after['gpu_instances'])
    if missing:
        problems.append('kept GPU instances %s are gone' % sorted(missing))
    return problems


def sweep(model_key, count, seed, busy_share=0.0):
    """Run ``count`` seeded random transitions; return (cases, failures as text)."""
    rng = random.Random('%s/%s' % (seed, model_key))
    failures = []
    for number in range(count):
        before, wanted = random_transition(model_key, rng)
        busy = [gi['id'] for gi in before['gpu_instances'] if rng.random() < busy_share]
        problems = check(before, wanted, force=bool(busy), busy=busy)
        if problems:
            failures.append('#%d %s -> %s (busy %s): %s' % (
                number, sorted((gi['profile_id'], gi['start']) for gi in before['gpu_instances']), wanted, busy, '; '.join(problems)))
    return count, failures


@pytest.mark.parametrize('model_key', MIG_MODELS)
def test_planner_destroys_the_optimum(model_key):
    cases, failures = sweep(model_key, TRANSITIONS_PER_MODEL, 'optimum')
    assert cases == TRANSITIONS_PER_MODEL
    assert not failures, '%d of %d transitions not optimal or not valid:\n%s' % (len(failures), cases, '\n'.join(failures[:5]))


@pytest.mark.parametrize('model_key', MIG_MODELS)
def test_busy_instances_kept_first_then_the_optimum(model_key):
    # With force, busy GPU instances may go, but the planner keeps as many of them as it can, then the most instances.
    cases, failures = sweep(model_key, BUSY_TRANSITIONS_PER_MODEL, 'busy', busy_share=0.3)
    assert not failures, '%d of %d transitions wrong:\n%s' % (len(failures), cases, '\n'.join(failures[:5]))


def test_every_mig_model_is_swept():
    assert set(MIG_MODELS) == set(['a100-pcie-80gb', 'a100-sxm4-40gb', 'a100-sxm4-80gb', 'h100-sxm5-80gb', 'h200-sxm5-141gb',
                                   'b200', 'b300', 'gb200', 'gb300', 'h200-nvl'])


# ------------------------------------------------------------------ the oracle itself

def _gpu(model_key, layout):
    gpu = sim_gpu(model_key)
    for profile_id, start in layout:
        gi = node.create_gpu_instance(gpu, profile_id, start=start)
        node.create_compute_instance(gpu, gi['id'], {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}[node.gi_profile_of(gpu, gi).slices])
    return gpu


def spec(profile, count=1, placement=None, cis=None):
    return {'profile': profile, 'count': count, 'placement': placement, 'compute_instances': cis}


SEVEN_1G = [(19, start) for start in range(7)]

ORACLE_CASES = [
    # id, model, from (profile id, start), wanted, optimum destroyed
    ('7x1g to balanced', 'h100-sxm5-80gb', SEVEN_1G, [spec('3g.40gb'), spec('2g.20gb'), spec('1g.10gb', 2)], 5),
    ('7x1g to 3g+4x1g', 'a100-sxm4-40gb', SEVEN_1G, [spec('3g.20gb'), spec('1g.5gb', 4)], 3),
    ('2x3g to 4g+3g', 'h100-sxm5-80gb', [(9, 0), (9, 4)], [spec('4g.40gb'), spec('3g.40gb')], 1),
    ('identical', 'a100-sxm4-80gb', [(9, 4), (14, 0), (19, 2), (19, 3)], [spec('3g.40gb'), spec('2g.20gb'), spec('1g.10gb', 2)], 0),
    ('pinned placement moves', 'a100-sxm4-80gb', [(9, 0)], [spec('3g.40gb', placement=4)], 1),
    ('pinned elsewhere keeps', 'a100-sxm4-80gb', [(9, 0), (19, 5)], [spec('3g.40gb', placement=0), spec('1g.10gb', 2)], 0),
    ('1g in both halves', 'a100-sxm4-80gb', [(19, 1), (19, 5)], [spec('3g.40gb'), spec('1g.10gb', 2)], 1),
    ('to 7g', 'h200-sxm5-141gb', [(14, 0), (19, 2)], [spec('7g.141gb')], 2),
    ('to nothing', 'h200-sxm5-141gb', [(14, 0), (19, 2)], [], 2),
    ('1g.20gb blocks its pair', 'a100-sxm4-80gb', [(15, 0), (15, 2), (15, 4), (15, 6)], [spec('2g.20gb', 3), spec('1g.10gb')], 4),
    ('split does not count', 'h100-sxm5-80gb', [(9, 4)], [spec('3g.40gb', cis=['1c.3g.40gb', '2c.3g.40gb'])], 0),
]


@pytest.mark.parametrize('case_id, model_key, layout, wanted, destroyed', ORACLE_CASES, ids=[case[0] for case in ORACLE_CASES])
def test_oracle_known_optima(case_id, model_key, layout, wanted, destroyed):
    before = _gpu(model_key, layout)
    assert optimum(planner_state(before), wanted)['destroyed'] == destroyed
    assert check(before, wanted) == []


def test_oracle_enumerates_layouts():
    state = planner_state(sim_gpu('a100-sxm4-80gb'))
    assert sorted(sorted(layout) for layout in final_layouts(state, [spec('3g.40gb', 2)])) == [[(9, 0), (9, 4)]]
    assert len(final_layouts(state, [spec('1g.10gb', 7)])) == 1
    assert len(final_layouts(state, [spec('1g.10gb')])) == 7
    assert final_layouts(state, [spec('3g.40gb', 2), spec('1g.10gb')]) == []     # no placement fits
    assert final_layouts(state, [spec('4g.40gb'), spec('2g.20gb', 2)]) == []      # 8 compute slices
    assert final_layouts(state, [spec('1g.10gb+me', 2)]) == []                    # one +me at most
    assert optimum(state, [spec('3g.40gb', 2), spec('1g.10gb')]) is None


def test_a_suboptimal_planner_is_caught(monkeypatch):
    # A planner that never keeps more than one GPU instance still produces valid layouts; the sweep must flag it.
    original = _mig_plan._match

    def at_most_one(current, items, keep):
        return None if len(keep) > 1 else original(current, items, keep)
    monkeypatch.setattr(_mig_plan, '_match', at_most_one)
    cases, failures = sweep('a100-sxm4-80gb', 40, 'mutant')
    assert cases == 40 and failures
    assert all('the optimum is' in failure and 'instances [' not in failure for failure in failures)


def test_an_invalid_layout_is_caught(monkeypatch):
    # A planner that creates the wanted instances at the first valid start, ignoring what is kept, is refused by the driver.
    def first_start(gpu, items, occupied, best=False):
        return [(_mig_plan._profile_by_id(gpu, item['profile_id'])['placements'][0][0], item['size']) for item in items]
    monkeypatch.setattr(_mig_plan, '_fit_gis', first_start)
    with pytest.raises(mig_optimum.node.SimError):
        check(_gpu('a100-sxm4-80gb', [(19, 0)]), [spec('1g.10gb', 2)])


def test_layout_problems_names_the_difference():
    gpu = _gpu('a100-sxm4-80gb', [(9, 4), (19, 0)])
    assert layout_problems(gpu, [spec('3g.40gb', placement=4), spec('1g.10gb')]) == []
    assert layout_problems(gpu, [spec('3g.40gb', placement=0), spec('1g.10gb')]) == [
        'no 3g.40gb with compute instances 3g.40gb at placement 0',
        "instances [('1g.10gb', 0, ('1g.10gb',)), ('3g.40gb', 4, ('3g.40gb',))], wanted [('1g.10gb', ('1g.10gb',))]"]
    assert layout_problems(gpu, [spec('3g.40gb', cis=['1c.3g.40gb', '2c.3g.40gb']), spec('1g.10gb')]) != []
