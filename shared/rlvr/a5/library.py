"""The checks of every assignment-5 function, built on the course's checker engine (`rlvr.checks.core.Exercise`):
cases (seeded random inputs and the edge cases that matter), our reference (`rlvr.cs336.EDITIONS`), and a mistake
library: each wrong answer students write, as a function, with one sentence naming it (the report shows that
sentence) and one saying what to change. A student's function is named by the entry whose outputs equal its own on
every case (the engine's rule).

`checks(edition)` lists an edition's FunctionChecks; each one's `exercise()` is an Exercise on harnessed functions
(`rlvr.a5.harness`), and `depends` names the functions it usually calls (a wrong one is blamed first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from .. import cs336
from ..checks import wrong_groups as w
from ..checks.core import Case, Exercise, GradCase, Mistake, RandomGroupsCase
from ..i18n import N_
from ..objectives import aggregate_loss, masked_mean
from . import cases as c
from . import harness as h
from .hf import reward_fn as task_reward

CALL_LIMIT_S = 10.0  # per call of a student's function (the cases take milliseconds)
STEP_LIMIT_S = 30.0  # per call of a student's whole grpo_train_step


@dataclass
class FunctionCheck:
    """One assignment function's check: cases, mistakes (in the assignment's signature) and how outputs compare."""

    name: str
    reference: Callable
    cases: list[Case]
    mistakes: list[Mistake] = field(default_factory=list)
    harness: Callable[[Callable], Callable] = lambda fn: fn
    depends: tuple[str, ...] = ()
    time_limit: float = CALL_LIMIT_S

    def exercise(self) -> Exercise:
        """The engine's Exercise on harnessed functions."""
        mistakes = [Mistake(m.name, m.says, m.fix, self.harness(m.fn)) for m in self.mistakes]
        return Exercise(
            self.name, self.cases, reference=self.harness(self.reference), mistakes=mistakes, time_limit=self.time_limit
        )


def mistake(name: str, says: str, fix: str):
    """Decorator: the function becomes a Mistake of the library."""

    def wrap(fn: Callable) -> Mistake:
        return Mistake(name, says, fix, fn)

    return wrap


# ======================================================================================= group advantages
def _scores(reward_fn, responses, truths) -> torch.Tensor:
    """The raw rewards [B] of responses, by reward_fn."""
    return torch.tensor([float(reward_fn(r, t)["reward"]) for r, t in zip(responses, truths)])


def _unbiased_z(r, eps, where="std"):
    """The group z-score with torch.std (unbiased) and eps placed as `where` says (wrong_groups.zscore)."""
    return w.zscore(r, eps, unbiased=True, where=where)


GROUP_SLIPS_2025 = {  # name -> (says, fix, advantages of (rows [P, G], eps, by_std) -> [P, G])
    "population_std": (
        N_("You divide by the population std (over G); the assignment uses torch.std, the unbiased one (over G - 1)."),
        N_("Use rewards.std(dim=...) with its default correction."),
        lambda r, eps, by_std: w.zscore(r, eps) if by_std else w.mean_centred(r),
    ),
    "eps_in_var": (
        N_("You add advantage_eps under the square root; the assignment adds it to the std itself."),
        N_("Take the std first, then divide by std + advantage_eps."),
        lambda r, eps, by_std: _unbiased_z(r, eps, "var") if by_std else w.mean_centred(r),
    ),
    "eps_after": (
        N_("You add advantage_eps after dividing; it belongs in the denominator, std + advantage_eps."),
        N_("Divide the centred rewards by std + advantage_eps."),
        lambda r, eps, by_std: _unbiased_z(r, eps, "after") if by_std else w.mean_centred(r),
    ),
    "eps_floor": (
        N_("You use max(std, advantage_eps); the assignment adds advantage_eps to every group's std."),
        N_("Divide by std + advantage_eps."),
        lambda r, eps, by_std: _unbiased_z(r, eps, "floor") if by_std else w.mean_centred(r),
    ),
    "eps_ignored": (
        N_("You leave advantage_eps out: a group whose rewards are all equal divides 0 by 0 (NaN)."),
        N_("Divide by std + advantage_eps."),
        lambda r, eps, by_std: _unbiased_z(r, 0.0, "none") if by_std else w.mean_centred(r),
    ),
    "eps_ignored_guarded": (
        N_("You leave advantage_eps out of the denominator (and patch all-equal groups to 0), so it changes nothing."),
        N_("Divide by std + advantage_eps."),
        lambda r, eps, by_std: torch.nan_to_num(_unbiased_z(r, 0.0, "none")) if by_std else w.mean_centred(r),
    ),
    "ignores_normalize_by_std": (
        N_("You never divide by the std: normalize_by_std=True must divide each group by its std + advantage_eps."),
        N_("Divide when normalize_by_std is True, not otherwise."),
        lambda r, eps, by_std: w.mean_centred(r),
    ),
    "always_std": (
        N_("You divide by the std even when normalize_by_std=False (Dr. GRPO subtracts the group mean only)."),
        N_("Divide only when normalize_by_std is True."),
        lambda r, eps, by_std: _unbiased_z(r, eps),
    ),
    "leave_one_out": (
        N_("You subtract the mean of the OTHER answers (RLOO); GRPO subtracts the group's mean, the answer included."),
        N_("Subtract the mean of all group_size rewards of the group."),
        lambda r, eps, by_std: w.loo_centred(r) / (w.std(r, unbiased=True) + eps) if by_std else w.loo_centred(r),
    ),
    "batch_mean": (
        N_("You centre on the mean of the whole batch, not each group's."),
        N_("Reshape the rewards to (n_prompts, group_size) and take the mean over each row."),
        lambda r, eps, by_std: (r - r.mean()) / ((r.std() + eps) if by_std else 1.0),
    ),
    "batch_std": (
        N_("You divide by the std of the whole batch, not each group's."),
        N_("Take the std over each group (row), with keepdim so it broadcasts."),
        lambda r, eps, by_std: w.mean_centred(r) / ((r.std() + eps) if by_std else 1.0),
    ),
    "no_baseline": (
        N_("You return the raw rewards as advantages: the group mean is never subtracted."),
        N_("Subtract each group's mean (and divide by its std + advantage_eps when normalize_by_std)."),
        lambda r, eps, by_std: r,
    ),
    "sign": (
        N_("Your advantages have the wrong sign: subtract the group mean from the reward, not the other way round."),
        N_("advantage = reward - group mean."),
        lambda r, eps, by_std: -(_unbiased_z(r, eps) if by_std else w.mean_centred(r)),
    ),
}


def _group_mistakes_2025() -> list[Mistake]:
    """2025's compute_group_normalized_rewards slips, as whole functions returning (advantages, raw, {})."""

    def make(advantage):
        def wrong(reward_fn, rollout_responses, repeated_ground_truths, group_size, advantage_eps, normalize_by_std):
            raw = _scores(reward_fn, rollout_responses, repeated_ground_truths)
            return advantage(w.rows(raw, group_size), advantage_eps, normalize_by_std).reshape(-1), raw, {}

        return wrong

    out = [Mistake(name, says, fix, make(fn)) for name, (says, fix, fn) in GROUP_SLIPS_2025.items()]

    def columns(reward_fn, rollout_responses, repeated_ground_truths, group_size, advantage_eps, normalize_by_std):
        raw = _scores(reward_fn, rollout_responses, repeated_ground_truths)
        cols = w.columns(raw, group_size).T  # [P, G] rows of the column slip
        adv = _unbiased_z(cols, advantage_eps) if normalize_by_std else w.mean_centred(cols)
        return w.from_columns(adv.T), raw, {}

    def swapped(reward_fn, rollout_responses, repeated_ground_truths, group_size, advantage_eps, normalize_by_std):
        adv, raw, meta = cs336.compute_group_normalized_rewards(
            reward_fn, rollout_responses, repeated_ground_truths, group_size, advantage_eps, normalize_by_std
        )
        return raw, adv, meta

    out.append(Mistake("columns", *w.COLUMNS, columns))
    out.append(
        Mistake(
            "swapped_outputs",
            N_("You return (raw_rewards, advantages); the assignment's order is (advantages, raw_rewards, metadata)."),
            N_("Return the normalised advantages first."),
            swapped,
        )
    )
    return out


