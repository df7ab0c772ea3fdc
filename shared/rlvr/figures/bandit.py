"""Notebook 01's figures and panels: the estimators of the policy gradient, the +5 shift, the group-std effect and
best-of-n (the computation is in `rlvr.experiments.bandit`)."""

from __future__ import annotations

import functools

import matplotlib
import numpy as np
from matplotlib import patheffects
from matplotlib.collections import LineCollection
from matplotlib.ticker import MaxNLocator

from rlvr.figures.palette import COLORS as PALETTE
from rlvr.experiments.bandit import (
    AMPLIFICATION,
    GROUP_SIZE,
    MAX_GROUP_SIZE,
    N_GROUPS,
    NUM_ANSWERS,
    P_GRID,
    SHIFT,
    SHIFT_GROUP_SIZE,
    SHIFT_LR,
    SHIFT_STEPS,
    BestOfN,
    EstimatorComparison,
    StdEffect,
    compare_estimators,
    ideal_amplification,
    ideal_step,
    label,
    p_for_amplification,
    reward_shift_text,
    run_segments,
    shift_experiment,
    std_effect,
)
from rlvr.i18n import _, language, prepare_figures

COLORS = {kind: PALETTE[kind] for kind in ("none", "mean", "rloo", "grpo", "exact")}  # the module's palette
NO_SIGNAL_COLOR = PALETTE["exact"]  # the share of groups without signal: a closed form in p and G, no estimator's
LEARNED_REWARD_COLOR = PALETTE["learned_reward"]  # best-of-n: picked by the learned reward (the truth: "exact")
OUTLINED = [patheffects.withStroke(linewidth=4.5, foreground="white")]  # a mean line standing out over its runs


SHIFT_STEP = 0.5  # the reward-shift sliders' step


def on_grid(value: float, step: float) -> float:
    """A slider value on its grid: a browser slider can send 8.9e-16 for 0 or 2.4999999999999996 for 2.5."""
    return round(round(float(value) / step) * step, 9) + 0.0  # + 0.0 turns -0.0 into 0.0


def figure_layout(fig, name: str, build) -> dict:
    """The artists of plot `name` on `fig`: built by build(fig) on the first call, reused afterwards.

    A panel redraws the same plot at new slider values; updating the data of existing artists instead of
    rebuilding the axes saves about a third of the redraw time.
    """
    from rlvr.widgets import FIXED_TITLES, figure_state

    prepare_figures()  # the current language's font (a CJK one for Chinese labels)
    name = f"{name}@{language()}"  # labels are drawn once per layout: another language builds it anew
    kept = figure_state(fig)
    state = kept.get("layout")
    if state is None or state["name"] != name or any(ax not in fig.axes for ax in state["axes"]):
        fig.clear()
        with matplotlib.rc_context(FIXED_TITLES):
            state = {"name": name, **build(fig)}
        kept["layout"] = state
    return state


def set_bar_heights(bars, heights) -> None:
    """New heights for an existing bar container."""
    for bar, height in zip(bars, heights):
        bar.set_height(float(height))


def padded_limits(values, pad: float = 0.12, include_zero: bool = True) -> tuple[float, float]:
    """(low, high) around the values, with `pad` of the range on each side."""
    values = np.asarray(values, dtype=float)
    low, high = float(values.min()), float(values.max())
    if include_zero:
        low, high = min(low, 0.0), max(high, 0.0)
    span = max(high - low, 1e-12)
    return low - pad * span, high + pad * span


def _build_shift_layout(fig, kinds: list) -> dict:
    """Axes and empty artists for draw_shift_runs."""
    axes = fig.subplots(1, len(kinds) + 1, width_ratios=[1.4] * len(kinds) + [1])
    fig.subplots_adjust(left=0.07, right=0.98, top=0.78, bottom=0.15, wspace=0.3)
    bins = np.linspace(0, 1, 26)
    width = np.diff(bins) / len(kinds)  # each method's bars take their share of a bin, side by side
    runs, means, hists = {}, {}, {}
    for index, (ax, kind) in enumerate(zip(axes, kinds)):
        color = COLORS[kind]
        runs[kind] = ax.add_collection(LineCollection([], colors=color, linewidths=0.6))
        (means[kind],) = ax.plot([], [], color=color, lw=2.4, path_effects=OUTLINED, label=_("mean over runs"))
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel(_("training step"))
        hists[kind] = axes[-1].bar(
            bins[:-1] + index * width,
            np.zeros(len(bins) - 1),
            width=width,
            align="edge",
            color=color,
            label=label(kind),
        )
    axes[0].set_ylabel(_("P(correct answer)"))
    axes[0].legend(loc="lower right", fontsize=7)
    axes[-1].set_ylim(0.7, 10)
    axes[-1].set_yscale("log")
    axes[-1].set_xlim(-0.01, 1.01)  # the bars of P = 0 and P = 1 sit inside the frame
    axes[-1].set_xlabel(_("final P(correct)"))
    axes[-1].set_ylabel(_("runs"))
    axes[-1].set_title(_("where the runs end"), fontsize=9)
    axes[-1].legend(fontsize=7, loc="upper center")
    return {
        "axes": list(axes),
        "runs": runs,
        "means": means,
        "hists": hists,
        "bins": bins,
        "title": fig.suptitle("", fontsize=10),
    }


