"""Notebook 05 in words: what the learner reads of the toy model, the per-token weights, Kimi's length reward and
the arithmetic runs of `rlvr.experiments.length_bias`, and every quantitative statement of lecture sections 4.2 and 6.2
and Exercises 4, 5 and 7(d) next to our measurement (`rows`, what `python -m rlvr reproduce` judges)."""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from rlvr.experiments.common import (
    Row,
    claim_row,
    columns_text,
    first_step,
    lecture_row,
    pad,
    shown,
    signed,
    smooth,
    text_width,
)
from rlvr.experiments.length_bias import (
    ALL_LOSSES,
    ANSWERS_PER_STEP,
    DR_GRPO,
    GROUP_SIZE,
    GRPO,
    INIT_LOGIT,
    L_CAP,
    N_RUNS,
    OPTIMIZER,
    OPTIMIZER_NAMES,
    P_CORRECT,
    PATH_NAMES,
    SMOOTH,
    STEPS,
    SUMMARY_COLUMNS,
    TOKEN_MEAN,
    TOY_LOSSES,
    expected_gradients,
    kimi_arithmetic_runs,
    last_mean,
    mean_thinking_tokens,
    run_summary,
    token_weights_by_autograd,
    toy_final_lengths,
    toy_final_logits,
    train_toy,
    train_toy_pair,
)
from rlvr.i18n import N_, _, join
from rlvr.objectives import kimi_length_reward


def summary_text(runs: dict, last: int = 20) -> str:
    """One line per run of `run_summary` as a text table ('—' where a share has no answers behind it)."""

    headers = {key: _(header) for key, header in SUMMARY_COLUMNS.items()}

    def cell(key: str, x: float) -> str:
        width = text_width(headers[key])
        if not math.isfinite(x):
            return pad("—", width, ">")
        return pad(f"{x:.1f}" if key == "mean_length" else f"{x:.1%}", width, ">")

    lines = [pad(_("last {n} steps").format(n=last), 28) + "  " + "  ".join(headers.values())]
    for label, result in runs.items():
        summary = run_summary(result, last)
        lines.append(pad(label, 28) + "  " + "  ".join(cell(key, summary[key]) for key in SUMMARY_COLUMNS))
    return "\n".join(lines)


def exercise4_rows() -> list[Row]:
    """Exercise 4 by autograd through rlvr.objectives.aggregate_loss: one correct (100 tokens, A=+1), one wrong."""
    rows = []
    for algo, lecture in ((GRPO, ("0.01", "-0.001")), (DR_GRPO, ("0.001", "-0.001"))):
        weights = token_weights_by_autograd([1.0, -1.0], [100, 1000], algo.name, 1000)
        for w, lec, which in zip(weights.tolist(), lecture, ("correct (100 tok, A=+1)", "wrong (1000 tok, A=-1)")):
            rows.append(
                lecture_row(
                    section="Ex. 4",
                    figure=f"{algo.label} per-token weight, {which}",
                    lecture=lec,
                    values=[w],
                    lecture_is_a_run=False,
                    note="autograd of aggregate_loss",
                )
            )
    return rows


def exercise5_rows() -> list[Row]:
    """Exercise 5 with rlvr.objectives.kimi_length_reward: lengths 200, 400, 600, 1000, the first two correct."""
    rewards = kimi_length_reward(torch.tensor([200, 400, 600, 1000]), torch.tensor([True, True, False, False]))
    return [
        lecture_row(
            section="Ex. 5",
            figure=f"Kimi length reward, {n} tokens, {'correct' if c else 'wrong'}",
            lecture=lec,
            values=[r],
            lecture_is_a_run=False,
        )
        for n, c, lec, r in zip((200, 400, 600, 1000), (1, 1, 0, 0), ("0.5", "0.25", "0", "-0.5"), rewards.tolist())
    ]


FIGURE_TEXTS = (  # the exercise rows' figures (English in `python -m rlvr reproduce`), translated in `row_lines`
    N_("GRPO per-token weight, correct (100 tok, A=+1)"),
    N_("GRPO per-token weight, wrong (1000 tok, A=-1)"),
    N_("Dr. GRPO per-token weight, correct (100 tok, A=+1)"),
    N_("Dr. GRPO per-token weight, wrong (1000 tok, A=-1)"),
    N_("Kimi length reward, 200 tokens, correct"),
    N_("Kimi length reward, 400 tokens, correct"),
    N_("Kimi length reward, 600 tokens, wrong"),
    N_("Kimi length reward, 1000 tokens, wrong"),
)


