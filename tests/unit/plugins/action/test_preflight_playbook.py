"""site.yml's preflight: bad inventories and bad role variables stop the run before any node is contacted.

Runs the real playbooks/site.yml with ansible-playbook against small
inventories whose hosts cannot be reached on purpose (127.0.0.1, port 1): the
preflight runs on the Ansible controller only, so a run that got past it would
fail in the facts play instead. Each case asserts the plain message, that no
facts were gathered and that no message is wrapped in Jinja text or carries
an argument spec. The repository's own inventory passes the preflight.
"""
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[4]
PLAYBOOK = ROOT / "playbooks" / "site.yml"
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"
UNREACHABLE = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1}
PREFLIGHT_ONLY = ["--tags", "preflight", "--skip-tags", "facts"]


def run_site(tmp_path, inventories, args=(), env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"), ANSIBLE_SSH_TIMEOUT="2")
    env.update(env_extra or {})
    argv = [str(ANSIBLE_PLAYBOOK)]
    for inventory in inventories:
        argv += ["-i", str(inventory)]
    argv += [str(PLAYBOOK)] + list(args)
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(tmp_path), check=False)
    return result.returncode, result.stdout


def write_inventory(tmp_path, children, hostvars=None):
    inventory = {"all": {"vars": dict(UNREACHABLE), "children": children}}
    if hostvars:
        inventory["all"]["hosts"] = hostvars
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def hosts(*names, **group_vars):
    group = {"hosts": {n: None for n in names}}
    if group_vars:
        group["vars"] = group_vars
    return group


def cluster(gpu_vars=None, compute_vars=None, host_vars=None):
    """One controller (also slurmdbd), two GPU compute nodes."""
    children = {"slurm_controller": hosts("ctl"), "slurm_compute": hosts("gpu-01", "gpu-02", **(compute_vars or {})),
                "gpu_nodes": hosts("gpu-01", "gpu-02", **(gpu_vars or {})), "slurmdbd": hosts("ctl")}
    return children, host_vars


def assert_stopped_in_preflight(rc, output):
    assert rc != 0, output[-3000:]
    assert "TASK [Check the inventory and every role's inputs before anything changes]" in output, output[-3000:]
    # the run stopped there: no node was contacted
    assert "Gathering Facts" not in output
    assert "TASK [Gather the facts of every node" not in output
    assert "unreachable=1" not in output
    # plain messages only
    assert "Finalization of task args" not in output
    assert "argument_spec_data" not in output


INVENTORY_CASES = [
    pytest.param(
        {"slurm_controller": hosts("c1", "c2"), "slurm_compute": hosts("n1")},
        ["inventory group slurm_controller has 2 hosts (c1, c2): exactly one is supported until slurmctld HA is"],
        id="two-controllers"),
    pytest.param(
        {"slurm_compute": hosts("n1")},
        ["inventory group slurm_controller is missing: put exactly one host in it (slurmctld runs there)",
         'n1: inventory group slurm_controller has no hosts; its first host holds the munge key (role gpucluster.bringup.munge)'],
        id="no-controller"),
    pytest.param(
        {"slurm_controller": hosts("c1")},
        ["inventory group slurm_compute is missing: put at least one host in it (slurmd runs there)"],
        id="no-compute-group"),
    pytest.param(
        {"slurm_controller": hosts("c1"), "slurm_compute": {"hosts": {}}, "gpu_nodes": hosts("g1")},
        ["inventory group slurm_compute is empty: put at least one host in it (slurmd runs there)",
         "hosts of inventory group gpu_nodes must also be in inventory group slurm_compute (GPUs are scheduled as GRES of "
         "compute nodes), these are not: g1"],
        id="empty-compute-group"),
    pytest.param(
        {"slurm_controller": hosts("c1"), "slurm_compute": hosts("n1"), "gpu_nodes": hosts("n1", "g3")},
        ["hosts of inventory group gpu_nodes must also be in inventory group slurm_compute (GPUs are scheduled as GRES of "
         "compute nodes), these are not: g3"],
        id="gpu-node-not-compute"),
    pytest.param(
        {"slurm_controller": hosts("c1"), "slurm_compute": hosts("gpu_01", "gpu-02", "-n3")},
        ["node name 'gpu_01' is not one Slurm accepts: a host name of letters, digits and \"-\" (not first or last in a label), "
         "labels joined with \".\", no \"_\", spaces, brackets, commas, \"=\" or \"#\" (e.g. \"gpu-01\")",
         "node name '-n3' is not one Slurm accepts"],
        id="bad-node-names"),
]


