# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_nvml.Client's own logic over a stand-in for the bindings (issue 43): the constants it falls back to where the
bindings lack them, which errors each reader skips and which it raises, whole results and whole messages.
test_nvml_client.py runs the client over the real bindings and the simulated library."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import builtins
import sys

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml as nvml


class NVMLError(Exception):
    def __init__(self, value):
        super(NVMLError, self).__init__(value)
        self.value = value

    def __str__(self):
        return 'code %s' % self.value


def fails(code):
    def call(*args):
        raise NVMLError(code)
    return call


class Lib(object):
    """The bindings: only what a test gives (no NVML_* constants unless given), every call recorded."""

    def __init__(self, **funcs):
        self.NVMLError = NVMLError
        self.calls = []
        for name, value in funcs.items():
            if callable(value) and name.startswith('nvml'):
                setattr(self, name, self._recorded(name, value))
            else:
                setattr(self, name, value)

    def _recorded(self, name, func):
        def call(*args):
            self.calls.append((name,) + args)
            return func(*args)
        return call


def raised(call, *args):
    with pytest.raises(nvml.NvmlError) as caught:
        call(*args)
    return caught.value


def test_profile_name_message_whole():
    with pytest.raises(ValueError) as caught:
        nvml.profile_name(b' NVIDIA A100 MIG 1g ')
    assert str(caught.value) == ('NVML name \'NVIDIA A100 MIG 1g\' does not end in "MIG <profile>" (e.g. "MIG 1g.5gb" or '
                                 '"NVIDIA A100-SXM4-40GB MIG 1g.5gb")')
    assert nvml.profile_name(' MIG  2g.20gb ') == '2g.20gb'
    assert nvml.profile_name('A MIG B MIG 3g.40gb') == '3g.40gb'
    assert nvml.profile_name('MIGHTY GPU MIG 1g.5gb') == '1g.5gb'


def test_nvml_error_defaults():
    exc = nvml.NvmlError('nvmlX', 'Unknown Error')
    assert (str(exc), exc.call, exc.detail, exc.kind, exc.mig_index, exc.unavailable) == (
        'nvmlX failed: Unknown Error', 'nvmlX', 'Unknown Error', 'other', None, False)
    exc = nvml.NvmlError('nvmlX', 'd', 'function_not_found', 'own text')
    assert (str(exc), exc.unavailable) == ('own text', True)


def test_check_mode_skip_whole():
    assert nvml.check_mode_skip('no pynvml') == ('check mode: the GPUs were not read: no pynvml. In a real run the nvml stage (role '
                                                 'gpucluster.bringup.nvml) installs them before this task')


def test_uuid_text_masks_each_value_to_a_byte():
    assert nvml.uuid_text([0x100] * 15 + [0x1ff]) == '00000000-0000-0000-0000-0000000000ff'
    with pytest.raises(ValueError) as caught:
        nvml.uuid_text([1] * 15)
    assert str(caught.value) == 'a UUID is 16 bytes, got 15'


def test_text_of_every_kind():
    assert [nvml.text(value) for value in (b'caf\xc3\xa9 \xff', 'x', None, 7, 0)] == ['caf\xe9 \ufffd', 'x', None, '7', '0']


class Importer(object):
    """``import pynvml`` fails the first ``failures`` times, then gives ``module``."""

    def __init__(self, monkeypatch, failures, module):
        self.tries = 0
        self.failures = failures
        self.module = module
        real = builtins.__import__

        def fake(name, *args, **kwargs):
            if name != 'pynvml':
                return real(name, *args, **kwargs)
            self.tries += 1
            if self.tries <= self.failures:
                raise ImportError('No module named pynvml (try %d)' % self.tries)
            return self.module
        monkeypatch.setattr(builtins, '__import__', fake)


