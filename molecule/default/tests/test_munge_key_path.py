"""munge_key_path at a non-default path reaches munged on every node, then back (issue 44 item 3).

What an administrator sees: the munge stage with munge_key_path=/etc/munge/site.key puts the cluster key there
(0400 munge, the same everywhere) and munged runs with --key-file=/etc/munge/site.key from the systemd drop-in
munge.service.d/gpucluster-key-file.conf, keeping the site's own OPTIONS from /etc/default/munge. A credential
made on the controller decodes on a GPU node and the other way round, and a second run changes nothing. Going
back to the default removes the drop-in; munged reads /etc/munge/munge.key again and credentials still cross.
"""
import base64
import json
import re

import pytest

from simcluster import COMPUTE, CONTROLLER, GPU_NODES, NODES, SITE, assert_no_change, run_playbook, sh, wait_idle

pytestmark = pytest.mark.acceptance  # the `acceptance` stage (conftest.py), not CI's molecule stage

SITE_KEY = "/etc/munge/site.key"
DEFAULT_KEY = "/etc/munge/munge.key"
DROPIN = "/etc/systemd/system/munge.service.d/gpucluster-key-file.conf"
OPTIONS_NODE = GPU_NODES[0]  # a node with the site's own OPTIONS, which the drop-in must keep
SITE_OPTIONS = 'OPTIONS="--num-threads=3"'


def _munge_stage(tmp_path, name, extra_vars=None):
    args = ["--tags", "munge"]
    if extra_vars:
        args += ["-e", json.dumps(extra_vars)]
    rc, output = run_playbook(SITE, args, log=tmp_path / ("%s.log" % name))
    assert rc == 0, output[-6000:]
    return output


def _munged_args(name):
    return sh(name, "ps -o args= -C munged").stdout.strip()


def _crosses(source, target):
    """A credential made with `munge -n` on source decodes with unmunge on target."""
    credential = sh(source, "munge -n").stdout.strip()
    assert credential.startswith("MUNGE:"), credential
    decoded = sh(target, "echo '%s' | unmunge" % credential, check=False)
    return decoded.rc == 0 and re.search(r"^STATUS:\s+Success \(0\)$", decoded.stdout, re.M) is not None


def test_munged_reads_the_key_at_munge_key_path_and_credentials_cross_nodes(tmp_path):
    wait_idle(COMPUTE)
    original_options = sh(OPTIONS_NODE, "cat /etc/default/munge").stdout  # (testinfra keeps the output whole)
    try:
        sh(OPTIONS_NODE, "printf '%%s\\n' '%s' >> /etc/default/munge" % SITE_OPTIONS)
        _munge_stage(tmp_path, "site-key", {"munge_key_path": SITE_KEY})

        reference = sh(CONTROLLER, "sha256sum %s" % SITE_KEY).stdout.split()[0]
        for name in NODES:
            assert sh(name, "stat -c '%%a %%U' %s" % SITE_KEY).stdout.strip() == "400 munge", name
            assert sh(name, "sha256sum %s" % SITE_KEY).stdout.split()[0] == reference, name
            assert "--key-file=%s" % SITE_KEY in sh(name, "cat %s" % DROPIN).stdout, name
            exec_start = sh(name, "systemctl show munge -p ExecStart").stdout
            assert "--key-file=%s" % SITE_KEY in exec_start, (name, exec_start)
            assert "--key-file=%s" % SITE_KEY in _munged_args(name), (name, _munged_args(name))
            assert sh(name, "systemctl is-active munge").stdout.strip() == "active", name
        # the site's OPTIONS stay, before the role's --key-file
        args = _munged_args(OPTIONS_NODE)
        assert re.search(r"--num-threads=3 .*--key-file=%s" % re.escape(SITE_KEY), args), args
        assert SITE_OPTIONS in sh(OPTIONS_NODE, "cat /etc/default/munge").stdout

        for name in GPU_NODES:
            assert _crosses(CONTROLLER, name), "a credential of %s does not decode on %s" % (CONTROLLER, name)
            assert _crosses(name, CONTROLLER), "a credential of %s does not decode on %s" % (name, CONTROLLER)

        # a second run with the same path changes nothing and restarts nothing
        pids = dict((name, sh(name, "systemctl show munge -p MainPID --value").stdout.strip()) for name in NODES)
        assert_no_change(_munge_stage(tmp_path, "site-key-again", {"munge_key_path": SITE_KEY}), NODES)
        assert pids == dict((name, sh(name, "systemctl show munge -p MainPID --value").stdout.strip()) for name in NODES)
    finally:
        sh(OPTIONS_NODE, "echo %s | base64 -d > /etc/default/munge" % base64.b64encode(original_options.encode()).decode())
        _munge_stage(tmp_path, "default-key")
        for name in NODES:
            sh(name, "rm -f %s" % SITE_KEY)
    for name in NODES:
        assert sh(name, "test -e %s" % DROPIN, check=False).rc != 0, name
        assert "--key-file" not in sh(name, "systemctl show munge -p ExecStart").stdout, name
        assert "--key-file" not in _munged_args(name), (name, _munged_args(name))
        assert sh(name, "stat -c '%%a %%U' %s" % DEFAULT_KEY).stdout.strip() == "400 munge", name
    for name in GPU_NODES:
        assert _crosses(CONTROLLER, name) and _crosses(name, CONTROLLER), name
    wait_idle(COMPUTE)