def row_lines(rows: list[Row], decimals: int = 4) -> str:
    """One line per row, our value next to the lecture's: what a cell prints where the notebook's one table (at its
    end) will repeat the rows."""
    width = max(text_width(shown(row.figure)) for row in rows)
    return "\n".join(
        f"{pad(shown(row.figure), width)}  {signed(row.measured, decimals):>8s}"
        + ("   " + _("(lecture: {value})").format(value=f"{row.lecture:g}") if isinstance(row.lecture, float) else "")
        for row in rows
    )


def expected_gradient_text(p_correct: float = P_CORRECT, group_size: int = GROUP_SIZE) -> str:
    """The exact expected gradients at the start, one line per objective (true, GRPO, Dr. GRPO), 0 where exact."""
    grads = expected_gradients(p_correct=p_correct, group_size=group_size)
    title = _("expected gradient w.r.t. the continue logits (p = {p}, G = {g})").format(p=p_correct, g=group_size)
    header = pad(title, 65) + pad(_(PATH_NAMES[0]), 12, ">") + "  " + pad(_(PATH_NAMES[1]), 12, ">")  # over the columns
    lines = [header]
    for name, label in (
        ("true", _("true objective  ∂E[r]/∂θ")),
        ("grpo", _("GRPO loss       E[∂L/∂θ]")),
        (DR_GRPO.name, _("Dr. GRPO loss   E[∂L/∂θ]")),
    ):
        lines.append(f"  {pad(label, 62)} {signed(grads[name][0], 4):>12s}  {signed(grads[name][1], 4):>12s}")
    lines.append("  " + _("(0: below 1e-12, the float round-off of an exact 0)"))
    return "\n".join(lines)


def toy_drift_text(runs: dict, cap: int = L_CAP) -> str:
    """When the GRPO loss's lengths get to the cap (within 10%) and to 0 (under one token), from the mean over runs."""
    lengths = runs["grpo"].mean_length().mean(axis=1)  # [S+1, 2]
    wrong = first_step(lengths[:, 1] >= 0.9 * cap)
    right = first_step(lengths[:, 0] <= 1.0)
    return _(
        "GRPO loss: the wrong path's mean length reaches {tokens} tokens (90% of the cap) at step {wrong}; the "
        "correct path's falls below 1 token at step {right} (of {steps})"
    ).format(
        tokens=f"{0.9 * cap:g}",
        wrong="—" if wrong is None else wrong,
        right="—" if right is None else right,
        steps=len(lengths) - 1,
    )


def optimizer_text(p_correct: float = P_CORRECT, seed: int = 0) -> str:
    """Both losses trained with SGD and with Adam on the same random numbers: each one's thinking tokens per path at
    the last step, the mean over its runs and (in brackets) the spread (std) between them."""
    lines = [
        _(
            "thinking tokens after {steps} steps, correct path / wrong path: mean over {runs} runs (std between runs)"
        ).format(steps=STEPS, runs=N_RUNS)
    ]
    for optimizer, name in OPTIMIZER_NAMES.items():
        runs = train_toy_pair(p_correct, seed=seed, optimizer=optimizer)
        cells = []
        for loss, run in runs.items():
            last = run.mean_length()[-1]  # [R, 2]
            mean, spread = last.mean(axis=0), last.std(axis=0)  # [2], [2]
            cells.append(
                _("{loss}: {right} ({right_sd}) / {wrong} ({wrong_sd})").format(
                    loss=_("{algo} loss").format(algo=TOY_LOSSES[loss].label),
                    right=f"{mean[0]:.1f}",
                    right_sd=f"{spread[0]:.1f}",
                    wrong=f"{mean[1]:.1f}",
                    wrong_sd=f"{spread[1]:.1f}",
                )
            )
        lines.append("  " + pad(name, 5) + "   ".join(cells))
    return "\n".join(lines)


def length_split_text(pairs: dict) -> str:
    """For {p: train_toy_pair(p)}: the GRPO loss's mean thinking tokens over all answers at the start and the end,
    and per path at the end (means over runs)."""
    lines = []
    for p_correct, runs in pairs.items():
        grpo = runs["grpo"]
        overall = grpo.mean_length_all().mean(axis=1)  # [S+1]
        paths = grpo.mean_length()[-1].mean(axis=0)  # [2]
        lines.append(
            _(
                "p(correct) = {p}: all answers {start} thinking tokens at the start, {end} after {steps} steps "
                "(correct path {correct}, wrong path {wrong})"
            ).format(
                p=p_correct,
                start=f"{overall[0]:.1f}",
                end=f"{overall[-1]:.1f}",
                steps=len(overall) - 1,
                correct=f"{paths[0]:.1f}",
                wrong=f"{paths[1]:.1f}",
            )
        )
    return "\n".join(lines)


