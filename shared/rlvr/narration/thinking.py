"""Notebook 03 in words: what the learner reads of the teacher, the model, one GRPO step, the warm-up, the runs and
Exercise 7, the set-up line (what the first run trains and about how long), and every number of lecture sections
5.1-5.3 and Exercises 3 and 6 next to ours, for the learner (`lecture_and_us_text`) and judged (`rows`, what
`python -m rlvr reproduce` runs), from the experiments of `rlvr.experiments.thinking`."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from rlvr import budget
from rlvr.algorithms import ALGORITHMS, DR_GRPO, RFT
from rlvr.config import size
from rlvr.experiments.bandit import no_signal_share
from rlvr.experiments.common import (
    Row,
    claim_row,
    finite_mean,
    fmt,
    lecture_row,
    multiple,
    pad,
    seconds_text,
    shown,
    text_width,
)
from rlvr.experiments.thinking import (
    ALGO_LABELS,
    COMPARED_ALGOS,
    EARLY_STEPS,
    LATE_STEPS,
    PASS_SAMPLES,
    TRAINING_PANELS,
    StageShape,
    exercise7_configs,
    fast_sizes,
    knob_of,
    late_mean,
    measure,
    other_seed_configs,
    perfect_teacher_other_seed,
    rl_config,
    same_steps,
    summary_row,
    teacher_answer_accuracy,
    teacher_chain_accuracy,
    teacher_error_steps,
    thinking_step,
    warmup_on_disk,
    warmup_steps,
)
from rlvr.i18n import N_, _, join, join_clauses
from rlvr.model import TinyTransformer
from rlvr.runs import RunResult, history_curve
from rlvr.sft import SFTConfig, train_sft
from rlvr.task import (
    DEFAULT_TEACHER_ERROR_RATE,
    VOCAB,
    chain_text,
    direct_answer,
    encode,
    prompt_text,
    sample_prompts,
    teacher_chain_digits,
    think_answer,
    verify,
)
from rlvr.train import RLConfig
from rlvr.train import cache_entry as rl_entry

# The lecture's numbers as it writes them (the digits set each row's rounding r; "~" marks an approximate value)
LECTURE_TEACHER_CHAIN = "35%"  # "0.9^10 ≈ 35%"
LECTURE_WARM_T1 = {"accuracy": "19%", "cot_fraction": "~50%", "cot_accuracy": "32%", "direct_accuracy": "6%"}  # "half"
LECTURE_WARM_GREEDY = {"cot_accuracy": "100%", "cot_fraction": "65%", "accuracy": "70%"}  # "35% chose direct"
LECTURE_WARM_LENGTH = "9.1"
LECTURE_GRPO = {"cot_fraction": "98%", "mean_length": "14.9", "cot_accuracy": "94%", "all_same": "~55%"}
LECTURE_ALGOS = {DR_GRPO.name: "94%", RFT.name: "96%"}  # "Dr. GRPO 94%, RFT 96%" (read as think-first accuracy)
LECTURE_WARM_PASS16 = "98%"


def show_examples(n: int = 4, error_rate: float = DEFAULT_TEACHER_ERROR_RATE, seed: int = 0) -> None:
    """Print n prompts with the direct answer, the right chain of thought and a noisy teacher's chain."""
    rng = np.random.default_rng(seed)
    prompts = sample_prompts(n, rng)  # [n, 10]
    chains = teacher_chain_digits(prompts, error_rate, rng)  # [n, 10]
    for digits, chain in zip(prompts, chains):
        teacher = chain_text(chain)
        errors = teacher_error_steps(digits, chain)
        right = verify(digits, teacher).correct
        steps = join(errors)
        if not errors:
            note = _("no error")
        elif len(errors) == 1:
            note = (
                _("errs at step {steps}; final answer right")
                if right
                else _("errs at step {steps}; final answer wrong")
            )
        else:
            note = (
                _("errs at steps {steps}; final answer right")
                if right
                else _("errs at steps {steps}; final answer wrong")
            )
        print(
            _("prompt {prompt}   direct {direct}   think {think}   teacher {teacher}  ({note})").format(
                prompt=prompt_text(digits),
                direct=direct_answer(digits),
                think=think_answer(digits),
                teacher=teacher,
                note=note.format(steps=steps),
            )
        )


MODEL_EXAMPLE = np.array([9, 4, 5, 8, 0, 7, 3, 0, 2, 1])  # the lecture's prompt "9458073021=" (sum 39)


def token_line(name: str, text: str) -> str:
    """'answer  [9386636689]#9$   ids 11 9 3 ...  (15 tokens)': a string and its token ids."""
    ids = encode(text)
    return "  " + _("{name} {text} ids {ids}  ({n} tokens)").format(
        name=pad(name, 8), text=f"{text:<17}", ids=" ".join(map(str, ids)), n=len(ids)
    )


def model_card(model: TinyTransformer | None = None, digits=MODEL_EXAMPLE) -> list[str]:
    """A few lines on the model and its tokenizer, shown on one prompt and its two right answers."""
    model = model or TinyTransformer()
    cfg = model.cfg
    parts = {
        _("token + position embeddings"): model.tok_emb.weight.numel() + model.pos_emb.weight.numel(),
        _("the two blocks (attention + MLP)"): sum(p.numel() for p in model.blocks.parameters()),
        _("final layer norm"): sum(p.numel() for p in model.ln_f.parameters()),
    }
    return [
        _("model: a character-level GPT, {n} parameters").format(n=f"{model.num_parameters():,}"),
        "  "
        + _(
            "{layers} layers, {heads} heads, width {width}, MLP {mlp}, at most {tokens} tokens (prompt + answer)"
        ).format(layers=cfg.n_layers, heads=cfg.n_heads, width=cfg.d_model, mlp=cfg.d_mlp, tokens=cfg.block_size),
        "  " + join(f"{name} {count:,}" for name, count in parts.items()),
        "  " + _("attention adds a learned bias per head and offset ('look k tokens back');"),
        "  "
        + _(
            "layer 1 attends by that offset only (the prompt digit the next chain step adds sits 11 tokens back); "
            "the output layer reuses the token embeddings"
        ),
        _("tokenizer: one token per character, {n} tokens: {tokens} and '{padding}' (padding)").format(
            n=cfg.vocab_size, tokens=" ".join(VOCAB[:-1]), padding=VOCAB[-1]
        ),
        token_line(_("prompt"), prompt_text(digits)),
        token_line(_("think"), think_answer(digits)),
        token_line(_("direct"), direct_answer(digits)),
        _("in: token ids [B, T]; out: next-token logits [B, T, {vocab}] (one distribution per position)").format(
            vocab=cfg.vocab_size
        ),
    ]


