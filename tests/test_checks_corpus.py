"""A corpus of learners' answers to every code exercise of the six notebooks: the slips a CS336 student makes (sign,
off-by-one, wrong axis, population vs unbiased std, where eps goes, detach missing or misplaced, in-place edits, a list
or a numpy array returned, wrong dtype or shape, NaN), each with what its checker must say, and correct answers written
differently from the reference, which must pass.

An answer's `expect` is one of:
- "correct": the checker must say Correct;
- a library Mistake's name ("divides_by_std", "unbiased_std+eps_in_var"): the checker must name exactly that one;
- "~words": a diagnosis that is not a library entry (a shape, a type, an exception explained, a stage of a whole step),
  recognised by words of its message; the message must then name no library mistake.

`python tests/checks_corpus.py` prints, per exercise, how many wrong answers got only "the values are off" (a generic
message): run it with the package of main and of a branch to compare them.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rlvr import objectives, task
from rlvr.config import STRICT_ENV
from rlvr.model import response_logps, sample
from synthetic_runs import run_with

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Answer:
    """One learner's answer: the exercise (module.name), what the learner did, their function(s), what must be said."""

    exercise: str
    slip: str
    fn: Callable | tuple
    expect: str
    args: tuple = ()  # what check() takes after the function(s): notebook 06's runs

    @property
    def id(self) -> str:
        """A test id: exercise and function name."""
        fns = self.fn if isinstance(self.fn, tuple) else (self.fn,)
        return f"{self.exercise}:{'+'.join(f.__name__ for f in fns)}"


CORPUS: list[Answer] = []


def answer(exercise: str, expect: str, args: tuple = ()):
    """Decorator: add the function to the corpus (its docstring says what the learner did; `args` follow it in
    check())."""

    def add(fn):
        CORPUS.append(Answer(exercise, (fn.__doc__ or "").strip(), fn, expect, args))
        return fn

    return add


# =============================================================================================== 01: mean baseline
MEAN = "nb01.mean_baseline"


@answer(MEAN, "correct")
def mean_loop_float64(rewards, group_size):
    """A loop over groups in float64."""
    return torch.cat([g - g.sum() / group_size for g in rewards.double().split(group_size)])


@answer(MEAN, "correct")
def mean_repeat_interleave(rewards, group_size):
    """Group means spread back with repeat_interleave."""
    return rewards - rewards.view(-1, group_size).mean(dim=1).repeat_interleave(group_size)


@answer(MEAN, "correct")
def mean_unflatten(rewards, group_size):
    """unflatten and flatten."""
    r = rewards.unflatten(0, (-1, group_size))
    return (r - r.mean(-1, keepdim=True)).flatten()


@answer(MEAN, "divides_by_std")
def mean_divides_by_unbiased_std(rewards, group_size):
    """Also divides by the std: torch's default (unbiased) std, eps 1e-8."""
    r = rewards.view(-1, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-8)).reshape(-1)


@answer(MEAN, "divides_by_std")
def mean_divides_by_std_no_eps(rewards, group_size):
    """Also divides by the population std, without eps (NaN on all-equal groups)."""
    r = rewards.view(-1, group_size)
    return ((r - r.mean(1, keepdim=True)) / r.std(1, keepdim=True, correction=0)).reshape(-1)


@answer(MEAN, "divides_by_std")
def mean_divides_by_std_eps4(rewards, group_size):
    """Also divides by the unbiased std plus 1e-4 (TRL's GRPO)."""
    r = rewards.view(-1, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).reshape(-1)


@answer(MEAN, "batch_mean")
def mean_of_batch(rewards, group_size):
    """The batch's mean."""
    return rewards - rewards.mean()


@answer(MEAN, "stats_over_prompts")
def mean_wrong_dim(rewards, group_size):
    """Right shape [P, G], mean over dim 0 (across prompts)."""
    r = rewards.view(-1, group_size)
    return (r - r.mean(dim=0, keepdim=True)).reshape(-1)


@answer(MEAN, "tiled_baselines")
def mean_repeat_not_interleave(rewards, group_size):
    """Group means spread back with repeat (tiled) instead of repeat_interleave."""
    return rewards - rewards.view(-1, group_size).mean(dim=1).repeat(group_size)


@answer(MEAN, "sign")
def mean_sign(rewards, group_size):
    """Baseline minus reward."""
    r = rewards.view(-1, group_size)
    return (r.mean(1, keepdim=True) - r).reshape(-1)


@answer(MEAN, "baseline_only")
def mean_returns_baseline(rewards, group_size):
    """Returns the group means, one per answer."""
    r = rewards.view(-1, group_size)
    return r.mean(1, keepdim=True).expand_as(r).reshape(-1)


@answer(MEAN, "not_flattened")
def mean_not_flattened(rewards, group_size):
    """Forgets to flatten."""
    r = rewards.view(-1, group_size)
    return r - r.mean(1, keepdim=True)


@answer(MEAN, "in_place")
def mean_in_place(rewards, group_size):
    """Subtracts in place on a view of the rewards."""
    r = rewards.view(-1, group_size)
    r -= r.mean(1, keepdim=True)
    return rewards


@answer(MEAN, "~but a torch.Tensor was expected")
def mean_returns_list(rewards, group_size):
    """Returns a Python list."""
    r = rewards.view(-1, group_size)
    return [float(x) for x in (r - r.mean(1, keepdim=True)).reshape(-1)]


@answer(MEAN, "~different shapes were combined")
def mean_no_keepdim(rewards, group_size):
    """Group means without keepdim: [P, G] - [P]."""
    r = rewards.view(-1, group_size)
    return (r - r.mean(1)).reshape(-1)


@answer(MEAN, "columns")
def mean_columns(rewards, group_size):
    """view(group_size, -1): groups are columns."""
    r = rewards.view(group_size, -1)
    return (r - r.mean(0, keepdim=True)).reshape(-1)


@answer(MEAN, "mean_divides_by_g_minus_1")
def mean_over_g_minus_1(rewards, group_size):
    """Sum over G - 1."""
    r = rewards.view(-1, group_size)
    return (r - r.sum(1, keepdim=True) / (group_size - 1)).reshape(-1)


@answer(MEAN, "leave_one_out")
def mean_leave_one_out(rewards, group_size):
    """RLOO handed in."""
    r = rewards.view(-1, group_size)
    return (r - (r.sum(1, keepdim=True) - r) / (group_size - 1)).reshape(-1)


# =============================================================================================== 01: RLOO
RLOO = "nb01.rloo"


@answer(RLOO, "correct")
def rloo_loop(rewards, group_size):
    """A loop over the answers of each group."""
    r = rewards.view(-1, group_size)
    out = torch.empty_like(r)
    for i in range(group_size):
        others = torch.cat([r[:, :i], r[:, i + 1 :]], dim=1)
        out[:, i] = r[:, i] - others.mean(dim=1)
    return out.reshape(-1)


@answer(RLOO, "correct")
def rloo_scaled_mean(rewards, group_size):
    """The identity A = G / (G - 1) (r - mean)."""
    r = rewards.view(-1, group_size)
    return (group_size / (group_size - 1) * (r - r.mean(1, keepdim=True))).reshape(-1)


@answer(RLOO, "divides_by_g")
def rloo_over_g(rewards, group_size):
    """Sum of the others over G."""
    r = rewards.view(-1, group_size)
    return (r - (r.sum(1, keepdim=True) - r) / group_size).reshape(-1)


@answer(RLOO, "group_mean")
def rloo_loop_keeps_itself(rewards, group_size):
    """Off by one in the loop's slice: the answer itself stays among the 'others'."""
    r = rewards.view(-1, group_size)
    out = torch.empty_like(r)
    for i in range(group_size):
        others = torch.cat([r[:, :i], r[:, i:]], dim=1)
        out[:, i] = r[:, i] - others.mean(dim=1)
    return out.reshape(-1)


@answer(RLOO, "over_batch")
def rloo_over_batch(rewards, group_size):
    """Leaves one out of the whole batch."""
    return rewards - (rewards.sum() - rewards) / (rewards.numel() - 1)


