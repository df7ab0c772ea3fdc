"""Notebook 04's figures and panel: the race per step and per CPU second, the value model, clipping, the run without
a clip, and the algorithm / clip_eps / updates panel (the computation is in `rlvr.experiments.race`); and the line that
reports a cell's training runs while they train."""

from __future__ import annotations


import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, PercentFormatter

from rlvr.experiments.common import plain_math_labels, smooth
from rlvr.experiments.race import (
    SMOOTH,
    THINK_TARGET,
    clock,
    mean_clip_per_update,
    panel_config,
    race_run,
    stored,
)
from rlvr.figures.palette import ALGO_COLORS, COLORS, knob_color
from rlvr.i18n import N_, _, prepare_figures
from rlvr.runs import RunResult, history_curve
from rlvr import widgets
from rlvr.widgets import TrainingPanel, choice_slider, float_slider, fresh_axes, int_slider, toggle_buttons

# One colour per meaning (rlvr.figures.palette): PPO red; GRPO blue for GRPO-1 (GRPO's usual one update per batch);
# GRPO-8 differs from it by one knob (updates per batch), GRPO-8 without the clip by one more: one-knob colours.
COLORS_BY_RUN = {  # a run's label (as a notebook of either language writes it: `run_color`) -> its colour
    "PPO-8": ALGO_COLORS["ppo"],
    "GRPO-1": ALGO_COLORS["grpo"],
    "GRPO-8": knob_color(0),
    N_("GRPO-8 without clipping"): knob_color(1),
}
NO_CLIP_COLOR = COLORS_BY_RUN["GRPO-8 without clipping"]
STYLES_BY_RUN = {  # line style and marker of each run, so no two runs are told apart by colour alone (PPO-8 red
    # against GRPO-8 green is what colour-blind readers confuse most)
    "PPO-8": ("-", "o"),
    "GRPO-1": ("-", "s"),
    "GRPO-8": ("--", "D"),
    N_("GRPO-8 without clipping"): (":", "^"),
}
EXACT = COLORS["exact"]  # exact values and reference levels; the default run of the panel
BASELINE_STYLES = {  # the three baselines of the value figure: colour (palette) and line style, never colour alone
    "adv_sq_none": (ALGO_COLORS["none"], ":"),
    "adv_sq_loo": (ALGO_COLORS["rloo"], "-."),
    "adv_sq_value": (ALGO_COLORS["ppo"], "-"),
}


def run_color(name: str) -> str | None:
    """The colour of a run of the race by its label, in English or translated (None for another run)."""
    return next((color for label, color in COLORS_BY_RUN.items() if name in (label, _(label))), None)


def run_style(name: str) -> tuple[str, str]:
    """(line style, marker) of a run of the race by its label, in English or translated (solid, circle otherwise)."""
    return next((style for label, style in STYLES_BY_RUN.items() if name in (label, _(label))), ("-", "o"))


def default_marker() -> str:
    """What a TrainingPanel appends to the default run's label, in the current language (' (default)')."""
    return _("{label} (default)").format(label="")


def plain_ticks(axis, subs=(1.0, 2.0, 5.0)) -> None:
    """Log-axis tick labels as plain numbers ('0.02', '10') at 1, 2 and 5 times each power of ten, so that even an
    axis that spans less than a decade has several labels."""
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def plot_race(fig, runs: dict[str, RunResult]) -> None:
    """2 x 2: accuracy and think-first share (rows) against RL step and against CPU seconds on a log axis (columns:
    GRPO-1's whole run costs a small fraction of PPO-8's, so a linear axis would squeeze it into its first tenth)."""
    prepare_figures()
    axes = fresh_axes(fig, 2, 2)
    for row, (key, title) in enumerate((("accuracy", _("accuracy")), ("cot_fraction", _("think-first share")))):
        for name, run in runs.items():
            color = run_color(name)
            for col, x in enumerate((np.arange(len(run.history)), clock(run, "cpu"))):
                ax = axes[row, col]
                ax.plot(x, run.curve(key), color=color, alpha=0.2, lw=0.8)
                ax.plot(x, smooth(run.curve(key), SMOOTH), color=color, ls=run_style(name)[0], lw=1.8, label=name)
        for col, xlabel in enumerate((_("RL step"), _("CPU seconds (sampling + training)"))):
            axes[row, col].set_ylabel(title)
            axes[row, col].set_xlabel(xlabel)
            axes[row, col].set_ylim(0, 1)
            axes[row, col].grid(alpha=0.3)
        axes[row, 1].set_xscale("log")
        plain_ticks(axes[row, 1].xaxis, subs=(1.0,))
        axes[row, 1].yaxis.set_major_formatter(PercentFormatter(1.0))
        axes[row, 0].yaxis.set_major_formatter(PercentFormatter(1.0))
    for ax in axes.flat:  # the level the table's "steps to" columns read (accuracy and think-first share alike)
        ax.axhline(THINK_TARGET, color=EXACT, ls=":", lw=1, alpha=0.6)
    axes[0, 0].legend(loc="lower right", fontsize=8)
    axes[0, 1].legend(loc="lower right", fontsize=8)
    axes[0, 0].set_title(_("per RL step"))
    axes[0, 1].set_title(_("per CPU second (log scale)"))


