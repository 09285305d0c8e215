# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm/_topology.py against the REAL ibnetdiscover (infiniband-diags) over simulated InfiniBand fabrics (ibsim).

Each fabric is made by ``tests/unit/ibsim_fabric.py`` from a few numbers; ibsim serves it, ibnetdiscover
discovers it through libumad2sim.so, and ``tree_topology(parse_ibnetdiscover(dump), ...)`` must give the lines the
fabric's construction says (``Fabric.expected_lines``), with the warnings written out here.  Without ibsim-utils
and infiniband-diags these tests skip, unless ``GPUCLUSTER_REQUIRE_IBSIM=1`` (CI), where they fail.  The saved
dump ``fixtures/topology/ibsim_rail_optimised.txt`` is read without ibsim.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import parse_ibnetdiscover, tree_topology
from ansible_collections.gpucluster.bringup.plugins.modules import slurm_topology
from ansible_collections.gpucluster.bringup.tests.unit import ibsim_fabric
from ansible_collections.gpucluster.bringup.tests.unit.ibsim_fabric import DEFAULT_CA_DESC, IbsimError, fat_tree
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import run_module

FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'topology', 'ibsim_rail_optimised.txt')
REQUIRED = os.environ.get(ibsim_fabric.REQUIRE_ENV) == '1'


def rail_optimised(**more):
    """The saved fixture's fabric: 4 DGX-like hosts x 8 HCAs on 8 rail leaves, 2 spines, SHARP aggregation nodes."""
    return fat_tree(hosts=4, hcas_per_host=8, leaves=8, spines=2, rails=True, aggregation_nodes=True, **more)


@pytest.fixture
def discover():
    """ibnetdiscover over ibsim, or skip (fail with GPUCLUSTER_REQUIRE_IBSIM=1) when the tools are missing."""
    try:
        ibsim_fabric.find_tools()
    except ibsim_fabric.IbsimUnavailable as exc:
        if REQUIRED:
            pytest.fail('%s=1 but %s' % (ibsim_fabric.REQUIRE_ENV, exc))
        pytest.skip('ibsim/ibnetdiscover: %s (set %s=1 to fail instead)' % (exc, ibsim_fabric.REQUIRE_ENV))
    return ibsim_fabric.ibnetdiscover


def not_slurm(fabric, ca):
    switch, port = list(ca.ports.values())[0]
    return ('fabric host %s is not a Slurm node (CA H-%s "%s" on %s port %d); left out'
            % (ca.host, ca.hex, ca.desc, fabric.switch_name(switch), port))


def not_slurm_hosts(fabric, hosts):
    return [not_slurm(fabric, fabric.host_cas[host][0]) for host in hosts]


def default_desc(fabric, ca):
    switch, port = list(ca.ports.values())[0]
    return ('CA H-%s "%s" on %s port %d shows the adapter\'s default node description, so its host is unknown (set '
            'it on the host, e.g. with rdma-ndd, or map the CA GUID in name_map); left out'
            % (ca.hex, ca.desc, fabric.switch_name(switch), port))


def hosts(first, last):
    return ['gpu-%02d' % n for n in range(first, last + 1)]


# (id, fabric, Slurm nodes (None: every generated host), tree_topology keywords, expected warnings (fabric -> list))
CASES = [
    ('single-switch', lambda: fat_tree(hosts=4), None, {}, lambda f: []),
    ('two-level-4x4-2-spines', lambda: fat_tree(hosts=16, leaves=4, spines=2), None, {}, lambda f: []),
    ('three-level-2-pods', lambda: fat_tree(hosts=16, leaves=4, spines=4, pods=2, cores=2), None, {}, lambda f: []),
    # only pod 1 holds Slurm nodes: the cores and pod 2's spines (reached down through the cores) are left out
    ('three-level-one-pod-in-slurm', lambda: fat_tree(hosts=16, leaves=4, spines=4, pods=2, cores=2), hosts(1, 8), {},
     lambda f: not_slurm_hosts(f, hosts(9, 16))),
    # cores above a single pod join nothing the spines do not already
    ('three-level-single-pod', lambda: fat_tree(hosts=8, leaves=2, spines=2, cores=2), None, {}, lambda f: []),
    ('rail-optimised-4x8', rail_optimised, None, {}, lambda f: []),
    ('rail-optimised-4x8-rail-3', rail_optimised, None, {'rail_hca': 'mlx5_3'}, lambda f: []),
    ('rail-optimised-2-units', lambda: fat_tree(hosts=8, hcas_per_host=8, leaves=16, spines=2, rails=True), None, {},
     lambda f: []),
    ('empty-switch-pruned', lambda: fat_tree(hosts=8, leaves=2, spines=2, empty_switches=1), None, {}, lambda f: []),
    ('storage-and-default-description-cas',
     lambda: fat_tree(hosts=8, leaves=2, spines=2, extra_cas=[('stor-01 mlx5_0', 2), (DEFAULT_CA_DESC, 1)]), None, {},
     lambda f: [default_desc(f, f.ca(DEFAULT_CA_DESC)), not_slurm(f, f.ca('stor-01 mlx5_0'))]),
    ('slurm-node-absent-from-fabric', lambda: fat_tree(hosts=4, leaves=2, spines=1), hosts(1, 5), {},
     lambda f: ['Slurm nodes not in the fabric (no CA names them): gpu-05; they are left out']),
]


