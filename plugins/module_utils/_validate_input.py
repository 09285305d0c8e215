# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks of module input that Ansible's argument spec cannot express (standard library only).

Every check takes the option's name as the user writes it (``hook_log_lines``,
``jobs[2].expect``, ``checks["gpu-01"].records``), the value, and what is valid,
and either returns the value (converted where that is safe, e.g. ``"5"`` to ``5``)
or raises :class:`InputError` whose message names the option, shows the bad
value and says what would be valid::

    hook_log_lines is -5, expected a whole number of at least 1

Modules call these before anything runs, so bad input is one clear
``fail_json`` and nothing on the host changes.  Only :func:`check_writable_dest`
looks at the file system (it reads, it never creates anything).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import os
import re

# Kernel file systems that cannot hold files a module writes (creating one fails with ENOENT/EPERM, even as root).
PSEUDO_ROOTS = ('/proc', '/sys')

_INT = re.compile(r'^\s*[-+]?\d+\s*$')
_TRUE = ('true', 'yes', 'on', '1')
_FALSE = ('false', 'no', 'off', '0')


class InputError(ValueError):
    """Bad input; the message names the option, the bad value and what is valid."""


class ModuleFailure(Exception):
    """A module call failed; ``msg`` says why, ``result`` holds the fields to report with it (``fail_json(msg, **result)``)."""

    def __init__(self, msg, **result):
        super(ModuleFailure, self).__init__(msg)
        self.msg = msg
        self.result = result


def show(value, limit=120):
    """The value as the message shows it: ``repr`` clipped to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _error(name, value, expected):
    return InputError('%s is %s, expected %s' % (name, show(value), expected))


def _range_text(minimum, maximum):
    if minimum is not None and maximum is not None:
        return 'between %s and %s' % (minimum, maximum)
    if minimum is not None:
        return 'of at least %s' % minimum
    if maximum is not None:
        return 'of at most %s' % maximum
    return ''


def require_int(name, value, minimum=None, maximum=None, allow_none=False, unit=''):
    """``value`` as an ``int`` within ``[minimum, maximum]``; a string of digits is converted, booleans are refused.

    ``allow_none``: ``None`` is returned as is (an option that is not set). ``unit`` is added to the
    description of what is valid (``"seconds"``).
    """
    what = ' '.join(part for part in ('a whole number', ('of %s' % unit) if unit else '', _range_text(minimum, maximum)) if part)
    if value is None:
        if allow_none:
            return None
        raise _error(name, value, what)
    if isinstance(value, bool):
        raise _error(name, value, what)
    if isinstance(value, str) and _INT.match(value):
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        raise _error(name, value, what)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _error(name, value, what)
    return number


def require_number(name, value, minimum=None, above=None, maximum=None, allow_none=False):
    """``value`` as a finite ``int``/``float``: at least ``minimum``, above ``above``, at most ``maximum``."""
    parts = []
    if above is not None:
        parts.append('above %s' % above)
    if minimum is not None:
        parts.append('of at least %s' % minimum)
    if maximum is not None:
        parts.append('of at most %s' % maximum)
    what = 'a number' + (' ' + ' and '.join(parts) if parts else '')
    if value is None and allow_none:
        return None
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise _error(name, value, what)
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
        raise _error(name, value, what)
    if (above is not None and number <= above) or (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _error(name, value, what)
    return number


def require_bool(name, value):
    """``value`` as a ``bool``: ``True``/``False`` or the strings Ansible reads as booleans (yes/no, true/false, on/off, 1/0)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise _error(name, value, 'true or false')


def require_str(name, value, allow_empty=False, allow_none=False):
    """``value`` as a string (non-empty unless ``allow_empty``)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise _error(name, value, 'a string' if allow_empty else 'a non-empty string')
    if '\x00' in value:
        raise _error(name, value, 'text without a NUL byte')
    return value


def require_choice(name, value, choices):
    """``value`` must be one of ``choices``."""
    if value not in choices:
        raise _error(name, value, 'one of %s' % ', '.join(str(c) for c in choices))
    return value


def require_match(name, value, pattern, what, allow_empty=False):
    """``value`` is a string matching the regular expression ``pattern`` as a whole; ``what`` describes valid values."""
    if allow_empty and value in ('', None):
        return value
    if not isinstance(value, str) or not re.match(r'(?:%s)\Z' % pattern, value):
        raise _error(name, value, what)
    return value


def require_list(name, value, allow_none=False, min_items=0, element=None):
    """``value`` as a list of at least ``min_items`` items; ``element(item_name, item)`` checks each item."""
    if value is None and allow_none:
        return None
    if not isinstance(value, (list, tuple)) or len(value) < min_items:
        raise _error(name, value, 'a list' + (' of at least %d item(s)' % min_items if min_items else ''))
    if element is None:
        return list(value)
    return [element('%s[%d]' % (name, index), item) for index, item in enumerate(value)]


def require_keys(name, mapping, allowed, required=()):
    """``mapping``'s keys must all be in ``allowed`` and include every key of ``required``."""
    unknown = sorted(str(key) for key in mapping if key not in allowed)
    if unknown:
        raise InputError('%s has unknown key(s) %s; valid keys: %s' % (name, ', '.join(unknown), ', '.join(allowed)))
    missing = [key for key in required if key not in mapping]
    if missing:
        raise InputError('%s lacks the key(s) %s (required: %s)' % (name, ', '.join(missing), ', '.join(required)))
    return mapping


