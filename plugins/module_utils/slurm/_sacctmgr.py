# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm associations as code: read ``sacctmgr`` state, compare, plan commands.

Used by the module ``gpucluster.bringup.slurm_assoc``.  Everything here is
pure: the module runs the commands of :func:`read_commands`, hands their
output to :func:`parse_state`, and runs the ``argv`` of every action
:func:`plan` returns.

What sacctmgr (Slurm 22.05) does, as seen on a real slurmdbd and relied on:

* ``--parsable2 --noheader`` prints one ``|``-separated line per record, the
  fields in the order of ``format=``; an unset limit is an empty field.
* Names of accounts, users and QOS, and descriptions and organizations, are
  stored in lower case.
* TRES lists print sorted by name (``cpu=4,gres/gpu=8``); memory keeps the
  unit it was given (``mem=100G``) or gets ``M`` (``mem=1500`` shows as
  ``1500M``).  ``name=-1`` removes one TRES from a limit.
* ``MaxWall=90`` is 90 minutes (``01:30:00``); ``GraceTime=120`` is 120
  seconds (``00:02:00``); ``-1`` clears any limit.
* ``modify`` always says "Modified" even when nothing differs, so change
  detection has to compare first; ``add`` of something that exists says
  "Nothing new added." and exits 1.
* A limit set on an account is copied into the associations below it that
  do not set it themselves (inheritance), so only the keys the inventory
  names are compared.
* A TRES limit naming a TRES that slurmctld never registered (it registers
  those of ``AccountingStorageTRES`` when it starts) fails with
  ``no TRES known by type gres/gpu``.

Standard library only; bad input raises ``ValueError`` naming the value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

# Kinds of values and how they compare.
INT = 'int'
FLOAT = 'float'
TRES = 'tres'
WALL = 'wall'          # a duration whose bare number means minutes (MaxWall)
SECONDS = 'seconds'    # a duration whose bare number means seconds (GraceTime)
NAMES = 'names'        # a set of names (QOS lists, Preempt)
FLAGS = 'flags'        # QOS flags
NAME = 'name'          # one lower-case name (DefaultQOS, Parent)
TEXT = 'text'          # free text, stored in lower case (Description)
LOWER = 'lower'        # a keyword (PreemptMode, AdminLevel)
FAIRSHARE = 'fairshare'

# QOS flags of Slurm 22.05 (sacctmgr prints this list for an unknown flag).
QOS_FLAGS = ('DenyOnLimit', 'EnforceUsageThreshold', 'NoReserve', 'PartitionMaxNodes', 'PartitionMinNodes',
             'OverPartQOS', 'PartitionTimeLimit', 'RequiresReservation', 'NoDecay', 'UsageFactorSafe')
PREEMPT_MODES = ('cluster', 'off', 'cancel', 'requeue', 'suspend', 'gang', 'within')
ADMIN_LEVELS = ('none', 'operator', 'administrator')


class Field(object):
    """One setting: the name ``sacctmgr ... set`` takes, the ``format=`` field that shows it, its kind."""

    def __init__(self, name, show, kind, aliases=()):
        self.name = name
        self.show = show
        self.kind = kind
        self.aliases = tuple(aliases)


_LIMIT_FIELDS = (
    Field('GrpTRES', 'GrpTRES', TRES),
    Field('GrpTRESMins', 'GrpTRESMins', TRES),
    Field('GrpTRESRunMins', 'GrpTRESRunMins', TRES),
    Field('GrpJobs', 'GrpJobs', INT),
    Field('GrpSubmitJobs', 'GrpSubmit', INT, ('GrpSubmit',)),
    Field('GrpWall', 'GrpWall', WALL),
    Field('MaxTRESPerJob', 'MaxTRES', TRES, ('MaxTRES',)),
    Field('MaxTRESPerNode', 'MaxTRESPerNode', TRES),
    Field('MaxTRESMinsPerJob', 'MaxTRESMins', TRES, ('MaxTRESMins',)),
    Field('MaxWall', 'MaxWall', WALL, ('MaxWallDurationPerJob',)),
    Field('Priority', 'Priority', INT),
)

QOS_FIELDS = (
    Field('Description', 'Description', TEXT),
    Field('Flags', 'Flags', FLAGS),
    Field('GraceTime', 'GraceTime', SECONDS),
    Field('Preempt', 'Preempt', NAMES),
    Field('PreemptMode', 'PreemptMode', LOWER),
    Field('UsageFactor', 'UsageFactor', FLOAT),
    Field('UsageThreshold', 'UsageThres', FLOAT, ('UsageThres',)),
    Field('MaxTRESPerUser', 'MaxTRESPU', TRES, ('MaxTRESPU',)),
    Field('MaxJobsPerUser', 'MaxJobsPU', INT, ('MaxJobsPU',)),
    Field('MaxSubmitJobsPerUser', 'MaxSubmitPU', INT, ('MaxSubmitPU',)),
    Field('MaxTRESPerAccount', 'MaxTRESPA', TRES, ('MaxTRESPA',)),
    Field('MaxJobsPerAccount', 'MaxJobsPA', INT, ('MaxJobsPA',)),
    Field('MaxSubmitJobsPerAccount', 'MaxSubmitPA', INT, ('MaxSubmitPA',)),
    Field('MinTRESPerJob', 'MinTRES', TRES, ('MinTRES',)),
) + _LIMIT_FIELDS

ASSOC_FIELDS = (
    Field('Fairshare', 'Share', FAIRSHARE, ('Share', 'Shares')),
    Field('QOS', 'QOS', NAMES),
    Field('DefaultQOS', 'DefaultQOS', NAME, ('DefQOS',)),
    Field('MaxJobs', 'MaxJobs', INT),
    Field('MaxSubmitJobs', 'MaxSubmit', INT, ('MaxSubmit',)),
) + _LIMIT_FIELDS

ACCOUNT_FIELDS = (
    Field('Description', 'Description', TEXT),
    Field('Organization', 'Organization', TEXT),
)

USER_FIELDS = (
    Field('DefaultAccount', 'DefaultAccount', NAME),
    Field('AdminLevel', 'AdminLevel', LOWER),
)

# Records that are Slurm's own and are never removed.
PROTECTED_ACCOUNTS = ('root',)
PROTECTED_USERS = ('root',)
PROTECTED_QOS = ('normal',)

_NAME_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.@-]*\Z')
_TRES_NAME_RE = re.compile(r'^[a-z][a-z0-9_]*(/[A-Za-z0-9_.:-]+)?\Z')
_MEM_UNITS = {'K': 1.0 / 1024, 'M': 1, 'G': 1024, 'T': 1024 ** 2, 'P': 1024 ** 3}
_UNLIMITED = ('-1', 'unlimited', 'infinite')


# --------------------------------------------------------------------- parsing

