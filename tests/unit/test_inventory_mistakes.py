"""Day one on a real site: realistic inventory mistakes, each stopped by the controller preflight, no node contacted.

Each case is a small overlay of the shipped example inventory of a mixed site (inventory/examples/mixed-site: a head
node with slurmctld and slurmdbd, 4 DGX H100, 2 L40S nodes, MIG 1g.10gb x 7 on four GPUs of dgx-01, two partitions,
two accounts, a QoS): a copy in tmp_path, the overlay merged into one of its files (a host_vars or group_vars file, or
hosts.yml), then the real playbooks/site.yml run by ansible-playbook without tags (the first case of each kind), or
playbooks/preflight.yml, the play site.yml imports first (the others: a second less per case; that site.yml runs it
first, untagged, is checked below). Every host is unreachable on
purpose (127.0.0.1, port 1, from the extra vars): had the preflight passed, the facts play would have tried the nodes
and said so. Each case asserts that the run failed in the preflight, that its message names the host, the variable and
the value (the fragments of the case), and that no node was contacted.

The cases are grouped by kind; ``KIND_COUNTS`` (printed by ``python tests/unit/test_inventory_mistakes.py``) gives the
count per kind for the closing note of the issue.
"""
import copy
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "inventory" / "examples" / "mixed-site"
SITE = ROOT / "playbooks" / "site.yml"
PREFLIGHT = ROOT / "playbooks" / "preflight.yml"
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"
# extra vars beat every inventory value: a node contacted would be reported unreachable, loudly
UNREACHABLE = ["-e", "ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1"]
TASK = "TASK [Check the inventory and every role's inputs before anything changes]"

ALL = "group_vars/all.yml"
DGX = "group_vars/dgx_h100.yml"
L40S = "group_vars/l40s_nodes.yml"
DGX01 = "host_vars/dgx-01.yml"
HOSTS = "hosts.yml"


def _example(name):
    return yaml.safe_load((EXAMPLE / name).read_text())


def _merge(base, overlay):
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def make_inventory(tmp_path, overlays):
    """A copy of the example in tmp_path with ``overlays`` ({file: {var: value}}) merged in."""
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLE, inventory)
    for name, overlay in overlays.items():
        path = inventory / name
        data = yaml.safe_load(path.read_text()) if path.exists() else {}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(_merge(data or {}, overlay), sort_keys=False))
    return inventory


def run(tmp_path, inventory, playbook=SITE, args=()):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"), ANSIBLE_SSH_TIMEOUT="2",
               ANSIBLE_RETRY_FILES_ENABLED="0")
    argv = [str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(playbook)] + UNREACHABLE + list(args)
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(tmp_path), check=False)
    return result.returncode, result.stdout


def assert_no_node_contacted(output):
    assert "Gathering Facts" not in output
    assert "TASK [Gather the facts of every node" not in output
    assert "UNREACHABLE" not in output and "unreachable=1" not in output
    for host in ("head-01", "dgx-01", "l40s-01"):
        assert "ok: [%s]" % host not in output and "changed: [%s]" % host not in output


# ------------------------------------------------------------------------------------------------ overlay helpers

def partitions(index=None, **changes):
    """The example's slurm_partitions with partition ``index`` changed (options merged)."""
    parts = copy.deepcopy(_example(ALL)["slurm_partitions"])
    if index is not None:
        for key, value in changes.items():
            if key == "options":
                parts[index]["options"].update(value)
            else:
                parts[index][key] = value
    return {ALL: {"slurm_partitions": parts}}


def listed(var, index, **changes):
    """The example's ``var`` (slurmdbd_qos/accounts/users) with entry ``index`` changed."""
    entries = copy.deepcopy(_example(ALL)[var])
    entries[index].update(changes)
    return {ALL: {var: entries}}


def layout(entries):
    return {DGX01: {"mig_layouts_custom": {"dgx-half-1g": entries}}}


def half(first=None, **instance):
    """dgx-01's layout with GPU 0's entry replaced by ``first`` or its instance changed."""
    entries = copy.deepcopy(_example(DGX01)["mig_layouts_custom"]["dgx-half-1g"])
    if first is not None:
        entries[0] = first
    if instance:
        entries[0]["instances"][0].update(instance)
    return layout(entries)


