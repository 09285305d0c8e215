# -*- coding: utf-8 -*-
# Copyright: (c) 2025, gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render validation results as JSON, JUnit XML, Markdown and HTML (pure logic, standard library only).

Input is a list of check records, one per (stage, node, check)::

    {"stage": "nccl", "node": "node005", "check": "busbw", "status": "fail",
     "reason": "mean busbw 142.7 GB/s ...", "value": 142.7, "threshold": 296.0,
     "hosts": ["node005", "node007"]}

``hosts`` is optional: a record about a multi-node run names the run in ``node`` and lists its
hosts, which are then the nodes named when it fails. ``series`` (optional) are busbw-vs-size
runs for the plot: ``[{"label": "node005", "points": [[size_bytes, busbw_gbps], ...]}]``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import xml.etree.ElementTree as ET
from html import escape

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import require_list, require_number, require_str, require_word

STATUSES = ("pass", "fail", "skip")
REPORT_FILES = ("report.html", "report.json", "report.junit.xml", "report.md")
RECORD_KEYS = ("stage", "node", "check", "status", "reason", "value", "threshold", "hosts")
_REQUIRED = ("stage", "node", "check", "status")
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


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
    reason = record.get("reason", "")
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
    return clean


def _clean_series(series):
    out = []
    for index, run in enumerate(series or []):
        if not isinstance(run, dict) or not isinstance(run.get("label"), str) or not run["label"]:
            raise ValueError("series %d is %r, expected {'label': str, 'points': [[size, busbw], ...]}" % (index, run))
        points = []
        for point in run.get("points") or []:
            if not isinstance(point, (list, tuple)) or len(point) != 2:
                raise ValueError("series %r: point %r is not a [size_bytes, busbw_gbps] pair" % (run["label"], point))
            size, busbw = point
            if not _is_number(size) or size <= 0 or not _is_number(busbw) or busbw < 0:
                raise ValueError("series %r: point %r needs a size above 0 and a busbw of 0 or more" % (run["label"], list(point)))
            points.append([size, busbw])
        if not points:
            raise ValueError("series %r has no points" % run["label"])
        out.append({"label": run["label"], "points": sorted(points)})
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


def build_report(results, series=None, title="Cluster validation", threshold_gbps=None):
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


def render_junit(report):
    """JUnit XML: one testsuite per stage, one testcase per node and check; a failure's message is its reason."""
    totals = report["totals"]
    root = ET.Element("testsuites", {
        "name": report["title"], "tests": str(totals["checks"]), "failures": str(totals["fail"]),
        "errors": "0", "skipped": str(totals["skip"])})
    for stage in report["stages"]:
        suite = ET.SubElement(root, "testsuite", {
            "name": stage["name"], "tests": str(stage["totals"]["checks"]), "failures": str(stage["totals"]["fail"]),
            "errors": "0", "skipped": str(stage["totals"]["skip"])})
        for node in stage["nodes"]:
            for rec in node["checks"]:
                case = ET.SubElement(suite, "testcase", {"classname": "%s.%s" % (stage["name"], node["node"]), "name": rec["check"], "time": "0"})
                if rec["status"] == "fail":
                    failure = ET.SubElement(case, "failure", {"message": rec["reason"], "type": rec["check"]})
                    failure.text = _detail(rec)
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


def render_markdown(report):
    """A Markdown summary: overall status, one node-by-check table per stage, failures and skips with reasons."""
    lines = ["# %s" % _md(report["title"]), "", "**%s**" % _md(_summary_line(report)), ""]
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
        for wanted, heading in (("fail", "Failures"), ("skip", "Skipped")):
            items = [(node["node"], rec) for node in stage["nodes"] for rec in node["checks"] if rec["status"] == wanted]
            if items:
                lines += ["### %s" % heading, ""]
                lines += ["- `%s` %s: %s" % (_md(name), _md(rec["check"]), _md(rec["reason"])) for name, rec in items]
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


