"""_preflight: every role's inputs checked against its argument spec (Ansible's validator, plugin_utils/_preflight_spec.py) and
its own rules (module_utils/preflight/_roles.py), in plain lines.

The specs and defaults are the roles' real files (roles/*/meta/argument_specs.yml,
roles/*/defaults/main.yml); each case changes some values of one host and
asserts the exact lines the preflight prints.
"""
import base64
import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._mig_layouts import LAYOUTS
from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as pf
from ansible_collections.gpucluster.bringup.plugins.plugin_utils._preflight_spec import role_value_problems, spec_problems

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
GROUPS = {'all': ['ctl', 'gpu-01', 'gpu-02'], 'slurm_controller': ['ctl'], 'slurm_compute': ['gpu-01', 'gpu-02'],
          'gpu_nodes': ['gpu-01', 'gpu-02'], 'slurmdbd': ['ctl']}


def _load(role, path):
    with open(os.path.join(ROOT, 'roles', role, path)) as handle:
        return yaml.safe_load(handle) or {}


def options(role):
    return _load(role, 'meta/argument_specs.yml')['argument_specs']['main']['options']


def values(role, **changes):
    """The role defaults a host gets, without the templated ones (they are templated by the action), plus ``changes``."""
    found = dict((k, v) for k, v in _load(role, 'defaults/main.yml').items() if not (isinstance(v, str) and '{{' in v))
    found.update(changes)
    return found


def problems(role, host=None, groups=None, **changes):
    # (each role on a host it runs on: slurmdbd on the slurmdbd host)
    host = host or ('ctl' if role == 'slurmdbd' else 'gpu-02')
    return role_value_problems(role, host, options(role), values(role, **changes), GROUPS if groups is None else groups)


