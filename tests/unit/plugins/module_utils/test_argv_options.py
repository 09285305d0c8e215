# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 42: no value from the inventory or a module's input is ever read as an option by the command it goes to.

One row per command builder and user-derived position (scontrol, sacctmgr, srun, salloc, squeue, sinfo, systemctl,
enroot command lines), each tried with values that start with "-" (``-Hroot@host``, ``--user``, ``--uid=0``, ``-w``).
A row expects one of:

* ``refused``: the builder (or the check before it) raises, and the message names the option or variable, shows the
  value and says what is valid; nothing is built;
* ``no_option``: the command line is built and the value is on it, but the command reads exactly the same options
  as with a harmless value: the value is after ``--``, inside a ``key=value`` word, or the value of an option that
  takes one. :func:`options_read` reads a command line the way each tool's parser does (scontrol, sacctmgr, squeue,
  sinfo and systemctl: GNU getopt, options anywhere until ``--``; srun and salloc: getopt with ``+``, options until
  the first other word; enroot 4.1.2's subcommands: a bash loop, options until ``--`` or the first other word);
* ``no_command``: the builder gives no command (``None``): the node programs keep the fact unknown.

Deliberate pass-through options (``validate_nccl_settings.srun_args`` as ``srun_extra``) are options on purpose: their row
shows they are passed as given, and where.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _sacctmgr as acct
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_cli as cli
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_hooks as hooks
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_controller as dh
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_checks as vc
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_resume as vr
from ansible_collections.gpucluster.bringup.plugins.modules import node_check, slurm_node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _load(name, *path):
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(ROOT, *path))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


runner = _load('hook_runner_argv', 'roles', 'slurm', 'files', 'hook_runner.py')

BAD = ['-Hroot@host', '--user', '--uid=0', '-w']
GOOD = 'gpu-01'
PROGRAM = '/usr/local/sbin/gpucluster-healthcheck'
NCCL_BINARY = '/opt/nccl-tests/build/all_reduce_perf'

# How each tool reads its command line: (options anywhere until "--", options that take the next word as value).
TOOLS = {
    'scontrol': (True, ('-M', '-u', '--clusters', '--uid')),
    'sacctmgr': (True, ()),
    'squeue': (True, ('-o', '-w', '-u', '-t', '-n', '-p', '-j', '--format', '--nodelist', '--user', '--states')),
    'sinfo': (True, ('-o', '-n', '-t', '-p', '--format', '--nodes', '--states')),
    'systemctl': (True, ('-H', '-M', '-t', '-p', '--host', '--machine', '--type', '--property')),
    'srun': (False, ('-w', '-p', '-N', '-n', '-t', '-J', '--nodelist', '--partition')),
    'salloc': (False, ('-w', '-p', '-N', '-n', '-t', '-J')),
    'enroot': (False, ('-o', '--output', '-a', '--arch', '-n', '--name')),
}


def options_read(argv, tool):
    """The option names ``tool`` reads on ``argv`` (``--opt=value`` as ``--opt``), in order."""
    anywhere, takes_value = TOOLS[tool]
    words = list(argv[1:])
    if tool == 'enroot':
        words = words[1:]  # the subcommand
    read, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word == '--':
            break
        if word.startswith('-') and word != '-':
            name = word.split('=', 1)[0] if word.startswith('--') else word[:2]
            read.append(name)
            skip = word in takes_value
            continue
        if not anywhere:
            break
    return read


# ------------------------------------------------------------------------------------------------ builders

def deep_srun(name=GOOD, reservation='gpucluster-deep-health', partition='batch', program=PROGRAM):
    return dh.srun_argv({'name': name, 'gpus': 8, 'partition': partition}, reservation, program, {'checks': ['dcgm']}, 60)


def nccl_srun(**kwargs):
    args = dict(binary=NCCL_BINARY, nodes=[GOOD, 'gpu-02'], gpus_per_node=8, per_gpu_tasks=True, mpi='pmix', env={})
    args.update(kwargs)
    return vn.srun_argv(**args)


