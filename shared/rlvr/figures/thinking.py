"""Notebook 03's figures and panels: GRPO's training curves (also live), pass@k, the thinking budget, the warm-up
panel, the knob panels of Exercise 7 and their table (the computation is in `rlvr.experiments.thinking`).

Colours come from `rlvr.figures.palette`: an algorithm's run in its colour, the default run other runs are compared
with in black, one-knob variations in KNOB_COLORS, the warm-up in brown, the teacher as an olive dashed line (for
think-first accuracy: its final digit right, `teacher_answer_accuracy`), think-first and direct answers in
ANSWER_COLORS (teal, coral), right and wrong never by colour.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib import patheffects

from rlvr.config import size
from rlvr.experiments.common import smooth
from rlvr.experiments.thinking import (
    KNOBS,
    TRAINING_PANELS,
    SFTProgress,
    answers_per_step,
    histories_of,
    knob_label,
    knob_of,
    panel_run,
    panel_run_on_disk,
    rl_config,
    smoothed_curve,
    summary_row,
    teacher_answer_accuracy,
    warmup_metrics,
    warmup_on_disk,
)
from rlvr.i18n import N_, _, prepare_figures
from rlvr.signals import KL_EVERY
from rlvr.narration.thinking import summary_headers
from rlvr.figures.palette import ALGO_COLORS, ANSWER_COLORS, COLORS, algo_color, knob_color
from rlvr.task import DEFAULT_TEACHER_ERROR_RATE, N_DIGITS
from rlvr.runs import RunResult, history_curve
from rlvr.train import RLConfig
from rlvr.widgets import LivePlot, TrainingPanel, choice_slider, float_slider, fresh_axes, is_due, live_plot

THINK_COLOR, DIRECT_COLOR = ANSWER_COLORS["think"], ANSWER_COLORS["direct"]  # the two answer formats (palette)
CHAIN_COLOR = ANSWER_COLORS["chain"]  # "every chain step right", dashed over the think-first accuracy
DEFAULT_COLOR = COLORS["exact"]  # the default run other runs are drawn against (black)
# the teacher's line, drawn over the curves (at 1.0 a curve would hide it)
TEACHER_STYLE = {"color": COLORS["teacher"], "ls": "--", "lw": 1.2, "zorder": 3}
GUESS_STYLE = {"color": COLORS["exact"], "ls": ":", "lw": 1}  # guessing the last digit: exactly 0.1
MIN_DIRECT_SHARE = 0.05  # the direct-answer accuracy curve stops where fewer than 5% of answers are direct
PACKAGE_STEP, YOUR_STEP = N_("the package's step"), N_("your step")  # labels, translated where drawn
RUN_WIDTH = 1.7  # a run's smoothed curve
DEFAULT_WIDTH = 2 * RUN_WIDTH  # the default run's line, so that an identical run drawn over it leaves it seen


def default_mark() -> str:
    """The word that marks the default run in a label, in the current language ('default'): what a TrainingPanel
    appends to its label (' (default)') without the brackets."""
    return _("{label} (default)").format(label="").strip(" ()（）")


def is_default(label: str) -> bool:
    """True for the label of the default run that other runs are compared with (as either language writes it), or
    of the package's step that yours is drawn over ("the package's step, β = 0.04" too)."""
    return "default" in label or default_mark() in label or label.startswith((PACKAGE_STEP, _(PACKAGE_STEP)))


def run_colors(labels) -> dict[str, str]:
    """label -> colour: an algorithm in its colour, the default run black, your step GRPO's blue, any other run
    the next one-knob colour."""
    colors, others = {}, 0
    for label in labels:
        if is_default(label):
            colors[label] = DEFAULT_COLOR
        elif label.startswith((YOUR_STEP, _(YOUR_STEP))):  # "your step" and "your step, β = 0.04"
            colors[label] = ALGO_COLORS["grpo"]
        elif algo_color(label) is not None:
            colors[label] = algo_color(label)
        else:
            colors[label] = knob_color(others)
            others += 1
    return colors


