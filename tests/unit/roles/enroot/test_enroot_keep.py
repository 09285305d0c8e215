# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""enroot_package_source: keep - the enroot role beside the vendor's enroot (issue 44, item 7).

Each case runs the real role with ansible-playbook on this machine (connection local, localhost only), its
paths pointed into the test's directory through the role's internal variables. The "vendor's install" is
NVIDIA's real enroot 4.1.2 package unpacked (tests/unit/realenroot.py): its /etc/enroot tree (enroot.conf,
enroot.conf.d/README, hooks.d, ...) copied into the test's directory with a line a vendor image adds, its
/usr/bin/enroot in PATH. One case runs that real script with its version line made to say 3.3.1 (no enroot 3.3
package is at hand).

The drop-in is proven read by the real enroot: its own script, the compiled-in /etc/enroot replaced by the
test's directory, prints ``enroot info`` (the settings it took, after enroot.conf and enroot.conf.d/*.conf).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.tests.unit import realenroot
from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as pf

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
# a line a vendor image adds to the package's enroot.conf (the same setting as the role's, written otherwise)
VENDOR_LINE = 'ENROOT_REMAP_ROOT          false\n'


def _tasks(*names):
    with open(os.path.join(ROOT, 'roles', 'enroot', 'tasks', *names)) as handle:
        return [task['name'] for task in yaml.safe_load(handle)]


def _results(report):
    """(task name, result of localhost) of every task that ran or was skipped."""
    for play in report.get('plays', []):
        for task in play.get('tasks', []):
            result = task.get('hosts', {}).get('localhost')
            if result is not None:
                yield task['task']['name'].split('gpucluster.bringup.enroot : ', 1)[-1], result


def _failed(report):
    return [result['msg'] for name, result in _results(report) if result.get('failed') and 'results' not in result]


def vendor_tree(tmp_path, conf_extra=VENDOR_LINE, dropins=None):
    """The real enroot package's /etc/enroot under tmp_path/etc/enroot, enroot.conf with ``conf_extra`` appended."""
    top = realenroot.root()
    sysconf = tmp_path / 'etc' / 'enroot'
    shutil.copytree(os.path.join(top, 'etc', 'enroot'), str(sysconf), symlinks=True)
    with open(str(sysconf / 'enroot.conf'), 'a') as handle:
        handle.write(conf_extra)
    for name, text in (dropins or {}).items():
        (sysconf / 'enroot.conf.d' / name).write_text(text)
    hooks = tmp_path / 'usr' / 'share' / 'enroot' / 'hooks.d'
    shutil.copytree(os.path.join(top, 'usr', 'share', 'enroot', 'hooks.d'), str(hooks))
    return sysconf


def snapshot(directory):
    """Every path under ``directory``: mode, link target or content hash."""
    found = {}
    for base, dirs, files in os.walk(str(directory)):
        for name in dirs + files:
            path = os.path.join(base, name)
            st = os.lstat(path)
            if os.path.islink(path):
                what = 'link:' + os.readlink(path)
            elif os.path.isdir(path):
                what = 'dir'
            else:
                with open(path, 'rb') as handle:
                    what = hashlib.sha256(handle.read()).hexdigest()
            found[os.path.relpath(path, str(directory))] = (st.st_mode, st.st_ino, what)
    return found