WORDED_TENSORS = (N_("per-token loss"), N_("per-answer loss"))  # tensors named in words (translated where printed)


def tensor_name(name: str) -> str:
    """A tensor's name as printed: a worded one in the current language, a code one as written."""
    return _(name) if name in WORDED_TENSORS else name


STAGE_NAMES = {  # a stage of a GRPO step -> its name in print_step_shapes
    "prompts": N_("prompts"),
    "sample": N_("sample"),
    "score": N_("score"),
    "advantages": N_("advantages"),
    "loss": N_("loss"),
}


def print_step_shapes(stages: list[StageShape]) -> None:
    """The shapes as one chain, then each stage's tensor, shape, meaning and one group's values."""
    shape = {s.name: "[" + ", ".join(map(str, s.shape)) + "]" for s in stages}
    print(
        _(
            "prompts {prompts} -> responses {responses} -> rewards {rewards} -> advantages {advantages} -> loss "
            "(a scalar)"
        ).format(
            prompts=shape["prompts"],
            responses=shape["rollout.responses"],
            rewards=shape["rewards.view(P, G)"],
            advantages=shape["advantages"],
        )
        + "\n"
    )
    rows = [
        (
            _(STAGE_NAMES.get(s.stage, s.stage)),
            tensor_name(s.name),
            shape[s.name] if s.shape else _("scalar"),
            s.meaning,
        )
        for s in stages
    ]
    widths = [max(text_width(r[c]) for r in rows) for c in range(4)]
    for row, stage in zip(rows, stages):
        print("  ".join(pad(x, w) for x, w in zip(row, widths)).rstrip())
        print(" " * (widths[0] + 2) + _("e.g. {example}").format(example=stage.example))


def first_token_text(odds: dict, n_prompts: int) -> str:
    """One line: how close to a coin flip the first token is (P(`[`) percentiles), and where `[` leads."""
    return _(
        "first token: P([) over the {n} prompts, 10th / 50th / 90th percentile {low} / {median} / {high}; "
        "[ more likely than # on {leads} of them"
    ).format(
        n=n_prompts,
        low=f"{odds['p10']:.3f}",
        median=f"{odds['median']:.3f}",
        high=f"{odds['p90']:.3f}",
        leads=f"{odds['think_leads']:.1%}",
    )


def print_warmup(report: dict) -> None:
    """Two readable lines, temperature 1 and greedy; each share says how many answers it is measured on."""
    n = report["n_prompts"]
    for name, m in ((_("temperature 1"), report["temperature1"]), (_("greedy"), report["greedy"])):
        think = round(m["cot_fraction"] * n)
        direct = round((1 - m["cot_fraction"] - m.get("malformed_fraction", 0.0)) * n)
        print(
            _(
                "{name}: accuracy {accuracy} | think-first {think} of {n} answers, {think_right} right | {direct} | "
                "mean length {length} tokens"
            ).format(
                name=pad(name, 13, ">"),
                accuracy=f"{m['accuracy']:6.1%}",
                think=f"{m['cot_fraction']:6.1%}",
                n=n,
                think_right=share_of(m["cot_accuracy"], think),
                direct=_("direct {share} right").format(share=share_of(m["direct_accuracy"], direct))
                if direct
                else _("no direct answers"),
                length=f"{m['mean_length']:.1f}",
            )
        )


def share_of(value: float, n: int) -> str:
    """'97.1% of 1012' for a share measured on n answers, or 'none of 0' when there were none."""
    if not n or value is None or not math.isfinite(value):
        return _("none of 0")
    return _("{share} of {n}").format(share=f"{value:.1%}", n=n)


def pct(value: float) -> str:
    """A share as ' 12.3%', or '   n/a' for NaN (no answer of that format)."""
    return pad(_("n/a"), 6, ">") if value is None or not math.isfinite(value) else f"{value:6.1%}"


def eval_line(label: str, m: dict, n_prompts: int) -> str:
    """One model's held-out line with the counts behind each share (two models can share a rounded percentage)."""
    think = round(m["cot_fraction"] * n_prompts)
    return _(
        "{label}: accuracy {accuracy} ({right} of {n}), think-first {think} ({think_n}), think-first accuracy "
        "{think_accuracy}"
    ).format(
        label=pad(label, 9, ">"),
        accuracy=f"{m['accuracy']:.1%}",
        right=round(m["accuracy"] * n_prompts),
        n=n_prompts,
        think=f"{m['cot_fraction']:.1%}",
        think_n=think,
        think_accuracy=share_of(m["cot_accuracy"], think),
    )


def other_seed_titles(rl_seed: int) -> dict[str, str]:
    """What the progress lines call §6's runs with a second RL seed: algo -> 'Dr. GRPO, RL seed 1'."""
    return {algo: _("{algo}, RL seed {seed}").format(algo=ALGO_LABELS[algo], seed=rl_seed) for algo in COMPARED_ALGOS}


