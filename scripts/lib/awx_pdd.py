#!/usr/bin/env python3
"""Build an ansible-runner private data directory laid out the way AWX lays one out for a job.

    python3 scripts/lib/awx_pdd.py --dest DIR --playbook playbooks/validate.yml \\
        --inventory inventory/hosts.yml inventory/simulated/hosts.yml \\
        [--extra-vars JSON|@FILE] [--limit X] [--verbosity N] [--env K=V ...]
    ansible-runner run DIR -p playbooks/validate.yml --ident 1
    cat DIR/artifacts/1/status   # successful

What AWX writes for a job (awx/main/tasks/jobs.py, RunJob) and what this writes:

- project/: AWX copies the project checkout; here the project directory
  (--project, default this checkout) without the collection's build_ignore
  paths (.git, .venv, ...).
- requirements_collections/: AWX installs the project's collection
  requirements there during the project sync and puts the directory first in
  ANSIBLE_COLLECTIONS_PATH; here this collection is copied to
  requirements_collections/ansible_collections/gpucluster/bringup (the files
  its tarball would hold), unless --no-collection.
- inventory/hosts: AWX writes the inventory as an executable Python script that
  prints the inventory JSON (hosts, groups with their vars and children,
  _meta.hostvars); here the JSON is `ansible-inventory --list --export` of the
  --inventory sources. --inventory-format copy copies the sources instead.
- env/extravars: the extra vars (YAML; JSON is YAML) with awx_job_id.
- env/cmdline: ansible-playbook options as AWX builds them: -u USER (AWX
  always passes one, root by default), --check, --diff, --forks, -l LIMIT,
  -v..., -t TAGS, --skip-tags.
- env/envvars: the environment AWX sets for a job (JOB_ID,
  ANSIBLE_RETRY_FILES_ENABLED, ANSIBLE_SSH_CONTROL_PATH_DIR, the collections
  and roles paths) plus --env K=V. AWX hands these to ansible-runner in memory
  (AWX_RUNNER_OMIT_ENV_FILES), the runner CLI reads them from this file.
- env/settings: ansible-runner settings (job_timeout from --timeout).
- artifacts/: created by ansible-runner: artifacts/<ident>/{status,rc,stdout,job_events/}.

Standard library only. Every error names the bad value and exits 2.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import stat
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
# ansible-galaxy leaves these out of every collection tarball, whatever galaxy.yml says.
ALWAYS_IGNORED = ('*.pyc', '*.retry', '__pycache__', '.git', 'tests/output', '*.tar.gz')


class PddError(Exception):
    pass


def build_ignore(galaxy_yml):
    """The build_ignore patterns of a galaxy.yml (a block list of strings, read without a YAML library)."""
    patterns, inside = [], False
    with open(galaxy_yml, encoding='utf-8') as handle:
        for line in handle:
            stripped = line.strip()
            if not line.startswith((' ', '-')) and stripped:
                inside = stripped.startswith('build_ignore:')
                continue
            if inside and stripped.startswith('- '):
                patterns.append(stripped[2:].strip().strip('\'"'))
    return patterns


def ignored(rel_path, patterns):
    """build_ignore semantics: a pattern matches the path relative to the collection root; the always-ignored ones also match a base name."""
    name = os.path.basename(rel_path)
    return (any(fnmatch.fnmatch(rel_path, pattern) for pattern in tuple(patterns) + ALWAYS_IGNORED)
            or any(fnmatch.fnmatch(name, pattern) for pattern in ALWAYS_IGNORED))


def copy_tree(src, dest, patterns, skip=()):
    """Copy src to dest leaving out paths that match the patterns (relative to src) and the directories in skip.

    Symlinks to directories are not followed."""
    skip = set(os.path.realpath(path) for path in skip)
    for current, dirs, files in os.walk(src):
        rel_dir = os.path.relpath(current, src)
        rel_dir = '' if rel_dir == '.' else rel_dir
        dirs[:] = [d for d in sorted(dirs) if not ignored(os.path.join(rel_dir, d), patterns)
                   and not os.path.islink(os.path.join(current, d)) and os.path.realpath(os.path.join(current, d)) not in skip]
        os.makedirs(os.path.join(dest, rel_dir), exist_ok=True)
        for name in files:
            rel = os.path.join(rel_dir, name)
            if ignored(rel, patterns) or not os.path.exists(os.path.join(current, name)):
                continue
            shutil.copy2(os.path.join(current, name), os.path.join(dest, rel))


def parse_env(pairs):
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition('=')
        if not sep or not key or not key.replace('_', 'A').isalnum() or key[0].isdigit():
            raise PddError('--env {0!r} is not KEY=VALUE with KEY a variable name (letters, digits, _)'.format(pair))
        env[key] = value
    return env


def parse_extra_vars(text):
    if text is None:
        return {}
    source = '--extra-vars'
    if text.startswith('@'):
        source = text[1:]
        try:
            with open(source, encoding='utf-8') as handle:
                text = handle.read()
        except OSError as exc:
            raise PddError('--extra-vars file {0!r} cannot be read: {1}'.format(source, exc.strerror))
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise PddError('{0} is not JSON ({1}): {2!r}'.format(source, exc, text[:80]))
    if not isinstance(value, dict):
        raise PddError('{0} must be a JSON object of variables, got {1}: {2!r}'.format(source, type(value).__name__, text[:80]))
    return value


def cmdline_args(opts):
    """ansible-playbook options in the order AWX's RunJob.build_args writes them."""
    args = []
    if opts.check:
        args.append('--check')
    args.extend(['-u', opts.user])
    if opts.become:
        args.append('--become')
    if opts.diff:
        args.append('--diff')
    if opts.forks:
        args.append('--forks=%d' % opts.forks)
    if opts.limit:
        args.extend(['-l', opts.limit])
    if opts.verbosity:
        args.append('-' + 'v' * min(5, opts.verbosity))
    if opts.tags:
        args.extend(['-t', opts.tags])
    if opts.skip_tags:
        args.append('--skip-tags=%s' % opts.skip_tags)
    return args


