#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_gres_facts
short_description: Exact Slurm GPU GRES configuration of a node, from NVML
version_added: 0.1.0
description:
  - Reads the GPUs of the node through NVML (C(pynvml)), their MIG instances, the capability minors of those
    instances from the driver's mig-minors table, the device files and the NUMA-local CPU cores, and returns the
    Slurm configuration that describes them as facts under C(ansible_facts.slurm_gres).
  - The facts hold the GRES entries, the C(gres.conf) lines, the C(Gres=) value of this node's C(NodeName) line in
    C(slurm.conf), C(GresTypes), and a map of GRES index to device UUID for a TaskProlog.
  - Whole GPUs get a short type from their model name (O(type_map)); MIG instances are typed by profile
    (C(1g.10gb)) from the slice count and memory of their GPU-instance profile, memory in GB rounded half up as
    Slurm's NVML autodetection does (so C(1g.10gb+me) is typed C(1g.10gb), like Slurm types it).
  - Where Slurm's gpu/nvml plugin is missing, this replaces C(AutoDetect=nvml) - builds without NVML, and Debian, which
    ships the plugin as C(slurm-wlm-nvml-plugin) in its contrib component (Debian 12's cannot be installed beside the
    archive's current Slurm); the C(gres.conf) lines it returns are for this node only and carry no C(NodeName=).
  - 'GRES index order: without AutoDetect, Slurm 22.05 numbers the gpu GRES of a node type by type in the order of
    the C(Gres=) value, and within a type in C(gres.conf) line order. The facts list types in order of first
    appearance (GPUs by NVML index, MIG instances by MIG device index) and give C(node_gres) and the lines in that
    order, so RV(ansible_facts.slurm_gres.entries[].index) is the index Slurm assigns (the numbers in
    E(SLURM_JOB_GPUS)) as long as C(slurm.conf) uses RV(ansible_facts.slurm_gres.node_gres) verbatim.'
  - Nothing on the node is changed.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
requirements:
  - nvidia-ml-py (the C(pynvml) module) on the managed node
  - the NVIDIA driver (C(libnvidia-ml.so.1)) on the managed node
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
    details: Reads only. Where the NVML bindings are not installed yet, the task is skipped with a message and returns no facts.
  diff_mode:
    support: none
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
options:
  mig_minors_path:
    description:
      - The driver's table of MIG capability minors (lines such as C(gpu2/gi7/ci0/access 337)).
      - Read only when a GPU is in MIG mode. An unreadable or malformed table fails the module, naming the line.
    type: path
    default: /proc/driver/nvidia-caps/mig-minors
  type_map:
    description:
      - GRES type of whole GPUs, as a mapping of a substring of the NVML product name to the type.
      - Added to, and overriding, the built-in map C(A10=a10), C(A100=a100), C(A30=a30), C(A40=a40), C(B200=b200),
        C(GH200=gh200), C(H100=h100), C(H200=h200), C(L4=l4), C(L40=l40), C(L40S=l40s), C(T4=t4), C(V100=v100).
      - Matching ignores case; the longest matching key wins, and of keys of equal length an entry of O(type_map)
        beats a built-in one. A GPU that matches no key fails the module.
      - Types must be the same across the cluster, since C(slurm.conf) and jobs use them.
    type: dict
    default: {}
  mig_device_files:
    description:
      - How a MIG instance's device files are written.
      - V(multiple) writes one C(MultipleFiles=) line per instance with the parent C(/dev/nvidiaN), the GPU-instance
        capability and the compute-instance capability, which is what Slurm's NVML autodetection uses. Needs Slurm
        22.05 or later. With C(ConstrainDevices=yes) a job can open its parent GPU device and its own instance.
      - V(ci_only) is the workaround of seed 003 (C(File=) with the compute-instance capabilities only, as a hostlist
        such as C(/dev/nvidia-caps/nvidia-cap[337,346])). With C(ConstrainDevices=yes) a job then cannot open the
        parent C(/dev/nvidia<N>), which CUDA needs, so use it only without device constraining or where the parent
        device is allowed by other means. It is the only style that works together with O(sharing).
    type: str
    choices: [multiple, ci_only]
    default: multiple
  sharing:
    description:
      - Sharing GRES to add on every GPU that is not in MIG mode.
      - V(mps) adds C(Name=mps Count=<mps_count> File=/dev/nvidiaN) lines (needs C(SelectType=select/cons_tres); the
        MPS control daemon must be started by a prolog); V(shard) adds C(Name=shard Count=<shard_count>) lines.
      - Slurm 22.05 splits C(MultipleFiles=) records into one GPU per file once mps or shard is configured, so
        sharing with MIG instances on the node needs O(mig_device_files=ci_only).
    type: str
    choices: [none, mps, shard]
    default: none
  mps_count:
    description: C(Count=) of each C(Name=mps) line (shares of one GPU), a whole number from 1 to 4294967295.
    type: int
    default: 100
  shard_count:
    description:
      - C(Count=) of each C(Name=shard) line, a whole number from 1 to 4294967295. Required when O(sharing=shard).
    type: int
  autodetect:
    description:
      - V(nvml) returns C(AutoDetect=nvml) instead of GPU lines, for a Slurm that has the gpu/nvml plugin. The plugin
        (C(gpu_nvml.so)) is looked for in O(slurm_plugin_dirs); when it is missing the module fails naming the
        directories searched.
      - With V(nvml) Slurm sets E(CUDA_VISIBLE_DEVICES) to device UUIDs itself and orders the GRES itself, so
        RV(ansible_facts.slurm_gres.uuid_map) is empty and the entries carry no index.
    type: str
    choices: ['off', nvml]
    default: 'off'
  slurm_plugin_dirs:
    description: Directories searched for the Slurm gpu/nvml plugin C(gpu_nvml.so).
    type: list
    elements: path
    default: [/usr/lib/x86_64-linux-gnu/slurm-wlm, /usr/lib/aarch64-linux-gnu/slurm-wlm, /usr/lib64/slurm, /usr/lib/slurm,
              /usr/local/lib/slurm]
  cores:
    description:
      - Write C(Cores=) from the CPUs NVML reports as local to each GPU, turned into Slurm's logical core numbers
        (cores counted socket by socket, hyperthreads folded) with the CPU topology in C(/sys/devices/system/cpu).
      - When NVML reports no affinity for a GPU its lines carry no C(Cores=). A CPU missing from the topology
        fails the module.
    type: bool
    default: true
  nvlink_domain:
    description:
      - Also read the node's NVLink fabric domain (the cluster UUID and clique id C(nvmlDeviceGetGpuFabricInfo) reports
        for its GPUs on multi-node NVLink systems such as GB200 NVL72), returned as RV(ansible_facts.slurm_gres.nvlink_domain)
        for Slurm's topology/block (the slurm role's C(slurm_topology=block)).
    type: bool
    default: false
  device_root:
    description:
      - Directory under which C(/dev) and C(/sys) are read, for a chroot or for tests. The paths in the facts are
        always the paths on the node (C(/dev/...)).
    type: path
    default: /
