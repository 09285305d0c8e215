"""An interrupt during a configuration write leaves each file old or new, never partial (issue #16).

The dynamic half of the proof (the static half is test_config_writes.py):

- Ansible's write path as our roles use it: ``ansible-playbook`` (local
  connection) writes a ~6 MB slurm.conf-like file with ansible.builtin.template
  and another with ansible.builtin.copy over an old version, and the test sends
  SIGINT or SIGTERM to the playbook's process group at random (seeded) moments.
  After each (and after every process of the play is gone), both destinations
  hold exactly the old or exactly the new bytes (sha256); old bytes keep the old
  mode, new bytes have the old mode or the requested one (atomic_move carries
  the old mode over, the module sets the requested one after the rename).
  The collection's install_files runs the same way in a play of its own; its
  new bytes always have the requested mode (it is set before the rename).
- Our own Python writers of files on nodes (the health check's state file,
  validation_report's report files, enroot_import's import record and container
  record): each runs in a forked child whose writes are slowed (every write is
  cut into small flushed chunks with a sleep in between), and the child is
  killed with SIGTERM, SIGINT or SIGKILL at random moments after its first
  chunk.  The final file must be old or new; a partial temporary file left
  beside it shows that the kill landed mid-write.  A deliberately naive writer
  (open the final path, write) runs through the same harness and must be caught.
"""
import errno
import hashlib
import importlib.machinery
import importlib.util
import os
import random
import select
import signal
import subprocess
import sys
import time

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.modules import enroot_import, validation_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, 'rb') as handle:
        return handle.read()


# ---------------------------------------------------------------------------
# (a) Ansible's template and copy, interrupted

PLAY = '''- hosts: all
  gather_facts: false
  tasks:
    - name: Template a large configuration file
      ansible.builtin.template:
        src: {src}/big.conf.j2
        dest: {dest}/template.conf
        mode: "0600"
      vars:
        generation: new
    - name: Copy a large configuration file
      ansible.builtin.copy:
        src: {src}/big.conf.new
        dest: {dest}/copy.conf
        mode: "0600"
'''

# The collection's own install_files (mkstemp beside the file, fsync, chmod, rename), alone in its play so that
# the interrupts land during its write.
PLAY_FILES = '''- hosts: all
  gather_facts: false
  tasks:
    - name: Keep a large configuration file with install_files
      gpucluster.bringup.install_files:
        files:
          - dest: {dest}/files.conf
            src: {src}/big.conf.new
            mode: "0600"
'''


def slurm_conf_body(nodes, tag):
    return ''.join('NodeName=gpu-%05d CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=2000000 '
                   'Gres=gpu:h100:8 Feature=%s State=UNKNOWN\n' % (i, tag) for i in range(nodes))