def quote(arg):
    """One argument for env/cmdline, which ansible-runner splits with shlex."""
    if arg and all(c.isalnum() or c in '@%+=:,./-_' for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def inventory_script(sources, ansible_inventory):
    cmd = [ansible_inventory, '--list', '--export']
    for source in sources:
        cmd.extend(['-i', source])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise PddError('{0} failed (rc {1}): {2}'.format(' '.join(cmd), proc.returncode, proc.stderr.strip()[-2000:]))
    data = json.loads(proc.stdout)
    # AWX's BaseTask.write_inventory_file writes exactly this: a script that prints the inventory JSON.
    return '#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n' % json.dumps(data), data


def find_tool(name):
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which(name)
    if not found:
        raise PddError('{0} not found next to {1} nor on PATH; install ansible-core or pass --ansible-inventory'.format(name, sys.executable))
    return found


def write(path, text, mode=0o600):
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    os.chmod(path, mode)


def build(opts):
    dest = os.path.abspath(opts.dest)
    project = os.path.abspath(opts.project)
    collection = os.path.abspath(opts.collection)
    if os.path.exists(dest) and os.listdir(dest):
        if not opts.force:
            raise PddError('--dest {0!r} exists and is not empty; remove it or pass --force'.format(opts.dest))
        shutil.rmtree(dest)
    if not os.path.isfile(os.path.join(project, opts.playbook)):
        raise PddError('--playbook {0!r} is not a file of the project {1!r}'.format(opts.playbook, project))
    for source in opts.inventory:
        if not os.path.exists(source):
            raise PddError('--inventory {0!r} does not exist'.format(source))
    if opts.verbosity < 0 or opts.verbosity > 5:
        raise PddError('--verbosity {0} is out of range: 0 to 5'.format(opts.verbosity))
    if not opts.ident or not all(c.isalnum() or c in '-_.' for c in opts.ident):
        raise PddError('--ident {0!r} must be letters, digits, "-", "_" or "." (it names artifacts/<ident>)'.format(opts.ident))
    extra_vars = parse_extra_vars(opts.extra_vars)
    user_env = parse_env(opts.env)
    galaxy_yml = os.path.join(collection, 'galaxy.yml')
    if not opts.no_collection and not os.path.isfile(galaxy_yml):
        raise PddError('--collection {0!r} has no galaxy.yml; pass the collection root or --no-collection'.format(opts.collection))
    patterns = build_ignore(galaxy_yml) if os.path.isfile(galaxy_yml) else []

    os.makedirs(dest, exist_ok=True)
    os.chmod(dest, stat.S_IRWXU)
    for sub in ('inventory', 'env', 'cp', 'requirements_collections', 'requirements_roles'):
        os.makedirs(os.path.join(dest, sub), mode=0o700, exist_ok=True)

    # the private data directory may lie inside the project or the collection (e.g. .build/pdd): never copy it into itself
    copy_tree(project, os.path.join(dest, 'project'), patterns, skip=[dest])
    if not os.path.isfile(os.path.join(dest, 'project', opts.playbook)):
        raise PddError('--playbook {0!r} is left out of the project copy by the build_ignore patterns {1}'.format(opts.playbook, patterns))
    collections_dir = os.path.join(dest, 'requirements_collections')
    if not opts.no_collection:
        copy_tree(collection, os.path.join(collections_dir, 'ansible_collections', 'gpucluster', 'bringup'), patterns, skip=[dest])

    if opts.inventory_format == 'script':
        script, data = inventory_script(opts.inventory, opts.ansible_inventory or find_tool('ansible-inventory'))
        write(os.path.join(dest, 'inventory', 'hosts'), script, 0o700)
        hosts = sorted(set(data.get('_meta', {}).get('hostvars', {})) | set(h for g in data.values() if isinstance(g, dict) for h in g.get('hosts', [])))
    else:
        for index, source in enumerate(opts.inventory):
            target = os.path.join(dest, 'inventory', '%02d-%s' % (index, os.path.basename(source.rstrip('/'))))
            if os.path.isdir(source):
                shutil.copytree(source, target)
            else:
                shutil.copy2(source, target)
        hosts = None

    extra_vars = dict(extra_vars)
    extra_vars.setdefault('awx_job_id', int(opts.ident) if opts.ident.isdigit() else opts.ident)
    write(os.path.join(dest, 'env', 'extravars'), json.dumps(extra_vars, indent=2, sort_keys=True) + '\n')
    write(os.path.join(dest, 'env', 'cmdline'), ' '.join(quote(arg) for arg in cmdline_args(opts)) + '\n')

    home = os.path.expanduser('~')
    env = {
        'AWX_PRIVATE_DATA_DIR': dest,
        'JOB_ID': opts.ident,
        'ANSIBLE_RETRY_FILES_ENABLED': 'False',
        'ANSIBLE_SSH_CONTROL_PATH_DIR': os.path.join(dest, 'cp'),
        'ANSIBLE_COLLECTIONS_PATH': os.pathsep.join([collections_dir, os.path.join(home, '.ansible/collections'), '/usr/share/ansible/collections']),
        'ANSIBLE_ROLES_PATH': os.pathsep.join([os.path.join(dest, 'requirements_roles'), os.path.join(home, '.ansible/roles'),
                                               '/usr/share/ansible/roles', '/etc/ansible/roles']),
    }
    env.update(user_env)
    write(os.path.join(dest, 'env', 'envvars'), json.dumps(env, indent=2, sort_keys=True) + '\n')
    settings = {'suppress_ansible_output': False}
    if opts.timeout:
        settings['job_timeout'] = opts.timeout
    write(os.path.join(dest, 'env', 'settings'), json.dumps(settings, indent=2, sort_keys=True) + '\n')
    return {'dest': dest, 'ident': opts.ident, 'playbook': opts.playbook, 'hosts': hosts,
            'run': 'ansible-runner run {0} -p {1} --ident {2}'.format(dest, opts.playbook, opts.ident)}


def parser():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--dest', required=True, help='the private data directory to create')
    p.add_argument('--playbook', required=True, help='playbook path relative to the project, e.g. playbooks/validate.yml')
    p.add_argument('--inventory', nargs='+', required=True, help='inventory files or directories, as for ansible-playbook -i')
    p.add_argument('--inventory-format', choices=['script', 'copy'], default='script',
                   help='script: AWX\'s executable JSON script (default); copy: the sources as they are')
    p.add_argument('--project', default=ROOT, help='project directory copied to project/ (default: this checkout)')
    p.add_argument('--collection', default=ROOT, help='collection root copied to requirements_collections/ (default: this checkout)')
    p.add_argument('--no-collection', action='store_true', help='do not copy the collection')
    p.add_argument('--extra-vars', help='extra vars as a JSON object, or @FILE holding one')
    p.add_argument('--limit', default='')
    p.add_argument('--verbosity', type=int, default=0, help='0 to 5, written as -v...')
    p.add_argument('--tags', default='')
    p.add_argument('--skip-tags', default='')
    p.add_argument('--forks', type=int, default=0)
    p.add_argument('--check', action='store_true', help='job type check')
    p.add_argument('--diff', action='store_true')
    p.add_argument('--become', action='store_true', help='the job template\'s privilege escalation')
    p.add_argument('--user', default='root', help='remote user passed as -u, as AWX does (default root; inventory ansible_user wins)')
    p.add_argument('--env', action='append', default=[], metavar='K=V', help='more environment for the job (repeatable)')
    p.add_argument('--ident', default='1', help='the job id: artifacts/<ident>/ (default 1)')
    p.add_argument('--timeout', type=int, default=0, help='job_timeout in seconds (0: none)')
    p.add_argument('--ansible-inventory', help='ansible-inventory to run (default: next to this Python, else PATH)')
    p.add_argument('--force', action='store_true', help='replace a non-empty --dest')
    return p


def main(argv=None):
    opts = parser().parse_args(argv)
    try:
        result = build(opts)
    except PddError as exc:
        sys.stderr.write('awx_pdd: error: {0}\n'.format(exc))
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == '__main__':
    sys.exit(main())
