"""Where the course's files are: the checkout, its solution and student notebooks, and paths short enough for a
one-line message."""

from __future__ import annotations

from pathlib import Path

from rlvr.config import repo_root

NOTEBOOK_PATTERN = "[0-9][0-9]_*.ipynb"


def default_root() -> Path:
    """The repository root of the installed package, else the current folder."""
    return repo_root() or Path.cwd()


def solution_paths(root: Path) -> list[Path]:
    """The solution notebooks `solutions/NN_*.ipynb`, sorted."""
    return sorted((Path(root) / "solutions").glob(NOTEBOOK_PATTERN))


def student_paths(root: Path) -> list[Path]:
    """The committed student notebooks `notebooks/*.ipynb`, sorted."""
    return sorted((Path(root) / "notebooks").glob("*.ipynb"))


def relative(path: Path, root: Path) -> str:
    """`path` relative to `root` when possible, for short messages."""
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)
