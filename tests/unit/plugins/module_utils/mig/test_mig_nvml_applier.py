# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_mig_nvml's Applier over a recording stand-in for Nvml (issue 43): the order of its NVML changes, the CI placements
it picks when the plan has none, the ids its rollback remaps; and Nvml.read_gpu over a stand-in client (ordering and
fallbacks). test_mig_nvml.py drives the same code against the NVML simulator."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_nvml


class Recorder(object):
    """Nvml's changing methods: each call recorded; new GIs get ids from 20 up, new CIs from 50 up."""

    def __init__(self, table=None):
        self.calls = []
        self.table = table or []
        self.next_gi, self.next_ci = 20, 50

    def destroy_ci(self, index, gi_id, ci_id):
        self.calls.append(('destroy_ci', index, gi_id, ci_id))

    def destroy_gi(self, index, gi_id):
        self.calls.append(('destroy_gi', index, gi_id))

    def create_gi(self, index, profile_id, start, size, what):
        self.calls.append(('create_gi', index, profile_id, start, size, what))
        self.next_gi += 1
        return self.next_gi - 1

    def create_ci(self, index, gi_id, name, start):
        self.calls.append(('create_ci', index, gi_id, name, start))
        self.next_ci += 1
        return self.next_ci - 1

    def ci_table_of(self, index, gi_id):
        self.calls.append(('ci_table_of', index, gi_id))
        return self.table


TABLE = [{'name': '1c.2g.20gb', 'id': 0, 'slices': 1, 'instance_count': 2, 'placements': [[0, 1], [1, 1]]},
         {'name': '2g.20gb', 'id': 1, 'slices': 2, 'instance_count': 1, 'placements': [[0, 2]]}]


def test_cis_without_a_placement_are_placed_with_the_gis_own_table():
    nvml = Recorder(TABLE)
    applier = _mig_nvml.Applier(nvml, {'index': 1, 'instances': []})
    applier._create_cis(7, [('1c.2g.20gb', None), ('1c.2g.20gb', None)])
    assert nvml.calls == [('ci_table_of', 1, 7), ('create_ci', 1, 7, '1c.2g.20gb', 0), ('create_ci', 1, 7, '1c.2g.20gb', 1)]
    assert applier.journal == [('created_ci', 7, 50), ('created_ci', 7, 51)]


def test_cis_with_placements_are_created_in_start_order_without_asking_the_table():
    nvml = Recorder(TABLE)
    applier = _mig_nvml.Applier(nvml, {'index': 0, 'instances': []})
    applier._create_cis(3, [('b', 4), ('a', 0)])
    assert nvml.calls == [('create_ci', 0, 3, 'a', 0), ('create_ci', 0, 3, 'b', 4)]


def test_a_partly_placed_list_is_placed_again_and_an_unfit_one_left_to_the_driver():
    nvml = Recorder(TABLE)
    applier = _mig_nvml.Applier(nvml, {'index': 0, 'instances': []})
    applier._create_cis(3, [('1c.2g.20gb', 1), ('1c.2g.20gb', None)])
    assert nvml.calls == [('ci_table_of', 0, 3), ('create_ci', 0, 3, '1c.2g.20gb', 0), ('create_ci', 0, 3, '1c.2g.20gb', 1)]
    nvml = Recorder(TABLE)
    applier = _mig_nvml.Applier(nvml, {'index': 0, 'instances': []})
    applier._create_cis(3, [('9g.90gb', None), ('1c.2g.20gb', 1)])
    # no fit (a name the table lacks): the driver places the unplaced one, after the placed ones
    assert nvml.calls == [('ci_table_of', 0, 3), ('create_ci', 0, 3, '1c.2g.20gb', 1), ('create_ci', 0, 3, '9g.90gb', None)]


GPU = {'index': 2, 'instances': [
    {'gi_id': 5, 'profile_id': 14, 'profile': '2g.20gb', 'start': 4, 'size': 2,
     'compute_instances': [{'ci_id': 0, 'profile': '2g.20gb', 'start': 0, 'size': 2}, {'ci_id': 1, 'profile': '1c.2g.20gb', 'start': 1, 'size': 1}]}]}