def perfect_teacher_title(rl_seed: int) -> str:
    """What the progress lines call Exercise 7(a)'s run with a second RL seed."""
    return _("7(a) teacher error 0, RL seed {seed}").format(seed=rl_seed)


def step_or_limit(step: int | None, steps: int) -> str:
    """'step 31', or 'not within 200 steps' for a run that never got there."""
    return _("step {step}").format(step=step) if step is not None else _("not within {n} steps").format(n=steps)


def second_seed_thinking_line(perfect: RunResult, default: RunResult, rl_seed: int, level: float = 0.9) -> str:
    """Exercise 7(a) on a second RL seed: the step each run's think-first share passed `level`, side by side."""

    def step_text(run: RunResult) -> str:
        return step_or_limit(thinking_step(run, level), len(run.history))

    return _(
        "7(a) with RL seed {seed}: thinking passes {level} at {step} (the default with RL seed {seed}: {base})"
    ).format(seed=rl_seed, level=f"{level:.0%}", step=step_text(perfect), base=step_text(default))


def first_token_reach_lines(
    default: dict,
    perfect: dict,
    lr: float,
    after: tuple[dict, dict] | None = None,
    steps: int = 0,
    pace: tuple[float, float] | None = None,
    pace_steps: int = 0,
) -> list[str]:
    """Exercise 7(a)'s why, measured on the two warm-ups (`thinking.first_token_reach` of each): the most a step that
    moves every weight by lr can move the first token's log-odds of `[` against `#` (lr x the L1 norm of their
    gradient), and the gradients' L2 norms; with `pace` (`thinking.first_token_pace` of each run over its first
    `pace_steps` steps), what the runs actually moved, against that bound; with `after` (the same for the two runs'
    policies after `steps` RL steps), the bound again at the end of RL."""
    ratio = perfect["l1"] / default["l1"]
    measured = []
    if pace is not None:
        measured = [
            _(
                "what the first {n} RL steps of each run did (traced again): the first token's mean log-odds rose "
                "{default} nats per step in the default run, {perfect} in the perfect teacher's ({ratio}); "
                "{default_share} and {perfect_share} of each one's bound at its start"
            ).format(
                n=pace_steps,
                default=f"{pace[0]:.3f}",
                perfect=f"{pace[1]:.3f}",
                ratio=multiple(f"{pace[1] / pace[0]:.2f}"),
                default_share=f"{pace[0] / (lr * default['l1']):.0%}",
                perfect_share=f"{pace[1] / (lr * perfect['l1']):.0%}",
            )
        ]
    end = []
    if after is not None:
        end = [
            _(
                "the same bound after {steps} RL steps: the default run {default} nats, the perfect teacher's run "
                "{perfect} ({ratio})"
            ).format(
                steps=steps,
                default=f"{lr * after[0]['l1']:.3f}",
                perfect=f"{lr * after[1]['l1']:.3f}",
                ratio=multiple(f"{after[1]['l1'] / after[0]['l1']:.2f}"),
            )
        ]
    return [
        _(
            "the most a step that moves every weight by lr ({lr}) can move the first token's mean log-odds of '[' "
            "against '#' (lr x the L1 norm of their gradient over the weights): default warm-up {default} nats, "
            "perfect teacher's {perfect} ({ratio})"
        ).format(
            lr=f"{lr:g}",
            default=f"{lr * default['l1']:.3f}",
            perfect=f"{lr * perfect['l1']:.3f}",
            ratio=multiple(f"{ratio:.2f}"),
        ),
        _(
            "the L2 norms of the same gradients (their size, however many weights share it): {default} and {perfect}"
        ).format(default=f"{default['l2']:.1f}", perfect=f"{perfect['l2']:.1f}"),
        *measured,
        *end,
    ]


def seed_spread_lines(
    runs: dict[str, RunResult],
    evals: dict[str, dict],
    other_runs: dict[str, RunResult],
    other_evals: dict[str, dict],
    n_prompts: int,
    rl_seed: int,
    level: float = 0.9,
) -> list[str]:
    """§6's three algorithms with a second RL seed (keys: algorithm names): each one's held-out line, the step each
    run's think-first share reached `level` and each one's accuracy on both seeds, the gaps between algorithms and
    between seeds against one accuracy's standard error, and which algorithm is first or last on both seeds."""
    algos = list(other_evals)
    lines = [
        _("the same three from the same warm-up with RL seed {seed} (other prompts and draws in training):").format(
            seed=rl_seed
        )
    ]
    lines += [eval_line(ALGO_LABELS[algo], other_evals[algo], n_prompts) for algo in algos]
    steps = {algo: (thinking_step(runs[algo], level), thinking_step(other_runs[algo], level)) for algo in algos}
    shown = {algo: " / ".join("—" if s is None else str(s) for s in pair) for algo, pair in steps.items()}
    lines.append(
        _("steps to {level} thinking, RL seed {first} / {second}: {values}").format(
            level=f"{level:.0%}",
            first=rl_seed - 1,
            second=rl_seed,
            values=join(f"{ALGO_LABELS[algo]} {shown[algo]}" for algo in algos),
        )
    )
    first = np.array([evals[algo]["accuracy"] for algo in algos])  # [A]
    second = np.array([other_evals[algo]["accuracy"] for algo in algos])  # [A]
    lines.append(
        _("accuracy, RL seed {first} / {second}: {values}").format(
            first=rl_seed - 1,
            second=rl_seed,
            values=join(f"{ALGO_LABELS[algo]} {a:.1%} / {b:.1%}" for algo, a, b in zip(algos, first, second)),
        )
    )
    within = max(np.ptp(first), np.ptp(second))
    between = float(np.max(np.abs(first - second)))
    accuracies = np.concatenate([first, second])  # [2A]
    one_se = math.sqrt(float(np.mean(accuracies * (1 - accuracies))) / n_prompts)  # one accuracy on n answers
    lines.append(
        _(
            "accuracy: the largest gap between two algorithms of one seed {within} points; the largest gap between "
            "the two seeds of one algorithm {between} points; one accuracy measured on {n} answers carries a standard "
            "error of about {se} points, a gap between two such accuracies about {gap_se}"
        ).format(
            within=f"{100 * within:.1f}",
            between=f"{100 * between:.1f}",
            n=n_prompts,
            se=f"{100 * one_se:.1f}",
            gap_se=f"{100 * math.sqrt(2) * one_se:.1f}",
        )
    )
    lines.append(both_seeds_reading(steps, first, second, algos, math.sqrt(2) * one_se, level))
    if "rft" in steps:
        lines.append(rft_against_the_lecture(steps, level))
    return lines