def parse_parsable2(text, fields):
    """Records of ``sacctmgr --parsable2 --noheader show ... format=<fields>`` as dictionaries.

    Each line must have exactly ``len(fields)`` values (a ``|`` inside a value
    would shift them: that is an error, never a silent misreading).
    """
    records = []
    for number, line in enumerate((text or '').splitlines(), 1):
        if not line.strip():
            continue
        values = line.split('|')
        if len(values) != len(fields):
            raise ValueError('sacctmgr output line %d has %d fields, expected %d (%s): %r'
                             % (number, len(values), len(fields), ','.join(fields), line))
        records.append(dict(zip(fields, values)))
    return records


def _mem_mb(value, what):
    match = re.match(r'^(\d+(?:\.\d+)?)([KMGTP]?)B?$', value, re.IGNORECASE)
    if not match:
        raise ValueError('%s: memory %r is not a size such as 1500, 100G or 1T' % (what, value))
    number = float(match.group(1)) * _MEM_UNITS[(match.group(2) or 'M').upper()]
    return int(number) if number == int(number) else number


def parse_tres(value, what='TRES'):
    """``"cpu=4,gres/gpu=8"`` (or a dictionary) as ``{'cpu': 4, 'gres/gpu': 8}``, memory in MB.

    Names are case-insensitive except the GRES type after ``:``; ``-1`` or
    ``unlimited`` as a count is kept as ``-1`` (removes that TRES).
    """
    if value is None:
        return {}
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    else:
        text = str(value).strip()
        if text.lower() in _UNLIMITED or text == '':
            return {}
        items = []
        for part in text.split(','):
            if '=' not in part:
                raise ValueError('%s %r: "%s" is not NAME=COUNT (e.g. "gres/gpu=8,cpu=64")' % (what, value, part))
            name, count = part.split('=', 1)
            items.append((name, count))
    result = {}
    for name, count in items:
        head, colon, gres_type = name.strip().partition(':')
        name = head.lower() + colon + gres_type
        if not _TRES_NAME_RE.match(name):
            raise ValueError('%s %r: "%s" is not a TRES name (cpu, mem, node, billing, energy, gres/gpu, gres/gpu:TYPE, ...)'
                             % (what, value, name))
        count_text = str(count).strip()
        if count_text.lower() in _UNLIMITED:
            result[name] = -1
        elif name == 'mem':
            result[name] = _mem_mb(count_text, '%s %r' % (what, value))
        elif re.match(r'^\d+$', count_text):
            result[name] = int(count_text)
        else:
            raise ValueError('%s %r: the count of %s is "%s", expected a whole number (or -1 to remove it)'
                             % (what, value, name, count_text))
    return result


def format_tres(tres):
    """``{'gres/gpu': 8, 'cpu': 4}`` as ``cpu=4,gres/gpu=8`` (sorted, memory with an ``M``)."""
    parts = []
    for name in sorted(tres):
        count = tres[name]
        if name == 'mem' and count != -1:
            parts.append('mem=%sM' % (count,))
        else:
            parts.append('%s=%s' % (name, count))
    return ','.join(parts)


def parse_duration(value, bare='minutes', what='duration'):
    """Seconds in a Slurm time value, ``None`` for no limit.

    Accepts ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
    ``D-HH:MM:SS`` (sbatch(1) "time" formats); a bare number is minutes for
    wall-clock limits and seconds for ``GraceTime`` (``bare='seconds'``).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError('%s %r is not a time such as 90, 2:30:00 or 1-12:00:00' % (what, value))
    if isinstance(value, int):
        if value < 0:
            return None
        return value * (60 if bare == 'minutes' else 1)
    text = str(value).strip()
    if text == '' or text.lower() in _UNLIMITED:
        return None
    match = re.match(r'^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$', text)
    if not match:
        raise ValueError('%s %r is not a time such as 90, 2:30:00 or 1-12:00:00' % (what, value))
    days, first, second, third = match.groups()
    if days is not None:
        hours, minutes, seconds = int(first), int(second or 0), int(third or 0)
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if third is not None:
        return (int(first) * 60 + int(second)) * 60 + int(third)
    if second is not None:
        return int(first) * 60 + int(second)
    return int(first) * (60 if bare == 'minutes' else 1)


def format_duration(seconds):
    """Seconds as ``[D-]HH:MM:SS`` (how sacctmgr prints them)."""
    days, rest = divmod(int(seconds), 86400)
    text = '%02d:%02d:%02d' % (rest // 3600, rest % 3600 // 60, rest % 60)
    return ('%d-%s' % (days, text)) if days else text


def _names(value, what):
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    else:
        items = str(value).split(',') if value is not None else []
    result = []
    for item in items:
        item = str(item).strip()
        if not item:
            continue
        check_name(item, what)
        result.append(item.lower())
    return frozenset(result)


def check_name(name, what):
    """Return ``name`` if sacctmgr accepts it as an account, user or QOS name, else raise ``ValueError``."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError('%s name %r is not valid: use letters, digits, "_", ".", "@" and "-" (not first), '
                         'no spaces, commas, "=" or "|"' % (what, name))
    return name


def normalize(field, value, what):
    """The comparable form of ``value`` (inventory value or sacctmgr output) for ``field``."""
    label = '%s %s' % (what, field.name)
    kind = field.kind
    if kind == TRES:
        return tuple(sorted(parse_tres(value, label).items()))
    if kind == WALL:
        seconds = parse_duration(value, 'minutes', label)
        # sacctmgr keeps wall-clock limits in minutes, rounding seconds up (time_str2mins)
        return None if seconds is None else (seconds + 59) // 60 * 60
    if kind == SECONDS:
        return parse_duration(value, 'seconds', label)
    if kind == INT:
        if value is None or (isinstance(value, str) and value.strip().lower() in ('',) + _UNLIMITED):
            return None
        if isinstance(value, bool) or not re.match(r'^-?\d+$', str(value).strip()):
            raise ValueError('%s=%r: expected a whole number (or -1 for no limit)' % (label, value))
        number = int(str(value).strip())
        return None if number < 0 else number
    if kind == FLOAT:
        if value is None or str(value).strip() == '':
            return None
        try:
            return round(float(str(value).strip()), 6)
        except ValueError:
            raise ValueError('%s=%r: expected a number such as 0.5' % (label, value))
    if kind == NAMES:
        return _names(value, label)
    if kind == FLAGS:
        flags = []
        for flag in (value if isinstance(value, (list, tuple)) else str(value or '').split(',')):
            flag = str(flag).strip()
            if not flag or flag == '-1':
                continue
            known = [f for f in QOS_FLAGS if f.lower() == flag.lower()]
            if not known:
                raise ValueError('%s: unknown QOS flag %r; valid flags: %s' % (label, flag, ', '.join(QOS_FLAGS)))
            flags.append(known[0].lower())
        return frozenset(flags)
    if kind == NAME:
        text = '' if value is None else str(value).strip()
        return check_name(text, label).lower() if text else ''
    if kind == TEXT:
        text = '' if value is None else str(value)
        if '|' in text or '\n' in text or '"' in text or "'" in text:
            raise ValueError('%s=%r: text must be one line without "|" or quotes' % (label, value))
        return text.strip().lower()
    if kind == LOWER:
        text = '' if value is None else str(value).strip().lower()
        allowed = PREEMPT_MODES if field.name == 'PreemptMode' else ADMIN_LEVELS
        if text and text not in allowed:
            raise ValueError('%s=%r: expected one of %s' % (label, value, ', '.join(allowed)))
        return text
    if kind == FAIRSHARE:
        text = '' if value is None else str(value).strip().lower()
        if text == 'parent':
            return 'parent'
        if not re.match(r'^\d+$', text) or int(text) < 1:
            raise ValueError('%s=%r: expected a positive whole number or "parent"' % (label, value))
        return int(text)
    raise ValueError('unknown field kind %r' % (kind,))