SHARING = "slurm_gres_sharing is 'shards'; valid values: none, mps, shard"
PARTITION_KEYS = 'valid keys: default, name, nodes, options'
BAD = [
    # choices
    pytest.param('slurm', dict(slurm_gres_sharing='shards'), [SHARING], id='slurm-sharing-choice'),
    pytest.param('slurm', dict(slurm_install_source='tarball'), ["slurm_install_source is 'tarball'; valid values: distro, local"],
                 id='slurm-install-source-choice'),
    pytest.param('slurm', dict(slurm_hooks_shipped=['mps', 'nhc']), ["slurm_hooks_shipped[1] is 'nhc'; valid values: "
                                                                     'enroot-dirs, gpu-healthcheck, gpu-cleanup, mps'],
                 id='slurm-list-element-choice'),
    pytest.param('slurm', dict(slurm_task_prolog_uuids=False),
                 ["slurm_task_prolog_uuids is false; valid values: mig, all, off (quote it: 'off'; YAML reads an unquoted off as false)"],
                 id='slurm-yaml-off-became-false'),
    pytest.param('pyxis', dict(pyxis_conf=dict(container_scope='node')), ["pyxis_conf.container_scope is 'node'; valid values: global, job"],
                 id='pyxis-scope-choice'),
    pytest.param('enroot', dict(enroot_package_source='ftp'), ["enroot_package_source is 'ftp'; valid values: url, mirror, local, keep"],
                 id='enroot-source-choice'),
    pytest.param('enroot', dict(enroot_slurm_hooks='pmi,mpi'), ["enroot_slurm_hooks[1] is 'mpi'; valid values: pmi, pytorch"],
                 id='enroot-comma-list-converted-then-choice'),
    # types
    pytest.param('slurm', dict(slurm_memory_reserve_mb='2G'), ["slurm_memory_reserve_mb is '2G'; expected a whole number"],
                 id='int-from-unit-string'),
    pytest.param('slurm', dict(slurm_restart_batch_size=2.5), ['slurm_restart_batch_size is 2.5; expected a whole number'],
                 id='int-from-fraction'),
    pytest.param('slurm', dict(slurm_gres_enabled='maybe'), ["slurm_gres_enabled is 'maybe'; expected a boolean (true/false)"],
                 id='bool-from-word'),
    pytest.param('slurm', dict(slurm_conf_overrides=['SchedulerType=sched/builtin']),
                 ["slurm_conf_overrides is ['SchedulerType=sched/builtin']; expected a dictionary"], id='dict-given-a-list'),
    pytest.param('slurm', dict(slurm_cluster_name={'name': 'x'}), ["slurm_cluster_name is {'name': 'x'}; expected a string"],
                 id='str-given-a-dict'),
    pytest.param('slurm', dict(slurm_partitions={'name': 'batch'}), ["slurm_partitions is {'name': 'batch'}; expected a list"],
                 id='list-given-a-dict'),
    pytest.param('slurm', dict(slurm_local_packages=[['a.deb']]), ["slurm_local_packages[0] is ['a.deb']; expected a string"],
                 id='list-element-type'),
    pytest.param('mig', dict(mig_slurm_wait={'drain_timeout': None}, mig_layout='all-1g'), [], id='null-optional-is-allowed'),
    # sub-options
    pytest.param('slurm', dict(slurm_partitions=[{'name': 'batch', 'nodez': 'ALL'}]),
                 ["slurm_partitions[0] has the unknown key 'nodez'; " + PARTITION_KEYS], id='partition-unknown-key'),
    pytest.param('slurm', dict(slurm_partitions=[{'nodes': 'ALL'}]), ['slurm_partitions[0] lacks name (required)'],
                 id='partition-without-name'),
    pytest.param('slurm', dict(slurm_partitions=[{'name': 'a', 'nodes': 'ALL', 'default': 'often'}]),
                 ["slurm_partitions[0].default is 'often'; expected a boolean (true/false)"], id='partition-default-type'),
    pytest.param('slurm', dict(slurm_partitions=[{'name': 'a', 'options': 'MaxTime=1'}]),
                 ["slurm_partitions[0].options is 'MaxTime=1'; expected a dictionary"], id='partition-options-type'),
    pytest.param('slurm', dict(slurm_partitions=['batch']), ["slurm_partitions[0] is 'batch'; expected a dictionary"],
                 id='partition-not-a-dict'),
    pytest.param('slurm', dict(slurm_hooks_extra=[{'src': 'x', 'phase': 'prologue', 'name': '60-all-x'}]),
                 ["slurm_hooks_extra[0].phase is 'prologue'; valid values: prolog, epilog"], id='hook-phase-choice'),
    pytest.param('slurm', dict(slurm_hooks_extra=[{'src': 'x', 'phase': 'prolog'}]), ['slurm_hooks_extra[0] lacks name (required)'],
                 id='hook-without-name'),
    # role rules
    pytest.param('slurm', dict(slurm_partitions=[{'name': 'a', 'default': True}, {'name': 'a', 'default': True}]),
                 ["slurm_partitions[1].name 'a' is defined twice", 'slurm_partitions: 2 partitions are marked default; at most one may be'],
                 id='partition-twice-and-two-defaults'),
    pytest.param('slurm', dict(slurm_partitions=[{'name': 'DEFAULT'}]),
                 ["slurm_partitions[0].name is 'DEFAULT'; use letters, digits, \".\", \"_\", \"-\" (and not DEFAULT)"], id='partition-reserved-name'),
    pytest.param('slurm', dict(slurm_partitions=[{'name': 'a', 'nodes': []}]),
                 ['slurm_partitions[0].nodes is empty; name ALL, a hostlist or a list of node names'], id='partition-no-nodes'),
    pytest.param('slurm', dict(slurm_partitions=[]),
                 ['slurm_partitions is empty; Slurm needs at least one partition ({name, nodes, default, options})'], id='no-partition'),
    pytest.param('slurm', dict(slurm_install_source='local'),
                 ['slurm_install_source is "local" but slurm_local_package_dir is empty: name the directory (on the Ansible controller) '
                  'that holds the Slurm package files'], id='slurm-local-without-dir'),
    pytest.param('slurm', dict(slurm_hooks_extra=[{'src': 'x', 'phase': 'prolog', 'name': 'check'}]),
                 ["slurm_hooks_extra[0].name is 'check'; expected NN-class-name (e.g. 60-all-site-check)"], id='hook-name-form'),
    pytest.param('mig', dict(mig_layout='all-balancd', mig_layouts_custom={'site': [{'gpu': 0}]}),
                 ["mig_layout is 'all-balancd', not a shipped layout or one of mig_layouts_custom; valid layouts: %s, site "
                  '(or "" to leave MIG alone)' % ', '.join(sorted(LAYOUTS))], id='mig-layout-not-in-catalogue'),
    pytest.param('mig', dict(mig_layout='site', mig_layouts_custom={'site': []}),
                 ["layout 'site' is []; a layout is a non-empty list of GPU entries ({gpu, model, mig, instances}, the gpus option of "
                  'gpucluster.bringup.nvidia_mig)'], id='mig-layout-empty'),
    pytest.param('mig', dict(mig_layout='all-1g', mig_layouts_custom=[]), ['mig_layouts_custom is []; expected a dictionary'],
                 id='mig-custom-type'),
    pytest.param('munge', dict(munge_key_b64='c2hvcnQ='),
                 ['munge_key_b64 decodes to 5 bytes; munged needs at least 32 (mungekey --create makes 1024)'], id='munge-short-key'),
    pytest.param('slurmdbd', dict(slurmdbd_conf={'StorageLoc': 'acct-db'}, slurmdbd_storage_user_host='a b'),
                 ["slurmdbd_conf.StorageLoc is 'acct-db'; use letters, digits and '_'",
                  "slurmdbd_storage_user_host is 'a b'; expected a host name, an address or '%'"], id='slurmdbd-names'),
    pytest.param('slurmdbd', dict(slurmdbd_users=[{'accounts': ['a']}]), ['slurmdbd_users[0] lacks name (required)'],
                 id='slurmdbd-user-without-name'),
    pytest.param('slurmdbd', dict(slurmdbd_package_state='absent'), ["slurmdbd_package_state is 'absent'; valid values: present, latest"],
                 id='slurmdbd-package-state'),
    pytest.param('enroot', dict(enroot_package_source='local'),
                 ["enroot_package_source is 'local' but enroot_local_dir is empty; set it (a directory on the Ansible controller "
                  'holding the release .deb files)'], id='enroot-local-without-dir'),
    pytest.param('enroot', dict(enroot_conf={'ENROOT_ZSTD_OPTIONS': '-1', 'zstd': 1}),
                 ['enroot_conf keys must look like ENROOT_NAME (upper case, enroot reads no other keys), these do not: zstd'],
                 id='enroot-extra-key'),
    pytest.param('enroot', dict(enroot_hooks_disabled=['10-cgroups.sh', '/etc/enroot/hooks.d/99-mellanox.sh', '98-nvidia']),
                 ["enroot_hooks_disabled names '/etc/enroot/hooks.d/99-mellanox.sh', '98-nvidia'; expected the file names of hooks in "
                  "/etc/enroot/hooks.d (such as 10-cgroups.sh or 99-mellanox.sh: no directory, ending in .sh)"], id='enroot-hooks-disabled'),
    pytest.param('enroot', dict(enroot_hooks_disabled=['10-cgroups.sh', '99-mellanox.sh']), [], id='enroot-hooks-disabled-ok'),
    pytest.param('enroot', dict(enroot_shared_dir_mode='rwx'), ["enroot_shared_dir_mode is 'rwx'; expected an octal mode such as \"1777\""],
                 id='enroot-mode'),
    pytest.param('pyxis', dict(pyxis_conf=dict(importer='bin/imp', runtime_path='/run/py xis')),
                 ["pyxis_conf.importer must be an absolute path to an executable on the nodes, got 'bin/imp'",
                  "pyxis_conf.runtime_path must be an absolute path without spaces, got '/run/py xis'"], id='pyxis-paths'),
    pytest.param('slurm_healthcheck', dict(gpucluster_node_type={'gpu_model': 'H100', 'gpu_count': '8'}), [], id='node-type-str-to-int-accepted'),
    # the model against the catalogue is the site's check (it has the inventory's preflight_gpu_models)
    pytest.param('validate', dict(gpucluster_node_type={'gpu_model': 'H10O', 'gpu_count': -8, 'hcas': ['mlx5 0']}),
                 ['gpucluster_node_type.gpu_count is -8; expected the number of GPUs of this node type (a whole number, 0 or more)',
                  "gpucluster_node_type.hcas[0] is 'mlx5 0'; expected an InfiniBand device name, such as mlx5_0"], id='node-type-values'),
    pytest.param('slurm_healthcheck', dict(gpucluster_node_type={'gpu_model': 'H100', 'gpus': 8}),
                 ["gpucluster_node_type has the unknown key 'gpus'; valid keys: gpu_count, gpu_model, hcas, name, nvlink_domain",
                  'gpucluster_node_type lacks gpu_count (required)'], id='node-type-keys'),
    pytest.param('slurm_healthcheck', dict(slurm_healthcheck_interval='often'),
                 ["slurm_healthcheck_interval is 'often'; expected a whole number"], id='healthcheck-int'),
]


