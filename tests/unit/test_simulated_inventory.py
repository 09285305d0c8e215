# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulated inventory's node addresses: literal, and the addresses the containers get (issue 50 item 6).

Ansible prints a delegated task's label with the delegate's ``ansible_host`` as the inventory holds it, untemplated
(``CallbackBase.host_label`` reads the result's ``_ansible_delegated_vars``). A templated ``ansible_host`` showed as
``ok: [gpu-01 -> ctl({{ (gpucluster_sim_net ~ '.' ~ ...)]``. Each inventory is loaded here as ansible-playbook loads
it (InventoryManager, VariableManager, the group_vars and host_vars beside it; no node is contacted): the demo
cluster's (``-i inventory/hosts.yml -i inventory/simulated/hosts.yml``, what scripts/cluster.sh passes) and each
molecule scenario's (built as molecule builds it: its platforms with connection_options, and its inventory links).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pathlib
import re
import subprocess

import pytest
import yaml

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible.vars.manager import VariableManager

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))


def _host_vars(sources):
    """{host: (ansible_host as the inventory holds it, ansible_host templated)} of an inventory."""
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(s) for s in sources])
    manager = VariableManager(loader=loader, inventory=inventory)
    found = {}
    for host in inventory.get_hosts():
        variables = manager.get_vars(host=host)
        raw = variables.get("ansible_host")
        found[host.name] = (raw, Templar(loader=loader, variables=variables).template(raw))
    return found


def _cluster_addresses():
    """{node: address} of the demo cluster's containers, from scripts/lib/common.sh (what cluster.sh gives them)."""
    out = subprocess.run(["bash", "-c", '. scripts/lib/common.sh && echo "$GPUCLUSTER_SIM_NET_BASE ${GPUCLUSTER_SIM_NODES[*]}"'],
                         cwd=str(ROOT), env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True).stdout.split()
    base = out[0]
    return dict((entry.split(":")[0], "%s.%s" % (base, entry.split(":")[1])) for entry in out[1:])


def _molecule_inventory(scenario, tmp_path):
    """The inventory directory molecule makes for a scenario: ansible_inventory.yml from the platforms and
    connection_options, and provisioner.inventory.links as symbolic links. Returns (directory, {node: ip})."""
    config = yaml.safe_load((ROOT / "molecule" / scenario / "molecule.yml").read_text())
    provisioner = config["provisioner"]
    options = dict({"ansible_connection": "podman"}, **(provisioner.get("connection_options") or {}))
    hosts = dict((p["name"], dict(options)) for p in config["platforms"])
    directory = tmp_path / scenario
    directory.mkdir()
    (directory / "ansible_inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}, "ungrouped": {"hosts": hosts}}))
    for name, source in provisioner["inventory"]["links"].items():
        (directory / name).symlink_to((ROOT / "molecule" / scenario / source).resolve())
    return directory, dict((p["name"], p["ip"]) for p in config["platforms"])


def test_the_demo_clusters_inventory_gives_each_node_its_address_literally():
    found = _host_vars([ROOT / "inventory" / "hosts.yml", ROOT / "inventory" / "simulated" / "hosts.yml"])
    addresses = _cluster_addresses()
    assert sorted(found) == sorted(addresses)
    for name, (raw, templated) in sorted(found.items()):
        assert isinstance(raw, str) and "{{" not in raw, "%s: ansible_host is %r, expected a literal address" % (name, raw)
        assert raw == templated == addresses[name], (name, raw, addresses[name])


def test_the_fallback_address_agrees_with_the_literal_one():
    """A host added without ansible_host (benchmarks/ansible_scale.py's clones) gets gpucluster_sim_net . its octet:
    for the cluster's own nodes that is the literal address."""
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(ROOT / "inventory" / "hosts.yml"),
                                                         str(ROOT / "inventory" / "simulated" / "hosts.yml")])
    manager = VariableManager(loader=loader, inventory=inventory)
    fallback = loader.load_from_file(str(ROOT / "inventory" / "simulated" / "group_vars" / "all" / "simulated.yml"), trusted_as_template=True)["ansible_host"]
    assert "gpucluster_sim_octet" in fallback
    for host in inventory.get_hosts():
        variables = manager.get_vars(host=host)
        assert Templar(loader=loader, variables=variables).template(fallback) == variables["ansible_host"], host.name


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_molecule_scenarios_inventory_reaches_each_node_at_its_containers_address(scenario, tmp_path):
    directory, ips = _molecule_inventory(scenario, tmp_path)
    found = _host_vars([directory])
    assert set(ips) <= set(found), (sorted(ips), sorted(found))
    for name, ip in sorted(ips.items()):
        assert found[name][1] == ip, "%s: ansible_host %r is %r, the container's ip is %s" % (name, found[name][0], found[name][1], ip)


MOLECULE_ADDRESSES = ROOT / "inventory" / "simulated" / ".molecule-addresses.yml"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_molecule_scenarios_inventory_gives_each_node_its_address_literally(scenario, tmp_path):
    directory, ips = _molecule_inventory(scenario, tmp_path)
    found = _host_vars([directory])
    for name in sorted(ips):
        raw = found[name][0]
        assert isinstance(raw, str) and "{{" not in raw, "%s: ansible_host is %r, expected a literal address" % (name, raw)


def test_the_molecule_addresses_are_the_scenarios_platforms_and_literal(tmp_path):
    """Read through the links named as a scenario's inventory names them (without the dot, which hides them from a
    directory source): .molecule-addresses.yml (every scenario) and .molecule-login.yml (the login node, linked by the
    scenarios that have a login container)."""
    for scenario in SCENARIOS:
        config = yaml.safe_load((ROOT / "molecule" / scenario / "molecule.yml").read_text())
        links = config["provisioner"]["inventory"]["links"]
        directory = tmp_path / scenario
        directory.mkdir()
        for name in ("molecule-addresses.yml", "molecule-login.yml"):
            if name in links:
                (directory / name).symlink_to((ROOT / "molecule" / scenario / links[name]).resolve())
        found = _host_vars(sorted(directory.iterdir()))
        ips = dict((p["name"], p["ip"]) for p in config["platforms"])
        assert dict((name, raw) for name, (raw, _t) in found.items()) == ips, scenario
        net = config["provisioner"]["connection_options"].get("gpucluster_sim_net")
        assert all(re.match(r"^%s\.\d+$" % re.escape(net), ip) for ip in ips.values()), (scenario, net, ips)


def test_the_simulated_directory_as_a_source_is_the_demo_cluster():
    """``-i inventory/simulated`` (a directory: every file in it is read) gives the demo's addresses, never molecule's."""
    found = _host_vars([ROOT / "inventory" / "hosts.yml", ROOT / "inventory" / "simulated"])
    addresses = _cluster_addresses()
    assert dict((name, raw) for name, (raw, _t) in found.items()) == addresses
