"""Checker of a learner's whole GRPO step (notebook 03): it runs the learner's function and the package's
`rlvr.grpo_step.grpo_step` on the same model, prompts and random generator, then compares them stage by stage
(what was sampled, the rewards, the advantages, the loss, the parameter update) and names the first stage that
differs, on its first differing example, and, where it can, the usual mistake that explains it.

The update is compared through plain SGD with learning rate 1 (the parameter change is then minus the gradient), so
a loss with the right value but the wrong gradient (padding in the mean, old log-probs not detached) is caught too.
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
from rlvr.checks.core import Outcome, Question, Result, one_line_error, strict_mode
from rlvr.grpo_step import STEP_KEYS, group_prompts, grpo_step
from rlvr.model import TinyTransformer, response_logps, response_mask
from rlvr.task import decode, prompt_text, prompt_tokens, sample_prompts, score_batch

UPDATE_RTOL = 1e-3  # relative size of |your update - the package's| allowed (float noise is ~1e-6)
LOSS_ATOL = 1e-5
PERTURB_STD = 0.01  # the checked policy is the warm-up plus this noise, so its KL to the warm-up is not 0
EPS = 1e-4
CLIP_EPS = 0.2


@dataclass(frozen=True)
class StepCase:
    """One call of the step function: P prompts (seeded), G answers each, KL weight beta."""

    description: str
    prompts: int
    group_size: int
    beta: float = 0.0
    seed: int = 0


@dataclass
class StepRun:
    """What one call of a step function did: its output, the parameter change, the gradients it left."""

    out: object
    delta: torch.Tensor | None  # [n_params] parameters after - before
    grads_seen: bool  # any parameter's .grad set after the call
    grad_norm: float  # norm of the gradients left on the parameters


@dataclass
class Variant:
    """A (possibly mistaken) loss: its value and its parameter change under SGD(lr=1), for diagnosis."""

    name: str
    advice: str
    loss: float
    delta: torch.Tensor  # [n_params]


# ----------------------------------------------------------------------------------------------- setting up
@lru_cache(maxsize=1)
def checked_models() -> tuple[TinyTransformer, TinyTransformer]:
    """(policy, ref): the default warm-up model as the reference, and a seeded perturbation of it as the policy."""
    from rlvr.train import RLConfig, warm_start

    ref = warm_start(RLConfig()).model.eval().requires_grad_(False)
    policy = copy.deepcopy(ref).requires_grad_(True)
    generator = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(PERTURB_STD * torch.randn(p.shape, generator=generator))
    return policy, ref


def flat_params(model: TinyTransformer) -> torch.Tensor:
    """All parameters as one vector. [n_params]."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def case_prompts(case: StepCase) -> np.ndarray:
    """The case's seeded prompts. [P, 10]."""
    return sample_prompts(case.prompts, np.random.default_rng(case.seed))


def run_step(fn: Callable, case: StepCase) -> StepRun:
    """Call a step function on fresh copies of the checked models with SGD(lr=1) (exceptions propagate)."""
    policy, ref = (copy.deepcopy(m) for m in checked_models())
    policy.train()
    before = flat_params(policy)
    optimizer = torch.optim.SGD(policy.parameters(), lr=1.0)
    out = fn(
        policy,
        ref,
        optimizer,
        case_prompts(case),
        torch.Generator().manual_seed(case.seed),
        group_size=case.group_size,
        beta=case.beta,
        eps=EPS,
        clip_eps=CLIP_EPS,
    )
    grads = [p.grad for p in policy.parameters() if p.grad is not None]
    grad_norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads))) if grads else 0.0
    return StepRun(out, flat_params(policy) - before, bool(grads), grad_norm)