def wait_group_gone(pgid, timeout):
    """Wait until no process of group ``pgid`` is left; False (after SIGKILL to the group) if some still run after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    os.killpg(pgid, signal.SIGKILL)
    return False


@pytest.mark.parametrize('play, names', [(PLAY, ('template.conf', 'copy.conf')), (PLAY_FILES, ('files.conf',))],
                         ids=['template-and-copy', 'install_files'])
def test_ansible_writes_interrupted(tmp_path, play, names):
    rng = random.Random(16)
    src, dest, work = tmp_path / 'src', tmp_path / 'dest', tmp_path / 'work'
    for folder in (src, dest, work):
        folder.mkdir()
    new_body = slurm_conf_body(45000, 'new')  # about 6 MB
    (src / 'big.conf.j2').write_text('# generation {{ generation }}\n' + new_body)
    (src / 'big.conf.new').write_text('# copied\n' + new_body)
    (work / 'play.yml').write_text(play.format(src=src, dest=dest))
    new = {'template.conf': ('# generation new\n' + new_body).encode(), 'copy.conf': ('# copied\n' + new_body).encode(),
           'files.conf': ('# copied\n' + new_body).encode()}
    new = {name: new[name] for name in names}
    old = {name: ('# old %s\n' % name + slurm_conf_body(20000, 'old')).encode() for name in new}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCAL_TEMP=str(work / 'local'),
               ANSIBLE_REMOTE_TEMP=str(work / 'remote'), ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='0',
               ANSIBLE_HOST_KEY_CHECKING='0', ANSIBLE_DEPRECATION_WARNINGS='0')
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', 'localhost,', '-c', 'local', str(work / 'play.yml')]
    outcomes, duration = [], None
    for run in range(11):
        for name, data in old.items():
            (dest / name).write_bytes(data)
            os.chmod(dest / name, 0o644)
        before = {name: os.stat(dest / name) for name in old}
        proc = subprocess.Popen(argv, env=env, cwd=str(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        signum = (signal.SIGINT, signal.SIGTERM)[run % 2]
        started = time.monotonic()
        if duration is None:  # the first run is not interrupted: it times the play and checks it writes the new bytes
            assert proc.wait(timeout=60) == 0
            duration, delay = time.monotonic() - started, None
        else:
            delay = rng.uniform(0.2, 1.0) * duration
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signum)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        # a module process may outlive ansible-playbook and finish its write: judge the files once the whole group is gone
        assert wait_group_gone(proc.pid, 20), 'run %d: processes of the play still ran 20 s after %s' % (run, signum.name)
        states = []
        for name in new:
            data, info = read(dest / name), os.stat(dest / name)
            if data == old[name]:
                states.append('old')
                assert (info.st_mode & 0o7777, info.st_uid, info.st_gid) == (0o644, before[name].st_uid, before[name].st_gid)
            else:
                assert sha(data) == sha(new[name]), 'run %d (%s after %ss): %s is neither old nor new (%d bytes)' % (
                    run, signum.name, delay, name, len(data))
                states.append('new')
                # atomic_move gives the temp file the old file's mode and owner before the rename; the requested mode is
                # set after it, so an interrupt in between leaves the new bytes with the old mode
                assert info.st_mode & 0o7777 in (0o644, 0o600) and (info.st_uid, info.st_gid) == (before[name].st_uid, before[name].st_gid)
                if name == 'files.conf':   # install_files sets the mode on the temporary file, before the rename
                    assert info.st_mode & 0o7777 == 0o600, 'run %d: files.conf has the new bytes with mode %o' % (
                        run, info.st_mode & 0o7777)
        outcomes.append((proc.returncode, tuple(states)))
    print('ansible-playbook runs (rc, %s): %s' % (', '.join(names), outcomes))
    assert outcomes[0] == (0, ('new',) * len(names)), outcomes
    interrupted = [o for o in outcomes[1:] if o[0] != 0]
    # the signals must have landed during the play often enough, and on both sides of a write, for the test to mean something
    assert len(interrupted) >= 5, outcomes
    assert any('old' in states for _rc, states in interrupted), outcomes


# ---------------------------------------------------------------------------
# (b) Our Python writers, killed mid-write

CHUNK, PAUSE = 16, 0.002


class SlowFile(object):
    """A file whose writes go to disk in small flushed chunks, with a pause between them."""

    def __init__(self, real, started_fd):
        self._real, self._started_fd = real, started_fd

    def write(self, data):
        for start in range(0, len(data), CHUNK):
            self._real.write(data[start:start + CHUNK])
            self._real.flush()
            if self._started_fd is not None:
                os.write(self._started_fd, b'S')
                self._started_fd = None
            time.sleep(PAUSE)
        return len(data)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._real.__exit__(*exc)


def slow_writes(started_fd):
    """Patch open() and os.fdopen() in this (child) process so that files opened for writing are SlowFiles."""
    import builtins
    real_open, real_fdopen = builtins.open, os.fdopen

    def is_write(args, kwargs):
        mode = args[0] if args else kwargs.get('mode', 'r')
        return isinstance(mode, str) and bool(set(mode) & set('wax+'))

    def slow_open(file, *args, **kwargs):
        handle = real_open(file, *args, **kwargs)
        return SlowFile(handle, started_fd) if is_write(args, kwargs) else handle

    def slow_fdopen(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)
        return SlowFile(handle, started_fd) if is_write(args, kwargs) else handle

    builtins.open, os.fdopen = slow_open, slow_fdopen


def _load_healthcheck():
    path = os.path.join(ROOT, 'roles', 'slurm_healthcheck', 'files', 'gpucluster_healthcheck.py')
    loader = importlib.machinery.SourceFileLoader('gpucluster_healthcheck_interrupted', path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


HEALTHCHECK = _load_healthcheck()


def _ansible_module():
    with patch_module_args({}):
        module = basic.AnsibleModule(argument_spec={'container_record_dir': {'type': 'path'}})
    return module


def write_healthcheck_status(directory, version):
    status = {'action': 'drain-%s' % version, 'gpus': 8,
              'failures': [{'check': 'gpu_count', 'text': 'GPU %d of node gpu-01 is %s' % (i, version)} for i in range(20)]}
    HEALTHCHECK._write_json(os.path.join(directory, 'status.json'), status)
    return 'status.json'


def write_validation_report(directory, version):
    text = ''.join('| gpu-%02d | nccl_all_reduce | %s | %d GB/s |\n' % (i, version, 100 + i) for i in range(30))
    assert validation_report._write(_ansible_module(), os.path.join(directory, 'report.md'), text)
    return 'report.md'


def _importer(directory, version):
    importer = enroot_import.EnrootImport.__new__(enroot_import.EnrootImport)
    importer.module = _ansible_module()
    importer.module.params['container_record_dir'] = directory
    importer.directory = directory
    importer.dest = os.path.join(directory, 'pytorch.sqsh')
    importer.ref = _enroot.parse_uri('docker://nvcr.io#nvidia/pytorch:24.01-py3')
    importer.container = 'pyxis_pytorch'
    fd = os.open(importer.dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)  # the image: set up, not slowed
    os.write(fd, b'x' * (4096 if version == 'old' else 8192))
    os.close(fd)
    return importer


def write_enroot_record(directory, version):
    importer = _importer(directory, version)
    importer.write_record('sha256:' + sha(version.encode() * 40))
    return os.path.basename(_enroot.record_path(importer.dest))


def write_enroot_container_record(directory, version):
    importer = _importer(directory, version)
    importer.save_container_identity({'image': '/var/lib/enroot/pytorch.sqsh', 'version': version, 'layers': ['sha256:%064d' % i for i in range(8)]})
    return 'pyxis_pytorch.json'


def write_naively(directory, version):
    """The negative control: writes the final path in place, as a non-atomic writer would."""
    with open(os.path.join(directory, 'naive.conf'), 'w') as handle:
        handle.write(''.join('line %d %s\n' % (i, version) for i in range(100)))
    return 'naive.conf'


def run_writer(writer, directory, version, signum=None, delay=0.0):
    """Run ``writer`` in a forked child; with ``signum``, kill it ``delay`` seconds after its first written chunk."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            os.close(read_fd)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            if signum is not None:
                slow_writes(write_fd)
            writer(directory, version)
            code = 0
        except KeyboardInterrupt:
            code = 130
        except BaseException:  # pylint: disable=broad-except
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write_fd)
    if signum is not None:
        ready, _w, _x = select.select([read_fd], [], [], 10)
        assert ready, 'the writer never started writing'
        time.sleep(delay)
        try:
            os.kill(pid, signum)
        except OSError as exc:
            assert exc.errno == errno.ESRCH
    os.close(read_fd)
    _pid, status = os.waitpid(pid, 0)
    if signum is None:
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, 'the writer failed uninterrupted (status %d)' % status


