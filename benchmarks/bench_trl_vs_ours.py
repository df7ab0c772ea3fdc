"""Seconds per GRPO step (32 prompts x 8 answers) with TRL's GRPOTrainer and with our loop, side by side.

Usage: python benchmarks/bench_trl_vs_ours.py [--steps 5] [--skip 1] [--threads N] [--processes 1 2]
Needs the [scale] extra. `--processes 1 2` times TRL on one process and on two (gloo, `rlvr.scale.processes`: each
rank generates half of the groups; on a 2-core machine one torch thread each, against two for one process).
Both models start from their warm-ups (about half think-first answers), loaded from the checkpoint cache (trained
first if absent: not counted). Same settings on both sides: G = 8, lr 1e-4, beta 0,
epsilon 0.2, one update per batch, per-answer token-mean loss, group std division.

A step is everything from sampling to the optimizer update: generating 256 answers (ours: our KV-cached sampler;
TRL: transformers' `generate`), scoring them with the verifier, advantages, one forward/backward pass and the
Adam step; TRL's also includes its logging and metric bookkeeping. Not counted: building the trainer, the first
`--skip` steps (first-call overheads), the warm-ups. Reported: the median (and min / max) of the next `--steps` steps.
On a busy machine use `--threads 1`: two intra-op threads that wait on each other can make both 10-30x slower.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from rlvr import scale
from rlvr.sft import warm_up
from rlvr.train import RLConfig, Trainer


def time_ours(steps: int, skip: int) -> dict:
    """Seconds per step of `rlvr.train.Trainer` (TinyTransformer) and its answers' mean length / think-first share."""
    model = warm_up(0.1, 0).model
    torch.manual_seed(0)
    trainer = Trainer(RLConfig(steps=steps + skip), policy=model)
    seconds, history = [], []
    for step in range(steps + skip):
        start = time.perf_counter()
        history.append(trainer.step(step))
        seconds.append(time.perf_counter() - start)
    kept = history[skip:]
    return {
        "params": model.num_parameters(),
        "seconds": seconds[skip:],
        "mean_length": float(np.mean([h["mean_length"] for h in kept])),
        "think_share": float(np.mean([h["cot_fraction"] for h in kept])),
    }


def time_trl(steps: int, skip: int, processes: int = 1) -> dict:
    """Seconds per step of `trl.GRPOTrainer` (GPT-2 of the same size) on `processes` CPU processes (rank 0's times)
    and its answers' mean length / think share."""
    model, _ = scale.warm_up()
    cfg = scale.TRLRunConfig(steps=steps + skip, processes=processes)
    if processes == 1:
        run = scale.run_grpo(model, cfg)
        history, seconds = run.history, run.step_seconds
    else:
        with tempfile.TemporaryDirectory(prefix="rlvr-bench-") as tmp:
            folder = scale.save_model(model, scale.build_tokenizer(), tmp)
            rank0 = scale.run_processes(folder, cfg)[0]
        history, seconds = rank0.history, rank0.step_seconds
    kept = history[skip:]
    return {
        "params": scale.num_parameters(model),
        "seconds": seconds[skip:],
        "mean_length": float(np.mean([h["mean_length"] for h in kept])),
        "think_share": float(np.mean([h["think_share"] for h in kept])),
    }


def row(name: str, result: dict) -> str:
    """One line of the table."""
    s = result["seconds"]
    return (
        f"{name:<44} {result['params']:>8,} {statistics.median(s):>10.3f} {min(s):>8.3f} {max(s):>8.3f} "
        f"{result['mean_length']:>8.1f} {result['think_share']:>7.2f}"
    )


def main() -> None:
    """Measure both and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps per engine")
    parser.add_argument("--skip", type=int, default=1, help="untimed first steps per engine")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1], help="time TRL on each of these process counts (default: 1)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    scale.require_scale()
    import transformers
    import trl

    ours = time_ours(args.steps, args.skip)
    theirs = {n: time_trl(args.steps, args.skip, n) for n in args.processes}
    print(
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), TRL {trl.__version__}, "
        f"transformers {transformers.__version__}; 32 prompts x 8 answers per step, "
        f"median of {args.steps} steps after {args.skip} untimed"
    )
    print(f"{'engine':<44} {'params':>8} {'s/step':>10} {'min':>8} {'max':>8} {'len':>8} {'think':>7}")
    print(row("ours (rlvr.train, TinyTransformer)", ours))
    for n, result in theirs.items():
        print(row(f"TRL GRPOTrainer (GPT-2), {n} process{'es' if n > 1 else ''}", result))
    for n, result in theirs.items():
        ratio = statistics.median(result["seconds"]) / statistics.median(ours["seconds"])
        print(f"TRL on {n} process(es) / ours: {ratio:.1f}x the time per step")
    print("(len = mean answer tokens, think = think-first share; several processes: rank 0's step times)")


if __name__ == "__main__":
    main()
