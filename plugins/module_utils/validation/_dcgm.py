# -*- coding: utf-8 -*-
# Copyright: (c) 2025, gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the JSON report of NVIDIA DCGM's ``dcgmi diag -j`` (pure logic, standard library only).

Shapes read (see ``tests/unit/fixtures/deep/dcgm/README.md`` for the samples and their sources):

* DCGM 3.x ``dcgmi diag -j`` (dcgmi/Diag.cpp ``HelperJsonBuildOutput``): ``{"DCGM GPU Diagnostic":
  {"test_categories": [{"category", "tests": [{"name", "results": [...]}]}]}, "version",
  "Driver Version Detected", "GPU Device IDs", "GPU Device Serials"}``. A per-GPU result names its
  GPU with ``"gpu_id": "3"``; a Deployment (software) result is system-wide, with the ``"gpu_id"``
  (a number) of its last error when it failed, and its warnings keyed ``"warnings"`` instead of
  ``"warning"``; its ``gpus`` are that GPU and those its warnings name (``GPU 3``). The older
  ``"gpu_ids"`` (a number, a list, or ``"0,1,2"``) of DCGM 2.x and of NVVS' own JSON, its
  ``null`` holes in ``tests``, upper-case statuses (``"PASS"``), warnings as plain strings and
  ``"version"`` inside the ``"DCGM GPU Diagnostic"`` object are read too.
* DCGM 4.x (``"DCGM Diagnostic"`` -> ``test_categories``, ``"metadata": {"version",
  "Driver Version Detected"}``, ``"entity_groups"``; each result names its entity with
  ``"entity_group"``/``"entity_group_id"`` and ``"entity_id"``, each test may carry a
  ``"test_summary"``), and a top-level ``"tests"`` list of such tests.

Lines before the JSON document (dcgmi sometimes prints a warning first) and after it are ignored.
A document that only carries dcgmi's ``"runtime_error"`` (the diagnostic did not run: MIG
configuration, an unknown test, a host engine error) is a ``ValueError`` naming that error, as is
text with no JSON object or an object of neither shape. The ``"iterations"`` document of
``--iterations N`` is not read.

``parse_diag(text)`` returns ``{'version', 'driver', 'tests': [{'category', 'name', 'gpus',
'status', 'detail', 'error_ids'}]}``; ``failures(parsed)`` and ``summary(parsed)`` work on it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

ROOTS_3X = ('DCGM GPU Diagnostic',)
ROOTS_4X = ('DCGM Diagnostic',)
DRIVER_KEYS = ('Driver Version Detected', 'Driver Version', 'driver_version', 'driverVersion')
STATUSES = {'pass': 'pass', 'fail': 'fail', 'warn': 'warn', 'warning': 'warn', 'skip': 'skip', 'skipped': 'skip'}
SUMMARY_LIMIT = 300
DETAIL_LIMIT = 120
_GPU_GROUPS = ('gpu', '1')
_NAMED_GPU = re.compile(r'\bGPU (\d+)\b')
# The only texts with which DCGM refuses to run its diagnostic because of the node's MIG configuration:
# NVIDIA/DCGM nvvs/src/NvidiaValidationSuite.cpp, NvidiaValidationSuite::BuildCommonGpusList() (read at
# 72fa3feaa67d716a75323a8f47c34ff3ee73f824).  nvvs reports them as a system error; dcgmi -j prints that as
# "runtime_error" (dcgmi/Diag.cpp HelperDisplayFailureMessage), bare (DCGM 3.x) or after "Error: " or an
# "Error: Unable to complete diagnostic ... Return: (...)" line (DCGM 4.x RunDiagOnce).  DCGM's own
# sdk_samples/c_src/health_sample/health_sample.cpp (ReceivedIncompatibleMigConfigurationMessage) looks for
# the first two the same way, as substrings of the system error.
MIG_REFUSALS = tuple(re.compile(pattern) for pattern in (
    r"GPU \d+'s MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU\.",
    r'Cannot run diagnostic: CUDA does not support enumerating GPUs with MIG mode enabled, yet GPU \d+ is MIG enabled '
    r'and the diagnostic is attempting to run on \d+ GPUs\.',
    r'Cannot run diagnostic: MIG is enabled, but no compute instances are configured\. '
    r'CUDA needs to execute on a compute instance if MIG is enabled\.',
    r'Cannot run diagnostic: CUDA does not support enumerating GPUs when one more GPUs has MIG mode enabled '
    r'and one or more GPUs has MIG mode disabled\.',
))


