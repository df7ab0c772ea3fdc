"""A Report as text: the table of verdicts, the training's summary and findings, the notes (terminal and notebook)."""

from __future__ import annotations

import math

from ..i18n import N_, _, join, pad, text_width
from .diagnose import within
from .session import Report
from .verdicts import VERDICT_WORDS

MARGIN = 0.05  # the final think-first share of a correct student's run is this close to the reference's (issue 42)
EDITION_NAMES = {"2025": N_("spring 2025"), "2026": N_("spring 2026")}


def pct(x: float | None) -> str:
    """0.934 -> '93.4%' ('—' when undefined)."""
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{100 * x:.1f}%"


def verdict_table(report: Report) -> list[str]:
    """One line per function: name, verdict, what to do."""
    width = max(text_width(name) for name in report.verdicts)
    words = {name: _(VERDICT_WORDS[v.verdict]) for name, v in report.verdicts.items()}
    verdict_width = max(text_width(w) for w in words.values())
    lines = []
    for name, v in report.verdicts.items():
        why = v.message if v.verdict != "correct" else ""
        lines.append(f"  {pad(name, width)}  {pad(words[name], verdict_width)}  {why}".rstrip())
    return lines


def summary_counts(report: Report) -> str:
    """'9 correct, 1 wrong, 1 missing, 0 error' (in the current language)."""
    counts = {key: sum(v.verdict == key for v in report.verdicts.values()) for key in VERDICT_WORDS}
    return join(f"{n} {_(VERDICT_WORDS[key])}" for key, n in counts.items())


def training_lines(report: Report) -> list[str]:
    """The training's summary: steps, the two runs' final rates, whether they agree, the findings."""
    t = report.training
    if t is None:
        return []
    if t.skipped:
        return [_("Not trained: {names} not written yet (or could not run).").format(names=join(t.skipped))]
    finished = t.crash is None and t.steps == len(t.reference)
    where = _("held-out") if finished else _("last step")
    lines = [
        _("Trained {steps} of {total} steps with your code, beside the reference (same seed).").format(
            steps=t.steps, total=len(t.reference)
        ),
        _("  yours ({where}): think-first {think}, accuracy {acc}").format(
            where=where, think=pct(t.final.get("think_first")), acc=pct(t.final.get("accuracy"))
        ),
        _("  reference (held-out): think-first {think}, accuracy {acc}").format(
            think=pct(t.reference_final["think_first"]), acc=pct(t.reference_final["accuracy"])
        ),
    ]
    if finished and within(t.final.get("think_first"), t.reference_final["think_first"], MARGIN) and not t.findings:
        lines.append(
            _("  Your run follows the reference (think-first within {m} points).").format(m=round(100 * MARGIN))
        )
    lines += [f"  - {finding}" for finding in t.findings]
    if t.printed:
        lines.append(_("  While training, your code printed:"))
        lines += [f"    {line}" for line in t.printed.splitlines()[1:]]
    return lines


def report_lines(report: Report) -> list[str]:
    """Everything the terminal shows, in order."""
    lines = [
        _("{path}: CS336 assignment 5, {edition} edition (recognised from tests/adapters.py)").format(
            path=report.checkout, edition=_(EDITION_NAMES[report.edition])
        )
    ]
    lines += [_("note: {note}").format(note=note) for note in report.notes]
    lines.append(_("Functions ({counts}):").format(counts=summary_counts(report)))
    lines += verdict_table(report)
    lines += training_lines(report)
    return lines
