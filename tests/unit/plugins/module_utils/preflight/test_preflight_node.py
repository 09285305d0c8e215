# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node preflight's judgement (_preflight_node.node_problems): a table of realistic sites.

Each case is a small site (a head node with slurmctld and slurmdbd, DGX H100 nodes, L40S nodes) given as the
readings node_preflight would return and what the inventory asks of each node; the expected result is the exact
number of problem lines and fragments each line must hold (host or hostlist first, the bad value, what is valid).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._mig_layouts import LAYOUTS, SHIPPED
from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _node as pn

H100 = 'NVIDIA H100 80GB HBM3'
L40S = 'NVIDIA L40S'
BOOKWORM = ('debian', '12', 'bookworm')
TRIXIE = ('debian', '13', 'trixie')
JAMMY = ('ubuntu', '22.04', 'jammy')
DEB12 = '22.05.8-4+deb12u3'
DEB13 = '24.11.5-4'
JAMMY_SLURM = '21.08.5-2ubuntu1'
NOBLE = ('ubuntu', '24.04', 'noble')
NOBLE_SLURM = '23.11.4-1.2ubuntu5'
# the day SchedMD's support window is judged on: after the security releases of September 2026
TODAY = '2026-10-01'
CTL_PKGS = ['slurmctld', 'slurm-client', 'libpmix-dev']
NODE_PKGS = ['slurmd', 'slurm-client', 'libpmix-dev']
DBD_PKGS = ['slurmdbd', 'slurm-client']
SMD = ['slurm-smd_24.11.5-1_amd64.deb', 'slurm-smd-client_24.11.5-1_amd64.deb', 'slurm-smd-slurmctld_24.11.5-1_amd64.deb',
       'slurm-smd-slurmd_24.11.5-1_amd64.deb']


SERIAL = [0]


def gpu(index, name=H100, mig=True, current=False, pending=None, processes=(), instances=()):
    SERIAL[0] += 1  # every GPU of the site has its own UUID
    return {'index': index, 'uuid': 'GPU-%08x-1b2c-3d4e-5f60-%012x' % (index, SERIAL[0]), 'name': name, 'mig_capable': mig,
            'mig_current': current and mig, 'mig_pending': (current if pending is None else pending) and mig,
            'profiles': None, 'instances': list(instances), 'processes': list(processes), 'minor': index}


def reading(os_=BOOKWORM, installed=None, candidate=DEB12, packages=('slurmctld', 'slurmd', 'slurmdbd', 'slurm-client'),
            gpus=None, nvml=None, holders=(), modules=('nvidia', 'nvidia_uvm'), local=()):
    pk = dict((name, {'installed': (installed or {}).get(name), 'candidate': candidate}) for name in packages)
    if nvml is None:
        nvml = {'available': gpus is not None, 'reason': None if gpus is not None else 'not read', 'error': None,
                'driver_version': '570.133.20', 'gpus': gpus or []}
    return {'os': {'id': os_[0], 'version_id': os_[1], 'codename': os_[2]}, 'os_family': 'Debian', 'source': 'distro',
            'packages': pk, 'package_error': None, 'local_files': [pn.package_file(f) for f in local],
            'nvml': nvml, 'holders': list(holders), 'modules': list(modules), 'fabric_manager': {}}


def want(roles=('compute',), source='distro', layout='', entries=None, var='mig_layouts_custom', require=True,
         blockers=('nvidia-persistenced', 'nvidia-dcgm', 'dcgm', 'dcgm-exporter', 'nvsm')):
    packages = []
    for role, names in (('controller', CTL_PKGS), ('compute', NODE_PKGS), ('slurmdbd', DBD_PKGS)):
        if role in roles:
            packages += [n for n in names if n not in packages]
    return {'roles': list(roles), 'packages': packages, 'source': source, 'mig_layout': layout, 'mig_layout_var': var,
            'mig_gpus': entries, 'mig_require_all_gpus': require, 'mig_reset_blockers': list(blockers)}


def _fresh(names):
    """A node with the driver and without the NVML bindings yet: nvidia-smi lists its GPUs."""
    found = reading(nvml={'available': False, 'reason': 'bindings', 'error': 'the Python NVML bindings cannot be imported'})
    found['nvidia_smi'] = {'gpus': [{'index': i, 'name': name} for i, name in enumerate(names)]}
    return found


def site(head=None, nodes=None, n=4, node_reading=None, node_want=None):
    """head-01 (slurmctld, slurmdbd) and gpu-01..gpu-0n (compute) on Debian 12 unless overridden."""
    readings = {'head-01': head or reading()}
    wants = {'head-01': want(('controller', 'slurmdbd'))}
    for i in range(1, n + 1):
        host = 'gpu-%02d' % i
        readings[host] = (nodes or {}).get(host) or (node_reading() if node_reading else reading())
        wants[host] = node_want(host) if node_want else want()
    return readings, wants