@pytest.mark.parametrize('role, changes, expected', BAD)
def test_role_problems(role, changes, expected):
    assert problems(role, **changes) == expected


def test_mig_needs_a_controller_for_slurm_integration():
    groups = dict(GROUPS, slurm_controller=[])
    assert problems('mig', groups=groups, mig_layout='all-1g', host='gpu-01') == [
        'mig_slurm_integration is on and gpu-01 is in slurm_compute, but inventory group slurm_controller has no host to run scontrol on; '
        'add the controller or set mig_slurm_integration: false']
    assert problems('mig', groups=groups, mig_layout='all-1g', mig_slurm_integration=False) == []


def test_the_munge_key_source_is_the_controller_group():
    assert problems('munge', groups=dict(GROUPS, slurm_controller=[])) == [
        'inventory group slurm_controller has no hosts; its first host holds the munge key']
    assert problems('munge') == []


def test_slurmdbd_group_must_hold_one_host():
    assert problems('slurmdbd', groups=dict(GROUPS, slurmdbd=['a', 'b']), host='a') == [
        'inventory group slurmdbd must hold exactly one host (where slurmdbd runs), it holds 2: a, b']


def test_slurmdbd_runs_on_the_slurmdbd_host():
    assert problems('slurmdbd', host='gpu-01') == ['run gpucluster.bringup.slurmdbd on the slurmdbd host ctl (group slurmdbd), not on gpu-01']
    assert problems('slurmdbd', host='ctl') == []


@pytest.mark.parametrize('adopt, cgroups, expected', [
    (True, False, ['slurm_pam_slurm_adopt needs slurm_cgroup_enabled (proctrack/cgroup and task/cgroup hold the adopted ssh sessions); '
                   'slurm_cgroup_enabled is false here']),
    ('yes', 'no', ['slurm_pam_slurm_adopt needs slurm_cgroup_enabled (proctrack/cgroup and task/cgroup hold the adopted ssh sessions); '
                   'slurm_cgroup_enabled is false here']),
    (True, True, []),
    (False, False, []),
])
def test_pam_slurm_adopt_needs_cgroups(adopt, cgroups, expected):
    assert problems('slurm', slurm_pam_slurm_adopt=adopt, slurm_cgroup_enabled=cgroups) == expected


@pytest.mark.parametrize('values, expected', [
    (dict(slurm_configless=True), []),
    (dict(slurm_configless=True, slurm_conf_overrides={'SlurmctldParameters': 'enable_configless,idle_on_node_suspend'}), []),
    (dict(slurm_configless=True, slurm_conf_overrides={'slurmctldparameters': 'idle_on_node_suspend'}),
     ['slurm_configless is true but slurm_conf_overrides sets slurmctldparameters=idle_on_node_suspend without enable_configless: '
      'slurmctld would refuse to serve the files; add enable_configless to it (comma-separated)']),
    (dict(slurm_configless=True, slurm_conf_overrides={'SlurmctldParameters': None}),
     ['slurm_configless is true but slurm_conf_overrides sets SlurmctldParameters=(removed) without enable_configless: '
      'slurmctld would refuse to serve the files; add enable_configless to it (comma-separated)']),
    (dict(slurm_configless=False, slurm_conf_overrides={'SlurmctldParameters': 'idle_on_node_suspend'}), []),
    (dict(slurm_configless=True, slurm_configless_server=['ctl', 'ctl2:6817']), []),
    (dict(slurm_configless=True, slurm_configless_server=['dns']), []),
    (dict(slurm_configless=True, slurm_configless_server=['dns', 'ctl']),
     ["slurm_configless_server is [dns] (the DNS SRV record) or a list of host[:port]; got ['dns', 'ctl']"]),
    (dict(slurm_configless=True, slurm_configless_server=['ctl:99999']),
     ['slurm_configless_server: "ctl:99999" is not host[:port] (e.g. ctl or ctl:6817), nor dns']),
    # a port from 1 to 65535
    (dict(slurm_configless=True, slurm_configless_server=['ctl:1', 'ctl:65535']), []),
    (dict(slurm_configless=True, slurm_configless_server=['ctl:0', 'ctl:65536']),
     ['slurm_configless_server: "ctl:0" is not host[:port] (e.g. ctl or ctl:6817), nor dns',
      'slurm_configless_server: "ctl:65536" is not host[:port] (e.g. ctl or ctl:6817), nor dns']),
    (dict(slurm_configless=True, slurm_configless_server=['http://ctl']),
     ['slurm_configless_server: "http://ctl" is not host[:port] (e.g. ctl or ctl:6817), nor dns']),
])
def test_configless_settings(values, expected):
    assert problems('slurm', **values) == expected


