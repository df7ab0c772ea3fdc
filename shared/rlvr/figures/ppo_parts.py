"""Notebook 02's figures and panels: PPO's clip, reusing a batch, reward shaping and GAE, PPO's curves with a KL
penalty, the KL estimators and the memory bill (the computation is in `rlvr.experiments.ppo_parts`)."""

from __future__ import annotations

import numpy as np
import torch

from rlvr.experiments.ppo_parts import (
    signed,
    BYTES_FROZEN,
    BYTES_TRAINED,
    CLIP_EPS,
    CRITICS,
    ESTIMATORS,
    EXERCISE_ADVANTAGE,
    KL_PANEL_SAMPLES,
    LECTURE_GB,
    LOG_R_GRID,
    MODEL_NAMES,
    RATIO_GRID,
    SETUPS,
    SETUP_NAMES,
    AnswerExample,
    GaussianKL,
    KLCurves,
    ReuseResult,
    clip_objective_and_grad,
    gaussian_kl_view,
    memory_gb,
    memory_totals,
    policy_kl_summary,
    shaped_view,
    zero_gradient_spans,
)
from rlvr.experiments.common import plain_math_labels
from rlvr.figures.palette import ALGO_COLORS, COLORS, POLICY_COLOR, knob_color
from rlvr.i18n import _, join, join_clauses, prepare_figures

PPO_COLOR = ALGO_COLORS["ppo"]  # the module's palette: every PPO curve, the clipped objective, PPO's value model
EXACT = COLORS["exact"]  # an exact value (the unclipped objective, a realised return, a true KL), the default run
SHADE = "#d9d9d9"  # light grey areas: where the gradient is 0, the band [1 - eps, 1 + eps]
# the three estimators are the three settings of one knob ("which estimator"): the palette's one-knob colours
KL_COLORS = {name: knob_color(i) for i, name in enumerate(("k1", "k2", "k3"))}
# the models of PPO: the reference is the frozen warm-up model, the reward model a learned one (palette meanings);
# the policy, trained in every set-up, gets a neutral slate of its own
MODEL_COLORS = {
    "policy": POLICY_COLOR,
    "value model": PPO_COLOR,
    "reference": COLORS["warmup"],
    "reward model": COLORS["learned_reward"],
}


def plot_clip(
    ax_obj, ax_grad, advantage: float, clip_eps: float, ratios: np.ndarray = RATIO_GRID, color: str = PPO_COLOR
) -> None:
    """Objective (left axes) and gradient (right axes) against the ratio rho, zero-gradient regions shaded."""
    objective, grad = clip_objective_and_grad(ratios, advantage, clip_eps)
    ax_obj.plot(ratios, ratios * advantage, ls=":", color=EXACT, lw=1, label=_(r"unclipped $\rho A$"))
    ax_obj.plot(ratios, objective, color=color, lw=2, label=r"$\min(\rho A,\ \mathrm{clip}(\rho)A)$")
    ax_grad.plot(ratios, grad, color=color, lw=2, drawstyle="steps-mid")
    for ax in (ax_obj, ax_grad):
        if advantage != 0:
            for lo, hi in zero_gradient_spans(ratios, grad):
                ax.axvspan(lo, hi, facecolor=SHADE, edgecolor="#9e9e9e", hatch="//", lw=0)
        for edge in (1 - clip_eps, 1 + clip_eps):
            ax.axvline(edge, color=EXACT, ls=":", lw=1)
        ax.axvline(1.0, color="#bdbdbd", lw=0.8)
        ax.set_xlabel(_(r"ratio $\rho = \pi_\theta / \pi_{\mathrm{old}}$"))
        ax.set_xlim(ratios[0], ratios[-1])
    span = 2.1 * max(abs(advantage), 0.25)
    ax_obj.set_ylim(-span, span)
    ax_grad.set_ylim(-1.3 * max(abs(advantage), 0.25), 1.3 * max(abs(advantage), 0.25))
    ax_obj.set_ylabel(_(r"objective $J(\rho)$"))
    ax_grad.set_ylabel(_(r"gradient $dJ/d\rho$"))


