"""Warm-up speed: training from scratch, loading from the cache, where the loss levels off, sampling throughput.

Usage: python benchmarks/bench_sft.py [--seed 0] [--teacher-error-rate 0.1]
Prints its figures; run it on a quiet machine (other processes inflate every number).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import torch


def levels_off_at(losses: list[float], window: int = 50, tolerance: float = 0.02) -> int:
    """First step whose trailing-window mean is within `tolerance` (relative) of the final window's mean."""
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")  # [steps - window + 1]
    final = smooth[-1]
    return int(np.argmax(smooth <= final * (1 + tolerance))) + window


def sampling_throughput(model, batch: int = 256, repeats: int = 10) -> float:
    """Answers per second when sampling batches of `batch` answers at temperature 1."""
    from rlvr.model import sample
    from rlvr.task import prompt_tokens, sample_prompts

    prompts = prompt_tokens(sample_prompts(batch, np.random.default_rng(0)))
    generator = torch.Generator().manual_seed(0)
    sample(model, prompts, generator=generator)  # warm-up call
    start = time.perf_counter()
    for _ in range(repeats):
        sample(model, prompts, generator=generator)
    return batch * repeats / (time.perf_counter() - start)


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--teacher-error-rate", type=float, default=0.1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["RLVR_CACHE_DIR"] = folder  # an empty cache: the first call trains
        from rlvr.sft import SFTConfig, warm_up

        start = time.perf_counter()
        warm = warm_up(args.teacher_error_rate, args.seed)
        train_s = time.perf_counter() - start
        start = time.perf_counter()
        again = warm_up(args.teacher_error_rate, args.seed)
        load_s = time.perf_counter() - start
        assert again.from_cache
    cfg = SFTConfig()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(
        f"warm-up from scratch: {train_s:.1f} s for {cfg.steps} steps of batch {cfg.batch_size} "
        f"({1000 * train_s / cfg.steps:.0f} ms/step); target <= 60 s (docs/calibration.md)"
    )
    print(f"loading from the cache: {1000 * load_s:.0f} ms; target < 1 s")
    print(
        f"loss levels off (50-step mean within 2% of the final) at step {levels_off_at(warm.losses)}; "
        f"final loss {np.mean(warm.losses[-50:]):.3f}"
    )
    print(f"sampling throughput: {sampling_throughput(warm.model):,.0f} answers/s at 256 answers per batch")


if __name__ == "__main__":
    main()
