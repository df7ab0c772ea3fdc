"""The supervised warm-up: imitate a noisy teacher (half direct answers, half think-first chains with errors)."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

import numpy as np
import torch

from .cache import load_or_create
from .config import pick
from .evaluate import evaluate
from .model import ModelConfig, TinyTransformer, response_logps
from .task import DEFAULT_TEACHER_ERROR_RATE, prompt_tokens, sample_prompts, teacher_batch


@dataclass(frozen=True)
class SFTConfig:
    """Everything that determines the warm-up weights (and so the cache key)."""

    teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE  # chance the teacher errs at each chain step
    seed: int = 0
    steps: int = 800  # the loss levels off by here on every seed we tried (benchmarks/bench_sft.py prints the curve)
    batch_size: int = 128  # 256 reaches the same final loss (0.52-0.53) in twice the time; 256 x 550 steps stops
    # short of it (think-first accuracy 18-30% instead of 30-34% on seeds 0-2)
    lr: float = 1e-3  # peak AdamW learning rate, cosine-decayed to lr * min_lr_ratio (3e-3 stalls on some seeds)
    min_lr_ratio: float = 0.1  # where the cosine ends, as a fraction of lr
    warmup_steps: int = 30
    think_fraction: float = 0.5  # share of think-first targets in the data
    model: ModelConfig = field(default_factory=ModelConfig)

    def to_dict(self) -> dict:
        """Plain dict (hashing, JSON)."""
        return asdict(self)


@dataclass
class WarmUp:
    """A warm-up model with its training curve."""

    model: TinyTransformer
    config: SFTConfig
    losses: list[float]
    from_cache: bool
    seconds: float


def lr_at(step: int, cfg: SFTConfig) -> float:
    """Linear warm-up then cosine decay from lr to lr * min_lr_ratio."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    floor = cfg.min_lr_ratio
    return cfg.lr * (floor + (1 - floor) * 0.5 * (1 + np.cos(np.pi * progress)))


def sft_loss(model: TinyTransformer, prompt_ids: torch.Tensor, responses: torch.Tensor,
             response_mask: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of the target answer tokens. [B, P], [B, T], [B, T] -> scalar."""
    logps = response_logps(model, prompt_ids, responses)  # [B, T]
    return -(logps * response_mask).sum() / response_mask.sum()


def train_sft(cfg: SFTConfig = SFTConfig(), on_step: Callable[[int, int, float], None] | None = None,
              model: torch.nn.Module | None = None, loss_fn: Callable = sft_loss) -> tuple[TinyTransformer, list[float]]:
    """Train a fresh model (ours by default; another one with its own loss_fn(model, prompt_ids, responses, mask))
    on the noisy teacher; returns (model, loss per step). Deterministic given cfg.seed."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    model = TinyTransformer(cfg.model) if model is None else model
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=0.0)
    losses = []
    for step in range(cfg.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        prompts = sample_prompts(cfg.batch_size, rng)  # [B, 10]
        responses, mask = teacher_batch(prompts, cfg.teacher_error_rate, rng, cfg.think_fraction)  # [B, 15]
        loss = loss_fn(model, prompt_tokens(prompts), responses, mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step + 1, cfg.steps, losses[-1])
    model.eval()
    return model, losses


def warm_up(teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE, seed: int = 0, *, cfg: SFTConfig | None = None,
            on_step: Callable[[int, int, float], None] | None = None, use_cache: bool = True) -> WarmUp:
    """The warm-up model for this teacher error rate and seed: from the checkpoint cache, else trained and cached."""
    if not 0.0 <= teacher_error_rate <= 1.0:
        raise ValueError(f"teacher_error_rate must be in [0, 1], got {teacher_error_rate}")
    cfg = replace(cfg or SFTConfig(), teacher_error_rate=float(teacher_error_rate), seed=int(seed))
    start = time.perf_counter()

    def create() -> dict:
        model, losses = train_sft(cfg, on_step)
        return {"state_dict": model.state_dict(), "losses": losses}

    if use_cache:
        payload, from_cache = load_or_create("sft", cfg.to_dict(), create)
    else:
        payload, from_cache = create(), False
    model = TinyTransformer(cfg.model)
    model.load_state_dict(payload["state_dict"])
    model.eval()
    return WarmUp(model, cfg, list(payload["losses"]), from_cache, time.perf_counter() - start)


def warm_up_report(warm: WarmUp, n_prompts: int | None = None, seed: int = 0) -> dict:
    """Held-out metrics of a warm-up model at temperature 1 and greedy, as the CLI writes them."""
    n_prompts = n_prompts or pick(2000, 500)
    return {
        "config": warm.config.to_dict(),
        "temperature1": evaluate(warm.model, n_prompts, temperature=1.0, seed=seed),
        "greedy": evaluate(warm.model, n_prompts, temperature=0.0, seed=seed),
        "from_cache": warm.from_cache,
        "seconds": warm.seconds,
    }