@answer(RLOO, "sign")
def rloo_sign(rewards, group_size):
    """Others' mean minus reward."""
    r = rewards.view(-1, group_size)
    return ((r.sum(1, keepdim=True) - r) / (group_size - 1) - r).reshape(-1)


@answer(RLOO, "baseline_only")
def rloo_baseline_only(rewards, group_size):
    """Returns the others' mean."""
    r = rewards.view(-1, group_size)
    return ((r.sum(1, keepdim=True) - r) / (group_size - 1)).reshape(-1)


@answer(RLOO, "in_place")
def rloo_in_place(rewards, group_size):
    """Subtracts the baseline in place on a view of the rewards."""
    r = rewards.view(-1, group_size)
    others = (r.sum(1, keepdim=True) - r) / (group_size - 1)
    r -= others
    return r.reshape(-1)


@answer(RLOO, "divides_by_std")
def rloo_divides_by_std(rewards, group_size):
    """RLOO, then also divides by the group's (unbiased) std plus 1e-6."""
    r = rewards.view(-1, group_size)
    loo = r - (r.sum(1, keepdim=True) - r) / (group_size - 1)
    return (loo / (r.std(1, keepdim=True) + 1e-6)).reshape(-1)


@answer(RLOO, "not_flattened")
def rloo_not_flattened(rewards, group_size):
    """Forgets to flatten."""
    r = rewards.view(-1, group_size)
    return r - (r.sum(1, keepdim=True) - r) / (group_size - 1)


# =============================================================================================== 02: clipped objective
CLIP = "nb02.clipped_objective"


@answer(CLIP, "correct")
def clip_by_sign(ratio, advantage, clip_eps=0.2):
    """Splits on the advantage's sign: cap from above for A > 0, from below for A < 0."""
    a = torch.as_tensor(advantage, dtype=ratio.dtype)
    capped = torch.where(a > 0, torch.clamp(ratio, max=1 + clip_eps), torch.clamp(ratio, min=1 - clip_eps))
    return capped * a


@answer(CLIP, "correct")
def clip_minus_max(ratio, advantage, clip_eps=0.2):
    """Minus the max of the negatives."""
    return -torch.maximum(-ratio * advantage, -torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage)


@answer(CLIP, "max_for_min")
def clip_max(ratio, advantage, clip_eps=0.2):
    """max instead of min."""
    return torch.max(ratio * advantage, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage)


@answer(CLIP, "clamp_bounds_swapped")
def clip_bounds_swapped(ratio, advantage, clip_eps=0.2):
    """clamp's min and max arguments swapped."""
    return torch.min(ratio * advantage, torch.clamp(ratio, 1 + clip_eps, 1 - clip_eps) * advantage)


@answer(CLIP, "clip_upper_side_only")
def clip_upper_side_only(ratio, advantage, clip_eps=0.2):
    """Clips the ratio from above only, then takes the min."""
    return torch.min(ratio * advantage, torch.clamp(ratio, max=1 + clip_eps) * advantage)


@answer(CLIP, "clip_lower_side_only")
def clip_lower_side_only(ratio, advantage, clip_eps=0.2):
    """Clips the ratio from below only, then takes the min."""
    return torch.min(ratio * advantage, torch.clamp(ratio, min=1 - clip_eps) * advantage)


@answer(CLIP, "loss_sign")
def clip_returns_loss(ratio, advantage, clip_eps=0.2):
    """Returns the loss (minus the objective)."""
    return -torch.min(ratio * advantage, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage)


@answer(CLIP, "clipped_detached")
def clip_detached(ratio, advantage, clip_eps=0.2):
    """Detaches the ratio inside the clipped term."""
    return torch.min(ratio * advantage, torch.clamp(ratio.detach(), 1 - clip_eps, 1 + clip_eps) * advantage)


@answer(CLIP, "~Python's min")
def clip_python_min(ratio, advantage, clip_eps=0.2):
    """Python's min on two tensors."""
    return min(ratio * advantage, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage)


@answer(CLIP, "~changes an input tensor in place")
def clip_in_place(ratio, advantage, clip_eps=0.2):
    """clamp_ on the ratio itself."""
    unclipped = ratio * advantage
    return torch.min(unclipped, ratio.clamp_(1 - clip_eps, 1 + clip_eps) * advantage)


@answer(CLIP, "~a numpy array but a torch.Tensor was expected")
def clip_numpy(ratio, advantage, clip_eps=0.2):
    """Computes in numpy."""
    r = ratio.detach().numpy()
    a = np.asarray(advantage)
    return np.minimum(r * a, np.clip(r, 1 - clip_eps, 1 + clip_eps) * a)


@answer(CLIP, "fixed_eps")
def clip_fixed_eps(ratio, advantage, clip_eps=0.2):
    """Band fixed at 0.2."""
    return torch.min(ratio * advantage, torch.clamp(ratio, 0.8, 1.2) * advantage)


@answer(CLIP, "averaged")
def clip_mean(ratio, advantage, clip_eps=0.2):
    """Returns the mean."""
    return torch.min(ratio * advantage, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage).mean()


@answer(CLIP, "max_for_min")
def clip_by_sign_swapped(ratio, advantage, clip_eps=0.2):
    """Splits on the sign, each side's cap on the wrong side (the same numbers as keeping the larger term)."""
    a = torch.as_tensor(advantage, dtype=ratio.dtype)
    capped = torch.where(a > 0, torch.clamp(ratio, min=1 - clip_eps), torch.clamp(ratio, max=1 + clip_eps))
    return capped * a


# =============================================================================================== 03: GRPO advantages
GRPO = "nb03.grpo_advantages"


def _grpo_rows(rewards, group_size):
    return rewards.view(-1, group_size)


@answer(GRPO, "correct")
def grpo_loop(rewards, group_size, eps=0.0):
    """A loop, the variance by hand."""
    out = []
    for g in rewards.split(group_size):
        m = g.mean()
        out.append((g - m) / (((g - m) ** 2).mean().sqrt() + eps))
    return torch.cat(out)


@answer(GRPO, "correct")
def grpo_var_unbiased_false(rewards, group_size, eps=0.0):
    """var(unbiased=False).sqrt()."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.var(1, unbiased=False, keepdim=True).sqrt() + eps)).flatten()


@answer(GRPO, "unbiased_std")
def grpo_torch_std(rewards, group_size, eps=0.0):
    """torch's default std (unbiased)."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + eps)).flatten()


@answer(GRPO, "unbiased_std+eps_in_var")
def grpo_sqrt_var_eps(rewards, group_size, eps=0.0):
    """sqrt(var + eps) with torch's default (unbiased) var."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / torch.sqrt(r.var(1, keepdim=True) + eps)).flatten()


@answer(GRPO, "eps_in_var")
def grpo_sqrt_pop_var_eps(rewards, group_size, eps=0.0):
    """sqrt(population var + eps)."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / torch.sqrt(r.var(1, keepdim=True, unbiased=False) + eps)).flatten()


@answer(GRPO, "eps_ignored")
def grpo_no_eps(rewards, group_size, eps=0.0):
    """No eps: NaN on an all-equal group."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / r.std(1, keepdim=True, correction=0)).flatten()


@answer(GRPO, "unbiased_std+eps_ignored_guarded")
def grpo_unbiased_nan_to_num(rewards, group_size, eps=0.0):
    """Unbiased std, no eps, NaN patched to 0."""
    r = _grpo_rows(rewards, group_size)
    return torch.nan_to_num((r - r.mean(1, keepdim=True)) / r.std(1, keepdim=True)).flatten()


@answer(GRPO, "eps_ignored_guarded")
def grpo_own_eps(rewards, group_size, eps=0.0):
    """Ignores the eps argument and adds its own 1e-8."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True, correction=0) + 1e-8)).flatten()