def plot_value(fig, run: RunResult, first_steps: int = 30) -> None:
    """2 x 2: PPO's value prediction vs the mean reward (first steps); its loss next to p(1 - p); the squared
    advantage with three baselines (none, leave-one-out group mean, value model; log axis); and the value model's
    squared advantage divided by the leave-one-out one (below 1: the value model is the better baseline), with the
    level GRPO's own group mean sits at by construction, ((G - 1) / G)^2, and the level of a value model that knew each
    prompt's p exactly, (G - 1) / G."""
    prepare_figures()
    (ax1, ax2), (ax3, ax4) = fresh_axes(fig, 2, 2)
    ppo = COLORS_BY_RUN["PPO-8"]
    steps = np.arange(len(run.history))
    early = steps[:first_steps]
    ax1.plot(
        early,
        run.curve("value_mean")[:first_steps],
        "o-",
        ms=3,
        color=ppo,
        lw=1.8,
        label=_("value at the 1st answer token"),
    )
    ax1.plot(
        early, run.curve("reward")[:first_steps], "s:", ms=3, color=EXACT, lw=1, label=_("mean reward of the batch")
    )
    ax1.set_title(_("value prediction, first {n} steps").format(n=len(early)))
    ax1.set_ylabel(_("reward scale (0 wrong, 1 right)"))
    ax1.set_ylim(-0.05, 1)
    ax1.legend(fontsize=7, loc="lower right")

    reward = run.curve("reward")
    ax2.plot(steps, run.curve("value_loss"), color=ppo, lw=0.8, alpha=0.3)
    ax2.plot(steps, smooth(run.curve("value_loss"), SMOOTH), color=ppo, lw=1.6, label=_("value loss"))
    ax2.plot(
        steps,
        smooth(reward * (1 - reward), SMOOTH),
        color=EXACT,
        ls=":",
        lw=1.4,
        label=_("p(1 - p), p = the batch's mean reward"),
    )
    ax2.set_yscale("log")
    plain_ticks(ax2.yaxis)
    smoothed = smooth(run.curve("value_loss"), SMOOTH)
    if np.isfinite(smoothed).any() and np.nanmin(smoothed) > 0:  # the smoothed curve decides the range, not one dip
        ax2.set_ylim(np.nanmin(smoothed) / 2, np.nanmax(smoothed) * 1.5)
    ax2.set_title(_("value loss (mean over the updates), log scale"))
    ax2.set_ylabel(_("squared error"))
    ax2.legend(fontsize=7, loc="upper right")

    g = run.config.group_size
    others = _("mean of the other {n} answers (RLOO)").format(n=g - 1)
    for key, label in (
        ("adv_sq_none", _("no baseline")),
        ("adv_sq_loo", others),
        ("adv_sq_value", _("value model (PPO)")),
    ):
        color, ls = BASELINE_STYLES[key]
        ax3.plot(steps, smooth(run.curve(key), SMOOTH), color=color, ls=ls, lw=1.8, label=label)
    ax3.set_yscale("log")
    plain_ticks(ax3.yaxis)
    ax3.set_title(_("mean squared advantage, log scale"))
    ax3.set_ylabel(_("advantage$^2$ per answer token"))
    ax3.legend(fontsize=7, loc="center right")

    value, loo = smooth(run.curve("adv_sq_value"), SMOOTH), smooth(run.curve("adv_sq_loo"), SMOOTH)  # [steps] each
    ratio = np.divide(value, loo, out=np.full_like(value, np.nan), where=loo > 0)  # [steps]; undefined where loo = 0
    ax4.plot(steps, ratio, color=ppo, lw=1.6, label=_("value model (PPO)"))
    color, ls = BASELINE_STYLES["adv_sq_loo"]
    ax4.axhline(1.0, color=color, lw=1.4, ls=ls, label=_("leave-one-out mean (RLOO)"))
    ax4.axhline(
        (g - 1) / g,
        color=EXACT,
        lw=1.2,
        ls="-.",
        label=_("a value model that knew each prompt's p: {others}/{g}").format(others=g - 1, g=g),
    )
    ax4.set_title(_("squared advantage: value model / leave-one-out"))
    ax4.set_ylabel(_("ratio (below 1: smaller than leave-one-out)"))
    later = ratio[1:] if len(ratio) > 1 else ratio  # step 0's value model has not been trained yet
    later = later[np.isfinite(later)]
    low, high = min([(g - 1) / g, *later]), max([1.0, *later])
    room = 0.6 * (high - low + 0.15)  # above the data: the legend's three lines never cover the curve
    ax4.set_ylim(low - 0.05, high + 0.1 + room)  # zoomed on the levels and the curve after step 0
    ax4.legend(fontsize=7, loc="upper right")
    for ax in (ax1, ax2, ax3, ax4):
        ax.set_xlabel(_("RL step"))
        ax.grid(alpha=0.3)
    plain_math_labels(fig)  # Chinese labels with mathtext as plain text (math fonts have no Chinese glyphs)


