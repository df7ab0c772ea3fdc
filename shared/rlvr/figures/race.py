"""Notebook 04's figures and panel: the race per step and per CPU second, the value model, clipping, the run without
a clip, and the epsilon / updates panel (the computation is in `rlvr.experiments.race`)."""
from __future__ import annotations

import numpy as np

from rlvr.train import history_curve
from rlvr.experiments.race import (
    THINK_TARGET,
    RaceRun,
    cached_run,
    mean_clip_per_update,
    panel_config,
    race_run,
    smooth,
)
from rlvr.widgets import TrainingPanel, choice_slider, float_slider, fresh_axes, int_slider

COLORS = {"PPO-8": "#d62728", "GRPO-1": "#1f77b4", "GRPO-8": "#2ca02c"}


def plot_race(fig, runs: dict[str, RaceRun]) -> None:
    """2 x 2: accuracy and think-first share (rows) against RL step and against CPU seconds (columns)."""
    axes = fresh_axes(fig, 2, 2)
    for row, (key, title) in enumerate((("accuracy", "accuracy"), ("cot_fraction", "think-first share"))):
        for name, run in runs.items():
            color = COLORS.get(name)
            for col, x in enumerate((np.arange(len(run.history)), run.clock("cpu"))):
                ax = axes[row, col]
                ax.plot(x, run.curve(key), color=color, alpha=0.2, lw=0.8)
                ax.plot(x, smooth(run.curve(key)), color=color, lw=1.8, label=name)
        for col, xlabel in enumerate(("RL step", "CPU seconds (sampling + training)")):
            axes[row, col].set_ylabel(title)
            axes[row, col].set_xlabel(xlabel)
            axes[row, col].set_ylim(0, 1)
            axes[row, col].grid(alpha=0.3)
    axes[1, 0].axhline(THINK_TARGET, color="grey", ls=":", lw=1)
    axes[1, 1].axhline(THINK_TARGET, color="grey", ls=":", lw=1)
    axes[0, 0].legend(loc="lower right", fontsize=8)
    axes[0, 0].set_title("per RL step")
    axes[0, 1].set_title("per CPU second")


def plot_value(fig, run: RaceRun, first_steps: int = 30) -> None:
    """1 x 3: PPO's value prediction vs the mean reward (first steps), its loss, and the squared advantage with
    three baselines (none, leave-one-out group mean, value model)."""
    ax1, ax2, ax3 = fresh_axes(fig, 1, 3)
    steps = np.arange(len(run.history))
    early = steps[:first_steps]
    ax1.plot(early, run.curve("value_mean")[:first_steps], "o-", ms=3, color=COLORS["PPO-8"], lw=1.8,
             label="value at the 1st answer token")
    ax1.plot(early, run.curve("reward")[:first_steps], "k--", lw=1, label="mean reward of the batch")
    ax1.set_title(f"value prediction, first {len(early)} steps")
    ax1.set_xlabel("RL step")
    ax1.set_ylim(-0.05, 1)
    ax1.legend(fontsize=7, loc="lower right")
    ax2.semilogy(steps, run.curve("value_loss"), color=COLORS["PPO-8"], lw=1.2)
    ax2.set_title("value loss (mean over the updates)")
    ax2.set_xlabel("RL step")
    others = f"mean of the other {run.config.group_size - 1} answers (RLOO)"
    for key, label, color in (("adv_sq_none", "no baseline", "grey"), ("adv_sq_loo", others, "#1f77b4"),
                              ("adv_sq_value", "value model (PPO)", COLORS["PPO-8"])):
        ax3.plot(steps, smooth(run.curve(key)), color=color, lw=1.6, label=label)
    ax3.set_title("mean squared advantage")
    ax3.set_xlabel("RL step")
    ax3.set_ylim(bottom=0)
    ax3.legend(fontsize=7)
    for ax in (ax1, ax2, ax3):
        ax.grid(alpha=0.3)


def plot_clipping(fig, runs: dict[str, RaceRun]) -> None:
    """1 x 2: clip fraction by update index (mean over steps) and clip fraction against step, for multi-update runs."""
    ax1, ax2 = fresh_axes(fig, 1, 2)
    for name, run in runs.items():
        if run.config.epochs < 2:
            continue
        color = COLORS.get(name)
        updates = np.arange(1, run.config.epochs + 1)
        ax1.plot(updates, mean_clip_per_update(run), "o-", color=color, label=f"{name}: clipped (gradient 0)")
        ax1.plot(updates, mean_clip_per_update(run, "ratio_outside_per_update"), "s--", color=color, alpha=0.6,
                 label=f"{name}: ratio outside band")
        ax2.plot(smooth(run.curve("clip_fraction")), color=color, lw=1.6, label=name)
    ax1.set_xlabel("update on the same batch")
    ax1.set_ylabel("share of answer tokens")
    ax1.set_title("per update (mean over steps)")
    ax1.legend(fontsize=7)
    ax2.set_xlabel("RL step")
    ax2.set_title("clipped share, mean of updates 2-8")
    ax2.legend(fontsize=8)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)