class DiagNotRun(ValueError):
    """dcgmi's JSON says the diagnostic did not run (its ``runtime_error``); ``error`` is that text."""

    def __init__(self, error):
        ValueError.__init__(self, 'dcgmi diag did not run: %s' % error)
        self.error = error


def mig_refusal(error):
    """The part of a ``runtime_error`` text that is one of DCGM's MIG refusals (``MIG_REFUSALS``), else None:
    any other text that mentions MIG is not a refusal and must not be read as one."""
    text = ' '.join(str(error).split())
    for pattern in MIG_REFUSALS:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


def _json_object(text):
    """The first JSON object in ``text`` (anything before or after it ignored), or ValueError."""
    if not isinstance(text, str):
        raise ValueError('dcgmi output must be text, got %s' % type(text).__name__)
    decoder = json.JSONDecoder()
    for match in re.finditer(r'\{', text):
        try:
            value, dummy = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    first = next((line.strip() for line in text.splitlines() if line.strip()), '')
    raise ValueError('no JSON document in the dcgmi output (%d characters%s)'
                     % (len(text), ', first line: %r' % first[:120] if first else ''))


def _first(mapping, keys):
    for key in keys:
        value = mapping.get(key) if isinstance(mapping, dict) else None
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def _gpu_list(value, where):
    """GPU ids from a ``gpu_id``/``gpu_ids`` value: a number, ``"3"``, ``"0,1,2"`` or a list of them."""
    items = value if isinstance(value, list) else str(value).split(',') if isinstance(value, str) else [value]
    gpus = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)) or not str(item).strip().isdigit():
            raise ValueError('%s: GPU id %r is not a GPU index' % (where, item))
        if int(item) not in gpus:
            gpus.append(int(item))
    return gpus


def _warnings(result, where):
    """(texts, error ids) of a result's ``warnings``: objects with ``warning`` (or 3.x's ``warnings``), or strings."""
    raw = result.get('warnings')
    if raw is None:
        raw = []
    elif not isinstance(raw, list):
        raw = [raw]
    texts, ids = [], []
    for item in raw:
        if item is None:
            continue
        if isinstance(item, str):
            text, code = item, None
        elif isinstance(item, dict):
            text = next((item[k] for k in ('warning', 'warnings', 'message', 'msg') if isinstance(item.get(k), str)), '')
            code = item.get('error_id', item.get('error_code'))
        else:
            raise ValueError('%s: a warning is %s, expected an object or a string' % (where, type(item).__name__))
        if text.strip():
            texts.append(' '.join(text.split()))
        if code is not None:
            if isinstance(code, bool) or not str(code).strip().lstrip('-').isdigit():
                raise ValueError('%s: error_id %r is not a number' % (where, code))
            ids.append(int(code))
    return texts, ids


def _status(result, where):
    status = result.get('status')
    key = status.strip().lower() if isinstance(status, str) else None
    if key not in STATUSES:
        raise ValueError('%s: status %r is not one of Pass, Fail, Warn, Skip' % (where, status))
    return STATUSES[key]


def _gpus_of(result, where):
    """The GPUs a result is about: [] for the whole system (or a non-GPU entity)."""
    for key in ('gpu_id', 'gpu_ids'):
        if key in result and result[key] is not None:
            return _gpu_list(result[key], where)
    if 'entity_id' in result:
        group = str(result.get('entity_group', result.get('entity_group_id', 'GPU'))).strip().lower()
        return _gpu_list(result['entity_id'], where) if group in _GPU_GROUPS else []
    return []


def _entry(category, name, result, where):
    if not isinstance(result, dict):
        raise ValueError('%s: a result is %s, expected an object' % (where, type(result).__name__))
    texts, ids = _warnings(result, where)
    gpus = _gpus_of(result, where)
    if isinstance(result.get('gpu_id'), int) and texts:
        # DCGM 3.x's system-wide (Deployment) result keeps only its last error's GPU: add the GPUs its warnings name
        named = set(int(n) for n in _NAMED_GPU.findall(' '.join(texts)))
        gpus = sorted(named.union(gpus))
    return {'category': category, 'name': name, 'gpus': gpus, 'status': _status(result, where),
            'detail': '; '.join(texts), 'error_ids': ids}


