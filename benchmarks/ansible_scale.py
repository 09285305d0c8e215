#!/usr/bin/env python3
"""Ansible-side scale (issue #23 item 3): a no-op site.yml over many inventory hosts, per Ansible setting.

    bash benchmarks/ansible_scale.sh                       # 16 and 64 GPU nodes: every variant at 16, default at 64
    bash benchmarks/ansible_scale.sh 8,16 default,forks    # sizes, the variants at the smallest
    bash benchmarks/ansible_scale.sh 16,64 default,forks,free --larger forks

Every inventory host is a whole node, as on a site: a systemd container of the simulated cluster
(scripts/cluster.sh) reached over ssh as `admin` with sudo. The extra GPU nodes gpu-03 ... gpu-N are
clones of the converged gpu-02 (`podman commit`: the A100 node with its simulated GPUs, munge, slurmd,
enroot, pyxis), each with its own name, address and /etc/hosts entries, started with the cluster's
label (`cluster.sh down` removes them). A first site.yml run adds them to the cluster (slurm.conf
lists them, their slurmds register); then each variant runs site.yml again, and its PLAY RECAP must
say changed=0 failed=0 for every host (the benchmark stops otherwise).

Per run it prints: wall seconds, the CPU seconds of ansible-playbook and its workers (the Ansible
controller's share: what a site pays on its one Ansible machine), the CPU seconds of the whole machine
(controller plus every node's modules: on a site the nodes' share is spread over the nodes), the
tasks per GPU node (ok + skipped), and the slowest tasks (ansible.posix.profile_tasks).

Variants (Ansible settings; each over the same converged hosts):
  default   forks 5 (Ansible's default), linear strategy, pipelining and ControlPersist (the simulated inventory's)
Every run has ANSIBLE_TIMEOUT=60 (ANSIBLE_SCALE_TIMEOUT): with Ansible's 10 s, sudo's prompt timed out on loaded hosts.
  forks     forks = the number of hosts
  free      strategy free (ANSIBLE_STRATEGY) with forks = hosts: site.yml's preflight refuses it now (measured failing
            halfway in the slurm play before that check)
  nopipe    pipelining off (-e ansible_pipelining=false) with forks = hosts
  cache     forks = hosts, a jsonfile fact cache and gathering=smart (site.yml's facts play still runs setup)

With --resume, at the largest size: every GPU node is drained (an admin's reason), then resume.yml runs
over all of them with forks = hosts (its real per-node checks on every node, the probe jobs, one
`scontrol update`), and every node must be idle after it.

The host needs fs.inotify.max_user_instances large enough for one systemd per node (the script says so).
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, '.build', 'ansible-scale')
CLUSTER = os.path.join(ROOT, 'scripts', 'cluster.sh')
LABEL = 'io.gpucluster.sim'
PREFIX = 'gcsim-'
NETWORK = os.environ.get('GPUCLUSTER_SIM_NETWORK', 'gpucluster-sim')
NET_BASE = os.environ.get('GPUCLUSTER_SIM_SUBNET', '10.89.42.0/24').rsplit('.', 1)[0]
HOST_VARS = os.path.join(ROOT, 'inventory', 'simulated', 'host_vars')
SOURCE = 'gpu-02'
FIRST_OCTET = 13
LAST_OCTET = 250
IMAGE_REPO = 'localhost/gpucluster-sim-clone'
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, 'scripts', 'lib', 'containers.conf'))
VARIANTS = ('default', 'forks', 'free', 'nopipe', 'cache')
INOTIFY_PER_NODE = 12


def base_nodes():
    """The simulated cluster's own nodes and their address octets, from the simulated inventory (gpucluster_sim_octet)."""
    octets = {}
    for entry in sorted(os.listdir(HOST_VARS)):
        if entry.endswith('.yml'):
            with open(os.path.join(HOST_VARS, entry)) as handle:
                found = re.search(r'^gpucluster_sim_octet: *(\d+)', handle.read(), re.M)
            if found:
                octets[entry[:-4]] = int(found.group(1))
    return octets


def sh(argv, check=True, **kwargs):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=ENV, check=False, **kwargs)
    if check and result.returncode != 0:
        raise SystemExit('ansible_scale: %s failed (rc %d): %s' % (' '.join(argv[:4]), result.returncode, (result.stderr or result.stdout)[-2000:]))
    return result


def clone_name(index):
    return 'gpu-%02d' % index


