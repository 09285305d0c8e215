# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU node health check: what is wrong, and what to do about the node.

The program ``gpucluster-healthcheck`` (role ``gpucluster.bringup.slurm_healthcheck``,
run by slurmd as ``HealthCheckProgram``) collects what NVML, the device files
and ``scontrol`` say and asks this module:

* :func:`load_config` validates the expectations the role wrote
  (``/etc/gpucluster/healthcheck.json``);
* :func:`find_failures` compares the observed GPUs with them: NVML answers,
  GPU count and models, errors (lost GPU, uncorrected ECC, pending page
  retirement or row remapping), MIG mode and layout (which NHC's GPU check
  does not understand), and the device files jobs need (``/dev/nvidiactl``,
  ``/dev/nvidia<minor>``, and each MIG instance's capability devices from
  the driver's mig-minors table);
* :func:`find_failures` also judges the munge key's permissions (``_munge_key``:
  mode 0400/0600 owned by the munge user, in a 0700 directory owned by it),
  which a credential round trip does not see;
* :func:`parse_scontrol_node` reads ``scontrol -o show node``;
* :func:`decide` says whether to drain, to leave the node alone, or (only
  when asked, and only for a drain this check made) to resume it.  A node
  drained by anybody else is never resumed and its reason never replaced.

Standard library only (the role copies this file, ``_mig_minors.py`` and
``_munge_key.py`` next to the program); bad input raises ``ValueError``
naming the bad value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import version_key
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_minors import cap_device, parse_mig_minors
from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_baseline as baseline_checks
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import SLURM_NAME_TEXT, is_slurm_name
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _drain_tag as drain_tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck_fleet as fleet
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._drain_tag import format_tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._healthcheck_fleet import THROTTLE_DRAIN, XID_DRAIN
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._munge_key import KEY_PATH as MUNGE_KEY_PATH
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._munge_key import USER as MUNGE_USER
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._munge_key import problems as munge_key_problems
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._nodes import is_drained, parse_node

CHECKS = ('nvml', 'gpu-count', 'gpu-model', 'gpu-error', 'xid', 'ecc', 'mig', 'device-files', 'driver', 'persistence',
          'fabric-manager', 'fabric', 'nvlink', 'pcie', 'thermal', 'ib', 'gpudirect', 'munge-key')
# What each tier checks: the prolog tier (every job start, a few seconds) the GPUs NVML sees, their models,
# lost GPUs / pending page retirement / failed row remapping, and fatal Xids since boot; the periodic tier
# (slurmd's HealthCheckProgram) everything.
TIERS = ('prolog', 'periodic')
TIER_CHECKS = {'prolog': ('nvml', 'gpu-count', 'gpu-model', 'gpu-error', 'xid'), 'periodic': CHECKS}
MAX_REASON = drain_tag.MAX_REASON
# Drain reasons of this check: "<prefix>:<tier>:<check>: <detail>".  A reason with the prefix of earlier
# releases ("healthcheck: <check>: ...") is ours too.
LEGACY_PREFIXES = drain_tag.LEGACY_PREFIXES

DEFAULTS = {
    'node_name': '',
    'gpu_count': None,
    'gpu_models': [],
    'mig_layout': None,
    'check_device_files': True,
    'dev_root': '/',
    'mig_minors_path': '/proc/driver/nvidia-caps/mig-minors',
    'ecc_uncorrected_max': 0,
    'reason_prefix': 'gpuhc',
    # resume a node drained by this check once it passed resume_after_passes periodic runs in a row
    'auto_resume': True,
    'resume_after_passes': 2,
    'scontrol': 'scontrol',
    'status_file': '/run/gpucluster-healthcheck.json',
    # consecutive passes (survives the runs), and one JSON line per drain/resume with its evidence
    'state_file': '/var/lib/gpucluster-healthcheck/state.json',
    'events_file': '/var/log/gpucluster-healthcheck.jsonl',
    # seconds each tier may take: the checks that do not fit are skipped (and said so), the node is not drained for it
    'prolog_budget': 3.0,
    'periodic_budget': 30.0,
    # checks (names of CHECKS) not run
    'disabled_checks': [],
    # where Xids are read: "journal" (journalctl -k -b 0), "dmesg", or a kernel log file (rsyslog's /var/log/kern.log:
    # the lines after its last boot)
    'xid_source': 'journal',
    'xid_drain': list(XID_DRAIN),
    # null: the GPU models' minimum (catalogue._gpus.driver_minimum)
    'driver_min': None,
    # GPU index -> NVLinks that must be active; null: not checked (the role records the node's)
    'nvlinks_active': None,
    'nvlink_error_max': {'recovery': 0},
    'throttle_reasons': list(THROTTLE_DRAIN),
    'temperature_margin': 0,
    'ib_sysfs_root': '/sys/class/infiniband',
    # InfiniBand ports the node must have and the rate each must run at; null: not checked
    'ib_ports': None,
    # InfiniBand devices the node must have (the role's: its node type's hcas, gpucluster_node_type); null: not checked
    'ib_hcas': None,
    'ib_rate_gbps': None,
    'ib_counter_max': {'link_downed': 10},
    # GPUDirect RDMA where InfiniBand is present (nvidia_peermem loaded, or DMA-BUF): the loaded modules and the
    # driver's version file (open or proprietary kernel modules)
    'module_root': '/sys/module',
    'driver_proc': '/proc/driver/nvidia/version',
    # how the fabric manager is asked (on NVSwitch systems)
    'systemctl': 'systemctl',
    'fabric_manager_bin': 'nv-fabricmanager',
    # the munge key must be private to the munge user; '' does not check it
    'munge_key_path': MUNGE_KEY_PATH,
    'munge_user': MUNGE_USER,
}