def gradient_rows() -> list[Row]:
    """The enumerated expected gradients at the start of training (p = 0.3, G = 8)."""
    grads = expected_gradients()
    return [
        claim_row(
            section="4.2",
            figure="true gradient of E[reward] w.r.t. both length logits (max |.|)",
            lecture=0.0,
            values=[np.abs(grads["true"]).max()],
            band=(0.0, 1e-9),
            note="exact enumeration; 0 up to float error",
        ),
        claim_row(
            section="4.2",
            figure="Dr. GRPO loss: expected gradient w.r.t. both length logits (max |.|)",
            lecture=0.0,
            values=[np.abs(grads[DR_GRPO.name]).max()],
            band=(0.0, 1e-9),
            note="exact enumeration; 0 up to float error",
        ),
        claim_row(
            section="4.2",
            figure="GRPO loss: expected descent step on the correct path's logit (< 0 = shorter)",
            lecture=None,
            values=[-grads["grpo"][0]],
            band=None,
            note="exact enumeration; not 0",
        ),
        claim_row(
            section="4.2",
            figure="GRPO loss: expected descent step on the wrong path's logit (> 0 = longer)",
            lecture=None,
            values=[-grads["grpo"][1]],
            band=None,
            note="exact enumeration; not 0",
        ),
    ]


def toy_rows(seeds=(0,), steps: int = STEPS) -> list[Row]:
    """Toy training at p = 0.3 (the lecture) and p = 0.7 (Exercise 7(d)): final thinking tokens per path and loss.

    GRPO: the lengths themselves (to the cap, to 0). Dr. GRPO: the change of each continue logit, which has
    expectation exactly 0 under SGD (the expected gradient is 0 everywhere); the band is 3 standard errors of the
    mean over runs. (The mean LENGTH over runs drifts up a little even then: length is convex in the logit.)
    """
    rows = []
    start = float(mean_thinking_tokens(INIT_LOGIT))
    run_seeds = tuple(seeds)
    for p in (P_CORRECT, 0.7):
        lecture = p == P_CORRECT
        logits = toy_final_logits(p, seeds, steps)
        lengths = {loss: mean_thinking_tokens(value) for loss, value in logits.items()}
        n = len(lengths["grpo"])
        section = "4.2" if lecture else "Ex. 7(d)"
        g_c, g_w = lengths["grpo"][:, 0], lengths["grpo"][:, 1]
        rows.append(
            Row(
                section=section,
                figure=f"toy p={p}, GRPO loss: wrong path's thinking tokens",
                lecture="the cap" if lecture else None,
                measured=float(g_w.mean()),
                band=(0.9 * L_CAP, L_CAP) if lecture else None,
                unit="tokens",
                spread=float(g_w.std()),
                seeds=run_seeds,
                note=f"cap {L_CAP}, start {start:.1f}, {n} runs; band: 'to the cap' read as within 10% of it",
            )
        )
        rows.append(
            Row(
                section=section,
                figure=f"toy p={p}, GRPO loss: correct path's thinking tokens",
                lecture=0.0 if lecture else None,
                measured=float(g_c.mean()),
                band=(0.0, 1.0) if lecture else None,
                unit="tokens",
                spread=float(g_c.std()),
                seeds=run_seeds,
                note=f"start {start:.1f}; band: 'to 0' read as under one token",
            )
        )
        for path in (0, 1):
            change = logits[DR_GRPO.name][:, path] - INIT_LOGIT
            se = float(change.std() / math.sqrt(n))
            tokens = float(mean_thinking_tokens(INIT_LOGIT + change.mean())) - start
            rows.append(
                Row(
                    section=section,
                    figure=f"toy p={p}, Dr. GRPO loss: change of the {PATH_NAMES[path]}'s continue logit",
                    lecture=0.0 if lecture else None,
                    measured=float(change.mean()),
                    band=(-3 * se, 3 * se) if lecture else None,
                    spread=float(change.std()),
                    seeds=run_seeds,
                    note=f"{tokens:+.2f} tokens at the mean logit; ± is the std over {n} runs; band: the "
                    f"lecture's exact 0 ± 3u, u = std / √{n} (the rule with r = 0, an exact claim)",
                )
            )
    return rows


