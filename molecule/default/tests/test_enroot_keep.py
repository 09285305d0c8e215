"""enroot_package_source: keep with an enroot already installed (issue 44 item 7), on the simulated cluster.

What an administrator of a DGX site sees: the node's enroot came with the vendor's image, its /etc/enroot/enroot.conf
is the vendor's. After site.yml, one GPU node plays that part: the real enroot 4.1.2 installed (by site.yml), its
enroot.conf put back to the package's own file with a line a vendor adds. The enroot role with keep then installs,
replaces and removes no package (dpkg's database unchanged), leaves the vendor's enroot.conf byte for byte, writes
its settings to /etc/enroot/enroot.conf.d/00-gpucluster-bringup.conf, which the real enroot reads (`enroot info`),
and a second run changes nothing. A vendor line that contradicts the role's settings stops the run before any
change, naming it. The node is put back as site.yml left it, and a run without keep changes nothing.

Run by the acceptance stage (GPUCLUSTER_MOLECULE_TESTS=acceptance molecule verify, or scripts/test.sh acceptance).
"""
import re

import pytest
import yaml

from simcluster import GPU_NODES, ROOT, SITE, assert_no_change, run_playbook, sh

pytestmark = pytest.mark.acceptance  # the `acceptance` stage (conftest.py), not CI's molecule stage

NODE = GPU_NODES[0]
CONF = "/etc/enroot/enroot.conf"
DROPIN = "/etc/enroot/enroot.conf.d/00-gpucluster-bringup.conf"
VENDOR_LINE = "ENROOT_REMAP_ROOT false"


def _enroot_stage(tmp_path, name, *extra):
    args = ["--tags", "enroot", "--limit", NODE]
    for item in extra:
        args += ["-e", item]
    return run_playbook(SITE, args, log=tmp_path / ("%s.log" % name))


def _sha(path):
    return sh(NODE, "sha256sum %s" % path).stdout.split()[0]


def _dpkg():
    """What dpkg knows about the enroot packages, and its whole database's checksum."""
    return (sh(NODE, "dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n' enroot enroot+caps").stdout,
            _sha("/var/lib/dpkg/status"))


def _install_tasks():
    with open(str(ROOT / "roles" / "enroot" / "tasks" / "install.yml")) as handle:
        return [task["name"] for task in yaml.safe_load(handle)]


def _task_lines(output, name):
    """The host lines (ok:, changed:, skipping:, ...) the default callback printed under TASK [... : name]."""
    block = output.split("TASK [gpucluster.bringup.enroot : %s]" % name)
    if len(block) < 2:
        return []
    lines = block[1].split("\nTASK [")[0].split("\nRUNNING HANDLER")[0].splitlines()
    return [line for line in lines if re.match(r"^(ok|changed|skipping|failed|fatal): ", line)]


def _info():
    out = sh(NODE, "enroot info").stdout
    return dict(line.strip().split("=", 1) for line in out.splitlines() if line.startswith("  ENROOT_"))


def test_keep_uses_the_vendor_enroot_and_leaves_its_files(tmp_path):
    original = sh(NODE, "base64 -w0 %s" % CONF).stdout.strip()
    try:
        # the package's own enroot.conf (the conffile in the .deb the role installed), with a vendor's line
        sh(NODE, "dpkg-deb --fsys-tarfile /var/cache/gpucluster/enroot/enroot_4.1.2-1_$(dpkg --print-architecture).deb "
                 "| tar -xO ./etc/enroot/enroot.conf > /tmp/vendor-enroot.conf && echo '%s' >> /tmp/vendor-enroot.conf "
                 "&& cp /tmp/vendor-enroot.conf %s" % (VENDOR_LINE, CONF))
        sh(NODE, "rm -f %s" % DROPIN)
        conf_before, packages_before = _sha(CONF), _dpkg()

        rc, output = _enroot_stage(tmp_path, "keep", "enroot_package_source=keep")
        assert rc == 0, output[-6000:]
        for task in _install_tasks():             # every package task skipped
            assert _task_lines(output, task) and all(line.startswith("skipping:") for line in _task_lines(output, task)), task
        assert _dpkg() == packages_before          # no package installed, replaced or removed
        assert _sha(CONF) == conf_before            # the vendor's enroot.conf byte for byte
        dropin = sh(NODE, "cat %s" % DROPIN).stdout
        assert "ENROOT_DATA_PATH /tmp/enroot-data/user-$(id -u)\n" in dropin
        info = _info()                              # the real enroot takes the drop-in's settings
        assert info["ENROOT_DATA_PATH"] == "/tmp/enroot-data/user-0"
        assert info["ENROOT_RUNTIME_PATH"] == "/run/enroot/user-0"
        assert "ENROOT_REMAP_ROOT" not in info      # the vendor's "false" (the role's "no" too): unset by enroot

        rc, output = _enroot_stage(tmp_path, "keep-again", "enroot_package_source=keep")
        assert rc == 0, output[-6000:]
        assert_no_change(output, [NODE])

        # a vendor line that contradicts the role: stopped before any change, naming it
        sh(NODE, "echo 'ENROOT_DATA_PATH /raid/enroot-data/user-$(id -u)' >> %s" % CONF)
        conf_before = _sha(CONF)
        rc, output = _enroot_stage(tmp_path, "keep-conflict", "enroot_package_source=keep")
        assert rc != 0
        assert "ENROOT_DATA_PATH is /raid/enroot-data/user-$(id -u) in %s, this role sets /tmp/enroot-data/user-$(id -u) " \
               "(enroot_conf.ENROOT_DATA_PATH)" % CONF in output, output[-6000:]
        assert _sha(CONF) == conf_before and _dpkg() == packages_before
    finally:
        sh(NODE, "echo %s | base64 -d > %s && rm -f %s" % (original, CONF, DROPIN))
    # as site.yml left it: the role without keep changes nothing
    rc, output = _enroot_stage(tmp_path, "back")
    assert rc == 0, output[-6000:]
    assert_no_change(output, [NODE])
