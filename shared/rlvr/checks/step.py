"""Checker of a learner's whole GRPO step (notebook 03): it runs the learner's function and the package's
`rlvr.grpo_step.grpo_step` on the same model, prompts and random generator, then compares them stage by stage
(what was sampled, the rewards, the advantages, the loss, the parameter update) and names the first stage that
differs, on its first differing example, and, where it can, the usual mistake that explains it.

- The learner writes the step in plain PyTorch (`response_logps` over every answer); the package's step keeps its
  speed trick (`update_logps` skips groups whose advantages are all 0). The two agree up to float rounding: the loss
  exactly, the update within ~1e-5 relative, so the update is compared within UPDATE_RTOL.
- Each case makes TWO consecutive calls on the same model and optimizer, so gradients left over from the first call
  (a missing `zero_grad`) show in the second. Before the second call the parameters are put back to where the first
  started (the gradients and the optimizer are left alone), so both calls are compared with the package's step from
  the same, sane model.
- The update goes through plain SGD with learning rate 1 (the parameter change is then minus the gradient), so a loss
  with the right value but the wrong gradient (padding in the mean, old log-probs not detached) is caught too.
- The update stage is checked in an order that keeps each diagnosis right: did the loss have a backward pass, did
  the optimizer step, were old gradients cleared, and only then which loss (aggregation, sign, detach, KL) it was.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Callable

import numpy as np
import torch

from rlvr import objectives
from rlvr.checks.compare import DEFAULT_ATOL, DEFAULT_RTOL, compare
from rlvr.checks.core import MISSING, NOT_ATTEMPTED_MESSAGE, Outcome, Question, Result, call_problem
from rlvr.checks.guard import (
    Call,
    OutputTail,
    call_guarded,
    describe,
    failure_sentence,
    one_line_error,
    with_printed,
)
from rlvr.i18n import N_, _
from rlvr.grpo_step import STEP_KEYS, StepError, group_prompts, grpo_step
from rlvr.model import TinyTransformer, response_logps, response_mask
from rlvr.task import decode, prompt_text, prompt_tokens, sample_prompts, score_batch
from rlvr.runs import RunResult

UPDATE_RTOL = 1e-3  # relative size of |your update - the package's| allowed (float noise is ~1e-5)
LOSS_ATOL = DEFAULT_ATOL
PERTURB_STD = 0.01  # the checked policy is the warm-up plus this noise, so its KL to the warm-up is not 0
EPS = 1e-4
CLIP_EPS = 0.2
STEP_LIMIT_S = 20.0  # per call of the learner's step in the check (a right one takes well under a second)
TRAIN_STEP_LIMIT_S = 60.0  # per call while training with it (32 x 8 answers; ~0.1 s on a quiet machine)
CALLS = 2  # consecutive calls per case
OUTCOME_WORDS = {  # an outcome in the line printed when the learner's step is not used (its value, translatable)
    Outcome.CORRECT: N_("correct"),
    Outcome.INCORRECT: N_("incorrect"),
    Outcome.NOT_ATTEMPTED: N_("not attempted"),
    Outcome.UNCHECKABLE: N_("uncheckable"),
}


@dataclass(frozen=True)
class StepCase:
    """Consecutive calls of the step function: P prompts (seeded), G answers each, KL weight beta."""

    description: str
    prompts: int
    group_size: int
    beta: float = 0.0
    seed: int = 0
    calls: int = CALLS


@dataclass
class StepRun:
    """What one call of a step function did: its output, the parameter change, what the probes saw."""

    call: Call
    delta: torch.Tensor  # [n_params] parameters after - before
    grads_left: torch.Tensor | None  # [n_params] the .grad left on the parameters (None: none left)
    backward_passes: int = 0  # gradients that reached the parameters during the call
    backward_norm: float = 0.0  # norm of the gradients of those backward passes (before accumulation)
    ref_passes: int = 0  # forward passes of the frozen reference model
    graphless_policy_passes: int = 0  # forward passes of the policy without a graph, outside sampling
    ref_changed: bool = False

    @property
    def out(self):
        """The step's return value."""
        return self.call.value


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


def flat_grads(model: TinyTransformer) -> torch.Tensor | None:
    """All parameters' .grad as one vector (0 where a parameter has none), or None when none has one. [n_params]."""
    params = list(model.parameters())
    if all(p.grad is None for p in params):
        return None
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1) for p in params])


