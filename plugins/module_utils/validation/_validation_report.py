# -*- coding: utf-8 -*-
# Copyright: (c) 2025, gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render validation results as JSON, JUnit XML, Markdown and HTML (pure logic, standard library only).

Input is a list of check records, one per (stage, node, check)::

    {"stage": "nccl", "node": "node005", "check": "busbw", "status": "fail",
     "reason": "mean busbw 142.7 GB/s ...", "value": 142.7, "threshold": 296.0,
     "hosts": ["node005", "node007"], "curve": {"id": "h100-nvswitch/node/ring", "source": "80 % of 370 GB/s ..."}}

``hosts`` is optional: a record about a multi-node run names the run in ``node`` and lists its
hosts, which are then the nodes named when it fails. ``curve`` (optional, NCCL runs): the gate curve that judged the
run, its id and where its figures come from (the Markdown and HTML reports list them per stage). ``series`` (optional) are busbw-vs-size
runs for the plot: ``[{"label": "node005", "points": [[size_bytes, busbw_gbps], ...], "gate": [[size_bytes, gbps], ...]}]``
(``gate``, optional: the busbw the run had to reach, drawn as a dashed line over the curves).

A failed record may carry ``command``, the command line that reruns it (shell-quoted; several lines for
several runs), shown under the failure; an NCCL run's records may carry ``versions`` (``{"nccl": "2.21.5",
"nccl_tests": "2.13.9"}``), which go to the report's provenance for the run's hosts.

``provenance`` (optional): what was validated - ``generated`` and ``started`` (UTC ISO 8601), ``collection_version``
and ``nodes`` (``[{"node", "slurm", "driver", "cuda", "nccl", "nccl_tests"}]``); a value nobody gave is ``null`` in
the JSON and "unknown" in the other files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import json
import math
import re
import xml.etree.ElementTree as ET
from html import escape

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    InputError, require_dict, require_number, require_word, show)

STATUSES = ("pass", "fail", "skip")
REPORT_FILES = ("report.html", "report.json", "report.junit.xml", "report.md")
RECORD_KEYS = ("stage", "node", "check", "status", "reason", "value", "threshold", "hosts", "command", "versions", "held", "curve")
_REQUIRED = ("stage", "node", "check", "status")
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
# Versions per node, in the order the report lists them, with their names there.
VERSION_KEYS = ("slurm", "driver", "cuda", "nccl", "nccl_tests")
VERSION_NAMES = {"slurm": "Slurm", "driver": "NVIDIA driver", "cuda": "CUDA (driver)", "nccl": "NCCL", "nccl_tests": "nccl-tests"}
UNKNOWN = "unknown"
# The plot's legend names this many runs at the most (the failing ones, then the slowest at the largest size);
# with more runs the others are drawn thin and grey.
LEGEND_MAX = 12
# A stage's per-node table and the per-node versions start folded above this many nodes.
OPEN_MAX = 32
# A version summary names the nodes of a value held by this many nodes at the most, else counts them.
NAMES_MAX = 8
_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:(Z|z)|([+-])(\d\d):?(\d\d))?$")


def _is_number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _clean_record(index, record):
    if not isinstance(record, dict):
        raise ValueError("result %d is %r, expected a dict with keys %s" % (index, record, ", ".join(_REQUIRED)))
    for key in _REQUIRED:
        value = record.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValueError("result %d: %s is %r, expected a non-empty string" % (index, key, value))
    if record["status"] not in STATUSES:
        raise ValueError("result %d: status %r is not one of %s" % (index, record["status"], ", ".join(STATUSES)))
    reason = record.get("reason")
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        raise ValueError("result %d: reason is %r, expected a string" % (index, reason))
    clean = {"stage": record["stage"], "node": record["node"], "check": record["check"], "status": record["status"], "reason": reason}
    for key in ("value", "threshold"):
        if record.get(key) is not None:
            if not _is_number(record[key]):
                raise ValueError("result %d: %s is %r, expected a finite number" % (index, key, record[key]))
            clean[key] = record[key]
    hosts = record.get("hosts")
    if hosts is not None:
        if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) and h for h in hosts):
            raise ValueError("result %d: hosts is %r, expected a non-empty list of host names" % (index, hosts))
        clean["hosts"] = list(hosts)
    command = record.get("command")
    if command is not None and command != "":
        if not isinstance(command, str):
            raise ValueError("result %d: command is %r, expected the command line as a string" % (index, command))
        clean["command"] = command
    curve = record.get("curve")
    if curve is not None:
        if not isinstance(curve, dict) or sorted(curve) != ["id", "source"] or not all(isinstance(curve[key], str) and curve[key] for key in curve):
            raise ValueError("result %d: curve is %r, expected {'id': str, 'source': str} (the gate curve that judged the run)" % (index, curve))
        clean["curve"] = {"id": curve["id"], "source": curve["source"]}
    held = record.get("held")
    if held is not None:
        # node_check's node_state record: admin (an admin drained or set the node down) or loop (the closed loop drained it)
        if held not in ("admin", "loop"):
            raise ValueError("result %d: held is %r, expected admin or loop (a node_state an admin or the closed loop set)" % (index, held))
        clean["held"] = held
    return clean