# ----------------------------------------------------------------------------------------------- variants
def _aggregations(per_token: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """The right reduction of a per-token loss [B, T] and the usual wrong ones, by name."""
    m = mask.float()  # [B, T]
    return {
        "right": (per_token * m).sum(dim=1).div(m.sum(dim=1).clamp(min=1)).mean(),
        "padding": per_token.mean(dim=1).mean(),
        "batch_mean": (per_token * m).sum() / m.sum(),
        "token_sum": (per_token * m).sum(dim=1).mean(),
        "flat_mean": (per_token * m).mean(),
    }


AGGREGATION_ADVICE = {
    "padding": "loss: padding is counted. Average each answer's per-token loss over its own tokens only: "
    "(per_token * response_mask).sum(dim=1) / response_mask.sum(dim=1), then the mean over answers.",
    "batch_mean": "loss: you take one token mean over the whole batch (every token weighs the same, TRL's 'bnpo'); "
    "GRPO averages each answer's tokens first, then averages over answers.",
    "token_sum": "loss: you sum each answer's tokens instead of averaging them (divide by the answer's length).",
    "flat_mean": "loss: you average over all B x T entries of the masked loss; divide each answer's token sum by "
    "its own length instead.",
}


def _variant_losses(logps, ref_logps, advantages, mask, beta) -> dict[str, tuple[torch.Tensor, str]]:
    """Loss tensors (with graph) of the right step and of the mistakes the checker can name."""
    old = logps.detach()
    adv = advantages[:, None]  # [B, 1]
    ratio = torch.exp(logps - old)  # [B, T], 1 in value
    pg = -torch.minimum(ratio * adv, ratio.clamp(1 - CLIP_EPS, 1 + CLIP_EPS) * adv)  # [B, T]
    kl = objectives.kl_k3(logps, ref_logps)  # [B, T]
    right_kl = beta * kl if beta > 0 else torch.zeros_like(pg)
    variants = {
        name: (loss, AGGREGATION_ADVICE.get(name, "")) for name, loss in _aggregations(pg + right_kl, mask).items()
    }
    right = variants["right"][0]
    variants["sign"] = (
        -right,
        "loss: the sign is flipped. The loss to MINIMISE is minus the objective: "
        "-min(ratio * A, clip(ratio) * A) per token (plus beta * k3).",
    )
    same = torch.exp(logps - logps)  # ratio without a detached denominator: 1, and no gradient
    pg_attached = -torch.minimum(same * adv, same.clamp(1 - CLIP_EPS, 1 + CLIP_EPS) * adv)
    variants["not_detached"] = (
        _aggregations(pg_attached + right_kl, mask)["right"],
        "update: no gradient flows through the ratio. Its old log-probs must be "
        "`logps.detach()`: exp(logps - logps) is 1 for every parameter value, so its "
        "gradient is 0.",
    )
    if beta > 0:
        log_r = logps - ref_logps  # the wrong way round
        kl_variants = {
            "kl_reversed": (
                torch.expm1(log_r) - log_r,
                "KL term: the log-ratio is the wrong way round. k3 uses "
                "log r = ref_logps - logps: (exp(log r) - 1) - log r.",
            ),
            "kl_k1": (
                logps - ref_logps,
                "KL term: you add k1 = logps - ref_logps; the lecture's (and TRL's) "
                "penalty is k3 = (exp(log r) - 1) - log r with log r = ref_logps - logps.",
            ),
            "kl_missing": (
                torch.zeros_like(pg),
                "KL term: your step ignores beta. Add beta * k3 to each token's loss when beta > 0 (Exercise 7(b)).",
            ),
        }
        for name, (term, advice) in kl_variants.items():
            variants[name] = (_aggregations(pg + beta * term, mask)["right"], advice)
    return variants


def loss_variants(
    policy: TinyTransformer, ref: TinyTransformer, responses, prompt_ids, mask, advantages, case: StepCase
) -> list[Variant]:
    """Each variant's loss value and parameter change under SGD(lr=1) (= minus its gradient); the right one first."""
    with torch.no_grad():
        ref_logps = response_logps(ref, prompt_ids, responses, samples_per_prompt=case.group_size)  # [B, T]
    model = copy.deepcopy(policy).train()
    params = list(model.parameters())
    logps = response_logps(model, prompt_ids, responses, samples_per_prompt=case.group_size)  # [B, T]
    variants = []
    for name, (loss, advice) in _variant_losses(logps, ref_logps, advantages, mask, case.beta).items():
        grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
        delta = -torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)])
        variants.append(Variant(name, advice, float(loss.detach()), delta))
    return variants