def call_prompts(case: StepCase, call: int) -> np.ndarray:
    """The prompts of one call of a case (seeded). [P, 10]."""
    return sample_prompts(case.prompts, np.random.default_rng(case.seed + 1000 * call))


def case_prompts(case: StepCase) -> np.ndarray:
    """The prompts of a case's first call. [P, 10]."""
    return call_prompts(case, 0)


def call_generator(case: StepCase, call: int) -> torch.Generator:
    """The sampling generator of one call of a case."""
    return torch.Generator().manual_seed(case.seed + 1000 * call)


class Probe:
    """Watches one call of a step: forward passes of the policy and of the reference model, the backward pass."""

    def __init__(self, policy: TinyTransformer, ref: TinyTransformer):
        self.ref_passes = self.graphless_policy_passes = self.backward_passes = 0
        self.grad_sq = 0.0
        self.handles = [
            ref.tok_emb.register_forward_pre_hook(self._ref_pass),
            policy.tok_emb.register_forward_pre_hook(self._policy_pass),
            *(p.register_hook(self._gradient) for p in policy.parameters() if p.requires_grad),
        ]

    def _ref_pass(self, module, inputs) -> None:
        """The reference model ran."""
        self.ref_passes += 1

    def _policy_pass(self, module, inputs) -> None:
        """The policy ran; count it if it ran without a graph outside sampling (sampling runs in inference mode)."""
        if not torch.is_grad_enabled() and not torch.is_inference_mode_enabled():
            self.graphless_policy_passes += 1

    def _gradient(self, grad: torch.Tensor) -> None:
        """A backward pass reached a parameter."""
        self.backward_passes += 1
        self.grad_sq += float((grad.detach().double() ** 2).sum())

    def remove(self) -> None:
        """Take the hooks off."""
        for handle in self.handles:
            handle.remove()


def run_step(fn: Callable, case: StepCase, call: int = 0, policy=None, ref=None, optimizer=None, limit=None):
    """One call of a step function, guarded and watched: on fresh copies of the checked models with SGD(lr=1)
    unless `policy`, `ref` and `optimizer` are given (the learner's, kept between calls). A StepRun."""
    if policy is None:
        start, frozen = checked_models()
        policy, ref = copy.deepcopy(start).train(), copy.deepcopy(frozen)
        optimizer = torch.optim.SGD(policy.parameters(), lr=1.0)
    before, ref_before = flat_params(policy), flat_params(ref)
    probe = Probe(policy, ref)
    kwargs = dict(group_size=case.group_size, beta=case.beta, eps=EPS, clip_eps=CLIP_EPS)
    args = (policy, ref, optimizer, call_prompts(case, call), call_generator(case, call))
    try:
        result = call_guarded(fn, args, kwargs, limit)
    finally:
        probe.remove()
    return StepRun(
        result,
        flat_params(policy) - before,
        flat_grads(policy),
        probe.backward_passes,
        math.sqrt(probe.grad_sq),
        probe.ref_passes,
        probe.graphless_policy_passes,
        not torch.equal(flat_params(ref), ref_before),
    )


@lru_cache(maxsize=16)
def reference_run(case: StepCase, call: int) -> StepRun:
    """The package's step on a case's call (cached: it is deterministic)."""
    run = run_step(grpo_step, case, call)
    if run.call.error is not None:
        raise RuntimeError(f"the package's step failed: {one_line_error(run.call.error)}")
    return run


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
        "batch_sum": (per_token * m).sum(),
    }


AGGREGATION_ADVICE = {  # a variant's name -> its sentence (translated where shown)
    "padding": N_(
        "loss: padding is counted. Average each answer's per-token loss over its own real tokens only (the "
        "response mask), then take the mean over answers."
    ),
    "batch_mean": N_(
        "loss: you take one token mean over the whole batch (DAPO's token-level mean, TRL's 'bnpo': every "
        "token weighs the same); GRPO averages each answer's tokens first, then averages over answers."
    ),
    "token_sum": N_(
        "loss: you sum each answer's tokens instead of averaging them; divide each answer's sum by its "
        "number of real tokens."
    ),
    "flat_mean": N_(
        "loss: you average over all B x T entries of the masked loss (Dr. GRPO's constant normaliser); "
        "GRPO divides each answer's token sum by its own number of real tokens."
    ),
    "batch_sum": N_(
        "loss: you add up every token of the batch; GRPO averages each answer over its own tokens, then "
        "averages over answers."
    ),
}


