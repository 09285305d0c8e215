# -*- coding: utf-8 -*-
# Copyright: (c) 2025, gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse and gate the output of nccl-tests ``all_reduce_perf`` (pure logic, standard library only).

Formats understood (see ``tests/unit/fixtures/nccl/README.md`` for the recorded samples):

* the text report of nccl-tests v2.13 to v2.19 and later: the older layout with no
  ``# nccl-tests version`` line, a ``[0x18]`` bus id and a 5-wide ``#wrong`` column, and the
  newer one with ``# nccl-tests version ...``, ``# Collective test starting: ...``, ``unalign:``,
  a ``[0000:18:00]`` bus id and a 6-wide ``#wrong`` column; optional ``cputime`` (``-C``),
  per-iteration columns (``-I 1``) and a trailing timestamp (``-S 1``); ``#wrong`` reading
  ``N/A`` with ``-c 0``; lines prefixed by ``srun --label`` or ``mpirun --tag-output``;
  ``NCCL_DEBUG=INFO`` lines interleaved anywhere, even inside a data row;
* the text report of nccl-tests 2.0 to 2.10, whose ``error`` column is the largest absolute
  difference to the expected values (a float such as ``4e-01``), not a count; it is kept as
  ``error`` and gated against the tool's own tolerance (``ERROR_TOLERANCE``);
* pastes: the head cut off (the paste starts inside the results table or at a data row; the
  standard column layout is assumed and the result is marked truncated), the column header or
  the last row cut off at the end, and ``#`` lines whose ``#`` a Markdown renderer ate;
* the ``-J FILE`` JSON report (``JSON_FILE_VERSION`` 2 of nccl-tests' ``src/util.cu``).

``parse_all_reduce(text)`` and ``parse_json(text)`` return the same dictionary shape;
``evaluate(result, expect)`` turns it into pass/fail/skip checks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _busbw

GIB = 1024 ** 3
MIB = 1024 ** 2

# The busbw gate curves (per platform and topology, each with its source) and their size rule live in the catalogue
# (catalogue/_busbw.py); this file applies them (``_resolve_gate``).
SIZE_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}


TRANSPORT_ORDER = ("NVLS", "P2P", "SHM", "CollNet", "NET/IB", "NET/Socket")
CHECKS = ("complete", "single_run", "test_errors", "wrong", "out_of_bounds", "busbw", "transport")
EXPECT_KEYS = ("topology", "min_busbw_gbps", "thresholds", "nics", "large_size_bytes", "top_rows", "expect_transport", "gate_curves", "nodes",
               "notes", "platform", "gpus", "algorithm")
EXPECT_TRANSPORTS = ("ib",)
# -J FILE: the JSON report. Read in the sources: nccl-tests 2.18.3 writes it (util.cu JSON_FILE_VERSION 1) and 2.19.6
# (JSON_FILE_VERSION 3: per_iter_timing, per_iter_skip, <place>_per_iter with -I 1); earlier versions were not read,
# so the validation asks for JSON from 2.18.3 on and reads the text report before.
JSON_MIN_VERSION = (2, 18, 3)
JSON_FILE_VERSIONS = {(2, 18): 1, (2, 19): 3}
JSON_PER_ITER = (("min_us", "i_min"), ("max_us", "i_max"), ("p99_us", "i_p99"), ("cv_pct", "i_cv%"))

_LABEL_RE = re.compile(r"^(?:\s*\d+: ?|\[\d+,\d+\]<std(?:out|err)>: ?)")
_DEBUG_RE = re.compile(r"(?:[A-Za-z][\w.-]*:\d+:\d+ \[\d+\] )?NCCL (?:INFO|WARN|TRACE|ABORT)\b")
_DEBUG_LEVEL_RE = re.compile(r"NCCL (INFO|WARN|TRACE|ABORT) ?(.*)$")
_VIA_RE = re.compile(r"\bvia (.+?)\s*$")
_NETWORK_RE = re.compile(r"\bUsing network (.+?)\s*$")
_NCCL_VERSION_RE = re.compile(r"\bNCCL version (\S+)")
_TESTS_VERSION_RE = re.compile(r"^#\s*nccl-tests version (\S+)(?: \(([^)]*)\))?(?: nccl-headers=(\d+))?(?: nccl-library=(\d+))?")
_STARTING_RE = re.compile(r"^#\s*Collective test starting: (\S+)")
_CONCLUDED_RE = re.compile(r"^#\s*Collective test concluded: (\S+)")
_PARAMS_RE = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)\s+step:\s*(\d+)\((factor|bytes)\)(.*)$")
_PARAM_KV_RE = re.compile(r"([A-Za-z][A-Za-z_ ]*?)\s*:\s*(-?\d+)")
_RANK_RE = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$")
_REDUCED_RE = re.compile(r"^#\s*Reducing maxBytes to (\d+) due to memory limitation")
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_JSON_PATH_RE = re.compile(r"^#\s*Writing JSON output to (.+?)\s*$")
_HASH_ERROR_RE = re.compile(r"^#\s*error: (.+?)\s*$")
_TEST_FAILURE_RE = re.compile(r"\bTest (?:CUDA |NCCL )?failure\b|\bTest timeout\b")
_INT_RE = re.compile(r"^\d+$")
_NUMBER_RE = re.compile(r"^(?:-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|N/A|-?nan|-?inf)$")
_WORD_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_SIZE_RE = re.compile(r"^(\d+)([KMGT]?)$")
# ``#`` lines as pasted into Markdown outside a code block lose their ``#``: recognise them by their start.
_HASHLESS_RE = re.compile(r"^(?:nThread\s+\d|Using devices\b|Rank\s+\d+\s|Out of bounds values\s*:|Avg bus bandwidth\s*:|"
                          r"size\s+count\s|\(B\)\s|out-of-place\s|nccl-tests version\s|Collective test (?:starting|concluded):)")

# nccl-tests 2.0 to 2.10 print, instead of a ``#wrong`` count, the largest absolute difference between the result and
# the expected values ("%5.0le", e.g. ``4e-01``), and count a result as an error when
#     maxDelta > DeltaMaxValue(type) * (nranks - 1)
# with DeltaMaxValue 1e-2 for half and bfloat16, 1e-5 for float, 1e-12 for double and 1e-200 (any difference) for the
# integer types (NVIDIA/nccl-tests src/common.cu, ``DeltaMaxValue`` and ``CheckData``, 2019-2021 versions, read through
# the project's code search). The ``error`` gate applies the same bound.
ERROR_TOLERANCE = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}
ERROR_TOLERANCE_OTHER = 1e-200
# The column layout nccl-tests prints when a paste lacks its header: keys, then time/algbw/busbw/<check> twice.
STANDARD_KEYS = ("size", "count", "type", "redop", "root")


class NcclParseError(ValueError):
    """Raised when a text is not nccl-tests output; the message names the line and its content."""


def _clip(text, limit=160):
    text = text.strip()
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _empty_result(fmt):
    return {
        "format": fmt,
        "version": None,
        "version_commit": None,
        "nccl_headers": None,
        "nccl_library": None,
        "nccl_version": None,
        "collective": None,
        "concluded": False,
        "runs": 0,
        "params": {},
        "flags": [],
        "ranks": [],
        "hosts": [],
        "columns": None,
        "rows": [],
        "avg_busbw": None,
        "avg_busbw_status": None,
        "out_of_bounds": None,
        "warnings": [],
        "errors": [],
        "nccl_warnings": [],
        "transports": [],
        "networks": [],
        "json_path": None,
        "truncated": False,
        "truncated_reason": None,
        "columns_inferred": False,
    }


