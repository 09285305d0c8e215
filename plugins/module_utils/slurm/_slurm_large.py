# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm's large-system settings, by cluster size and installed Slurm release.

SchedMD's "Large Cluster Administration Guide" (doc/html/big_sys.shtml of
SchedMD/slurm, https://slurm.schedmd.com/big_sys.html, last modified 9 June
2021) is written "for clusters containing 1,024 nodes or more".  This module
turns what it says into values, each with the sentence it rests on:

* :func:`large_system_settings` - for ``node_count`` compute nodes and the
  installed Slurm release: slurm.conf keys (a contribution below the admin's
  ``slurm_conf_overrides``), kernel settings for the controller
  (``/etc/sysctl.d``) and systemd drop-in settings for slurmctld and slurmd.
  Nothing below the threshold (mode ``auto``), so a small cluster's files
  stay as they were.
* :func:`override_warnings` - the keys of ``slurm_conf_overrides`` that go
  against the guide on such a cluster (``SlurmdTimeout`` under 120 seconds,
  a ``TreeWidth`` narrower than the guide's rule): warnings, never failures.
* :func:`sysctl_conf_lines`, :func:`dropin_lines` and :func:`large_system_files`
  - the files themselves, from what the host has now (``sysctl`` and
  ``systemctl show`` output): a value is written only to raise one, never
  to lower what the host already has higher.

One tier: everything starts at the threshold (default 1,024 compute nodes,
the guide's own scope; ``slurm_large_system_min_nodes`` moves it).  The
TreeWidth rule has a second condition of its own: it is set only where its
value is larger than the installed release's default (see
:data:`TREE_WIDTH_DEFAULTS`).

Considered and not set (no source gives a value for large clusters, or the
key is another role's): :data:`NOT_SET`.

Standard library only; bad input raises one ``ValueError`` naming the value
and what is valid.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_version import parse_version, release_name

MODES = ('auto', 'always', 'never')
# The guide's scope: "This document contains Slurm administrator information specifically for clusters containing
# 1,024 nodes or more."
MIN_NODES = 1024

GUIDE = 'https://slurm.schedmd.com/big_sys.html'
MAN_2411 = 'slurm.conf(5) of Slurm 24.11.5 (Debian 13)'
MAN_2205 = 'slurm.conf(5) of Slurm 22.05.8 (Debian 12)'

# Where the role keeps its files (the slurm role passes its own, vars/main.yml _slurm_large_paths).
PATHS = {
    'sysctl': '/etc/sysctl.d/95-gpucluster-slurm-large.conf',
    'slurmctld': '/etc/systemd/system/slurmctld.service.d/gpucluster-slurm-large.conf',
    'slurmd': '/etc/systemd/system/slurmd.service.d/gpucluster-slurm-large.conf',
}
DAEMONS = ('slurmctld', 'slurmd')

# --- TreeWidth -------------------------------------------------------------------------------------------------------
#
# The guide: "Optimal system performance can typically be achieved if TreeWidth is set to the square root of the
# number of nodes in the cluster for systems having no more than 2500 nodes or the cube root for larger systems."
# It also says "The default value is 50" - true when it was written, not any more:
#   - Slurm 22.05 and before: 50. slurm.conf(5) of 22.05.8: "On other architectures the default value is 50, meaning
#     each slurmd daemon can communicate with up to 50 other slurmd daemons and over 2500 nodes can be contacted with
#     two message hops."
#   - Slurm 24.11 and later: 16. slurm.conf(5) of 24.11.5: "On other architectures the default value is 16, meaning
#     each slurmd daemon can communicate with up to 16 other slurmd daemons. This value balances offloading slurmctld
#     (max 16 threads running), time of communication, and node fault tolerance (4368 nodes can be contacted with
#     three message hops). The default value will work well for most clusters however on bigger systems this value can
#     be increased to avoid long timeouts and retransmissions in case of unresponsive nodes."  Measured: `scontrol show
#     config` of Debian 13's slurmctld 24.11.5 prints "TreeWidth = 16".
#   - 23.02 to 24.05: the change lies between 22.05 and 24.11 and is not verified here for these releases, so their
#     default counts as unknown (None).
# Decision: the role sets TreeWidth only where the rule's width is LARGER than the installed release's default - a
# wider fanout, fewer hops, which is what 24.11's page allows "on bigger systems" - and never narrows the default
# (on 22.05 the rule, at most 50 up to 2,500 nodes and the cube root above, never beats 50 below 125,001 nodes). Where
# the default is unknown (those releases, or no version read yet: check mode before Slurm is installed) it must beat
# both defaults Slurm has had (50).
TREE_WIDTH_DEFAULTS = (((22, 5), 50), ((24, 11), 16))
TREE_WIDTH_MAX = 65533  # slurm.conf(5): "The value may not exceed 65533."

# --- what the role does not set, and why ----------------------------------------------------------------------------
NOT_SET = (
    ('EioTimeout', 'the guide: "Larger systems and/or slower networks may need a higher value" (default 60 s) - no value '
                   'given, so Slurm\'s default stays'),
    ('EpilogMsgTime', 'slurm.conf(5): the default 2000 microseconds already spreads the epilog-complete messages "For a 1000 '
                      'node job ... over two seconds"; no source gives a larger value'),
    ('MessageTimeout', 'slurm.conf(5) ties a higher value to shared nodes where slurmd "could be paged out", the high '
                       'throughput guide to load ("might need to be increased somewhat"), neither to node count, and '
                       'neither gives a value'),
    ('MinJobAge', 'a high-throughput setting (many short jobs), not a size one: the guide "If a high throughput of jobs is '
                  'anticipated ... configure MinJobAge to the smallest interval practical"; the role keeps 300'),
    ('JobAcctGatherFrequency', 'the guide suggests 300 on large clusters that gather accounting; the key is the slurmdbd '
                               'role\'s (slurmdbd_accounting.JobAcctGatherFrequency)'),
    ('SelectType', 'the guide prefers select/linear for scale; GPU GRES need select/cons_tres, which the role keeps'),
    ('txqueuelen', 'the guide: 4096 "has been found to work well for one site"; per network interface, left to the site'),
)


def _checked_count(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError('%s must be a whole number of compute nodes, 0 or more; got %r' % (what, value))
    return value


def _checked_arguments(node_count, mode, threshold):
    _checked_count(node_count, 'node_count (the hosts of the compute group)')
    if mode not in MODES:
        raise ValueError('slurm_large_system must be one of %s; got %r' % (', '.join(MODES), mode))
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ValueError('slurm_large_system_min_nodes must be a whole number of compute nodes, 1 or more; got %r' % (threshold,))


def _release(slurm_version):
    """``(major, minor)`` of a version tuple or text; ``None`` for ``None`` or ``''`` (not read yet)."""
    if slurm_version is None or slurm_version == '':
        return None
    if isinstance(slurm_version, str):
        return tuple(parse_version(slurm_version)[:2])
    if isinstance(slurm_version, (tuple, list)) and len(slurm_version) >= 2 and \
            all(isinstance(part, int) and not isinstance(part, bool) for part in slurm_version):
        return tuple(slurm_version[:2])
    raise ValueError("the Slurm version must be a text such as '24.11.5', a tuple such as (24, 11, 5), or empty when not "
                     'known; got %r' % (slurm_version,))


def tree_width_default(slurm_version):
    """Slurm's own TreeWidth for that release, or ``None`` where it is not known here (see :data:`TREE_WIDTH_DEFAULTS`)."""
    release = _release(slurm_version)
    if release is None:
        return None
    (old, old_width), (new, new_width) = TREE_WIDTH_DEFAULTS
    if release <= old:
        return old_width
    if release >= new:
        return new_width
    return None


def _ceil_root(value, power):
    """The smallest whole ``r`` with ``r ** power >= value`` (exact, no floating point)."""
    root = 0
    while root ** power < value:
        root += 1
    return root


def tree_width_rule(node_count):
    """The guide's TreeWidth: the square root of the node count up to 2,500 nodes, the cube root above, rounded up.

    Rounded up so that the width reaches every node in two message hops (square root: w + w*w >= N) or three (cube
    root), as slurm.conf(5) counts hops.
    """
    _checked_count(node_count, 'node_count')
    if node_count <= 2500:
        # (exact integer arithmetic: at most 50 steps on this side)
        width = _ceil_root(node_count, 2)
    else:
        width = _ceil_root(node_count, 3)
    return min(width, TREE_WIDTH_MAX)


def message_hops(width, node_count):
    """How many message hops a fanout of ``width`` needs to reach ``node_count`` nodes (slurm.conf(5): w + w^2 + ...)."""
    if width < 1:  # (no node to reach, node_count 0 or less: the loop below gives 0 hops)
        return 0
    hops, reach, level = 0, 0, 1
    while reach < node_count:
        hops += 1
        level *= width
        reach += level
    return hops


def _tree_width(node_count, slurm_version):
    """``(width or None, from_nodes, why)``: TreeWidth to set, the smallest node count where it is set, the reasoning."""
    default = tree_width_default(slurm_version)
    bound = default if default is not None else max(width for _release, width in TREE_WIDTH_DEFAULTS)
    rule = tree_width_rule(node_count)
    # the smallest cluster whose rule beats the bound: on the square-root side (up to 2,500 nodes, widths up to 50)
    # while the bound is under 50, else on the cube-root side. (With 16: from 257 nodes up to 2,500, and again from
    # 4,097 on, since the cube root of 2,501 to 4,096 nodes is 14 to 16.)
    from_nodes = bound * bound + 1 if bound < 50 else bound ** 3 + 1
    if default is None:
        known = ('the default of Slurm %s is not verified here (50 up to 22.05, 16 from 24.11): set only where the rule '
                 'beats both' % (release_name(_release(slurm_version)) if _release(slurm_version) else '(not read yet)'))
    else:
        known = 'Slurm %s\'s default is %d' % (release_name(_release(slurm_version)), default)
    if rule > bound:
        return rule, from_nodes, ('the guide\'s rule gives %d for %d nodes (%d message hops, %d with a width of %d); %s'
                                  % (rule, node_count, message_hops(rule, node_count), message_hops(bound, node_count), bound, known))
    return None, from_nodes, ('the guide\'s rule gives %d for %d nodes, not above %d; %s: Slurm\'s default stays'
                              % (rule, node_count, bound, known))


# --- the settings ----------------------------------------------------------------------------------------------------

def _somaxconn(node_count):
    # The guide: "to support a burst of 1024 requests, set somaxconn to 1024"; the burst: "When a job allocated a large
    # number of nodes completes, it can cause a very large number of messages to be sent by the slurmd daemons on these
    # nodes to the slurmctld daemon all at the same time" - one per node. At most 4096: Slurm listens with a backlog of
    # SLURM_DEFAULT_LISTEN_BACKLOG = 4096 (src/common/slurm_protocol_common.h) and listen(2): "If the backlog argument is
    # greater than the value in /proc/sys/net/core/somaxconn, then it is silently capped to that value" - a larger
    # somaxconn changes nothing for slurmctld (and Linux 5.4 and later already default to 4096).
    return min(max(node_count, 1024), 4096)


def _entry(kind, key, value, from_nodes, source, quote, why=''):
    return {'file': kind, 'key': key, 'value': value, 'from_nodes': from_nodes, 'source': source, 'quote': quote, 'why': why}


def _settings(node_count, slurm_version, threshold):
    """Every setting of the tier for this size and release, in the order the files list them."""
    entries = []
    width, width_from, width_why = _tree_width(node_count, slurm_version)
    if width is not None:
        entries.append(_entry(
            'slurm.conf', 'TreeWidth', width, max(threshold, width_from), GUIDE + ' (Other); ' + MAN_2411,
            'Optimal system performance can typically be achieved if TreeWidth is set to the square root of the number of '
            'nodes in the cluster for systems having no more than 2500 nodes or the cube root for larger systems.', width_why))
    somaxconn = _somaxconn(node_count)
    entries.extend([
        _entry('sysctl', 'fs.file-max', 32832, threshold, GUIDE + ' (System Configuration)',
               '/proc/sys/fs/file-max: The maximum number of concurrently open files. We recommend a limit of at least 32,832.',
               'the guide\'s "at least 32,832"'),
        _entry('sysctl', 'net.core.somaxconn', somaxconn, threshold, GUIDE + ' (System Configuration); listen(2)',
               'The value should be raised substantially to support bursts of request. For example, to support a burst of '
               '1024 requests, set somaxconn to 1024.',
               'a burst of one message per node (epilog completions of a job on every node), at least the guide\'s 1024, at '
               'most 4096: Slurm\'s own listen() backlog (SLURM_DEFAULT_LISTEN_BACKLOG), beyond which listen(2) caps it'),
        _entry('sysctl', 'net.ipv4.tcp_max_syn_backlog', somaxconn, threshold, GUIDE + ' (System Configuration); listen(2)',
               'If server suffers of overload, try to increase this number.',
               'as large as somaxconn, so that the burst the accept queue takes is not dropped before it; listen(2): "The '
               'maximum length of the queue for incomplete sockets can be set using /proc/sys/net/ipv4/tcp_max_syn_backlog" '
               '(where syncookies are off)'),
    ])
    tasks = ('Under the new systemd version, each init script or systemd service is limited to 512 threads/processes by '
             'default. This could cause issues for the slurmctld and slurmd daemons on large clusters or systems with a high '
             'job throughput rate. ... Add TasksMax=N to the [Service] section. N can be a specific number, or special value '
             'infinity.')
    ulimits = ('The ulimit values in effect for the slurmctld daemon should be set quite high for memory size, open file '
               'count and stack size.')
    limits = GUIDE + ' (User Limits)'
    entries.extend([
        _entry('slurmctld', 'TasksMax', 'infinity', threshold, GUIDE + ' (Thread/Process Limit)', tasks,
               'the guide\'s "special value infinity" instead of the 512 tasks some distributions allow a service'),
        _entry('slurmctld', 'LimitNOFILE', 65536, threshold, limits + '; SchedMD\'s slurmctld.service', ulimits,
               'open file count: the value of SchedMD\'s own slurmctld.service, as Debian 13\'s 24.11.5 package ships it'),
        _entry('slurmctld', 'LimitSTACK', 'infinity', threshold, limits + '; SchedMD\'s slurmd.service', ulimits,
               'stack size: unlimited, as SchedMD\'s slurmd.service has it'),
        _entry('slurmctld', 'LimitAS', 'infinity', threshold, limits, ulimits, 'memory size: the address space (ulimit -v)'),
        _entry('slurmctld', 'LimitDATA', 'infinity', threshold, limits, ulimits, 'memory size: the data segment (ulimit -d)'),
        _entry('slurmctld', 'LimitRSS', 'infinity', threshold, limits, ulimits,
               'memory size: bash\'s "max memory size" (ulimit -m, RLIMIT_RSS)'),
        _entry('slurmd', 'TasksMax', 'infinity', threshold, GUIDE + ' (Thread/Process Limit)', tasks,
               'the guide\'s "special value infinity" instead of the 512 tasks some distributions allow a service'),
        _entry('slurmd', 'LimitNOFILE', 8192, threshold, GUIDE + ' (Other)',
               'The srun command automatically increases its open file limit to the hard limit in order to process all of '
               'the standard input and output connections to the launched tasks. It is recommended that you set the open '
               'file hard limit to 8192 across the cluster.',
               'slurmd and the slurmstepd it starts, which relay the tasks\' standard input and output; login sessions on '
               'submit hosts are not the role\'s'),
    ])
    return entries


def _applies(node_count, mode, threshold):
    if mode == 'never':
        return False, 'slurm_large_system is never'
    if mode == 'always':
        return True, 'slurm_large_system is always (%d compute nodes)' % node_count
    if node_count >= threshold:
        return True, 'auto: %d compute nodes, at least slurm_large_system_min_nodes (%d)' % (node_count, threshold)
    return False, 'auto: %d compute nodes, fewer than slurm_large_system_min_nodes (%d)' % (node_count, threshold)


def large_system_settings(node_count, slurm_version=None, mode='auto', threshold=MIN_NODES):
    """What the guide asks of a cluster of ``node_count`` compute nodes running ``slurm_version``.

    ``slurm_version``: a text (``'24.11.5'``, ``'slurm-wlm 24.11.5'``), a tuple (``(24, 11, 5)``), or ``None``/``''``
    when not read yet. ``mode``: ``auto`` (from ``threshold`` compute nodes on), ``always`` or ``never``.

    Returns ``{'applies', 'reason', 'nodes', 'mode', 'threshold', 'slurm_conf', 'sysctl', 'systemd', 'settings'}``:
    ``slurm_conf`` the keys and values (a contribution to the slurm.conf merge), ``sysctl`` the kernel settings (key
    to value) for the controller, ``systemd`` ``{'slurmctld': {...}, 'slurmd': {...}}`` the drop-in settings,
    ``settings`` every one of them in order with ``file``, ``key``, ``value``, ``from_nodes`` (where it starts with
    mode auto and this threshold), ``source``, ``quote`` (the sentence it rests on) and ``why``; ``unit_properties``
    ``{daemon: [...]}`` what ``systemctl show -p`` must print for :func:`dropin_lines`. Where the tier does not
    apply, every part is empty.
    """
    _checked_arguments(node_count, mode, threshold)
    _release(slurm_version)
    applies, reason = _applies(node_count, mode, threshold)
    result = {'applies': applies, 'reason': reason, 'nodes': node_count, 'mode': mode, 'threshold': threshold,
              'slurm_conf': {}, 'sysctl': {}, 'systemd': {'slurmctld': {}, 'slurmd': {}}, 'settings': [],
              'unit_properties': {'slurmctld': [], 'slurmd': []}}
    if not applies:
        return result
    for entry in _settings(node_count, slurm_version, threshold):
        result['settings'].append(entry)
        if entry['file'] == 'slurm.conf':
            result['slurm_conf'][entry['key']] = entry['value']
        elif entry['file'] == 'sysctl':
            result['sysctl'][entry['key']] = entry['value']
        else:
            result['systemd'][entry['file']][entry['key']] = entry['value']
            # what systemctl show must print for dropin_lines: each limit's soft value too
            result['unit_properties'][entry['file']].extend([entry['key']] + ([entry['key'] + 'Soft'] if entry['key'].startswith('Limit') else []))
    return result


# --- warnings on the admin's overrides --------------------------------------------------------------------------------

# The guide (Timers): "For really large clusters, SlurmdTimeout values of 120 seconds or more are reasonable."
SLURMD_TIMEOUT_MIN = 120


def _whole(value):
    """A whole number from an override (``60``, ``'60'``), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)  # (int() reads past the blanks)
    return None


def override_warnings(node_count, slurm_version, overrides, mode='auto', threshold=MIN_NODES):
    """Warnings (plain lines) for keys of ``overrides`` (``slurm_conf_overrides``) that go against the guide.

    Only where the tier applies (:func:`large_system_settings`). ``SlurmdTimeout`` under 120 seconds; a
    ``TreeWidth`` narrower than the guide's rule (more message hops), or removed (null) where the installed
    release's default is narrower (release not known: where even the widest default, 50, is). A wider TreeWidth is
    not warned about: fewer hops, more slurmctld threads, which 24.11's slurm.conf(5) allows on bigger systems.
    Keys match in any case.
    """
    _checked_arguments(node_count, mode, threshold)
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict):
        raise ValueError('slurm_conf_overrides must be a dictionary of slurm.conf keys; got %r' % (overrides,))
    if not _applies(node_count, mode, threshold)[0]:
        return []
    warnings = []
    size = 'a cluster of %d compute nodes' % node_count
    for key, value in overrides.items():
        name = str(key).lower()
        if name == 'slurmdtimeout':
            seconds = _whole(value)
            if seconds is not None and seconds < SLURMD_TIMEOUT_MIN:
                warnings.append('slurm_conf_overrides sets %s=%s on %s: SchedMD\'s Large Cluster Administration Guide (%s) calls '
                                '"SlurmdTimeout values of 120 seconds or more" reasonable for really large clusters '
                                '(slurmctld pings each slurmd every half of it); the role\'s default is 300'
                                % (key, value, size, GUIDE))
        elif name == 'treewidth':
            rule = tree_width_rule(node_count)
            if value is None:
                # the release's default; not known (not read yet): the widest Slurm has had, so a warning is certain
                width = tree_width_default(slurm_version)
                if width is None:
                    width = max(default for _release, default in TREE_WIDTH_DEFAULTS)
                    what = 'removes %s, which leaves Slurm\'s default (at most %d)' % (key, width)
                else:
                    what = 'removes %s, which leaves Slurm\'s default of %d' % (key, width)
            else:
                width = _whole(value)
                what = 'sets %s=%s' % (key, value)
            if width is not None and width < rule:
                warnings.append('slurm_conf_overrides %s on %s: slurmctld\'s messages then need %d hops to reach every node, '
                                'where the width of SchedMD\'s Large Cluster Administration Guide (%s: the %s of the node '
                                'count), %d, needs %d; remove the override or set TreeWidth to at least %d'
                                % (what, size, message_hops(width, node_count), GUIDE,
                                   'square root' if node_count <= 2500 else 'cube root', rule, message_hops(rule, node_count),
                                   rule))
    return warnings


# --- the files on the nodes --------------------------------------------------------------------------------------------

INFINITY = float('inf')


def _number(text):
    """A kernel or systemd value as a number (``'infinity'`` is the largest), ``None`` when it is not one."""
    text = str(text).strip()
    if text == 'infinity':
        return INFINITY
    if text.isdigit():
        return int(text)
    return None


def parse_key_values(text):
    """``KEY = value`` lines as ``{key: value text}``: ``sysctl KEY...`` output (``fs.file-max = 9223372036854775807``)
    and ``systemctl show -p ...`` output (``LimitNOFILE=65536``) alike."""
    found = {}
    for line in (text or '').splitlines():
        if '=' in line:
            key, value = line.split('=', 1)
            found[key.strip()] = value.strip()
    return found


def _raised(wanted, soft, hard):
    """The value to write so that neither ``soft`` nor ``hard`` goes down, or ``None`` to leave the setting out.

    Left out where the host has it above ``wanted`` already (both numbers higher): the role never pins a value the
    host has higher. Written where it raises one of them, or where the host has exactly ``wanted`` (which is what a
    run before wrote: leaving it out now would change the file at every other run).
    """
    want = _number(wanted)
    if soft is None or hard is None:
        return None
    if soft > want and hard > want:
        return None
    new_soft, new_hard = max(soft, want), max(hard, want)
    if new_soft == new_hard:
        return _text(new_soft)
    return '%s:%s' % (_text(new_soft), _text(new_hard))


def _text(number):
    return 'infinity' if number == INFINITY else str(number)


def _comment(entry):
    """The comment lines above a setting: its source, and why this value where the source gives none."""
    lines = ['# %s: %s' % (entry['key'], entry['source'])]
    if entry['why']:
        lines.append('#   %s' % entry['why'])
    return lines


def _header(what):
    return ['# Managed by gpucluster.bringup.slurm (slurm_large_system): %s for a large cluster,' % what,
            '# from SchedMD\'s Large Cluster Administration Guide, %s.' % GUIDE,
            '# A value is written where the host has less or the same; what it has higher is left out.']


def sysctl_conf_lines(settings, current_text):
    """The lines of the controller's sysctl.d file for ``settings`` (:func:`large_system_settings`).

    ``current_text``: ``sysctl -e KEY...`` output on the host. A key the kernel does not have (absent from that
    output) is left out, as is one the host has higher already.
    """
    current = parse_key_values(current_text)
    lines = _header('kernel settings')
    for entry in [e for e in settings.get('settings', []) if e['file'] == 'sysctl']:
        key = entry['key']
        now = _number(current.get(key, ''))
        if key not in current:
            lines.append('# %s: not in this kernel, left out' % key)
            continue
        if now is None:
            lines.append('# %s: the host\'s value is not a number, left as it is' % key)
            continue
        value = _raised(entry['value'], now, now)
        if value is None:
            lines.append('# %s: the host has more than %s already, left as it is' % (key, entry['value']))
            continue
        lines.extend(_comment(entry))
        lines.append('%s = %s' % (key, value))
    return lines


def dropin_lines(settings, daemon, current_text):
    """The lines of ``daemon``'s systemd drop-in for ``settings``; ``current_text``: ``systemctl show -p ...`` output.

    For a limit, ``systemctl show`` gives the hard value (``LimitNOFILE``) and the soft one (``LimitNOFILESoft``);
    the drop-in raises what is under the guide's value (``LimitNOFILE=65536:524288`` keeps a higher hard limit).
    """
    if daemon not in DAEMONS:
        raise ValueError('daemon must be one of %s; got %r' % (', '.join(DAEMONS), daemon))
    current = parse_key_values(current_text)
    lines = _header('%s\'s limits' % daemon) + ['# Read when %s starts: a change restarts it.' % daemon, '[Service]']
    for entry in [e for e in settings.get('settings', []) if e['file'] == daemon]:
        key = entry['key']
        hard = _number(current.get(key, ''))
        soft = _number(current.get(key + 'Soft', current.get(key, ''))) if key.startswith('Limit') else hard
        value = _raised(entry['value'], soft, hard)
        if value is None:
            if hard is None or soft is None:
                lines.append('# %s: not read from systemctl show, left out' % key)
            else:
                lines.append('# %s: the unit allows more than %s already, left as it is' % (key, entry['value']))
            continue
        lines.extend(_comment(entry))
        lines.append('%s=%s' % (key, value))
    return lines


def large_system_files(settings, daemons, systemd=True, sysctl_text='', unit_texts=None, paths=None):
    """``gpucluster.bringup.install_files`` entries of one host: its large-cluster files, or their removal.

    ``daemons``: the Slurm daemons of the host (``slurmctld`` on the controller, ``slurmd`` on compute nodes); the
    controller gets the sysctl file. ``systemd``: the host's service manager is systemd (else no drop-in).
    ``sysctl_text`` and ``unit_texts`` (``{daemon: systemctl show output}``) are what the host has now. Where the
    tier does not apply, or the file is not this host's, the entry removes it (``state: absent``).
    """
    paths = dict(PATHS, **(paths or {}))
    unit_texts = unit_texts or {}
    unknown = [d for d in daemons or [] if d not in DAEMONS]
    if unknown:
        raise ValueError('daemons must be among %s; got %s' % (', '.join(DAEMONS), ', '.join(repr(d) for d in unknown)))
    applies = bool(settings.get('applies'))
    entries = []
    if applies and 'slurmctld' in daemons:
        entries.append({'dest': paths['sysctl'], 'content': '\n'.join(sysctl_conf_lines(settings, sysctl_text)) + '\n',
                        'mode': '0644'})
    else:
        entries.append({'dest': paths['sysctl'], 'state': 'absent'})
    for daemon in DAEMONS:
        if applies and systemd and daemon in daemons:
            entries.append({'dest': posixpath.dirname(paths[daemon]), 'state': 'directory', 'mode': '0755'})
            entries.append({'dest': paths[daemon], 'content': '\n'.join(dropin_lines(settings, daemon, unit_texts.get(daemon, ''))) + '\n',
                            'mode': '0644'})
        else:
            entries.append({'dest': paths[daemon], 'state': 'absent'})
    return entries