def role_vars(tmp_path, sysconf, **extra):
    (tmp_path / 'max_user_namespaces').write_text('15000\n')
    (tmp_path / 'max_mnt_namespaces').write_text('15000\n')
    paths = tmp_path / 'paths'
    (tmp_path / 'tmpfiles.d').mkdir(exist_ok=True)  # /etc/tmpfiles.d is there on a node
    found = {'enroot_package_source': 'keep',
             '_enroot_sysconf_dir': str(sysconf),
             '_enroot_hooks_source_dir': str(tmp_path / 'usr' / 'share' / 'enroot' / 'hooks.d'),
             '_enroot_tmpfiles_path': str(tmp_path / 'tmpfiles.d' / 'gpucluster-enroot.conf'),
             '_enroot_userns_files': [str(tmp_path / 'max_user_namespaces'), str(tmp_path / 'max_mnt_namespaces')],
             '_enroot_userns_clone_file': str(tmp_path / 'no-userns-clone'),
             # the per-user paths (and so their shared parents) inside the test's directory
             'enroot_conf': {'ENROOT_RUNTIME_PATH': '%s/run/user-$(id -u)' % paths,
                             'ENROOT_CACHE_PATH': '%s/cache/group-$(id -g)' % paths,
                             'ENROOT_DATA_PATH': '%s/data/user-$(id -u)' % paths,
                             'ENROOT_CONFIG_PATH': '%s/config' % paths}}
    found.update(extra)
    return found