TREE_SOURCES = ('slurm_topology is tree: give the fabric as ibnetdiscover prints it with one of slurm_topology_settings.ibnetdiscover_src '
                '(a file on the Ansible controller) or slurm_topology_settings.ibnetdiscover_host (an inventory host to run ibnetdiscover on); ')


@pytest.mark.parametrize('values, expected', [
    (dict(slurm_topology='none'), []),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_src='/srv/fabric.txt')), []),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_host='gpu-01')), []),
    (dict(slurm_topology='tree'), [TREE_SOURCES + 'neither is set']),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_src='/srv/fabric.txt', ibnetdiscover_host='gpu-01')),
     [TREE_SOURCES + 'both are set']),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_host='gpu-01', ibnetdiscover_command=['ibnetdiscover', '-p'])), []),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_host='gpu-01', ibnetdiscover_command=[])),
     ['slurm_topology_settings.ibnetdiscover_command is []; expected the command (argv) to run on gpu-01, a non-empty list of non-empty '
      'words such as [ibnetdiscover]']),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_host='gpu-01', ibnetdiscover_command=['ibnetdiscover', ''])),
     ["slurm_topology_settings.ibnetdiscover_command is ['ibnetdiscover', '']; expected the command (argv) to run on gpu-01, a non-empty "
      'list of non-empty words such as [ibnetdiscover]']),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_host='ib-01')),
     ["slurm_topology_settings.ibnetdiscover_host is 'ib-01', which is not a host of the inventory"]),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_src='f', name_regex='^(?P<name>\\S+) ',
                                                              name_map={'a': 'b'})),
     ['slurm_topology_settings.name_map and slurm_topology_settings.name_regex are both set; give one of them']),
    (dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_src='f', name_regex='(unclosed')),
     ["slurm_topology_settings.name_regex '(unclosed' is not a regular expression: missing ), unterminated subpattern at position 0"]),
    (dict(slurm_topology='block', slurm_topology_settings=dict(block_sizes=[18, 36, 72])), []),
    (dict(slurm_topology='block', slurm_topology_settings=dict(block_sizes=[18, 54])),
     ['slurm_topology_settings.block_sizes [18, 54]: 54 is not the base 18 times a power of two (valid next sizes: 36, 72, 144, 288)']),
    (dict(slurm_topology='block', slurm_topology_settings=dict(block_sizes=[36, 18])),
     ['slurm_topology_settings.block_sizes [36, 18]: 18 does not grow past 36; each size must be larger than the one before it']),
    # block sizes matter to block only
    (dict(slurm_topology='none', slurm_topology_settings=dict(block_sizes=[36, 18])), []),
])
def test_topology_settings(values, expected):
    assert problems('slurm', **values) == expected


SECRET = 'hunter2 secret'
SECRETS = [
    pytest.param('slurmdbd', dict(slurmdbd_storage_pass=SECRET),
                 ['slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, at '
                  "least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); the value is not shown"],
                 id='db-password-rules'),
    pytest.param('slurmdbd', dict(slurmdbd_storage_pass=[SECRET]), ['slurmdbd_storage_pass is a list; expected a string (the value is not shown)'],
                 id='db-password-type'),
    pytest.param('slurmdbd', dict(slurmdbd_conf={'StoragePass': SECRET}),
                 ['slurmdbd_conf.StoragePass: set the database password with slurmdbd_storage_pass (the value is not shown)'],
                 id='db-password-in-overrides'),
    pytest.param('enroot', dict(enroot_ngc_api_key={'key': SECRET}), ['enroot_ngc_api_key is a dictionary; expected a string (the value is not shown)'],
                 id='ngc-key-type'),
    pytest.param('enroot', dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': 'bot', 'password': SECRET, 'token': SECRET}]),
                 ["enroot_credentials[0] has the unknown key 'token'; valid keys: login, machine, password"], id='credentials-unknown-key'),
    pytest.param('enroot', dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': 'bot', 'password': [SECRET]}]),
                 ['enroot_credentials[0].password is a list; expected a string (the value is not shown)'], id='credentials-password-type'),
    pytest.param('enroot', dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': SECRET}]),
                 ['enroot_credentials[0] (machine nvcr.io) needs the keys machine, login and password, all non-empty'],
                 id='credentials-missing-password'),
    pytest.param('munge', dict(munge_key_b64=['c2hvcnQ=', SECRET]), ['munge_key_b64 is a list; expected a string (the value is not shown)'],
                 id='munge-key-type'),
]


@pytest.mark.parametrize('role, changes, expected', SECRETS)
def test_secrets_are_named_never_shown(role, changes, expected):
    found = problems(role, **changes)
    assert found == expected
    assert not any('hunter2' in line for line in found)


@pytest.mark.parametrize('name, spec, secret', [
    ('slurmdbd_storage_pass', {}, True),
    ('enroot_ngc_api_key', {}, True),
    ('vault_token', {}, True),
    ('site_secret', {}, True),
    ('registry_credentials', {}, True),
    ('munge_key_b64', {'no_log': True}, True),
    ('anything', {'no_log': True}, True),
    ('munge_key_path', {}, False),
    ('munge_key_src', {}, False),
    ('slurm_gres_sharing', {}, False),
])
def test_is_secret(name, spec, secret):
    assert pf.is_secret(name, spec) is secret


@pytest.mark.parametrize('role', [name for name, groups in pf.SITE_ROLES])
def test_defaults_give_no_problem(role):
    assert problems(role) == []


def test_values_not_templated_are_not_checked():
    # the action leaves out what needs facts; the rules that need those values are not made
    only = {'slurm_install_source': 'local'}
    assert pf.role_problems('slurm', 'gpu-01', options('slurm'), only, GROUPS) == []
    assert pf.role_problems('mig', 'gpu-01', options('mig'), {'mig_layout': 'nosuch'}, GROUPS) == []
    assert spec_problems(options('slurm'), {}) == ([], {})


