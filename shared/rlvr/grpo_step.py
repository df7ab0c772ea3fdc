"""GRPO as one plain function, and a loop that trains with any function of that shape.

Notebook 03 asks learners to write `grpo_step` themselves; `train_with_step` then trains the warm-up model with their
function. `grpo_step` here is the package's version, written as a learner's answer is: the log-probs of every answer,
the ratio, the clipped per-token loss and the mean over each answer's real tokens. `rlvr.train.Trainer.step` computes
the same step for `algo="grpo"` with a speed trick (`rlvr.model.update_logps` leaves out the groups whose advantages
are all 0, which add exactly 0 to the loss and its gradient), so the two agree up to float rounding
(tests/test_grpo_step.py).

A step function's contract::

    step_fn(policy, ref, optimizer, prompts, generator, group_size=8, beta=0.0, eps=1e-4, clip_eps=0.2) -> dict
    prompts [P, 10] int64 digits; B = P x group_size answers; returns
    {"responses": [B, T] int64, "rewards": [B], "advantages": [B], "loss": float}
"""

from __future__ import annotations

import copy
import math
import time
from typing import Callable

import numpy as np
import torch

from .algorithms import algorithm
from .config import training_threads
from .evaluate import answer_metrics
from .model import TinyTransformer, response_logps, sample
from .objectives import aggregate_loss, all_same_fraction, grpo_advantages, kl_k3
from .runs import OnStep, RunResult
from .task import MAX_NEW_TOKENS, prompt_tokens, sample_prompts, score_batch
from .train import RLConfig, warm_start

GRPO = algorithm("grpo")  # its row of rlvr.algorithms.ALGORITHMS: group z-score advantages, its loss aggregation
StepFn = Callable[..., dict]
STEP_KEYS = ("responses", "rewards", "advantages", "loss")


class StepError(ValueError):
    """A step function returned something the loop cannot use (one-line message)."""


def group_prompts(prompts: np.ndarray, group_size: int) -> torch.Tensor:
    """Each prompt repeated for its group, in the order `sample` answers them. [P, 10] -> [B, 10]."""
    return torch.as_tensor(np.repeat(np.asarray(prompts), group_size, axis=0))


def grpo_step(
    policy: TinyTransformer,
    ref: TinyTransformer,
    optimizer: torch.optim.Optimizer,
    prompts: np.ndarray,
    generator: torch.Generator,
    group_size: int = 8,
    beta: float = 0.0,
    eps: float = 1e-4,
    clip_eps: float = 0.2,
    temperature: float = 1.0,
    max_new_tokens: int = MAX_NEW_TOKENS,
) -> dict:
    """One GRPO step: sample, score, group advantages, the clipped loss (+ beta * k3) averaged over each answer's
    tokens, then over answers, and one update."""
    rollout = sample(
        policy, prompt_tokens(prompts), temperature, max_new_tokens, generator, group_size=group_size
    )  # B = P x G answers, rows i*G ... i*G+G-1 for prompt i
    rewards = score_batch(group_prompts(prompts, group_size), rollout.responses)["reward"]  # [B]
    advantages = grpo_advantages(rewards, group_size, eps)  # [B]
    logps = response_logps(policy, rollout.prompt_ids, rollout.responses, group_size=group_size)  # [B, T] with graph
    old_logps = logps.detach()  # the policy that sampled: one update per batch, so the same numbers
    ratio = torch.exp(logps - old_logps)  # [B, T]: 1 in value, its gradient is that of log pi
    A = advantages[:, None]  # [B, 1]: an answer's advantage, shared by its tokens
    per_token = -torch.minimum(ratio * A, ratio.clamp(1 - clip_eps, 1 + clip_eps) * A)  # [B, T]
    if beta > 0:  # the KL penalty against the frozen warm-up, per token (k3)
        with torch.no_grad():
            ref_logps = response_logps(ref, rollout.prompt_ids, rollout.responses, group_size=group_size)  # [B, T]
        per_token = per_token + beta * kl_k3(logps, ref_logps)  # [B, T]
    # GRPO's aggregation (its row of the table): the mean over each answer's real tokens (response_mask), then the
    # mean over the answers
    loss = aggregate_loss(per_token, rollout.response_mask, GRPO.aggregation)  # []
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return {"responses": rollout.responses, "rewards": rewards, "advantages": advantages, "loss": loss.item()}


