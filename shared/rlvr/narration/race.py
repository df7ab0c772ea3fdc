"""Notebook 04 in words: the race's tables and comparisons as the learner reads them (from the runs of
`rlvr.experiments.race`), and lecture section 3's statements next to our measurement (`rows`, what
`python -m rlvr reproduce` judges)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from rlvr import budget
from rlvr.config import size
from rlvr.experiments.common import Row, claim_row, multiple, seconds_text
from rlvr.experiments.ppo_parts import memory_gb, memory_totals
from rlvr.experiments.race import (
    ACCURACY_STEP,
    SMOOTH,
    STEPS,
    THINK_TARGET,
    BaselineScales,
    accuracy_at,
    all_equal_share,
    cache_entry,
    clip_summary,
    cost_ratios,
    final_value,
    mean_clip_per_update,
    race_measurements,
    run_race,
    seconds_per_step,
    seconds_to,
    smoothed,
    steps_to,
    steps_to_think,
    trained_parameters,
    value_helps_step,
)
from rlvr.experiments.thinking import ALGO_TITLES
from rlvr.i18n import N_, _, join, join_clauses, pad
from rlvr.runs import RunResult
from rlvr.train import RLConfig

SECTION = "3"
# What the lecture says in section 3, and the band that counts as agreeing (fixed from the wording before measuring:
# "much faster" = at least 1.5x fewer steps; "the gap disappears" = within a factor 1.5 either way).
EARLY_STEPS = 50  # "early in the run": the all-equal share over the first 50 steps
MUCH_FASTER = (1.5, math.inf)
SAME_SPEED = (1 / 1.5, 1.5)  # two runs whose steps to a level are within this factor of each other keep one pace


def ratio_titles() -> dict[str, str]:
    """What §4's progress lines call its runs: algo -> title, GRPO as notebook 03's run (the race's GRPO-1)."""
    return {**ALGO_TITLES, "grpo": _("GRPO-1 (notebook 03's run)")}


def ratio_labels() -> dict[str, str]:
    """What §4's printed lines call its runs where the algorithm's label would not: GRPO is the race's GRPO-1."""
    return {"grpo": "GRPO-1"}


def first_run_text(configs: dict[str, RLConfig], ratio_configs: dict[str, RLConfig]) -> str:
    """The setup cell's plan (`rlvr.budget.first_run_text`): the race's runs, its GRPO-1 listed once under notebook
    03's name, then §4's GSPO and CISPO; each on disk, or about how long it trains."""
    titles = ratio_titles()
    planned = {titles["grpo"] if name == "GRPO-1" else name: (cfg, cache_entry(cfg)) for name, cfg in configs.items()}
    planned.update({titles[algo]: cfg for algo, cfg in ratio_configs.items()})
    return budget.first_run_text(planned)


def step_text(step: int | None, steps: int | None = None) -> str:
    """A step found by a crossing, or what to print when there is none ('not reached in 30 steps')."""
    if step is not None:
        return f"{step:d}"
    return _("not reached in {steps} steps").format(steps=steps) if steps else _("not reached")


def race_table(runs: dict[str, RunResult], accuracy_level: float = 0.8) -> str:
    """Markdown table: steps and seconds to 80% think-first share and to `accuracy_level` accuracy, and more; a
    footnote says how the steps are read off ('—' where a run is too short for a column)."""

    def crossing(value, seconds=False):
        if value is None:
            return _("not reached")
        return seconds_text(value) if seconds else f"{value:.0f}"

    think, accurate = f"{THINK_TARGET:.0%}", f"{accuracy_level:.0%}"
    head = [
        "",
        _("steps to {level} think-first").format(level=think),
        _("CPU time to {level} think-first").format(level=think),
        _("steps to {level} accuracy").format(level=accurate),
        _("CPU time to {level} accuracy").format(level=accurate),
        _("accuracy at step {step}").format(step=ACCURACY_STEP),
        _("accuracy, last 10 steps"),
        _("sampling CPU s/step"),
        _("training CPU s/step"),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    short = any(len(run.history) <= ACCURACY_STEP for run in runs.values())
    for name, run in runs.items():
        timing = seconds_per_step(run)
        acc_at = accuracy_at(run)
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    crossing(steps_to(run)),
                    crossing(seconds_to(run), True),
                    crossing(steps_to(run, "accuracy", accuracy_level)),
                    crossing(seconds_to(run, "accuracy", accuracy_level), True),
                    f"{acc_at:.0%}" if math.isfinite(acc_at) else "—",
                    f"{final_value(run):.0%}",
                    f"{timing['sampling_cpu_s']:.3f}",
                    f"{timing['training_cpu_s']:.3f}",
                ]
            )
            + " |"
        )
    lines.append("")
    note = _(
        'Steps count from 0. "Steps to 80%" is the first step whose mean over its last {window} steps (the bold '
        "curves of the figure) reaches 80%; the CPU time is the run's CPU seconds before that step's metrics were "
        "known."
    ).format(window=SMOOTH)
    if short:
        note += " " + _('"—": the run has fewer than {steps} steps.').format(steps=ACCURACY_STEP + 1)
    lines.append(note)
    return "\n".join(lines)


