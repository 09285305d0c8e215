# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm/_healthcheck_fleet: the sysfs reader when the tree cannot be read, PCI domains above 9, unknown fabric states."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck_fleet as fleet


def _port_dir(root, hca, number, state='4: ACTIVE\n'):
    base = root / hca / 'ports' / str(number)
    base.mkdir(parents=True)
    (base / 'state').write_text(state)


def test_read_ib_ports_says_what_it_could_not_read_and_keeps_what_it_read(tmp_path, monkeypatch):
    root = tmp_path / 'infiniband'
    _port_dir(root, 'mlx5_0', 1)
    _port_dir(root, 'mlx5_1', 1)
    listdir = os.listdir

    def failing(path):
        if path.endswith(os.path.join('mlx5_1', 'ports')):
            raise OSError(5, 'Input/output error')
        return listdir(path)

    monkeypatch.setattr(fleet.os, 'listdir', failing)
    ports, error = fleet.read_ib_ports(str(root))
    assert [(port['hca'], port['port'], port['state']) for port in ports] == [('mlx5_0', 1, 'ACTIVE')]
    assert error == 'cannot read %s: [Errno 5] Input/output error' % root


def test_read_ib_ports_in_port_order_without_counters(tmp_path):
    root = tmp_path / 'infiniband'
    for number in (10, 2, 1):
        _port_dir(root, 'mlx5_0', number)
    (root / 'mlx5_0' / 'ports' / 'x1').mkdir()
    ports, error = fleet.read_ib_ports(str(root))
    assert error is None
    assert [(port['port'], port['counters']) for port in ports] == [(1, {}), (2, {}), (10, {})]


def test_ib_port_counters_with_blanks_and_unreadable_ones():
    port = fleet.ib_port('mlx5_0', '1', {'counters': {'symbol_error': ' 7\n', 'link_downed': 'n/a\n', 'VL15_dropped': '0'}})
    assert port['counters'] == {'symbol_error': 7, 'VL15_dropped': 0}


def test_pci_key_reads_the_domain_in_hex():
    assert fleet.pci_key('0010:1B:00.0') == (16, '1b', '00')
    assert fleet.pci_key('00000010:1b:00') == fleet.pci_key('0010:1B:00.0')


@pytest.mark.parametrize('state', [0, 7, None])
def test_fabric_states_that_are_no_failure(state):
    gpu = {'index': 0, 'pci_bus_id': '00000000:1B:00.0', 'fleet': {'fabric': {'state': state, 'status': 5}}}
    assert fleet.fabric_failures([gpu]) == []
