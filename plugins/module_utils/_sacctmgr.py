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

_NAME_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.@-]*$')
_TRES_NAME_RE = re.compile(r'^[a-z][a-z0-9_]*(/[A-Za-z0-9_.:-]+)?$')
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
    if kind in (WALL, SECONDS):
        return parse_duration(value, 'minutes' if kind == WALL else 'seconds', label)
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
    """Known settings of an item, normalised: ``{field name: comparable value}``."""
    result = {}
    for key, value in spec.items():
        if key in reserved:
            continue
        field = lookup_field(key, fields, what, reserved)
        if field.name in result:
            raise ValueError('%s: setting %s is given twice (as %r and another spelling)' % (what, field.name, key))
        result[field.name] = normalize(field, value, what)
    return result


def _state_of(spec, what):
    state = spec.get('state', 'present')
    if state not in ('present', 'absent'):
        raise ValueError('%s: state %r must be present or absent' % (what, state))
    return state


def _items(value, what):
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError('%s must be a list, got %r' % (what, value))
    for item in value:
        if not isinstance(item, dict) or 'name' not in item:
            raise ValueError('each item of %s must be a dictionary with a name, got %r' % (what, item))
    return value


def desired_state(cluster, qos=None, accounts=None, users=None):
    """Validate and normalise the inventory's QOS, accounts and users.

    * QOS: ``{name, state, <sacctmgr QOS option>: value, ...}``;
    * accounts: ``{name, state, parent, <Description|Organization|association option>: value}``;
    * users: ``{name, state, accounts: [name or {name, <association option>}], default_account,
      admin_level, <association option>: value}`` -- user-level association options apply to
      each of the user's accounts unless the account entry sets them.
    """
    check_name(cluster, 'cluster')
    desired = {'cluster': cluster.lower(), 'qos': {}, 'accounts': {}, 'users': {}}
    for spec in _items(qos, 'qos'):
        name = check_name(spec['name'], 'QOS').lower()
        what = 'QOS %s' % name
        if name in desired['qos']:
            raise ValueError('QOS %s is listed twice' % name)
        desired['qos'][name] = {'state': _state_of(spec, what),
                                'settings': _settings(spec, QOS_FIELDS, what, ('name', 'state'))}
    for spec in _items(accounts, 'accounts'):
        name = check_name(spec['name'], 'account').lower()
        what = 'account %s' % name
        if name in desired['accounts']:
            raise ValueError('account %s is listed twice' % name)
        entity = _settings(dict((k, v) for k, v in spec.items() if k.lower() in ('description', 'organization')),
                           ACCOUNT_FIELDS, what, ())
        assoc = _settings(dict((k, v) for k, v in spec.items() if k.lower() not in ('description', 'organization')),
                          ASSOC_FIELDS, what, ('name', 'state', 'parent'))
        parent = spec.get('parent') or 'root'
        desired['accounts'][name] = {'state': _state_of(spec, what), 'parent': check_name(parent, what + ' parent').lower(),
                                     'entity': entity, 'assoc': assoc}
    for spec in _items(users, 'users'):
        name = check_name(spec['name'], 'user').lower()
        what = 'user %s' % name
        if name in desired['users']:
            raise ValueError('user %s is listed twice' % name)
        state = _state_of(spec, what)
        common = _settings(spec, ASSOC_FIELDS, what, ('name', 'state', 'accounts', 'default_account', 'admin_level'))
        assocs = {}
        for entry in spec.get('accounts') or []:
            entry = {'name': entry} if isinstance(entry, str) else entry
            if not isinstance(entry, dict) or 'name' not in entry:
                raise ValueError('%s: each of its accounts must be a name or a dictionary with a name, got %r' % (what, entry))
            account = check_name(entry['name'], what + ' account').lower()
            settings = dict(common)
            settings.update(_settings(entry, ASSOC_FIELDS, '%s account %s' % (what, account), ('name',)))
            assocs[account] = settings
        if state == 'present' and not assocs:
            raise ValueError('%s has no accounts: list at least one in its accounts (a user exists only through an association)' % what)
        default = str(spec.get('default_account') or '').lower()
        if state == 'present':
            default = default or _first_name(spec['accounts'])
            if default not in assocs:
                raise ValueError('%s: default_account %s is not one of its accounts (%s)' % (what, default, ', '.join(sorted(assocs))))
        admin = spec.get('admin_level')
        admin = normalize(USER_FIELDS[1], admin, what) if admin is not None else None
        desired['users'][name] = {'state': state, 'assocs': assocs, 'default_account': default, 'admin_level': admin}
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
        actions.append(Action(['add', 'cluster', cluster], 'add cluster %s' % cluster))

    for name in sorted(desired['qos']):
        spec = desired['qos'][name]
        if spec['state'] != 'present':
            continue
        have = current['qos'].get(name)
        if have is None:
            actions.append(Action(['add', 'qos', name] + _settings_args(QOS_FIELDS, spec['settings']), 'add QOS %s' % name))
            continue
        diff = _differences(QOS_FIELDS, spec['settings'], have)
        if diff:
            actions.append(Action(['modify', 'qos', 'where', 'name=' + name, 'set'] + [argument(f, w, h) for f, w, h in diff],
                                  'modify QOS %s: %s' % (name, _describe(diff))))

    present = dict((n, s) for n, s in desired['accounts'].items() if s['state'] == 'present')
    for name in _parents_first(present):
        spec = present[name]
        have = current['account_assocs'].get(name)
        if have is None:
            args = ['add', 'account', name, 'Cluster=' + cluster, 'Parent=' + spec['parent']]
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

    with_assocs = _users_with_assocs(current)
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
                args = ['add', 'user', name, 'Account=' + account, 'Cluster=' + cluster]
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
    for name, spec in sorted(desired['qos'].items()):
        if spec['state'] == 'present':
            for ref in sorted(set(spec['settings'].get('Preempt') or ()) - qos):
                result.append('QOS %s preempts QOS %s, which is neither in the inventory nor in slurmdbd' % (name, ref))
    return result


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