def rft_against_the_lecture(steps: dict, level: float = 0.9) -> str:
    """The lecture's 'RFT is even slightly faster' next to where RFT reaches `level` thinking among the algorithms on
    both seeds (steps: algo -> (step on seed 1, step on seed 2), None if never)."""
    others = [algo for algo in steps if algo != "rft"]
    if any(step is None for pair in steps.values() for step in pair):
        place = _("not every run reaches {level} thinking, so the seeds cannot place RFT")
    elif all(steps["rft"][i] < steps[algo][i] for algo in others for i in (0, 1)):
        place = _("here RFT reaches {level} thinking before {others} on both seeds")
    elif all(steps["rft"][i] > steps[algo][i] for algo in others for i in (0, 1)):
        place = _("here RFT reaches {level} thinking after {others} on both seeds")
    else:
        place = _("here RFT is not before or after {others} on both seeds in reaching {level} thinking")
    text = _('the lecture: RFT "even slightly faster"; {place}').format(place=place)
    names = [ALGO_LABELS[algo] for algo in others]
    both = _("{first} and {second}").format(first=names[0], second=names[1]) if len(names) == 2 else join(names)
    return text.format(level=f"{level:.0%}", others=both)


def both_seeds_reading(
    steps: dict, first: np.ndarray, second: np.ndarray, algos: list[str], se: float, level: float = 0.9
) -> str:
    """What the two seeds agree on: which algorithm reaches `level` thinking first and which last (if the same on both),
    and which ends least accurate on both (if one does), by how much, and whether by more than two standard errors of
    a gap between two accuracies (`se`)."""
    clauses = []
    if all(step is not None for pair in steps.values() for step in pair):
        for pick, text in (
            (min, _("{algo} is the first to reach {level} thinking on both seeds")),
            (max, _("{algo} is the last to reach {level} thinking on both seeds")),
        ):
            chosen = [{a for a in algos if steps[a][i] == pick(steps[b][i] for b in algos)} for i in (0, 1)]
            if chosen[0] == chosen[1] and len(chosen[0]) == 1:
                clauses.append(text.format(algo=ALGO_LABELS[next(iter(chosen[0]))], level=f"{level:.0%}"))
    if not clauses:
        clauses.append(
            _("no algorithm is first or last to reach {level} thinking on both seeds").format(level=f"{level:.0%}")
        )
    lows, gaps = [], []
    for accuracy in (first, second):
        order = np.argsort(accuracy)  # [A], lowest first
        lows.append(algos[int(order[0])])
        gaps.append(float(accuracy[order[1]] - accuracy[order[0]]))  # to the next lowest
    if lows[0] != lows[1]:
        clauses.append(_("no algorithm ends least accurate on both seeds"))
    else:
        text = (
            _(
                "{algo} ends least accurate on both seeds, by {first} and {second} points: more than two standard "
                "errors of a gap each, a hint at an order"
            )
            if min(gaps) > 2 * se
            else _(
                "{algo} ends least accurate on both seeds, by {first} and {second} points: within two standard errors "
                "of a gap, no more than noise"
            )
        )
        clauses.append(
            text.format(algo=ALGO_LABELS[lows[0]], first=f"{100 * gaps[0]:.1f}", second=f"{100 * gaps[1]:.1f}")
        )
    return join_clauses(clauses)


def ratio_algo_lines(
    runs: dict[str, RunResult],
    evals: dict[str, dict],
    n_prompts: int,
    level: float = 0.9,
    labels: dict[str, str] | None = None,
) -> list[str]:
    """GRPO, GSPO and CISPO (keys: algorithm names, "grpo" first): each one's held-out line and the step its
    think-first share reached `level`, then, for each of the other two, how many steps it drew and scored exactly
    GRPO's answers. `labels` names a run where its algorithm's label would not (notebook 04's GRPO is GRPO-1)."""
    names = {algo: (labels or {}).get(algo, ALGORITHMS[algo].label) for algo in runs}
    reference = names["grpo"]
    lines = []
    for algo, result in runs.items():
        step = thinking_step(result, level)
        reach = _("never reached") if step is None else _("from step {step}").format(step=step)
        lines.append(
            _("{line}; think-first share {level}: {reach}").format(
                line=eval_line(names[algo], evals[algo], n_prompts), level=f"{level:.0%}", reach=reach
            )
        )
    grpo = runs["grpo"]
    total = len(grpo.history)
    for algo, result in runs.items():
        if algo == "grpo":
            continue
        same = same_steps(result, grpo)
        label = names[algo]
        if same >= total:
            line = _("{label} drew and scored exactly {reference}'s answers at all {n} steps.")
        elif same == 0:
            line = _("{label} drew answers of its own from step 0 on.")
        elif same == 1:
            line = _(
                "{label} drew and scored exactly {reference}'s answers only at step 0, and answers of its own from "
                "step 1 on."
            )
        else:
            line = _(
                "{label} drew and scored exactly {reference}'s answers up to step {same}, and answers of its own from "
                "step {next} on."
            )
        # steps count from 0: `same` steps are 0 ... same - 1
        line = line.format(label=label, reference=reference, n=total, same=same - 1, next=same)
        lines.append(line)
    return lines