def _normalise_transport(via):
    """Map the text after ``via`` in an NCCL ``Channel`` line to a transport name."""
    if via.startswith("NET/"):
        parts = via.split("/")
        return "NET/" + parts[1] if len(parts) > 1 and parts[1] else "NET"
    for prefix, name in (("P2P", "P2P"), ("SHM", "SHM"), ("direct shared memory", "SHM"), ("NVLS", "NVLS"), ("CollNet", "CollNet")):
        if via.startswith(prefix):
            return name
    return via.split("/")[0].split()[0] if via.split() else None


def _sorted_transports(names):
    def key(name):
        return (TRANSPORT_ORDER.index(name), name) if name in TRANSPORT_ORDER else (len(TRANSPORT_ORDER), name)
    return sorted(set(names), key=key)


def _parse_column_header(tokens, lineno, line):
    """Return the table layout from the tokens of the ``# size count type ...`` line."""
    time_names = ("time", "cputime")
    starts = [i for i, tok in enumerate(tokens) if tok in time_names]
    if len(starts) != 2:
        raise NcclParseError(
            "line %d: column header has %d time columns, expected 2 (out-of-place and in-place): %r" % (lineno, len(starts), _clip(line)))
    if starts[0] == 0:
        raise NcclParseError("line %d: column header has no key columns (size count ...) before its first time column: %r" % (lineno, _clip(line)))
    keys = tokens[:starts[0]]
    first = tokens[starts[0]:starts[1]]
    second = tokens[starts[1]:]
    timestamp = False
    if second and second[-1] == "timestamp":
        timestamp = True
        second = second[:-1]
    names = {"#wrong": "wrong", "cputime": "time"}
    first = [names.get(tok, tok) for tok in first]
    second = [names.get(tok, tok) for tok in second]
    for group in (first, second):
        if group[:3] != ["time", "algbw", "busbw"]:
            raise NcclParseError("line %d: column header group %s lacks time/algbw/busbw: %r" % (lineno, " ".join(group), _clip(line)))
    return {
        "keys": keys,
        "out_of_place": first,
        "in_place": second,
        "time_label": tokens[starts[0]],
        "per_iteration": "i_min" in first,
        "timestamp": timestamp,
        "fields": len(keys) + len(first) + len(second) + (2 if timestamp else 0),
    }


def _inferred_columns(tokens):
    """The standard layout of a data row seen before any column header, or None when ``tokens`` is not one.

    nccl-tests 2.11 and later: ``size count type redop root`` then ``time algbw busbw #wrong`` twice (13 fields);
    2.0 to 2.10: the same with ``error`` (``0e+00``), older ones without ``root`` (12) or ``redop`` (11).
    """
    if len(tokens) not in (11, 12, 13) or not _INT_RE.match(tokens[0]) or not _INT_RE.match(tokens[1]):
        return None
    size, count = int(tokens[0]), int(tokens[1])
    if size < count or (count and size % count):
        # The size in bytes is a whole multiple of the count of elements (word size, times the ranks for gathers):
        # anything else is a row cut inside its size, e.g. ``34217728 33554432 float ...`` from ``134217728 33554432``.
        return None
    nkeys = len(tokens) - 8
    keys = list(STANDARD_KEYS[:nkeys])
    if not all(_WORD_RE.match(tok) for tok in tokens[2:min(nkeys, 4)]):
        return None
    if nkeys == 5 and not re.match(r"^-?\d+$", tokens[4]):
        return None
    values = tokens[nkeys:]
    if not all(_NUMBER_RE.match(tok) for tok in values):
        return None
    checks = (values[3], values[7])
    name = "error" if any(("e" in tok or "." in tok) for tok in checks if tok != "N/A") else "wrong"
    group = ["time", "algbw", "busbw", name]
    return {"keys": keys, "out_of_place": list(group), "in_place": list(group), "time_label": "time", "per_iteration": False,
            "timestamp": False, "fields": len(tokens), "inferred": True}


def _to_float(token):
    """float(token), or None when it does not convert."""
    try:
        return float(token)
    except (TypeError, ValueError):
        return None


def _number(token):
    if token == "N/A":
        return None
    return float(token)


def _parse_row(tokens, columns):
    """Build one result row from its tokens; raise ValueError when a field does not convert."""
    row = {}
    keys = columns["keys"]
    for name, token in zip(keys, tokens):
        if name in ("size", "count"):
            row[name] = int(token)
        elif name == "root":
            row[name] = int(token)
        else:
            row[name] = token
    if "size" not in row or row["size"] < 0:
        raise ValueError("no size")
    pos = len(keys)
    for place in ("out_of_place", "in_place"):
        group = {}
        for name in columns[place]:
            token = tokens[pos]
            pos += 1
            if name == "wrong":
                group[name] = None if token == "N/A" else int(float(token))
            else:
                value = _number(token)
                if value is None and name in ("time", "algbw", "busbw"):
                    raise ValueError("N/A in %s" % name)
                group[name] = value
        row[place] = group
    if columns["timestamp"]:
        row["timestamp"] = " ".join(tokens[pos:pos + 2])
    return row


def _strip_label(line):
    match = _LABEL_RE.match(line)
    return line[match.end():] if match else line


def _handle_debug(result, fragment):
    """Record what an NCCL debug line says about transports, networks, versions and warnings."""
    level = _DEBUG_LEVEL_RE.search(fragment)
    message = level.group(2) if level else fragment
    via = _VIA_RE.search(message)
    if via and message.lstrip().startswith("Channel"):
        name = _normalise_transport(via.group(1))
        if name:
            result["transports"].append(name)
    network = _NETWORK_RE.search(message)
    if network:
        result["networks"].append(network.group(1))
    version = _NCCL_VERSION_RE.search(message)
    if version and result["nccl_version"] is None:
        result["nccl_version"] = version.group(1)
    if level and level.group(1) in ("WARN", "ABORT") and len(result["nccl_warnings"]) < 20:
        result["nccl_warnings"].append(_clip(message))


def _handle_run_comment(result, line):
    """Handle a ``#`` line of the run's head (version, collective, parameters, ranks). Return True when it was one."""
    match = _TESTS_VERSION_RE.match(line)
    if match:
        result["version"] = match.group(1)
        result["version_commit"] = match.group(2)
        result["nccl_headers"] = int(match.group(3)) if match.group(3) else None
        result["nccl_library"] = int(match.group(4)) if match.group(4) else None
        return True
    match = _STARTING_RE.match(line)
    if match:
        result["collective"] = match.group(1)
        return True
    match = _CONCLUDED_RE.match(line)
    if match:
        result["concluded"] = True
        result["collective"] = result["collective"] or match.group(1)
        return True
    match = _PARAMS_RE.match(line)
    if match:
        result["runs"] += 1
        if result["runs"] == 1:
            params = {
                "nThread": int(match.group(1)),
                "nGpus": int(match.group(2)),
                "minBytes": int(match.group(3)),
                "maxBytes": int(match.group(4)),
                "step": int(match.group(5)),
                "step_kind": match.group(6),
            }
            for key, value in _PARAM_KV_RE.findall(match.group(7)):
                params[key.strip().replace(" ", "_")] = int(value)
            result["params"] = params
        return True
    match = _RANK_RE.match(line)
    if match:
        result["ranks"].append({
            "rank": int(match.group(1)),
            "group": int(match.group(2)) if match.group(2) is not None else None,
            "pid": int(match.group(3)),
            "host": match.group(4),
            "device": int(match.group(5)),
            "bus_id": match.group(6),
            "name": match.group(7),
        })
        if match.group(4) not in result["hosts"]:
            result["hosts"].append(match.group(4))
        return True
    return False


