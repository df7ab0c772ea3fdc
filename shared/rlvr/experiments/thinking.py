"""Notebook 03: a tiny model that learns to think before it answers (lecture sections 3, 5 and 6).

Everything starts from the supervised warm-up of `rlvr.sft` (a noisy teacher, half direct answers, half chains of
thought) and runs GRPO, Dr. GRPO and RFT with `rlvr.train.run` (cached on disk per configuration):

* the warm-up's metrics at temperature 1 and greedy, next to the lecture's (section 5.1), and a panel that
  retrains the warm-up for another teacher error rate;
* GRPO with 32 prompts x 8 answers, lr 1e-4, 200 steps, with live curves (section 5.2); Dr. GRPO and RFT on the
  same budget; pass@k for k = 1..16 before and after (section 5.3);
* Run-button panels for the group size G, the KL weight beta and the warm-up GRPO starts from (Exercise 7);
* Qwen3's thinking budget on our model: cut the chain of thought after b digits, force the answer (section 6.3).

`figures()` returns every number of the lecture that the notebook reproduces, next to ours.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from rlvr import budget
from rlvr.algorithms import ALGORITHMS
from rlvr.cache import is_cached
from rlvr.config import SIZES, size
from rlvr.evaluate import evaluate, held_out_prompts, pass_at_k_curve
from rlvr.experiments.common import (
    Row,
    claim_row,
    finite_mean,
    first_step,
    fmt,
    lecture_row,
    pad,
    seconds_text,
    shown,
    signed,
    smooth,
    text_width,
)
from rlvr.i18n import N_, _, join
from rlvr.model import TinyTransformer, response_logps, sample
from rlvr.objectives import grpo_advantages, ppo_clip_loss
from rlvr.sft import SFTConfig, train_sft, warm_up, warm_up_report
from rlvr.sft import cache_entry as sft_entry
from rlvr.task import (
    CLOSE_ID,
    DEFAULT_TEACHER_ERROR_RATE,
    HASH_ID,
    N_DIGITS,
    OPEN_ID,
    PAD_ID,
    VOCAB,
    answer_digits,
    chain_text,
    decode,
    direct_answer,
    encode,
    prompt_text,
    prompt_tokens,
    sample_prompts,
    score_batch,
    teacher_chain_digits,
    think_answer,
    verify,
)
from rlvr.runs import RunResult, history_curve
from rlvr.train import RLConfig, run, train_rl, warm_start
from rlvr.train import cache_entry as rl_entry

# ----------------------------------------------------------------------------------------------- sizes
# every size that CI shrinks comes from rlvr.config.SIZES through size(name, fast)
STEPS = SIZES["rl_steps"][0]  # RL steps of every run at full size
SFT_STEPS = SIZES["panel_sft_steps"][0]  # the default warm-up's steps (SFTConfig().steps, a test checks)
PASS_SAMPLES = 16  # answers per prompt for pass@k (k = 1..16)
TEACHER_SIMULATIONS = 200_000  # simulated teacher chains for the "0.9^10" row
LATE_STEPS = 20  # "late in training" = the last 20 steps
EARLY_STEPS = 10  # "early in training" = the first 10 steps
SMOOTH = 9  # trailing moving average (steps) of the training curves
MAX_TEACHER_ERROR, TEACHER_ERROR_STEP = 0.5, 0.05


@dataclass(frozen=True)
class Knob:
    """A GRPO knob the panels change (an RLConfig field): its range, and how a slider's value becomes the field's."""

    choices: tuple = ()  # the allowed values (a choice slider) ...
    high: float = 0.0  # ... or a float slider from 0 to high in steps of `step`
    step: float = 0.0

    def value(self, slider_value):
        """The RLConfig value of a slider value (ints for choices, floats rounded: 0.15000000000000002 is 0.15)."""
        return int(slider_value) if self.choices else round(float(slider_value), 4)


KNOBS = {  # RLConfig field -> its panel's range (lecture Exercise 7)
    "group_size": Knob(choices=(2, 4, 8, 16, 32)),
    "beta": Knob(high=0.2, step=0.01),
    "teacher_error_rate": Knob(high=MAX_TEACHER_ERROR, step=TEACHER_ERROR_STEP),
}

# ----------------------------------------------------------------------------------------------- the lecture's numbers
# The lecture's numbers as it writes them (the digits set each row's rounding r; "~" marks an approximate value)
LECTURE_TEACHER_CHAIN = "35%"  # "0.9^10 ≈ 35%"
LECTURE_WARM_T1 = {"accuracy": "19%", "cot_fraction": "~50%", "cot_accuracy": "32%", "direct_accuracy": "6%"}  # "half"
LECTURE_WARM_GREEDY = {"cot_accuracy": "100%", "cot_fraction": "65%", "accuracy": "70%"}  # "35% chose direct"
LECTURE_WARM_LENGTH = "9.1"
LECTURE_GRPO = {"cot_fraction": "98%", "mean_length": "14.9", "cot_accuracy": "94%", "all_same": "~55%"}
LECTURE_ALGOS = {"dr_grpo": "94%", "rft": "96%"}  # "Dr. GRPO 94%, RFT 96%" (read as think-first accuracy)
LECTURE_WARM_PASS16 = "98%"

COMPARED_ALGOS = ("grpo", "dr_grpo", "rft")  # lecture §5.2's comparison, same 200 steps
ALGO_LABELS = {algo: ALGORITHMS[algo].label for algo in COMPARED_ALGOS}
TRAINING_PANELS = {  # history key -> axis title (translated where drawn; English in the reproduce table)
    "accuracy": N_("accuracy (all answers)"),
    "cot_fraction": N_("think-first share"),
    "cot_accuracy": N_("think-first accuracy"),
    "mean_length": N_("mean answer length (tokens)"),
    "all_same_group_fraction": N_("groups with all-equal rewards"),
    "direct_accuracy": N_("direct-answer accuracy"),
}


def fast_sizes(fast: bool | None = None) -> dict:
    """The sizes every experiment of this notebook uses, full or fast (CI), from rlvr.config.SIZES."""
    return {
        "steps": size("rl_steps", fast),
        "eval_prompts": size("eval_prompts", fast),
        "pass_prompts": size("pass_prompts", fast),
        "sft_steps": size("panel_sft_steps", fast),
        "budget_prompts": size("budget_prompts", fast),
    }


# ----------------------------------------------------------------------------------------------- the teacher
def teacher_chain_accuracy(error_rate: float = DEFAULT_TEACHER_ERROR_RATE, n_steps: int = N_DIGITS) -> float:
    """Chance that the noisy teacher writes every step of the chain right: (1 - error_rate) ** n_steps."""
    return (1.0 - error_rate) ** n_steps


def teacher_answer_accuracy(error_rate: float = DEFAULT_TEACHER_ERROR_RATE, n_steps: int = N_DIGITS) -> float:
    """Chance that the teacher's final digit is right (errors can cancel): (1 + 9 phi^n) / 10, phi = 1 - r - r/9.

    Each step shifts the running sum by 0 (prob 1 - r) or by one of 1..9 (prob r / 9 each); the answer is right
    when the total shift is 0 mod 10. The discrete Fourier transform of one step's shift is phi at every
    non-zero frequency, so the chance is (1 + 9 phi^n) / 10.
    """
    phi = 1.0 - error_rate - error_rate / 9.0
    return (1.0 + 9.0 * phi**n_steps) / 10.0


def simulated_teacher(
    error_rate: float = DEFAULT_TEACHER_ERROR_RATE, n: int = TEACHER_SIMULATIONS, seed: int = 0
) -> dict:
    """Share of simulated teacher chains with every step right and with the right final digit."""
    rng = np.random.default_rng(seed)
    prompts = sample_prompts(n, rng)  # [n, 10]
    chains = teacher_chain_digits(prompts, error_rate, rng)  # [n, 10]
    exact = (chains == np.cumsum(prompts, axis=1) % 10).all(axis=1)  # [n]
    right = chains[:, -1] == answer_digits(prompts)  # [n]
    return {"chain_exact": float(exact.mean()), "answer_right": float(right.mean()), "n": n}


def teacher_error_steps(digits, chain) -> list[int]:
    """Steps (1-based) where the teacher erred: the written digit is not (previous written + prompt digit) mod 10."""
    previous = np.concatenate([[0], np.asarray(chain)[:-1]])  # [10]
    return [j + 1 for j in np.flatnonzero((previous + np.asarray(digits)) % 10 != np.asarray(chain))]


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


# ----------------------------------------------------------------------------------------------- the model
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
        "  " + _("layer 1 attends by that offset only; the output layer reuses the token embeddings"),
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


# ----------------------------------------------------------------------------------------------- one GRPO step
@dataclass(frozen=True)
class StageShape:
    """One stage of a GRPO step: the tensor it makes, its shape and what one group of it holds."""

    stage: str  # "sample", "score", ... (STAGE_NAMES: its name for the learner)
    name: str  # the tensor, e.g. "rollout.responses"
    shape: tuple  # its shape, e.g. (256, 15)
    meaning: str  # what one entry is (in the current language)
    example: str  # what one group (the first with right and wrong answers) holds (in the current language)


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


def step_shapes(
    policy: TinyTransformer,
    prompts_per_step: int = RLConfig.prompts_per_step,
    group_size: int = RLConfig.group_size,
    seed: int = 0,
) -> list[StageShape]:
    """Walk one GRPO step on `policy` (no update) and record each stage's tensor, for a shape diagram."""
    P, G = prompts_per_step, group_size
    prompts = sample_prompts(P, np.random.default_rng(seed))  # [P, 10]
    rollout = sample(
        policy, prompt_tokens(prompts), 1.0, generator=torch.Generator().manual_seed(seed), group_size=G
    )  # [B, T]
    rewards = score_batch(torch.as_tensor(np.repeat(prompts, G, axis=0)), rollout.responses)["reward"]  # [B]
    grouped = rewards.view(P, G)  # [P, G]
    advantages = grpo_advantages(rewards, G, RLConfig.advantage_eps)  # [B]
    logps = response_logps(policy, rollout.prompt_ids, rollout.responses, group_size=G)  # [B, T]
    per_token, _clipped = ppo_clip_loss(logps, logps.detach(), advantages, RLConfig.clip_eps)  # [B, T]
    mask = rollout.response_mask  # [B, T]
    per_answer = (per_token * mask).sum(dim=1) / mask.sum(dim=1)  # [B]
    loss = per_answer.mean()  # []
    mixed = (grouped.std(dim=1) > 0).nonzero()
    i = int(mixed[0]) if len(mixed) else 0  # a group with both right and wrong answers, if there is one
    rows = slice(i * G, (i + 1) * G)
    answers = [decode(r[m]) for r, m in zip(rollout.responses[rows], mask[rows])]
    its_answers = _("its answers: {values}")
    return [
        StageShape(
            "prompts",
            "prompts",
            tuple(prompts.shape),
            _("10 digits per prompt"),
            _("prompt {i}: {prompt}").format(i=i, prompt=prompt_text(prompts[i])),
        ),
        StageShape(
            "sample",
            "rollout.responses",
            tuple(rollout.responses.shape),
            _("B = P x G = {p} x {g} answers, padded to T tokens").format(p=P, g=G),
            its_answers.format(values=" ".join(answers[:3]) + " ..."),
        ),
        StageShape(
            "sample",
            "rollout.response_mask",
            tuple(mask.shape),
            _("True on an answer's real tokens"),
            _("their lengths: {values}").format(values=" ".join(str(int(m.sum())) for m in mask[rows])),
        ),
        StageShape(
            "score",
            "rewards.view(P, G)",
            tuple(grouped.shape),
            _("1 right, 0 wrong; one row per prompt"),
            _("its row: {values}").format(values=" ".join(f"{r:.0f}" for r in grouped[i])),
        ),
        StageShape(
            "advantages",
            "advantages",
            tuple(advantages.shape),
            _("(r - group mean) / (group std + eps)"),
            its_answers.format(values=" ".join(signed(float(a), 2) for a in advantages[rows])),
        ),
        StageShape(
            "loss",
            "logps",
            tuple(logps.shape),
            _("log-prob of each answer token, with its graph"),
            _("its first answer: {value} summed over its tokens").format(
                value=f"{float((logps[rows] * mask[rows]).sum(dim=1)[0].detach()):.2f}"
            ),
        ),
        StageShape(
            "loss",
            "per-token loss",
            tuple(per_token.shape),
            _("-min(rho A, clip(rho) A), rho = 1 in value"),
            _("its first answer: {value} on every real token").format(
                value=signed(float(per_token[i * G, 0].detach()), 2)
            ),
        ),
        StageShape(
            "loss",
            "per-answer loss",
            tuple(per_answer.shape),
            _("mean over the answer's real tokens"),
            its_answers.format(values=" ".join(signed(float(a), 2) for a in per_answer.detach()[rows])),
        ),
        StageShape(
            "loss",
            "loss",
            tuple(loss.shape),
            _("mean over answers: one number to minimise"),
            _("{value} in value (a group's advantages sum to 0); its gradient is not").format(
                value=signed(float(loss.detach()), 4)
            ),
        ),
    ]


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


