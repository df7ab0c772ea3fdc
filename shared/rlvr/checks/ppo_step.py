"""Checker of a learner's PPO pieces (notebook 04): their GAE and value loss plugged into one PPO step of the
package's `rlvr.train.Trainer`, compared with the package's own step stage by stage (advantages, returns, value loss,
the value model's update, the policy's update), naming the first stage that differs and the usual mistake behind it.

Each case first runs one PPO step with the package's pieces on both trainers, so the value model predicts non-zero
values (at step 0 its zero-initialised head predicts exactly 0, and every GAE would look alike); the step after it
uses the learner's pieces on one trainer and the package's on the other.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import torch

from rlvr import objectives
from rlvr.checks.core import Outcome, Question, Result, one_line_error
from rlvr.train import Batch, RLConfig, StepHooks, Trainer, value_loss, warm_start


@dataclass(frozen=True)
class PPOCase:
    """One PPO step: a small batch, few updates, GAE's gamma and lambda, the KL weight of the shaped reward."""

    description: str
    gamma: float = 1.0
    lam: float = 1.0
    beta: float = 0.0
    seed: int = 0

    def config(self) -> RLConfig:
        """The run this case steps (4 prompts x 4 answers, 2 updates per batch)."""
        return RLConfig(
            algo="ppo",
            steps=2,
            prompts_per_step=4,
            group_size=4,
            epochs_per_batch=2,
            gamma=self.gamma,
            lam=self.lam,
            beta=self.beta,
            seed=self.seed,
        )


class Recorder(StepHooks):
    """Keeps the last step's batch (advantages, returns, values) and metrics."""

    def after_advantages(self, batch: Batch) -> None:
        """Copy what the step computed before its updates."""
        self.batch = batch

    def after_step(self, metrics: dict) -> None:
        """Keep the metrics (value_loss: the mean over the step's updates)."""
        self.metrics = metrics


@dataclass
class PPOStep:
    """What the second step of a case did with one set of pieces."""

    batch: Batch
    value_loss: float
    value_params: torch.Tensor  # [n] after the step
    policy_params: torch.Tensor  # [n] after the step


@lru_cache(maxsize=1)
def _start_model():
    """The default warm-up model (cached on disk; notebook 04 has it already)."""
    return warm_start(RLConfig()).model


def _flat(model: torch.nn.Module) -> torch.Tensor:
    """All parameters as one vector."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def run_case(case: PPOCase, gae_fn: Callable = objectives.gae, value_loss_fn: Callable = value_loss) -> PPOStep:
    """Step 0 with the package's pieces, step 1 with the given ones (exceptions propagate)."""
    torch.manual_seed(case.seed)
    recorder = Recorder()
    trainer = Trainer(case.config(), copy.deepcopy(_start_model()), hooks=recorder)
    trainer.step(0)
    trainer.gae_fn, trainer.value_loss_fn = gae_fn, value_loss_fn
    trainer.step(1)
    return PPOStep(recorder.batch, recorder.metrics["value_loss"], _flat(trainer.value), _flat(trainer.policy))


