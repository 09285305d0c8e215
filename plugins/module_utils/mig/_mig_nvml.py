# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The MIG manager: reads a node's MIG state through NVML and applies a planned layout.

Used by the ``gpucluster.bringup.nvidia_mig`` module and by the boot program
of the ``gpucluster.bringup.mig`` role (``gpucluster-mig-boot``), which the
role installs on each GPU node with this file, ``_mig_plan.py`` and
``_validate_input.py`` and ``_nvml.py`` (no Ansible needed there).  NVML is
read and changed through the collection's one NVML client (``_nvml.py``),
whose bindings (nvidia-ml-py's ``pynvml``) are passed in, so this file needs
only the standard library.

- ``Nvml``: a node's MIG state over that client (a GPU's profiles, instances
  and processes; creating and destroying instances; setting MIG mode).  Every
  failed NVML change becomes ``ApplyError`` naming what was being done.
- ``Applier``: applies one GPU's plan, keeping a journal to roll back with.
- ``MigManager``: one ``apply`` for the whole request (validate, read, plan,
  apply GPU by GPU, report); every failure is one ``MigFailure`` carrying the
  message and the result fields (changed, actions, gpus) to report with it.
- ``apply_layout``: opens NVML, runs the manager, closes NVML.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpucluster.bringup.plugins.module_utils._nvml import Client, NvmlError, session, text
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_plan import (
    MigPlanError, check_request, describe_layout, fit_cis, gpu_label, plan_actions, plan_gpu, plan_node, predicted_state, select_gpus)
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import ModuleFailure


DEV_DIR = '/dev'
PROC_DIR = '/proc'


class ApplyError(Exception):
    """An NVML change failed; ``message`` says which."""


