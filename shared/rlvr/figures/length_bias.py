"""Notebook 05's figures and panels: per-token weights of the two losses, the toy model's lengths (with and without
Kimi's length reward), Kimi's reward in one group, and the arithmetic runs (the computation is in
`rlvr.experiments.length_bias`)."""

from __future__ import annotations

import numpy as np
import torch

from rlvr.experiments.common import plain_math_labels, smooth
from rlvr.experiments.length_bias import (
    ANSWERS_PER_STEP,
    GROUP_SIZE,
    GRPO,
    KIMI_WEIGHT,
    LOSS_LABELS,
    LOSSES,
    N_RUNS,
    OPTIMIZER,
    OPTIMIZER_NAMES,
    P_CORRECT,
    PATH_NAMES,
    SMOOTH,
    STEPS,
    TOY_LOSSES,
    per_token_weight,
    train_toy_pair,
)
from rlvr.figures.palette import ALGO_COLORS, COLORS, RIGHT, WRONG, knob_color
from rlvr.i18n import _, prepare_figures
from rlvr.objectives import kimi_length_reward

# Colour says which loss (the module's algorithm colours); line style says right or wrong (palette.RIGHT solid,
# palette.WRONG dashed), never colour. A curve over all answers, right and wrong together, is dotted.
LOSS_COLORS = {loss: ALGO_COLORS[loss] for loss in LOSSES}
PATH_STYLES = (RIGHT, WRONG)  # correct path / answer, wrong path / answer
ALL_ANSWERS = {"ls": ":", "lw": 2.2}  # every answer, right and wrong together
REFERENCE = COLORS["exact"]  # the cap, the start, the switch-on step: exact values
# Where the correct and the wrong answer's curves coincide (equal |A|, or no drift), the correct one is drawn wide and
# light under the wrong one, so both stay visible.
UNDER = {"lw": 4.0, "alpha": 0.55}  # the correct answer's / path's line
OVER = {"lw": 1.6, "alpha": 1.0}  # the wrong answer's / path's line
# The Kimi runs on the arithmetic task are all GRPO runs that differ in one knob (when the length reward starts): the
# run without it is the default run (black), the others take the one-knob colours. The late run is drawn from its
# switch on: before it, it is the default run.
KIMI_STYLES = (  # the run without the reward thin; the late one on top with a dot every 10 steps, or it would hide
    # under the other two once they meet (dashes would say 'wrong answers' in this notebook)
    {"color": COLORS["exact"], "lw": 1.2, "zorder": 4},
    {"color": knob_color(0), "lw": 2.4},
    {"color": knob_color(1), "lw": 1.6, "marker": "o", "ms": 3.5, "markevery": 10, "zorder": 5},
)