def ratio_text(name: str, a: float, b: float, reference: str) -> str:
    """'GRPO-1 / PPO-8 = 3.0x' (Chinese: 'GRPO-1 是 PPO-8 的 3.0 倍'), the ratio a / b of two runs' numbers."""
    if a is not None and b:
        return _("{name} / {reference} = {x}x").format(name=name, reference=reference, x=f"{a / b:.1f}")
    return _("{name} / {reference} = n/a").format(name=name, reference=reference)


def per_step_reading(steps: list[dict]) -> str:
    """What the steps to both levels say (one dict per level: run -> step or None): whether GRPO-8 keeps PPO-8's pace
    (within SAME_SPEED on both levels) while GRPO-1 does not, i.e. whether 8 updates per batch explain PPO-8's lead."""

    def ratios(name: str) -> list[float] | None:
        pairs = [(s[name], s["PPO-8"]) for s in steps]
        if any(a is None or not b for a, b in pairs):
            return None
        return [a / b for a, b in pairs]

    grpo8, grpo1 = ratios("GRPO-8"), ratios("GRPO-1")
    if grpo8 is None or grpo1 is None:
        return _("per step: a run did not reach a level, so the steps cannot be compared")
    low, high = SAME_SPEED
    same = all(low <= r <= high for r in grpo8)
    slower = all(r > high for r in grpo1)
    if same and slower:
        text = _(
            "per step: GRPO-8 keeps PPO-8's pace on both levels (within {pace}x) and GRPO-1 does not: the 8 updates "
            "per batch, not the value model, give PPO-8 its lead"
        )
    elif slower:
        text = _(
            "per step: GRPO-8 does not keep PPO-8's pace on both levels (within {pace}x): 8 updates per batch explain "
            "only part of PPO-8's lead over GRPO-1"
        )
    else:
        text = _("per step: GRPO-1 keeps PPO-8's pace on a level (within {pace}x): PPO-8 has no clear lead to explain")
    return text.format(pace=f"{high:g}")


