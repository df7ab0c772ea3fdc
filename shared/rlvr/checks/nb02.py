"""Checkers for notebook 02 (PPO): Exercise 2 of the lecture.

In the notebook::

    from rlvr.checks import nb02 as checks
    checks.clipped_objective.check(clipped_objective)
    checks.one_update.solution()
"""

from __future__ import annotations

import torch

from rlvr.checks import Exercise, FreeAnswer, GradCase


def _clipped_objective(ratio: torch.Tensor, advantage, clip_eps: float = 0.2) -> torch.Tensor:
    """Reference: PPO's clipped objective (to MAXIMISE), elementwise. ratio rho [N], advantage float or [N] -> [N]."""
    return torch.minimum(ratio * advantage, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage)


def _case(description: str, ratios, advantage, clip_eps: float) -> GradCase:
    """A case on a float64 tensor of ratios rho; the value and d objective / d rho are compared."""
    advantage = torch.tensor(advantage, dtype=torch.float64) if isinstance(advantage, list) else advantage
    return GradCase(
        description,
        kwargs={"ratio": torch.tensor(ratios, dtype=torch.float64), "advantage": advantage, "clip_eps": clip_eps},
        wrt=["ratio"],
    )


clipped_objective = Exercise(
    name="PPO's clipped objective (value and gradient)",
    reference=_clipped_objective,
    cases=[
        _case(
            "the lecture's Exercise 2: A = +2, eps = 0.2, ratios [0.5, 1.0, 1.1, 1.5]", [0.5, 1.0, 1.1, 1.5], 2.0, 0.2
        ),
        _case("a negative advantage: A = -1, eps = 0.2, ratios [0.5, 0.9, 1.3]", [0.5, 0.9, 1.3], -1.0, 0.2),
        _case(
            "one advantage per ratio, A = [2, -2, 1, -1], eps = 0.1, ratios [1.3, 1.3, 0.7, 0.7]",
            [1.3, 1.3, 0.7, 0.7],
            [2.0, -2.0, 1.0, -1.0],
            0.1,
        ),
    ],
    hint=(
        "Two candidate objectives, computed elementwise: the unclipped `ratio * advantage`, and the clipped "
        "`torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage`. Return the smaller one of each pair "
        "(`torch.minimum`), so that the objective is the pessimistic choice for BOTH signs of the advantage. "
        "Keep everything as tensor operations on `ratio` so autograd can differentiate it."
    ),
    solution="""
unclipped = ratio * advantage                                          # [N]
clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage   # [N]
return torch.minimum(unclipped, clipped)                               # [N]
""",
)

one_update = FreeAnswer(
    "clipping when every batch is used for one update only",
    hint=(
        "The ratio rho = pi_theta / pi_old compares the policy with the one that sampled the batch. Before the first "
        "update on a batch, how do the two compare? Look at the gradient of the objective at rho = 1 for either sign "
        "of A."
    ),
    solution=r"""
Clipping does nothing then. The ratio is computed against the policy that sampled the batch, and before the
first (and only) update on it the two are the same policy: $\rho_t = 1$ for every token. At $\rho = 1$ we are inside
$[1-\epsilon, 1+\epsilon]$, the clipped and unclipped terms are equal, and
$\nabla_\theta \min(\rho_t A_t, \mathrm{clip}(\rho_t) A_t) = A_t \nabla_\theta \rho_t
= A_t \nabla_\theta \log \pi_\theta(a_t)$
(because $\nabla \rho = \rho \nabla \log \pi$ and $\rho = 1$): exactly the policy gradient with advantage $A_t$.
The clip only acts once the same batch is reused: after a few updates the policy has moved, ratios drift away
from 1, and the clip switches the gradient off for tokens that have already moved far enough in the direction
their advantage asks for. (In short: with one update per batch, PPO is the policy gradient with advantages $A_t$;
the same holds for GRPO with one update per batch, notebook 03.)
""",
)
