"""Imports go one way. The learner's package `rlvr` is read from the bottom up: a module imports only modules on its
own floor or below (module-level and function-level imports alike, read with `ast`), the graph has no cycle, and
`rlvr` never imports the authors' package `coursetools` nor the authors' dependencies (nbformat, nbclient, nbconvert,
Babel, markdown-it-py): a learner's install does not need them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1] / "shared"
CORE = (  # floor 0, core: the task, the model, the losses, training and the settings they read (computes only)
    *("config", "i18n", "argparse_words", "options", "validation", "task", "model", "objectives", "algorithms"),
    *("cache", "runs", "parallel", "sft", "train", "signals", "evaluate", "cs336", "budget", "grpo_step"),
)
FLOORS = {
    "rlvr": 0,  # the package itself (set_language, check_install): config and i18n only
    **{f"rlvr.{name}": 0 for name in CORE},
    # floor 1, experiments: the runs the notebooks and `reproduce` measure, and the scale bridge's runs on TRL
    "rlvr.experiments": 1,
    **{
        f"rlvr.scale.{name}": 1
        for name in ("common", "hf_model", "tiny_gpt2", "trl_bridge", "processes", "verl_export")
    },
    # floor 2, what a learner reads and sees: narration, figures and panels, the exercise checkers
    "rlvr.narration": 2,
    "rlvr.figures": 2,
    "rlvr.widgets": 2,
    "rlvr.checks": 2,
    "rlvr.a5": 2,  # a student's assignment-5 code checked and trained, its report and curves (rlvr a5)
    # floor 3, entry points: the command lines (`python -m rlvr`, `reproduce`, `python -m rlvr.scale`): anything below
    "rlvr.cli": 3,
    "rlvr.a5.cli": 3,
    "rlvr.__main__": 3,
    "rlvr.reproduce": 3,
    "rlvr.scale": 3,  # the package's __init__ offers the command line's main
    "rlvr.scale.cli": 3,
    "rlvr.scale.__main__": 3,
}
AUTHORS = ("coursetools", "nbformat", "nbclient", "nbconvert", "babel", "markdown_it")  # never imported by rlvr


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under `root` (a package's __init__ is the package's name)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports(name: str, path: Path) -> list[tuple[str, str | None]]:
    """(module, imported name or None) of every import in a file, at the top or inside functions: `import a.b` is
    ("a.b", None), `from a import b` is ("a", "b"); relative imports are resolved against the file's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            found += [(base, alias.name) for alias in node.names]
    return found


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports: `from a import b` is an edge to a.b if that is a module, else to a
    (or the nearest module above a name that is none)."""
    names = module_names(root, package)
    graph = {}
    for name, path in names.items():
        targets = set()
        for module, attribute in imports(name, path):
            target = f"{module}.{attribute}" if attribute and f"{module}.{attribute}" in names else module
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's cycles: its strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        """Tarjan's depth-first search from one node."""
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def floor(name: str, floors: dict[str, int] = FLOORS) -> int | None:
    """The floor of a module: that of the longest entry naming it or a package above it ("rlvr" names itself only)."""
    entries = [e for e in floors if name == e or (e != "rlvr" and name.startswith(e + "."))]
    return floors[max(entries, key=len)] if entries else None


def upward(graph: dict[str, set[str]], floors: dict[str, int] = FLOORS) -> list[str]:
    """'a (floor 0) imports b (floor 2)' for every import of a module above the importer's floor."""
    return [
        f"{name} (floor {floor(name, floors)}) imports {target} (floor {floor(target, floors)})"
        for name, targets in sorted(graph.items())
        for target in sorted(targets)
        if floor(target, floors) > floor(name, floors)
    ]


RLVR = import_graph(SHARED / "rlvr", "rlvr")


def test_every_module_has_a_floor():
    assert [name for name in RLVR if floor(name) is None] == []


def test_no_module_imports_one_above_its_floor():
    assert upward(RLVR) == []


def test_the_import_graph_has_no_cycle():
    assert cycles(RLVR) == []


def test_the_graph_sees_function_level_and_relative_imports_and_the_checks_catch_them(tmp_path):
    """The rules above can fail: a planted package whose low module imports a high one inside a function."""
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "low.py": "def f():\n    from .sub import high\n    return high\n",
        "sub/__init__.py": "",
        "sub/high.py": "from ..low import f\nfrom pkg import low\n",
    }
    for relative, text in files.items():
        (tmp_path / "pkg" / relative).write_text(text)
    graph = import_graph(tmp_path / "pkg", "pkg")
    assert graph["pkg.low"] == {"pkg.sub.high"} and graph["pkg.sub.high"] == {"pkg.low"}
    assert cycles(graph) == [["pkg.low", "pkg.sub.high"]]
    floors = {"pkg": 0, "pkg.low": 0, "pkg.sub": 1}
    assert upward(graph, floors) == ["pkg.low (floor 0) imports pkg.sub.high (floor 1)"]
    assert "rlvr.reproduce" in RLVR["rlvr.cli"]  # the real graph holds cli's function-level import too


def test_the_authors_tools_have_no_cycle_and_their_format_modules_are_leaves():
    """coursetools: the notebook format (nbfile), the PO helpers (po), the repository's paths (repo) and the learner
    lint import nothing of coursetools; everything else builds on them."""
    graph = import_graph(SHARED / "coursetools", "coursetools")
    assert cycles(graph) == []
    assert {name: graph[f"coursetools.{name}"] for name in ("nbfile", "po", "repo", "lint")} == {
        name: set() for name in ("nbfile", "po", "repo", "lint")
    }


def test_rlvr_never_imports_the_authors_tools_or_their_dependencies():
    offenders = {
        name: sorted(module for module, _ in imports(name, path) if module.split(".")[0] in AUTHORS)
        for name, path in module_names(SHARED / "rlvr", "rlvr").items()
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_importing_every_rlvr_module_loads_none_of_the_authors_dependencies():
    code = (
        "import importlib, pkgutil, sys, rlvr\n"
        "names = [m.name for m in pkgutil.walk_packages(rlvr.__path__, 'rlvr.') if not m.name.endswith('__main__')]\n"
        "for name in names: importlib.import_module(name)\n"
        f"print(len(names), sorted(m for m in sys.modules if m.split('.')[0] in {AUTHORS!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) == len([n for n in RLVR if n != "rlvr" and not n.endswith("__main__")])
    assert " ".join(out[1:]) == "[]"


@pytest.mark.parametrize("command", ["import rlvr", "import rlvr.cli; rlvr.cli.build_parser()"])
def test_the_issue_s_own_check_prints_an_empty_list(command):
    listing = "sorted(m for m in sys.modules if m.startswith(('nbformat','nbclient','nbconvert')))"
    code = f"{command}; import sys; print({listing})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