_PROFILE = re.compile(r'^\d+g\.\d+gb(\+[a-z]+)?$')
_PREFIX = re.compile(r'^[A-Za-z][A-Za-z0-9_-]*$')
_USER = re.compile(r'^[a-z_][a-z0-9_-]{0,31}$')
# A Slurm node name as this program puts it on scontrol's command line: scontrol reads options anywhere on its
# line (getopt without "+"), so a name with a leading "-" would be an option; "," "=" and spaces change the command.


def check_node_name(name, what='node_name'):
    """``name`` if it is a Slurm node name (``_validate_input.SLURM_NAME``), else ``ValueError`` naming ``what``."""
    if not is_slurm_name(name):
        raise ValueError('%s %r is not a Slurm node name: %s' % (what, name, SLURM_NAME_TEXT))
    return name


def show_node_argv(scontrol, node_name):
    """``scontrol -o show node NAME`` (the name checked)."""
    return [scontrol, '-o', 'show', 'node', check_node_name(node_name)]


class Failure(object):
    """One failed check: its name (one of :data:`CHECKS`), the GPU index or ``None``, and what was found."""

    def __init__(self, check, gpu, detail):
        self.check = check
        self.gpu = gpu
        self.detail = detail

    def text(self):
        return '%s: %s' % (self.check, self.detail)

    def as_dict(self):
        return {'check': self.check, 'gpu': self.gpu, 'detail': self.detail}

    def __repr__(self):
        return 'Failure(%r)' % self.text()


# ------------------------------------------------------------------ config

def _mig_layout(value):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError('mig_layout %r must be a mapping of GPU index to a list of MIG profiles, e.g. {"0": ["3g.40gb", "1g.10gb"]}'
                         % (value,))
    layout = {}
    for key, profiles in value.items():
        if not re.match(r'^\d+$', str(key)):
            raise ValueError('mig_layout key %r is not a GPU index (0, 1, ...)' % (key,))
        if not isinstance(profiles, list):
            raise ValueError('mig_layout["%s"] = %r must be a list of MIG profiles such as ["1g.10gb", "1g.10gb"]' % (key, profiles))
        for profile in profiles:
            if not isinstance(profile, str) or not _PROFILE.match(profile):
                raise ValueError('mig_layout["%s"] has %r, which is not a MIG profile name such as "1g.10gb" or "1g.10gb+me"'
                                 % (key, profile))
        layout[int(key)] = sorted(profiles)
    return layout


