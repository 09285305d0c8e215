# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.accounting import FilterModule

FILTERS = FilterModule().filters()
TRES = FILTERS['slurm_accounting_tres']


def test_filter_names():
    assert sorted(FILTERS) == ['slurm_accounting_tres']


@pytest.mark.parametrize('node_gres,extra,expected', [
    # the simulated cluster: gpu-01 with MIG on GPU 0, gpu-02 whole A100s
    (['gpu:1g.10gb:2,gpu:h100:7', 'gpu:a100:8'], ['gres/gpu'], 'gres/gpu,gres/gpu:1g.10gb,gres/gpu:a100,gres/gpu:h100'),
    (['gpu:a100:8,shard:64', 'gpu:h100:8,mps:800', ''], 'gres/gpu', 'gres/gpu,gres/gpu:a100,gres/gpu:h100,gres/mps,gres/shard'),
    ([], ['gres/gpu', 'license/matlab'], 'gres/gpu,license/matlab'),
    (['', None], (), ''),
    (['gpu:a100:8'], 'gres/gpu,fs/lustre', 'fs/lustre,gres/gpu,gres/gpu:a100'),
])
def test_accounting_tres(node_gres, extra, expected):
    assert TRES(node_gres, extra) == expected


@pytest.mark.parametrize('node_gres,extra,message', [
    ('gpu:a100:8', (), "slurm_accounting_tres takes a list of Gres= values such as [\"gpu:h100:8\", \"gpu:1g.10gb:2,gpu:a100:7\"], "
                       "got 'gpu:a100:8'"),
    (['gpu:a100:8'], ['gres gpu'], "AccountingStorageTRES entry 'gres gpu' is not a TRES name such as gres/gpu, gres/gpu:a100 or license/matlab"),
    (['gpu=8'], (), "Gres= entry 'gpu=8' is not NAME[:TYPE][:COUNT] such as gpu:h100:8 or shard:64"),
])
def test_accounting_tres_errors(node_gres, extra, message):
    with pytest.raises(AnsibleFilterError) as err:
        TRES(node_gres, extra)
    assert str(err.value) == message
