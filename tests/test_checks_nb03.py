"""Checkers of notebook 03: the stub is 'not attempted', the reference 'correct', realistic mistakes 'incorrect'."""

import math

import numpy as np
import pytest
import torch

from rlvr.checks import FreeAnswer, Outcome
from rlvr.checks import nb03 as checks
from rlvr.config import STRICT_ENV


@pytest.fixture(autouse=True)
def normal_mode(monkeypatch):
    """Outside strict mode, so a wrong answer returns a Result instead of raising."""
    monkeypatch.delenv(STRICT_ENV, raising=False)


def stub(*args, **kwargs):
    """What the student notebook ships."""
    raise NotImplementedError


# ----------------------------------------------------------------------------- Exercise 3: GRPO
def grpo_written_out(rewards, group_size, eps=0.0):
    """A correct solution written differently: loop over groups, variance by hand."""
    out = []
    for group in rewards.split(group_size):
        mean = group.sum() / group_size
        std = ((group - mean) ** 2).mean().sqrt()
        out.append((group - mean) / (std + eps))
    return torch.cat(out)


def grpo_unbiased_std(rewards, group_size, eps=0.0):
    """Uses torch.std's default (divide by G-1), as TRL does, not the lecture's population std."""
    r = rewards.view(-1, group_size)
    return ((r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + eps)).reshape(-1)


def grpo_batch_normalised(rewards, group_size, eps=0.0):
    """Normalises over the whole batch instead of each group."""
    return (rewards - rewards.mean()) / (rewards.std(correction=0) + eps)


def grpo_ignores_eps(rewards, group_size, eps=0.0):
    """Forgets eps: 0/0 = NaN on an all-equal group."""
    r = rewards.view(-1, group_size)
    return ((r - r.mean(dim=1, keepdim=True)) / r.std(dim=1, keepdim=True, correction=0)).reshape(-1)


def grpo_eps_under_the_root(rewards, group_size, eps=0.0):
    """sqrt(var + eps), as some libraries write it."""
    r = rewards.view(-1, group_size)
    var = ((r - r.mean(dim=1, keepdim=True)) ** 2).mean(dim=1, keepdim=True)
    return ((r - r.mean(dim=1, keepdim=True)) / torch.sqrt(var + eps)).reshape(-1)


def grpo_unflattened(rewards, group_size, eps=0.0):
    """Right numbers, returned as [B/G, G] instead of [B]."""
    r = rewards.view(-1, group_size)
    return (r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True, correction=0) + eps)


def test_grpo_stub_is_not_attempted():
    assert checks.grpo_advantages.check(stub).outcome is Outcome.NOT_ATTEMPTED


@pytest.mark.parametrize("fn", [checks._reference_grpo, grpo_written_out])
def test_grpo_correct_versions_pass(fn):
    result = checks.grpo_advantages.check(fn)
    assert result.outcome is Outcome.CORRECT, result.message


def test_grpo_reference_gives_the_lecture_numbers():
    adv = checks._reference_grpo(torch.tensor(checks.ONE_RIGHT), 8, eps=0.0)
    assert adv[0].item() == pytest.approx(0.875 / math.sqrt(0.125 * 0.875))
    assert round(adv[0].item(), 2) == 2.65 and round(adv[1].item(), 2) == -0.38


@pytest.mark.parametrize(
    "fn, mistake",
    [
        (grpo_unbiased_std, "unbiased_std"),
        (grpo_batch_normalised, "batch_normalised"),
        (grpo_ignores_eps, "eps_ignored"),
        (grpo_unflattened, "not_flattened"),
        (grpo_eps_under_the_root, "eps_in_var"),
    ],
)
def test_grpo_mistakes_are_named(fn, mistake):
    result = checks.grpo_advantages.check(fn)
    assert result.outcome is Outcome.INCORRECT
    assert result.mistake == mistake, result.message


def test_the_unbiased_std_shows_the_lecture_numbers_against_the_learners():
    """Two answers [1, 0]: population std 0.5 gives +-1, the unbiased 0.707 gives +-0.707."""
    message = checks.grpo_advantages.check(grpo_unbiased_std).message
    assert "expected [1, -1, -1, 1], got [0.7071, -0.7071, -0.7071, 0.7071]" in message


def test_grpo_nan_is_explained():
    def nan_on_equal(rewards, group_size, eps=0.0):
        r = rewards.view(-1, group_size)
        return ((r - r.mean(dim=1, keepdim=True)) / r.std(dim=1, keepdim=True, correction=0) + 0 * eps).reshape(-1)

    cases = checks.grpo_advantages.cases
    equal_case = [c for c in cases if "all rewards equal" in c.description]
    assert equal_case
    from rlvr.checks import Exercise

    only_equal = Exercise("equal", equal_case, reference=checks._reference_grpo)
    assert "NaN" in only_equal.check(nan_on_equal).message


