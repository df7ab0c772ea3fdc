"""Notebook 02 in words: what the learner reads of the reused batch and of the PPO run with a KL penalty, and every
number of lecture sections 2.2-2.4 and Exercise 2 next to ours, for the learner (`lecture_and_us`) and judged
(`rows`, what `python -m rlvr reproduce` runs), from the experiments of `rlvr.experiments.ppo_parts`."""

from __future__ import annotations

import math

import numpy as np

from rlvr.config import size
from rlvr.experiments.common import Row, claim_row, first_step, lecture_row, multiple, pad, signed, two_decimals  # noqa: F401  (signed: notebook 02 prints with parts.signed)
from rlvr.experiments.ppo_parts import (
    CLIP_EPS,
    ESTIMATORS,
    EXERCISE_ADVANTAGE,
    EXERCISE_RATIOS,
    EXERCISE_VALUES,
    KL_RUN_BETA,
    LECTURE_GB,
    LECTURE_KL,
    SCHULMAN_MUS,
    SCHULMAN_TABLE,
    GB,
    SEVEN_B,
    ASSIGNMENT5_SAMPLING,
    QWEN_MATH_1_5B_KV,
    ReuseResult,
    assignment5_memory,
    kv_cache_gb,
    clip_objective_and_grad,
    first_zero_gradient_ratio,
    memory_totals,
    policy_kl_samples,
    policy_kl_summary,
    schulman_table,
    shaped_view,
    trained_policy,
)
from rlvr.i18n import _, join
from rlvr.task import N_DIGITS, direct_answer, think_answer


SIZEABLE_CLIP = 0.10  # "a sizeable clip fraction" in notebook 02's reading of the reuse demo


def reuse_text(results: list[ReuseResult]) -> str:
    """One line per learning rate: the clip fraction before each update (0 before the first, exactly), and where
    the middle 98% of the ratios sit before the last update; then the first update each reaches SIZEABLE_CLIP."""
    lines, firsts = [], []
    for res in results:
        shares = " ".join("0%" if c == 0 else f"{100 * c:.1f}%" for c in res.clip_fraction)
        low, high = res.quantiles[-1, 1], res.quantiles[-1, 3]
        lines.append(
            _(
                "lr {lr}: clip fraction before updates 1-{updates}: {shares};  before the last update 98% of the "
                "ratios lie in [{low}, {high}]"
            ).format(
                lr=f"{res.lr:g}", updates=len(res.clip_fraction), shares=shares, low=f"{low:.2f}", high=f"{high:.2f}"
            )
        )
        n = first_step(np.asarray(res.clip_fraction) >= SIZEABLE_CLIP)  # index 0 is update 1
        if n is None:
            where = _("none of its {updates} updates").format(updates=len(res.clip_fraction))
        else:
            where = _("update {n}").format(n=n + 1)
        firsts.append(_("{where} at lr {lr}").format(where=where, lr=f"{res.lr:g}"))
    lines.append(
        _("the first update with a clip fraction of {share} or more: {firsts}").format(
            share=f"{SIZEABLE_CLIP:.0%}", firsts=join(firsts)
        )
    )
    return "\n".join(lines)


def assignment5_memory_text() -> str:
    """What CS336 assignment 5's GRPO run keeps on each of its two GPUs, part by part, with the KV cache's per-token
    arithmetic."""
    parts = assignment5_memory()
    shape = QWEN_MATH_1_5B_KV
    per_token = round(kv_cache_gb(1, 1, **shape) * GB)  # bytes of one token's keys and values
    lines = [
        _("the policy's GPU: Qwen2.5-Math-1.5B, trained (16 bytes per parameter): {gb} GB").format(
            gb=f"{parts['policy']:.1f}"
        ),
        _("vLLM's GPU: its copy of the policy for sampling (bf16): {gb} GB").format(gb=f"{parts['sampler copy']:.1f}"),
        _(
            "vLLM's KV cache, 2 x {layers} layers x {heads} KV heads x {dim} dims x 2 bytes = {per_token} bytes per "
            "token, for {answers} answers of {tokens} tokens: {gb} GB"
        ).format(
            layers=shape["layers"],
            heads=shape["kv_heads"],
            dim=shape["head_dim"],
            per_token=f"{per_token:,}",
            answers=ASSIGNMENT5_SAMPLING["answers"],
            tokens=ASSIGNMENT5_SAMPLING["tokens"],
            gb=f"{parts['kv cache']:.1f}",
        ),
        _(
            "vLLM's GPU in all: {gb} GB before the prompts' share of the cache; the policy's: {policy} GB before "
            "activations"
        ).format(gb=f"{parts['sampler copy'] + parts['kv cache']:.1f}", policy=f"{parts['policy']:.1f}"),
    ]
    return "\n".join(lines)


