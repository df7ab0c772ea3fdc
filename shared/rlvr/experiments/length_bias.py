"""Notebook 05: GRPO's length bias, Dr. GRPO's fix and Kimi k1.5's length reward (lecture sections 4.2 and 6.2).

Three pieces:

* per-token weights: GRPO averages each answer's loss over its own |o_i| tokens, so a token of a short answer
  weighs more than a token of a long one; Dr. GRPO divides every answer by the same constant L_max.
* a toy model where length cannot matter: the answer is correct with a fixed probability p; on the correct and on
  the wrong path the model has one "continue thinking" logit each, so the number of thinking tokens k in
  {0..L_cap} is a capped geometric variable. The true gradient w.r.t. both logits is exactly 0. Trained with the
  GRPO loss, the wrong path's length runs to the cap and the correct path's to 0; with the Dr. GRPO loss both stay.
  Training is vectorised over runs and written in numpy with the closed-form gradient (300 steps of both losses
  take ~50 ms of CPU); `toy_token_logps` gives the same model as token log-probs for autograd (the tests
  compare the two).
* Kimi k1.5's length reward (`rlvr.objectives.kimi_length_reward`) in a group, in the toy model, and switched on
  early or late on the arithmetic task.

Path index 0 is the correct path, 1 the wrong path. What the learner reads of them, and the lecture's statements next
to ours, is in `rlvr.narration.length_bias`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from rlvr.algorithms import DR_GRPO, GRPO  # the lecture's two losses: their rows of the table
from rlvr.config import size
from rlvr.experiments.common import (
    finite_mean,
)
from rlvr.i18n import N_, _
from rlvr.objectives import aggregate_loss, policy_gradient_loss

L_CAP = 30  # most thinking tokens a toy answer may write (the answer token comes after them)
INIT_LOGIT = math.log(9.0)  # starting "continue thinking" logit on both paths: P(continue) = 0.9, ~8.6 tokens
P_CORRECT = 0.3  # probability of a correct answer (the lecture's toy; Exercise 7(d) uses 0.7)
GROUP_SIZE = 8  # answers per prompt (G)
ANSWERS_PER_STEP = 128  # answers per step in each run (groups per step = ANSWERS_PER_STEP // G)
STEPS = 300  # toy training steps
OPTIMIZER = "sgd"  # plain SGD follows the expected gradient; "adam" also works (see LEARNING_RATES)
LEARNING_RATES = {"sgd": 3.0, "adam": 0.05}  # per optimizer (SGD steps scale with the loss, Adam steps do not)
OPTIMIZER_NAMES = {"sgd": "SGD", "adam": "Adam"}  # an optimizer's name as printed (subtitles, buttons)
N_RUNS = 8  # runs per seed, trained side by side (vectorised)
ADV_EPS = 1e-4  # added to the group std in GRPO's z-score (as rlvr.objectives.grpo_advantages)
# DAPO's token mean (TRL's default loss_type), the third aggregation: GRPO's z-score, every token of the batch alike
TOKEN_MEAN = replace(GRPO, name="token_mean", label=N_("token mean, DAPO"), aggregation="token_mean")
TOY_LOSSES = {row.name: row for row in (GRPO, DR_GRPO, TOKEN_MEAN)}  # a toy loss -> its advantage and aggregation
LOSSES = (GRPO.name, DR_GRPO.name)  # the toy figure's panels
ALL_LOSSES = tuple(TOY_LOSSES)
LOSS_LABELS = {  # translated where shown
    GRPO.name: N_("GRPO loss (1/|o_i|, z-score)"),
    DR_GRPO.name: N_("Dr. GRPO loss (1/L_max, mean only)"),
    TOKEN_MEAN.name: N_("token-mean loss (DAPO, TRL's default; z-score)"),
}
PATH_NAMES = (N_("correct path"), N_("wrong path"))  # shown with _(); English in the reproduce table
SMOOTH = 5  # trailing moving average (steps) of the arithmetic runs' curves before reading them
KIMI_WEIGHT = 1.0  # weight of Kimi's length reward next to the 0/1 reward (our choice: both span ~1)


# ----------------------------------------------------------------------------------------------- per-token weights
def per_token_weight(advantages, lengths, mode: str = "grpo", max_len: int | None = None) -> np.ndarray:
    """Weight on each token's log-prob of answer i (before the 1/G mean over answers), by the toy loss's aggregation:
    A_i/|o_i| (GRPO), A_i/L_max (Dr. GRPO) or A_i/mean_j |o_j| (the token mean: every token of the batch weighs the
    same)."""
    if mode not in TOY_LOSSES:
        raise ValueError(f"mode must be one of {ALL_LOSSES}, got {mode!r}")
    advantages, lengths = np.asarray(advantages, dtype=float), np.asarray(lengths, dtype=float)
    aggregation = TOY_LOSSES[mode].aggregation
    if aggregation == "seq_mean_token_mean":
        return advantages / lengths
    if aggregation == "seq_mean_token_sum_norm":
        return advantages / float(max_len)
    return advantages / lengths.mean()  # token_mean


def token_weights_by_autograd(advantages, lengths, mode: str = "grpo", max_len: int | None = None) -> torch.Tensor:
    """The same weights measured on the package's loss: -G * d(loss)/d(logp of a token), one value per answer. [G]."""
    lengths = torch.as_tensor(lengths)
    max_len = int(max_len or lengths.max())
    logps = torch.zeros(len(lengths), max_len, dtype=torch.float64, requires_grad=True)  # [G, T]
    response_mask = torch.arange(max_len)[None, :] < lengths[:, None]  # [G, T]
    adv = torch.as_tensor(advantages, dtype=torch.float64)  # [G]
    loss = aggregate_loss(policy_gradient_loss(logps, adv), response_mask, TOY_LOSSES[mode].aggregation, max_len)
    (grad,) = torch.autograd.grad(loss, logps)  # [G, T]
    return -len(lengths) * grad[:, 0]


