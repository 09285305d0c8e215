"""Issues 8 and 45 on the simulated cluster: the REAL enroot 4.1.2 and pyxis 0.24.0 brought up by site.yml.

NVIDIA's enroot and enroot+caps .debs built from the release source (scripts/lib/enroot-build.sh) and
installed by the enroot role's local package source; pyxis built by the pyxis role from its release archive
against the nodes' Slurm. Run by molecule's verify of the default scenario (containers named after the nodes).
Everything is checked on the nodes: installed packages, files, and the real Slurm srun/sbatch/slurmstepd
loading the real pyxis through plugstack.conf.
"""
import json
import re

from simcluster import COMPUTE, CONTROLLER, GROUPS, node

NODES = sorted(set(GROUPS["slurm_controller"] + COMPUTE))


def test_real_enroot_packages_and_config():
    for name in NODES:
        host = node(name)
        assert host.check_output("enroot version") == "4.1.2", name
        for package in ("enroot", "enroot+caps"):
            assert host.package(package).version == "4.1.2-1", (name, package)
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
        assert record["pyxis_version"] == "0.24.0"
        assert host.file("/usr/local/lib/slurm/spank_pyxis.so").is_file
        dropin = host.file("/etc/slurm/plugstack.conf.d/pyxis.conf").content_string
        assert ("required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis execute_entrypoint=0 "
                "container_scope=global sbatch_support=1\n") in dropin


def test_srun_and_sbatch_list_the_pyxis_options_on_every_node():
    for name in NODES:
        host = node(name)
        for cmd in ("srun --help", "sbatch --help"):
            out = host.check_output(cmd)
            assert "--container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH" in out, (name, cmd)
            assert "[pyxis] the image to use for the container" in out, (name, cmd)


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
        # slurmstepd on the compute node ran pyxis, which ran enroot to import the image: Docker Hub cannot be
        # reached from the simulated cluster, so the import fails, and pyxis says so (pyxis_slurmstepd.c)
        boxed = ctl.run("srun -N1 -w %s --container-image=docker://ubuntu true" % name)
        assert "pyxis: importing docker image: docker://ubuntu" in boxed.stderr, boxed.stderr
        assert "pyxis: failed to import docker image: docker://ubuntu" in boxed.stderr, boxed.stderr
        assert boxed.rc != 0 or "launch failed" in boxed.stderr, boxed.stderr
