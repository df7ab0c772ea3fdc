"""`rlvr.grpo_step` (one GRPO step as a function, and a loop around any such function) and notebook 03's checker of a
learner's whole step: the package's step follows train_rl up to float rounding; a learner's plain step
(`response_logps` over every answer, no skip rule) agrees with it within float tolerance and passes the check; each
typical mistake is reported at the stage it breaks, with the mistake named; `train` never trains anything in an
unfinished step's name."""

import functools
import time

import numpy as np
import pytest
import torch

from rlvr import task
from rlvr.checks import Outcome
from rlvr.checks import nb03 as checks
from rlvr.checks import step as step_checker
from rlvr.config import STRICT_ENV
from rlvr.grpo_step import StepError, grpo_step, identical_steps, train_with_step
from rlvr.model import response_logps, sample, update_logps
from rlvr.train import RLConfig, train_rl, warm_start

from notebook_code import solution_functions


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


def solution_k3():
    """`my_kl_k3` as written in the solution notebook (Exercise 7(b), section 8)."""
    return solution_functions("03_grpo.ipynb", "def my_kl_k3", {"torch": torch})["my_kl_k3"]


def flat(model) -> torch.Tensor:
    """All parameters as one vector."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_the_package_step_follows_the_trainer_up_to_float_rounding(beta):
    """grpo_step (every answer through the model, as a learner writes it) and Trainer.step (groups whose advantages
    are all 0 left out without a KL term: the speed trick) on the same first step: the same answers and rewards, the
    same loss and the same update up to float rounding, the tolerance the checker allows a learner's step."""
    cfg = RLConfig(steps=1, beta=beta, seed=5)
    start = flat(warm_start(cfg).model)
    package, looped = train_rl(cfg, progress=False), train_with_step(grpo_step, cfg)
    for key in ("reward", "accuracy", "cot_fraction", "all_same_group_fraction", "mean_length"):
        assert looped.history[0][key] == package.history[0][key], key
    assert looped.history[0]["loss"] == pytest.approx(package.history[0]["loss"], rel=1e-5, abs=1e-7)
    mine, theirs = flat(looped.policy) - start, flat(package.policy) - start
    assert float((mine - theirs).norm() / theirs.norm()) < 1e-3
    assert package.history[0]["all_same_group_fraction"] > 0  # the trick had groups to leave out


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_a_plain_step_agrees_with_the_package_within_float_tolerance(beta):
    """The learner's plain step (response_logps over every answer) and the package's (all-0 groups skipped) on the
    same first step: the same answers and rewards, the same loss, the same update up to float rounding."""
    cfg = RLConfig(steps=1, beta=beta, seed=0)
    start = flat(warm_start(cfg).model)
    mine, package = train_with_step(make_step(), cfg), train_with_step(grpo_step, cfg)
    for key in ("reward", "accuracy", "cot_fraction"):
        assert mine.history[0][key] == package.history[0][key]
    assert mine.history[0]["loss"] == pytest.approx(package.history[0]["loss"], abs=1e-6)
    mine_update, package_update = flat(mine.policy) - start, flat(package.policy) - start
    assert float((mine_update - package_update).norm() / package_update.norm()) < 1e-3


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
def make_step(
    adv="group",
    agg="answer",
    sign=1.0,
    kl="k3",
    detach=True,
    repeat=np.repeat,
    temperature=1.0,
    zero_grad=True,
    backward=True,
    optimizer_step=True,
    own_optimizer=None,
    kl_model="ref",
    kl_outside="",
):
    """A learner's step with one knob per typical mistake (the defaults are right)."""

    def step(policy, ref, optimizer, prompts, generator, group_size=8, beta=0.0, eps=1e-4, clip_eps=0.2):
        rollout = sample(policy, task.prompt_tokens(prompts), temperature, generator=generator, group_size=group_size)
        digits = repeat(prompts, group_size, axis=0) if repeat is np.repeat else np.tile(prompts, (group_size, 1))
        rewards = task.score_batch(torch.as_tensor(digits), rollout.responses)["reward"]
        r = rewards.view(-1, group_size)
        if adv == "batch":
            advantages = (rewards - rewards.mean()) / (rewards.std(correction=0) + eps)
        else:
            advantages = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True, correction=0) + eps)).reshape(-1)
        logps = response_logps(policy, rollout.prompt_ids, rollout.responses, group_size=group_size)
        if detach == "new":
            ratio = torch.exp(logps.detach() - logps)  # the wrong tensor detached
        else:
            ratio = torch.exp(logps - (logps.detach() if detach else logps))
        a = advantages[:, None]
        per_token = -torch.minimum(ratio * a, ratio.clamp(1 - clip_eps, 1 + clip_eps) * a)
        if beta > 0 and kl:
            with torch.no_grad():
                frozen = ref if kl_model == "ref" else policy  # "policy": a KL against the policy itself
                ref_logps = response_logps(frozen, rollout.prompt_ids, rollout.responses, group_size=group_size)
            log_r = ref_logps - logps if kl == "k3" else logps - ref_logps
            if not kl_outside:
                per_token = per_token + beta * (torch.exp(log_r) - 1 - log_r)
        mask = rollout.response_mask.float()
        if agg == "answer":
            loss = ((per_token * mask).sum(1) / mask.sum(1)).mean()
        elif agg == "padding":
            loss = per_token.mean(1).mean()
        else:
            loss = (per_token * mask).sum() / mask.sum()
        if beta > 0 and kl and kl_outside == "every position":  # the KL's own mean, padding included
            loss = loss + beta * (torch.exp(log_r) - 1 - log_r).mean()
        loss = sign * loss
        opt = optimizer if own_optimizer is None else own_optimizer(policy.parameters())
        if zero_grad:
            opt.zero_grad()
        if backward:
            loss.backward()
        if optimizer_step:
            opt.step()
        return {"responses": rollout.responses, "rewards": rewards, "advantages": advantages, "loss": loss.item()}

    return step


