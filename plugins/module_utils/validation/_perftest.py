# -*- coding: utf-8 -*-
# Copyright: (c) 2025, gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the output of perftest's bandwidth tests (``ib_write_bw``; pure logic, standard library only).

Formats understood (see ``tests/unit/fixtures/deep/perftest/README.md`` for the samples):

* the text report of perftest 4.x to 24.x and later, on the server or the client, stdout and
  stderr together or apart: ctx_print_test_info()'s header (the test's title, ``Device``,
  ``Mtu``, ``Link type``), the result table ``#bytes #iterations BW peak[..] BW average[..]
  MsgRate[Mpps]`` in ``Gb/sec`` (``--report_gbits``), ``MB/sec`` (perftest 4.x/5.x) or
  ``MiB/sec`` (perftest 23.x and later), the rows of REPORT_FMT and of REPORT_FMT_EXT (six
  decimals, below 0.1 Gb/s), the optional ``#sl``, ``BW min[..]`` and ``CPU_Util[%]``
  columns; the lines perftest prints when it fails (an unknown device, a port that is not
  active, no server to connect to, a completion error, a peer that went away, a refused
  argument, a failed ``-w`` limit);
* the ``--out_json`` report (``perftest_out.json``), which does not say its units: the caller
  passes them (``units='Gb/sec'`` for a run with ``--report_gbits``).

``parse_bw(text)`` returns::

    {'test': 'RDMA_Write BW Test', 'device': 'mlx5_1', 'port': None, 'link': 'IB', 'mtu': 4096,
     'units': 'Gb/sec', 'rows': [{'bytes': 65536, 'iterations': 5000, 'bw_peak': 388.2,
     'bw_avg': 385.4, 'msg_rate': 0.735}], 'bw_avg_gbps': 385.4, 'error': '', 'warnings': []}

``units`` is what the table's header says (``Gb/sec``, ``MB/sec`` or ``MiB/sec``); perftest's
MB is 2^20 bytes whichever it prints (format_factor 0x100000 in print_report_bw(); Gb is
10^9 bits, 125000000 bytes), so ``bw_avg_gbps`` is the last row's average in Gb/s:
``MB/sec x 2^20 x 8 / 10^9``.  perftest does not print the IB port it used: ``port`` is the one
a "Port number N state is Down" error names, else None.  ``error`` holds the lines of
perftest's error messages (a run that failed after the table keeps its rows); a row gains
``bw_min``, ``sl`` or ``cpu_util`` where its table has that column.  Text that is neither a
perftest result nor one of its errors raises ValueError naming what is wrong (as does a row
that does not fit its header, or a table without a row and without an error).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

MIB = 1024 * 1024
GB_BYTES = 125000000.0

_UNITS = r'(Gb|MB|MiB)/sec'
_HEADER = re.compile(r'^\s*#bytes\s+(?:#sl\s+)?#iterations\s+BW peak\[' + _UNITS + r'\]\s+BW average\[')
_COLUMN = re.compile(r'#bytes|#sl|#iterations|BW peak\[[^\]]*\]|BW average\[[^\]]*\]|MsgRate(?: Port\d)?\[Mpps\]'
                     r'|BW min\[[^\]]*\]|BW Port\d\[[^\]]*\]|CPU_Util\[%\]')
_KEYS = {'#bytes': 'bytes', '#sl': 'sl', '#iterations': 'iterations', 'BW peak': 'bw_peak', 'BW average': 'bw_avg',
         'MsgRate[Mpps]': 'msg_rate', 'BW min': 'bw_min', 'CPU_Util[%]': 'cpu_util'}
_TITLE = re.compile(r'^\s+((?:Send|RDMA_Write|RDMA_Write_imm|RDMA_Read|Atomic)\b.*\bTest)\s*$')
_DEVICE = re.compile(r'\bDevice\s+:\s*(\S+)')
_LINK = re.compile(r'^\s*Link type\s*:\s*(\S+)')
_MTU = re.compile(r'^\s*Mtu\s*:\s*(\d+)\s*\[B\]')
_PORT_STATE = re.compile(r'Port number (\d+) state is')
_NUMBER = re.compile(r'^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$')

