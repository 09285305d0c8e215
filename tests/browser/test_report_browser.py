# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML validation report in a real headless browser: Debian's chromium (``apt-get install -y chromium``).

Two reports, built with the pure functions (tests/unit/report_samples.py): two nodes of which one fails, and 256
nodes of which one fails. Each is opened twice from a file:// URL - ``--screenshot`` at 1400x2000 and ``--dump-dom`` -
with ``--enable-logging=stderr --v=0``, which writes the page's console messages to stderr: any there (an uncaught
script error first of all) fails the test, and a page with a broken script shows that they are caught. Name lookups
are answered "not found" (``--host-resolver-rules``), so the page must render from the file alone.

The screenshot must be a valid PNG (chunk CRCs, the image data inflates to the size IHDR gives) of 1400x2000 with
content (many different pixel rows; a blank page has a handful); the DOM must hold the busbw plot (an ``<svg>`` with
its curves and gate) and the failing node. Screenshots, pages and the time of each chromium run are kept in
``.build/test/artifacts/``.

Without chromium the tests are skipped, saying so; with ``GPUCLUSTER_REQUIRE_BROWSER=1`` they fail instead.
``GPUCLUSTER_CHROMIUM`` names another chromium binary.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import struct
import subprocess
import time
import zlib

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_report as vr
from ansible_collections.gpucluster.bringup.tests.unit.report_samples import sample_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARTIFACTS = os.path.join(ROOT, '.build', 'test', 'artifacts')
WIDTH, HEIGHT = 1400, 2000
# the subprocess is stopped at RUN_TIMEOUT; a render must finish well within RENDER_BUDGET, so that a page
# grown slow fails the budget check instead of hitting the timeout that check could never see past
RUN_TIMEOUT = 120
RENDER_BUDGET = 30
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
# The page's console, as --enable-logging=stderr writes it: [pid:tid:time:INFO:CONSOLE:1] "Uncaught TypeError: ...", source: ...
CONSOLE = re.compile(r'^\[[^\]]*:CONSOLE[^\]]*\].*$', re.MULTILINE)
REPORTS = {
    # name: (the report, the failing node)
    '2-nodes': (lambda: sample_report(2, failing='gpu-001'), 'gpu-001'),
    '256-nodes': (lambda: sample_report(256, failing='gpu-137', odd_driver='gpu-200'), 'gpu-137'),
}


def find_chromium():
    """The chromium binary; without one the calling test is skipped, or fails with GPUCLUSTER_REQUIRE_BROWSER=1."""
    path = shutil.which(os.environ.get('GPUCLUSTER_CHROMIUM') or 'chromium')
    if path:
        return path
    why = ('%s is not an executable' % os.environ['GPUCLUSTER_CHROMIUM'] if os.environ.get('GPUCLUSTER_CHROMIUM') else
           'chromium is not installed (Debian: apt-get install -y chromium)')
    if os.environ.get('GPUCLUSTER_REQUIRE_BROWSER') == '1':
        pytest.fail('%s, and GPUCLUSTER_REQUIRE_BROWSER=1 requires the browser test' % why)
    pytest.skip('%s; GPUCLUSTER_REQUIRE_BROWSER=1 makes this a failure' % why)


def browse(chromium, page, scratch, *action):
    """Run chromium headless on ``page`` with ``action`` (``--screenshot=...``, ``--dump-dom``): (stdout, stderr, seconds)."""
    profile = os.path.join(scratch, 'profile')
    argv = [chromium, '--headless', '--disable-gpu', '--no-sandbox', '--window-size=%d,%d' % (WIDTH, HEIGHT), '--hide-scrollbars',
            '--force-device-scale-factor=1', '--user-data-dir=%s' % profile, '--no-first-run', '--disable-extensions',
            '--disable-background-networking', '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND',
            '--enable-logging=stderr', '--v=0'] + list(action) + ['file://%s' % page]
    env = dict(os.environ, HOME=scratch, XDG_CONFIG_HOME=os.path.join(scratch, 'config'), XDG_CACHE_HOME=os.path.join(scratch, 'cache'))
    start = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=RUN_TIMEOUT, env=env,
                          check=False)
    seconds = round(time.monotonic() - start, 2)
    assert proc.returncode == 0, 'chromium %s exited with %d: %s' % (' '.join(action), proc.returncode, proc.stderr[-3000:])
    return proc.stdout, proc.stderr, seconds


def console_messages(stderr):
    return CONSOLE.findall(stderr)