def _relative_gap(got: torch.Tensor, want: torch.Tensor) -> float:
    """|got - want| / |want| (inf when want is 0 and got is not)."""
    scale = float(want.norm())
    gap = float((got - want).norm())
    return gap / scale if scale > 0 else (0.0 if gap == 0 else math.inf)


def matches(run: StepRun, variant: Variant) -> bool:
    """The learner's loss value and update agree with this variant's."""
    loss = float(run.out["loss"])
    return (
        math.isclose(loss, variant.loss, rel_tol=1e-4, abs_tol=LOSS_ATOL)
        and _relative_gap(run.delta, variant.delta) < UPDATE_RTOL
    )


# ----------------------------------------------------------------------------------------------- stages
def _answer(responses: torch.Tensor, i: int) -> str:
    """One answer as text (up to its stop token)."""
    text = decode(responses[i].tolist())
    return text.split("$")[0] + "$" if "$" in text else text


def sampling_problem(got, want: torch.Tensor, prompts: np.ndarray, group_size: int) -> str | None:
    """First difference between the sampled answers, as one sentence, or None."""
    advice = (
        "call `sample(policy, task.prompt_tokens(prompts), 1.0, generator=generator, "
        "samples_per_prompt=group_size)` once, with the generator you are given"
    )
    if not isinstance(got, torch.Tensor) or got.dim() != 2:
        return f"sampling: 'responses' must be the [B, T] tensor `rollout.responses`; {advice}."
    if got.shape[0] != want.shape[0]:
        return (
            f"sampling: {got.shape[0]} answers, but {len(prompts)} prompts x {group_size} = {want.shape[0]} "
            f"were expected; {advice}."
        )
    if got.shape != want.shape or not torch.equal(got.long(), want):
        rows = [i for i in range(len(want)) if got.shape[1] != want.shape[1] or not torch.equal(got[i], want[i])]
        i = rows[0]
        return (
            f"sampling: answer {i} (to prompt {prompt_text(prompts[i // group_size])}) is {_answer(got, i)!r}, "
            f"the package sampled {_answer(want, i)!r}; {advice} (temperature 1)."
        )
    return None


def scoring_problem(got, responses: torch.Tensor, prompts: np.ndarray, group_size: int) -> str | None:
    """First answer whose reward differs from the verifier's, as one sentence, or None."""
    want = score_batch(group_prompts(prompts, group_size), responses)["reward"]  # [B]
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape):
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        return f"scoring: 'rewards' must be a tensor of shape {tuple(want.shape)} (one per answer), got {shape}."
    wrong = (got.float() != want).nonzero().flatten()
    if len(wrong):
        i = int(wrong[0])
        return (
            f"scoring: answer {i} ({_answer(responses, i)!r} to prompt {prompt_text(prompts[i // group_size])}) "
            f"has your reward {float(got[i]):g}, the verifier gives {float(want[i]):g}. Score each answer "
            "against its own prompt: `task.score_batch(prompts repeated group_size times each (np.repeat), "
            "responses)['reward']`."
        )
    return None