def points(difference: float) -> str:
    """A difference of two shares in percentage points, signed; one that rounds to zero prints as '0 points'."""
    value = round(100 * float(difference), 1)
    return _("0 points") if value == 0 else _("{value} points").format(value=f"{value:+.1f}")


def print_all_equal(
    history: list[dict], group_size: int = RLConfig.group_size, warm_accuracy: float | None = None
) -> None:
    """The formula p^G + (1-p)^G at the warm-up's held-out accuracy (what a prediction 'at the start' is), then the
    share of all-equal groups at the first step, early and late in a run, next to the formula at that stretch's
    accuracy."""
    if warm_accuracy is not None:
        print(
            _("{name}: accuracy p = {p}; p^{g} + (1-p)^{g} = {formula}").format(
                name=pad(_("warm-up"), 15, ">"),
                p=f"{warm_accuracy:.1%}",
                g=group_size,
                formula=f"{no_signal_share(warm_accuracy, group_size):.1%}",
            )
        )
    for name, part in (
        (_("step {step}").format(step=0), history[:1]),  # steps count from 0, as in the figures
        (_("first {n} steps").format(n=EARLY_STEPS), history[:EARLY_STEPS]),
        (_("last {n} steps").format(n=LATE_STEPS), history[-LATE_STEPS:]),
    ):
        p = finite_mean(history_curve(part, "accuracy"))
        measured = finite_mean(history_curve(part, "all_same_group_fraction"))
        formula = no_signal_share(p, group_size)
        print(
            _(
                "{name}: accuracy p = {p}; groups with all-equal rewards: measured {measured}, "
                "p^{g} + (1-p)^{g} = {formula}"
            ).format(
                name=pad(name, 15, ">"),
                p=f"{p:.1%}",
                measured=f"{measured:.1%}",
                g=group_size,
                formula=f"{formula:.1%}",
            )
        )


def summary_headers(level: float = 0.9) -> list[str]:
    """The column headers of `summary_row`'s keys, in their order, in the current language."""
    return [
        _("run"),
        _("answers per step"),
        _("accuracy"),
        _("think-first share"),
        _("think-first accuracy"),
        _("KL to warm-up (nats)"),
        _("all-equal groups, first {n} steps").format(n=EARLY_STEPS),
        _("all-equal groups, last {n} steps").format(n=LATE_STEPS),
        _("steps to {level} thinking").format(level=f"{level:.0%}"),
        _("answers sampled by then"),
    ]


def exercise7_findings(default: RunResult, runs: dict[str, RunResult], level: float = 0.9) -> list[str]:
    """What each Exercise 7 run shows next to the default run: its numbers beside the default's, no verdict (one run
    each, so a difference of a few steps or a point of accuracy can be noise)."""
    base = summary_row("the default", default, level)
    thinking_at = f"steps to {level:.0%} thinking"
    early, late = f"all-equal groups, first {EARLY_STEPS} steps", f"all-equal groups, last {LATE_STEPS} steps"

    def step_text(step) -> str:
        return step_or_limit(step, len(default.history))

    kl = "KL to warm-up (nats)"
    lines = []
    for label, result in runs.items():
        row = summary_row(label, result, level)
        step, base_step = row[thinking_at], base[thinking_at]
        lines += [
            _("{label}:").format(label=label),
            "  "
            + _("thinking passes {level} at {step} (the default: {base})").format(
                level=f"{level:.0%}", step=step_text(step), base=step_text(base_step)
            ),
            "  "
            + _("held-out accuracy {ours} (the default: {base})").format(
                ours=f"{row['accuracy']:.1%}", base=f"{base['accuracy']:.1%}"
            ),
            "  "
            + _("KL to its warm-up {ours} nats (the default: {base})").format(
                ours=f"{row[kl]:.2f}", base=f"{base[kl]:.2f}"
            ),
            "  "
            + _("all-equal groups {early} early and {late} late (the default: {base_early} and {base_late})").format(
                early=f"{row[early]:.0%}",
                late=f"{row[late]:.0%}",
                base_early=f"{base[early]:.0%}",
                base_late=f"{base[late]:.0%}",
            ),
        ]
        if knob_of(result.config) == ("group_size", result.config.group_size) and None not in (step, base_step):
            answers, base_answers = row["answers sampled by then"], base["answers sampled by then"]
            lines.append(
                "  "
                + _("answers sampled by then {ours} (the default: {base})").format(
                    ours=f"{answers:,}", base=f"{base_answers:,}"
                )
            )
    return lines


_SFT_SECONDS: dict = {}  # batch size -> seconds per warm-up step on this machine, timed once per process


def sft_seconds_per_step(batch_size: int = SFTConfig.batch_size) -> float:
    """Seconds one warm-up (SFT) step takes on this machine (the faster of two single steps, timed once)."""
    if batch_size not in _SFT_SECONDS:
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            train_sft(SFTConfig(steps=1, batch_size=batch_size, teacher_error_rate=0.0))
            times.append(time.perf_counter() - t0)
        _SFT_SECONDS[batch_size] = min(times)
    return _SFT_SECONDS[batch_size]


