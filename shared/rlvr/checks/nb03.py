"""Checkers for notebook 03 (GRPO, a tiny model that learns to think): Exercises 3, 6 and 7(a)-(c) of the lecture.

In the notebook::

    from rlvr.checks import nb03 as checks
    checks.grpo_advantages.check(grpo_advantages)
    checks.dr_grpo_advantages.check(dr_grpo_advantages)
    checks.pass_at_k.check(pass_at_k)
    checks.perfect_teacher.hint()
    checks.grpo_step.check(my_grpo_step)      # the whole step, stage by stage (rlvr.checks.step)
    checks.kl_k3.check(my_kl_k3)              # Exercise 7(b): the penalty per token
"""

from __future__ import annotations

import math

import torch

from rlvr import objectives
from rlvr.checks import Case, Exercise, FreeAnswer, GradCase, Mistake
from rlvr.checks import wrong_groups as w
from rlvr.checks.core import random_group_cases
from rlvr.checks.step import StepCase, StepExercise
from rlvr.i18n import N_

ONE_RIGHT = [1.0, 0, 0, 0, 0, 0, 0, 0]  # the lecture's Exercise 3 group


def _reference_grpo(rewards: torch.Tensor, group_size: int, eps: float = 0.0) -> torch.Tensor:
    """GRPO advantages with the POPULATION std (divide by G) plus eps, as in the lecture's Exercise 3."""
    return objectives.grpo_advantages(rewards, group_size, eps=eps, std="population")


def _reference_dr_grpo(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Dr. GRPO advantages: the group mean subtracted, nothing divided."""
    return objectives.dr_grpo_advantages(rewards, group_size)


def _grpo_cases() -> list[Case]:
    """From the lecture's group to the cases that catch the usual slips (std, grouping, eps)."""
    return [
        Case(
            N_("the lecture's group [1, 0, 0, 0, 0, 0, 0, 0], group_size=8, eps=0"),
            args=(torch.tensor(ONE_RIGHT), 8),
            kwargs={"eps": 0.0},
        ),
        Case(
            N_("two answers per group [1, 0, 0, 1], group_size=2, eps=0 (population std of [1, 0] is 0.5)"),
            args=(torch.tensor([1.0, 0, 0, 1]), 2),
            kwargs={"eps": 0.0},
        ),
        Case(
            N_("two groups of 4 [1, 0, 0, 0, 1, 1, 0, 0], group_size=4, eps=0 (each group has its own mean and std)"),
            args=(torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 0]), 4),
            kwargs={"eps": 0.0},
        ),
        Case(
            N_("the lecture's group with eps=1e-4 (eps is added to the std)"),
            args=(torch.tensor(ONE_RIGHT), 8),
            kwargs={"eps": 1e-4},
        ),
        Case(
            N_("all rewards equal [1, 1, 1, 1, 0, 0, 0, 0], group_size=4, eps=1e-4 (std 0: advantages 0, not NaN)"),
            args=(torch.tensor([1.0, 1, 1, 1, 0, 0, 0, 0]), 4),
            kwargs={"eps": 1e-4},
        ),
        Case(
            N_("one group [1, 0, 0, 0], group_size=4, a large eps=0.5 (shows where eps goes)"),
            args=(torch.tensor([1.0, 0, 0, 0]), 4),
            kwargs={"eps": 0.5},
        ),
        Case(
            N_("the lecture's group with a large eps=0.5 (eps larger than the std)"),
            args=(torch.tensor(ONE_RIGHT), 8),
            kwargs={"eps": 0.5},
        ),
        *random_group_cases(eps=1e-4),
    ]


def _dr_grpo_cases() -> list[Case]:
    """The same groups, without eps (Dr. GRPO divides by nothing)."""
    return [
        Case(N_("the lecture's group [1, 0, 0, 0, 0, 0, 0, 0], group_size=8"), args=(torch.tensor(ONE_RIGHT), 8)),
        Case(
            N_("two groups of 4 [1, 0, 0, 0, 1, 1, 0, 0], group_size=4 (each group has its own mean)"),
            args=(torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 0]), 4),
        ),
        Case(
            N_("all rewards equal [1, 1, 1, 1, 0, 0, 0, 0], group_size=4 (advantages 0)"),
            args=(torch.tensor([1.0, 1, 1, 1, 0, 0, 0, 0]), 4),
        ),
        *random_group_cases(),
    ]


