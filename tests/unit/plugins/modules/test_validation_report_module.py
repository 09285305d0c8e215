# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validation_report module writes the four report files and names the failed nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.bringup.plugins.modules import validation_report

RECORDS = [
    {'stage': 'node', 'node': 'gpu-01', 'check': 'gres_conf', 'status': 'pass', 'reason': 'equal'},
    {'stage': 'node', 'node': 'gpu-02', 'check': 'gres_conf', 'status': 'fail', 'reason': 'gpu:a100: 7 in /etc/slurm/gres.conf, 8 computed from NVML'},
    {'stage': 'nccl', 'node': 'cluster', 'check': 'all_reduce', 'status': 'skip', 'reason': 'no CUDA/nccl-tests on this cluster'},
]


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            validation_report.main()
    return json.loads(capsys.readouterr().out)


def test_writes_files_and_names_failed_nodes(capsys, tmp_path):
    dest = str(tmp_path / 'report')
    result = run_module(capsys, records=RECORDS, dest=dest, expected_nodes=['gpu-01', 'gpu-02', 'gpu-03'],
                        drain_nodes=['gpu-01', 'gpu-02', 'gpu-03'], warnings=['the job environment sets OMPI_MCA_pml=^ucx'],
                        series=[{'label': 'gpu-01', 'points': [[8, 0.1], [1073741824, 400.0]]}], threshold_gbps=296.0)
    assert result['status'] == 'fail' and result['changed'] is True
    assert result['failed_nodes'] == ['gpu-02', 'gpu-03']
    assert result['message'] == 'validation failed on gpu-02, gpu-03: 2 failed check(s) (node/gres_conf, node/reachable)'
    assert result['drain_reasons'] == {
        'gpu-02': 'validate: node/gres_conf: gpu:a100: 7 in /etc/slurm/gres.conf, 8 computed from NVML',
        'gpu-03': 'validate: node/reachable: no node check results from gpu-03: the host was unreachable or its tasks failed'}
    assert sorted(os.listdir(dest)) == ['report.html', 'report.json', 'report.junit.xml', 'report.md']
    with open(os.path.join(dest, 'report.json')) as handle:
        report = json.load(handle)
    assert report['warnings'] == ['the job environment sets OMPI_MCA_pml=^ucx']
    suites = ET.parse(os.path.join(dest, 'report.junit.xml')).getroot()
    assert suites.get('failures') == '2' and suites.get('skipped') == '1'
    with open(os.path.join(dest, 'report.md')) as handle:
        markdown = handle.read()
    assert '## Warnings' in markdown and 'SKIPPED' not in markdown.split('## Stage `nccl`')[0]
    assert '- `cluster` all_reduce: no CUDA/nccl-tests on this cluster' in markdown
    with open(os.path.join(dest, 'report.html')) as handle:
        html = handle.read()
    assert '<svg' in html and '<h2>Warnings</h2>' in html
    again = run_module(capsys, records=RECORDS, dest=dest, expected_nodes=['gpu-01', 'gpu-02', 'gpu-03'],
                       drain_nodes=['gpu-01', 'gpu-02', 'gpu-03'], warnings=['the job environment sets OMPI_MCA_pml=^ucx'],
                       series=[{'label': 'gpu-01', 'points': [[8, 0.1], [1073741824, 400.0]]}], threshold_gbps=296.0)
    assert again['changed'] is False


def test_all_pass(capsys, tmp_path):
    result = run_module(capsys, records=RECORDS[:1], dest=str(tmp_path))
    assert (result['status'], result['message'], result['failed_nodes']) == ('pass', '', [])
    assert result['summary'].startswith('# Cluster validation\n\n**PASS: 1 checks passed, 0 skipped**')


def test_bad_record_fails_with_its_index(capsys, tmp_path):
    result = run_module(capsys, records=[{'stage': 'node', 'node': 'gpu-01', 'check': 'x', 'status': 'broken'}], dest=str(tmp_path))
    assert result['failed'] is True
    assert result['msg'] == "cannot build the validation report: result 0: status 'broken' is not one of pass, fail, skip"


def test_a_missing_dest_is_created_with_its_parents(tmp_path):
    from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import run_module as run
    dest = tmp_path / 'a' / 'b' / 'report'
    outcome = run(validation_report.main, {'records': [{'stage': 'node', 'node': 'n', 'check': 'c', 'status': 'pass'}], 'dest': str(dest)})
    assert outcome.failed is False, outcome.result
    assert sorted(os.listdir(str(dest))) == ['report.html', 'report.json', 'report.junit.xml', 'report.md']


def test_a_write_error_is_a_clear_failure(tmp_path, monkeypatch):
    from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input

    def full_disk(**kwargs):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(validation_report.tempfile, 'mkstemp', full_disk)
    bad_input(validation_report.main, {'records': [{'stage': 'node', 'node': 'n', 'check': 'c', 'status': 'pass'}], 'dest': str(tmp_path)},
              'cannot write the validation report into dest %s' % tmp_path, 'No space left on device')
    assert os.listdir(str(tmp_path)) == []