def load_config(data):
    """Expectations with defaults filled in; raises ``ValueError`` naming a bad key or value."""
    if not isinstance(data, dict):
        raise ValueError('the health check configuration must be a JSON object, got %r' % (data,))
    unknown = sorted(set(data) - set(DEFAULTS))
    if unknown:
        raise ValueError('unknown health check setting(s) %s; valid settings: %s' % (', '.join(unknown), ', '.join(sorted(DEFAULTS))))
    config = dict(DEFAULTS)
    config.update(data)
    count = config['gpu_count']
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise ValueError('gpu_count %r must be a whole number of GPUs (0 or more), or null not to check it' % (count,))
    models = config['gpu_models']
    if not isinstance(models, list) or not all(isinstance(m, str) and m.strip() for m in models):
        raise ValueError('gpu_models %r must be a list of model-name substrings such as ["H100", "A100-SXM4-40GB"]' % (models,))
    config['mig_layout'] = _mig_layout(config['mig_layout'])
    ecc = config['ecc_uncorrected_max']
    if ecc is not None and (isinstance(ecc, bool) or not isinstance(ecc, int) or ecc < 0):
        raise ValueError('ecc_uncorrected_max %r must be a whole number (0 or more), or null not to check ECC' % (ecc,))
    if not isinstance(config['reason_prefix'], str) or not _PREFIX.match(config['reason_prefix']):
        raise ValueError('reason_prefix %r must be a word such as "gpuhc" (letters, digits, "-", "_")' % (config['reason_prefix'],))
    for key in ('check_device_files', 'auto_resume'):
        if not isinstance(config[key], bool):
            raise ValueError('%s %r must be true or false' % (key, config[key]))
    for key in ('node_name', 'dev_root', 'mig_minors_path', 'scontrol', 'status_file', 'systemctl', 'fabric_manager_bin'):
        if not isinstance(config[key], str):
            raise ValueError('%s %r must be a string' % (key, config[key]))
    if config['node_name']:
        check_node_name(config['node_name'])
    for key in ('scontrol', 'systemctl', 'fabric_manager_bin'):
        # commands (argv[0]): a name looked up in PATH or a path, one word
        if not config[key] or config[key].startswith('-') or any(c.isspace() for c in config[key]):
            raise ValueError('%s %r must be a command name or path (no spaces, not starting with "-")' % (key, config[key]))
    key_path = config['munge_key_path']
    if key_path is None:
        config['munge_key_path'] = key_path = ''
    if not isinstance(key_path, str) or (key_path and (not key_path.startswith('/') or key_path.endswith('/'))):
        raise ValueError('munge_key_path %r must be the absolute path of the munge key such as "/etc/munge/munge.key", or "" not to check it'
                         % (key_path,))
    if not isinstance(config['munge_user'], str) or not _USER.match(config['munge_user']):
        raise ValueError('munge_user %r must be a user name such as "munge"' % (config['munge_user'],))
    _load_fleet_config(config)
    return config


def _whole(value, name, what, none_ok=True, minimum=0):
    if value is None and none_ok:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError('%s %r must be %s' % (name, value, what))


def _limits(config, key, valid):
    value = config[key]
    if not isinstance(value, dict):
        raise ValueError('%s %r must be a mapping of counter name to the most allowed, e.g. {"%s": 0}' % (key, value, valid[0]))
    for name, limit in value.items():
        if name not in valid:
            raise ValueError('%s has %r, which is not a counter; valid: %s' % (key, name, ', '.join(valid)))
        _whole(limit, '%s["%s"]' % (key, name), 'a whole number (0 or more), or null not to check it')


def _load_fleet_config(config):
    """Validates the tiers' and fleet checks' settings of ``config`` (in place)."""
    _whole(config['resume_after_passes'], 'resume_after_passes', 'a whole number of passing runs (1 or more)', False, 1)
    for key in ('prolog_budget', 'periodic_budget'):
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError('%s %r must be a number of seconds above 0' % (key, value))
    for key in ('state_file', 'events_file', 'ib_sysfs_root', 'module_root', 'driver_proc'):
        if not isinstance(config[key], str):
            raise ValueError('%s %r must be a string (a path; "" for none)' % (key, config[key]))
    disabled = config['disabled_checks']
    if not isinstance(disabled, list) or any(c not in CHECKS for c in disabled):
        raise ValueError('disabled_checks %r must be a list of check names; valid: %s' % (disabled, ', '.join(CHECKS)))
    source = config['xid_source']
    if not isinstance(source, str) or not (source in ('journal', 'dmesg') or source.startswith('/')):
        raise ValueError('xid_source %r must be "journal", "dmesg" or the absolute path of a kernel log such as /var/log/kern.log'
                         % (source,))
    codes = config['xid_drain']
    if not isinstance(codes, list) or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in codes):
        raise ValueError('xid_drain %r must be a list of Xid numbers such as [48, 79, 95]' % (codes,))
    if config['driver_min'] is not None:
        version_key(config['driver_min'])
    active = config['nvlinks_active']
    if active is not None:
        if not isinstance(active, dict):
            raise ValueError('nvlinks_active %r must be a mapping of GPU index to the number of active NVLinks, e.g. {"0": 18}' % (active,))
        parsed = {}
        for key, count in active.items():
            if not re.match(r'^\d+$', str(key)):
                raise ValueError('nvlinks_active key %r is not a GPU index (0, 1, ...)' % (key,))
            _whole(count, 'nvlinks_active["%s"]' % key, 'a whole number of links (0 or more)', False)
            parsed[int(key)] = count
        config['nvlinks_active'] = parsed
    _limits(config, 'nvlink_error_max', fleet.NVLINK_COUNTERS)
    _limits(config, 'ib_counter_max', fleet.IB_COUNTERS)
    names = [n for n, _bit in fleet.CLOCK_REASONS]
    reasons = config['throttle_reasons']
    if not isinstance(reasons, list) or any(r not in names for r in reasons):
        raise ValueError('throttle_reasons %r must be a list of clock event reasons; valid: %s' % (reasons, ', '.join(names)))
    _whole(config['temperature_margin'], 'temperature_margin', 'a whole number of degrees C (0 or more), or null not to check temperature')
    _whole(config['ib_ports'], 'ib_ports', 'a whole number of InfiniBand ports (0 or more), or null not to check them')
    hcas = config['ib_hcas']
    if hcas is not None and (not isinstance(hcas, list) or not all(isinstance(h, str) and h.strip() and '/' not in h for h in hcas)):
        raise ValueError('ib_hcas %r must be a list of InfiniBand device names such as ["mlx5_0", "mlx5_1"], or null not to check them'
                         % (hcas,))
    rate = config['ib_rate_gbps']
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0):
        raise ValueError('ib_rate_gbps %r must be the rate in Gb/sec each InfiniBand port must run at (e.g. 400), or null' % (rate,))