def draw_clip_both_signs(fig, clip_eps: float = CLIP_EPS, advantage: float = EXERCISE_ADVANTAGE) -> None:
    """A 2 x 2 figure: objective and gradient for +A (top) and -A (bottom)."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    axes = fresh_axes(fig, 2, 2)
    fig.subplots_adjust(top=0.9, hspace=0.55)
    size = max(abs(advantage), 0.25)
    for row, adv in enumerate((size, -size)):
        plot_clip(axes[row, 0], axes[row, 1], adv, clip_eps)
        axes[row, 0].set_title(_("A = {a}: objective").format(a=f"{adv:+g}"), fontsize=10)
        axes[row, 1].set_title(_("A = {a}: gradient (hatched: exactly 0)").format(a=f"{adv:+g}"), fontsize=10)
    axes[0, 0].legend(fontsize=8, loc="upper left")
    fig.suptitle(
        _(
            "clip_eps = {eps}: for A > 0 the gradient stops above ρ = {upper}, for A < 0 below ρ = {lower} "
            "(dotted: 1 ± clip_eps)"
        ).format(eps=f"{clip_eps:.2f}", upper=f"{1 + clip_eps:.2f}", lower=f"{1 - clip_eps:.2f}"),
        fontsize=10,
        color="#424242",
    )
    plain_math_labels(fig)  # Chinese labels with mathtext as plain text (math fonts have no Chinese glyphs)


def clip_panel(clip_eps: float = CLIP_EPS, advantage: float = EXERCISE_ADVANTAGE):
    """Sliders for clip_eps (0.05-0.5) and the size of the advantage (0.25-3) over the clipped objective and its
    gradient, for +A (top row) and -A (bottom row)."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, float_slider

    def draw(fig, clip_eps, advantage):
        draw_clip_both_signs(fig, clip_eps, advantage)

    controls = {
        "clip_eps": float_slider("clip_eps", 0.05, 0.5, 0.01, clip_eps, description=_("clip_eps")),
        "advantage": float_slider("advantage", 0.25, 3.0, 0.25, abs(advantage), description="|A|"),
    }
    return AnalyticPanel(
        draw,
        controls,
        remember=REMEMBERED_IMAGES,
        figsize=(10, 6),
        title=_("PPO's clipped objective, both signs of the advantage"),
    )