def _handle_comment(result, state, line, lineno):
    """Handle one ``#`` line. Return True when it was recognised."""
    if _handle_run_comment(result, line):
        return True
    match = _REDUCED_RE.match(line)
    if match:
        result["warnings"].append({"kind": "reduced_max_bytes", "max_bytes": int(match.group(1)), "message": line.lstrip("# ").strip()})
        return True
    match = _OOB_RE.match(line)
    if match:
        if result["out_of_bounds"] is None:
            count = int(match.group(1))
            result["out_of_bounds"] = {"count": count, "ok": count == 0}
        return True
    match = _AVG_RE.match(line)
    if match:
        state["footers"] += 1
        if result["avg_busbw"] is None:
            value = _to_float(match.group(1))
            if value is None:
                raise NcclParseError("line %d: average bus bandwidth %r is not a number: %r" % (lineno, match.group(1), _clip(line)))
            result["avg_busbw"] = value
            result["avg_busbw_status"] = match.group(2)
        return True
    match = _JSON_PATH_RE.match(line)
    if match:
        result["json_path"] = match.group(1)
        return True
    match = _HASH_ERROR_RE.match(line)
    if match:
        result["errors"].append(match.group(1))
        return True
    tokens = line.lstrip("#").split()
    if "size" in tokens and "count" in tokens and "busbw" in tokens:
        try:
            columns = _parse_column_header(tokens, lineno, line)
        except NcclParseError as exc:
            # An error unless this is the last line: a header cut at the end of a paste is a truncated output.
            state["header_error"] = (lineno, line, exc)
            return True
        current = result["columns"]
        if current is None or (current.get("inferred") and columns["fields"] == current["fields"]):
            result["columns"] = columns
        elif columns != current:
            raise NcclParseError("line %d: a second column header differs from the first: %r" % (lineno, _clip(line)))
        return True
    if "Per-Iteration Report" in line:
        result["flags"].append("per_iteration")
    elif "Blocking Enabled" in line:
        result["flags"].append("blocking")
    elif "Parallel Init Enabled" in line:
        result["flags"].append("parallel_init")
    return False


def _split_debug(line):
    """Split a line into (content before an NCCL debug message, the debug message or None)."""
    match = _DEBUG_RE.search(line)
    if not match:
        return line, None
    return line[:match.start()], line[match.start():]


def parse_all_reduce(text):
    """Parse the text report of ``all_reduce_perf`` (or any nccl-tests ``*_perf`` binary).

    Returns a dictionary (see ``_empty_result``) with one entry per data row in ``rows``:
    ``{size, count, type, redop, root, out_of_place: {time, algbw, busbw, wrong}, in_place: {...}}``
    where ``wrong`` is ``None`` when the binary printed ``N/A`` (``-c 0``). Output that stops
    early (a killed job, a failing rank) is not an error: ``truncated`` is then True and
    ``truncated_reason`` says where it stopped. Text that is not nccl-tests output raises
    ``NcclParseError`` naming the offending line.
    """
    if not isinstance(text, str):
        raise NcclParseError("nccl-tests output must be text, got %s" % type(text).__name__)
    result = _empty_result("text")
    state = {"footers": 0, "header_error": None, "inferred_at": None}
    pending = None          # (lineno, tokens) of a data row whose first part was cut by a debug line
    partial = None          # (lineno, line) of a data row that does not parse; an error unless it is the last one
    first_content = None
    last_content = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _strip_label(raw.rstrip("\r\n"))
        content, debug = _split_debug(line)
        if debug is not None:
            _handle_debug(result, debug)
        if not content.strip():
            continue
        if state["header_error"] is not None:
            raise state["header_error"][2]
        if first_content is None:
            first_content = (lineno, content)
        last_content = (lineno, content)
        stripped = content.strip()
        if _HASHLESS_RE.match(stripped):
            stripped = "# " + stripped
        if stripped.startswith("#"):
            if _handle_comment(result, state, stripped, lineno) and pending is not None:
                partial, pending = (pending[0], " ".join(pending[1])), None
            continue
        version = _NCCL_VERSION_RE.search(stripped)
        if version and stripped.startswith("NCCL version"):
            result["nccl_version"] = result["nccl_version"] or version.group(1)
            continue
        if _TEST_FAILURE_RE.search(stripped):
            result["errors"].append(_clip(stripped))
            continue
        tokens = stripped.split()
        columns = result["columns"] or {}
        if not columns and pending is None:
            columns = _inferred_columns(tokens) or {}
            if columns:
                result["columns"] = columns
                state["inferred_at"] = (lineno, stripped)
        if not columns or not _INT_RE.match(tokens[0] if pending is None else pending[1][0]):
            continue
        if partial is not None:
            raise NcclParseError("line %d: data row does not match the %d columns of the header (%s): %r" % (
                partial[0], columns["fields"], " ".join(columns["keys"]), _clip(partial[1])))
        row_lineno = lineno
        if pending is not None:
            row_lineno, head = pending
            tokens = head + tokens
            pending = None
        if len(tokens) == len(columns["keys"]) and debug is not None:
            pending = (row_lineno, tokens)
            continue
        if len(tokens) != columns["fields"]:
            partial = (row_lineno, " ".join(tokens))
            continue
        try:
            result["rows"].append(_parse_row(tokens, columns))
        except (ValueError, IndexError):
            partial = (row_lineno, " ".join(tokens))
    _finish_text(result, state, pending, partial, first_content, last_content)
    return result


def _finish_text(result, state, pending, partial, first_content, last_content):
    """The end of parse_all_reduce: NcclParseError for text that is not nccl-tests output; the sorted lists and the truncation."""
    if first_content is None:
        raise NcclParseError("nccl-tests output is empty: no line to parse")
    if result["runs"] == 0 and not result["ranks"] and result["columns"] is None and not state["footers"] and result["out_of_bounds"] is None:
        raise NcclParseError(
            "line %d: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' header found; first line: %r" % (
                first_content[0], _clip(first_content[1])))
    if pending is not None:
        partial = (pending[0], " ".join(pending[1]))
    if state["header_error"] is not None:
        partial = None
    result["transports"] = _sorted_transports(result["transports"])
    result["networks"] = sorted(set(result["networks"]))
    _set_truncation(result, state, partial, first_content, last_content)


def _head_missing(result, state, first_content):
    """Why the head of the output is missing, or None when the ``# nThread`` line is there."""
    if result["runs"]:
        return None
    reason = "the head of the output is missing: there is no '# nThread N nGpus N ...' parameter line, it starts at line %d: %r" % (
        first_content[0], _clip(first_content[1], 80))
    if state["inferred_at"] is not None:
        reason += "; its rows were read with the standard column layout"
    return reason


def _set_truncation(result, state, partial, first_content, last_content):
    reasons = []
    head = _head_missing(result, state, first_content)
    if head is not None:
        reasons.append(head)
    if state["header_error"] is not None:
        lineno, line = state["header_error"][0], state["header_error"][1]
        reasons.append("the column header at line %d is cut: %r" % (lineno, _clip(line)))
    elif partial is not None:
        reasons.append("data row at line %d is incomplete: %r" % (partial[0], _clip(partial[1])))
    elif state["footers"] < max(result["runs"], 1):
        if result["columns"] is None:
            reasons.append("output ends before the results table (last line %d: %r)" % (last_content[0], _clip(last_content[1])))
        elif not result["rows"]:
            reasons.append("output ends after the column header, before any result row")
        else:
            reasons.append("output ends after %d result rows (last size %d B) without the '# Avg bus bandwidth' footer" % (
                len(result["rows"]), result["rows"][-1]["size"]))
    result["columns_inferred"] = state["inferred_at"] is not None
    reason = "; ".join(reasons) or None
    if reason is not None:
        if result["errors"]:
            reason += "; the binary reported: %s" % result["errors"][0]
        result["truncated"] = True
        result["truncated_reason"] = reason


