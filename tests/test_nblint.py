"""The learner-facing lint flags a planted case of every kind, and nothing in a clean notebook."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from coursetools import lint, nbfile


def notebook(*cells) -> nbformat.NotebookNode:
    """A notebook whose first code cell is a setup cell (it may call size())."""
    return new_notebook(cells=[new_code_cell("import rlvr\nSTEPS = size('rl_steps')"), *cells])


def printed(text: str, name: str = "stdout") -> nbformat.NotebookNode:
    """A code cell that printed `text`."""
    return new_code_cell("print(...)", outputs=[new_output("stream", name=name, text=text)])


CLEAN = notebook(
    new_markdown_cell("# Notebook\nThe policy gradient $\\nabla J = E[R \\nabla \\log p]$ in a few words."),
    printed("accuracy 94.4% | think-first 99.2% | loss 0.0123 | KL 1.58\n 0%| | 0/200\r100%|#####| 200/200 [00:06]"),
    new_markdown_cell("<!-- BEGIN SOLUTION -->\nThe answer.\n<!-- END SOLUTION -->"),
)

PLANTED = {  # a kind of finding -> (a cell that has it, words its message must contain)
    "long cell": (new_markdown_cell("word " * 251), "251 words"),
    "band in Markdown": (new_markdown_cell("Our value lies in the lecture's band."), "'band'"),
    "verdict table": (printed("| 4.1 | 3.5x | 3.57x | [3.45x, 3.55x] | NO |"), "'verdict'"),
    "r + 3u": (new_markdown_cell("A row agrees when |ours - lecture| <= r + 3u."), "'r + 3u'"),
    "CI size": (new_markdown_cell("In CI (RLVR_FAST=1) the runs are short."), "'RLVR_FAST'"),
    "calibration story": (new_markdown_cell("The warm-up was calibrated on other seeds."), "'calibration'"),
    "seed list": (printed("chosen on seeds 100-102"), "'seed list'"),
    "chosen to match": (new_markdown_cell("We chose the step size to match the lecture's 0.84."), "'chosen to match'"),
    "matches by construction": (new_markdown_cell("So that figure matches by construction."), "'chosen to match'"),
    "timing method": (new_markdown_cell("Costs are `time.process_time` seconds."), "'timing method'"),
    "speed-up": (new_markdown_cell("A package speed-up skips all-equal groups."), "'speed-up'"),
    "machine": (new_markdown_cell("Measured on x86_64 with AVX512."), "'machine'"),
    "frozen progress bar": (printed("  0%|          | 0/100 [00:00<?, ?it/s]", "stderr"), "stopped at 0/100"),
    "bar overwritten mid-way": (printed(" 0%| | 0/9\r 44%|#### | 4/9\n", "stderr"), "stopped at 4/9"),
    "negative zero": (printed("advantage -0.00 for the wrong answer"), "'-0'"),
    "plus-minus": (printed("+-3 on every reward"), "'+-'"),
    "16-digit float": (printed("lambda = 0.30000000000000004"), "significant digits"),
    "float noise": (printed("shift +8.88178e-16 on every reward"), "float noise"),
    "nan": (printed("kl nan"), "'nan'"),
    "warning": (printed("UserWarning: converting a tensor", "stderr"), "a warning"),
    "solution marker": (new_markdown_cell("### BEGIN SOLUTION\nThe answer.\n### END SOLUTION"), "solution marker"),
    "bold after punctuation": (new_markdown_cell("讲义。** 时间：**阅读约 60 分钟。"), "'**' shows as text"),
    "CI machinery": (new_code_cell("runs = size('rl_steps')"), "outside the setup cell"),
}


def test_a_clean_notebook_has_no_findings():
    assert lint.lint_notebook(CLEAN, "clean") == []


@pytest.mark.parametrize("kind", PLANTED)
def test_each_planted_case_is_flagged_with_its_cell(kind):
    cell, words = PLANTED[kind]
    findings = lint.lint_notebook(notebook(cell), "planted")
    assert findings and all(f.startswith("planted, cell 1:") for f in findings), findings
    assert any(words in f for f in findings), findings


def test_a_cell_can_allow_a_rule_by_name():
    cell = printed("loss nan after step 12")
    cell.metadata["lint_allow"] = ["nan"]
    assert lint.lint_notebook(notebook(cell), "allowed") == []


def test_markdown_solution_markers_in_comments_are_replaced_for_students():
    source = "Before.\n<!-- BEGIN SOLUTION -->\nThe answer.\n<!-- END SOLUTION -->"
    student = nbfile.replace_regions(source, "markdown")
    assert "The answer" not in student and "Your answer" in student and student.startswith("Before.")