def kimi_arithmetic_rows(fast: bool | None = None, progress: bool = False, last: int = 20) -> list[Row]:
    """Kimi's length reward on the arithmetic task: think-first share and accuracy over each run's last steps,
    and the accuracy change against the run without it (band: 3 binomial standard errors of the difference)."""
    runs = kimi_arithmetic_runs(fast=fast, progress=progress, translate=False)
    summaries = {label: run_summary(result, last) for label, result in runs.items()}
    labels = list(runs)
    base = summaries[labels[0]]
    rows = []
    for label in labels:
        s = summaries[label]
        rows.append(
            Row(
                section="6.2",
                figure=f"arithmetic, {label}: think-first share, last {last} steps",
                measured=s["cot_fraction"],
                unit="%",
            )
        )
        rows.append(
            Row(
                section="6.2",
                figure=f"arithmetic, {label}: accuracy, last {last} steps",
                measured=s["accuracy"],
                unit="%",
            )
        )
    for label, lecture in ((labels[1], "< 0 (early hurts)"), (labels[2], "~0 (implied)")):
        result = runs[label]
        n = min(last, len(result.history)) * result.config.prompts_per_step * result.config.group_size
        a, b = summaries[label]["accuracy"], base["accuracy"]
        se = math.sqrt((a * (1 - a) + b * (1 - b)) / n)
        band = (-1.0, -3 * se) if lecture.startswith("<") else (-3 * se, 3 * se)
        rows.append(
            Row(
                section="6.2",
                figure=f"arithmetic, accuracy change: {label} vs none",
                lecture=lecture,
                measured=a - b,
                band=band,
                unit="%",
                note=f"one seed; band from 3 binomial standard errors ({n} answers per run)",
            )
        )
    return rows


def rows(seeds=(0,), fast: bool | None = None) -> list[Row]:
    """Every quantitative statement of notebook 05 next to our measurement (the toy is cheap: full size always)."""
    return exercise4_rows() + exercise5_rows() + gradient_rows() + toy_rows(seeds) + kimi_arithmetic_rows(fast=fast)


def toy_text(p_correct: float = P_CORRECT, group_size: int = GROUP_SIZE) -> str:
    """The setup cell's line on the toy model: its settings, and how long one training of both losses takes here."""
    start = time.perf_counter()
    train_toy_pair(p_correct, group_size)
    seconds = time.perf_counter() - start
    return _(
        "toy model (§2 below): p(correct) = {p}, G = {g}, at most {cap} thinking tokens, {runs} runs of {steps} steps "
        "of {answers} answers, {optimizer}; both losses trained in {seconds} s just now"
    ).format(
        p=p_correct,
        g=group_size,
        cap=L_CAP,
        runs=N_RUNS,
        steps=STEPS,
        answers=ANSWERS_PER_STEP,
        optimizer=OPTIMIZER_NAMES[OPTIMIZER],
        seconds=f"{seconds:.2f}",
    )


def exercise4_text(correct_length: int = 100, wrong_length: int = 1000, max_len: int = 1000) -> str:
    """Exercise 4's per-token weights under the three aggregations, by autograd through
    rlvr.objectives.aggregate_loss, next to the lecture's (it states GRPO's and Dr. GRPO's)."""
    lecture = {
        GRPO.name: join(("+0.01", "-0.001")),
        DR_GRPO.name: join(("+0.001", "-0.001")),
        TOKEN_MEAN.name: _("(not in the lecture)"),
    }
    rows = [
        (
            _("aggregation (aggregate_loss mode)"),
            _("correct ({n} tokens, A = +1)").format(n=correct_length),
            _("wrong ({n} tokens, A = -1)").format(n=wrong_length),
            _("lecture"),
        )
    ]
    for loss in ALL_LOSSES:
        weights = token_weights_by_autograd([1.0, -1.0], [correct_length, wrong_length], loss, max_len).tolist()
        name = _("{label} ({mode})").format(label=_(TOY_LOSSES[loss].label), mode=TOY_LOSSES[loss].aggregation)
        rows.append((name, *(signed(w, 4) for w in weights), lecture[loss]))
    return columns_text(rows)