def argument(field, desired, current=None):
    """The ``Name=value`` argument that sets ``field`` to the comparable value ``desired``.

    For TRES limits, each TRES in ``current`` but not in ``desired`` gets
    ``=-1`` so that it is removed.
    """
    kind = field.kind
    if kind == TRES:
        tres = dict(desired)
        for name, _count in current or ():
            if name not in tres:
                tres[name] = -1
        text = format_tres(tres) if tres else '-1'
    elif kind in (WALL, SECONDS):
        text = '-1' if desired is None else (format_duration(desired) if kind == WALL else str(desired))
    elif kind in (INT, FLOAT):
        text = '-1' if desired is None else str(desired)
    elif kind in (NAMES, FLAGS):
        if kind == FLAGS:
            items = [f for f in QOS_FLAGS if f.lower() in desired]
        else:
            items = sorted(desired)
        text = ','.join(items) if items else ('-1' if kind == FLAGS else "''")
    elif kind == NAME and not desired:
        text = '-1'  # sacctmgr clears DefaultQOS with -1
    else:
        text = str(desired)
    return '%s=%s' % (field.name, text)


def display(field, value):
    """A comparable value as people read it (for diffs)."""
    if value is None:
        return ''
    if field.kind == TRES:
        return format_tres(dict(value))
    if field.kind in (WALL, SECONDS):
        return format_duration(value)
    if field.kind == FLAGS:
        return ','.join(f for f in QOS_FLAGS if f.lower() in value)
    if field.kind == NAMES:
        return ','.join(sorted(value))
    return value


def lookup_field(key, fields, what, extra=()):
    """The :class:`Field` that ``key`` names (case-insensitive, aliases allowed)."""
    wanted = str(key).lower()
    for field in fields:
        if wanted == field.name.lower() or wanted in [a.lower() for a in field.aliases]:
            return field
    valid = sorted(list(extra) + [f.name for f in fields])
    raise ValueError('%s: unknown setting %r; valid settings: %s' % (what, key, ', '.join(valid)))


# ----------------------------------------------------------------- inventory values
#
# What the inventory may give, checked before anything runs.  sacctmgr itself
# takes any negative number as "clear" and reads "-5" as -1 (get_uint), so a
# typo would silently remove a limit: here only -1 (or UNLIMITED) clears.

MAX_COUNT = 4294967293            # uint32 limits: 0xfffffffe is NO_VAL, 0xffffffff INFINITE
MAX_TRES_COUNT = 2 ** 63 - 1      # TRES counts are 64-bit
MAX_FAIRSHARE = 2147483646        # 0x7fffffff is SLURMDB_FS_USE_PARENT
TRES_TYPES = ('billing', 'cpu', 'energy', 'mem', 'node', 'pages', 'vmem')
TRES_NAMED_TYPES = ('bb', 'fs', 'gres', 'ic', 'license')
_CLEAR_HINT = '-1 (or UNLIMITED) to remove the limit'
_TIME_FORMATS = 'MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS'
_TIME_RE = re.compile(r'^(?:\d+-)?\d+(?::\d+)?(?::\d+)?$')


def check_inventory_name(name, what):
    """``name`` if it is a valid account, user, QOS or cluster name as Slurm stores it (lower case)."""
    check_name(name, what)
    if name != name.lower():
        raise ValueError('%s name %r has upper-case letters: Slurm keeps names in lower case, so write %r'
                         % (what, name, name.lower()))
    return name


def _is_clear(value):
    return value == -1 or (isinstance(value, str) and value.strip().lower() in _UNLIMITED)


def _bad_type(value):
    return value is None or isinstance(value, (bool, float, list, tuple, dict, set))


def _int_value(value, label, low, high, hint):
    if _bad_type(value) or not re.match(r'^-?\d+$', str(value).strip()):
        raise ValueError('%s=%r: expected a whole number from %d to %d, or %s' % (label, value, low, high, hint))
    number = int(str(value).strip())
    if not low <= number <= high:
        raise ValueError('%s=%r: %s is out of range; expected a whole number from %d to %d, or %s'
                         % (label, value, number, low, high, hint))
    return number


def _float_value(field, value, label):
    high = 1.0 if field.name == 'UsageThreshold' else None
    valid = ('a number from 0 to 1 such as 0.1' if high else 'a number of 0 or more such as 0.5') + ', or -1 to reset it'
    if _is_clear(value):
        # a cleared UsageFactor reads back as its default 1, a cleared UsageThreshold as unset
        return 1.0 if field.name == 'UsageFactor' else None
    if value is None or isinstance(value, (bool, list, tuple, dict, set)):
        raise ValueError('%s=%r: expected %s' % (label, value, valid))
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ValueError('%s=%r: expected %s' % (label, value, valid))
    if math.isnan(number) or math.isinf(number) or number < 0 or (high is not None and number > high):
        raise ValueError('%s=%r: out of range; expected %s' % (label, value, valid))
    return round(number, 6)


def _duration_value(field, value, label):
    unit = 'minutes' if field.kind == WALL else 'seconds'
    valid = 'a time as %s, a whole number of %s, or %s' % (_TIME_FORMATS, unit, _CLEAR_HINT)
    if _is_clear(value):
        return None
    if value is None or isinstance(value, (bool, float, list, tuple, dict, set)):
        raise ValueError('%s=%r: expected %s' % (label, value, valid))
    if isinstance(value, int):
        if value < 0:
            raise ValueError('%s=%r: a negative time; expected %s' % (label, value, valid))
        if value > MAX_COUNT:
            raise ValueError('%s=%r: out of range; expected at most %d %s, or %s' % (label, value, MAX_COUNT, unit, _CLEAR_HINT))
    elif re.match(r'^-\d+$', str(value).strip()):
        raise ValueError('%s=%r: a negative time; expected %s' % (label, value, valid))
    elif not _TIME_RE.match(str(value).strip()):
        raise ValueError('%s=%r: expected %s' % (label, value, valid))
    seconds = normalize(field, value, label.rsplit(' ', 1)[0])
    if seconds is not None and seconds // (60 if field.kind == WALL else 1) > MAX_COUNT:
        raise ValueError('%s=%r: out of range; expected at most %d %s, or %s' % (label, value, MAX_COUNT, unit, _CLEAR_HINT))
    return seconds


