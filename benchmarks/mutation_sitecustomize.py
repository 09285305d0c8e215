# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sitecustomize of benchmarks/mutation.sh's python path (the mutation run only, never the collection).

mutmut reads its ``setup.cfg`` from the working directory when a process first asks for its configuration; a test's
own subprocess (an ``ansible-playbook`` run in the test's temporary directory) that imports the mutated collection
then cannot find it and fails.  When ``GPUCLUSTER_MUTMUT_DIR`` names the work tree, ``mutmut.configuration`` is
changed as it is imported: a process whose working directory has neither ``setup.cfg`` nor ``pyproject.toml`` loads
the configuration from that directory.  Nothing is imported until mutmut itself is.
"""

import importlib.abc
import importlib.machinery
import os
import sys

_WHERE = os.environ.get('GPUCLUSTER_MUTMUT_DIR')


class _ConfigFromWorkTree(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != 'mutmut.configuration':
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            load = module._load_config

            def _load_config():
                if os.path.exists('setup.cfg') or os.path.exists('pyproject.toml'):
                    return load()
                here = os.getcwd()
                os.chdir(_WHERE)
                try:
                    return load()
                finally:
                    os.chdir(here)

            module._load_config = _load_config

        spec.loader.exec_module = exec_module
        return spec


if _WHERE and os.path.isfile(os.path.join(_WHERE, 'setup.cfg')):
    sys.meta_path.insert(0, _ConfigFromWorkTree())