EVEN_BLAME = 0.1  # blamed tokens whose A_t differ by less than this share the blame evenly (no token stands out)


def blame_text(examples: list, beta: float) -> str:
    """Demo 2's item 2 answered for the first wrong answer of `examples`: where its GAE advantages put the blame with
    lambda = 1 and with lambda = 0 (the clamp on, the Monte-Carlo value), one line each, then the share on the token
    that takes the most."""
    example = next(e for e in examples if e.score == 0)
    lines = [
        _("{answer}: {prompt} {tokens}").format(
            answer=_(example.label), prompt=example.prompt, tokens="".join(example.tokens)
        )
    ]
    shares = []
    for lam in (1.0, 0.0):
        view = shaped_view(example, beta, lam)
        advantages, values = view["advantages"], view["values"]  # [T] each
        worst = int(advantages.argmin())
        blamed = advantages < -0.01  # [T] a visible bar, not a rounding
        share = float(advantages[worst].abs() / advantages.abs().sum())
        shares.append(share)
        after = float(values[worst + 1]) if worst + 1 < len(values) else 0.0
        mildest = float(advantages[blamed].max()) if blamed.any() else None  # the least blamed of the blamed tokens
        spread = mildest - float(advantages[worst]) if mildest is not None else 0.0
        if lam == 1.0 and spread < EVEN_BLAME:  # A_t = reward-to-go - V_t, about equal on every blamed token
            text = _(
                "λ = {lam}: A_t below -0.01 on {negative} of {n} tokens, all from {worst_a} to {mildest}: no token "
                "stands out (none has more than {share}% of the summed |A_t|)"
            )
        elif lam == 1.0:  # A_t = reward-to-go - V_t: the blame sits where the value expected most
            text = _(
                "λ = {lam}: A_t below -0.01 on {negative} of {n} tokens, from {worst_a} to {mildest}; the most "
                "negative on token {t} ('{token}'), where the value stood at {before}: {share}% of the summed |A_t|"
            )
        else:  # the one-step TD error: the blame sits where the value falls
            text = _(
                "λ = {lam}: A_t below -0.01 on {negative} of {n} tokens; the most negative, {worst_a}, on token {t} "
                "('{token}'), where the value goes from {before} to {after}: {share}% of the summed |A_t|"
            )
        lines.append(
            "  "
            + text.format(
                lam=f"{lam:g}",
                negative=int(blamed.sum()),
                n=len(advantages),
                worst_a=two_decimals(float(advantages[worst])),
                mildest=two_decimals(mildest) if mildest is not None else "",
                t=worst + 1,
                token=example.tokens[worst],
                before=two_decimals(float(values[worst])),
                after=two_decimals(after),
                share=f"{100 * share:.1f}",
            )
        )
    if shares[1] > shares[0]:
        lines.append(
            _(
                "λ = 0 concentrates the blame: {zero}% of the summed |A_t| on its most blamed token, against {one}% "
                "for λ = 1 ({ratio})"
            ).format(
                zero=f"{100 * shares[1]:.1f}",
                one=f"{100 * shares[0]:.1f}",
                ratio=multiple(f"{shares[1] / shares[0]:.1f}"),
            )
        )
    else:
        lines.append(_("λ = 0 does not concentrate the blame more than λ = 1 on this answer"))
    lines.append(first_wrong_text(example, worst))
    return "\n".join(lines)


def first_wrong_text(example, blamed: int) -> str:
    """Where the answer first departs from the right answer of its format (tokens count from 1), and whether the
    token `blamed` (0-based: lambda = 0's most blamed) is that one."""
    digits = [int(c) for c in example.prompt[:N_DIGITS]]
    right = list(think_answer(digits) if example.tokens[0] == "[" else direct_answer(digits))
    first = next((i for i, (got, want) in enumerate(zip(example.tokens, right)) if got != want), None)
    if first is None:
        return _("the answer matches the right one {right} token for token").format(right="".join(right))
    verdict = _("λ = 0 blames this token most") if first == blamed else _("λ = 0 blames another token most")
    return _(
        "the first token that differs from the right answer {right}: token {t} ('{got}' where '{want}' is right); "
        "{verdict}"
    ).format(right="".join(right), t=first + 1, got=example.tokens[first], want=right[first], verdict=verdict)


