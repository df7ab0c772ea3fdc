"""Notebook 01 in words: the set-up line (what the first run computes and about how long), the lecture's figures
next to this run's for the learner, and every number of lecture sections 2.1 and 4.1 and Exercise 1 next to our
measurement (`rows`, what `python -m rlvr reproduce` judges), from the experiments of `rlvr.experiments.bandit`."""

from __future__ import annotations

import time

import numpy as np

from rlvr.config import SIZES, size
from rlvr.experiments.bandit import (
    AMPLIFICATION,
    GROUP_SIZE,
    HARD_P,
    INIT_LOGITS,
    SHIFT,
    SHIFT_RUNS,
    SHIFT_STEPS,
    EstimatorComparison,
    amplification,
    compare_estimators,
    hard_prompt_amplification,
    label,
    ideal_amplification,
    p_for_amplification,
    policy,
    shift_experiment,
)
from rlvr.experiments.common import (
    Row,
    claim_row,
    columns_text,
    lecture_row,
    multiple,
    seconds_text,
)
from rlvr.i18n import _


def shift_rows(results_per_seed: list[dict], seeds=(0,)) -> list[Row]:
    """The lecture's three +5 figures next to ours (mean over seeds; per-seed runs are batched)."""
    none = [r["none"] for r in results_per_seed]
    base = [r["rloo"] for r in results_per_seed]
    setup = (
        f"{none[0].final.numel()} runs per seed, G={none[0].group_size}, SGD lr={none[0].lr:g}, "
        f"{none[0].accuracy.shape[0] - 1} steps, start P(correct)={policy(INIT_LOGITS)[0]:.2f}"
    )
    worst = [r.worst for r in none]
    return [
        lecture_row(
            section="2.1",
            figure="+5 on every reward, no baseline: mean final P(correct)",
            lecture=0.84,
            values=[r.final_mean for r in none],
            se=none[0].final_se,
            seeds=seeds,
            note=f"{setup}; G and lr chosen by this row (calibration)",
        ),
        claim_row(
            section="2.1",
            figure="+5 on every reward, no baseline: worst run's final P(correct)",
            lecture=0.001,
            values=worst,
            band=(0.0, 0.01),
            seeds=seeds,
            note=f"prediction; band = 'stuck on a wrong answer' (< 0.01); "
            f"{_mean([r.stuck_fraction() for r in none]):.0%} of runs end below 0.01; the worst of more "
            "runs is lower",
        ),
        lecture_row(
            section="2.1",
            figure="+5 on every reward, with a baseline (RLOO): mean final P(correct)",
            lecture=0.99,
            values=[r.final_mean for r in base],
            se=base[0].final_se,
            seeds=seeds,
            note="prediction; 'about 0.99'",
        ),
    ]


def _mean(values) -> float:
    """Mean of a list of floats."""
    return float(np.mean(values))


def amplification_rows(
    simulated: list[float], seeds=(0,), group_size: int = GROUP_SIZE, p: float = HARD_P
) -> list[Row]:
    """The lecture's 3.5x: with the true std (closed form) and with the std of a group of G (simulated)."""
    low, _ = p_for_amplification()
    exact = float(amplification([p], group_size)[0])
    return [
        lecture_row(
            section="4.1",
            figure=f"weight of a p={p:g} prompt vs p=0.5 after ÷ std (true std: 0.5/√(p(1-p)))",
            lecture=AMPLIFICATION,
            values=[ideal_amplification(p)],
            lecture_is_a_run=False,
            unit="x",
            note=f"closed form; p is not stated in the notes: 3.5x exactly at p={low:.3f} (or {1 - low:.3f})",
        ),
        lecture_row(
            section="4.1",
            figure=f"same, std estimated from each group of G={group_size} (what GRPO does)",
            lecture=AMPLIFICATION,
            values=simulated,
            lecture_is_a_run=False,
            unit="x",
            seeds=seeds,
            note=f"simulated; exact by enumeration {exact:.2f}x; most groups at p={p:g} have no right "
            "answer, and a group with one has std √(1/G(1-1/G)), not √(p(1-p))",
        ),
    ]


