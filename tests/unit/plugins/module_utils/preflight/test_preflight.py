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


# === edge cases (formerly test_validation_checks_edges.py): Edges of _validation_checks: whole records and job lists, default arguments, boundaries and exact
# messages.

# What slurm_name says a valid Slurm name is (every message about a bad node/partition name ends with it).
NAME_TEXT = ('letters, digits, "_", "-" and "." (no spaces, commas or "="), starting with a letter or digit, '
             'at most 64 characters')
GRES = '/etc/slurm/gres.conf'
LONG = 'x' * 400


def rec(stage, node, check, status, reason, **extra):
    item = {'stage': stage, 'node': node, 'check': check, 'status': status, 'reason': reason}
    item.update(extra)
    return item


def by_check(records):
    return dict((r['check'], r) for r in records)


# ---------------------------------------------------------------- _clip (how every quoted output is shortened)

@pytest.mark.parametrize('text, limit, expected', [
    (None, 300, ''),
    ('', 300, ''),
    ('  a \n\t b  ', 300, 'a b'),
    ('x' * 300, 300, 'x' * 300),
    ('x' * 301, 300, 'x' * 297 + '...'),
    ('abcdefghij', 8, 'abcde...'),
])
def test_clip(text, limit, expected):
    assert vc._clip(text, limit) == expected


# ---------------------------------------------------------------- scontrol

@pytest.mark.parametrize('text, expected', [
    (None, {}),
    ('', {}),
    ('No nodes in the system\n', {}),
    ('NodeName=gpu-01 Arch=x86_64 State=IDLE*+DRAIN+DRAIN ThreadsPerCore=1 Reason=disk swap [root@2026-11-21T06:12:01]\n',
     {'gpu-01': {'name': 'gpu-01', 'state': 'IDLE', 'flags': ['DRAIN'], 'reason': 'disk swap', 'reason_user': 'root',
                 'reason_time': '2026-11-21T06:12:01'}}),
    ('NodeName=gpu-02 Arch=x86_64 State=MIXED~ Partitions=batch\n',
     {'gpu-02': {'name': 'gpu-02', 'state': 'MIXED', 'flags': [], 'reason': '', 'reason_user': '', 'reason_time': ''}}),
    ('NodeName=gpu-03 State=DOWN$+NOT_RESPONDING Reason=maintenance\n',
     {'gpu-03': {'name': 'gpu-03', 'state': 'DOWN', 'flags': ['NOT_RESPONDING'], 'reason': 'maintenance', 'reason_user': '',
                 'reason_time': ''}}),
])
def test_parse_scontrol_nodes_whole_entries(text, expected):
    nodes = vc.parse_scontrol_nodes(text)
    assert sorted(nodes) == sorted(expected)
    for name, node in expected.items():
        assert dict((key, nodes[name][key]) for key in node) == node


def test_parse_scontrol_nodes_names_the_line_without_state():
    line = 'NodeName=gpu-09 Comment=' + 'c' * 250
    with pytest.raises(ValueError) as err:
        vc.parse_scontrol_nodes(line)
    assert str(err.value) == "scontrol line for gpu-09 has no State=: '%s...' (line 1)" % line[:197]


NODES = vc.parse_scontrol_nodes(
    'NodeName=gpu-01 State=IDLE\n'
    'NodeName=gpu-02 State=IDLE+DRAIN Reason=disk swap\n'
    'NodeName=gpu-03 State=MIXED+COMPLETING\n'
    'NodeName=gpu-04 State=DOWN+NOT_RESPONDING Reason=Not responding [slurm@2026-11-21T06:12:01]\n')


@pytest.mark.parametrize('name, nodes, expected', [
    ('gpu-01', NODES, rec('slurm', 'gpu-01', 'node_state', 'pass', 'node is IDLE')),
    ('gpu-03', NODES, rec('slurm', 'gpu-03', 'node_state', 'pass', 'node is MIXED+COMPLETING')),
    ('gpu-02', NODES, rec('slurm', 'gpu-02', 'node_state', 'fail', 'node is IDLE+DRAIN (reason: "disk swap")', held='admin')),
    ('gpu-04', NODES, rec('slurm', 'gpu-04', 'node_state', 'fail', 'node is DOWN+NOT_RESPONDING (reason: "Not responding" set by slurm)')),
    ('gpu-07', NODES, rec('slurm', 'gpu-07', 'node_state', 'fail',
                          'Slurm does not know a node called gpu-07 (scontrol show node lists: gpu-01, gpu-02, gpu-03, gpu-04)')),
    ('gpu-07', {}, rec('slurm', 'gpu-07', 'node_state', 'fail', 'Slurm does not know a node called gpu-07 (scontrol show node lists: none)')),
])
def test_node_state_record_whole(name, nodes, expected):
    assert vc.node_state_record('slurm', name, nodes) == expected


# ---------------------------------------------------------------- gres.conf

@pytest.mark.parametrize('text, expected', [
    (None, []),
    ('', []),
    ('# only a comment\n\n   \n', []),
    ('  Name=gpu   Type=h100\tFile=/dev/nvidia0  # first # second\n', ['Name=gpu Type=h100 File=/dev/nvidia0']),
])
def test_gres_conf_lines(text, expected):
    assert vc.gres_conf_lines(text) == expected


H100 = ['Name=gpu Type=h100 File=/dev/nvidia0', 'Name=gpu Type=h100 File=/dev/nvidia1']
A100 = ['Name=gpu Type=a100 File=/dev/nvidia0', 'Name=gpu Type=a100 File=/dev/nvidia1', 'Name=gpu Type=a100 File=/dev/nvidia3']
MIG = 'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22'
DIFFERS = GRES + ' differs from what slurm_gres_facts computes now: '


