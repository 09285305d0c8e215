# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nvidia_mig on bad input: one clear failure, and the simulated node exactly as before.

Each case runs the module on a simulated node (``$NVMLSIM_STATE``), asserts
it failed with a message holding every fragment (the option, the bad value,
what is valid), that no NVML call that changes a GPU was made, and that the
simulator's whole state is the same before and after.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from nvmlsim import node as simnode, presets

from ansible_collections.gpucluster.bringup.plugins.modules import nvidia_mig
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, run_module
from ansible_collections.gpucluster.bringup.tests.unit.simnode import calls, node, state  # noqa: F401  pylint: disable=unused-import

SEED = 'seed-003'          # 4 x A100 80GB PCIe; GPUs 2 and 3 in MIG mode with 7 x 1g.10gb, GPUs 0 and 1 MIG off
H100 = 'h100-80gb-x8'      # 8 x H100 80GB HBM3, MIG off everywhere: only the guide's table can check the request
L40S = 'l40s-x4'           # no MIG

A80_VALID = 'valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb'
ALL_1G = [{'profile': '1g.10gb', 'count': 7}]


def uuid_of(preset, index):
    return simnode.gpu_uuid_for(preset, index)


def inst(profile, **extra):
    spec = {'profile': profile}
    spec.update(extra)
    return spec


def gpus(*entries, **top):
    args = {'gpus': list(entries)}
    args.update(top)
    return args