def h100_node(**kw):
    return reading(gpus=[gpu(i) for i in range(8)], **kw)


ALL_1G = [{'model': 'H100 80GB HBM3', 'instances': [{'profile': '1g.10gb', 'count': 7}]}]
TELEGRAF = {'pid': 4242, 'name': 'telegraf', 'unit': 'telegraf.service', 'job': False, 'gpu': 0, 'device': '/dev/nvidia0'}
DCGM = {'pid': 77, 'name': 'nv-hostengine', 'unit': 'nvidia-dcgm.service', 'job': False, 'gpu': 0, 'device': '/dev/nvidia0'}
JOB = {'pid': 91, 'name': 'python3', 'unit': None, 'job': True, 'gpu': 1, 'device': '/dev/nvidia1'}


def _mixed_os():
    nodes = {'gpu-03': reading(os_=TRIXIE, candidate=DEB13), 'gpu-04': reading(os_=TRIXIE, candidate=DEB13)}
    return site(nodes=nodes)


def _local_everywhere_two_os():
    nodes = dict(('gpu-%02d' % i, reading(os_=TRIXIE, candidate=DEB13, local=SMD)) for i in (3, 4))
    readings, wants = site(head=reading(local=SMD), nodes=nodes, node_reading=lambda: reading(local=SMD))
    for host in wants:
        wants[host]['source'] = 'local'
    return readings, wants


def _mig(layout_entries, node=None, n=1, **kw):
    return site(n=n, node_reading=node or h100_node,
                node_want=lambda host: want(layout='dgx-1g', entries=layout_entries, **kw))


def _ctl_local(version_files, node_candidate=DEB12, dbd_installed=None):
    head = reading(local=version_files, installed=dbd_installed)
    readings, wants = site(head=head, node_reading=lambda: reading(candidate=node_candidate))
    wants['head-01']['source'] = 'local'
    return readings, wants


def _with_login(installed, sackd=False):
    """site() plus login-01: the client commands (and sackd with slurm_configless) of ``installed`` (package -> version)."""
    readings, wants = site()
    packages = ('slurm-client', 'libpmix-dev') + (('sackd',) if sackd else ())
    readings['login-01'] = reading(installed=installed, packages=packages)
    wants['login-01'] = dict(want(()), roles=['login'], packages=list(packages))
    return readings, wants


def _smd(release):
    return [f.replace('24.11.5', release) for f in SMD]