# ----------------------------------------------------------------------------------------------- diagnosis
def _gae_unmasked(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """GAE run over padding as if it were answer tokens."""
    return objectives.gae(rewards, values, torch.ones_like(response_mask), gamma, lam)


def _gae_returns_are_advantages(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Right advantages, but returns = advantages (values not added back)."""
    adv, _ = objectives.gae(rewards, values, response_mask, gamma, lam)
    return adv, adv


GAE_MISTAKES = {
    "padding is treated as answer tokens: multiply by `response_mask` (values, deltas and the running sum)": (
        _gae_unmasked
    ),
    "returns must be advantages + values (the value model's target), not the advantages": _gae_returns_are_advantages,
}
VALUE_LOSS_MISTAKES = {
    "padding is counted: average the squared error over real tokens only (`response_mask`)": lambda v, r, m: (
        (v - r) ** 2
    ).mean(),
    "the package's value loss is the plain mean squared error (no factor 1/2)": lambda v, r, m: (
        0.5 * objectives.masked_mean((v - r) ** 2, m)
    ),
    "a token sum instead of the mean over real tokens": lambda v, r, m: ((v - r) ** 2 * m).sum(),
}


def _first_token(got: torch.Tensor, want: torch.Tensor) -> tuple[int, int]:
    """(answer, token) of the first entry that differs."""
    bad = ~torch.isclose(got, want, rtol=1e-4, atol=1e-5)
    i, t = (int(x) for x in bad.nonzero()[0])
    return i, t


def _tensor_problem(name: str, got, want: torch.Tensor) -> str | None:
    """Shape, finiteness and values of one returned tensor, as one sentence, or None."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape):
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        return f"{name} must be a tensor of shape {tuple(want.shape)} ([B, T]), got {shape}."
    if not torch.isfinite(got).all():
        return f"{name} contain NaN or inf."
    if torch.allclose(got.detach().float(), want, rtol=1e-4, atol=1e-5):
        return None
    i, t = _first_token(got.detach().float(), want)
    return f"{name} differ first at answer {i}, token {t} (yours {float(got[i, t]):.4f})"


def token_rewards(batch: Batch, case: PPOCase) -> torch.Tensor:
    """The per-token rewards GAE received in the package's step (score on the last token, -beta * KL). [B, T]"""
    return objectives.shaped_rewards(batch.rewards, _kl_of(batch), batch.rollout.response_mask, case.beta)


def gae_problem(gae_fn: Callable, reference: PPOStep, case: PPOCase) -> str | None:
    """The learner's GAE on the inputs the package's step gave GAE, against its outputs; names a known mistake."""
    batch = reference.batch
    inputs = (token_rewards(batch, case), batch.values, batch.rollout.response_mask, case.gamma, case.lam)
    out = gae_fn(*inputs)
    if not (isinstance(out, tuple) and len(out) == 2):
        return "GAE: return a tuple (advantages, returns)."
    for name, got, want in (
        ("GAE: the advantages", out[0], batch.advantages),
        ("GAE: the returns", out[1], batch.returns),
    ):
        problem = _tensor_problem(name, got, want)
        if problem:
            for mistake, fn in GAE_MISTAKES.items():
                if all(torch.allclose(x.detach().float(), y, rtol=1e-4, atol=1e-5) for x, y in zip(out, fn(*inputs))):
                    return f"{problem}: {mistake}."
            return (
                f"{problem}. delta_t = r_t + gamma * V_(t+1) - V_t (V = 0 after the last real token), "
                "A_t = delta_t + gamma * lam * A_(t+1) from the last token backwards, returns = A + V, all "
                "0 on padding."
            )
    return None


def _kl_of(batch: Batch) -> torch.Tensor:
    """The per-token KL the shaped reward used (k1 of the sampling log-probs; 0 without beta). [B, T]"""
    if batch.ref_logps is None:
        return torch.zeros_like(batch.rollout.logps)
    return batch.rollout.logps - batch.ref_logps


def value_loss_problem(reference: PPOStep, value_loss_fn: Callable) -> str | None:
    """The learner's value loss on the package's values and returns: a scalar with a graph, of the right value."""
    batch = reference.batch
    values = batch.values.clone().requires_grad_(True)  # [B, T]
    returns, mask = batch.returns, batch.rollout.response_mask
    got = value_loss_fn(values, returns, mask)
    if not isinstance(got, torch.Tensor) or got.numel() != 1:
        return "value loss: return one scalar tensor (the loss), not " + type(got).__name__ + "."
    if not torch.isfinite(got).all():
        return f"value loss: {got.item()} (not a finite number)."
    if got.grad_fn is None:
        return (
            "value loss: it is detached from the values (no gradient can reach the value model): avoid .item(), "
            ".detach() and torch.tensor(...) inside it."
        )
    got_value = got.item()  # the graph was checked above; the value alone is compared below
    want = float(value_loss(values.detach(), returns, mask))
    if math.isclose(got_value, want, rel_tol=1e-4, abs_tol=1e-7):
        return None
    for mistake, fn in VALUE_LOSS_MISTAKES.items():
        if math.isclose(got_value, float(fn(values.detach(), returns, mask)), rel_tol=1e-4, abs_tol=1e-7):
            return f"value loss: {mistake}."
    return (
        f"value loss: yours is {got_value:.4g} on these values and returns; the mean of (values - returns)^2 "
        "over the real tokens differs."
    )


def update_problem(mine: PPOStep, reference: PPOStep) -> str | None:
    """The value model's and the policy's parameters after the step."""
    for name, got, want in (
        ("the value model", mine.value_params, reference.value_params),
        ("the policy", mine.policy_params, reference.policy_params),
    ):
        gap = float((got - want).norm() / want.norm())
        if gap > 1e-4:
            return (
                f"update: {name}'s parameters differ after the step (relative difference {gap:.2g}) although the "
                "advantages, returns and value loss agree: does one of your functions change its inputs in place?"
            )
    return None


def diagnose(case: PPOCase, gae_fn: Callable, value_loss_fn: Callable) -> str | None:
    """The first stage where the step with the learner's pieces differs from the package's, or None."""
    reference = run_case(case)
    return (
        gae_problem(gae_fn, reference, case)
        or value_loss_problem(reference, value_loss_fn)
        or update_problem(run_case(case, gae_fn, value_loss_fn), reference)
    )


class PPOPiecesExercise(Question):
    """`check(my_gae, my_value_loss)`: both plugged into one PPO step of the package, on a few cases."""

    def __init__(self, name: str, cases: list[PPOCase], hint: str = "", solution: str = ""):
        super().__init__(name, hint, solution)
        self.cases = list(cases)

    def check(self, gae_fn: Callable, value_loss_fn: Callable) -> Result:
        """A Result (and AssertionError in strict mode unless correct)."""
        return self.checked(lambda: self._evaluate(gae_fn, value_loss_fn))

    def _evaluate(self, gae_fn: Callable, value_loss_fn: Callable) -> Result:
        """The first case whose step differs decides; all agree: correct."""
        if not (callable(gae_fn) and callable(value_loss_fn)):
            return Result(self.name, Outcome.UNCHECKABLE, "check() needs your two functions: (my_gae, my_value_loss).")
        for case in self.cases:
            try:
                problem = diagnose(case, gae_fn, value_loss_fn)
            except NotImplementedError:
                return Result(self.name, Outcome.NOT_ATTEMPTED, "replace `raise NotImplementedError` with your code.")
            except KeyboardInterrupt:
                raise
            except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
                return Result(
                    self.name,
                    Outcome.UNCHECKABLE,
                    f"case `{case.description}`: your function raised {one_line_error(error)}",
                )
            if problem:
                return Result(self.name, Outcome.INCORRECT, f"case `{case.description}`: {problem}")
        return Result(
            self.name,
            Outcome.CORRECT,
            f"passed {len(self.cases)} of {len(self.cases)} cases: the same advantages, returns, value loss "
            "and updates of the value model and the policy as the package's PPO step.",
        )
