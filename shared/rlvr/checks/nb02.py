"""Checkers for notebook 02 (PPO): Exercise 2 of the lecture.

In the notebook::

    from rlvr.checks import nb02 as checks
    checks.clipped_objective.check(clipped_objective)
    checks.one_update.solution()
"""

from __future__ import annotations

import torch

from rlvr.checks import Exercise, FreeAnswer, GradCase, Mistake
from rlvr.i18n import N_


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


def _band(ratio, clip_eps):
    """The ratio held inside [1 - eps, 1 + eps]."""
    return torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)


MISTAKES = [
    Mistake(
        "max_for_min",
        N_("You keep the LARGER of the two terms; PPO keeps the smaller one (the pessimistic choice)."),
        N_("For each entry, keep the smaller of the unclipped and the clipped term."),
        lambda ratio, advantage, clip_eps=0.2: torch.maximum(ratio * advantage, _band(ratio, clip_eps) * advantage),
    ),
    Mistake(
        "clipped_only",
        N_("You return the clipped term alone; PPO takes the smaller of it and the unclipped term."),
        N_(
            "Compute both terms, ratio times advantage and clipped ratio times advantage, and keep the smaller of each "
            "pair."
        ),
        lambda ratio, advantage, clip_eps=0.2: _band(ratio, clip_eps) * advantage,
    ),
    Mistake(
        "unclipped_only",
        N_("You return the unclipped term (ratio times advantage): nothing is clipped."),
        N_(
            "Also compute the term with the ratio held inside [1 - clip_eps, 1 + clip_eps], and keep the smaller of "
            "the two."
        ),
        lambda ratio, advantage, clip_eps=0.2: ratio * advantage,
    ),
    Mistake(
        "upper_cap_only",
        N_(
            "For negative advantages your objective is the optimistic one: the ratio is only capped from above (at "
            "1 + clip_eps), as if the larger term were kept when A < 0; right for positive advantages, wrong for "
            "negative ones."
        ),
        N_(
            "Hold the ratio inside both ends of the band, then keep the smaller of the clipped and the unclipped term: "
            "the min takes care of the sign."
        ),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(ratio, torch.full_like(ratio, 1 + clip_eps)) * advantage,
    ),
    Mistake(
        "clip_upper_side_only",
        N_(
            "You clip the ratio from above only (at 1 + clip_eps): with a negative advantage the clip holds the ratio "
            "up at 1 - clip_eps, and your objective leaves those entries unclipped."
        ),
        N_("Hold the ratio inside both ends of the band, then keep the smaller of the two terms."),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(
            ratio * advantage, torch.clamp(ratio, max=1 + clip_eps) * advantage
        ),
    ),
    Mistake(
        "clip_lower_side_only",
        N_(
            "You clip the ratio from below only (at 1 - clip_eps): with a positive advantage the clip caps the ratio "
            "at 1 + clip_eps, and your objective leaves those entries unclipped."
        ),
        N_("Hold the ratio inside both ends of the band, then keep the smaller of the two terms."),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(
            ratio * advantage, torch.clamp(ratio, min=1 - clip_eps) * advantage
        ),
    ),
    Mistake(
        "clamp_bounds_swapped",
        N_(
            "The two ends of your band are swapped (the lower bound 1 + clip_eps, the upper 1 - clip_eps): every "
            "ratio is then held at 1 - clip_eps, whatever its value."
        ),
        N_("Give the clip 1 - clip_eps as its lower end and 1 + clip_eps as its upper end."),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(
            ratio * advantage, torch.clamp(ratio, 1 + clip_eps, 1 - clip_eps) * advantage
        ),
    ),
    Mistake(
        "loss_sign",
        N_("You return the loss, minus the objective; this exercise asks for the objective itself (to maximise)."),
        N_("Drop the minus sign: the minus belongs to the loss the optimizer minimises, later."),
        lambda ratio, advantage, clip_eps=0.2: -torch.minimum(ratio * advantage, _band(ratio, clip_eps) * advantage),
    ),
    Mistake(
        "fixed_eps",
        N_("Your band ignores the clip_eps argument: it is fixed at 0.2."),
        N_("Use clip_eps for both ends of the band."),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(ratio * advantage, _band(ratio, 0.2) * advantage),
    ),
    Mistake(
        "clip_product",
        N_("You clip the product ratio times advantage to the band, instead of the ratio."),
        N_("Hold the ratio inside the band first, then multiply by the advantage."),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(
            ratio * advantage, torch.clamp(ratio * advantage, 1 - clip_eps, 1 + clip_eps)
        ),
    ),
    Mistake(
        "clipped_detached",
        N_(
            "The clipped term is detached from the graph: inside the band the two terms are equal, the min splits the "
            "gradient between them, and half of it is lost."
        ),
        N_(
            "Keep the clipped ratio in the graph (do not detach it); the clip itself gives gradient 0 outside the band."
        ),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(
            ratio * advantage, _band(ratio, clip_eps).detach() * advantage
        ),
    ),
    Mistake(
        "unclipped_detached",
        N_(
            "The unclipped term is detached from the graph, so the gradient is lost wherever it is the smaller term "
            "(and halved inside the band)."
        ),
        N_("Keep the ratio in the graph in both terms; only the clip decides where the gradient stops."),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(
            ratio.detach() * advantage, _band(ratio, clip_eps) * advantage
        ),
    ),
    Mistake(
        "averaged",
        N_("You return the mean over all entries; the exercise asks for the objective of each entry."),
        N_("Return one value per ratio, without averaging."),
        lambda ratio, advantage, clip_eps=0.2: torch.minimum(
            ratio * advantage, _band(ratio, clip_eps) * advantage
        ).mean(),
    ),
    Mistake(
        "global_min",
        N_("You take the minimum over all entries at once (one number) instead of entry by entry."),
        N_("Compare the two terms entry by entry, one result per ratio."),
        lambda ratio, advantage, clip_eps=0.2: torch.min(
            torch.stack(torch.broadcast_tensors(ratio * advantage, _band(ratio, clip_eps) * advantage))
        ),
    ),
]

