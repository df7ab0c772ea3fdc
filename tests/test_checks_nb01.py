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
    "wrong, mistake",
    [
        (batch_mean, "batch_mean"),
        (wrong_axis, "columns"),
        (not_flattened, "not_flattened"),
        (checks.rloo.reference, "leave_one_out"),
    ],
    ids=["batch-mean", "wrong-axis", "not-flattened", "rloo-instead"],
)
def test_mean_baseline_mistakes_are_named(wrong, mistake):
    result = checks.mean_baseline.check(wrong)
    assert result.outcome is Outcome.INCORRECT, str(result)
    assert result.mistake == mistake, result.message


@pytest.mark.parametrize(
    "wrong, mistake",
    [
        (rloo_divides_by_g, "divides_by_g"),
        (rloo_is_mean_baseline, "group_mean"),
        (rloo_over_batch, "over_batch"),
    ],
    ids=["divides-by-G", "mean-baseline", "over-batch"],
)
def test_rloo_mistakes_are_named(wrong, mistake):
    result = checks.rloo.check(wrong)
    assert result.outcome is Outcome.INCORRECT, str(result)
    assert result.mistake == mistake, result.message


def test_a_missing_return_says_so():
    result = checks.rloo.check(rloo_no_return)
    assert result.outcome is Outcome.INCORRECT and "forget the `return`" in result.message


@pytest.mark.parametrize(
    "exercise, mistake",
    [(checks.mean_baseline, m) for m in checks.mean_baseline.mistakes]
    + [(checks.rloo, m) for m in checks.rloo.mistakes],
    ids=[f"mean-{m.name}" for m in checks.mean_baseline.mistakes] + [f"rloo-{m.name}" for m in checks.rloo.mistakes],
)
def test_each_library_entry_is_named_by_its_own_message(exercise, mistake):
    """Fed the library's own wrong answer, the checker names that entry (no earlier entry shadows it)."""
    result = exercise.check(mistake.fn)
    assert result.outcome is Outcome.INCORRECT and result.mistake == mistake.name
    assert result.message.startswith(mistake.says) and result.message.endswith(mistake.fix)


def test_the_classic_swap_shows_both_baselines_on_the_smallest_case():
    """The mean baseline handed in as RLOO: expected 1 and -1/3 (leave-one-out), got 0.75 and -0.25."""
    message = checks.rloo.check(rloo_is_mean_baseline).message
    assert "On `one group of 4, rewards [1, 0, 0, 0], group_size=4`: expected [1, -0.3333" in message
    assert "got [0.75, -0.25, -0.25, -0.25]" in message


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
    assert "grad pi / pi" in checks.score_mean_zero.hint().text
    assert "independently" in checks.score_mean_zero.hint(2).text
    assert "(G-1)/G" in checks.score_mean_zero.solution().text


@pytest.mark.parametrize("exercise", [checks.mean_baseline, checks.rloo], ids=["mean", "rloo"])
def test_a_correct_answer_lists_every_case(exercise):
    message = exercise.check(exercise.reference).message
    assert message.startswith(f"passed {len(exercise.cases)} of {len(exercise.cases)} cases.")
    for case in exercise.cases:
        assert f"{case.description}: ok | maxdiff" in message


def test_verdicts_cases_hints_and_model_answers_in_chinese():
    from rlvr import i18n

    i18n.set_language("zh_CN")
    try:
        wrong = str(checks.mean_baseline.check(lambda rewards, group_size: rewards - rewards.mean()))
        right = str(checks.rloo.check(checks.rloo.reference))
        hint, answer = str(checks.score_mean_zero.hint()), str(checks.score_mean_zero.solution())
    finally:
        i18n.set_language("en")
        i18n.set_language(None)
    assert wrong.startswith("[不正确] 均值基线") and "整批数据的均值" in wrong and "三组、每组 2 个回答" in wrong
    assert "5 组、每组 8 个随机 0/1 奖励" in right and "通过 | 最大差" in right
    assert "grad pi / pi" in hint and r"\pi_\theta(o)" in answer and "策略梯度" in answer