# ------------------------------------------------------------------ checks

def _label(gpu):
    bus = gpu.get('pci_bus_id')
    return 'GPU %d (%s)' % (gpu['index'], bus) if bus else 'GPU %d' % gpu['index']


def _gpu_errors(gpu, config):
    failures = []
    if gpu.get('error'):
        failures.append(Failure('gpu-error', gpu['index'], '%s: %s' % (_label(gpu), gpu['error'])))
        return failures
    if gpu.get('retired_pages_pending'):
        failures.append(Failure('gpu-error', gpu['index'], '%s has retired memory pages pending a GPU reset' % _label(gpu)))
    if gpu.get('remap_failure'):
        failures.append(Failure('gpu-error', gpu['index'], '%s has a failed memory row remapping' % _label(gpu)))
    elif gpu.get('remap_pending'):
        failures.append(Failure('gpu-error', gpu['index'], '%s has memory row remapping pending a GPU reset' % _label(gpu)))
    ecc = gpu.get('ecc_uncorrected')
    if config['ecc_uncorrected_max'] is not None and ecc is not None and ecc > config['ecc_uncorrected_max']:
        failures.append(Failure('ecc', gpu['index'], '%s has %d uncorrected ECC errors since the driver loaded (at most %d allowed)'
                                % (_label(gpu), ecc, config['ecc_uncorrected_max'])))
    return failures


def _mig_failures(gpu, config):
    layout = config['mig_layout']
    if layout is None or gpu.get('error'):
        return []
    wanted = layout.get(gpu['index'])
    current = gpu.get('mig_current')
    pending = gpu.get('mig_pending')
    if current is not None and pending is not None and current != pending:
        return [Failure('mig', gpu['index'], '%s has MIG mode %s pending until a GPU reset'
                        % (_label(gpu), 'enable' if pending else 'disable'))]
    if wanted is None:
        if current:
            return [Failure('mig', gpu['index'], '%s is in MIG mode, expected a whole GPU' % _label(gpu))]
        return []
    if not current:
        return [Failure('mig', gpu['index'], '%s is not in MIG mode, expected %s' % (_label(gpu), ','.join(wanted)))]
    have = sorted(d['profile'] for d in gpu.get('mig_devices') or [])
    if have != wanted:
        return [Failure('mig', gpu['index'], '%s has MIG instances %s, expected %s'
                        % (_label(gpu), ','.join(have) or 'none', ','.join(wanted) or 'none'))]
    return []


def required_files(gpus, minors_text=None, minors_source=DEFAULTS['mig_minors_path']):
    """``[(gpu index or None, device path)]`` a job on this node needs.

    ``/dev/nvidiactl``; ``/dev/nvidia<minor>`` per GPU; for each MIG device
    its GPU-instance and compute-instance capability devices, looked up in
    the driver's mig-minors table (``minors_text``, needed only with MIG).
    """
    files = [(None, '/dev/nvidiactl')]
    minors = None
    for gpu in gpus:
        if gpu.get('error') or gpu.get('minor') is None:
            continue
        files.append((gpu['index'], '/dev/nvidia%d' % gpu['minor']))
        for device in gpu.get('mig_devices') or []:
            if minors is None:
                if minors_text is None:
                    raise ValueError('GPU %d has MIG devices but the mig-minors table (%s) could not be read' % (gpu['index'], minors_source))
                minors = parse_mig_minors(minors_text, minors_source)
            gi_key = (gpu['minor'], device['gi'])
            ci_key = (gpu['minor'], device['gi'], device['ci'])
            for key, table in ((gi_key, 'gi'), (ci_key, 'ci')):
                if key not in minors[table]:
                    raise ValueError('%s has no line for %s in %s' % (
                        _label(gpu), 'gpu%d/gi%d%s/access' % (gpu['minor'], device['gi'], '/ci%d' % device['ci'] if table == 'ci' else ''),
                        minors_source))
                files.append((gpu['index'], cap_device(minors[table][key])))
    return files