def render_svg(series, threshold_gbps=None, width=640, height=360):
    """An inline SVG plot of busbw against message size (log2 x axis): one polyline per run."""
    _check_threshold(threshold_gbps)
    runs = _clean_series(series)
    if not runs:
        raise ValueError("render_svg needs at least one series with points")
    left, right, top, bottom = 64, 150, 20, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [math.log(point[0], 2) for run in runs for point in run["points"]]
    x_min, x_max = math.floor(min(xs)), math.ceil(max(xs))
    if x_max == x_min:
        x_min, x_max = x_min - 1, x_max + 1
    y_top = max([point[1] for run in runs for point in run["points"]] + [threshold_gbps or 0])
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
    out.append('<text x="%.1f" y="%d" text-anchor="middle">message size (bytes, log2 scale)</text>' % (left + plot_w / 2.0, height - 8))
    out.append('<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">busbw (GB/s)</text>' % (
        top + plot_h / 2.0, top + plot_h / 2.0))
    if threshold_gbps:
        y = py(threshold_gbps)
        out.append('<line class="threshold" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#000" stroke-dasharray="6 4"/>' % (
            left, y, left + plot_w, y))
        out.append('<text x="%d" y="%.1f">threshold %s GB/s</text>' % (left + plot_w + 6, y + 4, _fmt(threshold_gbps)))
    for index, run in enumerate(runs):
        color = _PALETTE[index % len(_PALETTE)]
        points = " ".join("%.1f,%.1f" % (px(size), py(busbw)) for size, busbw in run["points"])
        out.append('<polyline class="run" fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>' % (
            color, points, escape(run["label"])))
        for size, busbw in run["points"]:
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (px(size), py(busbw), color))
        legend_y = top + 14 + 16 * index
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (
            left + plot_w + 6, legend_y - 4, left + plot_w + 22, legend_y - 4, color))
        out.append('<text x="%d" y="%d">%s</text>' % (left + plot_w + 26, legend_y, escape(run["label"])))
    out.append("</svg>")
    return "\n".join(out)


def render_html(report):
    """A standalone HTML summary: the Markdown content as tables, plus the busbw plot when there are series."""
    esc = escape
    body = ["<h1>%s</h1>" % esc(report["title"]), '<p class="summary %s"><strong>%s</strong></p>' % (report["status"], esc(_summary_line(report)))]
    for stage in report["stages"]:
        names = _stage_checks(stage)
        body.append("<h2>Stage <code>%s</code>: %s</h2>" % (esc(stage["name"]), stage["status"].upper()))
        body.append("<table><thead><tr><th>node</th>%s</tr></thead><tbody>" % "".join("<th>%s</th>" % esc(n) for n in names))
        for node in stage["nodes"]:
            by_name = dict((rec["check"], rec) for rec in node["checks"])
            cells = []
            for name in names:
                rec = by_name.get(name)
                if rec is None:
                    cells.append("<td></td>")
                else:
                    cells.append('<td class="%s" title="%s">%s</td>' % (rec["status"], esc(rec["reason"]), rec["status"].upper()))
            body.append("<tr><th>%s</th>%s</tr>" % (esc(node["node"]), "".join(cells)))
        body.append("</tbody></table>")
        failures = [(node["node"], rec) for node in stage["nodes"] for rec in node["checks"] if rec["status"] == "fail"]
        if failures:
            body.append("<h3>Failures</h3><ul>")
            body += ["<li><code>%s</code> %s: %s</li>" % (esc(name), esc(rec["check"]), esc(rec["reason"])) for name, rec in failures]
            body.append("</ul>")
    if report["series"]:
        body.append("<h2>busbw vs message size</h2>")
        body.append(render_svg(report["series"], report.get("threshold_gbps")))
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}"
             "td.pass{background:#e6f4ea}td.fail{background:#fce8e6;font-weight:bold}td.skip{color:#777}")
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>%s</title><style>%s</style></head><body>\n%s\n</body></html>\n' % (
        esc(report["title"]), style, "\n".join(body)))


def check_report_input(params):
    """``validation_report``'s options beyond the argument spec (``dest`` is checked by ``_validate_input.check_writable_dest``).

    ``expected_nodes`` and ``drain_nodes`` hold non-empty names without spaces; ``threshold_gbps`` is above 0;
    ``title`` is a string. Raises ``InputError`` naming the option, the value and what is valid.
    """
    for key in ("expected_nodes", "drain_nodes"):
        require_list(key, params.get(key) or [], element=lambda item, name: require_word(item, name, "a node name (no spaces)"))
    require_number("threshold_gbps", params.get("threshold_gbps"), above=0, allow_none=True)
    require_str("title", params.get("title"), allow_empty=True)
