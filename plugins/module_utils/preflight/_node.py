# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node preflight: what every node says, judged before the first change on any node.

The module ``gpucluster.bringup.node_preflight`` reads one node (its OS release, the Slurm packages installed and
the versions the package source would give, its GPUs through NVML, the processes holding them) and judges nothing;
``playbooks/node_preflight.yml`` hands every node's reading, with what the inventory asks of the node, to
:func:`node_problems` once.  The rules:

* the Slurm release each host has or would get (the installed package, else the candidate of the package source)
  is 22.05 or newer (``_slurm_version.OLDEST``, the collection's version policy); an older one (Ubuntu 22.04's 21.08)
  is refused naming why and the ways to a supported release for that host's OS (SchedMD's slurm-smd packages built
  from the release tarball; the distribution releases whose own Slurm the collection runs, ``_distributions``);
* SchedMD's version rules (``_slurm_version.skew_problem``): slurmdbd >= slurmctld >= slurmd and the client
  commands, each at most ``_slurm_version.upgrade_window`` releases older than the daemon it talks to;
* SchedMD's support window (``_slurm_version.support_warnings``, on the day given as ``today``): a release past it,
  or older than its security release, is a warning naming the month, not a refusal;
* a compute node that mounts cgroup v1 (:func:`cgroup_version` of its mount table) and would run Slurm 25.05 or later
  (``_slurm_version.CGROUP_V1_DEPRECATED_FROM``: SchedMD deprecated the cgroup/v1 plugin) is a warning, not a refusal;
* Slurm hosts of several OS releases that would get several Slurm releases (one line naming each OS release);
* the MIG layout against the node's real GPUs with the mig role's own planner (``_mig_plan``): profile names,
  counts that fit, GPU indices, MIG asked of a GPU without MIG, every GPU covered with ``mig_require_all_gpus``;
  a node whose NVIDIA driver cannot be loaded is refused when it has a layout;