def munge_key_failures(config, munge_key):
    """``munge-key`` failures of ``munge_key`` (a ``_munge_key.observe`` result; ``None``: not observed).

    Not checked when the configuration's ``munge_key_path`` is empty.
    """
    if not config.get('munge_key_path'):
        return []
    if munge_key is None:
        return [Failure('munge-key', None, 'the permissions of the munge key %s were not observed' % config['munge_key_path'])]
    return [Failure('munge-key', None, text) for text in munge_key_problems(munge_key)]


def find_failures(config, observed, present_files=None, minors_text=None, tier='periodic'):
    """Every failed check of ``tier`` (see :data:`TIER_CHECKS`), in the order of :data:`CHECKS`.

    ``observed``: ``{'nvml_error': text or None, 'driver_version': text, 'gpus': [{index, name, pci_bus_id, minor,
    error, mig_current, mig_pending, mig_devices: [{profile, gi, ci}], ecc_uncorrected, retired_pages_pending,
    remap_pending, remap_failure, fleet: _nvml.Client.fleet_health()}], 'xids': _healthcheck_fleet.parse_xids(),
    'xid_error': text, 'ib_ports': [_healthcheck_fleet.ib_port()], 'ib_error': text (a source that could not be read
    is not a failure of the node: see :func:`warnings`), 'nvswitch': bool, 'fabric_manager_state': systemctl's word,
    'fabric_manager_version': nv-fabricmanager --version's text, 'modules': [loaded nvidia* modules],
    'driver_proc': _gpu_baseline.parse_driver_proc(), 'kernel_release': text,
    'munge_key': _munge_key.observe() result, 'skipped': [checks not run for the time budget]}``;
    ``present_files``: the set of device paths that exist (see :func:`required_files`).
    """
    if tier not in TIERS:
        raise ValueError('tier %r is not one of %s' % (tier, ', '.join(TIERS)))
    failures = (_gpu_failures(config, observed, present_files, minors_text) + _fleet_failures(config, observed)
                + munge_key_failures(config, observed.get('munge_key')))
    wanted = set(TIER_CHECKS[tier]) - set(config.get('disabled_checks') or ()) - set(observed.get('skipped') or ())
    return sorted([f for f in failures if f.check in wanted], key=lambda f: CHECKS.index(f.check))


def warnings(observed):
    """What could not be read (the kernel log, the InfiniBand tree): the program prints it; the node is not drained for it."""
    out = []
    if observed.get('xid_error'):
        out.append('cannot read the kernel log for Xids: %s' % observed['xid_error'])
    if observed.get('ib_error'):
        out.append('cannot read the InfiniBand ports: %s' % observed['ib_error'])
    if observed.get('fabric_manager_error'):
        out.append('cannot ask for the fabric manager: %s' % observed['fabric_manager_error'])
    return out


def _fleet_failures(config, observed):
    gpus = sorted(observed.get('gpus') or [], key=lambda g: g['index'])
    found = fleet.xid_failures(observed.get('xids') or [], gpus, config['xid_drain'])
    if not observed.get('nvml_error'):
        found += fleet.driver_failures(observed.get('driver_version'), [g.get('name') for g in gpus if not g.get('error')],
                                       config['driver_min'])
        found += fleet.persistence_failures(gpus)
        manager = []
        if 'fabric_manager_state' in observed and not observed.get('fabric_manager_error'):
            manager = baseline_checks.fabric_manager_failures(observed.get('nvswitch'), observed['fabric_manager_state'],
                                                              observed.get('fabric_manager_version'), observed.get('driver_version'))
        # the fabric manager down is the cause; the GPUs' fabric state then only repeats it
        found += manager or fleet.fabric_failures(gpus, observed.get('driver_version'))
        found += fleet.nvlink_failures(gpus, config['nvlinks_active'], config['nvlink_error_max'])
        found += fleet.pcie_failures(gpus)
        found += fleet.thermal_failures(gpus, config['throttle_reasons'], config['temperature_margin'])
    if 'ib_ports' in observed and not observed.get('ib_error'):
        found += fleet.ib_failures(observed['ib_ports'], config['ib_ports'], config['ib_rate_gbps'], config['ib_counter_max'],
                                   config['ib_hcas'])
    if 'modules' in observed and 'ib_ports' in observed and not observed.get('ib_error'):
        ib = len([p for p in observed['ib_ports'] if p['link_layer'].lower() == 'infiniband'])
        found += baseline_checks.gpudirect_failures(ib, observed['modules'], observed.get('driver_proc'), observed.get('kernel_release'))
    return [Failure(check, gpu, detail) for check, gpu, detail in found]


