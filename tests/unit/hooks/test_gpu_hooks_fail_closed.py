# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hooks' nvidia-smi readings fail closed: a value or a line they cannot read fails the hook, naming the field
and the text -- never a healthy GPU, never a skipped process.

What a real nvidia-smi prints is recorded in nvml_sim/tests/data/real-h100-580.159.04/smi.txt and
real-h200-580.159.04/smi-processes.txt (driver 580.159.04): an H100's ``--query-gpu=...,retired_pages.pending,...,
remapped_rows.pending,remapped_rows.failure --format=csv,noheader,nounits`` reads ``[N/A]`` (no page retirement on
Hopper), ``No``, ``No``; ``--query-compute-apps=pid,gpu_uuid`` one ``649, GPU-7569c611-...`` line per process and
nothing when there is none.  Here nvidia-smi is a STAND-IN printing each table row.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from hookenv import ROOT

REAL = os.path.join(ROOT, 'nvml_sim', 'tests', 'data')
FIELDS = ('index', 'ecc.errors.uncorrected.volatile.total', 'retired_pages.pending', 'remapped_rows.pending', 'remapped_rows.failure')
# what the real H100 (580.159.04) printed for the hook's five fields
H100_REAL = '0, 0, [N/A], No, No'


def smi_prints(node, text):
    (node.tmp / 'smi-out').write_text(text)
    node.stand_in('nvidia-smi', 'cat "%s"' % (node.tmp / 'smi-out'))


def real_fields(recording, fields):
    """The values of ``fields`` in a recorded ``--query-gpu`` csv,noheader,nounits run of all of them."""
    with open(os.path.join(REAL, recording, 'smi.txt')) as handle:
        blocks = handle.read().split('### nvidia-smi ')
    block = [b for b in blocks if b.startswith('--query-gpu=index,count,') and 'noheader,nounits' in b.splitlines()[0]][0]
    names = block.splitlines()[0].split('=', 1)[1].split(' ')[0].split(',')
    values = [v.strip() for v in block.splitlines()[2].split(',')]
    return ', '.join(values[names.index(f)] for f in fields)


def test_the_recorded_real_values_are_what_the_table_holds():
    assert real_fields('real-h100-580.159.04', FIELDS) == H100_REAL
    assert real_fields('real-h200-580.159.04', FIELDS) == H100_REAL


@pytest.mark.parametrize('out', [
    H100_REAL + '\n',
    H100_REAL + '\n1, 0, [N/A], No, No\n',
    # a GPU without ECC, page retirement or row remapping: nvidia-smi's "not applicable" forms
    '0, [N/A], No, [N/A], [N/A]\n',
    '0, [Not Supported], [Not Supported], [Not Supported], [Not Supported]\n',
    '0, N/A, N/A, N/A, N/A\n',
    '0,0,[N/A],No,No\n',
])
def test_readable_values_of_a_healthy_gpu_pass(node, out):
    smi_prints(node, out)
    assert node.run_hook('10-all-gpu-healthcheck') == (0, '')


VALUES = [('Maybe', 'unknown'), ('', 'empty'), ('[Unknown Error]', 'an NVML error'), ('[GPU is lost]', 'a lost GPU'),
          ('yes', 'lower case'), ('N o', 'garbled')]


@pytest.mark.parametrize('field, value, kind', [(field, value, kind) for field in FIELDS[1:] for value, kind in VALUES]
                         + [(FIELDS[1], '-1', 'a negative count'), (FIELDS[1], '0x1', 'hexadecimal'), (FIELDS[1], '1.5', 'a fraction')])
def test_an_unreadable_value_fails_naming_the_field_and_the_text(node, field, value, kind):
    values = ['3', '0', '[N/A]', 'No', 'No']
    values[FIELDS.index(field)] = value
    smi_prints(node, H100_REAL + '\n' + ', '.join(values) + '\n')
    rc, out = node.run_hook('10-all-gpu-healthcheck')
    assert rc == 1, (kind, out)
    assert out.startswith("GPU 3: nvidia-smi printed %s '%s', expected " % (field, value)), (kind, out)


@pytest.mark.parametrize('line', [
    '0, 0, [N/A], No',                   # a field missing
    '0, 0, [N/A], No, No, No',           # one too many
    'GPU0, 0, [N/A], No, No',            # the index garbled
    ', 0, [N/A], No, No',                # the index empty
    '',                                  # nothing printed (no GPU read)
    'Unable to determine the device handle for GPU 0000:1B:00.0: Unknown Error',
])
def test_an_unreadable_line_fails_naming_it(node, line):
    smi_prints(node, line + '\n')
    rc, out = node.run_hook('10-all-gpu-healthcheck')
    assert rc == 1, out
    assert out == "nvidia-smi printed '%s', expected %s\n" % (line, ', '.join(FIELDS))


def test_a_yes_still_fails_naming_the_gpu(node):
    smi_prints(node, '0, 0, [N/A], No, No\n1, 0, [N/A], No, Yes\n')
    assert node.run_hook('10-all-gpu-healthcheck') == (1, 'GPU 1: a row remapping failed, the GPU needs service (RMA)\n')


# ------------------------------------------------------------------ 40-all-gpu-cleanup: --query-compute-apps=pid,gpu_uuid

JOB_GPU = 'GPU-11111111-2222-3333-4444-555555555555'


def apps_print(node, text):
    """nvidia-smi answering the job's GPU 0 with JOB_GPU, and --query-compute-apps with ``text``."""
    (node.tmp / 'apps-out').write_text(text)
    node.stand_in('nvidia-smi', 'case "$1" in\n  --query-gpu=index,uuid) echo "0, %s" ;;\n  --query-compute-apps=*) cat "%s" ;;\n'
                                '  *) exit 9 ;;\nesac' % (JOB_GPU, node.tmp / 'apps-out'))


@pytest.mark.parametrize('text', [
    '',                                                    # no process: nothing printed (the real 580.159.04)
    '\n',
    '649, GPU-7569c611-7eef-c527-00d0-eafa8d44d951\n',     # the real H200's line: a process on another GPU
])
def test_readable_process_lists_pass(node, text):
    apps_print(node, text)
    assert node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '0'}) == (0, '')


@pytest.mark.parametrize('line', [
    'abc, %s' % JOB_GPU,                                   # the pid garbled
    ', %s' % JOB_GPU,                                      # the pid empty
    '[Insufficient Permissions], %s' % JOB_GPU,            # an NVML error for the pid
    '649, ',                                               # the GPU UUID empty
    '649, 00000000:1B:00.0',                               # a bus id, not a UUID
    '649',                                                 # a field missing
    '649, %s, 512' % JOB_GPU,                              # one too many
    'Unable to determine the device handle for GPU 0000:1B:00.0: GPU is lost',
    'No running processes found',
])
def test_an_unreadable_process_line_fails_naming_it(node, line):
    apps_print(node, '649, GPU-7569c611-7eef-c527-00d0-eafa8d44d951\n' + line + '\n')
    rc, out = node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '0'})
    assert (rc, out) == (1, "nvidia-smi --query-compute-apps=pid,gpu_uuid printed '%s', expected '<pid>, GPU-<uuid>'\n" % line)