def test_report_groups_hosts_with_the_same_problem():
    lines = pf.report(['inventory group slurm_compute is empty: put at least one host in it (slurmd runs there)'], [
        ('gpu-03', 'slurm', SHARING), ('gpu-02', 'slurm', SHARING), ('gpu-01', 'slurm', SHARING),
        ('gpu-02', 'mig', "mig_layout is 'x', not a layout"), ('gpu-01', 'slurm', SHARING)])
    assert lines == [
        'inventory group slurm_compute is empty: put at least one host in it (slurmd runs there)',
        'gpu-[01-03]: %s (role gpucluster.bringup.slurm)' % SHARING,
        "gpu-02: mig_layout is 'x', not a layout (role gpucluster.bringup.mig)",
    ]
    assert pf.report([], [('n10', 'pyxis', 'm'), ('n9', 'pyxis', 'm'), ('a', 'pyxis', 'm')]) == ['a,n[9-10]: m (role gpucluster.bringup.pyxis)']
    assert pf.failure_message(lines[:1]) == ('the inventory has 1 problem, nothing was changed:\n'
                                             'inventory group slurm_compute is empty: put at least one host in it (slurmd runs there)')
    assert pf.failure_message(lines).startswith('the inventory has 3 problems, nothing was changed:\ninventory group')


# === edge cases (formerly test_preflight_edges.py): _preflight edge cases: conversions, the value rendering, secrets in nested options, each role rule's
# branches.

NOT_SHOWN = '(the value is not shown)'


# --- show -------------------------------------------------------------------------------

@pytest.mark.parametrize('value, expected', [
    (True, 'true'),
    (False, 'false'),
    (None, 'null'),
    (0, '0'),
    ('', "''"),
    (['a', 1], "['a', 1]"),
    ('x' * 78, "'" + 'x' * 78 + "'"),                  # 80 characters: shown whole
    ('x' * 79, "'" + 'x' * 76 + '...'),                # 81 characters: cut to 80
    (list(range(100)), repr(list(range(100)))[:77] + '...'),
])
def test_show(value, expected):
    assert pf.show(value) == expected
    assert len(pf.show(value)) <= 80


# --- role rules through the roles' real specs -------------------------------------------------