def _version_text(label, key, value):
    """A version as text (a number is written as given); None and "" (or blanks: the strip below) are not known."""
    if value is None:
        return None
    if _is_number(value):
        return str(value)
    if not isinstance(value, str):
        raise ValueError("%s: %s is %r, expected a version string" % (label, key, value))
    return value.strip() or None


def _clean_versions(label, versions, allowed=VERSION_KEYS):
    """``{key: version or None}`` of ``versions`` (a dict whose keys are in ``allowed``)."""
    if not isinstance(versions, dict):
        raise ValueError("%s is %r, expected a dict with keys %s" % (label, versions, ", ".join(allowed)))
    unknown = sorted(str(key) for key in versions if key not in allowed)
    if unknown:
        raise ValueError("%s has unknown key(s) %s; valid keys: %s" % (label, ", ".join(unknown), ", ".join(allowed)))
    return dict((key, _version_text(label, key, versions[key])) for key in allowed if key in versions)


def _clean_points(label, points, what="point", value="busbw_gbps", short="busbw"):
    out = []
    for point in points:
        if not isinstance(point, (list, tuple)) or len(point) != 2:
            raise ValueError("series %r: %s %r is not a [size_bytes, %s] pair" % (label, what, point, value))
        size, number = point
        if not _is_number(size) or size <= 0 or not _is_number(number) or number < 0:
            raise ValueError("series %r: %s %r needs a size above 0 and a %s of 0 or more" % (label, what, list(point), short))
        out.append([size, number])
    return sorted(out)


def _clean_series(series):
    out = []
    for index, run in enumerate(series or []):
        if not isinstance(run, dict) or not isinstance(run.get("label"), str) or not run["label"]:
            raise ValueError("series %d is %r, expected {'label': str, 'points': [[size, busbw], ...]}" % (index, run))
        points = _clean_points(run["label"], run.get("points") or [])
        if not points:
            raise ValueError("series %r has no points" % run["label"])
        clean = {"label": run["label"], "points": points}
        gate = run.get("gate")
        if gate is not None:
            if not isinstance(gate, (list, tuple)):
                raise ValueError("series %r: gate is %r, expected a list of [size_bytes, gbps] pairs" % (run["label"], gate))
            if gate:
                clean["gate"] = _clean_points(run["label"], gate, "gate point", "gbps", "gbps")
        out.append(clean)
    return out


def check_records(stage, node, checks, hosts=None):
    """Turn ``[{check, status, reason, ...}]`` (as ``_nccl.evaluate`` returns) into report records."""
    records = []
    for item in checks:
        record = dict(item)
        record.update(stage=stage, node=node)
        if hosts:
            record["hosts"] = list(hosts)
        records.append(record)
    return records


def _totals(records):
    totals = {"checks": len(records)}
    for status in STATUSES:
        totals[status] = sum(1 for rec in records if rec["status"] == status)
    return totals


def _status(records):
    statuses = set(rec["status"] for rec in records)
    if "fail" in statuses:
        return "fail"
    if "pass" in statuses:
        return "pass"
    return "skip"


def _check_threshold(threshold_gbps):
    if threshold_gbps is not None and (not _is_number(threshold_gbps) or threshold_gbps <= 0):
        raise ValueError("threshold_gbps is %r, expected a number above 0" % (threshold_gbps,))


def parse_time(text):
    """Seconds since the epoch of an ISO 8601 time (``2025-01-31T08:00:00Z``; an offset is applied, none is UTC), or None."""
    match = _TIME.match(text.strip()) if isinstance(text, str) else None
    if not match:
        return None
    fields = [int(part) for part in match.groups()[:6]]
    if not (1 <= fields[1] <= 12 and 1 <= fields[2] <= 31 and fields[3] < 24 and fields[4] < 60 and fields[5] < 61):
        return None
    seconds = calendar.timegm((fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], 0, 0, 0))
    if match.group(8):
        offset = int(match.group(9)) * 3600 + int(match.group(10)) * 60
        seconds -= offset if match.group(8) == "+" else -offset
    return seconds


def _time(key, value):
    if value is None or value == "":
        return None
    if parse_time(value) is None:
        raise ValueError("provenance %s is %r, expected a time such as 2025-01-31T08:00:00Z (UTC ISO 8601)" % (key, value))
    return value