def _gpu_failures(config, observed, present_files, minors_text):
    if observed.get('nvml_error'):
        if config['gpu_count'] == 0 and not config['mig_layout']:
            return []  # a node without GPUs (no driver, no NVML) is healthy as far as this check goes
        return [Failure('nvml', None, 'NVML does not answer: %s' % observed['nvml_error'])]
    gpus = sorted(observed.get('gpus') or [], key=lambda g: g['index'])
    failures = []
    if config['gpu_count'] is not None and len(gpus) != config['gpu_count']:
        failures.append(Failure('gpu-count', None, 'NVML sees %d GPUs, expected %d' % (len(gpus), config['gpu_count'])))
    models = config['gpu_models']
    if models:
        for gpu in gpus:
            if gpu.get('error'):
                continue
            if not any(m.lower() in str(gpu.get('name', '')).lower() for m in models):
                failures.append(Failure('gpu-model', gpu['index'], '%s is a %s, expected %s'
                                        % (_label(gpu), gpu.get('name'), ' or '.join(models))))
    for gpu in gpus:
        failures.extend(_gpu_errors(gpu, config))
    for gpu in gpus:
        failures.extend(_mig_failures(gpu, config))
    if config['check_device_files']:
        try:
            needed = required_files(gpus, minors_text, config['mig_minors_path'])
        except ValueError as exc:
            failures.append(Failure('device-files', None, str(exc)))
        else:
            present = set(present_files or ())
            for index, path in needed:
                if path not in present:
                    owner = _label(next(g for g in gpus if g['index'] == index)) + ' ' if index is not None else ''
                    failures.append(Failure('device-files', index, '%s%s missing' % (owner, path)))
    return sorted(failures, key=lambda f: CHECKS.index(f.check))


def baseline(observed):
    """Expectations from what a node has now: ``{'gpu_count', 'gpu_models', 'mig_layout', 'nvlinks_active'}``
    and, where the InfiniBand tree was read, ``ib_ports`` and ``ib_rate_gbps``.

    What the role records when the inventory leaves an expectation unset.
    A node NVML cannot read, or with a GPU in error, has no baseline.
    """
    if observed.get('nvml_error'):
        raise ValueError('cannot record the GPUs of this node: %s' % observed['nvml_error'])
    gpus = sorted(observed.get('gpus') or [], key=lambda g: g['index'])
    broken = [g for g in gpus if g.get('error')]
    if broken:
        raise ValueError('cannot record the GPUs of this node: %s: %s' % (_label(broken[0]), broken[0]['error']))
    recorded = {
        'gpu_count': len(gpus),
        'gpu_models': sorted(set(g['name'] for g in gpus)),
        'mig_layout': dict((str(g['index']), sorted(d['profile'] for d in g.get('mig_devices') or []))
                           for g in gpus if g.get('mig_current')),
    }
    if any('fleet' in g for g in gpus):
        recorded['nvlinks_active'] = dict((str(g['index']), len([l for l in g['fleet'].get('nvlinks') or [] if l['active']]))
                                          for g in gpus if (g.get('fleet') or {}).get('nvlinks'))
    if 'ib_ports' in observed and not observed.get('ib_error'):
        recorded['ib_ports'], recorded['ib_rate_gbps'] = fleet.ib_baseline(observed['ib_ports'])
    return recorded


# ------------------------------------------------------------------ Slurm side

def reason_text(prefix, failures, tier='periodic', limit=MAX_REASON):
    """The drain tag (``slurm._drain_tag``) ``"<prefix>:<tier>:<check>: <detail>"`` of the first failure, ``(+N more)``
    when there are others."""
    if not failures:
        raise ValueError('a drain reason needs at least one failure')
    more = len(failures) - 1
    suffix = ' (+%d more)' % more if more else ''
    return format_tag('healthcheck', failures[0].check, failures[0].detail, scope=tier, prefix=prefix, limit=limit - len(suffix)) + suffix


def parse_tag(reason, prefix=DEFAULTS['reason_prefix']):
    """``{'tier', 'check'}`` of a drain reason this check wrote (``gpuhc:periodic:xid: ...``, or the earlier
    ``healthcheck: ecc: ...``, tier ``periodic``), else None (``slurm._drain_tag``)."""
    tag = drain_tag.parse_tag(reason, prefix)
    if not tag or tag['owner'] != 'healthcheck':
        return None
    return {'tier': tag['scope'], 'check': tag['check']}


