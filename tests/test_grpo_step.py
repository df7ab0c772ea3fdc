"""`rlvr.grpo_step` (one GRPO step as a function, and a loop around any such function) and notebook 03's checker of a
learner's whole step: the reference reproduces train_rl bit for bit, the solution notebook's function reproduces the
package's run step for step, and each typical mistake is reported as Incorrect at the stage it breaks."""

import math

import numpy as np
import pytest
import torch

from rlvr import task
from rlvr.checks import Outcome
from rlvr.checks import nb03 as checks
from rlvr.config import STRICT_ENV
from rlvr.grpo_step import StepError, grpo_step, identical_steps, train_with_step
from rlvr.model import response_logps, sample, update_logps
from rlvr.train import RLConfig, train_rl

from notebook_code import solution_functions

KEYS = ("reward", "accuracy", "cot_fraction", "loss", "all_same_group_fraction", "mean_length")


@pytest.fixture(autouse=True)
def normal_mode(monkeypatch):
    """Outside strict mode, so a wrong answer returns a Result instead of raising."""
    monkeypatch.delenv(STRICT_ENV, raising=False)


def solution_step():
    """`my_grpo_step` as written in the solution notebook (executed from its source)."""
    namespace = {
        "np": np,
        "torch": torch,
        "task": task,
        "sample": sample,
        "response_logps": response_logps,
        "update_logps": update_logps,
    }
    return solution_functions("03_grpo.ipynb", "def my_grpo_step", namespace)["my_grpo_step"]


def assert_same_history(a: list[dict], b: list[dict]) -> None:
    """Every step's metrics equal (bit for bit)."""
    assert len(a) == len(b)
    for step, (x, y) in enumerate(zip(a, b)):
        for key in KEYS:
            assert x[key] == y[key] or (math.isnan(x[key]) and math.isnan(y[key])), (step, key, x[key], y[key])


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_reference_step_reproduces_train_rl(beta):
    cfg = RLConfig(steps=6, beta=beta, seed=5)
    package, looped = train_rl(cfg, progress=False), train_with_step(grpo_step, cfg)
    assert_same_history(looped.history, package.history)
    for p, q in zip(looped.policy.parameters(), package.policy.parameters()):
        assert torch.equal(p, q)


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_solution_notebook_step_matches_the_package_run(beta):
    """The learner-written step of the solution notebook: same history as the package's run, step for step."""
    cfg = RLConfig(steps=8, beta=beta, seed=0)
    mine, package = train_with_step(solution_step(), cfg), train_rl(cfg, progress=False)
    assert_same_history(mine.history, package.history)
    assert identical_steps(mine.history, package.history) == cfg.steps


def test_identical_steps_counts_the_leading_equal_steps():
    a = [{"reward": 0.1, "accuracy": 0.2, "loss": 0.0}] * 3
    b = a[:2] + [{"reward": 0.2, "accuracy": 0.2, "loss": 0.0}]
    assert identical_steps(a, a) == 3
    assert identical_steps(a, b) == 2


def test_loop_refuses_a_non_grpo_config():
    with pytest.raises(ValueError, match="GRPO"):
        train_with_step(grpo_step, RLConfig(algo="ppo", steps=1))


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda out: None, "not a dict"),
        (lambda out: {k: v for k, v in out.items() if k != "advantages"}, "'advantages'"),
        (lambda out: {**out, "rewards": out["rewards"][:-1]}, "'rewards' must be a tensor of shape"),
        (lambda out: {**out, "loss": float("nan")}, "finite"),
    ],
)
def test_loop_names_an_unusable_step_output_in_one_line(bad, message):
    def broken(*args, **kwargs):
        return bad(grpo_step(*args, **kwargs))

    with pytest.raises(StepError, match=message) as info:
        train_with_step(broken, RLConfig(steps=2))
    assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------- the checker
