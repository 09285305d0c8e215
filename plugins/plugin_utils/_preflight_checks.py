# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight action's checks that need Ansible or the controller's files (controller side).

``validator_problems``: what Ansible's own ArgumentSpecValidator finds in a role's values beyond the plain checks;
``controller_file``: whether a file a role reads on the controller is there and readable (the file lookup's way).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as preflight
from ansible_collections.gpucluster.bringup.plugins.plugin_utils._preflight_template import first_line


def validator_problems(options, values, found, cache, role=None):
    """Problems ArgumentSpecValidator finds that the plain checks did not already name.

    The validator's answer depends only on the option and its value: each (role, option, value) is validated once
    a run (the hosts of a node type share their values; a large inventory made this the preflight's main cost);
    ``cache`` keeps the answers (a dict the caller holds for the run).
    """
    problems = []
    named = set()
    for message in found:
        named.add(message.split(' ', 1)[0].split('[', 1)[0].split('.', 1)[0])
    for name in sorted(values):
        if name in named:
            continue
        try:
            key = (role, name, repr(values[name]))
        # (a value without a repr: not cached)
        except Exception:  # pylint: disable=broad-except
            key = None
        errors = cache.get(key) if key is not None else None
        if errors is None:
            result = ArgumentSpecValidator({name: options[name]}).validate({name: values[name]})
            errors = [str(e) for e in result.error_messages]
            if key is not None:
                cache[key] = errors
        if not errors:
            continue
        if preflight.is_secret(name, options[name]):
            problems.append('%s does not match its argument spec (the value is not shown)' % name)
        else:
            problems.extend('%s: %s' % (name, first_line(e)) for e in errors)
    return problems


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
