# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helper of ``benchmarks/mutation.sh`` (mutation testing of plugins/module_utils/ with mutmut).

Commands, run from the repository root (``collect`` and ``sample`` in the mutation virtualenv, they use mutmut):

``select COLLECTION FILE...``
    prints the test files (relative to the collection root) whose tests may
    call the given module_utils files: every test file that names one of them,
    or names a module, filter, action plugin or module_utils file that imports
    one of them (transitively).  Test files that only drive ``ansible-playbook``
    (roles, AWX) are left out (``SUBPROCESS_ONLY``): the mutant is not active
    in that subprocess (mutmut picks it by module name), mutmut cannot see what
    they cover, and they take minutes.

``sample WORKDIR N SEED JOBS``
    makes every mutant of the files mutmut's ``setup.cfg`` in WORKDIR names
    (mutmut's own generation step, ``JOBS`` processes), draws N of them
    uniformly at random with ``random.Random(SEED)`` from the sorted list of
    all mutant names (the same tree, mutmut version and seed draw the same
    mutants), writes ``WORKDIR/sample.json`` (seed, how many mutants each file
    has, the names drawn) and prints the names drawn, one a line.

``collect WORKDIR RESULTS``
    copies mutmut's per-file results (``WORKDIR/mutants/<file>.meta``) to
    ``RESULTS/<file>.json`` with the diff of every mutant run and not killed.
    A file's result stays there until the file is run again, so partial runs
    add up.

``report RESULTS OUT_DIR [SAMPLE_JSON]``
    prints, per file and in total, the mutants, killed, survived, timeout,
    no-tests and the raw score; writes ``OUT_DIR/report.txt`` and
    ``OUT_DIR/survivors.txt`` (the diff of every mutant not killed).  With
    SAMPLE_JSON only the mutants drawn count, each file's row also says how
    many mutants it has, and the total has a 95 % confidence interval
    (Wilson score interval) for the score of all the files' mutants.

Raw score = (killed + timeout) / mutants: a timeout is a mutant the tests
caught by hanging (an infinite loop); a mutant that no test reaches counts as
not killed.  Every mutant that survives counts: there is no list of
"equivalent" mutants (mutmut numbers a function's mutants in order, so such a
list went stale with every edit).
"""

from __future__ import absolute_import, division, print_function

import json
import math
import os
import random
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
    # by path: a module and an action plugin may share a name (install_files.py), and either may import the target
    code = {}
    for top in CODE_DIRS:
        for path in _py_files(root, top):
            code[path] = _read(os.path.join(root, path))
    # a name followed by "._" or "/_" is a folder of plugins/module_utils (module_utils.slurm._gres), not the
    # file of that name (the filter plugin slurm.py)
    grew = True
    while grew:
        grew = False
        for path, text in code.items():
            if _stem(path) not in users and any(re.search(r'\b%s\b(?![./]_)' % re.escape(u), text) for u in users):
                users.add(_stem(path))
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


def _score(caught, total):
    return '%.1f' % (100.0 * caught / total) if total else '-'


# z of a two-sided 95 % interval: the 97.5th percentile of the standard normal distribution
Z95 = 1.959963984540054


def wilson_interval(caught, total, z=Z95):
    """The Wilson score interval (low, high), as fractions, for CAUGHT successes out of TOTAL draws.

    Unlike the normal approximation it stays inside [0, 1] and does not shrink to a point when every mutant
    drawn is killed (E. B. Wilson, 1927; R. G. Newcombe, Statistics in Medicine 17, 1998, method 3)."""
    if total <= 0 or not 0 <= caught <= total:
        raise ValueError('need 0 <= caught <= total and total > 0, got %r of %r' % (caught, total))
    p = float(caught) / total
    z2 = z * z
    centre = p + z2 / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z2 / (4.0 * total * total))
    scale = 1 + z2 / total
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def _natural(key):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', key)]


def draw(names, count, seed):
    """COUNT names drawn uniformly at random, without replacement, from NAMES with random.Random(SEED).

    The names are sorted first, so the draw depends only on the set of names and the seed; the names drawn come
    back in natural order (mutant 2 before mutant 10)."""
    population = sorted(set(names), key=_natural)
    if not 0 < count <= len(population):
        raise ValueError('cannot draw %d of %d mutants' % (count, len(population)))
    return sorted(random.Random(seed).sample(population, count), key=_natural)


def _metas(root):
    """{path of the mutated source file (relative to WORKDIR/mutants): exit_code_by_key} of every mutmut .meta file."""
    found = {}
    for folder, _dirs, files in os.walk(os.path.join(root, 'mutants')):
        for name in files:
            if name.endswith('.py.meta'):
                meta = os.path.join(folder, name)
                with open(meta, encoding='utf-8') as handle:
                    codes = json.load(handle)['exit_code_by_key']
                if codes:
                    found[os.path.relpath(meta[:-len('.meta')], os.path.join(root, 'mutants'))] = codes
    return found


def generate(workdir, jobs):
    """Make every mutant of the files WORKDIR/setup.cfg names with mutmut's own generation step (no test runs).

    ``mutmut run`` afterwards finds the mutated files newer than their sources and keeps them, names included."""
    os.chdir(workdir)
    # mutmut reads setup.cfg of the working directory when it is imported
    # pylint: disable=import-outside-toplevel
    from mutmut.__main__ import create_mutants
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths
    set_mutant_under_test('mutant_generation')
    os.makedirs('mutants', exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    create_mutants(jobs)


def sample(workdir, count, seed, jobs):
    """Generate the mutants, draw COUNT of them, write WORKDIR/sample.json; returns the names drawn.

    mutmut prints each file it mutates: to stderr here (its worker processes too), stdout is the names drawn."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        generate(workdir, jobs)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    metas = _metas('.')
    names = [key for codes in metas.values() for key in codes]
    drawn = draw(names, count, seed)
    population = dict((os.path.basename(path), len(codes)) for path, codes in metas.items())
    with open('sample.json', 'w', encoding='utf-8') as handle:
        json.dump({'seed': seed, 'mutants': len(names), 'mutants_by_file': population, 'drawn': drawn}, handle,
                  indent=1, sort_keys=True)
    return drawn


def collect(workdir, results):
    """Copy mutmut's per-file results out of WORKDIR/mutants into RESULTS, with the diff of every mutant run and not killed.

    Returns the number of mutants."""
    os.chdir(workdir)
    from mutmut.mutation.diff_apply import get_diff_for_mutant  # pylint: disable=import-outside-toplevel
    count = 0
    for source, codes in sorted(_metas('.').items()):
        count += len(codes)
        diffs = {}
        for key, code in sorted(codes.items()):
            # not run (a sample, a run stopped early), killed or caught by a timeout: no diff to read
            if code is None or code in KILLED or code in TIMEOUT:
                continue
            try:
                diffs[key] = get_diff_for_mutant(key, path=source)
            except Exception as exc:  # pylint: disable=broad-exception-caught
                diffs[key] = '(no diff: %s)' % exc
        with open(os.path.join(results, os.path.basename(source) + '.json'), 'w', encoding='utf-8') as handle:
            json.dump({'exit_code_by_key': codes, 'diffs': diffs}, handle, indent=1, sort_keys=True)
    return count


FIELDS = ('mutants', 'killed', 'survived', 'timeout', 'no_tests', 'other', 'unchecked')


def count_outcomes(name, result, survivors, only=None):
    """One row of the table: the outcomes of a file's mutants (of those in ONLY, when given).

    Appends (short name, outcome, diff) of every mutant run and not killed to SURVIVORS."""
    codes = result['exit_code_by_key']
    keys = sorted((k for k in codes if only is None or k in only), key=_natural)
    row = dict((field, 0) for field in FIELDS)
    row['mutants'] = len(keys)
    for key in keys:
        code = codes[key]
        if code in KILLED:
            row['killed'] += 1
        elif code in TIMEOUT:
            row['timeout'] += 1
        elif code is None:
            row['unchecked'] += 1
        else:
            field = 'survived' if code in SURVIVED else 'no_tests' if code in NO_TESTS else 'other'
            row[field] += 1
            status = 'exit code %s' % code if field == 'other' else field.replace('_', ' ')
            survivors.append(('%s.%s' % (_stem(name), key.rpartition('.')[2]), status, result['diffs'].get(key, '')))
    return row


def _table(rows, population):
    """The table's lines: one row a file and the total; with POPULATION ({file: mutants}) a column of it."""
    header = '%-30s %s%7s %7s %8s %7s %8s %7s' % (
        'file', '%7s ' % 'of all' if population else '', 'mutants', 'killed', 'survived', 'timeout', 'no-tests',
        'score%')
    lines = [header, '-' * len(header)]
    for name, row in rows:
        lines.append('%-30s %s%7d %7d %8d %7d %8d %7s%s' % (
            name, '%7d ' % population.get(name, sum(population.values())) if population else '',
            row['mutants'], row['killed'], row['survived'], row['timeout'], row['no_tests'],
            _score(row['killed'] + row['timeout'], row['mutants'] - row['unchecked']),
            '  (not run: %d)' % row['unchecked'] if row['unchecked'] else ''))
    return lines


def report_lines(results_by_name, drawn=None):
    """The report's lines and the survivors, from {file name: collected result} (the mutants of DRAWN only, when given)."""
    only = None if drawn is None else set(drawn['drawn'])
    population = {} if drawn is None else drawn['mutants_by_file']
    survivors = []
    rows = []
    totals = dict((field, 0) for field in FIELDS)
    for name in sorted(results_by_name):
        row = count_outcomes(name, results_by_name[name], survivors, only)
        for field in FIELDS:
            totals[field] += row[field]
        rows.append((name, row))
    lines = _table(rows + [('TOTAL', totals)], population)
    caught = totals['killed'] + totals['timeout']
    checked = totals['mutants'] - totals['unchecked']
    lines.append('')
    lines.append('score% = (killed + timeout) / mutants run; survived and no-tests (no test reaches the function) count'
                 ' as not killed; mutants not run (a run stopped early) are left out')
    if totals['other']:
        lines.append('%d mutants with another outcome (interrupted, segfault, ...) count as not killed' % totals['other'])
    if drawn is not None:
        lines.append('sample: %d of the %d mutants of %d files, drawn with seed %s; %d run' % (
            len(drawn['drawn']), drawn['mutants'], len(population), drawn['seed'], checked))
        if totals['unchecked']:
            lines.append('NOT a uniform sample: the run stopped with %d of the mutants drawn not run, and mutmut runs the'
                         ' mutants with the fastest tests first' % totals['unchecked'])
        if checked:
            low, high = wilson_interval(caught, checked)
            lines.append('raw score %s %% (%d of %d), 95 %% confidence interval %.1f-%.1f %% (Wilson score interval)' % (
                _score(caught, checked), caught, checked, 100 * low, 100 * high))
    return lines, survivors


def report(results, out_dir, sample_file=None):
    """Print and write the table; returns 0, or 1 when there are no results."""
    results_by_name = {}
    for name in sorted(n[:-len('.json')] for n in os.listdir(results) if n.endswith('.py.json')):
        with open(os.path.join(results, name + '.json'), encoding='utf-8') as handle:
            results_by_name[name] = json.load(handle)
    if not results_by_name:
        print('no mutation results in %s: run benchmarks/mutation.sh first' % results)
        return 1
    drawn = None
    if sample_file:
        with open(sample_file, encoding='utf-8') as handle:
            drawn = json.load(handle)
    lines, survivors = report_lines(results_by_name, drawn)
    text = '\n'.join(lines)
    print(text)
    with open(os.path.join(out_dir, 'report.txt'), 'w', encoding='utf-8') as handle:
        handle.write(text + '\n')
    path = os.path.join(out_dir, 'survivors.txt')
    with open(path, 'w', encoding='utf-8') as handle:
        for short, status, diff in survivors:
            handle.write('### %s (%s)\n%s\n\n' % (short, status, diff))
    print('mutants not killed: %d, diffs in %s' % (len(survivors), os.path.relpath(path)))
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == 'select':
        for path in select_tests(argv[1], argv[2:]):
            print(path)
        return 0
    if len(argv) == 5 and argv[0] == 'sample':
        for name in sample(argv[1], int(argv[2]), int(argv[3]), int(argv[4])):
            print(name)
        return 0
    if len(argv) == 3 and argv[0] == 'collect':
        print(collect(*argv[1:]))
        return 0
    if len(argv) in (3, 4) and argv[0] == 'report':
        return report(*argv[1:])
    sys.stderr.write('usage: mutation_report.py select COLLECTION FILE... | sample WORKDIR N SEED JOBS'
                     ' | collect WORKDIR RESULTS | report RESULTS OUT_DIR [SAMPLE_JSON]\n')
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