def parse_scontrol_node(text):
    """``scontrol -o show node NAME`` as a node of :func:`slurm._nodes.parse_node_line` (``name``, ``state`` without
    sinfo's marks, ``flags`` the sorted ``+`` flags, ``reason`` without its ``[user@time]`` suffix, ``reason_user`` ...).

    ValueError (starting ``scontrol``) when it printed no node line, or one whose State= is not Slurm's state words."""
    return parse_node(text)


def drained(node):
    """Whether the node is drained or draining (``DRAIN`` flag, or a ``DRAINED``/``DRAINING`` state)."""
    return is_drained(node)


def is_ours(node, prefix):
    """Whether the node's drain reason is a tag of this check (see :func:`parse_tag`)."""
    return parse_tag(node['reason'], prefix) is not None


# ------------------------------------------------------------------ who set a node's state

OWNERS = ('ours', 'loop', 'slurm', 'admin')
# Reasons slurmctld, slurmd and slurmstepd write themselves (SchedMD slurm src/slurmctld/node_mgr.c, ping_nodes.c,
# proc_req.c, job_mgr.c, agent.c, power_save.c, src/slurmd/slurmstepd, src/interfaces/gres.c), at the start of the
# reason (Slurm appends " : <more>" and "(JobId=...)" to some).  These mean the node itself failed, never that a person
# wants it out of service: "Set in slurm.conf" (a DownNodes= line without Reason=) and "reboot complete" (an
# admin's "scontrol reboot nextstate=down") are left out on purpose.
SLURM_REASONS = ('Kill task failed', 'Job step not running', 'batch job complete failure', 'Prolog error', 'Prolog launch failure',
                 'Epilog error', 'Prolog/Epilog failure', 'Job env setup error', 'Duplicate jobid', 'SlurmdSpoolDir is full',
                 'switch_g_job_postfini failed', 'Low RealMemory', 'Low CPUs', 'Low socket*core*thread count', 'Low TmpDisk',
                 'CoreSpec differ', 'Could not unpack gres data')
# ... and those it writes only when it marks a node DOWN (on a drained node the same words are someone's text).
SLURM_DOWN_REASONS = ('Not responding', 'Node unexpectedly rebooted', 'reboot timed out', 'ResumeTimeout reached',
                      'NO NETWORK ADDRESS FOUND')
_SLURM_GRES_REASON = re.compile(r'^(gres/)?[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)? count (too low|reported lower than configured) \(')


def _starts_with(reason, texts):
    return any(reason == text or reason.startswith(text) and reason[len(text)] in ' (:,' for text in texts)


def node_owner(node, prefix=DEFAULTS['reason_prefix']):
    """Who set the node's drain or down state, from its reason: ``loop`` (the closed loop's ``gpuloop:<step>:<condition>:``:
    only the loop returns such a node), ``ours`` (another tag of this collection at the start of the
    reason, ``slurm._drain_tag``: the health check's ``<prefix>:<tier>:<check>:``,
    ``gpucluster.bringup.mig:``, ``validate:``, the hook runner's ``prolog hook X failed (exit N)``), ``slurm`` (one of
    Slurm's own reasons, see ``SLURM_REASONS``; or no reason at all: scontrol refuses a DOWN or DRAIN without one, so
    only slurmctld leaves a node without a reason, and a node that is only NOT_RESPONDING has none), else ``admin``: free text a person wrote, even when it
    contains one of our tags or Slurm's words further on.

    ``node``: ``{'state', 'flags', 'reason'}`` (``flags`` a list or set), a ``parse_scontrol_node`` entry.  Only the
    collection's and Slurm's may be started or resumed by the collection's programs (an admin's only when asked)."""
    reason = (node.get('reason') or '').strip()
    if not reason:
        return 'slurm'
    tag = drain_tag.parse_tag(reason, prefix)
    if tag and tag['owner'] == 'loop':
        return 'loop'
    if tag:
        return 'ours'
    down = node.get('state') == 'DOWN' or 'NOT_RESPONDING' in (node.get('flags') or ())
    if _starts_with(reason, SLURM_REASONS) or _SLURM_GRES_REASON.match(reason) or down and _starts_with(reason, SLURM_DOWN_REASONS):
        return 'slurm'
    return 'admin'


def owner_text(node, prefix=DEFAULTS['reason_prefix']):
    """``"down by an admin: <reason>"`` / ``"drained by Slurm: <reason>"`` / ``"drained by gpucluster.bringup: <reason>"``."""
    owner = node_owner(node, prefix)
    what = 'down' if node.get('state') == 'DOWN' else 'drained' if drained_or_flagged(node) else 'not responding'
    who = {'ours': 'gpucluster.bringup', 'loop': 'the closed loop of gpucluster.bringup', 'slurm': 'Slurm', 'admin': 'an admin'}[owner]
    return '%s by %s: %s' % (what, who, node.get('reason') or 'no reason given')