def package_runs(steps: int | None = None, seed: int = 0, settings: dict | None = None) -> dict:
    """The package's RL runs the notebook shows, for `rlvr.budget`: label -> RLConfig, or (a config of the same
    cost to time, the run's cache entry) for a run whose warm-up may not be on disk yet (timing it would train it)."""
    runs = {ALGO_LABELS[algo]: rl_config(algo, steps, seed) for algo in COMPARED_ALGOS}
    titles = other_seed_titles(seed + 1)
    runs.update({titles[algo]: cfg for algo, cfg in other_seed_configs(steps, seed, seed + 1).items()})
    perfect = perfect_teacher_other_seed(steps, seed, seed + 1)
    same_cost = replace(perfect, teacher_error_rate=DEFAULT_TEACHER_ERROR_RATE)
    runs[perfect_teacher_title(seed + 1)] = (same_cost, rl_entry(perfect))
    for label, cfg in exercise7_configs(steps, seed, settings).items():
        same_cost = replace(cfg, teacher_error_rate=DEFAULT_TEACHER_ERROR_RATE, sft_seed=cfg.sft_seed)
        runs[label] = cfg if cfg == same_cost else (same_cost, rl_entry(cfg))
    return runs


def first_run_text(
    steps: int | None = None, seed: int = 0, sft_steps: int | None = None, settings: dict | None = None
) -> str:
    """What the notebook trains the first time and about how long, timed here: the package's runs
    (`rlvr.budget.first_run_text`), the perfect teacher's warm-up, and your own step's two runs."""
    steps = size("rl_steps") if steps is None else steps
    runs = package_runs(steps, seed, settings)
    planned = budget.plan(runs)
    lines = [budget.first_run_text(runs)]
    total = sum(p.seconds for p in planned)
    rates = sorted({cfg.teacher_error_rate for cfg in exercise7_configs(steps, seed, settings).values()})
    for rate in (r for r in rates if r != DEFAULT_TEACHER_ERROR_RATE):
        n = warmup_steps(rate, sft_steps)
        if warmup_on_disk(rate, seed, n):
            lines.append(
                "  " + _("the teacher error {rate} warm-up: on disk, loads in a second").format(rate=f"{rate:g}")
            )
        else:
            seconds = n * sft_seconds_per_step()
            total += seconds
            lines.append(
                "  "
                + _("the teacher error {rate} warm-up ({n} SFT steps, before its RL run): trains, ~{time}").format(
                    rate=f"{rate:g}", n=n, time=seconds_text(seconds)
                )
            )
    yours = sum(steps * budget.seconds_per_step(rl_config("grpo", steps, seed, beta=b)) for b in (0.0, 0.04))
    lines.append(
        "  "
        + _(
            "your own GRPO step (§5 and §8 below), once it passes its checks: two runs, ~{time} together, again each "
            "time you run them (your code's runs are not cached)"
        ).format(time=seconds_text(yours))
    )
    if total > 0:  # everything on disk: no total to announce
        lines.append(
            _("In all about {time} of training the first time, plus your step's runs.").format(time=seconds_text(total))
        )
    return "\n".join(lines)


def lecture_and_us(rows: list[Row]) -> list[tuple[str, str, str, str]]:
    """(lecture section, what, the lecture's figure, this run's) for each row: no band, no verdict (those are
    `python -m rlvr reproduce`'s)."""
    return [(section_mark(r.section), shown(r.figure), _lecture_text(r), _ours(r)) for r in rows]


def section_mark(section: str) -> str:
    """'§5.1' for a section of the lecture, 'Ex. 3' as it is for an exercise."""
    return section if section.startswith("Ex.") else f"§{section}"


APPROXIMATE = ("warm-up, T=1: think-first share", "groups with all-equal rewards")  # the lecture's "about", "~"
FIGURE_TEXTS = (  # the rows' figures (English in `python -m rlvr reproduce`), translated where the notebook shows them
    N_("teacher: chains with every step right (simulated)"),
    N_("warm-up, T=1: accuracy (all answers)"),
    N_("warm-up, T=1: think-first share"),
    N_("warm-up, T=1: think-first accuracy"),
    N_("warm-up, T=1: direct-answer accuracy"),
    N_("warm-up, greedy: think-first accuracy"),
    N_("warm-up, greedy: think-first share"),
    N_("warm-up, greedy: accuracy (all answers)"),
    N_("warm-up (T=1): mean answer length"),
    N_("after GRPO (T=1, held-out): think-first share"),
    N_("after GRPO (T=1, held-out): mean answer length"),
    N_("after GRPO (T=1, held-out): think-first accuracy"),
    N_("groups with all-equal rewards, last 20 steps"),
    N_("Dr. GRPO, same steps as GRPO: think-first accuracy"),
    N_("RFT, same steps as GRPO: think-first accuracy"),
    N_("warm-up pass@16"),
    N_("GRPO pass@16 minus warm-up pass@16 ('barely moves')"),
    N_("GRPO pass@16 minus GRPO pass@1 ('pass@1 near pass@16')"),
    N_("GRPO (population std) advantage, rewards [1,0,...,0], right answer"),
    N_("GRPO (population std) advantage, rewards [1,0,...,0], a wrong answer"),
    N_("Dr. GRPO advantage, rewards [1,0,...,0], right answer"),
    N_("Dr. GRPO advantage, rewards [1,0,...,0], a wrong answer"),
    N_("pass@16 at single-sample accuracy p = 0.1"),
    N_("pass@16 at single-sample accuracy p = 0.9"),
)
LECTURE_WORDS = (N_("small"),)  # the lecture's words for a figure it gives no number for


def _lecture_text(row: Row) -> str:
    """The lecture's figure as it writes it: '94%', '~55%', '14.9 tokens', or its words."""
    if isinstance(row.lecture, str):
        return shown(row.lecture) if row.lecture in LECTURE_WORDS else row.lecture
    if row.figure.startswith("GRPO pass@") and row.lecture == 0.0:
        return _("'barely moves'")
    if row.unit == "%":
        text = f"{100 * row.lecture:.4g}%"
        return "~" + text if row.figure.startswith(APPROXIMATE) else text
    return _value_text(row.lecture, row.unit)


def _value_text(value: float, unit: str) -> str:
    """`fmt`'s text of a value, its unit 'tokens' in the learner's language."""
    text = fmt(value, unit)
    if unit == "tokens" and text.endswith(" tokens"):
        return _("{value} tokens").format(value=text.removesuffix(" tokens"))
    return text