def stub(*args, **kwargs):
    raise NotImplementedError


def test_right_step_is_correct_in_both_checks():
    assert checks.grpo_step.check(make_step()).passed
    assert checks.grpo_step_kl.check(make_step()).passed
    assert checks.grpo_step.check(solution_step()).passed
    assert checks.grpo_step_kl.check(functools.partial(solution_step(), kl_per_token=solution_k3())).passed


def test_the_solution_step_without_a_penalty_function_fails_the_kl_check_in_one_line():
    """The notebook passes its k3 function to the step (functools.partial); forgetting it is named, not a crash."""
    result = checks.grpo_step_kl.check(solution_step())
    assert result.outcome is Outcome.UNCHECKABLE and "NoneType" in result.message and "\n" not in result.message


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
        (dict(detach="new"), "grpo_step", "loss:", "numerator is detached"),
        (dict(zero_grad=False), "grpo_step", "update:", "never cleared"),
        (dict(backward=False), "grpo_step", "update:", "backward pass of the loss is missing"),
        (dict(optimizer_step=False), "grpo_step", "update:", "optimizer's step is missing"),
        (dict(own_optimizer=lambda p: torch.optim.Adam(p, lr=1e-4)), "grpo_step", "update:", "your own optimizer"),
        (dict(own_optimizer=lambda p: torch.optim.SGD(p, lr=0.5)), "grpo_step", "update:", "your own optimizer"),
        (dict(kl_model="policy"), "grpo_step_kl", "KL term:", "against itself"),
        (dict(kl="k1"), "grpo_step_kl", "KL term:", "wrong way round"),
        (dict(kl_outside="every position"), "grpo_step_kl", "KL term:", "padding included"),
        (dict(repeat=np.tile), "grpo_step", "scoring:", "own prompt"),
        (dict(temperature=0.7), "grpo_step", "sampling:", "temperature 1"),
    ],
)
def test_each_typical_mistake_is_incorrect_at_its_stage(mistake, exercise, stage, words):
    result = getattr(checks, exercise).check(make_step(**mistake))
    assert result.outcome is Outcome.INCORRECT, result
    assert f": {stage}" in result.message and words in result.message, result.message


@pytest.mark.parametrize("mistake", [dict(backward=False), dict(optimizer_step=False)], ids=["no-backward", "no-step"])
def test_a_missing_backward_or_step_is_not_blamed_on_detach(mistake):
    """Both leave the parameters where they were, like a ratio whose gradient is 0; they are ruled out first."""
    message = checks.grpo_step.check(make_step(**mistake)).message
    assert "detach" not in message and "call 1 of 2" in message