class Nvml(object):
    """Reads a node's MIG state and applies planned changes, through the collection's NVML client."""

    def __init__(self, lib):
        self.client = lib if isinstance(lib, Client) else Client(lib)

    # ------------------------------------------------------------ reading

    def read_gpu(self, index):
        client = self.client
        handle = client.handle(index)
        gpu = {'index': index, 'uuid': text(client.call('nvmlDeviceGetUUID', handle)), 'name': text(client.call('nvmlDeviceGetName', handle)),
               'mig_capable': True, 'mig_current': False, 'mig_pending': False, 'profiles': None, 'instances': [], 'processes': [],
               'minor': None}
        try:
            gpu['minor'] = client.call('nvmlDeviceGetMinorNumber', handle)
        except NvmlError:
            pass
        mode = client.mig_mode(handle)
        if mode is None:
            gpu['mig_capable'] = False
        else:
            gpu['mig_current'], gpu['mig_pending'] = mode
        gpu['processes'] = client.processes(handle)
        if not gpu['mig_current']:
            return gpu
        uuids = dict(((dev['gi_id'], dev['ci_id']), dev['uuid']) for dev in client.mig_devices(handle))
        gpu['profiles'] = []
        for profile in client.gi_profiles(handle):
            prof = dict(profile, placements=client.gi_placements(handle, profile['id']), ci_profiles=None)
            gpu['profiles'].append(prof)
            for gi, gi_info in client.gpu_instances(handle, profile):
                # Every GI of a profile offers the same CI profiles: ask the first one.
                if prof['ci_profiles'] is None:
                    prof['ci_profiles'] = client.ci_profiles(gi)
                ci_table = prof['ci_profiles']
                names = dict((ci['id'], ci['name']) for ci in ci_table)
                instance = {'gi_id': gi_info.id, 'profile_id': gi_info.profileId, 'start': gi_info.placement.start,
                            'size': gi_info.placement.size, 'compute_instances': []}
                for ci_prof in ci_table:
                    for ci_info in client.compute_instances(gi, ci_prof):
                        instance['compute_instances'].append({
                            'ci_id': ci_info.id, 'profile': names.get(ci_info.profileId, str(ci_info.profileId)),
                            'profile_id': ci_info.profileId, 'start': ci_info.placement.start, 'size': ci_info.placement.size,
                            'uuid': uuids.get((gi_info.id, ci_info.id))})
                instance['compute_instances'].sort(key=lambda c: c['ci_id'])
                gpu['instances'].append(instance)
        gpu['instances'].sort(key=lambda g: g['gi_id'])
        return gpu

    def read_node(self):
        return [self.read_gpu(index) for index in range(self.client.count())]

    # ------------------------------------------------------------ changing

    def _call(self, what, func, *args):
        try:
            return func(*args)
        except NvmlError as exc:
            raise ApplyError('%s failed: %s' % (what, exc.detail))

    def _gi(self, index, gi_id):
        client = self.client
        return self._call('finding GPU instance %d' % gi_id, lambda: client.gpu_instance(client.handle(index), gi_id))

    def destroy_ci(self, index, gi_id, ci_id):
        gi = self._gi(index, gi_id)
        ci = self._call('finding compute instance %d/%d' % (gi_id, ci_id), self.client.compute_instance, gi, ci_id)
        self._call('destroying compute instance %d of GPU instance %d' % (ci_id, gi_id), self.client.destroy_ci, ci)

    def destroy_gi(self, index, gi_id):
        gi = self._gi(index, gi_id)
        self._call('destroying GPU instance %d' % gi_id, self.client.destroy_gi, gi)

    def create_gi(self, index, profile_id, start, size, what):
        client = self.client
        gi = self._call('creating GPU instance %s' % what, lambda: client.create_gi(client.handle(index), profile_id, start, size))
        return self._call('reading GPU instance %s' % what, client.call, 'nvmlGpuInstanceGetInfo', gi).id

    def create_ci(self, index, gi_id, name, start):
        """Create CI profile ``name`` in GI ``gi_id`` (at ``start`` when given); returns its id."""
        gi = self._gi(index, gi_id)
        table = self._call('reading compute instance profiles of GPU instance %d' % gi_id, self.client.ci_profiles, gi)
        matches = [ci for ci in table if ci['name'] == name]
        if not matches:
            raise ApplyError('GPU instance %d offers no compute instance profile %s; it offers %s' % (
                gi_id, name, ', '.join(ci['name'] for ci in table)))
        prof = matches[0]
        size = None if start is None else [p[1] for p in prof['placements']][0]
        what = 'creating compute instance %s in GPU instance %d' % (name, gi_id)
        ci = self._call(what, self.client.create_ci, gi, prof['id'], start, size)
        return self._call('reading ' + what, self.client.call, 'nvmlComputeInstanceGetInfo', ci).id

    def ci_table_of(self, index, gi_id):
        gi = self._gi(index, gi_id)
        return self._call('reading compute instance profiles of GPU instance %d' % gi_id, self.client.ci_profiles, gi)

    def set_mode(self, index, enable):
        client = self.client
        return self._call('%s MIG mode' % ('enabling' if enable else 'disabling'),
                          lambda: client.set_mig_mode(client.handle(index), enable))


class Applier(object):
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
                # apply() creates after it destroys: undone in reverse, a created CI comes before any GI is re-created
                self.nvml.destroy_ci(self.index, entry[1], entry[2])
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


def gpu_result(gpu):
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


class MigFailure(ModuleFailure):
    """The request failed; ``msg`` says why, ``result`` holds changed, actions and gpus where known."""