def _ours(row: Row) -> str:
    """This run's value as text: a share with one decimal, a difference of shares with its sign."""
    if row.measured is None or not math.isfinite(row.measured):
        return "—"
    if row.figure.startswith("GRPO pass@") and row.unit == "%":  # a difference of shares
        return points(row.measured)
    return _value_text(row.measured, row.unit)


def lecture_and_us_text(rows: list[Row]) -> str:
    """The lecture's figures next to this run's, one aligned line each (lecture section, what, lecture, ours): no
    bands and no verdicts (`python -m rlvr reproduce` judges the same rows)."""
    lines = [("", "", _("lecture"), _("this run")), *lecture_and_us(rows)]
    widths = [max(text_width(line[c]) for line in lines) for c in range(4)]
    return "\n".join(
        "  ".join(
            [pad(section, widths[0]), pad(what, widths[1]), pad(lecture, widths[2], ">"), pad(ours, widths[3], ">")]
        ).rstrip()
        for section, what, lecture, ours in lines
    )


def _binomial_se(p: float, n: float) -> float:
    """Standard error of a share p estimated from n independent answers (0 if undefined)."""
    if not n or not math.isfinite(p):
        return 0.0
    return math.sqrt(max(p * (1 - p), 0.0) / n)


def _row(
    section: str,
    figure: str,
    lecture: str,
    values: list[float],
    se: float,
    unit: str = "%",
    seeds=(),
    note: str = "",
    lecture_is_a_run: bool = True,
) -> Row:
    """A row under the one band rule (`common.lecture_row`): the lecture's figure is one run of its script unless
    said otherwise; se is the standard error of one seed's held-out estimate."""
    return lecture_row(
        section=section,
        figure=figure,
        lecture=lecture,
        values=values,
        se=se,
        unit=unit,
        seeds=seeds,
        lecture_is_a_run=lecture_is_a_run,
        note=note,
    )


def teacher_rows(teachers: list[dict], seeds=(0,)) -> list[Row]:
    """Section 5.1: the teacher writes a fully right chain 0.9^10 ≈ 35% of the time (simulated)."""
    n = teachers[0]["n"]
    chain = [t["chain_exact"] for t in teachers]
    closed = teacher_chain_accuracy()
    return [
        _row(
            "5.1",
            "teacher: chains with every step right (simulated)",
            LECTURE_TEACHER_CHAIN,
            chain,
            _binomial_se(closed, n),
            seeds=seeds,
            lecture_is_a_run=False,
            note=f"closed form 0.9^10 = {closed:.4f}; its final digit is right more often, "
            f"{teacher_answer_accuracy():.3f}, because errors can cancel",
        )
    ]


def warmup_rows(reports: list[dict], seeds=(0,)) -> list[Row]:
    """Section 5.1: the warm-up's held-out metrics at temperature 1 and greedy, next to the lecture's."""
    rows = []
    for where, lecture, mode in (("temperature1", LECTURE_WARM_T1, "T=1"), ("greedy", LECTURE_WARM_GREEDY, "greedy")):
        for key, value in lecture.items():
            # a share of think-first answers is undefined (None or NaN) for a seed whose model never thinks first
            kept = [(r, s) for r, s in zip(reports, seeds) if _defined(r[where][key])]
            if not kept:
                continue
            values = [r[where][key] for r, _ in kept]
            n = kept[0][0]["n_prompts"] * _answers_share(kept[0][0][where], key)
            note = (
                ""
                if len(kept) == len(reports)
                else (f"seeds {', '.join(str(s) for _, s in kept)} only: the others never think first {mode}")
            )
            rows.append(
                _row(
                    "5.1",
                    f"warm-up, {mode}: {TRAINING_PANELS.get(key, key)}",
                    value,
                    values,
                    _binomial_se(values[0], n),
                    seeds=tuple(s for _, s in kept),
                    note=note,
                )
            )
    return rows


def _defined(value) -> bool:
    """False for a metric with no answers to measure it on (None or NaN)."""
    return value is not None and math.isfinite(value)


def _answers_share(metrics: dict, key: str) -> float:
    """Share of the answers a metric is measured on: think-first answers, direct answers, or all."""
    if key == "cot_accuracy":
        return metrics["cot_fraction"]
    if key == "direct_accuracy":
        return 1 - metrics["cot_fraction"] - metrics.get("malformed_fraction", 0.0)
    return 1.0


def _length_se(metrics: dict, n_prompts: int) -> float:
    """Standard error of the mean length: answers are 15 (think) or 3 (direct) tokens, so std ≈ 12 sqrt(f(1-f))."""
    f = metrics["cot_fraction"]
    return 12 * math.sqrt(max(f * (1 - f), 0.0) / n_prompts)


def grpo_rows(
    warm_reports: list[dict],
    grpo_evals: list[dict],
    histories: list[list[dict]],
    n_prompts: int,
    seeds=(0,),
    prompts_per_step: int = RLConfig.prompts_per_step,
) -> list[Row]:
    """Section 5.2: think-first share, mean length, think-first accuracy before / after GRPO, late all-equal groups."""
    before = [r["temperature1"] for r in warm_reports]
    rows = [
        _row(
            "5.2",
            "warm-up (T=1): mean answer length",
            LECTURE_WARM_LENGTH,
            [m["mean_length"] for m in before],
            _length_se(before[0], n_prompts),
            unit="tokens",
            seeds=seeds,
        ),
    ]
    for key, figure, unit in (
        ("cot_fraction", "think-first share", "%"),
        ("mean_length", "mean answer length", "tokens"),
        ("cot_accuracy", "think-first accuracy", "%"),
    ):
        values = [m[key] for m in grpo_evals]
        if key == "mean_length":
            se = _length_se(grpo_evals[0], n_prompts)
        else:
            se = _binomial_se(values[0], n_prompts * _answers_share(grpo_evals[0], key))
        rows.append(_row("5.2", f"after GRPO (T=1, held-out): {figure}", LECTURE_GRPO[key], values, se, unit, seeds))
    late = [late_mean(h) for h in histories]
    groups = LATE_STEPS * prompts_per_step
    rows.append(
        _row(
            "5.2",
            f"groups with all-equal rewards, last {LATE_STEPS} steps",
            LECTURE_GRPO["all_same"],
            late,
            _binomial_se(late[0], groups),
            seeds=seeds,
            note="'~55%'; at accuracy p per answer a group of 8 is all-equal with chance ≈ p^8 + (1-p)^8",
        )
    )
    return rows


