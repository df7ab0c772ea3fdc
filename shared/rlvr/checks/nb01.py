"""Checkers for notebook 01 (policy gradient and baselines): Exercise 1 of the lecture.

In the notebook::

    from rlvr.checks import nb01 as checks
    checks.mean_baseline.check(mean_baseline_advantages)
    checks.rloo.check(rloo_advantages)
    checks.rloo.hint()        # a nudge; checks.rloo.hint(2): the formula
    checks.score_mean_zero.solution()
"""

from __future__ import annotations

import torch

from rlvr.checks import Case, Exercise, FreeAnswer, Mistake
from rlvr.checks import wrong_groups as w
from rlvr.checks.core import random_group_cases
from rlvr.i18n import N_
from rlvr.objectives import mean_baseline_advantages, rloo_advantages


def _cases() -> list[Case]:
    """Cases shared by both exercises, from the simplest to the ones that catch batch-level means."""
    return [
        Case(N_("one group of 4, rewards [1, 0, 0, 0], group_size=4"), args=(torch.tensor([1.0, 0, 0, 0]), 4)),
        Case(
            N_("two groups of 4, rewards [1, 0, 0, 1, 0, 0, 0, 0], group_size=4 (each group has its own mean)"),
            args=(torch.tensor([1.0, 0, 0, 1, 0, 0, 0, 0]), 4),
        ),
        Case(
            N_("three groups of 2, rewards [0, 1, 1, 1, 0, 0], group_size=2"),
            args=(torch.tensor([0.0, 1, 1, 1, 0, 0]), 2),
        ),
        Case(
            N_("all rewards equal [1, 1, 1, 1, 1, 1], group_size=3 (no signal: all advantages 0)"),
            args=(torch.ones(6), 3),
        ),
        Case(
            N_("every reward shifted by +5: [6, 5, 5, 5, 6, 6], group_size=3 (a baseline removes the shift)"),
            args=(torch.tensor([6.0, 5, 5, 5, 6, 6]), 3),
        ),
        *random_group_cases(),
    ]