def _group_cases_2025() -> list[Case]:
    """Groups with one right answer, an all-equal group, a large eps, random 0/1 and uniform rewards."""
    cases = []
    specs = [
        (
            N_("one group [1, 0, 0, 0], group_size=4, advantage_eps=1e-6, normalize_by_std=True"),
            [1, 0, 0, 0],
            4,
            1e-6,
            True,
        ),
        (
            N_("groups [1, 0, 0.5, 1] and [0, 0, 0, 0] (all equal), advantage_eps=1e-6, normalize_by_std=True"),
            [1, 0, 0.5, 1, 0, 0, 0, 0],
            4,
            1e-6,
            True,
        ),
        (N_("the same groups with normalize_by_std=False"), [1, 0, 0.5, 1, 0, 0, 0, 0], 4, 1e-6, False),
        (
            N_("groups of 2 [0.5, 0.55], [0.2, 0.2] (std below advantage_eps=0.1)"),
            [0.5, 0.55, 0.2, 0.2],
            2,
            0.1,
            True,
        ),
        (
            N_("groups of 2 [1, 0], [0.5, 0.5], [0, 1] with a large advantage_eps=0.1 (shows where eps goes)"),
            [1, 0, 0.5, 0.5, 0, 1],
            2,
            0.1,
            True,
        ),
        (
            N_("4 groups of 8 random 0/1 rewards (seed 0), normalize_by_std=True"),
            c.binary_rewards(4, 8, 0),
            8,
            1e-6,
            True,
        ),
        (
            N_("3 groups of 5 rewards uniform in [0, 1) (seed 1), normalize_by_std=False"),
            c.uniform_rewards(15, 1),
            5,
            1e-6,
            False,
        ),
    ]
    for description, rewards, group_size, eps, by_std in specs:
        truths = [c.GROUND_TRUTH] * len(rewards)
        args = (c.table_reward, c.responses(rewards), truths, group_size, eps, by_std)
        cases.append(Case(description, args=args, atol=1e-5, rtol=1e-4))
    return cases


# ----------------------------------------------------------------------------------------------- 2026
def _normalised(r, baseline, eps, normalizer, std_fn=None, eps_where="std"):
    """2026's advantages of rows [P, G] with a swappable std and eps placement (for the mistakes)."""
    centred = w.mean_centred(r) if baseline == "mean" else r
    if normalizer == "std":
        s = (std_fn or (lambda x: w.std(x, unbiased=True)))(r)
        if eps_where == "var":
            return centred / torch.sqrt(s**2 + eps)
        if eps_where == "after":
            return centred / s + eps
        if eps_where == "none":
            return centred / s
        return centred / (s + eps)
    if normalizer == "mean":
        mean = r.mean(dim=1, keepdim=True)
        return centred / (mean if eps_where == "none" else mean + eps)
    return centred


GROUP_SLIPS_2026 = {  # name -> (says, fix, advantages of (rows, baseline, eps, normalizer))
    "population_std": (
        N_("You divide by the population std (over G); the assignment uses torch.std, the unbiased one (over G - 1)."),
        N_("Use rewards.std(dim=...) with its default correction."),
        lambda r, b, eps, n: _normalised(r, b, eps, n, std_fn=w.std),
    ),
    "eps_in_var": (
        N_("You add advantage_eps under the square root; the assignment adds it to the std itself."),
        N_("Take the std first, then divide by std + advantage_eps."),
        lambda r, b, eps, n: _normalised(r, b, eps, n, eps_where="var" if n == "std" else "std"),
    ),
    "eps_after": (
        N_("You add advantage_eps after dividing; it belongs in the denominator (std + eps, or mean + eps)."),
        N_("Divide by the normaliser + advantage_eps."),
        lambda r, b, eps, n: _normalised(r, b, eps, n, eps_where="after" if n == "std" else "std"),
    ),
    "eps_ignored": (
        N_("You leave advantage_eps out of the denominator: an all-equal (or all-0) group divides by 0."),
        N_("Add advantage_eps to the std (or the mean) before dividing."),
        lambda r, b, eps, n: _normalised(r, b, eps, n, eps_where="none"),
    ),
    "mean_normalizer_is_std": (
        N_('advantage_normalizer="mean" (MaxRL) must divide by the group mean + eps; you divide by the std.'),
        N_("Divide by the group's mean reward + advantage_eps for 'mean'."),
        lambda r, b, eps, n: _normalised(r, b, eps, "std" if n == "mean" else n),
    ),
    "ignores_normalizer": (
        N_("You ignore advantage_normalizer: 'std' divides by the std + eps, 'mean' by the mean + eps, 'none' not."),
        N_("Branch on advantage_normalizer."),
        lambda r, b, eps, n: _normalised(r, b, eps, "std"),
    ),
    "ignores_baseline": (
        N_('You subtract the group mean even with baseline="none" (RFT keeps the raw rewards).'),
        N_("Subtract the mean only when baseline is 'mean'."),
        lambda r, b, eps, n: _normalised(r, "mean", eps, n),
    ),
    "batch_mean": (
        N_("You centre on the mean of the whole batch, not each group's."),
        N_("Reshape the rewards to (n_prompts, group_size) and take statistics over each row."),
        lambda r, b, eps, n: _normalised(r.reshape(1, -1), b, eps, n).reshape(r.shape),
    ),
    "sign": (
        N_("Your advantages have the wrong sign: subtract the group mean from the reward, not the other way round."),
        N_("advantage = reward - group mean."),
        lambda r, b, eps, n: -_normalised(r, b, eps, n),
    ),
}


def _group_mistakes_2026() -> list[Mistake]:
    """2026's compute_group_normalized_rewards slips, as functions returning (advantages, {})."""

    def make(advantage):
        def wrong(raw_rewards, group_size, baseline="mean", advantage_eps=1e-6, advantage_normalizer="std"):
            rows = w.rows(torch.as_tensor(raw_rewards, dtype=torch.float32), group_size)
            return advantage(rows, baseline, advantage_eps, advantage_normalizer).reshape(-1), {}

        return wrong

    def columns(raw_rewards, group_size, baseline="mean", advantage_eps=1e-6, advantage_normalizer="std"):
        cols = w.columns(torch.as_tensor(raw_rewards, dtype=torch.float32), group_size).T
        return w.from_columns(_normalised(cols, baseline, advantage_eps, advantage_normalizer).T), {}

    return [Mistake(n, says, fix, make(fn)) for n, (says, fix, fn) in GROUP_SLIPS_2026.items()] + [
        Mistake("columns", *w.COLUMNS, columns)
    ]


def _group_cases_2026() -> list[Case]:
    """Each baseline x normaliser on groups with an all-equal one, a large eps, random rewards."""
    mixed = torch.tensor([1.0, 0, 0.5, 1, 0, 0, 0, 0, 1, 1, 1, 0])  # three groups of 4, the second all equal
    specs = [
        (
            N_("[1, 0, 0, 1], group_size=2, baseline='mean', normalizer='std' (the assignment's test)"),
            torch.tensor([1.0, 0, 0, 1]),
            2,
            "mean",
            1e-6,
            "std",
        ),
        (
            N_("groups [1, 0, 0.5, 1], [0, 0, 0, 0] (all equal), [1, 1, 1, 0], baseline='mean', normalizer='std'"),
            mixed,
            4,
            "mean",
            1e-6,
            "std",
        ),
        (N_("the same groups, baseline='mean', normalizer='none' (Dr. GRPO)"), mixed, 4, "mean", 1e-6, "none"),
        (N_("the same groups, baseline='mean', normalizer='mean' (MaxRL), eps=1e-3"), mixed, 4, "mean", 1e-3, "mean"),
        (N_("the same groups, baseline='none', normalizer='none' (RFT)"), mixed, 4, "none", 1e-6, "none"),
        (
            N_("groups of 2 [1, 0], [0.5, 0.5], [0, 1], a large eps=0.1, normalizer='std'"),
            torch.tensor([1.0, 0, 0.5, 0.5, 0, 1]),
            2,
            "mean",
            0.1,
            "std",
        ),
        (
            N_("4 groups of 8 random 0/1 rewards (seed 0), normalizer='mean', eps=0.01"),
            torch.tensor(c.binary_rewards(4, 8, 0, p=0.5)) + torch.tensor([0.0] * 31 + [1.0]),
            8,
            "mean",
            0.01,
            "mean",
        ),
        (
            N_("3 groups of 5 rewards uniform in [0, 1) (seed 1), baseline='none', normalizer='std'"),
            torch.tensor(c.uniform_rewards(15, 1)),
            5,
            "none",
            1e-6,
            "std",
        ),
    ]
    return [
        Case(d, args=(r, g), kwargs={"baseline": b, "advantage_eps": e, "advantage_normalizer": n}, atol=1e-5)
        for d, r, g, b, e, n in specs
    ]