@pytest.mark.parametrize('role, host, groups, changes, expected', [
    # munge
    ('munge', 'gpu-02', None, dict(munge_key_b64=''), []),
    # mig: the catalogue, its entries, the controller for the Slurm integration
    ('mig', 'gpu-02', None, dict(mig_layout='x', mig_layouts_custom={}),
     ['mig_layout is \'x\', not a shipped layout or one of mig_layouts_custom; valid layouts: %s (or "" to leave MIG alone)'
      % ', '.join(sorted(LAYOUTS))]),
    # a shipped layout is one, the site's too
    ('mig', 'gpu-02', None, dict(mig_layout='all-3g.40gb', mig_layouts_custom={}), []),
    ('mig', 'gpu-02', None, dict(mig_layout='site', mig_layouts_custom={'site': [{'gpu': 0}, 'all-1g', 3]}),
     ["layout 'site' entry 1 is 'all-1g'; expected a dictionary {gpu, model, mig, instances}",
      "layout 'site' entry 2 is 3; expected a dictionary {gpu, model, mig, instances}"]),
    ('mig', 'gpu-02', None, dict(mig_layout='site', mig_layouts_custom={'site': None}),
     ["layout 'site' is null; a layout is a non-empty list of GPU entries ({gpu, model, mig, instances}, the gpus option of "
      'gpucluster.bringup.nvidia_mig)']),
    ('mig', 'gpu-02', None, dict(mig_layout='site', mig_layouts_custom={'site': [{'gpu': 0}]}), []),
    ('mig', 'ctl', dict(GROUPS, slurm_controller=[]), dict(mig_layout='site', mig_layouts_custom={'site': [{'gpu': 0}]}), []),
    ('mig', 'gpu-02', dict(GROUPS, slurm_controller=[]),
     dict(mig_layout='site', mig_layouts_custom={'site': [{'gpu': 0}]}, mig_slurm_integration='no'), []),
    # slurmdbd: the group, the password length (8 is enough), the names, the entries of qos/accounts/users
    ('slurmdbd', 'ctl', dict(GROUPS, slurmdbd=[]), {},
     ['inventory group slurmdbd must hold exactly one host (where slurmdbd runs), it holds 0']),
    ('slurmdbd', 'ctl', {'all': ['ctl']}, {},
     ['inventory group slurmdbd must hold exactly one host (where slurmdbd runs), it holds 0']),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_storage_pass='abcdefgh'), []),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_storage_pass='abcdefg'),
     ['slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, at '
      "least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); the value is not shown"]),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_storage_pass='abcdefgh#'),
     ['slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, at '
      "least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); the value is not shown"]),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_conf={'storageuser': 'slurm-user', 'StorageLoc': 'acct_2'}),
     ["slurmdbd_conf.storageuser is 'slurm-user'; use letters, digits and '_'"]),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_storage_user_host='10.0.0.%'), []),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_accounting={'jobacctgatherfrequency': -1, 'PriorityWeightAge': -1}),
     ["slurmdbd_accounting.jobacctgatherfrequency is -1; expected a whole number, 0 or more (seconds; 0 turns the sampling off)"]),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_accounting={'JobAcctGatherFrequency': 0, 'PriorityType': None}), []),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_conf={'storagepass': 'x', 'DebugLevel': 'info'}),
     ['slurmdbd_conf.storagepass: set the database password with slurmdbd_storage_pass (the value is not shown)']),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_qos=[{'name': 'normal'}, {'priority': 10}], slurmdbd_accounts=[{'name': ''}],
                                   slurmdbd_users=[{'name': 'alice'}, {'name': 7}]),
     ['slurmdbd_qos[1] lacks name (required)', 'slurmdbd_accounts[0] lacks name (required)', 'slurmdbd_users[1] lacks name (required)']),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_qos=[{'name': 'normal'}], slurmdbd_accounts=[{'name': 'ml'}], slurmdbd_users=[{'name': 'alice'}]),
     []),
    # slurm: partition nodes of the wrong kind or empty, a hook name of the right form
    ('slurm', 'gpu-02', None, dict(slurm_partitions=[{'name': 'a', 'nodes': 5}, {'name': 'b', 'nodes': {'x': 1}}]),
     ['slurm_partitions[0].nodes is 5; expected ALL, a hostlist (gpu-[01-04]) or a list of node names',
      "slurm_partitions[1].nodes is {'x': 1}; expected ALL, a hostlist (gpu-[01-04]) or a list of node names"]),
    ('slurm', 'gpu-02', None, dict(slurm_partitions=[{'name': 'a', 'nodes': ''}]),
     ['slurm_partitions[0].nodes is empty; name ALL, a hostlist or a list of node names']),
    ('slurm', 'gpu-02', None, dict(slurm_partitions=[{'name': 'a', 'nodes': 'gpu-[01-02]', 'default': True}, {'name': 'b', 'nodes': ['gpu-01']}]),
     []),
    ('slurm', 'gpu-02', None, dict(slurm_hooks_extra=[{'src': 'x', 'phase': 'prolog', 'name': '60-all-site-check'},
                                                      {'src': 'y', 'phase': 'epilog', 'name': '6-all-x'}]),
     ["slurm_hooks_extra[1].name is '6-all-x'; expected NN-class-name (e.g. 60-all-site-check)"]),
    # enroot: each package source needs its location
    ('enroot', 'gpu-02', None, dict(enroot_package_source='url', enroot_release_url=''),
     ["enroot_package_source is 'url' but enroot_release_url is empty; set it (the base URL of the release assets)"]),
    ('enroot', 'gpu-02', None, dict(enroot_package_source='mirror', enroot_mirror_url=''),
     ["enroot_package_source is 'mirror' but enroot_mirror_url is empty; set it (the base URL of a web server holding the release .deb files)"]),
    ('enroot', 'gpu-02', None, dict(enroot_package_source='mirror', enroot_mirror_url='http://mirror/enroot', enroot_release_url=''), []),
    ('enroot', 'gpu-02', None, dict(enroot_package_source='url', enroot_release_url='https://x', enroot_mirror_url=''), []),
    ('enroot', 'gpu-02', None, dict(enroot_conf={'zstd': 1, 'ENROOT_SQUASH_OPTIONS': '-comp lz4 -exit-on-error', 'Enroot_x': 2}),
     ['enroot_conf keys must look like ENROOT_NAME (upper case, enroot reads no other keys), these do not: zstd, Enroot_x']),
    # enroot credentials: complete entries pass, the machine is named or <missing>
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': '$oauthtoken', 'password': 'hunter2'}]), []),
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'machine': 'nvcr.io', 'password': 'hunter2'}]),
     ['enroot_credentials[0] (machine nvcr.io) needs the keys machine, login and password, all non-empty']),
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'login': 'bot', 'password': 'hunter2'}]),
     ['enroot_credentials[0] (machine <missing>) needs the keys machine, login and password, all non-empty']),
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': 'bot', 'password': 'hunter2'},
                                                        {'machine': '', 'login': 'bot', 'password': 'hunter2'}]),
     ['enroot_credentials[1] (machine <missing>) needs the keys machine, login and password, all non-empty']),
    # a key that is not secret by name is still hidden inside the secret list (enroot_credentials has no_log)
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': ['hunter2'], 'password': 'x'}]),
     ['enroot_credentials[0].login is a list; expected a string (the value is not shown)']),
    ('enroot', 'gpu-02', None, dict(enroot_shared_dir_mode='0755'), []),
    # pyxis: an absolute importer is fine
    ('pyxis', 'gpu-02', None, dict(pyxis_conf=dict(importer='/usr/local/bin/importer', runtime_path='/run/pyxis')), []),
    ('pyxis', 'gpu-02', None, dict(pyxis_conf=dict(runtime_path='run/pyxis')),
     ["pyxis_conf.runtime_path must be an absolute path without spaces, got 'run/pyxis'"]),
])
def test_role_rules(role, host, groups, changes, expected):
    assert problems(role, host=host, groups=groups, **changes) == expected


# --- role rules on values of the wrong kind (the argument spec reports those; here without a spec) ---

@pytest.mark.parametrize('role, values, groups, expected', [
    # the inventory groups may be missing altogether
    ('munge', {}, None, ['inventory group slurm_controller has no hosts; its first host holds the munge key']),
    ('slurmdbd', {}, [],
     ['inventory group slurmdbd must hold exactly one host (where slurmdbd runs), it holds 0']),
    # the MIG rule needs the site's layouts as a dictionary (the action leaves out what it cannot template)
    ('mig', {'mig_layout': 'x'}, GROUPS, []),
    ('mig', {'mig_layout': 'x', 'mig_layouts_custom': ['x']}, GROUPS, []),
    ('mig', {'mig_layout': 'x', 'mig_layouts_custom': {'x': [{'gpu': 0}]}}, GROUPS, []),
    # entries that are not dictionaries are skipped, the following ones still checked
    ('slurm', {'slurm_partitions': ['batch', {'name': 'DEFAULT', 'nodes': 'ALL'}]}, GROUPS,
     ['slurm_partitions[1].name is \'DEFAULT\'; use letters, digits, ".", "_", "-" (and not DEFAULT)']),
    ('slurm', {'slurm_partitions': [{'nodes': 'ALL'}, {'name': 'a', 'nodes': None}]}, GROUPS, []),
    ('slurm', {'slurm_hooks_extra': ['60-all-x', {'src': 'x'}, {'name': 60}, {'name': 'bad'}]}, GROUPS,
     ["slurm_hooks_extra[3].name is 'bad'; expected NN-class-name (e.g. 60-all-site-check)"]),
    ('slurmdbd', {'slurmdbd_qos': ['normal', {'name': 'high'}], 'slurmdbd_users': [['alice'], {}]}, GROUPS,
     ['slurmdbd_users[1] lacks name (required)']),
    ('enroot', {'enroot_credentials': ['nvcr.io', {'machine': 7, 'login': 'bot', 'password': 'x'}]}, GROUPS,
     ['enroot_credentials[1] (machine <missing>) needs the keys machine, login and password, all non-empty']),
    ('enroot', {'enroot_package_source': 'url'}, GROUPS, []),
    ('pyxis', {'pyxis_conf': {'importer': ''}}, GROUPS, []),
    ('slurm_healthcheck', {'anything': 'at all'}, GROUPS, []),
])
def test_role_rules_skip_values_of_the_wrong_kind(role, values, groups, expected):
    assert pf.role_problems(role, 'ctl', {}, values, groups) == expected


