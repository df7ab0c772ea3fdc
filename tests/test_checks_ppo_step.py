"""Notebook 04's checker of a learner's GAE and value loss inside one PPO step: the solution notebook's functions and
the package's are correct; each typical mistake is Incorrect at its stage; a stub is Not attempted."""

import pytest
import torch

from rlvr import objectives
from rlvr.checks import Outcome
from rlvr.checks import nb04 as checks
from rlvr.checks import ppo_step
from rlvr.config import STRICT_ENV
from rlvr.train import value_loss

from notebook_code import solution_functions


@pytest.fixture(autouse=True)
def normal_mode(monkeypatch):
    monkeypatch.delenv(STRICT_ENV, raising=False)


def notebook_pieces():
    """my_gae and my_value_loss as written in the solution notebook."""
    namespace = solution_functions("04_ppo_vs_grpo.ipynb", "def my_gae", {"torch": torch})
    return namespace["my_gae"], namespace["my_value_loss"]


def gae(
    rewards, values, response_mask, gamma=1.0, lam=1.0, masked=True, add_values=True, backwards=True, use_gamma=True
):
    """A learner's GAE with one knob per typical mistake (the defaults are right)."""
    mask = response_mask.float() if masked else torch.ones_like(rewards)
    values = values * mask
    g = gamma if use_gamma else 1.0
    adv = torch.zeros_like(rewards)
    running, next_value = torch.zeros_like(rewards[:, 0]), torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])) if backwards else range(rewards.shape[1]):
        delta = rewards[:, t] + g * next_value - values[:, t]
        running = (delta + g * lam * running) * mask[:, t]
        adv[:, t] = running
        next_value = values[:, t]
    return adv, ((adv + values) * mask) if add_values else adv


def stub(*args, **kwargs):
    raise NotImplementedError


def test_right_pieces_are_correct():
    assert checks.ppo_pieces.check(objectives.gae, value_loss).passed
    assert checks.ppo_pieces.check(*notebook_pieces()).passed
    assert checks.ppo_pieces.check(gae, value_loss).passed


def test_stub_is_not_attempted():
    assert checks.ppo_pieces.check(stub, stub).outcome is Outcome.NOT_ATTEMPTED
    assert checks.ppo_pieces.check(gae, stub).outcome is Outcome.NOT_ATTEMPTED


@pytest.mark.parametrize(
    "gae_fn, loss_fn, words",
    [
        (lambda *a: gae(*a, masked=False), value_loss, ["GAE: the advantages", "padding"]),
        (lambda *a: gae(*a, add_values=False), value_loss, ["GAE: the returns", "PLUS the values"]),
        (lambda *a: gae(*a, backwards=False), value_loss, ["GAE: the advantages", "backwards"]),
        (lambda *a: gae(*a, use_gamma=False), value_loss, ["GAE: the advantages", "gamma = 0.9"]),
        (gae, lambda v, r, m: ((v - r) ** 2).mean(), ["value loss:", "padding"]),
        (gae, lambda v, r, m: 0.5 * objectives.masked_mean((v - r) ** 2, m), ["value loss:", "1/2"]),
        (gae, lambda v, r, m: torch.tensor(float(value_loss(v, r, m))), ["value loss:", "detached"]),
        (gae, lambda v, r, m: (v - r) ** 2, ["value loss:", "scalar"]),
    ],
)
def test_each_typical_mistake_is_incorrect_at_its_stage(gae_fn, loss_fn, words):
    result = checks.ppo_pieces.check(gae_fn, loss_fn)
    assert result.outcome is Outcome.INCORRECT, result
    assert all(w in result.message.split("\n")[0] for w in words), result.message


def test_an_exception_is_one_line_and_could_not_check():
    result = checks.ppo_pieces.check(lambda *a: 1 / 0, value_loss)
    assert result.outcome is Outcome.UNCHECKABLE and "ZeroDivisionError" in result.message


def test_a_gae_returning_numpy_is_told_so_not_blamed_for_the_checkers_probe():
    def numpy_gae(*args):
        return tuple(x.numpy() for x in objectives.gae(*args))

    result = checks.ppo_pieces.check(numpy_gae, value_loss)
    assert result.outcome is Outcome.INCORRECT and "numpy array (with the right values)" in result.message


def test_a_transposed_gae_is_told_so():
    def transposed(*args):
        return tuple(x.T for x in objectives.gae(*args))

    result = checks.ppo_pieces.check(transposed, value_loss)
    assert result.outcome is Outcome.INCORRECT and "[T, B]" in result.message


def test_a_value_loss_editing_returns_in_place_is_told_so():
    def edits_returns(values, returns, response_mask):
        returns.sub_(values.detach())  # (values - returns)^2 == returns'^2 after the edit: the value is right
        return (returns**2 * response_mask).sum() / response_mask.sum() + 0 * values.sum()

    result = checks.ppo_pieces.check(gae, edits_returns)
    assert result.outcome is Outcome.INCORRECT
    assert "changes its input `returns` in place" in result.message and "value is right" in result.message


def test_system_exit_and_a_wrong_call_are_answered_in_one_sentence():
    result = checks.ppo_pieces.check(lambda *a: exit(), value_loss)
    assert result.outcome is Outcome.UNCHECKABLE and "exit()" in result.message
    result = checks.ppo_pieces.check(gae)
    assert result.outcome is Outcome.UNCHECKABLE and "needs 2 functions; it was given 1" in result.message


CASE = checks.ppo_pieces.cases[1]  # gamma 0.9, lam 0.8, beta 0.1: every knob of GAE shows


@pytest.mark.parametrize("name", list(ppo_step.GAE_MISTAKES), ids=list(ppo_step.GAE_MISTAKES))
def test_each_gae_library_entry_is_named_by_its_own_sentence(name):
    sentence, wrong = ppo_step.GAE_MISTAKES[name]
    problem, failed = ppo_step.gae_problem(wrong, ppo_step.reference_step(CASE), CASE)
    assert failed is None and problem.endswith(sentence), problem


@pytest.mark.parametrize("name", list(ppo_step.VALUE_LOSS_MISTAKES), ids=list(ppo_step.VALUE_LOSS_MISTAKES))
def test_each_value_loss_library_entry_is_named_by_its_own_sentence(name):
    sentence, wrong = ppo_step.VALUE_LOSS_MISTAKES[name]
    problem, failed = ppo_step.value_loss_problem(ppo_step.reference_step(CASE), wrong)
    assert failed is None and problem.startswith(f"value loss: {sentence}"), problem