def _rollout_rewards_mistakes() -> list[Mistake]:
    """compute_rollout_rewards slips."""

    @mistake(
        "swapped_arguments",
        N_("You call reward_fn(ground_truth, response); its arguments are (response, ground_truth)."),
        N_("Pass the response first."),
    )
    def swapped(reward_fn, rollout_responses, repeated_ground_truths):
        return torch.tensor(
            [float(reward_fn(t, r)["reward"]) for r, t in zip(rollout_responses, repeated_ground_truths)]
        )

    @mistake(
        "format_reward",
        N_('You return the "format_reward"; the raw reward is reward_fn(...)["reward"].'),
        N_('Read the "reward" key.'),
    )
    def format_only(reward_fn, rollout_responses, repeated_ground_truths):
        return torch.tensor(
            [float(reward_fn(r, t)["format_reward"]) for r, t in zip(rollout_responses, repeated_ground_truths)]
        )

    return [Mistake(m.name, m.says, m.fix, (lambda f: lambda *a: (f(*a), {}))(m.fn)) for m in (swapped, format_only)]


def _rollout_rewards_cases() -> list[Case]:
    """Rewards of strings, in order."""
    uniform = c.uniform_rewards(6, 2)
    return [
        Case(
            N_("4 responses scored 1, 0, 0.5, 0.25"), args=(c.table_reward, c.responses([1, 0, 0.5, 0.25]), ["42"] * 4)
        ),
        Case(N_("6 responses with uniform rewards (seed 2)"), args=(c.table_reward, c.responses(uniform), ["42"] * 6)),
    ]


# ======================================================================================= policy-gradient losses
def _pg_case(description, spread, seed, batch=4, length=6, **kwargs) -> tuple:
    """(description, policy_log_probs, old_log_probs, advantages [B, 1]) of one seeded case."""
    logps, old = c.log_probs(batch, length, seed, spread)
    return description, logps, old, c.advantages(batch, seed)


def _clip_mistakes_2025() -> list[Mistake]:
    """compute_grpo_clip_loss slips, returning (loss, {})."""

    def ratio(logps, old):
        return torch.exp(logps - old)

    specs = {
        "max_not_min": (
            N_("You take the larger of the clipped and unclipped terms; GRPO-Clip takes the smaller (torch.minimum)."),
            N_("loss = -min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)."),
            lambda r, a, e: -torch.maximum(r * a, r.clamp(1 - e, 1 + e) * a),
        ),
        "upper_clip_only": (
            N_("You clip the ratio at 1 + cliprange only; clip it to [1 - cliprange, 1 + cliprange]."),
            N_("Clamp with both min=1 - cliprange and max=1 + cliprange."),
            lambda r, a, e: -torch.minimum(r * a, r.clamp(max=1 + e) * a),
        ),
        "lower_clip_only": (
            N_("You clip the ratio at 1 - cliprange only; clip it to [1 - cliprange, 1 + cliprange]."),
            N_("Clamp with both min=1 - cliprange and max=1 + cliprange."),
            lambda r, a, e: -torch.minimum(r * a, r.clamp(min=1 - e) * a),
        ),
        "clipped_term_only": (
            N_("You use only the clipped term; GRPO-Clip takes the min of ratio * A and clip(ratio) * A."),
            N_("loss = -min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)."),
            lambda r, a, e: -r.clamp(1 - e, 1 + e) * a,
        ),
        "no_clip": (
            N_("You never clip the ratio: that is the unclipped importance-weighted loss, -ratio * A."),
            N_("Take the min with clip(ratio, 1 - cliprange, 1 + cliprange) * A."),
            lambda r, a, e: -r * a,
        ),
        "sign": (
            N_("Your loss has the wrong sign: return MINUS the clipped objective (optimizers minimise)."),
            N_("loss = -min(ratio * A, clip(ratio) * A)."),
            lambda r, a, e: torch.minimum(r * a, r.clamp(1 - e, 1 + e) * a),
        ),
        "ratio_inverted": (
            N_("Your ratio is old / new; it is pi_theta / pi_old = exp(policy_log_probs - old_log_probs)."),
            N_("Exponentiate policy_log_probs - old_log_probs."),
            lambda r, a, e: -torch.minimum(a / r, (1 / r).clamp(1 - e, 1 + e) * a),
        ),
        "log_ratio": (
            N_("You use the log-ratio as the ratio; exponentiate it: exp(policy_log_probs - old_log_probs)."),
            N_("ratio = torch.exp(policy_log_probs - old_log_probs)."),
            lambda r, a, e: -torch.minimum(r.log() * a, r.log().clamp(1 - e, 1 + e) * a),
        ),
    }

    def make(objective, one_d=False):
        def wrong(advantages, policy_log_probs, old_log_probs, cliprange):
            a = advantages[:, None] if one_d else advantages
            return objective(ratio(policy_log_probs, old_log_probs), a, cliprange), {}

        return wrong

    right = lambda r, a, e: -torch.minimum(r * a, r.clamp(1 - e, 1 + e) * a)  # noqa: E731
    return [Mistake(n, says, fix, make(fn)) for n, (says, fix, fn) in specs.items()] + [
        Mistake("advantages_1d", *ONE_D, make(right, one_d=True))
    ]


def _clip_cases_2025() -> list[Case]:
    """Ratios near 1 and far outside the clip range, advantages of both signs, three clip ranges (with gradients)."""
    specs = [
        (N_("4 answers x 6 tokens, ratios in [0.74, 1.35], cliprange=0.2"), 0.3, 0, 0.2),
        (N_("ratios far outside the clip range, in [0.14, 7.4], cliprange=0.2"), 2.0, 1, 0.2),
        (N_("ratios in [0.14, 7.4], cliprange=0.1"), 2.0, 2, 0.1),
        (N_("ratios in [0.14, 7.4], cliprange=10 (nothing clipped)"), 2.0, 3, 10.0),
    ]
    out = []
    for description, spread, seed, eps in specs:
        logps, old = c.log_probs(4, 6, seed, spread)
        out.append(GradCase(description, args=(c.advantages(4, seed), logps, old, eps), wrt=(1,)))
    return out


ONE_D = (  # the [B, 1] advantages treated as [B] (advantages[:, None] makes [B, 1, 1], broadcast to [B, B, T])
    N_(
        "You add a dimension to the advantages (advantages[:, None]) as if they were [B]; the assignment passes them "
        "as [B, 1]: multiply them as they are."
    ),
    N_("Use raw_rewards_or_advantages (or advantages) as given: [B, 1] broadcasts against [B, T]."),
)


def _naive_mistakes() -> list[Mistake]:
    """compute_naive_policy_gradient_loss slips."""
    return [
        Mistake("advantages_1d", *ONE_D, lambda a, logps: -a[:, None] * logps),
        Mistake(
            "sign",
            N_("Your loss has the wrong sign: the per-token loss is -A * log pi (minimising it raises good answers)."),
            N_("Return -raw_rewards_or_advantages * policy_log_probs."),
            lambda a, logps: a * logps,
        ),
        Mistake(
            "probabilities",
            N_("You multiply by the probability exp(log pi); the policy-gradient loss uses log pi itself."),
            N_("Return -A * policy_log_probs."),
            lambda a, logps: -a * logps.exp(),
        ),
    ]


def _naive_cases() -> list[Case]:
    """Random rewards or advantages of both signs against random log-probs, with the gradient."""
    return [
        GradCase(
            N_("3 answers x 5 tokens, advantages of both signs"),
            args=(c.advantages(3, 4), c.log_probs(3, 5, 4)[0]),
            wrt=(1,),
        ),
        GradCase(
            N_("2 answers x 7 tokens, raw rewards 1 and 0"),
            args=(torch.tensor([[1.0], [0.0]]), c.log_probs(2, 7, 5)[0]),
            wrt=(1,),
        ),
    ]


