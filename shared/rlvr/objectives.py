"""The lecture's objectives as pure tensor functions: advantages, PPO clip and its sequence-level (GSPO) and
clipped-weight (CISPO) variants, KL estimators, reward shaping, GAE, loss aggregations, RFT, Kimi k1.5's length reward
and the unbiased pass@k.

Shapes: B answers (= prompts x group_size), T response tokens, G = group_size.
"""

from __future__ import annotations

import math

import torch

ADVANTAGE_KINDS = ("none", "mean", "rloo", "grpo", "maxrl")
AGGREGATIONS = ("seq_mean_token_mean", "seq_mean_token_sum_norm", "token_mean")


# ----------------------------------------------------------------------------------------------- advantages
def _groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """View flat rewards [B] as [B / G, G] (one row per prompt)."""
    rewards = torch.as_tensor(rewards, dtype=torch.float32)
    if group_size < 1 or rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards cannot be split into groups of {group_size}")
    return rewards.reshape(-1, group_size)


def _all_equal(r: torch.Tensor) -> torch.Tensor:
    """Which groups have all-equal rewards (no signal). [B/G, G] -> [B/G, 1] bool."""
    return (r == r[:, :1]).all(dim=1, keepdim=True)


def _centred(r: torch.Tensor) -> torch.Tensor:
    """r - group mean, exactly 0 for all-equal groups (a float mean of equal values is not always exact)."""
    return torch.where(_all_equal(r), 0.0, r - r.mean(dim=1, keepdim=True))  # [B/G, G]


def mean_baseline_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """A_i = r_i - mean(r), the mean including answer i itself (scales the gradient by (G-1)/G). [B] -> [B]."""
    return _centred(_groups(rewards, group_size)).reshape(-1)


def rloo_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Leave-one-out (RLOO, Ahmadian et al. 2024): A_i = r_i - mean of the other G-1 rewards. [B] -> [B]."""
    if group_size < 2:
        raise ValueError("RLOO needs group_size >= 2 (the baseline is the mean of the other answers)")
    r = _groups(rewards, group_size)  # [B/G, G]
    others = (r.sum(dim=1, keepdim=True) - r) / (group_size - 1)  # [B/G, G]
    return torch.where(_all_equal(r), 0.0, r - others).reshape(-1)


def grpo_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-4, std: str = "population") -> torch.Tensor:
    """GRPO's group z-score (Shao et al. 2024): (r_i - mean) / (std + eps). [B] -> [B].

    std: "population" (divide by G, as in the lecture's Exercise 3 and nano-aha-moment) or "unbiased"
    (divide by G-1, as torch.std, TRL and CS336 assignment 5). All-equal rewards give exactly 0.
    """
    if std not in ("population", "unbiased"):
        raise ValueError(f"std must be 'population' or 'unbiased', got {std!r}")
    if std == "unbiased" and group_size < 2:
        raise ValueError("the unbiased std needs group_size >= 2")
    r = _groups(rewards, group_size)  # [B/G, G]
    sd = r.std(dim=1, keepdim=True, correction=0 if std == "population" else 1)  # [B/G, 1]
    return torch.where(_all_equal(r), 0.0, _centred(r) / (sd + eps)).reshape(-1)


def dr_grpo_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Dr. GRPO (Liu et al. 2025): the group mean is subtracted, nothing is divided. [B] -> [B]."""
    return mean_baseline_advantages(rewards, group_size)


def maxrl_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-4) -> torch.Tensor:
    """MaxRL (Tajwar et al. 2026, arXiv:2602.02710), CS336 assignment 5's "mean" normaliser: (r_i - mean) / (mean +
    eps), which weighs a prompt the policy rarely gets right more than an easy one. All-equal rewards give 0.
    [B] -> [B]."""
    r = _groups(rewards, group_size)  # [B/G, G]
    return (_centred(r) / (r.mean(dim=1, keepdim=True) + eps)).reshape(-1)


