# -*- coding: utf-8 -*-
# Copyright: (c) 2025, gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the output of NVIDIA's ``nvbandwidth`` (pure logic, standard library only).

Both forms nvbandwidth prints (see ``tests/unit/fixtures/deep/nvbandwidth/README.md`` for the samples
and where their format comes from):

* the text report (``output.cpp``): ``nvbandwidth Version: v0.8``, ``Built from Git version: ...``,
  the CUDA and driver versions, the host name, ``Device N: <name> (<domain>:<bus>:<device>)`` lines
  (without the PCI part before v0.7), then per testcase ``Running <name>.``, a matrix title such as
  ``memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)``, the matrix (``N/A`` where a pair was not
  measured) and ``SUM <key> <value>`` (``&&&& PERF <key> <value> +GB/s`` with ``--perfFormatter``);
  a waived testcase is a bare ``Waived: `` line (``Waiving <name>.`` in v0.2), an unknown one
  ``ERROR: Testcase <id> not found!``; the closing ``NOTE: The reported results ...`` lines end a
  finished run (v0.7 and later print them last; v0.2 printed another NOTE first);
* the ``-j`` JSON report (``json_output.cpp``): ``{"nvbandwidth": {"version", "git_version",
  "CUDA Runtime Version", "Driver Version", "GPU Device list", "testcases": [{"name", "status",
  "bandwidth_description", "bandwidth_matrix" (strings, "N/A"), "sum"}], "error", "warning"}}``.

A fatal CUDA/NVML error (``[CUDA_ERROR_...] ... in expression ...``) goes to stderr in the text form
and into ``"error"`` in the JSON form; a text capture that includes stderr (``2>&1``) has it too.

``parse(text)`` returns::

    {'version': 'v0.8' or None, 'git_version': ..., 'cuda_version': 12080 or None,
     'driver_version': '570.133.20' or None, 'host': 'node1' or None, 'warnings': [...],
     'devices': [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'pci': '00000000:1b:00'}],
     'testcases': {'host_to_device_memcpy_ce': {
         'status': 'passed' | 'waived' | 'error', 'unit': 'GB/s' | 'ns' | None, 'title': '...',
         'rows': ['0'], 'columns': ['0', '1'], 'matrix': [[55.12, None]], 'sum': 55.12,
         'error': '', 'matrices': [{'key', 'title', 'unit', 'rows', 'columns', 'matrix', 'sum'}]}},
     'error': '' or the fatal error}

