"""scripts/architecture_metrics.py counts what it says, on a tiny tree made here (and reads argument specs as YAML does)."""
import importlib.util
import pathlib
import textwrap

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("architecture_metrics", ROOT / "scripts" / "architecture_metrics.py")
metrics = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(metrics)

MU = "ansible_collections.gpucluster.bringup.plugins.module_utils"

TREE = {
    "plugins/module_utils/_shared.py": """
        def helper():
            return 1
        """,
    "plugins/module_utils/a/__init__.py": "",
    "plugins/module_utils/a/_x.py": """
        from %(mu)s.b import _y
        from %(mu)s.b._y import _hidden, visible


        def uses():
            return _y._private_table, _y.public, _hidden, visible
        """,
    "plugins/module_utils/a/_z.py": """
        # a comment line

        from %(mu)s import _shared


        def local():
            return _own()


        def _own():
            return _shared.helper()
        """,
    "plugins/module_utils/b/_y.py": """
        from %(mu)s.a import _z as zed
        _private_table = {}
        public = 1


        def _hidden():
            return zed.local()


        def visible():
            return 2
        """,
    "plugins/module_utils/c/_w.py": """
        from %(mu)s.a._z import local
        from . import _v


        class Runner(object):
            def run(self):
                x = 1
                y = 2
                z = 3
                return local(), x, y, z, _v._secret
        """,
    "plugins/module_utils/c/_v.py": """
        _secret = 3
        """,
    "plugins/modules/thing.py": '''
        DOCUMENTATION = r"""
        module: thing
        short_description: x
        options: {}
        """

        EXAMPLES = r"""
        - thing:
        """
        RETURN = """
        """
        import os  # code line with a comment


        def main():
            """Docstring lines count."""
            return os.sep
        ''',
    "roles/r1/files/prog.py": """
        from %(mu)s.c._w import Runner as _Runner
        """,
    "roles/r1/meta/argument_specs.yml": """
        ---
        argument_specs:
          main:
            short_description: r1
            description:
              - >-
                Note: a description line that looks like a key.
            options:
              r1_alpha:
                type: str
                description:
                  - >-
                    see: another line like a key
              r1_beta:
                type: dict
                options:
                  nested_not_a_role_variable:
                    type: str
          other:
            options:
              r1_alpha:
                type: str
              "r1_gamma":
                type: int
        """,
    "roles/r2/meta/argument_specs.yml": """
        ---
        argument_specs:
          main:
            options:
              r2_only: {type: bool}
        """,
}


@pytest.fixture(name="tree")
def fixture_tree(tmp_path):
    for rel, text in TREE.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text % {"mu": MU} if "%(mu)s" in text else text).lstrip("\n"))
    return tmp_path


def test_package_cycles_are_pairs_importing_each_other(tree):
    figures = metrics.measure(str(tree))
    assert figures["package_cycles"] == ["a <-> b"]
    assert figures["folder_cycles"] == ["a <-> b"]
    # c imports a and a never imports c; a imports the top level, which imports nothing back
    assert figures["package_edges"] == {"a -> b": 1, "a -> module_utils": 1, "b -> a": 1, "c -> a": 1}


def test_a_cycle_with_the_top_level_is_not_between_folders(tree):
    shared = tree / "plugins" / "module_utils" / "_shared.py"
    shared.write_text("from %s.a import _x\n" % MU + shared.read_text())
    figures = metrics.measure(str(tree))
    assert figures["package_cycles"] == ["a <-> b", "a <-> module_utils"]
    assert figures["folder_cycles"] == ["a <-> b"]


def test_private_names_of_another_file(tree):
    figures = metrics.measure(str(tree))
    assert figures["private_imports"] == [
        # `from b._y import _hidden` and `_y._private_table`; `from b import _y` is a module, `_y.public` is public
        "plugins/module_utils/a/_x.py uses plugins/module_utils/b/_y.py:_hidden",
        "plugins/module_utils/a/_x.py uses plugins/module_utils/b/_y.py:_private_table",
        # a relative import is resolved like an absolute one
        "plugins/module_utils/c/_w.py uses plugins/module_utils/c/_v.py:_secret",
    ]