def _tres_name(raw, label, value):
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError('%s %r: TRES name %r is not a string such as cpu, mem or gres/gpu' % (label, value, raw))
    head, colon, gres_type = raw.strip().partition(':')
    name = head.lower() + colon + gres_type
    kind, slash, rest = head.lower().partition('/')
    if not slash and not colon and kind in TRES_TYPES:
        return name
    if slash and kind in TRES_NAMED_TYPES and _TRES_NAME_RE.match(name) and rest and (not colon or (kind == 'gres' and gres_type)):
        return name
    hint = ''
    if not slash and kind not in TRES_TYPES and re.match(r'^[a-z][a-z0-9_]*$', kind):
        hint = ' (did you mean gres/%s?)' % (raw.strip(),)
    raise ValueError('%s %r: "%s" is not a TRES name%s; valid: %s, or TYPE/NAME with TYPE one of %s '
                     '(gres/gpu, gres/gpu:TYPE, license/NAME, ...)'
                     % (label, value, raw, hint, ', '.join(TRES_TYPES), ', '.join(TRES_NAMED_TYPES)))


def _tres_value(value, label):
    if _is_clear(value):
        return ()
    if isinstance(value, dict):
        if not value:
            raise ValueError('%s %r: an empty mapping; give NAME: COUNT pairs, or %s' % (label, value, _CLEAR_HINT))
        items = list(value.items())
    elif isinstance(value, str) and value.strip():
        items = []
        for part in value.split(','):
            if '=' not in part:
                raise ValueError('%s %r: "%s" is not NAME=COUNT (e.g. "gres/gpu=8,cpu=64"); give %s'
                                 % (label, value, part, _CLEAR_HINT))
            items.append(tuple(part.split('=', 1)))
    else:
        raise ValueError('%s=%r: expected NAME=COUNT pairs such as "gres/gpu=8,cpu=64" or a mapping {gres/gpu: 8}, or %s'
                         % (label, value, _CLEAR_HINT))
    seen = set()
    for raw, count in items:
        name = _tres_name(raw, label, value)
        if name in seen:
            raise ValueError('%s %r: TRES %s is given twice' % (label, value, name))
        seen.add(name)
        if _is_clear(count) or (isinstance(count, int) and not isinstance(count, bool) and count < 0):
            raise ValueError('%s %r: the count of %s is %r; to remove %s from this limit leave it out (the list replaces the '
                             'whole limit), or give %s' % (label, value, name, count, name, _CLEAR_HINT))
        if _bad_type(count):
            raise ValueError('%s %r: the count of %s is %r, expected a whole number' % (label, value, name, count))
        text = str(count).strip()
        if name != 'mem' and (not re.match(r'^\d+$', text) or int(text) > MAX_TRES_COUNT):
            raise ValueError('%s %r: the count of %s is %r, expected a whole number from 0 to %d'
                             % (label, value, name, count, MAX_TRES_COUNT))
    return tuple(sorted(parse_tres(value, label).items()))


def _names_value(value, label):
    if isinstance(value, str):
        items = [item for item in value.split(',') if item.strip()] if value.strip() not in ("''", '') else []
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValueError('%s=%r: expected a list of QOS names such as [normal, gpu8] (an empty list clears it)' % (label, value))
    names = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError('%s: %r is not a QOS name (expected a list of names such as [normal, gpu8])' % (label, item))
        name = check_inventory_name(item.strip(), label)
        if name in names:
            raise ValueError('%s: QOS %s is listed twice' % (label, name))
        names.append(name)
    return frozenset(names)


def _flags_value(field, value, label):
    if isinstance(value, str):
        items = value.split(',') if value.strip() not in ('', '-1') else []
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValueError('%s=%r: expected a list of QOS flags (an empty list clears them); valid flags: %s'
                         % (label, value, ', '.join(QOS_FLAGS)))
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError('%s: %r is not a QOS flag; valid flags: %s' % (label, item, ', '.join(QOS_FLAGS)))
    return normalize(field, [i.strip() for i in items], label.rsplit(' ', 1)[0])


def inventory_value(field, value, what):
    """The comparable value of an inventory setting, after checking it strictly.

    Unlike :func:`normalize` (which also reads sacctmgr's output), this
    refuses what would be silently dropped or misread: negative numbers other
    than -1, empty or null values, floats for counts, unknown TRES types, TRES
    counts of -1, names in upper case, bad times.  -1 (or ``UNLIMITED``) is
    the one way to remove a limit, as sacctmgr documents it.
    """
    label = '%s %s' % (what, field.name)
    kind = field.kind
    if kind == INT:
        if _is_clear(value):
            return None
        return _int_value(value, label, 0, MAX_COUNT, _CLEAR_HINT)
    if kind == FLOAT:
        return _float_value(field, value, label)
    if kind in (WALL, SECONDS):
        return _duration_value(field, value, label)
    if kind == TRES:
        return _tres_value(value, label)
    if kind == NAMES:
        return _names_value(value, label)
    if kind == FLAGS:
        return _flags_value(field, value, label)
    if kind == FAIRSHARE:
        if isinstance(value, str) and value.strip().lower() == 'parent':
            return 'parent'
        if _is_clear(value):
            return 1  # a cleared Fairshare reads back as its default 1
        return _int_value(value, label, 1, MAX_FAIRSHARE, '"parent", or -1 to reset it to 1')
    if kind == NAME:
        if _is_clear(value) and field.name == 'DefaultQOS':
            return ''
        if not isinstance(value, str) or not value.strip():
            raise ValueError('%s=%r: expected a QOS name such as normal%s'
                             % (label, value, ', or -1 to clear it' if field.name == 'DefaultQOS' else ''))
        return check_inventory_name(value.strip(), label)
    if kind in (TEXT, LOWER):
        if not isinstance(value, str) or (kind == LOWER and not value.strip()):
            allowed = ('; expected one of ' + ', '.join(PREEMPT_MODES if field.name == 'PreemptMode' else ADMIN_LEVELS)) if kind == LOWER else ''
            raise ValueError('%s=%r: expected a string%s' % (label, value, allowed))
    return normalize(field, value, what)


# ----------------------------------------------------------------- reading

