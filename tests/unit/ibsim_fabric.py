# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Simulated InfiniBand fabrics for the tests: ibsim net files, the REAL ibnetdiscover over them, expected topology.conf.

* :func:`fat_tree` describes a fabric by a few numbers (hosts, HCAs per host, leaves, spines, pods and cores,
  rail-optimised or not, extra CAs, empty switches, dual-ported HCAs) and returns a :class:`Fabric`: its
  ibsim net file (``Fabric.net``), the GUIDs and ports every node got, and
  :meth:`Fabric.expected_lines`, the topology/tree lines of topology.conf as they follow from the
  construction (which host sits on which leaf, which spine sees which leaf), not from the parser under test.
* :func:`ibnetdiscover` starts ``ibsim`` (ibsim-utils) on a net file with its own socket name
  (``IBSIM_SOCKNAME``, an abstract unix socket, so parallel tests do not meet), runs the real
  ``ibnetdiscover`` (infiniband-diags) with ``libumad2sim.so`` preloaded (what ``ibsim-run`` does), returns
  its standard output, and always stops ibsim.  :func:`running_ibsim` is the context manager under it.
* :func:`find_tools` finds the three pieces or raises :class:`IbsimUnavailable` naming what is missing and
  the Debian packages that bring it (``ibsim-utils``, ``infiniband-diags``).

