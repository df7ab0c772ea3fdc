"""Checkers for notebook 01 (policy gradient and baselines): Exercise 1 of the lecture.

In the notebook::

    from rlvr.checks import nb01 as checks
    checks.mean_baseline.check(mean_baseline_advantages)
    checks.rloo.check(rloo_advantages)
    checks.score_mean_zero.solution()
"""

from __future__ import annotations

import torch

from rlvr.checks import Case, Exercise, FreeAnswer
from rlvr.checks.core import random_group_cases
from rlvr.objectives import mean_baseline_advantages, rloo_advantages


def _cases() -> list[Case]:
    """Cases shared by both exercises, from the simplest to the ones that catch batch-level means."""
    return [
        Case("one group of 4, rewards [1, 0, 0, 0], group_size=4", args=(torch.tensor([1.0, 0, 0, 0]), 4)),
        Case(
            "two groups of 4, rewards [1, 0, 0, 1, 0, 0, 0, 0], group_size=4 (each group has its own mean)",
            args=(torch.tensor([1.0, 0, 0, 1, 0, 0, 0, 0]), 4),
        ),
        Case(
            "three groups of 2, rewards [0, 1, 1, 1, 0, 0], group_size=2",
            args=(torch.tensor([0.0, 1, 1, 1, 0, 0]), 2),
        ),
        Case(
            "all rewards equal [1, 1, 1, 1, 1, 1], group_size=3 (no signal: all advantages 0)",
            args=(torch.ones(6), 3),
        ),
        Case(
            "every reward shifted by +5: [6, 5, 5, 5, 6, 6], group_size=3 (a baseline removes the shift)",
            args=(torch.tensor([6.0, 5, 5, 5, 6, 6]), 3),
        ),
        *random_group_cases(),
    ]


mean_baseline = Exercise(
    name="mean baseline, the answer itself included",
    reference=mean_baseline_advantages,
    cases=_cases(),
    hint=(
        "View the flat rewards `[B]` as one row per prompt with `rewards.view(-1, group_size)` (shape "
        "`[B / G, G]`), subtract each row's mean (`mean(dim=1, keepdim=True)`), and flatten back to `[B]`."
    ),
    solution="""
r = rewards.view(-1, group_size)                    # [B/G, G]
return (r - r.mean(dim=1, keepdim=True)).reshape(-1)  # [B]
""",
)

rloo = Exercise(
    name="leave-one-out baseline (RLOO)",
    reference=rloo_advantages,
    cases=_cases(),
    hint=(
        "For answer i the baseline is the mean of the OTHER G-1 rewards of its group: "
        "(sum of the group - r_i) / (G - 1). Compute the group sums with `sum(dim=1, keepdim=True)` on the "
        "`[B / G, G]` view, then flatten back to `[B]`."
    ),
    solution="""
r = rewards.view(-1, group_size)                                  # [B/G, G]
others = (r.sum(dim=1, keepdim=True) - r) / (group_size - 1)      # [B/G, G]
return (r - others).reshape(-1)                                   # [B]
""",
)

score_mean_zero = FreeAnswer(
    "E[grad log p] = 0, and the (G-1)/G factor",
    hint=(
        "Write the expectation as a sum over answers z weighted by p(z), and use grad log p = grad p / p. "
        "For the factor: expand A_i = r_i - (1/G) sum_j r_j and look at the j = i term separately; the other "
        "answers are sampled independently of z_i."
    ),
    solution=r"""
$\mathbb{E}_{z\sim p_\theta}[\nabla_\theta \log p_\theta(z)]
= \sum_z p_\theta(z)\,\frac{\nabla_\theta p_\theta(z)}{p_\theta(z)}
= \nabla_\theta \sum_z p_\theta(z) = \nabla_\theta 1 = 0.$

So for any $b$ that does not depend on the sampled answer,
$\mathbb{E}[(R(z)-b)\nabla\log p(z)] = \mathbb{E}[R(z)\nabla\log p(z)] - b\cdot 0$: the baseline changes the variance,
not the expectation.

With $A_i = r_i - \frac1G\sum_j r_j$: for $j\neq i$, $z_j$ is independent of $z_i$, so
$\mathbb{E}[r_j\nabla\log p(z_i)] = \mathbb{E}[r_j]\,\mathbb{E}[\nabla\log p(z_i)] = 0$. The $j=i$ term is
$-\frac1G r_i\nabla\log p(z_i)$, which does NOT vanish. Hence
$\mathbb{E}[A_i\nabla\log p(z_i)] = (1-\frac1G)\,\mathbb{E}[r\nabla\log p(z)]$: the right direction, a step
$(G-1)/G$ as long. RLOO's baseline $\frac{1}{G-1}\sum_{j\neq i} r_j$ contains only independent answers, so every
cross term is 0 and the expectation is exactly the policy gradient.
""",
)
