"""Checker of a learner's PPO pieces (notebook 04): their GAE and value loss plugged into one PPO step of the package's
`rlvr.train.Trainer`, compared with the package's own step stage by stage (advantages, returns, value loss,
the value model's update, the policy's update), naming the first stage that differs and the usual mistake behind it.

Each case first runs one PPO step with the package's pieces, so the value model predicts non-zero values (at step 0
its zero-initialised head predicts exactly 0, and every GAE would look alike); the step after it uses the learner's
pieces on one trainer and the package's on the other.

The learner's functions are first called on their own, on copies of the inputs the package's step gave its pieces,
with the expected outputs computed BEFORE the call: a function that edits its inputs in place is told so, and it
cannot change what it is compared with. Every call is guarded (time limit, output kept short, any exception caught);
an error in the checker's own code is reported as the checker's ("Could not check: internal checker error").
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import torch

from rlvr import objectives
from rlvr.checks.compare import DEFAULT_ATOL, DEFAULT_RTOL
from rlvr.checks.core import MISSING, NOT_ATTEMPTED_MESSAGE, Outcome, Question, Result, call_problem, changed_inputs
from rlvr.checks.guard import Call, call_guarded, describe, failure_sentence, with_printed
from rlvr.i18n import N_, _
from rlvr.train import Batch, RLConfig, StepHooks, Trainer, value_loss, warm_start

PIECE_LIMIT_S = 10.0  # per call of a learner's GAE or value loss (milliseconds when right)
TOL = dict(rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL)  # compare.py owns the tolerances


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
        """Keep what the step computed before its updates."""
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


class LearnerFailure(BaseException):
    """A learner's piece raised or ran out of time inside the package's step (carries the guarded Call)."""

    def __init__(self, call: Call, what: str):
        super().__init__(what)
        self.call, self.what = call, what


def guarded(fn: Callable, what: str) -> Callable:
    """`fn` run under the time limit with its output captured; a failure raises LearnerFailure."""

    def wrapper(*args, **kwargs):
        call = call_guarded(fn, args, kwargs, PIECE_LIMIT_S)
        if call.error is not None:
            raise LearnerFailure(call, what)
        return call.value

    return wrapper


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


@lru_cache(maxsize=4)
def reference_step(case: PPOCase) -> PPOStep:
    """The package's step of a case (cached: deterministic)."""
    return run_case(case)


# ----------------------------------------------------------------------------------------------- GAE's mistakes
def _gae_loop(rewards, values, mask, gamma, lam, next_from="masked", recursion=None, forwards=False):
    """GAE with knobs for the usual slips (the defaults are right): `next_from` 'masked' (V after the last real token
    is 0) or 'raw' (values not masked), or 'current' (V_t used for V_(t+1)); `recursion` the factor of A_(t+1)."""
    mask = mask.to(rewards.dtype)  # [B, T]
    masked = values * mask
    bootstrap = values if next_from == "raw" else masked
    factor = gamma * lam if recursion is None else recursion
    advantages = torch.zeros_like(rewards)  # [B, T]
    running = torch.zeros_like(rewards[:, 0])  # [B]
    T = rewards.shape[1]
    for t in range(T) if forwards else reversed(range(T)):
        if next_from == "current":
            next_value = masked[:, t]
        elif forwards:
            next_value = bootstrap[:, t - 1] if t > 0 else torch.zeros_like(running)
        else:
            next_value = bootstrap[:, t + 1] if t + 1 < T else torch.zeros_like(running)
        delta = rewards[:, t] + gamma * next_value - masked[:, t]
        running = (delta + factor * running) * mask[:, t]
        advantages[:, t] = running
    return advantages, (advantages + masked) * mask


def _reward_to_go(rewards, mask, gamma):
    """Discounted sum of the rewards from each token to the end of its answer. [B, T]."""
    mask = mask.to(rewards.dtype)
    out, running = torch.zeros_like(rewards), torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        running = (rewards[:, t] + gamma * running) * mask[:, t]
        out[:, t] = running
    return out


def _returns_with(fn):
    """A GAE whose advantages are right and whose returns are fn(advantages, values, mask)."""

    def gae(rewards, values, mask, gamma=1.0, lam=1.0):
        advantages, _ = objectives.gae(rewards, values, mask, gamma, lam)
        return advantages, fn(advantages, values, mask.to(values.dtype))

    return gae