def test_import_bindings_from_the_pip_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, 'path', list(sys.path))
    (tmp_path / 'pynvml.py').write_text('')
    module = object()
    importer = Importer(monkeypatch, 1, module)
    assert nvml.import_bindings(str(tmp_path)) == (module, None)
    assert importer.tries == 2 and sys.path[-1] == str(tmp_path) and sys.path.count(str(tmp_path)) == 1
    importer = Importer(monkeypatch, 1, module)
    assert nvml.import_bindings(str(tmp_path)) == (module, None)
    assert sys.path.count(str(tmp_path)) == 1
    Importer(monkeypatch, 2, module)
    assert nvml.import_bindings(str(tmp_path)) == (None, 'the Python NVML bindings in %s cannot be imported by %s: No module named pynvml '
                                                   '(try 2)' % (tmp_path, sys.executable))


def test_import_bindings_without_any(tmp_path, monkeypatch):
    Importer(monkeypatch, 1, None)
    assert nvml.import_bindings(str(tmp_path)) == (
        None, 'the Python NVML bindings cannot be imported by %s (No module named pynvml (try 1); nor is there %s/pynvml.py); install '
              'nvidia-ml-py (the gpucluster.bringup.nvml role: Debian python3-pynvml, or nvml_bindings: pip)' % (sys.executable, tmp_path))
    Importer(monkeypatch, 1, None)
    assert nvml.import_bindings('')[1].endswith('(No module named pynvml (try 1); nor is there /pynvml.py); install nvidia-ml-py (the '
                                                'gpucluster.bringup.nvml role: Debian python3-pynvml, or nvml_bindings: pip)')
    Importer(monkeypatch, 1, None)
    assert '; nor is there /usr/local/lib/gpucluster-nvml/pynvml.py)' in nvml.import_bindings()[1]
    (tmp_path / 'pynvml.py').mkdir()
    Importer(monkeypatch, 1, None)
    assert nvml.import_bindings(str(tmp_path))[0] is None


@pytest.mark.parametrize('code, kind', [(2, 'invalid_argument'), (3, 'not_supported'), (4, 'no_permission'), (6, 'not_found'),
                                        (13, 'function_not_found'), (15, 'vanished'), (999, 'other'), (None, 'other')])
def test_error_kinds_by_the_codes_of_nvml_h(code, kind):
    client = nvml.Client(Lib(nvmlX=fails(code)))
    exc = raised(client.call, 'nvmlX', 1)
    assert (exc.call, exc.detail, exc.kind, str(exc)) == ('nvmlX', 'code %s' % code, kind, 'nvmlX failed: code %s' % code)


def test_error_kinds_by_the_bindings_constants():
    client = nvml.Client(Lib(nvmlX=fails(3), NVML_ERROR_NOT_SUPPORTED=30, NVML_ERROR_INVALID_ARGUMENT=3))
    assert raised(client.call, 'nvmlX').kind == 'invalid_argument'


def test_call_and_optional():
    client = nvml.Client(Lib(nvmlA=lambda *a: a, nvmlGone=fails(15), nvmlOld=fails(3)))
    assert client.call('nvmlA', 1, 2) == (1, 2)
    exc = raised(client.call, 'nvmlNew')
    assert (str(exc), exc.kind) == ('nvmlNew failed: this nvidia-ml-py has no nvmlNew', 'function_not_found')
    assert client.optional('nvmlNew') is None and client.optional('nvmlOld') is None
    assert client.optional('nvmlA', 3) == (3,)
    assert raised(client.optional, 'nvmlGone').kind == 'vanished'


def test_session_shuts_down_after_an_error_and_init_says_why():
    lib = Lib(nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: '4')
    with pytest.raises(RuntimeError):
        with nvml.session(lib) as client:
            assert client.count() == 4
            raise RuntimeError('x')
    assert [c[0] for c in lib.calls] == ['nvmlInit', 'nvmlDeviceGetCount', 'nvmlShutdown']
    exc = raised(nvml.Client(Lib(nvmlInit=fails(9))).init)
    assert (exc.call, exc.detail, exc.kind, str(exc)) == ('nvmlInit', 'code 9', 'uninitialized',
                                                          'nvmlInit failed: code 9; is the NVIDIA driver loaded (nvidia-smi)?')
    nvml.Client(Lib(nvmlShutdown=fails(1))).shutdown()