def _shared_mistakes(baseline, baseline_only: str) -> list[Mistake]:
    """Slips that both baselines share; `baseline(r)` is the exercise's centring of rows [P, G]; `baseline_only` the
    sentence naming the slip of returning the baseline itself."""
    return [
        Mistake(
            "columns",
            *w.COLUMNS,
            lambda rewards, group_size: w.from_columns(baseline(w.columns(rewards, group_size).T).T),
        ),
        Mistake(
            "groups_of_p",
            N_(
                "Your groups hold B/G consecutive answers (the number of prompts), not group_size: the rewards were "
                "shaped into group_size rows and averaged along each row."
            ),
            N_("Shape the rewards into one row per prompt, with group_size entries in each row."),
            lambda rewards, group_size: w.flat(baseline(w.rows(rewards, rewards.numel() // group_size))),
        ),
        Mistake(
            "not_flattened",
            N_("Your advantages are right but come back as one row per group."),
            N_("Flatten them back to one advantage per answer, the shape of the rewards."),
            lambda rewards, group_size: baseline(w.rows(rewards, group_size)),
        ),
        Mistake(
            "sign",
            N_("Your advantages have the wrong sign: baseline minus reward."),
            N_("Subtract the baseline from the reward, not the reward from the baseline."),
            lambda rewards, group_size: -w.flat(baseline(w.rows(rewards, group_size))),
        ),
        Mistake(
            "baseline_only",
            baseline_only,
            N_("Return each reward minus its baseline."),
            lambda rewards, group_size: w.flat(w.rows(rewards, group_size) - baseline(w.rows(rewards, group_size))),
        ),
    ]


def _divides_by_std(centre, says: str, fix: str) -> Mistake:
    """The slip of also dividing the centred rewards by the group's std: any usual std and eps (the ratio of the
    learner's advantages to the right ones is 1/std in every group, whichever eps they chose)."""
    ways = [lambda rewards, group_size, f=f: w.flat(f(w.rows(rewards, group_size))) for f in w.scaled_by_std(centre)]
    return Mistake("divides_by_std", says, fix, ways[0], tuple(ways[1:]))


MEAN_MISTAKES = [
    Mistake(
        "leave_one_out",
        N_(
            "Your baseline is the mean of the OTHER answers of the group (leave-one-out, RLOO: the next exercise); "
            "this baseline includes the answer itself."
        ),
        N_("Subtract the plain mean of all G rewards of the group, the answer's own reward included."),
        lambda rewards, group_size: w.flat(w.loo_centred(w.rows(rewards, group_size))),
    ),
    Mistake(
        "batch_mean",
        N_("You subtract the mean of the whole batch, not the mean of each group."),
        N_("Split the rewards into groups of group_size consecutive answers and subtract each group's own mean."),
        lambda rewards, group_size: rewards - rewards.mean(),
    ),
    _divides_by_std(
        w.mean_centred,
        N_("You also divide by the group's std: that is GRPO's advantage (notebook 03), not the plain mean baseline."),
        N_("Only subtract the group mean; leave the scale of the rewards alone."),
    ),
    Mistake(
        "stats_over_prompts",
        N_(
            "Your mean runs over the wrong axis: with one row per prompt, you average down each column, across the "
            "prompts, instead of along each row (a prompt's own G answers)."
        ),
        N_("Average along the axis that holds a prompt's G answers, so that each prompt gets its own mean."),
        lambda rewards, group_size: w.flat(w.mean_centred(w.rows(rewards, group_size), dim=0)),
    ),
    Mistake(
        "tiled_baselines",
        N_(
            "Your group means are lined up with the wrong answers: you spread them back by tiling (the mean of group "
            "1, of group 2, ..., then group 1 again), so most answers get another prompt's mean."
        ),
        N_(
            "Repeat each group's mean G times in a row (or subtract it from the rows of G rewards and flatten), so "
            "that every answer gets its own group's mean."
        ),
        lambda rewards, group_size: w.tiled(rewards, w.rows(rewards, group_size).mean(dim=1), group_size),
    ),
    Mistake(
        "mean_divides_by_g_minus_1",
        N_("Your group mean divides the group's sum by G - 1 instead of G."),
        N_("The mean of G rewards is their sum divided by G."),
        lambda rewards, group_size: w.flat(
            w.rows(rewards, group_size) - w.rows(rewards, group_size).sum(dim=1, keepdim=True) / (group_size - 1)
        ),
    ),
    *_shared_mistakes(w.mean_centred, N_("You return the baseline itself (each group's mean), not the advantage.")),
]

RLOO_MISTAKES = [
    Mistake(
        "group_mean",
        N_(
            "Your baseline is the plain group mean, the answer itself included (the previous exercise); leave-one-out "
            "leaves the answer's own reward out."
        ),
        N_("For each answer, average only the other G - 1 rewards of its group."),
        lambda rewards, group_size: w.flat(w.mean_centred(w.rows(rewards, group_size))),
    ),
    Mistake(
        "divides_by_g",
        N_("Your leave-one-out baseline divides the sum of the others by G; there are only G - 1 others."),
        N_("Divide the sum of the other rewards by G - 1."),
        lambda rewards, group_size: w.flat(
            w.rows(rewards, group_size) - w.others_mean(w.rows(rewards, group_size), divisor=group_size)
        ),
    ),
    Mistake(
        "over_batch",
        N_("You leave one out of the whole batch, not of the answer's own group."),
        N_("Average the other G - 1 rewards of the answer's own group (its group_size consecutive neighbours)."),
        lambda rewards, group_size: rewards - (rewards.sum() - rewards) / (rewards.numel() - 1),
    ),
    _divides_by_std(
        w.loo_centred,
        N_(
            "You also divide by the group's std, as GRPO does (notebook 03); the leave-one-out baseline only subtracts "
            "the mean of the other answers."
        ),
        N_("Only subtract the mean of the other G - 1 rewards; leave the scale of the rewards alone."),
    ),
    *_shared_mistakes(
        w.loo_centred, N_("You return the baseline itself (the mean of the other answers), not the advantage.")
    ),
]

mean_baseline = Exercise(
    name=N_("mean baseline, the answer itself included"),
    reference=mean_baseline_advantages,
    cases=_cases(),
    mistakes=MEAN_MISTAKES,
    hint=[
        N_(
            "A prompt's G answers sit next to each other in the flat rewards. Each answer's baseline is the average "
            "reward of its own group, its own reward included; the advantage is its reward minus that baseline."
        ),
        N_(
            r"Arrange the $B$ rewards as $B/G$ rows of $G$ (one row per prompt) and compute "
            r"$A_i = r_i - \frac{1}{G}\sum_{j=1}^{G} r_j$ within each row; then return one advantage per answer, "
            "in the order of the rewards."
        ),
    ],
    solution="""
r = rewards.view(-1, group_size)                    # [B/G, G]
return (r - r.mean(dim=1, keepdim=True)).reshape(-1)  # [B]
""",
)

rloo = Exercise(
    name=N_("leave-one-out baseline (RLOO)"),
    reference=rloo_advantages,
    cases=_cases(),
    mistakes=RLOO_MISTAKES,
    hint=[
        N_(
            "Each answer's baseline is the average of the OTHER G - 1 rewards of its group: its own reward does not "
            "count, so the baseline cannot depend on the answer it judges."
        ),
        N_(
            r"$A_i = r_i - \frac{1}{G-1}\sum_{j \neq i} r_j$, and the sum over the others is the group's total minus "
            r"$r_i$: one total per group is enough."
        ),
    ],
    solution="""
r = rewards.view(-1, group_size)                                  # [B/G, G]
others = (r.sum(dim=1, keepdim=True) - r) / (group_size - 1)      # [B/G, G]
return (r - others).reshape(-1)                                   # [B]
""",
)

score_mean_zero = FreeAnswer(
    N_("E[grad log pi] = 0, and the (G-1)/G factor"),
    hint=[
        N_(
            r"Write the expectation as a sum over answers $o$ weighted by $\pi_\theta(o)$, and use "
            r"$\nabla \log \pi_\theta = \nabla \pi_\theta / \pi_\theta$ (grad pi / pi)."
        ),
        N_(
            r"For the factor: expand $A_i = r_i - \frac{1}{G}\sum_j r_j$ and look at the term $j$ equal to $i$ on its "
            "own; the other answers are sampled independently of $o_i$."
        ),
    ],
    solution=N_(r"""
$\mathbb{E}_{o\sim\pi_\theta}[\nabla_\theta \log \pi_\theta(o)]
= \sum_o \pi_\theta(o)\,\frac{\nabla_\theta \pi_\theta(o)}{\pi_\theta(o)}
= \nabla_\theta \sum_o \pi_\theta(o) = \nabla_\theta 1 = 0.$

So for any $b$ that does not depend on the sampled answer,
$\mathbb{E}[(R(o)-b)\nabla\log \pi_\theta(o)] = \mathbb{E}[R(o)\nabla\log \pi_\theta(o)] - b\cdot 0$: the baseline
changes the variance, not the expectation.

With $A_i = r_i - \frac1G\sum_j r_j$ and $r_i = R(o_i)$: for $j\neq i$, $o_j$ is independent of $o_i$, so
$\mathbb{E}[r_j\nabla\log \pi_\theta(o_i)] = \mathbb{E}[r_j]\,\mathbb{E}[\nabla\log \pi_\theta(o_i)] = 0$. The $j=i$
term is $-\frac1G r_i\nabla\log \pi_\theta(o_i)$, which does NOT vanish. Hence
$\mathbb{E}[A_i\nabla\log \pi_\theta(o_i)] = (1-\frac1G)\,\mathbb{E}[R(o)\nabla\log \pi_\theta(o)]$: the right
direction, a step $(G-1)/G$ as long. RLOO's baseline $\frac{1}{G-1}\sum_{j\neq i} r_j$ contains only independent
answers, so every cross term is 0 and the expectation is exactly the policy gradient.

The same in one line: with RLOO's baseline $b_i = \frac{1}{G-1}\sum_{j\neq i} r_j$, the group mean is
$\frac1G\big(r_i + (G-1)\,b_i\big)$, so $A^{\text{mean}}_i = \frac{G-1}{G}(r_i - b_i) = \frac{G-1}{G}A^{\text{RLOO}}_i$.
"""),
)