def nccl_plan(node=None, **plan):
    entry = {'name': GOOD, 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3', 'gres_type': 'h100'}
    entry.update(node or {})
    full = {'binary': NCCL_BINARY, 'nodes': [entry, {'name': 'gpu-02', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3', 'gres_type': 'h100'}],
            'fabric': True, 'mpi': '{mpi}', 'dispatch': 'allocation'}
    full.update(plan)
    return vn.plan_jobs(full)


def nccl_argvs(jobs):
    """Every command line of the NCCL jobs: the runs, their own jobs, the allocations and their sinfo."""
    argvs = []
    for job in jobs:
        for key in ('argv', 'own_argv'):
            if job.get(key):
                argvs.append(job[key])
        if job.get('allocation'):
            argvs += [job['allocation']['argv'], job['allocation']['idle']]
    return argvs


def slurm_plan(node=GOOD, **plan):
    full = {'nodes': [{'name': node, 'gpus': 8}], 'pyxis': True, 'container_image': 'docker://ubuntu:24.04'}
    full.update(plan)
    return vc.slurm_jobs(full)


def mpi_plan(nodes=(GOOD, 'gpu-02'), **plan):
    full = {'nodes': list(nodes), 'binary': '/opt/mpi/hello', 'container_image': 'docker://ubuntu:24.04'}
    full.update(plan)
    return vc.mpi_jobs(full)


def job_argv(jobs, name):
    return [job for job in jobs if job['name'] == name][0]['argv']


def sacctmgr_desired(cluster='c1', **kwargs):
    return acct.desired_state(cluster, **kwargs)


def empty_state(cluster='c1'):
    state = acct.parse_state(cluster, {})
    state['cluster_exists'] = True
    return state


def sacctmgr_argvs(desired, current=None, purge=False):
    return [action.as_dict()['command'] for action in acct.plan(desired, current or empty_state(), purge)]


def sacctmgr_remove_user(name):
    """The removal of a user slurmdbd lists (sacctmgr's own output), purged: ``name=`` inside a key=value word."""
    current = empty_state()
    current['users'][name] = {}
    current['user_assocs'][(name, 'a')] = {}
    return sacctmgr_argvs(acct.desired_state('c1'), current, purge=True)[0]


class FakeModule(object):
    """What NodeChecker asks of AnsibleModule: params, get_bin_path, run_command (recorded)."""

    def __init__(self, **params):
        self.params = dict({'node_name': GOOD, 'services': []}, **params)
        self.calls = []

    def get_bin_path(self, name):
        return '/usr/bin/' + name

    def run_command(self, argv, **kwargs):
        self.calls.append(list(argv))
        return 0, 'active\n', ''


def systemctl_is_active(unit):
    module = FakeModule(services=[unit])
    node_check.NodeChecker(module).services()
    return module.calls[0]


def cli_call(method, *args):
    """The command line the Slurm client (_slurm_cli) runs for ``method(*args)``; SlurmError when it refuses."""
    calls = []
    getattr(cli.SlurmCli(run=lambda argv, env=None, data=None: calls.append(list(argv)) or (0, '', '')), method)(*args)
    return calls[0]


REFUSED = (ValueError, cli.SlurmError, slurm_node.NodeFailure)
# the harmless value a row's builder takes where GOOD is not one
GOODS = {'hooks show job': '12'}

# (id, tool, build(value), mode, fragments of the message) - fragments may hold {v} for the value
ROWS = [
    # health_deep (_deep_controller): scontrol and srun
    ('deep srun node name', 'srun', lambda v: deep_srun(name=v), 'refused', ["node name is '{v}'", 'a Slurm node name']),
    ('deep srun reservation', 'srun', lambda v: deep_srun(reservation=v), 'refused', ["reservation is '{v}'", 'a Slurm reservation name']),
    ('deep srun partition', 'srun', lambda v: deep_srun(partition=v), 'refused', ["partition is '{v}'", 'a Slurm partition name']),
    ('deep srun program', 'srun', lambda v: deep_srun(program=v), 'refused', ["program is '{v}'", 'the absolute path of gpucluster-healthcheck']),
    # (health_deep shows nodes, updates them and looks up / deletes its reservation through the Slurm client: rows below)
    ('slurm client show reservation', 'scontrol', lambda v: cli_call('reservation_exists', v), 'refused',
     ["reservation is '{v}', expected a Slurm reservation", 'starting with a letter or digit']),
    ('slurm client delete reservation', 'scontrol', lambda v: cli_call('delete_reservation', v), 'refused', ["reservation is '{v}'"]),
    ('deep input names', None, lambda v: dh.check_deep_input({'names': [v], 'include_drained': 'ours', 'reservation': 'r', 'time_limit': 60,
                                                              'batch_size': 0, 'prefix': 'gpuhc', 'program': PROGRAM}),
     'refused', ["names[0] is '{v}'", 'a Slurm node name']),
    # validation_resume (_validation_resume), and the reservation health_deep makes too
    ('reservation name', 'scontrol', lambda v: vr.reservation_argv('scontrol', v, [GOOD], 30), 'refused',
     ["reservation is '{v}'", 'a Slurm reservation name']),
    ('reservation nodes', 'scontrol', lambda v: vr.reservation_argv('scontrol', 'maint', [v], 30), 'refused', ["nodes[0] is '{v}'", 'a Slurm node name']),
    ('resume probe node', 'srun', lambda v: vr.probe_argv(v, 'maint'), 'refused', ["node name is '{v}'", 'a Slurm node name']),
    ('resume probe reservation', 'srun', lambda v: vr.probe_argv(GOOD, v), 'refused', ["reservation is '{v}'", 'a Slurm reservation name']),
    ('resume update nodes', 'scontrol', lambda v: vr.resume_argv('scontrol', [GOOD, v]), 'refused', ["nodes[1] is '{v}'", 'a Slurm node name']),
    ('resume input reservation', None, lambda v: vr.check_resume_input({'names': [], 'checks': {}, 'probe_timeout': 120, 'reservation': v}),
     'refused', ["reservation is '{v}'", 'a Slurm reservation name']),
    # validation_jobs' NCCL stage (_validation_nccl): srun, salloc, sinfo
    ('nccl srun nodes', 'srun', lambda v: nccl_srun(nodes=[GOOD, v]), 'refused', ["nodes[1] is '{v}'", 'a Slurm node name']),
    ('nccl srun binary', 'srun', lambda v: nccl_srun(binary=v), 'refused', ["binary is '{v}'", 'the path of all_reduce_perf', 'not starting with "-"']),
    ('nccl srun command', 'srun', lambda v: nccl_srun(srun=v), 'refused', ["srun is '{v}'", 'the srun command or its path']),
    ('nccl srun gres type', 'srun', lambda v: nccl_srun(gres_type=v), 'refused', ["gres_type is '{v}'", 'a GRES type']),
    ('nccl srun mpi', 'srun', lambda v: nccl_srun(mpi=v), 'refused', ["mpi is '{v}'", 'a Slurm MPI plugin type']),
    ('nccl plan node name', 'srun', lambda v: nccl_plan(node={'name': v}), 'refused', ["nodes[0].name is '{v}'", 'a Slurm node name']),
    ('nccl plan gres type', 'srun', lambda v: nccl_plan(node={'gres_type': v}), 'refused', ["nodes[0].gres_type is '{v}'", 'a GRES type']),
    ('nccl plan binary', 'srun', lambda v: nccl_plan(binary=v), 'refused', ["binary is '{v}'", 'the path of the program on the nodes']),
    ('nccl plan srun', 'srun', lambda v: nccl_plan(srun=v), 'refused', ["srun is '{v}'", 'the srun command or its path']),
    ('nccl plan salloc', 'salloc', lambda v: nccl_plan(salloc=v), 'refused', ["salloc is '{v}'", 'the salloc command or its path']),
    ('nccl plan scancel', 'srun', lambda v: nccl_plan(scancel=v), 'refused', ["scancel is '{v}'", 'the scancel command or its path']),
    ('nccl plan mpi', 'srun', lambda v: nccl_plan(mpi=v), 'refused', ["mpi is '{v}'", 'a Slurm MPI plugin type']),
    # validation_jobs' Slurm and MPI stages (_validation_checks)
    ('slurm plan node name', 'srun', lambda v: slurm_plan(node=v), 'refused', ["nodes[0].name is '{v}'", 'a Slurm node name']),
    ('slurm plan partition', 'srun', lambda v: slurm_plan(partition=v), 'refused', ["partition is '{v}'", 'a Slurm partition name']),
    ('slurm plan srun', 'srun', lambda v: slurm_plan(srun=v), 'refused', ["srun is '{v}'", 'the srun command or its path']),
    ('slurm plan time limit', 'srun', lambda v: slurm_plan(time_limit=v), 'refused', ["time_limit is '{v}'", 'a Slurm time limit']),
    ('slurm plan container image', 'srun', lambda v: job_argv(slurm_plan(container_image=v), GOOD + '/container'), 'no_option', []),
    ('mpi plan nodes', 'srun', lambda v: mpi_plan(nodes=[GOOD, v]), 'refused', ["nodes[1] is '{v}'", 'a Slurm node name']),
    ('mpi plan binary', 'srun', lambda v: mpi_plan(binary=v), 'refused', ["binary is '{v}'", 'the path of the program on the nodes']),
    ('mpi plan srun', 'srun', lambda v: mpi_plan(srun=v), 'refused', ["srun is '{v}'", 'the srun command or its path']),
    ('mpi plan salloc', 'salloc', lambda v: mpi_plan(salloc=v), 'refused', ["salloc is '{v}'", 'the salloc command or its path']),
    ('mpi plan mpirun', 'salloc', lambda v: mpi_plan(mpirun=v), 'refused', ["mpirun is '{v}'", 'the mpirun command or its path']),
    ('mpi plan partition', 'srun', lambda v: mpi_plan(partition=v), 'refused', ["partition is '{v}'", 'a Slurm partition name']),
    ('mpi plan container mounts', 'srun', lambda v: job_argv(mpi_plan(container_mounts=v), 'pyxis'), 'no_option', []),
    ('jobs argv command', None, lambda v: vc.check_jobs([{'name': 'j', 'kind': 'srun', 'timeout': 5, 'round': 0, 'argv': [v, 'hostname']}]),
     'refused', ["jobs[0] (j).argv[0] is '{v}'", 'the command to run', 'not starting with "-"']),
    ('jobs input srun', None, lambda v: vc.check_jobs_input({'stage': 's', 'mpi_plugin': 'auto', 'srun': v}), 'refused',
     ["srun is '{v}'", 'the srun command or its path']),
    # node_check: systemctl, scontrol
    ('node_check services', None, lambda v: vc.check_node_input({'services': [v], 'gres_conf_path': 'g', 'enroot_conf_path': 'e',
                                                                 'munge_key_check': False, 'hook_log_ident': 'slurm-hooks', 'hook_log_lines': 5}),
     'refused', ["services[0] is '{v}'", 'a systemd unit name']),
    ('node_check node name', None, lambda v: vc.check_node_input({'node_name': v}), 'refused', ["node_name is '{v}'", 'a Slurm node name']),
    ('node_check systemctl unit', 'systemctl', systemctl_is_active, 'no_option', []),
    # slurm_assoc (_sacctmgr): sacctmgr reads options anywhere on its line
    ('sacctmgr cluster', 'sacctmgr', lambda v: sacctmgr_desired(cluster=v), 'refused', ["cluster name '{v}' is not valid", 'use letters, digits']),
    ('sacctmgr qos', 'sacctmgr', lambda v: sacctmgr_desired(qos=[{'name': v}]), 'refused', ["QOS name '{v}' is not valid", '"-" (not first)']),
    ('sacctmgr account', 'sacctmgr', lambda v: sacctmgr_desired(accounts=[{'name': v}]), 'refused', ["account name '{v}' is not valid"]),
    ('sacctmgr parent', 'sacctmgr', lambda v: sacctmgr_desired(accounts=[{'name': 'a', 'parent': v}]), 'refused',
     ["account a parent name '{v}' is not valid"]),
    ('sacctmgr user', 'sacctmgr', lambda v: sacctmgr_desired(accounts=[{'name': 'a'}], users=[{'name': v, 'accounts': ['a']}]), 'refused',
     ["user name '{v}' is not valid"]),
    ('sacctmgr user account', 'sacctmgr', lambda v: sacctmgr_desired(users=[{'name': 'u', 'accounts': [v]}]), 'refused',
     ["user u account name '{v}' is not valid"]),
    ('sacctmgr default account', 'sacctmgr', lambda v: sacctmgr_desired(users=[{'name': 'u', 'accounts': ['a'], 'default_account': v}]), 'refused',
     ["user u default_account name '{v}' is not valid"]),
    ('sacctmgr qos list', 'sacctmgr', lambda v: sacctmgr_desired(accounts=[{'name': 'a', 'QOS': [v]}]), 'refused', ["QOS name '{v}' is not valid"]),
    ('sacctmgr bare name guard', 'sacctmgr', lambda v: acct._bare(v, 'user'), 'refused', ["user name '{v}' is not valid"]),
    ('sacctmgr description', 'sacctmgr', lambda v: sacctmgr_argvs(sacctmgr_desired(accounts=[{'name': 'a', 'description': v}]))[0],
     'no_option', []),
    ('sacctmgr removal of a listed user', 'sacctmgr', sacctmgr_remove_user, 'no_option', []),
    # enroot_import (_enroot): enroot import/digest/create/remove
    ('enroot import uri', 'enroot', lambda v: _enroot.import_argv('enroot', v, '/images/x.sqsh', 'x86_64'), 'no_option', []),
    ('enroot digest uri', 'enroot', lambda v: _enroot.digest_argv('enroot', v), 'no_option', []),
    ('enroot create image', 'enroot', lambda v: _enroot.create_argv('enroot', 'pyxis_a', v), 'no_option', []),
    ('enroot import output', 'enroot', lambda v: _enroot.import_argv('enroot', 'docker://ubuntu', v), 'refused', ["--output '{v}'", 'an absolute path']),
    ('enroot create name', 'enroot', lambda v: _enroot.create_argv('enroot', v, '/images/x.sqsh'), 'refused', ["--name '{v}'", 'a container name']),
    ('enroot remove name', 'enroot', lambda v: _enroot.remove_argv('enroot', v), 'refused', ["--name '{v}'", 'a container name']),
    ('enroot container option', 'enroot', _enroot.container_name, 'refused', ['invalid container name "{v}"', 'starting with a letter or digit']),
    ('enroot uri option', 'enroot', _enroot.parse_uri, 'refused', ['invalid image URI "{v}"', 'it starts with "-"']),
    # the GPU health check program (_healthcheck, _deep_tier): scontrol, and the deep tier's tools
    ('healthcheck show node', 'scontrol', lambda v: hc.show_node_argv('scontrol', v), 'refused', ["node_name '{v}' is not a Slurm node name"]),
    ('healthcheck update node', 'scontrol', lambda v: hc.Decision('drain', 'm', 'gpuhc:periodic:xid: x').argv('scontrol', v), 'refused',
     ["node_name '{v}' is not a Slurm node name", 'starting with a letter or digit']),
    ('healthcheck config node_name', None, lambda v: hc.load_config({'node_name': v}), 'refused', ["node_name '{v}' is not a Slurm node name"]),
    ('healthcheck config scontrol', None, lambda v: hc.load_config({'scontrol': v}), 'refused', ["scontrol '{v}' must be a command name or path"]),
    ('healthcheck drain reason', 'scontrol', lambda v: hc.Decision('drain', 'm', v).argv('scontrol', GOOD), 'no_option', []),
    ('deep tier dcgmi', None, lambda v: hd.load_config({'dcgmi': v}), 'refused', ["dcgmi is '{v}', expected an absolute path"]),
    ('deep tier all_reduce_perf', None, lambda v: hd.load_config({'all_reduce_perf': v}), 'refused', ["all_reduce_perf is '{v}', expected an absolute path"]),
    ('deep tier nvbandwidth', None, lambda v: hd.load_config({'nvbandwidth': v}), 'refused', ["nvbandwidth is '{v}', expected an absolute path"]),
    ('deep tier ib_write_bw', None, lambda v: hd.load_config({'ib_write_bw': v}), 'refused', ["ib_write_bw is '{v}', expected an absolute path"]),
    ('deep tier testcase', None, lambda v: hd.load_config({'nvbandwidth_testcases': [v]}), 'refused',
     ["nvbandwidth_testcases is ['{v}']", 'nvbandwidth testcase names']),
    # the prolog/epilog hook runner (_slurm_hooks): values from slurmd's environment
    ('hooks show job', 'scontrol', hooks.job_show_argv, 'no_command', []),
    ('hooks squeue node', 'squeue', lambda v: hooks.user_jobs_argv(v, 'alice'), 'no_command', []),
    ('hooks squeue user', 'squeue', lambda v: hooks.user_jobs_argv(GOOD, v), 'no_command', []),
    # the hook runner's drain: the Slurm client (_slurm_cli) refuses a node name before any command
    ('hooks drain node', 'scontrol', lambda v: cli_call('drain', v, 'prolog hook 10-all-x failed (exit 1)'), 'refused',
     ["node name is '{v}', expected a Slurm node name", 'nothing was run']),
    ('hooks drain reason', 'scontrol', lambda v: cli_call('drain', GOOD, v), 'no_option', []),
    ('slurm client show nodes', 'scontrol', lambda v: cli_call('show_nodes', [GOOD, v]), 'refused', ["node name is '{v}', expected a Slurm node name"]),
    ('slurm client jobs on', 'squeue', lambda v: cli_call('jobs_on', v), 'refused', ["node name is '{v}', expected a Slurm node name"]),
    ('slurm client resume', 'scontrol', lambda v: cli_call('resume', [GOOD, v]), 'refused', ["node name is '{v}', expected a Slurm node name"]),
    # the slurm_node module (the mig role's drain / wait / resume) through the same client
    ('slurm client show node', 'scontrol', lambda v: cli_call('show_node', v), 'refused',
     ["node name is '{v}', expected a Slurm node name", 'nothing was run']),
    ('slurm client update', 'scontrol', lambda v: cli_call('update_nodes', v, 'State=RESUME'), 'refused', ["node name is '{v}', expected a Slurm node name"]),
    ('slurm_node reason', 'scontrol', lambda v: cli_call('update_nodes', GOOD, 'State=DRAIN', 'Reason=gpucluster.bringup.mig: %s' % v), 'no_option', []),
]


@pytest.mark.parametrize('value', BAD)
@pytest.mark.parametrize('label, tool, build, mode, fragments', ROWS, ids=[row[0] for row in ROWS])
def test_value_is_never_an_option(label, tool, build, mode, fragments, value):
    if mode == 'refused':
        with pytest.raises(REFUSED) as caught:
            build(value)
        message = str(caught.value)
        for fragment in fragments:
            assert fragment.format(v=value) in message, '%s: message %r lacks %r' % (label, message, fragment.format(v=value))
        return
    if mode == 'no_command':
        assert build(GOODS.get(label, GOOD)) is not None, label
        assert build(value) is None, '%s: a command was built with %r' % (label, value)
        return
    good, bad = build('safe-value'), build(value)
    # (sacctmgr keeps descriptions in lower case)
    assert any(value.lower() in word.lower() for word in bad), '%s: %r is not on %r' % (label, value, bad)
    assert options_read(bad, tool) == options_read(good, tool), '%s: %r is read as an option in %r' % (label, value, bad)


# ------------------------------------------------------------------------------- deliberate pass-through


def test_nccl_srun_extra_are_srun_options_on_purpose():
    """``validate_nccl_settings.srun_args`` (the plan's ``srun_extra``) are srun options by design: passed as given, before the
    program; everything from the inventory around them is checked (see the rows above)."""
    argv = nccl_srun(extra=['--overcommit', '--reservation=maint'])
    assert options_read(argv, 'srun')[-2:] == ['--overcommit', '--reservation']
    assert argv.index(NCCL_BINARY) == argv.index('--reservation=maint') + 1


def test_nccl_args_are_all_reduce_perf_arguments_on_purpose():
    """``validate_nccl_settings.args`` / the deep tier's ``nccl_args`` are all_reduce_perf's own options: after the program."""
    argv = nccl_srun(args=['-b', '8', '-e', '8G'])
    assert argv[argv.index(NCCL_BINARY) + 1:] == ['-b', '8', '-e', '8G', '-g', '1']
    assert hd.nccl_argv(hd.load_config({'nccl_args': ['-b', '1M']}), 8) == [hd.DEFAULTS['all_reduce_perf'], '-b', '1M', '-g', '8']


# ------------------------------------------------------------------------------- programs: nothing runs


@pytest.mark.parametrize('value', BAD)
def test_slurm_node_refuses_a_node_option_before_any_command(value):
    calls = []
    client = cli.SlurmCli(run=lambda argv, env=None, data=None: calls.append(list(argv)) or (1, '', 'not Slurm'))
    params = {'action': 'drained', 'node': value, 'reason': 'gpucluster.bringup.mig: x', 'owner': 'gpucluster.bringup.mig:',
              'gres': None, 'restarted_since': None, 'timeout': 0, 'poll': 1}
    with pytest.raises(slurm_node.NodeFailure) as err:
        slurm_node.NodeManager(client, params).run()
    assert "node is '%s', expected a Slurm node name" % value in str(err.value)
    assert calls == []


@pytest.mark.parametrize('env, asked, fact', [
    # a job id that is an option: no scontrol show job (exclusive stays unknown); the user's jobs are still asked
    ({'SLURM_JOB_ID': '-w', 'SLURM_JOB_USER': 'alice'}, [['squeue', '-h', '-o', '%A', '-w', GOOD, '-u', 'alice']], 'exclusive'),
    # a user that is an option: no squeue (last_user_job stays unknown)
    ({'SLURM_JOB_ID': '12', 'SLURM_JOB_USER': '--uid=0'}, [['scontrol', 'show', 'job', '-o', '12']], 'last_user_job'),
])
def test_hook_runner_asks_nothing_with_an_option_like_value(env, asked, fact, monkeypatch):
    calls = []
    monkeypatch.setattr(runner, 'command_output', lambda argv, timeout=15: calls.append(argv) or '')
    facts = runner.job_facts({'exclusive', 'last_user_job'}, 'epilog', env, GOOD)
    assert calls == asked
    assert facts[fact] is None


@pytest.mark.parametrize('node', BAD)
def test_hook_runner_does_not_drain_an_option(node, monkeypatch):
    calls = []
    monkeypatch.setattr(runner.subprocess, 'run', lambda argv, **kwargs: calls.append(argv))
    monkeypatch.setattr(runner, 'log', lambda priority, message: None)
    assert runner.drain(node, 'prolog hook 10-all-x failed (exit 1)') is False
    assert calls == []


def test_node_check_asks_scontrol_nothing_for_a_host_name_that_is_an_option():
    module = FakeModule(node_name='-Hroot@host')
    checker = node_check.NodeChecker(module)
    checker.observe_slurm()
    assert module.calls == []
    assert "node_name is '-Hroot@host'" in checker.observed['scontrol_error']


@pytest.mark.parametrize('tool, good, bad', [
    # what the no_option rows would catch: the value as a word of its own where the tool reads options
    ('scontrol', ['scontrol', '-o', 'show', 'node', GOOD], ['scontrol', '-o', 'show', 'node', '-Hroot@host']),
    ('sacctmgr', ['sacctmgr', '-i', 'add', 'user', GOOD, 'Account=a'], ['sacctmgr', '-i', 'add', 'user', '--uid=0', 'Account=a']),
    ('srun', ['srun', '--nodes=1', '/bin/prog'], ['srun', '--nodes=1', '--uid=0']),
    ('salloc', ['salloc', '--nodes=1', 'mpirun', '/bin/prog'], ['salloc', '--nodes=1', '-w', '/bin/prog']),
    ('enroot', ['enroot', 'import', '--output', '/x.sqsh', 'docker://a'], ['enroot', 'import', '--output', '/x.sqsh', '--user']),
    ('systemctl', ['systemctl', 'is-active', 'munge'], ['systemctl', 'is-active', '-Hroot@host']),
    ('squeue', ['squeue', '-h', '-w', GOOD, GOOD], ['squeue', '-h', '-w', GOOD, '--user']),
])
def test_options_read_sees_an_injected_option(tool, good, bad):
    """The reader the no_option rows rely on tells an option apart (so those rows can fail)."""
    assert options_read(bad, tool) != options_read(good, tool)
