"""Executing a notebook in a fresh Jupyter kernel (nbclient), and two views of the result: a standalone HTML page
(nbconvert) and a plain-text view whose numbers can be compared with the prose."""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

from rlvr.config import FAST_ENV, STRICT_ENV

from .nbfile import read_notebook

DEFAULT_RENDER_TIMEOUT = 1800
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


class NotebookTimeoutError(RuntimeError):
    """A notebook did not finish executing within its time limit."""


def kernel_env(fast: bool, strict: bool) -> dict[str, str]:
    """The kernel's environment: ours, with RLVR_FAST / RLVR_STRICT set or removed, inline figures."""
    env = dict(os.environ)
    for name, wanted in ((FAST_ENV, fast), (STRICT_ENV, strict)):
        if wanted:
            env[name] = "1"
        else:
            env.pop(name, None)
    env["MPLBACKEND"] = INLINE_BACKEND
    return env


def _remaining_seconds(deadline: float) -> float:
    """Seconds left until `deadline` (a time.monotonic() value), at least 1."""
    return max(1.0, deadline - time.monotonic())


def execute_notebook(
    path: Path, fast: bool = True, strict: bool = False, timeout: float = 600, kernel_name: str = "python3"
) -> nbformat.NotebookNode:
    """Run a notebook in a fresh kernel (cwd = its folder) and return it with outputs.

    Raises nbclient's CellExecutionError on the first error output, NotebookTimeoutError when all cells
    together take longer than `timeout` seconds.
    """
    path = Path(path).resolve()
    nb = read_notebook(path)
    deadline = time.monotonic() + timeout
    client = NotebookClient(
        nb,
        kernel_name=kernel_name,
        timeout_func=lambda cell: _remaining_seconds(deadline),
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=False,  # without saved widget state, exports fall back to each panel's static PNG
    )
    try:
        client.execute(env=kernel_env(fast, strict))
    except CellTimeoutError as error:
        raise NotebookTimeoutError(f"{path.name} did not finish within {timeout:g} s") from error
    return nb


def to_html(nb: nbformat.NotebookNode) -> str:
    """A standalone HTML page of an executed notebook (figures embedded as base64 PNG)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)  # a widget view with no state renders as nothing; the static PNG shows instead
    body, _ = exporter.from_notebook_node(nb)
    return body


def to_text(nb: nbformat.NotebookNode) -> str:
    """A plain-text view of an executed notebook: each cell's source, then its printed and displayed text (Markdown
    tables included), so the numbers the prose quotes can be compared (grep) with what the cells measured."""
    parts = []
    for index, cell in enumerate(nb.cells):
        parts.append(f"===== cell {index} [{cell.cell_type}] =====\n{cell.source}\n")
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if output.get("output_type") == "stream":
                parts.append(f"--- {output.get('name', 'stdout')}:\n{output.get('text', '')}")
            elif output.get("output_type") == "error":
                parts.append(f"--- error: {output.get('ename')}: {output.get('evalue')}\n")
            elif "image/png" in data:  # its text/plain is only '<Figure size ...>'
                parts.append("--- figure (PNG; see the HTML view)\n")
            elif "text/markdown" in data or "text/plain" in data:
                parts.append(f"--- result:\n{data.get('text/markdown') or data.get('text/plain')}\n")
    return "\n".join(parts)