@pytest.mark.parametrize("children, messages", INVENTORY_CASES)
def test_preflight_rejects_the_inventory(tmp_path, children, messages):
    rc, output = run_site(tmp_path, [write_inventory(tmp_path, children)])
    assert_stopped_in_preflight(rc, output)
    assert "the inventory has %d problem" % len(messages) in output, output[-3000:]
    for message in messages:
        assert message in output, output[-3000:]


SHARING = "gpu-02: slurm_gres_sharing is 'shards'; valid values: none, mps, shard (role gpucluster.bringup.slurm)"
ROLE_CASES = [
    pytest.param(
        cluster(host_vars={"gpu-02": {"slurm_gres_sharing": "shards"}}), [SHARING],
        id="sharing-typo"),
    pytest.param(
        cluster(compute_vars={"slurm_partitions": [{"name": "batch", "nodez": "ALL"}]}),
        ["gpu-[01-02]: slurm_partitions[0] has the unknown key 'nodez'; valid keys: default, name, nodes, options "
         "(role gpucluster.bringup.slurm)"],
        id="partition-unknown-key"),
    pytest.param(
        cluster(host_vars={"gpu-01": {"mig_layout": "all-balancd"}}),
        ["gpu-01: mig_layout is 'all-balancd', not a shipped layout or one of mig_layouts_custom; valid layouts: all-1g, "
         "all-1g.10gb, all-1g.18gb, all-1g.5gb, all-2g, all-2g.10gb, all-2g.20gb, all-3g, all-3g.20gb, all-3g.40gb, all-4g, all-7g, "
         "all-7g.40gb, all-7g.80gb, all-balanced, all-disabled, all-enabled (or \"\" to leave MIG alone) (role gpucluster.bringup.mig)"],
        id="mig-layout-typo"),
    pytest.param(
        cluster(host_vars={"ctl": {"slurmdbd_storage_pass": "pw with spaces", "enroot_ngc_api_key": ["nvapi-SECRET"]}}),
        ["ctl: slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, "
         "at least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); the value is not shown "
         "(role gpucluster.bringup.slurmdbd)",
         "ctl: enroot_ngc_api_key is a list; expected a string (the value is not shown) (role gpucluster.bringup.enroot)"],
        id="secrets-named-not-shown"),
    pytest.param(
        cluster(gpu_vars={"slurm_memory_reserve_mb": "2G"}, host_vars={"gpu-02": {"slurm_gres_sharing": "shards"},
                                                                       "ctl": {"munge_key_path": "munge.key"}}),
        ["gpu-[01-02]: slurm_memory_reserve_mb is '2G'; expected a whole number (role gpucluster.bringup.slurm)", SHARING,
         "ctl: munge_key_path is 'munge.key', expected an absolute path "],
        id="all-hosts-all-problems-in-one-failure"),
    pytest.param(
        cluster(host_vars={"gpu-02": {"slurm_cluster_name": "{{ [1, 2] }}", "pyxis_conf": {"container_scope": "{{ 'no' + 'de' }}"}}}),
        ["gpu-02: slurm_cluster_name is [1, 2]; expected a string (role gpucluster.bringup.slurm)",
         "gpu-02: pyxis_conf.container_scope is 'node'; valid values: global, job (role gpucluster.bringup.pyxis)"],
        id="templated-values-checked"),
    pytest.param(
        cluster(compute_vars={"slurm_partitions": [{"name": "gpu", "nodes": "gpu-[01-"}]},
                host_vars={"ctl": {"slurm_large_system_min_nodes": -1, "slurm_topology": "tree",
                                   "slurm_topology_settings": {"ibnetdiscover_src": "/nonexistent/fabric.txt"}}}),
        ["gpu-[01-02]: slurm_partitions[0].nodes is 'gpu-[01-' (partition gpu): hostlist \"gpu-[01-\" has a \"[\" without a matching "
         "\"]\"; expected ALL, a hostlist (gpu-[01-04]) or a list of node names (role gpucluster.bringup.slurm)",
         "ctl: slurm_large_system_min_nodes is -1; expected a whole number, 1 or more (the compute host count from which the "
         "large-cluster settings apply) (role gpucluster.bringup.slurm)",
         "ctl: slurm_topology_settings.ibnetdiscover_src is '/nonexistent/fabric.txt'; expected a file on the Ansible controller holding "
         "ibnetdiscover's output: there is no such file (role gpucluster.bringup.slurm)"],
        id="partition-hostlist-range-and-fabric-file"),
]


@pytest.mark.parametrize("inventory, messages", ROLE_CASES)
def test_preflight_rejects_role_variables(tmp_path, inventory, messages):
    children, host_vars = inventory
    rc, output = run_site(tmp_path, [write_inventory(tmp_path, children, host_vars)])
    assert_stopped_in_preflight(rc, output)
    assert "the inventory has %d problem" % len(messages) in output, output[-3000:]
    for message in messages:
        assert message in output, output[-3000:]
    assert "SECRET" not in output
    assert "pw with spaces" not in output


