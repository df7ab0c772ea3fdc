"""Checkers for notebook 03 (GRPO, a tiny model that learns to think): Exercises 3, 6 and 7(a)-(c) of the lecture.

In the notebook::

    from rlvr.checks import nb03 as checks
    checks.grpo_advantages.check(grpo_advantages)
    checks.dr_grpo_advantages.check(dr_grpo_advantages)
    checks.pass_at_k.check(pass_at_k)
    checks.perfect_teacher.hint()
    checks.grpo_step.check(my_grpo_step)      # the whole step, stage by stage (rlvr.checks.step)
"""

from __future__ import annotations

import torch

from rlvr import objectives
from rlvr.checks import Case, Exercise, FreeAnswer
from rlvr.checks.core import random_group_cases
from rlvr.checks.step import StepCase, StepExercise

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
            "the lecture's group [1, 0, 0, 0, 0, 0, 0, 0], group_size=8, eps=0",
            args=(torch.tensor(ONE_RIGHT), 8),
            kwargs={"eps": 0.0},
        ),
        Case(
            "two answers per group [1, 0, 0, 1], group_size=2, eps=0 (population std of [1, 0] is 0.5)",
            args=(torch.tensor([1.0, 0, 0, 1]), 2),
            kwargs={"eps": 0.0},
        ),
        Case(
            "two groups of 4 [1, 0, 0, 0, 1, 1, 0, 0], group_size=4, eps=0 (each group has its own mean and std)",
            args=(torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 0]), 4),
            kwargs={"eps": 0.0},
        ),
        Case(
            "the lecture's group with eps=1e-4 (eps is added to the std)",
            args=(torch.tensor(ONE_RIGHT), 8),
            kwargs={"eps": 1e-4},
        ),
        Case(
            "all rewards equal [1, 1, 1, 1, 0, 0, 0, 0], group_size=4, eps=1e-4 (std 0: advantages 0, not NaN)",
            args=(torch.tensor([1.0, 1, 1, 1, 0, 0, 0, 0]), 4),
            kwargs={"eps": 1e-4},
        ),
        *random_group_cases(eps=1e-4),
    ]


def _dr_grpo_cases() -> list[Case]:
    """The same groups, without eps (Dr. GRPO divides by nothing)."""
    return [
        Case("the lecture's group [1, 0, 0, 0, 0, 0, 0, 0], group_size=8", args=(torch.tensor(ONE_RIGHT), 8)),
        Case(
            "two groups of 4 [1, 0, 0, 0, 1, 1, 0, 0], group_size=4 (each group has its own mean)",
            args=(torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 0]), 4),
        ),
        Case(
            "all rewards equal [1, 1, 1, 1, 0, 0, 0, 0], group_size=4 (advantages 0)",
            args=(torch.tensor([1.0, 1, 1, 1, 0, 0, 0, 0]), 4),
        ),
        *random_group_cases(),
    ]


grpo_advantages = Exercise(
    name="GRPO advantages (population std + eps)",
    reference=_reference_grpo,
    cases=_grpo_cases(),
    hint=(
        "View the flat rewards `[B]` as one row per prompt: `r = rewards.view(-1, group_size)` (`[B/G, G]`). "
        "Subtract each row's mean and divide by each row's POPULATION std plus `eps`: "
        "`r.std(dim=1, keepdim=True, correction=0)` (plain `torch.std` divides by G-1). Flatten back to `[B]`."
    ),
    solution="""
r = rewards.view(-1, group_size)                             # [B/G, G]
centred = r - r.mean(dim=1, keepdim=True)                    # [B/G, G]
std = r.std(dim=1, keepdim=True, correction=0)               # [B/G, 1] population std
return (centred / (std + eps)).reshape(-1)                   # [B]
""",
)