def draw_shift_runs(fig, results: dict, max_lines: int | None = None) -> None:
    """One axis per method (every run, or the first max_lines, and the mean over all runs), then a histogram of
    the final values of all runs."""
    kinds = list(results)
    state = figure_layout(fig, "shift:" + ",".join(kinds), lambda f: _build_shift_layout(f, kinds))
    for ax, kind in zip(state["axes"], kinds):
        result = results[kind]
        segments = run_segments(result, max_lines)
        state["runs"][kind].set_segments(segments)
        state["runs"][kind].set_alpha(min(0.5, max(0.03, 8.0 / len(segments))))
        state["means"][kind].set_data(np.arange(result.accuracy.shape[0]), result.mean_curve.numpy())
        ax.set_xlim(0, result.accuracy.shape[0] - 1)
        ax.set_title(
            label(kind)
            + "\n"
            + _("mean final {mean}, worst {worst}").format(
                mean=f"{result.final_mean:.3f}", worst=f"{result.worst:.3g}"
            ),
            fontsize=9,
        )
        set_bar_heights(state["hists"][kind], np.histogram(result.final.numpy(), bins=state["bins"])[0])
    first = results[kinds[0]]
    state["axes"][-1].set_ylim(0.7, first.final.numel() * 2)
    state["title"].set_text(
        _("{runs} runs, {rewards}, G = {g}, SGD lr {lr}").format(
            runs=f"{first.final.numel():,}",
            rewards=reward_shift_text(first.shift),
            g=first.group_size,
            lr=f"{first.lr:.2g}",
        )
    )


def _build_std_layout(fig) -> dict:
    """Axes, constant curves and empty artists for draw_std_effect."""
    ax_step, ax_amp, ax_zero = fig.subplots(1, 3)
    fig.subplots_adjust(left=0.06, right=0.99, top=0.9, bottom=0.15, wspace=0.3)
    dots = {"ms": 3.5, "mec": COLORS["exact"], "mew": 0.4, "ls": "none", "marker": "o"}
    ax_step.plot(P_GRID, ideal_step(P_GRID, False), color=COLORS["mean"], ls="--", lw=1, label="p(1-p)")
    ax_step.plot(P_GRID, ideal_step(P_GRID, True), color=COLORS["grpo"], ls="--", lw=1, label="√(p(1-p))")
    lines = {
        kind: ax_step.plot(P_GRID, P_GRID * 0, color=COLORS[kind], lw=2, label=label)[0]
        for kind, label in (("mean", _("mean baseline")), ("grpo", _("÷ group std (GRPO)")))
    }
    step_dots = {kind: ax_step.plot([], [], color=COLORS[kind], **dots)[0] for kind in ("mean", "grpo")}
    ax_step.set_xlabel(_("p = P(correct) for this prompt"))
    ax_step.set_ylabel(_("expected step on the correct logit"))
    ax_step.set_title(_("expected step (lines: exact, dots: simulated)"), fontsize=9)
    ax_step.set_ylim(0, 0.55)
    ax_step.legend(fontsize=6.5, loc="lower center", ncol=2)

    low, high = p_for_amplification()
    ax_amp.plot(
        P_GRID,
        ideal_amplification(P_GRID),
        color=COLORS["exact"],
        ls="--",
        lw=1.2,
        label=_("0.5/√(p(1-p)): true std"),
    )
    (amp_line,) = ax_amp.plot(P_GRID, P_GRID * 0, color=COLORS["grpo"], lw=2, label=_("std from the group"))
    (amp_dots,) = ax_amp.plot([], [], color=COLORS["grpo"], **dots)
    ax_amp.axhline(AMPLIFICATION, color=COLORS["exact"], lw=0.6, ls=":")
    for edge in (low, high):
        ax_amp.axvline(edge, color=COLORS["exact"], lw=0.6, ls=":")
    ax_amp.text(
        0.5,
        AMPLIFICATION + 0.15,
        _("3.5x at p = {low} / {high}").format(low=f"{low:.3f}", high=f"{high:.3f}"),
        ha="center",
        fontsize=8,
    )
    ax_amp.set_ylim(0, 6)
    ax_amp.set_xlabel("p")
    ax_amp.set_ylabel(_("weight vs a p = 0.5 prompt"))
    ax_amp.set_title(_("relative amplification by the std"), fontsize=9)
    ax_amp.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.88))

    (zero_line,) = ax_zero.plot(P_GRID, P_GRID * 0, color=NO_SIGNAL_COLOR, lw=2, label=r"$p^G + (1-p)^G$")
    (zero_dots,) = ax_zero.plot([], [], color=NO_SIGNAL_COLOR, label=_("simulated"), **dots)
    ax_zero.set_ylim(-0.02, 1.02)
    ax_zero.set_xlabel("p")
    ax_zero.set_ylabel(_("share of groups"))
    ax_zero.legend(fontsize=7, loc="upper center")
    return {
        "axes": [ax_step, ax_amp, ax_zero],
        "lines": lines,
        "step_dots": step_dots,
        "amp_line": amp_line,
        "amp_dots": amp_dots,
        "zero_line": zero_line,
        "zero_dots": zero_dots,
    }