GAE_MISTAKES = {  # name: (sentence naming it and what to change, translated where shown; the wrong GAE)
    "unmasked": (
        N_(
            "padding is treated as answer tokens: the recursion runs through the padding after each answer. Set "
            "values, deltas and advantages to 0 on padding, so each answer's recursion starts at its last real token."
        ),
        lambda r, v, m, gamma=1.0, lam=1.0: objectives.gae(r, v, torch.ones_like(m), gamma, lam),
    ),
    "returns_are_advantages": (
        N_("your returns are the advantages; the value model's target is the advantages PLUS the values."),
        _returns_with(lambda a, v, m: a),
    ),
    "returns_reward_to_go": (
        N_(
            "your returns are the discounted sums of the rewards to come (Monte-Carlo returns); PPO's value target "
            "here is the GAE advantage plus the value, which equals them only when lambda is 1."
        ),
        lambda r, v, m, gamma=1.0, lam=1.0: (objectives.gae(r, v, m, gamma, lam)[0], _reward_to_go(r, m, gamma)),
    ),
    "returns_unmasked": (
        N_(
            "your returns are not 0 on padding: the values there were added back. Mask the returns (or the values) so "
            "that padding gets 0."
        ),
        _returns_with(lambda a, v, m: a + v),
    ),
    "forwards": (
        N_(
            "you run the recursion forwards, from the first token; GAE runs backwards, from the last token, so that "
            "each advantage includes what comes AFTER its token."
        ),
        lambda r, v, m, gamma=1.0, lam=1.0: _gae_loop(r, v, m, gamma, lam, forwards=True),
    ),
    "no_gamma": (
        N_(
            "gamma is missing (you discount by 1). Multiply the next value by gamma in the one-step error, and the "
            "next advantage by gamma times lambda."
        ),
        lambda r, v, m, gamma=1.0, lam=1.0: objectives.gae(r, v, m, 1.0, lam),
    ),
    "no_lambda": (
        N_(
            "lambda is missing (you use 1: Monte-Carlo advantages). The next token's advantage is weighed by gamma "
            "TIMES lambda."
        ),
        lambda r, v, m, gamma=1.0, lam=1.0: objectives.gae(r, v, m, gamma, 1.0),
    ),
    "gamma_lam_swapped": (
        N_(
            "gamma and lambda are swapped: the one-step error discounts the next value by gamma alone; lambda only "
            "weighs the next advantage, together with gamma."
        ),
        lambda r, v, m, gamma=1.0, lam=1.0: objectives.gae(r, v, m, lam, gamma),
    ),
    "recursion_lambda_only": (
        N_("the recursion weighs the next advantage by lambda alone; it is gamma times lambda."),
        lambda r, v, m, gamma=1.0, lam=1.0: _gae_loop(r, v, m, gamma, lam, recursion=lam),
    ),
    "bootstrap_from_padding": (
        N_(
            "off by one at the end of each answer: after its last real token you bootstrap from the value the model "
            "predicts on the padding; the value after the last real token is 0."
        ),
        lambda r, v, m, gamma=1.0, lam=1.0: _gae_loop(r, v, m, gamma, lam, next_from="raw"),
    ),
    "next_value_is_current": (
        N_("off by one: the one-step error uses this token's value where the NEXT token's value belongs (V at t + 1)."),
        lambda r, v, m, gamma=1.0, lam=1.0: _gae_loop(r, v, m, gamma, lam, next_from="current"),
    ),
}

VALUE_LOSS_MISTAKES = {  # name: (sentence, translated where shown; the wrong value loss)
    "padding": (
        N_("padding is counted: average the squared error over the real tokens only (the response mask)."),
        lambda v, r, m: ((v - r) ** 2).mean(),
    ),
    "half": (
        N_("the package's value loss is the plain mean squared error (no factor 1/2)."),
        lambda v, r, m: 0.5 * objectives.masked_mean((v - r) ** 2, m),
    ),
    "token_sum": (
        N_("you sum the squared errors instead of averaging them over the real tokens."),
        lambda v, r, m: ((v - r) ** 2 * m).sum(),
    ),
    "per_answer_mean": (
        N_(
            "you average each answer's tokens first, then the answers; the value loss is one mean over all the real "
            "tokens of the batch."
        ),
        lambda v, r, m: (((v - r) ** 2 * m).sum(dim=1) / m.float().sum(dim=1)).mean(),
    ),
    "all_positions": (
        N_(
            "you divide the sum over the real tokens by every position, padding included; divide by the number of real "
            "tokens."
        ),
        lambda v, r, m: ((v - r) ** 2 * m).sum() / m.numel(),
    ),
    "absolute_error": (
        N_("you average the ABSOLUTE error; the value loss is the mean SQUARED error."),
        lambda v, r, m: objectives.masked_mean((v - r).abs(), m),
    ),
    "root_mean_square": (
        N_("you return the root of the mean squared error; the loss is the mean squared error itself."),
        lambda v, r, m: objectives.masked_mean((v - r) ** 2, m).sqrt(),
    ),
}