def test_handle_mig_mode_cpus():
    lib = Lib(nvmlDeviceGetHandleByIndex=lambda i: 'h%d' % i, nvmlDeviceGetMigMode=lambda h: (1, 0), NVML_DEVICE_MIG_ENABLE=1,
              nvmlDeviceGetCpuAffinity=lambda h, n: [3.0] * 2)
    client = nvml.Client(lib)
    assert client.handle(2) == 'h2'
    assert client.mig_mode('h') == (True, False)
    lib.nvmlDeviceGetMigMode = lambda h: (0, 1)
    assert client.mig_mode('h') == (False, True)
    assert client.cpus('h') == [3, 3]
    assert lib.calls[-1] == ('nvmlDeviceGetCpuAffinity', 'h', 64)
    lib = Lib(nvmlDeviceGetMigMode=fails(3), nvmlDeviceGetCpuAffinity=fails(3))
    assert (nvml.Client(lib).mig_mode('h'), nvml.Client(lib).cpus('h')) == (None, None)


class Proc(object):
    def __init__(self, pid, gi, ci):
        self.pid, self.gpuInstanceId, self.computeInstanceId = pid, gi, ci


def test_processes_whole():
    names = {1: b'python3'}

    def name(pid):
        if pid not in names:
            raise NVMLError(6)
        return names[pid]
    lib = Lib(nvmlDeviceGetComputeRunningProcesses=lambda h: [Proc(1, nvml.ID_ANY, nvml.ID_ANY), Proc(2, 0, 0), Proc(3, 7, nvml.ID_ANY - 1)],
              nvmlSystemGetProcessName=name)
    assert nvml.Client(lib).processes('h') == [{'pid': 1, 'name': 'python3', 'gi_id': None, 'ci_id': None},
                                               {'pid': 2, 'name': None, 'gi_id': 0, 'ci_id': 0},
                                               {'pid': 3, 'name': None, 'gi_id': 7, 'ci_id': 0xFFFFFFFE}]


def test_health_whole():
    lib = Lib(NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1, NVML_VOLATILE_ECC=0, nvmlDeviceGetTotalEccErrors=lambda h, t, c: 5,
              nvmlDeviceGetRetiredPagesPendingStatus=lambda h: 1, nvmlDeviceGetRemappedRows=lambda h: (0, 1, 0, 1))
    assert nvml.Client(lib).health('h') == {'ecc_uncorrected': 5, 'retired_pages_pending': True, 'remap_pending': False, 'remap_failure': True}
    assert lib.calls[0] == ('nvmlDeviceGetTotalEccErrors', 'h', 1, 0)
    lib = Lib(nvmlDeviceGetRetiredPagesPendingStatus=lambda h: 0, nvmlDeviceGetRemappedRows=lambda h: (1, 1, 1, 0), NVML_FEATURE_ENABLED=0)
    assert nvml.Client(lib).health('h') == {'retired_pages_pending': True, 'remap_pending': True, 'remap_failure': False}
    lib = Lib(nvmlDeviceGetRetiredPagesPendingStatus=fails(3), nvmlDeviceGetRemappedRows=fails(13))
    assert nvml.Client(lib).health('h') == {'retired_pages_pending': None}
    lib = Lib(nvmlDeviceGetRetiredPagesPendingStatus=lambda h: 0)
    assert nvml.Client(lib).health('h') == {'retired_pages_pending': False}


def test_driver_version():
    assert nvml.Client(Lib(nvmlSystemGetDriverVersion=lambda: b'570.1')).driver_version() == '570.1'


def links_lib(states, counter=lambda h, link, c: link * 10 + c, **extra):
    def state(h, link):
        if link >= len(states):
            raise NVMLError(2)
        if isinstance(states[link], Exception):
            raise states[link]
        return states[link]
    return Lib(nvmlDeviceGetNvLinkState=state, nvmlDeviceGetNvLinkErrorCounter=counter, **extra)


