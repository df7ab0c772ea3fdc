"""The signals of an RL run on one grid (rlvr.signals), with a second run overlaid for comparison (by default the
healthy run); live while it trains (`live_dashboard`)."""

from __future__ import annotations

import functools
import math

import numpy as np

from rlvr.experiments.gallery import (
    NOT_BROKEN,
    breakage,
    crash_parts,
    gallery_config,
    gallery_run,
    reference_of,
    short_title,
)
from rlvr.figures.palette import COLORS, RIGHT, WRONG
from rlvr.narration.gallery import nan_text
from rlvr.i18n import N_, _
from rlvr.signals import KL_EVERY, SIGNAL_NAMES
from rlvr.runs import history_curve
from rlvr.widgets import AnalyticPanel, LivePlot, dropdown, fresh_axes, start_runs, train_runs

RUN_COLOR = COLORS["broken"]  # the run under study: drawn over the reference (black), the one the eye should follow
PANELS = (  # (title, [(history key, label, style)], y-axis scale); titles and labels translated when drawn
    (
        N_("reward and strict accuracy"),
        [("reward", N_("reward"), {}), ("accuracy", N_("strict accuracy"), {"ls": ":"})],
        "linear",
    ),
    (N_("groups with all-equal rewards"), [("all_same_group_fraction", "", {})], "linear"),
    (N_("advantage std"), [("advantage_std", "", {})], "linear"),
    (N_("token entropy (nats)"), [("entropy", "", {})], "linear"),
    (N_("gradient norm"), [("grad_norm", "", {})], "symlog"),  # log above 0.01, linear below: 0 is drawn
    (N_("loss"), [("loss", "", {})], "linear"),
    (N_("KL to the reference (per answer)"), [("kl_to_ref", "", {"marker": ".", "ls": "none"})], "linear"),
    (N_("approx KL to the sampling policy"), [("approx_kl", "", {})], "linear"),
    (N_("clip fraction"), [("clip_fraction", "", {})], "linear"),
    (
        N_("mean length (tokens)"),
        [("mean_length_correct", N_("right answers"), RIGHT), ("mean_length_wrong", N_("wrong answers"), WRONG)],
        "linear",
    ),
    (
        N_("malformed / cut at max length"),
        [
            ("malformed_fraction", N_("malformed answers"), {}),
            ("truncated_fraction", N_("answers cut at max length"), WRONG),
        ],
        "linear",
    ),
    (N_("think-first share"), [("cot_fraction", "", {})], "linear"),
)


SYMLOG_LINEAR_BELOW = 0.01  # the gradient-norm axis is logarithmic above this and linear below, so 0 shows
SIGNED_KEYS = ("loss", "kl_to_ref")  # signals that can be negative: the loss, and the KL to the warm-up (a sampled
# per-answer estimate, below 0 where the policy moved little); every other axis starts at 0
SIGNED = {title for title, curves, _scale in PANELS if curves[0][0] in SIGNED_KEYS}


def finite_or_none(values: np.ndarray) -> np.ndarray | None:
    """The curve if it has a finite value to draw, else None."""
    return values if np.isfinite(values).any() else None


def plain_ticks(axis, log: bool) -> None:
    """Tick labels as plain numbers ('2e-08', '0.5', '3'): no '1e-8' multiplier over the title; on a symlog axis
    ticks at 0 and at 1, 2 and 5 of each decade, so a curve within one decade still gets labels."""
    from matplotlib.ticker import FuncFormatter, NullLocator, SymmetricalLogLocator

    if log:
        locator = SymmetricalLogLocator(base=10, linthresh=SYMLOG_LINEAR_BELOW, subs=(1.0, 2.0, 5.0))
        axis.set_major_locator(locator)
        axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:.3g}"))


def drawn_curve(history: list[dict], key: str) -> np.ndarray:
    """One signal of a run as a dashboard draws it: the KL to the warm-up only every KL_EVERY steps, the cadence of a
    run without a KL term, so that a run with one (measured every step) does not stand out by its dots alone. [steps]"""
    y = history_curve(history, key)  # [steps]
    if key == "kl_to_ref":
        y[np.arange(len(y)) % KL_EVERY != 0] = np.nan
    return y


def draw_dashboard(fig, runs: dict, reference: dict | None = None, crashes: dict | None = None) -> None:
    """3 x 4 panels against RL step: each signal of `runs` (label -> history) in magenta, `reference` (label -> history)
    in black underneath; `crashes` (label -> step) marks where a run stopped."""
    axes = fresh_axes(fig, 3, 4).ravel()
    drawn = [(label, h, COLORS["exact"], 1.0) for label, h in (reference or {}).items()]
    drawn += [(label, h, RUN_COLOR, 1.6) for label, h in runs.items()]
    for ax, (title, curves, scale) in zip(axes, PANELS):
        for _label, history, color, width in drawn:
            for key, _name, style in curves:
                y = finite_or_none(drawn_curve(history, key))
                if y is None:
                    continue
                ax.plot(np.arange(len(y)), y, color=color, lw=width, **style)
        if scale == "symlog":
            ax.set_yscale("symlog", linthresh=SYMLOG_LINEAR_BELOW)
        if title not in SIGNED:
            ax.set_ylim(bottom=0)  # a share, a norm, a KL or a length: never below 0 (a flat 0 sits on the axis)
        plain_ticks(ax.yaxis, log=scale == "symlog")
        ax.set_title(_(title), fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        for _label, step in (crashes or {}).items():
            ax.axvline(step, color=RUN_COLOR, ls="--", lw=1)
    for ax in axes[8:]:
        ax.set_xlabel(_("RL step"), fontsize=8)
    handles = [axes[0].plot([], [], color=c, lw=w, label=label)[0] for label, _h, c, w in drawn]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8, frameon=False)
    for ax, (_title, curves, _scale) in zip(axes, PANELS):  # a panel of two curves tells them apart by line style
        if len(curves) > 1:
            handles = [ax.plot([], [], color="#555555", **style)[0] for _key, _name, style in curves]
            ax.legend(handles=handles, labels=[_(name) for _key, name, _style in curves], fontsize=7, loc="best")
    fig.subplots_adjust(top=0.9, hspace=0.45, wspace=0.3)