def token_mean_text(p_correct: float = P_CORRECT, batches=(ANSWERS_PER_STEP, 16 * ANSWERS_PER_STEP)) -> str:
    """The token mean in the toy: final thinking tokens per path for a small and a large batch, next to GRPO's."""
    start = float(mean_thinking_tokens(INIT_LOGIT))
    rows = [(_("loss, answers per step"), _(PATH_NAMES[0]), _(PATH_NAMES[1]))]
    grpo = train_toy("grpo", p_correct=p_correct).mean_length()[-1].mean(axis=0)  # [2]
    row_name = _("{loss}, {answers}")  # a loss and its answers per step
    rows.append((row_name.format(loss=_(GRPO.label), answers=ANSWERS_PER_STEP), f"{grpo[0]:.1f}", f"{grpo[1]:.1f}"))
    for batch in batches:
        final = train_toy("token_mean", p_correct=p_correct, answers_per_step=batch).mean_length()[-1].mean(axis=0)
        rows.append((row_name.format(loss=_(TOKEN_MEAN.label), answers=batch), f"{final[0]:.1f}", f"{final[1]:.1f}"))
    head = _("thinking tokens after {steps} steps (mean of {runs} runs, p = {p}, start {start} on both paths)").format(
        steps=STEPS, runs=N_RUNS, p=p_correct, start=f"{start:.1f}"
    )
    return head + "\n" + columns_text(rows)


OUTCOME_ROWS = {
    "mean_length_correct": N_("mean length of the correct answers (tokens)"),
    "mean_length_wrong": N_("mean length of the wrong answers (tokens)"),
    "mean_length": N_("mean length of all answers (tokens)"),
    "cot_fraction": N_("think-first share"),
    "cot_accuracy": N_("accuracy of the think-first answers"),
}  # history key -> what the learner reads (translated where shown)


def outcome_lengths_text(result) -> str:
    """A run's lengths by outcome, its think-first share and its think-first accuracy at its first and last step."""
    first, last = result.history[0], result.history[-1]

    def cell(key: str, value: float) -> str:
        return f"{value:.1%}" if key in ("cot_fraction", "cot_accuracy") else f"{value:.1f}"

    rows = [("", _("step {step}").format(step=0), _("step {step}").format(step=len(result.history) - 1))]
    rows += [(_(label), cell(key, first[key]), cell(key, last[key])) for key, label in OUTCOME_ROWS.items()]
    return columns_text(rows)


def kimi_story_text(runs: dict, switch_on: int, within: float = 0.05, pays: float = 0.65) -> str:
    """What §4 reads off the three Kimi runs (trailing 5-step averages): how far the early reward pulls the think-first
    share down and when; when its think-first answers first reach `pays` accuracy (where thinking pays despite the
    reward); when it gets back within `within` of the run without the reward; where that run stands at the late
    switch, and whether the late run matches it until then."""
    (base_label, base), (early_label, early), (late_label, late) = runs.items()
    share_b, share_e = smooth(base.curve("cot_fraction"), SMOOTH), smooth(early.curve("cot_fraction"), SMOOTH)
    low = int(np.nanargmin(share_e))
    pays_at = first_step(smooth(early.curve("cot_accuracy"), SMOOTH) >= pays)
    share_back = first_step(share_b - share_e <= within, start=low)
    accuracy_gap = smooth(base.curve("accuracy"), SMOOTH) - smooth(early.curve("accuracy"), SMOOTH)  # [steps]
    accuracy_back = first_step(accuracy_gap <= within, start=low)
    think_b = smooth(base.curve("cot_accuracy"), SMOOTH)
    same = all(a == b for a, b in zip(base.curve("accuracy")[:switch_on], late.curve("accuracy")[:switch_on]))

    def step(at: int | None) -> str:
        return (
            _("step {step}").format(step=at) if at is not None else _("no step of the {n}").format(n=len(share_e) - 1)
        )

    return "\n".join(
        [
            _(
                "{run}: think-first share {start} at step 0, lowest {lowest} at step {step} (the run with {base}: "
                "{there} there)"
            ).format(
                run=early_label,
                start=f"{share_e[0]:.0%}",
                lowest=f"{share_e[low]:.0%}",
                step=low,
                base=base_label,
                there=f"{share_b[low]:.0%}",
            ),
            "  "
            + _("its think-first answers are first right {share} of the time or more at {when}").format(
                share=f"{pays:.0%}", when=step(pays_at)
            ),
            "  "
            + _(
                "back within {points} points of the run with {base}: think-first share at {share}, accuracy at "
                "{accuracy}"
            ).format(
                points=f"{100 * within:.0f}", base=base_label, share=step(share_back), accuracy=step(accuracy_back)
            ),
            (
                _(
                    "{run}: identical to the run with {base} up to step {step}; that run thinks first in "
                    "{share} of its answers at step {step}, and its think-first answers are right {right} of the time"
                )
                if same
                else _(
                    "{run}: not identical to the run with {base} up to step {step}; that run thinks first in "
                    "{share} of its answers at step {step}, and its think-first answers are right {right} of the time"
                )
            ).format(
                run=late_label,
                base=base_label,
                step=switch_on,
                share=f"{share_b[switch_on]:.0%}",
                right=f"{think_b[switch_on]:.0%}",
            ),
        ]
    )


