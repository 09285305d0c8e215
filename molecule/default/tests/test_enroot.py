"""Issue 8 on the simulated cluster: enroot and pyxis (STAND-INs) brought up by site.yml (its containers stage).

Run by molecule's verify of the default scenario (containers named after the nodes).
Everything is checked on the nodes: installed packages, files, and the real Slurm
srun/sbatch/slurmstepd loading the stand-in pyxis plugin through plugstack.conf.
"""
import json
import re

from simcluster import COMPUTE, CONTROLLER, GROUPS, node

NODES = sorted(set(GROUPS["slurm_controller"] + COMPUTE))


def test_standin_enroot_packages_and_config():
    for name in NODES:
        host = node(name)
        assert host.check_output("enroot version") == "0.0.0~standin", name
        for package in ("enroot", "enroot+caps"):
            assert host.package(package).version == "0.0.0~standin-1", (name, package)
        conf = host.file("/etc/enroot/enroot.conf").content_string
        assert "ENROOT_DATA_PATH /tmp/enroot-data/user-$(id -u)\n" in conf
        assert "ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)\n" in conf
        for hook in ("50-slurm-pmi.sh", "50-slurm-pytorch.sh"):
            assert host.file("/etc/enroot/hooks.d/" + hook).linked_to == "/usr/share/enroot/hooks.d/" + hook
        run_enroot = host.file("/run/enroot")
        assert run_enroot.is_directory and run_enroot.mode == 0o1777


def test_pyxis_built_against_installed_slurm():
    for name in NODES:
        host = node(name)
        record = json.loads(host.file("/var/lib/gpucluster/pyxis-build.json").content_string)
        # the version as Slurm prints it ("slurm 22.05.8"), not the header's number decoded as 22.5.8
        printed = host.check_output("srun --version").split()[-1]
        assert re.match(r"^\d+\.\d{2}\.\d+$", printed), printed
        assert record["slurm_version"] == printed, name
        assert record["pyxis_version"] == "0.0.0-standin"
        assert host.file("/usr/local/lib/slurm/spank_pyxis.so").is_file
        dropin = host.file("/etc/slurm/plugstack.conf.d/pyxis.conf").content_string
        assert ("required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis execute_entrypoint=0 "
                "container_scope=global sbatch_support=1\n") in dropin


def test_srun_and_sbatch_list_the_standin_options_on_every_node():
    for name in NODES:
        host = node(name)
        for cmd in ("srun --help", "sbatch --help"):
            out = host.check_output(cmd)
            assert "--container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH" in out, (name, cmd)
            assert "[pyxis STAND-IN]" in out, (name, cmd)


def test_not_listed_without_the_plugstack_include():
    # The same srun with a plugstack.conf that does not include the drop-in: no pyxis options.
    host = node(CONTROLLER)
    host.run_test("sed 's|^PlugStackConfig=.*||' /etc/slurm/slurm.conf > /tmp/slurm-noplug.conf && "
                  "echo PlugStackConfig=/tmp/empty-plugstack.conf >> /tmp/slurm-noplug.conf && : > /tmp/empty-plugstack.conf")
    out = host.run("SLURM_CONF=/tmp/slurm-noplug.conf srun --help")
    assert out.rc == 0 and "--container-image" not in out.stdout


def test_slurmstepd_on_compute_nodes_loads_the_plugin():
    ctl = node(CONTROLLER)
    for name in COMPUTE:
        plain = ctl.run("srun -N1 -w %s hostname" % name)
        assert plain.rc == 0 and plain.stdout.strip() == name, plain.stderr
        # Slurm 22.05's srun reports the failed launch on stderr (its exit status stays 0 here):
        # slurmstepd on the compute node ran the stand-in plugin, which refuses to run containers.
        boxed = ctl.run("srun -N1 -w %s --container-image=docker://ubuntu true" % name)
        assert "slurmstepd-%s: error: pyxis STAND-IN: cannot run containers" % name in boxed.stderr, boxed.stderr
        assert "task 0 launch failed" in boxed.stderr, boxed.stderr
