"""Checker of notebook 04's clip-fraction exercise: stub, reference, the written solution and realistic mistakes."""

import json
import re
import textwrap
from pathlib import Path

import pytest
import torch

from rlvr.checks import Outcome
from rlvr.checks import nb04


def stub(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    raise NotImplementedError


def from_solution_text(solution: str):
    """The exercise's displayed solution, compiled into a function."""
    body = textwrap.indent(solution.strip(), "    ")
    namespace = {"torch": torch}
    exec(f"def clip_fraction(logps, old_logps, advantages, response_mask, clip_eps=0.2):\n{body}\n", namespace)
    return namespace["clip_fraction"]


def both_sides(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Counts every ratio outside the band, whatever the advantage's sign."""
    ratio = torch.exp(logps - old_logps)
    outside = (ratio - 1).abs() > clip_eps
    return float((outside & response_mask).sum() / response_mask.sum())


def upper_side_only(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Only counts ratios above 1 + eps (forgets negative advantages)."""
    ratio = torch.exp(logps - old_logps)
    clipped = (advantages > 0) & (ratio > 1 + clip_eps)
    return float((clipped & response_mask).sum() / response_mask.sum())


def no_mask(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Averages over padding too."""
    ratio = torch.exp(logps - old_logps)
    clipped = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return float(clipped.float().mean())


def per_answer_mean(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Averages within each answer first, then over answers."""
    ratio = torch.exp(logps - old_logps)
    clipped = (((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))).float()
    mask = response_mask.float()
    return float(((clipped * mask).sum(dim=1) / mask.sum(dim=1)).mean())


def log_ratio_band(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Compares the LOG ratio with eps instead of the ratio with 1 +- eps."""
    log_ratio = logps - old_logps
    clipped = ((advantages > 0) & (log_ratio > clip_eps)) | ((advantages < 0) & (log_ratio < -clip_eps))
    return float((clipped & response_mask).sum() / response_mask.sum())


def ignores_zero_advantage(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Treats A = 0 like a positive advantage (>= instead of >)."""
    ratio = torch.exp(logps - old_logps)
    clipped = ((advantages >= 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return float((clipped & response_mask).sum() / response_mask.sum())


def test_stub_is_not_attempted():
    assert nb04.clip_fraction.check(stub).outcome is Outcome.NOT_ATTEMPTED


def test_reference_and_written_solution_are_correct():
    assert nb04.clip_fraction.check(nb04._clip_fraction).outcome is Outcome.CORRECT
    assert nb04.clip_fraction.check(from_solution_text(nb04.clip_fraction._solution)).outcome is Outcome.CORRECT


def test_returning_a_scalar_tensor_is_fine():
    def as_tensor(*args, **kwargs):
        return torch.tensor(nb04._clip_fraction(*args, **kwargs))

    assert nb04.clip_fraction.check(as_tensor).outcome is Outcome.CORRECT


@pytest.mark.parametrize(
    "wrong, mistake",
    [
        (both_sides, "two_sided"),
        (upper_side_only, "upper_only"),
        (no_mask, "no_mask"),
        (per_answer_mean, "per_answer_mean"),
        (log_ratio_band, "log_ratio_band"),
        (ignores_zero_advantage, "zero_advantage_counted"),
    ],
)
def test_realistic_mistakes_are_named(wrong, mistake):
    result = nb04.clip_fraction.check(wrong)
    assert result.outcome is Outcome.INCORRECT
    assert result.mistake == mistake, result.message


@pytest.mark.parametrize("mistake", nb04.clip_fraction.mistakes, ids=lambda m: m.name)
def test_each_library_entry_is_named_by_its_own_message(mistake):
    result = nb04.clip_fraction.check(mistake.fn)
    assert result.outcome is Outcome.INCORRECT and result.mistake == mistake.name
    assert result.message.startswith(mistake.says) and result.message.endswith(mistake.fix)


def test_the_two_sided_fraction_shows_its_count_against_the_right_one():
    """Ratios [0.5, 0.75, 0.81, 1.1, 1.21, 1.5], A = +1, eps 0.2: 2 of 6 clipped, 4 of 6 outside the band."""
    assert "expected 0.3333, got 0.6667" in nb04.clip_fraction.check(both_sides).message


def test_reference_agrees_with_a_hand_count():
    # ratios 0.5, 0.75, 0.81, 1.1, 1.21, 1.5 with eps 0.2: A > 0 clips 1.21 and 1.5; A < 0 clips 0.5 and 0.75;
    # A = 0 clips nothing; eps 0.05 with A > 0 clips 1.1, 1.21 and 1.5
    case_pos, case_neg, case_zero, case_narrow = nb04.clip_fraction.cases[:4]
    assert nb04._clip_fraction(*case_pos.args) == pytest.approx(2 / 6)
    assert nb04._clip_fraction(*case_neg.args) == pytest.approx(2 / 6)
    assert nb04._clip_fraction(*case_zero.args) == 0.0
    assert nb04._clip_fraction(*case_narrow.args) == pytest.approx(3 / 6)
    # padding case: answer 1 (4 tokens, A = +1) clips 1.5 only; answer 2 (1 token, ratio 1.5, A = -1) clips nothing
    assert nb04._clip_fraction(*nb04.clip_fraction.cases[4].args) == pytest.approx(1 / 5)


def test_free_answer_has_hint_and_solution():
    assert "clip" in str(nb04.no_clip_prediction.hint()).lower()
    assert "measure" in str(nb04.no_clip_prediction.solution()).lower()


# ------------------------------------------------------------------------------------------ the notebook's scaffolding
SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


ANSWER_CELL = re.compile(
    r"(### BEGIN SOLUTION|<!-- BEGIN SOLUTION -->)\n"
    r"\*\*Your answer:\*\* \S[\s\S]*\n"
    r"(### END SOLUTION|<!-- END SOLUTION -->)"
)


def scaffolding_problems(path: Path) -> list[str]:
    """What breaks the module's exercise scaffolding in a solution notebook: an answer cell that is not the template
    (the BEGIN SOLUTION marker, '**Your answer:** ...', the END SOLUTION marker), a hint or solution that runs before
    an attempt (a call outside a comment, or Markdown telling the learner to run one), an exercise heading without
    the lecture's number, a verification table (show(...)) in a learner notebook, or not exactly one '## The lecture
    and us' section after every exercise (issue 32: the notebooks teach, `reproduce` verifies)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    problems, closing, checks_at = [], [], []
    for index, cell in enumerate(cells):
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            if "BEGIN SOLUTION" in text and not ANSWER_CELL.fullmatch(text.strip()):
                problems.append(f"cell {index}: an answer cell that is not the template")
            if re.search(r"`checks\.\w+\.(hint|solution)\(\d*\)`", text):
                problems.append(f"cell {index}: Markdown sends the learner to a hint or solution")
            for heading in re.findall(r"(?m)^#+ .*Exercise.*$", text):
                if not re.search(r"Exercise \d", heading):
                    problems.append(f"cell {index}: exercise heading without the lecture's number: {heading}")
            if re.match(r"#+ The lecture and us", text.strip()):
                closing.append(index)
            continue
        code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
        if any(re.search(r"\.(hint|solution)\(\d*\)", line) for line in code):
            problems.append(f"cell {index}: a hint or solution that runs before an attempt")
        if any(re.search(r"(?<![.\w])show\(", line) for line in code):
            problems.append(f"cell {index}: a verification table (show) in a learner notebook")
        if any(".check(" in line for line in code):
            checks_at.append(index)
    if len(closing) != 1 or (checks_at and closing[0] < max(checks_at)):
        problems.append(f"'The lecture and us' in cells {closing}: want one, after every exercise")
    return problems


def test_notebook_04_follows_the_exercise_scaffolding():
    assert scaffolding_problems(SOLUTIONS / "04_ppo_vs_grpo.ipynb") == []


def test_the_scaffolding_check_can_fail(tmp_path):
    bad = {
        "cells": [
            {"cell_type": "markdown", "source": ["<!-- BEGIN SOLUTION -->\nNo.\n<!-- END SOLUTION -->"]},
            {"cell_type": "markdown", "source": ["### Exercise: unnumbered\nHint: `checks.x.hint(2)`"]},
            {"cell_type": "markdown", "source": ["## The lecture and us\nOurs and theirs."]},
            {"cell_type": "code", "source": ["checks.x.hint()\nshow(rows)"]},
            {"cell_type": "code", "source": ["checks.x.check(f)\nplt.show()"]},
        ]
    }
    path = tmp_path / "bad.ipynb"
    path.write_text(json.dumps(bad))
    problems = scaffolding_problems(path)
    assert [p.split(":")[0] for p in problems] == [
        "cell 0",
        "cell 1",
        "cell 1",
        "cell 3",
        "cell 3",
        "'The lecture and us' in cells [2]",
    ], problems


def test_the_answer_template_accepts_both_markers():
    for begin, end in (
        ("### BEGIN SOLUTION", "### END SOLUTION"),
        ("<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"),
    ):
        assert ANSWER_CELL.fullmatch(f"{begin}\n**Your answer:** yes.\n{end}")
