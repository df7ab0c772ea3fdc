"""Notebook 03: a tiny model that learns to think before it answers (lecture sections 3, 5 and 6).

Everything starts from the supervised warm-up of `rlvr.sft` (a noisy teacher, half direct answers, half chains of
thought) and runs GRPO, Dr. GRPO and RFT with `rlvr.train.run` (cached on disk per configuration):

* the warm-up's metrics at temperature 1 and greedy, next to the lecture's (section 5.1), and a panel that
  retrains the warm-up for another teacher error rate;
* GRPO with 32 prompts x 8 answers, lr 1e-4, 200 steps, with live curves (section 5.2); Dr. GRPO and RFT on the
  same budget; pass@k for k = 1..16 before and after (section 5.3);
* Run-button panels for the group size G, the KL weight beta and the warm-up GRPO starts from (Exercise 7);
* Qwen3's thinking budget on our model: cut the chain of thought after b digits, force the answer (section 6.3).

What the learner reads of them, and every number of the lecture the notebook reproduces next to ours, is in
`rlvr.narration.thinking`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from rlvr.algorithms import ALGORITHMS, DR_GRPO, GRPO, RFT
from rlvr.cache import Entry, is_cached, load_or_create
from rlvr.config import SIZES, size
from rlvr.evaluate import evaluate, held_out_prompts, pass_at_k_curve
from rlvr.experiments.common import (
    finite_mean,
    first_step,
    signed,
    smooth,
)
from rlvr.i18n import N_, _
from rlvr.model import TinyTransformer, response_logps, sample
from rlvr.objectives import grpo_advantages, ppo_clip_loss
from rlvr.sft import SFTConfig, warm_up, warm_up_report
from rlvr.sft import cache_entry as sft_entry
from rlvr.task import (
    CLOSE_ID,
    DEFAULT_TEACHER_ERROR_RATE,
    HASH_ID,
    N_DIGITS,
    OPEN_ID,
    PAD_ID,
    answer_digits,
    decode,
    prompt_text,
    prompt_tokens,
    sample_prompts,
    score_batch,
    teacher_chain_digits,
)
from rlvr.runs import RunResult, history_curve
from rlvr.train import RLConfig, Trainer, run, run_key, train_rl, warm_start
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

# ----------------------------------------------------------------------------------------------- the runs compared
COMPARED_ALGOS = (GRPO.name, DR_GRPO.name, RFT.name)  # lecture §5.2's comparison, same 200 steps
RATIO_ALGOS = ("gspo", "cispo")  # notebook 04's two other ways to weight an update, run beside GRPO-1
ALGO_TITLES = {algo: ALGORITHMS[algo].label for algo in (*COMPARED_ALGOS, *RATIO_ALGOS)}  # what progress lines say
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


# ----------------------------------------------------------------------------------------------- one GRPO step
@dataclass(frozen=True)
class StageShape:
    """One stage of a GRPO step: the tensor it makes, its shape and what one group of it holds."""

    stage: str  # "sample", "score", ... (STAGE_NAMES: its name for the learner)
    name: str  # the tensor, e.g. "rollout.responses"
    shape: tuple  # its shape, e.g. (256, 15)
    meaning: str  # what one entry is (in the current language)
    example: str  # what one group (the first with right and wrong answers) holds (in the current language)


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


def held_out(policy: TinyTransformer, n_prompts: int | None = None, seed: int = 0, temperature: float = 1.0) -> dict:
    """Metrics of one answer per held-out prompt at temperature 1 (0: decoded greedily)."""
    return evaluate(policy, n_prompts or size("eval_prompts"), temperature=temperature, seed=seed)


def algo_evals(runs: dict[str, RunResult], n_prompts: int | None = None, seed: int = 0) -> dict[str, dict]:
    """`held_out` of each algorithm's run (keys: algorithm names), each with draws of its own: GRPO's are §4's (seed),
    the next algorithm's seed + 1, and so on in ALGO_LABELS' order, so that two policies that end alike do not print
    the same answers merely because they drew the same random numbers."""
    order = list(ALGO_LABELS)
    return {algo: held_out(result.policy, n_prompts, seed + order.index(algo)) for algo, result in runs.items()}


def late_mean(history: list[dict], key: str = "all_same_group_fraction", last: int = LATE_STEPS) -> float:
    """Mean of one metric over the last `last` steps of a run."""
    return finite_mean(history_curve(history[-last:], key))


def _held_out_tokens(n_prompts: int | None = None) -> torch.Tensor:
    """The held-out prompts as token ids [n, 11] (`n_prompts` of them, the eval size by default)."""
    return prompt_tokens(held_out_prompts(n_prompts or size("eval_prompts")))


def _first_token_log_odds(policy: TinyTransformer, prompts: torch.Tensor) -> torch.Tensor:
    """The mean over `prompts` [n, 11] of the first answer token's log-odds of `[` against `#` (a scalar tensor, with
    its graph where gradients are on)."""
    logits = policy(prompts)[:, -1].float()  # [n, V]: the first answer token
    return (logits[:, OPEN_ID] - logits[:, HASH_ID]).mean()


def first_token_reach(policy: TinyTransformer, n_prompts: int | None = None) -> dict:
    """How strongly the weights steer the first answer token: the gradient, over every weight, of the mean log-odds
    of `[` against `#` on the held-out prompts. Its L1 norm bounds what a step that moves every weight by lr can do
    to the log-odds (lr x L1, to first order); its L2 norm is the gradient's size."""
    log_odds = _first_token_log_odds(policy, _held_out_tokens(n_prompts))  # []
    grads = torch.autograd.grad(log_odds, [p for p in policy.parameters() if p.requires_grad])
    return {
        "l1": sum(float(g.abs().sum()) for g in grads),
        "l2": math.sqrt(sum(float((g * g).sum()) for g in grads)),
    }


