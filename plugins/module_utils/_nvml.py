# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's one NVML client.

Every reader of NVML goes through this file: the ``nvidia_mig`` module and the
MIG boot program (``mig/_mig_nvml.py``), ``slurm_gres_facts``, ``node_check``
and the node health check program.  It opens and closes NVML, enumerates GPUs
and MIG devices, reads profiles, placements, instances, processes and health
counters, makes the MIG changes, and turns every failed call into one
``NvmlError`` that names the call and the device.

The NVML bindings (nvidia-ml-py's ``pynvml``, over NVIDIA's
``libnvidia-ml.so.1``) are passed in, so this file needs only the standard
library and runs where Ansible is not installed (the node programs).

Names: NVML names a MIG device ``"NVIDIA A100-SXM4-40GB MIG 1g.5gb"`` and a
profile ``"MIG 1g.5gb"``; ``profile_name`` is the one place that turns either
into the profile (``1g.5gb``, ``1c.2g.10gb``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import sys
from contextlib import contextmanager
from ctypes import Structure, byref, c_int, c_ubyte, c_uint

# nvml.h: a process's gpuInstanceId/computeInstanceId is 0xFFFFFFFF when it
# does not run on a MIG device (nvidia-ml-py has no constant for it).
ID_ANY = 0xFFFFFFFF
# Words of 64 CPUs asked of nvmlDeviceGetCpuAffinity (4096 CPUs).
CPU_SET_WORDS = 64
# Where the nvml role's pip route puts nvidia-ml-py (roles/nvml/vars/main.yml _nvml_pip_target) on a node whose
# distribution has no package of it; import_bindings() looks there after the Python's own path.
BINDINGS_DIR = '/usr/local/lib/gpucluster-nvml'

# nvml.h return codes (nvmlReturn_t), for bindings that lack a constant.
_CODES = {
    'NVML_ERROR_INVALID_ARGUMENT': 2,
    'NVML_ERROR_NOT_SUPPORTED': 3,
    'NVML_ERROR_NO_PERMISSION': 4,
    'NVML_ERROR_NOT_FOUND': 6,
    'NVML_ERROR_FUNCTION_NOT_FOUND': 13,
    'NVML_ERROR_GPU_IS_LOST': 15,
}
_PROFILE = re.compile(r'^(\d+c\.)?\d+g\.\d+gb([+-][a-z0-9.]+)*$')


def text(value):
    """NVML's strings (bytes in old bindings) as text."""
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    return value if value is None else str(value)


def profile_name(name):
    """The MIG profile in an NVML name: ``"MIG 1g.5gb"`` or ``"NVIDIA A100-SXM4-40GB MIG 1c.2g.10gb"`` -> ``1g.5gb`` / ``1c.2g.10gb``.

    Raises ValueError for a name that carries no profile.
    """
    value = (text(name) or '').strip()
    if value.startswith('MIG '):
        profile = value[4:]
    else:
        _head, sep, profile = value.rpartition(' MIG ')
        if not sep:
            profile = ''
    profile = profile.strip()
    if not _PROFILE.match(profile):
        raise ValueError('NVML name %r does not end in "MIG <profile>" (e.g. "MIG 1g.5gb" or "NVIDIA A100-SXM4-40GB MIG 1g.5gb")'
                         % (value,))
    return profile


class NvmlError(Exception):
    """An NVML call failed.

    ``call`` is the NVML function, ``detail`` NVML's own error string, ``kind``
    one of ``not_supported``, ``not_found``, ``vanished`` (the GPU is lost or
    its handle no longer valid), ``no_permission``, ``uninitialized`` (NVML
    could not be opened), ``missing`` (no bindings) or ``other``.
    """

    def __init__(self, call, detail, kind='other', message=None):
        super(NvmlError, self).__init__(message or '%s failed: %s' % (call, detail))
        self.call = call
        self.detail = detail
        self.kind = kind
        self.mig_index = None  # set when the call was about a MIG device (Client.mig_devices)

    @property
    def unavailable(self):
        """The query is not available on this GPU or driver (not a broken GPU)."""
        return self.kind in ('not_supported', 'function_not_found')


def import_bindings(extra_dir=BINDINGS_DIR):
    """``(pynvml, None)``, or ``(None, message)`` when this Python cannot import nvidia-ml-py.

    The Python's own ``pynvml`` first (a distribution package); else the one the
    nvml role's pip route installed into ``extra_dir`` (``pip install --target``).
    """
    try:
        import pynvml  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        if not (extra_dir and os.path.isfile(os.path.join(extra_dir, 'pynvml.py'))):
            return None, ('the Python NVML bindings cannot be imported by %s (%s; nor is there %s/pynvml.py); install '
                          'nvidia-ml-py (the gpucluster.bringup.nvml role: Debian python3-pynvml, or nvml_bindings: pip)'
                          % (sys.executable, exc, extra_dir))
        if extra_dir not in sys.path:
            sys.path.append(extra_dir)
        try:
            import pynvml  # pylint: disable=import-outside-toplevel,reimported
        except ImportError as again:
            return None, 'the Python NVML bindings in %s cannot be imported by %s: %s' % (extra_dir, sys.executable, again)
    return pynvml, None


def check_mode_skip(missing):
    """The message of a reader skipped in check mode because the bindings are not installed yet (``missing``:
    import_bindings' message): in a real run the nvml role installs them before any other stage reads NVML."""
    return ('check mode: the GPUs were not read: %s. In a real run the nvml stage (role gpucluster.bringup.nvml) '
            'installs them before this task' % missing)


def uuid_text(raw):
    """16 bytes (a sequence of ints) as the 8-4-4-4-12 lowercase UUID text, None when they are all zero."""
    values = [int(value) & 0xff for value in raw]
    if len(values) != 16:
        raise ValueError('a UUID is 16 bytes, got %d' % len(values))
    if not any(values):
        return None
    digits = ''.join('%02x' % value for value in values)
    return '-'.join((digits[:8], digits[8:12], digits[12:16], digits[16:20], digits[20:]))


class GpuFabricInfo(Structure):
    """nvml.h's nvmlGpuFabricInfo_t (v1): clusterUuid[NVML_GPU_FABRIC_UUID_LEN], status, cliqueId, state (one byte)."""
    _fields_ = [('clusterUuid', c_ubyte * 16), ('status', c_int), ('cliqueId', c_uint), ('state', c_ubyte)]


class Client:
    """NVML through the bindings ``lib`` (nvidia-ml-py's ``pynvml`` module)."""

    def __init__(self, lib):
        self.lib = lib

    # ------------------------------------------------------------ errors and calls

    def _code(self, name):
        return getattr(self.lib, name, _CODES[name])

    def _kind(self, exc):
        code = getattr(exc, 'value', None)
        for kind, name in (('not_supported', 'NVML_ERROR_NOT_SUPPORTED'), ('not_found', 'NVML_ERROR_NOT_FOUND'),
                           ('vanished', 'NVML_ERROR_GPU_IS_LOST'), ('invalid_argument', 'NVML_ERROR_INVALID_ARGUMENT'),
                           ('no_permission', 'NVML_ERROR_NO_PERMISSION'),
                           ('function_not_found', 'NVML_ERROR_FUNCTION_NOT_FOUND')):
            if code == self._code(name):
                return kind
        return 'other'

    def call(self, name, *args):
        """``lib.<name>(*args)``; a failure is an NvmlError (a function the bindings lack is ``function_not_found``)."""
        func = getattr(self.lib, name, None)
        if func is None:
            raise NvmlError(name, 'this nvidia-ml-py has no %s' % name, 'function_not_found')
        try:
            return func(*args)
        except self.lib.NVMLError as exc:
            raise NvmlError(name, str(exc), self._kind(exc))

    def optional(self, name, *args):
        """Like call(), but None where the GPU, the driver or the bindings do not offer the query."""
        try:
            return self.call(name, *args)
        except NvmlError as exc:
            if exc.unavailable:
                return None
            raise

    # ------------------------------------------------------------ the session

    def init(self):
        try:
            self.lib.nvmlInit()
        except self.lib.NVMLError as exc:
            raise NvmlError('nvmlInit', str(exc), 'uninitialized',
                            'nvmlInit failed: %s; is the NVIDIA driver loaded (nvidia-smi)?' % exc)

    def shutdown(self):
        try:
            self.lib.nvmlShutdown()
        except self.lib.NVMLError:
            pass

    def count(self):
        return int(self.call('nvmlDeviceGetCount'))

    def handle(self, index):
        return self.call('nvmlDeviceGetHandleByIndex', index)

    # ------------------------------------------------------------ one GPU

    def mig_mode(self, handle):
        """``(current, pending)`` as booleans, or None on a GPU without MIG."""
        mode = self.optional('nvmlDeviceGetMigMode', handle)
        if mode is None:
            return None
        enable = self.lib.NVML_DEVICE_MIG_ENABLE
        return mode[0] == enable, mode[1] == enable

    def cpus(self, handle):
        """The GPU's CPU affinity as a list of 64-bit words, or None where NVML does not report it."""
        mask = self.optional('nvmlDeviceGetCpuAffinity', handle, CPU_SET_WORDS)
        return None if mask is None else [int(word) for word in mask]

    def processes(self, handle):
        """Compute processes on the GPU: ``pid``, ``name`` (None when unknown), ``gi_id``/``ci_id`` (None off MIG)."""
        result = []
        for proc in self.call('nvmlDeviceGetComputeRunningProcesses', handle):
            try:
                name = text(self.call('nvmlSystemGetProcessName', proc.pid))
            except NvmlError:
                name = None
            result.append({'pid': proc.pid, 'name': name,
                           'gi_id': None if proc.gpuInstanceId == ID_ANY else proc.gpuInstanceId,
                           'ci_id': None if proc.computeInstanceId == ID_ANY else proc.computeInstanceId})
        return result

    def health(self, handle):
        """Health counters where the GPU reports them (None where not): ECC, retired pages, row remapping."""
        lib = self.lib
        result = {}
        if hasattr(lib, 'NVML_MEMORY_ERROR_TYPE_UNCORRECTED'):
            result['ecc_uncorrected'] = self.optional('nvmlDeviceGetTotalEccErrors', handle,
                                                      lib.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, lib.NVML_VOLATILE_ECC)
        pending = self.optional('nvmlDeviceGetRetiredPagesPendingStatus', handle)
        result['retired_pages_pending'] = None if pending is None else pending == getattr(lib, 'NVML_FEATURE_ENABLED', 1)
        rows = self.optional('nvmlDeviceGetRemappedRows', handle)
        if rows is not None:
            result['remap_pending'] = bool(rows[2])
            result['remap_failure'] = bool(rows[3])
        return result

    def driver_version(self):
        return text(self.call('nvmlSystemGetDriverVersion'))

    def _first(self, names, *args):
        """The answer of the first of ``names`` the bindings have (newer name first), None where not offered."""
        for name in names:
            if getattr(self.lib, name, None) is not None:
                return self.optional(name, *args)
        return None

    def nvlinks(self, handle):
        """``[{link, active, replay, recovery, crc_flit, crc_data}]`` of the GPU's NVLinks; ``[]`` without NVLink."""
        lib = self.lib
        enabled = getattr(lib, 'NVML_FEATURE_ENABLED', 1)
        counters = (('replay', 0), ('recovery', 1), ('crc_flit', 2), ('crc_data', 3))
        links = []
        for link in range(int(getattr(lib, 'NVML_NVLINK_MAX_LINKS', 18))):
            try:
                state = self.call('nvmlDeviceGetNvLinkState', handle, link)
            except NvmlError as exc:
                if exc.unavailable or exc.kind == 'invalid_argument':
                    break  # no NVLink on this GPU, or past its last link
                raise
            entry = {'link': link, 'active': state == enabled}
            for key, counter in counters:
                try:
                    entry[key] = int(self.call('nvmlDeviceGetNvLinkErrorCounter', handle, link, counter))
                except NvmlError as exc:
                    if not (exc.unavailable or exc.kind == 'invalid_argument'):
                        raise
                    entry[key] = None
            links.append(entry)
        return links

    def nvlink_remote_device_ids(self, handle, links=None):
        """``pciDeviceId`` (device id << 16 | vendor) of what each active NVLink of the GPU ends at (a GPU, an
        NVSwitch); [] without NVLink."""
        ids = []
        for link in (self.nvlinks(handle) if links is None else links):
            if not link['active']:
                continue
            info = self.optional('nvmlDeviceGetNvLinkRemotePciInfo', handle, link['link'])
            if info is not None:
                ids.append(int(info.pciDeviceId))
        return ids

    def fabric(self, handle):
        """``{'state': n, 'status': n, 'cluster_uuid': str or None, 'clique_id': n}`` of nvmlDeviceGetGpuFabricInfo,
        None where the GPU or driver has none (before Hopper).

        ``cluster_uuid`` is clusterUuid's 16 bytes in order as the 8-4-4-4-12 lowercase UUID text (as ``nvidia-smi -q``
        prints ClusterUUID), None when all zero (no multi-node NVLink domain: a single-node HGX board, or a GPU the
        fabric manager has not registered); ``clique_id`` is cliqueId (the NVLink partition within the domain).
        The structure is nvml.h's, not the binding's: Debian's python3-pynvml 12.550.89 (trixie) declares
        clusterUuid as 80 bytes (NVML_DEVICE_UUID_BUFFER_SIZE) instead of NVML_GPU_FABRIC_UUID_LEN (16), so its
        ``state`` lies past what the driver writes and reads 0 (NOT_SUPPORTED) on every GPU (nvidia-ml-py 13 has 16).
        """
        if getattr(self.lib, 'nvmlDeviceGetGpuFabricInfo', None) is None:
            return None
        info = GpuFabricInfo()
        try:
            self.call('nvmlDeviceGetGpuFabricInfo', handle, byref(info))
        except NvmlError as exc:
            if exc.unavailable:
                return None
            raise
        return {'state': int(info.state), 'status': int(info.status), 'cluster_uuid': uuid_text(info.clusterUuid),
                'clique_id': int(info.cliqueId)}

    def fleet_health(self, handle):
        """What the periodic health tier reads beyond health(), None where the GPU does not report it:
        persistence mode, PCIe link (current and maximum), clock event (throttle) reasons, temperature and
        slowdown threshold, NVLinks (nvlinks()), the PCI device ids at their other ends (nvlink_remote_device_ids())
        and fabric state (fabric())."""
        lib = self.lib
        persistence = self.optional('nvmlDeviceGetPersistenceMode', handle)
        links = self.nvlinks(handle)
        return {
            'persistence': None if persistence is None else persistence == getattr(lib, 'NVML_FEATURE_ENABLED', 1),
            'pcie': {
                'gen': self.optional('nvmlDeviceGetCurrPcieLinkGeneration', handle),
                'width': self.optional('nvmlDeviceGetCurrPcieLinkWidth', handle),
                'max_gen': self._first(('nvmlDeviceGetGpuMaxPcieLinkGeneration', 'nvmlDeviceGetMaxPcieLinkGeneration'), handle),
                'max_width': self.optional('nvmlDeviceGetMaxPcieLinkWidth', handle),
            },
            'clock_reasons': self._first(('nvmlDeviceGetCurrentClocksEventReasons', 'nvmlDeviceGetCurrentClocksThrottleReasons'), handle),
            'temperature': self.optional('nvmlDeviceGetTemperature', handle, getattr(lib, 'NVML_TEMPERATURE_GPU', 0)),
            'temperature_slowdown': self.optional('nvmlDeviceGetTemperatureThreshold', handle,
                                                  getattr(lib, 'NVML_TEMPERATURE_THRESHOLD_SLOWDOWN', 1)),
            'nvlinks': links,
            'nvlink_remote_ids': self.nvlink_remote_device_ids(handle, links),
            'fabric': self.fabric(handle),
        }

    # ------------------------------------------------------------ MIG

    def _array(self, name, handle, key, item_type, capacity=None):
        """An NVML list: a first call with a NULL array asks for the count (the placement queries), or an array of
        ``capacity`` entries (the instance lists, which nvml.h does not let count with NULL)."""
        count = c_uint(0)
        if capacity is None:
            self.call(name, handle, key, None, byref(count))
            if not count.value:
                return []
            capacity = count.value
        array = (item_type * max(int(capacity), 1))()
        self.call(name, handle, key, array, byref(count))
        return list(array[:count.value])

    def gi_profiles(self, handle):
        """The GPU-instance profiles the GPU offers: name, id, slices, instance_count, memory_mb."""
        lib = self.lib
        profiles = []
        for enum in range(getattr(lib, 'NVML_GPU_INSTANCE_PROFILE_COUNT', 32)):
            try:
                info = self.call('nvmlDeviceGetGpuInstanceProfileInfo', handle, enum)
            except NvmlError as exc:
                if exc.kind in ('not_supported', 'invalid_argument'):
                    continue  # this GPU or driver has no such profile
                raise
            profiles.append({'name': profile_name(info.name), 'id': int(info.id), 'slices': int(info.sliceCount),
                             'instance_count': int(info.instanceCount), 'memory_mb': int(info.memorySizeMB)})
        return profiles

    def gi_placements(self, handle, profile_id):
        return [[p.start, p.size] for p in self._array('nvmlDeviceGetGpuInstancePossiblePlacements', handle, profile_id,
                                                       self.lib.c_nvmlGpuInstancePlacement_t)]

    def gpu_instances(self, handle, profile):
        """``(gi handle, info)`` of the GPU instances of ``profile`` (a gi_profiles() entry: its id and instance_count)."""
        return [(gi, self.call('nvmlGpuInstanceGetInfo', gi))
                for gi in self._array('nvmlDeviceGetGpuInstances', handle, profile['id'], self.lib.c_nvmlGpuInstance_t,
                                      profile['instance_count'])]

    def gpu_instance(self, handle, gi_id):
        return self.call('nvmlDeviceGetGpuInstanceById', handle, gi_id)

    def ci_profiles(self, gi):
        """The compute-instance profiles a GPU instance offers: name, id, slices, instance_count, placements."""
        lib = self.lib
        table = []
        for enum in range(lib.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
            try:
                info = self.call('nvmlGpuInstanceGetComputeInstanceProfileInfo', gi, enum,
                                 lib.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
            except NvmlError:
                continue
            places = self._array('nvmlGpuInstanceGetComputeInstancePossiblePlacements', gi, info.id,
                                 lib.c_nvmlComputeInstancePlacement_t)
            table.append({'name': profile_name(info.name), 'id': int(info.id), 'slices': int(info.sliceCount),
                          'instance_count': int(info.instanceCount), 'placements': [[p.start, p.size] for p in places]})
        return table

    def compute_instances(self, gi, ci_profile):
        """The info records of the compute instances of ``ci_profile`` (a ci_profiles() entry) in a GPU instance."""
        return [self.call('nvmlComputeInstanceGetInfo', ci)
                for ci in self._array('nvmlGpuInstanceGetComputeInstances', gi, ci_profile['id'], self.lib.c_nvmlComputeInstance_t,
                                      ci_profile['instance_count'])]

    def mig_devices(self, handle):
        """The MIG devices of a GPU in MIG mode: index, uuid, name, gi_id, ci_id, gi_profile_id.

        An NvmlError about one MIG device carries its index in ``mig_index``.
        """
        devices = []
        for mig_index in range(int(self.call('nvmlDeviceGetMaxMigDeviceCount', handle))):
            try:
                try:
                    mig = self.call('nvmlDeviceGetMigDeviceHandleByIndex', handle, mig_index)
                except NvmlError as exc:
                    if exc.kind == 'not_found':
                        continue  # no MIG device at this index
                    raise
                gi_id = int(self.call('nvmlDeviceGetGpuInstanceId', mig))
                devices.append({
                    'index': mig_index, 'uuid': text(self.call('nvmlDeviceGetUUID', mig)),
                    'name': text(self.call('nvmlDeviceGetName', mig)),
                    'gi_id': gi_id, 'ci_id': int(self.call('nvmlDeviceGetComputeInstanceId', mig)),
                    'gi_profile_id': int(self.call('nvmlGpuInstanceGetInfo', self.gpu_instance(handle, gi_id)).profileId),
                })
            except NvmlError as exc:
                exc.mig_index = mig_index
                raise
        return devices

    # ------------------------------------------------------------ changing MIG

    def set_mig_mode(self, handle, enable):
        lib = self.lib
        return self.call('nvmlDeviceSetMigMode', handle, lib.NVML_DEVICE_MIG_ENABLE if enable else lib.NVML_DEVICE_MIG_DISABLE)

    def create_gi(self, handle, profile_id, start, size):
        """The new GPU instance's handle."""
        placement = self.lib.c_nvmlGpuInstancePlacement_t()
        placement.start = start
        placement.size = size
        return self.call('nvmlDeviceCreateGpuInstanceWithPlacement', handle, profile_id, byref(placement))

    def destroy_gi(self, gi):
        self.call('nvmlGpuInstanceDestroy', gi)

    def create_ci(self, gi, profile_id, start=None, size=None):
        """The new compute instance's handle (placed at ``start`` when given)."""
        if start is None:
            ci = self.call('nvmlGpuInstanceCreateComputeInstance', gi, profile_id)
        else:
            placement = self.lib.c_nvmlComputeInstancePlacement_t()
            placement.start = start
            placement.size = size
            ci = self.call('nvmlGpuInstanceCreateComputeInstanceWithPlacement', gi, profile_id, byref(placement))
        return ci

    def compute_instance(self, gi, ci_id):
        return self.call('nvmlGpuInstanceGetComputeInstanceById', gi, ci_id)

    def destroy_ci(self, ci):
        self.call('nvmlComputeInstanceDestroy', ci)


@contextmanager
def session(lib):
    """``with session(pynvml) as client:`` NVML open for the block (NvmlError ``uninitialized`` when it cannot be)."""
    client = Client(lib)
    client.init()
    try:
        yield client
    finally:
        client.shutdown()