# ----------------------------------------------------------------------------------------------- warm-up
def warmup_metrics(
    teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE,
    seed: int = 0,
    n_prompts: int | None = None,
    sft_steps: int | None = None,
    on_step=None,
) -> dict:
    """The warm-up model for this teacher (cached) and its held-out metrics at temperature 1 and greedy.

    Returns:
        dict with temperature1 and greedy (metrics of `rlvr.evaluate.answer_metrics`), losses (per SFT step),
        model, teacher_error_rate, n_prompts, from_cache, seconds.
    """
    rate = round(float(teacher_error_rate), 4)  # 0.15000000000000002 from a slider is 0.15
    cfg = None if sft_steps is None else SFTConfig(steps=int(sft_steps))
    warm = warm_up(rate, seed, cfg=cfg, on_step=on_step, progress=on_step is None)  # a panel draws its own progress
    n_prompts = n_prompts or size("eval_prompts")
    report = warm_up_report(warm, n_prompts)
    return {**report, "losses": warm.losses, "model": warm.model, "teacher_error_rate": rate, "n_prompts": n_prompts}


def warmup_on_disk(teacher_error_rate: float, seed: int = 0, sft_steps: int = SFT_STEPS) -> bool:
    """True if the warm-up for this teacher, seed and step count loads without training (cached or shipped)."""
    cfg = SFTConfig(teacher_error_rate=round(float(teacher_error_rate), 4), seed=seed, steps=int(sft_steps))
    return is_cached(sft_entry(cfg))