def _dispatch_mistakes_2025() -> list[Mistake]:
    """compute_policy_gradient_loss (2025) slips: the wrong input for a loss_type."""

    def make(choose):
        def wrong(policy_log_probs, loss_type, raw_rewards=None, advantages=None, old_log_probs=None, cliprange=None):
            kind, a = choose(loss_type, raw_rewards, advantages)
            if kind == "clip":
                return cs336.compute_grpo_clip_loss(a, policy_log_probs, old_log_probs, cliprange)
            return cs336.compute_naive_policy_gradient_loss(a, policy_log_probs), {}

        return wrong

    return [
        Mistake(
            "no_baseline_uses_advantages",
            N_('loss_type="no_baseline" must use raw_rewards; you use the advantages.'),
            N_("Pass raw_rewards for no_baseline, advantages for the other two."),
            make(lambda t, raw, adv: ("clip" if t == "grpo_clip" else "naive", adv)),
        ),
        Mistake(
            "baseline_uses_raw_rewards",
            N_('loss_type="reinforce_with_baseline" must use the advantages; you use raw_rewards.'),
            N_("Pass advantages for reinforce_with_baseline."),
            make(lambda t, raw, adv: ("clip" if t == "grpo_clip" else "naive", raw if t != "grpo_clip" else adv)),
        ),
        Mistake(
            "grpo_clip_unclipped",
            N_('loss_type="grpo_clip" returns the unclipped REINFORCE loss: call compute_grpo_clip_loss for it.'),
            N_("Dispatch grpo_clip to compute_grpo_clip_loss with old_log_probs and cliprange."),
            make(lambda t, raw, adv: ("naive", raw if t == "no_baseline" else adv)),
        ),
    ]


def _dispatch_cases_2025() -> list[Case]:
    """Each loss_type on the same inputs; raw rewards differ from advantages so a mix-up shows."""
    logps, old = c.log_probs(4, 6, 6, spread=2.0)
    raw, adv = torch.tensor([[1.0], [0.0], [1.0], [0.5]]), c.advantages(4, 6)
    return [
        GradCase(
            f"loss_type={t!r}, ratios in [0.14, 7.4], cliprange=0.2", args=(logps, t, raw, adv, old, 0.2), wrt=(0,)
        )
        for t in cs336.LOSS_TYPES
    ]


# 2026's compute_policy_gradient_loss: name -> (says, fix, per-token loss of (A, logps, old, eps, mask, method))
METHOD_SLIPS = {
    "sign": (
        N_("Your loss has the wrong sign: return MINUS the objective (optimizers minimise)."),
        N_("Negate the objective."),
        lambda a, lp, old, e, m, meth: -_method(a, lp, old, e, m, meth),
    ),
    "noclip_times_logp": (
        N_('"noclip" is -A * ratio (its gradient is ratio * A * grad log pi); you multiply by log pi as well.'),
        N_("Return -A * exp(policy_log_probs - old_log_probs) for noclip."),
        lambda a, lp, old, e, m, meth: (
            -a * torch.exp(lp - old) * lp if meth == "noclip" else _method(a, lp, old, e, m, meth)
        ),
    ),
    "max_not_min": (
        N_('"grpo" takes the smaller of the clipped and unclipped terms (torch.minimum); you take the larger.'),
        N_("loss = -min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)."),
        lambda a, lp, old, e, m, meth: (
            -torch.maximum(torch.exp(lp - old) * a, torch.exp(lp - old).clamp(1 - e, 1 + e) * a)
            if meth == "grpo"
            else _method(a, lp, old, e, m, meth)
        ),
    ),
    "upper_clip_only": (
        N_('"grpo" clips the ratio at 1 + cliprange only; clip it to [1 - cliprange, 1 + cliprange].'),
        N_("Clamp with both bounds."),
        lambda a, lp, old, e, m, meth: (
            -torch.minimum(torch.exp(lp - old) * a, torch.exp(lp - old).clamp(max=1 + e) * a)
            if meth == "grpo"
            else _method(a, lp, old, e, m, meth)
        ),
    ),
    "gspo_per_token": (
        N_('"gspo" takes its ratio per token; GSPO uses one ratio per sequence (the mean log-ratio over its tokens).'),
        N_("s = exp(masked mean over the response of policy_log_probs - old_log_probs), clipped per sequence."),
        lambda a, lp, old, e, m, meth: _method(a, lp, old, e, m, "grpo" if meth == "gspo" else meth),
    ),
    "gspo_not_length_normalised": (
        N_(
            '"gspo" multiplies the token ratios (sum of log-ratios); GSPO takes their geometric mean (divide by '
            "length)."
        ),
        N_("Average the masked log-ratio over the response's tokens before exponentiating."),
        lambda a, lp, old, e, m, meth: (
            _gspo(a, lp, old, e, m, lengths=torch.ones(len(lp), 1))
            if meth == "gspo"
            else _method(a, lp, old, e, m, meth)
        ),
    ),
    "gspo_mask_ignored": (
        N_('"gspo" averages the log-ratio over every position, padding included; average over response_mask only.'),
        N_("Multiply the log-ratio by response_mask and divide by response_mask.sum(-1)."),
        lambda a, lp, old, e, m, meth: (
            _gspo(a, lp, old, e, torch.ones_like(m)) if meth == "gspo" else _method(a, lp, old, e, m, meth)
        ),
    ),
    "gspo_unclipped": (
        N_('"gspo" never clips the sequence ratio; clip it to [1 - cliprange, 1 + cliprange] and take the min.'),
        N_("loss = -min(s * A, clip(s) * A) per sequence."),
        lambda a, lp, old, e, m, meth: _gspo(a, lp, old, 1e9, m) if meth == "gspo" else _method(a, lp, old, e, m, meth),
    ),
    "cispo_not_detached": (
        N_('"cispo" must detach the clipped weight (min(ratio, 1 + eps)); yours carries a gradient of its own.'),
        N_("Call .detach() on the clipped ratio before multiplying by A * log pi."),
        lambda a, lp, old, e, m, meth: (
            -a * torch.exp(lp - old).clamp(max=1 + e) * lp if meth == "cispo" else _method(a, lp, old, e, m, meth)
        ),
    ),
    "cispo_two_sided": (
        N_('"cispo" caps the weight from above only (min(ratio, 1 + eps)); you also clip it from below.'),
        N_("Clamp with max=1 + cliprange only."),
        lambda a, lp, old, e, m, meth: (
            -a * torch.exp(lp - old).clamp(1 - e, 1 + e).detach() * lp
            if meth == "cispo"
            else _method(a, lp, old, e, m, meth)
        ),
    ),
    "cispo_as_grpo": (
        N_('"cispo" keeps a (capped) gradient on tokens past 1 + eps; you zero it as GRPO\'s clip does.'),
        N_("loss = -detach(min(ratio, 1 + eps)) * A * log pi."),
        lambda a, lp, old, e, m, meth: _method(a, lp, old, e, m, "grpo" if meth == "cispo" else meth),
    ),
}


def _gspo(a, lp, old, e, m, lengths=None):
    """GSPO with a swappable length (for the mistakes). [B, T]."""
    mask = m.to(lp.dtype)
    n = mask.sum(-1, keepdim=True) if lengths is None else lengths
    s = torch.exp(((lp - old) * mask).sum(-1, keepdim=True) / n)  # [B, 1]
    return (-torch.minimum(s * a, s.clamp(1 - e, 1 + e) * a)).expand_as(lp)


def _method(a, lp, old, e, m, method):
    """Our per-token loss of one method (the reference)."""
    return cs336.compute_policy_gradient_loss_2026(a, lp, method, old, e, m)[0]


def _method_mistakes() -> list[Mistake]:
    """2026 compute_policy_gradient_loss slips, as whole functions."""

    def make(loss):
        def wrong(
            raw_rewards_or_advantages,
            policy_log_probs,
            importance_reweighting_method="none",
            old_log_probs=None,
            cliprange=None,
            response_mask=None,
        ):
            a = raw_rewards_or_advantages.reshape(-1, 1)
            return loss(a, policy_log_probs, old_log_probs, cliprange, response_mask, importance_reweighting_method), {}

        return wrong

    return [Mistake(n, says, fix, make(fn)) for n, (says, fix, fn) in METHOD_SLIPS.items()]


def _method_cases() -> list[Case]:
    """Every method on ratios far outside the clip range, with the gradient (CISPO's detach shows only there)."""
    out = []
    for i, method in enumerate(cs336.IMPORTANCE_METHODS):
        logps, old = c.log_probs(4, 6, 10 + i, spread=1.5)
        mask = c.response_mask(4, 6, 10 + i)
        description = f"importance_reweighting_method={method!r}, ratios in [0.22, 4.5], cliprange=0.2"
        kwargs = {
            "importance_reweighting_method": method,
            "old_log_probs": old,
            "cliprange": 0.2,
            "response_mask": mask,
        }
        out.append(GradCase(description, args=(c.advantages(4, 10 + i), logps), kwargs=kwargs, wrt=(1,)))
    logps, old = c.log_probs(4, 6, 20, spread=0.02)
    mask = c.response_mask(4, 6, 20)
    kwargs = {"importance_reweighting_method": "gspo", "old_log_probs": old, "cliprange": 3e-4, "response_mask": mask}
    out.append(
        GradCase(
            N_("'gspo' with GSPO's cliprange=3e-4 and ratios near 1"),
            args=(c.advantages(4, 20), logps),
            kwargs=kwargs,
            wrt=(1,),
        )
    )
    return out


