"""The course's notebooks: `python -m coursetools notebooks generate | check | strip | render | lint | translate`.

Solution notebooks live in ``solutions/NN_*.ipynb`` and are the one source: `generate` writes each student copy
``notebooks/NN_*.ipynb`` from its solution (`coursetools.nbfile.make_student`), `check` fails on outputs, a stale or
missing student copy and an incomplete translation (`coursetools.translate`), `render` executes notebooks and writes
HTML and a text view under build/, `lint` lists what a learner should never meet (`coursetools.lint`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat

from rlvr.i18n import TRANSLATED
from rlvr.options import output_folder

from .execute import DEFAULT_RENDER_TIMEOUT, execute_notebook, to_html, to_text
from .lint import lint_notebook
from .nbfile import MarkerError, clean_notebook, is_clean, make_student, read_notebook, serialize, write_notebook
from .po import DEFAULT_LANGUAGE
from .repo import default_root, relative, solution_paths, student_paths

PROG = "python -m coursetools notebooks"


# --------------------------------------------------------------------------- the repository


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
        name = relative(path, root)
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
        name = relative(path, root)
        if not path.exists():
            problems.append(f"{name}: missing (run `python -m coursetools notebooks generate`)")
        elif path.read_text(encoding="utf-8") != serialize(nb):
            problems.append(f"{name}: differs from its solution (run `python -m coursetools notebooks generate`)")
    for path in student_paths(root):
        if path not in expected:
            problems.append(f"{relative(path, root)}: has no solution notebook in solutions/")
    return problems


def _translation_problems(root: Path) -> list[str]:
    """The translated editions' problems (`coursetools.translate`), if the repository has catalogues."""
    if not (Path(root) / "i18n").is_dir():
        return []
    try:
        from .translate import translation_problems
    except ImportError as error:  # babel / markdown-it-py missing
        return [f"i18n/: cannot check the translations ({error}): pip install -e '.[author]'"]
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


# --------------------------------------------------------------------------- rendering


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


def _cmd_generate(args: argparse.Namespace) -> int:
    """Write the student notebooks."""
    try:
        changed = generate(args.root)
    except MarkerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in changed:
        print(f"wrote {relative(path, args.root)}")
    print(f"{len(solution_paths(args.root))} solution notebooks, {len(changed)} student notebooks updated.")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    """List every problem; non-zero exit when there is one."""
    problems = check_repo(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s). Fix with `{PROG} strip` / `generate` / `translate`.")
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
    from .translate import doc_paths, translate

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
        print(f"stripped {relative(path, args.root)}")
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


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The argument parser for `python -m coursetools notebooks ...` (`prog`: the name its usage lines show)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, handler, text in (
        ("generate", _cmd_generate, "write notebooks/NN_*.ipynb from solutions/NN_*.ipynb"),
        ("check", _cmd_check, "fail if notebooks have outputs or student notebooks are out of date"),
        ("strip", _cmd_strip, "remove outputs, execution counts and widget state in place"),
        ("render", _cmd_render, "execute notebooks at full size and write HTML (and a text view) under build/"),
        ("lint", _cmd_lint, "list what a learner should never meet in a cell (coursetools.lint)"),
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
    translate = commands.choices["translate"]
    translate.add_argument("--lang", default=DEFAULT_LANGUAGE, choices=TRANSLATED, help="the language")
    render_command = commands.choices["render"]
    render_command.add_argument("--timeout", type=float, default=DEFAULT_RENDER_TIMEOUT, help="seconds per notebook")
    render_command.add_argument("--out", type=output_folder, help="output folder (default: <root>/build)")
    render_command.add_argument("--fast", action="store_true", help="run in fast mode (RLVR_FAST=1) instead")
    return parser


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Entry point: `main(["generate"])` etc.; returns the exit code."""
    args = build_parser(prog).parse_args(argv)
    args.root = Path(args.root or default_root()).resolve()
    return args.handler(args)


def lint_main(argv: list[str]) -> int:
    """`python -m coursetools lint [--which ...] [notebooks ...]`: the same command as `notebooks lint`."""
    return main(["lint", *argv], prog="python -m coursetools")


if __name__ == "__main__":
    sys.exit(main())