def test_apply_and_rollback_remap_the_recreated_gi():
    nvml = Recorder(TABLE)
    applier = _mig_nvml.Applier(nvml, GPU)
    gi = GPU['instances'][0]
    applier.apply({'destroy_cis': [{'gi_id': 5, 'ci_id': 1}], 'destroy_gis': [dict(gi, compute_instances=gi['compute_instances'][:1])],
                   'create_gis': [{'profile': '1g.10gb', 'profile_id': 19, 'start': 4, 'size': 1, 'compute_instances': [('1g.10gb', 0)]}],
                   'create_cis': [{'gi_id': 9, 'compute_instances': [('1c.2g.20gb', 1)]}]})
    assert nvml.calls == [('destroy_ci', 2, 5, 1), ('destroy_ci', 2, 5, 0), ('destroy_gi', 2, 5),
                          ('create_gi', 2, 19, 4, 1, '1g.10gb at 4:1'), ('create_ci', 2, 20, '1g.10gb', 0),
                          ('create_ci', 2, 9, '1c.2g.20gb', 1)]
    nvml.calls = []
    applier.rollback()
    assert nvml.calls == [('destroy_ci', 2, 9, 51), ('destroy_ci', 2, 20, 50), ('destroy_gi', 2, 20),
                          ('create_gi', 2, 14, 4, 2, '2g.20gb at 4:2'), ('create_ci', 2, 21, '2g.20gb', 0),
                          ('create_ci', 2, 21, '1c.2g.20gb', 1)]


def test_rollback_undoes_the_created_cis_before_it_recreates_a_gi():
    nvml = Recorder()
    applier = _mig_nvml.Applier(nvml, GPU)
    applier.journal = [('destroyed_gi', dict(GPU['instances'][0])), ('created_ci', 5, 60)]
    nvml.next_gi = 30
    # reversed: the CI first (its GI not re-created yet), then the GI comes back as 30
    applier.rollback()
    assert nvml.calls == [('destroy_ci', 2, 5, 60), ('create_gi', 2, 14, 4, 2, '2g.20gb at 4:2')]


# ---------------------------------------------------------------- read_gpu over a stand-in client

class Info(object):
    def __init__(self, **fields):
        self.__dict__.update(fields)


class Client(_nvml.Client):
    """The client's readers, answering from a fixed MIG GPU: GIs 9 and 3 (in that order), CIs 2 and 0 in GI 3."""

    def __init__(self):
        self.asked = []

    def handle(self, index):
        return 'h%d' % index

    def call(self, name, *args):
        return {'nvmlDeviceGetUUID': b'GPU-1', 'nvmlDeviceGetName': 'NVIDIA A100', 'nvmlDeviceGetMinorNumber': 4}[name]

    def mig_mode(self, handle):
        return (True, True)

    def processes(self, handle):
        return []

    def mig_devices(self, handle):
        return [{'gi_id': 3, 'ci_id': 2, 'uuid': 'MIG-32'}]

    def gi_profiles(self, handle):
        return [{'name': '1g.10gb', 'id': 19, 'slices': 1, 'instance_count': 7, 'memory_mb': 9728}]

    def gi_placements(self, handle, profile_id):
        return [[0, 1]]

    def gpu_instances(self, handle, profile):
        return [('gi9', Info(id=9, profileId=19, placement=Info(start=1, size=1))),
                ('gi3', Info(id=3, profileId=19, placement=Info(start=0, size=1)))]

    def ci_profiles(self, gi):
        self.asked.append(gi)
        return [{'name': '1g.10gb', 'id': 0, 'slices': 1, 'instance_count': 1, 'placements': [[0, 1]]}]

    def compute_instances(self, gi, ci_profile):
        if gi == 'gi9':
            return []
        return [Info(id=2, profileId=7, placement=Info(start=0, size=1)), Info(id=0, profileId=0, placement=Info(start=0, size=1))]


def test_read_gpu_sorts_and_names_what_it_reads():
    client = Client()
    nvml = _mig_nvml.Nvml(client)
    assert nvml.client is client
    gpu = nvml.read_gpu(1)
    assert client.asked == ['gi9']  # every GI of a profile offers the same CI profiles: asked once
    assert gpu['instances'] == [
        {'gi_id': 3, 'profile_id': 19, 'start': 0, 'size': 1, 'compute_instances': [
            {'ci_id': 0, 'profile': '1g.10gb', 'profile_id': 0, 'start': 0, 'size': 1, 'uuid': None},
            {'ci_id': 2, 'profile': '7', 'profile_id': 7, 'start': 0, 'size': 1, 'uuid': 'MIG-32'}]},
        {'gi_id': 9, 'profile_id': 19, 'start': 1, 'size': 1, 'compute_instances': []}]
    assert (gpu['uuid'], gpu['name'], gpu['minor'], gpu['mig_capable']) == ('GPU-1', 'NVIDIA A100', 4, True)


def test_blocking_processes_read_device_holders_for_minor_zero(monkeypatch):
    asked = []
    monkeypatch.setattr(_mig_nvml, 'device_holders', lambda minor: asked.append(minor) or [{'pid': 9, 'name': 'x'}])
    assert _mig_nvml._blocking({'processes': [], 'minor': 0}) == [{'pid': 9, 'name': 'x'}]
    assert _mig_nvml._blocking({'processes': [{'pid': 1, 'name': 'a', 'gi_id': None}], 'minor': None}) == [{'pid': 1, 'name': 'a'}]
    assert asked == [0]