# id, preset, module arguments, fragments every message must hold
CASES = [
    # --- types and shapes Ansible's argument spec rejects
    ('gpus missing', SEED, {}, ('missing required arguments: gpus',)),
    ('gpus a string of words', SEED, {'gpus': 'all the gpus'}, ("gpus is 'all the gpus', expected a list of GPU entries",)),
    ('gpus element a number', SEED, {'gpus': [3]}, ('gpus[0] is 3 (int), expected a dict with the keys gpu, model, mig, instances',)),
    ('unknown top-level option', SEED, gpus({'gpu': '2', 'instances': ALL_1G}, forse=True), ('forse', 'force')),
    ('unknown key in a GPU entry', SEED, gpus({'gpu': '2', 'colour': 'red'}), ('colour', 'gpus', 'instances')),
    ('unknown key in an instance', SEED, gpus({'gpu': '2', 'instances': [inst('1g.10gb', size=2)]}), ('size', 'instances', 'profile')),
    ('instance without profile', SEED, gpus({'gpu': '2', 'instances': [{'count': 2}]}), ('missing required arguments: profile',)),
    ('count a word', SEED, gpus({'gpu': '2', 'instances': [inst('1g.10gb', count='two')]}), ('count', 'two', 'int')),
    ('count a fraction', SEED, gpus({'gpu': '2', 'instances': [inst('1g.10gb', count=1.5)]}), ('count', '1.5', 'int')),
    ('placement a word', SEED, gpus({'gpu': '2', 'instances': [inst('3g.40gb', placement='left')]}), ('placement', 'left', 'int')),
    ('mig not a boolean', SEED, gpus({'gpu': '2', 'mig': 'perhaps'}), ('mig', 'perhaps', 'bool')),
    ('force not a boolean', SEED, gpus({'gpu': '2', 'instances': ALL_1G}, force='sometimes'), ('force', 'sometimes', 'bool')),
    ('an instance a string', SEED, gpus({'gpu': '2', 'instances': [inst('3g.40gb'), '1g.10gb']}),
     ("gpus[0].instances[1] is '1g.10gb' (str), expected a dict with the keys profile, count, placement, compute_instances",)),
    ('instances a string', SEED, gpus({'gpu': '2', 'instances': '1g.10gb'}), ("gpus[0].instances is '1g.10gb', expected a list of instances",)),
    # --- ranges and shapes checked before NVML is even initialised
    ('count zero', SEED, gpus({'gpu': '2', 'instances': [inst('1g.10gb', count=0)]}),
     ('gpus[0].instances[0].count is 0', 'a whole number of 1 or more')),
    ('count negative', SEED, gpus({'gpu': '2', 'instances': [inst('3g.40gb'), inst('1g.10gb', count=-5)]}),
     ('gpus[0].instances[1].count is -5', 'a whole number of 1 or more')),
    ('count negative on a MIG-off GPU', SEED, gpus({'gpu': '0', 'instances': [inst('1g.10gb', count=-1)]}),
     ('gpus[0].instances[0].count is -1',)),
    ('placement negative', SEED, gpus({'gpu': '2', 'instances': [inst('1g.10gb', placement=-2)]}),
     ('gpus[0].instances[0].placement is -2', '0 or more')),
    ('placement with count 2', SEED, gpus({'gpu': '2', 'instances': [inst('1g.10gb', count=2, placement=1)]}),
     ('gpus[0].instances[0].placement is 1 with count 2', 'count 1')),
    ('empty profile name', SEED, gpus({'gpu': '2', 'instances': [inst('')]}), ("gpus[0].instances[0].profile is ''", '1g.10gb')),
    ('profile with MIG prefix', SEED, gpus({'gpu': '2', 'instances': [inst('MIG 1g.10gb')]}),
     ("gpus[0].instances[0].profile is 'MIG 1g.10gb'", 'no spaces')),
    ('empty compute_instances', SEED, gpus({'gpu': '2', 'instances': [inst('3g.40gb', compute_instances=[])]}),
     ('gpus[0].instances[0].compute_instances is []', 'leave it out')),
    ('negative GPU index', SEED, gpus({'gpu': '-1', 'instances': ALL_1G}),
     ("gpus[0].gpu is '-1'", 'a GPU index (0, 1, ...), a GPU UUID (GPU-...) or "all"')),
    ('GPU given by name', SEED, gpus({'gpu': 'first', 'instances': ALL_1G}), ("gpus[0].gpu is 'first'", 'GPU UUID')),
    ('empty model filter', SEED, gpus({'gpu': 'all', 'model': '', 'mig': False}), ("gpus[0].model is ''", 'A100')),
    ('mig null would disable MIG', SEED, gpus({'gpu': '2', 'mig': None}), ("argument 'mig'", 'NoneType', 'bool')),
    ('gpu null', SEED, gpus({'gpu': None, 'instances': ALL_1G}), ("gpus[0].gpu is ''", 'a GPU index (0, 1, ...)')),
    ('instances with mig false', SEED, gpus({'gpu': '2', 'mig': False, 'instances': ALL_1G}),
     ('gpus[0]: instances are given with mig: false', 'set mig: true')),
    ('instances with mig false on a GPU without MIG', L40S, gpus({'gpu': '0', 'mig': False, 'instances': [inst('1g.10gb')]}),
     ('gpus[0]: instances are given with mig: false',)),
    # --- GPU selection
    ('GPU index out of range', SEED, gpus({'gpu': '4', 'instances': ALL_1G}),
     ('gpus[0]: GPU index 4 is out of range', 'GPU indices 0, 1, 2, 3')),
    ('unknown GPU UUID', SEED, gpus({'gpu': 'GPU-00000000-dead-beef-0000-000000000000', 'instances': ALL_1G}),
     ('gpus[0]: no GPU has UUID GPU-00000000-dead-beef-0000-000000000000', uuid_of(SEED, 0))),
    ('same GPU twice', SEED, gpus({'gpu': '3', 'instances': ALL_1G}, {'gpu': '2', 'instances': ALL_1G}, {'gpu': '2', 'mig': False}),
     ('gpus[2]: GPU 2 (', 'is already selected by gpus[1]', 'select each GPU once')),
    ('same GPU by index and UUID', SEED, gpus({'gpu': '2', 'instances': ALL_1G}, {'gpu': uuid_of(SEED, 2), 'instances': ALL_1G}),
     ('gpus[1]: GPU 2 (%s' % uuid_of(SEED, 2), 'already selected by gpus[0]')),
    ('all and then one GPU', SEED, gpus({'gpu': 'all', 'model': 'A100', 'mig': False}, {'gpu': '3', 'instances': ALL_1G}),
     ('gpus[1]: GPU 3 (', 'already selected by gpus[0]')),
    ('model mismatch', SEED, gpus({'gpu': '2', 'model': 'H100', 'instances': ALL_1G}), ("is not a H100 GPU (model filter 'H100')",)),
    ('MIG on a GPU without MIG', L40S, gpus({'gpu': '1', 'instances': [inst('1g.10gb')]}),
     ('GPU 1 (%s, NVIDIA L40S) does not support MIG' % uuid_of(L40S, 1), 'set mig: false')),
    # --- the GPU's profile table (read from the GPU, lent by a GPU of the same model, or the MIG User Guide's)
    ('unknown profile on a MIG GPU', SEED, gpus({'gpu': '2', 'instances': [inst('1g.5gb', count=7)]}),
     ("GPU 2 (%s, NVIDIA A100 80GB PCIe): instances[0] profile '1g.5gb' is not a MIG profile of this GPU" % uuid_of(SEED, 2), A80_VALID)),
    ('unknown profile on a MIG-off GPU, table lent', SEED, gpus({'gpu': '0', 'instances': [inst('2g.10gb')]}),
     ("GPU 0 (%s, NVIDIA A100 80GB PCIe): instances[0] profile '2g.10gb'" % uuid_of(SEED, 0), A80_VALID)),
    ('unknown profile on a MIG-off H100', H100, gpus({'gpu': '5', 'instances': [inst('3g.20gb')]}),
     ("GPU 5 (%s, NVIDIA H100 80GB HBM3): instances[0] profile '3g.20gb' is not a MIG profile" % uuid_of(H100, 5), A80_VALID)),
    ('a good GPU then a bad one: nothing changes', H100, gpus({'gpu': '0', 'instances': ALL_1G}, {'gpu': '1', 'instances': [inst('1g.5gb')]}),
     ("GPU 1 (%s, NVIDIA H100 80GB HBM3): instances[0] profile '1g.5gb'" % uuid_of(H100, 1),)),
    ('too many of a profile', SEED, gpus({'gpu': '2', 'instances': [inst('1g.10gb', count=8)]}),
     ('too many 1g.10gb instances: 8 wanted, this GPU allows at most 7',)),
    ('two +me instances', H100, gpus({'gpu': '0', 'instances': [inst('1g.10gb+me', count=2)]}),
     ('too many 1g.10gb+me instances: 2 wanted, this GPU allows at most 1',)),
    ('more compute slices than the GPU has', SEED, gpus({'gpu': '3', 'instances': [inst('4g.40gb'), inst('2g.20gb', count=2)]}),
     ('the instances 4g.40gb, 2 x 2g.20gb need 8 compute slices; this GPU has 7',)),
    ('layout that cannot be placed', H100, gpus({'gpu': '2', 'instances': [inst('3g.40gb', count=2), inst('1g.10gb')]}),
     ('the instances 2 x 3g.40gb, 1g.10gb cannot be placed together on this GPU', 'no combination of valid placements fits')),
    ('memory that cannot be placed', SEED, gpus({'gpu': '2', 'instances': [inst('1g.20gb', count=4), inst('1g.10gb')]}),
     ('the instances 4 x 1g.20gb, 1g.10gb cannot be placed together',)),
    ('placement not a valid start', SEED, gpus({'gpu': '2', 'instances': [inst('3g.40gb', placement=2)]}),
     ('instances[0] placement 2 is not a valid start for 3g.40gb; valid starts: 0, 4',)),
    ('placement past the GPU', H100, gpus({'gpu': '0', 'instances': [inst('1g.10gb', placement=7)]}),
     ('instances[0] placement 7 is not a valid start for 1g.10gb; valid starts: 0, 1, 2, 3, 4, 5, 6',)),
    ('overlapping placements', SEED, gpus({'gpu': '3', 'instances': [inst('4g.40gb', placement=0), inst('2g.20gb', placement=2)]}),
     ('placements 0:4 of 4g.40gb and 2:2 of 2g.20gb overlap',)),
    ('unknown compute instance profile', SEED, gpus({'gpu': '2', 'instances': [inst('1g.10gb', compute_instances=['2c.1g.10gb'])]}),
     ("instances[0] compute instance profile '2c.1g.10gb' is not offered by a 1g.10gb GPU instance; valid: 1g.10gb",)),
    ('compute instances over the GPU instance', SEED,
     gpus({'gpu': '2', 'instances': [inst('1g.10gb', count=6, compute_instances=['1g.10gb', '1g.10gb'])]}),
     ('instances[0] asks for 2 x 1g.10gb compute instances; a 1g.10gb GPU instance holds at most 1',)),
]