def test_largest_function_and_module(tree):
    figures = metrics.measure(str(tree))
    assert figures["functions"][0] == ("plugins/module_utils/c/_w.py", "Runner.run", 5)
    assert ("plugins/module_utils/a/_z.py", "_own", 2) in figures["functions"]
    modules = dict(figures["modules"])
    # _w.py: 2 imports + class + def + 4 body lines; blanks are not code
    assert modules["plugins/module_utils/c/_w.py"] == 8
    # _z.py: the comment and blanks are not code
    assert modules["plugins/module_utils/a/_z.py"] == 5
    # thing.py: DOCUMENTATION, EXAMPLES and RETURN are left out; the import, def, docstring and return count
    assert modules["plugins/modules/thing.py"] == 4
    assert figures["modules"][0] == ("plugins/module_utils/c/_w.py", 8)
    # the Ansible modules and plugins apart: the Done-when's module size gates them, not module_utils
    assert figures["ansible_modules"] == [("plugins/modules/thing.py", 4)]


@pytest.mark.parametrize("rel, plugin", [
    ("plugins/modules/thing.py", True),
    ("plugins/action/preflight.py", True),
    ("plugins/filter/slurm.py", True),
    ("plugins/modules/__init__.py", False),
    ("plugins/module_utils/c/_w.py", False),
    ("roles/r1/files/program.py", False),
])
def test_ansible_plugins_are_modules_action_and_filter_plugins(rel, plugin):
    assert metrics.is_ansible_plugin(rel) is plugin


def test_role_variables_are_entry_point_options_once_per_role(tree):
    figures = metrics.measure(str(tree))
    assert figures["role_variables"] == {"r1": 3, "r2": 1}
    assert figures["role_variables_total"] == 4


def test_report_names_the_figures(tree):
    text = "\n".join(metrics.report(metrics.measure(str(tree))))
    assert "package import cycles in plugins/module_utils: 1\n  a <-> b (1 and 1 imports)\n" in text
    assert "  of them between two folders (the top level's files aside): 1\n" in text
    assert "private names used from another file: 3" in text
    assert "largest function: plugins/module_utils/c/_w.py Runner.run, 5 lines" in text
    assert "largest module: plugins/module_utils/c/_w.py, 8 code lines" in text
    assert ("largest Ansible module/plugin (plugins/modules, action, filter; the Done-when's module figure): "
            "plugins/modules/thing.py, 4 code lines") in text
    assert "Ansible modules/plugins over 250 code lines (the Done-when's gate): 0" in text
    assert "role variables in roles/*/meta/argument_specs.yml: 4 (r1 3, r2 1)" in text


@pytest.mark.parametrize("spec", sorted(ROOT.glob("roles/*/meta/argument_specs.yml")), ids=lambda p: p.parts[-3])
def test_role_variables_read_as_yaml_reads_them(spec):
    """The standard-library reader of argument specs finds exactly the options YAML finds, on every role."""
    expected = set()
    for entry in yaml.safe_load(spec.read_text())["argument_specs"].values():
        expected.update((entry or {}).get("options") or {})
    assert set(metrics.spec_variables(spec.read_text())) == expected


def test_main_prints_the_report(tree, capsys):
    assert metrics.main(["--root", str(tree), "--top", "1"]) == 0
    assert capsys.readouterr().out.startswith("package import cycles in plugins/module_utils: 1\n")


# The collection itself (issue 43, "Done when" item 5): the figures that must stay at zero, measured on this tree.


@pytest.fixture(name="real", scope="module")
def fixture_real():
    return metrics.measure(str(ROOT))


def _cycle(edges):
    """A cycle of any length in the package graph ("a -> b" keys), as a list of packages, or None."""
    graph = {}
    for edge in edges:
        source, target = edge.split(" -> ")
        graph.setdefault(source, set()).add(target)
    done, path = set(), []

    def visit(package):
        if package in path:
            return path[path.index(package):] + [package]
        if package in done:
            return None
        path.append(package)
        for target in sorted(graph.get(package, ())):
            found = visit(target)
            if found:
                return found
        path.pop()
        done.add(package)
        return None

    for package in sorted(graph):
        found = visit(package)
        if found:
            return found
    return None


def test_the_cycle_finder_finds_long_cycles():
    assert _cycle({"a -> b": 1, "b -> c": 1, "c -> a": 1}) == ["a", "b", "c", "a"]
    assert _cycle({"a -> b": 1, "b -> c": 1, "a -> c": 1}) is None


def test_no_package_of_module_utils_imports_one_that_imports_it(real):
    assert real["package_cycles"] == []
    # nor through a third one: the folders and the top level's files are layers
    assert _cycle(real["package_edges"]) is None


def test_no_file_uses_another_files_private_name(real):
    assert real["private_imports"] == []


def test_the_real_tree_is_measured(real):
    # the figures above come from the product's files, not from an empty walk
    assert "slurm -> module_utils" in real["package_edges"]
    assert "plugins/module_utils/slurm/_topology.py" in [module[0] for module in real["modules"]]