@answer(GRPO, "eps_after")
def grpo_eps_after(rewards, group_size, eps=0.0):
    """Adds eps after dividing."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / r.std(1, keepdim=True, correction=0) + eps).flatten()


@answer(GRPO, "eps_floor")
def grpo_eps_floor(rewards, group_size, eps=0.0):
    """clamp(min=eps) on the std."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / r.std(1, keepdim=True, correction=0).clamp(min=eps)).flatten()


@answer(GRPO, "batch_normalised")
def grpo_batch(rewards, group_size, eps=0.0):
    """Normalises over the whole batch."""
    return (rewards - rewards.mean()) / (rewards.std(correction=0) + eps)


@answer(GRPO, "batch_std")
def grpo_batch_std(rewards, group_size, eps=0.0):
    """Group mean, batch std."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / (rewards.std(correction=0) + eps)).flatten()


@answer(GRPO, "columns")
def grpo_columns(rewards, group_size, eps=0.0):
    """view(group_size, -1), statistics over dim 0."""
    r = rewards.view(group_size, -1)
    return ((r - r.mean(0, keepdim=True)) / (r.std(0, keepdim=True, correction=0) + eps)).flatten()


@answer(GRPO, "stats_over_prompts")
def grpo_wrong_dim(rewards, group_size, eps=0.0):
    """Right shape [P, G], statistics over dim 0."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(0, keepdim=True)) / (r.std(0, keepdim=True, correction=0) + eps)).flatten()


@answer(GRPO, "sign")
def grpo_sign(rewards, group_size, eps=0.0):
    """Mean minus reward."""
    r = _grpo_rows(rewards, group_size)
    return ((r.mean(1, keepdim=True) - r) / (r.std(1, keepdim=True, correction=0) + eps)).flatten()


@answer(GRPO, "in_place")
def grpo_in_place(rewards, group_size, eps=0.0):
    """sub_ and div_ on a view of the rewards."""
    r = _grpo_rows(rewards, group_size)
    std = r.std(1, keepdim=True, correction=0)
    r.sub_(r.mean(1, keepdim=True)).div_(std + eps)
    return r.flatten()


@answer(GRPO, "~but a torch.Tensor was expected")
def grpo_list(rewards, group_size, eps=0.0):
    """Returns a list."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True, correction=0) + eps)).flatten().tolist()


@answer(GRPO, "divides_by_variance")
def grpo_variance(rewards, group_size, eps=0.0):
    """Divides by the variance."""
    r = _grpo_rows(rewards, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.var(1, keepdim=True, unbiased=False) + eps)).flatten()


@answer(GRPO, "no_std")
def grpo_no_std(rewards, group_size, eps=0.0):
    """Forgets the std."""
    r = _grpo_rows(rewards, group_size)
    return (r - r.mean(1, keepdim=True)).flatten()


# =============================================================================================== 03: Dr. GRPO
DR = "nb03.dr_grpo_advantages"


@answer(DR, "correct")
def dr_loop(rewards, group_size):
    """A loop over groups."""
    return torch.cat([g - g.mean() for g in rewards.split(group_size)])


@answer(DR, "divides_by_std")
def dr_still_std_unbiased(rewards, group_size):
    """Keeps GRPO's division, unbiased std + 1e-4."""
    r = rewards.view(-1, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).flatten()


@answer(DR, "divides_by_std")
def dr_still_std_eps8(rewards, group_size):
    """Keeps GRPO's division, population std + 1e-8."""
    r = rewards.view(-1, group_size)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True, correction=0) + 1e-8)).flatten()


@answer(DR, "leave_one_out")
def dr_loo(rewards, group_size):
    """Leave-one-out mean."""
    r = rewards.view(-1, group_size)
    return (r - (r.sum(1, keepdim=True) - r) / (group_size - 1)).flatten()


@answer(DR, "batch_mean")
def dr_batch_mean(rewards, group_size):
    """Batch mean."""
    return rewards - rewards.mean()


@answer(DR, "divided_by_group_size")
def dr_divides_by_g(rewards, group_size):
    """Divides the centred rewards by G."""
    r = rewards.view(-1, group_size)
    return ((r - r.mean(1, keepdim=True)) / group_size).flatten()


@answer(DR, "stats_over_prompts")
def dr_wrong_dim(rewards, group_size):
    """Mean over dim 0 of [P, G]."""
    r = rewards.view(-1, group_size)
    return (r - r.mean(0, keepdim=True)).flatten()


@answer(DR, "sign")
def dr_sign(rewards, group_size):
    """Mean minus reward."""
    r = rewards.view(-1, group_size)
    return (r.mean(1, keepdim=True) - r).flatten()


@answer(DR, "not_flattened")
def dr_not_flattened(rewards, group_size):
    """Forgets to flatten."""
    r = rewards.view(-1, group_size)
    return r - r.mean(1, keepdim=True)


# =============================================================================================== 03: pass@k
PASS = "nb03.pass_at_k"


@answer(PASS, "correct")
def pass_comb_no_guard(n, c, k):
    """comb without the n - c < k guard (math.comb is 0 there)."""
    return 1 - math.comb(n - c, k) / math.comb(n, k)


@answer(PASS, "correct")
def pass_numpy_product(n, c, k):
    """Chen et al.'s numpy product form."""
    if n - c < k:
        return 1.0
    return 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))


@answer(PASS, "correct")
def pass_swapped_identity(n, c, k):
    """The identity C(n-c, k)/C(n, k) = C(n-k, c)/C(n, c)."""
    return 1 - math.comb(n - k, c) / math.comb(n, c) if n >= k else 1.0


@answer(PASS, "~the value is off")
def pass_monte_carlo(n, c, k):
    """Estimates pass@k by drawing 2000 random subsets of k samples (seeded)."""
    rng = np.random.default_rng(0)
    samples = np.array([1] * c + [0] * (n - c))
    draws = [rng.choice(samples, size=k, replace=False).any() for _ in range(2000)]
    return float(np.mean(draws))


@answer(PASS, "with_replacement")
def pass_with_replacement(n, c, k):
    """1 - (1 - c/n)^k."""
    return 1 - (1 - c / n) ** k


@answer(PASS, "with_replacement")
def pass_with_replacement_guarded(n, c, k):
    """1 - (1 - p)^k with the n - c < k guard kept."""
    if n - c < k:
        return 1.0
    p = c / n
    return 1 - (1 - p) ** k


@answer(PASS, "with_replacement")
def pass_with_replacement_tensor(n, c, k):
    """1 - (1 - p)^k on a float32 tensor."""
    p = torch.tensor(c / n)
    return 1 - (1 - p) ** k


@answer(PASS, "product_one_term_too_many")
def pass_product_off_by_one_start(n, c, k):
    """Product from n - c."""
    if n - c < k:
        return 1.0
    return 1.0 - np.prod(1.0 - k / np.arange(n - c, n + 1))


@answer(PASS, "product_stops_early")
def pass_product_off_by_one_end(n, c, k):
    """np.arange's end left at n: the product stops at n - 1."""
    if n - c < k:
        return 1.0
    return 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n))


@answer(PASS, "all_wrong")
def pass_forgets_one_minus(n, c, k):
    """Forgets the 1 -."""
    return math.comb(n - c, k) / math.comb(n, k)


@answer(PASS, "pass_at_1")
def pass_ignores_k(n, c, k):
    """c / n."""
    return c / n


@answer(PASS, "percent")
def pass_percent(n, c, k):
    """A percentage."""
    return 100 * (1 - math.comb(n - c, k) / math.comb(n, k))


@answer(PASS, "union_bound")
def pass_union(n, c, k):
    """k c / n capped at 1."""
    return min(1.0, k * c / n)


@answer(PASS, "integer_division")
def pass_floor_division(n, c, k):
    """// instead of /."""
    return 1 - math.comb(n - c, k) // math.comb(n, k)


# =============================================================================================== 03: k3 (Exercise 7(b))
K3 = "nb03.kl_k3"


@answer(K3, "correct")
def k3_exp_minus_one(logps, ref_logps):
    """exp(l) - 1 - l with exp instead of expm1."""
    log_r = ref_logps - logps
    return torch.exp(log_r) - 1 - log_r


