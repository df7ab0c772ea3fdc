"""One source for solution and student notebooks: generate, check, strip and render them.

Solution notebooks live in ``solutions/NN_*.ipynb``. Every region between a line ``### BEGIN SOLUTION``
and a line ``### END SOLUTION`` is replaced in the student copy ``notebooks/NN_*.ipynb`` (the nbgrader
convention). Usage: ``python -m rlvr.nbtools {generate,check,strip,render} [--root DIR] ...``.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

from rlvr.options import output_folder
from rlvr.config import FAST_ENV, STRICT_ENV, repo_root
from rlvr.i18n import N_, translator
from rlvr.nblint import lint_notebook

BEGIN_MARKER = "### BEGIN SOLUTION"
END_MARKER = "### END SOLUTION"
MARKDOWN_MARKERS = {"<!-- BEGIN SOLUTION -->": BEGIN_MARKER, "<!-- END SOLUTION -->": END_MARKER}  # hidden in Markdown
CODE_STUB = (N_("# YOUR CODE HERE"), "raise NotImplementedError")
MARKDOWN_STUB = (N_("**Your answer:** _write your answer here_"),)
OUTPUT_LIKE_CELL_METADATA = ("execution", "ExecuteTime")
NOTEBOOK_PATTERN = "[0-9][0-9]_*.ipynb"
DEFAULT_RENDER_TIMEOUT = 1800
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


class MarkerError(ValueError):
    """A BEGIN/END SOLUTION marker without its partner, or nested markers."""


class NotebookTimeoutError(RuntimeError):
    """A notebook did not finish executing within its time limit."""


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


# --------------------------------------------------------------------------- the repository


def default_root() -> Path:
    """The repository root of the installed package, else the current folder."""
    return repo_root() or Path.cwd()


def solution_paths(root: Path) -> list[Path]:
    """The solution notebooks `solutions/NN_*.ipynb`, sorted."""
    return sorted((Path(root) / "solutions").glob(NOTEBOOK_PATTERN))


def student_paths(root: Path) -> list[Path]:
    """The committed student notebooks `notebooks/*.ipynb`, sorted."""
    return sorted((Path(root) / "notebooks").glob("*.ipynb"))


def expected_students(root: Path) -> dict[Path, nbformat.NotebookNode]:
    """What `generate` would write: {student path: student notebook}."""
    root = Path(root)
    return {
        root / "notebooks" / path.name: make_student(read_notebook(path), path.name) for path in solution_paths(root)
    }


def generate(root: Path) -> list[Path]:
    """Write every student notebook from its solution; return the paths whose content changed."""
    changed = []
    for path, nb in expected_students(root).items():
        if not path.exists() or path.read_text(encoding="utf-8") != serialize(nb):
            write_notebook(nb, path)
            changed.append(path)
    return changed


def _cleanliness_problems(root: Path) -> list[str]:
    """`path: problem` for every committed notebook that is not clean (or cannot be read)."""
    problems = []
    for path in [*solution_paths(root), *student_paths(root)]:
        name = _relative(path, root)
        try:
            problems += [f"{name}: {problem}" for problem in is_clean(read_notebook(path))]
        except Exception as error:  # noqa: BLE001 - report unreadable files, keep checking the others
            problems.append(f"{name}: cannot be read ({type(error).__name__}: {error})")
    return problems


def _sync_problems(root: Path) -> list[str]:
    """`path: problem` for student notebooks that are missing, extra, or differ from `generate`'s output."""
    try:
        expected = expected_students(root)
    except MarkerError as error:
        return [str(error)]
    problems = []
    for path, nb in expected.items():
        name = _relative(path, root)
        if not path.exists():
            problems.append(f"{name}: missing (run `python -m rlvr notebooks generate`)")
        elif path.read_text(encoding="utf-8") != serialize(nb):
            problems.append(f"{name}: differs from its solution (run `python -m rlvr notebooks generate`)")
    for path in student_paths(root):
        if path not in expected:
            problems.append(f"{_relative(path, root)}: has no solution notebook in solutions/")
    return problems


def _translation_problems(root: Path) -> list[str]:
    """The translated editions' problems (`rlvr.nbtranslate`), if the repository has catalogues."""
    if not (Path(root) / "i18n").is_dir():
        return []
    try:
        from rlvr.nbtranslate import translation_problems
    except ImportError as error:  # babel / markdown-it-py missing
        return [f"i18n/: cannot check the translations ({error}): pip install -e '.[i18n]'"]
    return translation_problems(root)


def check_repo(root: Path) -> list[str]:
    """Every problem with the committed notebooks, translated editions included (empty list when all is well)."""
    root = Path(root)
    return _cleanliness_problems(root) + _sync_problems(root) + _translation_problems(root)


def strip(paths: list[Path]) -> list[Path]:
    """Clean the given notebooks in place; return those that changed."""
    changed = []
    for path in paths:
        cleaned = clean_notebook(read_notebook(path))
        if path.read_text(encoding="utf-8") != serialize(cleaned):
            write_notebook(cleaned, path)
            changed.append(path)
    return changed


# --------------------------------------------------------------------------- executing and rendering


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