``rows``/``columns`` are the labels nvbandwidth prints (a host testcase's single row is ``'0'``, the
CPU). A bidirectional device<->device testcase prints three matrices (``<name>_read1``, ``_read2``,
``_total``): the testcase's own fields are the last one (the total, as the JSON keeps it), all three
are in ``matrices``. Waived testcases of the text form carry no name; ``parse`` names them from the
testcases asked for (``requested``, the ``-t`` values in order) or, without it, from nvbandwidth's
own testcase order when that leaves no doubt (an unnamed one is ``waived#N``).

``per_gpu(testcase)`` gives ``{gpu: value}`` of a single-row testcase (host<->device, local copy,
all-to-one), ``pairs(testcase)`` ``{(row gpu, column gpu): value}`` of a device<->device matrix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

# nvbandwidth v0.8's testcases in its own order (nvbandwidth.cpp createTestcases(), single-node build):
# the index a testcase has for ``-t N``.
TESTCASES = (
    'host_to_device_memcpy_ce', 'device_to_host_memcpy_ce', 'host_to_device_bidirectional_memcpy_ce',
    'device_to_host_bidirectional_memcpy_ce', 'device_to_device_memcpy_read_ce', 'device_to_device_memcpy_write_ce',
    'device_to_device_bidirectional_memcpy_read_ce', 'device_to_device_bidirectional_memcpy_write_ce',
    'all_to_host_memcpy_ce', 'all_to_host_bidirectional_memcpy_ce', 'host_to_all_memcpy_ce',
    'host_to_all_bidirectional_memcpy_ce', 'all_to_one_write_ce', 'all_to_one_read_ce', 'one_to_all_write_ce',
    'one_to_all_read_ce', 'host_to_device_memcpy_sm', 'device_to_host_memcpy_sm',
    'host_to_device_bidirectional_memcpy_sm', 'device_to_host_bidirectional_memcpy_sm',
    'device_to_device_memcpy_read_sm', 'device_to_device_memcpy_write_sm',
    'device_to_device_bidirectional_memcpy_read_sm', 'device_to_device_bidirectional_memcpy_write_sm',
    'all_to_host_memcpy_sm', 'all_to_host_bidirectional_memcpy_sm', 'host_to_all_memcpy_sm',
    'host_to_all_bidirectional_memcpy_sm', 'all_to_one_write_sm', 'all_to_one_read_sm', 'one_to_all_write_sm',
    'one_to_all_read_sm', 'host_device_latency_sm', 'device_to_device_latency_sm', 'device_local_copy',
)
STATUSES = ('passed', 'waived', 'error')

_VERSION_RE = re.compile(r'^nvbandwidth Version:\s*(\S+)\s*$')
_GIT_RE = re.compile(r'^Built from Git version:\s*(.*?)\s*$')
_CUDA_RE = re.compile(r'^CUDA (?:Runtime|Driver) Version:\s*(\d+)\s*$')
_DRIVER_RE = re.compile(r'^Driver Version:\s*(\S+)\s*$')
_DEVICE_RE = re.compile(r'^Device (\d+): (.+?)(?: \(([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\))?\s*$')
_PROCESS_RE = re.compile(r'^Process\s+(\d+) \(([^)]*)\): device (\d+): (.+?)(?: \(([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\))?\s*$')
_JSON_DEVICE_RE = re.compile(r'^(\d+): (.+?)(?: \(([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\))?(?:: \(([^)]*)\))?\s*$')
_RUNNING_RE = re.compile(r'^Running (?:benchmark )?(\S+)\.\s*$')
_WAIVING_RE = re.compile(r'^Waiving (\S+)\.\s*$')
_WAIVED_RE = re.compile(r'^Waived:')
_NOT_FOUND_RE = re.compile(r'^ERROR: (?:Testcase|Benchmark) (.*) not found!\s*$')
_OUT_OF_BOUND_RE = re.compile(r'^ERROR: (?:Testcase|Benchmark) index (.*) out of bound!\s*$')
_TEST_ERROR_RE = re.compile(r'^Error: (.*)$')
_SUM_RE = re.compile(r'^SUM (\S+) (\S+)\s*$')
_PERF_RE = re.compile(r'^&&&& PERF (\S+) (\S+)(?: ([-+]\S+))?\s*$')
_STAT_RE = re.compile(r'^(?:MIN|MAX|AVG) \S+ \S+\s*$')
_SAMPLE_RE = re.compile(r'^\s*Sample \d+: ')
_FATAL_RES = (
    re.compile(r'^\[(?:CUDA_ERROR_\w+|cuda\w+)\] .* in expression .*$'),
    re.compile(r'^NVML_ERROR: \[.*\] in expression .*$'),
    re.compile(r'^ASSERT in expression .*$'),
    re.compile(r'^You cannot specify both testcase and testcasePrefix options at the same time\s*$'),
    re.compile(r'^Specified list of testcase prefixes did not match any testcases\s*$'),
)
_INVALID_ARGS_RE = re.compile(r'^ERROR: Invalid Arguments\s*$')
_FINAL_NOTE_RE = re.compile(r'^NOTE: The reported results may not reflect the full capabilities of the platform\.')
_EARLY_NOTE_RE = re.compile(r'^NOTE: This tool reports current measured bandwidth')
_SMALL_BUFFER_RE = re.compile(r'^NOTE: You have chosen a buffer size')
_HELP_RE = re.compile(r'^nvbandwidth CLI:\s*$')
_LIST_RE = re.compile(r'^Index, Name:\s*$')
_UNIT_RE = re.compile(r'\(([^()]*)\)\s*$')
_NUMBER_RE = re.compile(r'^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:nan|inf)$', re.IGNORECASE)
_INDEX_RE = re.compile(r'^\s*[-+]?\d+')
# the header lines of the text report: (line, result key, conversion)
_HEADER = ((_VERSION_RE, 'version', str), (_GIT_RE, 'git_version', str), (_CUDA_RE, 'cuda_version', int),
           (_DRIVER_RE, 'driver_version', str))


def _number(token, where):
    """A matrix cell or sum: a float, None for ``N/A``; ValueError naming ``where`` otherwise."""
    if token == 'N/A':
        return None
    if not _NUMBER_RE.match(token):
        raise ValueError('%s: %r is not a number or N/A' % (where, token))
    return float(token)


def _unit(title):
    match = _UNIT_RE.search(title or '')
    return match.group(1) if match else None


def _new_case(status='passed', error=''):
    return {'status': status, 'unit': None, 'title': '', 'rows': [], 'columns': [], 'matrix': [], 'sum': None,
            'error': error, 'matrices': []}


def _add_matrix(case, block):
    case['matrices'].append(block)
    for key in ('title', 'unit', 'rows', 'columns', 'matrix', 'sum'):
        case[key] = block[key]


def _result():
    return {'version': None, 'git_version': None, 'cuda_version': None, 'driver_version': None, 'host': None,
            'warnings': [], 'devices': [], 'testcases': {}, 'error': ''}


def _resolve(ident):
    """The testcase nvbandwidth's findTestcase() picks for a ``-t`` value (an index as strtol reads it, or a name); None if none."""
    ident = str(ident)
    match = _INDEX_RE.match(ident)
    if ident == '' or (match and match.end() == len(ident)):
        index = int(ident) if ident else 0
        return TESTCASES[index] if 0 <= index < len(TESTCASES) else None
    return ident if ident in TESTCASES else None


# ---------------------------------------------------------------- the text report

def _read_matrix(lines, start, title):
    """The matrix block whose title is ``lines[start]``: (block, index after it), or None if no matrix follows."""
    if start + 1 >= len(lines):
        return None
    columns = lines[start + 1].split()
    if not columns or not all(re.match(r'^\d+$', c) for c in columns):
        return None
    rows, matrix, index = [], [], start + 2
    while index < len(lines) and lines[index].strip() and not _SAMPLE_RE.match(lines[index]):
        tokens = lines[index].split()
        if len(tokens) != len(columns) + 1:
            raise ValueError('matrix %r, line %r: %d values for %d columns' % (title, lines[index].strip(), len(tokens) - 1, len(columns)))
        rows.append(tokens[0])
        matrix.append([_number(token, 'matrix %r row %s' % (title, tokens[0])) for token in tokens[1:]])
        index += 1
    if not rows:
        raise ValueError('matrix %r has a column header and no rows' % title)
    block = {'key': None, 'title': title, 'unit': _unit(title), 'rows': rows, 'columns': columns, 'matrix': matrix, 'sum': None}
    while index < len(lines) and (not lines[index].strip() or _SAMPLE_RE.match(lines[index])):
        index += 1
    if index < len(lines):
        match = _SUM_RE.match(lines[index]) or _PERF_RE.match(lines[index])
        if match:
            block['key'] = match.group(1)
            block['sum'] = _number(match.group(2), 'SUM %s' % match.group(1))
            index += 1
    return block, index


def _name_waived(events, requested):
    """Names for the unnamed ``Waived:`` events: from the ``-t`` values asked for, else nvbandwidth's testcase order."""
    if requested is not None:
        requested = [str(r) for r in requested]
        if len(requested) == len(events):
            names = []
            for ident, (kind, name, dummy) in zip(requested, events):
                wanted = _resolve(ident) if kind != 'not_found' else ident
                if name is not None and name != wanted:
                    break
                names.append(wanted)
            else:
                return names
    names = [name for dummy, name, dummy2 in events]
    anchors = [(-1, -1)] + [(i, TESTCASES.index(name)) for i, (dummy, name, dummy2) in enumerate(events)
                            if name in TESTCASES] + [(len(events), len(TESTCASES))]
    for (left, left_pos), (right, right_pos) in zip(anchors, anchors[1:]):
        gap = list(range(left + 1, right))
        if gap and right_pos - left_pos - 1 == len(gap) and all(events[i][0] == 'waived' and events[i][1] is None for i in gap):
            for offset, i in enumerate(gap):
                names[i] = TESTCASES[left_pos + 1 + offset]
    return names


def _case_event(stripped, events, current):
    """Read a testcase line of the text output into events; (whether it was one, the case now being read)."""
    match = _RUNNING_RE.match(stripped)
    if match:
        current = _new_case(status='running')
        events.append(('running', match.group(1), current))
        return True, current
    match = _WAIVING_RE.match(stripped)
    if match:
        events.append(('waived', match.group(1), _new_case('waived')))
        current = None
        return True, current
    if _WAIVED_RE.match(stripped):
        events.append(('waived', None, _new_case('waived')))
        current = None
        return True, current
    match = _NOT_FOUND_RE.match(stripped) or _OUT_OF_BOUND_RE.match(stripped)
    if match:
        events.append(('not_found', match.group(1), _new_case('error', stripped[len('ERROR: '):])))
        current = None
        return True, current
    match = _TEST_ERROR_RE.match(stripped)
    if match and current is not None:
        current['status'], current['error'] = 'error', match.group(1)
        return True, current
    return False, current


def _text_error(recognised, fatal, kind_of_output, unfinished):
    """The error of a text output: its fatal lines, a help or list output, a run cut short; else None.

    ValueError when nothing of the text was recognised as nvbandwidth's.
    """
    if not recognised:
        raise ValueError('neither nvbandwidth text output nor its -j JSON: no "nvbandwidth Version:", "Running <testcase>.", '
                         'matrix or error line found')
    if fatal:
        return '; '.join(fatal)
    if kind_of_output == 'help':
        return "the output is nvbandwidth's help (-h), not a run"
    if kind_of_output == 'list':
        return "the output is nvbandwidth's testcase list (-l), not a run"
    if unfinished:
        return ("the output ends before nvbandwidth's closing NOTE lines: the run did not finish "
                "(its error, if any, went to stderr)")
    return None


def _name_cases(result, events, requested):
    """Put the events' cases into result['testcases'] by name; a case still running did not finish."""
    names = _name_waived(events, requested)
    unnamed = 0
    for (kind, dummy, case), name in zip(events, names):
        if name is None:
            unnamed += 1
            name = 'waived#%d' % unnamed
        if case['status'] == 'running':
            case['status'] = 'error'
            case['error'] = 'did not finish' + (': %s' % result['error'] if result['error'] else '')
        result['testcases'][name] = case


def _parse_text(text, requested):
    result = _result()
    lines = [line.rstrip('\r') for line in text.split('\n')]
    events = []  # (kind, name or None, case dict)
    current = None
    seen_version = finished = early_note = False
    kind_of_output = None
    fatal = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        index += 1
        if not stripped:
            continue
        field = next(((key, convert(m.group(1))) for regex, key, convert in _HEADER for m in [regex.match(stripped)] if m), None)
        if field:
            result[field[0]] = field[1]
            seen_version = seen_version or field[0] == 'version'
            continue
        match = _DEVICE_RE.match(stripped)
        if match:
            result['devices'].append({'index': int(match.group(1)), 'name': match.group(2), 'pci': match.group(3)})
            if index >= 2 and result['host'] is None and not result['devices'][:-1]:
                previous = lines[index - 2].strip()
                if previous and ' ' not in previous and not previous.endswith(':'):
                    result['host'] = previous
            continue
        match = _PROCESS_RE.match(stripped)
        if match:
            result['devices'].append({'index': int(match.group(1)), 'name': match.group(4), 'pci': match.group(5),
                                      'host': match.group(2), 'device': int(match.group(3))})
            continue
        if _FINAL_NOTE_RE.match(stripped):
            finished = True
            continue
        if _EARLY_NOTE_RE.match(stripped):
            early_note = True
            continue
        if _SMALL_BUFFER_RE.match(stripped) or stripped.startswith('Warning: '):
            result['warnings'].append(stripped)
            continue
        if _HELP_RE.match(stripped):
            kind_of_output = kind_of_output or 'help'
            continue
        if _LIST_RE.match(stripped):
            kind_of_output = kind_of_output or 'list'
            continue
        if _INVALID_ARGS_RE.match(stripped):
            argv = lines[index].strip() if index < len(lines) else ''
            fatal.append('ERROR: Invalid Arguments %s' % argv.rstrip(':').rstrip())
            kind_of_output = 'invalid'
            index += 1
            continue
        if any(regex.match(stripped) for regex in _FATAL_RES):
            fatal.append(stripped)
            continue
        handled, current = _case_event(stripped, events, current)
        if handled:
            continue
        if kind_of_output in ('help', 'list', 'invalid'):
            continue
        found = _read_matrix(lines, index - 1, stripped)
        if found:
            block, index = found
            if current is None:
                # a paste that starts at a matrix: the SUM line names the testcase
                current = _new_case(status='running')
                events.append(('running', block['key'] or 'unnamed#%d' % (len(events) + 1), current))
            _add_matrix(current, block)
            if current['status'] == 'running':
                current['status'] = 'passed'
            continue
        # anything else (the host name line, interleaved messages) is not nvbandwidth's data
    recognised = seen_version or events or result['devices'] or fatal or kind_of_output
    unfinished = seen_version and not finished and not early_note
    result['error'] = _text_error(recognised, fatal, kind_of_output, unfinished) or result['error']
    _name_cases(result, events, requested)
    return result


# ---------------------------------------------------------------- the -j JSON report

_JSON_STATUS = {'Passed': 'passed', 'Waived': 'waived', 'ERROR': 'error', 'Error': 'error', 'Not Found': 'error', 'Running': 'error'}


def _json_matrix(name, rows):
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ValueError('testcase %r: bandwidth_matrix is not a list of rows' % name)
    matrix = []
    for number, row in enumerate(rows):
        cells = []
        for cell in row:
            if isinstance(cell, (int, float)) and not isinstance(cell, bool):
                cells.append(float(cell))
            elif isinstance(cell, str):
                cells.append(_number(cell.strip(), 'testcase %r bandwidth_matrix row %d' % (name, number)))
            else:
                raise ValueError('testcase %r bandwidth_matrix row %d: %r is not a number or "N/A"' % (name, number, cell))
        matrix.append(cells)
    return matrix


def _parse_json(data):
    if not isinstance(data, dict) or not isinstance(data.get('nvbandwidth'), dict):
        raise ValueError('JSON without the "nvbandwidth" object of nvbandwidth -j')
    root = data['nvbandwidth']
    result = _result()
    result['version'] = root.get('version')
    result['git_version'] = root.get('git_version')
    cuda = root.get('CUDA Runtime Version')
    result['cuda_version'] = cuda if isinstance(cuda, int) and not isinstance(cuda, bool) else None
    result['driver_version'] = root.get('Driver Version')
    if root.get('warning'):
        result['warnings'].append(str(root['warning']))
    devices = root.get('GPU Device list') or []
    if not isinstance(devices, list):
        raise ValueError('"GPU Device list" is %r, expected a list' % (devices,))
    for entry in devices:
        match = _JSON_DEVICE_RE.match(str(entry))
        if not match:
            raise ValueError('"GPU Device list" entry %r is not "<index>: <name> (<pci>): (<host>)"' % (entry,))
        result['devices'].append({'index': int(match.group(1)), 'name': match.group(2), 'pci': match.group(3)})
        if match.group(4) and result['host'] is None:
            result['host'] = match.group(4)
    result['error'] = str(root.get('error') or '').strip()
    testcases = root.get('testcases') or []
    if not isinstance(testcases, list):
        raise ValueError('"testcases" is %r, expected a list' % (testcases,))
    for entry in testcases:
        if not isinstance(entry, dict) or not isinstance(entry.get('name'), str):
            raise ValueError('testcase entry %r has no name' % (entry,))
        name, status = entry['name'], entry.get('status')
        if status not in _JSON_STATUS:
            raise ValueError('testcase %r: status %r is not one of %s' % (name, status, ', '.join(sorted(_JSON_STATUS))))
        case = _new_case(_JSON_STATUS[status], str(entry.get('error') or ''))
        if status == 'Running':
            case['error'] = 'did not finish' + (': %s' % result['error'] if result['error'] else '')
        elif status in ('ERROR', 'Error', 'Not Found') and not case['error']:
            case['error'] = status if name in TESTCASES else 'Testcase %s not found!' % name
        if 'bandwidth_matrix' in entry:
            matrix = _json_matrix(name, entry['bandwidth_matrix'])
            title = str(entry.get('bandwidth_description') or '')
            width = max([len(row) for row in matrix] or [0])
            # a bidirectional testcase appends its three matrices' rows to the one list (json_output.cpp)
            count = len(matrix) // width if width and len(matrix) > width and len(matrix) % width == 0 else 1
            size = len(matrix) // count if count else 0
            for part in range(count):
                rows = matrix[part * size:(part + 1) * size]
                block = {'key': name if part == count - 1 else '%s#%d' % (name, part + 1), 'title': title if part == count - 1 else '',
                         'unit': _unit(title), 'rows': [str(i) for i in range(len(rows))],
                         'columns': [str(i) for i in range(width)], 'matrix': rows, 'sum': None}
                _add_matrix(case, block)
            total = entry.get('sum')
            if total is not None:
                if isinstance(total, bool) or not isinstance(total, (int, float)):
                    raise ValueError('testcase %r: sum %r is not a number' % (name, total))
                case['sum'] = case['matrices'][-1]['sum'] = float(total)
        result['testcases'][name] = case
    return result


# ---------------------------------------------------------------- public

def parse(text, requested=None):
    """nvbandwidth's stdout, text or ``-j`` JSON, as a dictionary (see the module docstring).

    ``requested``: the ``-t`` values of the run in order, to name the text form's unnamed ``Waived:``
    lines; ValueError when ``text`` is neither form or a value in it is malformed.
    """
    if not isinstance(text, str):
        raise ValueError('nvbandwidth output must be text, not %s' % type(text).__name__)
    start = text.lstrip()
    if start.startswith('{'):
        try:
            data, dummy = json.JSONDecoder().raw_decode(start)
        except ValueError as exc:
            raise ValueError('nvbandwidth -j output is not valid JSON: %s' % exc)
        return _parse_json(data)
    return _parse_text(text, requested)


def _gpu(label, what):
    try:
        return int(label)
    except (TypeError, ValueError):
        raise ValueError('%s label %r is not a GPU index' % (what, label))


def per_gpu(testcase):
    """``{gpu index: value}`` of a single-row testcase (its columns are the GPUs); None where nvbandwidth printed N/A."""
    if not isinstance(testcase, dict) or 'matrix' not in testcase:
        raise ValueError('per_gpu() takes one testcase of parse()["testcases"], not %r' % (testcase,))
    if len(testcase['matrix']) != 1:
        raise ValueError('per_gpu(): the testcase has %d rows, expected the single row of a host<->device testcase'
                         % len(testcase['matrix']))
    return dict((_gpu(label, 'column'), value) for label, value in zip(testcase['columns'], testcase['matrix'][0]))


def pairs(testcase):
    """``{(row gpu, column gpu): value}`` of a device<->device testcase's matrix, N/A cells (a GPU and itself) left out."""
    if not isinstance(testcase, dict) or 'matrix' not in testcase:
        raise ValueError('pairs() takes one testcase of parse()["testcases"], not %r' % (testcase,))
    if len(testcase['matrix']) < 2 and len(testcase['columns']) > 1:
        raise ValueError('pairs(): the testcase has a single row, use per_gpu() for a host<->device testcase')
    out = {}
    for label, row in zip(testcase['rows'], testcase['matrix']):
        src = _gpu(label, 'row')
        for column, value in zip(testcase['columns'], row):
            if value is not None:
                out[(src, _gpu(column, 'column'))] = value
    return out