dr_grpo_advantages = Exercise(
    name="Dr. GRPO advantages (group mean only)",
    reference=_reference_dr_grpo,
    cases=_dr_grpo_cases(),
    hint="Same view `[B/G, G]`; subtract each row's mean and do NOT divide by anything. Flatten back to `[B]`.",
    solution="""
r = rewards.view(-1, group_size)                             # [B/G, G]
return (r - r.mean(dim=1, keepdim=True)).reshape(-1)         # [B]
""",
)

which_is_larger = FreeAnswer(
    "Exercise 3: who rewards the lone right answer more, and what it means for hard prompts",
    hint=(
        "Compare 2.65 with 0.875. The std of a 0/1 group with a share p of ones is sqrt(p(1-p)): what is it for a "
        "hard prompt (p small) compared with p = 0.5?"
    ),
    solution=(
        "GRPO gives the lone right answer 2.65 (Dr. GRPO 0.875): dividing by the small std of a mostly-wrong group "
        "multiplies the signal by 1/0.331 ≈ 3, where a balanced group (p = 0.5, std 0.5) gets x2. Prompts that are "
        "very hard (or very easy) have a small std, so GRPO weighs them more than balanced ones, and Dr. GRPO does "
        "not (lecture 4.1: up to 3.5x; with groups of 8 the effect is much weaker, as notebook 01 section 5 measures)."
    ),
)


# ----------------------------------------------------------------------------------------------- Exercise 6
def _pass_cases() -> list[Case]:
    """Check values of Chen et al. 2021 (arXiv:2107.03374, section 2.1) and the edge cases of the estimator."""
    return [
        Case("n=10, c=3, k=1 (pass@1 is c/n)", args=(10, 3, 1)),
        Case("n=10, c=3, k=5", args=(10, 3, 5)),
        Case("n=16, c=0, k=16 (no right answer among the samples)", args=(16, 0, 16)),
        Case("n=16, c=10, k=8 (n - c < k: every draw of 8 contains a right answer)", args=(16, 10, 8)),
        Case("n=16, c=16, k=1 (every sample right)", args=(16, 16, 1)),
        Case("n=16, c=2, k=4", args=(16, 2, 4)),
        Case("n=200, c=7, k=50 (large n: use a numerically stable form)", args=(200, 7, 50)),
    ]


pass_at_k = Exercise(
    name="unbiased pass@k (Chen et al. 2021)",
    reference=objectives.pass_at_k,
    cases=_pass_cases(),
    hint=(
        "pass@k = 1 - C(n-c, k) / C(n, k): the chance that k answers drawn WITHOUT replacement from the n "
        "samples are all wrong, subtracted from 1. When n - c < k that chance is 0. `math.comb` computes C(a, b); "
        "the stable product form is 1 - prod_{i=n-c+1}^{n} (1 - k / i). Do not use 1 - (1 - c/n)^k: it is biased."
    ),
    solution="""
if n - c < k:
    return 1.0
return 1.0 - math.comb(n - c, k) / math.comb(n, k)
""",
)

large_k = FreeAnswer(
    "Exercise 6: why a large k hides what RL gained",
    hint="Compute 1 - (1 - p)^16 for p = 0.1 and p = 0.9. What does 'at least one of 16 right' ask of the model?",
    solution=(
        "p = 0.1: pass@16 = 1 - 0.9^16 ≈ 0.81; p = 0.9: pass@16 = 1 - 0.1^16 ≈ 1.0. pass@1 goes from 10% to 90% "
        "(9x) while pass@16 goes from 81% to 100%. With many tries a model that is right only now and then "
        "already passes, so a large k measures what the model CAN sample, not how reliably it does it; RL's gain "
        "is reliability."
    ),
)


# ----------------------------------------------------------------------------------------------- Exercise 7
perfect_teacher = FreeAnswer(
    "Exercise 7(a): a perfect teacher",
    hint=(
        "Set the teacher error rate to 0 in the warm-up panel and in the 'start from' GRPO panel. Compare the "
        "warm-up's think-first accuracy at T = 1 with 0.1's, then how many RL steps the think-first share needs "
        "to pass 90%. What is left for RL to learn when every chain is already right?"
    ),
    solution=(
        "With a perfect teacher the warm-up's chains are (nearly) always right, so RL has only one thing left to "
        "learn: to choose the think-first format. Accuracy rises much sooner and ends higher because the chains need "
        "no repair, the policy moves less far from its warm-up, and most groups end all right (no signal)."
    ),
)