def print_warmup(report: dict) -> None:
    """Two readable lines, temperature 1 and greedy; each share says how many answers it is measured on."""
    n = report["n_prompts"]
    for name, m in ((_("temperature 1"), report["temperature1"]), (_("greedy"), report["greedy"])):
        think = round(m["cot_fraction"] * n)
        direct = round((1 - m["cot_fraction"] - m.get("malformed_fraction", 0.0)) * n)
        print(
            _(
                "{name}: accuracy {accuracy} | think-first {think} of {n} answers, {think_right} right | direct "
                "{direct_right} right | mean length {length} tokens"
            ).format(
                name=pad(name, 13, ">"),
                accuracy=f"{m['accuracy']:6.1%}",
                think=f"{m['cot_fraction']:6.1%}",
                n=n,
                think_right=share_of(m["cot_accuracy"], think),
                direct_right=share_of(m["direct_accuracy"], direct),
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


def points(difference: float) -> str:
    """A difference of two shares in percentage points, signed; one that rounds to zero prints as '0 points'."""
    value = round(100 * float(difference), 1)
    return _("0 points") if value == 0 else _("{value} points").format(value=f"{value:+.1f}")


# ----------------------------------------------------------------------------------------------- RL runs
def rl_config(algo: str = "grpo", steps: int | None = None, seed: int = 0, **overrides) -> RLConfig:
    """The lecture's configuration (32 prompts x 8 answers, lr 1e-4, 200 steps) with some fields changed."""
    steps = size("rl_steps") if steps is None else int(steps)
    return RLConfig.replicate(seed, algo=algo, steps=steps, **overrides)


def rl_run(
    algo: str = "grpo", steps: int | None = None, seed: int = 0, on_step=None, progress: bool = False, **overrides
) -> RunResult:
    """One RL run from the warm-up through the checkpoint cache (see `rl_config`); progress shows a tqdm bar."""
    return run(rl_config(algo, steps, seed, **overrides), on_step=on_step, progress=progress)


def held_out(policy: TinyTransformer, n_prompts: int | None = None, seed: int = 0) -> dict:
    """Metrics of one answer per held-out prompt at temperature 1."""
    return evaluate(policy, n_prompts or size("eval_prompts"), temperature=1.0, seed=seed)


def late_mean(history: list[dict], key: str = "all_same_group_fraction", last: int = LATE_STEPS) -> float:
    """Mean of one metric over the last `last` steps of a run."""
    return finite_mean(history_curve(history[-last:], key))


@torch.no_grad()
def kl_to_reference(
    policy: TinyTransformer, reference: TinyTransformer, n_prompts: int | None = None, seed: int = 0
) -> float:
    """KL(policy || reference) per answer, estimated on held-out prompts from the policy's own samples (k1).

    KL = E_{o ~ policy}[sum_t log policy(o_t) - log reference(o_t)], the sum over the answer's tokens.
    """
    prompts = prompt_tokens(held_out_prompts(n_prompts or size("eval_prompts")))  # [n, 11]
    rollout = sample(policy, prompts, 1.0, generator=torch.Generator().manual_seed(seed))
    logps = response_logps(policy, prompts, rollout.responses)  # [n, T]
    ref_logps = response_logps(reference, prompts, rollout.responses)  # [n, T]
    return float(((logps - ref_logps) * rollout.response_mask).sum(dim=1).mean())


# ----------------------------------------------------------------------------------------------- pass@k
def pass_at_k(
    policy: TinyTransformer, n_prompts: int | None = None, n_samples: int = PASS_SAMPLES, seed: int = 0
) -> dict[int, float]:
    """Unbiased pass@k for k = 1..n_samples, averaged over held-out prompts (n_samples answers each, T = 1)."""
    n_prompts = n_prompts or size("pass_prompts")
    return pass_at_k_curve(policy, n_prompts, n_samples, tuple(range(1, n_samples + 1)), seed=seed)


# ----------------------------------------------------------------------------------------------- thinking budget
def _pick_digit(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> torch.Tensor:
    """A digit per row from logits restricted to the ten digits: argmax (temperature 0) or sampled. [n, V] -> [n]."""
    digit_logits = logits[:, :10]  # [n, 10] token ids 0..9 are the digits
    if temperature == 0:
        return digit_logits.argmax(dim=-1)
    probs = torch.softmax(digit_logits / temperature, dim=-1)  # [n, 10]
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


@torch.no_grad()
def thinking_budget(
    model: TinyTransformer,
    budgets=range(N_DIGITS + 1),
    n_prompts: int | None = None,
    temperature: float = 0.0,
    seed: int = 0,
) -> dict[int, float]:
    """Accuracy when the chain of thought is cut after b digits and the answer is forced (Qwen3's thinking budget).

    For each held-out prompt the model writes its own chain after '[' (digits only, greedy or sampled at
    `temperature`); for a budget b we keep its first b digits, append ']#' and let the model write the final
    digit (same temperature). b = 10 is the model's ordinary think-first answer.
    Returns:
        {b: accuracy} over the held-out prompts.
    """
    n_prompts = n_prompts or size("budget_prompts")
    prompts = held_out_prompts(n_prompts)  # [n, 10]
    generator = torch.Generator().manual_seed(seed)
    ids = torch.cat([prompt_tokens(prompts), torch.full((n_prompts, 1), OPEN_ID)], dim=1)  # [n, 12]
    for _digit in range(N_DIGITS):  # the model's own chain, one digit at a time
        ids = torch.cat([ids, _pick_digit(model(ids)[:, -1], temperature, generator)[:, None]], dim=1)
    chain_start = ids.shape[1] - N_DIGITS
    budgets = [int(b) for b in budgets]
    # every budget in one forward pass: prompt + '[' + b digits + ']#', right-padded (causal attention never
    # looks at the padding, and we read the logits at each sequence's own last position)
    cut = torch.full((len(budgets), n_prompts, ids.shape[1] + 2), PAD_ID)  # [nb, n, 24]
    for i, b in enumerate(budgets):
        cut[i, :, : chain_start + b] = ids[:, : chain_start + b]
        cut[i, :, chain_start + b], cut[i, :, chain_start + b + 1] = CLOSE_ID, HASH_ID
    last = torch.tensor([chain_start + b + 1 for b in budgets]).repeat_interleave(n_prompts)  # [nb * n]
    logits = model(cut.view(-1, cut.shape[-1]))  # [nb * n, 24, V]
    final_logits = logits[torch.arange(len(last)), last]  # [nb * n, V]
    answers = _pick_digit(final_logits, temperature, generator).view(len(budgets), n_prompts)  # [nb, n]
    target = torch.as_tensor(answer_digits(prompts))  # [n]
    accuracy = {b: float((answers[i] == target).float().mean()) for i, b in enumerate(budgets)}
    return accuracy


# ----------------------------------------------------------------------------------------------- plots
def smooth_ratio(values, weights, window: int = SMOOTH) -> np.ndarray:
    """Moving average of a per-step share, weighted by how many answers it was measured on (NaN-skipping). [T]."""
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    ok = np.isfinite(values) & np.isfinite(weights)
    numerator = smooth(np.where(ok, values * weights, np.nan), window)  # [T]
    denominator = smooth(np.where(ok, weights, np.nan), window)  # [T]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


WEIGHT_OF = {  # a per-step accuracy over one format is averaged with that format's share as the weight
    "cot_accuracy": lambda h: h.get("cot_fraction", np.nan),
    "chain_exact": lambda h: h.get("cot_fraction", np.nan),
    "direct_accuracy": lambda h: 1 - h.get("cot_fraction", np.nan) - h.get("malformed_fraction", 0.0),
}


def histories_of(runs) -> dict[str, list[dict]]:
    """label -> history, from a history list, a RunResult, or a dict of either."""
    if isinstance(runs, list):
        return {"run": runs}
    if hasattr(runs, "history"):
        return {"run": runs.history}
    return {label: (r.history if hasattr(r, "history") else r) for label, r in runs.items()}


def smoothed_curve(history: list[dict], key: str, window: int | None = None) -> np.ndarray:
    """One metric against step, smoothed; per-format accuracies are weighted by that format's share. [T]."""
    window = window or (3 * SMOOTH if key == "direct_accuracy" else SMOOTH)  # few direct answers are left late
    weight = WEIGHT_OF.get(key)
    y = history_curve(history, key)
    return smooth(y, window) if weight is None else smooth_ratio(y, [weight(h) for h in history], window)


# ----------------------------------------------------------------------------------------------- teacher panel


class SFTProgress:
    """Adapts warm_up's on_step(step, total, loss) to the panels' on_step(step, total, history)."""

    def __init__(self, on_step, offset: int = 0, total: int | None = None, with_losses: bool = True):
        self.on_step, self.offset, self.total, self.with_losses = on_step, offset, total, with_losses
        self.losses: list[float] = []

    def __call__(self, step: int, total: int, loss: float) -> None:
        """Collect the loss and move the progress bar (the losses are the live curve)."""
        self.losses.append(loss)
        if self.on_step is not None:
            self.on_step(self.offset + step, self.total or total, self.losses if self.with_losses else None)


# ----------------------------------------------------------------------------------------------- GRPO panels
def warmup_steps(teacher_error_rate: float, sft_steps: int | None = None) -> int:
    """SFT steps of the warm-up a run at this teacher error rate starts from: the default warm-up's at the default
    rate and at full size; `sft_steps` (size('panel_sft_steps'), short in fast mode) for another rate otherwise."""
    sft_steps = size("panel_sft_steps") if sft_steps is None else int(sft_steps)
    default_rate = round(float(teacher_error_rate), 4) == DEFAULT_TEACHER_ERROR_RATE
    return SFT_STEPS if (sft_steps == SFT_STEPS or default_rate) else sft_steps


def train_from_warmup(cfg: RLConfig, sft_steps: int | None = None, on_step=None) -> tuple[RunResult, TinyTransformer]:
    """cfg's RL run and the warm-up model it starts from. A warm-up not on disk trains first (on_step counts its
    steps too: step 1 .. warm-up steps + RL steps). Cached on disk, except from a short fast-mode warm-up."""
    warm_steps = warmup_steps(cfg.teacher_error_rate, sft_steps)
    progress = None
    if not warmup_on_disk(cfg.teacher_error_rate, cfg.sft_seed, warm_steps):  # train it first, progress moving
        progress = SFTProgress(on_step, 0, warm_steps + cfg.steps, with_losses=False)
    warm = warm_up(cfg.teacher_error_rate, cfg.sft_seed, cfg=SFTConfig(steps=warm_steps), on_step=progress)
    offset = 0 if progress is None else warm_steps
    shifted = None if on_step is None else (lambda s, t, h: on_step(offset + s, offset + t, h))
    if warm_steps == SFT_STEPS:
        result = run(cfg, on_step=shifted, progress=False)
    else:
        result = train_rl(cfg, policy=warm.model, on_step=shifted, progress=False)
    return result, warm.model


def finished(result: RunResult, warm_model: TinyTransformer, n_prompts: int | None = None) -> RunResult:
    """A trained run with its held-out metrics at T = 1 and its KL to the warm-up it started from (`final`)."""
    final = held_out(result.policy, n_prompts)
    final["kl_to_warmup"] = kl_to_reference(result.policy, warm_model, n_prompts)
    return replace(result, final=final)


def panel_training(
    cfg: RLConfig,
    on_step=None,
    progress: bool = False,
    n_prompts: int | None = None,
    sft_steps: int | None = None,
) -> RunResult:
    """A run from its warm-up (trained first if not on disk), evaluated on held-out prompts (`finished`)."""
    return finished(*train_from_warmup(cfg, sft_steps, on_step), n_prompts)


def grpo_runner(n_prompts: int | None = None, sft_steps: int | None = None):
    """runner(cfg, on_step=None, progress=False) -> RunResult with its held-out metrics: `panel_training` with these
    sizes (the shape `rlvr.widgets.train_runs` calls; picklable, so it can train in a worker process)."""
    return functools.partial(panel_training, n_prompts=n_prompts, sft_steps=sft_steps)


def panel_run(
    knob: str,
    value,
    steps: int | None = None,
    n_prompts: int | None = None,
    sft_steps: int | None = None,
    on_step=None,
    seed: int = 0,
) -> RunResult:
    """GRPO with one knob changed (group_size, beta or teacher_error_rate), through the checkpoint cache.

    A new teacher error rate first trains its warm-up (the progress bar covers both); in fast mode that warm-up
    is short (size('panel_sft_steps')) and the RL run is not cached.
    """
    cfg = rl_config("grpo", steps, seed, **{knob: knob_value(knob, value)})
    return panel_training(cfg, on_step, n_prompts=n_prompts, sft_steps=sft_steps)


def panel_run_on_disk(knob: str, value, steps: int | None = None, seed: int = 0) -> bool:
    """True if this panel setting's RL run (and its warm-up) is in the checkpoint cache (loads in a second)."""
    cfg = rl_config("grpo", steps, seed, **{knob: knob_value(knob, value)})
    return warmup_on_disk(cfg.teacher_error_rate, seed) and is_cached(rl_entry(cfg))


def knob_value(knob: str, value):
    """The RLConfig value of a slider value of one of KNOBS."""
    if knob not in KNOBS:
        raise ValueError(f"knob must be one of {', '.join(KNOBS)}, got {knob!r}")
    return KNOBS[knob].value(value)


def knob_of(cfg: RLConfig) -> tuple[str, object] | None:
    """(knob, value) of the one knob of KNOBS where cfg differs from the default GRPO run; None if none does."""
    default = rl_config("grpo", cfg.steps, cfg.seed)
    changed = [(knob, getattr(cfg, knob)) for knob in KNOBS if getattr(cfg, knob) != getattr(default, knob)]
    return changed[0] if len(changed) == 1 else None


def default_panel_run(result: RunResult, n_prompts: int | None = None, seed: int = 0) -> RunResult:
    """The default GRPO run (already trained) as a RunResult, to seed the knob panels."""
    return finished(result, warm_start(result.config).model, n_prompts)


def early_mean(history: list[dict], key: str = "all_same_group_fraction", first: int = EARLY_STEPS) -> float:
    """Mean of one metric over the first `first` steps of a run."""
    return finite_mean(history_curve(history[:first], key))


def print_all_equal(history: list[dict], group_size: int = RLConfig.group_size) -> None:
    """The share of all-equal groups early and late in a run, next to p^G + (1-p)^G at that stretch's accuracy."""
    for name, part in (
        (_("first {n} steps").format(n=EARLY_STEPS), history[:EARLY_STEPS]),
        (_("last {n} steps").format(n=LATE_STEPS), history[-LATE_STEPS:]),
    ):
        p = finite_mean(history_curve(part, "accuracy"))
        measured = finite_mean(history_curve(part, "all_same_group_fraction"))
        formula = p**group_size + (1 - p) ** group_size
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


# ----------------------------------------------------------------------------------------------- Exercise 7
EXERCISE7 = {"teacher_error_rate": (0.0,), "beta": (0.04,), "group_size": (2, 32)}  # the lecture's settings
EXERCISE7_PARTS = {"teacher_error_rate": "7(a)", "beta": "7(b)", "group_size": "7(c)"}
KNOB_NAMES = {"teacher_error_rate": "teacher error", "beta": "beta", "group_size": "G"}


def knob_label(knob: str, value) -> str:
    """'G = 32', 'beta = 0.04', 'teacher error 0': one knob's setting, for a legend or a table (current language)."""
    value = knob_value(knob, value)
    if knob == "teacher_error_rate":
        return _("teacher error {value}").format(value=f"{value:g}")
    return f"{KNOB_NAMES[knob]} = {value:g}"


def exercise7_configs(steps: int | None = None, seed: int = 0, settings: dict | None = None) -> dict[str, RLConfig]:
    """The runs of Exercise 7 (a)-(c): label -> RLConfig, the default GRPO run with one knob changed each.

    settings: knob -> values (default EXERCISE7: teacher error 0, beta 0.04, G = 2 and 32)."""
    return {
        f"{EXERCISE7_PARTS[knob]} {knob_label(knob, value)}": rl_config("grpo", steps, seed, **{knob: value})
        for knob, values in (settings or EXERCISE7).items()
        for value in values
    }


def answers_per_step(cfg: RLConfig) -> int:
    """Answers a run samples per step: P x G."""
    return cfg.prompts_per_step * cfg.group_size


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


def summary_row(label: str, result: RunResult, level: float = 0.9) -> dict:
    """One run's line of the Exercise 7 table: held-out metrics, all-equal groups early and late, and when (in
    steps and in answers sampled) its smoothed think-first share first reached `level` (English keys: the
    headers a learner reads are `summary_headers`)."""
    first = first_step(smooth(result.curve("cot_fraction"), SMOOTH) >= level)
    step = None if first is None else first + 1  # notebook 03 numbers RL steps from 1, as its figures draw them
    f = result.final
    return {
        "run": label,
        "answers per step": answers_per_step(result.config),
        "accuracy": f["accuracy"],
        "think-first share": f["cot_fraction"],
        "think-first accuracy": f["cot_accuracy"],
        "KL to warm-up (nats)": f.get("kl_to_warmup", math.nan),
        f"all-equal groups, first {EARLY_STEPS} steps": early_mean(result.history),
        f"all-equal groups, last {LATE_STEPS} steps": late_mean(result.history),
        f"steps to {level:.0%} thinking": step,
        "answers sampled by then": None if step is None else step * answers_per_step(result.config),
    }


def exercise7_findings(default: RunResult, runs: dict[str, RunResult], level: float = 0.9) -> list[str]:
    """What each Exercise 7 run shows next to the default run: its numbers beside the default's, no verdict (one run
    each, so a difference of a few steps or a point of accuracy can be noise)."""
    base = summary_row("the default", default, level)
    thinking_at = f"steps to {level:.0%} thinking"
    early, late = f"all-equal groups, first {EARLY_STEPS} steps", f"all-equal groups, last {LATE_STEPS} steps"

    def step_text(step) -> str:
        return (
            _("step {step}").format(step=step)
            if step is not None
            else _("not within {n} steps").format(n=len(default.history))
        )

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


# ----------------------------------------------------------------------------------------------- first run
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
            "your own GRPO step (§5 below), once it passes its checks: two runs, ~{time}, each time (your code's runs "
            "are not cached)"
        ).format(time=seconds_text(yours))
    )
    if total > 0:  # everything on disk: no total to announce
        lines.append(
            _("In all about {time} of training the first time, plus your step's runs.").format(time=seconds_text(total))
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- the lecture and us
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
    return _("{value} tokens").format(value=fmt(value)) if unit == "tokens" and text.endswith(" tokens") else text


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


# ----------------------------------------------------------------------------------------------- the lecture's rows
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


def measure(seed: int = 0, fast: bool | None = None) -> dict:
    """Everything `figures` needs for one seed (RL runs come from the checkpoint cache after the first call)."""
    sizes = fast_sizes(fast)
    report = warmup_metrics(DEFAULT_TEACHER_ERROR_RATE, seed, sizes["eval_prompts"])
    runs = {algo: rl_run(algo, sizes["steps"], seed) for algo in ALGO_LABELS}
    return {
        "teacher": simulated_teacher(seed=seed),
        "warm": report,
        "histories": runs["grpo"].history,
        "evals": {algo: held_out(r.policy, sizes["eval_prompts"], seed) for algo, r in runs.items()},
        "warm_pass": pass_at_k(report["model"], sizes["pass_prompts"], seed=seed),
        "grpo_pass": pass_at_k(runs["grpo"].policy, sizes["pass_prompts"], seed=seed),
    }


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


def figures(seeds=(0,), fast: bool | None = None) -> list[Row]:
    """Sections 5.1-5.3 and Exercises 3 and 6: every number of the lecture that notebook 03 reproduces, with ours."""
    return rows_from([measure(seed, fast) for seed in seeds], seeds, fast) + exercise_rows()