# perftest's failure messages (perftest_resources.c, perftest_communication.c, perftest_parameters.c,
# write_bw.c; cuda_memory.c for GPUDirect) and glibc getopt's, matched on a stripped line
_ERRORS = tuple(re.compile(pattern) for pattern in (
    r'^IB device \S+ not found$',
    r'^Did not detect devices$',
    r'^If device exists, check if driver is up$',
    r'^No IB devices found$',
    r'^Unable to find the Infiniband/RoCE device$',
    r'^Port number \d+ state is .*$',
    r'^Unable to query port \d+ attributes$',
    r"^Couldn't set the link layer$",
    r"^Couldn't get context for the device$",
    r'^Link layer on port \d+ is Unknown$',
    r"^Couldn't connect to \S+:\d+$",
    r"^Couldn't listen to port \d+$",
    r'^Unable to open file descriptor for socket connection.*$',
    r'^Unable to init the socket connection$',
    r'^Problem in resolving basic address and port$',
    r'^.+ for ai_family: \S+ service: .* port: \d+$',
    r'^Completion with error at (?:client|server)$',
    r'^Failed status \d+: wr_id \d+ syndrom 0x[0-9a-fA-F]+$',
    r'^[sr]cnt=\d+(?:, ccnt=\d+)?$',
    r'^Failed to complete run_iter_bw\w* function successfully$',
    r"^ethernet_read_keys: Couldn't read remote address$",
    r"^ethernet_read_data: Couldn't read reports$",
    r'^Unable to (?:read|write) (?:to|from) socket/rdma_cm$',
    r'^Failed to exchange data between server and clients$',
    r'^Failed to close connection between server and client$',
    r"^Couldn't create IB resources$",
    r'^Failed to init memory$',
    r'^Failed to create MR$',
    r"^Couldn't allocate MR(?: with error=\d+)?$",
    r"^Couldn't init GPU context: \d+$",
    r'^No such device ID \(\d+\) exists in system$',
    r'^There are no available device\(s\) that support CUDA$',
    r'^cuInit\(0\) returned \d+$',
    r'^cuCtxCreate\(\) error=\d+$',
    r'^DMA-BUF is not supported on this GPU$',
    r'^Unsupported memory type$',
    r'^Parser function exited with Error$',
    r'^Invalid Command or flag\.$',
    r'^Please check command line and run again\.$',
    r'^Invalid Command line\..*$',
    r'^Duplicated argument: .*$',
    r'^.+ argument .* should be \S+$',
    r'^.+ should be between -?\d+ and \d+$',
    r'^.+ must be (?:positive|non-negative.*)$',
    r"^IB Port can't be less than \d+$",
    r'^Invalid (?:Connection type|rate limit units|rate limit type flag|verbosity level output flag)\..*$',
    r'^UD connection only possible in SEND verb$',
    r'^Events feature not available on WRITE verb$',
    r'^Using SRQ only avavilible in SEND tests\.$',
    r'^TOS only valid for rdma_cm based QP and RawEth QP$',
    r'^Hop limit only valid for RawEth QP$',
    r'^please check that DURATION > 2\*MARGIN$',
    r'^Raw Etherent test can only run on Ethernet link! exiting \.\.\.$',
    r'^Current implementation is not compatible with versions older than .*$',
    r'^Error: BW result is below bw limit$',
    r'^Error: Msg rate\s+is below msg_rate limit$',
    r'^\S+: (?:unrecognized option|invalid option|option requires an argument) .*$',
    r"^\S+: option '.*' (?:requires an argument|is ambiguous.*|doesn't allow an argument)$",
))


def _float(token, line):
    if not _NUMBER.match(token):
        raise ValueError('perftest result row has %r where a number belongs: %r' % (token, line.strip()))
    return float(token)


def _columns(line):
    """The column keys of a result header (``bw_peak``, ...) and its units."""
    units = _HEADER.match(line).group(1) + '/sec'
    keys = []
    for name in _COLUMN.findall(line):
        base = name.split('[')[0] if name.startswith('BW') and 'Port' not in name else name
        keys.append(_KEYS.get(base, name))
    if 'bw_avg' not in keys or 'msg_rate' not in keys:
        raise ValueError('perftest result header without BW average or MsgRate: %r' % line.strip())
    return keys, units


def _row(line, keys):
    fields = line.split()
    if len(fields) != len(keys):
        raise ValueError('perftest result row has %d fields, its header %d: %r' % (len(fields), len(keys), line.strip()))
    row = {}
    for key, token in zip(keys, fields):
        if key in ('bytes', 'iterations', 'sl'):
            if not token.isdigit():
                raise ValueError('perftest result row has %r where a whole number belongs: %r' % (token, line.strip()))
            row[key] = int(token)
        else:
            row[key] = _float(token, line)
    return row


def to_gbps(value, units):
    """A perftest bandwidth in Gb/s (10^9 bits): MB/sec and MiB/sec are 2^20 bytes per second."""
    if value is None:
        return None
    if units == 'Gb/sec':
        return round(value, 6)
    if units in ('MB/sec', 'MiB/sec'):
        return round(value * MIB / GB_BYTES, 6)
    raise ValueError('unknown perftest bandwidth unit %r (Gb/sec, MB/sec or MiB/sec)' % (units,))