def clones(size):
    """Inventory names and address octets of the cloned GPU nodes of a cluster of ``size`` GPU nodes."""
    return [(clone_name(i), FIRST_OCTET + i - 3) for i in range(3, size + 1)]


def check_host(size):
    if size < 2:
        raise SystemExit('ansible_scale: %d GPU nodes: the simulated cluster has 2 already (gpu-01, gpu-02); give 2 or more' % size)
    if FIRST_OCTET + size - 3 > LAST_OCTET:
        raise SystemExit('ansible_scale: %d GPU nodes do not fit on %s.0/24 (addresses .%d-.%d): at most %d'
                         % (size, NET_BASE, FIRST_OCTET, LAST_OCTET, LAST_OCTET - FIRST_OCTET + 3))
    with open('/proc/sys/fs/inotify/max_user_instances') as handle:
        instances = int(handle.read())
    need = (size + 1) * INOTIFY_PER_NODE + 128
    if instances < need:
        raise SystemExit('ansible_scale: fs.inotify.max_user_instances is %d; %d systemd containers need about %d '
                         '(sysctl -w fs.inotify.max_user_instances=%d), nothing was started' % (instances, size + 1, need, need))


def running(name):
    result = sh(['podman', 'container', 'inspect', '-f', '{{.State.Status}}', PREFIX + name], check=False)
    return result.returncode == 0 and result.stdout.strip() == 'running'


def ensure_image():
    """The clone image, committed once per gpu-02 container (tagged with its id: a new bring-up has a new munge key)."""
    if not running(SOURCE):
        raise SystemExit('ansible_scale: %s%s is not running: bring the cluster up and converge it first '
                         '(bash scripts/cluster.sh up; bash scripts/cluster.sh playbook playbooks/site.yml)' % (PREFIX, SOURCE))
    image = '%s:%s' % (IMAGE_REPO, sh(['podman', 'container', 'inspect', '-f', '{{.Id}}', PREFIX + SOURCE]).stdout.strip()[:12])
    if sh(['podman', 'image', 'exists', image], check=False).returncode != 0:
        # the label makes `cluster.sh prune-images` remove it too
        sh(['podman', 'commit', '-q', '--change', 'LABEL %s=image' % LABEL, PREFIX + SOURCE, image])
    return image


def hosts_lines(size):
    entries = sorted(base_nodes().items(), key=lambda kv: kv[1]) + clones(size)
    return ['%s.%d %s' % (NET_BASE, octet, name) for name, octet in entries]


def fleet(size):
    """Start the clones gpu-03 .. gpu-<size> (keep running ones), remove those above ``size``; every node's /etc/hosts lists all."""
    image = ensure_image()
    base = base_nodes()
    wanted = dict(clones(size))
    listed = sh(['podman', 'ps', '-a', '--filter', 'label=%s=cluster' % LABEL, '--format', '{{.Names}}']).stdout.split()
    for container in listed:
        name = container[len(PREFIX):]
        if re.match(r'^gpu-\d+$', name) and name not in base and name not in wanted:
            sh(['podman', 'rm', '-f', '-t', '5', container])
    adds = []
    for line in hosts_lines(size):
        address, name = line.split()
        adds += ['--add-host', '%s:%s' % (name, address)]
    for name, octet in sorted(wanted.items()):
        if running(name):
            continue
        sh(['podman', 'rm', '-f', '-t', '5', PREFIX + name], check=False)
        sh(['podman', 'run', '-d', '--name', PREFIX + name, '--hostname', name, '--label', '%s=cluster' % LABEL,
            '--network', NETWORK, '--ip', '%s.%d' % (NET_BASE, octet), '--network-alias', name] + adds
           + ['--privileged', '--systemd=always', image, '/sbin/init'])
    # the nodes started before the clones learn their names (one line per missing name)
    script = 'for l in "$@"; do grep -qx "$l" /etc/hosts || echo "$l" >> /etc/hosts; done'
    for name in sorted(base) + sorted(wanted):
        sh(['podman', 'exec', PREFIX + name, 'sh', '-c', script, 'hosts'] + hosts_lines(size))
    known_hosts(size)
    for name in sorted(wanted):
        wait_ssh(name, wanted[name])


