"""Notebook 06 in words: the gallery's table (each broken run's symptom, the signal that names it, read from
the runs of `rlvr.experiments.gallery`, its cause and fix), and what the lecture says of three of the breakages next to
the runs (`rows`, what `python -m rlvr reproduce` judges)."""

from __future__ import annotations

import math

from rlvr.experiments.common import Row, claim_row, two_decimals
from rlvr.experiments.gallery import (
    NOT_BROKEN,
    SYMPTOMS,
    breakage,
    crash_parts,
    gallery_run,
    gallery_steps,
    head,
    last_common_step,
    measured_every_step,
    reference_of,
    short_title,
    tail,
)
from rlvr.i18n import _
from rlvr.runs import RunResult
from rlvr.signals import SIGNAL_NAMES, nan_step

# What the lecture says of a breakage the gallery trains: section and words. Each reading of its symptom
# (experiments.gallery.SYMPTOMS) is one row, judged by the limit the notebook's symptom text was fixed with.
LECTURE = {
    "loophole_verifier": ("1", "a reward that can be hacked is over-optimised"),
    "greedy_sampling": ("4.1", "a group whose rewards are all equal has no signal"),
    "no_clip_many_updates": ("2.2", "reusing a batch many times without the clip breaks the policy"),
    "clipped_many_updates": ("2.2", "the clip keeps the updates of a reused batch near the policy that sampled it"),
}


def nan_text(run: RunResult) -> str:
    """Where a crashed run's signal went NaN, read off its history: 'step 0' (or 'no step' if none did)."""
    step = nan_step(run.history)
    return _("no step") if step is None else _("step {step}").format(step=step)


def reading(run: RunResult, against: RunResult, against_name: str = "healthy") -> str:
    """The breakage's signal, this run beside the run named `against_name` (the healthy one unless its Breakage says
    `compare_with`): 'NaN at step 0; the run stopped at step 1: ...' or 'last 10 steps: 0.10 (healthy run: 0.81)'."""
    key = breakage(run).signal
    name = SIGNAL_NAMES[key]
    if run.crash is not None:
        step, error = crash_parts(run.crash)
        return _("{signal}: NaN at {where}; the run stopped at step {step}: {error}").format(
            signal=name, where=nan_text(run), step=step, error=error
        )
    early = breakage(run).early
    if not early and not (measured_every_step(run, key) and measured_every_step(against, key)):
        step, value, other = last_common_step(run, against, key)  # one reading in the last 10 steps: name its step
        reference = short_title(against_name) if against_name != "healthy" else _("healthy run")
        text = _("{signal} at step {step}, the last both runs measured: {value} ({reference}: {reference_value})")
        return text.format(
            signal=name, step=step, value=two_decimals(value), reference=reference, reference_value=two_decimals(other)
        )
    window = head if early else tail  # the first 5 steps, where an early breakage shows, or the last 10
    value, other = two_decimals(window(run, key)), two_decimals(window(against, key))
    if early and against_name != "healthy":
        text = _("{signal}, first 5 steps: {value} ({reference}: {reference_value})")
        return text.format(signal=name, value=value, reference=short_title(against_name), reference_value=other)
    if early:
        return _("{signal}, first 5 steps: {value} (healthy run: {healthy})").format(
            signal=name, value=value, healthy=other
        )
    if against_name != "healthy":
        text = _("{signal}, last 10 steps: {value} ({reference}: {reference_value})")
        return text.format(signal=name, value=value, reference=short_title(against_name), reference_value=other)
    return _("{signal}, last 10 steps: {value} (healthy run: {healthy})").format(
        signal=name, value=value, healthy=other
    )


def gallery_table(runs: dict[str, RunResult], healthy: RunResult) -> str:
    """Markdown: for each broken run, what is broken, the symptom, the signal that names it (read from the runs),
    the cause and the fix."""
    lines = [
        _("| run | what is broken | symptom | the signal that names it | cause | fix |"),
        "|---|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        if name in NOT_BROKEN:
            continue
        b = breakage(run)
        ref, reference = reference_of(run, runs, healthy)  # a table of some runs: the healthy one
        cells = (_(b.title), _(b.symptom), reading(run, reference, ref), _(b.cause), _(b.fix))
        lines.append(f"| {short_title(name)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rows(seeds=(0,), fast: bool | None = None) -> list[Row]:
    """The lecture's statements on the breakages of LECTURE next to the gallery's runs (and the healthy run of each
    seed): one row per reading of the breakage's symptom, its band the symptom's limit (fixed before measuring)."""
    out = []
    runs = {
        seed: {name: gallery_run(name, seed, steps=gallery_steps(name, fast)) for name in ("healthy", *LECTURE)}
        for seed in seeds
    }
    for name, (section, words) in LECTURE.items():
        for bound in SYMPTOMS[name]:
            out.append(
                claim_row(
                    section=section,
                    figure=f"{name.replace('_', ' ')}: {bound.reading}",
                    lecture=words,
                    values=[bound.value(runs[seed][name], runs[seed]["healthy"]) for seed in seeds],
                    band=(bound.limit, math.inf) if bound.above else (-math.inf, bound.limit),
                    seeds=tuple(seeds),
                    note=f"{gallery_steps(name, fast)} steps; band: the symptom's limit (rlvr.experiments.gallery)",
                )
            )
    return out