def _result(units=None):
    return {'test': None, 'device': None, 'port': None, 'link': None, 'mtu': None, 'units': units, 'rows': [],
            'bw_avg_gbps': None, 'error': '', 'warnings': []}


def parse_bw(text, units=None):
    """The result of one perftest bandwidth run (its text report, or its ``--out_json`` file with ``units``)."""
    if not isinstance(text, str):
        raise ValueError('perftest output must be text, not %s' % type(text).__name__)
    if text.lstrip().startswith('{'):
        return parse_json(text, units)
    result = _result()
    errors, table, keys, bare, later_table = [], None, None, [], False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if _HEADER.match(line):
            # --report-both prints the run's table, then its local and remote halves: the first one is the run's
            later_table = table is not None
            if not later_table:
                keys, result['units'] = _columns(line)
                table = []
            continue
        if table is not None and stripped[0].isdigit():
            if not later_table:
                table.append(_row(line, keys))
            continue
        if any(pattern.match(stripped) for pattern in _ERRORS):
            errors.append(stripped)
        elif 'WARNING' in stripped or stripped.startswith('Warning:'):
            result['warnings'].append(stripped)
        elif _NUMBER.match(stripped):
            bare.append(stripped)
        else:
            _header_line(line, result)
    result['error'] = '\n'.join(errors)
    match = _PORT_STATE.search(text)
    result['port'] = int(match.group(1)) if match else None
    if table is None:
        if errors:
            return result
        if bare:
            raise ValueError('perftest output is a bare number (%s, --output=bandwidth or message_rate): '
                             'it carries no units and no message size' % bare[-1])
        raise ValueError("not a perftest result: no '#bytes #iterations BW peak[..] BW average[..] MsgRate[Mpps]' "
                         'table and no perftest error message')
    if not table and not errors:
        raise ValueError('perftest result table without a result row and without an error message')
    result['rows'] = table
    result['bw_avg_gbps'] = to_gbps(table[-1]['bw_avg'], result['units']) if table else None
    return result


def _header_line(line, result):
    """Take the test's title, device, link type and MTU from ctx_print_test_info()'s lines."""
    for key, pattern in (('device', _DEVICE), ('link', _LINK)):
        match = pattern.search(line)
        if match and result[key] is None:
            result[key] = match.group(1)
    match = _MTU.match(line)
    if match and result['mtu'] is None:
        result['mtu'] = int(match.group(1))
    match = _TITLE.match(line)
    if match and result['test'] is None:
        result['test'] = re.sub(r'\s+', ' ', match.group(1))


def parse_json(text, units):
    """perftest's ``--out_json`` report; ``units`` is 'Gb/sec' for a run with --report_gbits, else 'MiB/sec'."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError('perftest JSON report is not valid JSON (%s)' % exc)
    if not isinstance(data, dict) or not isinstance(data.get('test_info'), dict) or not isinstance(data.get('results'), dict):
        raise ValueError("perftest JSON report needs the objects 'test_info' and 'results'")
    if units is None:
        raise ValueError("perftest's JSON report does not say its units: pass units='Gb/sec' (--report_gbits) or 'MiB/sec'")
    to_gbps(0.0, units)
    info, results = data['test_info'], data['results']
    result = _result(units)
    test = str(info.get('test', ''))
    for word, spaced in (('_Bidirectional', ' Bidirectional'), ('_Post_List', ' Post List'), ('_BW', ' BW'),
                         ('_Latency', ' Latency'), ('_Test', ' Test')):
        test = test.replace(word, spaced)
    result['test'] = test or None
    result['device'] = info.get('Device')
    result['link'] = info.get('Link_type')
    result['mtu'] = info.get('Mtu') if isinstance(info.get('Mtu'), int) else None
    row = {}
    for key, name, kind in (('bytes', 'MsgSize', int), ('iterations', 'n_iterations', int), ('bw_peak', 'BW_peak', float),
                            ('bw_avg', 'BW_average', float), ('msg_rate', 'MsgRate', float), ('bw_min', 'BW_min', float),
                            ('cpu_util', 'CPU_util', float)):
        value = results.get(name)
        if value is None:
            if key in ('bw_min', 'cpu_util'):
                continue
            raise ValueError("perftest JSON report's results lack %r" % name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
            raise ValueError("perftest JSON report's %r is not a number: %r" % (name, value))
        row[key] = kind(value)
    result['rows'] = [row]
    result['bw_avg_gbps'] = to_gbps(row['bw_avg'], units)
    return result