def known_hosts(size):
    """The clones carry gpu-02's host key: the simulated inventory's known_hosts names it under each clone's address."""
    path = os.path.join(ROOT, '.build', 'simcluster', 'ssh', 'known_hosts')
    key = sh(['podman', 'exec', PREFIX + SOURCE, 'cat', '/etc/ssh/ssh_host_ed25519_key.pub']).stdout.split()[:2]
    with open(path) as handle:
        lines = [line for line in handle.read().splitlines() if line.strip()]
    present = set(line.split()[0] for line in lines)
    for _name, octet in clones(size):
        address = '%s.%d' % (NET_BASE, octet)
        if address not in present:
            lines.append('%s %s %s' % (address, key[0], key[1]))
    with open(path, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')


def wait_ssh(name, octet, limit=180):
    key = os.path.join(ROOT, '.build', 'simcluster', 'ssh', 'id_ed25519')
    known = os.path.join(ROOT, '.build', 'simcluster', 'ssh', 'known_hosts')
    start = time.monotonic()
    while time.monotonic() - start < limit:
        result = sh(['ssh', '-q', '-i', key, '-o', 'UserKnownHostsFile=%s' % known, '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes',
                     '-o', 'ConnectTimeout=5', '-o', 'ControlMaster=no', 'admin@%s.%d' % (NET_BASE, octet),
                     'sudo -n systemctl is-system-running --wait'], check=False)
        if result.stdout.strip() in ('running', 'degraded'):
            return
        time.sleep(2)
    raise SystemExit('ansible_scale: %s (%s.%d) did not come up over ssh within %d s' % (name, NET_BASE, octet, limit))


def inventory(size):
    """The layer that adds the clones to the groups, each with gpu-02's simulated host_vars and its own address."""
    import yaml  # the virtualenv's PyYAML (ansible's dependency)
    with open(os.path.join(ROOT, 'inventory', 'simulated', 'host_vars', SOURCE + '.yml')) as handle:
        source = yaml.safe_load(handle)
    hosts = {}
    for name, octet in clones(size):
        hosts[name] = dict(source, gpucluster_sim_octet=octet, ansible_podman_container=PREFIX + name)
    layer = {'all': {'children': {'slurm_compute': {'hosts': hosts}, 'gpu_nodes': {'hosts': dict((n, None) for n in hosts)}}}}
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, 'hosts-%d.yml' % size)
    with open(path, 'w') as handle:
        handle.write('# made by benchmarks/ansible_scale.py: the cloned GPU nodes of a %d-GPU-node cluster\n' % size)
        yaml.safe_dump(layer, handle, default_flow_style=False, sort_keys=True)
    return path


def host_cpu():
    with open('/proc/stat') as handle:
        fields = handle.readline().split()[1:]
    ticks = os.sysconf('SC_CLK_TCK')
    busy = sum(int(v) for v in fields[:3]) + sum(int(v) for v in fields[5:8])  # user nice system irq softirq steal
    return busy / float(ticks)


RECAP = re.compile(r'^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)', re.M)
PROFILE = re.compile(r'^(.{3,}?) -+ (\d+\.\d+)s$', re.M)


def variant_settings(variant, hosts):
    # timeout (connection and privilege escalation): 60 s, not Ansible's 10. With 65 forks on 2 CPUs, sudo's prompt took
    # longer than 12 s on 14 hosts ("Timeout (12s) waiting for privilege escalation prompt", unreachable; 2026-11-27)
    env, extra = {'ANSIBLE_CALLBACKS_ENABLED': 'ansible.posix.profile_tasks', 'PROFILE_TASKS_TASK_OUTPUT_LIMIT': '8',
                  'ANSIBLE_TIMEOUT': os.environ.get('ANSIBLE_SCALE_TIMEOUT', '60')}, []
    if variant != 'default':
        env['ANSIBLE_FORKS'] = str(hosts)
    if variant == 'free':
        env['ANSIBLE_STRATEGY'] = 'free'
    elif variant == 'nopipe':
        extra += ['-e', 'ansible_pipelining=false']
    elif variant == 'cache':
        env.update(ANSIBLE_GATHERING='smart', ANSIBLE_CACHE_PLUGIN='jsonfile', ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(OUT, 'facts'),
                   ANSIBLE_CACHE_PLUGIN_TIMEOUT='86400')
    elif variant not in ('default', 'forks'):
        raise SystemExit('ansible_scale: unknown variant %r; valid: %s' % (variant, ', '.join(VARIANTS)))
    return env, extra