# ======================================================================================= reductions
def _masked_mean_mistakes() -> list[Mistake]:
    """masked_mean slips."""

    def count_all(t, m, dim=None):
        total = (t * m).sum() if dim is None else (t * m).sum(dim)
        return total / (t.numel() if dim is None else t.shape[dim])

    def total_count(t, m, dim=None):
        return ((t * m).sum() if dim is None else (t * m).sum(dim)) / m.sum()

    return [
        Mistake(
            "divides_by_all",
            N_("You divide by the number of all elements; a masked mean divides by the number where mask is 1."),
            N_("Divide the masked sum by mask.sum(dim) (the count of 1s)."),
            count_all,
        ),
        Mistake(
            "mask_ignored",
            N_("You ignore the mask: the mean counts the masked-out (prompt and padding) elements too."),
            N_("Sum tensor * mask and divide by mask.sum over the same dim."),
            lambda t, m, dim=None: t.mean() if dim is None else t.mean(dim),
        ),
        Mistake(
            "sum_not_mean",
            N_("You return the masked sum without dividing by the count of masked elements."),
            N_("Divide by mask.sum(dim)."),
            lambda t, m, dim=None: (t * m).sum() if dim is None else (t * m).sum(dim),
        ),
        Mistake(
            "total_count_for_dim",
            N_("With a dim you divide every slice by the mask's total count; each slice needs its own count."),
            N_("Divide by mask.sum(dim) along the same dim as the sum."),
            total_count,
        ),
    ]


def _masked_mean_cases() -> list[Case]:
    """dim None, 0, 1, -1 on a random [4, 6] tensor and mask; an all-zero row (NaN or 0 both accepted)."""
    t = torch.randn(4, 6, generator=c.generator(30))
    m = c.random_mask((4, 6), 30)
    empty = c.random_mask((4, 6), 31, empty_row=2)
    cases: list[Case] = [
        Case(f"tensor [4, 6], random mask, dim={d}", args=(t, m), kwargs={} if d is None else {"dim": d})
        for d in (None, 0, 1, -1)
    ]
    cases.append(Case(N_("row 2's mask all 0, dim=None (that row adds nothing)"), args=(t, empty)))
    cases.append(
        c.AnyOfCase(
            N_("row 2's mask all 0, dim=1 (its mean is 0 / 0: NaN, or 0 if you guard it)"),
            args=(t, empty),
            kwargs={"dim": 1},
            alternatives=[lambda t, m, dim: torch.nan_to_num(masked_mean(t, m, dim))],
        )
    )
    return cases


def _masked_normalize_mistakes() -> list[Mistake]:
    """masked_normalize slips."""
    ref = cs336.masked_normalize
    return [
        Mistake(
            "multiplies",
            N_("You multiply by normalize_constant; masked_normalize divides the masked sum by it."),
            N_("Divide the masked sum by normalize_constant."),
            lambda t, m, dim=None, normalize_constant=1.0: ref(t, m, dim) * normalize_constant,
        ),
        Mistake(
            "mean_not_sum",
            N_("You average over the masked elements; masked_normalize sums them and divides by the constant."),
            N_("Sum tensor * mask (over dim), then divide by normalize_constant."),
            lambda t, m, dim=None, normalize_constant=1.0: masked_mean(t, m, dim) / normalize_constant,
        ),
        Mistake(
            "mask_ignored",
            N_("You ignore the mask: the sum includes masked-out elements."),
            N_("Multiply by the mask before summing."),
            lambda t, m, dim=None, normalize_constant=1.0: ref(t, torch.ones_like(m), dim, normalize_constant),
        ),
        Mistake(
            "dim_ignored",
            N_("You ignore dim: the sum runs over every element whatever dim says."),
            N_("Sum over dim when it is given."),
            lambda t, m, dim=None, normalize_constant=1.0: ref(t, m, None, normalize_constant),
        ),
        Mistake(
            "constant_ignored",
            N_("You ignore normalize_constant: divide the masked sum by it."),
            N_("Divide by normalize_constant."),
            lambda t, m, dim=None, normalize_constant=1.0: ref(t, m, dim),
        ),
    ]


def _masked_normalize_cases() -> list[Case]:
    """dims and constants on a random tensor; an all-zero mask row."""
    t = torch.randn(4, 6, generator=c.generator(40))
    m = c.random_mask((4, 6), 40, empty_row=1)
    return [
        Case(
            f"tensor [4, 6] (row 1 all masked), dim={d}, normalize_constant={k}",
            args=(t, m),
            kwargs={"dim": d, "normalize_constant": k},
        )
        for d, k in ((None, 1.0), (0, 42.0), (1, 3.0), (-1, 1.0))
    ]


def _entropy_mistakes() -> list[Mistake]:
    """compute_entropy slips."""

    def naive(logits):
        p = torch.softmax(logits, dim=-1)
        return -(p * torch.log(p)).sum(-1)

    return [
        Mistake(
            "log_of_softmax",
            N_(
                "You take log(softmax(logits)): a probability that underflows to 0 gives 0 * -inf = NaN; use "
                "log_softmax."
            ),
            N_("log p = logits - logsumexp(logits, dim=-1)."),
            naive,
        ),
        Mistake(
            "sign",
            N_("Your entropy is negative: H = -sum p log p."),
            N_("Negate the sum."),
            lambda logits: -cs336.compute_entropy(logits),
        ),
        Mistake(
            "bits",
            N_("You use log base 2 (bits); the entropy is in nats (natural log)."),
            N_("Use the natural log."),
            lambda logits: cs336.compute_entropy(logits) / math.log(2),
        ),
        Mistake(
            "mean_over_vocab",
            N_("You average p log p over the vocabulary; the entropy sums it."),
            N_("Sum over the last dimension."),
            lambda logits: cs336.compute_entropy(logits) / logits.shape[-1],
        ),
    ]


def _entropy_cases() -> list[Case]:
    """Random logits, huge logits (a softmax that underflows), uniform logits (entropy log V)."""
    return [
        Case(N_("logits [2, 3, 5] random"), args=(torch.randn(2, 3, 5, generator=c.generator(50)),)),
        Case(
            N_("logits [2, 4, 10] with entries up to 1e4 (the softmax underflows)"),
            args=(1e4 * torch.randn(2, 4, 10, generator=c.generator(51)),),
        ),
        Case(N_("uniform logits [1, 2, 16] (entropy log 16)"), args=(torch.zeros(1, 2, 16),)),
    ]


# ======================================================================================= tokens and log-probs
PROMPTS = ["9458073021=", "123=", "77=", "0123456789="]
OUTPUTS = ["#9$", "[136]#6$", "#4$", "[0136051851]#5$"]


def _tokenize_mistakes() -> list[Mistake]:
    """tokenize_prompt_and_output slips."""

    def variant(shift_mask=0, pad_mask=False, labels_shift=1, left=False):
        def wrong(prompt_strs, output_strs, tokenizer):
            prompts = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompt_strs]
            outputs = [tokenizer(o, add_special_tokens=False)["input_ids"] for o in output_strs]
            width = max(len(p) + len(o) for p, o in zip(prompts, outputs))
            ids = torch.full((len(prompts), width), tokenizer.pad_token_id)
            is_out = torch.zeros(len(prompts), width, dtype=torch.bool)
            for i, (p, o) in enumerate(zip(prompts, outputs)):
                start = width - len(p) - len(o) if left else 0
                ids[i, start : start + len(p) + len(o)] = torch.tensor(p + o)
                is_out[i, start + len(p) : (width if pad_mask else start + len(p) + len(o))] = True
            mask = is_out[:, 1:] if shift_mask == 0 else is_out[:, :-1]
            labels = ids[:, labels_shift:] if labels_shift else ids[:, :-1]
            return {"input_ids": ids[:, :-1], "labels": labels, "response_mask": mask}

        return wrong

    return [
        Mistake(
            "mask_not_shifted",
            N_(
                "Your response_mask is aligned with input_ids, not with labels: slice it like the labels (drop "
                "position 0)."
            ),
            N_("response_mask = mask_of_the_joined_ids[:, 1:]."),
            variant(shift_mask=1),
        ),
        Mistake(
            "mask_covers_padding",
            N_("Your response_mask is 1 on the padding after the output: mark the output's tokens only."),
            N_("Set the mask from len(prompt) to len(prompt) + len(output) of each row."),
            variant(pad_mask=True),
        ),
        Mistake(
            "labels_not_shifted",
            N_("Your labels equal input_ids: labels are the ids shifted by one (the next token at each position)."),
            N_("labels = joined_ids[:, 1:], input_ids = joined_ids[:, :-1]."),
            variant(labels_shift=0),
        ),
        Mistake(
            "left_padding",
            N_("You pad on the left, so each prompt starts at a different position; pad on the right."),
            N_("Put prompt + output at the start of each row and padding after it."),
            variant(left=True),
        ),
    ]