class MigManager(object):
    """Brings a node's GPUs to a wanted layout (the ``gpus`` option of nvidia_mig, defaults filled in)."""

    def __init__(self, nvml, check_mode=False, force=False):
        self.nvml = nvml
        self.check_mode = check_mode
        self.force = force
        self.actions = []

    def apply(self, wanted):
        """The result dict (changed, actions, diff, gpus); raises ``MigFailure``."""
        nvml = self.nvml
        before = nvml.read_node()
        try:
            plans = plan_node([dict(gpu) for gpu in before], wanted, self.force)
        except MigPlanError as exc:
            raise MigFailure(str(exc))
        by_index = dict((gpu['index'], gpu) for gpu in before)
        entries = dict((gpu['index'], entry) for gpu, entry, _number in select_gpus(before, wanted))
        diff = {'before': {}, 'after': {}}
        changed = changed_before = False
        after = {}
        for plan in plans:
            gpu = by_index[plan['index']]
            key = 'GPU %d' % gpu['index']
            diff['before'][key] = describe_layout(gpu)
            self.actions.extend(plan_actions(plan))
            changed = changed or plan['changed']
            if self.check_mode:
                diff['after'][key] = describe_layout(predicted_state(gpu, plan))
                after[gpu['index']] = gpu
                continue
            after[gpu['index']] = self._apply_gpu(gpu, plan, entries[gpu['index']], changed_before)
            diff['after'][key] = describe_layout(after[gpu['index']])
            changed_before = changed
        return {'changed': changed, 'actions': self.actions, 'diff': diff,
                'gpus': [gpu_result(after[plan['index']]) for plan in plans]}

    def _apply_gpu(self, gpu, plan, entry, changed_before):
        if plan['set_mode'] is False:
            self._apply_instances(gpu, plan, changed_before)
            self._set_mode(gpu, False, changed_before or bool(plan['destroy_gis']))
            return self.nvml.read_gpu(gpu['index'])
        mode_changed = plan['set_mode'] is True
        if mode_changed:
            self._set_mode(gpu, True, changed_before)
            fresh = self.nvml.read_gpu(gpu['index'])
            if not fresh['mig_current']:
                return fresh
            # MIG mode is on now (a new MIG GPU has no instances and no
            # processes): plan the instances with the GPU's own table.
            try:
                plan = plan_gpu(fresh, entry, self.force)
            except MigPlanError as exc:
                raise MigFailure('%s (MIG mode was enabled on %s; no instance was created)' % (exc, gpu_label(gpu)),
                                 changed=True, actions=self.actions)
            self.actions.extend(line for line in plan_actions(plan) if 'MIG mode' not in line)
            gpu = fresh
        self._apply_instances(gpu, plan, changed_before or mode_changed)
        return self.nvml.read_gpu(gpu['index'])

    def _set_mode(self, gpu, enable, changed_before):
        try:
            self.nvml.set_mode(gpu['index'], enable)
        except ApplyError as exc:
            raise MigFailure('%s: %s' % (gpu_label(gpu), exc), changed=changed_before, actions=self.actions)

    def _apply_instances(self, gpu, plan, changed_before):
        applier = Applier(self.nvml, gpu)
        try:
            applier.apply(plan)
        except ApplyError as exc:
            label = gpu_label(gpu)
            try:
                applier.rollback()
            except ApplyError as second:
                now = self.nvml.read_gpu(gpu['index'])
                raise MigFailure('%s: %s; rolling back failed too (%s); the GPU now has %s' % (
                    label, exc, second, describe_layout(now)), changed=True, actions=self.actions, gpus=[gpu_result(now)])
            now = self.nvml.read_gpu(gpu['index'])
            raise MigFailure('%s: %s; rolled back to the layout before the call: %s' % (label, exc, describe_layout(now)),
                             changed=changed_before, actions=self.actions, gpus=[gpu_result(now)])


def apply_layout(lib, gpus, force=False, check_mode=False):
    """Check the request, open NVML (``lib``: the pynvml bindings), apply ``gpus``; raises ``MigFailure``."""
    try:
        check_request(gpus)
    except MigPlanError as exc:
        raise MigFailure(str(exc))
    wanted = [dict(entry) for entry in gpus]
    try:
        with session(lib) as client:
            return MigManager(Nvml(client), check_mode=check_mode, force=force).apply(wanted)
    except NvmlError as exc:
        # a read failed (the changes map their failures to MigFailure themselves)
        raise MigFailure(str(exc))