def kl_run_statement(summary: dict) -> str:
    """One sentence saying what the curves did, whichever way they went."""
    (t0, t1), (s0, s1), (k0, k1) = summary["total"], summary["score"], summary["kl_reward"]
    total = _("the total reward rose") if t1 > t0 else _("the total reward did not rise")
    score = _("the score rose") if s1 > s0 else _("the score did not rise")
    kl = _("the KL reward fell (more negative)") if k1 < k0 else _("the KL reward did not fall")
    if t1 > t0 and s1 > s0 and k1 < k0:
        text = _(
            "{total}: {score} and {kl}, as the lecture expects: the policy buys its higher score by moving away from "
            "the warm-up model, and the penalty grows with that distance"
        )
    else:
        text = _("{total}: {score} and {kl}: not the picture the lecture expects")
    return text.format(total=total, score=score, kl=kl)


def kl_run_text(summary: dict) -> str:
    """Three lines: the total reward, the score and the KL reward over the first and last steps, then the
    statement."""
    n = summary["window"]

    def ends(key, text=lambda v: f"{v:.2f}"):
        a, b = summary[key]
        return f"{text(a)} → {text(b)}"

    return "\n".join(
        [
            _("mean per answer, first {n} steps -> last {n} steps:").format(n=n),
            "  "
            + _("total reward {total}  =  score {score}  +  KL reward {kl_reward}   (summed KL {kl})").format(
                total=ends("total", lambda v: f"{v:.3f}"),  # three decimals, as the KL reward: the sum adds up
                score=ends("score", lambda v: f"{v:.3f}"),
                kl_reward=ends("kl_reward", lambda v: signed(v, 3)),
                kl=f"{summary['kl'][0]:.2f} → {summary['kl'][1]:.2f}",
            ),
            kl_run_statement(summary),
        ]
    )


