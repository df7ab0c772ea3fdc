"""The course notebooks: committed ones are clean and in sync, and they all execute (fast mode).

The execution machinery itself is tested on tiny notebooks built in a temporary folder.
"""

from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_code_cell, new_notebook

from coursetools import execute, lint, nbfile, notebooks, repo
from rlvr.i18n import TRANSLATED  # the translated editions (coursetools.translate): they run like the English ones

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = repo.solution_paths(ROOT)
STUDENTS = repo.student_paths(ROOT)
TRANSLATED_SOLUTIONS = sorted(p for lang in TRANSLATED for p in (ROOT / "solutions" / lang).glob(repo.NOTEBOOK_PATTERN))
TRANSLATED_STUDENTS = sorted(p for lang in TRANSLATED for p in (ROOT / "notebooks" / lang).glob(repo.NOTEBOOK_PATTERN))
NOTEBOOK_TIMEOUT = 600


def notebook_id(path) -> str:
    """`01_x.ipynb` for an English notebook, `zh_CN/01_x.ipynb` for a translated one."""
    return path.name if path.parent.name in ("solutions", "notebooks") else f"{path.parent.name}/{path.name}"


def notebook_params(paths):
    """One `notebooks`-marked pytest param per notebook, or a single placeholder while none exist yet."""
    if not paths:
        return [pytest.param(None, id="no-notebooks-yet")]
    return [pytest.param(path, id=notebook_id(path), marks=pytest.mark.notebooks) for path in paths]


def assert_folder_has_no_notebooks(folder):
    """The placeholder case: the folder exists and really holds no notebooks."""
    assert folder.is_dir()
    assert list(folder.glob("*.ipynb")) == []


# ----------------------------------------------------------------------------- the repository's notebooks


def test_notebook_folders_exist_and_check_passes():
    assert (ROOT / "solutions").is_dir()
    assert (ROOT / "notebooks").is_dir()
    assert notebooks.check_repo(ROOT) == []


@pytest.mark.parametrize("path", notebook_params(SOLUTIONS))
def test_student_notebook_matches_its_solution(path):
    if path is None:
        assert_folder_has_no_notebooks(ROOT / "solutions")
        return
    student_path = ROOT / "notebooks" / path.name
    assert nbfile.is_clean(nbfile.read_notebook(path)) == []
    assert student_path.exists(), f"{student_path.name} missing: run `python -m coursetools notebooks generate`"
    expected = nbfile.serialize(nbfile.make_student(nbfile.read_notebook(path), path.name))
    fix = "run `python -m coursetools notebooks generate`"
    assert student_path.read_text(encoding="utf-8") == expected, f"out of date: {fix}"


@pytest.mark.parametrize(
    "path",
    [*SOLUTIONS, *STUDENTS, *TRANSLATED_SOLUTIONS, *TRANSLATED_STUDENTS],
    ids=lambda p: f"{p.relative_to(ROOT).parent}/{p.name}",
)
def test_notebook_text_passes_the_learner_lint(path):
    """What a learner reads (Markdown, code) holds no verification machinery, no wall of text, no solution marker."""
    assert lint.lint_notebook(nbfile.read_notebook(path), path.name) == []


@pytest.mark.parametrize("path", notebook_params([*SOLUTIONS, *TRANSLATED_SOLUTIONS]))
def test_solution_notebook_runs_in_fast_strict_mode(path):
    if path is None:
        assert_folder_has_no_notebooks(ROOT / "solutions")
        return
    nb = execute.execute_notebook(path, fast=True, strict=True, timeout=NOTEBOOK_TIMEOUT)
    assert lint.lint_notebook(nb, path.name) == []  # what the cells printed, too


@pytest.mark.parametrize("path", notebook_params([*STUDENTS, *TRANSLATED_STUDENTS]))
def test_student_notebook_runs_in_fast_mode(path):
    if path is None:
        assert_folder_has_no_notebooks(ROOT / "notebooks")
        return
    nb = execute.execute_notebook(path, fast=True, strict=False, timeout=NOTEBOOK_TIMEOUT)
    assert lint.lint_notebook(nb, path.name) == []  # a blank exercise prints nothing a learner should not meet