@pytest.mark.parametrize('make, nodes, kwargs, warnings', [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_tree_from_real_ibnetdiscover(discover, make, nodes, kwargs, warnings):
    fabric = make()
    dump = discover(fabric)
    assert dump.startswith('#\n# Topology file: generated on ')
    result = tree_topology(parse_ibnetdiscover(dump), nodes or fabric.hosts, **kwargs)
    assert result == {'lines': fabric.expected_lines(nodes, rail_hca=kwargs.get('rail_hca')), 'warnings': warnings(fabric)}


def test_rail_optimised_hosts_sit_under_their_rail_leaf(discover):
    """Spelled out: every host under its mlx5_0's leaf (rail 0), or rail 3's with rail_hca; other rails' leaves out."""
    fabric = rail_optimised()
    parsed = parse_ibnetdiscover(discover(fabric))
    assert len(parsed['switches']) == 10 and len(parsed['hosts']) == 4 * 8 + 10  # + one aggregation node a switch
    assert tree_topology(parsed, 'gpu-[01-04]')['lines'] == [
        'SwitchName=leaf-01 Nodes=gpu-[01-04]', 'SwitchName=spine-01 Switches=leaf-01', 'SwitchName=spine-02 Switches=leaf-01']
    assert tree_topology(parsed, 'gpu-[01-04]', rail_hca='mlx5_3')['lines'] == [
        'SwitchName=leaf-04 Nodes=gpu-[01-04]', 'SwitchName=spine-01 Switches=leaf-04', 'SwitchName=spine-02 Switches=leaf-04']


@pytest.mark.parametrize('make, message', [
    # gpu-03's HCA has two ports, cabled to leaf-01 and leaf-02
    (lambda: fat_tree(hosts=8, leaves=2, spines=2, dual_port=[3]),
     r'^host gpu-03 would sit in two leaves: its CA H-\w+ "gpu-03 mlx5_0" is linked to leaf-01 and leaf-02; '),
    # a second adapter described "gpu-01 mlx5_0" on leaf-02 (two machines with one host name)
    (lambda: fat_tree(hosts=8, leaves=2, spines=2, extra_cas=[('gpu-01 mlx5_0', 2)]),
     r'^host gpu-01 would sit in two leaves: 2 CAs fit its rail-0 HCA \(H-\w+ "gpu-01 mlx5_0" on leaf-01 port 1; '
     r'H-\w+ "gpu-01 mlx5_0" on leaf-02 port 5\)'),
], ids=['dual-ported-hca-on-two-leaves', 'two-cas-claim-one-host'])
def test_host_on_two_leaves_is_refused(discover, make, message):
    fabric = make()
    with pytest.raises(ValueError, match=message):
        tree_topology(parse_ibnetdiscover(discover(fabric)), fabric.hosts)


def test_grouping_output_parses_the_same(discover):
    """ibnetdiscover -g adds "Non-Chassis Nodes" and a comment after each switchguid=: the same fabric."""
    fabric = fat_tree(hosts=16, leaves=4, spines=2)
    grouped = discover(fabric, ['-g'])
    assert 'Non-Chassis Nodes' in grouped
    assert parse_ibnetdiscover(grouped) == parse_ibnetdiscover(discover(fabric))
    assert tree_topology(parse_ibnetdiscover(grouped), fabric.hosts)['lines'] == fabric.expected_lines()


def test_saved_fixture_is_what_ibnetdiscover_prints_today(discover):
    """fixtures/topology/ibsim_rail_optimised.txt is rail_optimised()'s dump; only the date line may differ."""
    def body(text):
        return [line for line in text.splitlines() if not line.startswith('# Topology file: generated on ')]
    with open(FIXTURE) as handle:
        assert body(discover(rail_optimised())) == body(handle.read())


def test_saved_fixture_without_ibsim():
    with open(FIXTURE) as handle:
        parsed = parse_ibnetdiscover(handle.read())
    fabric = rail_optimised()
    for rail in (None, 'mlx5_3', 'mlx5_7'):
        assert tree_topology(parsed, fabric.hosts, rail_hca=rail) == {
            'lines': fabric.expected_lines(rail_hca=rail), 'warnings': []}


def test_module_writes_topology_conf_from_the_saved_dump(discover, tmp_path):
    """slurm_topology with ibnetdiscover_path: the file a site would save with "ibnetdiscover > fabric.txt"."""
    fabric = fat_tree(hosts=8, leaves=2, spines=2, extra_cas=[('stor-01 mlx5_0', 2)])
    saved = tmp_path / 'fabric.txt'
    saved.write_text(discover(fabric))
    dest = tmp_path / 'topology.conf'
    args = {'plugin': 'tree', 'nodes': fabric.hosts, 'ibnetdiscover_path': str(saved), 'dest': str(dest)}
    first = run_module(slurm_topology.main, args)
    assert not first.failed and first.result['changed'] is True, first.result
    assert first.result['lines'] == fabric.expected_lines()
    assert first.result['warnings_found'] == [not_slurm(fabric, fabric.ca('stor-01 mlx5_0'))]
    assert dest.read_text().splitlines()[1:] == fabric.expected_lines()
    assert run_module(slurm_topology.main, args).result['changed'] is False


# --- the tooling itself -----------------------------------------------------------------------------------------------

def ibsim_running(pid):
    try:
        with open('/proc/%d/cmdline' % pid) as handle:
            return 'ibsim' in handle.read()
    except (IOError, OSError):
        return False


def test_two_simulators_at_once_keep_to_their_sockets(discover):
    one, two = fat_tree(hosts=2), fat_tree(hosts=3, name='cpu-%02d')
    with ibsim_fabric.running_ibsim(one.net) as first, ibsim_fabric.running_ibsim(two.net) as second:
        assert first['IBSIM_SOCKNAME'] != second['IBSIM_SOCKNAME']
        assert sorted(re.findall(r'^Ca\s.*# "(\S+) ', ibsim_fabric.run_ibnetdiscover(second), re.M)) == [
            'cpu-01', 'cpu-02', 'cpu-03']
        assert sorted(re.findall(r'^Ca\s.*# "(\S+) ', ibsim_fabric.run_ibnetdiscover(first), re.M)) == ['gpu-01', 'gpu-02']
        pids = [int(first['IBSIM_PID']), int(second['IBSIM_PID'])]
        assert [ibsim_running(pid) for pid in pids] == [True, True]
    assert [ibsim_running(pid) for pid in pids] == [False, False]  # stopped and reaped on the way out


def test_ibsim_refusing_its_net_file_is_named_and_stopped(discover):
    with pytest.raises(IbsimError, match=r'(?s)^ibsim exited with status \d+ .*can\'t find remote node'):
        discover('Switch\t8 "sw"\n[1]\t"nowhere"[1]\n')


def test_ibnetdiscover_failing_is_named(discover):
    with pytest.raises(IbsimError, match=r'(?s)IBSIM_SOCKNAME=gpucluster-ibsim-\S+ \S*ibnetdiscover --no-such-option '
                                         r'exited with status \d+'):
        discover(fat_tree(hosts=1), ['--no-such-option'])


def test_missing_tools_are_named_with_their_packages(monkeypatch):
    monkeypatch.setattr(ibsim_fabric, '_which', lambda program: None)
    monkeypatch.setenv('IBSIM_UMAD2SIM', '/nonexistent/libumad2sim.so')
    with pytest.raises(ibsim_fabric.IbsimUnavailable) as info:
        ibsim_fabric.find_tools()
    assert str(info.value) == ('not installed here: ibsim (ibsim-utils), umad2sim (ibsim-utils: libumad2sim.so), '
                               'ibnetdiscover (infiniband-diags); install with "apt-get install -y ibsim-utils '
                               'infiniband-diags"')


@pytest.mark.parametrize('kwargs, message', [
    ({'hosts': 4, 'hcas_per_host': 8, 'leaves': 12, 'rails': True}, r'rails=True needs the leaves \(12\) in groups'),
    ({'hosts': 9, 'leaves': 2, 'hosts_per_leaf': 4}, r'9 hosts do not fit 2 leaf groups of 4 hosts'),
    ({'hosts': 4, 'leaves': 3, 'spines': 2, 'pods': 2}, r'3 leaves and 2 spines do not split into 2 pods'),
    ({'hosts': 4, 'empty_switches': 1}, r'empty switches hang off the spines'),
    ({'hosts': 40}, r'leaf-01 has no free port in 1-32'),
])
def test_fat_tree_refuses_what_it_cannot_build(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fat_tree(**kwargs)