def race_summary_text(runs: dict[str, RunResult], accuracy_level: float = 0.8, reference: str = "GRPO-1") -> str:
    """The race's comparisons from the runs themselves (what the prose after the table reads): steps to each level
    and their ratios to PPO-8's, then the CPU cost per step as multiples of `reference`'s."""
    levels = (
        ("cot_fraction", _("{level} think-first").format(level=f"{THINK_TARGET:.0%}"), THINK_TARGET),
        ("accuracy", _("{level} accuracy").format(level=f"{accuracy_level:.0%}"), accuracy_level),
    )
    lines = []
    steps = []
    for key, what, level in levels:
        s = {name: steps_to(run, key, level) for name, run in runs.items()}
        steps.append(s)
        lines.append(
            _("steps to {what}: {steps}   ({ratios})").format(
                what=what,
                steps=join(f"{name} {step_text(s[name])}" for name in runs),
                ratios=join_clauses(ratio_text(name, s[name], s["PPO-8"], "PPO-8") for name in runs if name != "PPO-8"),
            )
        )
    if {"PPO-8", "GRPO-1", "GRPO-8"} <= set(runs):
        lines.append(per_step_reading(steps))
    for key, what, level in levels:
        seconds = {name: seconds_to(run, key, level) for name, run in runs.items()}
        reached = {name: t for name, t in seconds.items() if t is not None}
        times = join(f"{name} {seconds_text(t) if t is not None else _('not reached')}" for name, t in seconds.items())
        if reached:
            text = _("CPU time to {what}: {times}   (least: {least})")
        else:
            text = _("CPU time to {what}: {times}")
        lines.append(text.format(what=what, times=times, least=min(reached, key=reached.get) if reached else ""))
    grpo_runs = [name for name, run in runs.items() if run.config.algo == "grpo"]
    if grpo_runs:
        lines.append(
            _(
                "all-equal groups (left out of the backward pass), mean share over steps 0-{last} / over all "
                "steps: {shares}"
            ).format(
                last=EARLY_STEPS - 1,
                shares=join(
                    f"{name} {all_equal_share(runs[name], EARLY_STEPS):.0%} / {all_equal_share(runs[name]):.0%}"
                    for name in grpo_runs
                ),
            )
        )
    costs = cost_ratios(runs, reference)
    others = [name for name in runs if name != reference]
    pair = (
        "   "
        + _("({ratio})").format(
            ratio=ratio_text("PPO-8", costs["PPO-8"]["training_cpu_s"], costs["GRPO-8"]["training_cpu_s"], "GRPO-8")
        )
        if {"PPO-8", "GRPO-8"} <= set(costs)
        else ""
    )
    lines.append(
        _("training CPU time per step, as a multiple of {reference}'s: {multiples}").format(
            reference=reference,
            multiples=join(f"{name} " + multiple(f"{costs[name]['training_x']:.1f}") for name in others),
        )
        + pair
    )
    if {"PPO-8", "GRPO-8"} <= set(costs) and "value_cpu_s" in costs["PPO-8"]:
        lines.append(value_cost_line(costs["PPO-8"], costs["GRPO-8"]))
    lines.append(
        _("sampling CPU time per step, as a multiple of {reference}'s: {multiples}").format(
            reference=reference,
            multiples=join(f"{name} " + multiple(f"{costs[name]['sampling_x']:.1f}") for name in others),
        )
    )
    return "\n".join(lines)


def value_cost_line(ppo: dict, grpo: dict) -> str:
    """PPO-8's training CPU time per step split into its value model's and its policy's, each as a multiple of
    GRPO-8's (which has no value model and leaves the all-equal groups out of its backward passes)."""
    base = grpo["training_cpu_s"]
    return _(
        "of PPO-8's training CPU time per step, the value model takes {value} s ({value_x} GRPO-8's step) and the "
        "policy's updates {policy} s ({policy_x}: a backward pass over every answer, where GRPO-8 runs only a "
        "forward pass on its all-equal groups)"
    ).format(
        value=f"{ppo['value_cpu_s']:.3f}",
        value_x=multiple(f"{ppo['value_cpu_s'] / base:.1f}"),
        policy=f"{ppo['policy_cpu_s']:.3f}",
        policy_x=multiple(f"{ppo['policy_cpu_s'] / base:.1f}"),
    )


