"""Checkers of notebook 01: the stub is 'not attempted', the reference 'correct', realistic mistakes 'incorrect'."""

import pytest
import torch

from rlvr.checks import Outcome
from rlvr.checks import nb01 as checks
from rlvr.config import STRICT_ENV


@pytest.fixture(autouse=True)
def normal_mode(monkeypatch):
    """Outside strict mode, so a wrong answer returns a Result instead of raising."""
    monkeypatch.delenv(STRICT_ENV, raising=False)


def stub(rewards, group_size):
    """What the student notebook ships."""
    raise NotImplementedError


def mean_baseline_written_out(rewards, group_size):
    """A correct solution written differently from the reference (loop over groups, float64)."""
    out = []
    for group in rewards.double().split(group_size):
        out.append(group - group.sum() / group_size)
    return torch.cat(out)


def rloo_written_out(rewards, group_size):
    """A correct RLOO with an explicit loop over answers."""
    r = rewards.view(-1, group_size)
    out = torch.empty_like(r)
    for i in range(group_size):
        others = torch.cat([r[:, :i], r[:, i + 1 :]], dim=1)
        out[:, i] = r[:, i] - others.mean(dim=1)
    return out.reshape(-1)


# ----------------------------------------------------------------------------- realistic mistakes
def batch_mean(rewards, group_size):
    """Subtracts the mean of the whole batch instead of each group's."""
    return rewards - rewards.mean()


def wrong_axis(rewards, group_size):
    """Reshapes to [G, B/G]: groups become columns."""
    r = rewards.reshape(group_size, -1)
    return (r - r.mean(dim=0, keepdim=True)).reshape(-1)


def not_flattened(rewards, group_size):
    """Right numbers, but returns [B/G, G] instead of [B]."""
    r = rewards.view(-1, group_size)
    return r - r.mean(dim=1, keepdim=True)


def rloo_divides_by_g(rewards, group_size):
    """Leave-one-out sum divided by G instead of G - 1."""
    r = rewards.view(-1, group_size)
    return (r - (r.sum(dim=1, keepdim=True) - r) / group_size).reshape(-1)


def rloo_is_mean_baseline(rewards, group_size):
    """Keeps the answer itself in the baseline (the mean baseline handed in as RLOO)."""
    r = rewards.view(-1, group_size)
    return (r - r.mean(dim=1, keepdim=True)).reshape(-1)


def rloo_over_batch(rewards, group_size):
    """Leaves one out of the whole batch instead of its group."""
    n = rewards.numel()
    return rewards - (rewards.sum() - rewards) / (n - 1)


def rloo_no_return(rewards, group_size):
    """Computes the right thing and forgets to return it."""
    r = rewards.view(-1, group_size)
    _ = r - (r.sum(dim=1, keepdim=True) - r) / (group_size - 1)


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("exercise", [checks.mean_baseline, checks.rloo], ids=["mean", "rloo"])
def test_the_stub_reads_not_attempted(exercise):
    assert exercise.check(stub).outcome is Outcome.NOT_ATTEMPTED


@pytest.mark.parametrize(
    "exercise, solution",
    [
        (checks.mean_baseline, checks.mean_baseline.reference),
        (checks.mean_baseline, mean_baseline_written_out),
        (checks.rloo, checks.rloo.reference),
        (checks.rloo, rloo_written_out),
    ],
    ids=["mean-reference", "mean-loop", "rloo-reference", "rloo-loop"],
)
def test_correct_solutions_read_correct(exercise, solution):
    result = exercise.check(solution)
    assert result.outcome is Outcome.CORRECT, str(result)


def test_the_solution_texts_are_correct_code():
    for exercise in (checks.mean_baseline, checks.rloo):
        source = "def fn(rewards, group_size):\n" + "\n".join(
            "    " + line for line in exercise._solution.strip().splitlines()
        )
        namespace = {}
        exec(source, namespace)  # noqa: S102 - our own solution text
        assert exercise.check(namespace["fn"]).outcome is Outcome.CORRECT


@pytest.mark.parametrize(
    "wrong, failing_case",
    [
        (batch_mean, "two groups of 4"),
        (wrong_axis, "two groups of 4"),
        (not_flattened, "one group of 4"),
        (checks.rloo.reference, "one group of 4"),
    ],
    ids=["batch-mean", "wrong-axis", "not-flattened", "rloo-instead"],
)
def test_mean_baseline_mistakes_read_incorrect_and_name_the_case(wrong, failing_case):
    result = checks.mean_baseline.check(wrong)
    assert result.outcome is Outcome.INCORRECT, str(result)
    assert failing_case in result.message


@pytest.mark.parametrize(
    "wrong, failing_case",
    [
        (rloo_divides_by_g, "one group of 4"),
        (rloo_is_mean_baseline, "one group of 4"),
        (rloo_over_batch, "two groups of 4"),
        (rloo_no_return, "one group of 4"),
    ],
    ids=["divides-by-G", "mean-baseline", "over-batch", "no-return"],
)
def test_rloo_mistakes_read_incorrect_and_name_the_case(wrong, failing_case):
    result = checks.rloo.check(wrong)
    assert result.outcome is Outcome.INCORRECT, str(result)
    assert failing_case in result.message


def test_incorrect_messages_do_not_reveal_the_expected_values():
    expected = checks.rloo.reference(torch.tensor([1.0, 0, 0, 0]), 4)  # [1, -1/3, -1/3, -1/3]
    message = checks.rloo.check(rloo_divides_by_g).message
    assert "0.333" not in message and "0.33" not in message
    assert expected[1] == pytest.approx(-1 / 3)


def test_shape_mistake_says_which_shape_was_expected():
    message = checks.mean_baseline.check(not_flattened).message
    assert "shape (1, 4)" in message and "(4,)" in message


def test_a_crashing_answer_is_uncheckable_with_the_error():
    def crashes(rewards, group_size):
        return rewards.view(group_size, 3, -1).mean()  # wrong view for most cases

    result = checks.rloo.check(crashes)
    assert result.outcome is Outcome.UNCHECKABLE
    assert "RuntimeError" in result.message


def test_strict_mode_raises_on_a_wrong_answer(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(AssertionError, match="Incorrect"):
        checks.rloo.check(rloo_divides_by_g)


def test_free_answer_has_hint_and_solution():
    assert "grad p / p" in checks.score_mean_zero.hint().text
    assert "(G-1)/G" in checks.score_mean_zero.solution().text


@pytest.mark.parametrize("exercise", [checks.mean_baseline, checks.rloo], ids=["mean", "rloo"])
def test_a_correct_answer_lists_every_case(exercise):
    message = exercise.check(exercise.reference).message
    assert message.startswith(f"passed {len(exercise.cases)} of {len(exercise.cases)} cases.")
    for case in exercise.cases:
        assert f"{case.description}: ok | maxdiff" in message
