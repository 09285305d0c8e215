# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nvml role's pip route and its checks, run by a real ansible-playbook on this machine (local connection).

pip installs the pinned nvidia-ml-py wheel (the one the test command downloads) with --target into a
temporary directory; the collection's NVML client then imports it from there in a Python that has no
pynvml of its own; a second run changes nothing. The package route runs in molecule (the simulated
cluster's GPU nodes get Debian's python3-pynvml).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpucluster.bringup.tests.unit.aptindex import apt_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
WHEELS = sorted(glob.glob(os.path.join(ROOT, '.build', 'nvml-ref', 'nvidia-ml-py-*', 'nvidia_ml_py-*.whl')))

PLAY = '''
- name: nvml role on this machine
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: gpucluster.bringup.nvml
'''


def playbook(tmp_path, extra):
    inventory = {'all': {'children': {'gpu_nodes': {'hosts': {'gpu-01': None}}},
                         'hosts': {'gpu-01': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}
    (tmp_path / 'hosts.json').write_text(json.dumps(inventory))
    (tmp_path / 'play.yml').write_text(PLAY)
    # this machine stands for the node: its target and wheel directories in tmp_path, pip of the test's Python
    # (the node baseline after the bindings has its own tests: test_gpu_baseline*.py, molecule test_fleet_health.py)
    values = dict({'_nvml_pip_target': str(tmp_path / 'target'), '_nvml_pip_cache': str(tmp_path / 'cache'),
                   '_nvml_pip_packages': [], '_nvml_python': sys.executable, 'ansible_facts': {'os_family': 'Debian'},
                   'nvml_baseline': {'checks': []}}, **extra)
    (tmp_path / 'vars.json').write_text(json.dumps(values))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    env.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'), ANSIBLE_REMOTE_TEMP=str(tmp_path / 'ansible-remote-tmp'),
               PIP_NO_INDEX='1', PIP_DISABLE_PIP_VERSION_CHECK='1')
    done = subprocess.run([PLAYBOOK_BIN, '-i', str(tmp_path / 'hosts.json'), str(tmp_path / 'play.yml'), '-e', '@%s' % (tmp_path / 'vars.json')],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env, cwd=str(tmp_path), check=False)
    match = re.search(r'^gpu-01\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)', done.stdout, re.M)
    assert match, done.stdout
    return done.returncode, done.stdout, (int(match.group(1)), int(match.group(2)))


def test_pip_installs_the_wheel_where_the_client_finds_it(tmp_path):
    assert WHEELS, 'the pinned nvidia-ml-py wheel is missing: run scripts/test.sh deps'
    wheel = WHEELS[-1]
    version = os.path.basename(wheel).split('-')[1]
    extra = {'nvml_bindings': 'pip', 'nvml_pip_wheel': wheel, 'nvml_pip_version': version}
    rc, out, (changed, failed) = playbook(tmp_path, extra)
    assert rc == 0 and failed == 0 and changed >= 2, out  # the wheel copied, pip run
    assert os.path.isfile(str(tmp_path / 'target' / 'pynvml.py'))
    assert os.path.isdir(str(tmp_path / 'target' / ('nvidia_ml_py-%s.dist-info' % version)))
    rc, out, (changed, failed) = playbook(tmp_path, extra)
    assert rc == 0 and (changed, failed) == (0, 0), out
    # a Python without pynvml of its own (-S -I: no site-packages, no PYTHONPATH) imports it through the client
    code = ('import importlib.util, sys\n'
            'spec = importlib.util.spec_from_file_location("c", %r)\n'
            'c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)\n'
            'lib, missing = c.import_bindings(%r)\n'
            'print(lib.__file__ if lib else missing)\n'
            'lib, missing = c.import_bindings(%r)\n'
            % (os.path.join(ROOT, 'plugins', 'module_utils', '_nvml.py'), str(tmp_path / 'target'), str(tmp_path / 'nowhere')))
    found = subprocess.run([sys.executable, '-S', '-I', '-c', code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, check=False)
    assert found.stdout.strip() == str(tmp_path / 'target' / 'pynvml.py'), found.stdout


@pytest.mark.parametrize('extra, message', [
    ({'nvml_bindings': 'pip', 'nvml_pip_wheel': '/x/nvidia_ml_py-12.535.77-py3-none-any.whl', 'nvml_pip_version': '13.615.71'},
     'nvml_pip_wheel /x/nvidia_ml_py-12.535.77-py3-none-any.whl is not a wheel of nvidia-ml-py 13.615.71'),
    ({'nvml_bindings': 'package', 'ansible_facts': {'os_family': 'RedHat'}},
     'nvml_bindings is package, but the RedHat family has no package of nvidia-ml-py'),
    ({'nvml_bindings': 'none', '_nvml_python': '/bin/false'},
     "gpu-01: /bin/false cannot import pynvml (nvidia-ml-py)"),
    ({'nvml_bindings': 'conda'}, "nvml_bindings"),
])
def test_bad_input_stops_with_one_message_and_changes_nothing(tmp_path, extra, message):
    rc, out, (changed, failed) = playbook(tmp_path, extra)
    assert rc != 0 and failed == 1 and changed == 0, out
    assert message in out, out
    assert not os.path.exists(str(tmp_path / 'target'))


# --- the package route's dry run: the real ansible.builtin.apt on this machine, pointed at an index without the package --

def test_package_route_without_contrib_stops_before_installing(tmp_path, monkeypatch):
    python_apt = subprocess.run(['/usr/bin/python3', '-c', 'import apt, apt_pkg'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                check=False)
    if shutil.which('apt-get') is None or python_apt.returncode != 0:
        pytest.skip('apt-get and python3-apt (which ansible.builtin.apt needs) are not on this machine')
    # an index without the package: as a Debian machine whose sources do not name contrib
    monkeypatch.setenv('APT_CONFIG', str(apt_config(tmp_path / 'apt', [('python3-apt', '2.6.0', None)])))
    rc, out, (changed, failed) = playbook(tmp_path, {'nvml_bindings': 'package', 'ansible_facts': {'os_family': 'Debian', 'pkg_mgr': 'apt'},
                                                     'ansible_python_interpreter': '/usr/bin/python3'})
    assert rc != 0 and (changed, failed) == (0, 1), out
    assert ("gpu-01: apt cannot install python3-pynvml (nvidia-ml-py, the Python NVML bindings the collection's modules import); "
            'nothing was changed. apt has no installation candidate for it: Debian ships it in the contrib component') in out, out