CLUSTER_FORMAT = ('Cluster',)
TRES_FORMAT = ('Type', 'Name')
QOS_FORMAT = ('Name',) + tuple(f.show for f in QOS_FIELDS)
ACCOUNT_FORMAT = ('Account',) + tuple(f.show for f in ACCOUNT_FIELDS)
USER_FORMAT = ('User',) + tuple(f.show for f in USER_FIELDS)
ASSOC_FORMAT = ('Account', 'User', 'Partition', 'ParentName') + tuple(f.show for f in ASSOC_FIELDS)


def _show(what, fields, where=()):
    return ['--parsable2', '--noheader', 'show', what] + list(where) + ['format=' + ','.join(fields)]


def read_commands(cluster):
    """``{name: argv after the sacctmgr executable}`` of the reads :func:`parse_state` needs."""
    return {
        'cluster': _show('cluster', CLUSTER_FORMAT),
        'tres': _show('tres', TRES_FORMAT),
        'qos': _show('qos', QOS_FORMAT),
        'account': _show('account', ACCOUNT_FORMAT),
        'user': _show('user', USER_FORMAT, ['where', 'cluster=' + cluster]),
        'assoc': _show('assoc', ASSOC_FORMAT, ['where', 'cluster=' + cluster]),
    }


def _fields_of(record, fields, what):
    return dict((f.name, normalize(f, record[f.show], what)) for f in fields)


def parse_state(cluster, outputs):
    """The cluster's accounting state from the outputs of :func:`read_commands` (same keys)."""
    state = {'cluster': cluster, 'cluster_exists': False, 'tres': set(), 'qos': {}, 'accounts': {},
             'account_assocs': {}, 'users': {}, 'user_assocs': {}}
    for record in parse_parsable2(outputs.get('cluster', ''), CLUSTER_FORMAT):
        if record['Cluster'].lower() == cluster.lower():
            state['cluster_exists'] = True
    for record in parse_parsable2(outputs.get('tres', ''), TRES_FORMAT):
        state['tres'].add((record['Type'] + '/' + record['Name']) if record['Name'] else record['Type'])
    for record in parse_parsable2(outputs.get('qos', ''), QOS_FORMAT):
        state['qos'][record['Name']] = _fields_of(record, QOS_FIELDS, 'sacctmgr qos %s' % record['Name'])
    for record in parse_parsable2(outputs.get('account', ''), ACCOUNT_FORMAT):
        state['accounts'][record['Account']] = _fields_of(record, ACCOUNT_FIELDS, 'sacctmgr account')
    for record in parse_parsable2(outputs.get('user', ''), USER_FORMAT):
        state['users'][record['User']] = _fields_of(record, USER_FIELDS, 'sacctmgr user')
    for record in parse_parsable2(outputs.get('assoc', ''), ASSOC_FORMAT):
        if record['Partition']:
            continue  # partition associations are not managed here
        values = _fields_of(record, ASSOC_FIELDS, 'sacctmgr association')
        if record['User']:
            state['user_assocs'][(record['User'], record['Account'])] = values
        else:
            values['Parent'] = record['ParentName']
            state['account_assocs'][record['Account']] = values
    return state


# ----------------------------------------------------------------- desired

def _settings(spec, fields, what, reserved):
    """Known settings of an item, checked and normalised: ``{field name: comparable value}``."""
    result = {}
    for key, value in spec.items():
        if key in reserved:
            continue
        if not isinstance(key, str):
            raise ValueError('%s: setting name %r is not a string' % (what, key))
        field = lookup_field(key, fields, what, reserved)
        if field.name in result:
            raise ValueError('%s: setting %s is given twice (as %r and another spelling)' % (what, field.name, key))
        result[field.name] = inventory_value(field, value, what)
    _check_default_qos(result, what)
    return result


def _check_default_qos(settings, what):
    """A DefaultQOS must be one of the QOS the same association is given."""
    default = settings.get('DefaultQOS')
    if default and 'QOS' in settings and default not in settings['QOS']:
        raise ValueError('%s: DefaultQOS %s is not in its QOS list (%s); add it to QOS or choose one of them'
                         % (what, default, ', '.join(sorted(settings['QOS'])) or 'empty'))


def _state_of(spec, what):
    state = spec.get('state', 'present')
    if state not in ('present', 'absent'):
        raise ValueError('%s: state %r must be present or absent' % (what, state))
    return state


def _items(value, what):
    """The entries of ``qos``, ``accounts`` or ``users``: a list of dicts (slurm_assoc's argument spec), each with a name."""
    for item in value or []:
        if 'name' not in item:
            raise ValueError('each item of %s must be a dictionary with a name, got %r' % (what, item))
    return value or []


def desired_state(cluster, qos=None, accounts=None, users=None):
    """Validate and normalise the inventory's QOS, accounts and users.

    * QOS: ``{name, state, <sacctmgr QOS option>: value, ...}``;
    * accounts: ``{name, state, parent, <Description|Organization|association option>: value}``;
    * users: ``{name, state, accounts: [name or {name, <association option>}], default_account,
      admin_level, <association option>: value}`` -- user-level association options apply to
      each of the user's accounts unless the account entry sets them.

    Everything is checked before anything is returned, so a bad value stops
    the module before its first sacctmgr command.
    """
    check_inventory_name(cluster, 'cluster')
    desired = {'cluster': cluster.lower(), 'qos': {}, 'accounts': {}, 'users': {}}
    for spec in _items(qos, 'qos'):
        name = check_inventory_name(spec['name'], 'QOS')
        what = 'QOS %s' % name
        if name in desired['qos']:
            raise ValueError('QOS %s is listed twice' % name)
        desired['qos'][name] = {'state': _state_of(spec, what),
                                'settings': _settings(spec, QOS_FIELDS, what, ('name', 'state'))}
    for spec in _items(accounts, 'accounts'):
        name = check_inventory_name(spec['name'], 'account')
        what = 'account %s' % name
        if name in desired['accounts']:
            raise ValueError('account %s is listed twice' % name)
        entity_keys = ('description', 'organization')
        entity = _settings(dict((k, v) for k, v in spec.items() if str(k).lower() in entity_keys), ACCOUNT_FIELDS, what, ())
        assoc = _settings(dict((k, v) for k, v in spec.items() if str(k).lower() not in entity_keys),
                          ASSOC_FIELDS, what, ('name', 'state', 'parent'))
        parent = spec.get('parent', 'root')
        desired['accounts'][name] = {'state': _state_of(spec, what), 'parent': check_inventory_name(parent, what + ' parent'),
                                     'entity': entity, 'assoc': assoc}
        if name == desired['accounts'][name]['parent']:
            raise ValueError('%s has itself as parent' % what)
    for spec in _items(users, 'users'):
        name = check_inventory_name(spec['name'], 'user')
        what = 'user %s' % name
        if name in desired['users']:
            raise ValueError('user %s is listed twice' % name)
        state = _state_of(spec, what)
        common = _settings(spec, ASSOC_FIELDS, what, ('name', 'state', 'accounts', 'default_account', 'admin_level'))
        entries = spec.get('accounts')
        if entries is None:
            entries = []
        if not isinstance(entries, list):
            raise ValueError('%s: accounts must be a list of account names (or dictionaries with a name), got %r' % (what, entries))
        assocs = {}
        for entry in entries:
            entry = {'name': entry} if isinstance(entry, str) else entry
            if not isinstance(entry, dict) or 'name' not in entry:
                raise ValueError('%s: each of its accounts must be a name or a dictionary with a name, got %r' % (what, entry))
            account = check_inventory_name(entry['name'], what + ' account')
            if account in assocs:
                raise ValueError('%s: account %s is listed twice in its accounts' % (what, account))
            where = '%s account %s' % (what, account)
            settings = dict(common)
            settings.update(_settings(entry, ASSOC_FIELDS, where, ('name',)))
            _check_default_qos(settings, where)
            assocs[account] = settings
        if state == 'present' and not assocs:
            raise ValueError('%s has no accounts: list at least one in its accounts (a user exists only through an association)' % what)
        default = spec.get('default_account')
        if default is not None:
            check_inventory_name(default, what + ' default_account')
        if state == 'present':
            default = default or _first_name(entries)
            if default not in assocs:
                raise ValueError('%s: default_account %s is not one of its accounts (%s)' % (what, default, ', '.join(sorted(assocs))))
        admin = spec.get('admin_level')
        admin = inventory_value(USER_FIELDS[1], admin, what) if admin is not None else None
        desired['users'][name] = {'state': state, 'assocs': assocs, 'default_account': default or '', 'admin_level': admin}
    _check_references(desired)
    return desired