# ----------------------------------------------------------------------------------------------- the toy model
def softplus(x):
    """log(1 + e^x), stable for large |x|."""
    return np.logaddexp(0.0, x)


def length_pmf(logit, cap: int = L_CAP) -> np.ndarray:
    """P(k thinking tokens), k = 0..cap, for continue-logit(s) `logit` [...] -> [..., cap + 1]."""
    logit = np.asarray(logit, dtype=float)[..., None]
    k = np.arange(cap + 1)
    log_q = -k * softplus(-logit) - np.where(k < cap, softplus(logit), 0.0)  # [..., cap+1]
    return np.exp(log_q)


def mean_thinking_tokens(logit, cap: int = L_CAP) -> np.ndarray:
    """Expected number of thinking tokens under continue-logit(s) `logit`. [...] -> [...]."""
    return length_pmf(logit, cap) @ np.arange(cap + 1)


def length_score(k, logit, cap: int = L_CAP) -> np.ndarray:
    """d log q(k) / d logit for the capped geometric length: k (1 - s) - [k < cap] s, s = sigmoid(logit)."""
    s = 1.0 / (1.0 + np.exp(-np.asarray(logit, dtype=float)))
    k = np.asarray(k, dtype=float)
    return k * (1 - s) - (k < cap) * s


def toy_token_logps(
    logits: torch.Tensor, paths: torch.Tensor, k: torch.Tensor, cap: int = L_CAP
) -> tuple[torch.Tensor, torch.Tensor]:
    """The toy answers as token log-probs: k "think" tokens, then the answer token (forced when k = cap).

    Args:
        logits: [2] continue logits (correct path, wrong path), may require grad.
        paths: [B] int64, 0 = correct, 1 = wrong; k: [B] int64 thinking tokens.
    Returns:
        logps [B, cap + 1] and response_mask [B, cap + 1] (True for t <= k: |o_i| = k + 1).
    """
    logit = logits[paths]  # [B]
    t = torch.arange(cap + 1)[None, :]  # [1, T]
    think = torch.nn.functional.logsigmoid(logit)[:, None].expand(-1, cap + 1)  # [B, T]
    stop = torch.where(k < cap, torch.nn.functional.logsigmoid(-logit), torch.zeros_like(logit))  # [B]
    logps = torch.where(t < k[:, None], think, torch.where(t == k[:, None], stop[:, None], torch.zeros_like(think)))
    return logps, t <= k[:, None]


def sample_thinking_tokens(log_continue: np.ndarray, log_u: np.ndarray, cap: int = L_CAP) -> np.ndarray:
    """Capped geometric by inversion: k = min(floor(log u / log P(continue)), cap), u uniform in (0, 1]."""
    return np.minimum(np.floor(log_u / np.minimum(log_continue, -1e-12)), cap)