def algo_rows(evals: dict[str, list[dict]], n_prompts: int, seeds=(0,)) -> list[Row]:
    """Section 5.2: Dr. GRPO and RFT after the same steps (the lecture's 94% / 96%, read as think-first accuracy)."""
    rows = []
    for algo, lecture in LECTURE_ALGOS.items():
        values = [m["cot_accuracy"] for m in evals[algo]]
        se = _binomial_se(values[0], n_prompts * evals[algo][0]["cot_fraction"])
        rows.append(
            _row(
                "5.2",
                f"{ALGO_LABELS[algo]}, same steps as GRPO: think-first accuracy",
                lecture,
                values,
                se,
                seeds=seeds,
                note=f"overall accuracy {np.mean([m['accuracy'] for m in evals[algo]]):.1%}; the notes do "
                "not say which accuracy",
            )
        )
    return rows


def pass_rows(warm_pass: list[dict], grpo_pass: list[dict], n_prompts: int, seeds=(0,)) -> list[Row]:
    """Section 5.3: the warm-up's pass@16 (98%); GRPO lifts pass@1 towards pass@16, pass@16 barely moves."""
    k = PASS_SAMPLES
    warm16 = [p[k] for p in warm_pass]
    moved = [g[k] - w[k] for g, w in zip(grpo_pass, warm_pass)]
    gap = [g[k] - g[1] for g in grpo_pass]
    se16 = _binomial_se(warm16[0], n_prompts)
    rows = [
        _row("5.3", f"warm-up pass@{k}", LECTURE_WARM_PASS16, warm16, se16, seeds=seeds),
        claim_row(
            section="5.3",
            figure=f"GRPO pass@{k} minus warm-up pass@{k} ('barely moves')",
            lecture=0.0,
            values=moved,
            band=(-0.02, 0.02),
            unit="%",
            seeds=seeds,
            note="the notes give no number: 'barely moves' read as within 2 points, fixed before measuring",
        ),
        claim_row(
            section="5.3",
            figure=f"GRPO pass@{k} minus GRPO pass@1 ('pass@1 near pass@{k}')",
            lecture="small",
            values=gap,
            band=None,
            unit="%",
            seeds=seeds,
            note=f"warm-up: pass@{k} - pass@1 = {np.mean([p[k] - p[1] for p in warm_pass]):.1%}; not judged",
        ),
    ]
    return rows


def rows_from(measurements: list[dict], seeds=(0,), fast: bool | None = None) -> list[Row]:
    """The lecture-vs-measured rows of notebook 03 from `measure` outputs (one per seed)."""
    sizes = fast_sizes(fast)
    m = measurements
    return (
        teacher_rows([x["teacher"] for x in m], seeds)
        + warmup_rows([x["warm"] for x in m], seeds)
        + grpo_rows(
            [x["warm"] for x in m],
            [x["evals"]["grpo"] for x in m],
            [x["histories"] for x in m],
            sizes["eval_prompts"],
            seeds,
        )
        + algo_rows({a: [x["evals"][a] for x in m] for a in LECTURE_ALGOS}, sizes["eval_prompts"], seeds)
        + pass_rows([x["warm_pass"] for x in m], [x["grpo_pass"] for x in m], sizes["pass_prompts"], seeds)
    )


def exercise_rows() -> list[Row]:
    """Exercises 3 and 6 of the lecture, computed with the package's references (bands: the lecture's rounding)."""
    import torch

    from ..objectives import dr_grpo_advantages, grpo_advantages, pass_at_k

    rewards = torch.tensor([1.0, 0, 0, 0, 0, 0, 0, 0])
    grpo = grpo_advantages(rewards, 8, eps=0.0, std="population")  # [8]
    dr = dr_grpo_advantages(rewards, 8)  # [8]
    rows = [
        lecture_row(
            section="Ex. 3",
            figure=f"{name} advantage, rewards [1,0,...,0], {which} answer",
            lecture=lecture,
            values=[adv[i]],
            lecture_is_a_run=False,
        )
        for name, adv, values in (
            ("GRPO (population std)", grpo, ("2.65", "-0.38")),
            ("Dr. GRPO", dr, ("0.875", "-0.125")),
        )
        for (which, i), lecture in zip((("right", 0), ("a wrong", 1)), values)
    ]
    n = 10_000  # samples per prompt, so that c / n = p exactly
    for p, lecture in ((0.1, "0.81"), (0.9, "1.0")):
        rows.append(
            lecture_row(
                section="Ex. 6",
                figure=f"pass@16 at single-sample accuracy p = {p}",
                lecture=lecture,
                values=[pass_at_k(n, round(p * n), 16)],
                lecture_is_a_run=False,
                unit="%",
            )
        )
    return rows


def rows(seeds=(0,), fast: bool | None = None) -> list[Row]:
    """Sections 5.1-5.3 and Exercises 3 and 6: every number of the lecture that notebook 03 reproduces, with ours."""
    return rows_from([measure(seed, fast) for seed in seeds], seeds, fast) + exercise_rows()