# (id, (readings, wants) or a function giving them, missing, [fragments per expected line], warnings expected)
CASES = [
    ('ok-bookworm-distro', site(), (), [], 0),
    ('ok-trixie-distro', site(head=reading(os_=TRIXIE, candidate=DEB13), node_reading=lambda: reading(os_=TRIXIE, candidate=DEB13)),
     (), [], 0),
    ('ok-installed-wins-over-candidate',
     site(node_reading=lambda: reading(candidate='23.02.7-1', installed={'slurmd': DEB12, 'slurm-client': DEB12})), (), [], 0),
    ('jammy-2108-everywhere', site(head=reading(os_=JAMMY, candidate=JAMMY_SLURM), node_reading=lambda: reading(os_=JAMMY, candidate=JAMMY_SLURM)),
     (), [['gpu-[01-04]: Slurm 21.08.5 (packages slurmd, slurm-client 21.08.5-2ubuntu1', "the distribution's candidate",
           'older than 22.05', 'MultipleFiles=', 'Ubuntu 22.04 (jammy) has no newer Slurm than 21.08.5 in its universe component',
          "SchedMD's slurm-smd packages built from the release tarball", 'slurm_local_package_dir'],
          ['head-01: Slurm 21.08.5 (packages slurmctld, slurmdbd, slurm-client 21.08.5-2ubuntu1', 'older than 22.05']],
     0),
    ('jammy-one-node-installed-2108', site(nodes={'gpu-02': reading(installed={'slurmd': JAMMY_SLURM})}), (),
     [['gpu-02: Slurm 21.08.5 (package slurmd 21.08.5-2ubuntu1, installed) is older than 22.05', "SchedMD's slurm-smd packages",
       'Debian 13 (trixie) (Slurm 24.11.5, past SchedMD\'s support since May 2026), Ubuntu 24.04 (noble)']], 0),
    ('slurmd-newer-than-slurmctld', site(nodes={'gpu-01': reading(installed={'slurmd': '23.02.7-1'})}), (),
     [['gpu-01: slurmd would be Slurm 23.02.7 (package slurmd 23.02.7-1, installed) but slurmctld on head-01 22.05.8',
       'slurmdbd >= slurmctld >= slurmd', 'expected release 22.05 or older for slurmd']], 0),
    ('client-newer-than-slurmctld', site(nodes={'gpu-03': reading(installed={'slurm-client': '23.02.7-1', 'slurmd': DEB12})}), (),
     [['gpu-03: the client commands would be Slurm 23.02.7 (package slurm-client', 'expected release 22.05 or older']], 0),
    ('login-ok', _with_login({'slurm-client': DEB12, 'sackd': DEB12}, sackd=True), (), [], 0),
    ('login-client-newer-than-slurmctld', _with_login({'slurm-client': '23.02.7-1'}), (),
     [['login-01: the client commands would be Slurm 23.02.7 (package slurm-client 23.02.7-1, installed) but slurmctld on head-01 '
       '22.05.8', 'expected release 22.05 or older for the client commands']], 0),
    ('login-sackd-newer-than-slurmctld', _with_login({'slurm-client': DEB12, 'sackd': '24.11.5-4'}, sackd=True), (),
     [['login-01: sackd would be Slurm 24.11.5 (package sackd 24.11.5-4, installed) but slurmctld on head-01 22.05.8',
       'expected release 22.05 or older for sackd']], 0),
    ('login-2108-refused', _with_login({'slurm-client': JAMMY_SLURM}), (),
     [['login-01: Slurm 21.08.5 (package slurm-client 21.08.5-2ubuntu1, installed) is older than 22.05']], 0),
    ('slurmd-4-releases-behind-2411', _ctl_local(SMD, dbd_installed={'slurmdbd': '24.11.5-1'}), (),
     [['gpu-[01-04]: slurmd would be Slurm 22.05.8', 'but slurmctld on head-01 24.11.5: 4 releases before it', 'at most 3 releases back'],
      ['gpu-[01-04]: the client commands would be Slurm 22.05.8', '4 releases before']], 0),
    ('slurmd-3-behind-2411-ok', _ctl_local(SMD, node_candidate='23.02.7-1', dbd_installed={'slurmdbd': '24.11.5-1'}), (), [], 0),
    ('slurmd-2-behind-2311-ok', _ctl_local(_smd('23.11.10'), dbd_installed={'slurmdbd': '23.11.10-1'}), (), [], 0),
    ('slurmd-3-behind-2405-refused', _ctl_local(_smd('24.05.8'), dbd_installed={'slurmdbd': '24.05.8-1'}), (),
     [['gpu-[01-04]: slurmd would be Slurm 22.05.8', 'slurmctld on head-01 24.05.8: 3 releases before it, and slurmctld 24.05 talks to at '
       'most 2'],
      ['gpu-[01-04]: the client commands']], 0),
    # slurm_install_source local: slurmdbd comes from the same package files (the distribution's 22.05 is not what it gets)
    ('slurmdbd-from-the-local-files-too', _ctl_local(SMD, node_candidate='24.11.5-4'), (), [], 0),
    ('slurmdbd-older-than-local-slurmctld', _ctl_local(SMD, node_candidate='24.11.5-4', dbd_installed={'slurmdbd': DEB12}),
     (), [], 0),
    ('slurmdbd-newer-ok', site(head=reading(installed={'slurmdbd': '23.02.7-1', 'slurmctld': DEB12, 'slurm-client': DEB12})), (), [], 0),
    ('mixed-os-mixed-slurm', _mixed_os(), (),
     [['gpu-[03-04]: slurmd would be Slurm 24.11.5', 'but slurmctld on head-01 22.05.8'],
      ['gpu-[03-04]: the client commands would be Slurm 24.11.5'],
      ['the Slurm hosts run 2 OS releases that give 2 Slurm releases', 'debian 12 (bookworm): gpu-[01-02],head-01 would get Slurm 22.05.8',
       'debian 13 (trixie): gpu-[03-04] would get Slurm 24.11.5', 'expected one Slurm release on every host']], 0),
    # one build of SchedMD's packages on two OS releases: one Slurm release everywhere, slurmdbd included
    ('mixed-os-one-local-slurm', _local_everywhere_two_os(), (), [], 0),
    ('no-candidate', site(nodes={'gpu-04': reading(candidate=None)}), (),
     [['gpu-04: package slurmd is not installed and the distribution offers no candidate', 'Candidate: (none)', 'slurm_install_source: local'],
      ['gpu-04: package slurm-client is not installed']], 0),
    ('local-without-slurm-files', _ctl_local(['libpmix-dev_5.0.6-2_amd64.deb']), (),
     [['head-01: package slurmctld is not installed and slurm_install_source is local', 'libpmix-dev_5.0.6-2_amd64.deb'],
      ['head-01: package slurmdbd is not installed and slurm_install_source is local'],
      ['head-01: package slurm-client is not installed and slurm_install_source is local']], 0),
    ('installed-garbage-version', site(nodes={'gpu-01': reading(installed={'slurmd': '1.0-1'})}), (),
     [["gpu-01: package slurmd is installed as version '1.0-1', which names no Slurm release"]], 0),
    ('unreachable', site(n=2), ['gpu-03: cannot be read (Failed to connect to the host via ssh: ssh: connect to host gpu-03 port 22: '
                                'No route to host)'],
     [['gpu-03: cannot be read (Failed to connect', 'leave it out with --limit']], 0),
    ('gpu-node-without-slurm-role', ({'gpu-09': reading(candidate=JAMMY_SLURM)}, {'gpu-09': want(roles=())}), (), [], 0),
    # MIG against the node's GPUs
    ('mig-ok-all-1g', _mig(ALL_1G), (), [], 0),
    ('mig-profile-typo', _mig([{'gpu': 'all', 'instances': [{'profile': '1g.10gbb', 'count': 7}]}]), (),
     [["gpu-01: mig_layout 'dgx-1g' on the node's GPUs (8 x NVIDIA H100 80GB HBM3): GPU 0 (NVIDIA H100 80GB HBM3): "
       "instances[0] profile '1g.10gbb' is not a MIG profile of this GPU; valid: 1g.10gb, 1g.10gb+me, 1g.20gb"]], 0),
    ('mig-count-too-many', _mig([{'gpu': 'all', 'instances': [{'profile': '1g.10gb', 'count': 8}]}]), (),
     [["gpu-01: mig_layout 'dgx-1g'", '1g.10gb']], 0),
    ('mig-index-out-of-range', _mig([{'gpu': 9, 'instances': [{'profile': '3g.40gb', 'count': 2}]}], require=False), (),
     [["gpu-01: mig_layout 'dgx-1g'", "mig_layouts_custom['dgx-1g'][0]: GPU index 9 is out of range", 'GPU indices 0, 1, 2']], 0),
    ('mig-on-l40s', _mig([{'gpu': 'all', 'instances': [{'profile': '1g.10gb', 'count': 7}]}],
                         node=lambda: reading(gpus=[gpu(i, L40S, mig=False) for i in range(4)])), (),
     [["gpu-01: mig_layout 'dgx-1g' on the node's GPUs (4 x NVIDIA L40S)", 'does not support MIG']], 0),
    ('mig-no-driver', _mig(ALL_1G, node=lambda: reading(nvml={'available': False, 'reason': 'library',
                                                              'error': 'libnvidia-ml.so.1 cannot be loaded: libnvidia-ml.so.1: '
                                                                       'cannot open shared object file'})), (),
     [['gpu-01: no NVIDIA driver: libnvidia-ml.so.1 cannot be loaded', "mig_layout 'dgx-1g' needs the driver"]], 0),
    ('mig-no-bindings-yet-warns', _mig(ALL_1G, node=lambda: reading(nvml={'available': False, 'reason': 'bindings',
                                                                          'error': 'the Python NVML bindings cannot be imported'})),
     (), [], 1),
    # a fresh node: the driver, no NVML bindings yet; nvidia-smi names the GPUs and the catalogue has their profiles
    ('mig-fresh-node-checked-by-catalogue', _mig([{'gpu': 'all', 'instances': [{'profile': '1g.10gbb', 'count': 7}]}],
                                                 node=lambda: _fresh([H100] * 8)), (),
     [["gpu-01: mig_layouts_custom['dgx-1g'][0] (mig_layout 'dgx-1g'):", '1g.10gbb', 'as nvidia-smi on the node (8 x NVIDIA H100 80GB HBM3) lists them']],
     0),
    ('mig-fresh-node-ok', _mig(ALL_1G, node=lambda: _fresh([H100] * 8)), (), [], 0),
    ('mig-fresh-node-l40s', _mig([{'gpu': 'all', 'instances': [{'profile': '1g.10gb', 'count': 7}]}], node=lambda: _fresh([L40S] * 4)), (),
     [["gpu-01: mig_layouts_custom['dgx-1g'][0] (mig_layout 'dgx-1g') asks for MIG on GPU 0", 'nvidia-smi on the node (4 x NVIDIA L40S) says',
       'which have no MIG']], 0),
    ('mig-fresh-node-index-out-of-range', _mig([{'gpu': 9, 'instances': [{'profile': '3g.40gb', 'count': 2}]}], require=False,
                                               node=lambda: _fresh([H100] * 8)), (),
     [["gpu-01: mig_layouts_custom['dgx-1g'][0].gpu is 9, but nvidia-smi on the node (8 x NVIDIA H100 80GB HBM3) says the node has 8 GPUs"]], 0),
    ('mig-fresh-node-two-models-warns', _mig(ALL_1G, node=lambda: _fresh([H100] * 4 + [L40S] * 4)), (), [], 1),
    ('mig-model-filter-leaves-gpus', _mig([{'model': 'A100', 'instances': [{'profile': '1g.10gb', 'count': 7}]}]), (),
     [["gpu-01: mig_layout 'dgx-1g' selects none of the node's GPUs 0 (NVIDIA H100 80GB HBM3)", 'mig_require_all_gpus: false']], 0),
    ('mig-model-filter-allowed', _mig([{'model': 'A100', 'instances': [{'profile': '1g.10gb', 'count': 7}]}], require=False), (), [], 0),
    ('mig-reset-blocked-by-telegraf', _mig(ALL_1G, node=lambda: h100_node(holders=[TELEGRAF])), (),
     [["gpu-01: mig_layout 'dgx-1g' changes the MIG mode (a GPU reset) of GPU 0: process 4242 (telegraf) of telegraf.service holds "
       '/dev/nvidia0', 'add telegraf to mig_reset_blockers']], 0),
    ('mig-reset-dcgm-and-job-fine', _mig(ALL_1G, node=lambda: h100_node(holders=[DCGM, JOB])), (), [], 0),
    ('mig-reset-nvidia-drm', _mig(ALL_1G, node=lambda: h100_node(modules=['nvidia', 'nvidia_drm', 'nvidia_modeset'])), (),
     [["gpu-01: mig_layout 'dgx-1g' changes the MIG mode (a GPU reset): nvidia_drm is loaded"]], 0),
    ('mig-no-mode-change-holder-fine', _mig([{'gpu': 'all', 'mig': False}],
                                            node=lambda: reading(gpus=[gpu(i) for i in range(8)], holders=[TELEGRAF])), (), [], 0),
    ('mig-same-typo-four-nodes-one-line', _mig([{'gpu': 'all', 'instances': [{'profile': '2g.20gbx'}]}], n=4), (),
     [["gpu-[01-04]: mig_layout 'dgx-1g' on the node's GPUs (8 x NVIDIA H100 80GB HBM3)", '2g.20gbx']], 0),
]


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_node_problems(case):
    _id, built, missing, expected, warnings = case
    readings, wants = built
    lines, warned = pn.node_problems(readings, wants, missing, today=TODAY)
    assert len(lines) == len(expected), '\n'.join(lines)
    for line, fragments in zip(lines, expected):
        for fragment in fragments:
            assert fragment in line, 'line %r lacks %r' % (line, fragment)
    # (SchedMD's support window: test_support_warnings)
    assert len([w for w in warned if "SchedMD's support" not in w]) == warnings, warned