def _tokenize_cases(tokenizer) -> list[Case]:
    """Prompts and outputs of the task's characters, of different lengths (so rows are padded)."""
    return [
        Case(N_("4 prompts and outputs of different lengths"), args=(PROMPTS, OUTPUTS, tokenizer)),
        Case(N_("one prompt and output (no padding)"), args=(PROMPTS[:1], OUTPUTS[3:], tokenizer)),
    ]


def _log_prob_mistakes() -> list[Mistake]:
    """get_response_log_probs slips."""

    def make(pick):
        def wrong(model, input_ids, labels, return_token_entropy=False):
            logits = model(input_ids).logits
            out = {"log_probs": pick(logits, input_ids, labels)}
            if return_token_entropy:
                out["token_entropy"] = cs336.compute_entropy(logits)
            return out

        return wrong

    def gather(values, index):
        return values.gather(-1, index[..., None]).squeeze(-1)

    return [
        Mistake(
            "reads_input_ids",
            N_("You read the log-prob of input_ids; read the labels' (the token that comes next at each position)."),
            N_("gather the log_softmax at labels."),
            make(lambda logits, ids, labels: gather(torch.log_softmax(logits, -1), ids)),
        ),
        Mistake(
            "raw_logits",
            N_("You return raw logits at the labels: take log_softmax over the vocabulary first."),
            N_("log_probs = log_softmax(logits, dim=-1) gathered at labels."),
            make(lambda logits, ids, labels: gather(logits, labels)),
        ),
        Mistake(
            "probabilities",
            N_("You return probabilities (softmax); the assignment wants log-probabilities (log_softmax)."),
            N_("Use log_softmax."),
            make(lambda logits, ids, labels: gather(torch.softmax(logits, -1), labels)),
        ),
    ]


def _log_prob_cases() -> list[Case]:
    """A small random model on random ids, with and without the entropy."""
    ids = torch.randint(0, 16, (3, 8), generator=c.generator(60))
    labels = torch.cat([ids[:, 1:], torch.randint(0, 16, (3, 1), generator=c.generator(61))], dim=1)
    model = c.small_model(0)
    return [
        Case(N_("a small model, 3 rows of 8 random ids, return_token_entropy=False"), args=(model, ids, labels, False)),
        Case(N_("the same, return_token_entropy=True"), args=(model, ids, labels, True), atol=1e-4),
    ]


# ======================================================================================= microbatch train steps
def _sft_mistakes() -> list[Mistake]:
    """sft_microbatch_train_step slips. The assignment's tests call it with microbatches of as many answers as
    gradient_accumulation_steps, where dividing by the microbatch's size cannot be told apart from dividing by
    gradient_accumulation_steps once more; this check's microbatches are the same size, so neither can it."""

    def make(scale, aggregate="sum", sign=1.0, returned=None):
        def wrong(policy_log_probs, response_mask, gradient_accumulation_steps, normalize_constant=1.0):
            b = policy_log_probs.shape[0]
            if aggregate == "sum":
                nll = cs336.masked_normalize(-policy_log_probs, response_mask, None, normalize_constant)
            else:
                nll = masked_mean(-policy_log_probs, response_mask)
            loss = sign * nll * scale(b, gradient_accumulation_steps)
            loss.backward()
            return (loss if returned is None else returned(nll, b, gradient_accumulation_steps)).detach(), {}

        return wrong

    return [
        Mistake(
            "one_division",
            N_(
                "You divide the loss by gradient_accumulation_steps only (or by the batch size only); the "
                "assignment's tests divide by both."
            ),
            N_(
                "loss = masked_normalize(-log_probs, mask, normalize_constant) / batch_size / "
                "gradient_accumulation_steps."
            ),
            make(lambda b, s: 1 / s),
        ),
        Mistake(
            "no_division",
            N_("Your loss is divided neither by the batch size nor by gradient_accumulation_steps."),
            N_("Divide the summed NLL by the microbatch's size and by gradient_accumulation_steps before backward()."),
            make(lambda b, s: 1.0),
        ),
        Mistake(
            "token_mean",
            N_(
                "You average the tokens (masked_mean); SFT's loss sums them (masked_normalize with normalize_constant)."
            ),
            N_("Sum the masked NLL and divide by normalize_constant, batch size and gradient_accumulation_steps."),
            make(lambda b, s: 1 / b / s, aggregate="mean"),
        ),
        Mistake(
            "sign",
            N_("Your loss is the log-likelihood, not its negative: minimising it unlearns the data."),
            N_("Use -policy_log_probs."),
            make(lambda b, s: 1 / b / s, sign=-1.0),
        ),
        Mistake(
            "returns_unscaled_loss",
            N_("You backpropagate the scaled loss but return it unscaled: return the loss adjusted for accumulation."),
            N_("Return the same (divided) loss you call backward() on."),
            make(lambda b, s: 1 / b / s, returned=lambda nll, b, s: nll),
        ),
    ]


def _sft_cases() -> list[Case]:
    """Microbatches of as many answers as gradient_accumulation_steps (as the assignment's tests): 2 x 2, 4 x 4 and
    1 x 1 answers; normalize_constant 1 and 2.5; an all-0 mask row."""
    out = []
    for b, k, row in ((4, 2, None), (16, 4, None), (16, 4, 5), (1, 1, None)):
        logps = c.log_probs(b, 6, 70 + b)[0]
        mask = c.random_mask((b, 6), 70 + b, empty_row=row)
        for nc in (1.0, 2.5):
            more = f": policy_log_probs [{b}, 6], gradient_accumulation_steps={k}, normalize_constant={nc}"
            words = (
                N_("one call per microbatch, a mask row all 0") if row is not None else N_("one call per microbatch")
            )
            out.append(RandomGroupsCase(words + more, args=(logps, mask, k, nc), words=words, more=more))
    return out


def _grpo_step_mistakes() -> list[Mistake]:
    """grpo_microbatch_train_step (2025) slips."""

    def make(aggregate, scale=lambda k: 1 / k, returned=None, mask_fn=lambda m: m):
        def wrong(
            policy_log_probs,
            response_mask,
            gradient_accumulation_steps,
            loss_type,
            raw_rewards=None,
            advantages=None,
            old_log_probs=None,
            cliprange=None,
        ):
            per_token, meta = cs336.compute_policy_gradient_loss(
                policy_log_probs, loss_type, raw_rewards, advantages, old_log_probs, cliprange
            )
            loss = aggregate(per_token, mask_fn(response_mask)) * scale(gradient_accumulation_steps)
            loss.backward()
            return (loss if returned is None else returned(loss, gradient_accumulation_steps)).detach(), meta

        return wrong

    per_answer = lambda x, m: aggregate_loss(x, m, "seq_mean_token_mean")  # noqa: E731 - the right aggregation
    return [
        Mistake(
            "not_divided_by_accumulation",
            N_(
                "Your loss is not divided by gradient_accumulation_steps: the k microbatches' gradients add up k times."
            ),
            N_("Divide the microbatch loss by gradient_accumulation_steps before backward()."),
            make(per_answer, scale=lambda k: 1.0),
        ),
        Mistake(
            "divided_twice",
            N_("You divide by gradient_accumulation_steps twice."),
            N_("Divide the microbatch loss by it once."),
            make(per_answer, scale=lambda k: 1 / k**2),
        ),
        Mistake(
            "token_mean",
            N_(
                "You average all the microbatch's tokens at once; GRPO averages each answer's tokens, then the answers."
            ),
            N_("masked_mean(per_token_loss, response_mask, dim=-1).mean(), then / gradient_accumulation_steps."),
            make(lambda x, m: masked_mean(x, m)),
        ),
        Mistake(
            "token_sum",
            N_("You sum each answer's tokens; GRPO averages them (masked_mean over the sequence)."),
            N_("Use masked_mean over dim=-1, then the mean over answers."),
            make(lambda x, m: (x * m).sum(-1).mean()),
        ),
        Mistake(
            "mask_ignored",
            N_("You ignore response_mask: the padding and prompt positions are in the mean."),
            N_("Average with masked_mean(per_token_loss, response_mask, dim=-1)."),
            make(lambda x, m: x.mean()),
        ),
        Mistake(
            "mask_shifted",
            N_("Your mask is shifted by one position against the log-probs: use response_mask as given, aligned."),
            N_("Do not roll or re-slice response_mask."),
            make(per_answer, mask_fn=lambda m: torch.roll(m, 1, dims=-1)),
        ),
        Mistake(
            "mean_over_answers_first",
            N_("You take the masked mean over the wrong dimension (over answers, dim=0) before averaging."),
            N_("masked_mean over dim=-1 (each answer's tokens), then .mean()."),
            make(lambda x, m: masked_mean(x, m, dim=0).nanmean()),
        ),
        Mistake(
            "returns_unscaled_loss",
            N_("You backpropagate the divided loss but return it undivided: return the loss you call backward() on."),
            N_("Return loss / gradient_accumulation_steps."),
            make(per_answer, returned=lambda loss, k: loss * k),
        ),
    ]


