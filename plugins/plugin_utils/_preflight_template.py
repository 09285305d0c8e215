# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight action's templating helpers (controller side: Jinja2 and Ansible's templar types).

``template_key`` names what a role default's value depends on, so that the action templates each distinct value
once per run; ``plain`` turns Ansible's tagged values into plain Python; ``Skip`` is a value that cannot be
templated before the facts are gathered; ``first_line`` and ``lookup_file_problem`` word a templating error.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import jinja2
from jinja2 import nodes as jinja2_nodes

try:  # ansible-core >= 2.19: a string is a template only when trusted as one
    from ansible.template import is_trusted_as_template as _trusted_as_template
except ImportError:  # earlier: every string is (an unsafe one has a type of its own, which the key names)
    def _trusted_as_template(value):  # pylint: disable=unused-argument
        return None


class Skip(Exception):
    """A value that cannot be templated before the facts are gathered."""


def plain(value):
    """``value`` as plain Python data (resolving lazily templated containers)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict) or hasattr(value, 'keys'):
        return dict((plain(k), plain(value[k])) for k in value.keys())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def has_template(value, depth=0):
    """Whether ``value`` (plain data) holds a string Jinja would read as a template (or is too deep to tell quickly)."""
    if isinstance(value, str):
        return '{{' in value or '{%' in value or '{#' in value
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return False
    if depth > 20:
        return True
    if isinstance(value, dict):
        return any(has_template(k, depth + 1) or has_template(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_template(v, depth + 1) for v in value)
    return True


# Templating the same default with the same inputs gives the same value on every host; Jinja compiling each role
# default's template again for every host was most of the preflight's time over a large inventory. So a templated
# value is kept per run under a key of everything it depends on: the value itself and, found from the templates'
# syntax, the variables it names, and theirs in turn (each by type, trust and content). Anything the key cannot
# capture is templated per host as before: a lookup, query, now() or vars (files, time, any variable), a filter
# that draws at random or reads the clock, an include or import, a "#jinja2:" header, a value of a type not known
# to be plain data.
_UNKEYED_NAMES = frozenset(('lookup', 'query', 'q', 'now', 'vars', 'varnames', 'lipsum'))
_UNKEYED_FILTERS = frozenset(('random', 'shuffle', 'random_mac', 'password_hash', 'strftime', 'vault', 'unvault'))
_UNKEYED_NODES = (jinja2_nodes.Include, jinja2_nodes.Import, jinja2_nodes.FromImport, jinja2_nodes.Extends)
# plain data: the built-in types and the tagged (not lazily templated) copies of them ansible-core's loaders give
_PLAIN_SCALARS = frozenset((str, int, float, bool, type(None)))
_PLAIN_TAGGED = frozenset(('_AnsibleTaggedStr', '_AnsibleTaggedInt', '_AnsibleTaggedFloat', '_AnsibleTaggedDict',
                           '_AnsibleTaggedList', '_AnsibleTaggedTuple', 'AnsibleUnicode', 'AnsibleMapping', 'AnsibleSequence',
                           'AnsibleUnsafeText'))
_JINJA = jinja2.Environment()


class _Unkeyed(Exception):
    """A value whose templated result a key cannot capture."""


def _template_strings(value, found, depth=0):
    """Add to ``found`` every string of ``value`` (keys too) that holds a Jinja marker."""
    if depth > 20:
        raise _Unkeyed()
    if isinstance(value, str):
        if '{{' in value or '{%' in value or '{#' in value:
            found.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _template_strings(key, found, depth + 1)
            _template_strings(item, found, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _template_strings(item, found, depth + 1)


def _template_names(text, memo):
    """The variables the template ``text`` names (a frozenset); ``_Unkeyed`` when its result may depend on more."""
    text = str(text)
    if text not in memo:
        names = None
        if not text.lstrip().startswith('#jinja2:'):
            try:
                tree = _JINJA.parse(text)
            except jinja2.TemplateSyntaxError:
                tree = None
            if tree is not None and not any(True for dummy in tree.find_all(_UNKEYED_NODES)):
                filters = set(n.name.rsplit('.', 1)[-1] for n in tree.find_all(jinja2_nodes.Filter))
                # every name the template reads or sets (a loop's or a set's own names too: more names in the key than
                # needed only makes it rarer to share)
                names = frozenset(n.name for n in tree.find_all(jinja2_nodes.Name))
                if filters & _UNKEYED_FILTERS or names & _UNKEYED_NAMES:
                    names = None
        memo[text] = names
    if memo[text] is None:
        raise _Unkeyed()
    return memo[text]


def _value_key(value, memo, depth=0):
    """A hashable key of ``value``'s type, trust and content; ``_Unkeyed`` for anything but plain data."""
    kind = type(value)
    if kind not in _PLAIN_SCALARS and kind not in (dict, list, tuple):
        if kind.__name__ not in _PLAIN_TAGGED or not kind.__module__.startswith('ansible.'):
            raise _Unkeyed()
    if depth > 20:
        raise _Unkeyed()
    if isinstance(value, str):
        return (kind.__name__, str(value), _trusted_as_template(value))
    if isinstance(value, (bool, int, float)) or value is None:
        return (kind.__name__, value)
    if isinstance(value, (dict, list, tuple)):
        # a large container (the inventory's groups) is keyed once a run
        known = memo.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if isinstance(value, dict):
            key = (kind.__name__, tuple((_value_key(k, memo, depth + 1), _value_key(v, memo, depth + 1)) for k, v in value.items()))
        else:
            key = (kind.__name__, tuple(_value_key(v, memo, depth + 1) for v in value))
        memo[id(value)] = (value, key)
        return key
    raise _Unkeyed()