How ibsim reads a net file (ibsim 0.10, ``ibsim/sim_net.c``): a node is ``Switch|Ca <ports> "<id>"`` with an
optional ``# "<node description>"`` (else the id is the description; ``#`` and ``@`` are not allowed in ids), a
switch header may end ``enhanced port 0 lid <lid> lmc 0``; a ``switchguid=``/``caguid=`` line sets the GUID
the next node of that type gets (a switch's port GUID is its node GUID, a CA port's is node GUID + port
number), ``vendid=`` and ``sysimgguid=`` apply to the next node, ``devid=`` to all that follow; a port line is
``[<port>] "<peer id>"[<peer port>]`` and may carry what ibnetdiscover prints after it: ``# "<peer desc>" lid
<peer lid> 4xHDR`` on a switch, ``# lid <own lid> lmc 0 "<peer desc>" lid <peer lid> 4xHDR`` on a CA, from
which ibsim takes the CA's LID, the width and the speed.  ibsim 0.10 knows SDR..HDR (and FDR10), not NDR:
these fabrics run 4xHDR.  Stdlib only (and the collection's hostlist, for the expected lines).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress

PACKAGES = 'ibsim-utils infiniband-diags'
REQUIRE_ENV = 'GPUCLUSTER_REQUIRE_IBSIM'
SWITCH_GUID_BASE = 0xb8599f0300a10000   # NVIDIA Quantum-2 style OUI (b8:59:9f)
CA_GUID_BASE = 0xe09d730300b20000       # ConnectX-7 style OUI (e0:9d:73); each CA takes 16 GUIDs
SWITCH_DEVID = 0xd2f0                   # Quantum-2 (MQM9700)
CA_DEVID = 0x1021                       # ConnectX-7 (MT4129)
AGGREGATION_DEVID = 0xcf09              # the SHARP aggregation node of a Quantum-2 switch
AGGREGATION_DESC = 'Mellanox Technologies Aggregation Node'
DEFAULT_CA_DESC = 'MT4129 ConnectX7   Mellanox Technologies'
LINK = '4xHDR'
# ibsim's own limits (ibsim -h: -N nodes, -S switches, -P ports); raised when a fabric needs more.
_IBSIM_LIMITS = (2048, 256, 13312)
_READY = 'Network simulator ready'


class IbsimUnavailable(RuntimeError):
    """ibsim, libumad2sim.so or ibnetdiscover is not installed here."""


class IbsimError(RuntimeError):
    """ibsim or ibnetdiscover failed or timed out; the message names which and shows its output."""


# --- the fabric -------------------------------------------------------------------------------------------------------

class Node(object):
    """One switch or CA of the net file: ``id`` (ibsim's), ``desc``, ``guid`` (int), ``lid``, ``nports``,
    ``ports`` {port: (peer Node, peer port)}; a CA also has ``host`` and ``device`` (None for extra CAs whose
    description is not "<host> <device>")."""

    def __init__(self, kind, node_id, desc, guid, lid, nports):
        self.kind, self.id, self.desc, self.guid, self.lid, self.nports = kind, node_id, desc, guid, lid, nports
        self.ports = {}
        words = desc.split(None, 1)
        self.host = words[0] if kind == 'Ca' and len(words) == 2 else None
        self.device = words[1] if self.host else None

    @property
    def hex(self):
        """The GUID as ibnetdiscover prints it in "S-<guid>" / "H-<guid>": 16 lower-case hex digits."""
        return '%016x' % self.guid

    def free_port(self, first, last):
        for port in range(first, last + 1):
            if port not in self.ports:
                return port
        raise ValueError('%s has no free port in %d-%d' % (self.id, first, last))


class Fabric(object):
    """What :func:`fat_tree` built: the nodes, their roles, and the net file text (``net``)."""

    def __init__(self):
        self.switches = []      # Node, in net-file order
        self.cas = []
        self.role = {}          # switch id -> 'leaf' | 'spine' | 'core' | 'empty'
        self.pod = {}           # leaf / spine id -> pod number
        self.host_cas = {}      # host name -> [CA Node] (the generated hosts, in HCA order)
        self.extra = []         # extra CA Nodes
        self.dual_port = set()  # hosts whose HCAs are cabled to two leaves

    def node(self, node_id):
        for node in self.switches + self.cas:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def ca(self, desc):
        """The CA with this node description (the first, if two share it)."""
        for ca in self.cas:
            if ca.desc == desc:
                return ca
        raise KeyError(desc)

    def switch_name(self, switch):
        """The name the parser should give: the system name of "MF0;<name>:<model>/<ASIC>"."""
        return switch.desc.split(';', 1)[1].split(':', 1)[0]

    @property
    def hosts(self):
        return list(self.host_cas)

    @property
    def net(self):
        return _net_text(self)

    def expected_lines(self, nodes=None, rail_hca=None):
        """topology/tree lines by construction for the Slurm ``nodes`` (a list; default every generated host).

        Each Slurm node that the generator made sits on the leaf of its rail-0 HCA (``rail_hca``, else its first,
        the lowest-numbered device), leaves in name order; then every spine that is linked to a leaf holding
        Slurm nodes, with those leaves; then every core whose leaves span more than one pod (a core above one
        pod only repeats that pod's spines), with the spines it is linked to that are listed.  Leaves holding
        no Slurm node (other rails, other pods, empty switches) are in no line.  Extra CAs are storage or
        unknown hosts, never Slurm nodes; a Slurm node named by an extra CA, or dual-ported across two leaves,
        has no single leaf: ``ValueError`` (the parser refuses such a fabric too).
        """
        nodes = self.hosts if nodes is None else list(nodes)
        placed = {}  # leaf id -> [host]
        for host in nodes:
            cas = self.host_cas.get(host)
            if not cas:
                continue
            if host in self.dual_port or any(ca.host == host for ca in self.extra):
                raise ValueError('by construction %s has no single leaf' % host)
            ca = [c for c in cas if c.device == rail_hca][0] if rail_hca else cas[0]
            (peer, _port), = ca.ports.values()
            placed.setdefault(peer.id, []).append(host)
        lines = ['SwitchName=%s Nodes=%s' % (self.switch_name(self.node(leaf)), compress(_natural(hosts)))
                 for leaf, hosts in sorted(placed.items(), key=lambda item: _natural_key(item[0]))]
        spines = {}
        for switch in self._role('spine'):
            below = [peer for peer, _port in switch.ports.values() if peer.id in placed]
            if below:
                spines[switch.id] = below
        lines += self._upper_lines(spines)
        pods = set(self.pod[leaf] for leaf in placed)
        cores = {}
        if len(pods) > 1:
            for switch in self._role('core'):
                below = [peer for peer, _port in switch.ports.values() if peer.id in spines]
                if below:
                    cores[switch.id] = below
        return lines + self._upper_lines(cores)

    def _role(self, role):
        return [switch for switch in self.switches if self.role[switch.id] == role]

    def _upper_lines(self, children):
        return ['SwitchName=%s Switches=%s' % (self.switch_name(self.node(switch)),
                                               compress(_natural(self.switch_name(c) for c in below)))
                for switch, below in sorted(children.items(), key=lambda item: _natural_key(item[0]))]


def _natural_key(name):
    parts = re.split(r'(\d+)', name)
    return [int(part) if index % 2 else part for index, part in enumerate(parts)]


def _natural(names):
    return sorted(set(names), key=_natural_key)


def fat_tree(hosts, hcas_per_host=1, leaves=1, spines=0, rails=False, hosts_per_leaf=None, name='gpu-%02d',
             extra_cas=(), empty_switches=0, pods=1, cores=0, dual_port=(), aggregation_nodes=False,
             hca='mlx5_%d', leaf='leaf-%02d', spine='spine-%02d', core='core-%02d', empty='spare-%02d'):
    """A fat-tree fabric as an ibsim net file.

    * ``hosts`` hosts named ``name % n`` (1-based), each with ``hcas_per_host`` one-port HCAs described
      ``"<host> <hca % i>"`` (``"gpu-01 mlx5_0"``).
    * ``leaves`` leaf switches.  ``rails=False``: hosts fill the leaves in order, ``hosts_per_leaf`` each
      (default: as even as possible), all HCAs of a host on its leaf.  ``rails=True`` (NVIDIA's
      rail-optimised SuperPOD): the leaves form groups of ``hcas_per_host`` (one leaf per rail), hosts fill the
      groups in order, and HCA i of every host of a group is on that group's leaf i.
    * ``spines`` spine switches; with ``pods`` > 1 leaves and spines are split into equal pods and a spine is
      linked to every leaf of its pod, else to every leaf.  ``cores`` core switches, each linked to every spine.
    * ``extra_cas``: ``[(description, leaf number), ...]``, one-port CAs on a free port of that (1-based) leaf:
      a storage node ``"stor-01 mlx5_0"``, an adapter still showing its default description
      (:data:`DEFAULT_CA_DESC`), or a second CA claiming a generated host's name.
    * ``empty_switches`` switches with no CA, linked to every spine of pod 1 like a leaf (spare leaves).
    * ``dual_port``: host numbers (1-based) whose HCAs get a second port, cabled to the next leaf.
    * ``aggregation_nodes``: each switch gets port 65 and on it its SHARP "Aggregation Node" CA, as Quantum-2
      switches show in real dumps.

    Switches are described ``"MF0;<name>:MQM9700/U1"`` (a managed Quantum-2 switch), take LIDs from 1, CAs after
    them; every link runs 4xHDR.  ``ValueError`` for numbers that do not make such a fabric.
    """
    if hosts < 1 or hcas_per_host < 1 or leaves < 1 or spines < 0 or cores < 0 or pods < 1 or empty_switches < 0:
        raise ValueError('fat_tree: hosts, hcas_per_host, leaves and pods must be at least 1, the rest not negative')
    if leaves % pods or (spines and spines % pods) or (pods > 1 and not spines):
        raise ValueError('fat_tree: %d leaves and %d spines do not split into %d pods' % (leaves, spines, pods))
    if cores and not spines:
        raise ValueError('fat_tree: cores need spines')
    if empty_switches and not spines:
        raise ValueError('fat_tree: empty switches hang off the spines; give spines')
    if rails and leaves % hcas_per_host:
        raise ValueError('fat_tree: rails=True needs the leaves (%d) in groups of hcas_per_host (%d)'
                         % (leaves, hcas_per_host))
    groups = leaves // hcas_per_host if rails else leaves
    per = hosts_per_leaf or -(-hosts // groups)
    if per * groups < hosts:
        raise ValueError('fat_tree: %d hosts do not fit %d leaf groups of %d hosts' % (hosts, groups, per))
    fabric = Fabric()
    nports = 65 if aggregation_nodes else 64
    lids = iter(range(1, 49152))

    def switch(role, label, number):
        node_name = label % number
        node = Node('Switch', node_name, 'MF0;%s:MQM9700/U1' % node_name, SWITCH_GUID_BASE + len(fabric.switches),
                    next(lids), nports)
        fabric.switches.append(node)
        fabric.role[node.id] = role
        return node

    leaf_nodes = [switch('leaf', leaf, n) for n in range(1, leaves + 1)]
    spine_nodes = [switch('spine', spine, n) for n in range(1, spines + 1)]
    core_nodes = [switch('core', core, n) for n in range(1, cores + 1)]
    empty_nodes = [switch('empty', empty, n) for n in range(1, empty_switches + 1)]

    def ca(desc, node_id, nports_ca=1):
        node = Node('Ca', node_id, desc, CA_GUID_BASE + 16 * len(fabric.cas), next(lids), nports_ca)
        fabric.cas.append(node)
        return node

    half = 32  # ports 1-32 face down (hosts, lower switches), 33-64 up; 65 is the aggregation node's
    for number in range(1, hosts + 1):
        host = name % number
        group = (number - 1) // per
        cas = []
        for index in range(hcas_per_host):
            device = hca % index
            where = leaf_nodes[group * hcas_per_host + index] if rails else leaf_nodes[group]
            node = ca('%s %s' % (host, device), '%s/%s' % (host, device), 2 if number in dual_port else 1)
            _link(node, 1, where, where.free_port(1, half))
            if number in dual_port:
                other = leaf_nodes[(leaf_nodes.index(where) + 1) % leaves]
                if other is where:
                    raise ValueError('fat_tree: dual_port needs two leaves')
                _link(node, 2, other, other.free_port(1, half))
                fabric.dual_port.add(host)
            cas.append(node)
        fabric.host_cas[host] = cas
    for index, (desc, leaf_number) in enumerate(extra_cas, 1):
        where = leaf_nodes[leaf_number - 1]
        node = ca(desc, 'extra-%d' % index)
        _link(node, 1, where, where.free_port(1, half))
        fabric.extra.append(node)
    per_pod_leaves = leaves // pods
    per_pod_spines = spines // pods if spines else 0
    for index, node in enumerate(leaf_nodes):
        fabric.pod[node.id] = index // per_pod_leaves + 1
    for index, node in enumerate(spine_nodes):
        fabric.pod[node.id] = index // per_pod_spines + 1
        for below in leaf_nodes + empty_nodes:
            if fabric.pod.get(below.id, 1) == fabric.pod[node.id]:
                _link(below, below.free_port(half + 1, 2 * half), node, node.free_port(1, half))
    for node in core_nodes:
        for below in spine_nodes:
            _link(below, below.free_port(half + 1, 2 * half), node, node.free_port(1, 2 * half))
    if aggregation_nodes:
        for node in list(fabric.switches):
            agg = ca(AGGREGATION_DESC, 'sharp/%s' % node.id)
            agg.sysimgguid = node.guid
            _link(node, 65, agg, 1)
    return fabric


def _link(a, a_port, b, b_port):
    if a_port in a.ports or b_port in b.ports:
        raise ValueError('port taken: %s[%d] or %s[%d]' % (a.id, a_port, b.id, b_port))
    a.ports[a_port] = (b, b_port)
    b.ports[b_port] = (a, a_port)


def _net_text(fabric):
    out = ['# ibsim net file written by tests/unit/ibsim_fabric.py (fat_tree)', '']
    for node in fabric.switches:
        out += ['vendid=0x2c9', 'devid=0x%x' % SWITCH_DEVID, 'switchguid=0x%016x' % node.guid,
                'Switch\t%d "%s"\t\t# "%s" enhanced port 0 lid %d lmc 0' % (node.nports, node.id, node.desc, node.lid)]
        for port in sorted(node.ports):
            peer, peer_port = node.ports[port]
            out.append('[%d]\t"%s"[%d]\t\t# "%s" lid %d %s' % (port, peer.id, peer_port, peer.desc, peer.lid, LINK))
        out.append('')
    for node in fabric.cas:
        agg = getattr(node, 'sysimgguid', None)
        out += ['vendid=0x2c9', 'devid=0x%x' % (AGGREGATION_DEVID if agg else CA_DEVID)]
        out += ['sysimgguid=0x%016x' % agg] if agg else []
        out += ['caguid=0x%016x' % node.guid, 'Ca\t%d "%s"\t\t# "%s"' % (node.nports, node.id, node.desc)]
        for port in sorted(node.ports):
            peer, peer_port = node.ports[port]
            out.append('[%d]\t"%s"[%d]\t\t# lid %d lmc 0 "%s" lid %d %s'
                       % (port, peer.id, peer_port, node.lid, peer.desc, peer.lid, LINK))
        out.append('')
    return '\n'.join(out)


# --- running ibsim and ibnetdiscover ----------------------------------------------------------------------------------

def _which(program):
    return shutil.which(program) or shutil.which(program, path='/usr/sbin:/sbin:/usr/bin:/bin:/usr/local/sbin')


def find_tools():
    """``{'ibsim': path, 'ibnetdiscover': path, 'umad2sim': path}``, or :class:`IbsimUnavailable` naming what is
    missing.  ``$IBSIM_UMAD2SIM`` may name libumad2sim.so; else the usual library folders are searched."""
    found = {'ibsim': _which('ibsim'), 'ibnetdiscover': _which('ibnetdiscover')}
    preload = os.environ.get('IBSIM_UMAD2SIM')
    if not preload:
        candidates = sorted(glob.glob('/usr/lib*/*/umad2sim/libumad2sim.so') + glob.glob('/usr/lib*/umad2sim/libumad2sim.so')
                            + glob.glob('/usr/local/lib*/umad2sim/libumad2sim.so'))
        preload = candidates[0] if candidates else None
    found['umad2sim'] = preload if preload and os.path.isfile(preload) else None
    missing = ['%s (%s)' % (what, package) for what, package in (
        ('ibsim', 'ibsim-utils'), ('umad2sim', 'ibsim-utils: libumad2sim.so'),
        ('ibnetdiscover', 'infiniband-diags')) if not found[what]]
    if missing:
        raise IbsimUnavailable('not installed here: %s; install with "apt-get install -y %s"'
                               % (', '.join(missing), PACKAGES))
    return found


def _limits(net):
    nodes = len(re.findall(r'^(?:Switch|Ca|Hca)\s', net, re.M))
    switches = len(re.findall(r'^Switch\s', net, re.M))
    ports = sum(int(n) + 1 for n in re.findall(r'^(?:Switch|Ca|Hca)\s+(\d+)', net, re.M))
    return ['-N', str(max(_IBSIM_LIMITS[0], nodes + 1)), '-S', str(max(_IBSIM_LIMITS[1], switches + 1)),
            '-P', str(max(_IBSIM_LIMITS[2], ports + 1))]


@contextmanager
def running_ibsim(net, timeout=15):
    """Run ``ibsim -n -s`` on the net file text ``net`` with a socket of its own; yields the environment
    (``IBSIM_SOCKNAME``, ``LD_PRELOAD``) a libibumad program needs to talk to it, and ``IBSIM_PID``.  ibsim is
    stopped on the way out, whatever happened; ``IbsimError`` when it dies or is not ready within ``timeout`` seconds."""
    tools = find_tools()
    sockname = 'gpucluster-ibsim-%d-%s' % (os.getpid(), uuid.uuid4().hex[:12])
    workdir = tempfile.mkdtemp(prefix='ibsim-')
    path = os.path.join(workdir, 'fabric.net')
    with open(path, 'w') as handle:
        handle.write(net)
    env = dict(os.environ, IBSIM_SOCKNAME=sockname)
    env.pop('LD_PRELOAD', None)
    argv = [tools['ibsim'], '-n', '-s'] + _limits(net) + [path]
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, start_new_session=True)
    output = []
    ready = threading.Event()

    def read():
        for line in proc.stdout:
            output.append(line)
            if _READY in line:
                ready.set()

    reader = threading.Thread(target=read, name='ibsim-output')
    reader.daemon = True
    reader.start()
    try:
        deadline = time.time() + timeout
        while not ready.wait(0.02):
            if proc.poll() is not None or time.time() > deadline:
                reader.join(1)
                raise IbsimError('ibsim %s (%s) before "%s"; its output:\n%s'
                                 % ('exited with status %s' % proc.returncode if proc.returncode is not None
                                    else 'was not ready after %ss' % timeout, ' '.join(argv), _READY,
                                    ''.join(output)[-4000:]))
        yield dict(env, LD_PRELOAD=tools['umad2sim'], IBSIM_PID=str(proc.pid))
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        reader.join(5)
        proc.stdout.close()
        shutil.rmtree(workdir, ignore_errors=True)


def ibnetdiscover(fabric_or_net, args=(), timeout=60, sim_host=None):
    """The standard output of the real ``ibnetdiscover [args]`` over ibsim running ``fabric_or_net`` (a
    :class:`Fabric` or net file text), from ``sim_host`` (an ibsim node id; default the first host CA, as on a
    compute node, else ibsim's first node).  ibsim runs only for this call."""
    net = fabric_or_net.net if isinstance(fabric_or_net, Fabric) else fabric_or_net
    if sim_host is None and isinstance(fabric_or_net, Fabric) and fabric_or_net.host_cas:
        sim_host = list(fabric_or_net.host_cas.values())[0][0].id
    with running_ibsim(net, timeout=min(timeout, 15)) as env:
        if sim_host:
            env['SIM_HOST'] = sim_host
        return run_ibnetdiscover(env, args, timeout)


def run_ibnetdiscover(env, args=(), timeout=60):
    """Run the real ``ibnetdiscover [args]`` in ``env`` (from :func:`running_ibsim`); its standard output.
    ``IbsimError`` with its exit status and standard error when it fails, prints nothing or times out."""
    argv = [find_tools()['ibnetdiscover']] + list(args)
    where = 'LD_PRELOAD=%s IBSIM_SOCKNAME=%s' % (env.get('LD_PRELOAD'), env.get('IBSIM_SOCKNAME'))
    try:
        run = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise IbsimError('%s %s timed out after %ss; standard error:\n%s'
                         % (where, ' '.join(argv), timeout, exc.stderr or ''))
    if run.returncode != 0 or not run.stdout.strip():
        raise IbsimError('%s %s exited with status %d%s; standard error:\n%s'
                         % (where, ' '.join(argv), run.returncode,
                            '' if run.stdout.strip() else ' and printed nothing', run.stderr[-4000:]))
    return run.stdout