def _columns(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """GRPO advantages of groups taken as columns (`view(group_size, -1)`), a common reshape slip. [B] -> [B]."""
    r = rewards.view(group_size, -1)  # [G, P]: column j mixes answers of G different prompts
    return ((r - r.mean(0, keepdim=True)) / (r.std(0, keepdim=True, correction=0) + EPS)).reshape(-1)


ADVANTAGE_MISTAKES: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {  # [B], G -> [B]
    "the unbiased std (divides by G - 1): use `correction=0`": lambda rewards, g: objectives.grpo_advantages(
        rewards, g, EPS, "unbiased"
    ),
    "the mean and std of the whole batch instead of each group": lambda rewards, g: (
        (rewards - rewards.mean()) / (rewards.std(correction=0) + EPS)
    ),
    "no division by the std (that is Dr. GRPO)": lambda rewards, g: objectives.dr_grpo_advantages(rewards, g),
    "groups taken as columns (`view(group_size, -1)`): a prompt's G answers are consecutive": _columns,
}


def advantages_problem(got, rewards: torch.Tensor, group_size: int) -> str | None:
    """First group whose advantages differ from GRPO's (population std + eps), as one sentence, or None."""
    want = objectives.grpo_advantages(rewards, group_size, EPS, "population")  # [B]
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape):
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        return f"advantages: must be a tensor of shape {tuple(want.shape)} (one per answer), got {shape}."
    got = got.detach().float()
    if not torch.isfinite(got).all():
        return (
            "advantages: NaN or inf. A group whose rewards are all equal has std 0: add eps to the std before dividing."
        )
    close = torch.isclose(got, want, rtol=1e-4, atol=1e-5).view(-1, group_size).all(dim=1)  # [P]
    if bool(close.all()):
        return None
    k = int((~close).nonzero()[0])
    r = rewards.view(-1, group_size)  # [P, G]
    mistake = next(
        (
            name
            for name, fn in ADVANTAGE_MISTAKES.items()
            if torch.allclose(got, fn(rewards, group_size), rtol=1e-4, atol=1e-5)
        ),
        None,
    )
    yours = ", ".join(f"{x:.3f}" for x in got.view(-1, group_size)[k].tolist())
    rewards_k = ", ".join(f"{x:g}" for x in r[k].tolist())
    why = (
        f" It looks like {mistake}."
        if mistake
        else (" GRPO's advantage is (r - mean of the group) / (population std of the group + eps).")
    )
    return f"advantages: group {k} (rewards [{rewards_k}]) gets [{yours}].{why}"


def update_problem(run: StepRun, variants: list[Variant]) -> str | None:
    """Compare the loss value and the parameter change with the right step's; name the mistake, or None."""
    right = variants[0]
    loss = run.out["loss"]
    loss = float(loss) if np.ndim(loss) == 0 else float("nan")
    if not math.isfinite(loss):
        return f"loss: your loss is {run.out['loss']!r}, not one finite number (return `loss.item()`)."
    if matches(run, right):
        return None
    for variant in variants[1:]:
        if matches(run, variant):
            return variant.advice
    if float(run.delta.norm()) == 0:
        if not run.grads_seen:
            return "update: no gradient reached the parameters: call `loss.backward()` before `optimizer.step()`."
        if run.grad_norm > 0:
            return "update: the parameters did not change: call `optimizer.step()` after `loss.backward()`."
        return variants_named(variants, "not_detached").advice
    if not math.isclose(loss, right.loss, rel_tol=1e-4, abs_tol=LOSS_ATOL):
        return (
            "loss: its value differs from the package's (the clipped ratio times the advantage, minus, "
            "averaged over each answer's tokens, then over answers; plus beta * k3 per token when beta > 0)."
        )
    return (
        f"update: the loss value is right but its gradient is not (your parameter change differs by "
        f"{_relative_gap(run.delta, right.delta):.1%}): check that the loss is computed from the policy's "
        "log-probs with their graph, and which tokens each mean runs over."
    )


def variants_named(variants: list[Variant], name: str) -> Variant:
    """The variant called `name`."""
    return next(v for v in variants if v.name == name)


