"""Issue 16: enroot registry credentials on a GPU node of the simulated cluster.

The inventory of the simulation sets no enroot_credentials, so this test runs the containers
stage (playbooks/enroot.yml, tag enroot) on one GPU node with credentials given as extra vars,
at -vvv with --diff, as an operator would, and checks on the node: the netrc file enroot reads
($ENROOT_CONFIG_PATH/.credentials of enroot_credentials_user, root here) holds one line per
credential, is mode 0600 owned by root in a 0700 directory, and neither password appears
anywhere in the ansible-playbook output. The file is removed again afterwards, so the later
tests see the node as converge left it.
"""
import json
import secrets

from simcluster import GPU_NODES, ROOT, node, recap, run_playbook

CREDENTIALS = "/root/.config/enroot/.credentials"


def test_credentials_written_0600_and_never_printed(tmp_path):
    name = GPU_NODES[0]
    host = node(name)
    registry_password = "reg-" + secrets.token_hex(12)
    ngc_key = "nvapi-" + secrets.token_hex(12)
    extra = tmp_path / "credentials.json"
    extra.write_text(json.dumps({
        "enroot_credentials": [{"machine": "registry.cluster.internal:5000", "login": "ci-bot", "password": registry_password}],
        "enroot_ngc_api_key": ngc_key,
    }))
    extra.chmod(0o600)
    try:
        rc, out = run_playbook(ROOT / "playbooks" / "enroot.yml",
                               ["--limit", name, "--tags", "enroot", "-e", "@%s" % extra, "--diff", "-vvv"],
                               log=tmp_path / "enroot-credentials.log")
        assert rc == 0, out[-3000:]
        assert recap(out)[name]["failed"] == 0
        # The task ran (so the check of the output below is not vacuous) and its result was hidden.
        assert "TASK [gpucluster.bringup.enroot : Write the registry credentials]" in out
        assert "'no_log: true' was specified for this result" in out
        assert registry_password not in out
        assert ngc_key not in out

        credentials = host.file(CREDENTIALS)
        assert credentials.is_file
        assert credentials.mode == 0o600
        assert (credentials.user, credentials.group) == ("root", "root")
        directory = host.file("/root/.config/enroot")
        assert directory.mode == 0o700 and directory.user == "root"
        lines = [line for line in credentials.content_string.splitlines() if line and not line.startswith("#")]
        assert lines == [
            "machine registry.cluster.internal:5000 login ci-bot password %s" % registry_password,
            "machine nvcr.io login $oauthtoken password %s" % ngc_key,
            "machine authn.nvidia.com login $oauthtoken password %s" % ngc_key,
        ]
        # Other users cannot read it.
        assert host.run("runuser -u nobody -- cat %s" % CREDENTIALS).rc != 0
    finally:
        host.run("rm -f %s" % CREDENTIALS)