def first_token_pace(cfg: RLConfig, steps: int = 10, n_prompts: int | None = None) -> float:
    """How fast a run's first token actually moves: the first `steps` steps of `cfg`'s run, traced again (the same
    seeds, so the same steps on this machine), and the mean log-odds of `[` against `#` they add per step."""
    prompts = _held_out_tokens(n_prompts)  # [n, 11], read after every step
    path = []

    def read(policy: TinyTransformer) -> None:
        """Append the policy's mean first-token log-odds to the path."""
        with torch.no_grad():
            path.append(float(_first_token_log_odds(policy, prompts)))

    class Traced(Trainer):
        """A Trainer that reads the first token's log-odds before its first step and after each one."""

        def step(self, step: int) -> dict:
            """One RL step, with the log-odds read around it."""
            if not path:
                read(self.policy)
            metrics = super().step(step)
            read(self.policy)
            return metrics

    train_rl(replace(cfg, steps=steps), trainer=Traced, progress=False)
    return (path[-1] - path[0]) / steps


@torch.no_grad()
def first_token_odds(policy: TinyTransformer, n_prompts: int | None = None) -> dict:
    """How the first token splits between thinking (`[`) and answering directly (`#`) on the held-out prompts: the
    10th, 50th and 90th percentile of P(`[` | prompt), and the share of prompts where `[` is the more likely one."""
    probs = torch.softmax(policy(_held_out_tokens(n_prompts))[:, -1].float(), dim=-1)  # [n, V]: the first answer token
    think, direct = probs[:, OPEN_ID].numpy(), probs[:, HASH_ID].numpy()  # [n] each
    low, median, high = np.quantile(think, [0.1, 0.5, 0.9])
    return {
        "p10": float(low),
        "median": float(median),
        "p90": float(high),
        "think_leads": float(np.mean(think > direct)),
    }


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


def evaluation_entry(cfg: RLConfig, n_prompts: int | None = None) -> Entry:
    """The cache entry of a cached run's held-out evaluation (`finished`'s metrics) on n_prompts prompts."""
    return Entry("evaluation", {**run_key(cfg), "eval_prompts": n_prompts or size("eval_prompts")})


