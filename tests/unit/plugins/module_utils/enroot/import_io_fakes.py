# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-ins for the tests of _enroot_import_io: an AnsibleModule that records what the manager asks of it and an
enroot whose answers each test scripts (run_command and _enroot_run.run_stoppable)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_import_io

DIGEST_A = 'sha256:' + 'a' * 64
DIGEST_B = 'sha256:' + 'b' * 64
URI = 'docker://127.0.0.1:5000/test/img:1.0'


class Failed(Exception):
    def __init__(self, result):
        super(Failed, self).__init__(result.get('msg'))
        self.result = result


class Exited(Exception):
    def __init__(self, result):
        super(Exited, self).__init__('exit_json')
        self.result = result


class FakeModule(object):
    """params as the module's argument_spec gives them; ``answers``: subcommand -> (rc, out, err) for run_command."""

    def __init__(self, check_mode=False, answers=None, bin_path=None, **params):
        self.params = {'uri': URI, 'dest': None, 'name': None, 'force': False, 'retries': None, 'connect_timeout': None,
                       'timeout': 0, 'arch': None, 'executable': '/bin/sh', 'container_record_dir': None}
        self.params.update(params)
        self.check_mode = check_mode
        self.answers = dict(answers or {})
        self.bin_path = bin_path
        self.warnings, self.commands, self.moves, self.bin_asked = [], [], [], []
        # called as the module reports a failure (what is on disk then: the user sees the message before the exit)
        self.on_fail = None

    def warn(self, text):
        self.warnings.append(text)

    def fail_json(self, **result):
        if self.on_fail is not None:
            self.on_fail()
        raise Failed(result)

    def exit_json(self, **result):
        raise Exited(result)

    def get_bin_path(self, name):
        self.bin_asked.append(name)
        return self.bin_path

    def run_command(self, argv, environ_update=None):
        self.commands.append((list(argv), dict(environ_update or {})))
        return self.answers.get(argv[1], (0, '', ''))

    def atomic_move(self, src, dst):
        self.moves.append((src, dst))
        os.rename(src, dst)


class FakeRun(object):
    """Replaces _enroot_run.run_stoppable: ``digest`` (rc, out, err) for enroot digest; ``image`` the bytes
    enroot import writes to its --output (None: none), ``rc``/``out``/``err`` its result; ``exc`` raised instead."""

    def __init__(self, digest=(0, '', ''), image=b'squashfs', rc=0, out='', err='', exc=None):
        self.digest, self.image, self.rc, self.out, self.err, self.exc = digest, image, rc, out, err, exc
        self.calls = []

    def __call__(self, argv, env, timeout=None):
        self.calls.append((list(argv), dict(env), timeout))
        if self.exc is not None:
            raise self.exc
        if argv[1] == 'digest':
            return self.digest
        output = argv[argv.index('--output') + 1]
        self.seen_dir = sorted(os.listdir(os.path.dirname(os.path.dirname(output))))
        if self.image is not None:
            with open(output, 'wb') as handle:
                handle.write(self.image)
        return self.rc, self.out, self.err


class Response(object):
    def __init__(self, body, code):
        self.body, self.code = body, code

    def read(self):
        return self.body

    def getcode(self):
        return self.code


class HTTPErrorLike(Exception):
    def __init__(self, code, body=None, unreadable=False):
        super(HTTPErrorLike, self).__init__('HTTP Error %s' % code)
        self.code, self.body, self.unreadable = code, body, unreadable

    def read(self):
        if self.unreadable:
            raise IOError('connection reset')
        return self.body


class NoCode(Exception):
    """An error with a body to read but no HTTP status (not an HTTPError)."""

    def __init__(self, body):
        super(NoCode, self).__init__('no status')
        self.body = body

    def read(self):
        return self.body


class OpenURL(object):
    """Records each call; answers with ``answer`` (a Response) or raises it (an exception)."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def __call__(self, url, **kwargs):
        self.calls.append((url, kwargs))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def manager(tmp_path, open_url=None, **params):
    """The manager over a stand-in module with ``params`` (dest in ``tmp_path`` unless given)."""
    params.setdefault('dest', str(tmp_path / 'img.sqsh'))
    return _enroot_import_io.EnrootImport(FakeModule(**params), open_url or OpenURL(AssertionError('no probe expected')))


def failure(make, *args, **kwargs):
    """The result ``make(*args, **kwargs)`` failed with (fail_json's)."""
    with pytest.raises(Failed) as caught:
        make(*args, **kwargs)
    return caught.value.result