def draw_reuse(fig, results: list[ReuseResult]) -> None:
    """Ratio spread (median, 1% and 99% quantiles) and clip fraction against the update index, per learning rate (the
    first, PPO's usual one, in black as the default; larger ones in the palette's one-knob colours)."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    ax_ratio, ax_clip = fresh_axes(fig, 1, 2)
    for index, res in enumerate(results):
        color = EXACT if index == 0 else knob_color(index - 1)
        u = np.arange(1, len(res.clip_fraction) + 1)
        q = res.quantiles
        lr = f"{res.lr:g}"
        first = index == 0  # the medians can coincide: the first one wide, the others dashed on top of it
        ax_ratio.plot(
            u,
            q[:, 2],
            "o-" if first else "o--",
            color=color,
            ms=6 if first else 3.5,
            lw=2.8 if first else 1.4,
            zorder=2 if first else 3,
            label=_("lr {lr}: median").format(lr=lr),
        )
        ax_ratio.plot(
            u, q[:, 3], "^-", color=color, ms=4, lw=0.9, label=_("lr {lr}: 1st and 99th percentile").format(lr=lr)
        )
        ax_ratio.plot(u, q[:, 1], "v-", color=color, ms=4, lw=0.9)
        ax_clip.plot(u, 100 * res.clip_fraction, "o-", color=color, label=_("lr {lr}").format(lr=lr))
    eps = results[0].clip_eps
    ax_ratio.axhspan(1 - eps, 1 + eps, color=SHADE, alpha=0.6, lw=0, zorder=0)
    ax_ratio.set_yscale("log")
    ax_ratio.set_ylim(0.03, 5)
    ax_ratio.set_xlabel(_("update on the same batch"))
    ax_ratio.set_ylabel(_(r"ratio $\rho = \pi_\theta/\pi_{\mathrm{old}}$ before the update (log scale)"))
    ax_ratio.set_title(
        _("ratio per token (grey: [1 - clip_eps, 1 + clip_eps], clip_eps = {eps})").format(eps=f"{eps:g}"),
        fontsize=10,
    )
    ax_ratio.legend(fontsize=8, loc="lower left")
    ax_clip.set_xlabel(_("update on the same batch"))
    ax_clip.set_ylabel(_("clip fraction (% of tokens with gradient 0)"))
    ax_clip.set_title(_("clip fraction before each update"), fontsize=10)
    ax_clip.set_ylim(bottom=0)
    ax_clip.legend(fontsize=8)
    for ax in (ax_ratio, ax_clip):
        ax.set_xticks(np.arange(1, len(results[0].clip_fraction) + 1))
    plain_math_labels(fig)


def signed_bars(ax, x: np.ndarray, values: np.ndarray, hatched: np.ndarray, label: str) -> None:
    """PPO-red bars, the `hatched` ones hatched and white inside (told apart by pattern, not by colour)."""
    ax.bar(x[~hatched], values[~hatched], color=PPO_COLOR)
    ax.bar(x[hatched], values[hatched], facecolor="white", edgecolor=PPO_COLOR, hatch="////", label=label)
    ax.axhline(0, color=EXACT, lw=0.6)


def draw_shaping(fig, example: AnswerExample, view: dict, beta: float, lam: float, clamp_kl: bool, critic: str) -> None:
    """Three rows over the answer's tokens: KL_t, the shaped reward r_t, and reward-to-go / value / advantage
    (`view` from `ppo_parts.shaped_view`)."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    ax_kl, ax_r, ax_a = fresh_axes(fig, 3, 1, sharex=True)
    fig.subplots_adjust(top=0.93, bottom=0.09, hspace=0.5)
    x = np.arange(len(example.tokens))
    kl = view["kl"].numpy()
    signed_bars(ax_kl, x, kl, kl < 0, _("hatched: below the reference"))
    ax_kl.set_ylabel(r"KL$_t$", fontsize=9)
    if (kl < 0).any():
        ax_kl.legend(fontsize=7, loc="lower right")
    lowest = int(np.argmin(kl))
    pushed = (
        _("most pushed below the reference: '{token}' at KL$_t$ = {kl}").format(
            token=example.tokens[lowest], kl=f"{kl[lowest]:.2f}"
        )
        if kl[lowest] < -0.01
        else _("no token pushed below the reference")
    )
    answer_text = "".join(example.tokens).replace("$", r"\$")  # a bare "$" would start mathtext
    answer = _("{prompt} {answer}  (score {score})").format(
        prompt=example.prompt, answer=answer_text, score=f"{example.score:g}"
    )
    ax_kl.set_title(answer + "   " + join_clauses([r"KL$_t$ = log $\pi_\theta$ - log $\pi_{ref}$", pushed]), fontsize=9)
    kl_part = view["rewards"].numpy().copy()
    kl_part[-1] -= example.score
    signed_bars(ax_r, x, kl_part, kl_part > 0, _("hatched: the penalty pays"))
    if (kl_part > 0).any():
        ax_r.legend(fontsize=7, loc="lower left")
    ax_r.set_ylabel(r"-$\beta$ KL$_t$", fontsize=9)
    low, high = min(float(kl_part.min()), -0.02), max(float(kl_part.max()), 0.02)
    ax_r.set_ylim(1.3 * low, 1.3 * high)
    ax_r.annotate(
        _("+ score {score}").format(score=f"{example.score:g}"),
        xy=(x[-1], 0),
        xytext=(x[-1], 0.8 * high),
        ha="center",
        fontsize=8,
        color=EXACT,
        fontweight="bold",
    )
    clamp_text = _("clamped at KL$_t$ >= 0") if clamp_kl else _("not clamped")
    total = kl_part.sum()
    sign = _("positive: the penalty pays!") if total > 0 else ("0" if total == 0 else _("a cost"))
    ax_r.set_title(
        _(
            "reward r$_t$ = -{beta} KL$_t$ ({clamp}), plus the score at the last token.  "
            "KL part summed: {total} ({sign})"
        ).format(beta=f"{beta:g}", clamp=clamp_text, total=signed(total, 3), sign=sign),
        fontsize=9,
    )
    ax_a.bar(
        x,
        view["advantages"].numpy(),
        color=PPO_COLOR,
        alpha=0.35,
        label=_("advantage A$_t$ (GAE, λ = {lam})").format(lam=f"{lam:g}"),
    )
    ax_a.plot(x, view["reward_to_go"].numpy(), "o-", color=EXACT, ms=4, lw=1.2, label=_("reward-to-go"))
    ax_a.plot(
        x,
        view["values"].numpy(),
        "s-",
        color=PPO_COLOR,
        ms=4,
        lw=1.2,
        label=_("value V$_t$ ({critic})").format(critic=_(critic)),
    )
    ax_a.axhline(0, color=EXACT, lw=0.6)
    ax_a.set_ylabel(_("reward units"), fontsize=8)
    ax_a.legend(fontsize=7, loc="lower left", ncol=3)
    ax_a.set_xticks(x)
    ax_a.set_xticklabels(example.tokens, fontfamily="monospace")
    ax_a.set_xlabel(_("answer token t"))
    lo = min(-0.3, float(min(view["advantages"].min(), view["values"].min(), view["reward_to_go"].min())) - 0.1)
    hi = max(1.15, float(max(view["advantages"].max(), view["values"].max(), view["reward_to_go"].max())) + 0.1)
    ax_a.set_ylim(lo - 0.35 * (hi - lo), hi)
    plain_math_labels(fig)


