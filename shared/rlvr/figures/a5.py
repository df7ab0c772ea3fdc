"""rlvr a5's figure: a student's run (their assignment-5 code training the course's model) over the reference run,
on the signals that tell them apart: think-first share, strict accuracy, reward (notebook 03) and clip fraction, KL
to the sampler, token entropy (notebook 06)."""

from __future__ import annotations

import numpy as np

from rlvr.experiments.common import smooth
from rlvr.figures.palette import COLORS
from rlvr.i18n import N_, _, prepare_figures
from rlvr.runs import history_curve

STUDENT_COLOR = COLORS["broken"]  # the run under study, over the reference's black (as notebook 06's gallery)
REFERENCE_COLOR = COLORS["exact"]
PANELS = (  # (history key, title): titles translated when drawn
    ("cot_fraction", N_("think-first share")),
    ("accuracy", N_("strict accuracy")),
    ("reward", N_("reward")),
    ("clip_fraction", N_("clip fraction")),
    ("kl_to_sampler", N_("KL to the sampler (per token)")),
    ("entropy", N_("token entropy (nats)")),
)


def draw_runs(fig, history: list[dict], reference: list[dict], window: int = 10) -> None:
    """Six panels on `fig`: each signal of the student's run (coloured) over the reference's (black), raw values
    faint and a rolling mean of `window` steps on top."""
    prepare_figures()
    axes = fig.subplots(2, 3, sharex=True)
    for ax, (key, title) in zip(axes.flat, PANELS):
        for run, color, label, style in (
            (history, STUDENT_COLOR, _("yours"), {"lw": 2.2}),
            (reference, REFERENCE_COLOR, _("reference"), {"lw": 1.2, "ls": "--"}),  # on top: seen where they agree
        ):
            values = history_curve(run, key)
            if not np.isfinite(values).any():
                continue
            steps = np.arange(len(values))
            ax.plot(steps, values, color=color, alpha=0.2, lw=0.8)
            ax.plot(steps, smooth(values, window), color=color, label=label, **style)
        ax.set_ylim(bottom=0)  # every signal here is >= 0
        ax.set_title(_(title), fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel(_("RL step"))
    axes.flat[0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()


def save_runs(path, history: list[dict], reference: list[dict]) -> None:
    """The six panels as a PNG file (drawn on a Figure of its own: pyplot's backend is left alone)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 6.5))
    draw_runs(fig, history, reference)
    fig.savefig(path, dpi=110)