def test_nvlinks_whole():
    lib = links_lib([1, 0], NVML_FEATURE_ENABLED=1)
    assert nvml.Client(lib).nvlinks('h') == [
        {'link': 0, 'active': True, 'replay': 0, 'recovery': 1, 'crc_flit': 2, 'crc_data': 3},
        {'link': 1, 'active': False, 'replay': 10, 'recovery': 11, 'crc_flit': 12, 'crc_data': 13}]
    assert nvml.Client(links_lib([NVMLError(3)])).nvlinks('h') == []
    assert nvml.Client(links_lib([NVMLError(2), 1])).nvlinks('h') == []
    assert nvml.Client(links_lib([1, NVMLError(13)])).nvlinks('h')[0]['active'] is True
    assert raised(nvml.Client(links_lib([1, NVMLError(15)])).nvlinks, 'h').kind == 'vanished'


def test_nvlinks_stops_at_the_bindings_link_count():
    assert len(nvml.Client(links_lib([1] * 30)).nvlinks('h')) == 18
    assert len(nvml.Client(links_lib([1] * 30, NVML_NVLINK_MAX_LINKS=2)).nvlinks('h')) == 2


def test_nvlink_counters_unavailable_or_raised():
    def counter(h, link, c):
        if c == 1:
            raise NVMLError(3)
        if c == 2:
            raise NVMLError(2)
        return 7
    assert nvml.Client(links_lib([0], counter)).nvlinks('h') == [
        {'link': 0, 'active': False, 'replay': 7, 'recovery': None, 'crc_flit': None, 'crc_data': 7}]
    assert raised(nvml.Client(links_lib([0], fails(999))).nvlinks, 'h').kind == 'other'


class Pci(object):
    def __init__(self, device):
        self.pciDeviceId = device


def test_nvlink_remote_device_ids():
    def remote(h, link):
        if link == 2:
            raise NVMLError(3)
        return Pci(str(0x22A310DE + link))
    lib = links_lib([1, 0, 1, 1], NVML_FEATURE_ENABLED=1, nvmlDeviceGetNvLinkRemotePciInfo=remote)
    client = nvml.Client(lib)
    assert client.nvlink_remote_device_ids('h') == [0x22A310DE, 0x22A310DE + 3]
    given = [{'link': 5, 'active': True}, {'link': 0, 'active': False}]
    assert client.nvlink_remote_device_ids('h', given) == [0x22A310DE + 5]
    assert client.nvlink_remote_device_ids('h', []) == []


def test_fabric_none_and_errors():
    assert nvml.Client(Lib()).fabric('h') is None
    assert nvml.Client(Lib(nvmlDeviceGetGpuFabricInfo=fails(3))).fabric('h') is None
    assert raised(nvml.Client(Lib(nvmlDeviceGetGpuFabricInfo=fails(4))).fabric, 'h').kind == 'no_permission'

    def fill(h, ref):
        info = ref._obj
        info.state, info.status, info.cliqueId = 3, 5, 77
        info.clusterUuid[15] = 1
    assert nvml.Client(Lib(nvmlDeviceGetGpuFabricInfo=fill)).fabric('h') == {
        'state': 3, 'status': 5, 'cluster_uuid': '00000000-0000-0000-0000-000000000001', 'clique_id': 77}