def test_failure_message_counts_and_lists_lines():
    readings, wants = _mixed_os()
    lines, _warnings = pn.node_problems(readings, wants)
    text = pn.failure_message(lines)
    assert text.startswith('the node preflight found 3 problems, nothing was changed:\n')
    assert text.count('\n') == 3


def test_the_layout_entries_are_named_by_the_inventory_variable():
    readings, wants = _mig([{'gpu': 9, 'instances': [{'profile': '3g.40gb'}]}], var=SHIPPED, require=False)
    lines, _w = pn.node_problems(readings, wants)
    assert "gpucluster.bringup.mig_layouts['dgx-1g'][0]" in lines[0] and 'gpus[0]' not in lines[0]


@pytest.mark.parametrize('layout, gpus, expected', [
    # a shipped layout on a fresh node (nvidia-smi, the catalogue's profiles): its entries are the table's
    ('all-1g.5gb', [H100] * 8, ["gpu-01: gpucluster.bringup.mig_layouts['all-1g.5gb'][0] (mig_layout 'all-1g.5gb'):", '1g.5gb']),
    ('all-1g.10gb', [H100] * 8, []),
    # (a shape passes over GPUs without MIG: they are left uncovered)
    ('all-balanced', [L40S] * 4, ["gpu-01: mig_layout 'all-balanced' (gpucluster.bringup.mig_layouts['all-balanced']) selects none of GPUs 0, 1, 2, 3"]),
])
def test_a_shipped_layout_on_a_fresh_node_is_checked_by_the_catalogue(layout, gpus, expected):
    node_want = want(layout=layout, entries=LAYOUTS[layout], var=SHIPPED)
    readings, wants = site(n=1, node_reading=lambda: _fresh(gpus), node_want=lambda host: node_want)
    lines, _w = pn.node_problems(readings, wants)
    assert len(lines) == (1 if expected else 0), lines
    assert all(part in ' '.join(lines) for part in expected), lines