def token_rewards(batch: Batch, case: PPOCase) -> torch.Tensor:
    """The per-token rewards GAE received in the package's step (score on the last token, -beta * KL). [B, T]"""
    return objectives.shaped_rewards(batch.rewards, _kl_of(batch), batch.rollout.response_mask, case.beta)


def _kl_of(batch: Batch) -> torch.Tensor:
    """The per-token KL the shaped reward used (k1 of the sampling log-probs; 0 without beta). [B, T]"""
    if batch.ref_logps is None:
        return torch.zeros_like(batch.rollout.logps)
    return batch.rollout.logps - batch.ref_logps


def _close(got, want: torch.Tensor) -> bool:
    """`got` is a tensor of want's shape with the same values."""
    return (
        isinstance(got, torch.Tensor)
        and tuple(got.shape) == tuple(want.shape)
        and bool(torch.allclose(got.detach().double(), want.double(), **TOL))
    )


def _first_token(got: torch.Tensor, want: torch.Tensor) -> tuple[int, int]:
    """(answer, token) of the first entry that differs."""
    bad = ~torch.isclose(got.detach().double(), want.double(), **TOL)
    i, t = (int(x) for x in bad.nonzero()[0])
    return i, t


def _output_problem(name: str, got, want: torch.Tensor) -> str | None:
    """Type, shape, dtype and finiteness of one returned tensor, as a sentence, or None (values compared later)."""
    name = _(name)
    if isinstance(got, np.ndarray):
        same = got.shape == tuple(want.shape) and np.allclose(got, want.numpy(), **TOL)
        if same:
            return _("{name} are a numpy array (with the right values): return torch tensors.").format(name=name)
        return _("{name} are a numpy array: return torch tensors.").format(name=name)
    if not isinstance(got, torch.Tensor):
        text = _("{name} must be a torch tensor of shape {shape} ([B, T]), got {what}.")
        return text.format(name=name, shape=tuple(want.shape), what=describe(got))
    if tuple(got.shape) == tuple(want.T.shape) and tuple(got.shape) != tuple(want.shape):
        text = _("{name} have shape {shape}, [T, B]: the answers must be the first axis, [B, T] {want}.")
        return text.format(name=name, shape=tuple(got.shape), want=tuple(want.shape))
    if tuple(got.shape) != tuple(want.shape):
        text = _("{name} must have shape {want} ([B, T]), got {shape}.")
        return text.format(name=name, want=tuple(want.shape), shape=tuple(got.shape))
    if not got.is_floating_point():
        return _("{name} have dtype {dtype}: return floating-point tensors.").format(name=name, dtype=got.dtype)
    if not torch.isfinite(got).all():
        return _("{name} contain NaN or inf.").format(name=name)
    return None


def _values_problem(name: str, got: torch.Tensor, want: torch.Tensor) -> str | None:
    """Where two [B, T] tensors first differ, with expected against got, or None."""
    if _close(got, want):
        return None
    name = _(name)
    if want.dim() == 2 and want.shape[0] == want.shape[1] and _close(got.T, want):
        return _("{name} are transposed ([T, B]): the answers must be the first axis.").format(name=name)
    i, t = _first_token(got, want)
    text = _("{name} differ first at answer {i}, token {t}: expected {want}, got {got}")
    return text.format(name=name, i=i, t=t, want=f"{float(want[i, t]):.4f}", got=f"{float(got[i, t]):.4f}")