def _node_versions(provenance, records):
    """Per node, its versions: the ``nodes`` given, then (where those leave one unknown) the NCCL runs' ``versions``
    for the hosts of the run. Nodes keep the order they are first named in."""
    nodes, order = {}, []

    def merge(name, versions):
        if name not in nodes:
            nodes[name] = dict((key, None) for key in VERSION_KEYS)
            order.append(name)
        for key, value in versions.items():
            if nodes[name][key] is None:
                nodes[name][key] = value

    entries = provenance.get("nodes") or []
    if not isinstance(entries, list):
        raise ValueError("provenance nodes is %r, expected a list of {node, %s}" % (entries, ", ".join(VERSION_KEYS)))
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("node"), str) or not entry["node"].strip():
            raise ValueError("versions %d is %r, expected {'node': name, %s}" % (index, entry, ", ".join("'%s': version" % k for k in VERSION_KEYS)))
        versions = _clean_versions("versions %d (%s)" % (index, entry["node"]), entry, ("node",) + VERSION_KEYS)
        versions.pop("node")
        merge(entry["node"], versions)
    for index, record in enumerate(records):
        if isinstance(record, dict) and record.get("versions") is not None:
            versions = _clean_versions("result %d: versions" % index, record["versions"])
            for host in record.get("hosts") or [record["node"]]:
                merge(host, versions)
    return [dict(nodes[name], node=name) for name in order]


def build_provenance(provenance=None, records=()):
    """What was validated: ``generated``, ``started``, ``duration_s`` (whole seconds between them), ``collection_version``
    and ``nodes`` (one dict of versions per node); None where nothing says."""
    provenance = provenance or {}
    if not isinstance(provenance, dict):
        raise ValueError("provenance is %r, expected a dict" % (provenance,))
    generated = _time("generated", provenance.get("generated"))
    started = _time("started", provenance.get("started"))
    duration = None
    if generated and started:
        duration = parse_time(generated) - parse_time(started)
        duration = duration if duration >= 0 else None
    version = _version_text("provenance", "collection_version", provenance.get("collection_version"))
    return {"generated": generated, "started": started, "duration_s": duration, "collection_version": version,
            "nodes": _node_versions(provenance, records)}


def build_report(results, series=None, title="Cluster validation", threshold_gbps=None, provenance=None):
    """Group records by stage and node; the output has stable keys and keeps the input order of stages, nodes and checks."""
    if not isinstance(results, list):
        raise ValueError("results must be a list of check records, got %s" % type(results).__name__)
    _check_threshold(threshold_gbps)
    records = [_clean_record(index, record) for index, record in enumerate(results)]
    stages = []
    by_stage = {}
    for rec in records:
        if rec["stage"] not in by_stage:
            by_stage[rec["stage"]] = {"name": rec["stage"], "nodes": [], "_nodes": {}}
            stages.append(by_stage[rec["stage"]])
        stage = by_stage[rec["stage"]]
        if rec["node"] not in stage["_nodes"]:
            stage["_nodes"][rec["node"]] = {"node": rec["node"], "checks": []}
            stage["nodes"].append(stage["_nodes"][rec["node"]])
        stage["_nodes"][rec["node"]]["checks"].append(rec)
    failed_nodes = []
    for rec in records:
        if rec["status"] == "fail":
            for host in rec.get("hosts") or [rec["node"]]:
                if host not in failed_nodes:
                    failed_nodes.append(host)
    out_stages = []
    for stage in stages:
        stage_records = [rec for node in stage["nodes"] for rec in node["checks"]]
        nodes = [{"node": node["node"], "status": _status(node["checks"]), "checks": node["checks"]} for node in stage["nodes"]]
        out_stages.append({"name": stage["name"], "status": _status(stage_records), "totals": _totals(stage_records), "nodes": nodes})
    return {
        "title": title,
        "status": _status(records) if records else "skip",
        "totals": _totals(records),
        "failed_nodes": sorted(failed_nodes),
        "stages": out_stages,
        "series": _clean_series(series),
        "threshold_gbps": threshold_gbps,
        "provenance": build_provenance(provenance, results),
    }


def failure_message(report):
    """One sentence for the playbook's failure: which checks failed on which nodes."""
    failed = [(stage["name"], node["node"], rec["check"]) for stage in report["stages"] for node in stage["nodes"]
              for rec in node["checks"] if rec["status"] == "fail"]
    if not failed:
        return ""
    checks = sorted(set("%s/%s" % (stage, check) for stage, _node, check in failed))
    return "validation failed on %s: %d failed check(s) (%s)" % (", ".join(report["failed_nodes"]), len(failed), ", ".join(checks))


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


def _detail(rec):
    text = rec["reason"]
    if "value" in rec or "threshold" in rec:
        text += " [value=%s threshold=%s]" % (rec.get("value"), rec.get("threshold"))
    return text


