"""The notebook format of the course: one solution notebook is the source of its student copy.

Every region between a line ``### BEGIN SOLUTION`` and a line ``### END SOLUTION`` (in Markdown, the HTML comments
``<!-- BEGIN SOLUTION -->`` / ``<!-- END SOLUTION -->``) is replaced in the student copy by a stub (the nbgrader
convention). Here: the markers, reading and writing a notebook byte for byte as nbformat does, cleaning outputs and
widget state, and `make_student`. A leaf: it imports nbformat and `rlvr.i18n` (the stubs' words), nothing of
coursetools.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from rlvr.i18n import N_, translator

BEGIN_MARKER = "### BEGIN SOLUTION"
END_MARKER = "### END SOLUTION"
MARKDOWN_MARKERS = {"<!-- BEGIN SOLUTION -->": BEGIN_MARKER, "<!-- END SOLUTION -->": END_MARKER}  # hidden in Markdown
CODE_STUB = (N_("# YOUR CODE HERE"), "raise NotImplementedError")
MARKDOWN_STUB = (N_("**Your answer:** _write your answer here_"),)
OUTPUT_LIKE_CELL_METADATA = ("execution", "ExecuteTime")


class MarkerError(ValueError):
    """A BEGIN/END SOLUTION marker without its partner, or nested markers."""


# --------------------------------------------------------------------------- reading and writing


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """Read a notebook file as nbformat v4."""
    return nbformat.read(str(path), as_version=4)


def serialize(nb: nbformat.NotebookNode) -> str:
    """The exact text `nbformat.write` puts in a file (used to compare notebooks byte for byte)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def write_notebook(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write a notebook with nbformat (creating the folder if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


# --------------------------------------------------------------------------- cleaning


def _ensure_cell_ids(nb: nbformat.NotebookNode) -> None:
    """Upgrade to nbformat 4.5 and give every cell a unique id (deterministic `cell-N` when missing)."""
    nb.nbformat, nb.nbformat_minor = 4, 5
    seen = set()
    for index, cell in enumerate(nb.cells):
        if not cell.get("id") or cell["id"] in seen:
            cell["id"] = f"cell-{index}"
        seen.add(cell["id"])


def clean_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy without outputs, execution counts, widget state or execution-timing metadata."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    _ensure_cell_ids(nb)
    for cell in nb.cells:
        for key in OUTPUT_LIKE_CELL_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def is_clean(nb: nbformat.NotebookNode) -> list[str]:
    """Problems that make a notebook unfit to commit (empty list when clean)."""
    problems = []
    if "widgets" in nb.metadata:
        problems.append("widget state in metadata.widgets")
    for index, cell in enumerate(nb.cells):
        if cell.get("outputs"):
            problems.append(f"cell {index} has outputs")
        if cell.get("execution_count") is not None:
            problems.append(f"cell {index} has an execution count")
        for key in OUTPUT_LIKE_CELL_METADATA:
            if key in cell.metadata:
                problems.append(f"cell {index} has metadata.{key}")
    return problems


# --------------------------------------------------------------------------- solution -> student


def _stub_lines(cell_type: str, indent: str, language: str | None = None) -> list[str]:
    """The lines that replace one solution region, indented like its BEGIN line (in `language`, default English)."""
    stub = CODE_STUB if cell_type == "code" else MARKDOWN_STUB
    words = translator(language).gettext if language else str
    return [indent + words(line) for line in stub]


def replace_regions(source: str, cell_type: str, where: str = "cell", language: str | None = None) -> str:
    """Replace every BEGIN/END SOLUTION region of one cell's source by the student stub.

    Args:
        source: the cell's text.
        cell_type: "code" or "markdown" (decides the stub).
        where: names the cell in error messages, e.g. "01_intro.ipynb, cell 3".
        language: the stubs' language (a translated notebook's, e.g. "zh_CN"; default English).
    Returns:
        The student version of the source.
    """
    lines_out, inside = [], False
    for line in source.split("\n"):
        marker = MARKDOWN_MARKERS.get(line.strip(), line.strip()) if cell_type == "markdown" else line.strip()
        if marker == BEGIN_MARKER:
            if inside:
                raise MarkerError(f"{where}: nested '{BEGIN_MARKER}' (the previous region has no END)")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            lines_out.extend(_stub_lines(cell_type, indent, language))
        elif marker == END_MARKER:
            if not inside:
                raise MarkerError(f"{where}: '{END_MARKER}' without a matching BEGIN")
            inside = False
        elif not inside:
            lines_out.append(line)
    if inside:
        raise MarkerError(f"{where}: '{BEGIN_MARKER}' without a matching '{END_MARKER}'")
    return "\n".join(lines_out)


def make_student(
    nb: nbformat.NotebookNode, name: str = "notebook", language: str | None = None
) -> nbformat.NotebookNode:
    """The clean student version of a solution notebook (cell ids kept from the solution; stubs in `language`)."""
    student = clean_notebook(nb)
    for index, cell in enumerate(student.cells):
        if cell.cell_type in ("code", "markdown"):
            cell.source = replace_regions(cell.source, cell.cell_type, f"{name}, cell {index}", language)
    return student
