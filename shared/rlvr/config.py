"""Run-wide settings: fast mode, cache folder, and the package version the notebooks expect."""

from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path

FAST_ENV = "RLVR_FAST"
CACHE_ENV = "RLVR_CACHE_DIR"
STRICT_ENV = "RLVR_STRICT"
THREADS_ENV = "RLVR_THREADS"


def fast_mode() -> bool:
    """True when RLVR_FAST is set to a true value (CI and quick checks shrink every experiment)."""
    return os.environ.get(FAST_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def pick(full, fast):
    """Return `fast` in fast mode, else `full`."""
    return fast if fast_mode() else full


SIZES: dict[str, tuple[int, int]] = {  # name -> (full size, fast size for CI): every notebook, panel and `reproduce`
    "rl_steps": (200, 15),  # steps of every RL run (the lecture's 200), each 32 prompts x 8 answers
    "eval_prompts": (2000, 200),  # held-out prompts for accuracy, think-first share and lengths
    "pass_prompts": (2000, 100),  # held-out prompts for pass@k (16 answers each)
    "budget_prompts": (1000, 200),  # held-out prompts for the thinking-budget demo
    "panel_sft_steps": (1500, 60),  # warm-up steps when a panel trains a new teacher error rate (= SFTConfig().steps)
    "race_figure_steps": (30, 15),  # the race's statements are about its first 30 steps
    "shift_runs": (1000, 200),  # notebook 01: independent +5 runs trained at once
    "hard_groups": (200_000, 50_000),  # notebook 01: simulated groups per p for the 3.5x
    "reuse_prompts": (16, 4),  # notebook 02: prompts of the reused batch (8 answers each)
    "shaping_candidates": (1024, 256),  # notebook 02: answers to pick the reward-shaping examples from
    "value_rollouts": (64, 16),  # notebook 02: continuations per prefix for the Monte-Carlo values
    "gauss_samples": (10_000_000, 500_000),  # notebook 02: samples per entry of Schulman's table (he used 10 million)
    "kl_answers": (2000, 300),  # notebook 02: answers of the trained policy for the KL estimators
}


def size(name: str, fast: bool | None = None) -> int:
    """A size from SIZES: the full one, or the CI one when `fast` (None: when RLVR_FAST is set). The one switch."""
    full, small = SIZES[name]
    return small if (fast_mode() if fast is None else fast) else full


def repo_root() -> Path | None:
    """The checkout this package was installed from (editable install), or None."""
    here = Path(__file__).resolve()
    root = here.parents[2]
    return root if (root / "pyproject.toml").exists() and (root / "shared" / "rlvr").exists() else None


def cache_dir() -> Path:
    """Folder of the checkpoint cache: $RLVR_CACHE_DIR, else <repo>/checkpoints, else ~/.cache/rlvr."""
    env = os.environ.get(CACHE_ENV)
    if env:
        path = Path(env).expanduser()
    elif repo_root() is not None:
        path = repo_root() / "checkpoints"
    else:
        path = Path.home() / ".cache" / "rlvr"
    path.mkdir(parents=True, exist_ok=True)
    return path


TRAIN_THREADS = int(os.environ.get(THREADS_ENV, "0") or 0) or 1  # torch threads of every training run (RLVR_THREADS)


def configure_threads() -> int:
    """Use $RLVR_THREADS torch threads, by default at most 2: a 70k-parameter model gains nothing from more (measured:
    200 GRPO steps take 13.6 s with 2 threads, 20.4 s with 1 on a quiet 2-core machine). On a machine crowded with
    other jobs, RLVR_THREADS=1 avoids thread contention (there 2 threads were 27x slower). Returns the count."""
    import torch

    threads = int(os.environ.get(THREADS_ENV, "0")) or min(2, torch.get_num_threads())
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


@contextlib.contextmanager
def torch_threads(count: int):
    """Run torch on `count` threads inside the block, or the decorated function (`@torch_threads(1)`); the count before
    is restored afterwards, even after an error."""
    import torch

    before = torch.get_num_threads()
    if count != before:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def one_thread():
    """Run torch on one thread inside the block, or the decorated function (`@one_thread()`): tiny tensors gain nothing
    from a second thread, which only adds overhead and stalls when the other core is busy (a browser, a notebook)."""
    return torch_threads(1)


class TrainingRefused(Exception):
    """A run would train inside `loading_only()` (not a RuntimeError: a gallery run records those as its crash)."""


_LOADING_ONLY = contextvars.ContextVar("rlvr_loading_only", default=False)


@contextlib.contextmanager
def loading_only():
    """Inside the block nothing trains: a training loop that starts raises TrainingRefused before its first step, so a
    caller learns which runs the cache already holds (`rlvr.parallel.train_all` loads those in place and trains the
    others in worker processes)."""
    token = _LOADING_ONLY.set(True)
    try:
        yield
    finally:
        _LOADING_ONLY.reset(token)


@contextlib.contextmanager
def training_threads():
    """Train inside the block on TRAIN_THREADS torch threads (1 unless RLVR_THREADS says otherwise), whichever process
    or cell trains: the backward pass sums in another order on another thread count, so a run's numbers would depend
    on where it trained (forward passes and sampling give the same bits either way). The cache keys say it
    (`rlvr.cache.numerics`). Every training loop starts with it, so it also refuses to train inside `loading_only()`."""
    if _LOADING_ONLY.get():
        raise TrainingRefused("this run is not in the checkpoint cache")
    with torch_threads(TRAIN_THREADS):
        yield