def _known(value):
    return UNKNOWN if value is None else value


def duration_text(seconds):
    """``3723`` -> ``1h 02m 03s``, ``65`` -> ``1m 05s``, ``9`` -> ``9s``; None -> unknown."""
    if seconds is None:
        return UNKNOWN
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh %02dm %02ds" % (hours, minutes, secs)
    if minutes:
        return "%dm %02ds" % (minutes, secs)
    return "%ds" % secs


def _version_groups(nodes, key):
    """``[(version text, [node, ...])]``, the most common first (unknown after a known one as common; then first seen)."""
    groups, order = {}, []
    for node in nodes:
        value = _known(node[key])
        if value not in groups:
            groups[value] = []
            order.append(value)
        groups[value].append(node["node"])
    first = dict((value, position) for position, value in enumerate(order))
    order.sort(key=lambda value: (-len(groups[value]), value == UNKNOWN, first[value]))
    return [(value, groups[value]) for value in order]


def version_summary(nodes, key):
    """One line for ``key`` across the nodes: the version where they agree, else each version with its nodes
    (named up to ``NAMES_MAX``, else counted), most common first: ``550.54.15 on 255 nodes; 535.104.05 on gpu-17``."""
    groups = _version_groups(nodes, key)
    if not groups:
        return UNKNOWN
    if len(groups) == 1:
        return groups[0][0]
    return "; ".join("%s on %s" % (value, ", ".join(names) if len(names) <= NAMES_MAX else "%d nodes" % len(names)) for value, names in groups)


def provenance_items(report):
    """``[(key, name, text)]``: the times, the collection version and a summary line per version of the report's nodes."""
    prov = report["provenance"]
    items = [("generated", "generated", _known(prov["generated"])), ("started", "started", _known(prov["started"])),
             ("duration", "duration", duration_text(prov["duration_s"])),
             ("collection_version", "collection version", _known(prov["collection_version"]))]
    return items + [(key, VERSION_NAMES[key], version_summary(prov["nodes"], key)) for key in VERSION_KEYS]


def _failures(report):
    """``[(stage name, node, record)]`` of every failed check, in report order."""
    return [(stage["name"], node["node"], rec) for stage in report["stages"] for node in stage["nodes"] for rec in node["checks"]
            if rec["status"] == "fail"]


def _failed_runs(report):
    """Names that failed: the nodes and runs of failed records and the hosts they name (the plot's runs to show)."""
    names = set(report["failed_nodes"])
    names.update(failure[1] for failure in _failures(report))
    return names


def _junit_properties(report):
    """``[(name, value)]`` of what was validated; the duration in whole seconds (``duration_s``)."""
    duration = report["provenance"]["duration_s"]
    out = []
    for key, dummy, text in provenance_items(report):
        if key == "duration":
            out.append(("duration_s", UNKNOWN if duration is None else str(duration)))
        else:
            out.append((key, text))
    return out


def render_junit(report):
    """JUnit XML: one testsuite per stage, one testcase per node and check; a failure's message is its reason.

    Each testsuite's properties say what was validated (times, collection version, versions across the nodes).
    """
    totals = report["totals"]
    root = ET.Element("testsuites", {
        "name": report["title"], "tests": str(totals["checks"]), "failures": str(totals["fail"]),
        "errors": "0", "skipped": str(totals["skip"])})
    properties = _junit_properties(report)
    for stage in report["stages"]:
        suite = ET.SubElement(root, "testsuite", {
            "name": stage["name"], "tests": str(stage["totals"]["checks"]), "failures": str(stage["totals"]["fail"]),
            "errors": "0", "skipped": str(stage["totals"]["skip"])})
        holder = ET.SubElement(suite, "properties")
        for key, text in properties:
            ET.SubElement(holder, "property", {"name": key, "value": text})
        for node in stage["nodes"]:
            for rec in node["checks"]:
                case = ET.SubElement(suite, "testcase", {"classname": "%s.%s" % (stage["name"], node["node"]), "name": rec["check"], "time": "0"})
                if rec["status"] == "fail":
                    failure = ET.SubElement(case, "failure", {"message": rec["reason"], "type": rec["check"]})
                    failure.text = _detail(rec) + ("\nto rerun:\n%s" % rec["command"] if rec.get("command") else "")
                elif rec["status"] == "skip":
                    ET.SubElement(case, "skipped", {"message": rec["reason"]})
                elif rec["reason"]:
                    out = ET.SubElement(case, "system-out")
                    out.text = _detail(rec)
    if hasattr(ET, "indent"):
        ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _md(text):
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _cell(status):
    return {"pass": "pass", "fail": "**FAIL**", "skip": "skip"}[status]


def _stage_checks(stage):
    names = []
    for node in stage["nodes"]:
        for rec in node["checks"]:
            if rec["check"] not in names:
                names.append(rec["check"])
    return names