def draw_std_effect(fig, effect: StdEffect) -> None:
    """Three panels over p: expected step along the correct logit, relative amplification, no-signal share.

    Lines are exact (a sum over the number of right answers); dots are the simulation (`bandit.std_effect`).
    """
    state = figure_layout(fig, "std", _build_std_layout)
    sim, exact, group_size = effect.sim, effect.exact, effect.group_size
    for kind in ("mean", "grpo"):
        state["lines"][kind].set_ydata(exact[kind])
        state["step_dots"][kind].set_data(sim.p, sim.step[kind])
    state["amp_line"].set_ydata(exact["grpo"] / exact["mean"] / (exact["grpo"][99] / exact["mean"][99]))
    state["amp_dots"].set_data(sim.p, sim.amplification())
    state["zero_line"].set_ydata(effect.no_signal)
    state["zero_dots"].set_data(sim.p, sim.no_signal)
    state["axes"][2].set_title(_("all right or all wrong: no signal (G={g})").format(g=group_size), fontsize=9)
    state["axes"][0].set_title(
        _("expected step, G={g} (lines: exact, dots: simulated)").format(g=group_size), fontsize=9
    )


def _build_estimator_layout(fig, kinds: list) -> dict:
    """Axes and zero-height bars for draw_estimators."""
    ax_mean, ax_scale, ax_noise = fig.subplots(1, 3, width_ratios=[1.5, 1, 1])
    fig.subplots_adjust(left=0.07, right=0.98, top=0.9, bottom=0.15, wspace=0.32)
    x = np.arange(NUM_ANSWERS)
    width = 0.8 / (len(kinds) + 1)
    zeros = np.zeros(NUM_ANSWERS)
    exact = ax_mean.bar(x - 0.4 + width / 2, zeros, width, color="white", edgecolor=COLORS["exact"], label=_("exact"))
    means = {
        kind: ax_mean.bar(x - 0.4 + width * (i + 1.5), zeros, width, color=COLORS[kind], label=label(kind))
        for i, kind in enumerate(kinds)
    }
    ax_mean.axhline(0, color=COLORS["exact"], lw=0.6)
    ax_mean.set_xticks(x, [_("0 (right)")] + [str(i) for i in range(1, NUM_ANSWERS)])
    ax_mean.set_xlabel(_("logit of answer"))
    ax_mean.set_ylabel(_("average estimate E[g] (per logit)"))
    ax_mean.legend(fontsize=7, loc="upper right")
    ax_mean.yaxis.set_major_locator(MaxNLocator(5))

    colors = [COLORS[kind] for kind in kinds]
    short = [label(kind, short=True) for kind in kinds]
    scale = ax_scale.bar(short, np.zeros(len(kinds)), color=colors, yerr=np.zeros(len(kinds)), capsize=3)
    ax_scale.axhline(1.0, color=COLORS["exact"], lw=1, ls="--")
    ax_scale.set_title(_("scale: E[g] along the exact gradient (--: 1, unbiased)"), fontsize=9)
    ax_scale.yaxis.set_major_locator(MaxNLocator(5))
    ax_scale.set_ylabel(_("E[g]·exact / ‖exact‖²"))
    noise = ax_noise.bar(short, np.zeros(len(kinds)), color=colors)
    ax_noise.set_title(_("noise/signal of one group's estimate"), fontsize=9)
    ax_noise.set_ylabel(_("√variance / ‖E[g]‖ (lower: less noisy)"))
    ax_noise.yaxis.set_major_locator(MaxNLocator(5))
    for ax in (ax_scale, ax_noise):
        ax.tick_params(axis="x", labelsize=8)
    return {
        "axes": [ax_mean, ax_scale, ax_noise],
        "exact": exact,
        "means": means,
        "scale": scale,
        "noise": noise,
    }