def shaping_panel(examples: list[AnswerExample], beta: float = 0.1):
    """Controls: the answer, beta (0-1), GAE lambda, the KL clamp and the critic; the three rows redraw."""
    import ipywidgets

    from rlvr.widgets import REMEMBERED_IMAGES, STYLE, AnalyticPanel, checkbox, float_slider

    def draw(fig, answer, beta, lam, clamp_kl, critic):
        example = next(e for e in examples if e.label == answer)
        draw_shaping(fig, example, shaped_view(example, beta, lam, clamp_kl, critic), beta, lam, clamp_kl, critic)

    labels = [e.label for e in examples]
    controls = {
        "answer": ipywidgets.Dropdown(
            options=[(_(label), label) for label in labels],  # shown translated; the panel sees the key
            value=labels[min(1, len(labels) - 1)],
            description=_("answer"),
            style=STYLE,
            layout=ipywidgets.Layout(width="420px"),
        ),
        "beta": float_slider("beta", 0.0, 1.0, 0.05, beta, description=_("beta (KL weight)")),
        "lam": float_slider("lam", 0.0, 1.0, 0.05, 1.0, description=_("GAE lambda")),
        "clamp_kl": checkbox("clamp_kl", True, description=_("clamp KL_t at >= 0")),
        "critic": ipywidgets.Dropdown(
            options=[(_(critic), critic) for critic in CRITICS],
            value=CRITICS[0],
            description=_("value model"),
            style=STYLE,
            layout=ipywidgets.Layout(width="300px"),
        ),
    }
    return AnalyticPanel(
        draw,
        controls,
        remember=REMEMBERED_IMAGES,
        figsize=(10, 7),
        title=_("Reward shaping and GAE on one sampled answer"),
    )


