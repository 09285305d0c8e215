"""Every configuration or state file the collection writes on a node is written atomically.

"An interrupt (SIGINT/SIGTERM) during a config write leaves each file either old
or new, never partial" (issue #16).  This is the static half of the proof; the
dynamic half, which interrupts real writes, is test_interrupted_writes.py.

Role tasks (roles/*/tasks/*.yml, roles/*/handlers/*.yml, playbooks/**.yml,
parsed with yaml.safe_load, walking block/rescue/always):

- Modules that write through ``AnsibleModule.atomic_move`` (a temporary file,
  then rename(2) over the destination; across file systems a temporary file
  in the destination's directory, then rename) are allowed: ATOMIC_MODULES.
  ``unsafe_writes: true`` on such a task is refused, since it lets
  atomic_move fall back to writing the destination in place.
- ``command``/``shell``/``raw``/``script`` tasks are refused when their
  command line redirects into a file (``>``, ``>>``, ``tee``, ``dd of=``);
  ``2>&1`` and ``/dev/null`` are fine.  A command that runs a program known to
  write files (WRITER_PROGRAMS: mungekey, mysqldump, make, a compiler...)
  must be listed in TASK_ALLOWLIST with the reason it cannot leave a partial
  configuration file.
- Any other module with a destination option (dest, path with content...) and
  not classified here is refused until someone classifies it.

Our Python writers (plugins/modules, plugins/module_utils, plugins/action,
plugins/filter, roles/*/files/*.py): an AST scan, function by function.  A
write-mode ``open()`` (mode with w, a, x or +) or ``Path.write_text/bytes`` is
atomic when the same function renames the opened name over the final path
(``os.replace``/``os.rename``/``atomic_move``/``shutil.move`` with the opened
expression as the source).  ``os.fdopen(fd, 'w')`` is atomic when the same
function takes the fd from ``tempfile.mkstemp`` and renames the mkstemp name.
Anything else must be in PY_ALLOWLIST with a reason (log files, temp files).
nvml_sim/ is a test tool, not shipped in the collection, and is not scanned.
"""
import ast
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ---------------------------------------------------------------------------
# Role tasks

ATOMIC_MODULES = {
    # module: how it writes
    'ansible.builtin.template': 'renders on the controller, copies to a remote temp file, atomic_move',
    'ansible.builtin.copy': 'remote temp file (or mkstemp in the destination directory for remote_src), atomic_move',
    'ansible.builtin.lineinfile': 'mkstemp in the module temp directory, atomic_move',
    'ansible.builtin.blockinfile': 'mkstemp in the module temp directory, atomic_move',
    'ansible.builtin.replace': 'mkstemp in the module temp directory, atomic_move',
    'community.general.ini_file': 'mkstemp, atomic_move',
    'ansible.builtin.ini_file': 'mkstemp, atomic_move',
    'ansible.builtin.get_url': 'downloads to a temp file, checks the checksum, atomic_move',
    'ansible.builtin.uri': 'with dest: downloads to a temp file, atomic_move',
    'ansible.builtin.assemble': 'assembles into a temp file, atomic_move',
    'gpucluster.bringup.install_files': 'mkstemp in the destination directory, fsync, rename (plugins/module_utils/_atomic_write.py, '
                                        'whose Python test_python_writers_are_atomic scans too)',
}
# No file content written: directories, modes, links, removal, empty files.
CONTENTLESS_MODULES = {'ansible.builtin.file', 'ansible.builtin.tempfile'}
COMMAND_MODULES = {'ansible.builtin.command', 'ansible.builtin.shell', 'ansible.builtin.raw', 'ansible.builtin.script',
                   'ansible.builtin.expect', 'command', 'shell', 'raw', 'script'}