def test_the_readings_are_not_changed():
    readings, wants = _mig(ALL_1G)
    before = repr(readings)
    pn.node_problems(readings, wants)
    assert repr(readings) == before


@pytest.mark.parametrize('name, expected', [
    ('slurm-smd-slurmd_24.11.5-1_amd64.deb', ('slurm-smd-slurmd', '24.11.5-1')),
    ('slurmd_22.05.8-4+deb12u3_amd64.deb', ('slurmd', '22.05.8-4+deb12u3')),
    ('/srv/slurm/slurm-slurmctld-24.11.5-1.el9.x86_64.rpm', ('slurm-slurmctld', '24.11.5-1.el9')),
    ('slurm-24.11.5-1.el9.x86_64.rpm', ('slurm', '24.11.5-1.el9')),
    ('README', None),
    ('slurmd.deb', None),
])
def test_package_file(name, expected):
    found = pn.package_file(name)
    assert (found and (found['name'], found['version'])) == expected if expected else found is None


# --- the version policy per OS: the ways to a supported release, SchedMD's support window ---------------------------

def _everywhere(os_, candidate):
    return site(head=reading(os_=os_, candidate=candidate), node_reading=lambda: reading(os_=os_, candidate=candidate))


SMD_WAY = ("install a supported one: SchedMD's slurm-smd packages built from the release tarball (https://download.schedmd.com/slurm/, "
           'e.g. slurm-26.05.4.tar.bz2: mk-build-deps -i debian/control; debuild -b -uc -us) and installed with slurm_install_source: '
           'local and slurm_local_package_dir (the way to a release SchedMD supports on 2026-10-01: 25.05, 25.11, 26.05); or move the '
           'Slurm hosts to a distribution release whose own Slurm the collection runs: ')