def estimator_rows(comparisons: list[EstimatorComparison], shifted: list[EstimatorComparison], seeds=(0,)) -> list[Row]:
    """Exercise 1's (G-1)/G and 1, and 2.1's 'the +5 shift leaves the expected gradient unchanged'."""
    group_size = comparisons[0].group_size

    def row(section, figure, lecture, kind, items, note):
        return lecture_row(
            section=section,
            figure=figure,
            lecture=lecture,
            shown="exact",
            values=[c.stats[kind].scale for c in items],
            se=float(np.mean([c.stats[kind].scale_se for c in items])),
            lecture_is_a_run=False,
            seeds=seeds,
            note=f"{items[0].n_groups:,} groups per seed; {note}",
        )

    return [
        row(
            "Ex. 1",
            f"mean baseline incl. self: E[g]/exact gradient, G={group_size}",
            (group_size - 1) / group_size,
            "mean",
            comparisons,
            "lecture: (G-1)/G",
        ),
        row("Ex. 1", f"RLOO: E[g]/exact gradient, G={group_size}", 1.0, "rloo", comparisons, "lecture: no scaling"),
        row(
            "2.1",
            f"no baseline, +{shifted[0].shift:g} on every reward: E[g]/exact gradient",
            1.0,
            "none",
            shifted,
            "lecture: 'the expected gradient does not change at all'",
        ),
    ]


def rows(seeds=(0,), fast: bool | None = None) -> list[Row]:
    """Every figure of lecture 2.1, 4.1 and Exercise 1 that notebook 01 reproduces, next to ours."""
    runs, n_hard = size("shift_runs", fast), size("hard_groups", fast)
    comparisons = [compare_estimators(GROUP_SIZE, 0.0, seed=seed) for seed in seeds]
    shifted = [compare_estimators(GROUP_SIZE, SHIFT, seed=seed) for seed in seeds]
    shift_results = [shift_experiment(SHIFT, runs=runs, seed=seed) for seed in seeds]
    hard = [hard_prompt_amplification(GROUP_SIZE, n_hard, seed=seed) for seed in seeds]
    return (
        shift_rows(shift_results, seeds) + estimator_rows(comparisons, shifted, seeds) + amplification_rows(hard, seeds)
    )


def timed_seconds(compute, scale: float = 1.0) -> float:
    """Seconds `compute()` takes here, times `scale` (a probe of 1/scale of the real work)."""
    start = time.perf_counter()
    compute()
    return (time.perf_counter() - start) * scale