# ----------------------------------------------------------------------------- Exercise 3: Dr. GRPO
def dr_grpo_rloo(rewards, group_size):
    """Leave-one-out baseline instead of the group mean."""
    r = rewards.view(-1, group_size)
    return (r - (r.sum(dim=1, keepdim=True) - r) / (group_size - 1)).reshape(-1)


def dr_grpo_still_divides(rewards, group_size):
    """Keeps GRPO's division by the std."""
    return checks._reference_grpo(rewards, group_size, 1e-4)


def dr_grpo_batch_mean(rewards, group_size):
    """Subtracts the batch mean."""
    return rewards - rewards.mean()


def test_dr_grpo_stub_and_reference():
    assert checks.dr_grpo_advantages.check(stub).outcome is Outcome.NOT_ATTEMPTED
    assert checks.dr_grpo_advantages.check(checks._reference_dr_grpo).outcome is Outcome.CORRECT
    adv = checks._reference_dr_grpo(torch.tensor(checks.ONE_RIGHT), 8)
    assert adv[0].item() == pytest.approx(0.875) and adv[1].item() == pytest.approx(-0.125)


@pytest.mark.parametrize(
    "fn, mistake",
    [
        (dr_grpo_rloo, "leave_one_out"),
        (dr_grpo_still_divides, "divides_by_std"),
        (dr_grpo_batch_mean, "batch_mean"),
    ],
)
def test_dr_grpo_mistakes_are_named(fn, mistake):
    result = checks.dr_grpo_advantages.check(fn)
    assert result.outcome is Outcome.INCORRECT
    assert result.mistake == mistake, result.message


# ----------------------------------------------------------------------------- Exercise 6: pass@k
def pass_with_comb(n, c, k):
    """The textbook formula with math.comb (C(n-c, k) is 0 when n - c < k)."""
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def pass_product(n, c, k):
    """The stable product form with numpy."""
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_naive(n, c, k):
    """The biased plug-in estimate 1 - (1 - c/n)^k."""
    return 1 - (1 - c / n) ** k


def pass_all_right(n, c, k):
    """Chance that all k draws are right (confuses 'at least one' with 'all')."""
    return math.comb(c, k) / math.comb(n, k)


def pass_forgets_one_minus(n, c, k):
    """Returns the chance that all k draws are wrong."""
    return math.comb(n - c, k) / math.comb(n, k)


def test_pass_stub_is_not_attempted():
    assert checks.pass_at_k.check(stub).outcome is Outcome.NOT_ATTEMPTED


@pytest.mark.parametrize("fn", [checks.pass_at_k.reference, pass_with_comb, pass_product])
def test_pass_correct_versions_pass(fn):
    result = checks.pass_at_k.check(fn)
    assert result.outcome is Outcome.CORRECT, result.message


def test_pass_reference_matches_chen_et_al_check_values():
    assert checks.pass_at_k.reference(10, 3, 5) == pytest.approx(0.91667, abs=1e-5)
    assert checks.pass_at_k.reference(16, 0, 16) == 0.0
    assert checks.pass_at_k.reference(16, 10, 8) == 1.0
    assert checks.pass_at_k.reference(10, 3, 1) == pytest.approx(0.3)


@pytest.mark.parametrize(
    "fn, mistake",
    [
        (pass_naive, "with_replacement"),
        (pass_all_right, "all_right"),
        (pass_forgets_one_minus, "all_wrong"),
    ],
)
def test_pass_mistakes_are_named(fn, mistake):
    result = checks.pass_at_k.check(fn)
    assert result.outcome is Outcome.INCORRECT
    assert result.mistake == mistake, result.message


def test_the_biased_pass_at_k_shows_chen_et_al_s_number():
    """n=10, c=3, k=5: 0.91667 (Chen et al.) against 1 - 0.7^5 = 0.8319."""
    assert "On `n=10, c=3, k=5`: expected 0.9167, got 0.8319" in checks.pass_at_k.check(pass_naive).message


@pytest.mark.parametrize(
    "exercise, mistake",
    [(e, m) for e in (checks.grpo_advantages, checks.dr_grpo_advantages, checks.pass_at_k) for m in e.mistakes],
    ids=[
        f"{e.name.split()[0]}-{m.name}"
        for e in (checks.grpo_advantages, checks.dr_grpo_advantages, checks.pass_at_k)
        for m in e.mistakes
    ],
)
def test_each_library_entry_is_named_by_its_own_message(exercise, mistake):
    result = exercise.check(mistake.fn)
    assert result.outcome is Outcome.INCORRECT and result.mistake == mistake.name
    assert result.message.startswith(mistake.says) and result.message.endswith(mistake.fix)


# ----------------------------------------------------------------------------- free answers
@pytest.mark.parametrize(
    "question",
    [checks.which_is_larger, checks.large_k, checks.perfect_teacher, checks.kl_penalty, checks.group_size_runs],
)
def test_free_answers_have_hint_and_solution(question):
    assert isinstance(question, FreeAnswer)
    assert question.hint().text and question.solution().text