def _first_name(entries):
    first = entries[0]
    return str(first if isinstance(first, str) else first['name']).lower()


def _check_references(desired):
    """Parents, user accounts and QOS names must be defined or Slurm's own."""
    accounts = desired['accounts']
    for name, spec in accounts.items():
        seen = [name]
        parent = spec['parent']
        while parent in accounts and parent not in seen:
            seen.append(parent)
            parent = accounts[parent]['parent']
        if parent in seen:
            raise ValueError('accounts %s form a parent loop' % ' -> '.join(seen + [parent]))
    for name, spec in desired['users'].items():
        for account in spec['assocs']:
            if account in accounts and accounts[account]['state'] == 'absent' and spec['state'] == 'present':
                raise ValueError('user %s is in account %s, which has state absent' % (name, account))


def _qos_refs(settings):
    refs = set(settings.get('QOS') or ())
    if settings.get('DefaultQOS'):
        refs.add(settings['DefaultQOS'])
    return refs


def referenced_tres(desired):
    """Every TRES name a present QOS, account or user limit uses."""
    names = set()
    groups = [(s['settings'], QOS_FIELDS) for s in desired['qos'].values() if s['state'] == 'present']
    groups += [(s['assoc'], ASSOC_FIELDS) for s in desired['accounts'].values() if s['state'] == 'present']
    for spec in desired['users'].values():
        if spec['state'] == 'present':
            groups += [(a, ASSOC_FIELDS) for a in spec['assocs'].values()]
    for settings, fields in groups:
        for field in fields:
            if field.kind == TRES and field.name in settings:
                names.update(name for name, _count in settings[field.name])
    return names


# ----------------------------------------------------------------- planning

class Action(object):
    """One sacctmgr command: ``argv`` (after ``sacctmgr -i``) and a sentence saying what it changes."""

    def __init__(self, argv, summary):
        self.argv = argv
        self.summary = summary

    def as_dict(self):
        return {'command': ['sacctmgr', '-i'] + self.argv, 'summary': self.summary}


def _differences(fields, desired, current):
    """``[(field, desired, current)]`` for each desired setting that differs."""
    result = []
    for field in fields:
        if field.name not in desired:
            continue
        want = desired[field.name]
        have = current.get(field.name) if current is not None else None
        if want != have:
            result.append((field, want, have))
    return result


def _describe(differences):
    return ', '.join('%s %s -> %s' % (f.name, display(f, have) or '(none)', display(f, want) or '(none)')
                     for f, want, have in differences)


def _settings_args(fields, settings):
    return [argument(f, settings[f.name]) for f in fields if f.name in settings]


def _parents_first(accounts):
    """Names of ``accounts`` ordered so that a parent comes before its children."""
    ordered = []
    pending = sorted(accounts)
    while pending:
        ready = [n for n in pending if accounts[n]['parent'] not in pending]
        if not ready:  # a loop; desired_state rejects them, keep the order deterministic anyway
            ready = pending[:1]
        for name in ready:
            ordered.append(name)
            pending.remove(name)
    return ordered


def _depth(account, assocs):
    depth = 0
    seen = set()
    while account in assocs and account not in seen:
        seen.add(account)
        account = assocs[account].get('Parent') or ''
        depth += 1
    return depth


def _users_with_assocs(current):
    return set(user for user, _account in current['user_assocs'])


def removals(desired, current, purge):
    """What goes: ``{'users': [...], 'user_assocs': [(user, account)], 'accounts': [...], 'qos': [...]}``.

    Named with ``state: absent``, or (only with ``purge``) absent from the
    inventory; ``root`` and ``normal`` never.  Accounts are ordered children first.
    """
    users = []
    for user in sorted(_users_with_assocs(current)):
        spec = desired['users'].get(user)
        if user in PROTECTED_USERS:
            continue
        if (spec is not None and spec['state'] == 'absent') or (spec is None and purge):
            users.append(user)
    user_assocs = []
    accounts = [a for a in current['account_assocs'] if a not in PROTECTED_ACCOUNTS and (
        (a in desired['accounts'] and desired['accounts'][a]['state'] == 'absent') or (purge and a not in desired['accounts']))]
    accounts.sort(key=lambda a: (-_depth(a, current['account_assocs']), a))
    for (user, account) in sorted(current['user_assocs']):
        spec = desired['users'].get(user)
        if user in users or user in PROTECTED_USERS or spec is None or account in accounts:
            continue
        if purge and account not in spec['assocs']:
            user_assocs.append((user, account))
    qos = []
    for name in sorted(current['qos']):
        spec = desired['qos'].get(name)
        if name not in PROTECTED_QOS and ((spec is not None and spec['state'] == 'absent') or (spec is None and purge)):
            qos.append(name)
    return {'users': users, 'user_assocs': user_assocs, 'accounts': accounts, 'qos': qos}


def _bare(name, what):
    """``name`` as a word of its own on the sacctmgr command line (``add user NAME``): sacctmgr reads options anywhere
    on its line (getopt without "+"), so the name is checked once more here (no leading "-", no spaces, "=" or ",");
    every other name goes inside a ``key=value`` word."""
    return check_name(name, what)