@pytest.mark.parametrize('os_, candidate, head, distributions', [
    # Ubuntu 22.04: universe has 21.08 only; the message names the OS and its component, never Debian's contrib
    (JAMMY, JAMMY_SLURM, 'Ubuntu 22.04 (jammy) has no newer Slurm than 21.08.5 in its universe component; ',
     "Debian 12 (bookworm) (Slurm 22.05.8, past SchedMD's support since November 2023), Debian 13 (trixie) (Slurm 24.11.5, past "
     "SchedMD's support since May 2026), Ubuntu 24.04 (noble) (Slurm 23.11.4, past SchedMD's support since May 2025)"),
    # a Debian 12 node with an old Slurm from elsewhere: its own 22.05 is not offered to it again
    (BOOKWORM, '21.08.8-2', '',
     "Debian 13 (trixie) (Slurm 24.11.5, past SchedMD's support since May 2026), Ubuntu 24.04 (noble) (Slurm 23.11.4, past "
     "SchedMD's support since May 2025)"),
    # an OS the table does not know: every release in the table
    (('rocky', '9.4', ''), '20.11.9-1', '', "Debian 12 (bookworm) (Slurm 22.05.8, past SchedMD's support since November 2023), "
     "Debian 13 (trixie)"),
])
def test_too_old_names_the_ways_for_its_os(os_, candidate, head, distributions):
    readings, wants = _everywhere(os_, candidate)
    lines, _warnings = pn.node_problems(readings, wants, today=TODAY)
    assert len(lines) == 2, lines
    for line in lines:
        assert ('is older than 22.05, the oldest release the collection supports (slurm_install_source distro): the slurm role '
                'writes gres.conf MultipleFiles= lines (MIG instances) and cgroup.conf CgroupPlugin=autodetect, which a slurmd before '
                '22.05 does not take: it would not start; ' + head + SMD_WAY + distributions) in line, line
        assert 'contrib' not in line


@pytest.mark.parametrize('built, today, expected', [
    # Debian 13's 24.11: supported until May 2026, a warning from then on (one line for every host)
    (_everywhere(TRIXIE, DEB13), '2026-04-30', []),
    (_everywhere(TRIXIE, DEB13), '2026-05-01', ["gpu-[01-04],head-01: Slurm 24.11.5 is past SchedMD's support: 24.11 (released November "
                                                '2024) was supported until May 2026; SchedMD supports 25.05, 25.11, 26.05 on 2026-05-01']),
    # Ubuntu 24.04's 23.11 runs, with the warning
    (_everywhere(NOBLE, NOBLE_SLURM), TODAY, ["gpu-[01-04],head-01: Slurm 23.11.4 is past SchedMD's support: 23.11 (released November "
                                              '2023) was supported until May 2025', 'an upgrade from 23.11 reaches 25.05 in one step']),
])
def test_support_warnings(built, today, expected):
    readings, wants = built
    lines, warnings = pn.node_problems(readings, wants, today=today)
    assert lines == []
    assert len(warnings) == (1 if expected else 0), warnings
    for fragment in expected:
        assert fragment in warnings[0], warnings


@pytest.mark.parametrize('today, expected', [
    ('2026-08-31', []),
    ('2026-09-01', ['gpu-[01-04],head-01: Slurm 25.05.3 lacks the fixes of 25.05.9 (eight CVEs, September 2026): upgrade to 25.05.9 or '
                    'later']),
])
def test_security_release_warning(today, expected):
    readings, wants = site(head=reading(candidate='25.05.3-1'), node_reading=lambda: reading(candidate='25.05.3-1'))
    lines, warnings = pn.node_problems(readings, wants, today=today)
    assert lines == [] and warnings == expected


# --- cgroup v1 with Slurm 25.05+ (issue 46: SchedMD deprecated the cgroup/v1 plugin) -----------------------------------

