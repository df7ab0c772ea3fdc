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
    "fn, mistake",
    [
        (clipped_term_only, "clipped_only"),
        (max_instead_of_min, "max_for_min"),
        (positive_advantages_only, "upper_cap_only"),
        (returns_the_loss, "loss_sign"),
        (hard_coded_eps, "fixed_eps"),
        (clip_detached, "clipped_detached"),
    ],
)
def test_wrong_versions_are_named(fn, mistake):
    result = nb02.clipped_objective.check(fn)
    assert result.outcome is Outcome.INCORRECT, result.message
    assert result.mistake == mistake, result.message


@pytest.mark.parametrize("mistake", nb02.clipped_objective.mistakes, ids=lambda m: m.name)
def test_each_library_entry_is_named_by_its_own_message(mistake):
    result = nb02.clipped_objective.check(mistake.fn)
    assert result.outcome is Outcome.INCORRECT and result.mistake == mistake.name
    assert result.message.startswith(mistake.says) and result.message.endswith(mistake.fix)


def test_max_for_min_shows_expected_against_got_on_the_smallest_case():
    """A = -1, ratios [0.5, 0.9, 1.3]: min gives [-0.8, -0.9, -1.3], max [-0.5, -0.9, -1.2]."""
    message = nb02.clipped_objective.check(max_instead_of_min).message
    assert "expected [-0.8, -0.9, -1.3], got [-0.5, -0.9, -1.2]" in message


def test_gradient_mistakes_show_the_derivatives():
    """The clipped term detached: inside the band the min splits the gradient, so d/d rho is A/2 there."""
    message = nb02.clipped_objective.check(clip_detached).message
    assert "the value is right; the derivative of each entry with respect to its `ratio`" in message
    assert "expected [0, -1, -1], got [0, -0.5, -1]" in message
    assert "detached" in nb02.clipped_objective.check(rebuilt_tensor).message


def test_strict_mode_raises_unless_correct(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")
    nb02.clipped_objective.check(reference)
    with pytest.raises(AssertionError):
        nb02.clipped_objective.check(max_instead_of_min)


def test_free_answer_has_hint_and_solution():
    assert "pi_old" in nb02.one_update.hint().text and "policy gradient" in nb02.one_update.hint(2).text
    assert r"\rho_t = 1" in nb02.one_update.solution().text


def test_free_answer_writes_the_ratio_as_rho():
    """Notation (docs/notation.md): rho is the PPO ratio, r_t the shaped reward; the hint and solution use rho."""
    text = " ".join(nb02.one_update.hints) + nb02.one_update._solution
    assert r"\rho" in nb02.one_update._solution and r"\rho = 1" in nb02.one_update.hint(2).text
    assert "r_t = 1" not in text and "r = 1" not in text and r"\nabla r" not in text