def _summary_line(report):
    totals = report["totals"]
    if report["status"] == "fail":
        return "FAIL: %d of %d checks failed on %s" % (totals["fail"], totals["checks"], ", ".join(report["failed_nodes"]))
    if report["status"] == "pass":
        return "PASS: %d checks passed, %d skipped" % (totals["pass"], totals["skip"])
    return "SKIPPED: all %d checks were skipped" % totals["checks"]


def _largest_points(report):
    return [(run["label"], run["points"][-1][0], run["points"][-1][1]) for run in report["series"]]


def _md_code(text, indent="  "):
    """A fenced code block (a fence longer than any run of backticks in ``text``), each line indented by ``indent``."""
    fence = "`" * max([3] + [len(run) + 1 for run in re.findall("`+", text)])
    return [indent + line for line in [fence] + text.splitlines() + [fence]]


def _md_provenance(report):
    lines = ["## What was validated", ""]
    lines += ["- %s: %s" % (name, _md(text)) for dummy, name, text in provenance_items(report)]
    lines.append("")
    nodes = report["provenance"]["nodes"]
    if nodes:
        lines.append("| node | " + " | ".join(VERSION_NAMES[key] for key in VERSION_KEYS) + " |")
        lines.append("|---" * (len(VERSION_KEYS) + 1) + "|")
        lines += ["| %s | %s |" % (_md(node["node"]), " | ".join(_md(_known(node[key])) for key in VERSION_KEYS)) for node in nodes]
        lines.append("")
    return lines


def stage_curves(stage):
    """``[(node, curve_id, source)]``: the gate curve that judged each run of ``stage`` (records with ``curve``), once a run."""
    out = []
    for node in stage["nodes"]:
        seen = []
        for rec in node["checks"]:
            curve = rec.get("curve")
            if curve and (curve["id"], curve["source"]) not in seen:
                seen.append((curve["id"], curve["source"]))
                out.append((node["node"], curve["id"], curve["source"]))
    return out


def _md_curves(stage):
    curves = stage_curves(stage)
    if not curves:
        return []
    lines = ["### Gate curves", "", "| run | curve | source |", "|---|---|---|"]
    lines += ["| %s | `%s` | %s |" % (_md(node), _md(curve_id), _md(source)) for node, curve_id, source in curves]
    return lines + [""]


def render_markdown(report):
    """A Markdown summary: overall status, what was validated, one node-by-check table per stage, failures (with the
    command that reruns each, where known) and skips with reasons."""
    lines = ["# %s" % _md(report["title"]), "", "**%s**" % _md(_summary_line(report)), ""]
    lines += _md_provenance(report)
    for stage in report["stages"]:
        names = _stage_checks(stage)
        lines += ["## Stage `%s`: %s" % (_md(stage["name"]), stage["status"].upper()), ""]
        lines.append("| node | " + " | ".join(_md(name) for name in names) + " |")
        lines.append("|---" * (len(names) + 1) + "|")
        for node in stage["nodes"]:
            status = dict((rec["check"], rec["status"]) for rec in node["checks"])
            cells = [_cell(status[name]) if name in status else "" for name in names]
            lines.append("| %s | %s |" % (_md(node["node"]), " | ".join(cells)))
        lines.append("")
        lines += _md_curves(stage)
        for wanted, heading in (("fail", "Failures"), ("skip", "Skipped")):
            items = [(node["node"], rec) for node in stage["nodes"] for rec in node["checks"] if rec["status"] == wanted]
            if items:
                lines += ["### %s" % heading, ""]
                for name, rec in items:
                    lines.append("- `%s` %s: %s" % (_md(name), _md(rec["check"]), _md(rec["reason"])))
                    if rec.get("command"):
                        lines += _md_code(rec["command"])
                lines.append("")
    if report["series"]:
        lines += ["## busbw at the largest message size", "", "| run | size (bytes) | busbw (GB/s) |", "|---|---|---|"]
        lines += ["| %s | %d | %.2f |" % (_md(label), size, busbw) for label, size, busbw in _largest_points(report)]
        lines.append("")
    return "\n".join(lines)


def _size_tick(exponent):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if exponent >= shift:
            return "%d%s" % (2 ** (exponent - shift), unit)
    return "%dB" % (2 ** exponent)


def _nice_step(span):
    raw = span / 5.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _fmt(value):
    return ("%.1f" % value).rstrip("0").rstrip(".")


