"""The checker of notebook 02's Exercise 2 (PPO's clipped objective): stub, reference and realistic wrong answers."""

import pytest
import torch

from rlvr.checks import Outcome, nb02
from rlvr.config import STRICT_ENV


@pytest.fixture(autouse=True)
def normal_mode(monkeypatch):
    """Every test starts outside strict mode."""
    monkeypatch.delenv(STRICT_ENV, raising=False)


def stub(ratio, advantage, clip_eps=0.2):
    """What the student notebook starts with."""
    # YOUR CODE HERE
    raise NotImplementedError


def reference(ratio, advantage, clip_eps=0.2):
    """The lecture's formula, written as a student would."""
    return torch.min(ratio * advantage, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage)


def with_where(ratio, advantage, clip_eps=0.2):
    """Also correct: pick the smaller term with torch.where."""
    unclipped = ratio * advantage
    clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps) * advantage
    return torch.where(unclipped < clipped, unclipped, clipped)


def clipped_term_only(ratio, advantage, clip_eps=0.2):
    """Forgets the min: the clipped term alone (too generous when r < 1 - eps and A > 0)."""
    return torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage


def max_instead_of_min(ratio, advantage, clip_eps=0.2):
    """Optimistic instead of pessimistic."""
    return torch.maximum(ratio * advantage, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage)


def positive_advantages_only(ratio, advantage, clip_eps=0.2):
    """Caps the ratio at 1 + eps only: right for A > 0, wrong for A < 0."""
    return torch.minimum(ratio, torch.full_like(ratio, 1 + clip_eps)) * advantage


def returns_the_loss(ratio, advantage, clip_eps=0.2):
    """The package's convention (a loss = -objective), but the exercise asks for the objective."""
    return -reference(ratio, advantage, clip_eps)


def hard_coded_eps(ratio, advantage, clip_eps=0.2):
    """Ignores the clip_eps argument."""
    return torch.min(ratio * advantage, torch.clamp(ratio, 0.8, 1.2) * advantage)


def clip_detached(ratio, advantage, clip_eps=0.2):
    """Right values, but no gradient flows through the clipped branch (half the gradient inside the clip range)."""
    return torch.minimum(ratio * advantage, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps).detach() * advantage)


def rebuilt_tensor(ratio, advantage, clip_eps=0.2):
    """Right values in a new tensor: cut off from autograd."""
    return torch.tensor(reference(ratio, advantage, clip_eps).tolist(), dtype=ratio.dtype)


def test_stub_reads_not_attempted():
    assert nb02.clipped_objective.check(stub).outcome is Outcome.NOT_ATTEMPTED


@pytest.mark.parametrize("fn", [nb02._clipped_objective, reference, with_where])
def test_correct_versions_read_correct_with_gradient_details(fn):
    result = nb02.clipped_objective.check(fn)
    assert result.outcome is Outcome.CORRECT, result.message
    assert "grad ok" in result.message


@pytest.mark.parametrize(
    "fn, case_words",
    [
        (clipped_term_only, "Exercise 2"),
        (max_instead_of_min, "Exercise 2"),
        (positive_advantages_only, "negative advantage"),
        (returns_the_loss, "Exercise 2"),
        (hard_coded_eps, "eps = 0.1"),
        (clip_detached, "Exercise 2"),
        (rebuilt_tensor, "Exercise 2"),
    ],
)
def test_wrong_versions_read_incorrect_and_name_the_case(fn, case_words):
    result = nb02.clipped_objective.check(fn)
    assert result.outcome is Outcome.INCORRECT, result.message
    assert case_words in result.message


def test_incorrect_messages_do_not_reveal_the_expected_values():
    message = nb02.clipped_objective.check(max_instead_of_min).message
    assert "2.4" not in message.split("`")[-1]  # the case name lists the ratios, the verdict gives no answers
    assert "value WRONG" in message


def test_gradient_mistakes_are_reported_as_gradient_problems():
    assert "grad WRONG" in nb02.clipped_objective.check(clip_detached).message
    assert "detached" in nb02.clipped_objective.check(rebuilt_tensor).message


def test_strict_mode_raises_unless_correct(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")
    nb02.clipped_objective.check(reference)
    with pytest.raises(AssertionError):
        nb02.clipped_objective.check(max_instead_of_min)


def test_free_answer_has_hint_and_solution():
    assert "pi_old" in nb02.one_update.hint().text
    assert r"\rho_t = 1" in nb02.one_update.solution().text


def test_free_answer_writes_the_ratio_as_rho():
    """Notation (docs/notation.md): rho is the PPO ratio, r_t the shaped reward; the hint and solution use rho."""
    text = nb02.one_update._hint + nb02.one_update._solution
    assert r"\rho" in nb02.one_update._solution and "rho = 1" in nb02.one_update._hint
    assert "r_t = 1" not in text and "r = 1" not in text and r"\nabla r" not in text
