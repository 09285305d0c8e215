#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: nvidia_mig
short_description: Declare the MIG mode and MIG instances of NVIDIA GPUs
version_added: "0.1.0"
description:
  - Makes the Multi-Instance GPU (MIG) layout of the GPUs of a host match a declared state, through NVML (C(pynvml)).
  - The whole request is checked against every GPU's own profile table and placements before anything changes.
    An unknown profile, too many instances, a layout that cannot be placed, a GPU index out of range or MIG asked of
    a GPU without MIG fails with one message naming the GPU and the value, and nothing is changed.
  - A GPU whose MIG mode is off reports no profile table; it is checked against the table of another GPU of the
    same model in MIG mode, else against the MIG User Guide's table of its model (A100 40GB/80GB, H100 80GB, H200).
    Only a GPU of another model with MIG mode off has its instances checked after MIG mode is enabled.
  - Changes are minimal. Instances that already match are kept; only what differs is destroyed and created, with
    placements chosen so that the kept instances stay valid. A GPU whose layout matches is not touched.
  - Instances (and compute instances) with running processes are never destroyed, and the MIG mode of a GPU with
    running processes is never changed, unless O(force=true).
  - If creating an instance fails half way, the GPU is put back to its layout before the call and the module fails
    saying so; if that fails too, the message says exactly what exists.
  - MIG instances do not survive a reboot; re-apply the layout at boot, before the scheduler starts.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
requirements:
  - nvidia-ml-py (the C(pynvml) module) on the managed host
  - the NVIDIA driver; changing instances requires root
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
    details: Plans and reports the changes; no NVML call that changes the GPU is made.
  diff_mode:
    support: full
    details: Before and after layout of every selected GPU.
options:
  gpus:
    description:
      - The wanted state, one entry per GPU or group of GPUs. Each GPU may be selected by one entry only.
      - GPUs that no entry selects are left alone.
    type: list
    elements: dict
    required: true
    suboptions:
      gpu:
        description:
          - NVML index (V(0)), GPU UUID (V(GPU-...)) or V(all).
        type: str
        default: all
      model:
        description:
          - Substring of the GPU name (case-insensitive), for example V(A100) or V(H100 80GB).
          - With O(gpus[].gpu=all) selects only the GPUs whose name matches (none is fine); with an index or UUID
            the GPU must match or the module fails.
        type: str
      mig:
        description:
          - Whether MIG mode is on. V(false) destroys every instance of the GPU and turns MIG mode off.
          - A mode change can stay pending until the GPU is reset; the result then says RV(gpus[].reset_required)
            and which processes block the reset.
        type: bool
        default: true
      instances:
        description:
          - The GPU instances the GPU must have (all of them; others are destroyed). Empty means none.
        type: list
        elements: dict
        default: []
        suboptions:
          profile:
            description:
              - GPU-instance profile name as C(nvidia-smi mig -lgip) prints it without C(MIG), for example
                V(1g.10gb), V(1g.10gb+me), V(3g.40gb), V(7g.80gb). The valid names depend on the GPU model.
            type: str
            required: true
          count:
            description: How many instances of this profile.
            type: int
            default: 1
          placement:
            description:
              - Start memory slice of the instance (C(nvidia-smi mig -lgipp) lists the valid starts per profile).
                Only with O(gpus[].instances[].count=1). Without it the module chooses.
            type: int
          compute_instances:
            description:
              - Compute-instance profiles to create inside each such GPU instance, for example
                V([1c.3g.40gb, 2c.3g.40gb]). The default is one compute instance spanning the GPU instance
                (what C(nvidia-smi mig -cgi ... -C) does); its profile name is the GPU-instance profile name.
            type: list
            elements: str
  force:
    description:
      - Destroy instances and change MIG mode even when processes run on them. The driver can still refuse
        (an instance in use), in which case the GPU is rolled back and the module fails.
    type: bool
    default: false
notes:
  - Instance ids and MIG device UUIDs of re-created instances change; kept instances keep theirs.