def require_dict(name, value, allowed=None, required=(), allow_none=False):
    """``value`` as a dict; with ``allowed``, its keys are checked by :func:`require_keys`."""
    if value is None and allow_none:
        return None
    if not isinstance(value, dict):
        raise _error(name, value, 'a dict' + (' with keys %s' % ', '.join(allowed) if allowed else ''))
    if allowed is not None:
        require_keys(name, value, allowed, required)
    return value


# A word a command line takes as one argument: no whitespace, no leading "-" (it would be read as an option).
WORD = r'[^\s-][^\s]*'
# Slurm node, partition and reservation names as the collection puts them on command lines: no whitespace, no ","
# (a list separator of Slurm's command lines) and no "=" (scontrol's key=value separator), never starting with "-"
# (scontrol and sacctmgr read options anywhere on their line).
SLURM_NAME = r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}'
SLURM_NAME_TEXT = 'letters, digits, "_", "-" and "." (no spaces, commas or "="), starting with a letter or digit, at most 64 characters'
# systemd unit names (systemd.unit(5)): ASCII letters, digits, ":", "-", "_", ".", "\\" and "@", at most 256 characters with
# the ".service" suffix; here also never starting with "-" (a command line would read it as an option) or "@"
UNIT_NAME = r'[A-Za-z0-9:_.\\][A-Za-z0-9:_.\\@-]*'
UNIT_NAME_MAX = 256
SERVICE = '.service'


def require_word(name, value, what='one word (no spaces, not starting with "-")', allow_empty=False):
    """A string usable as one command-line argument: not empty, no whitespace, not starting with ``-``."""
    return require_match(name, value, WORD, what, allow_empty=allow_empty)


def slurm_name(name, value, what='a Slurm name', allow_empty=False):
    """``value`` as a Slurm node/partition/reservation name (:data:`SLURM_NAME`); raises ``InputError`` naming ``name``."""
    return require_match(name, value, SLURM_NAME, '%s: %s%s' % (what, SLURM_NAME_TEXT, ', or empty' if allow_empty else ''),
                         allow_empty=allow_empty)


def is_slurm_name(value):
    """Whether ``value`` is a Slurm name (:data:`SLURM_NAME`)."""
    return isinstance(value, str) and re.match(r'(?:%s)\Z' % SLURM_NAME, value) is not None


def require_unit(name, value, example='slurmd'):
    """``value`` as a systemd service name without ``.service`` (given with or without it); raises ``InputError`` naming ``name``."""
    what = ('a systemd unit name such as "%s" or "%s.service" (letters, digits, ":", "_", ".", "\\", "@" and "-", '
            'not starting with "-" or "@", at most %d characters)' % (example, example, UNIT_NAME_MAX))
    base = value[:-len(SERVICE)] if isinstance(value, str) and value.endswith(SERVICE) else value
    if not isinstance(base, str) or not re.match(r'(?:%s)\Z' % UNIT_NAME, base) or len(base) + len(SERVICE) > UNIT_NAME_MAX:
        raise _error(name, value, what)
    return base


def _under(path, root):
    return path == root or path.startswith(root.rstrip('/') + '/')


def nearest_existing(path):
    """The longest leading part of ``path`` (absolute) that exists (``lexists``), and the parts below it."""
    path = os.path.abspath(path)
    missing = []
    current = path
    while not os.path.lexists(current):
        parent = os.path.dirname(current)
        missing.insert(0, os.path.basename(current))
        if parent == current:
            break
        current = parent
    return current, missing


def check_writable_dest(name, path, directory=True, pseudo_roots=PSEUDO_ROOTS):
    """Raise :class:`InputError` unless ``path`` can be written (or created) by this process; return it absolute.

    ``directory``: ``path`` is (or will be created as) a directory; otherwise a file. Refused, with the
    reason: an empty path; a path under a kernel file system (``pseudo_roots``: ``/proc``, ``/sys``); an
    existing path of the other kind; a path whose nearest existing parent is not a directory (a file in the
    middle of the path); a parent this process may not create entries in; a read-only file system.
    Nothing is created.
    """
    if not isinstance(path, str) or not path.strip() or '\x00' in path:
        raise _error(name, path, 'a path to a %s' % ('directory' if directory else 'file'))
    full = os.path.abspath(path)
    for root in pseudo_roots:
        if _under(full, root):
            raise InputError('%s is %s, which is under %s, a kernel file system that cannot hold files; expected a path on a real file system'
                             % (name, show(path), root))
    kind = 'directory' if directory else 'file'
    if os.path.lexists(full):
        if directory and not os.path.isdir(full):
            raise InputError('%s is %s, which exists and is not a directory; expected a directory (or a path to create one)' % (name, show(path)))
        if not directory and os.path.isdir(full):
            raise InputError('%s is %s, which is a directory; expected a file path' % (name, show(path)))
        target = full if directory else os.path.dirname(full)
    else:
        target, dummy = nearest_existing(full)
        if not os.path.isdir(target):
            raise InputError('%s is %s, but %s is a file, not a directory, so the %s cannot be created; expected a path whose parents are directories'
                             % (name, show(path), target, kind))
    if not os.access(target, os.W_OK | os.X_OK):
        raise InputError('%s is %s, but this user may not create files in %s; expected a writable location' % (name, show(path), target))
    try:
        readonly = bool(os.statvfs(target).f_flag & getattr(os, 'ST_RDONLY', 1))
    except (OSError, AttributeError):
        readonly = False
    if readonly:
        raise InputError('%s is %s, but %s is on a read-only file system; expected a writable location' % (name, show(path), target))
    return full
