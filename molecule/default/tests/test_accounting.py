"""Issue 10 on the simulated cluster: slurmdbd on MariaDB, associations as code, the GPU health check.

Run by molecule's verify of the default scenario (containers named after
the nodes) and usable against `bash scripts/cluster.sh up` (set
GPUCLUSTER_SIM_CONTAINER_PREFIX=gcsim-). Everything is checked on the real
daemons and commands a user and an admin run: sacctmgr, sacct, squeue, sinfo,
scontrol, file modes, the output of real ansible-playbook runs. The second run
of site.yml (changed=0, the password never shown) is test_second_run.py.
"""
import json
import re
import subprocess
import time

import pytest
import yaml

from simcluster import (ANSIBLE_PLAYBOOK, COMPUTE, CONTROLLER, GROUPS, NODES, ROOT, ctl, inventories, node, playbook_env, run_playbook, sh,
                        states, wait_idle)

HEALTHCHECK = "/usr/local/sbin/gpucluster-healthcheck"
GENERATED_PASS = "/var/lib/gpucluster/slurmdbd-storage-pass"
DBD = GROUPS["slurmdbd"][0]
INVENTORY_VARS = yaml.safe_load((ROOT / "inventory" / "group_vars" / "all.yml").read_text())
# the QoS with a per-user GPU limit and a user whose jobs run under it
LIMITED_QOS = next(q for q in INVENTORY_VARS["slurmdbd_qos"] if "gres/gpu=" in str(q.get("MaxTRESPerUser", "")))
GPU_LIMIT = int(re.search(r"gres/gpu=(\d+)", LIMITED_QOS["MaxTRESPerUser"]).group(1))
LIMITED_USER = next(u["name"] for u in INVENTORY_VARS["slurmdbd_users"] if u.get("DefaultQOS") == LIMITED_QOS["name"])
BROKEN_NODE = COMPUTE[-1]
BROKEN_GPU = 3


def reason(name):
    out = ctl("scontrol -o show node %s" % name).stdout
    match = re.search(r" Reason=(.*?)(?: \[[^\]]+\])?\s*$", out)
    return match.group(1) if match else ""


def sacctmgr(what):
    """`sacctmgr show <what>` as a list of dicts (parsable2 with a header)."""
    lines = ctl("sacctmgr --parsable2 show %s" % what).stdout.splitlines()
    header = lines[0].split("|")
    return [dict(zip(header, line.split("|"))) for line in lines[1:] if line]


# --- files and daemons -----------------------------------------------------

def test_slurmdbd_conf_is_0600_slurm_and_holds_the_generated_password():
    conf = node(DBD).file("/etc/slurm/slurmdbd.conf")
    assert conf.mode == 0o600 and conf.user == "slurm" and conf.group == "slurm"
    secret = node(DBD).file(GENERATED_PASS)
    assert secret.mode == 0o600 and secret.user == "root"
    password = sh(DBD, "cat %s" % GENERATED_PASS).stdout.strip()
    assert len(password) >= 16
    found = ("StoragePass=%s" % password) in sh(DBD, "cat /etc/slurm/slurmdbd.conf").stdout.splitlines()
    assert found, "slurmdbd.conf does not hold the generated password"
    # and the slurmdbd database account really uses it (through TCP, as slurmdbd connects)
    login = sh(DBD, "mysql --protocol=TCP -h 127.0.0.1 -u slurm --password=\"$(cat %s)\" -e 'SELECT 1' slurm_acct_db" % GENERATED_PASS,
                check=False)
    assert login.rc == 0, login.stderr


def test_mariadb_and_slurmdbd_run_and_slurmdbd_started_before_slurmctld():
    for unit in ("mariadb", "slurmdbd"):
        assert node(DBD).service(unit).is_running and node(DBD).service(unit).is_enabled, unit
    if DBD == CONTROLLER:
        dbd = int(sh(DBD, "systemctl show -p ExecMainStartTimestampMonotonic --value slurmdbd").stdout)
        ctld = int(ctl("systemctl show -p ExecMainStartTimestampMonotonic --value slurmctld").stdout)
        assert 0 < dbd < ctld


