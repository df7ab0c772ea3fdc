"""Wrong answers learners write for group baselines and advantages (notebooks 01 and 03), as plain functions the
mistake libraries of `rlvr.checks.nb01` and `rlvr.checks.nb03` are built from. Each takes rewards [B] and the group
size G (B = P x G, rows i*G ... i*G+G-1 answer prompt i) and returns what the mistake gives."""

from __future__ import annotations

from typing import Callable

import torch

from rlvr.i18n import N_

COLUMNS = (  # the "groups are columns" slip, in both notebooks' words: what the learner did, and the fix
    N_(
        "Your groups are columns: you shaped the rewards into group_size rows, so a 'group' mixes answers to different "
        "prompts."
    ),
    N_(
        "A prompt's G answers are consecutive: shape the rewards into one row per prompt (group_size columns) and work "
        "along each row."
    ),
)


def rows(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """One row per group. [B] -> [P, G]."""
    return rewards.reshape(-1, group_size)


def columns(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """The slip: group_size rows, so a 'group' (a column) mixes answers of different prompts. [B] -> [G, P]."""
    return rewards.reshape(group_size, -1)


def mean_centred(r: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Each reward minus its group's mean (the answer itself included)."""
    return r - r.mean(dim=dim, keepdim=True)


def others_mean(r: torch.Tensor, dim: int = 1, divisor: int | None = None) -> torch.Tensor:
    """Mean of the other rewards of each answer's group (sum of the others / `divisor`, by default G - 1)."""
    g = r.shape[dim]
    return (r.sum(dim=dim, keepdim=True) - r) / (g - 1 if divisor is None else divisor)


def loo_centred(r: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Each reward minus the mean of the others in its group (RLOO)."""
    return r - others_mean(r, dim)


def std(r: torch.Tensor, dim: int = 1, unbiased: bool = False) -> torch.Tensor:
    """Each group's std: population (divide by G) or unbiased (divide by G - 1)."""
    return r.std(dim=dim, keepdim=True, correction=1 if unbiased else 0)


def zscore(r: torch.Tensor, eps: float, dim: int = 1, unbiased: bool = False, where: str = "std") -> torch.Tensor:
    """(r - mean) / spread with eps placed as `where` says: 'std' (std + eps, right), 'var' (sqrt(var + eps)),
    'floor' (max(std, eps)), 'none' (no eps), 'after' (centred / std + eps)."""
    centred = mean_centred(r, dim)
    s = std(r, dim, unbiased)
    if where == "var":
        return centred / torch.sqrt(s**2 + eps)
    if where == "floor":
        return centred / s.clamp(min=eps)
    if where == "none":
        return centred / s
    if where == "after":
        return centred / s + eps
    return centred / (s + eps)


def flat(x: torch.Tensor) -> torch.Tensor:
    """Back to one value per answer. [P, G] -> [B]."""
    return x.reshape(-1)


def from_columns(x: torch.Tensor) -> torch.Tensor:
    """A [G, P] result flattened as the learner would (row after row)."""
    return x.reshape(-1)


USUAL_EPS = (1e-8, 1e-6, 1e-5, 1e-4, 1e-3)  # the eps a learner is likely to pick when the exercise gives none


def scaled_by_std(centre: Callable[[torch.Tensor], torch.Tensor]) -> list[Callable[[torch.Tensor], torch.Tensor]]:
    """The ways of also dividing `centre(r)` (rows [P, G] -> [P, G]) by each group's std, as a learner writes it: the
    population or the unbiased std; no eps (NaN on an all-equal group, or patched to 0) or a usual eps, added to the
    std or under the square root. The first way is the population std plus 1e-6."""
    ways = [lambda r: centre(r) / (std(r) + 1e-6)]
    for unbiased in (False, True):
        ways.append(lambda r, u=unbiased: centre(r) / std(r, unbiased=u))
        ways.append(lambda r, u=unbiased: torch.nan_to_num(centre(r) / std(r, unbiased=u), nan=0.0))
        for eps in USUAL_EPS:
            ways.append(lambda r, u=unbiased, e=eps: centre(r) / (std(r, unbiased=u) + e))
            ways.append(lambda r, u=unbiased, e=eps: centre(r) / torch.sqrt(std(r, unbiased=u) ** 2 + e))
    return ways


def tiled(rewards: torch.Tensor, baselines: torch.Tensor, group_size: int) -> torch.Tensor:
    """The slip of spreading P per-group baselines [P] back with `repeat` (tiled: b1, b2, b1, b2, ...) instead of
    `repeat_interleave` (b1, b1, ..., b2, b2, ...): answer j gets the baseline of group j mod P. [B]."""
    return rewards - baselines.repeat(group_size)