def _set_error_bars(bars, errors) -> None:
    """Move the error bars drawn with `bars` (ax.bar(..., yerr=...)) to +-errors around each bar's top."""
    middles = [bar.get_x() + bar.get_width() / 2 for bar in bars.patches]
    segments = [
        [(x, bar.get_height() - err), (x, bar.get_height() + err)] for x, bar, err in zip(middles, bars.patches, errors)
    ]
    _, caps, (lines,) = bars.errorbar.lines
    lines.set_segments(segments)
    low, high = caps
    low.set_data([s[0][0] for s in segments], [s[0][1] for s in segments])
    high.set_data([s[1][0] for s in segments], [s[1][1] for s in segments])


def draw_estimators(fig, comparison: EstimatorComparison) -> None:
    """Average estimate per logit next to the exact gradient, then each estimator's scale and noise/signal."""
    kinds = list(comparison.stats)
    state = figure_layout(fig, "estimators:" + ",".join(kinds), lambda f: _build_estimator_layout(f, kinds))
    ax_mean, ax_scale, ax_noise = state["axes"]
    stats = comparison.stats
    set_bar_heights(state["exact"], comparison.exact.numpy())
    for kind in kinds:
        set_bar_heights(state["means"][kind], stats[kind].mean.numpy())
    heights = np.concatenate([comparison.exact.numpy(), *[stats[kind].mean.numpy() for kind in kinds]])
    ax_mean.set_ylim(*padded_limits(heights))
    scales = [stats[kind].scale for kind in kinds]
    errors = [stats[kind].scale_se for kind in kinds]
    set_bar_heights(state["scale"], scales)
    _set_error_bars(state["scale"], errors)
    ax_scale.set_ylim(0, 1.15 * max([1.0] + [s + e for s, e in zip(scales, errors)]))
    noises = [stats[kind].relative_noise for kind in kinds]
    set_bar_heights(state["noise"], noises)
    ax_noise.set_ylim(0, 1.15 * max(noises))
    ax_mean.set_title(
        _("G = {g}, {rewards}: average estimate vs exact gradient").format(
            g=comparison.group_size, rewards=reward_shift_text(comparison.shift)
        ),
        fontsize=9,
    )


def estimator_panel(n_groups: int = N_GROUPS, seed: int = 0):
    """Sliders for the group size G (2-64) and a constant added to every reward; plot and table redraw."""
    import ipywidgets

    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, float_slider, int_slider

    table = ipywidgets.HTML()

    @functools.lru_cache(maxsize=REMEMBERED_IMAGES)  # the panel redraws every time (it fills the table too)
    def comparison_at(group_size, shift):
        return compare_estimators(group_size, shift, n_groups, seed=seed)

    def draw(fig, group_size, shift):
        comparison = comparison_at(group_size, on_grid(shift, SHIFT_STEP))
        draw_estimators(fig, comparison)
        table.value = comparison.to_html()

    controls = {
        "group_size": int_slider("group_size", 2, MAX_GROUP_SIZE, 1, GROUP_SIZE, description=_("group size G")),
        "shift": float_slider("shift", -5.0, 10.0, SHIFT_STEP, 0.0, description=_("added to every reward")),
    }
    panel = AnalyticPanel(draw, controls, figsize=(11, 3.4), title=_("Estimators of the policy gradient"))
    panel.table = table
    panel.view.children = (*panel.view.children, table)
    return panel