clipped_objective = Exercise(
    name=N_("PPO's clipped objective (value and gradient)"),
    reference=_clipped_objective,
    mistakes=MISTAKES,
    cases=[
        _case(
            N_("the lecture's Exercise 2: A = +2, eps = 0.2, ratios [0.5, 1.0, 1.1, 1.5]"),
            [0.5, 1.0, 1.1, 1.5],
            2.0,
            0.2,
        ),
        _case(N_("a negative advantage: A = -1, eps = 0.2, ratios [0.5, 0.9, 1.3]"), [0.5, 0.9, 1.3], -1.0, 0.2),
        _case(
            N_("one advantage per ratio, A = [2, -2, 1, -1], eps = 0.1, ratios [1.3, 1.3, 0.7, 0.7]"),
            [1.3, 1.3, 0.7, 0.7],
            [2.0, -2.0, 1.0, -1.0],
            0.1,
        ),
    ],
    hint=[
        N_(
            "PPO keeps, for each entry, the more pessimistic of two objectives: the ratio times the advantage, and the "
            "same with the ratio held inside a band around 1. Taking the smaller of the two is what makes it "
            "pessimistic for BOTH signs of the advantage."
        ),
        N_(
            r"$L(\rho) = \min\big(\rho A,\ \operatorname{clip}(\rho, 1-\epsilon, 1+\epsilon)\,A\big)$ entry by "
            r"entry, with $\epsilon$ the argument clip_eps. Build it from tensor operations on the ratio only, so that "
            "autograd can differentiate it."
        ),
    ],
    solution="""
unclipped = ratio * advantage                                          # [N]
clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantage   # [N]
return torch.minimum(unclipped, clipped)                               # [N]
""",
)

one_update = FreeAnswer(
    N_("clipping when every batch is used for one update only"),
    hint=[
        N_(
            r"The ratio $\rho = \pi_\theta / \pi_{old}$ (pi_old: the policy that sampled the batch) compares the "
            r"policy "
            "with the one that sampled the batch. Before the first update on a batch, how do the two compare?"
        ),
        N_(
            r"At $\rho = 1$, for either sign of $A$: which term does the min pick, and what is the gradient of the "
            "objective there? Compare it with the policy gradient of notebook 01."
        ),
    ],
    solution=N_(r"""
Clipping does nothing then. The ratio is computed against the policy that sampled the batch, and before the
first (and only) update on it the two are the same policy: $\rho_t = 1$ for every token. At $\rho = 1$ we are inside
$[1-\epsilon, 1+\epsilon]$, the clipped and unclipped terms are equal, and
$\nabla_\theta \min(\rho_t A_t, \mathrm{clip}(\rho_t) A_t) = A_t \nabla_\theta \rho_t
= A_t \nabla_\theta \log \pi_\theta(o_t)$
(because $\nabla \rho = \rho \nabla \log \pi$ and $\rho = 1$): exactly the policy gradient with advantage $A_t$.
The clip only acts once the same batch is reused: after a few updates the policy has moved, ratios drift away
from 1, and the clip switches the gradient off for tokens that have already moved far enough in the direction
their advantage asks for. (In short: with one update per batch, PPO is the policy gradient with advantages $A_t$;
the same holds for GRPO with one update per batch, notebook 03.)
"""),
)
