#!/usr/bin/env python3
"""The controller preflight over large generated inventories (issue #44): wall time and peak memory per size.

    .venv/bin/python benchmarks/preflight_scale.py                 # 100, 1000 and 4000 hosts
    .venv/bin/python benchmarks/preflight_scale.py 100 1000        # the sizes given
    .venv/bin/python benchmarks/preflight_scale.py --baseline HEAD 100 1000
                                                    # and the collection as committed at HEAD (git archive), in turn

Each inventory has one head node (slurm_controller and slurmdbd) and N compute nodes in 4 node types, as a mixed
site's: DGX H100 (8 x H100, every fourth with MIG 1g.10gb x 7 on GPUs 0-3), L40S (4 x L40S), A100 (8 x A100-SXM4-40GB)
and CPU-only nodes, each type a group with its own expectations (group_vars), two partitions per GPU type, the
associations of the example inventory (inventory/examples/mixed-site).

It runs what a site runs: ``ansible-playbook playbooks/preflight.yml`` (the play site.yml imports first) in a
subprocess, every host unreachable (127.0.0.1, port 1; no node is contacted: the preflight runs on the controller
only), and checks that it passed. Wall time is the subprocess's; peak memory is the largest resident set of the
ansible-playbook processes (the rusage of each run, wait4: the controller process and its forked worker, which runs
the action). Goal (issue #44): 1,000 hosts in at most 30 s on 2 cores.

With --baseline REF each size's inventory is also run with the collection as committed at REF (plugins, roles,
playbooks, meta, galaxy.yml from ``git archive``), the baseline first, then this checkout, in the same conditions;
the last column is this checkout's wall time over the baseline's.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
PLAYBOOK = ROOT / "playbooks" / "preflight.yml"
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"
TYPES = (
    ("dgx", {"gpucluster_node_type": {"name": "dgx", "gpu_model": "H100", "gpu_count": 8}}),
    ("l40s", {"gpucluster_node_type": {"name": "l40s", "gpu_model": "L40S", "gpu_count": 4}}),
    ("a100", {"gpucluster_node_type": {"name": "a100", "gpu_model": "A100-SXM4-40GB", "gpu_count": 8}}),
    ("cpu", {"gpucluster_node_type": {"name": "cpu", "gpu_count": 0}}),
)
MIG = [{"gpu": str(i), "instances": [{"profile": "1g.10gb", "count": 7}]} for i in range(4)] + \
      [{"gpu": str(i), "mig": False} for i in range(4, 8)]


def write_inventory(directory, size):
    example = yaml.safe_load((ROOT / "inventory" / "examples" / "mixed-site" / "group_vars" / "all.yml").read_text())
    per_type = [size // len(TYPES) + (1 if i < size % len(TYPES) else 0) for i in range(len(TYPES))]
    children = {"slurm_controller": {"hosts": {"head-01": None}}, "slurmdbd": {"hosts": {"head-01": None}},
                "slurm_compute": {"children": {}}, "gpu_nodes": {"children": {}}}
    partitions = []
    group_vars = directory / "group_vars"
    host_vars = directory / "host_vars"
    group_vars.mkdir(parents=True)
    host_vars.mkdir()
    for (name, expectations), count in zip(TYPES, per_type):
        if not count:
            continue
        width = len(str(count))
        hosts = ["%s-%0*d" % (name, width, i) for i in range(1, count + 1)]
        children[name] = {"hosts": dict((h, None) for h in hosts)}
        children["slurm_compute"]["children"][name] = None
        if name != "cpu":
            children["gpu_nodes"]["children"][name] = None
        (group_vars / ("%s.yml" % name)).write_text(yaml.safe_dump(expectations))
        partitions.append({"name": name, "nodes": "%s-[%0*d-%0*d]" % (name, width, 1, width, count), "default": name == "dgx",
                           "options": {"MaxTime": "1-00:00:00", "State": "UP"}})
        if name == "dgx":
            for host in hosts[::4]:
                (host_vars / ("%s.yml" % host)).write_text(yaml.safe_dump({"mig_layout": "half-1g",
                                                                            "mig_layouts_custom": {"half-1g": MIG}}))
    example["slurm_partitions"] = partitions
    (group_vars / "all.yml").write_text(yaml.safe_dump(example))
    (directory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": children}}))


def collection_at(ref, directory):
    """The collection as committed at ``ref`` under ``directory`` (a collections path)."""
    tree = directory / "ansible_collections" / "gpucluster" / "bringup"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "plugins", "roles", "playbooks", "meta", "galaxy.yml"],
                             stdout=subprocess.PIPE, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return directory


def run(size, inventory, collections, cwd):
    """``(wall s, peak RSS MiB)`` of the preflight over ``inventory`` with the collection found in ``collections``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(collections))
    playbook = pathlib.Path(collections) / "ansible_collections" / "gpucluster" / "bringup" / "playbooks" / "preflight.yml"
    argv = [str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(playbook), "-e", "ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1"]
    with tempfile.TemporaryFile("w+") as output:
        start = time.monotonic()
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(cwd))
        dummy, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        stdout = output.read()
    if process.returncode != 0 or "unreachable=1" in stdout:
        sys.exit("the preflight over %d hosts (%s) did not pass:\n%s" % (size, collections, stdout[-4000:]))
    # the largest resident set of the run's processes (ansible-playbook or its worker)
    return wall, usage.ru_maxrss / 1024.0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--baseline", metavar="REF", help="also run the collection as committed at this git ref (e.g. HEAD)")
    parser.add_argument("sizes", nargs="*", help="compute nodes per inventory (default: 100 1000 4000)")
    args = parser.parse_args(argv)
    sizes = [int(a.replace(",", "")) for a in args.sizes] or [100, 1000, 4000]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        baseline = collection_at(args.baseline, tmp / "baseline") if args.baseline else None
        if baseline:
            print("%8s %10s %14s %12s %14s %8s" % ("hosts", "wall s", "peak RSS MiB", "%s wall s" % args.baseline[:8],
                                                    "peak RSS MiB", "ratio"))
        else:
            print("%8s %10s %14s" % ("hosts", "wall s", "peak RSS MiB"))
        for size in sizes:
            inventory = tmp / ("inventory-%d" % size)
            write_inventory(inventory, size)
            if baseline:
                base_wall, base_peak = run(size, inventory, baseline, tmp)
            wall, peak = run(size, inventory, ROOT / ".build" / "collections", tmp)
            if baseline:
                print("%8d %10.1f %14.0f %12.1f %14.0f %8.2f" % (size + 1, wall, peak, base_wall, base_peak, wall / base_wall), flush=True)
            else:
                print("%8d %10.1f %14.0f" % (size + 1, wall, peak), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