def draw_token_weights(
    fig,
    adv_correct: float = 1.0,
    adv_wrong: float = -1.0,
    correct_length: int = 100,
    wrong_length: int = 1000,
    max_len: int = 1000,
) -> None:
    """|per-token weight| (log-log) and the total push on an answer against its length, GRPO vs Dr. GRPO (colour),
    the correct and the wrong answer (solid, dashed)."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    ax_w, ax_total = fresh_axes(fig, 1, 2)
    lengths = np.unique(np.geomspace(1, max_len, 60).round())  # [n]
    answers = ((adv_correct, correct_length, "correct"), (adv_wrong, wrong_length, "wrong"))
    lines = []
    for (adv, length, name), path_style, width in zip(answers, PATH_STYLES, (UNDER, OVER)):
        shown = _("correct") if name == "correct" else _("wrong")
        weights = {
            loss: per_token_weight(adv, lengths, loss, max_len) * np.ones_like(lengths) for loss in LOSSES
        }  # [n]
        for loss, weight in weights.items():
            style = {**path_style, **width, "color": LOSS_COLORS[loss]}
            label = _("{loss}, {answer} (A = {a})").format(loss=TOY_LOSSES[loss].label, answer=shown, a=f"{adv:+.2g}")
            ax_w.plot(lengths, np.abs(weight), label=label, **style)
            ax_total.plot(lengths, weight * lengths, **style)
        capped = length > max_len  # no answer is longer than L_max: the generation cap
        length = min(length, max_len)
        w_grpo, w_dr = adv / length, adv / max_len
        face = "white" if name == "wrong" else None  # a hollow dot for the wrong answer, a filled one for the correct
        for loss, w in zip(LOSSES, (w_grpo, w_dr)):
            dot = {"color": LOSS_COLORS[loss], "ms": 6, "mfc": face or LOSS_COLORS[loss], "zorder": 3}
            ax_w.plot([length], [abs(w)], "o", **dot)
            ax_total.plot([length], [w * length], "o", **dot)
        lines.append(
            _("{answer}, {length} tokens{star}: GRPO {grpo}, Dr. GRPO {dr}").format(
                answer=shown, length=length, star="*" if capped else "", grpo=f"{w_grpo:+.2g}", dr=f"{w_dr:+.2g}"
            )
        )
        if capped:
            lines.append("  " + _("* set longer than L_max, capped at L_max"))
    ax_w.set(
        xscale="log",
        yscale="log",
        xlabel=_("answer length |o_i| (tokens)"),
        ylabel=_("|weight on each token's log-prob|"),
        title=_("per-token weight (dots: the two answers)"),
    )
    ax_w.legend(fontsize=7, loc="upper right")
    ax_w.text(
        0.03,
        0.22,
        _("per token:") + "\n" + "\n".join(lines),
        transform=ax_w.transAxes,
        fontsize=7,
        va="bottom",
    )
    low = min(abs(adv_correct), abs(adv_wrong)) / max_len
    ax_w.set_ylim(low / 4, 1.5 * max(abs(adv_correct), abs(adv_wrong)))
    top = 1.15 * max(abs(adv_correct), abs(adv_wrong))
    ax_total.set(
        xscale="log",
        xlabel=_("answer length |o_i| (tokens)"),
        ylabel=_("sum of the weights over the answer"),
        title=_("total push on the answer"),
        ylim=(-top, top),
    )
    ax_total.axhline(0, color=REFERENCE, lw=0.5)
    plain_log_ticks(ax_w.xaxis, ax_w.yaxis, ax_total.xaxis)
    ax_total.text(
        0.03,
        0.6,
        _("GRPO (blue): A_i, whatever the length\nDr. GRPO (orange): A_i |o_i| / L_max\nsolid: correct, dashed: wrong"),
        transform=ax_total.transAxes,
        fontsize=7,
        va="bottom",
    )


def plain_log_ticks(*axes) -> None:
    """Log-axis tick labels as plain text ('1000', '0.001') without minor ticks: mathtext labels are slow to draw."""
    from matplotlib.ticker import FuncFormatter, NullLocator

    for axis in axes:
        axis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
        axis.set_minor_locator(NullLocator())


def token_weight_panel():
    """Sliders: the advantages and lengths of one correct and one wrong answer, L_max (defaults: not Exercise 4's
    pair, which the learner works out by hand first)."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, float_slider, int_slider

    controls = {
        "adv_correct": float_slider("adv_correct", 0.1, 3.0, 0.1, 1.0, description=_("A of the correct answer")),
        "adv_wrong": float_slider("adv_wrong", -3.0, -0.1, 0.1, -1.0, description=_("A of the wrong answer")),
        "correct_length": int_slider("correct_length", 10, 2000, 10, 200, description=_("correct answer's length")),
        "wrong_length": int_slider("wrong_length", 10, 2000, 10, 800, description=_("wrong answer's length")),
        "max_len": int_slider("max_len", 100, 2000, 100, 1000, description=_("L_max (Dr. GRPO)")),
    }
    return AnalyticPanel(
        draw_token_weights,
        controls,
        remember=REMEMBERED_IMAGES,
        figsize=(9, 3.8),
        title=_(
            "GRPO (blue) vs Dr. GRPO (orange), correct answer solid, wrong dashed: per-token weight and total push"
        ),
    )


