# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node preflight's judgement of every node's reading; the rules are in module_utils/preflight/_node.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight._node import failure_message, node_problems


def _why(result):
    why = ' '.join(str(result.get('msg') or 'no answer').split())
    if why.startswith('Task failed: '):
        why = why[len('Task failed: '):]
    return why.split('. ', 1)[0].rstrip('.')


def node_preflight_report(hosts, hostvars, reading_var, want_var):
    """``{lines, warnings, message}`` of the hosts' registered readings (``reading_var``) and wants (``want_var``)."""
    readings, wants, missing = {}, {}, []
    try:
        for host in hosts or []:
            values = hostvars[host] if host in hostvars else {}
            result = values.get(reading_var)
            if not isinstance(result, dict) or result.get('unreachable') or result.get('failed') or not isinstance(result.get('reading'), dict):
                why = _why(result) if isinstance(result, dict) else 'no reading'
                missing.append('%s: cannot be read (%s)' % (host, why))
                continue
            readings[host] = result['reading']
            want = values.get(want_var)
            wants[host] = dict(want) if isinstance(want, dict) else {}
        lines, warnings = node_problems(readings, wants, missing)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnsibleFilterError('node_preflight_report: the readings cannot be judged: %s: %s' % (type(exc).__name__, exc))
    return {'lines': lines, 'warnings': warnings, 'message': failure_message(lines) if lines else ''}


class FilterModule(object):
    """gpucluster.bringup filters of the node preflight."""

    def filters(self):
        return {'node_preflight_report': node_preflight_report}