def merged(*overlays):
    result = {}
    for overlay in overlays:
        _merge(result, copy.deepcopy(overlay))
    return result


def hosts_overlay(children):
    return {HOSTS: {"all": {"children": children}}}


V = "(role gpucluster.bringup.validate)"
MIG_ROLE = "(role gpucluster.bringup.mig)"
SLURM_ROLE = "(role gpucluster.bringup.slurm)"
DBD_ROLE = "(role gpucluster.bringup.slurmdbd)"
MIG_GPUS = "mig_layouts_custom['dgx-half-1g']"
EVERY = "dgx-[01-04],head-01,l40s-[01-02]: "

# (kind, id, overlay, fragments): every fragment must be in the failure; the first names the host.
CASES = [
    # ---------------------------------------------------------------- MIG layouts against the declared GPUs
    ("mig", "profile-typo", half(profile="1g.10gbb"),
     ["dgx-01: %s[0] (mig_layout 'dgx-half-1g'): GPU 0 (NVIDIA H100 80GB HBM3, as gpucluster_node_type.gpu_model 'H100' declares): "
      "instances[0] profile '1g.10gbb' is not a MIG profile of this GPU; valid: 1g.10gb" % MIG_GPUS, MIG_ROLE]),
    ("mig", "count-too-many", half(count=8),
     ["dgx-01: %s[0] (mig_layout 'dgx-half-1g')" % MIG_GPUS, "too many 1g.10gb instances: 8 wanted, this GPU allows at most 7"]),
    ("mig", "gpu-index-out-of-range", half({"gpu": "8", "instances": [{"profile": "1g.10gb", "count": 7}]}),
     ["dgx-01: %s[0].gpu is 8, but gpucluster_node_type.gpu_count says the node has 8 GPUs; expected a GPU index from 0 to 7" % MIG_GPUS]),
    ("mig", "gpu-selected-twice", half({"gpu": "1", "instances": [{"profile": "1g.10gb", "count": 7}]}),
     ["dgx-01: %s[1].gpu is 1, already selected by %s[0]; select each GPU once" % (MIG_GPUS, MIG_GPUS),
      "selects none of GPUs 0 of the 8 the node has"]),
    ("mig", "layout-on-l40s", {L40S: {"mig_layout": "all-1g.10gb"}},
     ["l40s-[01-02]: gpucluster.bringup.mig_layouts['all-1g.10gb'][0] (mig_layout 'all-1g.10gb') asks for MIG on GPU 0, "
      "but gpucluster_node_type.gpu_model says the node's GPUs are 'L40S' (NVIDIA L40S), which have no MIG", MIG_ROLE]),
    ("mig", "layout-name-typo", {DGX01: {"mig_layout": "dgx-half-1gb"}},
     ["dgx-01: mig_layout is 'dgx-half-1gb', not a shipped layout or one of mig_layouts_custom; valid layouts:"]),
    ("mig", "a100-profile-on-h100", half(profile="1g.5gb"),
     ["dgx-01: %s[0]" % MIG_GPUS, "instances[0] profile '1g.5gb' is not a MIG profile of this GPU; valid: 1g.10gb"]),
    ("mig", "h200-profile-on-h100", half(profile="1g.18gb"),
     ["dgx-01: %s[0]" % MIG_GPUS, "profile '1g.18gb' is not a MIG profile of this GPU"]),
    ("mig", "instances-do-not-fit", half({"gpu": "0", "instances": [{"profile": "3g.40gb", "count": 2}, {"profile": "2g.20gb"}]}),
     ["dgx-01: %s[0]" % MIG_GPUS, "the instances 2 x 3g.40gb, 2g.20gb need 8 compute slices; this GPU has 7"]),
    ("mig", "placement-impossible", half({"gpu": "0", "instances": [{"profile": "1g.20gb", "count": 3}, {"profile": "3g.40gb"}]}),
     ["dgx-01: %s[0]" % MIG_GPUS, "the instances 3 x 1g.20gb, 3g.40gb cannot be placed together on this GPU"]),
    ("mig", "gpus-left-out", layout([{"gpu": str(i), "instances": [{"profile": "1g.10gb", "count": 7}]} for i in range(4)]),
     ["dgx-01: mig_layout 'dgx-half-1g' (mig_layouts_custom['dgx-half-1g']) selects none of GPUs 4, 5, 6, 7 of the 8 the node has "
      "(gpucluster_node_type.gpu_count 8); expected an entry for each GPU", "or mig_require_all_gpus: false"]),
    ("mig", "count-zero", half(count=0),
     ["dgx-01: %s[0] (mig_layout 'dgx-half-1g'): %s[0].instances[0].count is 0, expected a whole number of 1 or more" % (MIG_GPUS, MIG_GPUS)]),
    ("mig", "entry-unknown-key", half({"gpu": "0", "profiles": [{"profile": "1g.10gb", "count": 7}]}),
     ["dgx-01: %s[0] (mig_layout 'dgx-half-1g'): %s[0] has the unknown key profiles; valid keys: gpu, model, mig, instances, shape"
      % (MIG_GPUS, MIG_GPUS)]),
    ("mig", "instances-with-mig-false", half({"gpu": "0", "mig": False, "instances": [{"profile": "1g.10gb", "count": 7}]}),
     ["dgx-01: %s[0] (mig_layout 'dgx-half-1g'): %s[0]: instances are given with mig: false" % (MIG_GPUS, MIG_GPUS)]),
    ("mig", "model-filter-mismatch", half({"gpu": "0", "model": "A100", "instances": [{"profile": "1g.10gb", "count": 7}]}),
     ["dgx-01: %s[0].model is 'A100', but gpucluster_node_type.gpu_model says GPU 0 is NVIDIA H100 80GB HBM3" % MIG_GPUS]),
    ("mig", "4g-twice", half({"gpu": "0", "instances": [{"profile": "4g.40gb", "count": 2}]}),
     ["dgx-01: %s[0]" % MIG_GPUS, "too many 4g.40gb instances: 2 wanted, this GPU allows at most 1"]),
    ("mig", "balanced-on-l40s", {L40S: {"mig_layout": "all-balanced"}},
     ["l40s-[01-02]: mig_layout 'all-balanced' (gpucluster.bringup.mig_layouts['all-balanced']) selects none of GPUs 0, 1, 2, 3 of the 4 the node has"]),
    ("mig", "bad-gpu-selector", half({"gpu": "GPU0", "instances": [{"profile": "1g.10gb", "count": 7}]}),
     ["dgx-01: %s[0] (mig_layout 'dgx-half-1g'): %s[0].gpu is 'GPU0', expected a GPU index (0, 1, ...), a GPU UUID (GPU-...) or \"all\""
      % (MIG_GPUS, MIG_GPUS)]),
    ("mig", "layout-not-a-list", layout({"gpu": "0"}),
     ["dgx-01: layout 'dgx-half-1g' is {'gpu': '0'}; a layout is a non-empty list of GPU entries"]),
    ("mig", "count-vs-layout-indices", {DGX01: {"gpucluster_node_type": {"name": "dgx-h100", "gpu_model": "H100", "gpu_count": 4}}},
     ["dgx-01: %s[4].gpu is 4, but gpucluster_node_type.gpu_count says the node has 4 GPUs; expected a GPU index from 0 to 3" % MIG_GPUS]),
    # ---------------------------------------------------------------- partitions
    ("partitions", "gres-as-partition-option", partitions(0, options={"Gres": "gpu:8"}),
     ["head-01: slurm_partitions[0].options.Gres is 'gpu:8' (partition dgx): Gres is a key of a node (NodeName line), not of a "
      "partition", SLURM_ROLE]),
    ("partitions", "nodes-as-option", partitions(1, options={"Nodes": "l40s-[01-02]"}),
     ["head-01: slurm_partitions[1].options.Nodes is 'l40s-[01-02]' (partition l40s): give the nodes of a partition as "
      "slurm_partitions[1].nodes"]),
    ("partitions", "option-key-typo", partitions(0, options={"MaxWallTime": "2-00:00:00"}),
     ["head-01: slurm_partitions[0].options.MaxWallTime (partition dgx): 'MaxWallTime' is not a PartitionName option of slurm.conf",
      "valid keys: AllocNodes"]),
    ("partitions", "node-that-does-not-exist", partitions(0, nodes="dgx-[01-05]"),
     ["head-01: slurm_partitions[0].nodes is 'dgx-[01-05]' (partition dgx): dgx-05 is not a compute node of the inventory; expected ALL "
      "or names of hosts of slurm_compute (dgx-[01-04],l40s-[01-02])"]),
    ("partitions", "node-list-typo", partitions(1, nodes=["l40s-01", "l40s-2"]),
     ["head-01: slurm_partitions[1].nodes is ['l40s-01', 'l40s-2'] (partition l40s): l40s-2 is not a compute node of the inventory"]),
    ("partitions", "state-typo", partitions(0, options={"State": "ENABLED"}),
     ["head-01: slurm_partitions[0].options.State is 'ENABLED'; valid values: UP, DOWN, DRAIN, INACTIVE (partition dgx)"]),
    ("partitions", "allow-accounts-unknown", partitions(0, options={"AllowAccounts": "research,physics"}),
     ["head-01: slurm_partitions[0].options.AllowAccounts is 'research,physics' (partition dgx): physics is not an account of "
      "slurmdbd_accounts"]),
    ("partitions", "allow-qos-typo", partitions(1, options={"AllowQos": "normal,gpu-limted"}),
     ["head-01: slurm_partitions[1].options.AllowQos is 'normal,gpu-limted' (partition l40s): QOS gpu-limted is not defined"]),
    ("partitions", "two-defaults", partitions(1, default=True),
     [EVERY + "slurm_partitions: 2 partitions are marked default; at most one may be"]),
    ("partitions", "name-twice", partitions(1, name="dgx"),
     [EVERY + "slurm_partitions[1].name 'dgx' is defined twice"]),
    ("partitions", "unknown-entry-key", partitions(1, nodez="l40s-[01-02]"),
     [EVERY + "slurm_partitions[1] has the unknown key 'nodez'; valid keys: default, name, nodes, options"]),
    ("partitions", "features-as-option", partitions(0, options={"Features": "h100"}),
     ["head-01: slurm_partitions[0].options.Features is 'h100' (partition dgx): Features is a key of a node"]),
    ("partitions", "default-as-option", partitions(1, options={"Default": "YES"}),
     ["head-01: slurm_partitions[1].options.Default is 'YES' (partition l40s): mark the default partition with "
      "slurm_partitions[1].default: true"]),
    ("partitions", "max-nodes-word", partitions(1, options={"MaxNodes": "two"}),
     ["head-01: slurm_partitions[1].options.MaxNodes is 'two'; expected a whole number or UNLIMITED (partition l40s)"]),
    ("partitions", "priority-tier-negative", partitions(0, options={"PriorityTier": -1}),
     ["head-01: slurm_partitions[0].options.PriorityTier is -1; expected a whole number from 0 to 65533 (partition dgx)"]),
    ("partitions", "hostlist-unparsable", partitions(0, nodes="dgx-[01-"),
     [EVERY + "slurm_partitions[0].nodes is 'dgx-[01-' (partition dgx): hostlist \"dgx-[01-\" has a \"[\" without a matching \"]\""]),
    ("partitions", "all-in-lower-case", partitions(0, nodes="all"),
     ["the inventory has 1 problem", EVERY + "slurm_partitions[0].nodes is 'all' (partition dgx); expected ALL (upper case"]),
    ("partitions", "node-gres-disagrees-with-mig", {DGX01: {"slurm_node_params": {"Gres": "gpu:1g.10gb:7,gpu:h100:4"}}},
     ["dgx-01: slurm_node_params.Gres is 'gpu:1g.10gb:7,gpu:h100:4', but mig_layout 'dgx-half-1g' on the GPUs the inventory declares "
      "yields gpu:1g.10gb:28,gpu:h100:4", SLURM_ROLE]),
    ("partitions", "node-gres-count-l40s", {L40S: {"slurm_node_params": {"Gres": "gpu:l40s:8"}}},
     ["l40s-[01-02]: slurm_node_params.Gres is 'gpu:l40s:8': 8 GPUs, but gpucluster_node_type.gpu_count says the node has 4"]),
    # ---------------------------------------------------------------- associations and QoS
    ("associations", "negative-fairshare", listed("slurmdbd_accounts", 0, Fairshare=-5),
     ["head-01: slurmdbd_accounts[0].Fairshare is -5: account research Fairshare=-5: -5 is out of range; expected a whole number "
      "from 1 to 2147483646", DBD_ROLE]),
    ("associations", "negative-user-maxjobs", listed("slurmdbd_users", 1, MaxJobs=-20),
     ["head-01: slurmdbd_users[1].MaxJobs is -20: user bob MaxJobs=-20: -20 is out of range; expected a whole number from 0 to "
      "4294967293, or -1 (or UNLIMITED) to remove the limit"]),
    ("associations", "negative-qos-limit", listed("slurmdbd_qos", 0, MaxJobsPerUser=-3),
     ["head-01: slurmdbd_qos[0].MaxJobsPerUser is -3: QOS gpu-limited MaxJobsPerUser=-3: -3 is out of range"]),
    ("associations", "negative-tres-count", listed("slurmdbd_accounts", 1, GrpTRES="gres/gpu=-16"),
     ["head-01: slurmdbd_accounts[1].GrpTRES is 'gres/gpu=-16'", "the count of gres/gpu is '-16'"]),
    ("associations", "tres-without-type", listed("slurmdbd_qos", 0, MaxTRESPerUser="gpu=8"),
     ["head-01: slurmdbd_qos[0].MaxTRESPerUser is 'gpu=8'", '"gpu" is not a TRES name (did you mean gres/gpu?)']),
    ("associations", "parent-does-not-exist", listed("slurmdbd_accounts", 1, parent="physics"),
     ["head-01: slurmdbd_accounts[1].parent is 'physics' (account teaching), which is not an account of slurmdbd_accounts; expected "
      "root or one of research, root, teaching"]),
    ("associations", "user-in-missing-account", listed("slurmdbd_users", 0, accounts=["reserch"]),
     ["head-01: slurmdbd_users[0].accounts[0] is 'reserch' (user alice), which is not an account of slurmdbd_accounts"]),
    ("associations", "qos-typo-in-account", listed("slurmdbd_accounts", 0, QOS=["normal", "gpu-limted"]),
     ["head-01: slurmdbd_accounts[0] uses QOS 'gpu-limted', which is not in slurmdbd_qos; expected one of gpu-limited, normal"]),
    ("associations", "default-qos-not-listed", listed("slurmdbd_accounts", 1, DefaultQOS="normal"),
     ["head-01: slurmdbd_accounts[1].DefaultQOS is 'normal', not in its QOS list (gpu-limited)"]),
    ("associations", "default-account-not-his", listed("slurmdbd_users", 1, default_account="teachng"),
     ["head-01: slurmdbd_users[1].default_account is 'teachng' (user bob); expected one of its accounts: research, teaching"]),
    ("associations", "upper-case-name", listed("slurmdbd_accounts", 1, name="Teaching"),
     ["the inventory has 1 problem", "head-01: slurmdbd_accounts[1].name is 'Teaching'", "has upper-case letters"]),
    ("associations", "setting-typo", listed("slurmdbd_users", 1, MaxJob=20),
     ["head-01: slurmdbd_users[1].MaxJob: 'MaxJob' is not a setting of user bob; valid settings:"]),
    ("associations", "wall-time-words", listed("slurmdbd_qos", 0, MaxWall="2 days"),
     ["head-01: slurmdbd_qos[0].MaxWall is '2 days'", "expected a time as MM, MM:SS, HH:MM:SS"]),
    ("associations", "user-without-accounts", listed("slurmdbd_users", 0, accounts=[]),
     ["head-01: slurmdbd_users[0].accounts is [] (user alice); expected at least one account"]),
    ("associations", "account-twice", listed("slurmdbd_accounts", 1, name="research"),
     ["head-01: slurmdbd_accounts[1].name is 'research', also slurmdbd_accounts[0]; give each once"]),
    ("associations", "admin-level-typo", listed("slurmdbd_users", 0, admin_level="superuser"),
     ["head-01: slurmdbd_users[0].admin_level is 'superuser': user alice AdminLevel='superuser': expected one of none, operator, "
      "administrator"]),
    ("associations", "qos-flag-typo", listed("slurmdbd_qos", 0, Flags=["DenyOnLimt"]),
     ["head-01: slurmdbd_qos[0].Flags is ['DenyOnLimt']", "unknown QOS flag 'DenyOnLimt'"]),
    ("associations", "preempt-unknown-qos", listed("slurmdbd_qos", 0, Preempt=["scavenger"]),
     ["head-01: slurmdbd_qos[0].Preempt names QOS 'scavenger', which is not in slurmdbd_qos"]),
    ("associations", "every-bad-value-at-once",
     merged(listed("slurmdbd_accounts", 0, Fairshare=-5, MaxJobs=-2), listed("slurmdbd_qos", 0, MaxJobsPerUser=-3)),
     ["head-01: slurmdbd_accounts[0].Fairshare is -5", "head-01: slurmdbd_accounts[0].MaxJobs is -2",
      "head-01: slurmdbd_qos[0].MaxJobsPerUser is -3"]),
    # ---------------------------------------------------------------- munge keys
    ("munge", "key-file-missing", {ALL: {"munge_key_src": "/nonexistent/site/munge.key"}},
     ["dgx-[01-04],head-01,l40s-[01-02]: munge_key_src is '/nonexistent/site/munge.key', expected a file on the Ansible controller "
      "holding the cluster's munge key", "there is no such file"]),
    ("munge", "key-lookup-of-missing-file", {ALL: {"munge_key_b64": "{{ lookup('file', '/nonexistent/keys/munge.key') | b64encode }}"}},
     [EVERY + "munge_key_b64 cannot be templated: a lookup reads the file '/nonexistent/keys/munge.key' on the Ansible controller",
      "(the value is not shown)"]),
    ("munge", "two-key-sources", {ALL: {"munge_key_src": "/etc/hostname", "munge_key_b64": "c2VjcmV0" * 8}},
     [EVERY + "munge_key_b64 and munge_key_src are both set (the key is not shown)"]),
    ("munge", "key-path-relative", {ALL: {"munge_key_path": "munge.key"}},
     ["dgx-[01-04],head-01,l40s-[01-02]: munge_key_path is 'munge.key', expected an absolute path"]),
    ("munge", "key-not-base64", {ALL: {"munge_key_b64": "not base64!"}},
     ["dgx-[01-04],head-01,l40s-[01-02]: munge_key_b64 is not valid base64 (10 characters); create one with"]),
    # ---------------------------------------------------------------- the node type (gpucluster_node_type), its readers' expectations
    ("validate", "model-typo", {DGX: {"gpucluster_node_type": {"gpu_model": "H10O"}}},
     ["dgx-[01-04]: gpucluster_node_type.gpu_model is 'H10O', which is part of no GPU name the catalogue knows; expected part of one of: ",
      "H100 80GB HBM3", V]),
    ("validate", "l40s-model-typo", {L40S: {"gpucluster_node_type": {"gpu_model": "L40X"}}},
     ["l40s-[01-02]: gpucluster_node_type.gpu_model is 'L40X', which is part of no GPU name the catalogue knows", "L40S", V]),
    ("validate", "node-type-unknown-key", {L40S: {"gpucluster_node_type": {"gpus": 4}}},
     ["l40s-[01-02]: gpucluster_node_type has the unknown key 'gpus'; valid keys: gpu_count, gpu_model, hcas, name, nvlink_domain",
      "(role gpucluster.bringup.slurm_healthcheck)"]),
    ("validate", "gpus-without-model", {L40S: {"gpucluster_node_type": {"gpu_model": ""}}},
     ["l40s-[01-02]: gpucluster_node_type.gpu_model is '' but gpu_count is 4; expected the GPUs' model"]),
    ("validate", "partition-that-does-not-exist", {ALL: {"validate_jobs": {"partition": "gpu"}}},
     [EVERY + "validate_jobs.partition is 'gpu', which is not a partition of slurm_partitions; expected one of dgx, l40s"]),
    ("validate", "count-negative", {DGX: {"gpucluster_node_type": {"gpu_count": -8}}},
     ["dgx-[01-04]: gpucluster_node_type.gpu_count is -8; expected the number of GPUs of this node type"]),
    ("validate", "model-a-list", {DGX: {"gpucluster_node_type": {"gpu_model": ["H100"]}}},
     ["dgx-[01-04]: gpucluster_node_type.gpu_model is ['H100']; expected a string"]),
    ("validate", "node-type-not-a-dict", {L40S: {"gpucluster_node_type": "l40s"}},
     ["l40s-[01-02]: gpucluster_node_type is 'l40s'; expected a dictionary"]),
    ("validate", "hca-name", {DGX: {"gpucluster_node_type": {"hcas": ["mlx5_0", "mlx5 1"]}}},
     ["dgx-[01-04]: gpucluster_node_type.hcas[1] is 'mlx5 1'; expected an InfiniBand device name, such as mlx5_0"]),
    # ---------------------------------------------------------------- Slurm options
    ("slurm", "gres-sharing-typo", {DGX: {"slurm_gres_sharing": "shards"}},
     ["dgx-[01-04]: slurm_gres_sharing is 'shards'; valid values: none, mps, shard"]),
    ("slurm", "memory-reserve-with-unit", {L40S: {"slurm_memory_reserve_mb": "8G"}},
     ["l40s-[01-02]: slurm_memory_reserve_mb is '8G'; expected a whole number"]),
    ("slurm", "configless-without-enable", {ALL: {"slurm_configless": True, "slurm_conf_overrides": {"SlurmctldParameters": "idle_on_node_suspend"}}},
     [EVERY + "slurm_configless is true but slurm_conf_overrides sets SlurmctldParameters=idle_on_node_suspend without enable_configless"]),
    ("slurm", "local-packages-without-dir", {ALL: {"slurm_install_source": "local"}},
     [EVERY + 'slurm_install_source is "local" but slurm_local_package_dir is empty']),
    ("slurm", "cluster-name-empty", {ALL: {"slurm_cluster_name": ""}},
     [EVERY + "slurm_cluster_name is ''; expected the name of the cluster"]),
    ("slurm", "adopt-without-cgroups", {ALL: {"slurm_pam_slurm_adopt": True, "slurm_cgroup_enabled": False}},
     ["the inventory has 1 problem", EVERY + "slurm_pam_slurm_adopt needs slurm_cgroup_enabled"]),
    ("slurm", "topology-file-missing", {ALL: {"slurm_topology": "tree", "slurm_topology_settings": {"ibnetdiscover_src": "/nonexistent/fabric.txt"}}},
     [EVERY + "slurm_topology_settings.ibnetdiscover_src is '/nonexistent/fabric.txt'", "there is no such file"]),
    ("slurm", "slurmdbd-port-out-of-range", {ALL: {"slurmdbd_port": 68190}},
     ["head-01: slurmdbd_port is 68190; expected a TCP port, a whole number from 1 to 65535"]),
    ("slurm", "database-password-with-spaces", {ALL: {"slurmdbd_storage_pass": "pass word 1"}},
     ["head-01: slurmdbd_storage_pass must be empty", "the value is not shown"]),
    ("slurm", "large-system-threshold-zero", {ALL: {"slurm_large_system_min_nodes": 0}},
     [EVERY + "slurm_large_system_min_nodes is 0; expected a whole number, 1 or more"]),
    # ---------------------------------------------------------------- enroot and pyxis
    ("containers", "enroot-url-empty", {ALL: {"enroot_package_source": "url", "enroot_release_url": ""}},
     [EVERY + "enroot_package_source is 'url' but enroot_release_url is empty"]),
    ("containers", "enroot-config-lower-case", {ALL: {"enroot_conf": {"enroot_mount_home": "y"}}},
     [EVERY + "enroot_conf keys must look like ENROOT_NAME", "enroot_mount_home"]),
    ("containers", "pyxis-importer-relative", {ALL: {"pyxis_conf": {"importer": "enroot-import.sh"}}},
     [EVERY + "pyxis_conf.importer must be an absolute path to an executable on the nodes, got 'enroot-import.sh'"]),
    ("containers", "pyxis-scope-typo", {ALL: {"pyxis_conf": {"container_scope": "node"}}},
     [EVERY + "pyxis_conf.container_scope is 'node'; valid values: global, job"]),
    ("containers", "enroot-dir-mode", {ALL: {"enroot_shared_dir_mode": "rwxrwxrwt"}},
     [EVERY + "enroot_shared_dir_mode is 'rwxrwxrwt'; expected an octal mode"]),
    ("containers", "enroot-hook-path", {ALL: {"enroot_hooks_disabled": ["/etc/enroot/hooks.d/99-mellanox.sh"]}},
     [EVERY + "enroot_hooks_disabled names '/etc/enroot/hooks.d/99-mellanox.sh'; expected the file names of hooks"]),
    ("containers", "registry-credentials-incomplete", {ALL: {"enroot_credentials": [{"machine": "nvcr.io", "login": "$oauthtoken"}]}},
     [EVERY + "enroot_credentials[0] (machine nvcr.io) needs the keys machine, login and password"]),
    # ---------------------------------------------------------------- groups and hosts
    ("groups", "two-controllers", hosts_overlay({"slurm_controller": {"hosts": {"head-02": None}}}),
     ["inventory group slurm_controller has 2 hosts (head-01, head-02)"]),
    ("groups", "gpu-node-not-compute", hosts_overlay({"gpu_nodes": {"hosts": {"l40s-03": None}}}),
     ["hosts of inventory group gpu_nodes must also be in inventory group slurm_compute", "these are not: l40s-03"]),
    ("groups", "node-name-with-underscore", hosts_overlay({"l40s_nodes": {"hosts": {"l40s_03": None}}}),
     ["node name 'l40s_03' is not one Slurm accepts"]),
    ("groups", "two-slurmdbd-hosts", hosts_overlay({"slurmdbd": {"hosts": {"dgx-04": None}}}),
     ['dgx-04,head-01: inventory group slurmdbd must hold exactly one host (where slurmdbd runs), it holds 2: head-01, dgx-04']),
]