@pytest.mark.parametrize('text, expected, reason', [
    # lines without Name= (AutoDetect) are not devices, and the lines after them still count
    ('AutoDetect=off\n' + H100[0] + '\n', H100,
     DIFFERS + 'gpu:h100: 1 in %s, 2 computed from NVML; missing line "%s"; unexpected line "AutoDetect=off"' % (GRES, H100[1])),
    # a hostlist with a comma inside its brackets is 3 devices
    ('Name=gpu Type=a100 File=/dev/nvidia[0-1,3]\n', A100,
     DIFFERS + 'missing line "%s" (+2 more); unexpected line "Name=gpu Type=a100 File=/dev/nvidia[0-1,3]"' % A100[0]),
    ('Name=gpu Type=a100 File=/dev/nvidia0,/dev/nvidia1\n', A100,
     DIFFERS + 'gpu:a100: 2 in %s, 3 computed from NVML; missing line "%s" (+2 more); '
               'unexpected line "Name=gpu Type=a100 File=/dev/nvidia0,/dev/nvidia1"' % (GRES, A100[0])),
    # not a hostlist (empty brackets): one device per comma-separated item
    ('Name=gpu Type=a100 File=/dev/nvidia[],/dev/nvidia1\n', A100,
     DIFFERS + 'gpu:a100: 2 in %s, 3 computed from NVML; missing line "%s" (+2 more); '
               'unexpected line "Name=gpu Type=a100 File=/dev/nvidia[],/dev/nvidia1"' % (GRES, A100[0])),
    # Count= without File= (no Type: the label is the name alone)
    ('Name=mps Count=200\n', ['Name=mps Count=100'],
     DIFFERS + 'mps: 200 in %s, 100 computed from NVML; missing line "Name=mps Count=100"; unexpected line "Name=mps Count=200"' % GRES),
    ('Name=mps Count=lots\n', ['Name=mps Count=2'],
     DIFFERS + 'mps: 1 in %s, 2 computed from NVML; missing line "Name=mps Count=2"; unexpected line "Name=mps Count=lots"' % GRES),
    ('Name=bandwidth\n', ['Name=bandwidth Count=3'],
     DIFFERS + 'bandwidth: 1 in %s, 3 computed from NVML; missing line "Name=bandwidth Count=3"; unexpected line "Name=bandwidth"' % GRES),
    # a MultipleFiles= line is one device, whatever Count= says
    ('Name=gpu Type=1g.10gb Count=3 MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21\n', [MIG, MIG.replace('cap2', 'cap3')],
     DIFFERS + 'gpu:1g.10gb: 1 in %s, 2 computed from NVML; missing line "%s" (+1 more); '
               'unexpected line "Name=gpu Type=1g.10gb Count=3 MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21"' % (GRES, MIG)),
    # a type only on one side: its count on the other side is 0
    (H100[0] + '\nName=gpu Type=a100 File=/dev/nvidia1\n', H100,
     DIFFERS + 'gpu:a100: 1 in %s, 0 computed from NVML; gpu:h100: 1 in %s, 2 computed from NVML; missing line "%s"; '
               'unexpected line "Name=gpu Type=a100 File=/dev/nvidia1"' % (GRES, GRES, H100[1])),
    (H100[0] + '\n', [H100[0], MIG],
     DIFFERS + 'gpu:1g.10gb: 0 in %s, 1 computed from NVML; missing line "%s"' % (GRES, MIG)),
    # Count=0 declares no device: only the line differs
    (H100[0] + '\nName=mps Count=0\n', [H100[0]], DIFFERS + 'unexpected line "Name=mps Count=0"'),
    (H100[0] + '\n', [H100[0], 'Name=mps Count=0'], DIFFERS + 'missing line "Name=mps Count=0"'),
    # two unexpected lines: the first and how many more
    ('\n'.join(H100), ['Name=gpu Type=h100 File=/dev/nvidia[0-1]'],
     DIFFERS + 'missing line "Name=gpu Type=h100 File=/dev/nvidia[0-1]"; unexpected line "%s" (+1 more)' % H100[0]),
    ('\n'.join(A100), ['Name=gpu Type=a100 File=/dev/nvidia[0-1,3]'],
     DIFFERS + 'missing line "Name=gpu Type=a100 File=/dev/nvidia[0-1,3]"; unexpected line "%s" (+2 more)' % A100[0]),
    # a doubled "=" (a typo) is read as part of the value, not a crash
    ('Name=gpu Type==h100 File=/dev/nvidia0\n', [H100[0]],
     DIFFERS + 'gpu:=h100: 1 in %s, 0 computed from NVML; gpu:h100: 0 in %s, 1 computed from NVML; missing line "%s"; '
               'unexpected line "Name=gpu Type==h100 File=/dev/nvidia0"' % (GRES, GRES, H100[0])),
])
def test_gres_conf_record_differences(text, expected, reason):
    assert vc.gres_conf_record('recheck', 'gpu-01', GRES, text, expected) == rec('recheck', 'gpu-01', 'gres_conf', 'fail', reason)


@pytest.mark.parametrize('text, expected, status, reason', [
    ('\n'.join(H100), H100, 'pass', GRES + ' equals what slurm_gres_facts computes (2 line(s))'),
    (None, H100 + ['Name=mps Count=100'], 'fail', GRES + ' is missing or unreadable; slurm_gres_facts computes 3 line(s)'),
])
def test_gres_conf_record_whole(text, expected, status, reason):
    assert vc.gres_conf_record('recheck', 'gpu-01', GRES, text, expected) == rec('recheck', 'gpu-01', 'gres_conf', status, reason)


# ---------------------------------------------------------------- node_records

