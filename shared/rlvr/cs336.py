"""Reference versions of the CS336 assignment-5 SFT and GRPO functions, under the assignment's names and
signatures, built on `rlvr.objectives`: the spring 2025 edition's at the top level, the spring 2026 edition's where its
names are new (`compute_rollout_rewards`, `aggregate_loss_across_microbatch`, `grpo_train_step`) or with a `_2026`
suffix where the 2026 function changed its signature; `EDITIONS[edition][name]` gives each edition's function by the
assignment's name (`rlvr.a5` checks a student's code against them).

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
    cispo_loss,
    dr_grpo_advantages,
    grpo_advantages,
    gspo_loss,
    masked_mean,
    policy_gradient_loss,
    ppo_clip_loss,
)
from .objectives import masked_normalize as _masked_normalize

__all__ = [
    "EDITIONS",
    "IMPORTANCE_METHODS",
    "LOSS_TYPES",
    "aggregate_loss_across_microbatch",
    "compute_group_normalized_rewards_2026",
    "compute_policy_gradient_loss_2026",
    "compute_rollout_rewards",
    "get_response_log_probs",
    "grpo_train_step",
    "tokenize_prompt_and_output",
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


# ----------------------------------------------------------------------------------------------- tokens and log-probs
def tokenize_prompt_and_output(prompt_strs: list[str], output_strs: list[str], tokenizer) -> dict[str, torch.Tensor]:
    """Prompt and output tokenized separately (no special tokens), joined, right-padded with the tokenizer's pad id.

    Returns input_ids (the joined ids without their last position), labels (without their first: the next token) and
    response_mask (True where the label is an output token), each [B, max(len(prompt) + len(output)) - 1].
    """
    if len(prompt_strs) != len(output_strs):
        raise ValueError(f"{len(prompt_strs)} prompts but {len(output_strs)} outputs")
    prompts = tokenizer(list(prompt_strs), add_special_tokens=False)["input_ids"]
    outputs = tokenizer(list(output_strs), add_special_tokens=False)["input_ids"]
    width = max(len(p) + len(o) for p, o in zip(prompts, outputs))
    ids = torch.full((len(prompts), width), tokenizer.pad_token_id, dtype=torch.long)  # [B, L]
    is_output = torch.zeros(len(prompts), width, dtype=torch.bool)  # [B, L]
    for i, (p, o) in enumerate(zip(prompts, outputs)):
        ids[i, : len(p) + len(o)] = torch.tensor(p + o, dtype=torch.long)
        is_output[i, len(p) : len(p) + len(o)] = True
    return {"input_ids": ids[:, :-1], "labels": ids[:, 1:], "response_mask": is_output[:, 1:]}


def get_response_log_probs(
    model: torch.nn.Module, input_ids: torch.Tensor, labels: torch.Tensor, return_token_entropy: bool = False
) -> dict[str, torch.Tensor]:
    """log p(labels_t | input_ids_<=t) of a causal LM called as `model(input_ids).logits` [B, L] (and the next-token
    entropy [B, L]); prompt and padding positions are not masked here."""
    logits = model(input_ids).logits  # [B, L, V]
    log_probs = torch.log_softmax(logits.float(), dim=-1)  # [B, L, V]
    out = {"log_probs": log_probs.gather(-1, labels[..., None]).squeeze(-1)}  # [B, L]
    if return_token_entropy:
        out["token_entropy"] = compute_entropy(logits)  # [B, L]
    return out


# ----------------------------------------------------------------------------------------------- spring 2026
IMPORTANCE_METHODS = ("none", "noclip", "grpo", "gspo", "cispo")
BASELINES = ("mean", "none")
NORMALIZERS = ("std", "none", "mean")
LOSS_NORMALIZATIONS = ("sequence", "constant")


def _one_of(name: str, value: str, choices: tuple) -> None:
    """Raise ValueError unless value is one of choices."""
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose from {choices}")


def compute_rollout_rewards(
    reward_fn: RewardFn, rollout_responses: list[str], repeated_ground_truths: list[str]
) -> tuple[torch.Tensor, dict[str, float]]:
    """Raw rewards [B] (reward_fn's "reward" of each response) and the batch's reward statistics (2026)."""
    scores = _score(reward_fn, rollout_responses, repeated_ground_truths)
    raw_rewards = torch.tensor([float(s["reward"]) for s in scores], dtype=torch.float32)  # [B]
    metadata = {"reward_mean": float(raw_rewards.mean())}
    for key in scores[0]:
        if key != "reward":
            metadata[f"{key}_mean"] = float(torch.tensor([float(s[key]) for s in scores]).mean())
    return raw_rewards, metadata


def compute_group_normalized_rewards_2026(
    raw_rewards: torch.Tensor,
    group_size: int,
    baseline: Literal["mean", "none"] = "mean",
    advantage_eps: float = 1e-6,
    advantage_normalizer: Literal["std", "none", "mean"] = "std",
) -> tuple[torch.Tensor, dict[str, float]]:
    """Advantages [B] within each group of group_size answers (2026): the group mean subtracted (baseline "mean"),
    then divided by torch.std of the group + eps ("std", GRPO), by the group mean + eps ("mean", MaxRL) or by nothing
    ("none", Dr. GRPO); and reward statistics. A group whose rewards are all equal gets 0 with baseline "mean"."""
    _one_of("baseline", baseline, BASELINES)
    _one_of("advantage_normalizer", advantage_normalizer, NORMALIZERS)
    raw_rewards = torch.as_tensor(raw_rewards, dtype=torch.float32)
    if group_size < 1 or raw_rewards.numel() % group_size:
        raise ValueError(f"{raw_rewards.numel()} rewards cannot be split into groups of {group_size}")
    r = raw_rewards.reshape(-1, group_size)  # [B/G, G]
    centred = dr_grpo_advantages(raw_rewards, group_size).reshape(r.shape) if baseline == "mean" else r  # [B/G, G]
    if advantage_normalizer == "std":
        centred = centred / (r.std(dim=1, keepdim=True) + advantage_eps)  # torch.std: unbiased, as the handout says
    elif advantage_normalizer == "mean":
        centred = centred / (r.mean(dim=1, keepdim=True) + advantage_eps)
    metadata = {"reward_mean": float(raw_rewards.mean()), "all_same_group_fraction": all_same_fraction(r, group_size)}
    return centred.reshape(-1), metadata


def compute_policy_gradient_loss_2026(
    raw_rewards_or_advantages: torch.Tensor,
    policy_log_probs: torch.Tensor,
    importance_reweighting_method: Literal["none", "noclip", "grpo", "gspo", "cispo"] = "none",
    old_log_probs: torch.Tensor | None = None,
    cliprange: float | None = None,
    response_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token loss [B, T] (to minimise) of one importance-reweighting method (2026), and its metadata.

    none: -A log pi; noclip: -A rho_t (rho_t = exp(logp - old)); grpo: -min(rho_t A, clip(rho_t) A); gspo: the answer's
    length-normalised ratio clipped per answer (`objectives.gspo_loss`); cispo: -sg(min(rho_t, 1 + eps)) A log pi.
    A is [B] or [B, 1]; the others [B, T].
    """
    method = importance_reweighting_method
    _one_of("importance_reweighting_method", method, IMPORTANCE_METHODS)
    adv = raw_rewards_or_advantages.reshape(-1, 1)  # [B, 1]
    if method == "none":
        return policy_gradient_loss(policy_log_probs, adv), {}
    _require(method, old_log_probs=old_log_probs)
    if method == "noclip":
        return -adv * torch.exp(policy_log_probs - old_log_probs), {}
    _require(method, cliprange=cliprange)
    if method == "gspo":
        _require(method, response_mask=response_mask)
        loss, clipped = gspo_loss(policy_log_probs, old_log_probs, adv, cliprange, response_mask)
    elif method == "cispo":
        loss, clipped = cispo_loss(policy_log_probs, old_log_probs, adv, cliprange)
    else:
        loss, clipped = ppo_clip_loss(policy_log_probs, old_log_probs, adv, cliprange)
    mask = response_mask if response_mask is not None else torch.ones_like(clipped)
    return loss, {"clipped": clipped, "clip_fraction": masked_mean(clipped.float(), mask)}


def aggregate_loss_across_microbatch(
    per_token_policy_gradient_loss: torch.Tensor,
    mask: torch.Tensor,
    loss_normalization: Literal["sequence", "constant"] = "sequence",
    normalization_constant: int | None = None,
) -> torch.Tensor:
    """One scalar from a per-token loss [B, T] (2026): "sequence" averages each answer's masked tokens, then the
    answers; "constant" sums every masked token and divides by normalization_constant (Dr. GRPO's Z)."""
    _one_of("loss_normalization", loss_normalization, LOSS_NORMALIZATIONS)
    if loss_normalization == "sequence":
        return aggregate_loss(per_token_policy_gradient_loss, mask, "seq_mean_token_mean")
    if normalization_constant is None:
        raise ValueError("loss_normalization='constant' needs normalization_constant")
    return _masked_normalize(per_token_policy_gradient_loss, mask, normalize_constant=normalization_constant)


def _microbatches(n: int, steps: int) -> list[slice]:
    """`steps` consecutive slices of n rows (the last ones shorter when steps does not divide n)."""
    size = -(-n // steps)  # ceil
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def grpo_train_step(
    model: torch.nn.Module,
    tokenizer,
    optimizer: torch.optim.Optimizer,
    gradient_accumulation_steps: int,
    max_grad_norm: float | None,
    reward_fn: RewardFn,
    repeated_prompts: list[str],
    rollout_responses: list[str],
    repeated_ground_truths: list[str],
    group_size: int,
    baseline: Literal["mean", "none"] = "mean",
    advantage_eps: float = 1e-6,
    advantage_normalizer: Literal["std", "none", "mean"] = "std",
    importance_reweighting_method: Literal["none", "noclip", "grpo", "gspo", "cispo"] = "none",
    old_log_probs: torch.Tensor | None = None,
    cliprange: float | None = None,
    loss_normalization: Literal["sequence", "constant"] = "sequence",
    normalization_constant: int | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor | float]]:
    """One optimizer step on a batch of rollouts (2026): rewards, group advantages, tokens, then
    gradient_accumulation_steps microbatches whose losses add up to the whole batch's (a "sequence" microbatch's mean
    is weighted by its share of the answers; a "constant" one divides by the same Z), the gradient norm clipped to
    max_grad_norm, one step, gradients cleared. Returns the batch's loss (detached) and metadata (grad_norm before
    clipping, the reward statistics)."""
    raw_rewards, reward_meta = compute_rollout_rewards(reward_fn, rollout_responses, repeated_ground_truths)  # [B]
    advantages, adv_meta = compute_group_normalized_rewards_2026(
        raw_rewards, group_size, baseline, advantage_eps, advantage_normalizer
    )  # [B]
    batch = tokenize_prompt_and_output(repeated_prompts, rollout_responses, tokenizer)
    device = next(model.parameters()).device
    n = len(rollout_responses)
    optimizer.zero_grad(set_to_none=True)
    total = torch.zeros((), device=device)
    for rows in _microbatches(n, gradient_accumulation_steps):
        mask = batch["response_mask"][rows].to(device)  # [b, L]
        logps = get_response_log_probs(model, batch["input_ids"][rows].to(device), batch["labels"][rows].to(device))
        old = old_log_probs[rows].to(device) if old_log_probs is not None else None
        per_token, _meta = compute_policy_gradient_loss_2026(
            advantages[rows].to(device), logps["log_probs"], importance_reweighting_method, old, cliprange, mask
        )  # [b, L]
        loss = aggregate_loss_across_microbatch(per_token, mask, loss_normalization, normalization_constant)
        if loss_normalization == "sequence":
            loss = loss * (len(range(n)[rows]) / n)  # the microbatch's share of the batch's answers
        loss.backward()
        total = total + loss.detach()
    params = [p for p in model.parameters() if p.grad is not None]
    norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm if max_grad_norm is not None else float("inf"))
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return total, {**reward_meta, **adv_meta, "grad_norm": float(norm)}