def _template_strings_of(value, memo):
    """The strings of ``value`` that hold a Jinja marker; those of a container found once a run (the inventory's groups)."""
    if not isinstance(value, (dict, list, tuple)):
        found = []
        _template_strings(value, found)
        return found
    known = memo.get(id(value))
    if known is None or known[0] is not value:
        found = []
        _template_strings(value, found)
        known = memo[id(value)] = (value, found)
    return known[1]


def template_key(value, variables, constants, memos):
    """The key of ``value`` templated with ``variables``: ``value`` and every variable it depends on, in turn; None
    when a key cannot capture what the result depends on (then the value is templated for each host).

    ``constants``: the objects of the run (the role's context: its vars, ``groups``, ``hostvars``), keyed by identity
    while a host's variable is that very object. ``memos``: ``(template names, value keys, template strings)`` kept for
    the run.
    """
    names_memo, keys_memo, strings_memo = memos
    try:
        parts = {}
        pending = []
        for text in _template_strings_of(value, strings_memo):
            pending.extend(_template_names(text, names_memo))
        while pending:
            name = pending.pop()
            if name in parts:
                continue
            if name not in variables:
                parts[name] = None
                continue
            item = variables[name]
            if name in constants and item is constants[name]:
                # the run's own object (kept by the role's cache while the run lasts, so its id names it); a template
                # in it may still name a variable of the host, followed below
                parts[name] = ('constant', id(item))
            else:
                parts[name] = _value_key(item, keys_memo)
            for text in _template_strings_of(item, strings_memo):
                pending.extend(_template_names(text, names_memo))
        return (_value_key(value, keys_memo), tuple((name, parts[name]) for name in sorted(parts)))
    except (_Unkeyed, TypeError, ValueError, RecursionError):
        return None


def first_line(text):
    lines = str(text).strip().splitlines()
    return lines[0] if lines else str(text)


# what a lookup says of a file it cannot read (ansible-core 2.19: "Unable to access the file '/x': File not found.";
# earlier: "could not locate file in lookup: /x"); the path is named, never the value of a secret
_LOOKUP_FILE = re.compile(r"(?:Unable to access the file '(?P<path>[^']*)'(?P<why>: [^.]*)?|could not locate file in lookup: (?P<path2>\S+))")


def lookup_file_problem(text):
    found = _LOOKUP_FILE.search(str(text))
    if not found:
        return ''
    path = found.group('path') if found.group('path') is not None else found.group('path2')
    why = (found.group('why') or ': file not found')[2:].strip().lower() if found.group('path') is not None else 'file not found'
    return ("a lookup reads the file '%s' on the Ansible controller: %s (a relative path is looked up in the files/ directories "
            'of the play and the role)' % (path, why))