# Modules whose path/dest options name what they read, or that write through dpkg/rpm
# (which unpack each file as a temp name and rename it), or through our own modules,
# whose Python is scanned below.
NON_WRITING_PATH_MODULES = {'ansible.builtin.stat', 'ansible.builtin.slurp', 'ansible.builtin.wait_for', 'ansible.builtin.fetch',
                            'ansible.builtin.find', 'ansible.builtin.include_vars', 'ansible.builtin.apt', 'ansible.builtin.dnf',
                            'ansible.builtin.package', 'ansible.builtin.yum'}
DEST_OPTIONS = ('dest', 'path', 'output_file', 'output', 'target', 'backup_file')

# Programs that write files when a command task runs them.
WRITER_PROGRAMS = {'mungekey', 'mysqldump', 'make', 'mpicc', 'gcc', 'cc', 'nvcc', 'cp', 'install', 'dd', 'curl', 'wget', 'tar',
                   'unzip', 'openssl', 'ssh-keygen', 'tee', 'truncate', 'sed', 'awk', 'mv', 'ln', 'rsync'}

# (file, task name) -> why this file write cannot leave a partial configuration file.
TASK_ALLOWLIST = {
    ('roles/munge/tasks/key.yml', 'Create the cluster key on the source host if it has none'):
        'mungekey writes <munge_key_path>.new (--force replaces one an interrupted run left); the next task moves it into '
        'place with copy remote_src (atomic_move) - checked by test_munge_key_moved_into_place_whole',
    ('roles/slurmdbd/tasks/backup.yml', 'Dump the accounting database (local MariaDB, as root through its socket)'):
        'a database dump in slurmdbd_backup_dir, not a configuration file; taken before the schema upgrade changes anything, '
        'so an interrupted run has not upgraded and takes the dump again when rerun',
    ('roles/slurmdbd/tasks/backup.yml', 'Dump the accounting database'):
        'as above (external database)',
    ('roles/slurm_upgrade/tasks/slurmctld.yml', 'Archive StateSaveLocation'):
        'a backup archive in slurm_upgrade_backup_dir, not a configuration file; taken after slurmctld stops and before its '
        'packages change, so an interrupted run still has the slurmctld step to do and archives again when rerun',
    ('roles/validate/tasks/mpi.yml', 'Build the MPI test program'):
        'a test binary in validate_mpi_settings.work_dir, not a configuration file; the linker removes its output when interrupted',
    ('roles/validate/tasks/nccl_build.yml', 'Build nccl-tests'):
        'a build tree, not a configuration file; GNU make deletes a target it was writing when interrupted by SIGINT/SIGTERM',
    ('roles/validate/tasks/nccl_build.yml', 'Unpack nccl-tests'):
        'tar extracts a source tree into the build directory in place (unarchive does not use atomic_move); not a configuration file',
    ('roles/pyxis/tasks/build.yml', 'Unpack the source archive'):
        'tar extracts a source tree into pyxis_build.dir in place; not a configuration file',
    ('roles/pyxis/tasks/build.yml', 'Compile pyxis'):
        'a build tree, not a configuration file',
    ('roles/pyxis/tasks/build.yml', 'Install the plugin'):
        'install(1) writes the plugin; the build record (copy, atomic) is written only after it, so an interrupted install '
        'leaves the record old and the next run builds and installs again',
}

TASK_KEYWORDS = {
    'action', 'any_errors_fatal', 'args', 'async', 'become', 'become_exe', 'become_flags', 'become_method', 'become_user',
    'changed_when', 'check_mode', 'collections', 'connection', 'debugger', 'delay', 'delegate_facts', 'delegate_to', 'diff',
    'environment', 'failed_when', 'ignore_errors', 'ignore_unreachable', 'listen', 'local_action', 'loop', 'loop_control',
    'module_defaults', 'name', 'no_log', 'notify', 'poll', 'port', 'register', 'remote_user', 'retries', 'run_once', 'tags',
    'throttle', 'timeout', 'until', 'vars', 'when', 'block', 'rescue', 'always',
}
REDIRECT = re.compile(r'(?<![0-9&<])(?:[0-9]?>>?|&>)\s*(?!&|/dev/null\b|/dev/std)(?P<target>[^\s;|&]+)')
TEE = re.compile(r'\btee\b|\bdd\b[^|;]*\bof=')