EDITIONS: dict[str, dict[str, Callable]] = {  # edition -> the assignment's function name -> our reference
    "2025": {
        "compute_group_normalized_rewards": compute_group_normalized_rewards,
        "compute_naive_policy_gradient_loss": compute_naive_policy_gradient_loss,
        "compute_grpo_clip_loss": compute_grpo_clip_loss,
        "compute_policy_gradient_loss": compute_policy_gradient_loss,
        "masked_mean": masked_mean,
        "masked_normalize": masked_normalize,
        "compute_entropy": compute_entropy,
        "tokenize_prompt_and_output": tokenize_prompt_and_output,
        "get_response_log_probs": get_response_log_probs,
        "sft_microbatch_train_step": sft_microbatch_train_step,
        "grpo_microbatch_train_step": grpo_microbatch_train_step,
    },
    "2026": {
        "tokenize_prompt_and_output": tokenize_prompt_and_output,
        "get_response_log_probs": get_response_log_probs,
        "compute_rollout_rewards": compute_rollout_rewards,
        "compute_group_normalized_rewards": compute_group_normalized_rewards_2026,
        "compute_policy_gradient_loss": compute_policy_gradient_loss_2026,
        "aggregate_loss_across_microbatch": aggregate_loss_across_microbatch,
        "grpo_train_step": grpo_train_step,
    },
}