def test_a_missing_zero_grad_shows_on_the_second_call():
    message = checks.grpo_step.check(make_step(zero_grad=False)).message
    assert "call 2 of 2" in message and "PLUS the previous step's" in message


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


def test_the_checks_call_the_step_twice_per_case():
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return make_step()(*args, **kwargs)

    assert checks.grpo_step.check(counted).passed
    assert len(calls) == 2 * len(checks.grpo_step.cases)


def test_a_sleeping_step_is_stopped(monkeypatch):
    monkeypatch.setattr(step_checker, "STEP_LIMIT_S", 1.0)

    def sleeps(*args, **kwargs):
        time.sleep(30)

    start = time.perf_counter()
    result = checks.grpo_step.check(sleeps)
    assert result.outcome is Outcome.UNCHECKABLE and "did not finish within 1 s" in result.message
    assert time.perf_counter() - start < 20


def test_a_printing_step_passes_with_its_output_summarised(capsys):
    def chatty(*args, **kwargs):
        for i in range(5000):
            print("debug", i)
        return make_step()(*args, **kwargs)

    result = checks.grpo_step.check(chatty)
    assert result.passed and "printed 5000 lines (the first 3 shown)" in result.message
    assert capsys.readouterr().out == ""


def test_an_exiting_step_is_reported():
    def exits(*args, **kwargs):
        raise SystemExit(1)

    result = checks.grpo_step.check(exits)
    assert result.outcome is Outcome.UNCHECKABLE and "exit()" in result.message


@pytest.mark.parametrize("args", [(), (stub, stub)], ids=["no-function", "two-functions"])
def test_a_wrong_call_of_check_is_one_sentence(args):
    result = checks.grpo_step.check(*args)
    assert result.outcome is Outcome.UNCHECKABLE and "needs 1 function" in result.message


def no_training(*args, **kwargs):
    """Stands in for the training loop where nothing may be trained."""
    raise AssertionError("trained something in the learner's name")


def test_train_trains_nothing_when_not_attempted(monkeypatch, capsys):
    monkeypatch.setattr("rlvr.grpo_step.train_with_step", no_training)
    package = train_rl(RLConfig(steps=2), progress=False)
    run = checks.grpo_step.train(stub, RLConfig(steps=2), reference=package)
    out = capsys.readouterr().out
    assert "Not attempted" in out and "labelled as the package's" in out
    assert run.yours is False and run.label == "the package's step" and not run.attempted
    assert run.history is package.history and run.policy is package.policy


def test_train_without_a_reference_loads_the_package_run(monkeypatch):
    monkeypatch.setattr("rlvr.grpo_step.train_with_step", no_training)
    package = train_rl(RLConfig(steps=2), progress=False)
    monkeypatch.setattr(step_checker, "package_run", lambda cfg: package)
    run = checks.grpo_step.train(make_step(sign=-1.0), RLConfig(steps=2))
    assert run.yours is False and run.outcome is Outcome.INCORRECT and run.history is package.history


def test_train_uses_the_learners_step_when_it_passes(capsys):
    run = checks.grpo_step.train(make_step(), RLConfig(steps=2))
    out = capsys.readouterr().out
    assert "training with YOUR step" in out and "identical" not in out and "bit" not in out
    assert run.yours is True and run.label == "your step" and len(run.history) == 2


def test_a_step_failing_during_training_falls_back_to_the_package_run_labelled_as_such(monkeypatch, capsys):
    package = train_rl(RLConfig(steps=2), progress=False)
    right = make_step()

    def fails_on_the_training_batch(policy, ref, optimizer, prompts, generator, **kwargs):
        if len(prompts) == RLConfig().prompts_per_step:  # the checks use 6 and 5 prompts
            raise ValueError("boom")
        return right(policy, ref, optimizer, prompts, generator, **kwargs)

    run = checks.grpo_step.train(fails_on_the_training_batch, RLConfig(steps=2), reference=package)
    out = capsys.readouterr().out
    assert "failed while training (step 1: it raised ValueError: boom)" in out
    assert run.yours is False and run.history is package.history