@answer(K3, "correct")
def k3_ratio(logps, ref_logps):
    """The ratio written out: r - 1 - log r, r = pi_ref / pi_theta."""
    ratio = torch.exp(ref_logps) / torch.exp(logps)
    return ratio - 1 - torch.log(ratio)


@answer(K3, "k1")
def k3_is_k1(logps, ref_logps):
    """k1, the log-ratio of the policy over the reference."""
    return logps - ref_logps


@answer(K3, "k2")
def k3_is_k2(logps, ref_logps):
    """k2: half the squared log-ratio."""
    return (logps - ref_logps).pow(2) / 2


@answer(K3, "swapped")
def k3_swapped(logps, ref_logps):
    """l taken as logps - ref_logps."""
    log_r = logps - ref_logps
    return torch.expm1(log_r) - log_r


@answer(K3, "no_log_term")
def k3_ratio_minus_one(logps, ref_logps):
    """The ratio minus one, without the log term."""
    return torch.exp(ref_logps - logps) - 1


@answer(K3, "no_minus_one")
def k3_no_minus_one(logps, ref_logps):
    """Forgets the -1."""
    log_r = ref_logps - logps
    return log_r.exp() - log_r


@answer(K3, "averaged")
def k3_mean(logps, ref_logps):
    """Returns the mean penalty, one number."""
    log_r = ref_logps - logps
    return (torch.expm1(log_r) - log_r).mean()


@answer(K3, "~detached")
def k3_no_grad(logps, ref_logps):
    """Computes the penalty under torch.no_grad()."""
    with torch.no_grad():
        log_r = ref_logps - logps
        return torch.expm1(log_r) - log_r


@answer(K3, "~NaN")
def k3_log_of_difference(logps, ref_logps):
    """Takes the log of the difference of the probabilities."""
    ratio = torch.exp(ref_logps) - torch.exp(logps)
    return ratio - 1 - torch.log(ratio)


# =============================================================================================== 04: clip fraction
FRAC = "nb04.clip_fraction"


def _ratio(logps, old_logps):
    return torch.exp(logps - old_logps)