def _clipped(ratio: torch.Tensor, adv: torch.Tensor) -> torch.Tensor:
    """-min(ratio * A, clip(ratio) * A) per token. [B, T]."""
    return -torch.minimum(ratio * adv, ratio.clamp(1 - CLIP_EPS, 1 + CLIP_EPS) * adv)


def _variant_losses(logps, ref_logps, advantages, mask, beta) -> dict[str, tuple[torch.Tensor, str]]:
    """Loss tensors (with graph) of the right step and of the mistakes the checker can name, each with its sentence
    (in English: `_()` translates it where it is shown, so a cached variant follows the language of the moment)."""
    adv = advantages[:, None]  # [B, 1]
    pg = _clipped(torch.exp(logps - logps.detach()), adv)  # [B, T]
    kl = objectives.kl_k3(logps, ref_logps)  # [B, T]
    right_kl = beta * kl if beta > 0 else torch.zeros_like(pg)
    variants = {
        name: (loss, AGGREGATION_ADVICE.get(name, "")) for name, loss in _aggregations(pg + right_kl, mask).items()
    }
    right = variants["right"][0]
    variants["sign"] = (
        -right,
        N_(
            "loss: your gradient points the wrong way (the update climbs the loss): the loss's sign is flipped (the "
            "loss to MINIMISE is minus the clipped objective per token, plus beta times k3), or the ratio's numerator "
            "is detached instead of its old log-probs (with one update per batch the two look the same)."
        ),
    )
    same = torch.exp(logps - logps)  # ratio without a detached denominator: 1, and no gradient
    variants["not_detached"] = (
        _aggregations(_clipped(same, adv) + right_kl, mask)["right"],
        N_(
            "update: no gradient flows through the ratio. Its old log-probs must be a copy of the log-probs without "
            "a graph (detached): exp(logps - logps) is 1 for every parameter value, so its gradient is 0."
        ),
    )
    swapped = torch.exp(logps.detach() - logps)  # the numerator detached instead: gradient of minus log pi
    variants["wrong_detached"] = (
        _aggregations(_clipped(swapped, adv) + right_kl, mask)["right"],
        N_(
            "update: your gradient is the right one with the opposite sign: the ratio's numerator is detached and its "
            "denominator keeps the graph. Detach the OLD log-probs (the denominator), keep the new ones' graph."
        ),
    )
    if beta > 0:
        log_r = logps - ref_logps  # the wrong way round
        kl_variants = {
            "kl_reversed": (
                torch.expm1(log_r) - log_r,
                N_(
                    "KL term: the log-ratio is the wrong way round. k3 uses the reference's log-probs minus the "
                    "policy's: (exp(l) - 1) - l."
                ),
            ),
            "kl_k1": (
                logps - ref_logps,
                N_(
                    "KL term: you add k1, the policy's log-probs minus the reference's; the lecture's (and TRL's) "
                    "penalty is k3 = (exp(l) - 1) - l with l the reference's log-probs minus the policy's."
                ),
            ),
            "kl_sign": (
                -kl,
                N_("KL term: you subtract the penalty; beta times k3 is ADDED to each token's loss."),
            ),
            "kl_missing": (torch.zeros_like(pg), N_("KL term: your step ignores beta.")),
        }
        for name, (term, advice) in kl_variants.items():
            variants[name] = (_aggregations(pg + beta * term, mask)["right"], advice)
        variants["kl_padding"] = (
            _aggregations(pg, mask)["right"] + beta * kl.mean(),
            N_(
                "KL term: you average the penalty over every position, padding included; add beta times k3 to each "
                "real token's loss, so it is averaged like the rest (over each answer's real tokens, then over "
                "answers)."
            ),
        )
        variants["kl_batch_mean"] = (
            _aggregations(pg, mask)["right"] + beta * _aggregations(kl, mask)["batch_mean"],
            N_(
                "KL term: you average the penalty over all tokens of the batch at once; add beta times k3 to each "
                "token's loss, so it is averaged like the rest (per answer, then over answers)."
            ),
        )
    return variants


