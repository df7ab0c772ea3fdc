"""Notebook 03's figures and panels: GRPO's training curves (also live), pass@k, the thinking budget, the warm-up
panel and the knob panels (the computation is in `rlvr.experiments.thinking`)."""

from __future__ import annotations

import math

import numpy as np

from rlvr.config import size
from rlvr.experiments.thinking import (
    KNOBS,
    TRAINING_PANELS,
    PanelRun,
    SFTProgress,
    first_step_above,
    histories_of,
    knob_value,
    late_mean,
    metric_curve,
    panel_run,
    panel_run_on_disk,
    pct,
    rl_config,
    smooth,
    smoothed_curve,
    teacher_answer_accuracy,
    teacher_chain_accuracy,
    warmup_metrics,
    warmup_on_disk,
)
from rlvr.figures.palette import ALGO_COLORS, COLORS, algo_color
from rlvr.task import (
    DEFAULT_TEACHER_ERROR_RATE,
    N_DIGITS,
)
from rlvr.train import RLConfig, RunResult
from rlvr.widgets import LivePlot, TrainingPanel, choice_slider, float_slider, fresh_axes, live_plot

THINK_COLOR, DIRECT_COLOR = "#00796b", "#c2185b"  # the two answer formats: teal, magenta (no algorithm's colour)
CHAIN_COLOR = "#003d33"  # "every chain step right", dashed over the think-first accuracy (a darker teal)
FORMAT_COLORS = {"mean_length": "#333333", "mean_length_think": THINK_COLOR, "mean_length_direct": DIRECT_COLOR}
MIN_DIRECT_SHARE = 0.05  # the direct-answer accuracy curve stops where fewer than 5% of answers are direct


def _plot_metric(ax, history: list[dict], key: str, color, label: str, raw: bool = True, ls: str = "-") -> None:
    """Raw per-step values (faint) and their moving average (bold)."""
    y = metric_curve(history, key)
    x = np.arange(1, len(y) + 1)
    smoothed = smoothed_curve(history, key)
    if key == "direct_accuracy":  # late in training a step has only a handful of direct answers: hide the noise
        few = smooth([h.get("cot_fraction", np.nan) for h in history], 27) > 1 - MIN_DIRECT_SHARE
        smoothed = np.where(few, np.nan, smoothed)
    if raw:
        ax.plot(x, y, color=color, lw=0.7, alpha=0.25)
    ax.plot(x, smoothed, color=color, lw=1.7, ls=ls, label=label)