def gae_problem(gae_fn: Callable, reference: PPOStep, case: PPOCase) -> tuple[str | None, Call | None]:
    """(the learner's GAE on the inputs the package's step gave GAE, against its outputs, as a sentence or None;
    the Call if the function failed)."""
    batch = reference.batch
    inputs = (token_rewards(batch, case), batch.values, batch.rollout.response_mask, case.gamma, case.lam)
    want = (batch.advantages.clone(), batch.returns.clone())  # before the call
    given = copy.deepcopy(inputs)
    call = call_guarded(gae_fn, given, None, PIECE_LIMIT_S)
    if call.error is not None:
        return None, call
    out = call.value
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        text = _("GAE: return a tuple (advantages, returns), got {what}.").format(what=describe(out))
        return with_printed(text, call), None
    names = (N_("GAE: the advantages"), N_("GAE: the returns"))
    for name, got, expected in zip(names, out, want):
        problem = _output_problem(name, got, expected)
        if problem:
            return with_printed(problem, call), None
    changed = changed_inputs((inputs, {}), (given, {}), ["rewards", "values", "response_mask"])
    for name, got, expected in zip(names, out, want):
        problem = _values_problem(name, got, expected)
        if problem:
            return with_printed(_name_gae_mistake(problem, out, inputs), call), None
    if changed:
        return with_printed(_in_place(N_("your GAE"), changed), call), None
    return None, None


def _name_gae_mistake(problem: str, out, inputs) -> str:
    """`problem` followed by the library's sentence if the learner's outputs equal one wrong GAE's."""
    for sentence, fn in GAE_MISTAKES.values():
        theirs = fn(*copy.deepcopy(inputs))
        if all(_close(x, y) for x, y in zip(out, theirs)):
            return _("{problem}: {sentence}").format(problem=problem, sentence=_(sentence))
    return _(
        "{problem}. delta_t = r_t + gamma * V_(t+1) - V_t (V = 0 after the last real token), "
        "A_t = delta_t + gamma * lam * A_(t+1) from the last token backwards, returns = A + V, all 0 on padding."
    ).format(problem=problem)


def _in_place(what: str, names: list[str]) -> str:
    """The sentence for a piece that changed its inputs."""
    listed = ", ".join(f"`{n}`" for n in names)
    return _(
        "{what} changes its input {listed} in place: the PPO step uses those tensors again afterwards (the next "
        "update reads them), so the run changes. Build new tensors instead of writing into the inputs."
    ).format(what=_(what), listed=listed)


def value_loss_problem(reference: PPOStep, value_loss_fn: Callable) -> tuple[str | None, Call | None]:
    """The learner's value loss on the package's values and returns: a scalar with a graph, of the right value
    (computed BEFORE the call, on copies), inputs left as they were. (sentence or None, the Call if it failed)."""
    batch = reference.batch
    values, returns, mask = batch.values.detach().clone(), batch.returns.clone(), batch.rollout.response_mask.clone()
    want = float(value_loss(values, returns, mask))  # before the call
    given_values = values.clone().requires_grad_(True)  # [B, T]
    given = (given_values, returns.clone(), mask.clone())
    call = call_guarded(value_loss_fn, given, None, PIECE_LIMIT_S)
    if call.error is not None:
        return None, call
    got = call.value
    if not isinstance(got, torch.Tensor) or got.numel() != 1:
        if isinstance(got, torch.Tensor):
            shape = _("a tensor of shape {shape}").format(shape=tuple(got.shape))
        else:
            shape = describe(got)
        text = _("value loss: return one scalar tensor (the loss), not {what}.").format(what=shape)
        return with_printed(text, call), None
    if not torch.isfinite(got).all():
        text = _("value loss: {value} (not a finite number).").format(value=got.item())
        return with_printed(text, call), None
    if got.grad_fn is None:
        text = _(
            "value loss: it is detached from the values (no gradient can reach the value model): avoid .item(), "
            ".detach() and torch.tensor(...) inside it."
        )
        return with_printed(text, call), None
    got_value = float(got.detach())
    changed = changed_inputs(((values, returns, mask), {}), (given, {}), ["values", "returns", "response_mask"])
    if changed:
        right = math.isclose(got_value, want, rel_tol=1e-4, abs_tol=1e-7)
        text = _in_place(N_("your value loss"), changed)
        if right:
            text = _("{sentence} (Its value is right.)").format(sentence=text)
        return with_printed(text, call), None
    if math.isclose(got_value, want, rel_tol=1e-4, abs_tol=1e-7):
        return None, None
    shown = _("expected {want}, got {got}").format(want=f"{want:.4g}", got=f"{got_value:.4g}")
    for sentence, fn in VALUE_LOSS_MISTAKES.values():
        if math.isclose(got_value, float(fn(values, returns, mask)), rel_tol=1e-4, abs_tol=1e-7):
            text = _("value loss: {sentence} On these values and returns: {shown}.")
            return with_printed(text.format(sentence=_(sentence), shown=shown), call), None
    text = _(
        "value loss: on these values and returns, {shown}; the mean of (values - returns)^2 over the real tokens "
        "differs."
    )
    return with_printed(text.format(shown=shown), call), None