* before a MIG mode change, the processes holding the GPUs that the mig role would refuse
  (``_gpu_baseline.reset_blocker_failures``, as the role's reset-blockers check).

:func:`node_problems` returns ``(lines, warnings)``: one line per problem, the same problem of several hosts one
line naming them as a hostlist (warnings too).  :func:`package_file` reads a package file's name and version from its file name.
Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils import _distributions as distributions
from ansible_collections.gpucluster.bringup.plugins.module_utils._gpu_baseline import reset_blocker_failures
from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress, natural_key
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _node_type as node_type
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _mig_layouts as mig_layouts
from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _site as site
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_plan as mig_plan
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv

# The oldest Slurm release the collection runs (the version policy: _slurm_version.OLDEST).
OLDEST = sv.OLDEST
ROLES = ('controller', 'compute', 'slurmdbd', 'login')
# The daemon each role runs; the client commands come with every role. A login node runs sackd only with
# slurm_configless (its package is then among the node's packages; without it there is no sackd to judge).
DAEMONS = (('controller', 'slurmctld'), ('compute', 'slurmd'), ('slurmdbd', 'slurmdbd'), ('login', 'sackd'))
# Packages of the client commands: Debian's slurm-client, the RHEL family's slurm, SchedMD's Debian build
CLIENT_PACKAGES = ('slurm-client', 'slurm', 'slurm-smd-client')
SOURCES = ('distro', 'local')
NO_DRIVER = 'no NVIDIA driver: libnvidia-ml.so.1 cannot be loaded'

# name_version_arch.deb (Debian policy), name-version-release.arch.rpm
_DEB_FILE = re.compile(r'^(?P<name>[a-z0-9][a-z0-9.+-]*)_(?P<version>[0-9][A-Za-z0-9.+~:-]*)_(?P<arch>[a-z0-9-]+)\.deb$')
_RPM_FILE = re.compile(r'^(?P<name>[A-Za-z0-9_.+-]+?)-(?P<version>[0-9][A-Za-z0-9._+~]*-[A-Za-z0-9._+~]+)\.(?P<arch>[A-Za-z0-9_]+)\.rpm$')
_GPUS_ENTRY = re.compile(r'\bgpus\[(\d+)\]')
# "GPU 0 (GPU-9b3c..., NVIDIA H100 80GB HBM3)": the UUID left out, so the same problem of several nodes is one line
_GPU_UUID = re.compile(r'\((?:GPU|MIG)-[0-9A-Fa-f-]+, ')


def host_text(hosts):
    """Hosts as one Slurm hostlist (``gpu-[01-04]``), or comma-separated where they make none."""
    hosts = sorted(set(hosts), key=natural_key)
    try:
        return compress(hosts)
    except ValueError:
        return ', '.join(hosts)


def package_file(file_name):
    """``{'file', 'name', 'version'}`` of a package file named as Debian or RPM name them, or None."""
    base = str(file_name).rsplit('/', 1)[-1]
    for pattern in (_DEB_FILE, _RPM_FILE):
        match = pattern.match(base)
        if match:
            return {'file': base, 'name': match.group('name'), 'version': match.group('version')}
    return None


def _release(text):
    """``(major, minor, micro)`` of a package version, or None when it names no Slurm release."""
    try:
        return sv.parse_version(text)
    except ValueError:
        return None


def _serves(package, daemon):
    return package == daemon or package.endswith('-' + daemon)


def _version_of(reading, want, daemon):
    """``(version tuple, package, version text, where)`` this host has or would get for ``daemon``, or a problem text."""
    packages = reading.get('packages') or {}
    names = [name for name in want.get('packages') or [] if
             (_serves(name, daemon) if daemon != 'client' else name in CLIENT_PACKAGES)]
    if not names:
        return None
    name = names[0]
    found = packages.get(name) or {}
    # the slurm role installs every local package file (apt deb:, dnf), over an installed package too; so does the
    # slurmdbd role with the slurm role's slurm_install_source local (slurmdbd from the same package files)
    if want.get('source') == 'local':
        files = reading.get('local_files') or []
        matching = [f for f in files if _serves(str(f.get('name') or ''), daemon)
                    or (daemon == 'client' and f.get('name') in CLIENT_PACKAGES)]
        if not matching:
            matching = [f for f in files if str(f.get('name') or '').startswith('slurm')]
        versions = sorted(set(f['version'] for f in matching if _release(f.get('version') or '')), key=_release)
        if versions:
            return _release(versions[-1]), name, versions[-1], 'a local package file'
        if not found.get('installed'):
            return ('package %s is not installed and slurm_install_source is local, but the local package files (%s) hold no Slurm '
                    'package; expected SchedMD\'s packages of one Slurm release in slurm_local_package_dir (or slurm_local_packages)'
                    % (name, ', '.join(sorted(str(f.get('file', '?')) for f in files)) or 'none'))
    if found.get('installed'):
        version = _release(found['installed'])
        if version is None:
            return 'package %s is installed as version %r, which names no Slurm release' % (name, found['installed'])
        return version, name, found['installed'], 'installed'
    candidate = found.get('candidate')
    if not candidate:
        return ('package %s is not installed and the distribution offers no candidate for it (%s); expected a Slurm package '
                'the package manager can install: enable the repository that has it, or slurm_install_source: local'
                % (name, reading.get('package_error') or 'Candidate: (none)'))
    version = _release(candidate)
    if version is None:
        return 'package %s would be installed as version %r, which names no Slurm release' % (name, candidate)
    return version, name, candidate, "the distribution's candidate"


def _os_text(reading):
    osr = reading.get('os') or {}
    text = ' '.join(str(osr.get(k)) for k in ('id', 'version_id') if osr.get(k)) or 'unknown OS'
    if osr.get('codename'):
        text += ' (%s)' % osr['codename']
    return text


# --------------------------------------------------------------------------------------------- Slurm versions

def how_to_get(reading, today=None):
    """The ways to a Slurm release the collection runs, for the OS of ``reading`` (one text)."""
    osr = reading.get('os') or {}
    row = distributions.find(osr.get('id'), osr.get('version_id'))
    day = sv.as_date(today)
    current = ', '.join(sv.release_name(r) for r in sv.supported_releases(day))
    head = ''
    if row['slurm'] and sv.too_old(sv.parse_version(row['slurm'])):
        head = '%s has no newer Slurm than %s in its %s component; ' % (row['name'], row['slurm'], row['slurm_component'])
    others = []
    for other in distributions.DISTRIBUTIONS:
        version = sv.parse_version(other['slurm'])
        if other is row or sv.too_old(version):
            continue
        ends = sv.support(version)['ends']
        others.append('%s (Slurm %s%s)' % (other['name'], other['slurm'],
                                           ', past SchedMD\'s support since %s' % sv.month_name(ends) if (day.year, day.month) >= ends else ''))
    return ('%sinstall a supported one: %s (the way to a release SchedMD supports on %s: %s); or move the Slurm hosts to a '
            'distribution release whose own Slurm the collection runs: %s' % (head, sv.SMD_BUILD, day.isoformat(), current, ', '.join(others)))


def cgroup_version(mounts):
    """``'v2'``, ``'v1'`` or None (not known) from a mount table (``/proc/self/mounts``), as Slurm's autodetect tells them.

    ``/sys/fs/cgroup`` a ``cgroup2`` mount: the unified hierarchy (v2).  A ``tmpfs`` there holding ``cgroup`` (v1)
    hierarchies, with or without a ``cgroup2`` one beside them (systemd's hybrid mode), is v1: Slurm's cgroup/v1 plugin
    runs there, and SchedMD supports no hybrid (cgroups.html).
    """
    if not isinstance(mounts, str):
        return None
    root, legacy = None, False
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        where, kind = fields[1], fields[2]
        if where == '/sys/fs/cgroup':
            root = kind
        elif where.startswith('/sys/fs/cgroup/') and kind == 'cgroup':
            legacy = True
    if root == 'cgroup2':
        return 'v2'
    if legacy or root == 'cgroup':
        return 'v1'
    return None


def _slurm_problems(readings, wants, add, lines, warn, today):
    got = {}  # host -> daemon -> (version, package, text, where)
    for host in sorted(readings, key=natural_key):
        want, reading = wants.get(host) or {}, readings[host]
        roles = [r for r in want.get('roles') or [] if r in ROLES]
        if not roles:
            continue
        daemons = [d for r, d in DAEMONS if r in roles] + ['client']
        old = {}  # (version, text, where) -> packages: one line per host and version
        for daemon in daemons:
            found = _version_of(reading, want, daemon)
            if found is None:
                continue
            if isinstance(found, str):
                add(host, found)
                continue
            version, name, text, where = found
            if sv.too_old(version):
                old.setdefault((version, text, where), []).append(name)
                continue
            got.setdefault(host, {})[daemon] = found
        for (version, text, where), names in sorted(old.items()):
            add(host, 'Slurm %s (package%s %s %s, %s) is older than %s, the oldest release the collection supports '
                '(slurm_install_source %s): %s; %s'
                % (sv.version_name(version), 's' if len(names) > 1 else '', ', '.join(names), text, where, sv.release_name(OLDEST),
                   want.get('source', 'distro'), sv.TOO_OLD_WHY, how_to_get(reading, today)))
    for host in sorted(got, key=natural_key):
        for version in sorted(set(found[0] for found in got[host].values())):
            for text in sv.support_warnings(version, today):
                warn(host, text)
        slurmd = got[host].get('slurmd')
        if slurmd and readings[host].get('cgroup') == 'v1' and sv.behaviour(slurmd[0])['cgroup_v1_deprecated']:
            warn(host, 'the node mounts cgroup v1 and would run slurmd %s: SchedMD deprecated the cgroup/v1 plugin (no new '
                 'features since 25.05, to be removed in a later release; cgroup.conf(5)); plan the move to cgroup v2 '
                 '(systemd.unified_cgroup_hierarchy=1 on the kernel command line, or a distribution that boots cgroup v2)'
                 % sv.version_name(slurmd[0]))
    ctl = [(h, d['slurmctld']) for h, d in got.items() if 'slurmctld' in d]
    dbd = [(h, d['slurmdbd']) for h, d in got.items() if 'slurmdbd' in d]
    if ctl:
        ctl_host, (ctl_version, _n, _t, _w) = sorted(ctl, key=lambda item: natural_key(item[0]))[0]
        for host, (version, name, text, where) in dbd:
            problem = sv.skew_problem('slurmdbd', version, ctl_version)
            if problem:
                add(host, 'slurmdbd would be Slurm %s (package %s %s, %s) but slurmctld on %s %s: %s'
                    % (sv.version_name(version), name, text, where, ctl_host, sv.version_name(ctl_version), problem))
        for host in sorted(got, key=natural_key):
            for daemon in ('slurmd', 'sackd', 'client'):
                if daemon not in got[host]:
                    continue
                version, name, text, where = got[host][daemon]
                problem = sv.skew_problem(daemon, version, ctl_version)
                if problem:
                    add(host, '%s would be Slurm %s (package %s %s, %s) but slurmctld on %s %s: %s'
                        % (daemon if daemon != 'client' else 'the client commands', sv.version_name(version), name, text, where,
                           ctl_host, sv.version_name(ctl_version), problem))
    # several OS releases that give several Slurm releases
    by_os = {}
    releases = set()
    for host in got:
        for version, _n, _t, _w in got[host].values():
            releases.add(tuple(version[:2]))
    for host in readings:
        roles = [r for r in (wants.get(host) or {}).get('roles') or [] if r in ROLES]
        if roles and host in got:
            key = _os_text(readings[host])
            versions = sorted(set(sv.version_name(v[0]) for v in got[host].values()), key=natural_key)
            by_os.setdefault(key, {}).setdefault(', '.join(versions), []).append(host)
    if len(by_os) > 1 and len(releases) > 1:
        parts = []
        for osr in sorted(by_os):
            gets = ['%s would get Slurm %s' % (host_text(hosts), versions) for versions, hosts in sorted(by_os[osr].items())]
            parts.append('%s: %s' % (osr, '; '.join(gets)))
        lines.append('the Slurm hosts run %d OS releases that give %d Slurm releases: %s; expected one Slurm release on every '
                     'host: the same OS release everywhere, or one build of SchedMD\'s packages (slurm_install_source: local)'
                     % (len(by_os), len(releases), ' | '.join(parts)))


# --------------------------------------------------------------------------------------------- MIG

def _entry_path(want):
    return '%s[%r]' % (want.get('mig_layout_var') or mig_layouts.SHIPPED, want.get('mig_layout'))


def _mig_catalogue_problems(host, smi_gpus, want, add, warnings):
    """A fresh node (the driver, no NVML bindings yet): the layout against the catalogue's profiles of the GPUs
    nvidia-smi lists there (model and count), with the controller preflight's own check of a declared model."""
    names = sorted(set(gpu['name'] for gpu in smi_gpus))
    label = 'mig_layout %r' % want.get('mig_layout')
    if len(names) != 1:
        warnings.append('%s: %s not checked against the node\'s GPUs: several models (%s); the mig role checks it after the '
                        'nvml stage' % (host, label, ', '.join(names)))
        return
    # (a shipped layout's entries are the table's: _site reads them there)
    custom = {want.get('mig_layout'): want.get('mig_gpus')} if want.get('mig_layout_var') == mig_layouts.CUSTOM else {}
    values = {'mig_layout': want.get('mig_layout'), mig_layouts.CUSTOM: custom,
              'mig_require_all_gpus': want.get('mig_require_all_gpus', True),
              node_type.VARIABLE: {'gpu_model': names[0], 'gpu_count': len(smi_gpus)}}
    if site.resolve_model(names[0])['kind'] not in ('mig', 'no-mig'):
        warnings.append('%s: %s not checked against the node\'s GPUs: no MIG profile table for %s here; the mig role checks it '
                        'after the nvml stage' % (host, label, names[0]))
        return
    problems, _devices = site.mig_layout_problems(host, values, [])
    seen = 'nvidia-smi on the node (%d x %s)' % (len(smi_gpus), names[0])
    # the first problem, as the planner names it on a node with NVML (the others follow from it)
    for _host, _role, message in problems[:1]:
        text = message.replace("as %s %r declares" % (site.MODEL_VAR, names[0]), 'as %s lists them' % seen)
        add(host, text.replace(site.MODEL_VAR + ' says', seen + ' says').replace(site.COUNT_VAR + ' says', seen + ' says')
            .replace('(%s %d)' % (site.COUNT_VAR, len(smi_gpus)), '(%s)' % seen).replace(' (or fix %s)' % site.COUNT_VAR, ''))


def _mig_problems(host, reading, want, add, warnings):
    layout = want.get('mig_layout')
    entries = want.get('mig_gpus')
    if not layout or not isinstance(entries, list) or not entries:
        return  # no layout, or one not in the catalogue: the controller preflight names it
    nvml = reading.get('nvml') or {}
    label = 'mig_layout %r' % layout
    if not nvml.get('available'):
        if nvml.get('reason') == 'library':
            add(host, '%s (%s); %s needs the driver: install the NVIDIA driver (nvidia-smi must work), or remove mig_layout '
                'from this node' % (NO_DRIVER, nvml.get('error') or 'NVML does not answer', label))
        elif (reading.get('nvidia_smi') or {}).get('gpus'):
            _mig_catalogue_problems(host, reading['nvidia_smi']['gpus'], want, add, warnings)
        else:
            warnings.append('%s: %s not checked against the node\'s GPUs: %s; the mig role checks it after the nvml stage'
                            % (host, label, nvml.get('error') or 'NVML cannot be read'))
        return
    gpus = copy.deepcopy(nvml.get('gpus') or [])
    path = _entry_path(want)

    def where(text):
        return _GPU_UUID.sub('(', _GPUS_ENTRY.sub(lambda m: '%s[%s]' % (path, m.group(1)), text))
    try:
        mig_plan.check_request(entries)
        selected = mig_plan.select_gpus(gpus, entries)
        plans = mig_plan.plan_node(gpus, entries, force=True)
    except mig_plan.MigPlanError as exc:
        add(host, '%s on the node\'s GPUs (%s): %s' % (label, _gpu_text(gpus), where(str(exc))))
        return
    if want.get('mig_require_all_gpus', True) is not False:
        chosen = set(gpu['index'] for gpu, _e, _n in selected)
        left = [gpu for gpu in gpus if gpu['index'] not in chosen]
        if left:
            add(host, '%s selects none of the node\'s GPUs %s; expected an entry for each GPU ({gpu: "%d", mig: false} leaves one '
                'whole) or mig_require_all_gpus: false' % (label, ', '.join('%d (%s)' % (g['index'], g['name']) for g in left),
                                                           left[0]['index']))
    if any(plan['set_mode'] is not None for plan in plans):
        failures = reset_blocker_failures(reading.get('holders') or [], reading.get('modules') or [], want.get('mig_reset_blockers') or [])
        for _check, gpu, detail in failures:
            add(host, '%s changes the MIG mode (a GPU reset)%s: %s' % (label, '' if gpu is None else ' of GPU %d' % gpu, detail))


def _gpu_text(gpus):
    if not gpus:
        return 'none'
    names = {}
    for gpu in gpus:
        names.setdefault(gpu.get('name'), []).append(gpu['index'])
    return ', '.join('%d x %s' % (len(indices), name) for name, indices in sorted(names.items(), key=lambda kv: kv[1][0]))


# --------------------------------------------------------------------------------------------- all of it

def node_problems(readings, wants, missing=(), today=None):
    """The problems of every node: ``(lines, warnings)``.

    ``readings``: host -> the module's ``reading``; ``wants``: host -> what the inventory asks of it:
    ``roles`` (controller, compute, slurmdbd, login), ``packages`` (the Slurm packages its roles install), ``source``
    (distro or local), ``mig_layout``, ``mig_layout_var``, ``mig_gpus`` (the layout's entries), ``mig_require_all_gpus``,
    ``mig_reset_blockers``; ``missing``: ``host: why`` of hosts that gave no reading (unreachable); ``today``: the day
    SchedMD's support window is judged on (None: the calendar's).
    """
    grouped, order = {}, []
    noted, noted_order = {}, []
    lines = []

    def add(host, message, into=(grouped, order)):
        if message not in into[0]:
            into[0][message] = []
            into[1].append(message)
        if host not in into[0][message]:
            into[0][message].append(host)

    def warn(host, message):
        add(host, message, (noted, noted_order))
    warnings = []
    for why in missing:
        lines.append('%s; nothing was read from it (bring it back, or leave it out with --limit)' % why)
    _slurm_problems(readings, wants, add, lines, warn, today)
    for host in sorted(readings, key=natural_key):
        _mig_problems(host, readings[host], wants.get(host) or {}, add, warnings)
    warnings = ['%s: %s' % (host_text(noted[message]), message) for message in noted_order] + warnings
    return ['%s: %s' % (host_text(grouped[message]), message) for message in order] + lines, warnings


def failure_message(lines):
    """The whole failure: a count, then one line per problem."""
    return ('the node preflight found %d problem%s, nothing was changed:\n%s'
            % (len(lines), '' if len(lines) == 1 else 's', '\n'.join(lines)))
