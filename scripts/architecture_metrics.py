#!/usr/bin/env python3
"""Print issue 43's "Done when" figures, measured from the tree (standard library only; it measures, it gates nothing).

    python3 scripts/architecture_metrics.py [--root DIR] [--top N] [--json]

What it counts, in the product's Python (plugins/**/*.py and the node programs roles/*/files/**/*.py):

- package import cycles in plugins/module_utils: package A imports package B and B imports A (a package is a
  folder of plugins/module_utils; the files at its top level count as one package, "module_utils");
- private names imported from another file: `from x import _name` where _name is not a module of its own, and
  `x._name` where x is another of our files imported under that name (each file, target and name once);
- the largest function, in lines (def to its last line, docstring included; methods named Class.method);
- the largest module, in code lines: lines with something other than a comment or blanks, less the lines of the
  module-level DOCUMENTATION, EXAMPLES and RETURN strings; the Ansible modules and plugins (plugins/modules,
  plugins/action, plugins/filter) apart from the other files (module_utils, node programs): the Done-when's
  "largest module <= 250 code lines" (DOCUMENTATION/EXAMPLES/RETURN excluded) is the Ansible modules' figure;
- the role variables: the options of every entry point of roles/*/meta/argument_specs.yml (each name once per role;
  an option's own sub-options are not role variables).
"""

from __future__ import absolute_import, division, print_function

import argparse
import ast
import io
import json
import os
import re
import sys
import tokenize

COLLECTION_PREFIX = "ansible_collections.gpucluster.bringup."
DOC_STRINGS = ("DOCUMENTATION", "EXAMPLES", "RETURN")
TOP_PACKAGE = "module_utils"
SKIP_DIRS = {"__pycache__", ".git", ".venv", ".build", "node_modules"}
# Where Ansible modules and plugins live: the Done-when's module size gates these files.
ANSIBLE_PLUGIN_DIRS = ("plugins/modules/", "plugins/action/", "plugins/filter/")
MODULE_LIMIT = 250
FUNCTION_LIMIT = 80


def product_files(root):
    """The product's Python files, as paths relative to root (plugins/**, roles/*/files/**), sorted."""
    found = []
    starts = [os.path.join(root, "plugins")]
    roles = os.path.join(root, "roles")
    if os.path.isdir(roles):
        starts += [os.path.join(roles, r, "files") for r in sorted(os.listdir(roles))]
    for start in starts:
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in filenames:
                if name.endswith(".py"):
                    found.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return sorted(found)


def _read(root, rel):
    with io.open(os.path.join(root, rel), encoding="utf-8") as handle:
        return handle.read()


def module_path(root, dotted):
    """Our file (relative path) for a dotted module name, or None when it is not one of ours."""
    if not dotted.startswith(COLLECTION_PREFIX):
        return None
    base = dotted[len(COLLECTION_PREFIX):].replace(".", "/")
    for candidate in (base + ".py", base + "/__init__.py"):
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def _dotted_of(rel):
    """The dotted name of our file rel (package __init__.py gives the package)."""
    stem = rel[:-3]
    if stem.endswith("/__init__"):
        stem = stem[:-len("/__init__")]
    return COLLECTION_PREFIX + stem.replace("/", ".")