def value_text(run: RunResult) -> str:
    """What PPO's value model does early on, from a run's history: its prediction at steps 0 and 1 next to the mean
    reward, when its baseline first beats none and the leave-one-out mean, and how it compares afterwards."""

    def number(x: float) -> str:
        return "0" if x == 0 else f"{x:.3f}"

    lines = []
    for step in range(min(2, len(run.history))):
        h = run.history[step]
        lines.append(
            _("value prediction at step {step}: {value}   (mean reward of that batch: {reward})").format(
                step=step, value=number(h["value_mean"]), reward=f"{h['reward']:.3f}"
            )
        )
    helps = value_helps_step(run)
    steps = len(run.history)
    lines.append(
        _(
            "first step the value baseline's squared advantage is below no baseline's: {none}; below the "
            "leave-one-out mean's: {loo}"
        ).format(none=step_text(helps["beats_no_baseline"], steps), loo=step_text(helps["beats_group_mean"], steps))
    )
    value, loo = run.curve("adv_sq_value")[1:], run.curve("adv_sq_loo")[1:]  # [steps - 1] each
    defined = np.isfinite(value) & np.isfinite(loo) & (loo > 0)  # a batch whose groups all agree has loo = 0
    ratio = value[defined] / loo[defined]
    if len(ratio):
        left_out = len(value) - len(ratio)
        if left_out:
            which = _("steps 1-{last} ({left_out} left out: every group's rewards all equal)")
        else:
            which = _("steps 1-{last}")
        lines.append(
            _(
                "squared advantage, value model / leave-one-out mean, {which}: median {median}, below 1 at {share} "
                "of the steps"
            ).format(
                which=which.format(last=steps - 1, left_out=left_out),
                median=f"{np.median(ratio):.2f}",
                share=f"{np.mean(ratio < 1):.0%}",
            )
        )
    return "\n".join(lines)