# ----------------------------------------------------------------------------- the machinery, on tiny notebooks

ENV_CELL = """import os
from rlvr.config import fast_mode
print("fast", fast_mode(), "strict", os.environ.get("RLVR_STRICT"), "cwd", os.getcwd())"""

EXERCISE_CELL = """from rlvr.checks import Case, Exercise
double_exercise = Exercise("double", [Case("x = 3", args=(3,), expected=6)], hint="Multiply.", solution="2 * x")"""

SOLUTION_CELL = """def double(x):
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION"""


def tiny_repo(root, extra_cells=()):
    """A repo with one solution notebook (an exercise checked through Exercise.check) and its student copy."""
    cells = [
        new_code_cell(ENV_CELL),
        new_code_cell(EXERCISE_CELL),
        new_code_cell(SOLUTION_CELL),
        new_code_cell("double_exercise.check(double)"),
        *extra_cells,
    ]
    (root / "solutions").mkdir()
    (root / "notebooks").mkdir()
    nbformat.write(new_notebook(cells=cells), str(root / "solutions" / "01_tiny.ipynb"))
    notebooks.generate(root)
    return root / "solutions" / "01_tiny.ipynb", root / "notebooks" / "01_tiny.ipynb"


def text_output(cell):
    """All plain text a cell printed or displayed."""
    parts = [out.get("text", "") for out in cell.outputs]
    parts += [out.get("data", {}).get("text/plain", "") for out in cell.outputs]
    return "".join(parts)


def test_solution_notebook_runs_strict_with_env_and_cwd(tmp_path):
    solution, _ = tiny_repo(tmp_path)
    nb = execute.execute_notebook(solution, fast=True, strict=True, timeout=120)
    assert f"fast True strict 1 cwd {solution.parent}" in text_output(nb.cells[0])
    assert "[Correct]" in text_output(nb.cells[3])


def test_student_notebook_reports_not_attempted_without_error(tmp_path):
    _, student = tiny_repo(tmp_path)
    nb = execute.execute_notebook(student, fast=True, strict=False, timeout=120)
    assert "fast True strict None" in text_output(nb.cells[0])
    assert "[Not attempted]" in text_output(nb.cells[3])


def test_student_notebook_fails_in_strict_mode(tmp_path):
    _, student = tiny_repo(tmp_path)
    with pytest.raises(CellExecutionError, match="AssertionError"):
        execute.execute_notebook(student, fast=True, strict=True, timeout=120)


def test_calling_the_stub_directly_fails_clearly(tmp_path):
    _, student = tiny_repo(tmp_path, extra_cells=[new_code_cell("double(2)")])
    with pytest.raises(CellExecutionError, match="NotImplementedError"):
        execute.execute_notebook(student, fast=True, strict=False, timeout=120)


def test_notebook_timeout_is_reported(tmp_path):
    path = tmp_path / "slow.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("import time\ntime.sleep(60)")]), str(path))
    with pytest.raises(execute.NotebookTimeoutError, match="slow.ipynb"):
        execute.execute_notebook(path, timeout=5)


PLOT_CELL = """import matplotlib.pyplot as plt
from rlvr.config import fast_mode
print("fast mode:", fast_mode())
plt.plot([0, 1, 4])
plt.show()"""


def test_render_runs_at_full_size_and_embeds_figures(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RLVR_FAST", "1")  # render must unset it for the kernel
    (tmp_path / "solutions").mkdir()
    path = tmp_path / "solutions" / "01_plot.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(PLOT_CELL)]), str(path))
    exit_code = notebooks.main(["render", "--root", str(tmp_path), "--timeout", "120"])
    assert exit_code == 0
    html = (tmp_path / "build" / "solutions" / "01_plot.html").read_text(encoding="utf-8")
    assert "fast mode: False" in html
    assert "data:image/png;base64," in html
    assert "[1/1] solutions/01_plot.ipynb" in capsys.readouterr().out
