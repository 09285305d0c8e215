# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one module over many argument sets, each in its own forked process, as Ansible runs a module.

    python traceback_runner.py MODULE CASES.json OUTDIR

The module is imported once; for each argument set a child process gets the
arguments the way Ansible passes them (``{"ANSIBLE_MODULE_ARGS": ...}`` in a
file named by ``sys.argv[1]``), runs ``main()`` with its stdout and stderr
going to ``OUTDIR/N.out`` and ``OUTDIR/N.err``, and an exception that escapes
``main()`` is printed as the interpreter would print it (``Traceback ...``).
The exit status of each child goes to ``OUTDIR/N.rc``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import json
import os
import sys
import traceback


def run_case(main, args, outdir, index):
    args_file = os.path.join(outdir, '%d.args' % index)
    with open(args_file, 'w') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': args}, handle)
    pid = os.fork()
    if pid == 0:  # the child: one module run
        out = os.open(os.path.join(outdir, '%d.out' % index), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = os.open(os.path.join(outdir, '%d.err' % index), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.argv = ['module', args_file]
        code = 0
        try:
            main()
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except BaseException:  # pylint: disable=broad-except
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # pylint: disable=protected-access
    _pid, status = os.waitpid(pid, 0)
    with open(os.path.join(outdir, '%d.rc' % index), 'w') as handle:
        handle.write(str(os.waitstatus_to_exitcode(status)))


def main():
    module_name, cases_file, outdir = sys.argv[1:4]
    module = importlib.import_module('ansible_collections.gpucluster.bringup.plugins.modules.%s' % module_name)
    with open(cases_file) as handle:
        cases = json.load(handle)
    for index, args in enumerate(cases):
        run_case(module.main, args, outdir, index)


if __name__ == '__main__':
    main()