def _from_base(rel, node):
    """The dotted module an ImportFrom node names, relative imports resolved against file rel."""
    if not node.level:
        return node.module or ""
    parts = _dotted_of(rel).split(".")
    if not rel.endswith("/__init__.py"):
        parts = parts[:-1]
    parts = parts[:len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def imports_of(root, rel, tree):
    """(imported files, private names) of one file: files as relative paths; privates as (target, name)."""
    targets = set()
    privates = set()
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = module_path(root, alias.name)
                if target:
                    targets.add(target)
                    if alias.asname:
                        aliases[alias.asname] = target
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(rel, node)
            target = module_path(root, base)
            for alias in node.names:
                sub = module_path(root, base + "." + alias.name)
                if sub:
                    targets.add(sub)
                    aliases[alias.asname or alias.name] = sub
                elif target:
                    targets.add(target)
                    if _is_private(alias.name) and target != rel:
                        privates.add((target, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _is_private(node.attr):
            target = aliases.get(node.value.id)
            if target and target != rel:
                privates.add((target, node.attr))
    return targets, privates


def package_of(rel):
    """The module_utils package of a file (its folder under plugins/module_utils), or None outside module_utils."""
    parts = rel.split("/")
    if parts[:2] != ["plugins", "module_utils"]:
        return None
    return parts[2] if len(parts) > 3 else TOP_PACKAGE


def package_cycles(edges):
    """Pairs (A, B), A < B, where A imports B and B imports A; edges maps (A, B) to the import count."""
    return sorted((a, b) for (a, b) in edges if a < b and (b, a) in edges)


def functions_of(tree):
    """(qualified name, lines) of every function and method in a module tree."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found.append((name, child.end_lineno - child.lineno + 1))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def code_lines(source, tree):
    """Lines holding code (not only comments or blanks), less the module-level DOCUMENTATION/EXAMPLES/RETURN."""
    lines = set()
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER, tokenize.ENCODING)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in DOC_STRINGS for t in node.targets):
            lines.difference_update(range(node.lineno, node.end_lineno + 1))
    return len(lines)


_KEY = re.compile(r"^( *)([A-Za-z0-9_.-]+|\"[^\"]+\"|'[^']+'):(\s|$)")


def spec_variables(text):
    """The role variables one argument_specs.yml declares: the keys of argument_specs.<entry>.options."""
    names = []
    stack = []
    for line in text.splitlines():
        match = _KEY.match(line)
        if not match:
            continue
        indent = len(match.group(1))
        key = match.group(2).strip("\"'")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = [k for _, k in stack]
        if len(path) == 3 and path[0] == "argument_specs" and path[2] == "options" and key not in names:
            names.append(key)
        stack.append((indent, key))
    return names


def role_variables(root):
    """{role: [variable, ...]} from roles/*/meta/argument_specs.yml."""
    roles = os.path.join(root, "roles")
    result = {}
    for role in sorted(os.listdir(roles)) if os.path.isdir(roles) else []:
        spec = os.path.join(roles, role, "meta", "argument_specs.yml")
        if os.path.isfile(spec):
            result[role] = spec_variables(_read(root, os.path.relpath(spec, root)))
    return result


def is_ansible_plugin(rel):
    """True for an Ansible module or plugin (plugins/modules, plugins/action, plugins/filter), not its __init__.py."""
    return rel.startswith(ANSIBLE_PLUGIN_DIRS) and not rel.endswith("/__init__.py")


def measure(root):
    """Every figure, as a dict (see the module's docstring)."""
    edges = {}
    privates = []
    functions = []
    modules = []
    for rel in product_files(root):
        source = _read(root, rel)
        tree = ast.parse(source, rel)
        targets, private = imports_of(root, rel, tree)
        privates += [(rel, target, name) for target, name in sorted(private)]
        mine = package_of(rel)
        for target in targets:
            theirs = package_of(target)
            if mine and theirs and mine != theirs:
                edges[(mine, theirs)] = edges.get((mine, theirs), 0) + 1
        functions += [(rel, name, lines) for name, lines in functions_of(tree)]
        modules.append((rel, code_lines(source, tree)))
    variables = role_variables(root)
    return {
        "package_edges": {"%s -> %s" % edge: count for edge, count in sorted(edges.items())},
        "package_cycles": ["%s <-> %s" % pair for pair in package_cycles(edges)],
        "folder_cycles": ["%s <-> %s" % pair for pair in package_cycles(edges) if TOP_PACKAGE not in pair],
        "private_imports": ["%s uses %s:%s" % item for item in sorted(privates)],
        "functions": sorted(functions, key=lambda f: (-f[2], f[0], f[1])),
        "modules": sorted(modules, key=lambda m: (-m[1], m[0])),
        "ansible_modules": sorted((m for m in modules if is_ansible_plugin(m[0])), key=lambda m: (-m[1], m[0])),
        "role_variables": {role: len(names) for role, names in variables.items()},
        "role_variables_total": sum(len(names) for names in variables.values()),
    }


def _module_lines(figures, top):
    """The module sizes as text lines: the Ansible modules and plugins (what the Done-when gates), then every file."""
    out = []
    plugins = figures.get("ansible_modules") or []
    if plugins:
        out.append("largest Ansible module/plugin (plugins/modules, action, filter; the Done-when's module figure): %s, %d code lines"
                   % plugins[0])
        out += ["  %s, %d code lines" % m for m in plugins[1:top]]
        out.append("Ansible modules/plugins over %d code lines (the Done-when's gate): %d"
                   % (MODULE_LIMIT, sum(1 for m in plugins if m[1] > MODULE_LIMIT)))
    modules = figures["modules"]
    if modules:
        out.append("largest module: %s, %d code lines" % modules[0])
        out += ["  %s, %d code lines" % m for m in modules[1:top]]
        out.append("modules over %d code lines, every file (module_utils and node programs too; not gated): %d"
                   % (MODULE_LIMIT, sum(1 for m in modules if m[1] > MODULE_LIMIT)))
    return out


def report(figures, top=5):
    """The figures as text lines."""
    out = []
    cycles = figures["package_cycles"]
    out.append("package import cycles in plugins/module_utils: %d" % len(cycles))
    out += ["  %s (%d and %d imports)" % (pair, figures["package_edges"][pair.replace(" <-> ", " -> ")],
                                          figures["package_edges"][" -> ".join(reversed(pair.split(" <-> ")))])
            for pair in cycles]
    out.append("  of them between two folders (the top level's files aside): %d" % len(figures["folder_cycles"]))
    out.append("private names used from another file: %d" % len(figures["private_imports"]))
    out += ["  " + item for item in figures["private_imports"]]
    functions = figures["functions"]
    if functions:
        out.append("largest function: %s %s, %d lines" % functions[0])
        out += ["  %s %s, %d lines" % f for f in functions[1:top]]
        out.append("functions over %d lines: %d" % (FUNCTION_LIMIT, sum(1 for f in functions if f[2] > FUNCTION_LIMIT)))
    out += _module_lines(figures, top)
    per_role = ", ".join("%s %d" % (r, n) for r, n in sorted(figures["role_variables"].items(), key=lambda x: (-x[1], x[0])))
    out.append("role variables in roles/*/meta/argument_specs.yml: %d (%s)" % (figures["role_variables_total"], per_role))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--top", type=int, default=5, help="how many of the largest functions and modules to list")
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    args = parser.parse_args(argv)
    figures = measure(args.root)
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        print("\n".join(report(figures, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