def first_run_text(
    runs: int = SHIFT_RUNS, hard_groups: int = SIZES["hard_groups"][0], probe_steps: int = 10, seed: int = 0
) -> str:
    """The setup cell's lines: this notebook trains no language model; its two largest computations, each timed
    here on a tenth or less of its work and scaled up."""
    shift_s = timed_seconds(
        lambda: shift_experiment(SHIFT, runs=runs, steps=probe_steps, seed=seed), SHIFT_STEPS / probe_steps
    )
    probe_groups = max(1, hard_groups // 10)
    hard_s = timed_seconds(
        lambda: hard_prompt_amplification(GROUP_SIZE, probe_groups, seed=seed), hard_groups / probe_groups
    )
    return "\n".join(
        [
            _(
                "This notebook trains no language model: every experiment is a bandit, one prompt with 5 answers (§3 "
                "below). Its two largest computations, timed on this machine just now (on a part of their work, scaled "
                "up):"
            ),
            "  "
            + _("the +{shift} runs of §4 below, 2 x {runs} bandits x {steps} steps: about {time}").format(
                shift=f"{SHIFT:g}", runs=f"{runs:,}", steps=SHIFT_STEPS, time=seconds_text(shift_s)
            ),
            "  "
            + _("the {groups} simulated groups of §5 below: about {time}").format(
                groups=f"{hard_groups:,}", time=seconds_text(hard_s)
            ),
        ]
    )


def noise_signal_text(comparison: EstimatorComparison) -> str:
    """One line under the estimator table: the estimator with the least noise per unit of its expected step, against
    the others, and how long that step is against the exact gradient's (why its raw variance cannot be compared)."""
    stats = comparison.stats
    best = min(stats.values(), key=lambda s: s.relative_noise)
    others = [s.relative_noise for s in stats.values() if s is not best]
    return _(
        "least noise per unit of signal: {name}, noise/signal {value:.2f} (the others {low:.2f} to {high:.2f}); "
        "its expected step is {scale:.2f} times the exact gradient, so its variance is not comparable with the "
        "others': compare noise per unit of signal"
    ).format(name=label(best.kind), value=best.relative_noise, low=min(others), high=max(others), scale=best.scale)


def plus_minus(value: float, se: float, decimals: int = 3) -> str:
    """'0.854 ± 0.011': a mean and its standard error (the error to one significant digit when it is smaller)."""
    small = se < 10**-decimals
    error = np.format_float_positional(se, precision=1, fractional=False) if small else f"{se:.{decimals}f}"
    return f"{value:.{decimals}f} ± {error}"


def lecture_and_us_text(
    runs: dict, comparison: EstimatorComparison, shifted: EstimatorComparison, simulated_amplification: float
) -> str:
    """Every figure the lecture states for notebook 01 next to this run's, for the learner: no bands and no verdicts
    (`python -m rlvr reproduce` judges the same figures)."""
    none, rloo, g = runs["none"], runs["rloo"], comparison.group_size
    mean, loo, shifted_none = comparison.stats["mean"], comparison.stats["rloo"], shifted.stats["none"]
    low, _high = p_for_amplification()
    true_std = _("3.5x at p = {low}; {value}x at p = {p}").format(
        low=f"{low:.4f}", value=f"{float(ideal_amplification(HARD_P)):.2f}", p=f"{HARD_P:g}"
    )
    exact_g = float(amplification([HARD_P], g)[0])
    shift = f"{SHIFT:g}"
    exercise = _("Ex. {number}").format(number=1)
    return columns_text(
        [
            ("", _("what"), _("lecture"), _("this run (± one standard error)")),
            (
                "§2.1",
                _("+{shift} on every reward, no baseline: mean final P(correct)").format(shift=shift),
                "0.84",
                plus_minus(none.final_mean, none.final_se),
            ),
            (
                "§2.1",
                "   " + _("its worst run"),
                "0.001",
                _("{worst} (the worst of {n} runs)").format(worst=f"{none.worst:.2g}", n=f"{none.final.numel():,}"),
            ),
            (
                "§2.1",
                _("+{shift} on every reward, with a baseline (RLOO)").format(shift=shift),
                _("about 0.99"),
                plus_minus(rloo.final_mean, rloo.final_se),
            ),
            (
                "§2.1",
                _("+{shift}, no baseline: E[g] / exact gradient").format(shift=shift),
                _("1 (unchanged)"),
                plus_minus(shifted_none.scale, shifted_none.scale_se),
            ),
            (
                exercise,
                _("mean baseline incl. self: E[g] / exact gradient, G = {g}").format(g=g),
                f"(G-1)/G = {(g - 1) / g:.3f}",
                plus_minus(mean.scale, mean.scale_se),
            ),
            (exercise, _("RLOO: E[g] / exact gradient"), "1", plus_minus(loo.scale, loo.scale_se)),
            ("§4.1", _("weight of a very hard prompt vs p = 0.5, ÷ the true std"), multiple("3.5"), true_std),
            (
                "§4.1",
                _("the same, ÷ the std of a group of {g} (GRPO), p = {p}").format(g=g, p=f"{HARD_P:g}"),
                _("not stated (its {factor} is the true std's)").format(factor=multiple("3.5")),
                _("{simulated}x simulated ({exact}x exact)").format(
                    simulated=f"{simulated_amplification:.2f}", exact=f"{exact_g:.2f}"
                ),
            ),
        ]
    )