@answer(FRAC, "correct")
def frac_terms_compared(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Clipped where the clipped term is strictly smaller than the unclipped one; masked mean."""
    ratio = _ratio(logps, old_logps)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages
    return (clipped < unclipped)[response_mask].float().mean().item()


@answer(FRAC, "correct")
def frac_package(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """The package's ppo_clip_loss and masked_mean; returns a 0-dim tensor."""
    _, clipped = objectives.ppo_clip_loss(logps, old_logps, advantages, clip_eps)
    return objectives.masked_mean(clipped.float(), response_mask)


@answer(FRAC, "two_sided")
def frac_two_sided(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """CleanRL's |ratio - 1| > eps."""
    ratio = _ratio(logps, old_logps)
    return ((ratio - 1).abs() > clip_eps)[response_mask].float().mean().item()


@answer(FRAC, "two_sided_nonzero")
def frac_terms_differ(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Counted where the two terms differ."""
    ratio = _ratio(logps, old_logps)
    differ = ratio * advantages != torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages
    return differ[response_mask].float().mean().item()


@answer(FRAC, "ties_counted")
def frac_min_is_clipped(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Counted where the min equals the clipped term (ties included)."""
    ratio = _ratio(logps, old_logps)
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages
    return (torch.minimum(ratio * advantages, clipped) == clipped)[response_mask].float().mean().item()


@answer(FRAC, "sides_swapped")
def frac_sides_swapped(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Above the band with A < 0, below with A > 0."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages < 0) & (ratio > 1 + clip_eps)) | ((advantages > 0) & (ratio < 1 - clip_eps))
    return hit[response_mask].float().mean().item()


@answer(FRAC, "upper_only")
def frac_upper_only(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Only above the band."""
    ratio = _ratio(logps, old_logps)
    return ((advantages > 0) & (ratio > 1 + clip_eps))[response_mask].float().mean().item()


@answer(FRAC, "no_mask")
def frac_no_mask(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Mean over every position."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return hit.float().mean().item()


@answer(FRAC, "padding_in_numerator")
def frac_padding_counted(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Counts clipped tokens everywhere, divides by the real tokens."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return (hit.sum() / response_mask.sum()).item()


@answer(FRAC, "padding_in_denominator")
def frac_all_positions(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Counts real clipped tokens, divides by every position."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return ((hit & response_mask).sum() / response_mask.numel()).item()


@answer(FRAC, "per_answer_mean")
def frac_per_answer(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Mean per answer, then over answers."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    m = response_mask.float()
    return ((hit.float() * m).sum(1) / m.sum(1)).mean().item()


@answer(FRAC, "no_mask")
def frac_per_answer_padded(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Mean over each answer's T positions, then over answers (every row has T: the mean over all positions)."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return hit.float().mean(dim=1).mean().item()


@answer(FRAC, "sides_swapped+no_mask")
def frac_swapped_unmasked(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Wrong side, over every position."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages < 0) & (ratio > 1 + clip_eps)) | ((advantages > 0) & (ratio < 1 - clip_eps))
    return hit.float().mean().item()


@answer(FRAC, "two_sided+no_mask")
def frac_two_sided_unmasked(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """CleanRL's two-sided count, over every position."""
    return ((_ratio(logps, old_logps) - 1).abs() > clip_eps).float().mean().item()


@answer(FRAC, "log_ratio_band")
def frac_log_ratio(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Compares the log ratio with +-eps."""
    log_ratio = logps - old_logps
    hit = ((advantages > 0) & (log_ratio > clip_eps)) | ((advantages < 0) & (log_ratio < -clip_eps))
    return hit[response_mask].float().mean().item()


@answer(FRAC, "inverted_ratio")
def frac_inverted(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """old / new."""
    ratio = _ratio(old_logps, logps)
    hit = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return hit[response_mask].float().mean().item()


@answer(FRAC, "count")
def frac_count(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Returns the count."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return int(hit[response_mask].sum())


@answer(FRAC, "~boolean tensor")
def frac_bool_mean(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """mean() of a boolean tensor."""
    ratio = _ratio(logps, old_logps)
    hit = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))
    return hit[response_mask].mean().item()


# =============================================================================================== 04: PPO pieces
PIECES = "nb04.ppo_pieces"


def gae_right(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """A right GAE (the solution's loop)."""
    return objectives.gae(rewards, values, response_mask, gamma, lam)


def value_loss_right(values, returns, response_mask):
    """A right value loss."""
    m = response_mask.float()
    return ((values - returns) ** 2 * m).sum() / m.sum()


def _gae_loop(rewards, values, response_mask, gamma, lam, forwards=False, swap=False):
    """A learner's GAE loop; `forwards` runs it from the first token, `swap` mixes gamma and lam up."""
    m = response_mask.float()
    v = values * m
    g, l_ = (lam, gamma) if swap else (gamma, lam)
    adv = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0])
    T = rewards.shape[1]
    steps = range(T) if forwards else reversed(range(T))
    for t in steps:
        if forwards:
            next_v = v[:, t - 1] if t > 0 else torch.zeros(rewards.shape[0])
        else:
            next_v = v[:, t + 1] if t + 1 < T else torch.zeros(rewards.shape[0])
        delta = rewards[:, t] + g * next_v - v[:, t]
        running = (delta + g * l_ * running) * m[:, t]
        adv[:, t] = running
    return adv, (adv + v) * m


def gae_vectorised_mask_shift(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """A right GAE: next values from a shifted, masked copy."""
    m = response_mask.float()
    v = values * m
    next_v = torch.cat([v[:, 1:], torch.zeros_like(v[:, :1])], dim=1)
    delta = (rewards + gamma * next_v - v) * m
    adv = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        running = delta[:, t] + gamma * lam * running * m[:, t]
        adv[:, t] = running
    return adv * m, (adv + v) * m


def value_loss_mse_selected(values, returns, response_mask):
    """A right value loss: F.mse_loss on the real tokens."""
    return F.mse_loss(values[response_mask], returns[response_mask])


def gae_forwards(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """The recursion runs forwards."""
    return _gae_loop(rewards, values, response_mask, gamma, lam, forwards=True)


def gae_gamma_lam_swapped(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """gamma and lam mixed up."""
    return _gae_loop(rewards, values, response_mask, gamma, lam, swap=True)


def gae_no_mask(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Ignores the mask."""
    return objectives.gae(rewards, values, torch.ones_like(response_mask), gamma, lam)


def gae_no_lambda(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Forgets lambda."""
    return objectives.gae(rewards, values, response_mask, gamma, 1.0)


def gae_forwards_no_lambda(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Two slips at once: forwards, and lambda left out."""
    return _gae_loop(rewards, values, response_mask, gamma, 1.0, forwards=True)


def gae_returns_are_advantages(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Returns the advantages as returns."""
    adv, _ = objectives.gae(rewards, values, response_mask, gamma, lam)
    return adv, adv


def gae_bootstrap_from_padding(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Next value read from the unmasked values (off by one at each answer's end)."""
    m = response_mask.float()
    adv = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    T = rewards.shape[1]
    for t in reversed(range(T)):
        next_v = values[:, t + 1] if t + 1 < T else torch.zeros_like(running)
        delta = rewards[:, t] + gamma * next_v - values[:, t] * m[:, t]
        running = (delta + gamma * lam * running) * m[:, t]
        adv[:, t] = running
    return adv, (adv + values) * m


def gae_transposed(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Works on [T, B] and returns it so."""
    adv, ret = objectives.gae(rewards, values, response_mask, gamma, lam)
    return adv.T.contiguous(), ret.T.contiguous()


def gae_numpy(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Returns numpy arrays."""
    adv, ret = objectives.gae(rewards, values, response_mask, gamma, lam)
    return adv.numpy(), ret.numpy()


def gae_edits_values(rewards, values, response_mask, gamma=1.0, lam=1.0):
    """Masks the values in place."""
    values.mul_(response_mask)
    return objectives.gae(rewards, values, response_mask, gamma, lam)


def value_loss_unmasked(values, returns, response_mask):
    """F.mse_loss over every position."""
    return F.mse_loss(values, returns)


def value_loss_half(values, returns, response_mask):
    """0.5 times the MSE."""
    m = response_mask.float()
    return 0.5 * ((values - returns) ** 2 * m).sum() / m.sum()


def value_loss_per_answer(values, returns, response_mask):
    """Mean per answer, then over answers."""
    m = response_mask.float()
    return (((values - returns) ** 2 * m).sum(1) / m.sum(1)).mean()


def value_loss_per_answer_padded(values, returns, response_mask):
    """Masked squared error, mean over each answer's T positions, then over answers."""
    return (((values - returns) ** 2) * response_mask).mean(dim=1).mean()


def value_loss_item(values, returns, response_mask):
    """Returns .item()."""
    m = response_mask.float()
    return (((values - returns) ** 2 * m).sum() / m.sum()).item()


def value_loss_detached(values, returns, response_mask):
    """Detaches the values."""
    m = response_mask.float()
    return ((values.detach() - returns) ** 2 * m).sum() / m.sum()


def value_loss_abs(values, returns, response_mask):
    """Absolute error."""
    m = response_mask.float()
    return ((values - returns).abs() * m).sum() / m.sum()


for _fns, _expect in [
    ((gae_vectorised_mask_shift, value_loss_mse_selected), "correct"),
    ((gae_forwards, value_loss_right), "~you run the recursion forwards"),
    ((gae_gamma_lam_swapped, value_loss_right), "~gamma and lambda are swapped"),
    ((gae_no_mask, value_loss_right), "~padding is treated as answer tokens"),
    ((gae_no_lambda, value_loss_right), "~lambda is missing"),
    ((gae_forwards_no_lambda, value_loss_right), "~you run the recursion forwards"),
    ((gae_returns_are_advantages, value_loss_right), "~your returns are the advantages"),
    ((gae_bootstrap_from_padding, value_loss_right), "~bootstrap from the value the model predicts on the padding"),
    ((gae_transposed, value_loss_right), "~[T, B]"),
    ((gae_numpy, value_loss_right), "~numpy array"),
    ((gae_edits_values, value_loss_right), "~changes its input `values` in place"),
    ((gae_right, value_loss_unmasked), "~padding is counted"),
    ((gae_right, value_loss_half), "~no factor 1/2"),
    ((gae_right, value_loss_per_answer), "~you average each answer's tokens first"),
    ((gae_right, value_loss_per_answer_padded), "~you divide the sum over the real tokens by every position"),
    ((gae_right, value_loss_item), "~return one scalar tensor"),
    ((gae_right, value_loss_detached), "~detached from the values"),
    ((gae_right, value_loss_abs), "~ABSOLUTE error"),
]:
    CORPUS.append(Answer(PIECES, " / ".join(f.__doc__ for f in _fns), _fns, _expect))


# =============================================================================================== 05: sequence loss
SEQ = "nb05.sequence_loss"


def _seq_sums(x, m):
    return (x * m).sum(dim=1)


@answer(SEQ, "correct")
def seq_loop(per_token_loss, response_mask, mode="grpo", max_len=None):
    """A loop over answers."""
    per_answer = []
    for row, mask in zip(per_token_loss, response_mask):
        total = row[mask].sum()
        per_answer.append(total / (mask.sum() if mode == "grpo" else max_len))
    return torch.stack(per_answer).mean()


@answer(SEQ, "correct")
def seq_dr_one_sum(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Dr. GRPO as one sum over B * max_len."""
    m = response_mask.float()
    if mode == "grpo":
        return (_seq_sums(per_token_loss, m) / m.sum(1)).mean()
    return (per_token_loss * m).sum() / (per_token_loss.shape[0] * max_len)


@answer(SEQ, "batch_token_mean")
def seq_token_mean_grpo(per_token_loss, response_mask, mode="grpo", max_len=None):
    """GRPO mode: one token mean over the batch (boolean indexing)."""
    if mode == "grpo":
        return per_token_loss[response_mask].mean()
    return (_seq_sums(per_token_loss, response_mask) / max_len).mean()


@answer(SEQ, "batch_token_mean+dr_grpo_batch_token_mean")
def seq_token_mean_both(per_token_loss, response_mask, mode="grpo", max_len=None):
    """One token mean over the batch in both modes (max_len ignored)."""
    return per_token_loss[response_mask].mean()


@answer(SEQ, "positions_first")
def seq_positions_first(per_token_loss, response_mask, mode="grpo", max_len=None):
    """GRPO mode: averages over the answers first (dim 0), then over positions."""
    m = response_mask.float()
    if mode == "grpo":
        return ((per_token_loss * m).sum(0) / m.sum(0)).mean()
    return (_seq_sums(per_token_loss, m) / max_len).mean()


@answer(SEQ, "no_mask")
def seq_no_mask(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Sums the padding too."""
    n = response_mask.sum(1) if mode == "grpo" else max_len
    return (per_token_loss.sum(1) / n).mean()


@answer(SEQ, "padded_mean")
def seq_padded_mean(per_token_loss, response_mask, mode="grpo", max_len=None):
    """GRPO mode: .mean(dim=1) of the masked loss."""
    if mode == "grpo":
        return (per_token_loss * response_mask).mean(dim=1).mean()
    return (_seq_sums(per_token_loss, response_mask) / max_len).mean()


@answer(SEQ, "dr_grpo_by_length")
def seq_ignores_mode(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Ignores mode."""
    return (_seq_sums(per_token_loss, response_mask) / response_mask.sum(1)).mean()


@answer(SEQ, "dr_grpo_by_width")
def seq_dr_width(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Dr. GRPO mode divides by the tensor's width."""
    n = response_mask.sum(1) if mode == "grpo" else per_token_loss.shape[1]
    return (_seq_sums(per_token_loss, response_mask) / n).mean()


@answer(SEQ, "dr_grpo_summed")
def seq_dr_sum(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Dr. GRPO mode: the batch's token sum over max_len, not averaged over answers."""
    if mode == "grpo":
        return (_seq_sums(per_token_loss, response_mask) / response_mask.sum(1)).mean()
    return (per_token_loss * response_mask).sum() / max_len


@answer(SEQ, "grpo_token_sum")
def seq_grpo_sum(per_token_loss, response_mask, mode="grpo", max_len=None):
    """GRPO mode forgets the length."""
    n = 1 if mode == "grpo" else max_len
    return (_seq_sums(per_token_loss, response_mask) / n).mean()


@answer(SEQ, "summed_over_answers")
def seq_sum_answers(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Sums over answers."""
    n = response_mask.sum(1) if mode == "grpo" else max_len
    return (_seq_sums(per_token_loss, response_mask) / n).sum()


@answer(SEQ, "~changes an input tensor in place")
def seq_in_place(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Masks the loss in place."""
    per_token_loss *= response_mask
    n = response_mask.sum(1) if mode == "grpo" else max_len
    return (per_token_loss.sum(1) / n).mean()


@answer(SEQ, "~detached")
def seq_item(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Returns a float tensor rebuilt from .item()."""
    n = response_mask.sum(1) if mode == "grpo" else max_len
    return torch.tensor((_seq_sums(per_token_loss, response_mask) / n).mean().item())


# =============================================================================================== 05: length log-prob
LOGP = "nb05.length_logprob"


@answer(LOGP, "correct")
def logp_log_sigmoid(k, logit, cap):
    """log(sigmoid) and log(1 - sigmoid)."""
    p = torch.sigmoid(logit)
    return k * torch.log(p) + torch.where(k < cap, torch.log(1 - p), torch.zeros_like(p))


@answer(LOGP, "stop_charged_at_cap")
def logp_leq_cap(k, logit, cap):
    """k <= cap for the stop."""
    return k * F.logsigmoid(logit) + torch.where(k <= cap, F.logsigmoid(-logit), torch.zeros_like(logit))


@answer(LOGP, "no_stop")
def logp_no_stop(k, logit, cap):
    """Forgets the stop."""
    return k * F.logsigmoid(logit)


@answer(LOGP, "decisions_swapped")
def logp_swapped(k, logit, cap):
    """Continue and stop swapped."""
    return k * F.logsigmoid(-logit) + torch.where(k < cap, F.logsigmoid(logit), torch.zeros_like(logit))


@answer(LOGP, "probability")
def logp_probability(k, logit, cap):
    """Returns the probability."""
    p = torch.sigmoid(logit)
    return p**k * torch.where(k < cap, 1 - p, torch.ones_like(p))


@answer(LOGP, "one_continue_too_many")
def logp_k_plus_one(k, logit, cap):
    """k + 1 continue decisions."""
    return (k + 1) * F.logsigmoid(logit) + torch.where(k < cap, F.logsigmoid(-logit), torch.zeros_like(logit))


@answer(LOGP, "stop_is_continue")
def logp_stop_sign(k, logit, cap):
    """The stop's log-prob without the minus sign."""
    return k * F.logsigmoid(logit) + torch.where(k < cap, F.logsigmoid(logit), torch.zeros_like(logit))


@answer(LOGP, "stop_free_below_cap")
def logp_cap_off_by_one(k, logit, cap):
    """Off by one: the stop is free from cap - 1 on."""
    return k * F.logsigmoid(logit) + torch.where(k < cap - 1, F.logsigmoid(-logit), torch.zeros_like(logit))


@answer(LOGP, "~detached")
def logp_item(k, logit, cap):
    """Uses logit.item()."""
    z = logit.item()
    log_c, log_s = math.log(1 / (1 + math.exp(-z))), math.log(1 / (1 + math.exp(z)))
    return torch.tensor([kk * log_c + (log_s if kk < cap else 0.0) for kk in k.tolist()], dtype=torch.float64)


@answer(LOGP, "~but a torch.Tensor was expected")
def logp_list(k, logit, cap):
    """Returns a list of tensors."""
    return [kk * F.logsigmoid(logit) + (F.logsigmoid(-logit) if kk < cap else 0.0) for kk in k]


# ========================================================================================= 05: Kimi's length reward
KIMI = "nb05.length_reward"


def _lam(lengths):
    return 0.5 - (lengths - lengths.min()) / (lengths.max() - lengths.min())


@answer(KIMI, "correct")
def kimi_from_max(lengths, correct):
    """lambda written from the longest length."""
    lo, hi = lengths.min(), lengths.max()
    if hi == lo:
        return torch.zeros_like(lengths)
    lam = (hi - lengths) / (hi - lo) - 0.5
    return torch.where(correct, lam, torch.clamp(lam, max=0.0))


@answer(KIMI, "correct")
def kimi_float_mask(lengths, correct):
    """The mask as floats."""
    if lengths.max() == lengths.min():
        return torch.zeros_like(lengths)
    lam = _lam(lengths)
    c = correct.float()
    return c * lam + (1 - c) * torch.minimum(lam, torch.zeros_like(lam))


@answer(KIMI, "wrong_answers_get_lambda")
def kimi_ignores_correct(lengths, correct):
    """Ignores correctness."""
    if lengths.max() == lengths.min():
        return torch.zeros_like(lengths)
    return _lam(lengths)


@answer(KIMI, "wrong_answers_get_zero")
def kimi_wrong_zero(lengths, correct):
    """Wrong answers get 0."""
    if lengths.max() == lengths.min():
        return torch.zeros_like(lengths)
    return torch.where(correct, _lam(lengths), torch.zeros_like(lengths))


@answer(KIMI, "wrong_answers_get_positive_part")
def kimi_max_for_min(lengths, correct):
    """max(0, lambda) for wrong answers."""
    if lengths.max() == lengths.min():
        return torch.zeros_like(lengths)
    return torch.where(correct, _lam(lengths), _lam(lengths).clamp(min=0))


@answer(KIMI, "right_and_wrong_swapped")
def kimi_mask_inverted(lengths, correct):
    """~correct where correct belongs."""
    if lengths.max() == lengths.min():
        return torch.zeros_like(lengths)
    return torch.where(~correct, _lam(lengths), _lam(lengths).clamp(max=0))


@answer(KIMI, "lambda_reversed")
def kimi_reversed(lengths, correct):
    """lambda from the shortest's side."""
    if lengths.max() == lengths.min():
        return torch.zeros_like(lengths)
    lam = (lengths - lengths.min()) / (lengths.max() - lengths.min()) - 0.5
    return torch.where(correct, lam, lam.clamp(max=0))


@answer(KIMI, "scaled_by_max")
def kimi_by_max(lengths, correct):
    """Divides by the longest length."""
    lam = 0.5 - (lengths - lengths.min()) / lengths.max()
    return torch.where(correct, lam, lam.clamp(max=0))


@answer(KIMI, "equal_lengths_divide_by_zero")
def kimi_nan(lengths, correct):
    """No equal-length guard."""
    lam = _lam(lengths)
    return torch.where(correct, lam, lam.clamp(max=0))


@answer(KIMI, "equal_lengths_half")
def kimi_eps_guard(lengths, correct):
    """eps in the denominator instead of the guard."""
    lam = 0.5 - (lengths - lengths.min()) / (lengths.max() - lengths.min() + 1e-8)
    return torch.where(correct, lam, lam.clamp(max=0))


@answer(KIMI, "~boolean tensor")
def kimi_bool_arithmetic(lengths, correct):
    """1 - correct on a boolean tensor."""
    if lengths.max() == lengths.min():
        return torch.zeros_like(lengths)
    lam = _lam(lengths)
    return correct * lam + (1 - correct) * lam.clamp(max=0)


@answer(KIMI, "in_place")
def kimi_in_place(lengths, correct):
    """Shifts the lengths in place."""
    if lengths.max() == lengths.min():
        return torch.zeros_like(lengths)
    lengths -= lengths.min()
    lam = 0.5 - lengths / lengths.max()
    return torch.where(correct, lam, lam.clamp(max=0))


# =============================================================================================== 03: the GRPO step
STEP = "nb03.grpo_step"
STEP_KL = "nb03.grpo_step_kl"


def grpo_step_answer(
    std_correction=0,
    eps_where="std",
    broadcast=True,
    ratio="right",
    aggregate="answer",
    sign=1.0,
    zero_grad=True,
    no_grad_logps=False,
    item_before_backward=False,
    sample_keyword="group_size",
    kl="k3",
    kl_where="inside",
    kl_model="ref",
):
    """A learner's step, written out as the notebook's template asks, with one slip at a time."""

    def step(policy, ref, optimizer, prompts, generator, group_size=8, beta=0.0, eps=1e-4, clip_eps=0.2):
        how_many = {sample_keyword: group_size}
        rollout = sample(policy, task.prompt_tokens(prompts), 1.0, generator=generator, **how_many)
        digits = torch.as_tensor(np.repeat(prompts, group_size, axis=0))
        rewards = task.score_batch(digits, rollout.responses)["reward"]
        r = rewards.view(-1, group_size)
        centred = r - r.mean(1, keepdim=True)
        std = r.std(1, keepdim=True, correction=std_correction)
        if eps_where == "std":
            advantages = (centred / (std + eps)).reshape(-1)
        elif eps_where == "var":
            advantages = (centred / torch.sqrt(std**2 + eps)).reshape(-1)
        else:
            advantages = (centred / std).reshape(-1)
        if no_grad_logps:
            with torch.no_grad():
                logps = response_logps(policy, rollout.prompt_ids, rollout.responses, group_size=group_size)
        else:
            logps = response_logps(policy, rollout.prompt_ids, rollout.responses, group_size=group_size)
        if ratio == "right":
            rho = torch.exp(logps - logps.detach())
        elif ratio == "not_detached":
            rho = torch.exp(logps - logps)
        else:
            rho = torch.exp(logps.detach() - logps)
        a = advantages[:, None] if broadcast else advantages
        per_token = -torch.minimum(rho * a, rho.clamp(1 - clip_eps, 1 + clip_eps) * a)
        mask = rollout.response_mask.float()
        if beta > 0 and kl:
            with torch.no_grad():
                frozen = ref if kl_model == "ref" else policy  # "policy": a KL of the policy against itself
                ref_logps = response_logps(frozen, rollout.prompt_ids, rollout.responses, group_size=group_size)
            log_r = ref_logps - logps if kl == "k3" else logps - ref_logps
            k3 = torch.exp(log_r) - 1 - log_r
            if kl_where == "inside":
                per_token = per_token + beta * k3
        if aggregate == "answer":
            loss = ((per_token * mask).sum(1) / mask.sum(1)).mean()
        elif aggregate == "padding":
            loss = per_token.mean()
        elif aggregate == "batch":
            loss = (per_token * mask).sum() / mask.sum()
        else:
            loss = (per_token * mask).sum(1).mean()
        if beta > 0 and kl and kl_where == "batch":
            loss = loss + beta * (k3 * mask).sum() / mask.sum()
        if beta > 0 and kl and kl_where == "every position":
            loss = loss + beta * k3.mean()
        loss = sign * loss
        if item_before_backward:
            loss = loss.item()
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return {"responses": rollout.responses, "rewards": rewards, "advantages": advantages, "loss": float(loss)}

    return step


for _exercise, _knobs, _expect in [
    (STEP, {}, "correct"),
    (STEP_KL, {}, "correct"),
    (STEP, {"sample_keyword": "samples_per_prompt"}, "~`sample()` got an unexpected keyword 'samples_per_prompt'"),
    (STEP, {"std_correction": 1}, "~the unbiased std"),
    (STEP, {"std_correction": 1, "eps_where": "var"}, "~You put eps under the square root"),
    (STEP, {"eps_where": "none"}, "~advantages: NaN or inf"),
    (STEP, {"broadcast": False}, "~different shapes were combined"),
    (STEP, {"ratio": "not_detached"}, "~no gradient flows through the ratio"),
    (STEP, {"ratio": "numerator_detached"}, "~the ratio's numerator is detached"),
    (STEP, {"no_grad_logps": True}, "~your loss is not connected to the parameters"),
    (STEP, {"aggregate": "padding"}, "~loss: padding is counted"),
    (STEP, {"aggregate": "batch"}, "~one token mean over the whole batch"),
    (STEP, {"aggregate": "token_sum"}, "~you sum each answer's tokens instead of averaging them"),
    (STEP, {"sign": -1.0}, "~your gradient points the wrong way"),
    (STEP, {"zero_grad": False}, "~the gradients are never cleared"),
    (STEP, {"item_before_backward": True}, "~has no attribute 'backward'"),
    (STEP_KL, {"kl": "k1"}, "~the log-ratio is the wrong way round"),
    (STEP_KL, {"kl_where": "batch"}, "~over all tokens of the batch at once"),
    (STEP_KL, {"kl_model": "policy"}, "~against itself"),
    (STEP_KL, {"kl_where": "every position"}, "~padding included"),
]:
    _fn = grpo_step_answer(**_knobs)
    _fn.__name__ = "step_" + ("_".join(f"{k}_{v}" for k, v in _knobs.items()) or "right")
    CORPUS.append(Answer(_exercise, str(_knobs or "right"), _fn, _expect))


# =============================================================================================== 06: the mystery runs
MYSTERY = "nb06.mystery"


@answer(MYSTERY, "~2 of 3 right")
def mystery_one_wrong():
    """One run named after the gallery run it resembles most at first sight."""
    return {"A": "flipped_sign", "B": "beta_too_large", "C": "lr_too_high"}


@answer(MYSTERY, "~0 of 3 right")
def mystery_all_wrong():
    """Names shuffled."""
    return {"A": "beta_too_large", "B": "from_scratch", "C": "flipped_sign"}


@answer(MYSTERY, "~is not a gallery run")
def mystery_typo():
    """A misspelled name."""
    return {"A": "flipped_sign", "B": "beta_too_big", "C": "from_scratch"}


@answer(MYSTERY, "~return a dict with one name per mystery run")
def mystery_list():
    """A list instead of a dict."""
    return ["flipped_sign", "beta_too_large", "from_scratch"]


@answer(MYSTERY, "correct")
def mystery_right():
    """The three right names."""
    return {"A": "flipped_sign", "B": "beta_too_large", "C": "from_scratch"}


# ================================================================================= 06: the look-alike and the signal
SECOND = "nb06.second_signal"


RUNS = (  # mystery runs and the healthy run, with seed 0's readings rounded (rlvr.experiments.gallery)
    {
        "mystery A": run_with(
            reward=[0.28] * 5 + [0.05] * 15,
            malformed_fraction=[0.0] * 5 + [0.45] * 15,
            grad_norm=0.5,
            all_same_group_fraction=0.5,
            entropy=[0.5] * 5 + [0.9] * 15,
        ),
        "mystery B": run_with(reward=0.3, malformed_fraction=0.0, grad_norm=0.7, all_same_group_fraction=0.3),
        "mystery C": run_with(reward=0.0, malformed_fraction=1.0, grad_norm=0.0, all_same_group_fraction=1.0),
    },
    run_with(reward=0.6, accuracy=0.6, malformed_fraction=0.0, grad_norm=0.6, all_same_group_fraction=0.2),
)


@answer(SECOND, "correct", RUNS)
def second_right():
    """The model answer."""
    return {
        "A": ("lr_too_high", "malformed_fraction"),
        "B": ("greedy_sampling", "all_same_group_fraction"),
        "C": ("lr_too_high", "malformed_fraction"),
    }


@answer(SECOND, "correct", RUNS)
def second_other_right():
    """A's other look-alike, B's gradient norm."""
    return {
        "A": ("from_scratch", "reward"),
        "B": ("greedy_sampling", "grad_norm"),
        "C": ("lr_too_high", "malformed_fraction"),
    }


@answer(SECOND, "~does not share its most visible symptom", RUNS)
def second_diagnosis_as_lookalike():
    """The breakage itself named as its own look-alike."""
    return {
        "A": ("flipped_sign", "entropy"),
        "B": ("greedy_sampling", "grad_norm"),
        "C": ("lr_too_high", "malformed_fraction"),
    }


@answer(SECOND, "~on your run, reward does not rule out lr_too_high", RUNS)
def second_shared_signal():
    """C told from lr_too_high by the signal they share (no reward)."""
    return {
        "A": ("lr_too_high", "malformed_fraction"),
        "B": ("greedy_sampling", "grad_norm"),
        "C": ("lr_too_high", "reward"),
    }


@answer(SECOND, "~the gallery does not read lr_too_high's symptom from entropy", RUNS)
def second_unread_signal():
    """A told from lr_too_high by its entropy, a signal lr_too_high's symptom is not read from."""
    return {
        "A": ("lr_too_high", "entropy"),
        "B": ("greedy_sampling", "grad_norm"),
        "C": ("lr_too_high", "malformed_fraction"),
    }


@answer(SECOND, "~is not a signal of the history", RUNS)
def second_panel_title():
    """A panel's title instead of its history key."""
    return {
        "A": ("lr_too_high", "malformed answers"),
        "B": ("greedy_sampling", "grad_norm"),
        "C": ("lr_too_high", "malformed_fraction"),
    }


@answer(SECOND, "~give a pair (look-alike, signal)", RUNS)
def second_names_only():
    """Look-alikes without signals."""
    return {"A": "lr_too_high", "B": "greedy_sampling", "C": "lr_too_high"}


# =============================================================================================== reading the verdicts
GENERIC = (  # words of the messages that only say that the output differs, without naming what is wrong
    "the values are off",
    "the value is off",
    "entries differ from the expected values",
    "your output differs from the expected value",
    "GRPO's advantage is (r - mean of the group)",
    "The loss is minus the clipped ratio times the advantage",
    "the loss value is right but its gradient is not",
    "A_t = delta_t + gamma * lam * A_(t+1) from the last token backwards",
    "the mean of (values - returns)^2 over the real tokens differs",
)


UNRECOGNISABLE = {  # answer id -> why its checker cannot name what is wrong (its message shows the values only)
    "nb03.pass_at_k:pass_monte_carlo": (
        "a random estimate: its value is near the right one by chance, not by a formula a library entry could "
        "reproduce (a mistake is named by giving the same outputs on every case)"
    ),
}


def exercise(name: str):
    """The checker object of 'nbNN.name'."""
    module, attribute = name.split(".")
    return getattr(__import__(f"rlvr.checks.{module}", fromlist=[attribute]), attribute)


def verdict(entry: Answer):
    """The checker's Result for an answer."""
    fns = entry.fn if isinstance(entry.fn, tuple) else (entry.fn,)
    return exercise(entry.exercise).check(*fns, *entry.args)


def is_generic(result) -> bool:
    """The message of a wrong answer only says that the values differ (no mistake named, no specific diagnosis)."""
    return not result.passed and not result.mistake and any(words in result.message for words in GENERIC)


def says_what_is_expected(entry: Answer, result) -> str | None:
    """None if the checker's verdict is what the corpus expects for this answer, else what differs."""
    if entry.expect == "correct":
        return None if result.passed else "a correct answer was told it is wrong"
    if result.passed or result.outcome.value == "not attempted":
        return "a wrong answer was not caught"
    if entry.expect.startswith("~"):
        if entry.expect[1:].lower() not in result.message.lower():
            return f"the message does not say {entry.expect[1:]!r}"
        return f"it names the library mistake {result.mistake!r}" if result.mistake else None
    if result.mistake != entry.expect:
        return f"it names {result.mistake or 'no mistake'!r}, not {entry.expect!r}"
    return None


def report() -> None:
    """Print, per exercise, the wrong answers and how many got a generic message (and which)."""
    totals = [0, 0]
    by_exercise: dict[str, list] = {}
    for entry in CORPUS:
        if entry.expect == "correct":
            continue
        result = verdict(entry)
        by_exercise.setdefault(entry.exercise, []).append((entry, result))
    for name, rows in by_exercise.items():
        generic = [entry for entry, result in rows if is_generic(result)]
        totals[0] += len(generic)
        totals[1] += len(rows)
        print(f"{name:28s} {len(generic):3d} generic of {len(rows):3d} wrong answers")
        for entry in generic:
            print(f"    {entry.id}  ({entry.slip})")
    print(f"{'all':28s} {totals[0]:3d} generic of {totals[1]:3d} wrong answers")


# =============================================================================================== the tests
def _library(name: str, mistake: str):
    """The library entry `mistake` of exercise `name`."""
    return next(m for m in exercise(name).mistakes if m.name == mistake)


@pytest.fixture(autouse=True)
def normal_mode(monkeypatch):
    """Outside strict mode, so a wrong answer returns a Result instead of raising."""
    monkeypatch.delenv(STRICT_ENV, raising=False)


@pytest.mark.parametrize("entry", CORPUS, ids=[entry.id for entry in CORPUS])
def test_each_answer_gets_its_own_verdict(entry):
    """Correct answers pass; a wrong one is caught, with its own mistake named and no other."""
    result = verdict(entry)
    problem = says_what_is_expected(entry, result)
    assert problem is None, f"{entry.slip}: {problem}\n{result}"
    if entry.expect != "correct" and not entry.expect.startswith("~") and entry.expect != "in_place":
        mistake = _library(entry.exercise, entry.expect)
        assert result.message.startswith(mistake.says) and mistake.fix in result.message
    generic = is_generic(result)
    assert generic == (entry.id in UNRECOGNISABLE), f"{entry.slip}: generic={generic}\n{result}"


def _exercises_of_the_notebooks() -> set[str]:
    """'nbNN.name' of every `checks.name.check(...)` call of the six solution notebooks."""
    found = set()
    for path in sorted((ROOT / "solutions").glob("0*.ipynb")):
        source = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])
        found |= {f"nb{path.name[:2]}.{name}" for name in re.findall(r"checks\.(\w+)\.check\(", source)}
    return found


def test_every_code_exercise_has_at_least_four_wrong_answers_and_a_right_one():
    exercises = _exercises_of_the_notebooks()
    assert len(exercises) >= 14, exercises
    for name in sorted(exercises):
        answers = [entry for entry in CORPUS if entry.exercise == name]
        assert sum(entry.expect != "correct" for entry in answers) >= 4, name
        assert any(entry.expect == "correct" for entry in answers), name


LIBRARIES = [f"nb01.{n}" for n in ("mean_baseline", "rloo")] + [
    "nb02.clipped_objective",
    *(f"nb03.{n}" for n in ("grpo_advantages", "dr_grpo_advantages", "pass_at_k", "kl_k3")),
    "nb04.clip_fraction",
    *(f"nb05.{n}" for n in ("sequence_loss", "length_logprob", "length_reward")),
]


@pytest.mark.parametrize("name", LIBRARIES)
def test_every_way_of_writing_a_library_mistake_is_named_by_it(name):
    """Each variant of each entry (another std, another eps, a 0/0 guarded) is named by its own entry."""
    checker = exercise(name)
    for mistake in checker.mistakes:
        for way in mistake.ways:
            result = checker.check(way)
            assert result.mistake == mistake.name, (mistake.name, result.mistake, result.message)


def test_every_unrecognisable_answer_is_in_the_corpus_with_a_reason():
    ids = {entry.id for entry in CORPUS}
    for answer_id, reason in UNRECOGNISABLE.items():
        assert answer_id in ids and len(reason) > 40, answer_id


def test_a_message_without_a_named_mistake_is_seen_as_generic():
    """The reading of the verdicts can fail: a slip no library entry knows reads as generic."""

    def halves_the_baseline(rewards, group_size):
        r = rewards.view(-1, group_size)
        return (r - 0.5 * r.mean(1, keepdim=True)).reshape(-1)

    result = exercise(MEAN).check(halves_the_baseline)
    assert is_generic(result) and says_what_is_expected(Answer(MEAN, "", halves_the_baseline, "sign"), result)


if __name__ == "__main__":
    sys.exit(report())