def test_fleet_health_defaults_whole():
    lib = links_lib([], nvmlDeviceGetPersistenceMode=lambda h: 1, nvmlDeviceGetCurrPcieLinkGeneration=lambda h: 4,
                    nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16, nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5,
                    nvmlDeviceGetMaxPcieLinkWidth=lambda h: 32, nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 4,
                    nvmlDeviceGetTemperature=lambda h, s: 40 + s, nvmlDeviceGetTemperatureThreshold=lambda h, t: 90 + t)
    assert nvml.Client(lib).fleet_health('h') == {
        'persistence': True, 'pcie': {'gen': 4, 'width': 16, 'max_gen': 5, 'max_width': 32}, 'clock_reasons': 4,
        'temperature': 40, 'temperature_slowdown': 91, 'nvlinks': [], 'nvlink_remote_ids': [], 'fabric': None}
    lib = links_lib([], nvmlDeviceGetPersistenceMode=lambda h: 0, NVML_FEATURE_ENABLED=0, NVML_TEMPERATURE_GPU=7,
                    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN=8, nvmlDeviceGetTemperature=lambda h, s: s,
                    nvmlDeviceGetTemperatureThreshold=lambda h, t: t, nvmlDeviceGetGpuMaxPcieLinkGeneration=lambda h: 6,
                    nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5, nvmlDeviceGetCurrentClocksEventReasons=lambda h: 1,
                    nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 2)
    health = nvml.Client(lib).fleet_health('h')
    assert (health['persistence'], health['pcie']['max_gen'], health['clock_reasons'], health['temperature'],
            health['temperature_slowdown']) == (True, 6, 1, 7, 8)
    lib = links_lib([], nvmlDeviceGetGpuMaxPcieLinkGeneration=fails(3), nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5)
    health = nvml.Client(lib).fleet_health('h')
    assert (health['persistence'], health['pcie'], health['clock_reasons']) == (None, dict.fromkeys(('gen', 'width', 'max_gen', 'max_width')),
                                                                                None)


class Item(object):
    def __init__(self, **fields):
        self.__dict__.update(fields)


def array_call(values):
    """An NVML list call: a NULL array asks for the count; else the array is filled."""
    def call(handle, key, array, count):
        if array is None:
            count._obj.value = len(values)
            return
        for position, value in enumerate(values[:len(array)]):
            array[position].start, array[position].size = value
        count._obj.value = min(len(values), len(array))
    return call


def placement_type():
    from ctypes import Structure, c_uint

    class Placement(Structure):
        _fields_ = [('start', c_uint), ('size', c_uint)]
    return Placement


def test_placements_and_empty_lists():
    lib = Lib(nvmlDeviceGetGpuInstancePossiblePlacements=array_call([(0, 1), (4, 2)]), c_nvmlGpuInstancePlacement_t=placement_type())
    assert nvml.Client(lib).gi_placements('h', 19) == [[0, 1], [4, 2]]
    lib = Lib(nvmlDeviceGetGpuInstancePossiblePlacements=array_call([]), c_nvmlGpuInstancePlacement_t=placement_type())
    assert nvml.Client(lib).gi_placements('h', 19) == []
    assert len(lib.calls) == 1


def test_instance_arrays_have_room_for_one_at_least():
    sizes = []

    def instances(handle, key, array, count):
        sizes.append(len(array))
        count._obj.value = 0
    lib = Lib(nvmlDeviceGetGpuInstances=instances, c_nvmlGpuInstance_t=placement_type())
    assert nvml.Client(lib).gpu_instances('h', {'id': 1, 'instance_count': 0}) == []
    assert sizes == [1]


def test_gi_profiles_skip_and_raise():
    def info(h, enum):
        if enum == 0:
            return Item(name=b'MIG 1g.10gb', id=0, sliceCount=1, instanceCount=7, memorySizeMB='9984')
        raise NVMLError(3 if enum == 1 else 2)
    client = nvml.Client(Lib(nvmlDeviceGetGpuInstanceProfileInfo=info))
    assert client.gi_profiles('h') == [{'name': '1g.10gb', 'id': 0, 'slices': 1, 'instance_count': 7, 'memory_mb': 9984}]
    assert len(client.lib.calls) == 32
    client = nvml.Client(Lib(nvmlDeviceGetGpuInstanceProfileInfo=info, NVML_GPU_INSTANCE_PROFILE_COUNT=1))
    assert len(client.gi_profiles('h')) == 1 and len(client.lib.calls) == 1
    assert raised(nvml.Client(Lib(nvmlDeviceGetGpuInstanceProfileInfo=fails(15))).gi_profiles, 'h').kind == 'vanished'