seealso:
  - name: NVIDIA Multi-Instance GPU User Guide
    description: Profiles, placements and MIG mode.
    link: https://docs.nvidia.com/datacenter/tesla/mig-user-guide/
'''

EXAMPLES = r'''
- name: Seven 1g.10gb instances on every A100 80GB (seed 003's layout, declaratively)
  gpucluster.bringup.nvidia_mig:
    gpus:
      - gpu: all
        model: A100 80GB
        instances:
          - profile: 1g.10gb
            count: 7

- name: A balanced layout on GPU 0, a 3g split into compute instances on GPU 1, MIG off on GPU 2
  gpucluster.bringup.nvidia_mig:
    gpus:
      - gpu: "0"
        instances:
          - profile: 3g.40gb
          - profile: 2g.20gb
          - profile: 1g.10gb
            count: 2
      - gpu: "1"
        instances:
          - profile: 3g.40gb
            placement: 4
            compute_instances: [1c.3g.40gb, 2c.3g.40gb]
      - gpu: "2"
        mig: false
  register: mig

- name: Show what changed
  ansible.builtin.debug:
    var: mig.actions
'''

RETURN = r'''
gpus:
  description: The selected GPUs after the call (in check mode, as they are now).
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: NVML index.
      type: int
      sample: 0
    uuid:
      description: GPU UUID.
      type: str
      sample: GPU-5c1e7d4e-6b1f-5f49-9d3c-0e1f2a3b4c5d
    model:
      description: GPU name as NVML reports it.
      type: str
      sample: NVIDIA A100-SXM4-80GB
    mig_mode:
      description: Current and pending MIG mode (V(null) for a GPU without MIG).
      type: dict
      sample: {current: true, pending: true}
    reset_required:
      description: The MIG mode is pending until the GPU is reset (or the host rebooted).
      type: bool
      sample: false
    blocking_processes:
      description:
        - When a reset is required, the processes that block it, NVML's compute processes on the GPU and the
          processes that have its device file C(/dev/nvidiaN) open (such as nvidia-persistenced or DCGM).
      type: list
      elements: dict
      sample: [{pid: 1234, name: nvidia-persistenced}]
    instances:
      description: GPU instances with their compute instances.
      type: list
      elements: dict
      sample:
        - profile: 3g.40gb
          gi_id: 2
          placement: {start: 4, size: 4}
          compute_instances:
            - {ci_id: 0, profile: 3g.40gb, uuid: MIG-0e7b2c7a-3f4d-5a8e-9b6c-1d2e3f4a5b6c, placement: {start: 0, size: 3}}
actions:
  description: What was done (or, in check mode, would be done), one line per NVML change.
  returned: always
  type: list
  elements: str
  sample: ["GPU 0: destroy GPU instance 9 (1g.10gb at 2:1)", "GPU 0: create GPU instance 2g.20gb at 2:2 with compute instances 2g.20gb"]
diff:
  description: Layout before and after per GPU.
  returned: always
  type: dict
  sample: {before: {"GPU 0": "MIG enabled: 7 x ..."}, after: {"GPU 0": "MIG enabled: ..."}}
'''

import copy
import os
import traceback
from ctypes import byref, c_uint

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpucluster.bringup.plugins.module_utils._mig_plan import (
    MigPlanError, check_request, container_problem, describe_layout, fit_cis, gpu_label, plan_actions, plan_gpu, plan_node, predicted_state, select_gpus)

PYNVML_IMPORT_ERROR = None
try:
    import pynvml
except ImportError:
    pynvml = None
    PYNVML_IMPORT_ERROR = traceback.format_exc()


# nvml.h: a process's gpuInstanceId/computeInstanceId is 0xFFFFFFFF when it
# does not run on a MIG device (nvidia-ml-py has no constant for it).
ID_ANY = 0xFFFFFFFF
DEV_DIR = '/dev'
PROC_DIR = '/proc'


def _text(value):
    if isinstance(value, bytes):
        value = value.decode('utf-8', 'replace')
    return value


def _profile_name(raw):
    name = _text(raw) or ''
    return name[4:] if name.startswith('MIG ') else name


class ApplyError(Exception):
    """An NVML change failed; ``message`` says which."""


class Nvml:
    """Reads a node's MIG state through pynvml and applies planned changes."""

    def __init__(self, lib):
        self.lib = lib

    # ------------------------------------------------------------ reading

    def _array_call(self, func, handle, key, item_type):
        count = c_uint(0)
        func(handle, key, None, byref(count))
        if not count.value:
            return []
        array = (item_type * count.value)()
        func(handle, key, array, byref(count))
        return list(array[:count.value])

    def _ci_table(self, gi):
        lib = self.lib
        table = []
        for enum in range(lib.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
            try:
                info = lib.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, enum, lib.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
            except lib.NVMLError:
                continue
            places = self._array_call(lib.nvmlGpuInstanceGetComputeInstancePossiblePlacements, gi, info.id,
                                      lib.c_nvmlComputeInstancePlacement_t)
            table.append({'name': _profile_name(info.name), 'id': info.id, 'slices': info.sliceCount,
                          'instance_count': info.instanceCount, 'placements': [[p.start, p.size] for p in places]})
        return table

    def read_gpu(self, index):
        lib = self.lib
        handle = lib.nvmlDeviceGetHandleByIndex(index)
        gpu = {'index': index, 'uuid': _text(lib.nvmlDeviceGetUUID(handle)), 'name': _text(lib.nvmlDeviceGetName(handle)),
               'mig_capable': True, 'mig_current': False, 'mig_pending': False, 'profiles': None, 'instances': [], 'processes': [],
               'minor': None}
        try:
            gpu['minor'] = lib.nvmlDeviceGetMinorNumber(handle)
        except lib.NVMLError:
            pass
        try:
            current, pending = lib.nvmlDeviceGetMigMode(handle)
        except lib.NVMLError_NotSupported:
            gpu['mig_capable'] = False
            current = pending = 0
        gpu['mig_current'] = current == lib.NVML_DEVICE_MIG_ENABLE
        gpu['mig_pending'] = pending == lib.NVML_DEVICE_MIG_ENABLE
        for proc in lib.nvmlDeviceGetComputeRunningProcesses(handle):
            try:
                name = _text(lib.nvmlSystemGetProcessName(proc.pid))
            except lib.NVMLError:
                name = None
            gi_id = None if proc.gpuInstanceId == ID_ANY else proc.gpuInstanceId
            ci_id = None if proc.computeInstanceId == ID_ANY else proc.computeInstanceId
            gpu['processes'].append({'pid': proc.pid, 'name': name, 'gi_id': gi_id, 'ci_id': ci_id})
        if not gpu['mig_current']:
            return gpu
        uuids = {}
        for mig_index in range(lib.nvmlDeviceGetMaxMigDeviceCount(handle)):
            try:
                mig = lib.nvmlDeviceGetMigDeviceHandleByIndex(handle, mig_index)
            except lib.NVMLError_NotFound:
                continue
            uuids[(lib.nvmlDeviceGetGpuInstanceId(mig), lib.nvmlDeviceGetComputeInstanceId(mig))] = _text(lib.nvmlDeviceGetUUID(mig))
        gpu['profiles'] = []
        for enum in range(lib.NVML_GPU_INSTANCE_PROFILE_COUNT):
            try:
                info = lib.nvmlDeviceGetGpuInstanceProfileInfo(handle, enum)
            except lib.NVMLError:
                continue
            places = self._array_call(lib.nvmlDeviceGetGpuInstancePossiblePlacements, handle, info.id, lib.c_nvmlGpuInstancePlacement_t)
            prof = {'name': _profile_name(info.name), 'id': info.id, 'slices': info.sliceCount, 'instance_count': info.instanceCount,
                    'memory_mb': info.memorySizeMB, 'placements': [[p.start, p.size] for p in places], 'ci_profiles': None}
            gpu['profiles'].append(prof)
            for gi in self._array_call(lib.nvmlDeviceGetGpuInstances, handle, info.id, lib.c_nvmlGpuInstance_t):
                gi_info = lib.nvmlGpuInstanceGetInfo(gi)
                # Every GI of a profile offers the same CI profiles: ask the first one.
                if prof['ci_profiles'] is None:
                    prof['ci_profiles'] = self._ci_table(gi)
                ci_table = prof['ci_profiles']
                names = dict((ci['id'], ci['name']) for ci in ci_table)
                instance = {'gi_id': gi_info.id, 'profile_id': gi_info.profileId, 'start': gi_info.placement.start,
                            'size': gi_info.placement.size, 'compute_instances': []}
                for ci_prof in ci_table:
                    for ci in self._array_call(lib.nvmlGpuInstanceGetComputeInstances, gi, ci_prof['id'], lib.c_nvmlComputeInstance_t):
                        ci_info = lib.nvmlComputeInstanceGetInfo(ci)
                        instance['compute_instances'].append({
                            'ci_id': ci_info.id, 'profile': names.get(ci_info.profileId, str(ci_info.profileId)),
                            'profile_id': ci_info.profileId, 'start': ci_info.placement.start, 'size': ci_info.placement.size,
                            'uuid': uuids.get((gi_info.id, ci_info.id))})
                instance['compute_instances'].sort(key=lambda c: c['ci_id'])
                gpu['instances'].append(instance)
        gpu['instances'].sort(key=lambda g: g['gi_id'])
        return gpu

    def read_node(self):
        return [self.read_gpu(index) for index in range(self.lib.nvmlDeviceGetCount())]

    # ------------------------------------------------------------ changing

    def _handle(self, index):
        return self.lib.nvmlDeviceGetHandleByIndex(index)

    def _call(self, what, func, *args):
        try:
            return func(*args)
        except self.lib.NVMLError as exc:
            raise ApplyError('%s failed: %s' % (what, exc))

    def destroy_ci(self, index, gi_id, ci_id):
        lib = self.lib
        gi = self._call('finding GPU instance %d' % gi_id, lib.nvmlDeviceGetGpuInstanceById, self._handle(index), gi_id)
        ci = self._call('finding compute instance %d/%d' % (gi_id, ci_id), lib.nvmlGpuInstanceGetComputeInstanceById, gi, ci_id)
        self._call('destroying compute instance %d of GPU instance %d' % (ci_id, gi_id), lib.nvmlComputeInstanceDestroy, ci)

    def destroy_gi(self, index, gi_id):
        lib = self.lib
        gi = self._call('finding GPU instance %d' % gi_id, lib.nvmlDeviceGetGpuInstanceById, self._handle(index), gi_id)
        self._call('destroying GPU instance %d' % gi_id, lib.nvmlGpuInstanceDestroy, gi)

    def create_gi(self, index, profile_id, start, size, what):
        lib = self.lib
        placement = lib.c_nvmlGpuInstancePlacement_t()
        placement.start = start
        placement.size = size
        gi = self._call('creating GPU instance %s' % what, lib.nvmlDeviceCreateGpuInstanceWithPlacement,
                        self._handle(index), profile_id, byref(placement))
        return self._call('reading GPU instance %s' % what, lib.nvmlGpuInstanceGetInfo, gi).id

    def create_ci(self, index, gi_id, name, start):
        """Create CI profile ``name`` in GI ``gi_id`` (at ``start`` when given); returns its id."""
        lib = self.lib
        gi = self._call('finding GPU instance %d' % gi_id, lib.nvmlDeviceGetGpuInstanceById, self._handle(index), gi_id)
        table = self._call('reading compute instance profiles of GPU instance %d' % gi_id, self._ci_table, gi)
        matches = [ci for ci in table if ci['name'] == name]
        if not matches:
            raise ApplyError('GPU instance %d offers no compute instance profile %s; it offers %s' % (
                gi_id, name, ', '.join(ci['name'] for ci in table)))
        prof = matches[0]
        what = 'creating compute instance %s in GPU instance %d' % (name, gi_id)
        if start is None:
            ci = self._call(what, lib.nvmlGpuInstanceCreateComputeInstance, gi, prof['id'])
        else:
            placement = lib.c_nvmlComputeInstancePlacement_t()
            placement.start = start
            placement.size = [p[1] for p in prof['placements']][0]
            ci = self._call(what, lib.nvmlGpuInstanceCreateComputeInstanceWithPlacement, gi, prof['id'], byref(placement))
        return self._call('reading ' + what, lib.nvmlComputeInstanceGetInfo, ci).id

    def ci_table_of(self, index, gi_id):
        gi = self._call('finding GPU instance %d' % gi_id, self.lib.nvmlDeviceGetGpuInstanceById, self._handle(index), gi_id)
        return self._call('reading compute instance profiles of GPU instance %d' % gi_id, self._ci_table, gi)

    def set_mode(self, index, enable):
        lib = self.lib
        mode = lib.NVML_DEVICE_MIG_ENABLE if enable else lib.NVML_DEVICE_MIG_DISABLE
        return self._call('%s MIG mode' % ('enabling' if enable else 'disabling'), lib.nvmlDeviceSetMigMode, self._handle(index), mode)


class Applier:
    """Applies one GPU's plan, keeping a journal to roll back with."""

    def __init__(self, nvml, gpu):
        self.nvml = nvml
        self.gpu = gpu
        self.index = gpu['index']
        self.journal = []

    def _create_cis(self, gi_id, cis):
        # Placements may be unknown (no CI table before the GI existed): place them now with the real table.
        if any(start is None for _name, start in cis):
            table = self.nvml.ci_table_of(self.index, gi_id)
            placed = fit_cis({'ci_profiles': table}, [], [name for name, _start in cis])
            if placed is not None:
                cis = [(name, pos[0]) for (name, _start), pos in zip(cis, placed)]
        for name, start in sorted(cis, key=lambda c: (c[1] is None, c[1])):
            ci_id = self.nvml.create_ci(self.index, gi_id, name, start)
            self.journal.append(('created_ci', gi_id, ci_id))

    def apply(self, plan):
        for ci in plan['destroy_cis']:
            original = [c for gi in self.gpu['instances'] if gi['gi_id'] == ci['gi_id'] for c in gi['compute_instances'] if c['ci_id'] == ci['ci_id']][0]
            self.nvml.destroy_ci(self.index, ci['gi_id'], ci['ci_id'])
            self.journal.append(('destroyed_ci', ci['gi_id'], original))
        for gi in plan['destroy_gis']:
            for ci in gi['compute_instances']:
                self.nvml.destroy_ci(self.index, gi['gi_id'], ci['ci_id'])
                self.journal.append(('destroyed_ci', gi['gi_id'], ci))
            self.nvml.destroy_gi(self.index, gi['gi_id'])
            self.journal.append(('destroyed_gi', gi))
        for new in plan['create_gis']:
            what = '%s at %d:%d' % (new['profile'], new['start'], new['size'])
            gi_id = self.nvml.create_gi(self.index, new['profile_id'], new['start'], new['size'], what)
            self.journal.append(('created_gi', gi_id))
            self._create_cis(gi_id, new['compute_instances'])
        for group in plan['create_cis']:
            self._create_cis(group['gi_id'], group['compute_instances'])

    def rollback(self):
        """Undo the journal in reverse order; destroyed GIs come back at their placement."""
        remap = {}
        for entry in reversed(self.journal):
            kind = entry[0]
            if kind == 'created_ci':
                self.nvml.destroy_ci(self.index, remap.get(entry[1], entry[1]), entry[2])
            elif kind == 'created_gi':
                self.nvml.destroy_gi(self.index, entry[1])
            elif kind == 'destroyed_gi':
                gi = entry[1]
                remap[gi['gi_id']] = self.nvml.create_gi(self.index, gi['profile_id'], gi['start'], gi['size'],
                                                         '%s at %d:%d' % (gi['profile'], gi['start'], gi['size']))
            elif kind == 'destroyed_ci':
                ci = entry[2]
                self.nvml.create_ci(self.index, remap.get(entry[1], entry[1]), ci['profile'], ci['start'])


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:  # closed meanwhile
        return None


def device_holders(minor):
    """Processes with ``/dev/nvidia<minor>`` open (nvidia-persistenced, DCGM, ...), which NVML does not list.

    A GPU reset fails while any process holds the device file.
    """
    target = os.path.join(DEV_DIR, 'nvidia%d' % minor)
    holders = []
    for pid in sorted((int(name) for name in os.listdir(PROC_DIR) if name.isdigit())):
        fd_dir = os.path.join(PROC_DIR, str(pid), 'fd')
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to read
            continue
        if any(_readlink(os.path.join(fd_dir, fd)) == target for fd in fds):
            try:
                with open(os.path.join(PROC_DIR, str(pid), 'comm')) as comm:
                    name = comm.read().strip()
            except (IOError, OSError):
                name = None
            holders.append({'pid': pid, 'name': name})
    return holders


def _blocking(gpu):
    procs = [{'pid': p['pid'], 'name': p['name']} for p in gpu['processes']]
    if gpu.get('minor') is not None:
        seen = set(p['pid'] for p in procs)
        procs.extend(p for p in device_holders(gpu['minor']) if p['pid'] not in seen)
    return procs


def _gpu_result(gpu):
    reset_required = bool(gpu['mig_capable'] and gpu['mig_current'] != gpu['mig_pending'])
    return {
        'index': gpu['index'], 'uuid': gpu['uuid'], 'model': gpu['name'],
        'mig_mode': {'current': gpu['mig_current'], 'pending': gpu['mig_pending']} if gpu['mig_capable'] else None,
        'reset_required': reset_required,
        'blocking_processes': _blocking(gpu) if reset_required else [],
        'instances': [{
            'profile': next((p['name'] for p in gpu['profiles'] or () if p['id'] == gi['profile_id']), str(gi['profile_id'])),
            'gi_id': gi['gi_id'], 'placement': {'start': gi['start'], 'size': gi['size']},
            'compute_instances': [{'ci_id': ci['ci_id'], 'profile': ci['profile'], 'uuid': ci.get('uuid'),
                                   'placement': {'start': ci['start'], 'size': ci['size']}} for ci in gi['compute_instances']],
        } for gi in sorted(gpu['instances'], key=lambda g: g['start'])],
    }


def run(module, lib):
    """The module's work; returns the result dict or calls fail_json."""
    try:
        check_request(module.params['gpus'])
    except MigPlanError as exc:
        module.fail_json(msg=str(exc))
    wanted = [dict(entry) for entry in module.params['gpus']]
    force = module.params['force']
    nvml = Nvml(lib)
    try:
        lib.nvmlInit()
    except lib.NVMLError as exc:
        module.fail_json(msg='NVML initialisation failed: %s (is the NVIDIA driver loaded?)' % exc)
    try:
        return _run(module, nvml, wanted, force)
    finally:
        lib.nvmlShutdown()


def _run(module, nvml, wanted, force):
    before = nvml.read_node()
    try:
        plans = plan_node([dict(gpu) for gpu in before], wanted, force)
    except MigPlanError as exc:
        module.fail_json(msg=str(exc))
    by_index = dict((gpu['index'], gpu) for gpu in before)
    entries = dict((gpu['index'], entry) for gpu, entry, _number in select_gpus(before, wanted))
    actions = []
    diff = {'before': {}, 'after': {}}
    changed = changed_before = False
    after = {}
    for plan in plans:
        gpu = by_index[plan['index']]
        key = 'GPU %d' % gpu['index']
        diff['before'][key] = describe_layout(gpu)
        actions.extend(plan_actions(plan))
        changed = changed or plan['changed']
        if module.check_mode:
            diff['after'][key] = describe_layout(predicted_state(gpu, plan))
            after[gpu['index']] = gpu
            continue
        after[gpu['index']] = _apply_gpu(module, nvml, gpu, plan, entries[gpu['index']], force, actions, changed_before)
        diff['after'][key] = describe_layout(after[gpu['index']])
        changed_before = changed
    return {'changed': changed, 'actions': actions, 'diff': diff,
            'gpus': [_gpu_result(after[plan['index']]) for plan in plans]}


def _apply_gpu(module, nvml, gpu, plan, entry, force, actions, changed_before):
    label = gpu_label(gpu)
    if plan['set_mode'] is False:
        _apply_instances(module, nvml, gpu, plan, actions, changed_before)
        _set_mode(module, nvml, gpu, False, actions, changed_before or bool(plan['destroy_gis']))
        return nvml.read_gpu(gpu['index'])
    mode_changed = plan['set_mode'] is True
    if mode_changed:
        _set_mode(module, nvml, gpu, True, actions, changed_before)
        fresh = nvml.read_gpu(gpu['index'])
        if not fresh['mig_current']:
            return fresh
        # MIG mode is on now (a new MIG GPU has no instances and no
        # processes): plan the instances with the GPU's own table.
        try:
            plan = plan_gpu(fresh, entry, force)
        except MigPlanError as exc:
            module.fail_json(msg='%s (MIG mode was enabled on %s; no instance was created)' % (exc, label), changed=True, actions=actions)
        actions.extend(line for line in plan_actions(plan) if 'MIG mode' not in line)
        gpu = fresh
    _apply_instances(module, nvml, gpu, plan, actions, changed_before or mode_changed)
    return nvml.read_gpu(gpu['index'])


def _set_mode(module, nvml, gpu, enable, actions, changed_before):
    try:
        nvml.set_mode(gpu['index'], enable)
    except ApplyError as exc:
        module.fail_json(msg='%s: %s' % (gpu_label(gpu), exc), changed=changed_before, actions=actions)


def _apply_instances(module, nvml, gpu, plan, actions, changed_before):
    applier = Applier(nvml, gpu)
    try:
        applier.apply(plan)
    except ApplyError as exc:
        label = gpu_label(gpu)
        try:
            applier.rollback()
        except ApplyError as second:
            now = nvml.read_gpu(gpu['index'])
            module.fail_json(msg='%s: %s; rolling back failed too (%s); the GPU now has %s' % (
                label, exc, second, describe_layout(now)), changed=True, actions=actions, gpus=[_gpu_result(now)])
        now = nvml.read_gpu(gpu['index'])
        module.fail_json(msg='%s: %s; rolled back to the layout before the call: %s' % (label, exc, describe_layout(now)),
                         changed=changed_before, actions=actions, gpus=[_gpu_result(now)])


class MigModule(AnsibleModule):
    """AnsibleModule whose type errors on a wrongly nested ``gpus`` name the option and the value.

    Ansible's own messages for these ("dictionary requested, could not parse
    JSON or key=value") name neither; the raw ``gpus`` is kept to say which
    while the arguments are validated (``main`` drops it afterwards).
    """

    raw_gpus = None

    def _load_params(self):
        super(MigModule, self)._load_params()
        self.raw_gpus = copy.deepcopy(self.params.get('gpus')) if isinstance(self.params, dict) else None

    def fail_json(self, msg, **kwargs):  # pylint: disable=arguments-differ
        better = None
        if self.raw_gpus is not None and ('dictionary requested' in msg or "'gpus'" in msg):
            better = container_problem(self.raw_gpus)
        super(MigModule, self).fail_json(msg=better or msg, **kwargs)


def main():
    instance_spec = dict(
        profile=dict(type='str', required=True),
        count=dict(type='int', default=1),
        placement=dict(type='int'),
        compute_instances=dict(type='list', elements='str'),
    )
    module = MigModule(
        argument_spec=dict(
            gpus=dict(type='list', elements='dict', required=True, options=dict(
                gpu=dict(type='str', default='all'),
                model=dict(type='str'),
                mig=dict(type='bool', default=True),
                instances=dict(type='list', elements='dict', default=[], options=instance_spec),
            )),
            force=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    module.raw_gpus = None
    if pynvml is None:
        module.fail_json(msg=missing_required_lib('nvidia-ml-py'), exception=PYNVML_IMPORT_ERROR)
    module.exit_json(**run(module, pynvml))


if __name__ == '__main__':
    main()
