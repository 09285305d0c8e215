# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The health check program where the closed loop is on (issue 48): comment-mode conditions write a hit in the
node's Comment instead of draining it; the others drain as before.  Through the NVML simulator and the
test_healthcheck_program STAND-IN scontrol (not Slurm)."""

from __future__ import absolute_import, division, print_function

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as loop
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.slurm.test_healthcheck_program import HGX, Node


@pytest.fixture
def node(tmp_path, monkeypatch):
    return Node(tmp_path, monkeypatch)


def actions_file(node, actions):
    path = str(node.tmp / 'healthcheck-actions.json')
    with open(path, 'w') as handle:
        json.dump({'prefix': 'gpuhc', 'actions': actions}, handle)
    return path


def test_a_comment_mode_condition_writes_a_hit_and_does_not_drain(node, capsys):
    node.create('h100-80gb-x8', **HGX)
    path = actions_file(node, {})
    node.sim('clocks', '--gpu', '7', '--reasons', 'hw_slowdown')
    rc, out, _err = node.run(capsys, '--loop-actions', path)
    assert rc == 0 and 'NOTE thermal (thermal, comment): GPU 7 (00000000:DF:00.0) clocks are held down by hw_slowdown' in out, out
    slurm = node.slurm_node()
    assert slurm['flags'] == [] and slurm['reason'] == ''
    hit = loop.parse_hit(slurm['comment'])
    assert hit[0] == 'thermal' and hit[2].startswith('GPU 7 (00000000:DF:00.0) clocks are held down by hw_slowdown'), slurm
    # a drain condition next to it drains as before
    node.sim('persistence', '--gpu', '4', '--mode', 'off')
    rc, out, _err = node.run(capsys, '--loop-actions', path)
    assert rc == 1 and node.slurm_node()['reason'].startswith('gpuhc:periodic:persistence: GPU 4')


def test_an_override_makes_the_condition_drain_again(node, capsys):
    node.create('h100-80gb-x8', **HGX)
    node.sim('clocks', '--gpu', '7', '--reasons', 'hw_slowdown')
    rc, _out, _err = node.run(capsys, '--loop-actions', actions_file(node, {'thermal': 'drain'}))
    assert rc == 1 and node.slurm_node()['reason'].startswith('gpuhc:periodic:thermal: GPU 7')


def test_without_the_loop_every_failure_drains_as_before(node, capsys):
    node.create('h100-80gb-x8', **HGX)
    node.sim('clocks', '--gpu', '7', '--reasons', 'hw_slowdown')
    rc, _out, _err = node.run(capsys, '--loop-actions', str(node.tmp / 'absent.json'))
    assert rc == 1 and node.slurm_node()['reason'].startswith('gpuhc:periodic:thermal: GPU 7')


def test_a_broken_actions_file_is_a_warning_and_everything_drains(node, capsys):
    node.create('h100-80gb-x8', **HGX)
    node.sim('clocks', '--gpu', '7', '--reasons', 'hw_slowdown')
    rc, out, _err = node.run(capsys, '--loop-actions', actions_file(node, {'thermal': 'panic'}))
    assert rc == 1 and 'WARN cannot use the closed loop actions' in out and 'actions["thermal"] is' in out
