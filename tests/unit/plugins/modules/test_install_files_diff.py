# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What --diff shows for each kind of change install_files makes (the module's ``diff``, as the action asks for it).

The module runs in-process (modrun) with ``want_diff`` set, as the action plugin's second call sets it under
``--diff``, over a temporary node directory: a file whose content and mode change, a new file, a secret file, a
binary file, a link that points elsewhere and a directory whose mode changes. tests/unit/plugins/action/test_install_files.py
shows the same through ansible-playbook.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import os

from ansible_collections.gpucluster.bringup.plugins.modules import install_files
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import run_module


def entry(dest, data, mode, **extra):
    return dict({'dest': dest, 'state': 'file', 'checksum': hashlib.sha1(data).hexdigest(), 'mode': mode}, **extra)


def test_each_change_is_shown_as_the_node_has_it_and_as_it_will_be(tmp_path):
    node = str(tmp_path)
    os.mkdir(node + '/etc', 0o700)
    os.chmod(node + '/etc', 0o700)
    with open(node + '/etc/slurm.conf', 'w') as handle:
        handle.write('ClusterName=old\n')
    os.chmod(node + '/etc/slurm.conf', 0o600)
    with open(node + '/etc/munge.key', 'wb') as handle:
        handle.write(b'old secret')
    os.chmod(node + '/etc/munge.key', 0o400)
    os.symlink('slurm.conf', node + '/etc/current')
    new_conf, key, blob = b'ClusterName=new\n', b'new secret', b'\x00\xff\x00binary'
    files = [
        {'dest': node + '/etc', 'state': 'directory', 'mode': '0755'},
        entry(node + '/etc/slurm.conf', new_conf, '0644'),
        entry(node + '/etc/gres.conf', b'Name=gpu\n', '0644'),
        entry(node + '/etc/munge.key', key, '0400', secret=True),
        entry(node + '/etc/blob', blob, '0644'),
        {'dest': node + '/etc/current', 'state': 'link', 'target': 'gres.conf'},
    ]
    contents = dict((f['dest'], base64.b64encode(data).decode()) for f, data in zip(files[1:5], (new_conf, b'Name=gpu\n', key, blob)))
    outcome = run_module(install_files.main, {'files': files, 'contents': contents, 'want_diff': True}, check_mode=True)
    assert not outcome.failed, outcome.result
    conf, gres, munge, blob_path, link = (node + '/etc/' + name for name in ('slurm.conf', 'gres.conf', 'munge.key', 'blob', 'current'))
    assert outcome.result['diff'] == [
        dict(before_header=node + '/etc', after_header=node + '/etc',
             before={'path': node + '/etc', 'state': 'directory', 'mode': '0700'},
             after={'path': node + '/etc', 'state': 'directory', 'mode': '0755'}),
        dict(before_header=conf, after_header=conf, before={'path': conf, 'state': 'file', 'mode': '0600'},
             after={'path': conf, 'state': 'file', 'mode': '0644'}),
        dict(before_header=conf, after_header=conf, before='ClusterName=old\n', after='ClusterName=new\n'),
        dict(before_header=gres, after_header=gres, before={'path': gres, 'state': 'absent', 'mode': None},
             after={'path': gres, 'state': 'file', 'mode': '0644'}),
        dict(before_header=gres, after_header=gres, before='', after='Name=gpu\n'),
        dict(before_header=munge, after_header=munge, before={'path': munge, 'state': 'file'}, after={'path': munge, 'state': 'file'}),
        dict(before_header=munge, after_header=munge, before='the content is secret', after='the content is secret (changed)\n'),
        dict(before_header=blob_path, after_header=blob_path, before={'path': blob_path, 'state': 'absent', 'mode': None},
             after={'path': blob_path, 'state': 'file', 'mode': '0644'}),
        dict(before_header=blob_path, after_header=blob_path, before='binary or large content',
             after='binary or large content (changed)\n'),
        dict(before_header=link, after_header=link, before={'path': link, 'state': 'link', 'target': 'slurm.conf'},
             after={'path': link, 'state': 'link', 'target': 'gres.conf'}),
    ]
    # check mode: the node is as it was
    assert open(conf).read() == 'ClusterName=old\n' and not os.path.exists(gres) and os.readlink(link) == 'slurm.conf'
