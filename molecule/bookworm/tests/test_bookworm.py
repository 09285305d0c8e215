"""The Debian 12 / Slurm 22.05 scenario's checks (molecule/bookworm): the cluster site.yml brought up on bookworm.

The checks are the default scenario's own (molecule/default/tests, imported here so that pytest runs them in
this module, in this order): the second run changes, restarts and shows nothing; every node is idle with the
GRES its facts list and slurmd -G registers; a GPU job and a MIG job get their devices; the real enroot and
pyxis (built by the role against 22.05's headers, loaded by slurmstepd on the compute nodes). Then what only this
scenario shows: the nodes run Slurm 22.05, and the roles read that release on the controller and applied its
rules (a node definition change restarts the daemons on 22.05, where 24.11 reconfigures).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "default", "tests"))

# (the second run first: the cluster exactly as converge left it)
from test_second_run import test_second_run_changes_restarts_and_rebuilds_nothing_and_shows_no_secret  # noqa: E402,F401
from test_slurm import (  # noqa: E402,F401
    test_sinfo_every_node_idle_with_its_gres,
    test_slurmd_dash_g_lists_exactly_the_gres_the_facts_list,
    test_srun_runs_on_both_gpu_nodes,
    test_mig_job_gets_its_mig_uuid,
    test_whole_gpu_job_keeps_slurms_index,
)

# the real enroot 4.1.2 and pyxis 0.24.0, pyxis built against 22.05's headers and loaded by its slurmstepd
from test_enroot import (  # noqa: E402,F401
    test_real_enroot_packages_and_config,
    test_pyxis_built_against_installed_slurm,
    test_srun_and_sbatch_list_the_pyxis_options_on_every_node,
    test_slurmstepd_on_compute_nodes_loads_the_plugin,
)
from test_gres_autodetect import check_nvml_on_debian_12_stops_before_any_change_naming_the_pin  # noqa: E402

import pytest  # noqa: E402

from simcluster import CONTROLLER, NODES, node  # noqa: E402


@pytest.mark.parametrize("name", NODES)
def test_every_node_runs_debian_12_and_slurm_22_05(name):
    host = node(name)
    assert host.run(". /etc/os-release && echo $VERSION_CODENAME").stdout.strip() == "bookworm"
    assert host.run("sinfo --version").stdout.strip().startswith("slurm-wlm 22.05.")


# Debian 12's NVML plugin is pinned to a Slurm build the archive no longer carries: the role stops before any change
test_nvml_on_debian_12_stops_before_any_change_naming_the_pin = check_nvml_on_debian_12_stops_before_any_change_naming_the_pin


def test_the_controller_answers_as_22_05():
    version = node(CONTROLLER).run("scontrol show config | sed -n 's/^SLURM_VERSION *= *//p'").stdout.strip()
    assert version.startswith("22.05."), version
