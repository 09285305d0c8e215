# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helper of ``benchmarks/mutation.sh`` (mutation testing of plugins/module_utils/ with mutmut).

Three commands, both run from the repository root:

``select COLLECTION FILE...``
    prints the test files (relative to the collection root) whose tests may
    call the given module_utils files: every test file that names one of them,
    or names a module, filter, action plugin or module_utils file that imports
    one of them (transitively).  Test files that only drive ``ansible-playbook``
    (roles, AWX) are left out (``SUBPROCESS_ONLY``): the mutant is not active
    in that subprocess (mutmut picks it by module name), mutmut cannot see what
    they cover, and they take minutes.

``collect WORKDIR RESULTS``
    copies mutmut's per-file results (``WORKDIR/mutants/<file>.meta``) to
    ``RESULTS/<file>.json`` with the diff of every mutant not killed (run in
    the mutation virtualenv: it uses mutmut to print the diffs).  A file's
    result stays there until the file is run again, so partial runs add up.

``report RESULTS EQUIVALENT_FILE OUT_DIR``
    prints, per file and in total, the mutants, killed, survived, timeout,
    no-tests, the raw score and the score without the mutants listed as
    equivalent; writes ``OUT_DIR/report.txt`` and ``OUT_DIR/survivors.txt``
    (the diff of every mutant not killed and not listed as equivalent).

Raw score = (killed + timeout) / mutants: a timeout is a mutant the tests
caught by hanging (an infinite loop); a mutant that no test reaches counts as
not killed.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import sys

# Exit codes of mutmut 3 (mutmut/stats.py status_by_exit_code).
KILLED = {1, 3}
SURVIVED = {0}
TIMEOUT = {36, -24, 24, 152, 255}
NO_TESTS = {5, 33}
SUBPROCESS_ONLY = (
    'tests/unit/roles/enroot/test_enroot_roles.py',
    'tests/unit/roles/mig/test_mig_role_local.py',
    'tests/unit/roles/slurmdbd/test_sacctmgr_slurmdbd_role.py',
    'tests/unit/plugins/action/test_preflight_playbook.py',
    # runs a copy of _slurm_hooks.py with a cleared environment: the mutated copy cannot import mutmut
    'tests/unit/plugins/module_utils/slurm/test_slurm_hook_runner.py',
    'tests/unit/awx/test_job_templates.py',
    'tests/unit/awx/test_awx_pdd.py',
    'tests/unit/awx/test_ee.py',
)
# Role tests that sat in tests/unit/ (outside TEST_ROOTS) before tests/unit mirrored the tree: still not selected,
# so the selection is what it was; whether they should kill mutants is the mutation score's question.
NOT_SELECTED = (
    'tests/unit/roles/mig/test_mig_reset_blockers.py',
    'tests/unit/roles/munge/test_munge_role.py',
    'tests/unit/roles/nvml/test_nvml_role.py',
    'tests/unit/roles/slurm/test_slurm_local_packages_role.py',
    'tests/unit/roles/slurm/test_slurm_nvml_role.py',
    'tests/unit/roles/slurmdbd/test_slurmdbd_mariadb_secure.py',
    'tests/unit/roles/validate/test_validate_report_role.py',
)
TEST_ROOTS = ('tests/unit/plugins', 'tests/unit/roles', 'tests/unit/standins', 'tests/unit/awx')
CODE_DIRS = ('plugins/module_utils', 'plugins/modules', 'plugins/filter', 'plugins/action')


def _read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def _py_files(root, top):
    found = []
    for folder, _dirs, files in os.walk(os.path.join(root, top)):
        for name in files:
            if name.endswith('.py'):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(found)


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def select_tests(root, targets):
    """Test files under TEST_ROOTS that may reach the target module_utils files."""
    users = set(_stem(t) for t in targets)
    code = {}
    for top in CODE_DIRS:
        for path in _py_files(root, top):
            code[_stem(path)] = _read(os.path.join(root, path))
    # a name followed by "._" or "/_" is a folder of plugins/module_utils (module_utils.slurm._gres), not the
    # file of that name (the filter plugin slurm.py)
    grew = True
    while grew:
        grew = False
        for name, text in code.items():
            if name not in users and any(re.search(r'\b%s\b(?![./]_)' % re.escape(u), text) for u in users):
                users.add(name)
                grew = True
    pattern = re.compile(r'\b(%s)\b(?![./]_)' % '|'.join(re.escape(u) for u in sorted(users)))
    tests = []
    for top in TEST_ROOTS:
        for path in _py_files(root, top):
            if not _stem(path).startswith('test_') or path in SUBPROCESS_ONLY or path in NOT_SELECTED:
                continue
            if pattern.search(_read(os.path.join(root, path))):
                tests.append(path)
    return tests


def read_equivalent(path):
    """{mutant key: reason} from the equivalent-mutant list (``_file.x_func__mutmut_N  reason``)."""
    equivalent = {}
    if not os.path.exists(path):
        return equivalent
    for line in _read(path).splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        key, _sep, reason = line.partition(' ')
        equivalent[key] = reason.strip()
    return equivalent


def _score(caught, total):
    return '%.1f' % (100.0 * caught / total) if total else '-'