def live_dashboard(reference: dict | None = None, label: str = N_("this run"), every: int | None = None) -> LivePlot:
    """An on_step(step, total, history) callback that redraws the dashboard while a run trains."""
    return LivePlot(lambda fig, history: draw_dashboard(fig, {_(label): history}, reference), every, figsize=(13, 7.5))


def crash_marks(run) -> dict:
    """{label: step} for draw_dashboard's crash marks of a gallery run (empty if it did not crash)."""
    return {} if run.crash is None else {_("crash"): len(run.history)}


def draw_gallery_run(fig, run, healthy) -> None:
    """The dashboard of one gallery run (magenta) over the healthy run of its seed (black)."""
    draw_dashboard(fig, {_(breakage(run).title): run.history}, {_("healthy run"): healthy.history}, crash_marks(run))


def draw_gallery(fig, runs: dict, healthy) -> None:
    """One small panel per breakage: the signal that names it (magenta) against the run the table reads it beside
    (black: the healthy run, or the breakage's `compare_with` run)."""
    names = [name for name in runs if name not in NOT_BROKEN]
    ncols = 3
    axes = fresh_axes(fig, math.ceil(len(names) / ncols), ncols).ravel()
    for ax, name in zip(axes, names):
        run = runs[name]
        key = breakage(run).signal
        against, reference = reference_of(run, runs, healthy)  # the run its signal is read beside (the table's)
        title = _("{run}: {signal}").format(run=short_title(name), signal=SIGNAL_NAMES[key])
        if reference is not healthy:
            title += "\n" + _("(black: {run})").format(run=short_title(against))
        elif run.crash is None and len(run.history) != len(healthy.history):  # one that trains longer: say so
            title += "\n" + _("({steps} steps; black: {healthy_steps})").format(
                steps=len(run.history), healthy_steps=len(healthy.history)
            )
        ax.set_title(title, fontsize=9)
        if run.crash is not None:  # nothing to draw: a NaN, then the crash
            step = crash_parts(run.crash)[0]
            ax.text(
                0.5,
                0.5,
                _("{signal} NaN at {where},\ncrash at step {step}").format(
                    signal=SIGNAL_NAMES[key], where=nan_text(run), step=step
                ),
                ha="center",
                va="center",
                transform=ax.transAxes,
                color=RUN_COLOR,
                fontsize=9,
            )
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        for history, color, width in ((reference.history, COLORS["exact"], 1.0), (run.history, RUN_COLOR, 1.6)):
            y = drawn_curve(history, key)
            ax.plot(np.arange(len(y)), y, color=color, lw=width, marker="." if key == "kl_to_ref" else None)
        ax.set_xlabel(_("RL step"), fontsize=8)
        if key == "grad_norm":
            ax.set_yscale("symlog", linthresh=SYMLOG_LINEAR_BELOW)
            plain_ticks(ax.yaxis, log=True)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    handles = [axes[0].plot([], [], color=c, lw=w)[0] for c, w in ((RUN_COLOR, 1.6), (COLORS["exact"], 1.0))]
    fig.legend(
        handles,
        [_("broken run"), _("healthy run (same seed), unless a title names another")],
        loc="upper center",
        ncol=2,
        fontsize=8,
        frameon=False,
    )
    fig.subplots_adjust(top=0.9, hspace=0.55, wspace=0.3)


def train_gallery(names: dict[str, str], seed: int, sft_seed: int | None = None) -> dict:
    """Gallery runs (label -> breakage name) of one seed, trained the first time (side by side, in worker processes)
    and loaded afterwards, one progress line per run, which names a run by its short title (translated) where its
    label is its breakage's name. Returns label -> RunResult."""
    titles = {label: short_title(name) for label, name in names.items() if label == name}
    runner = functools.partial(gallery_run, seed=seed, sft_seed=sft_seed)
    return train_runs(names, runner, titles=titles, sizes=_configs(names, seed, sft_seed))


def start_gallery(names: dict[str, str], seed: int, sft_seed: int | None = None) -> None:
    """Start the gallery runs of `names` (label -> breakage name) that the cache does not hold in the background, at
    the lowest priority; `train_gallery` of the same runs waits for them."""
    runner = functools.partial(gallery_run, seed=seed, sft_seed=sft_seed)
    start_runs(names, runner, sizes=_configs(names, seed, sft_seed))


def _configs(names: dict[str, str], seed: int, sft_seed: int | None) -> dict:
    """label -> the RLConfig of its gallery run (what decides how long it trains)."""
    return {label: gallery_config(name, seed, sft_seed=sft_seed) for label, name in names.items()}


def gallery_panel(load, names, healthy, value: str | None = None) -> AnalyticPanel:
    """A dropdown of gallery runs; the figure is the chosen run's dashboard over the healthy run. load(name) -> run.
    The dropdown shows each run's short title (translated) and its value is the run's name."""
    options = [(short_title(name), name) for name in names]
    return AnalyticPanel(
        lambda fig, run: draw_gallery_run(fig, load(run), healthy),
        {"run": dropdown("run", options, value, description=_("broken run"))},
        figsize=(13, 7.5),
        title=_("Every signal of one broken run (magenta) against the healthy run (black)"),
        remember=len(names),
    )