# ============================================================================================== the lecture and us
def lecture_and_us(run_summary: dict, gauss_table: dict, kl_summary: dict) -> str:
    """Markdown table: every number of lecture 2.2-2.4 (and of Schulman's post) next to this notebook's.

    Args:
        run_summary: `kl_run_summary` of the PPO run with a KL penalty.
        gauss_table: `schulman_table`; kl_summary: `policy_kl_summary` of the trained policy against its reference.
    """
    objective, grad = clip_objective_and_grad(np.array(EXERCISE_RATIOS), EXERCISE_ADVANTAGE, CLIP_EPS)
    upper, lower = first_zero_gradient_ratio(1.0), first_zero_gradient_ratio(-1.0)
    (total0, total1), (kl0, kl1) = run_summary["total"], run_summary["kl_reward"]
    totals = memory_totals()

    def joined(values, text=lambda v: f"{v:.2f}"):
        return join(text(v) for v in values)

    def lecture(section: str) -> str:
        return _("lecture §{section}").format(section=section)

    exercise = _("lecture Ex. {number}").format(number=2)
    rows = [
        (
            exercise,
            _("objective at ρ = 0.5, 1.0, 1.1, 1.5 (A = +2, clip_eps = 0.2)"),
            join(v for v, _g in EXERCISE_VALUES.values()),
            joined(objective),
        ),
        (
            exercise,
            _("its gradient dJ/dρ there"),
            join(g for _v, g in EXERCISE_VALUES.values()),
            joined(grad),
        ),
        (
            lecture("2.2"),
            _("the ratio ρ past which the gradient is 0 (A > 0: above it; A < 0: below it)"),
            join(("1.2", "0.8")),
            join((f"{upper:.3f}", f"{lower:.3f}")),
        ),
        (
            lecture("2.3"),
            _("PPO with a KL penalty: the total reward per answer"),
            _("rises"),
            f"{total0:.2f} → {total1:.2f}",
        ),
        (
            lecture("2.3"),
            _("... its KL part"),
            _("more and more negative"),
            f"{signed(kl0, 3)} → {signed(kl1, 3)}",
        ),
    ]
    for mu in SCHULMAN_MUS:
        kl = f"{mu * mu / 2:g}"
        rows.append(
            (
                "Schulman 2020",
                _("Gaussians, true KL {kl}: std / KL of k1, k2, k3").format(kl=kl),
                joined((SCHULMAN_TABLE[(mu, n)][1] for n in ESTIMATORS), lambda v: f"{v:g}"),
                joined(gauss_table[(mu, n)]["rel_std"] for n in ESTIMATORS),
            )
        )
        rows.append(
            (
                "Schulman 2020",
                _("Gaussians, true KL {kl}: bias / KL of k2").format(kl=kl),
                f"{SCHULMAN_TABLE[(mu, 'k2')][0]:g}",
                f"{gauss_table[(mu, 'k2')]['rel_bias']:.3f}",
            )
        )
    k1, k3 = kl_summary["k1"]["std"], kl_summary["k3"]["std"]
    rows += [
        (
            lecture("2.3"),
            _("a trained policy against its reference: true KL per answer"),
            LECTURE_KL["true_kl"],
            f"{kl_summary['true_kl']:.2f}",
        ),
        (
            lecture("2.3"),
            _("... std of k1, std of k3 per answer"),
            join((LECTURE_KL["k1"], LECTURE_KL["k3"])),
            join((f"{k1:.2f}", f"{k3:.2f}")),
        ),
        (
            lecture("2.3"),
            _("... k3 as noisy as k1 times"),
            f"{float(LECTURE_KL['k3']) / float(LECTURE_KL['k1']):.1f}",
            f"{k3 / k1:.1f}",
        ),
        (
            lecture("2.4"),
            _("memory of a 7B model: PPO, no value model, rule-based verifier (GB)"),
            joined(LECTURE_GB.values(), lambda v: f"{v:g}"),
            joined((totals[setup] for setup in LECTURE_GB), lambda v: f"{v:.0f}"),
        ),
    ]
    lines = [_("| source | what | the lecture (or its source) | ours |"), "|---|---|---|---|"]
    lines += [f"| {where} | {what} | {said} | {ours} |" for where, what, said, ours in rows]
    if k3 > k1:
        closing = _(
            "Our trained policy: std of $k_3$ / std of $k_1$ = {ratio}, so on our policy too $k_3$ is the noisier "
            "estimator, as the lecture says; by how much depends on the policy (the lecture's: {lecture})."
        )
    else:
        closing = _(
            "Our trained policy: std of $k_3$ / std of $k_1$ = {ratio}, so on our policy $k_1$ is the noisier "
            "estimator, unlike the lecture's."
        )
    lines += ["", closing.format(ratio=f"{k3 / k1:.1f}", lecture=multiple(LECTURE_KL["k3"]))]
    return "\n".join(lines)


# ============================================================================================== the lecture's figures
def exercise_rows() -> list[Row]:
    """Exercise 2 and demo 1: the clipped objective's values, gradients and where the gradient switches off."""
    objective, grad = clip_objective_and_grad(np.array(EXERCISE_RATIOS), EXERCISE_ADVANTAGE, CLIP_EPS)
    rows = []
    for r, value, g in zip(EXERCISE_RATIOS, objective, grad):
        want_value, want_grad = EXERCISE_VALUES[r]
        rows.append(
            lecture_row(
                section="Ex. 2",
                figure=f"clipped objective, A=+2, eps=0.2, ρ={r}",
                lecture=float(want_value),
                shown=want_value,
                values=[value],
                lecture_is_a_run=False,
                note="rlvr.objectives.ppo_clip_loss",
            )
        )
        rows.append(
            lecture_row(
                section="Ex. 2",
                figure=f"dJ/dρ (autograd), A=+2, eps=0.2, ρ={r}",
                lecture=float(want_grad),
                shown=want_grad,
                values=[g],
                lecture_is_a_run=False,
            )
        )
    step = 1e-4
    upper, lower = first_zero_gradient_ratio(1.0, CLIP_EPS, step), first_zero_gradient_ratio(-1.0, CLIP_EPS, step)
    rows.append(
        lecture_row(
            section="2.2",
            figure="A > 0: gradient is 0 from ρ = (eps 0.2)",
            lecture=1.2,
            values=[upper],
            lecture_is_a_run=False,
            note="smallest zero-gradient ratio on a 1e-4 grid",
        )
    )
    rows.append(
        lecture_row(
            section="2.2",
            figure="A < 0: gradient is 0 below ρ = (eps 0.2)",
            lecture=0.8,
            values=[lower],
            lecture_is_a_run=False,
            note="largest zero-gradient ratio on a 1e-4 grid",
        )
    )
    return rows


