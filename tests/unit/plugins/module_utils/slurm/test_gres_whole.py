# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm/_gres.py: the renderers with their defaults and compare_gres on every form of slurmd -G record, whole."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._gres import (
    UUID_MAP_HEADER,
    compare_gres,
    render_gres_conf,
    render_uuid_map,
)

MIG = {'name': 'gpu', 'type': '1g.10gb', 'files': ['/dev/nvidia2', '/dev/nvidia-caps/nvidia-cap336', '/dev/nvidia-caps/nvidia-cap337'],
       'cores': '16-31', 'count': 1, 'unique_id': 'MIG-2-07', 'index': 1, 'gpu_index': 2, 'gpu_minor': 2,
       'model': 'NVIDIA A100 80GB PCIe', 'mig': {'mig_index': 0}}
WHOLE = {'name': 'gpu', 'type': 'a100', 'files': ['/dev/nvidia0'], 'cores': None, 'count': 1, 'unique_id': 'GPU-0',
         'index': 0, 'gpu_index': 0, 'gpu_minor': 0, 'model': 'NVIDIA A100 80GB PCIe', 'mig': None}
MPS = {'name': 'mps', 'type': None, 'files': ['/dev/nvidia0'], 'cores': None, 'count': 100}


def test_render_gres_conf_defaults_write_multiple_files_and_gpu_lines():
    assert render_gres_conf([('a100', [WHOLE]), ('1g.10gb', [MIG])], [MPS]) == [
        'Name=gpu Type=a100 File=/dev/nvidia0',
        'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337 Cores=16-31',
        'Name=mps Count=100 File=/dev/nvidia0',
    ]


def test_render_gres_conf_ci_only_and_nvml():
    groups = [('a100', [WHOLE]), ('1g.10gb', [dict(MIG, files=['/dev/nvidia-caps/nvidia-cap337'])])]
    assert render_gres_conf(groups, [], 'ci_only') == ['Name=gpu Type=a100 File=/dev/nvidia0',
                                                       'Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap337 Cores=16-31']
    assert render_gres_conf(groups, [MPS], 'multiple', 'nvml') == ['AutoDetect=nvml', 'Name=mps Count=100 File=/dev/nvidia0']


def test_render_uuid_map_whole():
    assert render_uuid_map([WHOLE, MIG]) == UUID_MAP_HEADER + '0 a100 GPU-0\n1 1g.10gb MIG-2-07\n'
    assert UUID_MAP_HEADER == (
        '# GRES index -> device UUID, written by gpucluster.bringup.slurm_gres_facts.\n'
        '# Fields: <gres index> <type> <unique id>.  The index is the Slurm gpu GRES\n'
        '# index (SLURM_JOB_GPUS, SLURM_STEP_GPUS); the id is what CUDA_VISIBLE_DEVICES\n'
        '# accepts (MIG-... for a MIG instance, GPU-... for a full GPU).\n')


def _line(count, files, name='gpu', gres_type='a100'):
    return 'slurmd: Gres Name=%s Type=%s Count=%d Index=0 ID=7696487%s (null)\n' % (
        name, gres_type, count, ' File=%s' % files if files else '')


@pytest.mark.parametrize('entries, output, missing, unexpected', [
    # one GPU, one file: the same
    ([WHOLE], _line(1, '/dev/nvidia0'), [], []),
    # a record without File= is one unit of its count
    ([WHOLE], _line(1, None), ['gpu:a100 files=/dev/nvidia0'], ['gpu:a100 files=']),
    ([WHOLE], _line(2, None), ['gpu:a100 files=/dev/nvidia0'], ['gpu:a100 files= count=2']),
    # a File= range of as many files as the count: one GPU per file
    ([WHOLE, dict(WHOLE, files=['/dev/nvidia1'], unique_id='GPU-1', index=1)], _line(2, '/dev/nvidia[0-1]'), [], []),
    # a count that is not the number of files: one unit, as printed
    ([WHOLE], _line(2, '/dev/nvidia0'), ['gpu:a100 files=/dev/nvidia0'], ['gpu:a100 files=/dev/nvidia0 count=2']),
    ([MIG], _line(1, '/dev/nvidia2,/dev/nvidia-caps/nvidia-cap[336-337]', gres_type='1g.10gb').replace(' (null)', ' Cores=16-31 (null)'),
     [], []),
    # a zero-count shadow is left out; another GRES is compared by name, files and count
    ([MPS], _line(0, '/dev/nvidia2', 'mps', '(null)') + _line(100, '/dev/nvidia0', 'mps', '(null)'), [], []),
    ([MPS], _line(50, '/dev/nvidia0', 'mps', '(null)'), ['mps files=/dev/nvidia0 count=100'], ['mps files=/dev/nvidia0 count=50']),
])
def test_compare_gres_each_record_form(entries, output, missing, unexpected):
    order = not [1 for unit in missing if unit.startswith('gpu')]
    assert compare_gres(entries, output) == {'equal': not missing and not unexpected, 'order_equal': order,
                                             'missing': missing, 'unexpected': unexpected, 'errors': []}
