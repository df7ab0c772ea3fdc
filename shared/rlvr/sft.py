"""The supervised warm-up: imitate a noisy teacher (half direct answers, half think-first chains with errors)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .cache import SHIPPED_DIR, Entry, Loaded, load_or_create, numerics, save_checkpoint
from .config import pick, training_threads
from .evaluate import evaluate
from .i18n import _
from .model import ModelConfig, TinyTransformer, response_logps
from .task import DEFAULT_TEACHER_ERROR_RATE, prompt_tokens, sample_prompts, teacher_batch
from .validation import SEED, check_fields, integer, number


@dataclass(frozen=True)
class SFTConfig:
    """Everything that determines the warm-up weights (and so the cache key)."""

    teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE  # chance the teacher errs at each chain step
    seed: int = 0
    # steps x batch and the peak lr were chosen by an ablation (docs/calibration.md): the cheapest arm (under a
    # minute) whose 200 GRPO steps matched the lecture's 94% think-first accuracy and ~55% all-equal groups on the
    # calibration seeds. 800 x 128 at 1e-3 (its loss already looked flat) left ~1.3% malformed answers and stopped
    # GRPO at ~82%; a peak of 3e-3 diverged on one seed of three.
    steps: int = 1500
    batch_size: int = 256
    lr: float = 2e-3  # peak AdamW learning rate, cosine-decayed to lr * min_lr_ratio
    min_lr_ratio: float = 0.1  # where the cosine ends, as a fraction of lr
    warmup_steps: int = 30
    think_fraction: float = 0.5  # share of think-first targets in the data
    model: ModelConfig = field(default_factory=ModelConfig)

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Raise ConfigError (a ValueError) naming the first field out of its range (SFT_RULES)."""
        check_fields(self, SFT_RULES)

    def to_dict(self) -> dict:
        """Plain dict (hashing, JSON)."""
        return asdict(self)


SFT_RULES = {  # field -> what it accepts (model is not checked here: ModelConfig is its own)
    "teacher_error_rate": number(0, 1),
    "seed": SEED,
    "steps": integer(1),
    "batch_size": integer(1),
    "lr": number(0, ends="(]"),
    "min_lr_ratio": number(0, 1),
    "warmup_steps": integer(0),
    "think_fraction": number(0, 1),
}


@dataclass
class WarmUp:
    """A warm-up model with its training curve."""

    model: TinyTransformer
    config: SFTConfig
    losses: list[float]
    from_cache: bool
    seconds: float
    shipped: bool = False  # loaded from the checkpoint shipped with the package (the cache held none)


def lr_at(step: int, cfg: SFTConfig) -> float:
    """Linear warm-up then cosine decay from lr to lr * min_lr_ratio."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    floor = cfg.min_lr_ratio
    return cfg.lr * (floor + (1 - floor) * 0.5 * (1 + np.cos(np.pi * progress)))


def sft_loss(
    model: TinyTransformer, prompt_ids: torch.Tensor, responses: torch.Tensor, response_mask: torch.Tensor
) -> torch.Tensor:
    """Mean negative log-likelihood of the target answer tokens. [B, P], [B, T], [B, T] -> scalar."""
    logps = response_logps(model, prompt_ids, responses)  # [B, T]
    return -(logps * response_mask).sum() / response_mask.sum()


def train_sft(
    cfg: SFTConfig = SFTConfig(),
    on_step: Callable[[int, int, float], None] | None = None,
    model: torch.nn.Module | None = None,
    loss_fn: Callable = sft_loss,
) -> tuple[TinyTransformer, list[float]]:
    """Train a fresh model (ours by default; another one with its own loss_fn(model, prompt_ids, responses, mask))
    on the noisy teacher; returns (model, loss per step). Deterministic given cfg.seed."""
    with training_threads():  # one thread count wherever it trains: see rlvr.config.training_threads
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


def _progress_bar(cfg: SFTConfig):
    """A notebook-aware tqdm bar over the warm-up's steps."""
    from tqdm.auto import tqdm

    return tqdm(
        total=cfg.steps,
        desc=_("warm-up (teacher error {rate}, seed {seed})").format(rate=f"{cfg.teacher_error_rate:g}", seed=cfg.seed),
        unit="step",
        leave=False,
    )


def _with_bar(on_step, bar):
    """on_step(step, total, loss) that also moves `bar` (either may be None)."""
    if bar is None:
        return on_step

    def step(done: int, total: int, loss: float) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
        if on_step is not None:
            on_step(done, total, loss)

    return step


def warm_up(
    teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE,
    seed: int = 0,
    *,
    cfg: SFTConfig | None = None,
    on_step: Callable[[int, int, float], None] | None = None,
    use_cache: bool = True,
    progress: bool = False,
) -> WarmUp:
    """The warm-up model for this teacher error rate and seed: from the checkpoint cache, else trained and cached
    (with a tqdm progress bar when `progress`; loading from the cache shows none)."""
    cfg = replace(cfg or SFTConfig(), teacher_error_rate=float(teacher_error_rate), seed=int(seed))
    start = time.perf_counter()

    def create() -> dict:
        bar = _progress_bar(cfg) if progress else None
        try:
            model, losses = train_sft(cfg, _with_bar(on_step, bar))
        finally:
            if bar is not None:
                bar.close()
        return {"state_dict": model.state_dict(), "losses": losses}

    loaded = load_or_create(cache_entry(cfg), create) if use_cache else Loaded(create(), None)
    model = TinyTransformer(cfg.model)
    model.load_state_dict(loaded.payload["state_dict"])
    model.eval()
    losses, seconds = list(loaded.payload["losses"]), time.perf_counter() - start
    return WarmUp(model, cfg, losses, loaded.from_cache, seconds, shipped=loaded.shipped)


def cache_entry(cfg: SFTConfig) -> Entry:
    """The cache entry of a warm-up: everything in its SFTConfig."""
    return Entry("sft", cfg.to_dict())


def where_from(warm: WarmUp) -> str:
    """'shipped with the package', 'loaded from the cache' or 'trained in 57 s': for a printed line (in the current
    language)."""
    if warm.shipped:
        return _("shipped with the package")
    if warm.from_cache:
        return _("loaded from the cache")
    return _("trained in {seconds} s").format(seconds=f"{warm.seconds:.0f}")


SHIPPED_WARM_UPS = (  # in the package (rlvr/weights), so a first run does not train them
    SFTConfig(),  # what every notebook and `reproduce` start from
    SFTConfig(teacher_error_rate=0.0),  # the perfect teacher's (notebook 03's Exercise 7(a), the teacher panels)
)


def write_shipped_warm_ups(folder: Path = SHIPPED_DIR) -> list[Path]:
    """Train each of SHIPPED_WARM_UPS afresh and write it where the package looks for shipped checkpoints, with how it
    was computed (`rlvr.cache.numerics()`; for maintainers, after a change that moves its bits). Every machine then
    starts from this one file; a warm-up retrained elsewhere differs in its bits, not in its behaviour."""
    paths = []
    for cfg in SHIPPED_WARM_UPS:
        model, losses = train_sft(cfg)
        payload = {"state_dict": model.state_dict(), "losses": losses}
        paths.append(save_checkpoint(cache_entry(cfg), payload, folder, made_on=numerics()))
    return paths


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