def collect(workdir, results):
    """Copy mutmut's per-file results out of WORKDIR/mutants into RESULTS, with the diff of every mutant not killed.

    Returns the number of mutants."""
    os.chdir(workdir)
    from mutmut.mutation.diff_apply import get_diff_for_mutant  # pylint: disable=import-outside-toplevel
    metas = []
    for folder, _dirs, files in os.walk('mutants'):
        metas.extend(os.path.join(folder, n) for n in files if n.endswith('.py.meta'))
    count = 0
    for meta in sorted(metas):
        with open(meta, encoding='utf-8') as handle:
            codes = json.load(handle)['exit_code_by_key']
        if not codes:
            continue
        count += len(codes)
        source = os.path.relpath(meta[:-len('.meta')], 'mutants')
        diffs = {}
        for key, code in sorted(codes.items()):
            if code in KILLED or code in TIMEOUT:
                continue
            try:
                diffs[key] = get_diff_for_mutant(key, path=source)
            except Exception as exc:  # pylint: disable=broad-exception-caught
                diffs[key] = '(no diff: %s)' % exc
        name = os.path.basename(source)
        with open(os.path.join(results, name + '.json'), 'w', encoding='utf-8') as handle:
            json.dump({'exit_code_by_key': codes, 'diffs': diffs}, handle, indent=1, sort_keys=True)
    return count


def _count(name, codes, equivalent, seen_equivalent, survivors):
    row = dict(mutants=len(codes['exit_code_by_key']), killed=0, survived=0, timeout=0, no_tests=0, other=0, equivalent=0,
               unchecked=0)
    for key, code in sorted(codes['exit_code_by_key'].items(), key=lambda item: _natural(item[0])):
        short = '%s.%s' % (_stem(name), key.rpartition('.')[2])
        if code in KILLED:
            row['killed'] += 1
            continue
        if code in TIMEOUT:
            row['timeout'] += 1
            continue
        if code is None:
            row['unchecked'] += 1
            continue
        status = 'survived' if code in SURVIVED else 'no tests' if code in NO_TESTS else 'exit code %s' % code
        row['survived' if code in SURVIVED else 'no_tests' if code in NO_TESTS else 'other'] += 1
        if short in equivalent:
            row['equivalent'] += 1
            seen_equivalent.add(short)
        else:
            survivors.append((short, status, codes['diffs'].get(key, '')))
    return row


def _natural(key):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', key)]


def report(results, equivalent_file, out_dir):
    """Print and write the per-file table; returns 0, or 1 when there are no results."""
    equivalent = read_equivalent(equivalent_file)
    seen_equivalent = set()
    rows = []
    survivors = []
    fields = ('mutants', 'killed', 'survived', 'timeout', 'no_tests', 'other', 'equivalent', 'unchecked')
    totals = dict((field, 0) for field in fields)
    for name in sorted(n[:-len('.json')] for n in os.listdir(results) if n.endswith('.py.json')):
        with open(os.path.join(results, name + '.json'), encoding='utf-8') as handle:
            row = _count(name, json.load(handle), equivalent, seen_equivalent, survivors)
        for field in fields:
            totals[field] += row[field]
        rows.append((name, row))
    if not rows:
        print('no mutation results in %s: run benchmarks/mutation.sh first' % results)
        return 1
    header = '%-24s %7s %7s %8s %7s %8s %7s %7s %7s' % (
        'file', 'mutants', 'killed', 'survived', 'timeout', 'no-tests', 'equiv', 'score%', 'adj.%')
    lines = [header, '-' * len(header)]
    for name, row in rows + [('TOTAL', totals)]:
        caught = row['killed'] + row['timeout']
        checked = row['mutants'] - row['unchecked']
        lines.append('%-24s %7d %7d %8d %7d %8d %7d %7s %7s%s' % (
            name, row['mutants'], row['killed'], row['survived'], row['timeout'], row['no_tests'], row['equivalent'],
            _score(caught, checked), _score(caught, checked - row['equivalent']),
            '  (stopped early: %d not run)' % row['unchecked'] if row['unchecked'] else ''))
    lines.append('')
    lines.append('score%% = (killed + timeout) / mutants; adj.%% leaves out the %d mutants listed in %s' % (
        totals['equivalent'], os.path.relpath(equivalent_file)))
    lines.append('survived and no-tests (no test reaches the function) both count as not killed;'
                 ' mutants of a run stopped early that were not run are left out of the scores')
    if totals['other']:
        lines.append('%d mutants not checked or with another outcome count as not killed' % totals['other'])
    stale = sorted(k for k in equivalent if k not in seen_equivalent and any(k.startswith(_stem(n) + '.') for n, _row in rows))
    if stale:
        lines.append('stale equivalent entries (killed or gone now): %s' % ' '.join(stale))
    text = '\n'.join(lines)
    print(text)
    with open(os.path.join(out_dir, 'report.txt'), 'w', encoding='utf-8') as handle:
        handle.write(text + '\n')
    path = os.path.join(out_dir, 'survivors.txt')
    with open(path, 'w', encoding='utf-8') as handle:
        for short, status, diff in survivors:
            handle.write('### %s (%s)\n%s\n\n' % (short, status, diff))
    print('mutants not killed and not listed as equivalent: %d, diffs in %s' % (len(survivors), os.path.relpath(path)))
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == 'select':
        for path in select_tests(argv[1], argv[2:]):
            print(path)
        return 0
    if len(argv) == 3 and argv[0] == 'collect':
        print(collect(*argv[1:]))
        return 0
    if len(argv) == 4 and argv[0] == 'report':
        return report(*argv[1:])
    sys.stderr.write('usage: mutation_report.py select COLLECTION FILE... | collect WORKDIR RESULTS'
                     ' | report RESULTS EQUIVALENT_FILE OUT_DIR\n')
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
