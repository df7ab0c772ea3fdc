"""Reference versions of the CS336 assignment-5 SFT and GRPO functions, under the assignment's names and
signatures, built on `rlvr.objectives`.

Conventions (as in the assignment): B = rollout_batch_size = n_prompts x group_size, T = response tokens;
reward_fn(response, ground_truth) returns a dict with a "reward" key (also "format_reward", "answer_reward");
the group std is torch.std (unbiased, divide by G-1) plus advantage_eps; loss_type is one of LOSS_TYPES;
grpo_microbatch_train_step averages each answer's tokens, then the answers (GRPO's per-sequence mean);
sft_microbatch_train_step sums each answer's token NLLs (/ normalize_constant), then averages the answers.
"""

from __future__ import annotations

from typing import Callable, Literal

import torch

from .objectives import (
    aggregate_loss,
    all_same_fraction,
    dr_grpo_advantages,
    grpo_advantages,
    masked_mean,
    policy_gradient_loss,
    ppo_clip_loss,
)
from .objectives import masked_normalize as _masked_normalize

__all__ = [
    "LOSS_TYPES",
    "compute_group_normalized_rewards",
    "compute_naive_policy_gradient_loss",
    "compute_grpo_clip_loss",
    "compute_policy_gradient_loss",
    "masked_mean",
    "masked_normalize",
    "compute_entropy",
    "sft_microbatch_train_step",
    "grpo_microbatch_train_step",
]

LOSS_TYPES = ("no_baseline", "reinforce_with_baseline", "grpo_clip")
LossType = Literal["no_baseline", "reinforce_with_baseline", "grpo_clip"]
RewardFn = Callable[[str, str], dict]


# ----------------------------------------------------------------------------------------------- rewards
def _score(reward_fn: RewardFn, responses: list[str], ground_truths: list[str]) -> list[dict]:
    """reward_fn applied to each (response, ground truth) pair: B dicts."""
    if len(responses) != len(ground_truths):
        raise ValueError(f"{len(responses)} responses but {len(ground_truths)} ground truths")
    return [reward_fn(response, truth) for response, truth in zip(responses, ground_truths)]


def _reward_metadata(scores: list[dict], raw_rewards: torch.Tensor, group_size: int) -> dict[str, float]:
    """Batch statistics of the rewards (and the mean of every other numeric key reward_fn returns)."""
    metadata = {
        "reward_mean": float(raw_rewards.mean()),
        "reward_std": float(raw_rewards.std(correction=0)),
        "reward_min": float(raw_rewards.min()),
        "reward_max": float(raw_rewards.max()),
        "all_same_group_fraction": all_same_fraction(raw_rewards, group_size),
    }
    for key in scores[0]:
        if key != "reward":
            metadata[f"{key}_mean"] = float(torch.tensor([float(s[key]) for s in scores]).mean())
    return metadata