def check_step_output(out, n_answers: int) -> None:
    """Raise StepError (one line) unless `out` is a dict with the contract's keys, shapes and finite values."""
    if not isinstance(out, dict):
        raise StepError(f"the step function returned {type(out).__name__}, not a dict with keys {STEP_KEYS}")
    missing = [key for key in STEP_KEYS if key not in out]
    if missing:
        raise StepError(f"the step function's dict has no {', '.join(map(repr, missing))} (needs {STEP_KEYS})")
    responses = out["responses"]
    if not isinstance(responses, torch.Tensor) or responses.dim() != 2 or len(responses) != n_answers:
        raise StepError(f"'responses' must be a [B, T] tensor with B = {n_answers} answers")
    for key in ("rewards", "advantages"):
        value = out[key]
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != (n_answers,):
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise StepError(f"'{key}' must be a tensor of shape ({n_answers},), got {shape}")
    loss = float(out["loss"]) if np.ndim(out["loss"]) == 0 else float("nan")
    if not math.isfinite(loss):
        raise StepError(f"'loss' must be one finite number, got {out['loss']!r}")


def require_grpo(cfg: RLConfig) -> None:
    """Raise ValueError unless `cfg` is a run a GRPO step function can do (grpo, one update per batch)."""
    if cfg.algo != "grpo" or cfg.epochs != 1 or cfg.length_reward_weight or cfg.std != "population":
        raise ValueError(
            "train_with_step runs GRPO (algo='grpo', one update per batch, population std, no length reward)"
        )


def train_with_step(
    step_fn: StepFn, cfg: RLConfig, policy: TinyTransformer | None = None, on_step: OnStep | None = None
) -> RunResult:
    """`cfg.steps` steps of `step_fn` from the warm-up model, with train_rl's seeds and order of random draws (so
    `grpo_step` follows `train_rl(cfg)` up to float rounding), on the threads every training run uses
    (`rlvr.config.training_threads`). Each step's metrics come from the verifier on the returned responses.

    Raises StepError (one line) when a step returns something unusable; `on_step(step, total, history)` as train_rl.
    """
    require_grpo(cfg)
    with training_threads():
        torch.manual_seed(cfg.seed)
        start = policy if policy is not None else warm_start(cfg).model
        policy = copy.deepcopy(start).train()
        ref = copy.deepcopy(start).eval().requires_grad_(False)  # the frozen warm-up model
        optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
        rng, generator = np.random.default_rng(cfg.seed), torch.Generator().manual_seed(cfg.seed)
        history: list[dict] = []
        for step in range(cfg.steps):
            prompts = sample_prompts(cfg.prompts_per_step, rng)  # [P, 10]
            t0 = time.perf_counter()
            out = step_fn(
                policy,
                ref,
                optimizer,
                prompts,
                generator,
                group_size=cfg.group_size,
                beta=cfg.beta,
                eps=cfg.advantage_eps,
                clip_eps=cfg.clip_eps,
            )
            history.append(step_metrics(out, prompts, cfg, step, time.perf_counter() - t0))
            if on_step is not None:
                on_step(step + 1, cfg.steps, history)
    policy.eval()
    total = float(sum(h["step_s"] for h in history))
    return RunResult(cfg, history, policy, {"total_s": total})


def step_metrics(out: dict, prompts: np.ndarray, cfg: RLConfig, step: int, seconds: float) -> dict:
    """The metrics train_rl records for a step, from a step function's output (checked first)."""
    check_step_output(out, len(prompts) * cfg.group_size)
    scores = score_batch(group_prompts(prompts, cfg.group_size), out["responses"].detach())
    rewards = out["rewards"].detach().float()  # [B]
    return {
        **answer_metrics(scores),
        "step": step,
        "reward": float(rewards.mean()),
        "loss": float(out["loss"]),
        "all_same_group_fraction": all_same_fraction(scores["reward"], cfg.group_size),
        "step_s": seconds,
    }


def identical_steps(history: list[dict], reference: list[dict], keys=("reward", "accuracy", "loss")) -> int:
    """How many leading steps of two runs have exactly the same metrics (`keys`)."""
    same = 0
    for mine, theirs in zip(history, reference):
        if any(mine[key] != theirs[key] for key in keys):
            break
        same += 1
    return same