def group_advantages(rewards: np.ndarray, kind: str, eps: float = ADV_EPS) -> np.ndarray:
    """numpy twin of rlvr.objectives.compute_advantages over the last axis, for the two losses' estimators: GRPO's
    z-score and Dr. GRPO's mean only (`kind`: a row's `advantage`)."""
    centred = rewards - rewards.mean(axis=-1, keepdims=True)
    if kind == DR_GRPO.advantage:
        return centred
    if kind == GRPO.advantage:
        return centred / (rewards.std(axis=-1, keepdims=True) + eps)  # population std, as the lecture
    raise ValueError(f"kind must be {GRPO.advantage!r} or {DR_GRPO.advantage!r}, got {kind!r}")


def kimi_reward_np(lengths: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """numpy twin of rlvr.objectives.kimi_length_reward over the last axis (a group per row)."""
    lo, hi = lengths.min(axis=-1, keepdims=True), lengths.max(axis=-1, keepdims=True)
    span = hi - lo
    lam = 0.5 - (lengths - lo) / np.where(span > 0, span, 1)
    return np.where(span > 0, np.where(correct, lam, np.minimum(lam, 0.0)), 0.0)


@dataclass
class ToyRun:
    """Continue logits of N runs of one toy configuration, step by step."""

    loss: str
    p_correct: float
    group_size: int
    logits: np.ndarray  # [steps + 1, N, 2] (path 0 correct, 1 wrong)
    cap: int = L_CAP
    length_reward_weight: float = 0.0
    length_reward_start: int = 0

    def mean_length(self) -> np.ndarray:
        """Expected thinking tokens per step, run and path. [steps + 1, N, 2]."""
        return mean_thinking_tokens(self.logits, self.cap)

    def mean_length_all(self) -> np.ndarray:
        """Expected thinking tokens of an answer of either path (what a single length curve shows). [steps + 1, N]."""
        lengths = self.mean_length()
        return self.p_correct * lengths[..., 0] + (1 - self.p_correct) * lengths[..., 1]


def token_weights(aggregation: np.ndarray, lengths: np.ndarray, max_len: int) -> np.ndarray:
    """Each answer's weight per token, times the number of answers of its run's batch: 1/|o_i| (GRPO), 1/L_max
    (Dr. GRPO) or 1/mean |o| over the run's batch (token mean). aggregation [L, 1, 1, 1], lengths [L, N, P, G]."""
    batch_mean = lengths.mean(axis=(2, 3), keepdims=True)  # [L, N, 1, 1]
    sequence = np.where(aggregation == "seq_mean_token_mean", 1.0 / lengths, 1.0 / max_len)
    return np.where(aggregation == "token_mean", 1.0 / batch_mean, sequence)


def train_toy(loss: str = "grpo", **settings) -> ToyRun:
    """`train_toys` for one loss (`settings`: its keyword arguments): the logits after every step."""
    return train_toys((loss,), **settings)[loss]


def train_toys(
    losses=LOSSES,
    p_correct: float = P_CORRECT,
    group_size: int = GROUP_SIZE,
    steps: int = STEPS,
    n_runs: int = N_RUNS,
    lr: float | None = None,
    answers_per_step: int = ANSWERS_PER_STEP,
    cap: int = L_CAP,
    init_logit: float = INIT_LOGIT,
    length_reward_weight: float = 0.0,
    length_reward_start: int = 0,
    seed: int = 0,
    optimizer: str = OPTIMIZER,
) -> dict:
    """Train the two continue logits of `n_runs` toy models on each loss of `losses` (GRPO, Dr. GRPO), all on the
    same random numbers (same outcomes and uniforms).

    Each step every run samples answers_per_step // group_size groups of G answers: correct with probability
    p_correct (not controlled by the model), then k thinking tokens from that path's capped geometric. Reward:
    1 if correct, plus length_reward_weight * Kimi's length reward from step length_reward_start on.
    The gradient is the closed form of the loss's gradient (the tests check it against autograd).
    Returns {loss: ToyRun} with the logits after every step. Arrays carry a leading loss axis: [L, N, P, G] =
    losses, runs, groups, answers.
    """
    for loss in losses:
        if loss not in ALL_LOSSES:
            raise ValueError(f"loss must be one of {ALL_LOSSES}, got {loss!r}")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    lr = LEARNING_RATES[optimizer] if lr is None else lr
    rng = np.random.default_rng(seed)
    n_groups = max(1, answers_per_step // group_size)
    shape = (n_runs, n_groups, group_size)
    z_score = np.array([TOY_LOSSES[loss].advantage == GRPO.advantage for loss in losses])[:, None, None, None]
    aggregation = np.array([TOY_LOSSES[loss].aggregation for loss in losses])[:, None, None, None]  # [L, 1, 1, 1]
    logits = np.full((len(losses), n_runs, 2), float(init_logit))  # [L, N, 2]
    m, v = np.zeros_like(logits), np.zeros_like(logits)
    beta1, beta2, adam_eps = 0.9, 0.999, 1e-8
    history = np.empty((steps + 1, *logits.shape))
    history[0] = logits
    for step in range(steps):
        correct = rng.random(shape) < p_correct  # [N, P, G] the same for every loss
        log_u = np.log(1.0 - rng.random(shape))  # [N, P, G], u in (0, 1]
        log_cont = -softplus(-logits)[:, :, None, None, :]  # [L, N, 1, 1, 2] log P(continue) per path
        log_continue = np.where(correct, log_cont[..., 0], log_cont[..., 1])  # [L, N, P, G]
        s = np.exp(log_continue)  # P(continue) on each answer's path
        k = sample_thinking_tokens(log_continue, log_u, cap)  # [L, N, P, G]
        rewards = np.broadcast_to(correct.astype(float), k.shape)
        if length_reward_weight and step >= length_reward_start:
            rewards = rewards + length_reward_weight * kimi_reward_np(k + 1, correct)
        z, centred = group_advantages(rewards, GRPO.advantage), group_advantages(rewards, DR_GRPO.advantage)
        adv = np.where(z_score, z, centred)  # [L, N, P, G]
        weight = token_weights(aggregation, k + 1, cap + 1)  # [L, N, P, G]
        score = k * (1 - s) - (k < cap) * s  # d log q(k) / d logit
        per_answer = -adv * weight * score / (n_groups * group_size)  # [L, N, P, G]
        on_correct = (per_answer * correct).sum(axis=(2, 3))  # [L, N]
        grad = np.stack([on_correct, per_answer.sum(axis=(2, 3)) - on_correct], -1)  # [L, N, 2]
        if optimizer == "sgd":
            logits = logits - lr * grad
        else:
            m = beta1 * m + (1 - beta1) * grad
            v = beta2 * v + (1 - beta2) * grad**2
            m_hat, v_hat = m / (1 - beta1 ** (step + 1)), v / (1 - beta2 ** (step + 1))
            logits = logits - lr * m_hat / (np.sqrt(v_hat) + adam_eps)
        history[step + 1] = logits
    return {
        loss: ToyRun(loss, p_correct, group_size, history[:, i], cap, length_reward_weight, length_reward_start)
        for i, loss in enumerate(losses)
    }


def train_toy_pair(p_correct: float = P_CORRECT, group_size: int = GROUP_SIZE, seed: int = 0, **kwargs) -> dict:
    """Both losses on the same random numbers. Returns {loss: ToyRun} for each of LOSSES."""
    return train_toys(LOSSES, p_correct, group_size, seed=seed, **kwargs)


# ----------------------------------------------------------------------------------------------- expected gradients
def advantage_by_path(p_correct: float, group_size: int, kind: str, eps: float = ADV_EPS) -> np.ndarray:
    """E[A_i * 1{answer i on path c}] for c = correct, wrong, by enumerating the other G - 1 outcomes. [2]."""
    others = np.arange(group_size)  # correct answers among the other G - 1
    prob = np.array(
        [math.comb(group_size - 1, j) * p_correct**j * (1 - p_correct) ** (group_size - 1 - j) for j in others]
    )
    out = []
    for own, p_own in ((1, p_correct), (0, 1 - p_correct)):
        n_correct = others + own  # [G]
        mean = n_correct / group_size
        adv = own - mean
        if kind == GRPO.advantage:  # the z-score; Dr. GRPO's estimator keeps the centred reward
            adv = adv / (np.sqrt(mean * (1 - mean)) + eps)
        out.append(p_own * float(prob @ adv))
    return np.array(out)


def expected_gradients(
    logits=(INIT_LOGIT, INIT_LOGIT), p_correct: float = P_CORRECT, group_size: int = GROUP_SIZE, cap: int = L_CAP
) -> dict:
    """Exact expected gradients w.r.t. the two continue logits, by enumerating k = 0..cap and the group outcomes.

    Returns {"true": d E[reward] / d logits, and for each of LOSSES: E[d loss / d logits]}, each [2] (correct path,
    wrong path). The true gradient and Dr. GRPO's are 0; GRPO's is not.
    """
    logits = np.asarray(logits, dtype=float)
    k = np.arange(cap + 1)
    pmf, score = length_pmf(logits, cap), length_score(k, logits[:, None], cap)  # [2, cap+1] each
    reward = np.array([1.0, 0.0])
    p_path = np.array([p_correct, 1 - p_correct])
    grads = {"true": p_path * reward * (pmf * score).sum(axis=1)}
    for loss in LOSSES:
        row = TOY_LOSSES[loss]
        advantage = advantage_by_path(p_correct, group_size, row.advantage)  # [2]
        if row.aggregation == "seq_mean_token_mean":  # each answer's tokens weigh 1/|o_i|
            grads[loss] = -advantage * (pmf * score / (k + 1)).sum(axis=1)
        else:  # 1/L_max, the same for every answer
            grads[loss] = -advantage * (pmf * score).sum(axis=1) / (cap + 1)
    return grads


# ----------------------------------------------------------------------------------------------- arithmetic task
def arithmetic_config(fast: bool | None = None, **overrides):
    """The notebook's GRPO run on the arithmetic task: notebook 03's run (32 x 8, lr 1e-4, size("rl_steps") steps,
    warm-up and RL seed 0) with some fields changed."""
    from rlvr.train import RLConfig

    return RLConfig.replicate(0, **{"algo": "grpo", "steps": size("rl_steps", fast), **overrides})


KIMI_LABELS = (N_("no length reward"), N_("length reward from step {step}"))  # the runs' labels


def kimi_arithmetic_configs(weight: float = KIMI_WEIGHT, fast: bool | None = None, translate: bool = True) -> dict:
    """label -> RLConfig: no length reward, switched on at step 0, switched on half-way (step 100 at full size).
    The labels are in the current language (English with translate=False: the reproduce table's)."""
    late = arithmetic_config(fast).steps // 2
    none, switched_on = (_(text) if translate else text for text in KIMI_LABELS)
    return {
        none: arithmetic_config(fast),
        switched_on.format(step=0): arithmetic_config(fast, length_reward_weight=weight),
        switched_on.format(step=late): arithmetic_config(fast, length_reward_weight=weight, length_reward_start=late),
    }


def kimi_arithmetic_runs(
    weight: float = KIMI_WEIGHT, fast: bool | None = None, progress: bool = True, translate: bool = True
) -> dict:
    """GRPO on the arithmetic task without, with an early and with a late length reward. label -> RunResult.

    Each run is cached on disk by rlvr.train.run (the first call trains: ~15-60 s per 200-step run).
    """
    from rlvr.train import run

    configs = kimi_arithmetic_configs(weight, fast, translate)
    return {label: run(cfg, progress=progress) for label, cfg in configs.items()}


SUMMARY_COLUMNS = {
    "cot_fraction": N_("think-first"),
    "accuracy": N_("accuracy"),
    "cot_accuracy": N_("think-first accuracy"),
    "mean_length": N_("mean length"),
    "all_same_group_fraction": N_("all-equal groups"),
}  # metric -> header (translated where shown)


def last_mean(result, key: str, last: int = 20) -> float:
    """Mean of a run's metric over its last `last` steps (NaN steps skipped)."""
    return finite_mean(result.curve(key)[-min(last, len(result.history)) :])


def run_summary(result, last: int = 20) -> dict:
    """Means over the last `last` steps of a run of every SUMMARY_COLUMNS metric."""
    return {key: last_mean(result, key, last) for key in SUMMARY_COLUMNS}


# ----------------------------------------------------------------------------------------------- over seeds
def toy_final_logits(p_correct: float, seeds=(0,), steps: int = STEPS) -> dict:
    """Final continue logits {loss: [runs, 2]} over all seeds (N_RUNS runs per seed)."""
    finals = {loss: [] for loss in LOSSES}
    for seed in seeds:
        for loss, run in train_toy_pair(p_correct, GROUP_SIZE, seed=seed, steps=steps).items():
            finals[loss].append(run.logits[-1])
    return {loss: np.concatenate(values) for loss, values in finals.items()}


def toy_final_lengths(p_correct: float, seeds=(0,), steps: int = STEPS) -> dict:
    """Final expected thinking tokens {loss: [runs, 2]} over all seeds (N_RUNS runs per seed)."""
    return {loss: mean_thinking_tokens(logits) for loss, logits in toy_final_logits(p_correct, seeds, steps).items()}