def site(size, variant, layer, log, tags=None):
    hosts = size + 1
    env, extra = variant_settings(variant, hosts)
    extra += ['--tags', tags] if tags else []
    before_cpu, before_children = host_cpu(), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    with open(log, 'w') as handle:
        result = subprocess.run(['bash', CLUSTER, 'playbook', 'playbooks/site.yml', '-i', layer] + extra, stdout=handle, stderr=subprocess.STDOUT,
                                universal_newlines=True, env=dict(ENV, **env), check=False)
    wall = time.monotonic() - start
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine = host_cpu() - before_cpu
    with open(log) as handle:
        text = handle.read()
    recap = dict((m.group(1), dict(ok=int(m.group(2)), changed=int(m.group(3)), unreachable=int(m.group(4)), failed=int(m.group(5)),
                                   skipped=int(m.group(6)))) for m in RECAP.finditer(text))
    slowest = [(name.strip(), float(sec)) for name, sec in PROFILE.findall(text)][:5]
    gpu = [r for h, r in recap.items() if h.startswith('gpu-')]
    return {'gpu_nodes': size, 'hosts': hosts, 'variant': variant, 'rc': result.returncode, 'wall_s': round(wall, 1),
            'ansible_cpu_s': round(after_children.ru_utime + after_children.ru_stime - before_children.ru_utime - before_children.ru_stime, 1),
            'machine_cpu_s': round(machine, 1), 'changed': sum(r['changed'] for r in recap.values()),
            'failed': sum(r['failed'] + r['unreachable'] for r in recap.values()), 'recap_hosts': len(recap),
            'tasks_per_gpu_node': max([r['ok'] + r['skipped'] for r in gpu] or [0]), 'slowest': slowest, 'log': os.path.relpath(log, ROOT)}


def ctl(*argv):
    return sh(['podman', 'exec', PREFIX + 'ctl'] + list(argv))


def node_states():
    states = {}
    for line in ctl('sinfo', '-h', '-N', '-o', '%N %t').stdout.splitlines():
        name, state = line.split()
        states[name] = state
    return states


def resume(size, layer):
    """Drain every GPU node, run resume.yml over them, check they are all idle again."""
    names = ['gpu-%02d' % i for i in range(1, size + 1)]
    ctl('scontrol', 'update', 'nodename=%s' % ','.join(names), 'state=drain', 'reason=ansible_scale benchmark')
    drained = [n for n, st in node_states().items() if n in names and st.startswith('drain')]
    if len(drained) != size:
        raise SystemExit('ansible_scale: %d of %d GPU nodes drained' % (len(drained), size))
    log = os.path.join(OUT, 'resume-%d.log' % size)
    env = {'ANSIBLE_FORKS': str(size + 1), 'ANSIBLE_CALLBACKS_ENABLED': 'ansible.posix.profile_tasks', 'PROFILE_TASKS_TASK_OUTPUT_LIMIT': '8'}
    before_cpu, before_children = host_cpu(), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    with open(log, 'w') as handle:
        result = subprocess.run(['bash', CLUSTER, 'playbook', 'playbooks/resume.yml', '-i', layer, '-e', 'validate_resume_admin_drains=true'],
                                stdout=handle, stderr=subprocess.STDOUT, universal_newlines=True, env=dict(ENV, **env), check=False)
    wall = time.monotonic() - start
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    # the probe jobs' nodes are still completing when resume.yml returns (2026-11-27: 34 of 64 idle at once, all
    # 64 within a minute): wait up to 120 s
    waited = time.monotonic()
    while True:
        states = node_states()
        idle = [n for n in names if states.get(n) == 'idle']
        if len(idle) == size or time.monotonic() - waited > 120:
            break
        time.sleep(1)
    waited = time.monotonic() - waited
    with open(log) as handle:
        slowest = [(name.strip(), float(sec)) for name, sec in PROFILE.findall(handle.read())][:5]
    row = {'gpu_nodes': size, 'hosts': size + 1, 'variant': 'resume.yml', 'rc': result.returncode, 'wall_s': round(wall, 1),
           'ansible_cpu_s': round(after_children.ru_utime + after_children.ru_stime - before_children.ru_utime - before_children.ru_stime, 1),
           'machine_cpu_s': round(host_cpu() - before_cpu, 1), 'changed': '-', 'idle_after': len(idle), 'idle_wait_s': round(waited, 1), 'tasks_per_gpu_node': '-',
           'slowest': slowest, 'log': os.path.relpath(log, ROOT)}
    print(json.dumps(row, sort_keys=True), flush=True)
    if result.returncode != 0 or len(idle) != size:
        raise SystemExit('ansible_scale: resume.yml over %d drained GPU nodes left %d idle (rc %d), see %s' % (size, len(idle), result.returncode, log))
    return row