def _test_entries(category, test, where):
    if test is None:  # NVVS' JSON leaves null holes in a category's tests
        return []
    if not isinstance(test, dict):
        raise ValueError('%s: a test is %s, expected an object' % (where, type(test).__name__))
    name = test.get('name')
    if not isinstance(name, str) or not name.strip():
        raise ValueError('%s: a test has no name' % where)
    name = name.strip()
    category = test.get('category', category)
    where = '%s, test %r' % (where, name)
    results = test.get('results')
    if results is not None and not isinstance(results, list):
        raise ValueError('%s: results is %s, expected a list' % (where, type(results).__name__))
    entries = [_entry(category, name, result, where) for result in (results or []) if result is not None]
    summary = test.get('test_summary')
    if isinstance(summary, dict) and summary.get('status') is not None:
        overall = _entry(category, name, summary, where + ' test_summary')
        if not entries or (overall['status'] == 'fail' and all(e['status'] != 'fail' for e in entries)):
            entries.append(overall)
    elif not entries and test.get('status') is not None:
        entries.append(_entry(category, name, test, where))
    return entries


def _categories(categories, where):
    if not isinstance(categories, list):
        raise ValueError('%s: test_categories is %s, expected a list' % (where, type(categories).__name__))
    tests = []
    for category in categories:
        if not isinstance(category, dict):
            raise ValueError('%s: a test category is %s, expected an object' % (where, type(category).__name__))
        name = str(category.get('category', '')).strip()
        listed = category.get('tests', [])
        if not isinstance(listed, list):
            raise ValueError('%s, category %r: tests is %s, expected a list' % (where, name, type(listed).__name__))
        for test in listed:
            tests.extend(_test_entries(name, test, '%s, category %r' % (where, name)))
    return tests


def parse_diag(text):
    """``dcgmi diag -j``'s stdout as ``{'version', 'driver', 'tests'}``; ValueError when it holds no report.

    Each test entry: ``{'category': 'Deployment', 'name': 'Denylist', 'gpus': [0, 1] ([] = the whole
    system), 'status': 'pass'|'fail'|'warn'|'skip', 'detail': 'warning text; ...' ('' when none),
    'error_ids': [int, ...]}``, one per result in the report's order.
    """
    doc = _json_object(text)
    metadata = doc.get('metadata') if isinstance(doc.get('metadata'), dict) else {}
    body, where = None, None
    for key in ROOTS_3X + ROOTS_4X:
        if isinstance(doc.get(key), dict):
            body, where = doc[key], key
            break
    version = _first(doc, ('version',)) or _first(metadata, ('version',)) or _first(body, ('version',))
    driver = _first(doc, DRIVER_KEYS) or _first(metadata, DRIVER_KEYS) or _first(body, DRIVER_KEYS)
    if body is not None and 'test_categories' in body:
        tests = _categories(body['test_categories'], where)
    elif isinstance(doc.get('tests'), list):
        tests = []
        for test in doc['tests']:
            tests.extend(_test_entries('', test, 'tests'))
    else:
        error = _first(body, ('runtime_error',)) or _first(doc, ('runtime_error',))
        if error:
            raise DiagNotRun(error)
        raise ValueError('the dcgmi JSON document has neither "%s" -> "test_categories" (DCGM 3.x), "%s" -> "test_categories" '
                         '(DCGM 4.x) nor "tests"; its keys: %s' % (ROOTS_3X[0], ROOTS_4X[0], ', '.join(sorted(doc)) or 'none'))
    return {'version': version, 'driver': driver, 'tests': tests}


def failures(parsed):
    """The entries of ``parsed`` (``parse_diag``'s result) whose status is fail."""
    return [test for test in parsed['tests'] if test['status'] == 'fail']


def _shorten(text, limit):
    return text if len(text) <= limit else text[:limit - 3].rstrip() + '...'


def summary(parsed):
    """One line naming the failed tests: ``'GPU Memory on GPU 3: <detail>; PCIe on GPU 0: <detail>'``.

    At most about 300 characters: the details are cut, and the failures that do not fit are counted
    as ``'+N more'``. '' when nothing failed.
    """
    parts = []
    for test in failures(parsed):
        gpus = test['gpus']
        where = '' if not gpus else ' on GPU %d' % gpus[0] if len(gpus) == 1 else ' on GPUs %s' % ','.join(str(g) for g in gpus)
        detail = _shorten(test['detail'], DETAIL_LIMIT) if test['detail'] else 'failed'
        parts.append('%s%s: %s' % (test['name'], where, detail))
    line = ''
    for number, part in enumerate(parts):
        rest = len(parts) - number - 1
        tail = '; +%d more' % rest if rest else ''
        candidate = (line + '; ' if line else '') + part
        if line and len(candidate + tail) > SUMMARY_LIMIT:
            return '%s; +%d more' % (line, len(parts) - number)
        line = candidate if len(candidate + tail) <= SUMMARY_LIMIT else _shorten(candidate, SUMMARY_LIMIT - len(tail))
    return line