V1_MOUNTS = ('sysfs /sys sysfs rw 0 0\ntmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0\n'
             'cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0\n'
             'cgroup /sys/fs/cgroup/devices cgroup rw,nosuid,nodev,noexec,relatime,devices 0 0\n')
HYBRID_MOUNTS = V1_MOUNTS + 'cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n'
V2_MOUNTS = 'sysfs /sys sysfs rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n'


@pytest.mark.parametrize('mounts, expected', [
    (V1_MOUNTS, 'v1'), (HYBRID_MOUNTS, 'v1'), (V2_MOUNTS, 'v2'), ('sysfs /sys sysfs rw 0 0\n', None), ('', None), (None, None),
    ('garbage\n\n', None),
])
def test_cgroup_version(mounts, expected):
    assert pn.cgroup_version(mounts) == expected


def _cgroup_site(candidate, cgroup):
    def node():
        found = reading(os_=TRIXIE, candidate=candidate)
        found['cgroup'] = cgroup
        return found
    head = reading(os_=TRIXIE, candidate=candidate)
    head['cgroup'] = cgroup
    return site(head=head, node_reading=node)


@pytest.mark.parametrize('candidate, cgroup, warned', [
    ('26.05.4-1', 'v1', True),
    ('25.05.9-1', 'v1', True),
    ('26.05.4-1', 'v2', False),
    ('26.05.4-1', None, False),
    ('24.11.5-4', 'v1', False),
])
def test_cgroup_v1_with_a_release_that_deprecates_it_is_a_warning(candidate, cgroup, warned):
    readings, wants = _cgroup_site(candidate, cgroup)
    lines, warnings = pn.node_problems(readings, wants, today='2026-06-01')
    assert lines == []
    found = [w for w in warnings if 'cgroup v1' in w]
    if warned:
        # the compute nodes only (slurmd), not the controller
        assert found == ['gpu-[01-04]: the node mounts cgroup v1 and would run slurmd %s: SchedMD deprecated the cgroup/v1 plugin '
                         '(no new features since 25.05, to be removed in a later release; cgroup.conf(5)); plan the move to cgroup v2 '
                         '(systemd.unified_cgroup_hierarchy=1 on the kernel command line, or a distribution that boots cgroup v2)'
                         % candidate.split('-')[0]], warnings
    else:
        assert found == [], warnings


SKEW_2302 = ("head-01: the client commands would be Slurm 23.02.7 (package %s 23.02.7-1, installed) but slurmctld on head-01 22.05.8: "
             "Slurm's version rules: slurmdbd >= slurmctld >= slurmd and the client commands; expected release 22.05 or older for the client "
             'commands')


@pytest.mark.parametrize('client, expected', [
    # Debian's, the RHEL family's and SchedMD's package of the client commands
    ('slurm-client', [SKEW_2302 % 'slurm-client']),
    ('slurm', [SKEW_2302 % 'slurm']),
    ('slurm-smd-client', [SKEW_2302 % 'slurm-smd-client']),
    # no package of the client commands: nothing to judge
    ('slurm-wlm', []),
])
def test_the_client_commands_package_of_each_family(client, expected):
    head = reading(installed={'slurmctld': DEB12, client: '23.02.7-1'}, packages=('slurmctld', client))
    lines, _warned = pn.node_problems({'head-01': head}, {'head-01': dict(want(('controller',)), packages=['slurmctld', client])}, today=TODAY)
    assert lines == expected


SKEW_2411 = ('head-01: the client commands would be Slurm 22.05.8 (package %s 22.05.8-1%s, a local package file) but slurmctld on head-01 '
             "24.11.5: 4 releases before it, and slurmctld 24.11 talks to at most 3 releases back (SchedMD's upgrade rules); expected "
             'release 24.11 or at most 3 before it')


@pytest.mark.parametrize('packages, files, expected', [
    (['slurm-slurmctld', 'slurm'], ['slurm-22.05.8-1.el9.x86_64.rpm', 'slurm-slurmctld-24.11.5-1.el9.x86_64.rpm'], SKEW_2411 % ('slurm', '.el9')),
    (['slurm-smd-slurmctld', 'slurm-smd-client'], ['slurm-smd-client_22.05.8-1_amd64.deb', 'slurm-smd-slurmctld_24.11.5-1_amd64.deb'],
     SKEW_2411 % ('slurm-smd-client', '')),
])
def test_the_client_commands_of_local_package_files(packages, files, expected):
    """The client commands get the version of their own package file, not the newest of the Slurm files."""
    head = reading(packages=packages, local=files)
    lines, _warned = pn.node_problems({'head-01': head}, {'head-01': dict(want(('controller',)), packages=packages, source='local')},
                                      today=TODAY)
    assert lines == [expected]