def test_ci_profiles_skip_any_error():
    def info(gi, enum, engine):
        if enum == 1:
            raise NVMLError(15)
        return Item(name='MIG 1c.2g.20gb', id=enum, sliceCount=1, instanceCount=2)
    lib = Lib(nvmlGpuInstanceGetComputeInstanceProfileInfo=info, NVML_COMPUTE_INSTANCE_PROFILE_COUNT=3,
              NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED=0, c_nvmlComputeInstancePlacement_t=placement_type(),
              nvmlGpuInstanceGetComputeInstancePossiblePlacements=array_call([(0, 1), (1, 1)]))
    assert nvml.Client(lib).ci_profiles('gi') == [
        {'name': '1c.2g.20gb', 'id': 0, 'slices': 1, 'instance_count': 2, 'placements': [[0, 1], [1, 1]]},
        {'name': '1c.2g.20gb', 'id': 2, 'slices': 1, 'instance_count': 2, 'placements': [[0, 1], [1, 1]]}]


def test_mig_devices_skip_empty_slots_and_name_the_device():
    def by_index(h, index):
        if index == 0:
            raise NVMLError(6)
        if index == 2:
            raise NVMLError(999)
        return 'mig%d' % index
    lib = Lib(nvmlDeviceGetMaxMigDeviceCount=lambda h: 3, nvmlDeviceGetMigDeviceHandleByIndex=by_index,
              nvmlDeviceGetGpuInstanceId=lambda m: '7', nvmlDeviceGetUUID=lambda m: b'MIG-1', nvmlDeviceGetName=lambda m: 'n',
              nvmlDeviceGetComputeInstanceId=lambda m: '0', nvmlDeviceGetGpuInstanceById=lambda h, gi: ('gi', gi),
              nvmlGpuInstanceGetInfo=lambda gi: Item(profileId='19'))
    exc = raised(nvml.Client(lib).mig_devices, 'h')
    assert (exc.kind, exc.mig_index) == ('other', 2)
    lib.nvmlDeviceGetMaxMigDeviceCount = lambda h: 2
    assert nvml.Client(lib).mig_devices('h') == [{'index': 1, 'uuid': 'MIG-1', 'name': 'n', 'gi_id': 7, 'ci_id': 0, 'gi_profile_id': 19}]


def test_mig_changes_pass_what_nvml_needs():
    lib = Lib(NVML_DEVICE_MIG_ENABLE=1, NVML_DEVICE_MIG_DISABLE=0, nvmlDeviceSetMigMode=lambda h, m: m,
              c_nvmlGpuInstancePlacement_t=placement_type(), c_nvmlComputeInstancePlacement_t=placement_type(),
              nvmlDeviceCreateGpuInstanceWithPlacement=lambda h, p, ref: ('gi', p, ref._obj.start, ref._obj.size),
              nvmlGpuInstanceCreateComputeInstance=lambda gi, p: ('ci', p),
              nvmlGpuInstanceCreateComputeInstanceWithPlacement=lambda gi, p, ref: ('cip', p, ref._obj.start, ref._obj.size),
              nvmlGpuInstanceDestroy=lambda gi: None, nvmlComputeInstanceDestroy=lambda ci: None,
              nvmlGpuInstanceGetComputeInstanceById=lambda gi, ci: ('ci', ci), nvmlComputeInstanceGetInfo=lambda ci: ci)
    client = nvml.Client(lib)
    assert (client.set_mig_mode('h', True), client.set_mig_mode('h', False)) == (1, 0)
    assert client.create_gi('h', 9, 4, 2) == ('gi', 9, 4, 2)
    assert client.create_ci('gi', 1) == ('ci', 1)
    assert client.create_ci('gi', 1, 0, 1) == ('cip', 1, 0, 1)
    assert client.create_ci('gi', 1, 2, 3) == ('cip', 1, 2, 3)
    assert client.compute_instance('gi', 4) == ('ci', 4)
    assert client.destroy_gi('gi') is None and client.destroy_ci('ci') is None
    assert [c[0] for c in lib.calls[-2:]] == ['nvmlGpuInstanceDestroy', 'nvmlComputeInstanceDestroy']