# --- report and failure_message -----------------------------------------------------------------

@pytest.mark.parametrize('inventory, found, expected', [
    ([], [], []),
    (['inventory group slurmdbd is empty'], [], ['inventory group slurmdbd is empty']),
    # natural order: gpu-2 before gpu-10
    ([], [('gpu-10', 'slurm', 'm'), ('gpu-2', 'slurm', 'm'), ('gpu-1', 'slurm', 'm')], ['gpu-[1-2,10]: m (role gpucluster.bringup.slurm)']),
    # names a hostlist cannot hold: listed with commas
    ([], [('node b', 'mig', 'm'), ('node a', 'mig', 'm'), ('c', 'mig', 'm')], ['c, node a, node b: m (role gpucluster.bringup.mig)']),
    # the same message of two roles: two lines, in order of first appearance
    ([], [('b', 'slurm', 'm'), ('a', 'enroot', 'm'), ('a', 'slurm', 'm')],
     ['a,b: m (role gpucluster.bringup.slurm)', 'a: m (role gpucluster.bringup.enroot)']),
])
def test_report(inventory, found, expected):
    assert pf.report(inventory, found) == expected


@pytest.mark.parametrize('lines, expected', [
    (['one'], 'the inventory has 1 problem, nothing was changed:\none'),
    (['one', 'two'], 'the inventory has 2 problems, nothing was changed:\none\ntwo'),
    ([], 'the inventory has 0 problems, nothing was changed:\n'),
])
def test_failure_message(lines, expected):
    assert pf.failure_message(lines) == expected


@pytest.mark.parametrize('strategy, bad', [
    ('linear', False),
    ('ansible.builtin.linear', False),
    ('debug', False),
    ('mitogen_linear', False),
    ('my_site_strategy', False),
    ('', False),
    (None, False),
    ('free', True),
    ('ansible.builtin.free', True),
    ('host_pinned', True),
    ('ansible.builtin.host_pinned', True),
    ('mitogen_free', True),
    ('mitogen_host_pinned', True),
    ('freely', False),
])
def test_strategy_problem(strategy, bad):
    problem = pf.strategy_problem(strategy)
    if not bad:
        assert problem is None
        return
    assert problem.startswith("the play's strategy is %r" % strategy)
    assert 'linear, or mitogen_linear' in problem
    assert 'any_errors_fatal' in problem


def test_options_failure_message():
    assert pf.options_failure_message(['a']) == 'the preflight task has 1 bad option, nothing was checked or changed:\na'
    assert pf.options_failure_message(['a', 'b']) == 'the preflight task has 2 bad options, nothing was checked or changed:\na\nb'


# --- numbers in range, partition nodes, the fabric file -------------------------------------------------------------