def draw_gaussian_kl(fig, view: GaussianKL) -> None:
    """Estimators against the log-ratio l with the samples' spread; relative bias and std bars (exact ticks)."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    ax_f, ax_b, ax_s = fresh_axes(fig, 1, 3)
    fig.subplots_adjust(top=0.8, left=0.06, right=0.98)
    mu, exact, stats, log_r, curves = view.mu, view.exact, view.stats, view.log_r, view.curves
    true_kl = exact["true_kl"]
    for name in ESTIMATORS:
        ax_f.plot(LOG_R_GRID, curves[name], color=KL_COLORS[name], lw=2, label=name)
    ax_f.set_ylim(-3, 8)
    ax_f.set_xlim(LOG_R_GRID[0], LOG_R_GRID[-1])
    ax_f.axhline(0, color=EXACT, lw=0.5)
    density, edges = np.histogram(log_r, bins=np.linspace(-5, 5, 81), density=True)
    low, high = ax_f.get_ylim()  # the histogram fills the height of the axes (its scale is not shown)
    ax_f.stairs(
        low + (high - low) * density / (1.05 * density.max()),
        edges,
        baseline=low,
        fill=True,
        color="#9e9e9e",
        alpha=0.35,
        zorder=0,
    )
    ax_f.set_xlabel(_(r"$\ell = \log\pi_{\mathrm{ref}} - \log\pi$ of a sample"))
    ax_f.set_title(_("estimators (grey: where samples fall)"), fontsize=9)
    ax_f.legend(fontsize=8, loc="upper center")
    xs = np.arange(3)
    colors = [KL_COLORS[n] for n in ESTIMATORS]
    ax_b.bar(
        xs,
        [stats[n]["rel_bias"] for n in ESTIMATORS],
        yerr=[2 * stats[n]["rel_bias_se"] for n in ESTIMATORS],
        color=colors,
        capsize=3,
    )
    ax_b.scatter(
        xs,
        [(exact["mean"][n] - true_kl) / true_kl for n in ESTIMATORS],
        marker="_",
        s=400,
        color=EXACT,
        zorder=3,
        label=_("exact"),
    )
    ax_b.axhline(0, color=EXACT, lw=0.5)
    ax_b.set_xticks(xs, ESTIMATORS)
    ax_b.set_ylim(-1, 1.5)
    ax_b.set_title(_("bias / true KL ({n} samples, bars: ±2 s.e.)").format(n=f"{len(log_r):,}"), fontsize=9)
    ax_b.legend(fontsize=8, loc="upper left")
    ax_s.bar(xs, [stats[n]["rel_std"] for n in ESTIMATORS], color=colors)
    ax_s.scatter(xs, [exact["std"][n] / true_kl for n in ESTIMATORS], marker="_", s=400, color=EXACT, zorder=3)
    ax_s.set_yscale("log")
    ax_s.set_ylim(0.3, 100)
    ax_s.set_xticks(xs, ESTIMATORS)
    ax_s.set_title(_("std / true KL (black: exact)"), fontsize=9)
    fig.suptitle(
        _("policy N(0, 1), reference N({mu}, 1): true KL = {kl};  std of one sample: {stds} (exact)").format(
            mu=f"{mu:g}", kl=f"{true_kl:.3f}", stds=join(f"{n} {exact['std'][n]:.2f}" for n in ESTIMATORS)
        ),
        fontsize=10,
    )
    plain_math_labels(fig)


def kl_panel(n_samples: int = KL_PANEL_SAMPLES, seed: int = 0, mu: float = 1.0):
    """A slider moves the reference N(mu, 1) away from the policy N(0, 1) (mu 0.05-2.5); bars redraw."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, float_slider

    x = torch.randn(n_samples, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)  # [N]

    def draw(fig, mu):
        draw_gaussian_kl(fig, gaussian_kl_view(mu, x))

    controls = {"mu": float_slider("mu", 0.05, 2.5, 0.05, mu, description=_("reference mean mu"))}
    return AnalyticPanel(
        draw,
        controls,
        remember=REMEMBERED_IMAGES,
        figsize=(11, 3.6),
        title=_("Three KL estimators from samples of the policy"),
    )


def draw_policy_kl(fig, samples: dict, policy: str | None = None) -> None:
    """Histograms of the per-answer k1 and k3 (log counts) with their means and stds (`policy`: the policy's name
    in the title, default 'the trained policy')."""
    from rlvr.widgets import fresh_axes

    policy = _("the trained policy") if policy is None else policy
    summary = policy_kl_summary(samples)
    prepare_figures()
    axes = fresh_axes(fig, 1, 3)
    fig.subplots_adjust(top=0.8, left=0.07, right=0.98)
    for ax, name in zip(axes, ESTIMATORS):
        values = samples[name]
        ax.hist(values, bins=60, color=KL_COLORS[name], alpha=0.8)
        ax.set_yscale("log")
        true_kl = _("true KL {kl}").format(kl=f"{summary['true_kl']:.2f}")
        ax.axvline(summary["true_kl"], color=EXACT, lw=1.2, label=true_kl)
        mean = _("mean {mean}").format(mean=f"{values.mean():.2f}")
        ax.axvline(values.mean(), color=KL_COLORS[name], ls=":", lw=1.5, label=mean)
        st = summary[name]
        ax.set_title(
            _("{name} per answer: std {std} (max {max})").format(
                name=name, std=f"{st['std']:.2f}", max=f"{values.max():.1f}"
            ),
            fontsize=9,
        )
        ax.set_xlabel(_("{name} summed over the answer's tokens").format(name=name))
        ax.legend(fontsize=7)
    axes[0].set_ylabel(_("answers (log scale)"))
    fig.suptitle(
        _("{n} answers of {policy}, KL to the warm-up model").format(n=f"{summary['n']:,}", policy=policy),
        fontsize=10,
    )