notes:
  - Every option is checked before the node is read (counts in range, absolute paths, an existing O(device_root), a
    O(type_map) of valid types); a bad one fails the module naming the option, the value and what is valid.
  - Slurm needs every device file named in C(gres.conf) to exist; the module fails when one is missing.
  - MIG instances do not survive a reboot; run this after they are re-created, and keep C(slurm.conf) in step, or
    the node registers fewer GRES than configured and drains.
  - The GPU lines were checked with Debian 12's C(slurmd -G) (Slurm 22.05.8).
seealso:
  - name: Slurm gres.conf
    description: The C(gres.conf) manual page.
    link: https://slurm.schedmd.com/gres.conf.html
  - name: Slurm MIG management
    description: GRES scheduling with MIG.
    link: https://slurm.schedmd.com/gres.html#MIG_Management
'''

EXAMPLES = r'''
- name: Read the GPU GRES of the node
  gpucluster.bringup.slurm_gres_facts:

- name: Show the gres.conf lines
  ansible.builtin.debug:
    var: ansible_facts.slurm_gres.gres_conf_lines

- name: Seed 003 style (compute-instance capabilities only) with MPS on the whole GPUs
  gpucluster.bringup.slurm_gres_facts:
    mig_device_files: ci_only
    sharing: mps
    mps_count: 100

- name: Name an unlisted model
  gpucluster.bringup.slurm_gres_facts:
    type_map:
      RTX 6000 Ada: rtx6000ada

- name: Write the TaskProlog map of GRES index to UUID
  ansible.builtin.copy:
    content: "{{ ansible_facts.slurm_gres.uuid_map_content }}"
    dest: /etc/slurm/gres-uuid.map
    mode: "0644"