def update_problem(mine: PPOStep, reference: PPOStep) -> str | None:
    """The value model's and the policy's parameters after the step."""
    for text, got, want in (
        (
            N_(
                "update: the value model's parameters differ after the step (relative difference {gap}) although the "
                "advantages, returns and value loss agree: does one of your functions keep state between calls, or "
                "change a tensor it returned or received?"
            ),
            mine.value_params,
            reference.value_params,
        ),
        (
            N_(
                "update: the policy's parameters differ after the step (relative difference {gap}) although the "
                "advantages, returns and value loss agree: does one of your functions keep state between calls, or "
                "change a tensor it returned or received?"
            ),
            mine.policy_params,
            reference.policy_params,
        ),
    ):
        gap = float((got - want).norm() / want.norm())
        if gap > 1e-4:
            return _(text).format(gap=f"{gap:.2g}")
    return None


def diagnose(case: PPOCase, gae_fn: Callable, value_loss_fn: Callable) -> tuple[str | None, Call | None, str]:
    """(the first stage where the step with the learner's pieces differs from the package's, or None; the Call of a
    learner's function that failed, or None; which function that was)."""
    reference = reference_step(case)
    problem, failed = gae_problem(gae_fn, reference, case)
    if problem or failed:
        return problem, failed, N_("your GAE")
    problem, failed = value_loss_problem(reference, value_loss_fn)
    if problem or failed:
        return problem, failed, N_("your value loss")
    try:
        mine = run_case(case, guarded(gae_fn, N_("your GAE")), guarded(value_loss_fn, N_("your value loss")))
    except LearnerFailure as failure:
        return None, failure.call, failure.what
    return update_problem(mine, reference), None, ""


class PPOPiecesExercise(Question):
    """`check(my_gae, my_value_loss)`: both plugged into one PPO step of the package, on a few cases."""

    def __init__(self, name: str, cases: list[PPOCase], hint="", solution: str = ""):
        super().__init__(name, hint, solution)
        self.cases = list(cases)

    def check(self, gae_fn: Callable = MISSING, value_loss_fn: Callable = MISSING, *more) -> Result:
        """A Result (and AssertionError in strict mode unless correct)."""
        return self.checked(lambda: self._evaluate(gae_fn, value_loss_fn, *more))

    def _evaluate(self, gae_fn: Callable = MISSING, value_loss_fn: Callable = MISSING, *more) -> Result:
        """The first case whose step differs decides; all agree: correct."""
        problem = call_problem(
            (gae_fn, value_loss_fn, *more), [N_("your GAE"), N_("your value loss")], "check(my_gae, my_value_loss)"
        )
        if problem:
            return Result(self.name, Outcome.UNCHECKABLE, problem)
        for case in self.cases:
            problem, failed, what = diagnose(case, gae_fn, value_loss_fn)
            if failed is not None and failed.not_attempted:
                return Result(self.name, Outcome.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE)
            if failed is not None:
                message = _("case `{case}`: {failure}").format(
                    case=_(case.description), failure=failure_sentence(failed, what)
                )
                return Result(self.name, Outcome.UNCHECKABLE, message)
            if problem:
                message = _("case `{case}`: {failure}").format(case=_(case.description), failure=problem)
                return Result(self.name, Outcome.INCORRECT, message)
        message = _(
            "passed {n} of {total} cases: the same advantages, returns, value loss and updates of the value model and "
            "the policy as the package's PPO step."
        ).format(n=len(self.cases), total=len(self.cases))
        return Result(self.name, Outcome.CORRECT, message)