def panel_training(
    cfg: RLConfig,
    on_step=None,
    progress: bool = False,
    n_prompts: int | None = None,
    sft_steps: int | None = None,
) -> RunResult:
    """A run from its warm-up (trained first if not on disk), evaluated on held-out prompts (`finished`). A run the
    cache keeps keeps its evaluation there too, so reading a trained run back takes no sampling."""
    result, warm_model = train_from_warmup(cfg, sft_steps, on_step)
    if warmup_steps(cfg.teacher_error_rate, sft_steps) != SFT_STEPS:  # a short fast-mode warm-up: nothing cached
        return finished(result, warm_model, n_prompts)
    loaded = load_or_create(evaluation_entry(cfg, n_prompts), lambda: finished(result, warm_model, n_prompts).final)
    return replace(result, final=loaded.payload)


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


# ----------------------------------------------------------------------------------------------- Exercise 7
EXERCISE7 = {"teacher_error_rate": (0.0,), "beta": (0.04,), "group_size": (2, 32)}  # the lecture's settings
EXERCISE7_PARTS = {"teacher_error_rate": "7(a)", "beta": "7(b)", "group_size": "7(c)"}
KNOB_NAMES = {"teacher_error_rate": "teacher error", "beta": "β", "group_size": "G"}  # as the prose writes them


def knob_label(knob: str, value) -> str:
    """'G = 32', 'β = 0.04', 'teacher error 0': one knob's setting, for a legend or a table (current language)."""
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


def other_seed_configs(steps: int | None = None, seed: int = 0, rl_seed: int = 1) -> dict[str, RLConfig]:
    """§6's three algorithms again with another RL seed (other prompts and draws), from the same warm-up as
    `rl_config(algo, steps, seed)`: algo -> RLConfig."""
    return {algo: replace(rl_config(algo, steps, seed), seed=rl_seed) for algo in COMPARED_ALGOS}


def perfect_teacher_other_seed(steps: int | None = None, seed: int = 0, rl_seed: int = 1) -> RLConfig:
    """Exercise 7(a)'s run (the perfect teacher's warm-up of `seed`) again with another RL seed, to set beside §6's
    GRPO run of that RL seed (`other_seed_configs`)."""
    return replace(rl_config("grpo", steps, seed, teacher_error_rate=0.0), seed=rl_seed)


def answers_per_step(cfg: RLConfig) -> int:
    """Answers a run samples per step: P x G."""
    return cfg.prompts_per_step * cfg.group_size


def thinking_step(result: RunResult, level: float = 0.9) -> int | None:
    """The RL step (counted from 0, as every figure draws them) at which the run's smoothed think-first share first
    reached `level`; None if it never did."""
    return first_step(smooth(result.curve("cot_fraction"), SMOOTH) >= level)


def same_steps(result: RunResult, other: RunResult, key: str = "reward") -> int:
    """How many steps, from the first, two runs logged exactly the same `key` (the same answers drawn and scored)."""
    a, b = result.curve(key), other.curve(key)  # [T], [T']
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if differ.size else n


def summary_row(label: str, result: RunResult, level: float = 0.9) -> dict:
    """One run's line of the Exercise 7 table: held-out metrics, all-equal groups early and late, and when (in
    steps and in answers sampled) its smoothed think-first share first reached `level` (English keys: the
    headers a learner reads are `summary_headers`)."""
    step = thinking_step(result, level)
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
        "answers sampled by then": None if step is None else (step + 1) * answers_per_step(result.config),
    }


# ----------------------------------------------------------------------------------------------- for the rows
def measure(seed: int = 0, fast: bool | None = None) -> dict:
    """Everything the lecture's rows (`rlvr.narration.thinking.rows`) read for one seed (RL runs come from the
    checkpoint cache after the first call)."""
    sizes = fast_sizes(fast)
    report = warmup_metrics(DEFAULT_TEACHER_ERROR_RATE, seed, sizes["eval_prompts"])
    runs = {algo: rl_run(algo, sizes["steps"], seed) for algo in ALGO_LABELS}
    return {
        "teacher": simulated_teacher(seed=seed),
        "warm": report,
        "histories": runs["grpo"].history,
        "evals": algo_evals(runs, sizes["eval_prompts"], seed),
        "warm_pass": pass_at_k(report["model"], sizes["pass_prompts"], seed=seed),
        "grpo_pass": pass_at_k(runs["grpo"].policy, sizes["pass_prompts"], seed=seed),
    }