kl_penalty = FreeAnswer(
    "Exercise 7(b): a KL penalty, beta = 0.04",
    hint=(
        "Compare the two runs of section 5 (your step at beta = 0 and 0.04): the curves, the held-out think-first "
        "share and the KL to the warm-up. How large is beta x KL next to the reward that thinking earns?"
    ),
    solution=(
        "At beta = 0.04 the curves barely change and the KL per answer shrinks a little: the reward for thinking "
        "is large compared with beta times the KL printed above (a few hundredths). A larger beta (0.2) costs more "
        "accuracy and lowers the KL we measure more, though not in proportion: with k3 in the loss the expected "
        "gradient is that of KL(pi_ref || pi) per token (keep covering what the warm-up covered), not of "
        "KL(pi || pi_ref)."
    ),
)


group_size_runs = FreeAnswer(
    "Exercise 7(c): group size G = 2 and G = 32",
    hint=(
        "Run the G panel at 2 and 32 (32 prompts per step, so 64 or 1024 answers per step). Watch the share of "
        "groups with all-equal rewards and the steps until the think-first share passes 90%. A group of 2 is "
        "all-equal whenever both answers agree."
    ),
    solution=(
        "G = 2: most groups are all-equal (both right or both wrong), so few answers carry a signal and learning "
        "is slower per step. G = 32: almost no group is all-equal and learning is faster per step, at 4x the "
        "sampling cost of G = 8."
    ),
)


# ----------------------------------------------------------------------------------------------- your GRPO step
STEP_HINT = (
    "Five stages, each one or two lines:\n"
    "1. `rollout = sample(policy, task.prompt_tokens(prompts), 1.0, generator=generator, "
    "samples_per_prompt=group_size)`: rows i*G ... i*G+G-1 answer prompt i.\n"
    "2. `task.score_batch(torch.as_tensor(np.repeat(prompts, group_size, axis=0)), rollout.responses)['reward']`.\n"
    "3. `r = rewards.view(-1, group_size)`; (r - row mean) / (row population std + eps), flattened to [B].\n"
    "4. `logps = update_logps(policy, rollout, advantages, group_size, every_row=beta > 0)` (given in the cell); "
    "ratio = exp(logps - logps.detach()); per-token loss -min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A); "
    "each answer's mean over its real tokens (`rollout.response_mask`), then the mean over answers.\n"
    "5. `optimizer.zero_grad()`, `loss.backward()`, `optimizer.step()`; return the dict."
)

grpo_step = StepExercise(
    name="your GRPO step, end to end",
    cases=[
        StepCase("6 prompts x 8 answers, beta = 0", prompts=6, group_size=8, seed=0),
        StepCase("5 prompts x 4 answers, beta = 0 (another group size)", prompts=5, group_size=4, seed=1),
    ],
    hint=STEP_HINT,
    solution="See the solution notebook: the five stages of the hint, written out with shapes.",
)

grpo_step_kl = StepExercise(
    name="Exercise 7(b): the KL penalty in your step",
    cases=[
        StepCase(
            "6 prompts x 8 answers, beta = 0.04 (the policy is the warm-up plus a little noise, so its KL "
            "to the warm-up is not 0)",
            prompts=6,
            group_size=8,
            beta=0.04,
            seed=2,
        )
    ],
    hint=(
        "With `ref_logps = response_logps(ref, ...)` under `torch.no_grad()` and log r = ref_logps - logps, "
        "add `beta * (torch.expm1(log_r) - log_r)` (k3) to each token's loss before the per-answer mean."
    ),
    solution="`log_r = ref_logps - logps`; `per_token = per_token + beta * (torch.expm1(log_r) - log_r)`.",
    kl=True,
)