def plot_clipping(fig, runs: dict[str, RunResult]) -> None:
    """1 x 2: clipped share (%) by update index (mean over steps) and against step, for multi-update runs."""
    prepare_figures()
    ax1, ax2 = fresh_axes(fig, 1, 2)
    for name, run in runs.items():
        if run.config.epochs < 2:
            continue
        color, (ls, marker) = run_color(name), run_style(name)
        updates = np.arange(1, run.config.epochs + 1)
        ax1.plot(
            updates,
            mean_clip_per_update(run),
            marker=marker,
            ls=ls,
            color=color,
            label=_("{name}: clipped (gradient 0)").format(name=name),
        )
        ax1.plot(
            updates,
            mean_clip_per_update(run, "ratio_outside_per_update"),
            marker=marker,
            ls=":",
            mfc="none",
            color=color,
            alpha=0.7,
            label=_("{name}: ratio outside [1 ± clip_eps]").format(name=name),
        )
        ax2.plot(run.curve("clip_fraction"), color=color, lw=0.8, alpha=0.25)
        ax2.plot(
            smooth(run.curve("clip_fraction"), SMOOTH),
            color=color,
            ls=ls,
            lw=1.6,
            label=_("{name} (trailing average)").format(name=name),
        )
    ax1.set_xlabel(_("update on the same batch"))
    ax1.set_ylabel(_("share of answer tokens"))
    ax1.set_title(_("per update (mean over steps)"))
    ax1.legend(fontsize=7)
    ax2.set_xlabel(_("RL step"))
    ax2.set_ylabel(_("clipped share of answer tokens"))
    ax2.set_title(_("clipped share, mean of updates 2-8 (faint: each step)"))
    ax2.legend(fontsize=8)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))


def plot_no_clip(fig, runs: dict[str, RunResult]) -> None:
    """1 x 3: think-first share and accuracy against step, and mean |log ratio| by update, for clipped vs not (the
    first run in GRPO-8's colour, solid, wide and faint; the second dotted on top, so both show where they overlap)."""
    prepare_figures()
    ax1, ax2, ax3 = fresh_axes(fig, 1, 3)
    styles = (  # (colour, line style, width, alpha, zorder): the solid one wide and faint, the dotted one on top
        (COLORS_BY_RUN["GRPO-8"], "-", 3.6, 0.45, 2),
        (NO_CLIP_COLOR, ":", 2.0, 1.0, 3),
    )
    for (name, run), (color, ls, lw, alpha, zorder) in zip(runs.items(), styles):
        for ax, key in ((ax1, "cot_fraction"), (ax2, "accuracy")):
            ax.plot(smooth(run.curve(key), SMOOTH), color=color, ls=ls, lw=lw, alpha=alpha, label=name, zorder=zorder)
        updates = np.arange(1, run.config.epochs + 1)
        ax3.plot(
            updates,
            mean_clip_per_update(run, "abs_log_ratio_per_update"),
            "o",
            color=color,
            ls=ls,
            lw=min(lw, 2.4),
            label=name,
        )
    ax1.set_title(_("think-first share"))
    ax2.set_title(_("accuracy"))
    ax3.set_title(_("mean |log ratio| (mean over steps)"))
    ax1.set_ylabel(_("share of answers that think first"))
    ax2.set_ylabel(_("share of answers right"))
    ax3.set_ylabel(_("mean |log ρ| per answer token"))
    for ax in (ax1, ax2):
        ax.set_xlabel(_("RL step"))
        ax.set_ylim(0, 1)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax3.set_xlabel(_("update on the same batch"))
    ax1.legend(fontsize=7, loc="lower right")
    ax3.legend(fontsize=7, loc="upper left")
    for ax in (ax1, ax2, ax3):
        ax.grid(alpha=0.3)


PANEL_DEFAULTS = {"algo": "grpo", "lr": 1e-4, "clip_eps": 0.2, "updates": 8}


