"""_preflight: every role's inputs checked against its argument spec and its own rules, in plain lines.

The specs and defaults are the roles' real files (roles/*/meta/argument_specs.yml,
roles/*/defaults/main.yml); each case changes some values of one host and
asserts the exact lines the preflight prints.
"""
import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as pf

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
    return pf.role_problems(role, host, options(role), values(role, **changes), GROUPS if groups is None else groups)


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
    pytest.param('mig', dict(mig_layout='all-balancd', mig_layouts={'all-balanced': [{'gpu': 'all'}], 'all-disabled': [{'mig': False}]},
                             mig_layouts_custom={'site': [{'gpu': 0}]}),
                 ["mig_layout is 'all-balancd', not a layout of mig_layouts or mig_layouts_custom; valid layouts: all-balanced, "
                  'all-disabled, site (or "" to leave MIG alone)'], id='mig-layout-not-in-catalogue'),
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
    pytest.param('pyxis', dict(pyxis_conf.importer='bin/imp', pyxis_conf.runtime_path='/run/py xis'),
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


def test_secret_choice_is_not_shown():
    assert pf.check_option('vault_token', 'abc', {'type': 'str', 'choices': ['x', 'y']}) == [
        'vault_token is not one of the valid values: x, y (the value is not shown)']


@pytest.mark.parametrize('role', [name for name, groups in pf.SITE_ROLES])
def test_defaults_give_no_problem(role):
    assert problems(role) == []


def test_values_not_templated_are_not_checked():
    # the action leaves out what needs facts; the rules that need those values are not made
    only = {'slurm_install_source': 'local'}
    assert pf.role_problems('slurm', 'gpu-01', options('slurm'), only, GROUPS) == []
    assert pf.role_problems('mig', 'gpu-01', options('mig'), {'mig_layout': 'nosuch'}, GROUPS) == []
    assert pf.check_values(options('slurm'), {}) == []


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


@pytest.mark.parametrize('value, wanted, expected', [
    ('yes', 'bool', (True, True)),
    ('Off', 'bool', (False, True)),
    (1, 'bool', (True, True)),
    ('12', 'int', (12, True)),
    (3.0, 'int', (3, True)),
    ('1.5', 'float', (1.5, True)),
    (7, 'str', ('7', True)),
    ('a,b', 'list', (['a', 'b'], True)),
    ({'a': 1}, 'list', ({'a': 1}, False)),
    ('a=1', 'dict', ('a=1', False)),
    ([1], 'raw', ([1], True)),
])
def test_convert_like_ansible(value, wanted, expected):
    assert pf.convert(value, wanted) == expected


def test_long_values_are_cut():
    found = pf.check_option('slurm_cluster_name', ['x' * 200], {'type': 'str'})
    assert len(found) == 1 and found[0].endswith("...; expected a string") and len(found[0]) < 140