@lru_cache(maxsize=16)
def loss_variants(case: StepCase, call: int) -> tuple[Variant, ...]:
    """Each variant's loss value and parameter change under SGD(lr=1) (= minus its gradient); the right one first.
    Computed on the package's answers and advantages of this call (cached)."""
    want = reference_run(case, call).out
    policy, ref = checked_models()
    prompt_ids = prompt_tokens(call_prompts(case, call)).repeat_interleave(case.group_size, dim=0)  # [B, 11]
    responses = want["responses"]  # [B, T]
    with torch.no_grad():
        ref_logps = response_logps(ref, prompt_ids, responses, group_size=case.group_size)  # [B, T]
    model = copy.deepcopy(policy).train()
    params = list(model.parameters())
    logps = response_logps(model, prompt_ids, responses, group_size=case.group_size)  # [B, T]
    mask = response_mask(responses)  # [B, T]
    variants = []
    for name, (loss, advice) in _variant_losses(logps, ref_logps, want["advantages"], mask, case.beta).items():
        grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
        delta = -torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)])
        variants.append(Variant(name, advice, float(loss.detach()), delta))
    return tuple(variants)


def relative_gap(got: torch.Tensor, want: torch.Tensor) -> float:
    """|got - want| / |want| (inf when want is 0 and got is not)."""
    scale = float(want.norm())
    gap = float((got - want).norm())
    return gap / scale if scale > 0 else (0.0 if gap == 0 else math.inf)


def loss_value(out) -> float:
    """The returned loss as a float (NaN if it is not one number)."""
    try:
        loss = out["loss"]
        return float(loss.detach()) if isinstance(loss, torch.Tensor) and loss.numel() == 1 else float(loss)
    except (TypeError, ValueError, KeyError, RuntimeError):
        return float("nan")


def matches(run: StepRun, variant: Variant) -> bool:
    """The learner's loss value and update agree with this variant's."""
    return (
        math.isclose(loss_value(run.out), variant.loss, rel_tol=DEFAULT_RTOL, abs_tol=LOSS_ATOL)
        and relative_gap(run.delta, variant.delta) < UPDATE_RTOL
    )


# ----------------------------------------------------------------------------------------------- stages
def _answer(responses: torch.Tensor, i: int) -> str:
    """One answer as text (up to its stop token)."""
    text = decode(responses[i].tolist())
    return text.split("$")[0] + "$" if "$" in text else text