def render(paths: list[Path], out_dir: Path, timeout: float, fast: bool = False) -> int:
    """Execute each notebook and write `out_dir/<folder>/<name>.html` (and `.txt`, see `to_text`); return the number
    of failures."""
    failures = 0
    for number, path in enumerate(paths, start=1):
        target = Path(out_dir) / path.parent.name / f"{path.stem}.html"
        print(f"[{number}/{len(paths)}] {path.parent.name}/{path.name} ...", flush=True)
        start = time.perf_counter()
        try:
            nb = execute_notebook(path, fast=fast, strict=False, timeout=timeout)
        except Exception as error:  # noqa: BLE001 - report and go on with the next notebook
            failures += 1
            print(f"    FAILED after {time.perf_counter() - start:.0f} s: {type(error).__name__}", flush=True)
            print("    " + str(error).strip().replace("\n", "\n    "), flush=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(to_html(nb), encoding="utf-8")
        target.with_suffix(".txt").write_text(to_text(nb), encoding="utf-8")
        print(f"    done in {time.perf_counter() - start:.0f} s -> {target} (and .txt)", flush=True)
        for finding in lint_notebook(nb, path.name):
            print(f"    lint: {finding}", flush=True)
    return failures


# --------------------------------------------------------------------------- command line


def _relative(path: Path, root: Path) -> str:
    """`path` relative to `root` when possible, for short messages."""
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def _cmd_generate(args: argparse.Namespace) -> int:
    """Write the student notebooks."""
    try:
        changed = generate(args.root)
    except MarkerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in changed:
        print(f"wrote {_relative(path, args.root)}")
    print(f"{len(solution_paths(args.root))} solution notebooks, {len(changed)} student notebooks updated.")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    """List every problem; non-zero exit when there is one."""
    problems = check_repo(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s). Fix with `python -m rlvr notebooks strip` / `generate` / `translate`.")
        return 1
    translated = _translated_summary(args.root)
    counts = f"{len(solution_paths(args.root))} solution and {len(student_paths(args.root))} student notebooks"
    print(f"ok: {counts}{translated}.")
    return 0


def _translated_summary(root: Path) -> str:
    """'; zh_CN: 1 translated notebook (i18n/zh_CN/NOTEBOOKS)' for each language with a list, else ''."""
    folder = Path(root) / "i18n"
    lists = sorted(folder.glob("*/NOTEBOOKS")) if folder.is_dir() else []
    parts = []
    for path in lists:
        lang = path.parent.name
        count = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.split("#")[0].strip())
        parts.append(f"; {lang}: {count} translated notebook{'s' if count != 1 else ''} (i18n/{lang}/NOTEBOOKS)")
    return "".join(parts)


def _cmd_translate(args: argparse.Namespace) -> int:
    """Merge each notebook's English into its catalogue; write the translated notebooks of the listed ones."""
    from rlvr.nbtranslate import doc_paths, translate

    paths = [Path(p).resolve() for p in args.paths] or [*solution_paths(args.root), *doc_paths(args.root, args.lang)]
    report, errors = translate(args.root, args.lang, paths)
    print("\n".join(report))
    for error in errors:
        print(error, file=sys.stderr)
    return 1 if errors else 0


def _cmd_strip(args: argparse.Namespace) -> int:
    """Clean the given notebooks (default: all) in place."""
    paths = args.paths or [*solution_paths(args.root), *student_paths(args.root)]
    for path in strip(paths):
        print(f"stripped {_relative(path, args.root)}")
    return 0


def _render_targets(args: argparse.Namespace) -> list[Path]:
    """The notebooks named on the command line, else those chosen by --which."""
    if args.paths:
        return args.paths
    if args.which == "notebooks":
        return student_paths(args.root)
    if args.which == "all":
        return [*solution_paths(args.root), *student_paths(args.root)]
    return solution_paths(args.root)


def _cmd_render(args: argparse.Namespace) -> int:
    """Execute notebooks at full size and write HTML under build/."""
    out_dir = args.out or Path(args.root) / "build"
    failures = render(_render_targets(args), out_dir, args.timeout, fast=args.fast)
    return 1 if failures else 0


def _cmd_lint(args: argparse.Namespace) -> int:
    """Print what a learner should never meet in the notebooks' cells (outputs too, if they have any); 1 if any."""
    findings = [f for path in _render_targets(args) for f in lint_notebook(read_notebook(path), path.name)]
    print("\n".join(findings) if findings else "no findings")
    return 1 if findings else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for `python -m rlvr notebooks ...`."""
    parser = argparse.ArgumentParser(prog="python -m rlvr notebooks", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, handler, text in (
        ("generate", _cmd_generate, "write notebooks/NN_*.ipynb from solutions/NN_*.ipynb"),
        ("check", _cmd_check, "fail if notebooks have outputs or student notebooks are out of date"),
        ("strip", _cmd_strip, "remove outputs, execution counts and widget state in place"),
        ("render", _cmd_render, "execute notebooks at full size and write HTML (and a text view) under build/"),
        ("lint", _cmd_lint, "list what a learner should never meet in a cell (rlvr.nblint)"),
        (
            "translate",
            _cmd_translate,
            "merge the English into i18n/<lang>/*.po, write solutions/<lang>/ and notebooks/<lang>/",
        ),
    ):
        command = commands.add_parser(name, help=text, description=text)
        command.set_defaults(handler=handler)
        command.add_argument("--root", type=Path, default=None, help="repository root (default: this checkout)")
        if name in ("strip", "render", "lint", "translate"):
            command.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all chosen ones)")
        if name in ("render", "lint"):
            command.add_argument("--which", choices=("solutions", "notebooks", "all"), default="solutions")
    commands.choices["translate"].add_argument("--lang", default="zh_CN", choices=("zh_CN",), help="the language")
    render_command = commands.choices["render"]
    render_command.add_argument("--timeout", type=float, default=DEFAULT_RENDER_TIMEOUT, help="seconds per notebook")
    render_command.add_argument("--out", type=output_folder, help="output folder (default: <root>/build)")
    render_command.add_argument("--fast", action="store_true", help="run in fast mode (RLVR_FAST=1) instead")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: `main(["generate"])` etc.; returns the exit code."""
    args = build_parser().parse_args(argv)
    args.root = Path(args.root or default_root()).resolve()
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