def draw_kl_run(fig, curves: KLCurves) -> None:
    """Three panels against the PPO step: the total reward per answer, its two parts (the verifier's score, and the
    KL part -beta x summed KL) (thin: every step; thick: trailing average)."""
    from rlvr.widgets import fresh_axes

    prepare_figures()
    axes = fresh_axes(fig, 1, 3)
    fig.subplots_adjust(top=0.8, wspace=0.35)
    panels = (
        (curves.total, curves.total_smooth, _("the total reward"), _("score + KL part, per answer")),
        (curves.score, curves.score_smooth, _("its score part (the verifier)"), _("mean score (0 wrong, 1 right)")),
        (curves.kl_reward, curves.kl_reward_smooth, _("its KL part"), _(r"$-\beta \times$ summed KL$_t$ per answer")),
    )
    for ax, (raw, smooth, title, label) in zip(axes, panels):
        ax.plot(curves.step, raw, color=PPO_COLOR, lw=0.8, alpha=0.35, label=_("every step"))
        ax.plot(curves.step, smooth, color=PPO_COLOR, lw=2, label=_("trailing average"))
        ax.axhline(0, color=EXACT, lw=0.6)
        ax.set_xlabel(_("PPO step (8 updates on each batch)"))
        ax.set_ylabel(label, fontsize=9)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[:2]:
        ax.set_ylim(0, 1)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(
        _(
            "PPO from the warm-up model with a KL penalty, β = {beta} (KL unclamped, summed over each answer's tokens)"
        ).format(beta=f"{curves.beta:g}"),
        fontsize=10,
    )
    plain_math_labels(fig)


def draw_memory(
    fig, billions: float = 7.0, bytes_trained: int = BYTES_TRAINED, bytes_frozen: int = BYTES_FROZEN
) -> None:
    """Stacked horizontal bars: GB per model for each set-up, with totals (and the lecture's, at 7B/16/2)."""
    from rlvr.widgets import fresh_axes, label_margin

    prepare_figures()
    ax = fresh_axes(fig)
    names = list(SETUPS)[::-1]
    setup_labels = [_(SETUP_NAMES[setup]) for setup in names]
    fig.subplots_adjust(left=max(0.2, label_margin(fig, setup_labels)), right=0.97, top=0.88, bottom=0.16)
    for y, setup in enumerate(names):
        left = 0.0
        for model, gb in memory_gb(billions * 1e9, SETUPS[setup], bytes_trained, bytes_frozen).items():
            ax.barh(y, gb, left=left, color=MODEL_COLORS[model], edgecolor="white")
            left += gb
        lecture = LECTURE_GB.get(setup)
        total = f"{left:,.0f} GB"
        if lecture and (billions, bytes_trained, bytes_frozen) == (7.0, 16, 2):
            total = _("{total} (lecture: {lecture})").format(total=total, lecture=f"{lecture:g}")
        ax.text(left, y, f"  {total}", va="center", fontsize=9)
    for model, trained in SETUPS["PPO"].items():
        state = _("{model} (trained)") if trained else _("{model} (frozen)")
        ax.barh(0, 0, color=MODEL_COLORS[model], label=state.format(model=_(MODEL_NAMES[model])))
    ax.set_yticks(range(len(names)), setup_labels)
    ax.set_xlabel(_("GB of weights, gradients and optimiser state (1 GB = 1e9 bytes; activations not counted)"))
    total = max(memory_totals(billions * 1e9, bytes_trained, bytes_frozen).values())
    ax.set_xlim(0, total * 1.35)
    ax.set_title(
        _("{billions}B parameters, {trained} bytes per trained and {frozen} per frozen parameter").format(
            billions=f"{billions:g}", trained=bytes_trained, frozen=bytes_frozen
        ),
        fontsize=10,
    )
    ax.legend(fontsize=8, loc="lower right")


def memory_panel():
    """Sliders: parameters (0.5B-70B), bytes per trained parameter, bytes per frozen parameter."""
    from rlvr.widgets import REMEMBERED_IMAGES, AnalyticPanel, choice_slider, int_slider

    controls = {
        "billions": choice_slider([0.5, 1.5, 3.0, 7.0, 14.0, 32.0, 70.0], 7.0, description=_("parameters (B)")),
        "bytes_trained": int_slider(
            "bytes_trained", 2, 20, 1, BYTES_TRAINED, description=_("bytes / trained parameter")
        ),
        "bytes_frozen": choice_slider([1, 2, 4], BYTES_FROZEN, description=_("bytes / frozen parameter")),
    }
    fig_kw = {"figsize": (10, 3.6)}
    return AnalyticPanel(
        draw_memory, controls, remember=REMEMBERED_IMAGES, title=_("What the models of PPO and GRPO weigh"), **fig_kw
    )
