# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one way module_utils code reaches the programs that run on nodes without Ansible.

The MIG boot program, the health check, the Slurm hook runner and the
TaskProlog import the collection's module_utils by their collection names
(``ansible_collections.gpucluster.bringup.plugins.module_utils...``).  A role
installs those files under a library directory on the node, in the same tree
(``LIB/ansible_collections/gpucluster/bringup/plugins/module_utils/...``), and
the program puts ``LIB`` first on ``sys.path``.  ``closure`` finds every file
the named ones import (so a new import can never be forgotten in a role's
list) and ``entries`` turns the set into ``gpucluster.bringup.install_files``
entries (the ``node_library`` filter).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

PACKAGE = 'ansible_collections.gpucluster.bringup.plugins.module_utils'
TREE = PACKAGE.replace('.', '/')
# "from PACKAGE.a._b import x" and "from PACKAGE.a import _b [as c], _d"
_FROM = re.compile(r'^\s*from\s+' + re.escape(PACKAGE) + r'((?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n]*)', re.M)


def _module_file(root, dotted):
    """The file of module_utils module ``dotted`` ('mig._mig_nvml'), relative to root, or None when it is a package."""
    rel = dotted.replace('.', '/') + '.py'
    return rel if os.path.isfile(os.path.join(root, rel)) else None


def imports(root, rel):
    """The module_utils files (relative to ``root``) that module_utils file ``rel`` imports."""
    with open(os.path.join(root, rel)) as handle:
        source = handle.read()
    found = set()
    for match in _FROM.finditer(source):
        base = match.group(1).lstrip('.')
        module = _module_file(root, base) if base else None
        if module:
            found.add(module)
            continue
        for name in match.group(2).strip('()').replace('\n', ' ').split(','):
            words = name.split()
            if words:
                module = _module_file(root, (base + '.' if base else '') + words[0])
                if module:
                    found.add(module)
    return found


def closure(root, names):
    """``names`` (module_utils files such as ``mig/_mig_nvml.py``) and every module_utils file they import, sorted.

    ValueError names a file that does not exist.
    """
    todo = list(names)
    seen = set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        if not isinstance(rel, str) or not rel.endswith('.py') or rel.startswith('/') or '..' in rel.split('/') \
                or not os.path.isfile(os.path.join(root, rel)):
            raise ValueError('%r is not a module_utils file of the collection (such as "mig/_mig_nvml.py")' % (rel,))
        seen.add(rel)
        todo.extend(imports(root, rel) - seen)
    return sorted(seen)


def entries(lib_dir, root, names, mode='0644'):
    """install_files entries that put ``closure(root, names)`` under ``lib_dir`` in the collection's tree.

    Directories come first (mode 0755), then the files (``src`` under ``root``).
    """
    lib_dir = lib_dir.rstrip('/')
    files = closure(root, names)
    dirs = set()
    for rel in files:
        parts = (TREE + '/' + rel).split('/')[:-1]
        for depth in range(1, len(parts) + 1):
            dirs.add('/'.join(parts[:depth]))
    result = [{'dest': lib_dir, 'state': 'directory', 'mode': '0755'}]
    result.extend({'dest': '%s/%s' % (lib_dir, rel), 'state': 'directory', 'mode': '0755'} for rel in sorted(dirs))
    result.extend({'dest': '%s/%s/%s' % (lib_dir, TREE, rel), 'src': os.path.join(root, rel), 'mode': mode} for rel in files)
    return result