def _grpo_step_cases() -> list[Case]:
    """4 microbatches (the accumulation), each loss type, ratios far outside the clip range."""
    logps, old = c.log_probs(8, 7, 80, spread=2.0)
    mask = c.response_mask(8, 7, 80)
    raw, adv = (torch.rand(8, 1, generator=c.generator(81)) > 0.5).float(), c.advantages(8, 81)
    out = [
        Case(
            N_("8 answers in 4 microbatches, loss_type='grpo_clip', ratios in [0.14, 7.4], cliprange=0.2"),
            args=(logps, mask, 4, "grpo_clip", raw, adv, old, 0.2),
        ),
        Case(
            N_("8 answers in 4 microbatches, loss_type='reinforce_with_baseline'"),
            args=(logps, mask, 4, "reinforce_with_baseline", raw, adv, old, 0.2),
        ),
        Case(
            N_("8 answers in 2 microbatches, loss_type='no_baseline'"),
            args=(logps, mask, 2, "no_baseline", raw, adv, old, 0.2),
        ),
        Case(
            N_("8 answers in 1 microbatch, loss_type='grpo_clip', cliprange=0.1"),
            args=(logps, mask, 1, "grpo_clip", raw, adv, old, 0.1),
        ),
    ]
    return out


# ======================================================================================= 2026: aggregation, train step
def _aggregate_mistakes() -> list[Mistake]:
    """aggregate_loss_across_microbatch slips."""

    def make(sequence, constant):
        def wrong(per_token_policy_gradient_loss, mask, loss_normalization="sequence", normalization_constant=None):
            x, m = per_token_policy_gradient_loss, mask.to(per_token_policy_gradient_loss.dtype)
            if loss_normalization == "sequence":
                return sequence(x, m)
            return constant(x, m, normalization_constant)

        return wrong

    right_seq = lambda x, m: aggregate_loss(x, m, "seq_mean_token_mean")  # noqa: E731
    right_const = lambda x, m, k: (x * m).sum() / k  # noqa: E731
    return [
        Mistake(
            "token_mean",
            N_('"sequence" averages each sequence\'s tokens, then the sequences; you average all tokens at once.'),
            N_("(loss * mask).sum(-1) / mask.sum(-1), then .mean()."),
            make(lambda x, m: (x * m).sum() / m.sum(), right_const),
        ),
        Mistake(
            "mask_ignored",
            N_("You ignore the mask: prompt and padding positions are in the loss."),
            N_("Multiply by the mask and count only its 1s."),
            make(lambda x, m: x.mean(), lambda x, m, k: x.sum() / k),
        ),
        Mistake(
            "constant_token_mean",
            N_('"constant" divides the masked sum by normalization_constant; you divide by the number of tokens.'),
            N_("(loss * mask).sum() / normalization_constant."),
            make(right_seq, lambda x, m, k: (x * m).sum() / m.sum()),
        ),
        Mistake(
            "constant_per_sequence_mean",
            N_('"constant" sums every masked token over the batch; you average the sequences\' sums first.'),
            N_("(loss * mask).sum() / normalization_constant, with no mean over sequences."),
            make(right_seq, lambda x, m, k: ((x * m).sum(-1) / k).mean()),
        ),
        Mistake(
            "sequence_wrong_dim",
            N_('"sequence" averages over the wrong dimension (dim=0, over sequences, first).'),
            N_("Average over dim=-1 (tokens) first, then over sequences."),
            make(lambda x, m: ((x * m).sum(0) / m.sum(0).clamp(min=1)).mean(), right_const),
        ),
    ]


def _aggregate_cases() -> list[Case]:
    """Both normalisations on a right-padded mask; a constant with an all-0 row."""
    x = torch.randn(4, 7, generator=c.generator(90))
    mask = c.response_mask(4, 7, 90)
    empty = c.response_mask(4, 7, 91, empty_row=0)
    return [
        GradCase(N_("4 sequences x 7 tokens, loss_normalization='sequence'"), args=(x, mask, "sequence"), wrt=(0,)),
        GradCase(N_("the same, 'constant', normalization_constant=42"), args=(x, mask, "constant", 42), wrt=(0,)),
        GradCase(
            N_("row 0's mask all 0, 'constant', normalization_constant=16"), args=(x, empty, "constant", 16), wrt=(0,)
        ),
    ]


STEP_PROMPTS = [
    "9458073021=",
    "9458073021=",
    "1111111111=",
    "1111111111=",
    "5050505050=",
    "5050505050=",
    "1234512345=",
    "1234512345=",
]
STEP_RESPONSES = ["#9$", "[9386636689]#9$", "#1$", "#0$", "[5050505050]#0$", "#5$", "#0$", "#0$"]


def step_truths() -> list[str]:
    """The ground truths of STEP_PROMPTS (their digits)."""
    return [p[:-1] for p in STEP_PROMPTS]


def _step_variant(
    model,
    tokenizer,
    optimizer,
    gradient_accumulation_steps,
    max_grad_norm,
    reward_fn,
    repeated_prompts,
    rollout_responses,
    repeated_ground_truths,
    group_size,
    baseline="mean",
    advantage_eps=1e-6,
    advantage_normalizer="std",
    importance_reweighting_method="none",
    old_log_probs=None,
    cliprange=None,
    loss_normalization="sequence",
    normalization_constant=None,
    *,
    slip="",
):
    """Our grpo_train_step with one slip (for the mistake library): 'unweighted' (each microbatch's sequence mean
    added as is), 'no_clip' (max_grad_norm ignored), 'constant_over_steps' (the constant loss divided by the steps
    too), 'pruned_denominator' (zero-advantage answers left out of the sequence mean's denominator)."""
    raw, _ = cs336.compute_rollout_rewards(reward_fn, rollout_responses, repeated_ground_truths)
    adv, _ = cs336.compute_group_normalized_rewards_2026(raw, group_size, baseline, advantage_eps, advantage_normalizer)
    batch = cs336.tokenize_prompt_and_output(repeated_prompts, rollout_responses, tokenizer)
    keep = torch.arange(len(adv)) if slip != "pruned_denominator" else torch.nonzero(adv != 0).flatten()
    n = len(keep)
    optimizer.zero_grad(set_to_none=True)
    total = torch.zeros(())
    for rows in h._rows(max(n, 1), gradient_accumulation_steps):
        idx = keep[rows]
        if len(idx) == 0:
            continue
        mask = batch["response_mask"][idx]
        logps = cs336.get_response_log_probs(model, batch["input_ids"][idx], batch["labels"][idx])["log_probs"]
        old = old_log_probs[idx] if old_log_probs is not None else None
        per_token, _m = cs336.compute_policy_gradient_loss_2026(
            adv[idx], logps, importance_reweighting_method, old, cliprange, mask
        )
        loss = cs336.aggregate_loss_across_microbatch(per_token, mask, loss_normalization, normalization_constant)
        if loss_normalization == "sequence" and slip != "unweighted":
            loss = loss * len(idx) / n
        if loss_normalization == "constant" and slip == "constant_over_steps":
            loss = loss / gradient_accumulation_steps
        loss.backward()
        total = total + loss.detach()
    if max_grad_norm is not None and slip != "no_clip":
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return total, {}