def sampling_problem(got, want: torch.Tensor, prompts: np.ndarray, group_size: int) -> str | None:
    """First difference between the sampled answers, as one sentence, or None."""
    advice = _(
        "sample once from the policy, at temperature 1, with the generator you are given and group_size samples "
        "per prompt (one call of `sample` on the prompts' tokens)"
    )
    if not isinstance(got, torch.Tensor) or got.dim() != 2:
        text = _("sampling: 'responses' must be the [B, T] tensor of sampled token ids, got {what}; {advice}.")
        return text.format(what=_what(got), advice=advice)
    if got.shape[0] != want.shape[0]:
        text = _("sampling: {n} answers, but {prompts} prompts x {group_size} = {want} were expected; {advice}.")
        return text.format(
            n=got.shape[0], prompts=len(prompts), group_size=group_size, want=want.shape[0], advice=advice
        )
    if got.shape != want.shape or not torch.equal(got.long(), want):
        rows = [i for i in range(len(want)) if got.shape[1] != want.shape[1] or not torch.equal(got[i], want[i])]
        i = rows[0]
        text = _("sampling: answer {i} (to prompt {prompt}) is {yours}, the package sampled {theirs}; {advice}.")
        return text.format(
            i=i,
            prompt=prompt_text(prompts[i // group_size]),
            yours=repr(_answer(got, i)),
            theirs=repr(_answer(want, i)),
            advice=advice,
        )
    return None


def _what(value) -> str:
    """A value's shape if it is a tensor, else its type."""
    if isinstance(value, torch.Tensor):
        return _("a tensor of shape {shape}").format(shape=tuple(value.shape))
    return describe(value)


def scoring_problem(got, responses: torch.Tensor, prompts: np.ndarray, group_size: int) -> str | None:
    """First answer whose reward differs from the verifier's, as one sentence, or None."""
    want = score_batch(group_prompts(prompts, group_size), responses)["reward"]  # [B]
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape):
        text = _("scoring: 'rewards' must be a tensor of shape {shape} (one per answer), got {what}.")
        return text.format(shape=tuple(want.shape), what=_what(got))
    wrong = (got.detach().float() != want).nonzero().flatten()
    if len(wrong):
        i = int(wrong[0])
        return _(
            "scoring: answer {i} ({answer} to prompt {prompt}) has your reward {yours}, the verifier gives {theirs}. "
            "Score each answer against its own prompt: each prompt repeated group_size times in a row (the order "
            "`sample` answers them in), then the verifier on those prompts and the answers."
        ).format(
            i=i,
            answer=repr(_answer(responses, i)),
            prompt=prompt_text(prompts[i // group_size]),
            yours=f"{float(got[i]):g}",
            theirs=f"{float(want[i]):g}",
        )
    return None


def advantage_mistake(got: torch.Tensor, rewards: torch.Tensor, group_size: int, mistakes: list = ()) -> str:
    """The sentence and the fix of the first of `mistakes` (the GRPO advantages' library, owned by notebook 03's
    Exercise 3, which hands it to its step exercise) whose output equals `got` on these rewards, or ''."""
    for mistake in mistakes:
        for way in mistake.ways:
            with torch.no_grad():
                theirs = way(rewards.clone(), group_size, eps=EPS)
            if compare(got, theirs) is None:
                return f"{mistake.sentence()} {mistake.advice()}"
    return ""


def advantages_problem(got, rewards: torch.Tensor, group_size: int, mistakes: list = ()) -> str | None:
    """First group whose advantages differ from GRPO's (population std + eps), as one sentence, or None."""
    want = objectives.grpo_advantages(rewards, group_size, EPS, "population")  # [B]
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape):
        text = _("advantages: must be a tensor of shape {shape} (one per answer, flattened), got {what}.")
        return text.format(shape=tuple(want.shape), what=_what(got))
    if got.dtype in (torch.float16, torch.bfloat16):
        return _(
            "advantages: they are {dtype}, which keeps only 2 to 3 significant digits; keep them in float32, "
            "the rewards' dtype."
        ).format(dtype=got.dtype)
    got = got.detach().float()
    if not torch.isfinite(got).all():
        return _("advantages: NaN or inf. A group whose rewards are all equal has std 0: add eps to the std.")
    close = torch.isclose(got, want, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL).view(-1, group_size).all(dim=1)  # [P]
    if bool(close.all()):
        return None
    k = int((~close).nonzero()[0])
    r = rewards.view(-1, group_size)  # [P, G]
    mistake = advantage_mistake(got, rewards, group_size, mistakes)
    yours = ", ".join(f"{x:.3f}" for x in got.view(-1, group_size)[k].tolist())
    right = ", ".join(f"{x:.3f}" for x in want.view(-1, group_size)[k].tolist())
    rewards_k = ", ".join(f"{x:g}" for x in r[k].tolist())
    why = mistake or _("GRPO's advantage is (r - mean of the group) / (population std of the group + eps).")
    text = _("advantages: group {k} (rewards [{rewards}]): expected [{right}], got [{yours}]. {why}")
    return text.format(k=k, rewards=rewards_k, right=right, yours=yours, why=why)


def _zero(x: torch.Tensor | None) -> bool:
    """No entry different from 0 (None counts as zero)."""
    return x is None or not bool(x.any())


def update_problem(run: StepRun, variants: tuple[Variant, ...], leftover: torch.Tensor | None) -> str | None:
    """Compare the loss value and the parameter change with the right step's; name the mistake, or None.

    The order matters: a step without a backward pass or an optimizer step also changes nothing, like a ratio
    whose gradient is 0, so those are ruled out first."""
    right = variants[0]
    loss = loss_value(run.out)
    if not math.isfinite(loss):
        text = _("loss: your loss is {loss}, not one finite number (return the loss as a Python float).")
        return text.format(loss=repr(run.out["loss"]))
    if matches(run, right):
        return None
    if run.backward_passes == 0:
        if _zero(run.delta):
            return _(
                "update: no gradient reached the parameters: the backward pass of the loss is missing (run it "
                "on the loss before the optimizer's step)."
            )
        return _("update: the parameters changed, but no backward pass of a loss reached them.")
    if _zero(run.delta):
        if not _zero(run.grads_left):
            return _(
                "update: the backward pass left a gradient but the parameters did not change: the optimizer's step "
                "is missing, or it runs before the backward pass."
            )
        if run.backward_norm == 0:
            not_detached = variant_named(variants, "not_detached")
            if math.isclose(loss, not_detached.loss, rel_tol=DEFAULT_RTOL, abs_tol=LOSS_ATOL):
                return _(not_detached.advice)
            return _("update: your loss has a gradient of 0 with respect to every parameter.")
        return _(
            "update: the gradients were cleared between the backward pass and the optimizer's step, so the step "
            "moved nothing: clear them at the START of the step, before the backward pass."
        )
    if not _zero(leftover) and relative_gap(run.delta, right.delta - leftover) < UPDATE_RTOL:
        return _(
            "update: on the second call your parameters moved by this step's gradient PLUS the previous step's: "
            "the gradients are never cleared. Clear the optimizer's gradients at the start of each step, before "
            "the backward pass."
        )
    for variant in variants[1:]:
        if matches(run, variant):
            return _(variant.advice)
    return optimizer_problem(run, right) or generic_update_problem(run, right, loss)


def optimizer_problem(run: StepRun, right: Variant) -> str | None:
    """The gradient is right but the parameters moved differently: the optimizer's doing. A sentence or None."""
    gradient_right = run.grads_left is not None and relative_gap(-run.grads_left, right.delta) < UPDATE_RTOL
    if gradient_right and relative_gap(run.delta, 2 * right.delta) < UPDATE_RTOL:
        return _("update: your parameters moved twice as far as one step: the optimizer steps twice.")
    if run.grads_left is not None and relative_gap(-run.grads_left, 2 * right.delta) < UPDATE_RTOL:
        return _("update: your gradient is twice the right one: the backward pass runs twice on the loss.")
    if gradient_right or _looks_like_fresh_adam(run.delta, right.delta):
        return _(
            "update: your gradient is right but the parameters did not move the way the optimizer you are given "
            "moves them: it looks like you make your own optimizer inside the step. Use the `optimizer` argument "
            "(the training loop chose it, with its learning rate and its state across steps)."
        )
    return None


def _looks_like_fresh_adam(delta: torch.Tensor, right: torch.Tensor) -> bool:
    """Adam's first step moves every parameter with a gradient by about the same amount, against its sign."""
    moving = right.abs() > 1e-6 * float(right.abs().max())
    if not bool(moving.any()) or _zero(delta):
        return False
    sizes = delta[moving].abs()
    same_sign = float((torch.sign(delta[moving]) == torch.sign(right[moving])).float().mean())
    return same_sign > 0.95 and float(sizes.min()) > 0.5 * float(sizes.max())


def generic_update_problem(run: StepRun, right: Variant, loss: float) -> str:
    """The sentence when no named mistake fits."""
    if not math.isclose(loss, right.loss, rel_tol=DEFAULT_RTOL, abs_tol=LOSS_ATOL):
        return _(
            "loss: expected {want}, got {got}. The loss is minus the clipped ratio times the advantage, averaged "
            "over each answer's real tokens, then over answers (plus beta times k3 per token when beta > 0)."
        ).format(want=f"{right.loss:.6g}", got=f"{loss:.6g}")
    return _(
        "update: the loss value is right but its gradient is not (your parameter change differs by {gap}): check "
        "that the loss is computed from the policy's log-probs with their graph, and which tokens each mean runs "
        "over."
    ).format(gap=f"{relative_gap(run.delta, right.delta):.1%}")


def variant_named(variants: tuple[Variant, ...], name: str) -> Variant:
    """The variant called `name`."""
    return next(v for v in variants if v.name == name)


def kl_missing_problem(run: StepRun) -> tuple[str, bool]:
    """(the sentence for a step whose KL term adds nothing at beta > 0, True if it looks not attempted)."""
    if run.ref_passes > 0:
        return (
            _(
                "KL term: your step runs the frozen `ref` model, but the penalty adds nothing to the loss or its "
                "gradient: the log-ratio must be the reference's log-probs minus the POLICY's (with their graph), and "
                "beta times k3 must be added to each token's loss."
            ),
            False,
        )
    if run.graphless_policy_passes > 0:
        return (
            _(
                "KL term: your step adds no KL penalty and never runs the frozen `ref` model: a KL computed from the "
                "policy's own log-probs (against itself) is 0. Take the reference log-probs from `ref`."
            ),
            False,
        )
    return (
        _(
            "KL term: your step ignores beta. Add beta times k3 to each token's loss when beta > 0 (Exercise 7(b)), "
            "with the reference log-probs from the frozen `ref` model."
        ),
        True,
    )


def structure_problem(out) -> str | None:
    """The step's return value is not a dict with the contract's keys: a sentence, else None."""
    if not isinstance(out, dict):
        text = _("your step returned {type}: return a dict with the keys {keys}.")
        return text.format(type=type(out).__name__, keys=", ".join(STEP_KEYS))
    missing = [key for key in STEP_KEYS if key not in out]
    if missing:
        text = _("your step's dict has no {missing} (needed: {keys}).")
        return text.format(missing=", ".join(map(repr, missing)), keys=", ".join(STEP_KEYS))
    return None


def diagnose(
    run: StepRun, case: StepCase, call: int = 0, leftover: torch.Tensor | None = None, mistakes: list = ()
) -> tuple[str, bool]:
    """(the first stage where the learner's call differs from the package's, as a sentence, or '';
    True if the difference means 'not attempted' (a step that ignores beta))."""
    out = run.out
    problem = structure_problem(out)
    if problem:
        return problem, False
    want = reference_run(case, call).out
    prompts = call_prompts(case, call)
    problem = (
        sampling_problem(out["responses"], want["responses"], prompts, case.group_size)
        or scoring_problem(out["rewards"], want["responses"], prompts, case.group_size)
        or advantages_problem(out["advantages"], want["rewards"], case.group_size, mistakes)
    )
    if problem:
        return problem, False
    if run.ref_changed:
        return (
            _(
                "your step changed the frozen reference model `ref`: it must stay the warm-up model (only the policy "
                "is trained; compute the reference log-probs without a graph)."
            ),
            False,
        )
    variants = loss_variants(case, call)
    problem = update_problem(run, variants, leftover)
    if case.beta > 0 and problem == _(variant_named(variants, "kl_missing").advice):
        return kl_missing_problem(run)
    return problem or "", False


# ----------------------------------------------------------------------------------------------- the exercise
@dataclass
class StepTraining(RunResult):
    """What `StepExercise.train` returns: a run, and whose step made it.

    yours: True only when the learner's step passed the check and trained this run; otherwise this is the package's
    run (loaded from the cache), to be shown under the package's name. label: 'your step' or "the package's step"
    (English: the figures look a colour up by it).
    """

    yours: bool = False
    outcome: Outcome = Outcome.NOT_ATTEMPTED
    note: str = ""

    @property
    def label(self) -> str:
        """Whose step made this run, for a legend."""
        return "your step" if self.yours else "the package's step"

    @property
    def attempted(self) -> bool:
        """False when the learner's step is still the stub."""
        return self.outcome is not Outcome.NOT_ATTEMPTED

    @classmethod
    def of(cls, run: RunResult, yours: bool, outcome: Outcome, note: str) -> StepTraining:
        """`run` with who made it."""
        return cls(**{f.name: getattr(run, f.name) for f in fields(RunResult)}, yours=yours, outcome=outcome, note=note)


class LearnerStepFailed(Exception):
    """The learner's step raised, ran out of time, or returned something unusable while training."""

    def __init__(self, sentence: str):
        super().__init__(sentence)


def package_run(cfg) -> RunResult:
    """The package's run of `cfg` through the checkpoint cache (loaded if cached, else trained once and cached)."""
    from rlvr.train import run

    return run(cfg, progress=False)


class StepExercise(Question):
    """A whole step function checked against the package's `grpo_step`, stage by stage, on a few cases.

    kl=True: the cases use beta > 0 and a step that ignores beta counts as not attempted (Exercise 7(b)).
    """

    def __init__(
        self, name: str, cases: list[StepCase], hint="", solution: str = "", kl: bool = False, advantage_mistakes=()
    ):
        super().__init__(name, hint, solution)
        self.cases, self.kl, self.advantage_mistakes = list(cases), kl, list(advantage_mistakes)

    def check(self, fn: Callable = MISSING, *more) -> Result:
        """Check `fn` on every case; a Result (and AssertionError in strict mode unless correct)."""
        return self.checked(lambda: self._evaluate(fn, *more))

    def _evaluate(self, fn: Callable = MISSING, *more) -> Result:
        """The first call whose run differs from the package's decides; all agree: correct."""
        problem = call_problem((fn, *more), [N_("your step function")], "check(my_grpo_step)")
        if problem:
            return Result(self.name, Outcome.UNCHECKABLE, problem)
        printed = None
        for case in self.cases:
            result, seen = self._check_case(fn, case)
            printed = printed or seen
            if result is not None:
                return result
        message = _(
            "passed {n} of {total} cases ({calls} consecutive calls each): the same answers, rewards, advantages, "
            "loss and parameter update as the package's step."
        ).format(n=len(self.cases), total=len(self.cases), calls=CALLS)
        return Result(self.name, Outcome.CORRECT, with_printed(message, printed) if printed else message)

    def _check_case(self, fn: Callable, case: StepCase) -> tuple[Result | None, Call | None]:
        """(a failing Result or None, a call that printed something or None) for a case's consecutive calls."""
        start, frozen = checked_models()
        policy, ref = copy.deepcopy(start).train(), copy.deepcopy(frozen)
        optimizer = torch.optim.SGD(policy.parameters(), lr=1.0)
        printed = None
        for call in range(case.calls):
            if call > 0:
                with (
                    torch.no_grad()
                ):  # back to the start; the gradients and the optimizer stay as the learner left them
                    for p, q in zip(policy.parameters(), start.parameters()):
                        p.copy_(q)
            reference_run(case, call)  # first, so the learner's call does not pay torch's first-call costs
            leftover = flat_grads(policy)
            run = run_step(fn, case, call, policy, ref, optimizer, STEP_LIMIT_S)
            where = _("case `{case}`, call {call} of {calls}").format(
                case=_(case.description), call=call + 1, calls=case.calls
            )
            printed = printed or (run.call if run.call.printed.summary() else None)
            if run.call.not_attempted:
                return Result(self.name, Outcome.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE), None
            if run.call.error is not None:
                message = _("{where}: {problem}").format(
                    where=where, problem=failure_sentence(run.call, N_("your step"))
                )
                return Result(self.name, Outcome.UNCHECKABLE, message), None
            problem, not_attempted = diagnose(run, case, call, leftover, self.advantage_mistakes)
            if problem and not_attempted and self.kl:
                return Result(self.name, Outcome.NOT_ATTEMPTED, problem), None
            if problem:
                message = _("{where}: {problem}").format(where=where, problem=problem)
                return Result(self.name, Outcome.INCORRECT, with_printed(message, run.call)), None
        return None, printed

    def train(self, fn: Callable, cfg, on_step=None, reference: RunResult | None = None) -> StepTraining:
        """Train with the learner's step if it passes the check; else train nothing and return the package's run
        (`reference` if given, else loaded from the cache) labelled as the package's. Prints one line saying which.

        The learner's run follows the package's in distribution, not bit for bit (float rounding differs)."""
        result = self._evaluate(fn)
        if not result.passed:
            return self._package_run(cfg, reference, result.outcome, self._refusal(result))
        print(_("Your step passed the check: training with YOUR step."), flush=True)
        printed = OutputTail()
        try:
            run = _train_with_learner_step(fn, cfg, on_step, printed)
        except LearnerStepFailed as failure:
            line = _("Your step failed while training ({failure}); nothing is shown in its name.").format(
                failure=failure
            )
            return self._package_run(cfg, reference, Outcome.INCORRECT, line)
        if printed.summary():  # its head names "Your function" (in the current language): say when and whose
            summary = printed.summary().replace(_("Your function"), _("During training your step"))
            print(summary, flush=True)
        return StepTraining.of(run, True, Outcome.CORRECT, _("trained with your step"))

    def _refusal(self, result: Result) -> str:
        """The line printed when the learner's step is not used."""
        if result.outcome is Outcome.NOT_ATTEMPTED:
            return _("Not attempted: your step was not run, so nothing is trained in its name.")
        text = _("Your step did not pass the check ({outcome}), so nothing is trained in its name.")
        return text.format(outcome=_(OUTCOME_WORDS[result.outcome]))

    def _package_run(self, cfg, reference, outcome: Outcome, line: str) -> StepTraining:
        """The package's run, labelled as the package's, with the line that says why."""
        text = _("{line} Showing the package's run (rlvr.grpo_step.grpo_step), labelled as the package's.")
        print(text.format(line=line), flush=True)
        run = reference if reference is not None else package_run(cfg)
        return StepTraining.of(run, False, outcome, line)


def _train_with_learner_step(fn: Callable, cfg, on_step, printed: OutputTail) -> RunResult:
    """train_with_step with each call of the learner's step guarded (time limit, output kept short); raises
    LearnerStepFailed with one sentence if a call fails."""
    from rlvr.grpo_step import train_with_step

    steps = {"n": 0}

    def guarded(*args, **kwargs):
        call = call_guarded(fn, args, kwargs, TRAIN_STEP_LIMIT_S, printed)
        steps["n"] += 1
        if call.error is not None:
            # NOTE: "it" is the learner's step, in "step 3: it raised ValueError: ..."
            sentence = failure_sentence(call, N_("it")).split("\n")[0]
            raise LearnerStepFailed(_("step {n}: {failure}").format(n=steps["n"], failure=sentence))
        return call.value

    try:
        return train_with_step(guarded, cfg, on_step=on_step)
    except StepError as error:
        raise LearnerStepFailed(_("step {n}: {failure}").format(n=steps["n"], failure=error)) from None