def lecture_and_us_text(kimi_runs: dict, last: int = 20) -> str:
    """Every figure and claim of the lecture for notebook 05 next to this run's, for the learner: no bands and no
    verdicts (`python -m rlvr reproduce` judges the same figures)."""
    grpo_w = token_weights_by_autograd([1.0, -1.0], [100, 1000], "grpo", 1000).tolist()
    dr_w = token_weights_by_autograd([1.0, -1.0], [100, 1000], DR_GRPO.name, 1000).tolist()
    grads = expected_gradients()
    start = float(mean_thinking_tokens(INIT_LOGIT))
    toy = {p: {loss: v.mean(axis=0) for loss, v in toy_final_lengths(p).items()} for p in (P_CORRECT, 0.7)}
    kimi = kimi_length_reward(torch.tensor([200, 400, 600, 1000]), torch.tensor([True, True, False, False])).tolist()
    (base_label, base), (early_label, early), (late_label, late) = kimi_runs.items()
    accuracy = {label: last_mean(result, "accuracy", last) for label, result in kimi_runs.items()}
    lowest = float(np.nanmin(smooth(early.curve("cot_fraction"), SMOOTH)))

    def lengths(p: float, loss: str) -> str:
        correct, wrong = toy[p][loss]
        return _("wrong {wrong}, correct {correct} tokens (cap {cap}, start {start})").format(
            wrong=f"{wrong:.1f}", correct=f"{correct:.1f}", cap=L_CAP, start=f"{start:.1f}"
        )

    def exercise(number: str) -> str:
        return _("Ex. {number}").format(number=number)

    def loss_steps(loss: str, p: float) -> str:
        return _("{loss} loss, p = {p}, {steps} steps").format(loss=loss, p=p, steps=STEPS)

    zero = max(np.abs(grads["true"]).max(), np.abs(grads[DR_GRPO.name]).max())
    first_share = base.history[0]["cot_fraction"]
    return columns_text(
        [
            ("", _("what"), _("lecture"), _("this run")),
            (
                exercise("4"),
                _("GRPO, per token: correct, wrong"),
                join(("+0.01", "-0.001")),
                join((signed(grpo_w[0], 4), signed(grpo_w[1], 4))),
            ),
            (
                exercise("4"),
                _("Dr. GRPO, per token: correct, wrong"),
                join(("+0.001", "-0.001")),
                join((signed(dr_w[0], 4), signed(dr_w[1], 4))),
            ),
            (
                "§4.2",
                _("true gradient; Dr. GRPO's expected one"),
                "0",
                _("{value} (up to float round-off)").format(value=signed(zero, 4)),
            ),
            (
                "§4.2",
                loss_steps("GRPO", P_CORRECT),
                _("wrong to the cap, correct to 0"),
                lengths(P_CORRECT, "grpo"),
            ),
            ("§4.2", loss_steps("Dr. GRPO", P_CORRECT), _("no length bias"), lengths(P_CORRECT, DR_GRPO.name)),
            (exercise("7(d)"), loss_steps("GRPO", 0.7), _("(asked)"), lengths(0.7, "grpo")),
            (
                exercise("5"),
                _("length reward of the four answers"),
                join(("0.5", "0.25", "0", "-0.5")),
                join(signed(r, 2) for r in kimi),
            ),
            (
                "§6.2",
                _("{run}: lowest think-first share").format(run=early_label),
                _("hurts if on too early"),
                _("{lowest} (from {first})").format(lowest=f"{lowest:.0%}", first=f"{first_share:.0%}"),
            ),
            (
                "§6.2",
                _("mean accuracy, last {n} steps: {run}").format(n=last, run=base_label),
                "",
                f"{accuracy[base_label]:.1%}",
            ),
            ("§6.2", f"   {early_label}", "", f"{accuracy[early_label]:.1%}"),
            ("§6.2", f"   {late_label}", "", f"{accuracy[late_label]:.1%}"),
        ]
    )
