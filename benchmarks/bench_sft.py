"""Warm-up speed: training from scratch, loading (from the package or the cache), where the loss levels off,
sampling throughput.

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
        os.environ["RLVR_CACHE_DIR"] = folder  # an empty cache: the first call trains, unless the package ships it
        from rlvr.sft import SFTConfig, warm_up, where_from

        first = warm_up(args.teacher_error_rate, args.seed)
        if first.from_cache:  # shipped with the package: train it from scratch as well
            loaded = first
            warm = warm_up(args.teacher_error_rate, args.seed, use_cache=False)
        else:
            warm = first
            loaded = warm_up(args.teacher_error_rate, args.seed)
            assert loaded.from_cache
    cfg = SFTConfig()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(
        f"warm-up from scratch: {warm.seconds:.1f} s for {cfg.steps} steps of batch {cfg.batch_size} "
        f"({1000 * warm.seconds / cfg.steps:.0f} ms/step); target <= 60 s (docs/calibration.md)"
    )
    print(f"loading ({where_from(loaded)}): {1000 * loaded.seconds:.0f} ms; target < 1 s")
    print(
        f"loss levels off (50-step mean within 2% of the final) at step {levels_off_at(warm.losses)}; "
        f"final loss {np.mean(warm.losses[-50:]):.3f}"
    )
    print(f"sampling throughput: {sampling_throughput(warm.model):,.0f} answers/s at 256 answers per batch")


if __name__ == "__main__":
    main()