KIND_COUNTS = {}
for _kind, _id, _overlay, _fragments in CASES:
    KIND_COUNTS[_kind] = KIND_COUNTS.get(_kind, 0) + 1


# the first case of each kind runs the whole site.yml; the others the preflight play it imports first
THROUGH_SITE = set()
for _kind, _id, _overlay, _fragments in CASES:
    if not any(kind == _kind for kind, _name in THROUGH_SITE):
        THROUGH_SITE.add((_kind, _id))


def test_site_yml_runs_the_preflight_first_whatever_the_tags():
    """What lets most cases run preflight.yml alone: site.yml imports it before any play that reaches a node."""
    plays = yaml.safe_load(SITE.read_text())
    assert plays[0].get("ansible.builtin.import_playbook") == "preflight.yml", plays[0]
    assert all("ansible.builtin.import_playbook" in play or play.get("hosts") for play in plays)
    preflight = yaml.safe_load(PREFLIGHT.read_text())
    assert preflight[0]["hosts"] == "localhost:all" and preflight[0]["gather_facts"] is False
    assert "always" in preflight[0].get("tags", []), preflight[0].get("tags")


def test_there_are_at_least_60_mistakes():
    assert len(CASES) >= 60, KIND_COUNTS
    assert len(set(case[1] for case in CASES)) == len(CASES)