def teacher_line(ax, error_rate: float = DEFAULT_TEACHER_ERROR_RATE, ls: str = "--") -> None:
    """The teacher's final-digit accuracy (what think-first accuracy measures), an olive dashed line outlined in white
    (at 1.0 it lies on the curves that reach 1.0)."""
    value = teacher_answer_accuracy(error_rate)
    label = _("teacher (error {rate}): final digit right {value}").format(rate=f"{error_rate:g}", value=f"{value:.3f}")
    line = ax.axhline(value, **{**TEACHER_STYLE, "ls": ls}, label=label)
    line.set_path_effects(
        [patheffects.Stroke(linewidth=TEACHER_STYLE["lw"] + 2, foreground="white"), patheffects.Normal()]
    )


def _plot_metric(
    ax, history: list[dict], key: str, color, label: str, raw: bool = True, ls: str = "-", lw: float = RUN_WIDTH
) -> None:
    """Raw per-step values (faint) and their trailing moving average (bold, `lw` wide)."""
    y = history_curve(history, key)
    x = np.arange(len(y))  # steps count from 0, as in every notebook
    smoothed = smoothed_curve(history, key)
    if key == "direct_accuracy":  # late in training a step has only a handful of direct answers: hide the noise
        few = smooth([h.get("cot_fraction", np.nan) for h in history], 27) > 1 - MIN_DIRECT_SHARE
        smoothed = np.where(few, np.nan, smoothed)
        y = np.where(few, np.nan, y)  # the faint per-step values too (a step with one direct answer scores 0 or 1)
    if raw:
        ax.plot(x, y, color=color, lw=0.7, alpha=0.25)
    ax.plot(x, smoothed, color=color, lw=lw, ls=ls, label=label)