def _train_step_mistakes() -> list[Mistake]:
    """grpo_train_step slips."""

    def make(slip):
        def wrong(*args, **kwargs):
            return _step_variant(*args, slip=slip, **kwargs)

        return wrong

    return [
        Mistake(
            "unweighted_microbatches",
            N_(
                "You add each microbatch's mean loss as is: weight it by its share of the batch (or divide by the "
                "steps)."
            ),
            N_("loss * len(microbatch) / len(batch) before backward(), for loss_normalization='sequence'."),
            make("unweighted"),
        ),
        Mistake(
            "grad_not_clipped",
            N_("You never clip the gradient norm: call clip_grad_norm_(..., max_grad_norm) before optimizer.step()."),
            N_("torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm) when it is not None."),
            make("no_clip"),
        ),
        Mistake(
            "constant_over_steps",
            N_(
                'With "constant", the sum over all tokens / Z already covers the batch: do not also divide by the '
                "steps."
            ),
            N_("Divide each microbatch's masked sum by normalization_constant only."),
            make("constant_over_steps"),
        ),
        Mistake(
            "pruned_denominator",
            N_(
                "Leaving out zero-advantage answers shrinks your sequence mean's denominator: still divide by the "
                "whole batch."
            ),
            N_("Weight each microbatch by len(microbatch) / len(all answers), pruned or not."),
            make("pruned_denominator"),
        ),
    ]


def _train_step_cases(tokenizer) -> list[Case]:
    """The assignment's variants on a small model: standard GRPO with 1, 2 and 4 microbatches, constant-normalised
    variants, off-policy methods with old log-probs far from the policy's, a tight gradient clip."""
    model = c.small_model(1)
    base = (model, tokenizer)
    common = (task_reward, STEP_PROMPTS, STEP_RESPONSES, step_truths(), 2)
    old = c.log_probs(8, 25, 100, spread=0.0)[1] * 0.3  # [B, L-1] log-probs of a sampling policy
    specs = [
        (N_("standard GRPO (sequence, std), 8 answers in 4 microbatches, max_grad_norm=None"), 4, None, {}),
        (N_("standard GRPO, 2 microbatches, max_grad_norm=0.05 (the clip binds)"), 2, 0.05, {}),
        (
            N_("Dr. GRPO: normalizer='none', loss_normalization='constant', Z=64, 4 microbatches"),
            4,
            None,
            {"advantage_normalizer": "none", "loss_normalization": "constant", "normalization_constant": 64},
        ),
        (
            N_("RFT: baseline='none', normalizer='none', 'constant', Z=64, 2 microbatches"),
            2,
            None,
            {
                "baseline": "none",
                "advantage_normalizer": "none",
                "loss_normalization": "constant",
                "normalization_constant": 64,
            },
        ),
        (
            N_("MaxRL: normalizer='mean', 'constant', Z=64, 1 microbatch"),
            1,
            None,
            {"advantage_normalizer": "mean", "loss_normalization": "constant", "normalization_constant": 64},
        ),
        (
            N_("off-policy 'grpo' with old_log_probs, cliprange=0.2, 4 microbatches"),
            4,
            None,
            {"importance_reweighting_method": "grpo", "cliprange": 0.2},
        ),
        (
            N_("off-policy 'gspo' with old_log_probs, cliprange=0.2, 2 microbatches"),
            2,
            None,
            {"importance_reweighting_method": "gspo", "cliprange": 0.2},
        ),
    ]
    out = []
    for description, steps, clip, kwargs in specs:
        if kwargs.get("importance_reweighting_method", "none") != "none":
            width = cs336.tokenize_prompt_and_output(STEP_PROMPTS, STEP_RESPONSES, tokenizer)["labels"].shape[1]
            kwargs = {**kwargs, "old_log_probs": old[:, :width]}
        out.append(Case(description, args=(*base, steps, clip, *common), kwargs=kwargs, atol=1e-6, rtol=1e-3))
    return out


# ======================================================================================= the editions
DEPENDS = {  # edition -> function -> the functions it usually calls (a wrong one is blamed first)
    "2025": {
        "compute_policy_gradient_loss": ("compute_naive_policy_gradient_loss", "compute_grpo_clip_loss"),
        "get_response_log_probs": ("compute_entropy",),
        "sft_microbatch_train_step": ("masked_normalize",),
        "grpo_microbatch_train_step": (
            "compute_policy_gradient_loss", "masked_mean", "compute_grpo_clip_loss",
            "compute_naive_policy_gradient_loss",
        ),
    },
    "2026": {
        "grpo_train_step": (
            "compute_rollout_rewards", "compute_group_normalized_rewards", "tokenize_prompt_and_output",
            "get_response_log_probs", "compute_policy_gradient_loss", "aggregate_loss_across_microbatch",
        ),
    },
}  # fmt: skip


def checks(edition: str, tokenizer=None) -> list[FunctionCheck]:
    """Every function check of an edition, in the assignment's order (`tokenizer`: the task's, for the functions
    that tokenize; built when None)."""
    if tokenizer is None:
        from .hf import task_tokenizer

        tokenizer = task_tokenizer()
    ref = cs336.EDITIONS[edition]
    shared = {
        "tokenize_prompt_and_output": FunctionCheck(
            "tokenize_prompt_and_output",
            ref["tokenize_prompt_and_output"],
            _tokenize_cases(tokenizer),
            _tokenize_mistakes(),
            h.token_dict,
        ),
        "get_response_log_probs": FunctionCheck(
            "get_response_log_probs",
            ref["get_response_log_probs"],
            _log_prob_cases(),
            _log_prob_mistakes(),
            h.log_prob_dict,
        ),
    }
    if edition == "2025":
        found = [
            FunctionCheck(
                "compute_group_normalized_rewards",
                ref["compute_group_normalized_rewards"],
                _group_cases_2025(),
                _group_mistakes_2025(),
                h.pair,
            ),
            FunctionCheck(
                "compute_naive_policy_gradient_loss",
                ref["compute_naive_policy_gradient_loss"],
                _naive_cases(),
                _naive_mistakes(),
            ),
            FunctionCheck(
                "compute_grpo_clip_loss",
                ref["compute_grpo_clip_loss"],
                _clip_cases_2025(),
                _clip_mistakes_2025(),
                h.first,
            ),
            FunctionCheck(
                "compute_policy_gradient_loss",
                ref["compute_policy_gradient_loss"],
                _dispatch_cases_2025(),
                _dispatch_mistakes_2025(),
                h.first,
            ),
            FunctionCheck("masked_mean", ref["masked_mean"], _masked_mean_cases(), _masked_mean_mistakes()),
            FunctionCheck(
                "masked_normalize", ref["masked_normalize"], _masked_normalize_cases(), _masked_normalize_mistakes()
            ),
            FunctionCheck("compute_entropy", ref["compute_entropy"], _entropy_cases(), _entropy_mistakes()),
            shared["tokenize_prompt_and_output"],
            shared["get_response_log_probs"],
            FunctionCheck(
                "sft_microbatch_train_step",
                ref["sft_microbatch_train_step"],
                _sft_cases(),
                _sft_mistakes(),
                h.accumulated,
            ),
            FunctionCheck(
                "grpo_microbatch_train_step",
                ref["grpo_microbatch_train_step"],
                _grpo_step_cases(),
                _grpo_step_mistakes(),
                h.accumulated,
            ),
        ]
    else:
        found = [
            shared["tokenize_prompt_and_output"],
            shared["get_response_log_probs"],
            FunctionCheck(
                "compute_rollout_rewards",
                ref["compute_rollout_rewards"],
                _rollout_rewards_cases(),
                _rollout_rewards_mistakes(),
                h.first,
            ),
            FunctionCheck(
                "compute_group_normalized_rewards",
                ref["compute_group_normalized_rewards"],
                _group_cases_2026(),
                _group_mistakes_2026(),
                h.first,
            ),
            FunctionCheck(
                "compute_policy_gradient_loss",
                ref["compute_policy_gradient_loss"],
                _method_cases(),
                _method_mistakes(),
                h.first,
            ),
            FunctionCheck(
                "aggregate_loss_across_microbatch",
                ref["aggregate_loss_across_microbatch"],
                _aggregate_cases(),
                _aggregate_mistakes(),
            ),
            FunctionCheck(
                "grpo_train_step",
                ref["grpo_train_step"],
                _train_step_cases(tokenizer),
                _train_step_mistakes(),
                h.train_step,
                time_limit=STEP_LIMIT_S,
            ),
        ]
    for check in found:
        check.depends = DEPENDS[edition].get(check.name, ())
    return found