def compute_advantages(
    rewards: torch.Tensor, group_size: int, kind: str = "grpo", eps: float = 1e-4, std: str = "population"
) -> torch.Tensor:
    """Advantages of one kind in ADVANTAGE_KINDS ("none" returns the raw rewards). [B] -> [B]."""
    if kind == "none":
        return _groups(rewards, group_size).reshape(-1).clone()
    if kind == "mean":
        return mean_baseline_advantages(rewards, group_size)
    if kind == "rloo":
        return rloo_advantages(rewards, group_size)
    if kind == "grpo":
        return grpo_advantages(rewards, group_size, eps, std)
    if kind == "maxrl":
        return maxrl_advantages(rewards, group_size, eps)
    raise ValueError(f"unknown advantage kind {kind!r}; choose from {ADVANTAGE_KINDS}")


def all_same_fraction(rewards: torch.Tensor, group_size: int) -> float:
    """Share of groups whose rewards are all equal (all right or all wrong: zero advantage, no signal)."""
    return float(_all_equal(_groups(rewards, group_size)).float().mean())


# ----------------------------------------------------------------------------------------------- PPO clip
def _per_token(advantages: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Broadcast advantages [B], [B, 1] or [B, T] to the shape of `like` [B, T]."""
    if advantages.dim() == 1:
        advantages = advantages[:, None]
    return advantages.expand_as(like)


def ppo_clip_loss(
    logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor, clip_eps: float = 0.2
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate (Schulman et al. 2017), as a loss to minimise, per token.

    loss_t = -min(ratio_t * A_t, clip(ratio_t, 1 - eps, 1 + eps) * A_t), ratio_t = exp(logps - old_logps).
    Args:
        logps, old_logps: [B, T] log-probs under the current and the sampling policy.
        advantages: [B], [B, 1] or [B, T].
    Returns:
        loss [B, T] and clipped [B, T] (bool: the clipped term is the smaller one, so the gradient is 0).
    """
    adv = _per_token(advantages, logps)  # [B, T]
    ratio = torch.exp(logps - old_logps)  # [B, T]
    unclipped = ratio * adv  # [B, T]
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv  # [B, T]
    return -torch.minimum(unclipped, clipped), clipped < unclipped


def _per_answer(advantages: torch.Tensor) -> torch.Tensor:
    """One advantage per answer as a column: [B] or [B, 1] -> [B, 1]."""
    return advantages.reshape(-1, 1)


def gspo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    clip_eps: float,
    response_mask: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GSPO's clipped objective (Zheng et al. 2025, arXiv:2507.18071), as a loss to minimise, on every token.

    One ratio per answer, the geometric mean of its tokens' ratios: s_i = exp(mean over its real tokens of
    logps - old_logps) (length-normalised, so long answers are not exponentially far from 1); the answer's loss
    -min(s_i A_i, clip(s_i, 1 - eps, 1 + eps) A_i) is clipped per answer and written on each of its tokens, so the
    per-answer token mean ("seq_mean_token_mean") gives the paper's per-answer average.
    Args:
        logps, old_logps, response_mask: [B, T]; advantages: [B] or [B, 1].
    Returns:
        loss [B, T] and clipped [B, T] (bool, the same for every token of an answer).
    """
    mask = response_mask.to(logps.dtype)  # [B, T]
    log_s = ((logps - old_logps) * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True).clamp(min=1)  # [B, 1]
    s = torch.exp(log_s)  # [B, 1]
    adv = _per_answer(advantages)  # [B, 1]
    unclipped = s * adv  # [B, 1]
    clipped = torch.clamp(s, 1 - clip_eps, 1 + clip_eps) * adv  # [B, 1]
    return (-torch.minimum(unclipped, clipped)).expand_as(logps), (clipped < unclipped).expand_as(logps)


def cispo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    clip_eps: float,
    response_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """CISPO (MiniMax et al. 2025, MiniMax-M1, arXiv:2506.13585), as a loss to minimise, per token.

    loss_t = -sg(min(ratio_t, 1 + eps)) A log pi(o_t): the importance weight is clipped from above and detached, so a
    token whose ratio passed 1 + eps still gets a gradient (capped), where PPO's clip would give it none. The paper
    leaves the lower bound open (CS336 assignment 5's eq. 61 has none either); so does this.
    Args:
        logps, old_logps: [B, T]; advantages: [B], [B, 1] or [B, T]; response_mask unused (one signature for all).
    Returns:
        loss [B, T] and clipped [B, T] (bool: the weight was capped).
    """
    ratio = torch.exp(logps - old_logps)  # [B, T]
    weight = torch.clamp(ratio, max=1 + clip_eps).detach()  # [B, T]
    return -weight * _per_token(advantages, logps) * logps, ratio > 1 + clip_eps


def clip_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    clip_eps: float,
    response_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`ppo_clip_loss` in the signature every ratio objective of RATIO_LOSSES shares."""
    return ppo_clip_loss(logps, old_logps, advantages, clip_eps)


RATIO_LOSSES = {  # an objective's name (rlvr.algorithms' column) -> its per-token loss and clip indicator
    "clip": clip_loss,  # PPO / GRPO: the token's ratio, clipped
    "gspo": gspo_loss,  # the answer's length-normalised ratio, clipped per answer
    "cispo": cispo_loss,  # the token's ratio as a detached weight, capped
}


# ----------------------------------------------------------------------------------------------- KL estimators
def kl_k1(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """k1 = -log r with log r = ref_logps - logps: unbiased for KL(pi || pi_ref), high variance, can be < 0."""
    return logps - ref_logps


def kl_k2(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """k2 = (log r)^2 / 2: biased, low variance near the reference, always >= 0."""
    return 0.5 * (ref_logps - logps) ** 2


def kl_k3(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """k3 = (r - 1) - log r: unbiased and always >= 0 (Schulman 2020; TRL's GRPO penalty)."""
    log_r = ref_logps - logps
    return torch.expm1(log_r) - log_r  # expm1 keeps it >= 0 in float32 when log r is tiny


# ----------------------------------------------------------------------------------------------- PPO for LMs
def last_token_index(response_mask: torch.Tensor) -> torch.Tensor:
    """Index of each answer's last real token. [B, T] bool -> [B] int64."""
    return (response_mask.long().sum(dim=1) - 1).clamp(min=0)


def shaped_rewards(
    scores: torch.Tensor, kl: torch.Tensor, response_mask: torch.Tensor, beta: float, clamp_kl: bool = True
) -> torch.Tensor:
    """AlpacaFarm's per-token reward: -beta * KL_t on every token, plus the score on the last token.

    Args:
        scores: [B] verifier (or reward-model) score of each answer.
        kl: [B, T] per-token KL estimate (k1: logps - ref_logps).
        response_mask: [B, T] bool.
        clamp_kl: clamp KL_t at >= 0 so the policy cannot earn reward by pushing tokens below the reference.
    Returns:
        rewards [B, T] (0 on padding).
    """
    kl = kl.clamp(min=0) if clamp_kl else kl
    rewards = -beta * kl * response_mask  # [B, T]
    last = last_token_index(response_mask)  # [B]
    return rewards.scatter_add(1, last[:, None], scores.to(rewards.dtype)[:, None])


def gae(
    rewards: torch.Tensor, values: torch.Tensor, response_mask: torch.Tensor, gamma: float = 1.0, lam: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation (Schulman et al. 2016) over each answer's tokens.

    delta_t = r_t + gamma * V_{t+1} - V_t (V = 0 after the last token); A_t = delta_t + gamma * lam * A_{t+1}.
    With gamma = lam = 1: A_t = (sum of rewards from t to the end) - V_t.
    Args:
        rewards, values: [B, T]; response_mask: [B, T] bool.
    Returns:
        advantages [B, T] and returns [B, T] = advantages + values (0 on padding).
    """
    mask = response_mask.to(rewards.dtype)  # [B, T]
    values = values * mask
    advantages = torch.zeros_like(rewards)  # [B, T]
    running = torch.zeros_like(rewards[:, 0])  # [B]
    next_value = torch.zeros_like(rewards[:, 0])  # [B]
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * next_value - values[:, t]  # [B]
        running = (delta + gamma * lam * running) * mask[:, t]
        advantages[:, t] = running
        next_value = values[:, t]
    return advantages, (advantages + values) * mask


# ----------------------------------------------------------------------------------------------- aggregation
def masked_mean(tensor: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean over the elements where mask is True (NaN where a slice has none, as in CS336 assignment 5)."""
    mask = mask.to(tensor.dtype)
    if dim is None:
        return (tensor * mask).sum() / mask.sum()
    return (tensor * mask).sum(dim=dim) / mask.sum(dim=dim)


def masked_normalize(
    tensor: torch.Tensor, mask: torch.Tensor, normalize_constant: float = 1.0, dim: int | None = None
) -> torch.Tensor:
    """Sum over the elements where mask is True, divided by a constant (Dr. GRPO's normaliser)."""
    summed = (tensor * mask.to(tensor.dtype)).sum() if dim is None else (tensor * mask.to(tensor.dtype)).sum(dim=dim)
    return summed / normalize_constant


def aggregate_loss(
    per_token_loss: torch.Tensor,
    response_mask: torch.Tensor,
    mode: str = "seq_mean_token_mean",
    max_len: int | None = None,
) -> torch.Tensor:
    """Reduce a per-token loss [B, T] to a scalar.

    modes: "seq_mean_token_mean" (GRPO: mean over each answer's |o_i| tokens, then over answers: length bias),
    "seq_mean_token_sum_norm" (Dr. GRPO: each answer's token sum / max_len, then mean over answers),
    "token_mean" (every real token of the batch weighs the same; TRL's "bnpo").
    """
    if mode == "seq_mean_token_mean":
        lengths = response_mask.sum(dim=1).clamp(min=1)  # [B]
        return ((per_token_loss * response_mask).sum(dim=1) / lengths).mean()
    if mode == "seq_mean_token_sum_norm":
        max_len = max_len or per_token_loss.shape[1]
        return masked_normalize(per_token_loss, response_mask, max_len, dim=1).mean()
    if mode == "token_mean":
        return (per_token_loss * response_mask).sum() / response_mask.sum().clamp(min=1)
    raise ValueError(f"unknown aggregation {mode!r}; choose from {AGGREGATIONS}")


def policy_gradient_loss(logps: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """Per-token REINFORCE loss -A_i * log pi(o_t): its gradient is the policy gradient. [B, T] -> [B, T]."""
    return -_per_token(advantages, logps) * logps


def rft_loss(logps: torch.Tensor, response_mask: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """Rejection-sampling fine-tuning: SFT (token mean) on the correct answers only; 0 if none is correct."""
    keep = response_mask & (rewards > 0)[:, None]  # [B, T]
    if not bool(keep.any()):
        return (logps * 0).sum()
    return -(logps * keep).sum() / keep.sum()


# ----------------------------------------------------------------------------------------------- Kimi, pass@k
def kimi_length_reward(lengths: torch.Tensor, correct: torch.Tensor) -> torch.Tensor:
    """Kimi k1.5's length reward for one group (arXiv:2501.12599, 2.3.3).

    lam_i = 0.5 - (len_i - min_len) / (max_len - min_len); a correct answer gets lam_i, a wrong one min(0, lam_i);
    every answer gets 0 when all lengths are equal. [G], [G] -> [G].
    """
    lengths = torch.as_tensor(lengths, dtype=torch.float32)
    correct = torch.as_tensor(correct, dtype=torch.bool)
    lo, hi = lengths.min(), lengths.max()
    if hi == lo:
        return torch.zeros_like(lengths)
    lam = 0.5 - (lengths - lo) / (hi - lo)  # [G]
    return torch.where(correct, lam, lam.clamp(max=0))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))