def interrupt_writer(writer, name, base, kills):
    """Kill ``writer`` ``kills`` times; ``(final states, kills that left a partial temporary file)``."""
    rng = random.Random(writer.__name__)
    reference = base / 'reference'
    reference.mkdir()
    run_writer(writer, str(reference), 'old')
    old = read(reference / name)
    run_writer(writer, str(reference), 'new')
    new = read(reference / name)
    assert old != new
    duration = PAUSE * (len(new) // CHUNK + 1)
    states, mid_write = [], 0
    for attempt in range(kills):
        directory = base / ('kill%02d' % attempt)
        directory.mkdir()
        run_writer(writer, str(directory), 'old')
        assert read(directory / name) == old
        signum = (signal.SIGTERM, signal.SIGKILL, signal.SIGINT)[attempt % 3]
        run_writer(writer, str(directory), 'new', signum, rng.uniform(0, duration * 1.5))
        data = read(directory / name)
        states.append('old' if data == old else 'new' if data == new else 'PARTIAL %d of %d bytes' % (len(data), len(new)))
        others = [p for p in directory.iterdir() if p.name != name and not p.name.endswith('.sqsh')]
        if any(0 < len(read(p)) < len(new) and new.startswith(read(p)) for p in others):
            mid_write += 1
    return states, mid_write


@pytest.mark.parametrize('writer, name', [
    (write_healthcheck_status, 'status.json'),
    (write_validation_report, 'report.md'),
    (write_enroot_record, 'pytorch.sqsh' + _enroot.RECORD_SUFFIX),
    (write_enroot_container_record, 'pyxis_pytorch.json'),
])
def test_python_writer_killed_mid_write_leaves_old_or_new(writer, name, tmp_path):
    states, mid_write = interrupt_writer(writer, name, tmp_path, 9)
    assert all(s in ('old', 'new') for s in states), states
    # the harness must have hit the writes: a partial temporary file beside the final one shows it
    assert mid_write >= 3, (states, mid_write)


def test_the_harness_catches_a_writer_that_is_not_atomic(tmp_path):
    states, _mid_write = interrupt_writer(write_naively, 'naive.conf', tmp_path, 9)
    assert sum(s.startswith('PARTIAL') for s in states) >= 3, states
