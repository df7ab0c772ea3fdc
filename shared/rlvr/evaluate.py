"""Metrics of a batch of answers and held-out evaluation of a model (accuracy, format shares, lengths, pass@k)."""

from __future__ import annotations

import math

import numpy as np
import torch

from .model import TinyTransformer, sample
from .objectives import pass_at_k
from .task import prompt_tokens, sample_prompts, score_batch

EVAL_SEED = 20_250_516  # held-out prompts come from their own stream, never from a training seed
EVAL_PROMPTS = 2000
PASS_AT_K_SAMPLES = 16
PASS_AT_K_KS = (1, 2, 4, 8, 16)


def _mean(values: torch.Tensor, where: torch.Tensor) -> float:
    """Mean of values over a boolean selection; NaN when nothing is selected."""
    n = int(where.sum())
    return float(values[where].float().mean()) if n else math.nan


def answer_metrics(scores: dict[str, torch.Tensor]) -> dict[str, float]:
    """Summary of scored answers (the output of `task.score_batch`)."""
    correct, think, direct, length = scores["correct"], scores["is_think"], scores["is_direct"], scores["length"]
    every = torch.ones_like(correct)
    return {
        "accuracy": _mean(correct, every),
        "cot_fraction": _mean(think, every),
        "cot_accuracy": _mean(correct, think),
        "direct_accuracy": _mean(correct, direct),
        "chain_exact": _mean(scores["cot_correct"], think),
        "malformed_fraction": _mean(~(think | direct), every),
        "mean_length": _mean(length, every),
        "mean_length_correct": _mean(length, correct),
        "mean_length_wrong": _mean(length, ~correct),
        "mean_length_think": _mean(length, think),
        "mean_length_direct": _mean(length, direct),
    }


def held_out_prompts(n: int = EVAL_PROMPTS, seed: int = EVAL_SEED) -> np.ndarray:
    """The fixed held-out prompts [n, 10] (a seed stream no training run uses)."""
    return sample_prompts(n, np.random.default_rng(seed))


@torch.no_grad()
def sample_scores(
    model: TinyTransformer,
    prompts: np.ndarray,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 2000,
    group_size: int = 1,
) -> dict[str, torch.Tensor]:
    """Sample group_size answers per prompt (about batch_size answers at a time) and score them; returns
    score_batch's dict of [n * group_size] tensors, prompt by prompt."""
    generator = torch.Generator().manual_seed(seed)
    per_chunk = max(1, batch_size // group_size)  # prompts per batch
    parts = []
    for start in range(0, len(prompts), per_chunk):
        chunk = prompts[start : start + per_chunk]
        rollout = sample(
            model,
            prompt_tokens(chunk),
            temperature=temperature,
            generator=generator,
            group_size=group_size,
        )
        parts.append(score_batch(torch.as_tensor(np.repeat(chunk, group_size, axis=0)), rollout.responses))
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}


def evaluate(
    model: TinyTransformer, n_prompts: int = EVAL_PROMPTS, temperature: float = 1.0, seed: int = 0
) -> dict[str, float]:
    """Metrics of one answer per held-out prompt (temperature 0 = greedy)."""
    was_training = model.training
    model.eval()
    metrics = answer_metrics(sample_scores(model, held_out_prompts(n_prompts), temperature, seed))
    model.train(was_training)
    return metrics


@torch.no_grad()
def pass_at_k_curve(
    model: TinyTransformer,
    n_prompts: int = EVAL_PROMPTS,
    n_samples: int = PASS_AT_K_SAMPLES,
    ks=PASS_AT_K_KS,
    seed: int = 0,
) -> dict[int, float]:
    """Unbiased pass@k averaged over held-out prompts, from n_samples answers per prompt at temperature 1."""
    correct = sample_scores(model, held_out_prompts(n_prompts), 1.0, seed, batch_size=4000, group_size=n_samples)[
        "correct"
    ]  # [n * s]
    n_correct = correct.view(n_prompts, n_samples).sum(dim=1).tolist()  # [n]
    return {int(k): float(np.mean([pass_at_k(n_samples, c, k) for c in n_correct])) for k in ks}
