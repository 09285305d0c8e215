"""docs/architecture.md is checked from the tree: everything the tree has is in it, everything it names is in the tree.

Missing from the doc (``missing``):

- a module (``plugins/modules/<name>.py``): a line ``   <name>   <what>`` of the module list in the data-flow picture (the
  lines between the picture's ``plugins/modules/`` and ``plugins/module_utils/``);
- a package of ``plugins/module_utils`` (a folder): a row of a table whose first cell is `` `<folder>/` ``, and each of
  its files (``_x.py``, ``__init__.py`` aside) as `` `_x.py` `` in that row; a top-level file of ``plugins/module_utils``
  as `` `_x.py` `` in the row whose first cell starts with ``top level``;
- a filter, action or lookup plugin (``plugins/<kind>/<name>.py``): its path, `` `plugins/<kind>/<name>.py` ``;
- a role: a table row whose first cell is `` `roles/<name>/` ``; a playbook (``playbooks/<name>.yml``): a table row
  whose first cell is `` `playbooks/<name>.yml` ``;
- a node program (``roles/<role>/files/<name>.py``): its path, `` `roles/<role>/files/<name>.py` ``.

Stale in the doc (``stale``):

- a path it names that starts with ``plugins/``, ``roles/``, ``playbooks/``, ``scripts/``, ``docs/``, ``tests/``,
  ``molecule/``, ``nvml_sim/``, ``benchmarks/`` or ``inventory/`` (``{a,b}`` and ``*`` expanded) does not exist;
  ``module_utils/...`` and a package's ``<folder>/_x.py`` are read under ``plugins/module_utils/``;
- a file name in backticks (``test_gres.py``, ``catalogue/test_gpus.py``, ``defaults/main.yml``) is no file's name or
  path ending in the tree;
- in the "Where to change what" table, a name in backticks in the "where" cell (``MODELS``, ``format_tag``,
  ``slurm_conf_defaults``) is defined by none of the files that cell names (a Python file: a function, class,
  method, assignment, parameter or dict key of that name; any other file: a key ``<name>:`` or the word), or a row names no file (a row
  whose change is made in the inventory aside);
- in the node programs' table (first cell a ``roles/<role>/files/<name>.py``), the last cell does not list exactly the
  module_utils files the program imports itself (as `` `<folder>/_x.py` `` or `` `_x.py` ``).
"""
import ast
import glob
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

