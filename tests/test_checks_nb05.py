"""Checkers of notebook 05: the stub reads "not attempted", the reference "correct", realistic mistakes "incorrect"."""

import pytest
import torch

from rlvr.checks import Outcome
from rlvr.checks import nb05 as checks


def stub(*args, **kwargs):
    raise NotImplementedError


# ----------------------------------------------------------------------------------------------- sequence_loss
def sequence_loss_ref(per_token_loss, response_mask, mode="grpo", max_len=None):
    token_sums = (per_token_loss * response_mask).sum(dim=1)
    if mode == "grpo":
        return (token_sums / response_mask.sum(dim=1)).mean()
    return (token_sums / max_len).mean()


def sequence_loss_batch_token_mean(per_token_loss, response_mask, mode="grpo", max_len=None):
    """GRPO as one mean over all real tokens of the batch (TRL's bnpo), not per answer."""
    if mode == "grpo":
        return (per_token_loss * response_mask).sum() / response_mask.sum()
    return sequence_loss_ref(per_token_loss, response_mask, mode, max_len)


def sequence_loss_no_mask(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Sums the padding too."""
    token_sums = per_token_loss.sum(dim=1)
    if mode == "grpo":
        return (token_sums / response_mask.sum(dim=1)).mean()
    return (token_sums / max_len).mean()


def sequence_loss_divides_by_width(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Dr. GRPO divided by the padded width T instead of max_len."""
    if mode == "dr_grpo":
        return ((per_token_loss * response_mask).sum(dim=1) / per_token_loss.shape[1]).mean()
    return sequence_loss_ref(per_token_loss, response_mask, mode, max_len)


def sequence_loss_detached(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Right value, but through .item(): no gradient."""
    return torch.tensor(sequence_loss_ref(per_token_loss, response_mask, mode, max_len).item(), dtype=torch.float64)


def test_sequence_loss_stub_reference_and_solution_text():
    assert checks.sequence_loss.check(stub).outcome is Outcome.NOT_ATTEMPTED
    assert checks.sequence_loss.check(sequence_loss_ref).outcome is Outcome.CORRECT
    namespace = {"torch": torch}
    body = "\n".join("    " + line for line in checks.sequence_loss._solution.strip().splitlines())
    exec(f"def f(per_token_loss, response_mask, mode='grpo', max_len=None):\n{body}", namespace)
    assert checks.sequence_loss.check(namespace["f"]).outcome is Outcome.CORRECT


@pytest.mark.parametrize(
    "wrong, mistake",
    [
        (sequence_loss_batch_token_mean, "batch_token_mean"),
        (sequence_loss_no_mask, "no_mask"),
        (sequence_loss_divides_by_width, "dr_grpo_by_width"),
    ],
)
def test_sequence_loss_mistakes_are_named(wrong, mistake):
    result = checks.sequence_loss.check(wrong)
    assert result.outcome is Outcome.INCORRECT
    assert result.mistake == mistake, result.message


def test_a_detached_sequence_loss_is_told_so():
    result = checks.sequence_loss.check(sequence_loss_detached)
    assert result.outcome is Outcome.INCORRECT and "detached" in result.message


# ----------------------------------------------------------------------------------------------- length_logprob
def length_logprob_ref(k, logit, cap):
    ls = torch.nn.functional.logsigmoid
    return k * ls(logit) + torch.where(k < cap, ls(-logit), torch.zeros_like(logit))


def length_logprob_stop_at_cap(k, logit, cap):
    """Charges the stop decision at the cap too."""
    ls = torch.nn.functional.logsigmoid
    return k * ls(logit) + ls(-logit)


def length_logprob_no_stop(k, logit, cap):
    """Forgets the answer (stop) token."""
    return k * torch.nn.functional.logsigmoid(logit)


def length_logprob_probability(k, logit, cap):
    """Uses log(1 - sigmoid) for continue: the two decisions swapped."""
    ls = torch.nn.functional.logsigmoid
    return k * ls(-logit) + torch.where(k < cap, ls(logit), torch.zeros_like(logit))


def test_length_logprob_stub_and_reference():
    assert checks.length_logprob.check(stub).outcome is Outcome.NOT_ATTEMPTED
    assert checks.length_logprob.check(length_logprob_ref).outcome is Outcome.CORRECT


@pytest.mark.parametrize(
    "wrong, mistake",
    [
        (length_logprob_stop_at_cap, "stop_charged_at_cap"),
        (length_logprob_no_stop, "no_stop"),
        (length_logprob_probability, "decisions_swapped"),
    ],
)
def test_length_logprob_mistakes_are_named(wrong, mistake):
    result = checks.length_logprob.check(wrong)
    assert result.outcome is Outcome.INCORRECT
    assert result.mistake == mistake, result.message


# ----------------------------------------------------------------------------------------------- length_reward
def length_reward_ref(lengths, correct):
    lengths = lengths.float()
    lo, hi = lengths.min(), lengths.max()
    if hi == lo:
        return torch.zeros_like(lengths)
    lam = 0.5 - (lengths - lo) / (hi - lo)
    return torch.where(correct, lam, lam.clamp(max=0))


def length_reward_no_clamp(lengths, correct):
    """Gives wrong answers lambda too (rewards being wrong quickly)."""
    lo, hi = lengths.min(), lengths.max()
    if hi == lo:
        return torch.zeros_like(lengths)
    return 0.5 - (lengths - lo) / (hi - lo)


def length_reward_divides_by_zero(lengths, correct):
    """No special case for equal lengths: 0 / 0."""
    lam = 0.5 - (lengths - lengths.min()) / (lengths.max() - lengths.min())
    return torch.where(correct, lam, lam.clamp(max=0))


def length_reward_zero_for_wrong(lengths, correct):
    """Wrong answers always get 0 (forgets the penalty for long wrong answers)."""
    lo, hi = lengths.min(), lengths.max()
    if hi == lo:
        return torch.zeros_like(lengths)
    lam = 0.5 - (lengths - lo) / (hi - lo)
    return torch.where(correct, lam, torch.zeros_like(lam))


def length_reward_scaled_by_max(lengths, correct):
    """Normalises by max_len instead of max_len - min_len."""
    lam = 0.5 - (lengths - lengths.min()) / lengths.max()
    return torch.where(correct, lam, lam.clamp(max=0))


def test_length_reward_stub_and_reference():
    assert checks.length_reward.check(stub).outcome is Outcome.NOT_ATTEMPTED
    assert checks.length_reward.check(length_reward_ref).outcome is Outcome.CORRECT


@pytest.mark.parametrize(
    "wrong, mistake",
    [
        (length_reward_no_clamp, "wrong_answers_get_lambda"),
        (length_reward_divides_by_zero, "equal_lengths_divide_by_zero"),
        (length_reward_zero_for_wrong, "wrong_answers_get_zero"),
        (length_reward_scaled_by_max, "scaled_by_max"),
    ],
)
def test_length_reward_mistakes_are_named(wrong, mistake):
    result = checks.length_reward.check(wrong)
    assert result.outcome is Outcome.INCORRECT
    assert result.mistake == mistake, result.message


def test_kimis_reward_for_wrong_answers_shows_the_exercise_numbers():
    """Exercise 5: lambda [0.5, 0.25, 0, -0.5]; the two wrong answers get min(0, lambda) = [0, -0.5]."""
    message = checks.length_reward.check(length_reward_zero_for_wrong).message
    assert "On `Exercise 5: lengths [200, 400, 600, 1000], first two correct`: expected [0.5, 0.25, 0, -0.5]" in message


@pytest.mark.parametrize(
    "exercise, mistake",
    [(e, m) for e in (checks.sequence_loss, checks.length_logprob, checks.length_reward) for m in e.mistakes],
    ids=[
        f"{e.name.split()[0]}-{m.name}"
        for e in (checks.sequence_loss, checks.length_logprob, checks.length_reward)
        for m in e.mistakes
    ],
)
def test_each_library_entry_is_named_by_its_own_message(exercise, mistake):
    result = exercise.check(mistake.fn)
    assert result.outcome is Outcome.INCORRECT and result.mistake == mistake.name
    assert result.message.startswith(mistake.says) and result.message.endswith(mistake.fix)


def test_free_answers_have_hint_and_solution():
    for question in (checks.exercise_7d, checks.arithmetic_prediction):
        assert question.hint().text and question.solution().text


# ----------------------------------------------------------------------------------------------- the notebook
def test_notebook_05_follows_the_exercise_scaffolding():
    from test_checks_nb04 import SOLUTIONS, scaffolding_problems  # one definition of the scaffolding rules

    assert scaffolding_problems(SOLUTIONS / "05_length_bias.ipynb") == []