def _account_actions(desired, current, cluster):
    """The add/modify actions of the present accounts, parents first."""
    actions = []
    present = dict((n, s) for n, s in desired['accounts'].items() if s['state'] == 'present')
    for name in _parents_first(present):
        spec = present[name]
        have = current['account_assocs'].get(name)
        if have is None:
            args = ['add', 'account', _bare(name, 'account'), 'Cluster=' + cluster, 'Parent=' + spec['parent']]
            args += _settings_args(ACCOUNT_FIELDS, spec['entity']) + _settings_args(ASSOC_FIELDS, spec['assoc'])
            actions.append(Action(args, 'add account %s under %s' % (name, spec['parent'])))
            continue
        diff = _differences(ACCOUNT_FIELDS, spec['entity'], current['accounts'].get(name, {}))
        if diff:
            actions.append(Action(['modify', 'account', 'where', 'name=' + name, 'set'] + [argument(f, w, h) for f, w, h in diff],
                                  'modify account %s: %s' % (name, _describe(diff))))
        diff = _differences(ASSOC_FIELDS, spec['assoc'], have)
        args = [argument(f, w, h) for f, w, h in diff]
        summary = _describe(diff)
        if name not in PROTECTED_ACCOUNTS and have.get('Parent') != spec['parent']:
            args.insert(0, 'Parent=' + spec['parent'])
            summary = 'parent %s -> %s%s' % (have.get('Parent') or '(none)', spec['parent'], (', ' + summary) if summary else '')
        if args:
            actions.append(Action(['modify', 'account', 'where', 'name=' + name, 'cluster=' + cluster, 'set'] + args,
                                  'modify account %s: %s' % (name, summary)))
    return actions


def _user_actions(desired, current, cluster):
    """The add/modify actions of the present users, their default account's association first."""
    actions = []
    for name in sorted(desired['users']):
        spec = desired['users'][name]
        if spec['state'] != 'present':
            continue
        user_settings = {'DefaultAccount': spec['default_account']}
        if spec['admin_level'] is not None:
            user_settings['AdminLevel'] = spec['admin_level']
        new_user = name not in current['users']
        for account in sorted(spec['assocs'], key=lambda a: (a != spec['default_account'], a)):
            settings = spec['assocs'][account]
            have = current['user_assocs'].get((name, account))
            if have is None:
                args = ['add', 'user', _bare(name, 'user'), 'Account=' + account, 'Cluster=' + cluster]
                if new_user:
                    args += _settings_args(USER_FIELDS, user_settings)
                    new_user = False
                args += _settings_args(ASSOC_FIELDS, settings)
                actions.append(Action(args, 'add user %s to account %s' % (name, account)))
                continue
            diff = _differences(ASSOC_FIELDS, settings, have)
            if diff:
                actions.append(Action(['modify', 'user', 'where', 'name=' + name, 'account=' + account, 'cluster=' + cluster, 'set']
                                      + [argument(f, w, h) for f, w, h in diff],
                                      'modify user %s in account %s: %s' % (name, account, _describe(diff))))
        if name in current['users']:
            diff = _differences(USER_FIELDS, user_settings, current['users'].get(name, {}))
            if diff:
                actions.append(Action(['modify', 'user', 'where', 'name=' + name, 'cluster=' + cluster, 'set']
                                      + [argument(f, w, h) for f, w, h in diff],
                                      'modify user %s: %s' % (name, _describe(diff))))
    return actions


def plan(desired, current, purge=False):
    """The sacctmgr commands that turn ``current`` into ``desired``, in a safe order.

    Adds and modifications come first (cluster, QOS, accounts parents first,
    users and their default accounts), then removals (users, associations,
    accounts children first, QOS).  Only the settings the inventory names are
    compared, so a second run with the same inventory plans nothing.
    """
    cluster = desired['cluster']
    actions = []
    if not current['cluster_exists']:
        actions.append(Action(['add', 'cluster', _bare(cluster, 'cluster')], 'add cluster %s' % cluster))

    for name in sorted(desired['qos']):
        spec = desired['qos'][name]
        if spec['state'] != 'present':
            continue
        have = current['qos'].get(name)
        if have is None:
            actions.append(Action(['add', 'qos', _bare(name, 'QOS')] + _settings_args(QOS_FIELDS, spec['settings']), 'add QOS %s' % name))
            continue
        diff = _differences(QOS_FIELDS, spec['settings'], have)
        if diff:
            actions.append(Action(['modify', 'qos', 'where', 'name=' + name, 'set'] + [argument(f, w, h) for f, w, h in diff],
                                  'modify QOS %s: %s' % (name, _describe(diff))))

    actions += _account_actions(desired, current, cluster)

    actions += _user_actions(desired, current, cluster)

    gone = removals(desired, current, purge)
    for user in gone['users']:
        actions.append(Action(['delete', 'user', 'where', 'name=' + user, 'cluster=' + cluster], 'remove user %s' % user))
    for user, account in gone['user_assocs']:
        actions.append(Action(['delete', 'user', 'where', 'name=' + user, 'account=' + account, 'cluster=' + cluster],
                              'remove user %s from account %s' % (user, account)))
    for account in gone['accounts']:
        actions.append(Action(['delete', 'account', 'where', 'name=' + account, 'cluster=' + cluster], 'remove account %s' % account))
    for name in gone['qos']:
        actions.append(Action(['delete', 'qos', 'where', 'name=' + name], 'remove QOS %s' % name))
    return actions


def expected_state(desired, current, purge=False):
    """The state :func:`plan`'s commands lead to (what check mode reports as "after")."""
    state = {'cluster': current['cluster'], 'cluster_exists': True, 'tres': set(current['tres']),
             'qos': dict((k, dict(v)) for k, v in current['qos'].items()),
             'accounts': dict((k, dict(v)) for k, v in current['accounts'].items()),
             'account_assocs': dict((k, dict(v)) for k, v in current['account_assocs'].items()),
             'users': dict((k, dict(v)) for k, v in current['users'].items()),
             'user_assocs': dict((k, dict(v)) for k, v in current['user_assocs'].items())}
    for name, spec in desired['qos'].items():
        if spec['state'] == 'present':
            state['qos'].setdefault(name, {}).update(spec['settings'])
    for name, spec in desired['accounts'].items():
        if spec['state'] == 'present':
            state['accounts'].setdefault(name, {}).update(spec['entity'])
            assoc = state['account_assocs'].setdefault(name, {})
            assoc.update(spec['assoc'])
            assoc['Parent'] = spec['parent'] if name not in PROTECTED_ACCOUNTS else assoc.get('Parent', '')
    for name, spec in desired['users'].items():
        if spec['state'] != 'present':
            continue
        user = state['users'].setdefault(name, {})
        user['DefaultAccount'] = spec['default_account']
        if spec['admin_level'] is not None:
            user['AdminLevel'] = spec['admin_level']
        for account, settings in spec['assocs'].items():
            state['user_assocs'].setdefault((name, account), {}).update(settings)
    gone = removals(desired, current, purge)
    for user in gone['users']:
        state['users'].pop(user, None)
        for key in [k for k in state['user_assocs'] if k[0] == user]:
            del state['user_assocs'][key]
    for key in gone['user_assocs']:
        state['user_assocs'].pop(key, None)
    for account in gone['accounts']:
        state['account_assocs'].pop(account, None)
        for key in [k for k in state['user_assocs'] if k[1] == account]:
            del state['user_assocs'][key]
    for name in gone['qos']:
        state['qos'].pop(name, None)
    return state