def schulman_rows(tables: list[dict], seeds: tuple) -> list[Row]:
    """Schulman's bias / std table (the lecture's table was lost; the post is the source it summarises)."""
    rows = []
    for (mu, name), (bias, std) in SCHULMAN_TABLE.items():
        kl = mu * mu / 2
        stats = [t[(mu, name)] for t in tables]
        for what, published, key in (("bias / KL", bias, "rel_bias"), ("std / KL", std, "rel_std")):
            rows.append(
                lecture_row(
                    section="2.3",
                    figure=f"Gaussians, true KL {kl:g}: {name} {what}",
                    lecture=published,
                    values=[s[key] for s in stats],
                    se=float(np.mean([s[key + "_se"] for s in stats])),
                    lecture_is_a_run=False,
                    seeds=seeds,
                    note=f"Schulman 2020, {stats[0]['n']:,} samples",
                )
            )
    return rows


def policy_kl_rows(summaries: list[dict], seeds: tuple) -> list[Row]:
    """The lecture's 'true KL 1.36, std k3 8.1 > k1 1.0' next to notebook 02's PPO policy against its warm-up."""
    note = f"PPO policy with a KL penalty (beta {KL_RUN_BETA:g}, notebook 02) vs warm-up"
    rows = [
        lecture_row(
            section="2.3",
            figure="true KL per answer, our PPO policy from its warm-up",
            lecture=float(LECTURE_KL["true_kl"]),
            shown=LECTURE_KL["true_kl"],
            values=[s["true_kl"] for s in summaries],
            se=float(np.mean([s["true_kl_se"] for s in summaries])),
            seeds=seeds,
            note=note,
        )
    ]
    for name in ("k1", "k3"):
        rows.append(
            lecture_row(
                section="2.3",
                figure=f"std of {name} per answer at that KL",
                lecture=float(LECTURE_KL[name]),
                shown=LECTURE_KL[name],
                values=[s[name]["std"] for s in summaries],
                bounds=(0.0, math.inf),
                se=float(np.mean([s[name]["std_se"] for s in summaries])),
                seeds=seeds,
                note=note,
            )
        )
    rows.append(
        claim_row(
            section="2.3",
            figure="std k3 / std k1 (> 1: k3 is the noisier one)",
            lecture=float(LECTURE_KL["k3"]) / float(LECTURE_KL["k1"]),
            values=[s["k3"]["std"] / s["k1"]["std"] for s in summaries],
            band=(1.0, 100.0),
            unit="x",
            seeds=seeds,
            note="band: the claim 'k3 std exceeds k1 std' (any ratio above 1)",
        )
    )
    return rows


def memory_rows() -> list[Row]:
    """Section 2.4: 252 / 140 / 126 GB for a 7B model."""
    totals = memory_totals(SEVEN_B)
    return [
        lecture_row(
            section="2.4",
            figure=f"memory, 7B, {setup}",
            lecture=gb,
            values=[totals[setup]],
            lecture_is_a_run=False,
            unit="GB",
            note="16 B/trained, 2 B/frozen parameter, 1 GB = 1e9 B",
        )
        for setup, gb in LECTURE_GB.items()
    ]


def rows(seeds=(0,), fast: bool | None = None) -> list[Row]:
    """Every number of lecture 2.2-2.4 and Exercise 2 that notebook 02 reproduces, next to ours."""
    n_gauss, n_answers = size("gauss_samples", fast), size("kl_answers", fast)
    tables = [schulman_table(n_gauss, seed) for seed in seeds]
    summaries = []
    for seed in seeds:
        policy, ref = trained_policy(seed, fast)
        summaries.append(policy_kl_summary(policy_kl_samples(policy, ref, n_answers, seed)))
    return (
        exercise_rows() + schulman_rows(tables, tuple(seeds)) + policy_kl_rows(summaries, tuple(seeds)) + memory_rows()
    )
