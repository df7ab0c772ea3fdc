"""Reading a student's run beside the reference's: where it went NaN, crashed, fell behind or never learned, which
signal shows it, and which run of notebook 06's gallery (`rlvr.experiments.gallery`) it resembles."""

from __future__ import annotations

import math

import numpy as np

from ..i18n import _
from ..signals import SIGNAL_NAMES, failures, nan_step
from ..experiments.common import smooth
from ..runs import RunResult, history_curve
from ..train import RLConfig

WINDOW = 10  # steps of the rolling mean the comparison reads
BEHIND = 0.15  # the student's smoothed curve this far below the reference's, for WINDOW steps in a row
LEARNED = 0.10  # a run learned if its smoothed think-first share or accuracy rose by this much
COMPARED = ("cot_fraction", "accuracy", "reward")


def behind_step(history: list[dict], reference: list[dict], key: str) -> int | None:
    """First step from which the student's smoothed `key` stays BEHIND below the reference's for WINDOW steps."""
    n = min(len(history), len(reference))
    if n < WINDOW:
        return None
    gap = smooth(history_curve(reference[:n], key), WINDOW) - smooth(history_curve(history[:n], key), WINDOW)
    run = 0
    for step, value in enumerate(gap):
        run = run + 1 if value > BEHIND else 0
        if run == WINDOW:
            return step - WINDOW + 1
    return None


def learned(history: list[dict], key: str) -> bool:
    """Whether the smoothed curve ended LEARNED above where it started."""
    values = smooth(history_curve(history, key), WINDOW)
    finite = values[np.isfinite(values)]
    start = history_curve(history[:WINDOW], key)
    start = start[np.isfinite(start)]
    return bool(finite.size and start.size and finite[-1] - start.mean() >= LEARNED)


def resembles(history: list[dict], reference: list[dict], crash: str | None, cfg: RLConfig) -> list[str]:
    """The gallery runs (broken ones) whose symptom the student's run shows, judged against the reference run."""
    from ..experiments import gallery

    mine = RunResult(cfg, history, crash=crash, name="healthy")
    healthy = RunResult(cfg, reference, name=gallery.HEALTHY.name)
    found = []
    for name in gallery.SYMPTOMS:
        if name in gallery.NOT_BROKEN or not history:
            continue
        try:
            shown = gallery.shows_symptom(name, mine, healthy)
        except (KeyError, IndexError, ValueError):  # a history too short for one of the symptom's readings
            shown = False
        if shown:
            found.append(name)
    return found


def gallery_line(name: str) -> str:
    """'it looks like the gallery's "flipped sign" run (notebook 06): <cause>; fix: <fix>'."""
    from ..experiments import gallery

    run = gallery.BREAKAGES[name]
    return _('it looks like the "{title}" run of notebook 06\'s gallery: {cause}; fix: {fix}').format(
        title=gallery.short_title(name), cause=_(run.cause), fix=_(run.fix)
    )


def read_run(history: list[dict], reference: list[dict], crash: str | None, cfg: RLConfig) -> list[str]:
    """One line per finding, in the order a student should read them (empty: the run follows the reference)."""
    lines = []
    step = nan_step(history)
    if step is not None:
        lines.append(_("step {step}: the loss, reward or gradient norm is NaN").format(step=step))
    if crash:
        lines.append(_("the run stopped: {crash}").format(crash=crash))
    for key in COMPARED:
        step = behind_step(history, reference, key)
        if step is not None:
            lines.append(
                _(
                    "from step {step}, {signal} falls behind the reference's (last 10 steps: {mine} against {theirs})"
                ).format(step=step, signal=SIGNAL_NAMES[key], mine=_tail(history, key), theirs=_tail(reference, key))
            )
            break
    if len(history) >= 2 * WINDOW and learned(reference, "accuracy") and not learned(history, "accuracy"):
        lines.append(
            _(
                "it does not learn: the accuracy ends where it started ({mine}; the reference's ends at {theirs})"
            ).format(mine=_tail(history, "accuracy"), theirs=_tail(reference, "accuracy"))
        )
    for failure in failures(history):
        lines.append(_("step {step}: {message}").format(step=failure.step, message=_(failure.message)))
    if lines:
        lines += [gallery_line(name) for name in resembles(history, reference, crash, cfg)]
    return lines


def _tail(history: list[dict], key: str) -> str:
    """The mean of a curve's last WINDOW finite values, as '0.83' ('—' if none)."""
    values = history_curve(history[-WINDOW:], key)
    values = values[np.isfinite(values)]
    return f"{values.mean():.2f}" if values.size else "—"


def within(a: float | None, b: float | None, margin: float) -> bool:
    """Whether two rates differ by at most `margin` (False when either is undefined)."""
    return a is not None and b is not None and math.isfinite(a) and math.isfinite(b) and abs(a - b) <= margin
