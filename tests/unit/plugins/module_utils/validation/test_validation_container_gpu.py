# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The enroot node check on a GPU node: can enroot's NVIDIA hook give containers their GPUs (issue 44, item 7)?

enroot 4.1.2's conf/hooks/98-nvidia.sh (installed as /etc/enroot/hooks.d/98-nvidia.sh) runs for every container whose
image sets NVIDIA_VISIBLE_DEVICES and stops it with "Command not found: nvidia-container-cli, see
https://github.com/NVIDIA/libnvidia-container" when libnvidia-container's CLI is not in PATH. The report knows pass, fail
and skip (no warning): with container_gpu (the validate role's validate_node.container_gpu) the absence fails the check,
without it the check passes and its reason names the absence.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_checks as vc
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_report as vr

CONF = '/etc/enroot/enroot.conf'
BASE = 'enroot 4.1.2 installed, %s present' % CONF
MISSING = ("nvidia-container-cli (libnvidia-container's tools) is not in PATH: enroot's NVIDIA hook 98-nvidia.sh stops every "
           "container whose image sets NVIDIA_VISIBLE_DEVICES (CUDA images), so GPU containers cannot start")


def enroot(**extra):
    return dict({'rc': 0, 'output': '4.1.2', 'conf_present': True, 'conf_path': CONF}, **extra)


@pytest.mark.parametrize('observed, container_gpu, status, reason', [
    # not a GPU node (NVML not queried): the CLI is not looked for, the reason is as before
    (enroot(), True, 'pass', BASE),
    (enroot(), False, 'pass', BASE),
    # a GPU node with the CLI
    (enroot(nvidia_cli='/usr/bin/nvidia-container-cli'), True, 'pass',
     BASE + ', /usr/bin/nvidia-container-cli for its NVIDIA hook (GPU containers)'),
    (enroot(nvidia_cli='/usr/bin/nvidia-container-cli'), False, 'pass',
     BASE + ', /usr/bin/nvidia-container-cli for its NVIDIA hook (GPU containers)'),
    # a GPU node without it: fails when GPU containers are required, else passes naming the absence
    (enroot(nvidia_cli=None), True, 'fail',
     BASE + ', but ' + MISSING + '; install libnvidia-container-tools (or set validate_node.container_gpu to false where no GPU container runs)'),
    (enroot(nvidia_cli=None), False, 'pass', BASE + '; ' + MISSING + ' (not required: validate_node.container_gpu is false)'),
    (enroot(nvidia_cli=None), None, 'pass', BASE + '; ' + MISSING + ' (not required: validate_node.container_gpu is false)'),
    # enroot itself missing or broken: that failure first, whatever the CLI
    ({'rc': None, 'conf_path': CONF, 'nvidia_cli': None}, True, 'fail', 'enroot is not installed (no enroot command in PATH)'),
    (enroot(conf_present=False, nvidia_cli=None), True, 'fail', 'enroot 4.1.2 is installed but %s is missing' % CONF),
])
def test_enroot_record_on_a_gpu_node(observed, container_gpu, status, reason):
    expect = {'enroot': True}
    if container_gpu is not None:
        expect['container_gpu'] = container_gpu
    records = vc.node_records('dgx-01', {'enroot': observed}, expect)
    got = [r for r in records if r['check'] == 'enroot']
    assert got == [{'stage': 'node', 'node': 'dgx-01', 'check': 'enroot', 'status': status, 'reason': reason}]
    assert got[0]['status'] in vr.STATUSES


def test_enroot_not_expected_is_skipped_whatever_the_cli():
    records = vc.node_records('dgx-01', {'enroot': enroot(nvidia_cli=None)}, {'enroot': False, 'container_gpu': True})
    assert [r['status'] for r in records if r['check'] == 'enroot'] == ['skip']


def test_report_statuses_have_no_warning():
    # the decision above rests on this: a record is pass, fail or skip
    assert tuple(vr.STATUSES) == ('pass', 'fail', 'skip')
