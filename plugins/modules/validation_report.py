#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: validation_report
short_description: Write the cluster validation report (JSON, JUnit XML, Markdown, HTML)
version_added: 0.1.0
description:
  - Groups check records by stage and node and writes C(report.json), C(report.junit.xml) (for CI and AWX),
    C(report.md) and C(report.html) (with a busbw-vs-size plot when there are series) into O(dest).
  - Returns the overall status, the nodes that failed, one sentence naming them for the playbook's failure, and a
    drain reason per failed node that names the failed check.
  - The report says what was validated - when it was written (UTC), when the validation began and its duration,
    the collection version, and per node the Slurm, NVIDIA driver, CUDA (driver), NCCL and nccl-tests versions
    (O(versions), and the C(versions) of the NCCL runs' records); what nobody gave is V(unknown). A failed record's
    C(command) (the command line that reruns it) is shown under the failure.
  - A report that differs from the one in O(dest) only in its times is written but not reported as a change, so a
    second run over an unchanged cluster changes nothing.
  - The module itself does not fail when checks fail; the playbook decides.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  records:
    description:
      - Check records C({stage, node, check, status, reason[, value, threshold, hosts, command, versions, curve]}).
      - C(curve) (C({id, source}), on an NCCL run's records) is the gate curve that judged the run; the reports list it per stage.
      - C(command), the shell command line that reruns the check's run, is shown under a failure.
      - C(versions) (C({nccl, nccl_tests}), from an NCCL run's output) go to the versions of the run's C(hosts) (else its C(node)).
      - C(held) (V(admin) or V(loop)) marks the C(node_state) record of a node an admin drained or set down, or the closed loop
        drained; RV(drain_reasons) leaves such a node out, so that the admin's (or the loop's) reason stays.
    type: list
    elements: dict
    required: true
  series:
    description:
      - "busbw-vs-size runs C([{label, points: [[size_bytes, busbw_gbps], ...]}]) for the plot."
      - "A run's optional C(gate) (C([[size_bytes, gbps], ...]), the busbw it had to reach) is drawn as a dashed line labelled gate."
    type: list
    elements: dict
    default: []
  started:
    description:
      - When the validation began, as UTC ISO 8601 (for example V(2025-01-31T08:00:00Z)); the report gives the duration from then
        until it is written. Unset, the duration is V(unknown).
    type: str
  collection_version:
    description: The version of the collection that validated (shown in the report; unset is V(unknown)).
    type: str
  versions:
    description:
      - Versions per node, C([{node, slurm, driver, cuda, nccl, nccl_tests}]) - every key but C(node) optional; a version
        missing here and in the NCCL records is reported as V(unknown).
    type: list
    elements: dict
    default: []
  warnings:
    description: Findings that do not fail the validation (for example settings that slow collectives); listed in the report.
    type: list
    elements: str
    default: []
  expected_nodes:
    description: Nodes (non-empty names) that must have records of stage V(node); a node without any gets a failed C(reachable) check.
    type: list
    elements: str
    default: []
  require:
    description:
      - What must have been tested (C(validate_require)) - V(node), V(slurm) (its C(srun) and C(gres_job) checks), V(mpi), V(nccl),
        V(container) (the C(container_job) check of stage C(slurm)), V(deep).
      - A required stage that did not run - every record of it C(skip), or none at all - gets a failed check C(required) (C(container_required)
        for the container job) of node C(cluster) naming the stage, why it could not run (its skip reasons and their nodes) and the
        variable that provides it; so the report is V(fail) and RV(message) says so. No node is drained for it.
    type: list
    elements: str
    choices: [node, slurm, mpi, nccl, container, deep]
    default: []
  drain_nodes:
    description: Nodes a drain reason may be returned for (the Slurm compute nodes).
    type: list
    elements: str
    default: []
  dest:
    description:
      - Directory to write the files into (created when missing). Checked before anything is written - a path under C(/proc) or
        C(/sys), a path whose parent is a file, an existing file, or a location this user cannot write fails the task naming it.
    type: path
    required: true
  title:
    description: Report title.
    type: str
    default: Cluster validation
  threshold_gbps:
    description: busbw threshold drawn in the plot (a number above 0).
    type: float
'''

EXAMPLES = r'''
- name: Write the report on the Ansible controller
  gpucluster.bringup.validation_report:
    records: "{{ all_records }}"
    series: "{{ nccl.series }}"
    dest: "{{ playbook_dir }}/validation-report"
  delegate_to: localhost
  register: report

- name: Fail when a gate failed
  ansible.builtin.fail:
    msg: "{{ report.message }}"
  when: report.status == 'fail'
'''

RETURN = r'''
status:
  description: V(pass), V(fail) or V(skip) (every check skipped).
  returned: always
  type: str
failed_nodes:
  description: Nodes named by a failed check, sorted.
  returned: always
  type: list
  elements: str
message:
  description: One sentence naming the failed nodes and checks, then the reason of each required stage that could not run (O(require));
    empty when nothing failed.
  returned: always
  type: str
summary:
  description: The Markdown summary.
  returned: always
  type: str
totals:
  description: Counts of checks, pass, fail and skip.
  returned: always
  type: dict
files:
  description: Paths of the written files.
  returned: always
  type: list
  elements: str
drain_reasons:
  description: "Per failed node of O(drain_nodes), C(validate: <stage>/<check>: <reason>) of its first single-node failure."
  returned: always
  type: dict
'''

import json
import os
import tempfile
import time
from html import escape

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, check_writable_dest
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import drain_reasons, missing_node_records
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_report import (
    REPORT_FILES, build_report, check_report_input, failure_message, parse_time, render_html, render_json, render_junit, render_markdown)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_require import (
    require_records, required_message)


TIMES = ('generated', 'started')


def utc_now():
    """The time now, UTC, as the report gives it (``2025-01-31T09:02:03Z``)."""
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def render_all(records, series, warnings, title, threshold_gbps, provenance=None):
    """``(report, {file name: text})``; raises ValueError for a malformed record or series."""
    report = build_report(records, series=series, title=title, threshold_gbps=threshold_gbps, provenance=provenance)
    report['warnings'] = list(warnings)
    markdown = render_markdown(report)
    html = render_html(report)
    if warnings:
        markdown += '\n## Warnings\n\n' + ''.join('- %s\n' % w.replace('|', '\\|') for w in warnings)
        html = html.replace('\n</body>', '\n<h2>Warnings</h2><ul>%s</ul>\n</body>' % ''.join('<li>%s</li>' % escape(w) for w in warnings))
    return report, {'report.json': render_json(report), 'report.junit.xml': render_junit(report), 'report.md': markdown, 'report.html': html}


def _read(path):
    """The text of the file at ``path``, or None (absent, unreadable or not text)."""
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError, ValueError):
        return None


def previous_times(dest):
    """The times of the report already in ``dest`` (its report.json's provenance), or None."""
    try:
        doc = json.loads(_read(os.path.join(dest, 'report.json')) or 'null')
    except ValueError:
        return None
    provenance = doc.get('provenance') if isinstance(doc, dict) else None
    if not isinstance(provenance, dict):
        return None
    return dict((key, provenance[key] if parse_time(provenance.get(key)) is not None else None) for key in TIMES)


def _write(module, path, text):
    """Replace the file at ``path`` with ``text`` (atomically; not in check mode); whether its text differed."""
    if _read(path) == text:
        return False
    if module.check_mode:
        return True
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.validation-')
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write(text)
    except (IOError, OSError):
        os.unlink(tmp)
        raise
    module.atomic_move(tmp, path)
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            records=dict(type='list', elements='dict', required=True),
            series=dict(type='list', elements='dict', default=[]),
            warnings=dict(type='list', elements='str', default=[]),
            expected_nodes=dict(type='list', elements='str', default=[]),
            drain_nodes=dict(type='list', elements='str', default=[]),
            require=dict(type='list', elements='str', choices=['node', 'slurm', 'mpi', 'nccl', 'container', 'deep'], default=[]),
            dest=dict(type='path', required=True),
            title=dict(type='str', default='Cluster validation'),
            threshold_gbps=dict(type='float'),
            started=dict(type='str'),
            collection_version=dict(type='str'),
            versions=dict(type='list', elements='dict', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        check_report_input(params)
        dest = check_writable_dest('dest', params['dest'], directory=True)
        for name in REPORT_FILES:
            path = os.path.join(dest, name)
            if os.path.lexists(path) and not os.path.isfile(path):
                raise InputError('dest is %r, but %s there is not a regular file, so the report cannot be written; '
                                 'expected a directory whose report files are regular files (or absent)' % (params['dest'], path))
    except InputError as exc:
        module.fail_json(msg=str(exc))
    records = list(params['records']) + missing_node_records(params['records'], params['expected_nodes'])
    records += require_records(records, params['require'])
    provenance = {'generated': utc_now(), 'started': params['started'] or None,
                  'collection_version': params['collection_version'], 'nodes': params['versions']}
    args = (records, params['series'], params['warnings'], params['title'], params['threshold_gbps'])
    try:
        report, files = render_all(*args, provenance=provenance)
        before = previous_times(dest)
        # the files as they would be with the times of the report already there: equal, only the times changed
        same = render_all(*args, provenance=dict(provenance, **before))[1] if before else {}
    except (ValueError, TypeError) as exc:
        module.fail_json(msg='cannot build the validation report: %s' % exc)
    # everything is checked: from here on files are written
    changed = False
    paths = []
    try:
        if not os.path.isdir(dest) and not module.check_mode:
            os.makedirs(dest)
        for name in sorted(files):
            path = os.path.join(dest, name)
            paths.append(path)
            if os.path.isdir(dest) or not module.check_mode:
                text = _read(path)
                if _write(module, path, files[name]):
                    changed = changed or text is None or text != same.get(name)
            else:
                changed = True
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot write the validation report into dest %s: %s' % (dest, exc))
    message = '; '.join([failure_message(report)] + required_message(records)) if report['status'] == 'fail' else ''
    module.exit_json(changed=changed, status=report['status'], failed_nodes=report['failed_nodes'], message=message,
                     summary=files['report.md'], totals=report['totals'], files=paths,
                     drain_reasons=drain_reasons(records, params['drain_nodes']))


if __name__ == '__main__':
    main()