ONE_1G = [{'gpu': 'all', 'instances': [{'profile': '1g.10gb', 'count': 7}]}]
NOT_CHECKED = "gpu-01: mig_layout 'dgx-1g' not checked against the node's GPUs: %s; the mig role checks it after the nvml stage"
NEEDS_DRIVER = ("gpu-01: no NVIDIA driver: libnvidia-ml.so.1 cannot be loaded (%s); mig_layout 'dgx-1g' needs the driver: install the "
                'NVIDIA driver (nvidia-smi must work), or remove mig_layout from this node')


@pytest.mark.parametrize('node, lines, warnings', [
    (lambda: _fresh([H100, L40S]), [], [NOT_CHECKED % 'several models (NVIDIA H100 80GB HBM3, NVIDIA L40S)']),
    (lambda: _fresh(['NVIDIA GH200 480GB']), [],
     ["gpu-01: mig_layout 'dgx-1g' not checked against the node's GPUs: no MIG profile table for NVIDIA GH200 480GB here; the mig role "
      'checks it after the nvml stage']),
    (lambda: reading(nvml={'available': False, 'reason': 'library', 'error': 'libnvidia-ml.so.1: cannot open shared object file'}),
     [NEEDS_DRIVER % 'libnvidia-ml.so.1: cannot open shared object file'], []),
    (lambda: reading(nvml={'available': False, 'reason': 'library', 'error': None}), [NEEDS_DRIVER % 'NVML does not answer'], []),
    (lambda: reading(nvml={'available': False, 'reason': 'bindings', 'error': 'no pynvml'}), [], [NOT_CHECKED % 'no pynvml']),
    (lambda: reading(nvml={'available': False, 'reason': 'bindings', 'error': None}), [], [NOT_CHECKED % 'NVML cannot be read']),
])
def test_a_layout_on_a_node_whose_gpus_nvml_does_not_show(node, lines, warnings):
    found, warned = pn.node_problems({'gpu-01': node()}, {'gpu-01': want(layout='dgx-1g', entries=ONE_1G)}, today=TODAY)
    assert (found, [w for w in warned if not w.startswith('gpu-01: Slurm ')]) == (lines, warnings)


def test_hosts_without_a_reading_and_the_failure_message():
    lines, warned = pn.node_problems({}, {}, missing=['gpu-09: unreachable (ssh: timeout)', 'gpu-10: unreachable'], today=TODAY)
    assert (lines, warned) == (['gpu-09: unreachable (ssh: timeout); nothing was read from it (bring it back, or leave it out with --limit)',
                                'gpu-10: unreachable; nothing was read from it (bring it back, or leave it out with --limit)'], [])
    assert pn.failure_message(lines[:1]) == 'the node preflight found 1 problem, nothing was changed:\n' + lines[0]
    assert pn.failure_message(lines) == 'the node preflight found 2 problems, nothing was changed:\n' + '\n'.join(lines)


def test_slurmdbd_older_than_slurmctld():
    head = reading(installed={'slurmdbd': DEB12, 'slurmctld': '23.02.7-1', 'slurm-client': '23.02.7-1'})
    lines, _warned = pn.node_problems({'head-01': head}, {'head-01': want(('controller', 'slurmdbd'))}, today=TODAY)
    assert lines == ["head-01: slurmdbd would be Slurm 22.05.8 (package slurmdbd 22.05.8-4+deb12u3, installed) but slurmctld on head-01 "
                     "23.02.7: Slurm's version rules: slurmdbd >= slurmctld >= slurmd and the client commands; expected slurmdbd of "
                     'release 23.02 or newer']


def test_the_newest_local_package_file_by_release_not_by_text():
    node = reading(packages=('slurmd', 'slurm-client'),
                   local=['slurmd_21.08.10-1_amd64.deb', 'slurmd_21.08.9-1_amd64.deb', 'slurm-client_21.08.10-1_amd64.deb'])
    lines, _warned = pn.node_problems({'gpu-01': node}, {'gpu-01': dict(want(), packages=['slurmd', 'slurm-client'], source='local')},
                                      today=TODAY)
    assert len(lines) == 1
    assert lines[0].startswith('gpu-01: Slurm 21.08.10 (packages slurmd, slurm-client 21.08.10-1, a local package file) is older than 22.05')


def test_a_layout_the_planner_refuses_names_the_gpus_by_model_in_index_order():
    node = reading(gpus=[gpu(0, L40S, mig=False), gpu(1, L40S, mig=False), gpu(2), gpu(3)])
    lines, _warned = pn.node_problems({'gpu-01': node}, {'gpu-01': want(layout='dgx-1g', entries=[{'gpu': 'all', 'instances': [
        {'profile': '2g.20gbx'}]}])}, today=TODAY)
    assert len(lines) == 1
    assert lines[0].startswith("gpu-01: mig_layout 'dgx-1g' on the node's GPUs (2 x NVIDIA L40S, 2 x NVIDIA H100 80GB HBM3): "), lines