PATH_DIRS = ("plugins", "roles", "playbooks", "scripts", "docs", "tests", "molecule", "nvml_sim", "benchmarks", "inventory")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./*{},-]*)" % "|".join(PATH_DIRS))
SPAN = re.compile(r"`([^`\n]+)`")
FILE_NAME = re.compile(r"^[\w./-]+\.(?:py|yml|yaml|md|sh|txt|json|c)$")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SKIP_DIRS = {".git", ".venv", ".build", "__pycache__", "node_modules", ".pytest_cache"}
PLUGIN_KINDS = ("filter", "action", "lookup")


def _files(root):
    """Every file of the tree, as a relative path with '/'."""
    found = []
    for dirpath, dirnames, filenames in os.walk(str(root)):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        rel = os.path.relpath(dirpath, str(root)).replace(os.sep, "/")
        found += [name if rel == "." else rel + "/" + name for name in filenames]
    return found


def _table_rows(text):
    """Every markdown table row of the text, as its list of cells."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and line.rstrip().endswith("|") and not re.match(r"^\|[-| :]+\|$", line.strip()):
            rows.append([cell.strip() for cell in line.strip()[1:-1].split("|")])
    return rows


def _module_list(text):
    """The module names listed in the data-flow picture (between plugins/modules/ and plugins/module_utils/)."""
    names = set()
    inside = False
    for line in text.splitlines():
        if "plugins/module_utils/" in line:
            inside = False
        if inside:
            match = re.match(r"^ {2,}([a-z][a-z0-9_]*) {2,}\S", line)
            if match:
                names.add(match.group(1))
        if "plugins/modules/" in line and "plugins/modules/<" not in line:
            inside = True
    return names


def missing(text, root):
    """What the tree has that the doc does not list, as 'kind name' strings."""
    root = pathlib.Path(root)
    out = []
    listed = _module_list(text)
    out += ["module %s" % p.stem for p in sorted(root.glob("plugins/modules/*.py"))
            if p.stem != "__init__" and p.stem not in listed]
    rows = {cells[0]: " | ".join(cells[1:]) for cells in _table_rows(text) if cells}
    top_row = next((rest for first, rest in rows.items() if first.startswith("top level")), None)
    utils = root / "plugins" / "module_utils"
    for path in sorted(utils.rglob("*.py")) if utils.is_dir() else []:
        rel = path.relative_to(utils)
        if path.name == "__init__.py" or "__pycache__" in rel.parts:
            continue
        if len(rel.parts) == 1:
            row, label = top_row, "module_utils top level"
        else:
            row, label = rows.get("`%s/`" % rel.parts[0]), "module_utils package %s/" % rel.parts[0]
        if row is None:
            if label not in out:
                out.append(label)
        elif "`%s`" % path.name not in row:
            out.append("module_utils file %s" % rel.as_posix())
    for kind in PLUGIN_KINDS:
        out += ["%s plugin %s" % (kind, p.stem) for p in sorted(root.glob("plugins/%s/*.py" % kind))
                if p.stem != "__init__" and "`plugins/%s/%s`" % (kind, p.name) not in text]
    firsts = set(rows)
    out += ["role %s" % p.name for p in sorted(root.glob("roles/*")) if p.is_dir() and "`roles/%s/`" % p.name not in firsts]
    out += ["playbook %s" % p.name for p in sorted(root.glob("playbooks/*.yml")) if "`playbooks/%s`" % p.name not in firsts]
    out += ["node program %s" % p.relative_to(root).as_posix() for p in sorted(root.glob("roles/*/files/*.py"))
            if "`%s`" % p.relative_to(root).as_posix() not in text]
    return out


def _expand(path):
    """A path with {a,b} alternatives, as its list of plain paths (globs kept)."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [p for alt in match.group(1).split(",") for p in _expand(path[:match.start()] + alt + path[match.end():])]


def _resolve(token, root, files):
    """The files a token names (globbed; a package-relative module_utils path under plugins/module_utils)."""
    if token.startswith("module_utils/"):
        token = "plugins/" + token
    elif re.match(r"^[a-z]+/_\w+\.py$", token) and (root / "plugins" / "module_utils" / token.split("/")[0]).is_dir():
        token = "plugins/module_utils/" + token
    if token.split("/")[0] in PATH_DIRS:
        return [pathlib.Path(p) for p in glob.glob(str(root / token))]
    return [root / f for f in files if f == token or f.endswith("/" + token)]


def _paths_of(text):
    """Every repository path the text names (PATH), and every file name in backticks, without trailing punctuation."""
    tokens = []
    for match in PATH.finditer(text):
        token = match.group(1).rstrip(".,")
        if "..." not in token:
            tokens += _expand(token)
    for span in SPAN.findall(text):
        for part in span.split():
            part = part.strip("(),;:'\"")
            if FILE_NAME.match(part) and part.split("/")[0] not in PATH_DIRS and not part.startswith("/"):
                tokens.append(part)
    return tokens


def _defines(path, name):
    """Whether a file defines name.

    A Python file: a def, class, method, assignment, a function's parameter (a field given as a keyword, the catalogue's
    ``gres``) or a dict's string key; another file: a key ``<name>:`` (YAML) or the word.
    """
    text = path.read_text(errors="replace")
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                return True
            if isinstance(node, ast.arg) and node.arg == name:
                return True
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == name for k in node.keys):
                return True
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        return False
    if path.suffix in (".yml", ".yaml"):
        return re.search(r"^\s*-?\s*%s:" % re.escape(name), text, re.M) is not None
    return re.search(r"\b%s\b" % re.escape(name), text) is not None


def _where_table(text):
    """The rows of the "Where to change what" table: (subject, where, tests)."""
    match = re.search(r"^## Where to change what\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    rows = _table_rows(match.group(1)) if match else []
    return [row for row in rows[1:] if len(row) >= 3]


MODULE_UTILS = "ansible_collections.gpucluster.bringup.plugins.module_utils"


def program_imports(path, utils):
    """The module_utils files (relative to utils, '/'-separated) a Python file imports itself."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(MODULE_UTILS):
            continue
        base = node.module[len(MODULE_UTILS):].lstrip(".").replace(".", "/")
        for alias in node.names:
            sub = (base + "/" if base else "") + alias.name + ".py"
            found.add(sub if (utils / sub).is_file() else base + ".py")
    return found


def _program_rows(text, root):
    """Node programs' table rows whose listed module_utils files differ from what the program imports."""
    out = []
    utils = root / "plugins" / "module_utils"
    for cells in _table_rows(text):
        match = re.match(r"^`(roles/[^/`]+/files/[^/`]+\.py)`$", cells[0])
        if not match or len(cells) < 3 or not (root / match.group(1)).is_file():
            continue
        listed = set(re.findall(r"`([\w/]+\.py)`", cells[-1]))
        imported = program_imports(root / match.group(1), utils)
        if listed != imported:
            out.append("program %s imports %s, the doc lists %s" % (match.group(1), sorted(imported), sorted(listed)))
    return out


def stale(text, root):
    """What the doc names that the tree does not have, as 'kind what' strings."""
    root = pathlib.Path(root)
    files = _files(root)
    out = []
    for token in sorted(set(_paths_of(text))):
        if not _resolve(token, root, files):
            out.append("path %s" % token)
    for subject, where, _tests in _where_table(text):
        named = [path for token in _paths_of(where) for path in _resolve(token, root, files) if path.is_file()]
        if not named:
            if "inventory" not in where:
                out.append("row '%s' names no file" % subject)
            continue
        for span in SPAN.findall(where):
            if IDENTIFIER.match(span) and not any(_defines(path, span) for path in named):
                out.append("row '%s': %s is defined in none of its files" % (subject, span))
    return out + _program_rows(text, root)


def test_every_module_package_plugin_role_playbook_and_node_program_is_in_the_doc():
    assert missing(DOC.read_text(), ROOT) == []


def test_every_path_and_name_the_doc_gives_exists():
    assert stale(DOC.read_text(), ROOT) == []


def test_the_where_table_has_rows():
    assert len(_where_table(DOC.read_text())) >= 10


def test_the_catalogue_imports_nothing_as_the_doc_says():
    assert "`catalogue/` imports nothing" in DOC.read_text()
    utils = ROOT / "plugins" / "module_utils"
    # (across folders: _node_type.py reads the GPU entries of _gpus.py, in the same folder)
    assert [p.name for p in sorted((utils / "catalogue").glob("*.py"))
            if any(not name.startswith("catalogue/") for name in program_imports(p, utils))] == []


# ---- the checks themselves, on a small tree and doc made here: each can fail --------------------------------------

FAKE_TREE = {
    "plugins/modules/alpha.py": "",
    "plugins/modules/beta.py": "",
    "plugins/module_utils/_shared.py": "TABLE = {}\n",
    "plugins/module_utils/pkg/__init__.py": "",
    "plugins/module_utils/pkg/_one.py": "def run(limit=1):\n    return {'mode': limit}\n\n\nclass Thing(object):\n    def go(self):\n        pass\n",
    "plugins/filter/fil.py": "",
    "plugins/action/alpha.py": "",
    "roles/r1/files/prog.py": "from %s.pkg import _one\nfrom %s._shared import TABLE\n" % (MODULE_UTILS, MODULE_UTILS),
    "roles/r1/defaults/main.yml": "---\nr1_setting: 1\n",
    "playbooks/site.yml": "",
    "tests/unit/test_one.py": "",
}

FAKE_DOC = """# Architecture
```
 playbooks/site.yml
 plugins/modules/       thin
   alpha                does a (_one)
   beta                 does b
 plugins/module_utils/  pure
```
| folder | files | used by |
|---|---|---|
| `pkg/` | `_one.py` (things) | alpha |
| top level (shared) | `_shared.py` | all |

Plugins: `plugins/filter/fil.py`, `plugins/action/alpha.py`.

| role or playbook | what |
|---|---|
| `roles/r1/` | the role |
| `playbooks/site.yml` | everything |

| program | what | imports |
|---|---|---|
| `roles/r1/files/prog.py` | a program | `pkg/_one.py`, `_shared.py` |

## Where to change what

| to change | where | tests |
|---|---|---|
| a thing | `plugins/module_utils/pkg/_one.py` (`run`, `Thing`, `go`, `limit`, `mode`) | `test_one.py` |
| a default | `roles/r1/defaults/main.yml` (`r1_setting`), `pkg/_one.py` | `tests/unit/test_one.py` |
| a site layout | the inventory (`mig_layout`) | molecule |
"""


@pytest.fixture(name="fake_tree")
def fixture_fake_tree(tmp_path):
    for rel, content in FAKE_TREE.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return tmp_path


def test_the_fake_doc_is_complete_and_true(fake_tree):
    assert missing(FAKE_DOC, fake_tree) == []
    assert stale(FAKE_DOC, fake_tree) == []


@pytest.mark.parametrize("old, new, found", [
    ("   beta                 does b\n", "", ["module beta"]),
    ("`_one.py` (things)", "(things)", ["module_utils file pkg/_one.py"]),
    ("| `pkg/` |", "| pkg |", ["module_utils package pkg/"]),
    ("| top level (shared) | `_shared.py` | all |\n", "", ["module_utils top level"]),
    ("`plugins/filter/fil.py`, ", "", ["filter plugin fil"]),
    ("`plugins/action/alpha.py`.", ".", ["action plugin alpha"]),
    ("| `roles/r1/` | the role |\n", "", ["role r1"]),
    ("| `playbooks/site.yml` | everything |\n", "", ["playbook site.yml"]),
    ("| `roles/r1/files/prog.py` | a program | `pkg/_one.py`, `_shared.py` |\n", "", ["node program roles/r1/files/prog.py"]),
], ids=["module", "module_utils-file", "package", "top-level", "filter", "action", "role", "playbook", "node-program"])
def test_missing_finds_what_the_doc_leaves_out(fake_tree, old, new, found):
    assert old in FAKE_DOC
    assert missing(FAKE_DOC.replace(old, new), fake_tree) == found


@pytest.mark.parametrize("rel, found", [
    ("plugins/modules/gamma.py", ["module gamma"]),
    ("plugins/module_utils/pkg/_two.py", ["module_utils file pkg/_two.py"]),
    ("plugins/module_utils/other/_three.py", ["module_utils package other/"]),
    ("plugins/module_utils/other/_four.py plugins/module_utils/other/sub/_five.py", ["module_utils package other/"]),
    ("plugins/module_utils/_top.py", ["module_utils file _top.py"]),
    ("plugins/lookup/look.py", ["lookup plugin look"]),
    ("roles/r2/tasks/main.yml", ["role r2"]),
    ("playbooks/extra.yml", ["playbook extra.yml"]),
    ("roles/r1/files/second.py", ["node program roles/r1/files/second.py"]),
], ids=["module", "module_utils-file", "package", "package-named-once", "top-level-file", "lookup", "role", "playbook", "node-program"])
def test_missing_finds_what_the_tree_adds(fake_tree, rel, found):
    for one in rel.split():
        (fake_tree / one).parent.mkdir(parents=True, exist_ok=True)
        (fake_tree / one).write_text("")
    assert missing(FAKE_DOC, fake_tree) == found


@pytest.mark.parametrize("old, new, found", [
    ("`plugins/filter/fil.py`", "`plugins/filter/gone.py`", ["path plugins/filter/gone.py"]),
    (" playbooks/site.yml\n", " playbooks/{site,old}.yml\n", ["path playbooks/old.yml"]),
    ("| `test_one.py` |", "| `test_two.py` |", ["path test_two.py"]),
    ("(`run`, `Thing`, `go`, `limit`, `mode`)", "(`run`, `Thing`, `stop`)", ["row 'a thing': stop is defined in none of its files"]),
    ("`limit`, `mode`)", "`limit`, `kind`)", ["row 'a thing': kind is defined in none of its files"]),
    ("(`r1_setting`)", "(`r1_other`)", ["row 'a default': r1_other is defined in none of its files"]),
    ("`pkg/_one.py` |", "`pkg/_gone.py` |", ["path pkg/_gone.py"]),
    ("| a thing | `plugins/module_utils/pkg/_one.py` (`run`, `Thing`, `go`, `limit`, `mode`) |", "| a thing | the code |",
     ["row 'a thing' names no file"]),
    ("`pkg/_one.py`, `_shared.py` |", "`pkg/_one.py` |",
     ["program roles/r1/files/prog.py imports ['_shared.py', 'pkg/_one.py'], the doc lists ['pkg/_one.py']"]),
    ("`pkg/_one.py`, `_shared.py` |", "`pkg/_one.py`, `_shared.py`, `_hostlist.py` |",
     ["path _hostlist.py", "program roles/r1/files/prog.py imports ['_shared.py', 'pkg/_one.py'], "
      "the doc lists ['_hostlist.py', '_shared.py', 'pkg/_one.py']"]),
], ids=["path", "braces", "file-name", "python-name", "dict-key", "yaml-key", "package-relative", "no-file", "program-import-unlisted",
        "program-import-extra"])
def test_stale_finds_what_the_tree_does_not_have(fake_tree, old, new, found):
    assert old in FAKE_DOC
    assert stale(FAKE_DOC.replace(old, new), fake_tree) == found
