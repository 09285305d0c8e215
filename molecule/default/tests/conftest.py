"""Which of the default scenario's tests run: GPUCLUSTER_MOLECULE_TESTS = core | acceptance | all.

core (the default, what CI's `molecule` stage runs): the bring-up, its second run, and every check of the
converged cluster that takes seconds. acceptance (the `acceptance` stage of scripts/test.sh, named only, like
`bookworm` and `upgrade`): the long acceptance tests of later issues, each of which re-runs playbooks on the
converged cluster for minutes (adding a node, air-gapped install, configless, NVML autodetect, GPU sharing,
the health check tiers, the deep tier, MIG layout changes). Both together passed CI's 45 cold minutes on
2 cores. A test is an acceptance test when it, or its module, carries ``pytest.mark.acceptance``. An acceptance
test that also carries ``pytest.mark.ci`` runs in both sets: the few acceptance tests that guard the collection's
core promises (a MIG change on the running cluster, configless, a health-check drain and resume) run in CI too,
and still in their place in the acceptance stage, where the tests after them rely on what they did.

The order: files run in name order, except that a module marked ``pytest.mark.cluster_order(N)`` runs by N (a
module without the marker is 0; the tests of one N keep their order): test_second_run.py (-1) first, on the
cluster exactly as converge left it; test_sharing.py (1) after every other test, before test_mig_changes.py (2),
which puts its node's GPUs in MIG mode and runs last.
"""
import os

import pytest

CHOICES = ("core", "acceptance", "all")


def pytest_configure(config):
    config.addinivalue_line("markers", "acceptance: a long acceptance test, run by the `acceptance` stage (not in CI)")
    config.addinivalue_line("markers", "ci: an acceptance test CI's molecule stage (core) runs as well")
    config.addinivalue_line("markers", "cluster_order(n): run this module's tests at position n on the cluster (default 0; lower first)")


def cluster_order(item):
    """The position of a test: its cluster_order marker's number, 0 without one."""
    marker = item.get_closest_marker("cluster_order")
    if marker is None:
        return 0
    if len(marker.args) != 1 or not isinstance(marker.args[0], int):
        raise pytest.UsageError("%s: cluster_order takes one whole number, got %r" % (item.nodeid, marker.args))
    return marker.args[0]


def pytest_collection_modifyitems(config, items):
    items.sort(key=cluster_order)  # stable: the name order of the files, then each file's own order, within one position
    which = os.environ.get("GPUCLUSTER_MOLECULE_TESTS", "core")
    if which not in CHOICES:
        raise pytest.UsageError("GPUCLUSTER_MOLECULE_TESTS=%r: valid values are %s" % (which, ", ".join(CHOICES)))
    if which == "all":
        return
    want_acceptance = which == "acceptance"
    keep = [item for item in items if (item.get_closest_marker("acceptance") is not None) == want_acceptance
            or (not want_acceptance and item.get_closest_marker("ci") is not None)]
    dropped = [item for item in items if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
