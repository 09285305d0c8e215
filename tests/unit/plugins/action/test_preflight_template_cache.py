"""The preflight keeps a templated value per key of everything it depends on, and no result changes.

The controller preflight (plugins/action/preflight.py) templates a role default once per run for each distinct key
(the value, and the variables its templates name, and theirs in turn) instead of once per host. These tests:

- the key: what it captures (a variable named two steps away, trust, type) and what it refuses to key (lookups,
  query, now(), vars, random filters, includes, a "#jinja2:" header, objects that are not plain data);
- the whole action: ansible-playbook runs playbooks/preflight.yml over the same inventories with this checkout and
  with a copy of it whose key is always None (every value templated per host, as before the cache), and the two
  outputs (-v: every problem, the values checked, the values left for after the facts, the warnings) are the same.
  The inventories: the example mixed site, the same with per-host and per-group templated values (a variable named
  by a variable that a value names, inventory_hostname, an undefined variable, lookups of missing files, a random filter),
  and the generated inventory of benchmarks/preflight_scale.py.
"""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.action import preflight as action

ROOT = pathlib.Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "inventory" / "examples" / "mixed-site"
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"
UNREACHABLE = ["-e", "ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1"]
KEY_LINE = "            key = _template_key(value, variables, context or {}, memos)\n"


def memos():
    return ({}, {}, {})


def test_a_value_without_variables_has_a_key_of_its_own():
    one = action._template_key("{{ 1 + 1 }}", {}, {}, memos())
    assert one is not None
    assert action._template_key("{{ 1 + 2 }}", {}, {}, memos()) != one


def test_the_key_holds_every_variable_named_and_theirs_in_turn():
    value = {"path": "{{ munge_key_path | default('/etc/munge/munge.key') }}"}
    base = {"munge_key_path": "{{ key_dir }}/munge.key", "key_dir": "/etc/munge", "unrelated": 1}
    key = action._template_key(value, base, {}, memos())
    assert key is not None
    # a variable two steps away changes the key
    assert action._template_key(value, dict(base, key_dir="/srv/munge"), {}, memos()) != key
    # a variable no template names does not
    assert action._template_key(value, dict(base, unrelated=2), {}, memos()) == key
    # an absent variable (the default filter's case) is part of the key
    assert action._template_key(value, {}, {}, memos()) != key


def test_the_key_tells_types_apart():
    value = "{{ flag }}"
    keys = set(action._template_key(value, {"flag": flag}, {}, memos()) for flag in (True, 1, "1", 1.0, None, [1], (1,), {"1": 1}))
    assert len(keys) == 8


def test_the_key_tells_a_trusted_template_from_an_untrusted_string():
    trust = pytest.importorskip("ansible.template").trust_as_template
    plain = action._template_key("{{ x }}", {"x": "{{ y }}", "y": 1}, {}, memos())
    trusted = action._template_key("{{ x }}", {"x": trust("{{ y }}"), "y": 1}, {}, memos())
    assert plain is not None and trusted is not None and plain != trusted


@pytest.mark.parametrize("template", [
    "{{ lookup('ansible.builtin.file', '/etc/hostname') }}",
    "{{ query('ansible.builtin.env', 'HOME') }}",
    "{{ q('ansible.builtin.env', 'HOME') }}",
    "{{ now() }}",
    "{{ vars['x'] }}",
    "{{ [1, 2] | random }}",
    "{{ [1, 2] | ansible.builtin.shuffle }}",
    "{{ 'x' | password_hash('sha512') }}",
    "{{ '%Y' | strftime }}",
    "{{ lipsum() }}",
    "{% include 'x.j2' %}",
    "{% import 'x.j2' as y %}{{ y }}",
    "#jinja2:variable_start_string:'[%'\n[% x %] {{ x }}",
    "{{ unclosed",
])
def test_what_a_key_cannot_capture_is_templated_per_host(template):
    assert action._template_key(template, {"x": 1}, {}, memos()) is None
    # also when a variable the value names holds it
    assert action._template_key("{{ x }}", {"x": template}, {}, memos()) is None


def test_an_object_that_is_not_plain_data_is_keyed_only_as_the_runs_own():
    class HostVars(object):
        pass

    hostvars = HostVars()
    value = "{{ hostvars[name].x | default(name) }}"
    key = action._template_key(value, {"hostvars": hostvars, "name": "a"}, {"hostvars": hostvars}, memos())
    assert key is not None
    # another object of the same name: no key
    assert action._template_key(value, {"hostvars": HostVars(), "name": "a"}, {"hostvars": hostvars}, memos()) is None
    # the name the template also reads is still in the key
    assert action._template_key(value, {"hostvars": hostvars, "name": "b"}, {"hostvars": hostvars}, memos()) != key


def test_a_container_is_keyed_by_content_not_identity():
    shared = memos()
    groups = {"slurm_controller": ["head-01"]}
    key = action._template_key("{{ groups.slurm_controller | first }}", {"groups": groups}, {}, shared)
    assert action._template_key("{{ groups.slurm_controller | first }}", {"groups": {"slurm_controller": ["head-01"]}}, {}, shared) == key
    assert action._template_key("{{ groups.slurm_controller | first }}", {"groups": {"slurm_controller": ["head-02"]}}, {}, shared) != key


