# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_enroot_run's exceptions and the stderr of a stopped command, without processes (test_enroot_run.py runs real ones)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_run


def test_the_exceptions_start_without_stderr():
    interrupted, timed_out = _enroot_run.Interrupted(15), _enroot_run.TimedOut(3)
    assert (str(interrupted), interrupted.signum, interrupted.stderr) == ('interrupted by signal 15', 15, '')
    assert (str(timed_out), timed_out.timeout, timed_out.stderr) == ('timed out after 3 seconds', 3, '')


class Stopped(object):
    """A stopped command: communicate answers (out, err) or raises ``fails``; records its timeout."""

    def __init__(self, err=None, fails=None):
        self.err, self.fails, self.timeouts = err, fails, []

    def communicate(self, timeout=None):
        self.timeouts.append(timeout)
        if self.fails is not None:
            raise self.fails
        return '', self.err


def test_rest_of_stderr():
    proc = Stopped('[INFO] Fetching\n')
    assert _enroot_run._rest_of_stderr(proc) == '[INFO] Fetching\n'
    assert proc.timeouts == [5]
    assert _enroot_run._rest_of_stderr(Stopped(None)) == ''
    assert _enroot_run._rest_of_stderr(Stopped(fails=subprocess.TimeoutExpired('enroot', 5))) == ''
    assert _enroot_run._rest_of_stderr(Stopped(fails=ValueError('closed file'))) == ''