'''

RETURN = r'''
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    slurm_gres:
      description: The Slurm GPU GRES of the node.
      returned: always
      type: dict
      contains:
        entries:
          description:
            - One entry per GRES device, gpu entries first (in GRES index order), then mps or shard entries.
          returned: always
          type: list
          elements: dict
          contains:
            name:
              description: GRES name, V(gpu), V(mps) or V(shard).
              type: str
              returned: always
              sample: gpu
            type:
              description: GRES type (short model name, or MIG profile); null for mps and shard.
              type: str
              returned: always
              sample: 1g.10gb
            files:
              description: Device files, parent GPU first for a MIG instance written as C(MultipleFiles=).
              type: list
              elements: str
              returned: always
              sample: [/dev/nvidia2, /dev/nvidia-caps/nvidia-cap336, /dev/nvidia-caps/nvidia-cap337]
            cores:
              description: Slurm logical core list local to the GPU, or null.
              type: str
              returned: always
              sample: 16-31
            count:
              description: Count of the GRES (1 for gpu entries).
              type: int
              returned: always
              sample: 1
            unique_id:
              description: Device UUID (C(MIG-...) for an instance, C(GPU-...) for a whole GPU); null for mps and shard.
              type: str
              returned: always
              sample: MIG-2d2b4a0c-5c4e-5f6a-9d2b-3c1e0f7a8b9c
            index:
              description: Slurm GRES index of a gpu entry; null for mps and shard entries and with O(autodetect=nvml).
              type: int
              returned: always
              sample: 2
            gpu_index:
              description: NVML index of the physical GPU.
              type: int
              returned: always
              sample: 2
            gpu_minor:
              description: Minor number of the physical GPU (N of C(/dev/nvidiaN)).
              type: int
              returned: always
              sample: 2
            model:
              description: NVML product name of the physical GPU.
              type: str
              returned: always
              sample: NVIDIA A100 80GB PCIe
            mig:
              description:
                - For a MIG instance, C(mig_index), C(gi_id), C(ci_id), C(gi_minor), C(ci_minor) and C(profile); null
                  otherwise.
              type: dict
              returned: always
              sample: {mig_index: 0, gi_id: 7, ci_id: 0, gi_minor: 336, ci_minor: 337, profile: 1g.10gb}
        gres_conf_lines:
          description: The lines of this node's C(gres.conf).
          returned: always
          type: list
          elements: str
          sample:
            - Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15
            - Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337 Cores=16-31
        gres_conf_comments:
          description:
            - With O(autodetect=nvml), comment lines for C(gres.conf) (without the C(#)) naming the plugin, the C(Gres=)
              value and the GPU entries NVML shows now, so that the file changes when the node's GPUs change; empty
              with O(autodetect=off).
          returned: always
          type: list
          elements: str
        node_gres:
          description: Value for C(Gres=) on this node's C(NodeName) line in C(slurm.conf), counts per type.
          returned: always
          type: str
          sample: gpu:a100:2,gpu:1g.10gb:14
        gres_types:
          description: Value for C(GresTypes=) in C(slurm.conf) (for this node; merge across nodes).
          returned: always
          type: str
          sample: gpu
        uuid_map:
          description:
            - GRES index (as a string) to device UUID, for every gpu entry. Empty with O(autodetect=nvml).
          returned: always
          type: dict
          sample: {"0": GPU-6f1c8a52-3b0e-4b8e-9a51-6e766d6c7369, "2": MIG-2d2b4a0c-5c4e-5f6a-9d2b-3c1e0f7a8b9c}
        uuid_map_content:
          description:
            - The same map as a file for a TaskProlog (for instance C(/etc/slurm/gres-uuid.map)), empty with
              O(autodetect=nvml).
            - Lines starting with C(#) are comments; every other line is C(<gres index> <type> <unique id>) separated
              by single spaces, one per gpu entry, in index order. The index is the one in E(SLURM_JOB_GPUS) and
              E(SLURM_STEP_GPUS); the id is what E(CUDA_VISIBLE_DEVICES) accepts.
          returned: always
          type: str
          sample: "# GRES index -> device UUID ...\n0 a100 GPU-6f1c8a52-3b0e-4b8e-9a51-6e766d6c7369\n"
        nvlink_domain:
          description:
            - With O(nvlink_domain=true), the node's NVLink domain, C(cluster_uuid) (lowercase UUID text) and C(clique_id),
              of its first GPU whose fabric state is completed with a non-zero cluster UUID; null when no GPU is in a
              domain (single-node HGX boards report zeros, GPUs before Hopper have no fabric info) and without the option.
              GPUs in another domain or in none are warnings.
          returned: always
          type: dict
          sample: {cluster_uuid: 6d1e3f2a-9b1c-4c2e-8f00-1a2b3c4d5e6f, clique_id: 32766}
        autodetect:
          description: The O(autodetect) used.
          returned: always
          type: str
          sample: 'off'
        nvml_plugin:
          description: Path of the Slurm gpu/nvml plugin found in O(slurm_plugin_dirs), or null.
          returned: always
          type: str
          sample: null
        mig_device_files:
          description: The O(mig_device_files) used.
          returned: always
          type: str
          sample: multiple
'''

import glob
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._gres import (
    build_gres,
    check_options,
    cpu_list_from_mask,
)
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_minors import parse_mig_minors
from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml as nvml
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import node_nvlink_domain

# nvidia-ml-py: the Python's own, or where the nvml role's pip route put it
BINDINGS = nvml.import_bindings()   # (module, None) or (None, message)
pynvml = BINDINGS[0]
PYNVML_IMPORT_ERROR = BINDINGS[1]

NVML_PLUGIN = 'gpu_nvml.so'


class CollectError(Exception):
    """Reading the node failed; the message is the module's failure message."""


def _error(exc, index, count):
    """The CollectError for NvmlError ``exc`` about the GPU at NVML index ``index`` (or one of its MIG devices)."""
    subject = 'GPU at NVML index %d' % index
    if exc.mig_index is not None:
        subject = 'MIG device %d of the %s' % (exc.mig_index, subject)
    if exc.kind in ('vanished', 'not_found', 'invalid_argument'):
        return CollectError(
            '%s vanished while it was being read: %s failed with "%s" after NVML counted %d GPUs; '
            'check nvidia-smi and the kernel log (Xid 79), then run again' % (subject, exc.call, exc.detail, count))
    return CollectError('NVML %s failed for the %s: %s' % (exc.call, subject, exc.detail))


def _mig_devices(client, handle, index):
    devices = client.mig_devices(handle)
    if not devices:
        return []
    profiles = dict((p['id'], p) for p in client.gi_profiles(handle))
    result = []
    for device in devices:
        profile = profiles.get(device['gi_profile_id'])
        if profile is None:
            raise CollectError('GPU instance %d of the GPU at NVML index %d has profile id %d, which is not among the GPU-instance '
                               'profiles NVML lists for this GPU (%s)'
                               % (device['gi_id'], index, device['gi_profile_id'], ', '.join(str(p) for p in sorted(profiles)) or 'none'))
        result.append({'index': device['index'], 'uuid': device['uuid'], 'gi_id': device['gi_id'], 'ci_id': device['ci_id'],
                       'slice_count': profile['slices'], 'memory_mb': profile['memory_mb']})
    return result


def _read_gpu(client, index, with_cpus, with_fabric=False):
    handle = client.handle(index)
    gpu = {
        'index': index,
        'name': nvml.text(client.call('nvmlDeviceGetName', handle)),
        'uuid': nvml.text(client.call('nvmlDeviceGetUUID', handle)),
        'minor': int(client.call('nvmlDeviceGetMinorNumber', handle)),
        'cpus': None,
        'mig_current': False,
        'mig_pending': False,
        'mig_devices': [],
    }
    if with_cpus:
        mask = client.cpus(handle)
        if mask is not None:
            gpu['cpus'] = cpu_list_from_mask(mask) or None
    mode = client.mig_mode(handle)  # None without MIG
    if mode is not None:
        gpu['mig_current'], gpu['mig_pending'] = mode
    if gpu['mig_current']:
        gpu['mig_devices'] = _mig_devices(client, handle, index)
    if with_fabric:
        gpu['fabric'] = client.fabric(handle)
    return gpu


def read_gpus(with_cpus, with_fabric=False):
    """All GPUs through the collection's NVML client, as plain dicts."""
    try:
        with nvml.session(pynvml) as client:
            try:
                count = client.count()
            except nvml.NvmlError as exc:
                raise CollectError('NVML nvmlDeviceGetCount failed: %s' % exc.detail)
            gpus = []
            for index in range(count):
                try:
                    gpus.append(_read_gpu(client, index, with_cpus, with_fabric))
                except nvml.NvmlError as exc:
                    raise _error(exc, index, count)
            return gpus
    except nvml.NvmlError as exc:  # NVML could not be opened
        raise CollectError(str(exc))


def _read_int(path):
    with open(path) as handle:
        return int(handle.read().strip())


def read_cpu_topology(device_root):
    """``{cpu: (physical_package_id, core_id)}`` from sysfs, or None when unreadable."""
    topology = {}
    for directory in glob.glob(os.path.join(device_root, 'sys/devices/system/cpu/cpu[0-9]*')):
        name = os.path.basename(directory)
        try:
            package = _read_int(os.path.join(directory, 'topology', 'physical_package_id'))
            core = _read_int(os.path.join(directory, 'topology', 'core_id'))
        except (IOError, OSError, ValueError):
            continue  # offline CPUs have no topology
        topology[int(name[3:])] = (package, core)
    return topology or None


def read_mig_minors(path):
    try:
        with open(path, 'rb') as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        raise CollectError('cannot read the MIG capability table %s: %s' % (path, exc.strerror or exc))
    try:
        text = data.decode('ascii')
    except UnicodeDecodeError as exc:
        raise CollectError('the MIG capability table %s is not text (byte %d is 0x%02x); the driver writes lines such as '
                           '"gpu2/gi7/ci0/access 337": check mig_minors_path' % (path, exc.start, bytearray(data)[exc.start]))
    if not text.strip():
        raise CollectError('the MIG capability table %s is empty, but a GPU is in MIG mode; the driver lists a minor for each '
                           'GPU and compute instance there: check mig_minors_path and that the nvidia-caps module is loaded' % path)
    try:
        return parse_mig_minors(text, source=path)
    except ValueError as exc:
        raise CollectError(str(exc))


def find_nvml_plugin(dirs):
    for directory in dirs:
        path = os.path.join(directory, NVML_PLUGIN)
        if os.path.exists(path):
            return path
    return None


def collect(params):
    """Everything build_gres() needs, read from the node."""
    node = {'gpus': read_gpus(params['cores'], params['nvlink_domain']), 'mig_minors': None, 'cpu_topology': None}
    if any(gpu['mig_current'] for gpu in node['gpus']):
        node['mig_minors'] = read_mig_minors(params['mig_minors_path'])
    if params['cores'] and any(gpu['cpus'] for gpu in node['gpus']):
        node['cpu_topology'] = read_cpu_topology(params['device_root'])
    return node


def run_module(module):
    params = module.params
    root = params['device_root']
    try:
        check_options(params)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if not os.path.isdir(root):
        module.fail_json(msg='device_root %s is not a directory; it is where /dev and /sys are read (/ on a node)' % root)
    try:
        node = collect(params)
        facts, warnings = build_gres(
            node,
            type_map=params['type_map'],
            mig_device_files=params['mig_device_files'],
            sharing=params['sharing'],
            mps_count=params['mps_count'],
            shard_count=params['shard_count'],
            autodetect=params['autodetect'],
            nvml_plugin=find_nvml_plugin(params['slurm_plugin_dirs']),
            plugin_dirs=params['slurm_plugin_dirs'],
            cores=params['cores'],
            mig_minors_source=params['mig_minors_path'],
            file_exists=lambda path: os.path.lexists(os.path.join(root, path.lstrip('/'))),
        )
        facts['nvlink_domain'] = None
        if params['nvlink_domain']:
            facts['nvlink_domain'], domain_warnings = node_nvlink_domain([gpu.get('fabric') for gpu in node['gpus']])
            warnings = list(warnings) + domain_warnings
    except (CollectError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={'slurm_gres': facts})


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mig_minors_path=dict(type='path', default='/proc/driver/nvidia-caps/mig-minors'),
            type_map=dict(type='dict', default={}),
            mig_device_files=dict(type='str', choices=['multiple', 'ci_only'], default='multiple'),
            sharing=dict(type='str', choices=['none', 'mps', 'shard'], default='none'),
            mps_count=dict(type='int', default=100),
            shard_count=dict(type='int'),
            autodetect=dict(type='str', choices=['off', 'nvml'], default='off'),
            slurm_plugin_dirs=dict(type='list', elements='path', default=[
                '/usr/lib/x86_64-linux-gnu/slurm-wlm', '/usr/lib/aarch64-linux-gnu/slurm-wlm', '/usr/lib64/slurm',
                '/usr/lib/slurm', '/usr/local/lib/slurm']),
            cores=dict(type='bool', default=True),
            nvlink_domain=dict(type='bool', default=False),
            device_root=dict(type='path', default='/'),
        ),
        required_if=[('sharing', 'shard', ['shard_count'])],
        supports_check_mode=True,
    )
    if pynvml is None:
        if module.check_mode:  # the nvml role installs them in a real run
            module.exit_json(changed=False, skipped=True, msg=nvml.check_mode_skip(PYNVML_IMPORT_ERROR))
        module.fail_json(msg='%s: %s' % (missing_required_lib('nvidia-ml-py'), PYNVML_IMPORT_ERROR))
    run_module(module)


if __name__ == '__main__':
    main()