def _style_step_axis(ax, key: str) -> None:
    """Title, x label, grid and y range of one training-curve axis."""
    ax.set_title(_(TRAINING_PANELS[key]) if key in TRAINING_PANELS else key, fontsize=10)
    ax.set_xlabel(_("RL step"), fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    ax.set_ylim(*((0, 16) if key == "mean_length" else (-0.02, 1.02)))
    if key == "mean_length":
        ax.set_ylabel(_("tokens"), fontsize=9)
    elif key != "all_same_group_fraction":
        ax.set_ylabel(_("share of answers"), fontsize=9)
    else:
        ax.set_ylabel(_("share of groups"), fontsize=9)


def draw_training_curves(
    fig, runs, teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE, keys=tuple(TRAINING_PANELS), ncols: int = 3
) -> None:
    """Training curves against RL step, one axis per metric; a single run also splits length and think-first
    accuracy by what they are made of.

    Args:
        runs: a history (list of per-step dicts), a RunResult, or {label: history or RunResult}.
        teacher_error_rate: draws the teacher's final-digit accuracy on the think-first accuracy axis.
    """
    prepare_figures()
    histories = histories_of(runs)
    nrows = math.ceil(len(keys) / ncols)
    axes = np.atleast_1d(fresh_axes(fig, nrows, ncols)).ravel()
    single = len(histories) == 1
    colors = run_colors(histories)
    for ax, key in zip(axes, keys):
        for index, (label, history) in enumerate(histories.items()):
            color = colors[label]
            if key == "mean_length" and single:
                _plot_metric(ax, history, "mean_length", color, _("all answers"))
                _plot_metric(ax, history, "mean_length_think", THINK_COLOR, _("think-first"), raw=False)
                _plot_metric(ax, history, "mean_length_direct", DIRECT_COLOR, _("direct"), raw=False, ls="--")
            elif key == "cot_accuracy" and single:
                _plot_metric(ax, history, "cot_accuracy", THINK_COLOR, _("final answer right"))
                _plot_metric(ax, history, "chain_exact", CHAIN_COLOR, _("every chain step right"), raw=False, ls="--")
            else:
                direct = single and key == "direct_accuracy"
                shown = _("direct answers") if direct else label
                wide = DEFAULT_WIDTH if is_default(label) and not single else RUN_WIDTH
                ls = "--" if index >= 2 else "-"  # a third run dashed: curves that coincide stay visible
                _plot_metric(ax, history, key, DIRECT_COLOR if direct else color, shown, lw=wide, ls=ls)
        if key == "cot_accuracy":
            teacher_line(ax, teacher_error_rate)
        if key == "direct_accuracy":
            ax.axhline(0.1, **GUESS_STYLE, label=_("guessing: 0.1"))
        _style_step_axis(ax, key)
        if key in ("mean_length", "cot_accuracy", "direct_accuracy") or (not single and key == keys[0]):
            where = {"direct_accuracy": "upper right", "mean_length": "center right"}.get(key, "lower right")
            ax.legend(fontsize=7, loc=where)
    for ax in axes[len(keys) :]:
        ax.set_visible(False)


class FirstStepLivePlot:
    """A LivePlot that also draws at step 1, so a run shows progress from its first step (then every `every`)."""

    def __init__(self, plot: LivePlot):
        self.plot = plot

    def __call__(self, step: int, total: int, history=None) -> None:
        """Forward to the LivePlot, treating step 1 of a run that trains as due."""
        every = self.plot.every
        if step == 1 and total > 1 and not is_due(step, total, every):
            self.plot.every = 1  # this one call only
        try:
            self.plot(step, total, history)
        finally:
            self.plot.every = every


def live_curves(every: int | None = None, figsize=(11, 6)) -> FirstStepLivePlot:
    """An on_step callback that redraws the six training curves while a run trains (a cell output)."""
    return FirstStepLivePlot(
        live_plot(lambda fig, history: draw_training_curves(fig, {"GRPO": history}), every, figsize)
    )


def live_comparison(
    reference: RunResult,
    label: str | None = None,
    reference_label: str | None = None,
    every: int | None = None,
    figsize=(11, 3.4),
    keys=("accuracy", "cot_fraction", "all_same_group_fraction"),
) -> FirstStepLivePlot:
    """An on_step callback drawing a run as it trains over a finished reference run (the package's, same seed);
    the labels default to 'your step' and 'the package's step' in the current language."""
    label = _(YOUR_STEP) if label is None else label
    reference_label = _(PACKAGE_STEP) if reference_label is None else reference_label
    return FirstStepLivePlot(
        live_plot(
            lambda fig, history: draw_training_curves(
                fig, {reference_label: reference.history, label: history}, keys=keys, ncols=len(keys)
            ),
            every,
            figsize,
        )
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
    """(colour, line style) of a model's curve: the warm-up in brown, a GRPO policy in GRPO's blue (dashed when
    sampled at T = 1 next to a greedy one), anything else in the one-knob colours."""
    if label.startswith(("warm-up", _("warm-up model"))):  # the label as a notebook of either language writes it
        return COLORS["warmup"], "-"
    if "GRPO" in label:
        return ALGO_COLORS["grpo"], "--" if "T = 1" in label else "-"
    return knob_color(index), "-"


def draw_pass_at_k(fig, curves: dict[str, dict[int, float]]) -> None:
    """pass@k against k (log scale) for each model; the legend gives pass@1 and pass@16."""
    prepare_figures()
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
            lw=RUN_WIDTH,
            label=_("{label}: pass@{first_k} {first}, pass@{last_k} {last}").format(
                label=label, first_k=ks[0], first=f"{ys[0]:.0%}", last_k=ks[-1], last=f"{ys[-1]:.0%}"
            ),
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
    ax.set_xlabel(_("k (answers sampled per prompt, log scale)"))
    ax.set_ylabel(_("pass@k (share of held-out prompts)"))
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(_("pass@k, unbiased estimator from 16 answers per prompt at T = 1"), fontsize=10)


def draw_thinking_budget(fig, curves: dict[str, dict[int, float]]) -> None:
    """Accuracy against the thinking budget b (chain digits kept before the forced answer), chance at 0.1."""
    prepare_figures()
    ax = fresh_axes(fig)
    for index, (label, curve) in enumerate(curves.items()):
        bs = sorted(curve)
        color, ls = model_style(label, index)
        hollow = (
            {"marker": "s", "mfc": "none"} if ls == "--" else {"marker": "o"}
        )  # T = 1 next to greedy: not by dash alone
        ax.plot(bs, [curve[b] for b in bs], color=color, ls=ls, ms=4.5, lw=RUN_WIDTH, label=label, **hollow)
    ax.axhline(0.1, **GUESS_STYLE, label=_("guessing: 0.1"))
    ax.set_xticks(range(N_DIGITS + 1))
    ax.set_xlabel(_("thinking budget b (chain digits written before ']#' is forced)"))
    ax.set_ylabel(_("accuracy (share of held-out prompts)"))
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(_("Thinking budget: cut the chain after b digits, force the answer"), fontsize=10)


# ----------------------------------------------------------------------------------------------- warm-up panel
def _values_from_key(key: str) -> dict[str, float]:
    """Inverse of rlvr.widgets.config_key for numeric controls ('beta=0.04' -> {'beta': 0.04})."""
    return {name: float(value) for name, value in (part.split("=", 1) for part in key.split(","))}


def plot_teacher_panel(fig, results: dict, live=None) -> None:
    """Left: the warm-up loss; right: the held-out metrics of each warm-up, with its teacher's final-digit accuracy."""
    prepare_figures()
    ax_loss, ax_bar = fresh_axes(fig, 1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
    colors = run_colors(results)
    for label, report in results.items():
        ax_loss.plot(smooth(report["losses"], 15), color=colors[label], lw=1.5, label=label)
    if live is not None:
        ax_loss.plot(smooth(live, 15), color=knob_color(len(results)), ls=":", lw=1.5, label=_("training..."))
    ax_loss.set_xlabel(_("SFT step"))
    ax_loss.set_ylabel(_("loss (nats per token)"))
    ax_loss.set_title(_("warm-up loss"), fontsize=10)
    ax_loss.grid(alpha=0.3)
    ax_loss.legend(fontsize=7)
    names = [  # (tick label, where, key): two lines each, the sampling then the metric
        ("T=1\n" + _("accuracy"), "temperature1", "accuracy"),
        ("T=1\n" + _("think share"), "temperature1", "cot_fraction"),
        ("T=1\n" + _("think acc."), "temperature1", "cot_accuracy"),
        ("T=1\n" + _("direct acc."), "temperature1", "direct_accuracy"),
        (_("greedy") + "\n" + _("think share"), "greedy", "cot_fraction"),
        (_("greedy") + "\n" + _("think acc."), "greedy", "cot_accuracy"),
        (_("greedy") + "\n" + _("accuracy"), "greedy", "accuracy"),
    ]
    width = 0.8 / max(1, len(results))
    for index, (label, report) in enumerate(results.items()):
        heights = [np.nan_to_num(report[where][key]) for _name, where, key in names]
        x = np.arange(len(names)) + (index - (len(results) - 1) / 2) * width
        ax_bar.bar(x, heights, width, color=colors[label], label=label)
        teacher = teacher_answer_accuracy(report["teacher_error_rate"])  # what "think acc." measures: the final digit
        ax_bar.plot([x[2] - width / 2, x[2] + width / 2], [teacher, teacher], color=COLORS["teacher"], lw=2.5)
    ax_bar.plot([], [], color=COLORS["teacher"], lw=2.5, label=_("its teacher: final digit right"))
    ax_bar.set_xticks(np.arange(len(names)), [n for n, _w, _k in names], fontsize=7)
    ax_bar.set_ylim(0, 1.3)
    ax_bar.set_yticks(np.linspace(0, 1, 6))
    ax_bar.set_ylabel(_("share of held-out answers"), fontsize=8)
    ax_bar.set_title(_("held-out metrics of the warm-up"), fontsize=10)
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

    controls = {"teacher_error_rate": knob_control("teacher_error_rate", _("teacher error rate"))}
    return TrainingPanel(
        train,
        plot_teacher_panel,
        controls,
        default_result=default_result,
        label=lambda v: _("teacher error {value}").format(value=f"{v['teacher_error_rate']:.2f}"),
        figsize=(11, 3.6),
        disk_cache=True,
        load=load,
        save=lambda _key, _result: None,
        update_every=max(1, sft_steps // 20),
        title=_("Warm-up for another teacher error rate ({steps} SFT steps)").format(steps=sft_steps),
    )


# ----------------------------------------------------------------------------------------------- knob panels
KNOB_AXES = {  # a knob of experiments.thinking.KNOBS -> (slider description, the axes it draws: history keys)
    "group_size": (N_("group size G"), ("accuracy", "cot_fraction", "all_same_group_fraction", "answers")),
    "beta": (N_("beta (KL weight)"), ("accuracy", "cot_fraction", "kl_to_ref")),
    "teacher_error_rate": (N_("warm-up: teacher error rate"), ("accuracy", "cot_fraction", "cot_accuracy")),
}  # the descriptions and AXIS_TITLES are translated where shown
AXIS_TITLES = {
    **TRAINING_PANELS,
    "kl_to_ref": N_("KL to the warm-up, per answer"),
    "answers": N_("accuracy against answers sampled"),
}


def knob_control(knob: str, description: str | None = None):
    """The slider of one knob over its range in experiments.thinking.KNOBS, at RLConfig's default."""
    spec, default = KNOBS[knob], getattr(RLConfig(), knob)
    description = description or _(KNOB_AXES[knob][0])
    if spec.choices:
        return choice_slider(spec.choices, default, description=description, continuous_update=False)
    return float_slider(knob, 0.0, spec.high, spec.step, default, description=description, continuous_update=False)


def _draw_kl(ax, history: list[dict], result, color, ls: str, label: str) -> None:
    """KL to the warm-up as training measured it, read every KL_EVERY steps in every run of 3 such points or more (a
    run with a KL term measures it at every step, one without at every 10th) and averaged alike, so that no curve lags
    another; and, for a finished run, the same quantity on held-out prompts after training (a star)."""
    y = history_curve(history, "kl_to_ref")
    steps = np.flatnonzero(np.isfinite(y))
    on_grid = steps[steps % KL_EVERY == 0]
    steps = on_grid if on_grid.size >= 3 else steps  # a short run (a live one early on): every measured step
    if steps.size:
        ax.plot(steps + 1, smooth(y[steps], 3), color=color, lw=1.6, ls=ls, label=label)
    if result is not None and "kl_to_warmup" in result.final:
        ax.plot([len(history) - 1], [result.final["kl_to_warmup"]], "*", color=color, ms=9)


def _draw_against_answers(ax, history: list[dict], cfg: RLConfig | None, color, ls: str, label: str) -> None:
    """Smoothed accuracy against the answers sampled so far (thousands, log scale): the same compute on the x axis."""
    per_step = answers_per_step(cfg) if cfg is not None else answers_per_step(RLConfig())
    y = smoothed_curve(history, "accuracy")
    ax.plot(np.arange(1, len(y) + 1) * per_step / 1000, y, color=color, lw=1.6, ls=ls, label=label)


def plot_knob_panel(fig, results: dict, live=None, knob: str = "group_size") -> None:
    """The runs of one knob against RL step (the default run in black): accuracy, think-first share and the knob's
    own metric (all-equal groups and accuracy per answer sampled for G, the KL for beta, think-first accuracy
    against each teacher for the teacher)."""
    prepare_figures()
    _description, keys = KNOB_AXES[knob]
    ncols = 2 if len(keys) == 4 else 3
    axes = np.atleast_1d(fresh_axes(fig, math.ceil(len(keys) / ncols), ncols)).ravel()
    curves = [(label, r.history, r) for label, r in results.items()]
    if live is not None and isinstance(live, list):
        curves.append((_("training..."), live, None))
    colors = run_colors([label for label, _h, _r in curves])
    for label, history, result in curves:
        color, ls = colors[label], "-" if result is not None else ":"
        for ax, key in zip(axes, keys):
            if key == "kl_to_ref":
                _draw_kl(ax, history, result, color, ls, label)
            elif key == "answers":
                _draw_against_answers(ax, history, getattr(result, "config", None), color, ls, label)
            elif np.isfinite(history_curve(history, key)).any():
                y = smoothed_curve(history, key)
                ax.plot(np.arange(len(y)), y, color=color, lw=1.6, ls=ls, label=label)
    longest = max((len(history) for _label, history, _result in curves), default=1)
    for ax, key in zip(axes, keys):
        ax.set_title(_(AXIS_TITLES[key]), fontsize=10)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        if key == "answers":
            ax.set_xscale("log")
            ax.set_xlabel(_("answers sampled (thousands, log scale)"), fontsize=9)
            ax.set_ylabel(_("share of answers"), fontsize=9)
            ax.set_ylim(-0.02, 1.02)
            continue
        ax.set_xlabel(_("RL step"), fontsize=9)
        ax.set_xlim(0, longest * 1.05 + 2)  # room for the held-out star at the last step
        if key == "kl_to_ref":
            ax.set_ylim(bottom=0)
            ax.set_ylabel(_("nats per answer"), fontsize=9)
        else:
            ax.set_ylim(-0.02, 1.02)
            groups = key == "all_same_group_fraction"
            ax.set_ylabel(_("share of groups") if groups else _("share of answers"), fontsize=9)
    if knob == "beta":
        kl_axis = axes[list(keys).index("kl_to_ref")]
        kl_axis.plot([], [], "*", color=DEFAULT_COLOR, label=_("held-out, after training"))
        kl_axis.legend(fontsize=7, loc="lower right")
    if knob == "teacher_error_rate":
        think = axes[list(keys).index("cot_accuracy")]
        rates = sorted({r.config.teacher_error_rate for _l, _h, r in curves if r is not None}, reverse=True)
        for rate, ls in zip(rates, ("--", ":", "-.", (0, (5, 1)))):
            teacher_line(think, rate, ls)
        think.legend(fontsize=7, loc="lower right")
    axes[0].legend(fontsize=7, loc="lower right")


def knob_panel(
    knob: str,
    default_result: RunResult | None = None,
    steps: int | None = None,
    n_prompts: int | None = None,
    sft_steps: int | None = None,
    seed: int = 0,
    runs: dict | None = None,
) -> TrainingPanel:
    """Run-button panel for one GRPO knob: every run it holds overlaid on the default one (32 x 8, beta 0, teacher
    0.1). `runs` (label -> RunResult, e.g. Exercise 7's) are stored in it first; those of other knobs are skipped."""

    def train(on_step=None, **values):
        return panel_run(knob, values[knob], steps, n_prompts, sft_steps, on_step, seed)

    def load(key):
        value = _values_from_key(key)[knob]
        if not panel_run_on_disk(knob, value, steps, seed):
            raise KeyError(key)
        return panel_run(knob, value, steps, n_prompts, sft_steps, seed=seed)

    description, _keys = KNOB_AXES[knob]
    cfg = rl_config("grpo", steps, seed)
    panel = TrainingPanel(
        train,
        lambda fig, results, live: plot_knob_panel(fig, results, live, knob),
        {knob: knob_control(knob)},
        default_result=default_result,
        label=lambda v: knob_label(knob, v[knob]),
        figsize=(11, 6.2) if len(KNOB_AXES[knob][1]) == 4 else (11, 3.4),
        show_all=True,
        disk_cache=True,
        load=load,
        save=lambda _key, _result: None,
        title=_("GRPO, {knob} ({prompts} prompts per step, {steps} steps)").format(
            knob=_(description), prompts=cfg.prompts_per_step, steps=cfg.steps
        ),
    )
    stored = [
        (value, run) for run in (runs or {}).values() for k, value in [knob_of(run.config) or (None, None)] if k == knob
    ]
    for value, run in stored:
        panel.store({knob: value}, run)
    if stored:
        panel.show_current()
    return panel


def summary_table(runs: dict[str, RunResult]) -> _Markdown:
    """One line per run (label -> RunResult): held-out metrics, all-equal groups early and late, and when thinking
    passed 90% in steps and in answers sampled."""
    rows = [summary_row(label, run) for label, run in runs.items()]
    head = summary_headers()
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = []
        for key, value in row.items():
            if key == "run":
                cells.append(value)
            elif value is None:
                cells.append(_("not reached") if key.startswith("steps") else "—")
            elif isinstance(value, int):
                cells.append(f"{value:,}")
            elif "KL" in key:
                cells.append(f"{value:.2f}")
            else:
                cells.append("—" if not math.isfinite(value) else f"{value:.1%}")
        lines.append("| " + " | ".join(cells) + " |")
    return _Markdown("\n".join(lines))


def panels_summary(*panels: TrainingPanel) -> _Markdown:
    """Every finished run the given panels hold (the shared default once, first), as `summary_table`."""
    runs, seen = {}, set()
    default = _("default (G = 8, beta = 0, teacher error 0.1)")
    for panel in panels:
        for label, result in panel.results.items():
            if not isinstance(result, RunResult) or not result.final or result.config in seen:
                continue
            seen.add(result.config)
            runs[default if is_default(label) else label] = result
    ordered = dict(sorted(runs.items(), key=lambda item: item[0] != default))
    return summary_table(ordered)


class _Markdown:
    """Markdown text that displays as a table in Jupyter and as text elsewhere."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text