def _legend_runs(runs, highlight):
    """Indexes of the runs drawn in colour and named in the legend, in legend order: every run up to ``LEGEND_MAX``;
    beyond, the runs named in ``highlight`` (the failing ones), then the slowest at their largest size."""
    if len(runs) <= LEGEND_MAX:
        return list(range(len(runs)))
    highlight = set(highlight or ())
    failing = [index for index, run in enumerate(runs) if run["label"] in highlight]
    others = sorted((index for index, run in enumerate(runs) if run["label"] not in highlight), key=lambda index: (runs[index]["points"][-1][1], index))
    return (failing + others)[:LEGEND_MAX]


def _gates(runs):
    """``[(points, [labels])]``: each distinct gate once, with the runs that carry it, in the order first met."""
    gates = []
    for run in runs:
        if run.get("gate"):
            for points, labels in gates:
                if points == run["gate"]:
                    labels.append(run["label"])
                    break
            else:
                gates.append((run["gate"], [run["label"]]))
    return gates


def _svg_gates(out, gates, px, py, right_edge):
    """Append the dashed gate lines, each labelled, to the SVG lines out."""
    for points, labels in gates:
        coords = [(px(size), py(gbps)) for size, gbps in points]
        if coords[-1][0] < right_edge - 0.05:
            coords.append((right_edge, coords[-1][1]))  # past its last point (a flat gate's only one) its figure holds
        if len(gates) == 1:
            name = "gate"
        else:
            name = "gate %s" % (labels[0] if len(labels) == 1 else "(%d runs)" % len(labels))
        owners = ", ".join(labels) if len(labels) <= NAMES_MAX else "%d runs" % len(labels)
        out.append('<polyline class="gate" fill="none" stroke="#000" stroke-width="1.5" stroke-dasharray="3 3" points="%s">'
                   '<title>gate of %s</title></polyline>' % (" ".join("%.1f,%.1f" % point for point in coords), escape(owners)))
        out.append('<text class="gate" x="%.1f" y="%.1f" text-anchor="end">%s</text>' % (coords[-1][0] - 2, coords[-1][1] - 4, escape(name)))


def _svg_grid(out, px, py, scale, box):
    """Append the grid lines and tick labels of both axes to the SVG lines out."""
    x_min, x_max, y_max, step = scale
    left, top, plot_w, plot_h = box
    tick_every = max(1, int(math.ceil((x_max - x_min) / 12.0)))
    for exponent in range(int(x_min), int(x_max) + 1, tick_every):
        x = px(2 ** exponent)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, top, x, top + plot_h))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, top + plot_h + 14, _size_tick(exponent)))
    value = 0.0
    while value <= y_max + 1e-9:
        y = py(value)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, y, left + plot_w, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 4, y + 4, _fmt(value)))
        value += step


def render_svg(series, threshold_gbps=None, width=640, height=360, highlight=None):
    """An inline SVG plot of busbw against message size (log2 x axis): one polyline per run, each distinct gate (the busbw
    a run had to reach, ``gate`` of a series: linear in log2(size) between its points, its last figure held to the right
    edge) a dashed line labelled "gate" over them, and ``threshold_gbps`` a dashed line across.

    Up to ``LEGEND_MAX`` runs each get a colour and a legend entry; beyond, only the runs named in ``highlight`` (the
    failing ones) and the slowest do, the others are drawn thin and grey and counted in the legend. The runs named in
    ``highlight`` are drawn thicker.
    """
    _check_threshold(threshold_gbps)
    runs = _clean_series(series)
    if not runs:
        raise ValueError("render_svg needs at least one series with points")
    gates = _gates(runs)
    left, right, top, bottom = 64, 150, 20, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    all_points = [point for run in runs for point in run["points"]] + [point for points, dummy in gates for point in points]
    xs = [math.log(point[0], 2) for point in all_points]
    x_min, x_max = math.floor(min(xs)), math.ceil(max(xs))
    if x_max == x_min:
        x_min, x_max = x_min - 1, x_max + 1
    y_top = max([point[1] for point in all_points] + [threshold_gbps or 0])
    step = _nice_step(y_top if y_top > 0 else 1.0)
    y_max = step * math.ceil((y_top if y_top > 0 else 1.0) * 1.05 / step)

    def px(size):
        return left + (math.log(size, 2) - x_min) / (x_max - x_min) * plot_w

    def py(value):
        return top + plot_h - value / y_max * plot_h

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" font-family="sans-serif" font-size="11">' % (
        width, height, width, height)]
    out.append("<title>busbw vs message size</title>")
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>' % (left, top, plot_w, plot_h))
    _svg_grid(out, px, py, (x_min, x_max, y_max, step), (left, top, plot_w, plot_h))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">message size (bytes, log2 scale)</text>' % (left + plot_w / 2.0, height - 8))
    out.append('<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">busbw (GB/s)</text>' % (
        top + plot_h / 2.0, top + plot_h / 2.0))
    if threshold_gbps:
        y = py(threshold_gbps)
        out.append('<line class="threshold" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#000" stroke-dasharray="6 4"/>' % (
            left, y, left + plot_w, y))
        out.append('<text x="%d" y="%.1f">threshold %s GB/s</text>' % (left + 4, y - 4, _fmt(threshold_gbps)))
    legend = _legend_runs(runs, highlight)
    shown = set(legend)
    for index, run in enumerate(runs):
        if index not in shown:
            points = " ".join("%.1f,%.1f" % (px(size), py(busbw)) for size, busbw in run["points"])
            out.append('<polyline class="run other" fill="none" stroke="#c8c8c8" stroke-width="1" points="%s"><title>%s</title></polyline>' % (
                points, escape(run["label"])))
    legend_y = top + 14
    failed = set(highlight or ())
    for position, index in enumerate(legend):
        run = runs[index]
        color = _PALETTE[position % len(_PALETTE)]
        # a failing run is drawn thicker, in the plot and in the legend
        kind, stroke = ("run failed", 3) if run["label"] in failed else ("run", 2)
        points = " ".join("%.1f,%.1f" % (px(size), py(busbw)) for size, busbw in run["points"])
        out.append('<polyline class="%s" fill="none" stroke="%s" stroke-width="%d" points="%s"><title>%s</title></polyline>' % (
            kind, color, stroke, points, escape(run["label"])))
        for size, busbw in run["points"]:
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (px(size), py(busbw), color))
        legend_y = top + 14 + 16 * position
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%d"/>' % (
            left + plot_w + 6, legend_y - 4, left + plot_w + 22, legend_y - 4, color, stroke))
        out.append('<text x="%d" y="%d">%s</text>' % (left + plot_w + 26, legend_y, escape(run["label"])))
    if len(runs) > len(legend):
        legend_y += 16
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#c8c8c8" stroke-width="1"/>' % (
            left + plot_w + 6, legend_y - 4, left + plot_w + 22, legend_y - 4))
        out.append('<text class="more" x="%d" y="%d">%d more runs</text>' % (left + plot_w + 26, legend_y, len(runs) - len(legend)))
    _svg_gates(out, gates, px, py, left + plot_w)
    out.append("</svg>")
    return "\n".join(out)


_STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}"
          "td.pass{background:#e6f4ea}td.fail{background:#fce8e6;font-weight:bold}td.skip{color:#777}"
          "th{text-align:left}p.summary.fail{color:#a50e0e}td.differs{background:#fff4ce}"
          "pre{background:#f6f8fa;border:1px solid #ddd;padding:4px 8px;white-space:pre-wrap;word-break:break-all;margin:4px 0 8px}"
          "details>summary{cursor:pointer;margin:4px 0}svg{width:100%;max-width:960px;height:auto}")


def _failing_first(nodes):
    return [node for node in nodes if node["status"] == "fail"] + [node for node in nodes if node["status"] != "fail"]


def _open(count):
    return ' open="open"' if count <= OPEN_MAX else ""


def _html_provenance(report):
    esc = escape
    body = ["<h2>What was validated</h2>", '<table class="provenance"><tbody>']
    body += ["<tr><th>%s</th><td>%s</td></tr>" % (esc(name), esc(text)) for dummy, name, text in provenance_items(report)]
    body.append("</tbody></table>")
    nodes = report["provenance"]["nodes"]
    if nodes:
        common = dict((key, _version_groups(nodes, key)[0][0]) for key in VERSION_KEYS)
        body.append("<details%s><summary>Versions per node (%d nodes; a version other than most nodes' is marked)</summary>" % (
            _open(len(nodes)), len(nodes)))
        body.append('<table class="versions"><thead><tr><th>node</th>%s</tr></thead><tbody>' % "".join(
            "<th>%s</th>" % esc(VERSION_NAMES[key]) for key in VERSION_KEYS))
        for node in nodes:
            cells = ["<td%s>%s</td>" % (' class="differs"' if _known(node[key]) != common[key] else "", esc(_known(node[key]))) for key in VERSION_KEYS]
            body.append("<tr><th>%s</th>%s</tr>" % (esc(node["node"]), "".join(cells)))
        body.append("</tbody></table></details>")
    return body


def _html_failures(report):
    esc = escape
    failures = _failures(report)
    if not failures:
        return []
    body = ['<h2>Failures</h2><ul class="failures">']
    for stage, node, rec in failures:
        command = '<div class="rerun">to rerun:</div><pre>%s</pre>' % esc(rec["command"]) if rec.get("command") else ""
        body.append("<li><code>%s</code> %s/%s: %s%s</li>" % (esc(node), esc(stage), esc(rec["check"]), esc(rec["reason"]), command))
    body.append("</ul>")
    return body


