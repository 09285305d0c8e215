"""No role or playbook reads another role's files by path (issue 43 item 4).

A fact lives in one place and everything reads it there: a role's table another role or a playbook needs is a
module_utils table behind a filter (the named MIG layouts: ``gpucluster.bringup.mig_layouts``; the distributions' Slurm
packages: ``gpucluster.bringup.slurm_distribution_packages`` / ``slurm_host_packages``), or a role's entry point
(``include_role`` with ``tasks_from``), never ``roles/<other>/...`` or ``{{ role_path }}/../<other>`` in a lookup,
``include_vars`` or ``vars_files``.  ``{{ role_path }}/../..`` is the collection's root (the validate role's report reads
MANIFEST.json / galaxy.yml there), not another role.  Comment lines may name any file.
"""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# roles/<name>/ as a path (not e.g. "gpucluster.bringup.mig" or the word "roles")
_ROLE_PATH = re.compile(r'(?<![A-Za-z0-9_.-])roles/(?P<role>[A-Za-z0-9_]+)/')
# {{ role_path }}/../x or role_path ~ '/../x' where x is not .. (the collection root)
_UP_FROM_ROLE = re.compile(r'''role_path\s*(?:}}\s*|~\s*['"])/\.\./(?!\.\.)''')
# a relative path out of a role's folder into another one: ../../<role>/... (include_vars, vars_files, lookups)
_CLIMB = re.compile(r'(?<![A-Za-z0-9_])\.\./\.\./(?!\.\.)')


def cross_role_reads(text, own_role=None):
    """``[(line number, line)]`` of the lines of ``text`` (a file of role ``own_role``, None for a playbook) that name
    another role's files by path."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith('#'):
            continue
        others = [m.group('role') for m in _ROLE_PATH.finditer(line) if m.group('role') != own_role]
        if others or _UP_FROM_ROLE.search(line) or (own_role is not None and _CLIMB.search(line)):
            found.append((number, line.strip()))
    return found


def _files():
    for pattern in ('roles/*/**/*.yml', 'roles/*/**/*.yaml', 'roles/*/**/*.j2', 'playbooks/**/*.yml', 'playbooks/**/*.yaml'):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            relative = os.path.relpath(path, ROOT)
            parts = relative.split(os.sep)
            yield relative, parts[1] if parts[0] == 'roles' else None


FILES = sorted(set(_files()))


@pytest.mark.parametrize('line, own_role, flagged', [
    # what the validate role and the node preflight did before the layouts and package tables moved to module_utils
    ('    file: "{{ role_path }}/../mig/defaults/main.yml"', 'validate', True),
    ("    _d: \"{{ lookup('ansible.builtin.file', playbook_dir ~ '/../roles/mig/defaults/main.yml') | from_yaml }}\"", None, True),
    ("      {{ lookup('ansible.builtin.file', playbook_dir ~ '/../roles/slurm/vars/' ~ _np_family ~ '.yml') }}", None, True),
    ("    x: \"{{ lookup('ansible.builtin.file', role_path ~ '/../slurm/vars/Debian.yml') }}\"", 'slurmdbd', True),
    ('  ansible.builtin.include_vars: ../../slurm/vars/main.yml', 'slurmdbd', True),
    ('    file: "{{ role_path }}/../../roles/mig/defaults/main.yml"', 'validate', True),
    # allowed: the collection root, the role's own files, other roles by name, comments
    ('    __validate_collection_root: "{{ role_path }}/../.."', 'validate', False),
    ('    file: "{{ role_path }}/defaults/main.yml"', 'slurm', False),
    ('    file: roles/slurm/defaults/main.yml', 'slurm', False),
    ('    name: gpucluster.bringup.mig', 'validate', False),
    ('# The hook runner and its files (roles/slurm/tasks/hooks.yml)', None, False),
    ('    tasks_from: defaults', None, False),
])
def test_the_scan_finds_reads_of_another_roles_files(line, own_role, flagged):
    assert bool(cross_role_reads(line, own_role)) is flagged


def test_the_scan_reads_the_roles_and_playbooks():
    names = [path for path, role in FILES]
    assert 'roles/validate/tasks/node_checks.yml' in names and 'playbooks/node_preflight.yml' in names
    assert ('roles/mig/defaults/main.yml', 'mig') in FILES and ('playbooks/site.yml', None) in FILES


@pytest.mark.parametrize('path, own_role', FILES, ids=[path for path, role in FILES])
def test_no_role_or_playbook_reads_another_roles_files(path, own_role):
    with open(os.path.join(ROOT, path)) as handle:
        text = handle.read()
    assert cross_role_reads(text, own_role) == [], (
        "%s reads another role's files by path; put the shared fact in plugins/module_utils behind a filter, or include "
        "the role's entry point" % path)