def plot_toy_lengths(fig, runs: dict, title_extra: str = "", switch_on: int | None = None) -> None:
    """One axes per loss (its colour): expected thinking tokens of the correct path (solid) and the wrong path
    (dashed) against steps (thin: runs, thick: mean)."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    axes = np.atleast_1d(fresh_axes(fig, 1, len(runs), sharey=True))
    for ax, (loss, run) in zip(axes, runs.items()):
        lengths = run.mean_length()  # [S+1, N, 2]
        steps = np.arange(len(lengths))
        color = LOSS_COLORS[loss]
        for path, path_style, width in zip((0, 1), PATH_STYLES, (UNDER, OVER)):
            ax.plot(steps, lengths[:, :, path], color=color, lw=0.5, alpha=0.3, **path_style)
            mean = lengths[:, :, path].mean(axis=1)
            label = _("{name}: {value}").format(name=_(PATH_NAMES[path]), value=f"{lengths[-1, :, path].mean():.1f}")
            ax.plot(steps, mean, color=color, label=label, **path_style, **width)
        ax.axhline(run.cap, color=REFERENCE, ls=":", lw=1, zorder=3)
        ax.axhline(lengths[0, 0, 0], color=REFERENCE, ls="-.", lw=0.8, zorder=3)  # over the curves that start on it
        if switch_on is not None and run.length_reward_weight:
            ax.axvline(switch_on, color=REFERENCE, ls="-.", lw=1)
            ax.text(switch_on, run.cap * 0.75, _("length reward on") + " ", color=REFERENCE, fontsize=7, ha="right")
        ax.set(title=_(LOSS_LABELS[loss]) if loss in LOSS_LABELS else loss, xlabel=_("step"), ylim=(-1, run.cap + 2))
        ax.legend(fontsize=7, loc="center right", title=_("final mean"), title_fontsize=7)
    axes[0].set_ylabel(_("expected thinking tokens"))
    if title_extra:
        fig.subplots_adjust(top=0.82)
        fig.suptitle(title_extra, fontsize=8)


def draw_toy(fig, p_correct: float = P_CORRECT, group_size: int = GROUP_SIZE, optimizer: str = OPTIMIZER) -> None:
    """Train both losses at these values and plot the lengths (the slider panel's draw)."""
    runs = train_toy_pair(p_correct, group_size, optimizer=optimizer)
    plot_toy_lengths(
        fig,
        runs,
        _(
            "p(correct) = {p}, G = {g}, {optimizer}, {runs} runs of {answers} answers per step; dotted: the cap, "
            "dash-dot: the start"
        ).format(
            p=f"{p_correct:.2f}",
            g=group_size,
            optimizer=OPTIMIZER_NAMES[optimizer],
            runs=N_RUNS,
            answers=ANSWERS_PER_STEP,
        ),
    )


def toy_panel():
    """Sliders for the probability of a correct answer and the group size G, buttons for the optimizer; retrains both
    losses on release."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, choice_slider, float_slider, toggle_buttons

    controls = {
        "p_correct": float_slider("p_correct", 0.05, 0.95, 0.05, P_CORRECT, description=_("P(correct answer)")),
        "group_size": choice_slider([2, 4, 8, 16, 32], GROUP_SIZE, description=_("group size G")),
        "optimizer": toggle_buttons(
            "optimizer", [(name, key) for key, name in OPTIMIZER_NAMES.items()], OPTIMIZER, description=_("optimizer")
        ),
    }
    return AnalyticPanel(
        draw_toy,
        controls,
        remember=REMEMBERED_IMAGES,
        figsize=(9, 3.8),
        continuous_update=False,
        title=_("The toy model trained with the GRPO loss and with the Dr. GRPO loss"),
    )


def draw_toy_kimi(fig, weight: float = KIMI_WEIGHT, start: int = 150, p_correct: float = P_CORRECT) -> None:
    """Both losses with Kimi's length reward (weight, from step `start`) in the toy model."""
    runs = train_toy_pair(p_correct, GROUP_SIZE, length_reward_weight=weight, length_reward_start=start)
    plot_toy_lengths(
        fig,
        runs,
        _("reward = correct + {weight} x Kimi length reward from step {start}, p(correct) = {p}").format(
            weight=f"{weight:.2f}", start=start, p=f"{p_correct:.2f}"
        ),
        switch_on=start,
    )


def toy_kimi_panel():
    """Sliders: weight of the length reward, the step it switches on, P(correct)."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, float_slider, int_slider

    controls = {
        "weight": float_slider("weight", 0.0, 2.0, 0.1, KIMI_WEIGHT, description=_("length reward weight")),
        "start": int_slider("start", 0, STEPS, 10, 150, description=_("switched on at step")),
        "p_correct": float_slider("p_correct", 0.05, 0.95, 0.05, P_CORRECT, description=_("P(correct answer)")),
    }
    return AnalyticPanel(
        draw_toy_kimi,
        controls,
        remember=REMEMBERED_IMAGES,
        figsize=(9, 3.6),
        continuous_update=False,
        title=_("Kimi's length reward in the toy model"),
    )


def draw_kimi_group(
    fig, len_1=200, len_2=400, len_3=600, len_4=1000, correct_1=True, correct_2=True, correct_3=False, correct_4=False
) -> None:
    """A group of four answers: Kimi's length reward against length (correct: solid line, filled dots and bars; wrong:
    dashed line, hollow dots, hatched bars) and each answer's reward."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    lengths = torch.tensor([len_1, len_2, len_3, len_4], dtype=torch.float32)
    correct = torch.tensor([correct_1, correct_2, correct_3, correct_4])
    rewards = kimi_length_reward(lengths, correct).numpy()
    ax, ax_bar = fresh_axes(fig, 1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    lo, hi = float(lengths.min()), float(lengths.max())
    if hi > lo:
        grid = np.linspace(lo, hi, 50)
        lam = 0.5 - (grid - lo) / (hi - lo)
        ax.plot(grid, lam, color=REFERENCE, label=_("correct: $\\lambda$"), **RIGHT, **UNDER)
        ax.plot(grid, np.minimum(lam, 0), color=REFERENCE, label=_("wrong: min(0, $\\lambda$)"), **WRONG, **OVER)
    else:
        ax.text(0.5, 0.8, _("all lengths equal: every reward is 0"), transform=ax.transAxes, ha="center", fontsize=8)
    is_right = correct.tolist()
    faces = [REFERENCE if right else "white" for right in is_right]
    ax.scatter(lengths.numpy(), rewards, c=faces, s=45, zorder=3, edgecolors=REFERENCE, linewidths=1.0)
    for i, (x, y) in enumerate(zip(lengths.tolist(), rewards)):
        ax.annotate(str(i + 1), (x, y), textcoords="offset points", xytext=(4, 5), fontsize=8)
    ax.set(
        xlabel=_("answer length (tokens)"),
        ylabel=_("length reward"),
        ylim=(-0.65, 0.65),
        title=_("group: min {low}, max {high} tokens").format(low=f"{lo:.0f}", high=f"{hi:.0f}"),
    )
    ax.axhline(0, color=REFERENCE, lw=0.5)
    if hi > lo:
        ax.legend(fontsize=7, loc="upper right")
    names = [
        (_("{i}: {n} right") if c else _("{i}: {n} wrong")).format(i=i + 1, n=int(n))
        for i, (n, c) in enumerate(zip(lengths.tolist(), is_right))
    ]
    bars = ax_bar.barh(range(len(names)), rewards[::-1], color=faces[::-1], edgecolor=REFERENCE)
    for bar, right in zip(bars, is_right[::-1]):
        bar.set_hatch("" if right else "///")
    ax_bar.set_yticks(range(len(names)), names[::-1])
    for y, r in enumerate(rewards[::-1]):
        ax_bar.text(r, y, (f" {r:+.3g} " if r else " 0 "), va="center", ha="left" if r >= 0 else "right", fontsize=8)
    ax_bar.set(xlim=(-0.8, 0.8), xlabel=_("length reward"), title=_("each answer's length reward"))
    ax_bar.axvline(0, color=REFERENCE, lw=0.5)
    ax_bar.tick_params(axis="y", labelsize=7)
    plain_math_labels(fig)  # Chinese labels with mathtext as plain text (math fonts have no Chinese glyphs)


def kimi_group_panel():
    """Four answers: a length slider and a 'correct' box each (defaults: Exercise 5)."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, checkbox, int_slider

    controls = {}
    for i, (length, right) in enumerate(((200, True), (400, True), (600, False), (1000, False)), start=1):
        controls[f"len_{i}"] = int_slider(
            f"len_{i}", 10, 1500, 10, length, description=_("length of answer {i}").format(i=i)
        )
        controls[f"correct_{i}"] = checkbox(f"correct_{i}", right, description=_("answer {i} correct").format(i=i))
    return AnalyticPanel(
        draw_kimi_group,
        controls,
        remember=REMEMBERED_IMAGES,
        figsize=(9, 3.4),
        title=_("Kimi k1.5's length reward in one group"),
    )


def plot_lengths_by_outcome(fig, result, title: str | None = None) -> None:
    """One GRPO run (its colour): mean length of the correct (solid, wide and light under the others, which end on
    it), the wrong (dashed) and all answers (dotted) against step, then the think-first share and the two accuracies
    (all answers' wide and light under the think-first answers'; `title`: default 'GRPO on the arithmetic task')."""
    from matplotlib.ticker import PercentFormatter

    from rlvr.widgets import fresh_axes

    prepare_figures()
    title = _("GRPO on the arithmetic task") if title is None else title
    ax_len, ax_share = fresh_axes(fig, 1, 2)
    color = LOSS_COLORS[GRPO.name]
    for key, style, label in (
        ("mean_length_correct", {**RIGHT, **UNDER}, _("correct answers")),
        ("mean_length_wrong", {**WRONG, **OVER}, _("wrong answers")),
        ("mean_length", ALL_ANSWERS, _("all answers")),
    ):
        ax_len.plot(smooth(result.curve(key), SMOOTH), color=color, label=label, **style)
    ax_len.set(xlabel=_("RL step"), ylabel=_("mean answer length (tokens)"), title=title, ylim=(0, 16.5))
    ax_len.legend(fontsize=7)
    for key, style, label in (
        ("accuracy", {"ls": "-", **UNDER}, _("accuracy (all answers)")),
        ("cot_accuracy", {"ls": "-.", **OVER}, _("accuracy of think-first answers")),
        ("cot_fraction", {"ls": ":", "lw": 2.2}, _("think-first share")),
    ):
        ax_share.plot(smooth(result.curve(key), SMOOTH), color=color, label=label, **style)
    ax_share.set(xlabel=_("RL step"), ylabel=_("share of answers"), ylim=(0, 1.02), title=_("why: format and accuracy"))
    ax_share.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax_share.legend(fontsize=7)


def plot_kimi_arithmetic(fig, runs: dict, switch_on: int | None = None) -> None:
    """Think-first share, accuracy and mean length against step for each run (KIMI_STYLES, in the runs' order); the
    run switched on at `switch_on` is drawn from that step on (before it, it is the first run)."""
    from matplotlib.ticker import PercentFormatter

    from rlvr.widgets import fresh_axes

    prepare_figures()
    axes = fresh_axes(fig, 1, 3)
    for index, ((label, result), style) in enumerate(zip(runs.items(), KIMI_STYLES)):
        start = switch_on if index == 2 and switch_on is not None else 0
        for ax, key in zip(axes, ("cot_fraction", "accuracy", "mean_length")):
            curve = smooth(result.curve(key), SMOOTH)
            ax.plot(np.arange(start, len(curve)), curve[start:], label=label, **style)
    for ax, title in zip(axes, (_("think-first share"), _("accuracy (sampled)"), _("mean answer length"))):
        ax.set(xlabel=_("RL step"), title=title)
        ax.grid(alpha=0.3)
        if switch_on is not None:
            ax.axvline(switch_on, color=KIMI_STYLES[2]["color"], ls="-.", lw=0.8)
    for ax in axes[:2]:
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes[0].set_ylabel(_("share of answers"))
    axes[2].set(ylim=(0, 16.5), ylabel=_("tokens"))
    axes[0].legend(fontsize=7, loc="lower right")


def plot_length_split(fig, pairs: dict) -> None:
    """For {p: train_toy_pair(p)}: the GRPO loss's expected thinking tokens over all answers (dotted) and per path
    (correct solid, wrong dashed), one axes per p (shared y)."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    axes = np.atleast_1d(fresh_axes(fig, 1, len(pairs), sharey=True))
    color = LOSS_COLORS[GRPO.name]
    for ax, (p_correct, runs) in zip(axes, pairs.items()):
        grpo = runs[GRPO.name]
        ax.plot(grpo.mean_length_all().mean(axis=1), color=color, label=_("all answers"), **ALL_ANSWERS)
        for path, path_style, width in zip((0, 1), PATH_STYLES, (UNDER, OVER)):
            mean = grpo.mean_length()[:, :, path].mean(axis=1)
            ax.plot(mean, color=color, label=_(PATH_NAMES[path]), **path_style, **width)
        ax.set(title=_("toy model, GRPO loss, p(correct) = {p}").format(p=p_correct), xlabel=_("step"))
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(_("expected thinking tokens"))


def start_arithmetic(configs: dict) -> None:
    """Start the runs of `configs` (label -> RLConfig) that the cache does not hold in the background, at the lowest
    priority; `train_arithmetic` of the same runs waits for them."""
    from rlvr.train import run
    from rlvr.widgets import start_runs

    start_runs(configs, run)


def train_arithmetic(configs: dict) -> dict:
    """`rlvr.train.run` for every config (label -> RLConfig; cached on disk), each run's line saying whether it
    trained now (and how long it took) or came from the cache. Returns label -> RunResult."""
    from rlvr.widgets import train_runs
    from rlvr.train import run

    return train_runs(configs, run)