PROVENANCE = dict(started='2025-01-31T08:00:00Z', collection_version='0.1.0',
                  versions=[{'node': 'gpu-01', 'slurm': '22.05.8', 'driver': '550.54.15', 'cuda': '12.4'}, {'node': 'gpu-02'}])
NCCL = [{'stage': 'nccl', 'node': 'gpu-01', 'check': 'busbw', 'status': 'fail', 'reason': 'slow', 'hosts': ['gpu-01'],
         'command': "srun --nodelist=gpu-01 all_reduce_perf -g 8", 'versions': {'nccl': '2.21.5', 'nccl_tests': '2.13.9'}}]


def test_the_report_says_what_was_validated(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(validation_report, 'utc_now', lambda: '2025-01-31T09:02:03Z')
    dest = tmp_path / 'report'
    result = run_module(capsys, records=RECORDS + NCCL, dest=str(dest), **PROVENANCE)
    report = json.loads((dest / 'report.json').read_text())
    assert report['provenance'] == {
        'generated': '2025-01-31T09:02:03Z', 'started': '2025-01-31T08:00:00Z', 'duration_s': 3723, 'collection_version': '0.1.0',
        'nodes': [{'node': 'gpu-01', 'slurm': '22.05.8', 'driver': '550.54.15', 'cuda': '12.4', 'nccl': '2.21.5', 'nccl_tests': '2.13.9'},
                  {'node': 'gpu-02', 'slurm': None, 'driver': None, 'cuda': None, 'nccl': None, 'nccl_tests': None}]}
    assert '- duration: 1h 02m 03s' in result['summary'] and '- NVIDIA driver: 550.54.15 on gpu-01; unknown on gpu-02' in result['summary']
    assert '  srun --nodelist=gpu-01 all_reduce_perf -g 8' in result['summary']
    html = (dest / 'report.html').read_text()
    assert '<pre>srun --nodelist=gpu-01 all_reduce_perf -g 8</pre>' in html and '<th>collection version</th><td>0.1.0</td>' in html
    suite = ET.parse(str(dest / 'report.junit.xml')).getroot().find('testsuite')
    assert dict((p.get('name'), p.get('value')) for p in suite.find('properties'))['duration_s'] == '3723'


def test_without_provenance_everything_but_the_date_is_unknown(capsys, tmp_path):
    dest = tmp_path / 'report'
    run_module(capsys, records=RECORDS, dest=str(dest))
    provenance = json.loads((dest / 'report.json').read_text())['provenance']
    assert validation_report.parse_time(provenance.pop('generated')) is not None
    assert provenance == {'started': None, 'duration_s': None, 'collection_version': None, 'nodes': []}
    assert '- started: unknown\n- duration: unknown\n- collection version: unknown\n- Slurm: unknown' in (dest / 'report.md').read_text()


@pytest.mark.parametrize('check_mode', [False, True], ids=['apply', 'check'])
def test_new_times_alone_are_no_change_but_are_written(capsys, tmp_path, monkeypatch, check_mode):
    """A second run over an unchanged cluster reports no change (playbooks' second runs stay at changed=0); the files say
    when it ran. Anything else that differs is a change."""
    dest = tmp_path / 'report'
    clock = ['2025-01-31T09:02:03Z']
    monkeypatch.setattr(validation_report, 'utc_now', lambda: clock[0])
    assert run_module(capsys, records=RECORDS, dest=str(dest), **PROVENANCE)['changed'] is True
    clock[0] = '2025-01-31T10:02:03Z'
    args = dict(PROVENANCE)
    args['started'] = '2025-01-31T09:00:00Z'
    if check_mode:
        args['_ansible_check_mode'] = True
    again = run_module(capsys, records=RECORDS, dest=str(dest), **args)
    assert again['changed'] is False
    written = json.loads((dest / 'report.json').read_text())['provenance']
    assert (written['generated'], written['started']) == (('2025-01-31T09:02:03Z', '2025-01-31T08:00:00Z') if check_mode else
                                                          ('2025-01-31T10:02:03Z', '2025-01-31T09:00:00Z'))
    other = run_module(capsys, records=RECORDS[:1], dest=str(dest), **args)
    assert other['changed'] is True


def test_a_report_json_of_an_older_version_or_garbage_is_replaced(capsys, tmp_path):
    dest = tmp_path / 'report'
    dest.mkdir()
    for text in ('{"title": "no provenance"}', '{"provenance": {"generated": "yesterday"}}', 'not json', '[]'):
        (dest / 'report.json').write_text(text)
        assert run_module(capsys, records=RECORDS, dest=str(dest))['changed'] is True
