"""_preflight: the shape rule of the login nodes (inventory group slurm_login, issue 44 item 6).

A login node runs the Slurm client commands only. The slurm role's preflight refuses a host of the
(fixed) inventory group slurm_login that is also the controller or a compute node (the role would start slurmctld or slurmd there
too); a login node's name is no Slurm node name, and it needs no GPU. The group is optional: empty or absent,
nothing changes. The specs and defaults are the roles' real files.
"""
import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as pf

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
BASE = {'slurm_controller': ['ctl'], 'slurm_compute': ['gpu-01', 'gpu-02'], 'gpu_nodes': ['gpu-01', 'gpu-02'], 'slurmdbd': ['ctl']}


def _load(path):
    with open(os.path.join(ROOT, 'roles', 'slurm', path)) as handle:
        return yaml.safe_load(handle) or {}


OPTIONS = _load('meta/argument_specs.yml')['argument_specs']['main']['options']


def _values(**changes):
    found = dict((k, v) for k, v in _load('defaults/main.yml').items() if not (isinstance(v, str) and '{{' in v))
    found.update(changes)
    return found


def _groups(**extra):
    groups = dict(BASE, **extra)
    groups['all'] = sorted(set(sum((v for k, v in groups.items() if k != 'all'), [])))
    return groups


def _problems(host, groups, **changes):
    return pf.role_problems('slurm', host, OPTIONS, _values(**changes), groups)


def test_the_group_names_are_fixed_not_role_variables():
    assert pf.LOGIN_GROUP == 'slurm_login'
    assert not [name for name in OPTIONS if name.endswith('_group')]
    assert not [name for name in _load('defaults/main.yml') if name.endswith('_group')]


@pytest.mark.parametrize('groups', [
    _groups(),                                   # absent
    _groups(slurm_login=[]),                     # empty
    _groups(slurm_login=['login']),              # a login node of its own
    _groups(slurm_login=['login-01.example.org', 'login_2']),  # names Slurm would refuse as node names: not node names
])
@pytest.mark.parametrize('host', ['ctl', 'gpu-01', 'login', 'login-01.example.org', 'login_2'])
def test_a_valid_login_group_gives_no_problem(groups, host):
    assert _problems(host, groups) == []


@pytest.mark.parametrize('host, groups, other, what, role', [
    ('gpu-01', _groups(slurm_login=['login', 'gpu-01']), 'slurm_login and slurm_compute', 'a compute node (slurmd)', 'compute node'),
    ('ctl', _groups(slurm_login=['ctl']), 'slurm_login and slurm_controller', 'the controller (slurmctld)', 'controller'),
])
def test_a_login_node_that_is_also_the_controller_or_a_compute_node_is_refused(host, groups, other, what, role):
    found = _problems(host, groups)
    assert found == ['this host is in inventory groups %s, %s; expected a login node in slurm_login only (client commands, no Slurm '
                     'daemon): take it out of one of the two groups (the %s can submit jobs already)' % (other, what, role)]
    # the group's other hosts are fine
    for other in groups['slurm_login']:
        if other != host:
            assert _problems(other, groups) == [], other


def test_a_login_node_in_a_gpu_node_and_compute_group_is_refused_once():
    groups = _groups(slurm_login=['gpu-02'])
    found = _problems('gpu-02', groups)
    assert len(found) == 1 and 'slurm_login and slurm_compute' in found[0], found


def test_other_groups_do_not_count():
    groups = dict(_groups(), submit=['head'], ctl_group=['head'])
    assert _problems('head', groups) == []


def test_the_report_names_the_host_and_the_role():
    groups = _groups(slurm_login=['gpu-01', 'gpu-02'])
    problems = [(host, 'slurm', line) for host in ('gpu-01', 'gpu-02') for line in _problems(host, groups)]
    lines = pf.report([], problems)
    assert len(lines) == 1 and lines[0].startswith('gpu-[01-02]: this host is in inventory groups slurm_login and slurm_compute') and \
        lines[0].endswith('(role gpucluster.bringup.slurm)'), lines


def test_site_roles_reach_the_login_nodes():
    roles = dict(pf.SITE_ROLES)
    for role in ('munge', 'slurm', 'enroot', 'pyxis'):
        assert 'slurm_login' in roles[role], role
    for role in ('nvml', 'mig', 'slurmdbd', 'slurm_healthcheck'):
        assert 'slurm_login' not in roles[role], role


def test_the_playbooks_that_reach_the_login_nodes_name_the_group():
    def hosts(name):
        with open(os.path.join(ROOT, 'playbooks', name)) as handle:
            return [play.get('hosts') for play in yaml.safe_load(handle) if 'hosts' in play]
    assert 'slurm_login' in hosts('site.yml')[0].split(':')  # the facts play
    for name in ('slurm_munge.yml', 'slurm_cluster.yml', 'enroot.yml'):
        assert 'slurm_login' in hosts(name)[0].split(':'), name
    with open(os.path.join(ROOT, 'playbooks', 'preflight.yml')) as handle:
        roles = dict((r['name'], r['groups']) for r in yaml.safe_load(handle)[0]['tasks'][0]['gpucluster.bringup.preflight']['roles'])
    assert roles == dict((name, list(groups)) for name, groups in pf.SITE_ROLES)