def make_step(adv="group", agg="answer", sign=1.0, kl="k3", detach=True, repeat=np.repeat, temperature=1.0):
    """A learner's step with one knob per typical mistake (the defaults are right)."""

    def step(policy, ref, optimizer, prompts, generator, group_size=8, beta=0.0, eps=1e-4, clip_eps=0.2):
        rollout = sample(
            policy, task.prompt_tokens(prompts), temperature, generator=generator, samples_per_prompt=group_size
        )
        digits = repeat(prompts, group_size, axis=0) if repeat is np.repeat else np.tile(prompts, (group_size, 1))
        rewards = task.score_batch(torch.as_tensor(digits), rollout.responses)["reward"]
        r = rewards.view(-1, group_size)
        if adv == "batch":
            advantages = (rewards - rewards.mean()) / (rewards.std(correction=0) + eps)
        else:
            advantages = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True, correction=0) + eps)).reshape(-1)
        logps = response_logps(policy, rollout.prompt_ids, rollout.responses, samples_per_prompt=group_size)
        ratio = torch.exp(logps - (logps.detach() if detach else logps))
        a = advantages[:, None]
        per_token = -torch.minimum(ratio * a, ratio.clamp(1 - clip_eps, 1 + clip_eps) * a)
        if beta > 0 and kl:
            with torch.no_grad():
                ref_logps = response_logps(ref, rollout.prompt_ids, rollout.responses, samples_per_prompt=group_size)
            log_r = ref_logps - logps if kl == "k3" else logps - ref_logps
            per_token = per_token + beta * (torch.exp(log_r) - 1 - log_r)
        mask = rollout.response_mask.float()
        if agg == "answer":
            loss = ((per_token * mask).sum(1) / mask.sum(1)).mean()
        elif agg == "padding":
            loss = per_token.mean(1).mean()
        else:
            loss = (per_token * mask).sum() / mask.sum()
        loss = sign * loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return {"responses": rollout.responses, "rewards": rewards, "advantages": advantages, "loss": loss.item()}

    return step


def stub(*args, **kwargs):
    raise NotImplementedError


def test_right_step_is_correct_in_both_checks():
    assert checks.grpo_step.check(make_step()).passed
    assert checks.grpo_step_kl.check(make_step()).passed
    assert checks.grpo_step.check(solution_step()).passed
    assert checks.grpo_step_kl.check(solution_step()).passed


def test_stub_is_not_attempted_and_strict_mode_raises(monkeypatch):
    assert checks.grpo_step.check(stub).outcome is Outcome.NOT_ATTEMPTED
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(AssertionError, match="Not attempted"):
        checks.grpo_step.check(stub)


@pytest.mark.parametrize(
    "mistake, exercise, stage, words",
    [
        (dict(adv="batch"), "grpo_step", "advantages:", "whole batch"),
        (dict(agg="padding"), "grpo_step", "loss:", "padding"),
        (dict(agg="batch"), "grpo_step", "loss:", "whole batch"),
        (dict(sign=-1.0), "grpo_step", "loss:", "sign"),
        (dict(kl="reversed"), "grpo_step_kl", "KL term:", "wrong way round"),
        (dict(detach=False), "grpo_step", "update:", "detach"),
        (dict(repeat=np.tile), "grpo_step", "scoring:", "own prompt"),
        (dict(temperature=0.7), "grpo_step", "sampling:", "temperature 1"),
    ],
)
def test_each_typical_mistake_is_incorrect_at_its_stage(mistake, exercise, stage, words):
    result = getattr(checks, exercise).check(make_step(**mistake))
    assert result.outcome is Outcome.INCORRECT, result
    assert f": {stage}" in result.message and words in result.message, result.message


def test_step_ignoring_beta_passes_the_step_and_is_not_attempted_for_the_kl():
    assert checks.grpo_step.check(make_step(kl=None)).passed
    result = checks.grpo_step_kl.check(make_step(kl=None))
    assert result.outcome is Outcome.NOT_ATTEMPTED and "ignores beta" in result.message


@pytest.mark.parametrize(
    "bad, outcome, words",
    [
        (lambda out: {**out, "advantages": out["advantages"] * float("nan")}, Outcome.INCORRECT, "NaN"),
        (lambda out: {**out, "advantages": out["advantages"].view(-1, 8)}, Outcome.INCORRECT, "shape"),
        (lambda out: {**out, "loss": float("nan")}, Outcome.INCORRECT, "finite"),
        (lambda out: out["loss"], Outcome.INCORRECT, "return a dict"),
        (lambda out: 1 / 0, Outcome.UNCHECKABLE, "ZeroDivisionError"),
    ],
)
def test_nan_wrong_shape_or_exception_is_one_sentence(bad, outcome, words):
    def step(*args, **kwargs):
        return bad(grpo_step(*args, **kwargs))

    result = checks.grpo_step.check(step)
    assert result.outcome is outcome and words in result.message and "\n" not in result.message, result


def test_train_uses_the_package_step_when_not_attempted(capsys):
    cfg = RLConfig(steps=2)
    run = checks.grpo_step.train(stub, cfg)
    assert "not attempted: showing the reference run" in capsys.readouterr().out
    assert_same_history(run.history, train_rl(cfg, progress=False).history)


def test_train_uses_the_learners_step_when_it_passes(capsys):
    run = checks.grpo_step.train(make_step(), RLConfig(steps=2))
    assert "training with YOUR step" in capsys.readouterr().out
    assert len(run.history) == 2
