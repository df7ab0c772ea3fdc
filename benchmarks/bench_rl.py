"""Speed of the lecture's GRPO run (32 prompts x 8 answers, 200 steps): median of several runs, the sampling /
training split, and the FLOP/s reached next to what a large matmul reaches on this machine.

Usage: python benchmarks/bench_rl.py [--runs 3] [--steps 200] [--algo grpo]
The warm-up model is loaded from the cache (trained first if absent); its time is not counted.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from rlvr.sft import warm_up
from rlvr.train import RLConfig, train_rl


def matmul_gflops(n: int = 1024, repeats: int = 20) -> float:
    """GFLOP/s of a large float32 matmul: a practical peak for this machine."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * n ** 3 * repeats / (time.perf_counter() - start) / 1e9


def run_flops(model, history: list[dict], cfg: RLConfig) -> float:
    """Approximate FLOPs of a run: 2 * params per sampled token (+ the prompt once), 6 * params per trained token."""
    params = model.num_parameters()
    answers = cfg.prompts_per_step * cfg.group_size
    flops = 0.0
    for h in history:
        sampled = answers * (11 + h["mean_length"])  # prefill + decoded tokens
        trained = answers * (11 + 15) * cfg.epochs  # full padded sequences in the training forward / backward
        flops += 2 * params * sampled + 6 * params * trained
    return flops


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--algo", default="grpo")
    args = parser.parse_args()
    model = warm_up(0.1, 0).model
    cfg = RLConfig(algo=args.algo, steps=args.steps)
    totals, samplings, trainings, flops = [], [], [], []
    for seed in range(args.runs):
        result = train_rl(RLConfig(**{**cfg.to_dict(), "seed": seed}), policy=model, progress=False)
        totals.append(result.timing["total_s"])
        samplings.append(result.timing["sampling_s"])
        trainings.append(result.timing["training_s"])
        flops.append(run_flops(model, result.history, cfg))
    total = statistics.median(totals)
    peak = matmul_gflops()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{args.algo} {args.steps} steps of 32 x 8: median {total:.1f} s over {args.runs} runs "
          f"(all: {', '.join(f'{t:.1f}' for t in totals)}); target <= 6 s for grpo")
    print(f"  sampling {statistics.median(samplings):.1f} s | training {statistics.median(trainings):.1f} s")
    print(f"  ~{statistics.median(flops) / total / 1e9:.1f} GFLOP/s reached; a 1024x1024 matmul reaches "
          f"{peak:.0f} GFLOP/s here")


if __name__ == "__main__":
    main()