GPUS = [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3'}, {'index': 1, 'name': 'NVIDIA A100-SXM4-40GB'}]
ROUNDTRIP_WITH_HOST = {'rc': 0, 'output': 'STATUS:          Success (0)\nENCODE_HOST: gpu-01\n'}
# a _munge_key.observe result without "user": the key belongs to the default user munge
KEY = {'path': '/etc/munge/munge.key', 'uid': 103, 'key': {'mode': 0o100400, 'uid': 103}, 'dir': {'mode': 0o040700, 'uid': 103}}
ALL_GOOD = {
    'nvml_error': None,
    'gpus': GPUS,
    'mig': {'actions': [], 'reset_required': []},
    'gres_conf': {'path': GRES, 'text': '\n'.join(H100), 'expected': H100},
    'munge': ROUNDTRIP_WITH_HOST,
    'munge_key': KEY,
    'services': {'munge': 'active', 'slurmd': 'active'},
    'scontrol': 'NodeName=sn-01 Arch=x86_64 State=IDLE Partitions=batch\n',
    'enroot': {'rc': 0, 'output': '3.5.0\n', 'conf_present': True, 'conf_path': '/etc/enroot/enroot.conf'},
    'pyxis': {'rc': 0, 'output': 'Usage: srun ...\n      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH\n'},
}
ALL_EXPECTED = {'gpu_count': 2, 'gpu_models': ['H100', 'A100'], 'enroot': True, 'pyxis': True, 'node_name': 'sn-01'}


def test_node_records_all_pass_whole_records():
    """The Slurm node name (node_name) finds the scontrol entry; every record names the inventory host and the stage."""
    assert vc.node_records('gpu-01', ALL_GOOD, ALL_EXPECTED, stage='recheck') == [
        rec('recheck', 'gpu-01', 'nvml', 'pass', 'NVML answers: 2 GPU(s)'),
        rec('recheck', 'gpu-01', 'gpu_count', 'pass', '2 GPU(s) as expected', value=2),
        rec('recheck', 'gpu-01', 'gpu_models', 'pass', 'models NVIDIA A100-SXM4-40GB, NVIDIA H100 80GB HBM3 match H100 or A100'),
        rec('recheck', 'gpu-01', 'mig_layout', 'pass', 'MIG layout equals the wanted one'),
        rec('recheck', 'gpu-01', 'gres_conf', 'pass', GRES + ' equals what slurm_gres_facts computes (2 line(s))'),
        rec('recheck', 'gpu-01', 'munge', 'pass',
            'munge is active, a credential round-trips, /etc/munge/munge.key is private to munge (mode 0400, directory 0700)'),
        rec('recheck', 'gpu-01', 'slurmd', 'pass', 'slurmd is active'),
        rec('recheck', 'gpu-01', 'node_state', 'pass', 'node is IDLE'),
        rec('recheck', 'gpu-01', 'enroot', 'pass', 'enroot 3.5.0 installed, /etc/enroot/enroot.conf present'),
        rec('recheck', 'gpu-01', 'pyxis', 'pass', 'pyxis is loaded: srun --help lists --container-image'),
    ]


def test_node_records_nothing_observed_nothing_expected():
    """Stage "node" by default; settings given as None (not set) are accepted and skip their checks."""
    expect = {'gpu_count': None, 'gpu_models': None, 'enroot': False, 'pyxis': None}
    assert vc.node_records('ctl', {}, expect) == [
        rec('node', 'ctl', 'nvml', 'skip', 'not checked: NVML was not queried (not a GPU node)'),
        rec('node', 'ctl', 'gpu_count', 'skip', 'not checked: no expected GPU count'),
        rec('node', 'ctl', 'gpu_models', 'skip', 'not checked: no expected models'),
        rec('node', 'ctl', 'mig_layout', 'skip', 'not checked: no wanted MIG layout for this node'),
        rec('node', 'ctl', 'gres_conf', 'skip', 'not checked: no GRES computed for this node (not a GPU node)'),
        rec('node', 'ctl', 'munge', 'skip', 'not checked: munge was not queried'),
        rec('node', 'ctl', 'slurmd', 'skip', 'not checked: slurmd state unknown'),
        rec('node', 'ctl', 'node_state', 'skip', 'not checked: scontrol was not run'),
        rec('node', 'ctl', 'enroot', 'skip', 'not checked: enroot not expected (validate_node.enroot is false)'),
        rec('node', 'ctl', 'pyxis', 'skip', 'not checked: pyxis not expected (validate_node.pyxis is false)'),
    ]


def test_node_records_gpu_checks_wait_for_nvml():
    """Expected GPUs but NVML not queried: the GPU checks are skipped, not failed for "0 GPUs"."""
    got = by_check(vc.node_records('gpu-01', {}, {'gpu_count': 8, 'gpu_models': ['H100']}, stage='recheck'))
    assert got['gpu_count'] == rec('recheck', 'gpu-01', 'gpu_count', 'skip', 'not checked: NVML was not queried')
    assert got['gpu_models'] == rec('recheck', 'gpu-01', 'gpu_models', 'skip', 'not checked: NVML was not queried')


def test_node_records_nvml_error_skips_gpu_checks_even_with_a_gpu_list():
    observed = {'nvml_error': LONG, 'gpus': GPUS, 'mig': {'actions': ['GPU 0: enable MIG']}}
    got = vc.node_records('gpu-01', observed, {'gpu_count': 2, 'gpu_models': ['H100']}, stage='recheck')[:4]
    assert got == [
        rec('recheck', 'gpu-01', 'nvml', 'fail', 'NVML does not answer: ' + 'x' * 297 + '...'),
        rec('recheck', 'gpu-01', 'gpu_count', 'skip', 'not checked: NVML does not answer'),
        rec('recheck', 'gpu-01', 'gpu_models', 'skip', 'not checked: NVML does not answer'),
        rec('recheck', 'gpu-01', 'mig_layout', 'skip', 'not checked: NVML does not answer'),
    ]


@pytest.mark.parametrize('gpus, expect, check, expected', [
    (GPUS[:1], {'gpu_count': 2}, 'gpu_count',
     rec('recheck', 'gpu-01', 'gpu_count', 'fail', 'NVML sees 1 GPU(s), expected 2', value=1, threshold=2)),
    ([], {'gpu_count': 0}, 'gpu_count', rec('recheck', 'gpu-01', 'gpu_count', 'pass', '0 GPU(s) as expected', value=0)),
    (GPUS, {'gpu_models': ['H100', 'H200']}, 'gpu_models',
     rec('recheck', 'gpu-01', 'gpu_models', 'fail', 'GPU 1 is NVIDIA A100-SXM4-40GB; expected H100 or H200')),
    (GPUS, {'gpu_models': ['h100', 'a100-sxm4']}, 'gpu_models',
     rec('recheck', 'gpu-01', 'gpu_models', 'pass', 'models NVIDIA A100-SXM4-40GB, NVIDIA H100 80GB HBM3 match h100 or a100-sxm4')),
    ([], {'gpu_models': ['H100']}, 'gpu_models', rec('recheck', 'gpu-01', 'gpu_models', 'pass', 'models none match H100')),
    # a GPU that reports no name matches no model, however short the model text
    ([{'index': 0}], {'gpu_models': ['n', 'x']}, 'gpu_models', rec('recheck', 'gpu-01', 'gpu_models', 'fail', 'GPU 0 is None; expected n or x')),
])
def test_node_records_gpu_records(gpus, expect, check, expected):
    assert by_check(vc.node_records('gpu-01', {'gpus': gpus}, expect, stage='recheck'))[check] == expected


ACTIONS = ['GPU 0: destroy GPU instance 9', 'GPU 0: create 1g.10gb', 'GPU 1: create 1g.10gb', 'GPU 2: enable MIG']


@pytest.mark.parametrize('mig, status, reason', [
    ({}, 'pass', 'MIG layout equals the wanted one'),
    ({'actions': ACTIONS[:3]}, 'fail', 'MIG layout differs from the wanted one; nvidia_mig would: ' + '; '.join(ACTIONS[:3])),
    ({'actions': ACTIONS}, 'fail', 'MIG layout differs from the wanted one; nvidia_mig would: ' + '; '.join(ACTIONS[:3]) + ' (+1 more)'),
    ({'actions': ACTIONS + ['GPU 3: enable MIG']}, 'fail',
     'MIG layout differs from the wanted one; nvidia_mig would: ' + '; '.join(ACTIONS[:3]) + ' (+2 more)'),
    ({'actions': [], 'reset_required': [1, 3]}, 'fail', 'MIG mode change pending a GPU reset on GPU(s) 1, 3'),
    ({'error': LONG}, 'fail', 'the wanted MIG layout could not be compared: ' + 'x' * 297 + '...'),
])
def test_node_records_mig_layout(mig, status, reason):
    got = by_check(vc.node_records('gpu-01', {'gpus': GPUS, 'mig': mig}, {}, stage='recheck'))['mig_layout']
    assert got == rec('recheck', 'gpu-01', 'mig_layout', status, reason)


@pytest.mark.parametrize('observed, status, reason', [
    ({'services': {'munge': 'failed'}, 'munge': ROUNDTRIP_WITH_HOST}, 'fail', 'munge is failed'),
    ({'services': {'munge': ''}, 'munge': ROUNDTRIP_WITH_HOST}, 'fail', 'munge is not running'),
    ({'munge_key': dict(KEY, key={'mode': 0o100644, 'uid': 103})}, 'fail',
     "munge key /etc/munge/munge.key has mode 0644, expected 0400 or 0600 (no group or other access: whoever reads the key can forge "
     "any user's credentials)"),
    ({'munge': {'rc': 1, 'output': LONG}}, 'fail', 'munge -n | unmunge failed (rc 1): ' + 'x' * 297 + '...'),
    ({'munge': {'rc': 0, 'output': 'STATUS:          Expired credential (15)\n'}}, 'fail',
     'unmunge did not decode a fresh credential: STATUS: Expired credential (15)'),
    ({'munge': {'rc': 0, 'output': 'ENCODE_HOST: gpu-01\n'}}, 'pass', 'a credential round-trips'),
    ({'munge': {'rc': 0, 'output': None}}, 'pass', 'a credential round-trips'),
    ({'services': {'munge': 'active'}}, 'pass', 'munge is active'),
    ({'munge_key': dict(KEY, user='mungeuser', key={'mode': 0o100600, 'uid': 103})}, 'pass',
     '/etc/munge/munge.key is private to mungeuser (mode 0600, directory 0700)'),
])
def test_node_records_munge(observed, status, reason):
    got = by_check(vc.node_records('gpu-01', observed, {}, stage='recheck'))['munge']
    assert got == rec('recheck', 'gpu-01', 'munge', status, reason)


@pytest.mark.parametrize('services, status, reason', [
    ({'slurmd': 'inactive'}, 'fail', 'slurmd is inactive'),
    ({'slurmd': ''}, 'fail', 'slurmd is not running'),
    ({'slurmd': None}, 'fail', 'slurmd is not running'),
    ({'slurmd': 'active'}, 'pass', 'slurmd is active'),
    ({'munge': 'active'}, 'skip', 'not checked: slurmd state unknown'),
])
def test_node_records_slurmd(services, status, reason):
    got = by_check(vc.node_records('gpu-01', {'services': services}, {}, stage='recheck'))['slurmd']
    assert got == rec('recheck', 'gpu-01', 'slurmd', status, reason)


@pytest.mark.parametrize('observed, expect, status, reason, extra', [
    ({'scontrol': ''}, {}, 'fail', 'Slurm does not know a node called gpu-01 (scontrol show node lists: none)', {}),
    ({'scontrol': 'NodeName=gpu-01 State=IDLE+DRAIN Reason=x [root@now]\n'}, {}, 'fail', 'node is IDLE+DRAIN (reason: "x" set by root)',
     {'held': 'admin'}),
    ({'scontrol': '', 'scontrol_error': LONG}, {'node_name': 'sn-01'}, 'fail', 'scontrol show node sn-01 failed: ' + 'x' * 297 + '...', {}),
])
def test_node_records_node_state(observed, expect, status, reason, extra):
    got = by_check(vc.node_records('gpu-01', observed, expect, stage='recheck'))['node_state']
    assert got == rec('recheck', 'gpu-01', 'node_state', status, reason, **extra)


def test_node_records_gres_conf_not_computed():
    observed = {'gres_conf': {'path': GRES, 'error': LONG}}
    assert by_check(vc.node_records('gpu-01', observed, {}, stage='recheck'))['gres_conf'] == rec(
        'recheck', 'gpu-01', 'gres_conf', 'fail', 'slurm_gres_facts could not compute the GRES to compare %s with: %s...' % (GRES, 'x' * 297))


ENROOT_CONF = '/etc/enroot/enroot.conf'
VERSION_45 = '3.5.0 built 2026-01-01 on host build-farm-0042'   # 46 characters, clipped to 40


@pytest.mark.parametrize('enroot, wanted, status, reason', [
    (None, True, 'fail', 'enroot is not installed (no enroot command in PATH)'),
    ({'rc': None, 'conf_path': ENROOT_CONF}, True, 'fail', 'enroot is not installed (no enroot command in PATH)'),
    ({'rc': 2, 'output': None, 'conf_path': ENROOT_CONF}, True, 'fail', 'enroot version failed (rc 2): '),
    ({'rc': 2, 'output': LONG, 'conf_path': ENROOT_CONF}, True, 'fail', 'enroot version failed (rc 2): ' + 'x' * 297 + '...'),
    ({'rc': 0, 'output': VERSION_45, 'conf_present': False, 'conf_path': ENROOT_CONF}, True, 'fail',
     'enroot %s... is installed but %s is missing' % (VERSION_45[:37], ENROOT_CONF)),
    ({'rc': 0, 'output': 'v' * 40, 'conf_present': False, 'conf_path': ENROOT_CONF}, True, 'fail',
     'enroot %s is installed but %s is missing' % ('v' * 40, ENROOT_CONF)),
    ({'rc': 0, 'output': 'v' * 41, 'conf_present': True, 'conf_path': ENROOT_CONF}, True, 'pass',
     'enroot %s... installed, %s present' % ('v' * 37, ENROOT_CONF)),
    ({'rc': 0, 'output': VERSION_45, 'conf_present': True, 'conf_path': ENROOT_CONF}, True, 'pass',
     'enroot %s... installed, %s present' % (VERSION_45[:37], ENROOT_CONF)),
    ({'rc': 0, 'output': None, 'conf_present': True, 'conf_path': ENROOT_CONF}, True, 'pass', 'enroot  installed, %s present' % ENROOT_CONF),
    ({'rc': 1}, False, 'skip', 'not checked: enroot not expected (validate_node.enroot is false)'),
])
def test_node_records_enroot(enroot, wanted, status, reason):
    got = by_check(vc.node_records('gpu-01', {'enroot': enroot}, {'enroot': wanted}, stage='recheck'))['enroot']
    assert got == rec('recheck', 'gpu-01', 'enroot', status, reason)


@pytest.mark.parametrize('pyxis, wanted, status, reason', [
    (None, True, 'fail', 'srun is not installed on this node, cannot tell whether pyxis loads'),
    ({'rc': None}, True, 'fail', 'srun is not installed on this node, cannot tell whether pyxis loads'),
    ({'rc': 0, 'output': '  --container-image=IMAGE'}, True, 'pass', 'pyxis is loaded: srun --help lists --container-image'),
    ({'rc': 0, 'output': None}, True, 'fail', 'pyxis is not loaded: srun --help does not list --container-image'),
    ({'rc': 1, 'output': 'e' * 250}, True, 'fail',
     'pyxis is not loaded: srun --help does not list --container-image (srun said: %s...)' % ('e' * 197)),
    ({'rc': 1, 'output': 'e' * 200}, True, 'fail',
     'pyxis is not loaded: srun --help does not list --container-image (srun said: %s)' % ('e' * 200)),
    ({'rc': 0, 'output': ''}, False, 'skip', 'not checked: pyxis not expected (validate_node.pyxis is false)'),
])
def test_node_records_pyxis(pyxis, wanted, status, reason):
    got = by_check(vc.node_records('gpu-01', {'pyxis': pyxis}, {'pyxis': wanted}, stage='recheck'))['pyxis']
    assert got == rec('recheck', 'gpu-01', 'pyxis', status, reason)


def test_node_records_lists_every_unknown_expectation():
    with pytest.raises(ValueError) as err:
        vc.node_records('gpu-01', {}, {'gpus': 8, 'models': ['H100']})
    assert str(err.value) == ('unknown node check expectation(s) gpus, models; '
                              'valid: gpu_count, gpu_models, enroot, pyxis, container_gpu, gres_conf_path, node_name')


# ---------------------------------------------------------------- job records

@pytest.mark.parametrize('result, status, reason', [
    ({'rc': 0, 'stdout': 'gpu-01.cluster.example\n'}, 'pass', 'srun -w gpu-01 ran on gpu-01.cluster.example'),
    ({'rc': 0, 'stdout': 'srun: job 5 queued\n  gpu-01  \n'}, 'pass', 'srun -w gpu-01 ran on gpu-01'),
    ({'rc': 0, 'stdout': 'gpu-01 extra\n'}, 'fail', 'srun -w gpu-01 ran on "gpu-01 extra"'),
    ({'rc': 0, 'stdout': ''}, 'fail', 'srun -w gpu-01 ran on "nowhere (no output)"'),
    ({'rc': 0}, 'fail', 'srun -w gpu-01 ran on "nowhere (no output)"'),
    ({'rc': 0, 'timed_out': True, 'timeout': 30, 'stdout': 'gpu-01\n'}, 'fail', 'srun -w gpu-01 timed out after 30s'),
    ({'rc': 1}, 'fail', 'srun -w gpu-01 failed (rc 1): no output'),
    ({'rc': 1, 'stderr': '', 'stdout': 'hello\nsrun: error: Unable to allocate resources\n'}, 'fail',
     'srun -w gpu-01 failed (rc 1): srun: error: Unable to allocate resources'),
    ({'rc': 2, 'stdout': 'step 1\nstep 2\nstep 3\n'}, 'fail', 'srun -w gpu-01 failed (rc 2): step 3'),
    ({'rc': 1, 'stderr': 'ERROR: ' + 'e' * 260}, 'fail', 'srun -w gpu-01 failed (rc 1): ERROR: %s...' % ('e' * 230)),
])
def test_srun_record_whole(result, status, reason):
    assert vc.srun_record('gpu-01', result) == rec('slurm', 'gpu-01', 'srun', status, reason)


def test_srun_record_stage():
    assert vc.srun_record('gpu-01', {'rc': 0, 'stdout': 'gpu-01'}, stage='recheck') == rec('recheck', 'gpu-01', 'srun', 'pass',
                                                                                           'srun -w gpu-01 ran on gpu-01')


@pytest.mark.parametrize('result, gpus, expected', [
    ({}, 0, rec('slurm', 'gpu-01', 'gres_job', 'skip', 'not checked: no GPUs configured for gpu-01')),
    ({'rc': 0, 'timed_out': True, 'timeout': 60, 'stdout': 'CUDA_VISIBLE_DEVICES=0,1\n'}, 2,
     rec('slurm', 'gpu-01', 'gres_job', 'fail', 'srun --gres=gpu:2 -w gpu-01 timed out after 60s')),
    ({'rc': 1, 'stderr': 'srun: error: Invalid generic resource (gres) specification'}, 2,
     rec('slurm', 'gpu-01', 'gres_job', 'fail', 'srun --gres=gpu:2 -w gpu-01 failed (rc 1): srun: error: Invalid generic resource (gres) specification')),
    ({'rc': 0, 'stdout': 'CUDA_VISIBLE_DEVICES=0\n'}, 2,
     rec('slurm', 'gpu-01', 'gres_job', 'fail', 'a --gres=gpu:2 job sees CUDA_VISIBLE_DEVICES=0 (1 device(s)), expected 2', value=1, threshold=2)),
    ({'rc': 0, 'stdout': 'CUDA_VISIBLE_DEVICES=0,1\n'}, 2,
     rec('slurm', 'gpu-01', 'gres_job', 'pass', 'a --gres=gpu:2 job sees 2 device(s): CUDA_VISIBLE_DEVICES=0,1', value=2)),
])
def test_gres_job_record_whole(result, gpus, expected):
    assert vc.gres_job_record('gpu-01', result, gpus) == expected


def test_gres_job_record_stage():
    assert vc.gres_job_record('gpu-01', {}, None, stage='recheck')['stage'] == 'recheck'


@pytest.mark.parametrize('result, image, expected', [
    ({}, '', rec('slurm', 'gpu-01', 'container_job', 'skip', 'not checked: no container image given (validate_jobs.container_image)')),
    ({'rc': 0}, 'alpine.sqsh', rec('slurm', 'gpu-01', 'container_job', 'pass', 'a pyxis job ran in alpine.sqsh on gpu-01')),
    ({'rc': 0, 'timed_out': True, 'timeout': 120}, 'alpine.sqsh',
     rec('slurm', 'gpu-01', 'container_job', 'fail', 'srun --container-image=alpine.sqsh -w gpu-01 timed out after 120s')),
])
def test_container_record_whole(result, image, expected):
    assert vc.container_record('gpu-01', result, image) == expected


@pytest.mark.parametrize('text, expected', [
    (None, {}),
    ('', {}),
    (' 3: SLURM_STEP_GPUS= 0,1 \nlower=1\nno equals sign\nCUDA_VISIBLE_DEVICES=GPU-1=a\n',
     {'SLURM_STEP_GPUS': '0,1', 'CUDA_VISIBLE_DEVICES': 'GPU-1=a'}),
])
def test_parse_gres_probe(text, expected):
    assert vc.parse_gres_probe(text) == expected


# ---------------------------------------------------------------- MPI

@pytest.mark.parametrize('text, types', [
    (None, []),
    ('srun: MPI plugin types are: none,pmi2, pmix\n', ['none', 'pmi2', 'pmix']),
    ('MPI plugin types are:pmix,pmi2\n', ['pmix', 'pmi2']),
    ('MPI plugin types are...\n\tnoneX\n\tpmix_v\n\tPMIX\n', []),
])
def test_parse_mpi_list_more(text, types):
    assert vc.parse_mpi_list(text) == types


def test_choose_mpi_plugin_nothing_offered():
    with pytest.raises(ValueError) as err:
        vc.choose_mpi_plugin([], 'pmix')
    assert str(err.value) == "srun offers no MPI plugin 'pmix'; it offers: none"


@pytest.mark.parametrize('text', [None, '', 'all ranks started'])
def test_mpi_hint_none(text):
    assert vc.mpi_hint(text) == ''


HELLO = 'mpi_hello rank 0 of 2 on gpu-01\nmpi_hello rank 1 of 2 on gpu-02\n'


@pytest.mark.parametrize('result, required, status, reason', [
    (None, [], 'skip', 'srun --mpi=pmix: not run'),
    (None, ['srun_pmi'], 'fail', 'srun --mpi=pmix: not run'),
    ({'skipped': True}, [], 'skip', 'srun --mpi=pmix: not run'),
    ({'rc': 0, 'timed_out': True, 'timeout': 90, 'stdout': HELLO}, ['srun_pmi'], 'fail', 'srun --mpi=pmix timed out after 90s'),
    ({'rc': 1, 'stderr': '', 'stdout': 'orte_ess_init failed\n'}, ['srun_pmi'], 'fail',
     'srun --mpi=pmix failed (rc 1): orte_ess_init failed -- the MPI library found no PMI server: srun launched it without PMI support '
     '(use srun --mpi=pmix or pmi2)'),
    ({'rc': 0, 'stdout': 'mpi_hello rank 0 of 2 on gpu-01\nmpi_hello rank 1 of 3 on gpu-02\n'}, ['srun_pmi'], 'fail',
     'srun --mpi=pmix: 2 of 2 ranks reported (world size 2,3)'),
    ({'rc': 0, 'stdout': ''}, ['srun_pmi'], 'fail', 'srun --mpi=pmix: 0 of 2 ranks reported (world size unknown)'),
])
def test_mpi_record_more(result, required, status, reason):
    assert vc.mpi_record('srun_pmi', 'srun --mpi=pmix', result, 2, ['gpu-01', 'gpu-02'], required) == rec(
        'mpi', 'srun_pmi', 'launch', status, reason, hosts=['gpu-01', 'gpu-02'])


@pytest.mark.parametrize('env, expected', [
    ('LS_COLORS=rs=0:di=01;34\n0: NCCL_DEBUG=trace\n', ['job sets NCCL_DEBUG=trace, which NCCL_DEBUG=TRACE logs every call and slows collectives']),
    ({'NCCL_NET': 'socket', 'OMPI_MCA_pml': 'ob1', 'OMPI_MCA_btl': 'self,tcp'}, [
        'job sets OMPI_MCA_pml=ob1, which keeps Open MPI off UCX (seed 002: srun + pyxis with OMPI_MCA_pml=^ucx ran all_reduce at half '
        'the mpirun bandwidth)',
        'job sets OMPI_MCA_btl=self,tcp, which limits Open MPI to TCP',
        'job sets NCCL_NET=socket, which forces NCCL onto TCP sockets']),
])
def test_slow_env_warnings_more(env, expected):
    assert vc.slow_env_warnings(env, 'job') == expected


# ---------------------------------------------------------------- drain reasons

@pytest.mark.parametrize('records, expected', [
    # a failure of a run on several hosts names no single node, even when its "node" is one of them
    ([{'stage': 'nccl', 'node': 'gpu-01', 'check': 'busbw', 'status': 'fail', 'reason': 'low', 'hosts': ['gpu-01', 'gpu-02']}], {}),
    ([{'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'fail', 'reason': 'x', 'hosts': ['gpu-02']}],
     {'gpu-02': 'validate: mpi/launch: x'}),
    ([{'stage': 'node', 'node': 'gpu-01', 'check': 'reachable', 'status': 'fail'}], {'gpu-01': 'validate: node/reachable:'}),
    ([{'stage': 'node', 'node': 'gpu-01', 'check': 'c', 'status': 'fail', 'reason': 'r' * 182}], {'gpu-01': 'validate: node/c: ' + 'r' * 182}),
    ([{'stage': 'node', 'node': 'gpu-01', 'check': 'c', 'status': 'fail', 'reason': 'r' * 183}],
     {'gpu-01': 'validate: node/c: ' + 'r' * 179 + '...'}),
])
def test_drain_reasons_more(records, expected):
    assert vc.drain_reasons(records, ['gpu-01', 'gpu-02']) == expected


# ---------------------------------------------------------------- job plans

def test_export():
    assert vc._export(None) == '--export=ALL'
    assert vc._export({'B': 2, 'A': 'x'}) == '--export=ALL,A=x,B=2'
    with pytest.raises(ValueError) as err:
        vc._export({'A-B': 1})
    assert str(err.value) == "environment variable name 'A-B' is not valid (letters, digits and _)"


def test_slurm_jobs_whole_plan():
    plan = {'nodes': [{'name': 'gpu-01', 'gpus': 2}, {'name': 'gpu-02', 'gpus': 0, 'usable': False}], 'srun': '/usr/bin/srun',
            'time_limit': '0:05:00', 'timeout': 90, 'pyxis': True, 'container_image': 'alpine.sqsh', 'env': {'A': '1'}, 'partition': 'p'}
    base = ['/usr/bin/srun', '--nodes=1', '--ntasks=1', '--nodelist=gpu-01', '--time=0:05:00', '--export=ALL,A=1', '--partition=p']
    skipped = 'not run: gpu-02 cannot take jobs (see its node_state check)'
    assert vc.slurm_jobs(plan) == [
        {'name': 'gpu-01', 'kind': 'srun', 'round': 0, 'timeout': 90, 'argv': base + ['--job-name=validate-srun', 'hostname']},
        {'name': 'gpu-01/gres', 'kind': 'gres', 'round': 1, 'timeout': 90, 'gpus': 2,
         'argv': base + ['--job-name=validate-gres', '--gres=gpu:2', 'sh', '-c', vc.GRES_PROBE]},
        {'name': 'gpu-01/container', 'kind': 'container', 'round': 2, 'timeout': 90, 'image': 'alpine.sqsh',
         'argv': base + ['--job-name=validate-container', '--container-image=alpine.sqsh', 'true']},
        {'name': 'gpu-02', 'kind': 'skip', 'check': 'srun', 'reason': skipped},
        {'name': 'gpu-02/gres', 'kind': 'skip', 'check': 'gres_job', 'reason': skipped},
        {'name': 'gpu-02/container', 'kind': 'skip', 'check': 'container_job', 'reason': skipped},
        {'name': 'job-environment', 'kind': 'env', 'round': 0, 'timeout': 90, 'argv': base + ['--job-name=validate-env', 'env']},
    ]


def test_slurm_jobs_defaults():
    """No srun, time limit (an empty one included), timeout or pyxis given: srun, 2 minutes, 120 s, no container job."""
    base = ['srun', '--nodes=1', '--ntasks=1', '--nodelist=n1', '--time=2', '--export=ALL']
    assert vc.slurm_jobs({'nodes': [{'name': 'n1', 'gpus': '1'}], 'time_limit': '', 'partition': ''}) == [
        {'name': 'n1', 'kind': 'srun', 'round': 0, 'timeout': 120, 'argv': base + ['--job-name=validate-srun', 'hostname']},
        {'name': 'n1/gres', 'kind': 'gres', 'round': 1, 'timeout': 120, 'gpus': 1,
         'argv': base + ['--job-name=validate-gres', '--gres=gpu:1', 'sh', '-c', vc.GRES_PROBE]},
        {'name': 'n1/container', 'kind': 'skip', 'check': 'container_job', 'reason': 'not checked: pyxis not expected (validate_node.pyxis is false)'},
        {'name': 'job-environment', 'kind': 'env', 'round': 0, 'timeout': 120, 'argv': base + ['--job-name=validate-env', 'env']},
    ]


@pytest.mark.parametrize('plan, message', [
    ({'nodes': ['gpu-01']}, "Slurm plan nodes must be a non-empty list of {name, gpus, usable}, got ['gpu-01']"),
    ({'nodes': [{'gpus': 1}]}, "Slurm plan nodes must be a non-empty list of {name, gpus, usable}, got [{'gpus': 1}]"),
    ({'nodes': [{'name': 'gpu 01'}]}, "nodes[0].name is 'gpu 01', expected a Slurm node name: " + NAME_TEXT),
    ({'nodes': [{'name': 'a'}, {'name': 'b', 'gpus': -1}]}, 'nodes[1].gpus is -1, expected a whole number of at least 0'),
    ({'nodes': [{'name': 'a'}, {'name': 'b', 'usable': 'maybe'}]}, "nodes[1].usable is 'maybe', expected true or false"),
    ({'nodes': [{'name': 'a'}], 'srun': 5}, 'srun is 5, expected a string'),
    ({'nodes': [{'name': 'a'}], 'container_image': ['x']}, "container_image is ['x'], expected a string"),
    ({'nodes': [{'name': 'a'}], 'pyxis': 'maybe'}, "pyxis is 'maybe', expected true or false"),
    ({'nodes': [{'name': 'a'}], 'partition': 'a,b'}, "partition is 'a,b', expected a Slurm partition name: " + NAME_TEXT + ', or empty'),
    ({'nodes': [{'name': 'a'}], 'timeout': 0}, 'timeout is 0, expected a whole number of seconds of at least 1'),
    ({'nodes': [{'name': 'a'}], 'image': 'x', 'ranks': 2},
     'unknown Slurm plan key(s) image, ranks; valid keys: nodes, srun, partition, time_limit, timeout, pyxis, container_image, env, '
     'dispatch, dispatch_min_nodes, allocation_wait, salloc'),
])
def test_slurm_jobs_bad_plans(plan, message):
    with pytest.raises(ValueError) as err:
        vc.slurm_jobs(plan)
    assert str(err.value) == message


def test_slurm_jobs_wants_a_list_of_nodes():
    """An iterator of nodes is refused, not planned as no jobs once the first check has used it up."""
    with pytest.raises(ValueError, match=r'^nodes is <list_iterator object at 0x[0-9a-fA-F]+>, expected a list of at least 1 item\(s\)$'):
        vc.slurm_jobs({'nodes': iter([{'name': 'a'}])})


MPI = '/opt/v/mpi_hello'


def test_mpi_jobs_whole_plan():
    plan = {'nodes': ['gpu-01', 'gpu-02'], 'binary': MPI, 'srun': '/usr/bin/srun', 'salloc': '/usr/bin/salloc', 'mpirun': '/opt/ompi/bin/mpirun',
            'mpirun_args': ['--mca', 'btl', '^openib'], 'partition': 'gpu', 'time_limit': '0:10:00', 'timeout': 300, 'env': {'UCX_TLS': 'rc'},
            'no_pmi_path': True, 'no_pmi_timeout': 45, 'container_image': '/srv/ompi.sqsh', 'container_mounts': '/opt/v:/opt/v:ro'}
    alloc = ['--nodes=2', '--nodelist=gpu-01,gpu-02', '--ntasks-per-node=1', '--time=0:10:00', '--partition=gpu']
    srun = ['/usr/bin/srun'] + alloc + ['--export=ALL,UCX_TLS=rc', '--job-name=validate-mpi']
    job = {'kind': 'mpi', 'timeout': 300, 'ranks': 2, 'hosts': ['gpu-01', 'gpu-02']}
    assert vc.mpi_jobs(plan) == [
        dict(job, name='srun_pmi', path='srun_pmi', label='srun --mpi={mpi}', round=0, argv=srun + ['--mpi={mpi}', MPI]),
        dict(job, name='srun_plain', path='srun_plain', label='srun --mpi=none (no PMI)', round=1, timeout=45, argv=srun + ['--mpi=none', MPI]),
        dict(job, name='mpirun', path='mpirun', label='mpirun in a salloc allocation', round=2,
             env={'UCX_TLS': 'rc', 'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'},
             argv=['/usr/bin/salloc'] + alloc + ['--job-name=validate-mpi', '/opt/ompi/bin/mpirun', '--mca', 'btl', '^openib', MPI]),
        dict(job, name='pyxis', path='pyxis', label='srun --mpi={mpi} --container-image', round=3,
             argv=srun + ['--mpi={mpi}', '--container-image=/srv/ompi.sqsh', '--container-mounts=/opt/v:/opt/v:ro', MPI]),
    ]


def test_mpi_jobs_defaults():
    """srun, salloc and mpirun by name, 2 minutes, 180 s; the no-PMI path skipped; a binary in / mounts /."""
    alloc = ['--nodes=1', '--nodelist=a', '--ntasks-per-node=1', '--time=2']
    job = {'kind': 'mpi', 'timeout': 180, 'ranks': 1, 'hosts': ['a']}
    assert vc.mpi_jobs({'nodes': ['a'], 'binary': '/mpi_hello', 'container_image': 'ompi.sqsh'}) == [
        dict(job, name='srun_pmi', path='srun_pmi', label='srun --mpi={mpi}', round=0,
             argv=['srun'] + alloc + ['--export=ALL', '--job-name=validate-mpi', '--mpi={mpi}', '/mpi_hello']),
        {'name': 'srun_plain', 'kind': 'skip', 'path': 'srun_plain', 'label': 'srun --mpi=none (no PMI)', 'hosts': ['a'], 'ranks': 1,
         'reason': 'not run: the srun path without PMI runs only when asked (validate_mpi_settings.no_pmi_path); '
                   'Open MPI then fails with orte_ess_init failed or hangs until its timeout'},
        dict(job, name='mpirun', path='mpirun', label='mpirun in a salloc allocation', round=2,
             env={'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'},
             argv=['salloc'] + alloc + ['--job-name=validate-mpi', 'mpirun', '/mpi_hello']),
        dict(job, name='pyxis', path='pyxis', label='srun --mpi={mpi} --container-image', round=3,
             argv=['srun'] + alloc + ['--export=ALL', '--job-name=validate-mpi', '--mpi={mpi}', '--container-image=ompi.sqsh',
                                      '--container-mounts=/:/', '/mpi_hello']),
    ]


def test_mpi_jobs_without_image_skips_pyxis():
    assert vc.mpi_jobs({'nodes': ['a', 'b'], 'binary': 'mpi_hello'})[3] == {
        'name': 'pyxis', 'kind': 'skip', 'path': 'pyxis', 'label': 'srun --mpi={mpi} --container-image', 'hosts': ['a', 'b'], 'ranks': 2,
        'reason': 'not run: no MPI container image given (validate_mpi_settings.container_image)'}


LABELS = {'srun_pmi': 'srun --mpi={mpi}', 'srun_plain': 'srun --mpi=none (no PMI)', 'mpirun': 'mpirun in a salloc allocation',
          'pyxis': 'srun --mpi={mpi} --container-image'}


@pytest.mark.parametrize('plan, reason, hosts, ranks', [
    ({'nodes': ['a', 'b'], 'binary': ''}, 'no MPI program: binary not given', ['a', 'b'], 2),
    ({'nodes': ['a', 'b']}, 'no MPI program: binary not given', ['a', 'b'], 2),
    ({'nodes': [], 'binary': MPI}, 'no MPI program: no node can run it', None, 1),
    ({'binary': MPI, 'skip_reason': 'no mpicc'}, 'no mpicc', None, 1),
])
def test_mpi_jobs_all_skipped(plan, reason, hosts, ranks):
    assert vc.mpi_jobs(plan) == [{'name': path, 'kind': 'skip', 'path': path, 'label': LABELS[path], 'reason': reason, 'hosts': hosts,
                                  'ranks': ranks} for path in vc.MPI_PATHS]


@pytest.mark.parametrize('change, message', [
    ({'nodes': ['a', 'b c']}, "nodes[1] is 'b c', expected a Slurm node name: " + NAME_TEXT),
    ({'srun': 5}, 'srun is 5, expected a string'),
    ({'salloc': 5}, 'salloc is 5, expected a string'),
    ({'mpirun': 5}, 'mpirun is 5, expected a string'),
    ({'binary': 5}, 'binary is 5, expected a string'),
    ({'container_image': 5}, 'container_image is 5, expected a string'),
    ({'container_mounts': 5}, 'container_mounts is 5, expected a string'),
    ({'skip_reason': 5}, 'skip_reason is 5, expected a string'),
    ({'no_pmi_path': 'maybe'}, "no_pmi_path is 'maybe', expected true or false"),
    ({'no_pmi_timeout': 0}, 'no_pmi_timeout is 0, expected a whole number of seconds of at least 1'),
    ({'mpirun_args': '--mca btl ^openib'}, "mpirun_args is '--mca btl ^openib', expected a list"),
    ({'mpirun_args': ['--mca', 5]}, 'mpirun_args[1] is 5, expected a non-empty string'),
    ({'time_limit': 'soon'}, "time_limit is 'soon', expected a Slurm time limit: minutes (1 or more), \"MM:SS\", \"HH:MM:SS\", "
                             "\"D-HH[:MM[:SS]]\" or UNLIMITED"),
    ({'env': {'1A': 'x'}}, "env key is '1A', expected an environment variable name (letters, digits and \"_\", not starting with a digit)"),
    ({'ranks': 2, 'hosts': []}, 'unknown MPI plan key(s) hosts, ranks; valid keys: nodes, binary, srun, salloc, mpirun, mpirun_args, '
                                'partition, time_limit, timeout, container_image, container_mounts, env, skip_reason, no_pmi_path, no_pmi_timeout'),
])
def test_mpi_jobs_bad_plans(change, message):
    with pytest.raises(ValueError) as err:
        vc.mpi_jobs(dict({'nodes': ['a'], 'binary': MPI}, **change))
    assert str(err.value) == message


def test_plans_take_none_for_unset_strings():
    jobs = vc.mpi_jobs({'nodes': ['a'], 'binary': MPI, 'srun': None, 'salloc': None, 'mpirun': None, 'container_image': None,
                        'container_mounts': None, 'skip_reason': None, 'mpirun_args': None, 'no_pmi_path': None})
    assert [j['kind'] for j in jobs] == ['mpi', 'skip', 'mpi', 'skip']


# ---------------------------------------------------------------- input checks

@pytest.mark.parametrize('args, message', [
    (('n', 'a b'), "n is 'a b', expected a Slurm name: " + NAME_TEXT),
    (('n', '', 'a Slurm reservation name'), "n is '', expected a Slurm reservation name: " + NAME_TEXT),
    (('n', 'a b', 'a Slurm partition name', True), "n is 'a b', expected a Slurm partition name: " + NAME_TEXT + ', or empty'),
])
def test_slurm_name_messages(args, message):
    with pytest.raises(ValueError) as err:
        vc.slurm_name(*args)
    assert str(err.value) == message


def test_slurm_name_may_be_empty():
    assert vc.slurm_name('partition', '', allow_empty=True) == ''


@pytest.mark.parametrize('env, message', [
    ('A=1', "env is 'A=1', expected a dict"),
    ({'A': None}, 'env[A] is None, expected a string or number'),
    ({'A': [1]}, 'env[A] is [1], expected a string or number'),
])
def test_check_env_messages(env, message):
    with pytest.raises(ValueError) as err:
        vc.check_env('env', env)
    assert str(err.value) == message


def test_check_env_accepts():
    assert vc.check_env('env', None) == {}
    assert vc.check_env('env', {'A': 1, 'B_2': 'x', 'C': True}) == {'A': 1, 'B_2': 'x', 'C': True}


@pytest.mark.parametrize('result', [
    {'failed': True, 'actions': 'not a list'},
    {'actions': None},
    {'actions': ['GPU 0: enable MIG']},
    {'actions': [], 'gpus': None},
])
def test_check_mig_result_accepts(result):
    assert vc.check_mig_result('mig_result', result) is result


@pytest.mark.parametrize('result, message', [
    ('changed', "mig_result is 'changed', expected a dict"),
    ({'actions': 'GPU 0: enable MIG'}, "mig_result.actions is 'GPU 0: enable MIG', expected a list"),
    ({'actions': [1]}, 'mig_result.actions[0] is 1, expected a non-empty string'),
    ({'actions': [], 'gpus': ['x']}, "mig_result.gpus[0] is 'x', expected a dict"),
])
def test_check_mig_result_refuses(result, message):
    with pytest.raises(ValueError) as err:
        vc.check_mig_result('mig_result', result)
    assert str(err.value) == message


# node_check's options as its argument spec fills them
NODE_PARAMS = {'node_name': None, 'expect': {}, 'mig_result': None, 'services': ['munge', 'slurmd'], 'gres_conf_path': GRES,
               'enroot_conf_path': ENROOT_CONF, 'munge_key_check': True, 'munge_key_path': '/etc/munge/munge.key', 'munge_user': 'munge',
               'hook_log_ident': 'slurm-hooks', 'hook_log_lines': 500, 'hook_log_files': ['/var/log/syslog']}


@pytest.mark.parametrize('change', [
    {},
    {'node_name': 'gpu-01', 'expect': {'gpu_count': 8}, 'mig_result': {'actions': []}, 'services': None, 'hook_log_files': None},
    {'munge_key_check': False, 'munge_key_path': 'munge.key', 'munge_user': 'Munge'},
])
def test_check_node_input_accepts(change):
    assert vc.check_node_input(dict(NODE_PARAMS, **change)) is None


@pytest.mark.parametrize('change, message', [
    ({'node_name': 'gpu 01'}, "node_name is 'gpu 01', expected a Slurm node name: " + NAME_TEXT),
    ({'expect': {'gpu_count': -1}}, 'expect.gpu_count is -1, expected a whole number of at least 0'),
    ({'mig_result': {'actions': 'x'}}, "mig_result.actions is 'x', expected a list"),
    ({'services': ['slurmd', '-x']},
     "services[1] is '-x', expected a systemd unit name such as \"slurmd\" or \"slurmd.service\" (letters, digits, \":\", \"_\", \".\", "
     "\"\\\", \"@\" and \"-\", not starting with \"-\" or \"@\", at most 256 characters)"),
    ({'gres_conf_path': ''}, "gres_conf_path is '', expected a non-empty string"),
    ({'munge_key_path': 'munge.key'}, "munge_key_path is 'munge.key', expected an absolute path to a file such as /etc/munge/munge.key"),
    ({'munge_key_path': '/etc/munge/'}, "munge_key_path is '/etc/munge/', expected an absolute path to a file such as /etc/munge/munge.key"),
    ({'munge_user': 'Munge'}, "munge_user is 'Munge', expected a user name such as \"munge\""),
    ({'hook_log_ident': '-x'}, "hook_log_ident is '-x', expected a syslog identifier such as \"slurm-hooks\" (no spaces, not starting with \"-\")"),
    ({'hook_log_lines': 0}, 'hook_log_lines is 0, expected a whole number between 1 and 1000000'),
    ({'hook_log_files': ['']}, "hook_log_files[0] is '', expected a non-empty string"),
])
def test_check_node_input_refuses(change, message):
    with pytest.raises(ValueError) as err:
        vc.check_node_input(dict(NODE_PARAMS, **change))
    assert str(err.value) == message


def test_check_node_input_checks_the_munge_key_unless_told_not_to():
    """munge_key_check is on when the option is absent."""
    params = dict(NODE_PARAMS, munge_key_path='munge.key')
    del params['munge_key_check']
    with pytest.raises(ValueError, match='^munge_key_path is'):
        vc.check_node_input(params)


def job(**change):
    item = {'name': 'a', 'kind': 'srun', 'timeout': 60, 'round': 0, 'argv': ['srun', 'hostname']}
    item.update(change)
    return item


def test_check_jobs_normalises_numbers():
    assert vc.check_jobs([job(timeout='60', round='1', gpus='2', ranks='3')]) == [
        {'name': 'a', 'kind': 'srun', 'timeout': 60, 'round': 1, 'gpus': 2, 'ranks': 3, 'argv': ['srun', 'hostname']}]
    assert vc.check_jobs([job(kind='skip', argv=None)]) == [
        {'name': 'a', 'kind': 'skip', 'timeout': 60, 'round': 0, 'gpus': None, 'ranks': None, 'argv': None}]


@pytest.mark.parametrize('jobs, message', [
    (['a'], "jobs[0] is 'a', expected a dict"),
    ([job(), job(name='b', kind='bogus')], "jobs[1] (b).kind is 'bogus', expected one of srun, gres, container, mpi, nccl, env, skip"),
    ([job(argv='hostname')], "jobs[0] (a).argv is 'hostname', expected a list of at least 1 item(s)"),
    ([job(argv=[])], 'jobs[0] (a).argv is [], expected the command as a non-empty list (every kind but skip runs one)'),
    ([job(path='bogus')], "jobs[0] (a).path is 'bogus', expected one of srun_pmi, srun_plain, mpirun, pyxis"),
    ([job(kind='mpi')], 'jobs[0] (a) (kind mpi) needs a path: srun_pmi, srun_plain, mpirun, pyxis'),
    ([job(expect={'topology': 'h100-nvlink-8'})],
     "jobs[0] (a).expect is {'topology': 'h100-nvlink-8'}, but only kind nccl jobs take an expectation (this job is kind srun)"),
    ([job(kind='nccl', expect={'min_busbw_gbps': -1})],
     "jobs[0] (a).expect is {'min_busbw_gbps': -1}: min_busbw_gbps is -1, expected a number of GB/s above 0"),
    ([job(), job(name='b'), job(), job(name='b'), job(name='c')], 'job names must be unique, these repeat: a, b'),
])
def test_check_jobs_messages(jobs, message):
    with pytest.raises(ValueError) as err:
        vc.check_jobs(jobs)
    assert str(err.value) == message


def test_check_jobs_label():
    with pytest.raises(ValueError) as err:
        vc.check_jobs([job(round=-1)], label='plan')
    assert str(err.value) == 'plan[0] (a).round is -1, expected a whole number of at least 0'


JOBS_PARAMS = {'stage': 'slurm', 'mpi_plugin': 'auto', 'srun': 'srun', 'mpi_required_paths': ['srun_pmi']}


@pytest.mark.parametrize('change, message', [
    ({'stage': 'slurm stage'}, "stage is 'slurm stage', expected a stage name such as \"slurm\" (no spaces)"),
    ({'mpi_plugin': 'PMIx'}, "mpi_plugin is 'PMIx', expected auto or a Slurm MPI plugin type such as pmix, pmix_v4, pmi2 or none"),
    ({'srun': ''}, "srun is '', expected the srun command or its path"),
    ({'mpi_required_paths': ['srun']}, "mpi_required_paths[0] is 'srun', expected one of srun_pmi, srun_plain, mpirun, pyxis"),
])
def test_check_jobs_input_messages(change, message):
    assert vc.check_jobs_input(JOBS_PARAMS) is None
    with pytest.raises(ValueError) as err:
        vc.check_jobs_input(dict(JOBS_PARAMS, **change))
    assert str(err.value) == message


def test_check_time_limit_message():
    with pytest.raises(ValueError) as err:
        vc.check_time_limit('validate_time_limit', '1h')
    assert str(err.value) == ("validate_time_limit is '1h', expected a Slurm time limit: minutes (1 or more), \"MM:SS\", \"HH:MM:SS\", "
                              "\"D-HH[:MM[:SS]]\" or UNLIMITED")
    with pytest.raises(ValueError) as err:
        vc.check_time_limit('validate_time_limit', 0)
    assert str(err.value) == 'validate_time_limit is 0, expected a whole number of minutes of at least 1'