def compute_group_normalized_rewards(
    reward_fn: RewardFn,
    rollout_responses: list[str],
    repeated_ground_truths: list[str],
    group_size: int,
    advantage_eps: float,
    normalize_by_std: bool,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:
    """Group-normalised advantages [B], raw rewards [B] and reward statistics.

    normalize_by_std: (r - group mean) / (torch.std(group) + advantage_eps) (GRPO, unbiased std);
    otherwise r - group mean (Dr. GRPO). B = len(rollout_responses) must be a multiple of group_size.
    """
    scores = _score(reward_fn, rollout_responses, repeated_ground_truths)
    raw_rewards = torch.tensor([float(s["reward"]) for s in scores], dtype=torch.float32)  # [B]
    if normalize_by_std:
        advantages = grpo_advantages(raw_rewards, group_size, eps=advantage_eps, std="unbiased")  # [B]
    else:
        advantages = dr_grpo_advantages(raw_rewards, group_size)  # [B]
    return advantages, raw_rewards, _reward_metadata(scores, raw_rewards, group_size)


# ----------------------------------------------------------------------------------------------- losses
def compute_naive_policy_gradient_loss(
    raw_rewards_or_advantages: torch.Tensor, policy_log_probs: torch.Tensor
) -> torch.Tensor:
    """Per-token REINFORCE loss -A * log pi. [B, 1] (or [B]), [B, T] -> [B, T]."""
    return policy_gradient_loss(policy_log_probs, raw_rewards_or_advantages)


def compute_grpo_clip_loss(
    advantages: torch.Tensor, policy_log_probs: torch.Tensor, old_log_probs: torch.Tensor, cliprange: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token clipped loss [B, T] and {"clipped": bool [B, T]}. advantages [B, 1]; log-probs [B, T]."""
    loss, clipped = ppo_clip_loss(policy_log_probs, old_log_probs, advantages, cliprange)
    return loss, {"clipped": clipped}


def _require(loss_type: str, **tensors) -> None:
    """Raise ValueError if an argument that loss_type needs is None."""
    missing = [name for name, value in tensors.items() if value is None]
    if missing:
        raise ValueError(f"loss_type={loss_type!r} needs {', '.join(missing)}")


def compute_policy_gradient_loss(
    policy_log_probs: torch.Tensor,
    loss_type: LossType,
    raw_rewards: torch.Tensor | None = None,
    advantages: torch.Tensor | None = None,
    old_log_probs: torch.Tensor | None = None,
    cliprange: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token loss [B, T] of one loss_type in LOSS_TYPES, and its metadata. Rewards/advantages [B, 1]."""
    if loss_type == "no_baseline":
        _require(loss_type, raw_rewards=raw_rewards)
        return compute_naive_policy_gradient_loss(raw_rewards, policy_log_probs), {}
    if loss_type == "reinforce_with_baseline":
        _require(loss_type, advantages=advantages)
        return compute_naive_policy_gradient_loss(advantages, policy_log_probs), {}
    if loss_type == "grpo_clip":
        _require(loss_type, advantages=advantages, old_log_probs=old_log_probs, cliprange=cliprange)
        return compute_grpo_clip_loss(advantages, policy_log_probs, old_log_probs, cliprange)
    raise ValueError(f"unknown loss_type {loss_type!r}; choose from {LOSS_TYPES}")


# ----------------------------------------------------------------------------------------------- reductions
def masked_normalize(
    tensor: torch.Tensor, mask: torch.Tensor, dim: int | None = None, normalize_constant: float = 1.0
) -> torch.Tensor:
    """Sum of tensor where mask is 1 (over dim, or everything), divided by normalize_constant."""
    return _masked_normalize(tensor, mask, normalize_constant=normalize_constant, dim=dim)


def compute_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the next-token distribution, in nats. [B, T, V] -> [B, T]."""
    log_probs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)  # [B, T, V]
    return -(log_probs.exp() * log_probs).sum(dim=-1)


# ----------------------------------------------------------------------------------------------- train steps
def sft_microbatch_train_step(
    policy_log_probs: torch.Tensor,
    response_mask: torch.Tensor,
    gradient_accumulation_steps: int,
    normalize_constant: float = 1.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """SFT loss of one microbatch, backpropagated once; returns (loss, metadata), both detached.

    policy_log_probs, response_mask [B, T]. loss = masked_normalize(-policy_log_probs, response_mask,
    normalize_constant=normalize_constant) / B / gradient_accumulation_steps: each answer's summed NLL, averaged over
    answers. The handout does not mention the 1/B; the reference snapshots (v1.0.1) need it, but have B = 2 =
    gradient_accumulation_steps, so they cannot tell 1/B apart from a second 1/gradient_accumulation_steps.
    """
    if policy_log_probs.dim() != 2 or response_mask.shape != policy_log_probs.shape:
        raise ValueError(
            f"policy_log_probs and response_mask must both be [batch, seq]; got "
            f"{tuple(policy_log_probs.shape)} and {tuple(response_mask.shape)}"
        )
    batch_size = policy_log_probs.shape[0]
    nll = masked_normalize(-policy_log_probs, response_mask, normalize_constant=normalize_constant)  # scalar
    loss = nll / batch_size / gradient_accumulation_steps
    loss.backward()
    metadata = {
        "num_response_tokens": response_mask.sum().detach(),
        "token_nll": masked_mean(-policy_log_probs.detach(), response_mask),
    }
    return loss.detach(), metadata


def grpo_microbatch_train_step(
    policy_log_probs: torch.Tensor,
    response_mask: torch.Tensor,
    gradient_accumulation_steps: int,
    loss_type: LossType,
    raw_rewards: torch.Tensor | None = None,
    advantages: torch.Tensor | None = None,
    old_log_probs: torch.Tensor | None = None,
    cliprange: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Loss of one microbatch, backpropagated once; returns (loss / gradient_accumulation_steps, metadata).

    The per-token loss [B, T] is averaged over each answer's response tokens (response_mask [B, T]), then over
    the B answers, then divided by gradient_accumulation_steps.
    """
    per_token, metadata = compute_policy_gradient_loss(
        policy_log_probs, loss_type, raw_rewards, advantages, old_log_probs, cliprange
    )  # [B, T]
    loss = aggregate_loss(per_token, response_mask, "seq_mean_token_mean") / gradient_accumulation_steps
    loss.backward()
    if "clipped" in metadata:
        metadata["clip_fraction"] = masked_mean(metadata["clipped"].float(), response_mask)
    return loss.detach(), metadata