def drained_or_flagged(node):
    """Whether the node is drained or draining (a list or a set of flags)."""
    return is_drained(node)


class Decision(object):
    """``action`` is ``drain``, ``resume`` or ``none``; ``reason`` the drain reason; ``message`` says why;
    ``passes`` the consecutive passing runs to remember for the next run."""

    def __init__(self, action, message, reason=None, passes=0):
        self.action = action
        self.message = message
        self.reason = reason
        self.passes = passes

    def argv(self, scontrol, node_name):
        """The scontrol command that carries it out (``None`` for ``none``); ``node_name`` goes inside ``nodename=``."""
        check_node_name(node_name)
        if self.action == 'drain':
            return [scontrol, 'update', 'nodename=' + node_name, 'state=drain', 'reason=' + self.reason]
        if self.action == 'resume':
            return [scontrol, 'update', 'nodename=' + node_name, 'state=resume']
        return None


def decide(failures, node, prefix, auto_resume=True, resume=False, tier='periodic', passes=0, resume_after=2):
    """What to do with ``node`` (a :func:`parse_scontrol_node` result) given the ``failures`` of ``tier``.

    ``passes``: the passing runs in a row before this one (the state file).

    * failing, not drained: drain with ``<prefix>:<tier>:<check>: <detail>``;
    * failing, drained by this check for another reason: drain again (the reason is updated);
    * failing, drained by someone else: leave it, their reason stays;
    * failing, DOWN by an admin (:func:`node_owner`): leave it, so that an admin's DOWN never becomes a drain of ours
      that a passing run resumes (DOWN by Slurm, ``Not responding``: drained, so that ReturnToService does not bring it back failing);
    * passing, drained by this check: resume with ``resume`` (asked), or with ``auto_resume`` once this is the
      ``resume_after``-th passing run in a row; the prolog tier never resumes;
    * passing, drained by someone else: never resume;
    * drained by the deep tier (``<prefix>:deep:...``): left as it is by the other tiers, failing or passing: what
      the deep tier found (a DCGM diagnostic, a slow copy or link) the others do not see, so only a passing deep
      run resumes it (``health_deep``).
    """
    tag = parse_tag(node['reason'], prefix) if drained(node) else None
    if tag and tag['tier'] == 'deep' and tier != 'deep':
        return Decision('none', '%s; %s stays drained by the deep tier ("%s") until a deep run passes (playbooks/health_deep.yml)'
                        % ('failing (%s)' % reason_text(prefix, failures, tier) if failures else 'healthy', node['name'], node['reason']),
                        passes=passes)
    if failures:
        reason = reason_text(prefix, failures, tier)
        if node['state'] == 'DOWN' and node_owner(node, prefix) == 'admin':
            # a drain over it would put our tag in place of the admin's reason, and a later passing run would resume it
            # (a node Slurm set DOWN is drained: with ReturnToService it would come back failing)
            return Decision('none', 'failing (%s); %s is %s, left as it is' % (reason, node['name'], owner_text(node, prefix)))
        if drained(node):
            if not is_ours(node, prefix):
                return Decision('none', 'failing (%s); %s is already drained by someone else ("%s"), left as it is'
                                % (reason, node['name'], node['reason']))
            if node['reason'] == reason:
                return Decision('none', 'failing (%s); %s is already drained for it' % (reason, node['name']))
        return Decision('drain', 'failing: draining %s: %s' % (node['name'], reason), reason)
    if drained(node) and is_ours(node, prefix):
        count = passes + 1
        if tier == 'prolog':
            return Decision('none', 'healthy (prolog tier); %s stays drained ("%s")' % (node['name'], node['reason']), passes=passes)
        if resume:
            return Decision('resume', 'healthy: resuming %s, drained by this check ("%s")' % (node['name'], node['reason']))
        if auto_resume and count >= resume_after:
            return Decision('resume', 'healthy %d runs in a row: resuming %s, drained by this check ("%s")'
                            % (count, node['name'], node['reason']))
        if auto_resume:
            return Decision('none', 'healthy (%d of %d passing runs in a row); %s stays drained ("%s") until run %d'
                            % (count, resume_after, node['name'], node['reason'], resume_after), passes=count)
        return Decision('none', 'healthy; %s stays drained ("%s") until it is resumed (resume playbook or --resume)'
                        % (node['name'], node['reason']), passes=count)
    if drained(node):
        return Decision('none', 'healthy; %s is drained by someone else ("%s"), not resumed' % (node['name'], node['reason']))
    return Decision('none', 'healthy')