@pytest.mark.parametrize('role, host, changes, expected', [
    # boundaries: the least value passes, one below does not; a port's most passes, one above does not
    ('slurm', 'gpu-02', dict(slurm_large_system_min_nodes=1, slurm_memory_reserve_mb=0, slurm_restart_batch_size='1'), []),
    ('slurm', 'gpu-02', dict(slurm_large_system_min_nodes=0),
     ['slurm_large_system_min_nodes is 0; expected a whole number, 1 or more (the compute host count from which the large-cluster '
      'settings apply)']),
    ('slurmdbd', 'ctl', dict(slurmdbd_port=65535, slurmdbd_conf={'StoragePort': 1}), []),
    ('slurmdbd', 'ctl', dict(slurmdbd_port=65536, slurmdbd_conf={'StoragePort': '-1'}),
     ['slurmdbd_port is 65536; expected a TCP port, a whole number from 1 to 65535',
      "slurmdbd_conf.StoragePort is '-1'; expected a TCP port, a whole number from 1 to 65535"]),
    ('slurm_healthcheck', 'gpu-02', dict(slurm_healthcheck_settings=dict(periodic_budget=0.01, ib_rate_gbps=None),
                                         slurm_healthcheck_interval=0), []),
    ('slurm_healthcheck', 'gpu-02', dict(slurm_healthcheck_settings=dict(periodic_budget='-1.5', ib_rate_gbps=0)),
     ['slurm_healthcheck_settings.ib_rate_gbps is 0.0; expected a number of Gb/s above 0',
      "slurm_healthcheck_settings.periodic_budget is -1.5; expected a number of seconds above 0"]),
    ('slurm_healthcheck', 'gpu-02', dict(slurm_healthcheck_settings=dict(xid_drain='48,0')),
     ["slurm_healthcheck_settings.xid_drain[1] is 0; expected a whole number, 1 or more (Xid numbers)"]),
    ('mig', 'gpu-02', dict(mig_slurm_wait={'drain_timeout': 0, 'register_timeout': 0}),
     ['mig_slurm_wait.register_timeout is 0; expected a whole number, 1 or more (seconds to wait for the node to register)']),
    ('enroot', 'gpu-02', dict(enroot_conf={'ENROOT_MAX_PROCESSORS': 0, 'ENROOT_CONNECT_TIMEOUT': -1}),
     ['enroot_conf.ENROOT_CONNECT_TIMEOUT is -1; expected a whole number, 0 or more (seconds)']),
    # a value of the wrong type is named by the argument spec only, not ranged too
    ('slurm', 'gpu-02', dict(slurm_hooks_settings={'timeout': 'soon'}), ["slurm_hooks_settings.timeout is 'soon'; expected a whole number"]),
    # partition nodes as the slurm role expands them
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': 'gpu-[01-'}]),
     ['slurm_partitions[0].nodes is \'gpu-[01-\' (partition a): hostlist "gpu-[01-" has a "[" without a matching "]"; '
      'expected ALL, a hostlist (gpu-[01-04]) or a list of node names']),
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': 'gpu_[01-02]'}]),
     ["slurm_partitions[0].nodes is 'gpu_[01-02]' (partition a): node name 'gpu_01' is not one Slurm accepts: a host name of letters, "
      'digits and "-" (not first or last in a label), labels joined with ".", no "_", spaces, brackets, commas, "=" or "#" (e.g. "gpu-01")']),
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': ' All '}]),
     ["slurm_partitions[0].nodes is ' All ' (partition a); expected ALL (upper case: Slurm reads any other spelling as a node name), "
      'a hostlist (gpu-[01-04]) or a list of node names']),
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': ['gpu-01', 5, 'gpu-02']}]),
     ['slurm_partitions[0].nodes[1] is 5 (partition a); expected a node name (letters, digits, "-" and "."; no brackets: a list holds '
      'the names themselves, a hostlist such as gpu-[01-04] is given as the whole value of nodes)']),
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': 'ctl,gpu-[01-02]'}, {'name': 'b', 'nodes': ['gpu-01', 'ctl']}]), []),
    # the fabric command when the fabric is read on a host
    ('slurm', 'gpu-02', dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_host='gpu-01', ibnetdiscover_command=[''])),
     ["slurm_topology_settings.ibnetdiscover_command is ['']; expected the command (argv) to run on gpu-01, a non-empty list of non-empty words "
      'such as [ibnetdiscover]']),
    # block sizes: a size below 1 is named before the growth rules
    ('slurm', 'gpu-02', dict(slurm_topology='block', slurm_topology_settings=dict(block_sizes=[18, 0])),
     ['slurm_topology_settings.block_sizes[1] is 0; expected a whole number, 1 or more (nodes in a block; the planning base block size first, '
      'e.g. [18, 36, 72])']),
    ('slurm', 'gpu-02', dict(slurm_topology='none', slurm_topology_settings=dict(block_sizes=[-1])), []),
    ('slurm', 'gpu-02', dict(slurm_cluster_name=''),
     ["slurm_cluster_name is ''; expected the name of the cluster (slurm.conf ClusterName, the cluster's name in the accounting "
      'database), e.g. gpucluster']),
])
def test_role_input_ranges_and_forms(role, host, changes, expected):
    assert problems(role, host=host, **changes) == expected


def test_the_fabric_file_is_judged_by_the_callers_controller_file():
    options = _load('slurm', 'meta/argument_specs.yml')['argument_specs']['main']['options']
    values = dict((k, v) for k, v in _load('slurm', 'defaults/main.yml').items() if not (isinstance(v, str) and '{{' in v))
    values.update(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_src='/srv/fabric.txt'))
    asked = []

    def missing(path):
        asked.append(path)
        return 'there is no such file'
    assert pf.role_problems('slurm', 'ctl', options, values, GROUPS, missing) == [
        "slurm_topology_settings.ibnetdiscover_src is '/srv/fabric.txt'; expected a file on the Ansible controller holding ibnetdiscover's "
        'output: there is no such file']
    assert asked == ['/srv/fabric.txt']
    assert pf.role_problems('slurm', 'ctl', options, values, GROUPS, lambda path: '') == []
    # without a judge (the pure rules alone), and when the fabric is not read from a file, nothing is asked
    assert pf.role_problems('slurm', 'ctl', options, values, GROUPS) == []
    values.update(slurm_topology='none')
    assert pf.role_problems('slurm', 'ctl', options, values, GROUPS, missing) == [] and asked == ['/srv/fabric.txt']


LONG = '/srv/' + 'f' * 394   # 399 characters


@pytest.mark.parametrize('key, path, shown, what', [
    ('ibnetdiscover_src', LONG, repr(LONG), "holding ibnetdiscover's output"),
    ('ibnetdiscover_src', LONG + 'x', repr(LONG)[:77] + '...', "holding ibnetdiscover's output"),
    ('node_name_map_src', LONG, repr(LONG), "in ibnetdiscover's --node-name-map format"),
    ('node_name_map_src', LONG + 'x', repr(LONG)[:77] + '...', "in ibnetdiscover's --node-name-map format"),
])
def test_a_controller_file_is_named_in_full_up_to_399_characters(key, path, shown, what):
    options = _load('slurm', 'meta/argument_specs.yml')['argument_specs']['main']['options']
    values = dict((k, v) for k, v in _load('slurm', 'defaults/main.yml').items() if not (isinstance(v, str) and '{{' in v))
    settings = dict({'ibnetdiscover_src': '/srv/fabric.txt'}, **{key: path})
    values.update(slurm_topology='tree', slurm_topology_settings=settings)
    found = pf.role_problems('slurm', 'ctl', options, values, GROUPS, lambda name: 'missing' if name == path else '')
    assert found == ['slurm_topology_settings.%s is %s; expected a file on the Ansible controller %s: missing' % (key, shown, what)]


@pytest.mark.parametrize('changes, expected', [
    (dict(munge_key_b64=base64.b64encode(b'k' * 32).decode(), munge_key_src='files/munge.key'),
     ['munge_key_b64 and munge_key_src are both set (the key is not shown), expected one of them: munge_key_src, a file on the Ansible '
      'controller holding the key, or munge_key_b64, the key as base64; both empty uses the key of the source host']),
    (dict(munge_key_b64=base64.b64encode(b'k' * 32).decode(), munge_key_src=''), []),
    (dict(munge_key_b64='', munge_key_src='files/munge.key'), []),
])
def test_one_munge_key_source(changes, expected):
    assert problems('munge', **changes) == expected