def std_panel(n_answers: int = 40_000, seed: int = 0):
    """A group-size slider (2-64) over the three 4.1 curves (exact lines, simulated dots)."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, int_slider

    def draw(fig, group_size):
        draw_std_effect(fig, std_effect(group_size, n_answers, seed))

    controls = {"group_size": int_slider("group_size", 2, 64, 1, GROUP_SIZE, description=_("group size G"))}
    return AnalyticPanel(
        draw, controls, remember=REMEMBERED_IMAGES, figsize=(12, 3.9), title=_("Dividing by the group std")
    )


def shift_panel(runs: int = 200, max_lines: int = 100, seed: int = 0):
    """Sliders for the reward shift and the learning rate over the no-baseline / RLOO training runs."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, float_slider, log_slider

    def draw(fig, shift, lr):
        results = shift_experiment(on_grid(shift, SHIFT_STEP), runs=runs, lr=lr, seed=seed)
        draw_shift_runs(fig, results, max_lines)

    controls = {
        "shift": float_slider("shift", 0.0, 10.0, SHIFT_STEP, SHIFT, description=_("added to every reward")),
        "lr": log_slider("lr", 0.1, 10.0, SHIFT_LR, description=_("learning rate"), steps_per_decade=10),
    }
    return AnalyticPanel(
        draw,
        controls,
        remember=REMEMBERED_IMAGES,
        figsize=(10, 3.6),
        continuous_update=False,
        title=_("{runs} runs of {steps} steps, G = {g}").format(runs=runs, steps=SHIFT_STEPS, g=SHIFT_GROUP_SIZE),
    )


def draw_best_of_n(fig, result: BestOfN) -> None:
    """Quality of the picked answer vs n: by the learned reward (its score and the truth) and by the true reward."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    ax = fresh_axes(fig)
    ax.plot(
        result.ns,
        result.proxy_of_pick,
        "o--",
        color=LEARNED_REWARD_COLOR,
        mfc="white",
        label=_("learned reward's score of its pick"),
    )
    ax.plot(result.ns, result.true_of_pick, "o-", color=LEARNED_REWARD_COLOR, label=_("true quality of that pick"))
    ax.plot(
        result.ns,
        result.true_of_best,
        "o-",
        color=COLORS["exact"],
        label=_("true quality, picked by the true reward"),
    )
    ax.set_xscale("log", base=2)
    top = 6.0
    ax.set_ylim(-0.5, top)
    off_chart = result.proxy_of_pick > top
    if off_chart.any():
        first = int(np.argmax(off_chart))
        ax.annotate(
            _("keeps climbing: {value} at n = {n}").format(value=f"{result.proxy_of_pick[-1]:.0f}", n=result.ns[-1]),
            xy=(result.ns[first], top),
            xytext=(result.ns[first] * 2, top - 0.8),
            fontsize=8,
            color=LEARNED_REWARD_COLOR,
            arrowprops={"arrowstyle": "->", "color": LEARNED_REWARD_COLOR},
        )
    ax.set_xlabel(_("n answers to choose from (optimisation pressure)"))
    ax.set_ylabel(_("average over trials"))
    ax.set_title(_("best-of-n: a learned reward (quality + heavy-tailed error) vs the true one"), fontsize=10)
    ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 0.12))


def draw_baseline_scale(fig, group_sizes, scales: dict) -> None:
    """Exercise 1(d): E[g] / exact gradient against G for the mean baseline and RLOO (+-2 SE), with (G-1)/G and 1.

    `scales` is `bandit.baseline_scale_vs_group_size(group_sizes, kinds=("mean", "rloo"))`.
    """
    from rlvr.widgets import fresh_axes

    prepare_figures()
    ax = fresh_axes(fig)
    grid = np.linspace(min(group_sizes), max(group_sizes), 200)
    ax.plot(grid, (grid - 1) / grid, color=COLORS["mean"], lw=1, ls="--", label="(G-1)/G")
    ax.axhline(1.0, color=COLORS["exact"], lw=1, ls="--", label=_("1 (exact gradient)"))
    for kind, (values, ses) in scales.items():
        ax.errorbar(
            group_sizes,
            values,
            yerr=2 * np.asarray(ses),
            fmt="o",
            color=COLORS[kind],
            capsize=3,
            label=_("{estimator}, ±2 SE").format(estimator=label(kind)),
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(group_sizes, [str(g) for g in group_sizes])
    ax.set_xlabel(_("group size G"))
    ax.set_ylabel(_("E[g] / exact gradient"))
    ax.set_title(_("the mean baseline shrinks the gradient by (G-1)/G; RLOO does not"), fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
