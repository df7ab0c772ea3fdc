"""The package's layout: `rlvr.experiments` computes and `rlvr.narration` words (neither plots nor builds widgets),
`rlvr.figures` draws and wires panels."""

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import rlvr.experiments
import rlvr.figures
import rlvr.narration

VISUAL = ("matplotlib", "ipywidgets", "rlvr.widgets", "rlvr.figures", "IPython")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names.add(("." * node.level) + module)
            if module == "rlvr":
                names |= {f"rlvr.{alias.name}" for alias in node.names}
    return names


def test_no_experiment_or_narration_module_imports_plotting_or_widgets():
    folders = (Path(rlvr.experiments.__file__).parent, Path(rlvr.narration.__file__).parent)
    offenders = {
        f"{path.parent.name}/{path.name}": sorted(
            m
            for m in imported_modules(path)
            if m.startswith(VISUAL) or m in (".", "..") or m.startswith("..widgets") or m.startswith("..figures")
        )
        for folder in folders
        for path in sorted(folder.glob("*.py"))
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_reproduce_and_the_experiments_load_without_matplotlib_or_ipywidgets():
    code = (
        "import sys; import rlvr.reproduce, rlvr.experiments.bandit, rlvr.experiments.ppo_parts, "
        "rlvr.experiments.thinking, rlvr.experiments.race, rlvr.experiments.length_bias; "
        "print(sorted(m for m in ('matplotlib', 'ipywidgets', 'rlvr.widgets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_every_experiment_with_visuals_has_a_figure_module_and_a_narration_module():
    experiments = {m.name for m in pkgutil.iter_modules(rlvr.experiments.__path__)} - {"common"}
    figures = {m.name for m in pkgutil.iter_modules(rlvr.figures.__path__)}
    narration = {m.name for m in pkgutil.iter_modules(rlvr.narration.__path__)}
    assert experiments <= figures and experiments == narration == set(rlvr.narration.TOPICS)