def _rows_then(fn):
    """A wrong answer that works on the rows [P, G] and flattens: fn(r, eps) -> [P, G]."""
    return lambda rewards, group_size, eps=0.0: w.flat(fn(w.rows(rewards, group_size), eps))


def _shared_mistakes(advantage) -> list[Mistake]:
    """Slips of the grouping that both advantages share; `advantage(r, eps)` works on rows [P, G]."""
    return [
        Mistake(
            "columns",
            *w.COLUMNS,
            lambda rewards, group_size, eps=0.0: w.from_columns(advantage(w.columns(rewards, group_size).T, eps).T),
        ),
        Mistake(
            "groups_of_p",
            N_("Your groups hold B/G consecutive answers (the number of prompts), not group_size."),
            N_("Shape the rewards into one row per prompt, with group_size entries in each row."),
            lambda rewards, group_size, eps=0.0: w.flat(advantage(w.rows(rewards, rewards.numel() // group_size), eps)),
        ),
        Mistake(
            "not_flattened",
            N_("Your advantages are right but come back as one row per group."),
            N_("Flatten them back to one advantage per answer, the shape of the rewards."),
            lambda rewards, group_size, eps=0.0: advantage(w.rows(rewards, group_size), eps),
        ),
        Mistake(
            "sign",
            N_("Your advantages have the wrong sign: a right answer in a mixed group gets a negative advantage."),
            N_("Subtract the group mean from the reward, not the reward from the group mean."),
            lambda rewards, group_size, eps=0.0: -w.flat(advantage(w.rows(rewards, group_size), eps)),
        ),
    ]


EPS_SLIPS = {  # an eps slip's name in the library -> where it puts eps (`wrong_groups.zscore`)
    "eps_in_var": "var",
    "eps_floor": "floor",
    "eps_after": "after",
    "eps_ignored": "none",
}


def _unbiased_and(library: list[Mistake]) -> list[Mistake]:
    """Two slips at once: the unbiased std AND an eps slip of the library (e.g. the square root of torch's default
    variance plus eps), named together."""
    by_name = {m.name: m for m in library}
    both = [
        Mistake.both(
            by_name["unbiased_std"],
            by_name[name],
            _rows_then(
                lambda r, eps, where=where: w.zscore(r, 0.0 if where == "none" else eps, unbiased=True, where=where)
            ),
        )
        for name, where in EPS_SLIPS.items()
    ]
    guarded = _rows_then(lambda r, eps: torch.nan_to_num(w.zscore(r, 0.0, unbiased=True, where="none"), nan=0.0))
    return [*both, Mistake.both(by_name["unbiased_std"], by_name["eps_ignored_guarded"], guarded)]


GRPO_MISTAKES = [
    Mistake(
        "unbiased_std",
        N_(
            "You divide by the unbiased std (squared deviations summed over G - 1, torch's default); Exercise 3 uses "
            "the population std (over G)."
        ),
        N_("Use the population std: the square root of the MEAN squared deviation of the group."),
        _rows_then(lambda r, eps: w.zscore(r, eps, unbiased=True)),
    ),
    Mistake(
        "batch_normalised",
        N_("You normalise with the mean and std of the whole batch, not of each group."),
        N_("Give every group its own mean and its own std."),
        lambda rewards, group_size, eps=0.0: (rewards - rewards.mean()) / (rewards.std(correction=0) + eps),
    ),
    Mistake(
        "batch_std",
        N_("You subtract each group's mean but divide by the std of the whole batch."),
        N_("Divide each group by its own std (plus eps)."),
        lambda rewards, group_size, eps=0.0: (
            w.flat(w.mean_centred(w.rows(rewards, group_size))) / (rewards.std(correction=0) + eps)
        ),
    ),
    Mistake(
        "divides_by_variance",
        N_("You divide by the group's variance, not its std (the square root of the variance)."),
        N_("Take the square root of the variance before adding eps and dividing."),
        _rows_then(lambda r, eps: w.mean_centred(r) / (w.std(r) ** 2 + eps)),
    ),
    Mistake(
        "no_std",
        N_("You do not divide by the std: that is Dr. GRPO's advantage (the next function), not GRPO's."),
        N_("Divide each group's centred rewards by the group's population std plus eps."),
        _rows_then(lambda r, eps: w.mean_centred(r)),
    ),
    Mistake(
        "eps_in_var",
        N_(
            "You put eps under the square root (the square root of variance plus eps); GRPO adds eps to the std itself."
        ),
        N_("Take the square root first, then add eps to the std."),
        _rows_then(lambda r, eps: w.zscore(r, eps, where="var")),
    ),
    Mistake(
        "eps_floor",
        N_("You use the larger of the std and eps; GRPO adds eps to the std of every group."),
        N_("Add eps to the std, for every group, instead of using it as a floor."),
        _rows_then(lambda r, eps: w.zscore(r, eps, where="floor")),
    ),
    Mistake(
        "eps_after",
        N_("You add eps after dividing (to the advantage); GRPO adds it to the std in the denominator."),
        N_("Add eps to the std, then divide the centred rewards by that sum."),
        _rows_then(lambda r, eps: w.zscore(r, eps, where="after")),
    ),
    Mistake(
        "eps_ignored",
        N_("You leave eps out: a group whose rewards are all equal divides 0 by 0, and a large eps changes nothing."),
        N_("Divide by the std PLUS eps."),
        _rows_then(lambda r, eps: w.zscore(r, 0.0, where="none")),
    ),
    Mistake(
        "eps_ignored_guarded",
        N_(
            "You leave the eps argument out of the denominator (the all-equal groups patched to 0 by hand, or a tiny "
            "eps of your own in its place), so the eps given changes nothing."
        ),
        N_("Divide by the std PLUS the eps argument; the all-equal groups then come out as 0 by themselves."),
        _rows_then(lambda r, eps: torch.nan_to_num(w.zscore(r, 0.0, where="none"), nan=0.0)),
        tuple(_rows_then(lambda r, eps, e=e: w.zscore(r, e)) for e in w.USUAL_EPS[:2]),
    ),
    Mistake(
        "leave_one_out",
        N_(
            "You subtract the mean of the OTHER answers (leave-one-out, RLOO); GRPO subtracts the group mean, the "
            "answer itself included."
        ),
        N_("Subtract the plain mean of all G rewards of the group, then divide by its std plus eps."),
        _rows_then(lambda r, eps: w.loo_centred(r) / (w.std(r) + eps)),
    ),
    Mistake(
        "stats_over_prompts",
        N_(
            "Your mean and std run over the wrong axis: with one row per prompt, you take them down each column, "
            "across the prompts, instead of along each row (a prompt's own G answers)."
        ),
        N_("Take the mean and the std along the axis that holds a prompt's G answers."),
        _rows_then(lambda r, eps: w.zscore(r, eps, dim=0)),
    ),
    *_shared_mistakes(lambda r, eps: w.zscore(r, eps)),
]
GRPO_MISTAKES += _unbiased_and(GRPO_MISTAKES)

DR_GRPO_MISTAKES = [
    Mistake(
        "divides_by_std",
        N_("You still divide by the group's std: that is GRPO's advantage; Dr. GRPO only subtracts the group mean."),
        N_("Drop the division: return each reward minus its group's mean."),
        _rows_then(lambda r, eps: w.zscore(r, 1e-4)),
        tuple(_rows_then(lambda r, eps, f=f: f(r)) for f in w.scaled_by_std(w.mean_centred)),
    ),
    Mistake(
        "divided_by_group_size",
        N_(
            "You divide the centred rewards by G: Dr. GRPO divides the advantage by nothing (its constant normaliser, "
            "max_len, belongs to the loss, notebook 05)."
        ),
        N_("Return each reward minus its group's mean, without dividing."),
        _rows_then(lambda r, eps: w.mean_centred(r) / r.shape[1]),
    ),
    Mistake(
        "stats_over_prompts",
        N_(
            "Your mean runs over the wrong axis: with one row per prompt, you average down each column, across the "
            "prompts, instead of along each row (a prompt's own G answers)."
        ),
        N_("Average along the axis that holds a prompt's G answers, so that each prompt gets its own mean."),
        _rows_then(lambda r, eps: w.mean_centred(r, dim=0)),
    ),
    Mistake(
        "leave_one_out",
        N_(
            "You subtract the mean of the OTHER answers (leave-one-out, RLOO); Dr. GRPO subtracts the plain group mean."
        ),
        N_("Subtract the mean of all G rewards of the group, the answer's own included."),
        _rows_then(lambda r, eps: w.loo_centred(r)),
    ),
    Mistake(
        "batch_mean",
        N_("You subtract the mean of the whole batch, not the mean of each group."),
        N_("Give every group its own mean."),
        lambda rewards, group_size: rewards - rewards.mean(),
    ),
    *_shared_mistakes(lambda r, eps: w.mean_centred(r)),
]

grpo_advantages = Exercise(
    name=N_("GRPO advantages (population std + eps)"),
    reference=_reference_grpo,
    cases=_grpo_cases(),
    mistakes=GRPO_MISTAKES,
    hint=[
        N_(
            "Within each group of G consecutive answers: centre the rewards on the group's mean, then scale them by "
            "the group's spread, with eps keeping the scale finite when every reward of the group is the same."
        ),
        N_(
            r"$\hat A_i = \dfrac{r_i - \operatorname{mean}(r_1..r_G)}"
            r"{\operatorname{std}(r_1..r_G) + \varepsilon_{\text{std}}}$ "
            r"with the POPULATION std, $\sqrt{\frac{1}{G}\sum_j (r_j - \bar r)^2}$ (divide by $G$, not $G - 1$); one "
            "row of G rewards per prompt, then back to one advantage per answer."
        ),
    ],
    solution=N_("""
r = rewards.view(-1, group_size)                             # [B/G, G]
centred = r - r.mean(dim=1, keepdim=True)                    # [B/G, G]
std = r.std(dim=1, keepdim=True, correction=0)               # [B/G, 1] population std
return (centred / (std + eps)).reshape(-1)                   # [B]
"""),
)

dr_grpo_advantages = Exercise(
    name=N_("Dr. GRPO advantages (group mean only)"),
    reference=_reference_dr_grpo,
    cases=_dr_grpo_cases(),
    mistakes=DR_GRPO_MISTAKES,
    hint=[
        N_("Dr. GRPO keeps GRPO's baseline and drops its scaling: nothing is divided."),
        N_(
            r"$\hat A_i = r_i - \operatorname{mean}(r_1..r_G)$ within each group of G consecutive answers, one "
            "advantage per answer."
        ),
    ],
    solution="""
r = rewards.view(-1, group_size)                             # [B/G, G]
return (r - r.mean(dim=1, keepdim=True)).reshape(-1)         # [B]
""",
)

which_is_larger = FreeAnswer(
    N_("Exercise 3: who rewards the lone right answer more, and what it means for hard prompts"),
    hint=[
        N_(
            "Compare the lone right answer's two advantages (2.65 and 0.875). What does dividing by the group's std do "
            "when almost every reward of the group is the same?"
        ),
        N_(
            r"The std of a 0/1 group with a share $p$ of ones is $\sqrt{p(1-p)}$: compare it for a hard prompt "
            r"($p$ small) with a balanced one ($p = 0.5$)."
        ),
    ],
    solution=N_(
        "GRPO gives the lone right answer 2.65 (Dr. GRPO 0.875): dividing by the small std of a mostly-wrong group "
        "multiplies the signal by 1/0.331 ≈ 3, where a balanced group (p = 0.5, std 0.5) gets x2. Prompts that are "
        "very hard (or very easy) have a small std, so GRPO weighs them more than balanced ones, and Dr. GRPO does "
        "not (lecture 4.1: up to 3.5x; with groups of 8 the effect is much weaker, as notebook 01 section 5 "
        "measures)."
    ),
)


# ----------------------------------------------------------------------------------------------- Exercise 6
def _pass_cases() -> list[Case]:
    """Check values of Chen et al. 2021 (arXiv:2107.03374, section 2.1) and the edge cases of the estimator."""
    return [
        Case(N_("n=10, c=3, k=1 (pass@1 is c/n)"), args=(10, 3, 1)),
        Case(N_("n=10, c=3, k=5"), args=(10, 3, 5)),
        Case(N_("n=16, c=0, k=16 (no right answer among the samples)"), args=(16, 0, 16)),
        Case(N_("n=16, c=10, k=8 (n - c < k: every draw of 8 contains a right answer)"), args=(16, 10, 8)),
        Case(N_("n=16, c=16, k=1 (every sample right)"), args=(16, 16, 1)),
        Case(N_("n=16, c=2, k=4"), args=(16, 2, 4)),
        Case(N_("n=200, c=7, k=50 (large n: use a numerically stable form)"), args=(200, 7, 50)),
    ]


def _unbiased(n, c, k) -> float:
    """1 - C(n-c, k) / C(n, k)."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _product(n, c, k, first, last=None) -> float:
    """1 - prod_{i=first}^{last} (1 - k / i): the product form, from `first` to `last` (right: n - c + 1 to n)."""
    if n - c < k:
        return 1.0
    out = 1.0
    for i in range(max(first, 1), (n if last is None else last) + 1):
        out *= 1.0 - k / i
    return 1.0 - out


PASS_MISTAKES = [
    Mistake(
        "with_replacement",
        N_(
            "You use 1 - (1 - c/n)^k: it draws the k answers WITH replacement, a biased estimate of pass@k (Chen et "
            "al. count draws without replacement)."
        ),
        N_(
            "Draw the k answers without replacement from the n samples: the chance that all k are wrong is the number "
            "of ways to pick k wrong ones over the number of ways to pick any k, and pass@k is 1 minus that."
        ),
        lambda n, c, k: 1 - (1 - c / n) ** k,
    ),
    Mistake(
        "all_right",
        N_("You compute the chance that ALL k draws are right; pass@k asks for AT LEAST one right answer."),
        N_("Take 1 minus the chance that all k draws are wrong."),
        lambda n, c, k: math.comb(c, k) / math.comb(n, k),
    ),
    Mistake(
        "all_wrong",
        N_("You return the chance that all k draws are wrong; pass@k is 1 minus it."),
        N_("Subtract your result from 1."),
        lambda n, c, k: math.comb(n - c, k) / math.comb(n, k),
    ),
    Mistake(
        "pass_at_1",
        N_("You return c/n whatever k is: that is pass@1."),
        N_("Use k: the chance that at least one of k answers drawn without replacement is right."),
        lambda n, c, k: c / n,
    ),
    Mistake(
        "percent",
        N_("You return a percentage; pass@k is a probability between 0 and 1."),
        N_("Do not multiply by 100."),
        lambda n, c, k: 100 * _unbiased(n, c, k),
    ),
    Mistake(
        "product_one_term_too_many",
        N_("Your product runs over one term too many: it starts at n - c instead of n - c + 1."),
        N_("Start the product at n - c + 1 (c terms in all, one per right answer)."),
        lambda n, c, k: _product(n, c, k, n - c),
    ),
    Mistake(
        "product_one_term_too_few",
        N_("Your product runs over one term too few: it starts at n - c + 2 instead of n - c + 1."),
        N_("Start the product at n - c + 1 (c terms in all, one per right answer)."),
        lambda n, c, k: _product(n, c, k, n - c + 2),
    ),
    Mistake(
        "product_stops_early",
        N_("Your product stops one term early, at n - 1: the last factor, for i = n, is missing."),
        N_("Run the product from n - c + 1 up to n itself (c terms in all, one per right answer)."),
        lambda n, c, k: _product(n, c, k, n - c + 1, n - 1),
    ),
    Mistake(
        "integer_division",
        N_(
            "You divide the two counts with integer (floor) division: their ratio rounds down to 0, so your pass@k "
            "is 1 whenever c > 0."
        ),
        N_("Divide the counts as real numbers (true division)."),
        lambda n, c, k: 1 - math.comb(n - c, k) // math.comb(n, k),
    ),
    Mistake(
        "union_bound",
        N_("You add up k chances of c/n (capped at 1): a union bound, not the chance of at least one right answer."),
        N_("Compute 1 minus the chance that all k draws are wrong."),
        lambda n, c, k: min(1.0, k * c / n),
    ),
]

pass_at_k = Exercise(
    name=N_("unbiased pass@k (Chen et al. 2021)"),
    reference=objectives.pass_at_k,
    cases=_pass_cases(),
    mistakes=PASS_MISTAKES,
    hint=[
        N_(
            "pass@k is the chance that at least one of k answers, drawn WITHOUT replacement from the n samples, is "
            "right: 1 minus the chance that all k are wrong. Count, do not raise c/n to a power."
        ),
        N_(
            r"$\text{pass@}k = 1 - \binom{n-c}{k} \big/ \binom{n}{k}$ (Chen et al. 2021, section 2.1), which is 1 "
            r"when $n - c < k$; for large $n$ the same number is $1 - \prod_{i=n-c+1}^{n} (1 - k/i)$."
        ),
    ],
    solution="""
if n - c < k:
    return 1.0
return 1.0 - math.comb(n - c, k) / math.comb(n, k)
""",
)

large_k = FreeAnswer(
    N_("Exercise 6: why a large k hides what RL gained"),
    hint=[
        N_(
            "pass@16 asks whether at least one of 16 answers is right. How good must a model be to pass that, and how "
            "much does it gain from being right more often?"
        ),
        N_(r"Compute $1 - (1 - p)^{16}$ for $p = 0.1$ and $p = 0.9$ and compare the change with the change of pass@1."),
    ],
    solution=N_(
        "p = 0.1: pass@16 = 1 - 0.9^16 ≈ 0.81; p = 0.9: pass@16 = 1 - 0.1^16 ≈ 1.0. pass@1 goes from 10% to 90% "
        "(9x) while pass@16 goes from 81% to 100%. With many tries a model that is right only now and then "
        "already passes, so a large k measures what the model CAN sample, not how reliably it does it; RL's gain "
        "is reliability."
    ),
)


# ----------------------------------------------------------------------------------------------- Exercise 7
perfect_teacher = FreeAnswer(
    N_("Exercise 7(a): a perfect teacher"),
    hint=[
        N_("What is left for RL to learn when every chain of thought of the warm-up is already right?"),
        N_(
            "Read the perfect teacher's warm-up lines under section 8's run cell and its teacher-error panel. Compare "
            "the warm-up's think-first accuracy at temperature 1 with that of the default teacher (0.1), then the "
            "findings lines: accuracy, the KL to the warm-up and the all-equal share beside the default run's."
        ),
    ],
    solution=N_(
        "With a perfect teacher the warm-up's chains are (nearly) always right, so RL has only one thing left to "
        "learn: to choose the think-first format. Accuracy starts and ends higher because the chains need no repair, "
        "the policy moves little from its warm-up (only the choice of the first token has to change), and most "
        "groups end all right (no signal), so late steps teach almost nothing. It switches to thinking later, not "
        "sooner, though its reward gap is larger: Adam moves each weight by about the learning rate whatever the size "
        "of its gradient, so the first token's choice moves as fast as the weights it responds to allow (the L1 norm "
        "of the gradient of its log-odds), and the perfect teacher's warm-up holds that choice in fewer weights "
        "(section 8's last cell measures both)."
    ),
)

kl_penalty = FreeAnswer(
    N_("Exercise 7(b): a KL penalty, beta = 0.04"),
    hint=[
        N_("How large is the penalty, beta times the KL to the warm-up, next to the reward that thinking earns?"),
        N_(
            "In section 8's KL panel, compare the default run with the run at beta 0.04: the curves, the held-out "
            "think-first share and the KL to the warm-up (the stars, and the table); multiply that KL by 0.04."
        ),
    ],
    solution=N_(
        "At beta = 0.04 the curves stay close to the default's: the reward for thinking is large compared with beta "
        "times the KL printed above (multiply the two). The KL is the price of being right: the switch to thinking "
        "alone costs about ln 2 nats (a fair coin for the first token made sure), the repaired chains the rest, and "
        "each earns up to a unit of reward where the penalty charges 0.04 per nat, so the penalty buys little of it "
        "back. Whether the KL and the accuracy end a little lower is for the printed lines to say; a difference of a "
        "point is within the noise of one run. A larger beta (the panel "
        "trains 0.2 if you ask it) pulls harder towards the warm-up. With k3 in the loss the expected gradient is "
        "that of KL(pi_ref || pi) per token (keep covering what the warm-up covered), not of KL(pi || pi_ref)."
    ),
)


group_size_runs = FreeAnswer(
    N_("Exercise 7(c): group size G = 2 and G = 32"),
    hint=[
        N_(
            "A group carries a signal only when its answers disagree. How often do all G answers of a group agree, "
            "for G of 2 and of 32?"
        ),
        N_(
            r"With a share $p$ of right answers a group is all-equal with chance $p^G + (1-p)^G$. Run the G panel at 2 "
            "and 32 (32 prompts per step, so 64 or 1024 answers per step); watch the all-equal share and the steps "
            "until the think-first share passes 90%."
        ),
    ],
    solution=N_(
        "G = 2: most groups are all-equal (both right or both wrong), so few answers carry a signal. G = 32: the "
        "groups are mixed at the start and become all right only once nearly every answer is right (0.95^32 is "
        "about 0.19), at 4x the sampling cost of G = 8. Per step the larger group usually learns faster; per "
        "answer sampled the ranking can flip: the table's last column says which way your run fell."
    ),
)


# ----------------------------------------------------------------------------------------------- your GRPO step
STEP_HINT = [
    N_(
        "Five stages, in order: sample G answers per prompt from the policy at temperature 1 with the generator you "
        "are given; score each answer against its own prompt; turn the rewards into group advantages (Exercise 3); "
        "the loss, PPO's clipped objective with each answer's advantage on all of its tokens, averaged over each "
        "answer's own tokens and then over the answers, with a minus sign; then one optimizer update."
    ),
    N_(
        r"The loss is $-\frac{1}{B}\sum_i \frac{1}{|o_i|}\sum_{t} \min\big(\rho_{i,t}\hat A_i,\ "
        r"\operatorname{clip}(\rho_{i,t}, 1-\epsilon, 1+\epsilon)\,\hat A_i\big)$ over the real tokens (the response "
        r"mask), with $\rho_{i,t} = \exp(\log\pi_\theta - \log\pi_{old})$ and the old log-probs a copy of the "
        r"policy's log-probs without a graph: in value $\rho$ is 1, its gradient that of $\log\pi_\theta$. The tools "
        "are in the table of section 5. Then clear the optimizer's gradients, run the backward pass of the loss, and "
        "take one optimizer step."
    ),
]

KL_HINT = [
    N_(
        "The penalty is beta times Schulman's k3 estimate of the KL between the policy and the frozen warm-up model "
        "(the ref argument), added to every token's loss before the per-answer mean."
    ),
    N_(
        r"$k_3 = (e^{\ell} - 1) - \ell$ with $\ell = \log\pi_{ref}(o_t) - \log\pi_\theta(o_t)$; the reference "
        "log-probs come from ref, without a graph (it is frozen); the policy's keep theirs."
    ),
]


def _k3_case(description: str, logps, ref_logps) -> GradCase:
    """A case on float64 log-probs; the value and d k3 / d logps are compared."""
    return GradCase(
        description,
        kwargs={
            "logps": torch.tensor(logps, dtype=torch.float64),
            "ref_logps": torch.tensor(ref_logps, dtype=torch.float64),
        },
        wrt=["logps"],
    )


def _log_ratio(logps, ref_logps):
    """l = log pi_ref - log pi_theta, per token."""
    return ref_logps - logps


K3_MISTAKES = [
    Mistake(
        "k1",
        N_(
            "You return k1 = log pi_theta - log pi_ref (notebook 02): unbiased, but negative on some tokens and with "
            "a noisier gradient; the penalty here is k3."
        ),
        N_("With l = ref_logps - logps, return (exp(l) - 1) - l."),
        lambda logps, ref_logps: logps - ref_logps,
    ),
    Mistake(
        "log_ratio_only",
        N_("You return l = log pi_ref - log pi_theta alone: minus k1, negative wherever the policy is more likely."),
        N_("Return (exp(l) - 1) - l: the -1 and -l make it 0 where the two agree and never negative."),
        lambda logps, ref_logps: ref_logps - logps,
    ),
    Mistake(
        "k2",
        N_("You return k2 = l^2 / 2 (notebook 02): never negative, but biased once the two models differ."),
        N_("Return k3 = (exp(l) - 1) - l, unbiased and never negative."),
        lambda logps, ref_logps: 0.5 * _log_ratio(logps, ref_logps) ** 2,
    ),
    Mistake(
        "swapped",
        N_(
            "Your l is the wrong way round (log pi_theta - log pi_ref): that k3 does not estimate KL(pi_theta || "
            "pi_ref) on the policy's own samples."
        ),
        N_("Take l = ref_logps - logps: the reference's log-prob minus the policy's."),
        lambda logps, ref_logps: objectives.kl_k3(ref_logps, logps),  # the reference with its two inputs swapped
    ),
    Mistake(
        "no_minus_one",
        N_("You return exp(l) - l: every token is 1 too large (k3 subtracts 1 so that it is 0 where the two agree)."),
        N_("Subtract 1: (exp(l) - 1) - l."),
        lambda logps, ref_logps: torch.exp(_log_ratio(logps, ref_logps)) - _log_ratio(logps, ref_logps),
    ),
    Mistake(
        "no_log_term",
        N_(
            "You return exp(l) - 1 without the - l: its mean under the policy is 0, not the KL, and it can be negative."
        ),
        N_("Subtract l as well: (exp(l) - 1) - l."),
        lambda logps, ref_logps: torch.expm1(_log_ratio(logps, ref_logps)),
    ),
    Mistake(
        "plus_log_term",
        N_("You add l instead of subtracting it: (exp(l) - 1) + l is negative where the policy is more likely."),
        N_("Subtract l: (exp(l) - 1) - l."),
        lambda logps, ref_logps: torch.expm1(_log_ratio(logps, ref_logps)) + _log_ratio(logps, ref_logps),
    ),
    Mistake(
        "averaged",
        N_("You return the mean over all tokens (one number); the step needs one value per token, [B, T]."),
        N_("Return k3 for every token without averaging: the step takes the masked mean itself."),
        lambda logps, ref_logps: objectives.kl_k3(logps, ref_logps).mean(),
    ),
]

kl_k3 = Exercise(
    name=N_("Exercise 7(b): the KL penalty per token (k3)"),
    reference=objectives.kl_k3,
    mistakes=K3_MISTAKES,
    cases=[
        _k3_case(
            N_("three tokens, the policy near the warm-up: logps [-0.1, -0.7, -2.3], ref_logps [-0.2, -0.69, -1.6]"),
            [-0.1, -0.7, -2.3],
            [-0.2, -0.69, -1.6],
        ),
        _k3_case(
            N_("2 answers x 3 tokens [B, T], the policy sure of tokens the warm-up found unlikely"),
            [[-0.05, -0.01, -1.2], [-0.3, -2.0, -0.02]],
            [[-3.0, -0.01, -0.4], [-1.1, -0.5, -4.0]],
        ),
    ],
    hint=[
        N_(
            "The penalty is Schulman's k3 estimate of KL(pi_theta || pi_ref) for each sampled token: computed from "
            "the two log-probs of that token alone, 0 where they agree, never negative, unbiased on the policy's own "
            "samples (notebook 02's table)."
        ),
        N_(
            r"$k_3 = (e^{\ell} - 1) - \ell$ with $\ell = \log\pi_{ref}(o_t) - \log\pi_\theta(o_t)$, entry by "
            r"entry. For $e^{\ell} - 1$ PyTorch has a function of its own that does not round it to 0 when $\ell$ is "
            "tiny (its name starts with exp)."
        ),
    ],
    solution="""
log_r = ref_logps - logps                     # [B, T]: l, per token
return torch.expm1(log_r) - log_r             # [B, T]: (exp(l) - 1) - l
""",
)

grpo_step = StepExercise(
    name=N_("your GRPO step, end to end"),
    cases=[
        StepCase(N_("6 prompts x 8 answers, beta = 0"), prompts=6, group_size=8, seed=0),
        StepCase(N_("5 prompts x 4 answers, beta = 0 (another group size)"), prompts=5, group_size=4, seed=1),
    ],
    hint=STEP_HINT,
    solution=N_("See the solution notebook: the five stages of the hint, written out with shapes."),
    advantage_mistakes=grpo_advantages.mistakes,
)

grpo_step_kl = StepExercise(
    name=N_("Exercise 7(b): the KL penalty in your step"),
    cases=[
        StepCase(
            N_(
                "6 prompts x 8 answers, beta = 0.04 (the policy is the warm-up plus a little noise, so its KL "
                "to the warm-up is not 0)"
            ),
            prompts=6,
            group_size=8,
            beta=0.04,
            seed=2,
        )
    ],
    hint=KL_HINT,
    solution=N_("`log_r = ref_logps - logps`; `per_token = per_token + beta * (torch.expm1(log_r) - log_r)`."),
    kl=True,
    advantage_mistakes=grpo_advantages.mistakes,
)
