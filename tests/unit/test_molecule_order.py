"""The order of molecule/default's verify tests comes from markers, not file names (issue 43 item 7).

molecule/default/tests/conftest.py sorts the collected tests by their module's ``cluster_order`` marker (0 without
one; a stable sort keeps the name order of the files and each file's own order): the second run of site.yml first,
on the cluster as converge left it; GPU sharing after every other test; the MIG layout changes, which put GPUs in MIG
mode, last. Collected here as molecule's verify collects them (``pytest --collect-only``; no cluster is needed to
collect), for every selection of GPUCLUSTER_MOLECULE_TESTS.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = 'molecule/default/tests'


def collected_files(which):
    """The file of each collected test, in the order pytest would run them."""
    env = dict(os.environ, GPUCLUSTER_MOLECULE_TESTS=which)
    done = subprocess.run([sys.executable, '-m', 'pytest', '-p', 'no:cacheprovider', '--collect-only', '-q', TESTS],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    return [line.split('::', 1)[0].rsplit('/', 1)[-1] for line in done.stdout.splitlines() if line.startswith(TESTS + '/') and '::' in line]


@pytest.mark.parametrize('which', ['all', 'core', 'acceptance'])
def test_second_run_first_sharing_then_mig_changes_last(which):
    files = collected_files(which)
    assert len(files) > 20
    others = [f for f in files if f not in ('test_second_run.py', 'test_sharing.py', 'test_mig_changes.py')]
    assert others == sorted(others)  # the rest in name order, each file's tests together
    if which != 'acceptance':  # (the second run is a core test)
        assert files[0] == 'test_second_run.py' and files.count('test_second_run.py') == 1
    assert files[-1] == 'test_mig_changes.py'
    first_mig = files.index('test_mig_changes.py')
    assert set(files[first_mig:]) == {'test_mig_changes.py'}
    if which != 'core':  # (GPU sharing is an acceptance test)
        sharing = [i for i, f in enumerate(files) if f == 'test_sharing.py']
        assert sharing and sharing == list(range(sharing[0], first_mig))