def test_the_example_inventory_passes_the_preflight(tmp_path):
    rc, output = run(tmp_path, EXAMPLE, PREFLIGHT, ["-v"])
    assert rc == 0, output[-4000:]
    assert "the inventory describes one Slurm cluster" in output, output[-4000:]
    assert "[WARNING]" not in output, output[-4000:]
    assert_no_node_contacted(output)


def test_a_node_in_no_partition_is_a_warning_not_a_failure(tmp_path):
    inventory = make_inventory(tmp_path, partitions(1, nodes="l40s-01"))
    rc, output = run(tmp_path, inventory, PREFLIGHT)
    assert rc == 0, output[-4000:]
    assert "l40s-02: in no partition of slurm_partitions (host head-01)" in " ".join(output.split()), output[-4000:]
    assert_no_node_contacted(output)


@pytest.mark.parametrize("kind, name, overlay, fragments", [pytest.param(*case, id="%s-%s" % case[:2]) for case in CASES])
def test_the_mistake_is_stopped_by_the_preflight(tmp_path, kind, name, overlay, fragments):
    inventory = make_inventory(tmp_path, overlay)
    rc, output = run(tmp_path, inventory, SITE if (kind, name) in THROUGH_SITE else PREFLIGHT)
    assert rc != 0, output[-4000:]
    assert TASK in output, output[-4000:]
    assert "the inventory has " in output and "nothing was changed" in output, output[-4000:]
    failure = output.split(TASK, 1)[1]
    for fragment in fragments:
        assert fragment in failure, "%s not in\n%s" % (fragment, failure[:6000])
    assert_no_node_contacted(output)
    del kind, name


if __name__ == "__main__":
    for kind_name, count in KIND_COUNTS.items():
        print("%-14s %d" % (kind_name, count))
    print("%-14s %d" % ("total", len(CASES)))
