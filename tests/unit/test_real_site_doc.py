"""docs/real-site.md names only what exists: playbooks, role variables, files and the anchors of its links.

- every ``gpucluster.bringup.<name>`` run by ``ansible-playbook`` is ``playbooks/<name>.yml``; any other is a
  playbook, a module or action, or a role;
- every name in backticks (inline, or in a code block) that starts like a role's variable (``munge_``, ``slurm_``,
  ``slurmdbd_``, ``mig_``, ``nvml_``, ``enroot_``, ``pyxis_``, ``validate_``, ``slurm_healthcheck_``) is an option
  of some ``roles/*/meta/argument_specs.yml`` or a key of some ``roles/*/defaults/main.yml``; an inventory group
  (``slurm_controller``) or a module (``slurm_assoc``) is not taken for one;
- every path of the repository (``roles/...``, ``playbooks/...``, ``inventory/...``, a ``*.yml`` at the root or
  among the playbooks) and every link target (with its ``#anchor``, a heading of the file it names) exists;
- the README links the page.
"""
import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "real-site.md"
PREFIXES = ("munge_", "slurm_", "slurmdbd_", "mig_", "nvml_", "enroot_", "pyxis_", "validate_", "slurm_healthcheck_")
VARIABLE = re.compile(r"\b(?:%s)[a-z0-9_]*\b" % "|".join(re.escape(p) for p in PREFIXES))
FQCN = re.compile(r"\bgpucluster\.bringup\.([a-z0-9_]+)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# paths written for the reader's own machine or made by a build, not files of the repository
NOT_REPOSITORY = (".build/", "dist/", "validation-report/", "group_vars/", "host_vars/")


def role_variables():
    names = set()
    for spec in ROOT.glob("roles/*/meta/argument_specs.yml"):
        for entry in ((yaml.safe_load(spec.read_text()) or {}).get("argument_specs") or {}).values():
            names.update((entry or {}).get("options") or {})
    for defaults in ROOT.glob("roles/*/defaults/main.yml"):
        names.update(yaml.safe_load(defaults.read_text()) or {})
    return names


def inventory_groups():
    groups = set()

    def walk(group):
        for name, child in ((group or {}).get("children") or {}).items():
            groups.add(name)
            walk(child)

    for hosts in (ROOT / "inventory" / "examples" / "mixed-site" / "hosts.yml", ROOT / "inventory" / "hosts.yml"):
        for name, group in (yaml.safe_load(hosts.read_text()) or {}).items():
            groups.add(name)
            walk(group)
    return groups


def code(text):
    """The inline code spans and the code blocks of ``text``."""
    blocks = FENCE.findall(text)
    rest = FENCE.sub("", text)
    return SPAN.findall(rest), blocks


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[`*_\[\]()]", "", heading.strip().lower()).replace(" ", "-")
    return re.sub(r"[^a-z0-9_-]", "", text)


def anchors(path):
    return set(slug(line.lstrip("#")) for line in path.read_text().splitlines() if re.match(r"#{1,6} ", line))


def unknown_variables(text):
    known = role_variables() | inventory_groups()
    modules = set(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py"))
    spans, blocks = code(text)
    found = set()
    for piece in spans + blocks:
        if piece.startswith("gpucluster.bringup."):
            continue
        # (not the names inside a path or a file name: playbooks/slurm_munge.yml)
        piece = re.sub(r"\bgpucluster\.bringup\.[a-z0-9_]+|[\w.<>-]*(?:/[\w.<>-]*)+|\b[\w-]+\.(?:yml|md|py|j2|conf)\b", "", piece)
        for name in VARIABLE.findall(piece):
            if name not in known and name not in modules:
                found.add(name)
    return sorted(found)


def unknown_fqcns(text):
    spans, blocks = code(text)
    problems = []
    for piece in spans + blocks:
        for line in piece.splitlines():
            for name in FQCN.findall(line):
                playbook = (ROOT / "playbooks" / ("%s.yml" % name)).is_file()
                if "ansible-playbook" in line:
                    if not playbook:
                        problems.append("ansible-playbook runs gpucluster.bringup.%s, but there is no playbooks/%s.yml" % (name, name))
                elif not (playbook or (ROOT / "plugins" / "modules" / ("%s.py" % name)).is_file()
                          or (ROOT / "plugins" / "action" / ("%s.py" % name)).is_file() or (ROOT / "roles" / name).is_dir()):
                    problems.append("gpucluster.bringup.%s is no playbook, module or role" % name)
    return problems


def repository_paths(text):
    """The paths of the repository ``text`` names in inline code or code blocks."""
    tops = set(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith("."))
    spans, blocks = code(text)
    words = list(spans)
    for block in blocks:
        words.extend(block.split())
    paths = set()
    for word in words:
        word = word.strip().rstrip(".,;:)")
        if not word or any(c in word for c in "<>*{}$~ ") or word.startswith(("/", "-")) or word.startswith(NOT_REPOSITORY):
            continue
        if "/" in word and word.split("/", 1)[0] in tops:
            paths.add(word)
        elif "/" not in word and word.endswith((".yml", ".md")):
            paths.add(word)
    return sorted(paths)


def missing_paths(text):
    missing = []
    for path in repository_paths(text):
        if "/" in path:
            if not (ROOT / path).exists():
                missing.append(path)
        elif not ((ROOT / path).is_file() or (ROOT / "playbooks" / path).is_file()):
            missing.append(path)
    return missing


def broken_links(text, base):
    problems = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target):
            continue
        path, dummy, anchor = target.partition("#")
        file = (base / path).resolve() if path else DOC
        if not file.exists():
            problems.append("%s: no such file" % target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            problems.append("%s: %s has no heading with that anchor" % (target, file.relative_to(ROOT)))
    return problems


def test_every_role_variable_the_page_names_exists():
    assert unknown_variables(DOC.read_text()) == []


def test_every_playbook_the_page_runs_exists():
    assert unknown_fqcns(DOC.read_text()) == []


def test_every_file_the_page_names_exists():
    text = DOC.read_text()
    assert len(repository_paths(text)) >= 15  # the page does name files (the finder finds them)
    assert missing_paths(text) == []


def test_every_link_of_the_page_and_its_anchor_exists():
    assert broken_links(DOC.read_text(), DOC.parent) == []


def test_the_readme_links_the_page():
    readme = (ROOT / "README.md").read_text()
    assert "(docs/real-site.md)" in readme


@pytest.mark.parametrize("text, check, expected", [
    ("Set `validate_no_such_gate: true`.", unknown_variables, ["validate_no_such_gate"]),
    ("```sh\nansible-playbook -i inv x.yml -e munge_keypath=/x\n```", unknown_variables, ["munge_keypath"]),
    ("`slurm_controller`, `slurm_assoc`, `mig_layout`, `gpucluster.bringup.slurm_gres_facts`, `playbooks/slurm_munge.yml`",
     unknown_variables, []),
    ("```sh\nansible-playbook -i inventory gpucluster.bringup.nvidia_mig\n```", unknown_fqcns,
     ["ansible-playbook runs gpucluster.bringup.nvidia_mig, but there is no playbooks/nvidia_mig.yml"]),
    ("`gpucluster.bringup.no_such_thing`", unknown_fqcns, ["gpucluster.bringup.no_such_thing is no playbook, module or role"]),
    ("`gpucluster.bringup.munge` and `gpucluster.bringup.slurm_assoc`", unknown_fqcns, []),
    ("`roles/munge/README.md`, `playbooks/no_such.yml`, `no_such.yml`, `resume.yml`, `/etc/munge`, `group_vars/all.yml`",
     missing_paths, ["no_such.yml", "playbooks/no_such.yml"]),
])
def test_the_checks_find_what_does_not_exist(text, check, expected):
    assert check(text) == expected


def test_a_link_to_a_missing_anchor_is_found():
    assert broken_links("[x](../README.md#no-such-heading) [y](../README.md#using-it-on-a-real-cluster)", DOC.parent) == [
        "../README.md#no-such-heading: README.md has no heading with that anchor"]