def task_files():
    files = glob.glob(os.path.join(ROOT, 'roles', '*', 'tasks', '*.yml'))
    files += glob.glob(os.path.join(ROOT, 'roles', '*', 'handlers', '*.yml'))
    files += glob.glob(os.path.join(ROOT, 'playbooks', '**', '*.yml'), recursive=True)
    return sorted(os.path.relpath(f, ROOT) for f in files)


def walk_tasks(items):
    """Every task (not block) in a task list or play list, with block/rescue/always and play sections opened."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if 'hosts' in item or 'import_playbook' in item:
            for section in ('pre_tasks', 'tasks', 'post_tasks', 'handlers'):
                yield from walk_tasks(item.get(section))
            continue
        if any(k in item for k in ('block', 'rescue', 'always')):
            for section in ('block', 'rescue', 'always'):
                yield from walk_tasks(item.get(section))
            continue
        yield item


def task_module(task):
    mods = [k for k in task if k not in TASK_KEYWORDS and not k.startswith('with_')]
    if 'local_action' in task or 'action' in task:
        return 'action', task.get('local_action') or task.get('action')
    assert len(mods) == 1, 'cannot tell the module of task %r: keys %s' % (task.get('name'), mods)
    return mods[0], task[mods[0]]


def command_text(args, task):
    """The command line of a command-like task as one string; argv lists joined with spaces."""
    if isinstance(args, str):
        return args
    args = dict(args or {})
    args.update(task.get('args') or {})
    for key in ('argv', 'cmd', '_raw_params', 'command'):
        value = args.get(key)
        if isinstance(value, list):
            return ' '.join(str(v) for v in value)
        if isinstance(value, str):
            return value
    return ''


def _shell_programs(text):
    """The first word of each command of a shell line (after VAR=value, sudo, env, exec)."""
    found = set()
    for segment in re.split(r'[;|&()]+|\$\(|`', text):
        words = [w for w in segment.split() if not re.match(r'^[A-Za-z_][A-Za-z0-9_]*=', w)]
        while words and words[0] in ('sudo', 'env', 'exec', 'nice', 'timeout', 'nohup'):
            words = words[1:]
        if words:
            found.add(os.path.basename(words[0].strip('"\'')))
    return found


def programs_run(args, task):
    """The programs a command task runs: argv[0], the commands of ``sh -c`` or of a free-form/cmd line."""
    argv = None
    if isinstance(args, dict):
        argv = dict(args, **(task.get('args') or {})).get('argv')
    if isinstance(argv, str):  # a Jinja expression: its first quoted list element, if any
        first = re.search(r"\[\s*['\"]([^'\"]+)['\"]", argv)
        return {os.path.basename(first.group(1))} if first else set()
    if isinstance(argv, list) and argv:
        if os.path.basename(str(argv[0])) in ('sh', 'bash', 'dash') and '-c' in argv[1:-1]:
            return _shell_programs(str(argv[argv.index('-c') + 1]))
        return {os.path.basename(str(argv[0]))}
    return _shell_programs(command_text(args, task))


def classify_task(path, task):
    """``(verdict, detail)``: verdict is 'atomic', 'no-write', 'allowed' or 'refused'."""
    module, args = task_module(task)
    name = task.get('name')
    opts = args if isinstance(args, dict) else {}
    if module in ATOMIC_MODULES:
        if opts.get('unsafe_writes') in (True, 'true', 'yes'):
            return 'refused', '%s with unsafe_writes may write the destination in place' % module
        return 'atomic', ATOMIC_MODULES[module]
    if module in CONTENTLESS_MODULES:
        return 'no-write', 'no file content'
    if module in COMMAND_MODULES or module == 'action':
        text = command_text(args, task)
        match = REDIRECT.search(text) or TEE.search(text)
        if match:
            return 'refused', 'the command writes a file in place (%r in %r): write a temp file and rename it, or use template/copy' % (
                match.group(0), text)
        writers = sorted(programs_run(args, task) & WRITER_PROGRAMS)
        if writers:
            if (path, name) in TASK_ALLOWLIST:
                return 'allowed', TASK_ALLOWLIST[(path, name)]
            return 'refused', 'the command runs %s, which writes files; list the task in TASK_ALLOWLIST with why it cannot leave a ' \
                              'partial configuration file, or write a temp file and rename it' % ', '.join(writers)
        return 'no-write', 'command writes no file'
    if module == 'ansible.builtin.unarchive':
        if (path, name) in TASK_ALLOWLIST:
            return 'allowed', TASK_ALLOWLIST[(path, name)]
        return 'refused', 'unarchive extracts in place (no atomic_move); list the task in TASK_ALLOWLIST with the reason'
    if module.startswith('gpucluster.bringup.'):
        return 'no-write', 'our module: its Python is scanned by test_python_writers_are_atomic'
    if module in NON_WRITING_PATH_MODULES:
        return 'no-write', 'reads, or writes through the package manager'
    if any(k in opts for k in DEST_OPTIONS):
        return 'refused', '%s has a destination option and is not classified in test_config_writes.py' % module
    return 'no-write', 'no destination option'


def all_tasks():
    for path in task_files():
        with open(os.path.join(ROOT, path)) as handle:
            data = yaml.safe_load(handle)
        for task in walk_tasks(data if isinstance(data, list) else []):
            yield path, task


def test_no_task_writes_a_file_in_place():
    refused = []
    for path, task in all_tasks():
        verdict, detail = classify_task(path, task)
        if verdict == 'refused':
            refused.append('%s: %r: %s' % (path, task.get('name'), detail))
    assert not refused, '\n'.join(refused)


def test_the_scan_sees_the_config_writers():
    """Guards the walker: the writes we know of must be found, so a parse that sees nothing cannot pass."""
    found = {(path, task.get('name')): classify_task(path, task)[0] for path, task in all_tasks()}
    expected = {
        ('roles/slurm/tasks/configure.yml', 'atomic'),
        ('roles/munge/tasks/key.yml', 'atomic'),
        ('roles/enroot/tasks/configure.yml', 'atomic'),
        ('roles/slurmdbd/tasks/configure.yml', 'atomic'),
        ('roles/pyxis/tasks/configure.yml', 'atomic'),
        ('roles/munge/tasks/key.yml', 'allowed'),
    }
    seen = {(path, verdict) for (path, _name), verdict in found.items()}
    assert expected <= seen, sorted(expected - seen)
    assert sum(1 for v in found.values() if v == 'atomic') >= 30


def test_every_allowlisted_task_exists():
    present = {(path, task.get('name')) for path, task in all_tasks()}
    stale = sorted(set(TASK_ALLOWLIST) - present)
    assert not stale, 'TASK_ALLOWLIST names tasks that no longer exist: %s' % stale


def test_munge_key_moved_into_place_whole():
    """mungekey opens the key file before it writes the key: it must write a temp name that copy then moves."""
    with open(os.path.join(ROOT, 'roles/munge/tasks/key.yml')) as handle:
        tasks = list(walk_tasks(yaml.safe_load(handle)))
    index = next(i for i, t in enumerate(tasks) if 'mungekey' in command_text(task_module(t)[1], t))
    argv = tasks[index]['ansible.builtin.command']['argv']
    keyfile = argv[argv.index('--keyfile') + 1]
    assert keyfile != '{{ munge_key_path }}' and '--force' in argv, argv
    move = tasks[index + 1]['ansible.builtin.copy']
    assert (move['src'], move['dest'], move['remote_src']) == (keyfile, '{{ munge_key_path }}', True)


@pytest.mark.parametrize('task, verdict', [
    ({'name': 'x', 'ansible.builtin.template': {'src': 'a.j2', 'dest': '/etc/slurm/slurm.conf'}}, 'atomic'),
    ({'name': 'x', 'ansible.builtin.copy': {'content': 'a', 'dest': '/etc/a', 'unsafe_writes': True}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.shell': 'echo a > /etc/slurm/slurm.conf'}, 'refused'),
    ({'name': 'x', 'ansible.builtin.shell': {'cmd': 'echo a >> /var/lib/x/state'}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.shell': 'render | tee /etc/munge/munge.key'}, 'refused'),
    ({'name': 'x', 'ansible.builtin.command': {'argv': ['sh', '-c', 'echo a >/etc/enroot/enroot.conf']}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.command': {'argv': ['dd', 'if=/dev/zero', 'of=/etc/x']}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.command': {'argv': ['cp', '/tmp/a', '/etc/a']}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.command': {'argv': ['mungekey', '--create', '--keyfile', '/etc/munge/munge.key']}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.unarchive': {'src': 'a.tgz', 'dest': '/opt'}}, 'refused'),
    ({'name': 'x', 'community.general.archive': {'path': '/a', 'dest': '/b.tgz'}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.shell': 'scontrol reconfigure >/dev/null 2>&1'}, 'no-write'),
    ({'name': 'x', 'ansible.builtin.command': {'argv': ['systemctl', 'is-active', 'slurmd']}}, 'no-write'),
    ({'name': 'x', 'ansible.builtin.command': {'argv': ['sh', '-c', 'command -v mpicc']}}, 'no-write'),
    ({'name': 'x', 'ansible.builtin.command': {'argv': ['sh', '-c', 'cd /x && make install']}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.command': {'argv': "{{ ['make', '-j4'] + extra }}"}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.shell': {'cmd': 'FOO=1 sudo cp a /etc/a'}}, 'refused'),
    ({'name': 'x', 'ansible.builtin.file': {'path': '/etc/a', 'state': 'directory', 'mode': '0755'}}, 'no-write'),
    ({'name': 'x', 'ansible.builtin.stat': {'path': '/etc/a'}}, 'no-write'),
])
def test_task_classifier(task, verdict):
    assert classify_task('roles/x/tasks/main.yml', task)[0] == verdict


# ---------------------------------------------------------------------------
# Python writers

PY_GLOBS = ('plugins/modules/*.py', 'plugins/module_utils/*.py', 'plugins/module_utils/*/*.py', 'plugins/action/*.py', 'plugins/filter/*.py',
            'roles/*/files/*.py')
# (file, function) -> why a non-atomic write there is fine.  Empty today: every writer renames a temp file.
PY_ALLOWLIST = {
    # an append-only log of drain/resume events, one JSON line each (a torn last line is the only loss)
    ('roles/slurm_healthcheck/files/gpucluster_healthcheck.py', 'log_event'): 'append-only event log',
    # the closed loop's transitions, one JSON line each (issue 48)
    ('roles/slurm_healthcheck/files/gpucluster_node_loop.py', 'append_events'): 'append-only event log',
}
RENAMES = {'replace', 'rename', 'atomic_move', 'move', 'renames'}
TEMP_MAKERS = {'mkstemp', 'NamedTemporaryFile', 'mkdtemp'}


def _mode(call):
    if len(call.args) > 1 and isinstance(call.args[1], ast.Constant):
        return call.args[1].value
    for keyword in call.keywords:
        if keyword.arg == 'mode' and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return 'r'


def _callee(call):
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _writes_and_renames(scope):
    """``(writes, rename sources, mkstemp names)`` of one function (nested functions excluded)."""
    writes, sources, temp_names = [], set(), set()
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _callee(node.value) in TEMP_MAKERS:
            for target in node.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                temp_names.add(ast.unparse(names[-1]))
        if not isinstance(node, ast.Call):
            continue
        name = _callee(node)
        mode = _mode(node) if name in ('open', 'fdopen') else ''
        if name in ('open', 'fdopen') and isinstance(mode, str) and set(mode) & set('wax+') and node.args:
            writes.append((name, ast.unparse(node.args[0]), node.lineno))
        elif name in ('write_text', 'write_bytes') and isinstance(node.func, ast.Attribute):
            writes.append(('open', ast.unparse(node.func.value), node.lineno))
        elif name in RENAMES and node.args:
            sources.add(ast.unparse(node.args[0]))
    return writes, sources, temp_names


def scan_python(source, filename='<string>'):
    """``[(function, line, what)]`` for each write that the heuristic cannot show to be atomic, and the atomic ones."""
    tree = ast.parse(source, filename)
    bad, good = [], []
    scopes = [('<module>', tree)] + [(n.name, n) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for func, scope in scopes:
        writes, sources, temp_names = _writes_and_renames(scope)
        for kind, target, line in writes:
            if kind == 'open':
                atomic = target in sources
            else:  # os.fdopen(fd, 'w'): the fd must come from mkstemp, whose name is renamed
                atomic = bool(temp_names & sources)
            (good if atomic else bad).append((func, line, kind))
    return bad, good


def python_writers():
    files = set()
    for pattern in PY_GLOBS:
        files.update(os.path.relpath(f, ROOT) for f in glob.glob(os.path.join(ROOT, pattern)))
    return sorted(files)


def test_python_writers_are_atomic():
    problems = []
    for path in python_writers():
        with open(os.path.join(ROOT, path)) as handle:
            bad, _good = scan_python(handle.read(), path)
        for func, line, kind in bad:
            if (path, func) not in PY_ALLOWLIST:
                problems.append('%s:%d in %s(): %s() for writing with no temp-file rename of it in the same function'
                                % (path, line, func, kind))
    assert not problems, '\n'.join(problems)


@pytest.mark.parametrize('path, func', [
    ('roles/slurm_healthcheck/files/gpucluster_healthcheck.py', '_write_json'),
    ('plugins/modules/validation_report.py', '_write'),
    ('plugins/module_utils/enroot/_enroot_import_io.py', 'write_record'),
    ('plugins/module_utils/enroot/_enroot_import_io.py', 'save_container_identity'),
])
def test_the_known_writers_are_seen_as_atomic(path, func):
    """Guards the scan: the writers test_interrupted_writes.py interrupts must be found, and found atomic."""
    with open(os.path.join(ROOT, path)) as handle:
        bad, good = scan_python(handle.read(), path)
    assert func in [g[0] for g in good] and func not in [b[0] for b in bad]


@pytest.mark.parametrize('source, bad_count', [
    ("def f(p, t):\n    with open(p, 'w') as h:\n        h.write(t)\n", 1),
    ("def f(p, t):\n    with open(p, mode='a') as h:\n        h.write(t)\n", 1),
    ("def f(p, t):\n    h = open(p, 'wb')\n", 1),
    ("def f(p, t):\n    p.write_text(t)\n", 1),
    ("import os\ndef f(p, t):\n    tmp = p + '.tmp'\n    with open(tmp, 'w') as h:\n        h.write(t)\n    os.rename(tmp, p)\n", 0),
    ("import os\ndef f(p, t):\n    tmp = p + '.tmp'\n    with open(tmp, 'w') as h:\n        h.write(t)\n    os.replace(p, tmp)\n", 1),
    ("import os, tempfile\ndef f(m, p, t):\n    fd, tmp = tempfile.mkstemp(dir='.')\n    with os.fdopen(fd, 'w') as h:\n        h.write(t)\n"
     "    m.atomic_move(tmp, p)\n", 0),
    ("import os\ndef f(fd, t):\n    with os.fdopen(fd, 'w') as h:\n        h.write(t)\n", 1),
    ("def f(p):\n    with open(p) as h:\n        return h.read()\n", 0),
    ("def f(p):\n    with open(p, 'rb') as h:\n        return h.read()\n", 0),
])
def test_python_scan_heuristic(source, bad_count):
    assert len(scan_python(source)[0]) == bad_count