@pytest.mark.parametrize('case_id, preset, args, fragments', CASES, ids=[case[0] for case in CASES])
def test_bad_input(case_id, preset, args, fragments, node, calls):
    before = node(preset)
    outcome = bad_input(nvidia_mig.main, args, *fragments)
    assert calls == [], 'changing NVML calls on bad input: %s' % calls
    assert state() == before, 'the simulated node changed'
    assert not outcome.result.get('changed'), outcome.result


def test_there_are_enough_cases():
    assert len(CASES) >= 25
    assert len(set(case[0] for case in CASES)) == len(CASES)


def test_presets_are_what_the_cases_assume():
    assert presets.PRESETS[SEED].mig and sorted(presets.PRESETS[SEED].mig) == [2, 3]
    assert presets.PRESETS[H100].mig is None


def test_check_mode_is_refused_the_same_way(node, calls):
    before = node(SEED)
    outcome = bad_input(nvidia_mig.main, gpus({'gpu': '2', 'instances': [inst('1g.10gb', count=-1)]}), 'count is -1', check_mode=True)
    assert calls == [] and state() == before and not outcome.result.get('changed')


def test_good_input_on_the_same_node_changes_it(node):
    # The guard above can fail: the same kind of call with good values does change the simulated node.
    before = node(SEED)
    outcome = run_module(nvidia_mig.main, gpus({'gpu': '2', 'instances': [inst('3g.40gb'), inst('1g.10gb', count=4)]}))
    assert not outcome.failed and outcome.result['changed'] is True
    assert state() != before