def read_png(path):
    """``(width, height, rows)`` of a PNG (8-bit RGB or RGBA, not interlaced), every chunk's CRC and the data's size checked;
    ``rows`` are the filtered scanlines as stored."""
    with open(path, 'rb') as handle:
        data = handle.read()
    assert data[:8] == PNG_SIGNATURE, '%s is not a PNG' % path
    pos, chunks = 8, []
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc, = struct.unpack('>I', data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xffffffff == crc, 'chunk %r of %s: bad CRC' % (kind, path)
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b'IHDR' and chunks[-1][0] == b'IEND', [kind for kind, dummy in chunks]
    width, height, depth, colour, compression, filtering, interlace = struct.unpack('>IIBBBBB', chunks[0][1])
    assert (depth, colour in (2, 6), compression, filtering, interlace) == (8, True, 0, 0, 0), chunks[0][1]
    raw = zlib.decompress(b''.join(body for kind, body in chunks if kind == b'IDAT'))
    stride = 1 + width * (3 if colour == 2 else 4)
    assert len(raw) == stride * height, 'image data of %d bytes, %dx%d needs %d' % (len(raw), width, height, stride * height)
    rows = [raw[index * stride:(index + 1) * stride] for index in range(height)]
    assert all(row[0] <= 4 for row in rows), 'unknown scanline filter'
    return width, height, rows


def keep(name, *paths, **timings):
    """Copy ``paths`` into the artifacts folder and write the chromium run times next to them."""
    if not os.path.isdir(ARTIFACTS):
        os.makedirs(ARTIFACTS)
    kept = []
    for path in paths:
        target = os.path.join(ARTIFACTS, os.path.basename(path))
        shutil.copyfile(path, target)
        kept.append(target)
    with open(os.path.join(ARTIFACTS, 'report-%s-chromium.json' % name), 'w') as handle:
        json.dump(dict(timings, files=kept), handle, indent=2, sort_keys=True)
    print('chromium %s: %s; kept %s' % (name, ', '.join('%s %.2f s' % item for item in sorted(timings.items())), ', '.join(kept)))
    return kept


@pytest.mark.parametrize('name', sorted(REPORTS))
def test_the_report_renders_in_chromium(tmp_path, name):
    chromium = find_chromium()
    build, failing = REPORTS[name]
    report = build()
    page = tmp_path / ('report-%s.html' % name)
    page.write_text(vr.render_html(report))
    shot = tmp_path / ('report-%s.png' % name)

    dummy, shot_log, shot_seconds = browse(chromium, str(page), str(tmp_path), '--screenshot=%s' % shot)
    dom, dom_log, dom_seconds = browse(chromium, str(page), str(tmp_path), '--dump-dom')
    kept = keep(name, str(shot), str(page), screenshot_s=shot_seconds, dump_dom_s=dom_seconds)

    assert console_messages(shot_log + dom_log) == [], 'the page wrote to the console (script errors?)'
    # the DOM chromium built: the plot with every run's curve and the gate, the failing node, where it failed and how to rerun it
    assert dom.count('<svg') == 1 and dom.count('class="run') == len(report['series']) and 'class="gate"' in dom
    assert 'FAIL: 1 of %d checks failed on %s' % (report['totals']['checks'], failing) in dom
    assert '<li><code>%s</code> nccl/busbw: ' % failing in dom and '<pre>srun --nodes=1 --nodelist=%s ' % failing in dom
    assert '<th>NVIDIA driver</th><td>550.54.15' in dom and '<th>duration</th><td>1h 00m 00s</td>' in dom
    # nothing outside the file: no script, no other resource
    assert '<script' not in dom and not re.search(r'\b(?:src|href)="(?!#)', dom)
    # the failure and the plot come before the long tables, which start folded for 256 nodes
    assert dom.index('<h2>Failures</h2>') < dom.index('<svg') < dom.index('<h2>Stages</h2>')
    assert ('<details open' in dom) is (len(report['stages'][0]['nodes']) <= vr.OPEN_MAX)

    width, height, rows = read_png(kept[0])
    assert (width, height) == (WIDTH, HEIGHT)
    assert len(set(rows)) > 100, 'the screenshot looks blank: %d different pixel rows' % len(set(rows))
    for seconds in (shot_seconds, dom_seconds):
        assert seconds < RENDER_BUDGET, 'a chromium run took %.1fs, the budget is %ds' % (seconds, RENDER_BUDGET)


def test_a_script_error_on_the_page_is_caught(tmp_path):
    """The control: a page whose script throws writes "Uncaught ..." where the test looks."""
    chromium = find_chromium()
    page = tmp_path / 'broken.html'
    page.write_text('<!DOCTYPE html><html><body><p>broken</p><script>window.notAFunction();</script></body></html>\n')
    log = browse(chromium, str(page), str(tmp_path), "--dump-dom")[1]
    assert [line for line in console_messages(log) if 'Uncaught TypeError' in line], log[-3000:]