def run_role(tmp_path, extra_vars, path, check=False):
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(
        {'all': {'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}))
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(
        [{'name': 'role under test', 'hosts': 'localhost', 'gather_facts': True, 'roles': [{'role': 'gpucluster.bringup.enroot'}]}]))
    (tmp_path / 'vars.json').write_text(json.dumps(extra_vars))
    env = {k: v for k, v in os.environ.items() if not k.startswith('ANSIBLE_') and not k.startswith('ENROOT_')}
    env.update(ANSIBLE_NOCOLOR='1', ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json', PATH=path,
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'),
               # the unpacked enroot's library; its own default paths inside the test's directory ("enroot version" makes them)
               ENROOT_LIBRARY_PATH=os.path.join(realenroot.root(), 'usr', 'lib', 'enroot'), HOME=str(tmp_path),
               ENROOT_RUNTIME_PATH=str(tmp_path / 'version-run'), ENROOT_CACHE_PATH=str(tmp_path / 'version-cache'),
               ENROOT_DATA_PATH=str(tmp_path / 'version-data'))
    argv = [ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'hosts.yml'), str(tmp_path / 'play.yml'), '-e', '@%s' % (tmp_path / 'vars.json')]
    proc = subprocess.run(argv + (['--check'] if check else []), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, cwd=str(tmp_path), check=False)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        raise AssertionError('ansible-playbook printed no JSON (rc %d): %s %s' % (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))


def real_enroot_path():
    """PATH with the real enroot 4.1.2 first."""
    return realenroot.env({'PATH': os.environ['PATH']})


def enroot_info(tmp_path, sysconf):
    """``enroot info`` of the real enroot 4.1.2 script with its compiled-in /etc/enroot replaced by ``sysconf``."""
    real = real_enroot_path()
    with open(os.path.join(realenroot.root(), 'usr', 'bin', 'enroot')) as handle:
        script = handle.read()
    assert script.count('"/etc/enroot') == 3  # config::init, ENROOT_SYSCONF_PATH, the info line
    copy = tmp_path / 'enroot-here'
    copy.write_text(script.replace('"/etc/enroot', '"%s' % sysconf))
    copy.chmod(0o755)
    env = {'PATH': real['PATH'], 'HOME': str(tmp_path), 'ENROOT_LIBRARY_PATH': real['ENROOT_LIBRARY_PATH']}
    proc = subprocess.run([str(copy), 'info'], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=True)
    return dict(line.strip().split('=', 1) for line in proc.stdout.splitlines() if line.startswith('  ENROOT_'))


def test_keep_uses_the_installed_enroot_and_leaves_the_vendor_files(tmp_path):
    # a vendor drop-in read after the role's: the role's value wins there, the file is left as it is
    sysconf = vendor_tree(tmp_path, dropins={'50-vendor.conf': 'ENROOT_MAX_CONNECTIONS 4\n'})
    vendor_before = snapshot(sysconf)
    rc, report = run_role(tmp_path, role_vars(tmp_path, sysconf), real_enroot_path()['PATH'])
    assert rc == 0, _failed(report)
    results = dict(_results(report))
    # no package task ran: every task of install.yml was skipped, apt was never called
    install = _tasks('install.yml')
    assert install and all(results[name].get('skipped') for name in install), results
    assert not [name for name, result in _results(report) if result.get('invocation', {}).get('module_args', {}).get('deb')]
    # the installed version, as a fact
    assert results['Report the installed enroot version']['ansible_facts'] == {'enroot_installed_version': realenroot.ENROOT_VERSION}
    # the vendor's files untouched byte for byte (same inode, mode and content); only the drop-in and the hook links are new
    after = snapshot(sysconf)
    assert dict((k, v) for k, v in after.items() if k in vendor_before) == vendor_before
    assert sorted(set(after) - set(vendor_before)) == ['enroot.conf.d/00-gpucluster-bringup.conf', 'hooks.d/50-slurm-pmi.sh',
                                                       'hooks.d/50-slurm-pytorch.sh']
    dropin = (sysconf / 'enroot.conf.d' / '00-gpucluster-bringup.conf').read_text()
    assert 'ENROOT_ALLOW_HTTP no\n' in dropin and 'ENROOT_MAX_CONNECTIONS 10\n' in dropin
    # the real enroot reads the drop-in: the role's settings, and the vendor's line that agrees with them (first value wins)
    info = enroot_info(tmp_path, sysconf)
    paths = tmp_path / 'paths'
    assert info['ENROOT_RUNTIME_PATH'] == '%s/run/user-%d' % (paths, os.getuid())
    assert info['ENROOT_DATA_PATH'] == '%s/data/user-%d' % (paths, os.getuid())
    assert info['ENROOT_MAX_CONNECTIONS'] == '10'          # the role's drop-in before the vendor's 50-vendor.conf
    assert info['ENROOT_RESTRICT_DEV'] == 'yes'
    assert 'ENROOT_REMAP_ROOT' not in info                 # "false" / "no": unset by enroot's config::fini
    # a second run changes nothing
    rc, report = run_role(tmp_path, role_vars(tmp_path, sysconf), real_enroot_path()['PATH'])
    assert rc == 0 and not [name for name, result in _results(report) if result.get('changed')], _failed(report)


def test_keep_without_an_installed_enroot_fails_naming_the_host(tmp_path):
    sysconf = vendor_tree(tmp_path)
    before = snapshot(tmp_path)
    path = os.pathsep.join(p for p in os.environ['PATH'].split(os.pathsep) if not os.path.exists(os.path.join(p, 'enroot')))
    rc, report = run_role(tmp_path, role_vars(tmp_path, sysconf), path, check=True)
    assert rc != 0
    msgs = _failed(report)
    assert len(msgs) == 1, msgs
    assert msgs[0].startswith("enroot_package_source is 'keep' but localhost has no installed enroot ('enroot version': ")
    assert msgs[0].endswith('keep expects an installed enroot (the vendor\'s, e.g. DGX OS\'s) and never installs one: install it on '
                            'localhost, or set enroot_package_source to url, mirror or local to let this role install enroot 4.1.2')
    assert not [name for name, result in _results(report) if result.get('changed')]
    after = snapshot(tmp_path)
    assert dict((k, v) for k, v in after.items() if k in before) == before


def test_keep_with_an_enroot_older_than_dropins(tmp_path):
    sysconf = vendor_tree(tmp_path)
    # the real enroot 4.1.2 script, its version line made to say 3.3.1 (an enroot before 3.4.0: no such package at hand)
    old_bin = tmp_path / 'enroot-3.3.1-bin'
    old_bin.mkdir()
    with open(os.path.join(realenroot.root(), 'usr', 'bin', 'enroot')) as handle:
        script = handle.read()
    assert script.count('export ENROOT_VERSION="%s"' % realenroot.ENROOT_VERSION) == 1
    (old_bin / 'enroot').write_text(script.replace('export ENROOT_VERSION="%s"' % realenroot.ENROOT_VERSION, 'export ENROOT_VERSION="3.3.1"'))
    (old_bin / 'enroot').chmod(0o755)
    rc, report = run_role(tmp_path, role_vars(tmp_path, sysconf), str(old_bin) + os.pathsep + real_enroot_path()['PATH'], check=True)
    assert rc != 0
    assert _failed(report) == [
        "enroot_package_source is 'keep' but the enroot installed on localhost is 3.3.1; keep writes this role's settings to "
        "%s/enroot.conf.d/00-gpucluster-bringup.conf and never into the vendor's enroot.conf, and enroot reads enroot.conf.d/ "
        "since 3.4.0: upgrade the node's enroot, or set enroot_package_source to url, mirror or local to let this role install "
        "enroot 4.1.2" % sysconf]


def test_keep_refuses_vendor_settings_that_would_win_over_the_dropin(tmp_path):
    # enroot.conf and a drop-in read before the role's set two of its settings otherwise; one read after it does not count
    sysconf = vendor_tree(tmp_path, conf_extra='ENROOT_DATA_PATH=/raid/enroot-data/user-$(id -u)\nENROOT_RESTRICT_DEV "yes"\n',
                          dropins={'00-aa-site.conf': 'ENROOT_ALLOW_HTTP   yes\nENROOT_DATA_PATH /other\n',
                                   '90-late.conf': 'ENROOT_SQUASH_OPTIONS -comp zstd\n'})
    before = snapshot(tmp_path)
    rc, report = run_role(tmp_path, role_vars(tmp_path, sysconf), real_enroot_path()['PATH'], check=True)
    assert rc != 0
    assert _failed(report) == [
        "enroot_package_source is 'keep' and enroot keeps the first value of a setting (enroot.conf, then enroot.conf.d/*.conf by "
        "name), so on localhost these would win over this role's %(d)s/00-gpucluster-bringup.conf: "
        "ENROOT_DATA_PATH is /raid/enroot-data/user-$(id -u) in %(c)s, this role sets %(p)s/data/user-$(id -u) (enroot_conf.ENROOT_DATA_PATH); "
        "ENROOT_ALLOW_HTTP is yes in %(d)s/00-aa-site.conf, this role sets no (enroot_conf.ENROOT_ALLOW_HTTP); "
        "set the role variable to the vendor's value, or remove the line from the vendor's file"
        % {'d': sysconf / 'enroot.conf.d', 'c': sysconf / 'enroot.conf', 'p': tmp_path / 'paths'}]
    assert not [name for name, result in _results(report) if result.get('changed')]
    after = snapshot(tmp_path)
    assert dict((k, v) for k, v in after.items() if k in before) == before


@pytest.mark.parametrize('values', [
    # keep needs no package location, and the package options (defaults or pins) do not conflict with it: it never reads them
    dict(enroot_package_source='keep', enroot_release_url='', enroot_mirror_url='', enroot_local_dir=''),
    dict(enroot_package_source='keep', enroot_version='3.5.0', enroot_package_release='2', enroot_install_caps=False,
         enroot_package_checksums={'enroot_3.5.0-2_amd64.deb': 'sha256:' + '0' * 64}),
])
def test_controller_preflight_accepts_keep(values):
    with open(os.path.join(ROOT, 'roles', 'enroot', 'meta', 'argument_specs.yml')) as handle:
        options = yaml.safe_load(handle)['argument_specs']['main']['options']
    with open(os.path.join(ROOT, 'roles', 'enroot', 'defaults', 'main.yml')) as handle:
        found = dict((k, v) for k, v in yaml.safe_load(handle).items() if not (isinstance(v, str) and '{{' in v))
    found.update(values)
    assert pf.role_problems('enroot', 'dgx-01', options, found, {'all': ['dgx-01']}) == []