COLUMNS = (('gpu_nodes', 'GPU nodes'), ('hosts', 'hosts'), ('variant', 'variant'), ('wall_s', 'wall s'), ('ansible_cpu_s', 'Ansible CPU s'),
           ('machine_cpu_s', 'machine CPU s'), ('per_host_s', 'Ansible CPU s / host'), ('tasks_per_gpu_node', 'tasks / GPU node'),
           ('changed', 'changed'), ('noop', 'no-op'))


def table(rows):
    lines = ['| ' + ' | '.join(title for _key, title in COLUMNS) + ' |', '|' + '---|' * len(COLUMNS)]
    for row in rows:
        row = dict(row, per_host_s=round(row['ansible_cpu_s'] / float(row['hosts']), 2))
        lines.append('| ' + ' | '.join(str(row.get(key, '-')) for key, _title in COLUMNS) + ' |')
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('sizes', nargs='?', default='16,64', help='GPU node counts, comma-separated (default 16,64)')
    parser.add_argument('variants', nargs='?', default='', help='variants at the smallest size (default: all)')
    parser.add_argument('--larger', default='default', help='variants at the other sizes (default: default)')
    parser.add_argument('--resume', action='store_true', help='at the largest size: drain every GPU node, then resume.yml')
    parser.add_argument('--resume-only', action='store_true', help='only the resume measurement, on the clones already up at the (one) size')
    parser.add_argument('--converge-tags', help="site.yml's tags for the run that adds the clones (default: all; 'slurm' is what "
                        "clones of a converged node need: the new slurm.conf everywhere)")
    parser.add_argument('--json', default=os.path.join(ROOT, '.build', 'ansible-scale-bench.jsonl'))
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(',') if s.strip())
    variants = [v for v in args.variants.split(',') if v] or list(VARIANTS)
    larger = [v for v in args.larger.split(',') if v]
    for variant in variants + larger:
        variant_settings(variant, 1)  # a bad name stops here, before any container starts
    for size in sizes:
        check_host(size)
    os.makedirs(OUT, exist_ok=True)
    rows = []
    if args.resume_only:
        fleet(sizes[-1])
        rows.append(resume(sizes[-1], inventory(sizes[-1])))
        print()
        print(table(rows))
        return 0
    for size in sizes:
        fleet(size)
        layer = inventory(size)
        start = time.monotonic()
        converge = site(size, 'default', layer, os.path.join(OUT, 'site-%d-converge.log' % size), args.converge_tags)
        converge['variant'] = 'converge'
        print(json.dumps(converge, sort_keys=True), flush=True)
        if converge['rc'] != 0:
            raise SystemExit('ansible_scale: converging %d GPU nodes failed (%.0f s), see %s' % (size, time.monotonic() - start, converge['log']))
        rows.append(converge)
        for variant in (variants if size == sizes[0] else larger):
            row = site(size, variant, layer, os.path.join(OUT, 'site-%d-%s.log' % (size, variant)))
            print(json.dumps(row, sort_keys=True), flush=True)
            rows.append(row)
            if row['rc'] != 0 or row['changed'] or row['failed'] or row['recap_hosts'] < row['hosts']:
                # a setting that breaks the run (strategy free: tasks that read other hosts' results) is a finding, kept in the
                # table; the next variant converges again first, so that it starts from the same state
                row['noop'] = 'NO (rc %d, changed %d, failed %d)' % (row['rc'], row['changed'], row['failed'])
                print('ansible_scale: the %s run over %d GPU nodes was not a no-op, see %s' % (variant, size, row['log']), flush=True)
                site(size, 'default', layer, os.path.join(OUT, 'site-%d-reconverge.log' % size))
            else:
                row['noop'] = 'yes'
        if args.resume and size == sizes[-1]:
            rows.append(resume(size, layer))
        with open(args.json, 'a') as handle:
            handle.write(''.join(json.dumps(r, sort_keys=True) + '\n' for r in rows if r['gpu_nodes'] == size))
    print()
    print(table(rows))
    return 0


if __name__ == '__main__':
    sys.exit(main())