def test_values_that_need_facts_are_left_for_the_roles(tmp_path):
    children, host_vars = cluster(host_vars={"gpu-01": {"slurm_node_name": "{{ ansible_facts['hostname'] }}",
                                                        "pyxis_conf": {"runtime_path": "/run/{{ ansible_facts.nosuch }}"}}})
    rc, output = run_site(tmp_path, [write_inventory(tmp_path, children, host_vars)], PREFLIGHT_ONLY + ["-v"])
    # the preflight passes and names none of them (the roles' own argument validation, tagged always, fails later on gpu-01)
    preflight = output.split("TASK [Check the inventory and every role's inputs before anything changes]", 1)[1].split("PLAY [", 1)[0]
    assert preflight.strip("* \n").startswith("ok: [localhost]"), preflight
    assert "values checked, 2 left for after the facts" in preflight, preflight
    assert "Gathering Facts" not in output
    assert "unreachable=1" not in output
    del rc


def test_limit_limits_the_role_checks(tmp_path):
    # gpu-02's problem is not checked when the run is limited to gpu-01 (its roles do not run on gpu-02)
    children, host_vars = cluster(host_vars={"gpu-02": {"slurm_gres_sharing": "shards"}})
    path = write_inventory(tmp_path, children, host_vars)
    rc, output = run_site(tmp_path, [path], PREFLIGHT_ONLY + ["--limit", "gpu-01"])
    assert rc == 0, output[-3000:]
    rc, output = run_site(tmp_path, [path], PREFLIGHT_ONLY + ["--limit", "gpu-02"])
    assert_stopped_in_preflight(rc, output)
    assert SHARING in output, output[-3000:]


def test_the_repository_inventory_passes(tmp_path):
    extra = " ".join("%s=%s" % item for item in UNREACHABLE.items())
    rc, output = run_site(tmp_path, [ROOT / "inventory" / "hosts.yml", ROOT / "inventory" / "simulated"],
                          PREFLIGHT_ONLY + ["-v", "-e", extra])
    assert rc == 0, output[-3000:]
    assert "the inventory describes one Slurm cluster" in output, output[-3000:]
    assert "Gathering Facts" not in output
    assert "unreachable=1" not in output


@pytest.mark.parametrize("strategy, passes", [("free", False), ("host_pinned", False), ("linear", True)])
def test_a_strategy_that_lets_hosts_run_ahead_is_refused(tmp_path, strategy, passes):
    """ANSIBLE_STRATEGY=free made the slurm play fail halfway (measured, docs/scale.md): the preflight refuses it first."""
    extra = " ".join("%s=%s" % item for item in UNREACHABLE.items())
    rc, output = run_site(tmp_path, [ROOT / "inventory" / "hosts.yml", ROOT / "inventory" / "simulated"],
                          PREFLIGHT_ONLY + ["-e", extra], env_extra={"ANSIBLE_STRATEGY": strategy})
    if passes:
        assert rc == 0, output[-3000:]
        assert "the play's strategy is" not in output, output[-3000:]
        return
    assert_stopped_in_preflight(rc, output)
    assert "the inventory has 1 problem, nothing was changed" in output, output[-3000:]
    assert "the play's strategy is '%s' (the play's strategy keyword, ANSIBLE_STRATEGY or ansible.cfg)" % strategy in output, output[-3000:]


def test_bad_options_of_the_task_stop_it(tmp_path):
    """A role without groups and a host the inventory does not have checked nothing and passed; now the task fails."""
    children, host_vars = cluster()
    inventory = write_inventory(tmp_path, children, host_vars)
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False, "tasks": [
            {"gpucluster.bringup.preflight": {"inventory": False, "roles": [{"name": "slurm", "groups": []}], "hosts": ["gpu-99"]}},
            {"ansible.builtin.debug": {"msg": "after the preflight"}}]}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"))
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(play)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, cwd=str(tmp_path), check=False)
    output = result.stdout
    assert result.returncode != 0, output[-3000:]
    assert "the preflight task has 2 bad options, nothing was checked or changed" in output, output[-3000:]
    assert ("roles[0].groups is []; expected one or more inventory groups whose hosts run role slurm (e.g. [slurm_compute]; "
            "[all] for every host)") in output, output[-3000:]
    assert ("hosts[0] is 'gpu-99', which is not a host of the inventory; expected hosts of the inventory (ctl,gpu-[01-02])"
            in output), output[-3000:]
    assert "after the preflight" not in output