def _json_fail(message):
    raise NcclParseError("nccl-tests JSON: " + message)


def _json_number(value, where):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        _json_fail("%s is %r, expected a number" % (where, value))
    number = _to_float(value)
    if number is None:
        _json_fail("%s is %r, expected a number" % (where, value))
    return number


def _json_bool(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    return None


def _json_place(entry, place, index):
    group = entry.get(place)
    if group is None:
        return None
    if not isinstance(group, dict):
        _json_fail("results[%d].%s is %r, expected an object" % (index, place, group))
    out = {}
    for key, name in (("time", "time"), ("cpu_time", "time"), ("alg_bw", "algbw"), ("bus_bw", "busbw")):
        if key in group:
            out[name] = _json_number(group[key], "results[%d].%s.%s" % (index, place, key))
    for name in ("time", "algbw", "busbw"):
        if out.get(name) is None:
            _json_fail("results[%d].%s has no %s" % (index, place, {"algbw": "alg_bw", "busbw": "bus_bw"}.get(name, name)))
    wrong = _json_number(group.get("nwrong"), "results[%d].%s.nwrong" % (index, place))
    out["wrong"] = None if wrong is None or math.isnan(wrong) else int(wrong)
    per_iter = entry.get(place + "_per_iter")
    if isinstance(per_iter, dict):
        # -I 1 (2.19): the text's i_min i_max i_p99 i_cv% columns
        for key, name in JSON_PER_ITER:
            if key in per_iter:
                out[name] = _json_number(per_iter[key], "results[%d].%s_per_iter.%s" % (index, place, key))
    return out


def _json_collective(args):
    """The test a JSON report comes from: the name of the program in its ``args`` (``all_reduce_perf``), or None."""
    if not isinstance(args, list) or not args or not isinstance(args[0], str) or not args[0].strip():
        return None
    return args[0].replace("\\", "/").rstrip("/").split("/")[-1] or None


def _json_int(value, where):
    text = str(value).strip()
    if isinstance(value, bool) or not re.match(r"^-?\d+$", text):
        _json_fail("%s is %r, expected an integer" % (where, value))
    return int(text)


def _json_devices(result, devices):
    if not isinstance(devices, list):
        _json_fail("devices is %r, expected a list" % (devices,))
    for index, dev in enumerate(devices):
        if not isinstance(dev, dict) or "hostname" not in dev:
            _json_fail("devices[%d] is %r, expected an object with a hostname" % (index, dev))
        result["ranks"].append({
            "rank": dev.get("rank"),
            "group": dev.get("group"),
            "pid": dev.get("pid"),
            "host": dev["hostname"],
            "device": dev.get("device"),
            "bus_id": dev.get("device_hex"),
            "name": dev.get("device_info"),
        })
        if dev["hostname"] not in result["hosts"]:
            result["hosts"].append(dev["hostname"])


def _load_json(text):
    """(document, None) or (None, a sentence naming where the text stops being JSON)."""
    try:
        return json.loads(text), None
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        lineno = getattr(exc, "lineno", 0)
        colno = getattr(exc, "colno", 0)
        pos = getattr(exc, "pos", 0)
    ends_early = pos >= len(text.rstrip()) or msg.startswith("Unterminated string")
    hint = " (the file ends early: the run was probably killed while writing it)" if ends_early else ""
    return None, "nccl-tests JSON is not valid JSON at line %d column %d: %s%s" % (lineno, colno, msg, hint)


def parse_json(text):
    """Parse the ``-J FILE`` report of nccl-tests into the same shape as ``parse_all_reduce``."""
    if not isinstance(text, str):
        raise NcclParseError("nccl-tests JSON must be text, got %s" % type(text).__name__)
    doc, problem = _load_json(text)
    if problem is not None:
        raise NcclParseError(problem)
    if not isinstance(doc, dict):
        _json_fail("top level is a %s, expected an object with 'config' and 'results'" % type(doc).__name__)
    if "results" not in doc and "config" not in doc:
        _json_fail("no 'config' and no 'results' key; keys found: %s" % (", ".join(sorted(doc)) or "none"))
    result = _empty_result("json")
    result["runs"] = 1
    result["json_version"] = doc.get("version")
    result["collective"] = _json_collective(doc.get("args"))
    if isinstance(doc.get("nccl_version"), int):
        result["nccl_library"] = doc["nccl_version"]
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        _json_fail("config is %r, expected an object" % (config,))
    names = (("nthreads", "nThread"), ("ngpus", "nGpus"), ("minimum_bytes", "minBytes"), ("maximum_bytes", "maxBytes"),
             ("warmup_iters", "warmup_iters"), ("iterations", "iters"), ("aggregated_iterations", "agg_iters"),
             ("validation", "validation"), ("graph", "graph"))
    for key, name in names:
        if key in config:
            result["params"][name] = _json_int(config[key], "config.%s" % key)
    if "step_factor" in config:
        result["params"].update(step=_json_int(config["step_factor"], "config.step_factor"), step_kind="factor")
    elif "step_bytes" in config:
        result["params"].update(step=_json_int(config["step_bytes"], "config.step_bytes"), step_kind="bytes")
    for flag in ("blocking_collectives", "per_iter_timing", "parallel_init"):
        if _json_bool(config.get(flag)):
            result["flags"].append(flag)
    devices = config.get("devices", doc.get("devices"))
    if devices is not None:
        _json_devices(result, devices)
    results = doc.get("results")
    if results is None:
        results = []
    if not isinstance(results, list):
        _json_fail("results is %r, expected a list" % (results,))
    for index, entry in enumerate(results):
        if not isinstance(entry, dict) or "size" not in entry:
            _json_fail("results[%d] is %r, expected an object with a size" % (index, entry))
        row = {
            "size": _json_int(entry["size"], "results[%d].size" % index),
            "count": _json_int(entry.get("count", 0), "results[%d].count" % index),
            "type": entry.get("type"),
            "redop": entry.get("redop"),
            "root": _json_int(entry.get("root", -1), "results[%d].root" % index),
        }
        for place in ("out_of_place", "in_place"):
            group = _json_place(entry, place, index)
            if group is not None:
                row[place] = group
        if "in_place" not in row and "out_of_place" not in row:
            _json_fail("results[%d] has neither out_of_place nor in_place" % index)
        result["rows"].append(row)
    oob = doc.get("out_of_bounds")
    if isinstance(oob, dict) and "count" in oob:
        count = _json_int(oob["count"], "out_of_bounds.count")
        result["out_of_bounds"] = {"count": count, "ok": count == 0}
    avg = doc.get("average_bus_bandwidth")
    if isinstance(avg, dict) and "bandwidth" in avg:
        result["avg_busbw"] = _json_number(avg["bandwidth"], "average_bus_bandwidth.bandwidth")
        okay = _json_bool(avg.get("okay"))
        result["avg_busbw_status"] = None if okay is None else ("OK" if okay else "FAILED")
        result["concluded"] = True
    else:
        result["truncated"] = True
        result["truncated_reason"] = "JSON report has no 'average_bus_bandwidth': the run ended before its footer (%d result rows)" % len(result["rows"])
    errors = doc.get("errors") or []
    result["errors"] = [str(err) for err in errors if str(err).strip()] if isinstance(errors, list) else [str(errors)]
    return result


def version_tuple(version):
    """``"2.19.6"`` -> ``(2, 19, 6)``; None when ``version`` does not start with numbers."""
    match = re.match(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(version or ""))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def writes_json(version):
    """True when nccl-tests ``version`` writes the ``-J FILE`` JSON report (``JSON_MIN_VERSION`` and later)."""
    parsed = version_tuple(version)
    return parsed is not None and parsed >= JSON_MIN_VERSION


def _json_mismatch(text, result):
    """Why the JSON report ``result`` is not from the run whose stdout is ``text`` (both parsed), or None."""
    if text["collective"] and result["collective"] and text["collective"] != result["collective"]:
        return "the JSON report is of %s but the text output of %s" % (result["collective"], text["collective"])
    expected = JSON_FILE_VERSIONS.get((version_tuple(text["version"]) or (0, 0))[:2])
    if expected is not None and result.get("json_version") is not None and result["json_version"] != expected:
        return "the JSON report has format version %r, but nccl-tests %s writes version %d: it comes from another nccl-tests" % (
            result["json_version"], text["version"], expected)
    if text["hosts"] and result["hosts"] and text["hosts"] != result["hosts"]:
        return "the JSON report names the hosts %s, the text output %s" % (", ".join(result["hosts"]), ", ".join(text["hosts"]))
    return None


def parse_run(stdout, json_text=None):
    """Parse one run: the JSON report when there is one (numbers), the stdout for the rest.

    nccl-tests writes ``Reducing maxBytes``, NCCL debug lines and test failures only to stdout,
    so transports, networks, warnings and errors always come from ``stdout``. A JSON report that
    cannot be read (cut short when the run was killed while writing it) or that is not from the
    run of ``stdout`` (another test, another nccl-tests version, other hosts) leaves the numbers to
    the text and becomes an error of the run (``errors``): never a pass. With no text to fall back
    on, ``NcclParseError`` says what is wrong with the JSON.
    """
    if json_text is None or not json_text.strip():
        return parse_all_reduce(stdout)
    has_text = stdout is not None and bool(stdout.strip())
    try:
        result = parse_json(json_text)
    except NcclParseError as exc:
        if not has_text:
            raise
        text = parse_all_reduce(stdout)
        text["json_error"] = str(exc)
        text["errors"].append("the -J JSON report cannot be read: %s" % exc)
        return text
    if not has_text:
        return result
    text = parse_all_reduce(stdout)
    mismatch = _json_mismatch(text, result)
    if mismatch is not None:
        text["json_error"] = mismatch
        text["errors"].append(mismatch)
        return text
    for key in ("version", "version_commit", "nccl_headers", "nccl_version", "collective", "transports", "networks",
                "warnings", "nccl_warnings", "json_path"):
        if text[key] or key != "collective":
            result[key] = text[key]
    result["errors"] = text["errors"] + [err for err in result["errors"] if err not in text["errors"]]
    result["runs"] = max(text["runs"], 1)
    if not result["hosts"]:
        result["ranks"], result["hosts"] = text["ranks"], text["hosts"]
    return result


def _row_busbw(row):
    values = []
    for place in ("out_of_place", "in_place"):
        group = row.get(place)
        if group and group.get("busbw") is not None and not math.isnan(group["busbw"]):
            values.append(group["busbw"])
    return values


def busbw_series(result):
    """[[size, busbw]] sorted by size: busbw is the mean of out-of-place and in-place over the rows of that size."""
    by_size = {}
    for row in result["rows"]:
        by_size.setdefault(row["size"], []).extend(_row_busbw(row))
    return [[size, round(sum(vals) / len(vals), 3)] for size, vals in sorted(by_size.items()) if vals]


def size_label(size):
    """``8589934592`` -> ``8 GiB``; ``1536`` -> ``1.5 KiB``."""
    for unit, scale in (("GiB", GIB), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if size >= scale:
            value = size / scale
            return ("%d %s" % (value, unit)) if value == int(value) else ("%.1f %s" % (value, unit))
    return "%d B" % size


def _check(name, status, reason, **extra):
    item = {"check": name, "status": status, "reason": reason}
    item.update(extra)
    return item


def parse_size(value):
    """Bytes of a size as nccl-tests' ``-b``/``-e`` take it: a whole number above 0, or one with a K, M, G or T suffix
    (powers of 1024: ``"64M"`` is 67108864); None when ``value`` is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if not isinstance(value, str):
        return None
    match = _SIZE_RE.match(value.strip().upper())
    if not match:
        return None
    size = int(match.group(1)) * SIZE_UNITS[match.group(2)]
    return size if size > 0 else None


def _gate_figure(value):
    """A curve's GB/s: a finite number of at least 0.01 (the curve is read to 0.01 GB/s)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value >= 0.01 and not math.isinf(value)


def _validate_curves(curves):
    """``{topology: [(size_bytes, gbps), ...]}`` from ``gate_curves``; raises ValueError naming the first bad value."""
    if curves is None:
        return {}
    if not isinstance(curves, dict):
        raise ValueError("gate_curves must be a dict of topology -> [[size, GB/s], ...] (sizes rising), got %r" % (curves,))
    out = {}
    for key in sorted(curves, key=str):
        where = "gate_curves[%r]" % (key,)
        if not isinstance(key, str) or not key.strip():
            raise ValueError("gate_curves has the key %r, expected a topology name (a non-empty string)" % (key,))
        points = curves[key]
        if not isinstance(points, (list, tuple)) or not points:
            raise ValueError("%s is %r, expected a non-empty list of [size, GB/s] points such as [[\"64M\", 150], [\"8G\", 296]]" % (where, points))
        clean = []
        for index, point in enumerate(points):
            if not isinstance(point, (list, tuple)) or len(point) != 2:
                raise ValueError("%s[%d] is %r, expected a [size, GB/s] pair such as [\"64M\", 150]" % (where, index, point))
            size = parse_size(point[0])
            if size is None:
                raise ValueError("%s[%d]: size %r is not valid, expected a whole number of bytes above 0 or one with a K, M, G or T suffix "
                                 "(powers of 1024) such as \"64M\" or \"8G\"" % (where, index, point[0]))
            if not _gate_figure(point[1]):
                raise ValueError("%s[%d]: GB/s %r is not valid, expected a number of at least 0.01" % (where, index, point[1]))
            if clean and size <= clean[-1][0]:
                raise ValueError("%s: sizes must rise from one point to the next, but point %d (%s) follows point %d (%s)" % (
                    where, index, size_label(size), index - 1, size_label(clean[-1][0])))
            clean.append((size, float(point[1])))
        out[key] = clean
    return out


def _validate_expect(expect):
    if expect is None:
        expect = {}
    if not isinstance(expect, dict):
        raise ValueError("expect must be a dict with keys %s, got %r" % (", ".join(EXPECT_KEYS), expect))
    unknown = sorted(set(expect) - set(EXPECT_KEYS))
    if unknown:
        raise ValueError("unknown expect key(s) %s; valid keys: %s" % (", ".join(unknown), ", ".join(EXPECT_KEYS)))
    out = {
        "topology": expect.get("topology"),
        "min_busbw_gbps": expect.get("min_busbw_gbps"),
        "thresholds": {},
        "overrides": [],
        "nics": expect.get("nics", 1),
        "large_size_bytes": expect.get("large_size_bytes", GIB),
        "top_rows": expect.get("top_rows", 3),
        "expect_transport": expect.get("expect_transport"),
        "gate_curves": _validate_curves(expect.get("gate_curves")),
        "nodes": expect.get("nodes", 1),
        "notes": expect.get("notes") or [],
        "platform": expect.get("platform"),
        "gpus": expect.get("gpus"),
        "algorithm": expect.get("algorithm") or "auto",
    }
    overrides = expect.get("thresholds") or {}
    if not isinstance(overrides, dict):
        raise ValueError("thresholds must be a dict of topology -> GB/s, got %r" % (overrides,))
    for key, value in overrides.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError("thresholds[%r] is %r, expected a number of GB/s above 0" % (key, value))
        if key in out["gate_curves"]:
            raise ValueError("topology %r has both a threshold (thresholds) and a gate curve (gate_curves); give one of them" % (key,))
        out["thresholds"][key] = float(value)
        out["overrides"].append(key)
    for key in ("nics", "large_size_bytes", "top_rows", "nodes"):
        value = out[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError("%s is %r, expected an integer of at least 1" % (key, value))
    if out["gpus"] is not None and (isinstance(out["gpus"], bool) or not isinstance(out["gpus"], int) or out["gpus"] < 1):
        raise ValueError("gpus is %r, expected an integer of at least 1" % (out["gpus"],))
    if out["platform"] is not None:
        _busbw.check_platform(out["platform"])
    if out["algorithm"] not in _busbw.ALGORITHMS:
        raise ValueError("algorithm is %r, expected one of %s" % (out["algorithm"], ", ".join(_busbw.ALGORITHMS)))
    if not isinstance(out["notes"], list) or not all(isinstance(note, str) and note for note in out["notes"]):
        raise ValueError("notes is %r, expected a list of non-empty strings" % (out["notes"],))
    value = out["min_busbw_gbps"]
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf")):
        raise ValueError("min_busbw_gbps is %r, expected a number of GB/s above 0" % (value,))
    topology = out["topology"]
    if topology is not None and topology not in out["thresholds"] and topology not in out["gate_curves"] and not _busbw.is_key(topology):
        raise ValueError("unknown topology %r; valid topologies: %s" % (topology, _valid_topologies(out["thresholds"], out["gate_curves"])))
    if out["expect_transport"] is not None and out["expect_transport"] not in EXPECT_TRANSPORTS:
        raise ValueError("expect_transport is %r; valid values: %s (or leave it unset)" % (out["expect_transport"], ", ".join(EXPECT_TRANSPORTS)))
    return out


def known_topologies(thresholds=None, gate_curves=None):
    """The keys a gate can be named by: the catalogue's (curve ids, NIC keys, the keys of earlier releases) and a site's."""
    return sorted(set(_busbw.known_keys()) | set(thresholds or {}) | set(gate_curves or {}))


def _valid_topologies(thresholds, gate_curves):
    """What an unknown topology's message lists: the short keys (NIC keys, keys of earlier releases, the site's), then the
    form of the catalogue's curve ids."""
    short = sorted((set(_busbw.LEGACY_KEYS) | set(_busbw.nic_key(nic) for nic in _busbw.NICS) | set(thresholds) | set(gate_curves)) - set(_busbw.CURVES))
    return "%s, or a platform or a curve id of the catalogue, <platform>/node/<nvls|ring|pcie> or <platform>/rack/nvls, such as " \
           "h100-nvswitch/node/nvls (platforms: %s)" % (", ".join(short), ", ".join(sorted(_busbw.PLATFORMS)))


def _site_gate(opts, key):
    """The gate of a site's own ``thresholds`` or ``gate_curves`` entry ``key`` (an ``ib-*`` key per NIC, its curve stated for
    two nodes and stretched above that)."""
    per_nic = key.startswith(_busbw.NIC_PREFIX)
    nics = opts["nics"] if per_nic else 1
    name = "%s x %d NIC(s)" % (key, opts["nics"]) if per_nic else key
    if key in opts["overrides"]:
        threshold = round(opts["thresholds"][key] * nics, 1)
        return {"kind": "flat", "threshold": threshold, "source": name, "name": name,
                "curve": {"id": key, "source": "the site's flat threshold thresholds[%r] (validate_nccl_settings.thresholds): %s GB/s%s, the mean busbw "
                                               "from 1 GiB up" % (key, opts["thresholds"][key], " x %d NIC(s)" % nics if per_nic else "")}}
    scale = max(1.0, opts["nodes"] / _busbw.GATE_CURVE_NODES) if per_nic else 1.0
    points = [(int(round(size * scale)), round(gbps * nics, 2)) for size, gbps in opts["gate_curves"][key]]
    source = "%s gate curve" % name
    if scale > 1:
        source += ", sizes x %g for %d nodes" % (scale, opts["nodes"])
    return {"kind": "curve", "points": points, "source": source, "threshold": points[-1][1], "name": name,
            "curve": {"id": key, "source": "the site's own gate curve gate_curves[%r] (validate_nccl_settings.gate_curves)%s" % (
                key, ", per NIC x %d%s" % (nics, ", sizes x %g for %d nodes" % (scale, opts["nodes"]) if scale > 1 else "") if per_nic else "")}}


def _resolve_gate(opts):
    """The busbw gate of validated ``opts``: ``{kind: flat, threshold, source, name, curve}`` (``min_busbw_gbps`` or a
    ``thresholds`` entry: the mean at the large sizes, as before curves), ``{kind: curve, points, source, threshold, name,
    curve}`` (a site's gate curve or the catalogue's, ``threshold`` its last figure) or None. ``source`` is the short name
    the checks' reasons use, ``curve`` ``{id, source}`` the curve's id and where its figures come from (for the report).

    A ``topology`` the site gave a threshold or curve for is the site's; another names a catalogue curve
    (``_busbw.resolve``: a curve id, a NIC key, a key of earlier releases); without one the catalogue picks the curve
    from ``platform``, ``gpus``, ``nodes`` and ``algorithm`` (``_busbw.curve_for``), and a site's entry under that
    curve's id replaces it."""
    if opts["min_busbw_gbps"] is not None:
        return {"kind": "flat", "threshold": float(opts["min_busbw_gbps"]), "source": "min_busbw_gbps", "name": "min_busbw_gbps",
                "curve": {"id": "min_busbw_gbps", "source": "the site's flat threshold min_busbw_gbps (validate_nccl_node.min_busbw_gbps or "
                                                            "validate_nccl_multinode.min_busbw_gbps): %s GB/s, the mean busbw from 1 GiB up"
                                                            % opts["min_busbw_gbps"]}}
    topology = opts["topology"]
    if topology is not None and (topology in opts["overrides"] or topology in opts["gate_curves"]):
        return _site_gate(opts, topology)
    if topology is None and opts["platform"] is None:
        return None
    curve = _busbw.resolve(topology, opts["platform"], opts["gpus"], opts["nodes"], opts["nics"], opts["algorithm"])
    if curve is None:
        return None
    if topology is None and (curve["id"] in opts["overrides"] or curve["id"] in opts["gate_curves"]):
        return _site_gate(opts, curve["id"])
    points = list(curve["points"])
    source = "%s gate curve" % curve["id"]
    if curve["scale"] > 1:
        source += ", sizes x %g for %d nodes" % (curve["scale"], opts["nodes"])
    return {"kind": "curve", "points": points, "source": source, "threshold": points[-1][1], "name": curve["id"],
            "curve": {"id": curve["id"], "source": curve["source"]}}


def threshold_for(expect):
    """(GB/s, description) of the busbw gate for ``expect``, or (None, None) when no threshold is set.

    For a gate curve: its figure at its largest size (for a built-in curve, the large-message threshold)."""
    gate = _resolve_gate(_validate_expect(expect))
    if gate is None:
        return None, None
    return gate["threshold"], gate["name"]


def gate_info(expect):
    """``{id, source}`` of the curve (or flat threshold) that gates a run with ``expect``; None when its busbw is not gated."""
    gate = _resolve_gate(_validate_expect(expect))
    return dict(gate["curve"]) if gate is not None else None


def gate_curve(expect):
    """``[[size_bytes, gbps], ...]``: the curve a run with ``expect`` is gated with (a flat gate as one point at
    ``large_size_bytes``: it holds from there on), ``[]`` when its busbw is not gated. For the report's plot."""
    opts = _validate_expect(expect)
    gate = _resolve_gate(opts)
    if gate is None:
        return []
    if gate["kind"] == "flat":
        return [[opts["large_size_bytes"], gate["threshold"]]]
    return [[size, gbps] for size, gbps in gate["points"]]


def curve_minimum(points, size):
    """The lowest busbw (GB/s, to 0.01) a gate curve ``[(size, gbps), ...]`` accepts at ``size``; None below its first point.

    Between two points the figure is linear in log2(size); past the last point the last figure holds."""
    if size < points[0][0]:
        return None
    for (low, low_gbps), (high, high_gbps) in zip(points, points[1:]):
        if low <= size <= high:
            share = (math.log(size) - math.log(low)) / (math.log(high) - math.log(low))
            return round(low_gbps + share * (high_gbps - low_gbps), 2)
    return round(points[-1][1], 2)


def _check_complete(result):
    if result["truncated"]:
        return _check("complete", "fail", "output is incomplete: %s" % result["truncated_reason"])
    return _check("complete", "pass", "output complete: %d result rows and the footer" % len(result["rows"]))


def _check_single_run(result):
    if result["runs"] > 1:
        return _check("single_run", "fail",
                      "output holds %d separate runs (one '# nThread' header each): the tasks did not form one job; "
                      "was nccl-tests built without MPI=1 or launched without --mpi?" % result["runs"])
    if result["runs"] == 0 and result["format"] == "text":
        return _check("single_run", "skip", "not checked: the head of the output (its '# nThread' line) is missing, so the runs and ranks are unknown")
    if not result["ranks"]:
        return _check("single_run", "pass", "one run; rank count unknown (the output has no '# Rank' device lines)")
    return _check("single_run", "pass", "one run of %d rank(s)" % len(result["ranks"]))


def _min_ranks(result):
    """(ranks, known): the ranks of the run, or when unknown a lower bound (nThread x nGpus of one process, at least the
    2 of a reduction across GPUs): fewer ranks give a lower, stricter bound."""
    if result["ranks"] and result["runs"]:
        return len(result["ranks"]), True
    # no '# Rank' lines, or the head cut off (the rank lines left may be the last few of them)
    params = result["params"] or {}
    return max(2, len(result["ranks"]), int(params.get("nThread") or 1) * int(params.get("nGpus") or 1)), False


def error_tolerance(datatype, nranks):
    """The largest ``error`` (2.0-2.10 column) nccl-tests itself accepts for ``datatype`` over ``nranks`` ranks."""
    return ERROR_TOLERANCE.get(str(datatype or "").lower(), ERROR_TOLERANCE_OTHER) * max(nranks - 1, 0)


def _check_error(result):
    """Gate the ``error`` column of nccl-tests 2.0-2.10 as the tool does (``maxDelta > DeltaMaxValue(type) * (nranks - 1)``)."""
    nranks, known = _min_ranks(result)
    checked = 0
    bad = []
    largest = 0.0
    for row in result["rows"]:
        for place, label in (("out_of_place", "out-of-place"), ("in_place", "in-place")):
            group = row.get(place)
            if not group or group.get("error") is None:
                continue
            checked += 1
            value = group["error"]
            bound = error_tolerance(row.get("type"), nranks)
            if math.isnan(value) or value > bound:
                bad.append("%d B %s %s: %.0e > %.0e" % (row["size"], row.get("type") or "", label, value, bound))
            elif value > largest:
                largest = value
    note = "" if known else " (rank count unknown: the bound for %d ranks, the fewest the output allows)" % nranks
    if checked == 0:
        return _check("wrong", "skip", "not checked: error reads N/A (the run used -c 0, no data validation)")
    if bad:
        more = ", ..." if len(bad) > 5 else ""
        return _check("wrong", "fail", "error above nccl-tests' tolerance (DeltaMaxValue(type) x (ranks - 1)) in %d of %d results: %s%s%s" % (
            len(bad), checked, ", ".join(bad[:5]), more, note), value=len(bad))
    return _check("wrong", "pass", "error within nccl-tests' tolerance in all %d results (largest %.0e)%s" % (checked, largest, note), value=0)


def _check_test_errors(result):
    problems = list(result["errors"])
    if result["avg_busbw_status"] == "FAILED":
        problems.append("nccl-tests marked 'Avg bus bandwidth' FAILED (below its NCCL_TESTS_MIN_BW)")
    if problems:
        more = " (and %d more)" % (len(problems) - 1) if len(problems) > 1 else ""
        return _check("test_errors", "fail", "the binary reported an error: %s%s" % (problems[0], more))
    return _check("test_errors", "pass", "no test failure reported")


def _check_wrong(result):
    if any(row.get(place) and "error" in row[place] for row in result["rows"] for place in ("out_of_place", "in_place")):
        return _check_error(result)
    checked = 0
    bad = []
    for row in result["rows"]:
        for place, label in (("out_of_place", "out-of-place"), ("in_place", "in-place")):
            group = row.get(place)
            if not group or group.get("wrong") is None:
                continue
            checked += 1
            if group["wrong"] != 0:
                bad.append("%d B %s %s: %d" % (row["size"], row.get("type") or "", label, group["wrong"]))
    if not result["rows"]:
        return _check("wrong", "skip", "not checked: no result rows")
    if checked == 0:
        return _check("wrong", "skip", "not checked: #wrong reads N/A (the run used -c 0, no data validation)")
    if bad:
        more = ", ..." if len(bad) > 5 else ""
        return _check("wrong", "fail", "#wrong > 0 in %d of %d results: %s%s" % (len(bad), checked, ", ".join(bad[:5]), more), value=len(bad))
    return _check("wrong", "pass", "#wrong is 0 in all %d results" % checked, value=0)


def _check_out_of_bounds(result):
    oob = result["out_of_bounds"]
    if oob is None:
        return _check("out_of_bounds", "skip", "not checked: no '# Out of bounds values' footer")
    if oob["count"]:
        return _check("out_of_bounds", "fail", "Out of bounds values: %d FAILED" % oob["count"], value=oob["count"])
    return _check("out_of_bounds", "pass", "Out of bounds values: 0 OK", value=0)


def _busbw_notes(result, opts):
    note = ""
    for warning in result["warnings"]:
        if warning["kind"] == "reduced_max_bytes":
            note = "; nccl-tests reduced maxBytes to %d (memory limitation)" % warning["max_bytes"]
    return note + "".join("; %s" % text for text in opts["notes"])


def _check_busbw(result, opts, gate):
    if gate is None:
        return _check("busbw", "skip", "not checked: no busbw threshold (set topology or min_busbw_gbps)%s" % "".join(
            "; %s" % text for text in opts["notes"]))
    if gate["kind"] == "curve":
        return _check_busbw_curve(result, opts, gate)
    threshold, source = gate["threshold"], gate["source"]
    rows = [row for row in result["rows"] if _row_busbw(row)]
    if not rows:
        return _check("busbw", "fail", "no result rows to measure busbw against %.1f GB/s (%s)" % (threshold, source), threshold=threshold)
    large = [row for row in rows if row["size"] >= opts["large_size_bytes"]]
    if large:
        scope = "rows >= %s" % size_label(opts["large_size_bytes"])
    else:
        sizes = sorted(set(row["size"] for row in rows), reverse=True)[:opts["top_rows"]]
        large = [row for row in rows if row["size"] in sizes]
        scope = "the %d largest sizes (no row reached %s)" % (len(sizes), size_label(opts["large_size_bytes"]))
    values = []
    for row in large:
        values.extend(_row_busbw(row))
    mean = sum(values) / len(values)
    low, high = min(row["size"] for row in large), max(row["size"] for row in large)
    span = size_label(low) if low == high else "%s..%s" % (size_label(low), size_label(high))
    note = _busbw_notes(result, opts)
    if mean >= threshold:
        return _check("busbw", "pass", "mean busbw %.1f GB/s over %s (%s) reaches %.1f GB/s (%s)%s" % (
            mean, scope, span, threshold, source, note), value=round(mean, 2), threshold=threshold)
    return _check("busbw", "fail", "mean busbw %.1f GB/s over %s (%s) is below %.1f GB/s (%s)%s" % (
        mean, scope, span, threshold, source, note), value=round(mean, 2), threshold=threshold)


def _share(measured, required):
    """``measured`` as a percentage of ``required``, rounded down to 0.1 (a figure below the curve never reads 100)."""
    return "%.1f" % (math.floor(measured / required * 1000) / 10.0)


def _check_busbw_curve(result, opts, gate):
    """Every measured size in the curve's range against the curve's figure there; names the worst size."""
    points, source = gate["points"], gate["source"]
    note = _busbw_notes(result, opts)
    series = busbw_series(result)
    if not series:
        return _check("busbw", "fail", "no result rows to measure busbw against the %s (%.1f GB/s at %s to %.1f GB/s at %s)%s" % (
            source, points[0][1], size_label(points[0][0]), points[-1][1], size_label(points[-1][0]), note), threshold=points[-1][1])
    gated = [(size, busbw, curve_minimum(points, size)) for size, busbw in series if size >= points[0][0]]
    if not gated:
        return _check("busbw", "fail", "no result row at or above %s, where the %s starts (largest size measured: %s): run all_reduce_perf "
                                       "up to %s or more (-e)%s" % (size_label(points[0][0]), source, size_label(series[-1][0]),
                                                                    size_label(points[-1][0]), note),
                      threshold=points[0][1])
    worst = min(gated, key=lambda item: (item[1] / item[2], item[0]))
    measured, required = "%.1f" % worst[1], "%.1f" % worst[2]
    if measured == required:
        measured, required = "%.2f" % worst[1], "%.2f" % worst[2]
    below = [item for item in gated if item[1] < item[2]]
    span = size_label(gated[0][0]) if len(gated) == 1 else "%s..%s" % (size_label(gated[0][0]), size_label(gated[-1][0]))
    extra = dict(value=round(worst[1], 2), threshold=worst[2], size=worst[0])
    if below:
        names = ", ".join(size_label(item[0]) for item in below[:5]) + (", ..." if len(below) > 5 else "")
        # how far off: the measured share of what the curve asks there (the worst size)
        return _check("busbw", "fail", "at %s %s GB/s < %s GB/s required, %s %% of it (%s); below the curve at %d of the %d sizes gated (%s)%s" % (
            size_label(worst[0]), measured, required, _share(worst[1], worst[2]), source, len(below), len(gated), names, note), **extra)
    return _check("busbw", "pass", "busbw reaches the %s at all %d sizes gated (%s); closest at %s: %s GB/s >= %s GB/s required%s" % (
        source, len(gated), span, size_label(worst[0]), measured, required, note), **extra)


def _check_transport(result, opts):
    if opts["expect_transport"] is None:
        return _check("transport", "skip", "not checked: no transport expected")
    transports = result["transports"]
    networks = result["networks"]
    if "NET/Socket" in transports or "Socket" in networks:
        return _check("transport", "fail", "NCCL fell back to NET/Socket (TCP) while InfiniBand was expected (transports: %s; network: %s)" % (
            ", ".join(transports) or "none", ", ".join(networks) or "none"))
    if "NET/IB" in transports or "IB" in networks:
        return _check("transport", "pass", "NCCL used InfiniBand (transports: %s; network: %s)" % (
            ", ".join(transports) or "none", ", ".join(networks) or "none"))
    if not transports and not networks:
        return _check("transport", "skip", "not checked: no NCCL_DEBUG=INFO transport lines in the output")
    return _check("transport", "fail", "NCCL used no InfiniBand transport while InfiniBand was expected (transports: %s; network: %s)" % (
        ", ".join(transports) or "none", ", ".join(networks) or "none"))


def evaluate(result, expect=None):
    """Gate a parsed run. Returns one ``{check, status, reason[, value, threshold, size]}`` per name in ``CHECKS``.

    ``expect`` keys: ``topology`` (a key of the catalogue's curves, ``_busbw.known_keys()``, or of
    ``thresholds`` or ``gate_curves``; None: the catalogue picks the curve from ``platform``, ``gpus``,
    ``nodes`` and ``algorithm``, see ``_resolve_gate``), ``min_busbw_gbps`` (overrides the topology),
    ``thresholds`` (topology -> GB/s, a flat gate added to or replacing a curve), ``gate_curves`` (topology ->
    ``[[size, GB/s], ...]``, sizes rising, in bytes or as ``"64M"``/``"8G"``: added to or replacing the built-in curves), ``nics`` (NICs per node, multiplies
    the per-NIC ``ib-*`` thresholds and curves), ``nodes`` (the nodes of the run: an ``ib-*`` curve is
    stated for two nodes and its sizes are multiplied by nodes / 2 above that), ``large_size_bytes``
    (for a flat threshold: rows at or above it are gated, default 1 GiB; when none reaches it, the
    ``top_rows`` largest sizes are), ``expect_transport`` (``"ib"``: a run over ``NET/Socket`` fails),
    ``notes`` (texts added to the busbw check's reason).

    The busbw gate: a ``min_busbw_gbps`` or a ``thresholds`` entry gates as before curves, the mean busbw
    at the large sizes at or above the threshold (``>=``: a threshold is the lowest acceptable figure);
    a topology's gate curve gates every measured size from its first point on (the mean of out-of-place
    and in-place, as ``busbw_series``) at or above the curve's figure at that size (``curve_minimum``),
    and names the worst size (``value``, ``threshold`` and ``size`` are those of that size). ``wrong``
    gates ``#wrong`` (any count above 0 fails) or, for nccl-tests 2.0-2.10, ``error`` (above
    ``error_tolerance(type, ranks)`` fails).
    """
    opts = _validate_expect(expect)
    gate = _resolve_gate(opts)
    return [
        _check_complete(result),
        _check_single_run(result),
        _check_test_errors(result),
        _check_wrong(result),
        _check_out_of_bounds(result),
        _check_busbw(result, opts, gate),
        _check_transport(result, opts),
    ]


def summarize(result):
    """A small, JSON-friendly digest of a parsed run for reports."""
    series = busbw_series(result)
    return {
        "version": result["version"],
        "nccl_version": result["nccl_version"],
        "collective": result["collective"],
        "hosts": list(result["hosts"]),
        "ranks": len(result["ranks"]),
        "rows": len(result["rows"]),
        "avg_busbw": result["avg_busbw"],
        "largest_size": series[-1][0] if series else None,
        "largest_busbw": series[-1][1] if series else None,
        "transports": list(result["transports"]),
        "truncated": result["truncated"],
        "series": series,
    }
