# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight action's checks of the controller's files (controller side).

``controller_file``: whether a file a role reads on the controller is there and readable (the file lookup's way).
The values themselves are judged by ``_preflight_spec.py`` (Ansible's ArgumentSpecValidator) and
``module_utils/preflight/_roles.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


def controller_file(role, path, search_path, collection_root):
    """``''`` when ``path``, a file ``role`` reads on the controller (the file lookup's way), is a readable file; else why not."""
    try:
        given = os.path.expanduser(path)
        if os.path.isabs(given):
            candidates = [given]
        else:
            bases = [str(base) for base in search_path]
            bases.append(os.path.join(collection_root, 'roles', role))
            candidates = []
            for base in bases:
                for candidate in (os.path.join(base, 'files', given), os.path.join(base, given)):
                    if candidate not in candidates:
                        candidates.append(candidate)
        for candidate in candidates:
            if os.path.isfile(candidate):
                return '' if os.access(candidate, os.R_OK) else '%s cannot be read' % candidate
        for candidate in candidates:
            if os.path.isdir(candidate):
                return '%s is a directory' % candidate
    except (ValueError, OSError, TypeError) as exc:  # a NUL byte, an odd type ...
        return 'it cannot be used as a path (%s)' % exc
    if len(candidates) == 1:
        return 'there is no such file'
    return ('there is no such file (a relative path is looked up in the files/ directories of the play and the role: %s)'
            % ', '.join(candidates[:4]))
