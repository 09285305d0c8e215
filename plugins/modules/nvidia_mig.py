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
    details:
      - Plans and reports the changes; no NVML call that changes the GPU is made.
      - Where the NVML bindings are not installed yet, the task is skipped with a message (nothing read, nothing planned).
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
      shape:
        description:
          - Instead of O(gpus[].instances), a layout computed from each GPU's own profile table (what NVML reports;
            the GPU catalogue's table while MIG mode is still off), so one entry fits every GPU model.
          - V(1g), V(2g), V(3g), V(4g), V(7g) are as many instances of that slice count as fit (the 1g profile with
            the least memory, no C(+me) variant); V(balanced) is one 3g, one 2g and two 1g (one 2g and two 1g on a
            GPU without 3g); a profile name such as V(1g.10gb) is as many instances of it as the GPU allows.
          - Not together with O(gpus[].instances) or O(gpus[].mig=false).
        type: str
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

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_nvml import MigFailure, apply_layout
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_plan import container_problem
from ansible_collections.gpucluster.bringup.plugins.module_utils._nvml import check_mode_skip, import_bindings

# nvidia-ml-py: the Python's own, or where the nvml role's pip route put it
BINDINGS = import_bindings()   # (module, None) or (None, message)
pynvml = BINDINGS[0]
PYNVML_IMPORT_ERROR = BINDINGS[1]


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
                shape=dict(type='str'),
            )),
            force=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    module.raw_gpus = None
    if pynvml is None:
        if module.check_mode:  # the nvml role installs them in a real run
            module.exit_json(changed=False, skipped=True, msg=check_mode_skip(PYNVML_IMPORT_ERROR))
        module.fail_json(msg='%s: %s' % (missing_required_lib('nvidia-ml-py'), PYNVML_IMPORT_ERROR))
    try:
        result = apply_layout(pynvml, module.params['gpus'], force=module.params['force'], check_mode=module.check_mode)
    except MigFailure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