def baseline_scales_text(scales: BaselineScales) -> str:
    """Three lines: the batch, the per-answer ratio of the two advantages, the ratio of their mean squares."""
    n = scales.n_answers
    return "\n".join(
        [
            _(
                "one batch of {n} answers ({prompts} prompts x {g}); {equal} of them in groups whose rewards are all "
                "equal (both advantages 0)"
            ).format(n=n, prompts=n // scales.group_size, g=scales.group_size, equal=scales.n_all_equal),
            _("A_mean / A_leave-one-out on the other {n} answers: from {low} to {high}").format(
                n=len(scales.ratios), low=f"{scales.ratios.min():.4f}", high=f"{scales.ratios.max():.4f}"
            ),
            _("mean of A_mean^2 / mean of A_leave-one-out^2: {ratio}").format(ratio=f"{scales.mean_sq_ratio:.4f}"),
        ]
    )


def clip_text(runs: dict[str, RunResult]) -> str:
    """Per multi-update run: the clipped share by update (mean over steps), the largest step, and how far the ratios
    move in the last update next to the band's edge (log(1 + eps))."""
    lines = []
    for name, run in runs.items():
        if run.config.epochs < 2:
            continue
        clip = clip_summary(run)
        shares = "  ".join("0" if x == 0 else f"{x:.2%}" for x in mean_clip_per_update(run))
        edge = math.log(1 + run.config.clip_eps)
        lines += [
            _("{name}: clipped share by update (mean over steps): {shares}").format(name=name, shares=shares),
            _(
                "{name}: largest clipped share of one step (mean of its updates 2-{updates}): {peak} at step {step};  "
                "mean |log ratio| in the last update {last}; the clip starts at log(1 + clip_eps) = {edge}"
            ).format(
                name=name,
                updates=run.config.epochs,
                peak=f"{clip['peak']:.1%}",
                step=clip["peak_step"],
                last=f"{clip['abs_log_ratio_last_update']:.4f}",
                edge=f"{edge:.4f}",
            ),
        ]
    return "\n".join(lines)


NOISE_POINTS = 2.0  # notebook 04 §6: at most, the standard deviation of the gap between two 5-step averages of 256
# answers (1.4 points each, times sqrt 2); the largest of 200 such gaps reaches two or three times it by chance


def gap_reading(points: float) -> str:
    """What a largest gap between two accuracy curves says against NOISE_POINTS, one gap's noise: up to twice it is
    noise, up to three times not clearly more, beyond that more than noise."""
    noise = f"{NOISE_POINTS:g}"
    if points <= 2 * NOISE_POINTS:
        return _("within twice the {noise} points of noise one gap can carry: no more than noise").format(noise=noise)
    if points <= 3 * NOISE_POINTS:
        return _(
            "two to three times the {noise} points of noise one gap can carry: not clearly more than noise"
        ).format(noise=noise)
    return _("over three times the {noise} points of noise one gap can carry: more than noise").format(noise=noise)


def no_clip_text(runs: dict[str, RunResult], accuracy_level: float = 0.8) -> str:
    """Two runs that differ by the clip only (with, without): crossings, final accuracy, the largest gap between
    their smoothed accuracy curves, and how far the ratios move in the last update."""
    (_name_a, a), (_name_b, b) = runs.items()
    crossings = []
    for key, level, what in (
        ("cot_fraction", THINK_TARGET, _("to {level} think-first")),
        ("accuracy", accuracy_level, _("to {level} accuracy")),
    ):
        crossings.append(
            _("{what}: {with_clip} with the clip, {without} without").format(
                what=what.format(level=f"{level:.0%}"),
                with_clip=step_text(steps_to(a, key, level)),
                without=step_text(steps_to(b, key, level)),
            )
        )
    gap = np.abs(smoothed(a, "accuracy") - smoothed(b, "accuracy"))  # [steps]
    worst = int(np.nanargmax(gap))
    log_a, log_b = (clip_summary(run)["abs_log_ratio_last_update"] for run in (a, b))
    return "\n".join(
        [
            _("steps {crossings}").format(crossings=join_clauses(crossings)),
            _("accuracy over the last 10 steps: {with_clip} with the clip, {without} without").format(
                with_clip=f"{final_value(a):.1%}", without=f"{final_value(b):.1%}"
            ),
            _("largest gap between the two smoothed accuracy curves: {gap} points (step {step}): {reading}").format(
                gap=f"{100 * gap[worst]:.1f}", step=worst, reading=gap_reading(100 * float(gap[worst]))
            ),
            _("mean |log ratio| in the last update: {with_clip} with the clip, {without} without ({ratio}x)").format(
                with_clip=f"{log_a:.4f}", without=f"{log_b:.4f}", ratio=f"{log_b / log_a:.2f}"
            ),
        ]
    )


def cost_table(n_policy: int, d_model: int, billions: float = 7.0) -> str:
    """Markdown table: what the value model costs in parameters (our model) and in memory (a 7B model)."""
    lines = [
        _("| | trained parameters (ours) | memory at 7B, verifier reward, with reference (lecture's accounting) |"),
        "|---|---|---|",
    ]
    n = billions * 1e9
    for algo, name in (("ppo", _("PPO (policy + value model)")), ("grpo", _("GRPO (policy only)"))):
        ours = trained_parameters(algo, n_policy, d_model)
        models = (
            {"policy": True, "value model": True, "reference": False}
            if algo == "ppo"
            else {"policy": True, "reference": False}
        )
        big = sum(memory_gb(n, models).values())  # notebook 02's accounting
        lines.append(f"| {name} | {ours:,} | {big:.0f} GB |")
    return "\n".join(lines)


PPO_EXTRA_KNOBS = {  # what PPO adds to tune or decide, and our setting (RLConfig fields where there is one)
    "value_lr": N_("Adam learning rate of the value model (1e-3)"),
    "gamma, lam": N_("GAE discount and lambda (1, 1: a bandit, the reward comes at the end)"),
    "clamp_kl": N_("clamp the per-token KL in the shaped reward at >= 0 (True; matters only with beta > 0)"),
    N_("value head init"): N_("zeros, so the first predictions are exactly 0"),
    N_("value updates per batch"): N_("one value step per policy update (8)"),
    N_("value model size"): N_("a full copy of the policy (another 70k trained parameters here, 7B in the lecture)"),
}  # the worded knobs and the meanings are translated where shown (`extra_knobs_text`); field names stay as they are


def extra_knobs_text() -> str:
    """What PPO adds to tune or decide, one line each with our setting in brackets (a title line first)."""
    lines = [_("What PPO adds to tune or decide (our settings in brackets):")]
    lines += [f"  {pad(_(knob), 24)} {_(meaning)}" for knob, meaning in PPO_EXTRA_KNOBS.items()]
    return "\n".join(lines)


def lecture_and_us(runs: dict[str, RunResult], n_policy: int, d_model: int) -> str:
    """Markdown table: each statement of lecture section 3 next to what the race's runs (all their steps) show."""
    steps = {name: steps_to_think(run) for name, run in runs.items()}
    ppo = runs["PPO-8"]
    cfg = ppo.config
    helps = value_helps_step(ppo)
    costs = cost_ratios(runs)
    n = len(ppo.history)

    def ratio(name: str) -> str:
        a, b = steps[name], steps["PPO-8"]
        if a is not None and b:
            return _("{ratio}x PPO-8's").format(ratio=f"{a / b:.1f}")
        return _("no ratio")

    value_0 = ppo.history[0]["value_mean"]
    rows = [
        (
            _("the race: 256 answers per step, 200 steps"),
            _("{prompts} prompts x {g} answers = {answers} per step, {n} steps").format(
                prompts=cfg.prompts_per_step, g=cfg.group_size, answers=cfg.prompts_per_step * cfg.group_size, n=n
            ),
        ),
        (
            _("at first sight PPO (8 updates per batch) is much faster than GRPO (1 update)"),
            _("steps to {level} think-first: PPO-8 {ppo}, GRPO-1 {grpo} ({ratio})").format(
                level=f"{THINK_TARGET:.0%}",
                ppo=step_text(steps["PPO-8"], n),
                grpo=step_text(steps["GRPO-1"], n),
                ratio=ratio("GRPO-1"),
            ),
        ),
        (
            _("with 8 updates per batch, GRPO closes the gap"),
            _("GRPO-8 {steps} ({ratio})").format(steps=step_text(steps["GRPO-8"], n), ratio=ratio("GRPO-8")),
        ),
        (
            _("PPO's value model predicts 0 at first: its baseline does nothing"),
            _("value at step 0: {value}").format(value="0" if value_0 == 0 else f"{value_0:.3f}"),
        ),
        (
            _("its baseline helps only once the value loss has come down"),
            _("below no baseline from step {none}, below the leave-one-out mean from step {loo}").format(
                none=step_text(helps["beats_no_baseline"], n), loo=step_text(helps["beats_group_mean"], n)
            ),
        ),
        (
            _("the difference is mostly complexity: PPO trains a second model"),
            _(
                "trained parameters {ppo} (PPO) against {grpo} (GRPO); training CPU time per step: PPO-8 {ratio}x "
                "GRPO-8's, its value model alone {value_x} (the rest: GRPO-8 leaves the all-equal groups out of its "
                "backward passes, PPO-8 cannot)"
            ).format(
                ppo=f"{trained_parameters('ppo', n_policy, d_model):,}",
                grpo=f"{trained_parameters('grpo', n_policy, d_model):,}",
                ratio=f"{costs['PPO-8']['training_cpu_s'] / costs['GRPO-8']['training_cpu_s']:.1f}",
                value_x=multiple(f"{costs['PPO-8']['value_cpu_s'] / costs['GRPO-8']['training_cpu_s']:.1f}"),
            ),
        ),
    ]
    totals = memory_totals()
    rows.append(
        (
            _("its memory bill at 7B (lecture §2.4): 252 GB for PPO, 126 GB without the value and reward models"),
            _("{ppo} GB and {verifier} GB by the same accounting (notebook 02)").format(
                ppo=f"{totals['PPO']:.0f}", verifier=f"{totals['rule-based verifier']:.0f}"
            ),
        )
    )
    lines = [_("| the lecture (§3) | ours |"), "|---|---|"]
    lines += [f"| {lecture} | {ours} |" for lecture, ours in rows]
    return "\n".join(lines)


def rows_from(measured: list[dict], seeds: tuple) -> list[Row]:
    """The Rows of section 3 from one measurement dict per seed (statements in words: `claim_row`s)."""

    def row(figure, lecture, key, band=None, unit="", note=""):
        return claim_row(
            section=SECTION,
            figure=figure,
            lecture=lecture,
            values=[math.nan if m[key] is None else m[key] for m in measured],  # None: never reached
            band=band,
            unit=unit,
            seeds=seeds,
            note=note,
        )

    target = f"{THINK_TARGET:.0%}"
    steps = min(m.get("steps", STEPS) for m in measured)
    return [
        undefined_as_dash(r, steps)
        for r in [
            row(
                "PPO value prediction at step 0 (mean, 1st answer token)",
                0.0,
                "value_at_start",
                (-1e-9, 1e-9),
                note="zero-initialised head: the baseline does nothing at first",
            ),
            row(f"steps to {target} think-first share, PPO-8", "fast at first sight", "steps_PPO-8", unit="steps"),
            row(f"steps to {target} think-first share, GRPO-1", "slower than PPO", "steps_GRPO-1", unit="steps"),
            row(f"steps to {target} think-first share, GRPO-8", "as fast as PPO", "steps_GRPO-8", unit="steps"),
            row(
                f"GRPO-1 steps / PPO-8 steps to {target} think-first",
                "PPO much faster than GRPO-1",
                "speedup_ppo_vs_grpo1",
                MUCH_FASTER,
                "x",
                note="band fixed from the wording: >= 1.5x",
            ),
            row(
                f"GRPO-8 steps / PPO-8 steps to {target} think-first",
                "gap disappears with 8 updates",
                "speedup_ppo_vs_grpo8",
                SAME_SPEED,
                "x",
                note="band fixed from the wording: within 1.5x",
            ),
            row(f"accuracy at step {ACCURACY_STEP}, PPO-8", None, "accuracy_PPO-8", unit="%"),
            row(f"accuracy at step {ACCURACY_STEP}, GRPO-1", None, "accuracy_GRPO-1", unit="%"),
            row(f"accuracy at step {ACCURACY_STEP}, GRPO-8", None, "accuracy_GRPO-8", unit="%"),
            row(
                "first step at which the value baseline beats no baseline",
                "only after training the value model",
                "value_beats_no_baseline",
            ),
            row(
                "first step at which the value baseline beats the leave-one-out mean",
                "only after training the value model",
                "value_beats_group_mean",
            ),
            row(
                "training CPU time per step, PPO-8 / GRPO-8",
                "PPO costs more (a value model to train)",
                "training_s_ratio_ppo_grpo8",
                (1.0, math.inf),
                "x",
                note="median CPU seconds per step",
            ),
        ]
    ]


def undefined_as_dash(row: Row, steps: int) -> Row:
    """A row whose value these steps do not define (a level never reached, a step past the run's end) shows '—' and
    says why, never 'nan'."""
    if row.measured is None or math.isfinite(row.measured):
        return row
    why = f"not defined in {steps} steps (never reached, or past the run's end)"
    return replace(row, measured=None, spread=None, note=f"{row.note}; {why}" if row.note else why)


def rows(seeds=(0,), fast: bool | None = None) -> list[Row]:
    """Section 3's statements next to our measurement: three runs of 30 steps per seed (read from the notebook's
    200-step runs when they are cached; about 20 seconds per seed on a quiet 2-core laptop otherwise)."""
    steps = size("race_figure_steps", fast)
    measured = [race_measurements(run_race(steps, seed, progress=False)) for seed in seeds]
    return rows_from(measured, tuple(seeds))