# --- the whole action, with and without the cache -------------------------------------------------------------------

@pytest.fixture(scope="module")
def uncached(tmp_path_factory):
    """A copy of the collection whose preflight templates every value per host (the key is always None)."""
    base = tmp_path_factory.mktemp("uncached")
    tree = base / "ansible_collections" / "gpucluster" / "bringup"
    tree.mkdir(parents=True)
    for name in ("plugins", "roles", "playbooks", "meta"):
        shutil.copytree(ROOT / name, tree / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "galaxy.yml", tree / "galaxy.yml")
    source = (tree / "plugins" / "action" / "preflight.py").read_text()
    assert source.count(KEY_LINE) == 1, "the line that computes the key moved: update KEY_LINE"
    (tree / "plugins" / "action" / "preflight.py").write_text(source.replace(KEY_LINE, KEY_LINE.replace(
        "_template_key(value, variables, context or {}, memos)", "None")))
    return base


def run_preflight(collections, inventory, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_RETRY_FILES_ENABLED="0")
    root = pathlib.Path(collections) / "ansible_collections" / "gpucluster" / "bringup"
    argv = [str(ANSIBLE_PLAYBOOK), "-v", "-i", str(inventory), str(root / "playbooks" / "preflight.yml")] + UNREACHABLE
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(cwd), check=False)
    lines = [line for line in result.stdout.replace(str(root), "<collection>").splitlines()
             if not line.startswith(("Using ", "No config file found"))]
    return result.returncode, "\n".join(lines)


def assert_same_result(tmp_path, inventory, uncached):
    rc, cached_output = run_preflight(ROOT / ".build" / "collections", inventory, tmp_path)
    rc_before, uncached_output = run_preflight(uncached, inventory, tmp_path)
    assert "TASK [Check the inventory and every role's inputs before anything changes]" in cached_output, cached_output[-3000:]
    assert (rc, cached_output) == (rc_before, uncached_output)
    return rc, cached_output


def mixed_site(tmp_path, overlays=None):
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLE, inventory)
    for name, overlay in (overlays or {}).items():
        path = inventory / name
        data = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
        data.update(overlay)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return inventory


def test_the_example_inventory_gives_the_same_result(tmp_path, uncached):
    rc, output = assert_same_result(tmp_path, mixed_site(tmp_path), uncached)
    assert rc == 0, output[-3000:]


def test_templated_values_per_host_and_group_give_the_same_result(tmp_path, uncached):
    inventory = mixed_site(tmp_path, {
        # munge_key_path names key_dir, which each node type sets; the health check's default names munge_key_path
        # slurm_healthcheck_interval names interval, which names base_interval, which the L40S nodes set
        "group_vars/all.yml": {"key_dir": "{{ ['/etc/munge', '/etc/munge'] | random }}", "munge_key_path": "{{ key_dir }}/munge.key",
                               "slurm_healthcheck_interval": "{{ interval }}", "interval": "{{ base_interval }}", "base_interval": 300},
        "group_vars/dgx_h100.yml": {"key_dir": "/etc/munge-dgx", "enroot_pin": "3.5.0",
                                    "gpucluster_node_type": {"gpu_model": "H100", "gpu_count": "{{ 8 if inventory_hostname != 'dgx-03' else -2 }}"}},
        "group_vars/l40s_nodes.yml": {"key_dir": "relative/munge", "base_interval": -1,
                                      "pyxis_source_checksum": "{{ lookup('ansible.builtin.file', 'sums/' ~ inventory_hostname) }}"},
        "host_vars/dgx-02.yml": {"slurm_cluster_name": "{{ 'gpusite' ~ inventory_hostname[-1] }}"},
        "host_vars/l40s-02.yml": {"enroot_version": "{{ enroot_pin }}"},
    })
    rc, output = assert_same_result(tmp_path, inventory, uncached)
    # the run failed, and on what the templates gave per host and per node type
    assert rc != 0
    assert "relative/munge/munge.key" in output and "/etc/munge-dgx" not in output, output[-3000:]
    assert "sums/l40s-01" in output and "sums/l40s-02" in output, output[-3000:]
    assert "dgx-03: gpucluster_node_type.gpu_count is -2" in output, output[-3000:]
    assert "l40s-[01-02]: slurm_healthcheck_interval is -1" in output, output[-3000:]
    assert "l40s-02: enroot_version" in output, output[-3000:]  # left for after the facts


def test_the_benchmarks_generated_inventory_gives_the_same_result(tmp_path, uncached):
    spec = importlib.util.spec_from_file_location("preflight_scale", str(ROOT / "benchmarks" / "preflight_scale.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    inventory = tmp_path / "inventory"
    bench.write_inventory(inventory, 24)
    rc, output = assert_same_result(tmp_path, inventory, uncached)
    assert rc == 0, output[-3000:]


def test_a_template_in_the_runs_own_object_is_followed():
    context = {"_controller": "{{ groups[controller_group] | first }}", "groups": {"a": ["h1"], "b": ["h2"]}}
    value = "{{ _controller }}"
    key = action._template_key(value, dict(context, controller_group="a"), context, memos())
    assert key is not None
    assert action._template_key(value, dict(context, controller_group="b"), context, memos()) != key