def diagnose(run: StepRun, case: StepCase) -> str | None:
    """The first stage where the learner's step differs from the package's, as one sentence, or None."""
    out = run.out
    if not isinstance(out, dict):
        return f"your step returned {type(out).__name__}: return a dict with the keys {', '.join(STEP_KEYS)}."
    missing = [key for key in STEP_KEYS if key not in out]
    if missing:
        return f"your step's dict has no {', '.join(map(repr, missing))} (needed: {', '.join(STEP_KEYS)})."
    reference = run_step(grpo_step, case)
    prompts = case_prompts(case)
    want = reference.out
    problem = (
        sampling_problem(out["responses"], want["responses"], prompts, case.group_size)
        or scoring_problem(out["rewards"], want["responses"], prompts, case.group_size)
        or advantages_problem(out["advantages"], want["rewards"], case.group_size)
    )
    if problem:
        return problem
    prompt_ids = prompt_tokens(prompts).repeat_interleave(case.group_size, dim=0)  # [B, 11]
    variants = loss_variants(
        *checked_models(), want["responses"], prompt_ids, response_mask(want["responses"]), want["advantages"], case
    )
    return update_problem(run, variants)


# ----------------------------------------------------------------------------------------------- the exercise
def _student_run(fn: Callable, case: StepCase) -> tuple[StepRun | None, BaseException | None]:
    """Run the learner's step on one case; (run, None) or (None, the exception it raised)."""
    try:
        return run_step(fn, case), None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - the learner's code may raise anything
        return None, error


class StepExercise(Question):
    """A whole step function checked against the package's `grpo_step`, stage by stage, on a few cases.

    kl=True: the cases use beta > 0 and a step that ignores beta counts as not attempted (Exercise 7(b)).
    """

    def __init__(self, name: str, cases: list[StepCase], hint: str = "", solution: str = "", kl: bool = False):
        super().__init__(name, hint, solution)
        self.cases, self.kl = list(cases), kl

    def check(self, fn: Callable) -> Result:
        """Check `fn` on every case; a Result (and AssertionError in strict mode unless correct)."""
        return self.checked(lambda: self._evaluate(fn))

    def _evaluate(self, fn: Callable) -> Result:
        """The first case whose run differs from the package's decides; all agree: correct."""
        if not callable(fn):
            return Result(self.name, Outcome.UNCHECKABLE, "check() needs your step function.")
        for case in self.cases:
            run, error = _student_run(fn, case)
            where = f"case `{case.description}`"
            if isinstance(error, NotImplementedError):
                return Result(self.name, Outcome.NOT_ATTEMPTED, "replace `raise NotImplementedError` with your code.")
            if error is not None:
                return Result(self.name, Outcome.UNCHECKABLE, f"{where}: your step raised {one_line_error(error)}")
            problem = diagnose(run, case)
            if problem and self.kl and problem.startswith("KL term: your step ignores beta"):
                return Result(self.name, Outcome.NOT_ATTEMPTED, problem)
            if problem:
                return Result(self.name, Outcome.INCORRECT, f"{where}: {problem}")
        return Result(
            self.name,
            Outcome.CORRECT,
            f"passed {len(self.cases)} of {len(self.cases)} cases: the same answers, rewards, advantages, "
            "loss and parameter update as the package's step.",
        )

    def step_to_train(self, fn: Callable) -> tuple[Callable, str]:
        """(the learner's step if it passes the check, else the package's; one line saying which)."""
        result = self.check(fn) if not strict_mode() else self._evaluate(fn)
        if result.passed:
            return fn, "your step passed the check: training with YOUR step"
        if result.outcome is Outcome.NOT_ATTEMPTED:
            return grpo_step, "not attempted: showing the reference run (the package's step)"
        return grpo_step, f"your step did not pass the check ({result.outcome.value}): showing the reference run"

    def train(self, fn: Callable, cfg, on_step=None):
        """Train with the learner's step (or the package's, see step_to_train); print one line; a RunResult.

        An exception in a later step of the learner's run is reported in one line and the package's step takes over
        from the start, so the cells below always have a run to show."""
        from rlvr.grpo_step import train_with_step

        step_fn, line = self.step_to_train(fn)
        print(line, flush=True)
        try:
            return train_with_step(step_fn, cfg, on_step=on_step)
        except KeyboardInterrupt:
            raise
        except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
            if step_fn is grpo_step:
                raise
            print(f"your step failed during training ({one_line_error(error)}): showing the reference run", flush=True)
            return train_with_step(grpo_step, cfg, on_step=on_step)