def test_mariadb_is_secured():
    out = sh(DBD, "mysql --batch --skip-column-names -e \"SELECT CONCAT(User, '@', Host) FROM mysql.user; SHOW DATABASES\"").stdout.split()
    assert "test" not in out and "@localhost" not in out and not any(u.startswith("@") for u in out), out


@pytest.mark.parametrize("name", NODES)
def test_slurm_conf_has_accounting_and_the_health_check_and_is_the_same_everywhere(name):
    conf = node(name).file("/etc/slurm/slurm.conf").content_string
    assert conf == node(CONTROLLER).file("/etc/slurm/slurm.conf").content_string
    settings = dict(line.split("=", 1) for line in conf.splitlines() if "=" in line and not line.startswith(("#", "NodeName", "PartitionName")))
    assert settings["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert settings["AccountingStorageHost"] == DBD
    assert settings["ClusterName"] == INVENTORY_VARS["slurm_cluster_name"]
    assert settings["PriorityType"] == "priority/multifactor"
    assert settings["PriorityWeightFairshare"] == str(INVENTORY_VARS["slurmdbd_accounting"]["PriorityWeightFairshare"])
    assert set(settings["AccountingStorageEnforce"].split(",")) >= {"associations", "limits", "qos"}
    assert settings["HealthCheckProgram"] == HEALTHCHECK
    # every GPU type the nodes declare is accounted (whole GPUs and the MIG profile of gpu-01)
    declared = set()
    for line in conf.splitlines():
        match = re.search(r"\bGres=(\S+)", line)
        if line.startswith("NodeName=") and match:
            declared |= {"gres/gpu:%s" % item.split(":")[1] for item in match.group(1).split(",") if item.count(":") == 2}
    assert declared >= {"gres/gpu:h100", "gres/gpu:a100", "gres/gpu:1g.10gb"}, declared
    assert set(settings["AccountingStorageTRES"].split(",")) >= declared | {"gres/gpu"}


# --- associations ----------------------------------------------------------

def test_sacctmgr_lists_the_inventorys_accounts_users_and_qos():
    qos = {q["Name"]: q for q in sacctmgr("qos format=Name,MaxTRESPU")}
    assert qos[LIMITED_QOS["name"]]["MaxTRESPU"] == "gres/gpu=%d" % GPU_LIMIT
    assocs = sacctmgr("assoc format=Cluster,Account,User,QOS,DefaultQOS,Fairshare")  # headers: ... QOS|Def QOS|Share
    cluster = INVENTORY_VARS["slurm_cluster_name"]
    accounts = {a["Account"]: a for a in assocs if not a["User"] and a["Cluster"] == cluster}
    for account in INVENTORY_VARS["slurmdbd_accounts"]:
        assert account["name"] in accounts, (account["name"], sorted(accounts))
        assert accounts[account["name"]]["Share"] == str(account["Fairshare"])
        assert set(accounts[account["name"]]["QOS"].split(",")) == set(account["QOS"])
    users = {(a["User"], a["Account"]): a for a in assocs if a["User"] and a["Cluster"] == cluster}
    for user in INVENTORY_VARS["slurmdbd_users"]:
        for account in user["accounts"]:
            assert (user["name"], account) in users, (user["name"], account, sorted(users))
    limited = users[(LIMITED_USER, "research")]
    assert (limited["QOS"], limited["Def QOS"]) == (LIMITED_QOS["name"], LIMITED_QOS["name"])


def test_a_gpu_job_shows_up_in_sacct_with_its_gpu_tres():
    wait_idle(COMPUTE)
    out = ctl("runuser -u %s -- srun --gres=gpu:1 -N1 bash -c 'echo JOB=$SLURM_JOB_ID GPUS=$CUDA_VISIBLE_DEVICES'" % LIMITED_USER).stdout
    job = re.search(r"JOB=(\d+)", out).group(1)
    deadline = time.time() + 60
    rows = []
    while time.time() < deadline:
        rows = ctl("sacct -X -n -P -j %s --format=JobID,User,Account,QOS,State,AllocTRES" % job).stdout.split("\n")
        rows = [r.split("|") for r in rows if r.strip()]
        # (right after the job ends sacct may still print QOS "Unknown" for a moment)
        if rows and rows[0][4] == "COMPLETED" and rows[0][3] != "Unknown":
            break
        time.sleep(2)
    assert rows and rows[0][:5] == [job, LIMITED_USER, "research", LIMITED_QOS["name"], "COMPLETED"], rows
    tres = dict(item.split("=", 1) for item in rows[0][5].split(","))
    assert tres.get("gres/gpu") == "1", rows[0][5]


def test_a_user_over_the_qos_gpu_limit_is_held_with_the_qos_reason():
    wait_idle(COMPUTE)
    over = GPU_LIMIT + 1
    job = ctl("runuser -u %s -- sbatch --parsable --gres=gpu:%d -N1 --wrap 'sleep 1'" % (LIMITED_USER, over)).stdout.strip()
    try:
        deadline = time.time() + 30
        state = ""
        while time.time() < deadline:
            state = ctl("squeue -h -j %s -o '%%T %%r'" % job).stdout.strip()
            if state and state.split()[1] not in ("None", "Priority", "Resources"):
                break
            time.sleep(1)
        assert state == "PENDING QOSMaxGRESPerUser", state
        # the same request within the limit, by a user without the QoS, runs
        within = ctl("runuser -u bob -- srun --qos=normal --gres=gpu:%d -N1 true" % over, check=False)
        assert within.rc == 0, within.stderr
    finally:
        ctl("scancel %s" % job, check=False)


# --- health check ----------------------------------------------------------

def test_the_health_check_passes_on_healthy_nodes_and_never_resumes_an_admin_drain():
    wait_idle(COMPUTE)
    for name in COMPUTE:
        result = sh(name, HEALTHCHECK, check=False)
        assert (result.rc, result.stdout.strip()) == (0, "gpucluster-healthcheck: healthy"), (name, result.stdout, result.stderr)
    admin = COMPUTE[0]
    ctl("scontrol update nodename=%s state=drain reason='rack 4 maintenance'" % admin)
    try:
        result = sh(admin, "%s --resume" % HEALTHCHECK, check=False)
        assert result.rc == 0, result.stdout + result.stderr
        assert "not resumed" in result.stdout
        assert reason(admin) == "rack 4 maintenance"
    finally:
        ctl("scontrol update nodename=%s state=resume" % admin)


def _node_check_munge(name):
    """validate.yml's node check of munge on one node (ad hoc, as the validate role calls the module: as root)."""
    env = playbook_env()
    env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    result = subprocess.run([str(ANSIBLE_PLAYBOOK.parent / "ansible")] + inventories() + [name, "--become", "-m", "gpucluster.bringup.node_check",
                                                                                        "-a", "checks=munge services=munge"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT), check=False)
    answer = json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"][name]
    return [r for r in answer.get("records", []) if r.get("check") == "munge"]


def test_a_world_readable_munge_key_fails_the_health_check_and_the_validation():
    name = BROKEN_NODE
    wait_idle([name])
    assert [r["status"] for r in _node_check_munge(name)] == ["pass"]
    sh(name, "chmod 0644 /etc/munge/munge.key")
    try:
        # munge itself still works with it: only the permission checks can catch it
        assert sh(name, "munge -n | unmunge", check=False).rc == 0
        records = _node_check_munge(name)
        assert [r["status"] for r in records] == ["fail"], records
        assert "/etc/munge/munge.key" in records[0]["reason"] and "0644" in records[0]["reason"], records
        result = sh(name, HEALTHCHECK, check=False)
        assert result.rc == 1, result.stdout + result.stderr
        assert states()[name] in ("drain", "drng")
        assert reason(name).startswith("gpuhc:periodic:munge-key: ") and "0644" in reason(name), reason(name)
    finally:
        sh(name, "chmod 0400 /etc/munge/munge.key")
    # fixed: the health check returns the node it drained itself
    result = sh(name, "%s --resume" % HEALTHCHECK, check=False)
    assert result.rc == 0, result.stdout + result.stderr
    wait_idle([name], timeout=60)
    assert reason(name) == ""


def test_a_missing_gpu_device_file_drains_the_node_naming_the_gpu_until_resumed():
    wait_idle(COMPUTE)
    device = "/dev/nvidia%d" % BROKEN_GPU
    assert node(BROKEN_NODE).file(device).exists
    sh(BROKEN_NODE, "rm -f %s" % device)
    try:
        # what slurmd runs every HealthCheckInterval: the program, without arguments, as root
        result = sh(BROKEN_NODE, HEALTHCHECK, check=False)
        assert result.rc == 1, result.stdout + result.stderr
        assert states()[BROKEN_NODE] in ("drain", "drng")
        assert re.match(r"^gpuhc:periodic:device-files: GPU %d \(\S+\) %s missing$" % (BROKEN_GPU, device), reason(BROKEN_NODE)), \
            reason(BROKEN_NODE)
        # still broken: the resume playbook keeps it drained and says why (and fails, as it does for any node it keeps)
        rc, output = run_playbook(ROOT / "playbooks" / "resume.yml")
        assert rc != 0, output[-5000:]
        kept = [line for line in output.splitlines() if "not resumed: %s: node checks still fail: " % BROKEN_NODE in line]
        assert kept and "healthcheck: device-files: GPU %d (" % BROKEN_GPU in kept[0] and "%s missing" % device in kept[0], output[-5000:]
        assert states()[BROKEN_NODE] in ("drain", "drng")
    finally:
        sh(BROKEN_NODE, "nvmlsim boot")  # the driver makes the device files again
    assert node(BROKEN_NODE).file(device).exists
    rc, output = run_playbook(ROOT / "playbooks" / "resume.yml")
    assert rc == 0, output[-5000:]
    wait_idle([BROKEN_NODE], timeout=60)
    assert reason(BROKEN_NODE) == ""


# --- a node DOWN past SlurmdTimeout --------------------------------------------

def test_a_node_down_past_slurmd_timeout_returns_through_resume_yml():
    """slurmd dies; past SlurmdTimeout slurmctld marks the node DOWN (not responding); resume.yml starts slurmd,
    waits until slurmctld hears from it, checks the node and it is back. (SlurmdTimeout is lowered to 10 s for the
    test on the controller only, then slurm.conf is put back byte for byte.)"""
    name = BROKEN_NODE
    wait_idle([name])
    conf = "/etc/slurm/slurm.conf"
    ctl("cp -p %s /root/slurm.conf.keep && sed -i 's/^SlurmdTimeout=.*/SlurmdTimeout=10/' %s && scontrol reconfigure" % (conf, conf))
    try:
        sh(name, "systemctl stop slurmd")
        deadline = time.time() + 90
        while states().get(name) != "down*" and time.time() < deadline:
            time.sleep(2)
        assert states().get(name) == "down*", states()
    finally:
        ctl("cp -p /root/slurm.conf.keep %s && rm -f /root/slurm.conf.keep && scontrol reconfigure" % conf)
    assert sh(name, "systemctl is-active slurmd", check=False).stdout.strip() == "inactive"
    rc, output = run_playbook(ROOT / "playbooks" / "resume.yml")
    assert rc == 0, output[-5000:]
    assert re.search(r"TASK \[gpucluster\.bringup\.validate : Start slurmd where it is stopped on a down or not responding node\][^\n]*\n(.*\n)*?changed: \[%s\]"
                     % re.escape(name), output), output[-5000:]
    assert sh(name, "systemctl is-active slurmd").stdout.strip() == "active"
    wait_idle([name], timeout=60)
    assert reason(name) == ""
