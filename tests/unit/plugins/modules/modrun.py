# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a module's ``main()`` in-process as Ansible would, and read its result.

One harness for the module tests: ``run_module`` feeds the arguments through
``patch_module_args`` and turns ``exit_json``/``fail_json`` into a returned
:class:`Outcome`.  A module that raises anything else (a traceback in real
life) fails the test with that exception.  ``bad_input`` asserts the module
failed with a message holding every given fragment. ``snapshot`` is what a
bad-input test compares before and after: nothing on the host changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class ModuleExit(Exception):
    def __init__(self, result, failed):
        super(ModuleExit, self).__init__(result.get('msg'))
        self.result = result
        self.failed = failed


class Outcome(object):
    """What the module returned: ``result`` (the JSON it would print) and ``failed``."""

    def __init__(self, result, failed):
        self.result = result
        self.failed = failed

    @property
    def msg(self):
        return self.result.get('msg', '')


def run_module(main, args, check_mode=False, diff=False):
    """Call ``main()`` with ``args``; return the :class:`Outcome` of its exit_json/fail_json."""
    args = dict(args)
    if check_mode:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True

    def exit_json(self, **result):
        raise ModuleExit(result, bool(result.get('failed')))

    def fail_json(self, msg, **result):
        result['msg'] = msg
        result['failed'] = True
        raise ModuleExit(result, True)

    original = (basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json)
    basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json = exit_json, fail_json
    try:
        with patch_module_args(args):
            try:
                main()
            except ModuleExit as done:
                return Outcome(done.result, done.failed)
    finally:
        basic.AnsibleModule.exit_json, basic.AnsibleModule.fail_json = original
    raise AssertionError('the module returned without calling exit_json or fail_json')


def bad_input(main, args, *fragments, **kwargs):
    """Assert the module fails on ``args`` with a message containing every fragment; return the outcome."""
    outcome = run_module(main, args, **kwargs)
    assert outcome.failed, 'accepted bad input %r: %r' % (args, outcome.result)
    for fragment in fragments:
        assert fragment in outcome.msg, 'message %r lacks %r' % (outcome.msg, fragment)
    assert 'Traceback' not in outcome.msg, outcome.msg
    return outcome


def snapshot(top):
    """Every path under ``top`` (hidden ones and temporary files too): its mode, owner, group, content hash and link target."""
    tree = {}
    for directory, dirs, names in os.walk(str(top)):
        for name in dirs + names:
            path = os.path.join(directory, name)
            stat = os.lstat(path)
            digest = None
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, 'rb') as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            tree[path] = (stat.st_mode, stat.st_uid, stat.st_gid, digest, os.readlink(path) if os.path.islink(path) else None)
    return tree


def forbid_commands(monkeypatch):
    """Make ``AnsibleModule.run_command`` fail the test (a module run on bad input runs nothing); returns the calls tried."""
    calls = []

    def run_command(self, args, **kwargs):
        calls.append(args)
        raise AssertionError('the module ran %r on bad input' % (args,))
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return calls