PANEL_LRS = (1e-4, 3e-4, 1e-3)
PANEL_FIRST_KNOB = 2  # knob colours 0 and 1 are the race's GRPO-8 and GRPO-8 without clipping


def values_from_key(key: str) -> dict:
    """Inverse of rlvr.widgets.config_key for the panel's controls ('algo=grpo,clip_eps=0.2,lr=0.0001,updates=8')."""
    values = dict(part.split("=", 1) for part in key.split(","))
    return {
        "algo": values["algo"],
        "lr": float(values["lr"]),
        "clip_eps": float(values["clip_eps"]),
        "updates": int(values["updates"]),
    }


def plot_panel(fig, results: dict, live=None) -> None:
    """1 x 3 against RL step: think-first share, accuracy, clipped share. The default run (GRPO-8) is black, the
    palette's colour of the run others are compared with; each other run takes the next one-knob colour (after the two
    the race's GRPO-8 runs use), the run in progress dotted."""
    prepare_figures()
    axes = fresh_axes(fig, 1, 3)
    keys = (
        ("cot_fraction", _("think-first share")),
        ("accuracy", _("accuracy")),
        ("clip_fraction", _("clipped share")),
    )
    curves, others = [], 0
    for label, run in results.items():
        if label.endswith(default_marker()):
            curves.append((label, run.history, "-", EXACT))
        else:
            curves.append((label, run.history, "-", knob_color(PANEL_FIRST_KNOB + others)))
            others += 1
    if live is not None:
        curves.append((_("running..."), live, ":", knob_color(PANEL_FIRST_KNOB + others)))
    for label, history, style, color in curves:
        for ax, (key, _title) in zip(axes, keys):
            y = history_curve(history, key)
            ax.plot(smooth(y, SMOOTH), color=color, ls=style, lw=1.6, label=label)
    for ax, (_key, title), ylabel in zip(
        axes, keys, (_("share of answers"), _("share of answers right"), _("share of answer tokens"))
    ):
        ax.set_title(title)
        ax.set_xlabel(_("RL step"))
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylim(0, 1)
    axes[1].set_ylim(0, 1)
    axes[2].set_ylim(bottom=0)
    for ax, decimals in zip(axes, (0, 0, 1)):
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=decimals))
    axes[1].legend(fontsize=7, loc="best")


def panel_label(values: dict) -> str:
    """Short legend label of a panel setting, e.g. 'GRPO-8, lr 0.0001, clip_eps 0.2'."""
    return _("{algo}-{updates}, lr {lr}, clip_eps {clip_eps}").format(
        algo=values["algo"].upper(),
        updates=values["updates"],
        lr=f"{values['lr']:g}",
        clip_eps=f"{values['clip_eps']:g}",
    )


def epsilon_panel(default_result: RunResult | None = None, steps: int | None = None, seed: int = 0) -> TrainingPanel:
    """Run-button panel: algorithm (toggle buttons), learning rate, clip_eps (0.05-0.5) and updates per batch (1-8),
    each run overlaid on the default (GRPO-8, lr 1e-4, clip_eps 0.2); results cached per configuration on disk."""

    def run(algo, lr, clip_eps, updates, on_step=None):
        return race_run(panel_config(algo, lr, clip_eps, updates, steps, seed), on_step=on_step, progress=False)

    def load(key):
        return stored(panel_config(**values_from_key(key), steps=steps, seed=seed))

    controls = {
        "algo": toggle_buttons("algo", [("GRPO", "grpo"), ("PPO", "ppo")], "grpo", description=_("algorithm")),
        "lr": choice_slider(PANEL_LRS, 1e-4, description=_("learning rate"), continuous_update=False),
        "clip_eps": float_slider("clip_eps", 0.05, 0.5, 0.05, 0.2, description=_("clip_eps"), continuous_update=False),
        "updates": int_slider("updates", 1, 8, 1, 8, description=_("updates per batch"), continuous_update=False),
    }
    return TrainingPanel(
        run,
        plot_panel,
        controls,
        defaults=PANEL_DEFAULTS,
        default_result=default_result,
        label=panel_label,
        figsize=(10.5, 3.3),
        disk_cache=True,
        load=load,
        save=lambda _key, _result: None,
        title=_("PPO / GRPO: clip_eps and updates per batch"),
    )


def train_runs(configs: dict) -> dict:
    """The race's runs (label -> RLConfig), trained or loaded with their diagnostics, one line per run as they go."""
    return widgets.train_runs(configs, race_run)


def start_runs(configs: dict) -> None:
    """Start the race's runs (label -> RLConfig) that the cache does not hold in the background, at the lowest
    priority; `train_runs` of the same runs waits for them."""
    widgets.start_runs(configs, race_run)