def _html_stages(report):
    esc = escape
    body = ["<h2>Stages</h2>", '<table class="stages"><thead><tr><th>stage</th><th>status</th><th>nodes</th><th>failed nodes</th>'
            "<th>checks</th><th>pass</th><th>fail</th><th>skip</th></tr></thead><tbody>"]
    for number, stage in enumerate(report["stages"]):
        totals = stage["totals"]
        failed = sum(1 for node in stage["nodes"] if node["status"] == "fail")
        body.append('<tr><th><a href="#stage-%d">%s</a></th><td class="%s">%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>' % (
            number, esc(stage["name"]), stage["status"], stage["status"].upper(), len(stage["nodes"]), failed, totals["checks"], totals["pass"],
            totals["fail"], totals["skip"]))
    body.append("</tbody></table>")
    for number, stage in enumerate(report["stages"]):
        names = _stage_checks(stage)
        counts = dict((status, sum(1 for node in stage["nodes"] if node["status"] == status)) for status in STATUSES)
        body.append('<h2 id="stage-%d">Stage <code>%s</code>: %s</h2>' % (number, esc(stage["name"]), stage["status"].upper()))
        body.append("<details%s><summary>%d nodes: %d failed, %d passed, %d skipped (failed nodes first)</summary>" % (
            _open(len(stage["nodes"])), len(stage["nodes"]), counts["fail"], counts["pass"], counts["skip"]))
        body.append("<table><thead><tr><th>node</th>%s</tr></thead><tbody>" % "".join("<th>%s</th>" % esc(n) for n in names))
        for node in _failing_first(stage["nodes"]):
            by_name = dict((rec["check"], rec) for rec in node["checks"])
            cells = []
            for name in names:
                rec = by_name.get(name)
                if rec is None:
                    cells.append("<td></td>")
                else:
                    cells.append('<td class="%s" title="%s">%s</td>' % (rec["status"], esc(rec["reason"]), rec["status"].upper()))
            body.append("<tr><th>%s</th>%s</tr>" % (esc(node["node"]), "".join(cells)))
        body.append("</tbody></table></details>")
        curves = stage_curves(stage)
        if curves:
            body.append("<h3>Gate curves</h3><table><thead><tr><th>run</th><th>curve</th><th>source</th></tr></thead><tbody>")
            body += ["<tr><th>%s</th><td><code>%s</code></td><td>%s</td></tr>" % (esc(node), esc(curve_id), esc(source))
                     for node, curve_id, source in curves]
            body.append("</tbody></table>")
    return body


def render_html(report):
    """A standalone HTML page (no script, no external resource): the summary, what was validated, the failures with the
    command that reruns each, the busbw plot, a table of the stages, then each stage's node-by-check table (failed nodes
    first; folded above ``OPEN_MAX`` nodes)."""
    esc = escape
    body = ["<h1>%s</h1>" % esc(report["title"]), '<p class="summary %s"><strong>%s</strong></p>' % (report["status"], esc(_summary_line(report)))]
    body += _html_provenance(report)
    body += _html_failures(report)
    if report["series"]:
        body.append("<h2>busbw vs message size</h2>")
        body.append(render_svg(report["series"], report.get("threshold_gbps"), highlight=_failed_runs(report)))
    body += _html_stages(report)
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>%s</title><style>%s</style></head><body>\n%s\n</body></html>\n' % (esc(report["title"]), _STYLE, "\n".join(body)))


def check_report_input(params):
    """``validation_report``'s options beyond the argument spec (``dest`` is checked by ``_validate_input.check_writable_dest``).

    ``expected_nodes`` and ``drain_nodes`` hold non-empty names without spaces; ``threshold_gbps`` is above 0;
    ``started`` is unset or a time such as ``2025-01-31T08:00:00Z``; each of ``versions`` is a dict with a ``node``
    and only the keys of ``VERSION_KEYS``. Raises ``InputError`` naming the option, the value and what is valid.
    """
    for key in ("expected_nodes", "drain_nodes"):
        for index, node in enumerate(params.get(key) or []):
            require_word("%s[%d]" % (key, index), node, "a node name (no spaces)")
    require_number("threshold_gbps", params.get("threshold_gbps"), above=0, allow_none=True)
    started = params.get("started")
    if started not in (None, "") and parse_time(started) is None:
        raise InputError("started is %s, expected a time such as 2025-01-31T08:00:00Z (UTC ISO 8601)" % show(started))
    allowed = ("node",) + VERSION_KEYS
    for index, entry in enumerate(params.get("versions") or []):
        name = "versions[%d]" % index
        require_dict(name, entry, allowed=allowed, required=("node",))
        require_word("%s.node" % name, entry["node"], "a node name (no spaces)")
        for key in VERSION_KEYS:
            value = entry.get(key)
            if value is not None and not isinstance(value, str) and not _is_number(value):
                raise InputError("%s.%s is %s, expected a version (a string) or null" % (name, key, show(value)))