def problems(desired, current, purge=False):
    """What no plan can fix: TRES slurmdbd does not know, and QOS, parents or accounts that will not exist."""
    result = []
    unknown = sorted(n for n in referenced_tres(desired) if n not in current['tres'])
    if unknown:
        result.append('slurmdbd knows no TRES %s (it knows %s): slurmctld registers the TRES of AccountingStorageTRES '
                      'when it starts, so add them there and restart slurmctld before setting limits on them'
                      % (', '.join(unknown), ', '.join(sorted(current['tres'])) or 'none'))
    after = expected_state(desired, current, purge)
    qos = set(after['qos'])
    accounts = set(after['account_assocs'])
    for name, spec in sorted(desired['accounts'].items()):
        if spec['state'] != 'present':
            continue
        if spec['parent'] not in accounts:
            result.append('account %s has parent %s, which is neither in the inventory nor in the cluster' % (name, spec['parent']))
        for ref in sorted(_qos_refs(spec['assoc']) - qos):
            result.append('account %s uses QOS %s, which is neither in the inventory nor in slurmdbd' % (name, ref))
    for name, spec in sorted(desired['users'].items()):
        if spec['state'] != 'present':
            continue
        for account, settings in sorted(spec['assocs'].items()):
            if account not in accounts:
                result.append('user %s is in account %s, which is neither in the inventory nor in the cluster' % (name, account))
            for ref in sorted(_qos_refs(settings) - qos):
                result.append('user %s uses QOS %s, which is neither in the inventory nor in slurmdbd' % (name, ref))
    for name, spec in sorted(desired['accounts'].items()):
        if spec['state'] == 'present':
            result.extend(_default_qos_problem('account %s' % name, spec['assoc'], after['account_assocs'].get(name), qos))
    for name, spec in sorted(desired['users'].items()):
        if spec['state'] == 'present':
            for account, settings in sorted(spec['assocs'].items()):
                inherited = after['user_assocs'].get((name, account)) or {}
                if not inherited.get('QOS'):
                    inherited = after['account_assocs'].get(account)
                result.extend(_default_qos_problem('user %s account %s' % (name, account), settings, inherited, qos))
    for name, spec in sorted(desired['qos'].items()):
        if spec['state'] == 'present':
            for ref in sorted(set(spec['settings'].get('Preempt') or ()) - qos):
                result.append('QOS %s preempts QOS %s, which is neither in the inventory nor in slurmdbd' % (name, ref))
    return result


def _default_qos_problem(what, settings, have, known):
    """A DefaultQOS set without a QOS list must be in the QOS the association has (or inherits)."""
    default = settings.get('DefaultQOS')
    if not default or default not in known or 'QOS' in settings or not have or not have.get('QOS'):
        return []  # an unknown QOS is reported on its own
    if default in have['QOS']:
        return []
    return ['%s: DefaultQOS %s is not among the QOS it can use (%s); add it to its QOS list'
            % (what, default, ', '.join(sorted(have['QOS'])))]


def summarize(state):
    """A plain view of a state, values as sacctmgr prints them (the module's diff and return value)."""
    def plain(fields, values):
        return dict((f.name, display(f, values[f.name])) for f in fields
                    if f.name in values and values[f.name] not in (None, '', (), frozenset()))
    result = {'qos': {}, 'accounts': {}, 'users': {}}
    for name, values in sorted(state['qos'].items()):
        result['qos'][name] = plain(QOS_FIELDS, values)
    for name, values in sorted(state['account_assocs'].items()):
        entry = plain(ASSOC_FIELDS, values)
        entry['parent'] = values.get('Parent', '')
        entry.update(plain(ACCOUNT_FIELDS, state['accounts'].get(name, {})))
        result['accounts'][name] = entry
    for (user, account), values in sorted(state['user_assocs'].items()):
        entry = result['users'].setdefault(user, {'accounts': {}})
        entry['accounts'][account] = plain(ASSOC_FIELDS, values)
        entry.update(plain(USER_FIELDS, state['users'].get(user, {})))
    return result


# ------------------------------------------------------------------ slurm.conf

_GRES_ITEM = re.compile(r'^([A-Za-z][A-Za-z0-9_]*)(?::([^:,()=]+))?(?::(\d+[KMGTP]?))?(?:\(.*\))?$')


def accounting_tres(node_gres, extra=()):
    """``AccountingStorageTRES`` for nodes with these ``Gres=`` values.

    Each GRES name is tracked in total (``gres/gpu``) and each type on its own
    (``gres/gpu:h100``, ``gres/gpu:1g.10gb``), so that ``sacct`` shows per-type
    GPU use and QOS limits can name a type; ``gres/shard`` and ``gres/mps`` are
    tracked when nodes have them.  ``extra`` adds TRES (``license/x``,
    ``fs/lustre``) or names given by hand.  The result is sorted and without
    duplicates, so the same nodes always give the same line.
    """
    names = set()
    for value in extra or ():
        for item in str(value).split(','):
            item = item.strip()
            if item:
                head, colon, rest = item.partition(':')
                name = head.lower() + colon + rest
                if not _TRES_NAME_RE.match(name):
                    raise ValueError('AccountingStorageTRES entry %r is not a TRES name such as gres/gpu, gres/gpu:a100 or license/matlab'
                                     % (item,))
                names.add(name)
    for gres in node_gres or ():
        for item in str(gres or '').split(','):
            item = item.strip()
            if not item or item.lower() == '(null)':
                continue
            match = _GRES_ITEM.match(item)
            if not match:
                raise ValueError('Gres= entry %r is not NAME[:TYPE][:COUNT] such as gpu:h100:8 or shard:64' % (item,))
            name, gres_type, count = match.groups()
            if gres_type is not None and count is None and re.match(r'^\d+[KMGTP]?$', gres_type):
                gres_type = None  # "gpu:8": the count, no type
            names.add('gres/' + name.lower())
            if gres_type:
                names.add('gres/%s:%s' % (name.lower(), gres_type))
    return ','.join(sorted(names))