def draw_training_curves(
    fig, runs, teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE, keys=tuple(TRAINING_PANELS), ncols: int = 3
) -> None:
    """Training curves against RL step, one axis per metric; a single run also splits length by format.

    Args:
        runs: a history (list of per-step dicts), a RunResult, or {label: history or RunResult}.
        teacher_error_rate: draws the teacher's lines on the think-first accuracy axis.
    """
    histories = histories_of(runs)
    nrows = math.ceil(len(keys) / ncols)
    axes = np.atleast_1d(fresh_axes(fig, nrows, ncols)).ravel()
    single = len(histories) == 1
    for ax, key in zip(axes, keys):
        for index, (label, history) in enumerate(histories.items()):
            color = algo_color(label, f"C{index}")  # the module's colour for GRPO / Dr. GRPO / RFT
            if key == "mean_length" and single:
                for part, name in (
                    ("mean_length", "all answers"),
                    ("mean_length_think", "think-first"),
                    ("mean_length_direct", "direct"),
                ):
                    _plot_metric(ax, history, part, FORMAT_COLORS[part], name, raw=part == "mean_length")
            elif key == "cot_accuracy" and single:
                _plot_metric(ax, history, "cot_accuracy", THINK_COLOR, "final answer right")
                _plot_metric(ax, history, "chain_exact", CHAIN_COLOR, "every chain step right", raw=False, ls="--")
            else:
                direct = single and key == "direct_accuracy"
                _plot_metric(ax, history, key, DIRECT_COLOR if direct else color, "direct answers" if direct else label)
        if key == "cot_accuracy":
            ax.axhline(
                teacher_chain_accuracy(teacher_error_rate),
                color="#777777",
                ls="--",
                lw=1,
                label=f"teacher, every step right: {1 - teacher_error_rate:g}$^{{10}}$"
                f" = {teacher_chain_accuracy(teacher_error_rate):.2f}",
            )
        if key == "direct_accuracy":
            ax.axhline(0.1, color="#777777", ls=":", lw=1, label="guessing: 0.1")
        ax.set_title(TRAINING_PANELS.get(key, key), fontsize=10)
        ax.set_xlabel("RL step", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.set_ylim(*((0, 16) if key == "mean_length" else (-0.02, 1.02)))
        if key in ("mean_length", "cot_accuracy", "direct_accuracy") or (not single and key == keys[0]):
            where = {"direct_accuracy": "upper right", "mean_length": "center right"}.get(key, "lower right")
            ax.legend(fontsize=7, loc=where)
    for ax in axes[len(keys) :]:
        ax.set_visible(False)


def live_curves(every: int | None = None, figsize=(11, 6)) -> LivePlot:
    """An on_step callback that redraws the six training curves while a run trains (a cell output)."""
    return live_plot(lambda fig, history: draw_training_curves(fig, {"GRPO": history}), every, figsize)


def live_comparison(
    reference: RunResult, label: str = "your step", every: int | None = None, figsize=(11, 6)
) -> LivePlot:
    """An on_step callback drawing a run as it trains over a finished reference run (the package's, same seed)."""
    return live_plot(
        lambda fig, history: draw_training_curves(fig, {"the package's step": reference.history, label: history}),
        every,
        figsize,
    )


def draw_algo_comparison(fig, runs: dict, teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE) -> None:
    """GRPO, Dr. GRPO and RFT overlaid: accuracy, think-first share, think-first accuracy, all-equal groups."""
    draw_training_curves(
        fig,
        runs,
        teacher_error_rate,
        keys=("accuracy", "cot_fraction", "cot_accuracy", "all_same_group_fraction"),
        ncols=2,
    )


def model_style(label: str, index: int) -> tuple[str, str]:
    """(colour, line style) of a model's curve: the warm-up in its grey, a GRPO policy in GRPO's blue (dashed when
    sampled at T = 1 next to a greedy one), anything else in matplotlib's cycle."""
    if label.startswith("warm-up"):
        return COLORS["warmup"], "-"
    if "GRPO" in label:
        return ALGO_COLORS["grpo"], "--" if "T = 1" in label else "-"
    return f"C{index}", "-"


def draw_pass_at_k(fig, curves: dict[str, dict[int, float]]) -> None:
    """pass@k against k (log scale) for each model; the legend gives pass@1 and pass@16."""
    ax = fresh_axes(fig)
    for index, (label, curve) in enumerate(curves.items()):
        ks = np.array(sorted(curve))
        ys = np.array([curve[k] for k in ks])
        color, ls = model_style(label, index)
        ax.plot(
            ks,
            ys,
            "o",
            color=color,
            ls=ls,
            ms=3.5,
            lw=1.7,
            label=f"{label}: pass@{ks[0]} {ys[0]:.0%}, pass@{ks[-1]} {ys[-1]:.0%}",
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
    ax.set_xlabel("k (answers sampled per prompt)")
    ax.set_ylabel("pass@k (held-out prompts)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("pass@k, unbiased estimator from 16 answers per prompt at T = 1", fontsize=10)


def draw_thinking_budget(fig, curves: dict[str, dict[int, float]]) -> None:
    """Accuracy against the thinking budget b (chain digits kept before the forced answer), chance at 0.1."""
    ax = fresh_axes(fig)
    for index, (label, curve) in enumerate(curves.items()):
        bs = sorted(curve)
        color, ls = model_style(label, index)
        ax.plot(bs, [curve[b] for b in bs], "o", color=color, ls=ls, ms=4, lw=1.7, label=label)
    ax.axhline(0.1, color="#777777", ls=":", lw=1, label="guessing: 0.1")
    ax.set_xticks(range(N_DIGITS + 1))
    ax.set_xlabel("thinking budget b (chain digits written before ']#' is forced)")
    ax.set_ylabel("accuracy (held-out prompts)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("Thinking budget: cut the chain after b digits, force the answer", fontsize=10)


def _values_from_key(key: str) -> dict[str, float]:
    """Inverse of rlvr.widgets.config_key for numeric controls ('beta=0.04' -> {'beta': 0.04})."""
    return {name: float(value) for name, value in (part.split("=", 1) for part in key.split(","))}


def plot_teacher_panel(fig, results: dict, live=None) -> None:
    """Left: the warm-up loss; right: the held-out metrics of each warm-up, with the teacher's chain accuracy."""
    ax_loss, ax_bar = fresh_axes(fig, 1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
    for index, (label, report) in enumerate(results.items()):
        ax_loss.plot(smooth(report["losses"], 15), color=f"C{index}", lw=1.5, label=label)
    if live is not None:
        ax_loss.plot(smooth(live, 15), color="k", ls=":", lw=1.5, label="training...")
    ax_loss.set_xlabel("SFT step")
    ax_loss.set_ylabel("loss (nats per token)")
    ax_loss.set_title("warm-up loss", fontsize=10)
    ax_loss.grid(alpha=0.3)
    ax_loss.legend(fontsize=7)
    names = [
        ("T=1\naccuracy", "temperature1", "accuracy"),
        ("T=1\nthink share", "temperature1", "cot_fraction"),
        ("T=1\nthink acc.", "temperature1", "cot_accuracy"),
        ("T=1\ndirect acc.", "temperature1", "direct_accuracy"),
        ("greedy\nthink share", "greedy", "cot_fraction"),
        ("greedy\nthink acc.", "greedy", "cot_accuracy"),
        ("greedy\naccuracy", "greedy", "accuracy"),
    ]
    width = 0.8 / max(1, len(results))
    for index, (label, report) in enumerate(results.items()):
        heights = [np.nan_to_num(report[where][key]) for _name, where, key in names]
        x = np.arange(len(names)) + (index - (len(results) - 1) / 2) * width
        ax_bar.bar(x, heights, width, color=f"C{index}", label=label)
        teacher = teacher_answer_accuracy(report["teacher_error_rate"])  # what "think acc." measures: the final digit
        ax_bar.plot([x[2] - width / 2, x[2] + width / 2], [teacher, teacher], color="k", lw=2)
    ax_bar.plot([], [], color="k", lw=2, label="teacher: final digit right")
    ax_bar.set_xticks(np.arange(len(names)), [n for n, _w, _k in names], fontsize=7)
    ax_bar.set_ylim(0, 1.3)
    ax_bar.set_yticks(np.linspace(0, 1, 6))
    ax_bar.set_title("held-out metrics of the warm-up", fontsize=10)
    ax_bar.grid(alpha=0.3, axis="y")
    ax_bar.legend(fontsize=7, loc="upper left", ncol=3)


def teacher_panel(
    default_result: dict | None = None, sft_steps: int | None = None, n_prompts: int | None = None, seed: int = 0
) -> TrainingPanel:
    """Run-button panel: retrain (or load) the warm-up for a teacher error rate in [0, 0.5] and show its metrics."""
    sft_steps = size("panel_sft_steps") if sft_steps is None else sft_steps

    def train(teacher_error_rate, on_step=None):
        return warmup_metrics(teacher_error_rate, seed, n_prompts, sft_steps, on_step=SFTProgress(on_step))

    def load(key):
        rate = _values_from_key(key)["teacher_error_rate"]
        if not warmup_on_disk(rate, seed, sft_steps):
            raise KeyError(key)
        return warmup_metrics(rate, seed, n_prompts, sft_steps)

    controls = {"teacher_error_rate": knob_control("teacher_error_rate", "teacher error rate")}
    return TrainingPanel(
        train,
        plot_teacher_panel,
        controls,
        default_result=default_result,
        label=lambda v: f"teacher error {v['teacher_error_rate']:.2f}",
        figsize=(11, 3.6),
        disk_cache=True,
        load=load,
        save=lambda _key, _result: None,
        update_every=max(1, sft_steps // 20),
        title=f"Warm-up for another teacher error rate ({sft_steps} SFT steps)",
    )


KNOB_AXES = {  # a knob of experiments.thinking.KNOBS -> (description, third axis key, third axis title, run label)
    "group_size": ("group size G", "all_same_group_fraction", "groups with all-equal rewards", "G={}"),
    "beta": ("beta (KL weight)", "kl_to_ref", "KL to the warm-up per answer", "beta={}"),
    "teacher_error_rate": (
        "warm-up: teacher error rate",
        "cot_accuracy",
        "think-first accuracy",
        "teacher error {}",
    ),
}


def knob_control(knob: str, description: str | None = None):
    """The slider of one knob over its range in experiments.thinking.KNOBS, at RLConfig's default."""
    spec, default = KNOBS[knob], getattr(RLConfig(), knob)
    description = description or KNOB_AXES[knob][0]
    if spec.choices:
        return choice_slider(spec.choices, default, description=description, continuous_update=False)
    return float_slider(knob, 0.0, spec.high, spec.step, default, description=description, continuous_update=False)


def plot_knob_panel(fig, results: dict, live=None, knob: str = "group_size") -> None:
    """1 x 3 against RL step: accuracy, think-first share and the knob's own metric; default run in grey."""
    _description, third, third_title, _label = KNOB_AXES[knob]
    axes = fresh_axes(fig, 1, 3)
    keys = (("accuracy", "accuracy (all answers)"), ("cot_fraction", "think-first share"), (third, third_title))
    curves = [(label, r.history, r) for label, r in results.items()]
    if live is not None and isinstance(live, list):
        curves.append(("training...", live, None))
    for index, (label, history, result) in enumerate(curves):
        color = "#555555" if "(default)" in label else ("k" if result is None else f"C{index}")
        for ax, (key, _title) in zip(axes, keys):
            y = metric_curve(history, key)
            x = np.arange(1, len(y) + 1)
            if np.isfinite(y).any():
                ax.plot(
                    x, smoothed_curve(history, key), color=color, lw=1.6, ls=":" if result is None else "-", label=label
                )
            if key == "kl_to_ref" and result is not None and "kl_to_warmup" in result.final:
                ax.plot([len(history)], [result.final["kl_to_warmup"]], "*", color=color, ms=9)
    longest = max((len(history) for _label, history, _result in curves), default=1)
    for ax, (key, title) in zip(axes, keys):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("RL step", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.set_xlim(0, longest * 1.05 + 2)  # a beta = 0 run has only its final star on the KL axis; room for it
        if key != "kl_to_ref":
            ax.set_ylim(-0.02, 1.02)
    if knob == "beta":
        axes[2].set_ylim(bottom=0)
        axes[2].plot([], [], "*", color="#555555", label="held-out, after training")
    if knob == "teacher_error_rate":
        axes[2].plot([], [], color="#777777", ls="--", lw=1, label="teacher: chain all right")
        for index, (label, _history, result) in enumerate(curves):
            if result is not None:
                color = "#555555" if "(default)" in label else f"C{index}"
                axes[2].axhline(teacher_chain_accuracy(result.config.teacher_error_rate), color=color, ls="--", lw=1)
    axes[0].legend(fontsize=7, loc="lower right")
    if knob in ("beta", "teacher_error_rate"):
        axes[2].legend(fontsize=7, loc="lower right")


def knob_panel(
    knob: str,
    default_result: PanelRun | None = None,
    steps: int | None = None,
    n_prompts: int | None = None,
    sft_steps: int | None = None,
    seed: int = 0,
) -> TrainingPanel:
    """Run-button panel for one GRPO knob; each run is overlaid on the default run (32 x 8, beta 0, teacher 0.1)."""

    def train(on_step=None, **values):
        return panel_run(knob, values[knob], steps, n_prompts, sft_steps, on_step, seed)

    def load(key):
        value = _values_from_key(key)[knob]
        if not panel_run_on_disk(knob, value, steps, seed):
            raise KeyError(key)
        return panel_run(knob, value, steps, n_prompts, sft_steps, seed=seed)

    description, _third, _title, label = KNOB_AXES[knob]
    cfg = rl_config("grpo", steps, seed)
    return TrainingPanel(
        train,
        lambda fig, results, live: plot_knob_panel(fig, results, live, knob),
        {knob: knob_control(knob)},
        default_result=default_result,
        label=lambda v: label.format(knob_value(knob, v[knob])),
        figsize=(11, 3.4),
        disk_cache=True,
        load=load,
        save=lambda _key, _result: None,
        title=f"GRPO, {description} ({cfg.prompts_per_step} prompts per step, {cfg.steps} steps)",
    )


def runs_summary(*panels: TrainingPanel) -> _Markdown:
    """Every finished run the given panels hold, one line each: held-out metrics and late all-equal groups."""
    lines = [
        "| run | accuracy | think-first share | think-first accuracy | mean length | KL to warm-up "
        "| all-equal groups, last 20 steps | steps to 90% thinking |",
        "|---|---|---|---|---|---|---|---|",
    ]
    seen = set()
    for panel in panels:
        for label, result in panel.results.items():
            if not isinstance(result, PanelRun) or result.config in seen:
                continue  # the default run sits in every panel: list it once
            seen.add(result.config)
            if result.config == rl_config("grpo", result.config.steps, result.config.seed):
                label = "default (G=8, beta=0, teacher error 0.1)"
            f = result.final
            lines.append(
                f"| {label} | {f['accuracy']:.1%} | {f['cot_fraction']:.1%} | {pct(f['cot_accuracy'])} "
                f"| {f['mean_length']:.1f} | {f.get('kl_to_warmup', math.nan):.2f} "
                f"| {late_mean(result.history):.1%} | {first_step_above(result.history)} |"
            )
    return _Markdown("\n".join(lines))


EXERCISE7 = {"teacher_error_rate": (0.0,), "beta": (0.04,), "group_size": (2, 32)}  # the settings of 7(a)-(c)


def run_exercise7(*panels: TrainingPanel) -> None:
    """Press Run on every panel for each setting of Exercise 7 (a knob panel is recognised by its control)."""
    for panel in panels:
        (knob,) = panel.controls
        for value in EXERCISE7.get(knob, ()):
            panel.controls[knob].value = value
            panel.click_run()
        panel.controls[knob].value = panel.defaults[knob]


class _Markdown:
    """Markdown text that displays as a table in Jupyter and as text elsewhere."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text
