# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A simulated GPU node for the unit tests: the project's NVML simulator (nvml_sim).

``use_node`` points ``$NVMLSIM_STATE``/``$NVMLSIM_ROOT`` at a temporary
directory; ``sim`` runs an ``nvmlsim`` command in-process and ``run_nvmlsim``
runs the simulator's command line as a subprocess.  ``state`` and
``annotated`` read the node back through the simulator.

Two fixtures: ``node`` (a function that creates the node from a preset) and
``calls`` (the NVML calls that change a GPU, counted).  A test module takes
them by importing them by name.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

import pytest

import pynvml
from nvmlsim import cli, store

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NVMLSIM = os.path.join(ROOT, 'nvml_sim', 'bin', 'nvmlsim')

MUTATING = ('nvmlDeviceSetMigMode', 'nvmlDeviceCreateGpuInstance', 'nvmlDeviceCreateGpuInstanceWithPlacement', 'nvmlGpuInstanceDestroy',
            'nvmlGpuInstanceCreateComputeInstance', 'nvmlGpuInstanceCreateComputeInstanceWithPlacement', 'nvmlComputeInstanceDestroy')


def use_node(tmp_path, monkeypatch):
    """Point the simulator at ``tmp_path`` (state.json, root); return (state path, root path)."""
    state_path, root = str(tmp_path / 'state.json'), str(tmp_path / 'root')
    monkeypatch.setenv('NVMLSIM_STATE', state_path)
    monkeypatch.setenv('NVMLSIM_ROOT', root)
    return state_path, root


def sim(*argv):
    """Run an ``nvmlsim`` command in-process; raise if it fails."""
    assert cli.main(list(argv)) == 0, argv


def run_nvmlsim(*args, **env):
    """Run the ``nvmlsim`` command line (a subprocess) with ``env`` added to this process's; raise if it fails, return its output."""
    result = subprocess.run([NVMLSIM] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                            env=dict(os.environ, **env), check=False)
    assert result.returncode == 0, result.stdout
    return result.stdout


def state():
    """The simulator's whole state."""
    return store.load()


def annotated():
    """The simulator's state with the MIG profile names of every instance."""
    return cli.annotated(store.load())


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A simulated node in tmp_path; returns a function that creates it from a preset and returns its state."""
    use_node(tmp_path, monkeypatch)

    def create(preset, auto_reset=True):
        sim('create', '--preset', preset, *(['--auto-reset'] if auto_reset else []))
        return store.load()
    return create


@pytest.fixture
def calls(monkeypatch):
    """Count the NVML calls that change a GPU."""
    counted = []

    def counting(name, original):
        def wrapper(*args, **kwargs):
            counted.append(name)
            return original(*args, **kwargs)
        return wrapper
    for name in MUTATING:
        monkeypatch.setattr(pynvml, name, counting(name, getattr(pynvml, name)))
    return counted