def plot_no_clip(fig, runs: dict[str, RaceRun]) -> None:
    """1 x 3: think-first share and accuracy against step, and mean |log ratio| by update, for clipped vs not."""
    ax1, ax2, ax3 = fresh_axes(fig, 1, 3)
    for (name, run), color in zip(runs.items(), ("#2ca02c", "#9467bd", "#8c564b")):
        ax1.plot(smooth(run.curve("cot_fraction")), color=color, lw=1.6, label=name)
        ax2.plot(smooth(run.curve("accuracy")), color=color, lw=1.6, label=name)
        updates = np.arange(1, run.config.epochs + 1)
        ax3.plot(updates, mean_clip_per_update(run, "abs_log_ratio_per_update"), "o-", color=color, label=name)
    ax1.set_title("think-first share")
    ax2.set_title("accuracy")
    ax3.set_title("mean |log ratio| (mean over steps)")
    for ax in (ax1, ax2):
        ax.set_xlabel("RL step")
        ax.set_ylim(0, 1)
    ax3.set_xlabel("update on the same batch")
    ax1.legend(fontsize=7, loc="lower right")
    for ax in (ax1, ax2, ax3):
        ax.grid(alpha=0.3)


PANEL_DEFAULTS = {"algo": "grpo", "lr": 1e-4, "epsilon": 0.2, "updates": 8}


PANEL_LRS = (1e-4, 3e-4, 1e-3)


def values_from_key(key: str) -> dict:
    """Inverse of rlvr.widgets.config_key for the panel's controls ('algo=grpo,epsilon=0.2,lr=0.0001,updates=8')."""
    values = dict(part.split("=", 1) for part in key.split(","))
    return {"algo": values["algo"], "lr": float(values["lr"]), "epsilon": float(values["epsilon"]),
            "updates": int(values["updates"])}


def plot_panel(fig, results: dict, live=None) -> None:
    """1 x 3 against RL step: think-first share, accuracy, clipped share (default run grey, others coloured)."""
    axes = fresh_axes(fig, 1, 3)
    keys = (("cot_fraction", "think-first share"), ("accuracy", "accuracy"), ("clip_fraction", "clipped share"))
    curves = [(label, run.history, None) for label, run in results.items()]
    if live is not None:
        curves.append(("running...", live, ":"))
    for index, (label, history, style) in enumerate(curves):
        color = "#555555" if "(default)" in label else f"C{index % 10}"
        for ax, (key, _title) in zip(axes, keys):
            y = history_curve(history, key)
            ax.plot(smooth(y), color=color, ls=style or "-", lw=1.6, label=label)
    for ax, (_key, title) in zip(axes, keys):
        ax.set_title(title)
        ax.set_xlabel("RL step")
        ax.grid(alpha=0.3)
    axes[0].set_ylim(0, 1)
    axes[1].set_ylim(0, 1)
    axes[2].set_ylim(bottom=0)
    axes[1].legend(fontsize=7, loc="best")


def panel_label(values: dict) -> str:
    """Short legend label of a panel setting, e.g. 'GRPO-8, lr 0.0001, eps 0.2'."""
    return f"{values['algo'].upper()}-{values['updates']}, lr {values['lr']:g}, eps {values['epsilon']:g}"


def epsilon_panel(default_result: RaceRun | None = None, steps: int | None = None, seed: int = 0) -> TrainingPanel:
    """Run-button panel: algorithm, learning rate, clip epsilon (0.05-0.5) and updates per batch (1-8), each run
    overlaid on the default (GRPO-8, lr 1e-4, eps 0.2); results cached per configuration on disk."""
    def run(algo, lr, epsilon, updates, on_step=None):
        return race_run(panel_config(algo, lr, epsilon, updates, steps, seed), on_step=on_step, progress=False)

    def load(key):
        return cached_run(panel_config(**values_from_key(key), steps=steps, seed=seed))

    controls = {
        "algo": choice_slider(["grpo", "ppo"], "grpo", description="algorithm", continuous_update=False),
        "lr": choice_slider(PANEL_LRS, 1e-4, description="learning rate", continuous_update=False),
        "epsilon": float_slider("epsilon", 0.05, 0.5, 0.05, 0.2, continuous_update=False),
        "updates": int_slider("updates", 1, 8, 1, 8, description="updates per batch", continuous_update=False),
    }
    return TrainingPanel(run, plot_panel, controls, defaults=PANEL_DEFAULTS, default_result=default_result,
                         label=panel_label, figsize=(10.5, 3.3), disk_cache=True, load=load,
                         save=lambda _key, _result: None, title="PPO / GRPO: clip epsilon and updates per batch")
