"""Speed of the lecture's GRPO run (32 prompts x 8 answers, 200 steps): median of several runs, the sampling /
training split, its time against a plain KV-cached PyTorch loop of the same size (`plain_loop.py`, run in turn with
ours in this process: ours, plain, ours, plain, ...; the median of the per-pair ratios), for GRPO the package's
learner-shaped `grpo_step` trained by `train_with_step` in turn with the Trainer, and the FLOP/s reached next to what
a large matmul reaches on this machine. Training runs on rlvr.config.TRAIN_THREADS threads (RLVR_THREADS).

Usage: python benchmarks/bench_rl.py [--runs 3] [--steps 200] [--algo grpo] [--warm-up STEPSxBATCH@LR] [--no-plain]
       [--no-step]
       python benchmarks/bench_rl.py --signals [--runs 5]: what recording rlvr.signals costs (with / without, in turn)
The warm-up model is loaded from the cache (trained first if absent); its time is not counted. --warm-up starts
from another warm-up (e.g. 800x128@1e-3, the one before docs/calibration.md) to compare run times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from rlvr.config import TRAIN_THREADS
from rlvr.grpo_step import grpo_step, train_with_step
from rlvr.model import sample
from rlvr.sft import SFTConfig, warm_up
from rlvr.task import MAX_NEW_TOKENS, PROMPT_LEN, prompt_tokens, sample_prompts
from rlvr.algorithms import trains_every_answer
from rlvr.train import RLConfig, train_rl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plain_loop  # noqa: E402  (the yardstick, next to this file)

TRAINED_ANSWER_TOKENS = MAX_NEW_TOKENS - 1  # per answer in the training forward / backward (at most; its prompt is
# run once for its group)


def matmuls_gflops(shapes: list[tuple[int, int, int]], repeats: int = 20) -> float:
    """GFLOP/s of float32 matmuls [m, k] @ [k, n], one per (m, k, n) in `shapes`, run back to back."""
    pairs = [(torch.randn(m, k), torch.randn(k, n)) for m, k, n in shapes]
    for a, b in pairs:
        a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        for a, b in pairs:
            a @ b
    return sum(2 * m * k * n for m, k, n in shapes) * repeats / (time.perf_counter() - start) / 1e9


def matmul_gflops(n: int = 1024) -> float:
    """GFLOP/s of a large float32 matmul: a practical peak for this machine."""
    return matmuls_gflops([(n, n, n)])


def model_shape_gflops(model, rows: int) -> float:
    """GFLOP/s of the model's own matmuls at a training batch (rows = answers x tokens), run back to back with
    nothing else: what even a perfectly fused implementation could reach on these shapes."""
    shapes = [(rows, m.in_features, m.out_features) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    shapes.append((rows, model.cfg.d_model, model.cfg.vocab_size))  # tied output projection
    return matmuls_gflops(shapes)


def decode_step_ms(model, answers: int, repeats: int = 30) -> float:
    """Median milliseconds per generated token position when sampling `answers` answers (8 per prompt) from `model`.

    With a handful of answers the kernels have almost nothing to do, so this measures the fixed cost of one decode
    step (Python, dispatch, ~65 small operations): a floor that no batch size gets below.
    """
    prompts = prompt_tokens(sample_prompts(max(1, answers // 8), np.random.default_rng(0)))  # [P, PROMPT_LEN]
    generator = torch.Generator().manual_seed(0)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        rollout = sample(model, prompts, generator=generator, group_size=min(8, answers))
        times.append((time.perf_counter() - start) / rollout.responses.shape[1])
    return 1e3 * statistics.median(times)


def run_flops(model, history: list[dict], cfg: RLConfig) -> float:
    """Approximate FLOPs of a run: 2 * params per sampled token, 6 * params per trained token (in both, each prompt
    runs once and its group shares it; an update that skips the all-equal groups' backward trains only the others,
    and with several updates per batch runs the skipped ones forward only, 2 * params per token)."""
    params = model.num_parameters()
    answers = cfg.prompts_per_step * cfg.group_size
    flops = 0.0
    for h in history:
        sampled = cfg.prompts_per_step * PROMPT_LEN + answers * h["mean_length"]  # one prefill per prompt + decoding
        trained_share = (
            1.0
            if trains_every_answer(cfg.algo, cfg.beta)
            else max(1 - h["all_same_group_fraction"], 1 / cfg.prompts_per_step)
        )
        watched_share = (1 - trained_share) if cfg.epochs > 1 else 0.0  # forward only, for the ratio diagnostics
        tokens = (cfg.prompts_per_step * PROMPT_LEN + answers * TRAINED_ANSWER_TOKENS) * cfg.epochs
        flops += 2 * params * sampled + 6 * params * tokens * trained_share + 2 * params * tokens * watched_share
    return flops


def warm_up_config(spec: str | None) -> SFTConfig:
    """'800x128@1e-3' -> SFTConfig(steps=800, batch_size=128, lr=1e-3); None -> the default warm-up."""
    if spec is None:
        return SFTConfig()
    size, _, lr = spec.partition("@")
    steps, batch = size.split("x")
    return SFTConfig(steps=int(steps), batch_size=int(batch), lr=float(lr or SFTConfig.lr))


def signals_cost(args) -> None:
    """Runs with and without the signals of rlvr.signals, in turn (with, without, with, ...): the median of the
    per-pair ratios of the total run time (target <= 1.05). The numbers of the run are the same either way."""
    model = warm_up(0.1, 0, cfg=warm_up_config(args.warm_up)).model
    cfg = RLConfig(algo=args.algo, steps=args.steps)
    with_signals, without = [], []
    for seed in range(args.runs):
        run = RLConfig(**{**cfg.to_dict(), "seed": seed})
        for record, times in ((True, with_signals), (False, without)):
            start = time.perf_counter()
            train_rl(run, policy=model, progress=False, record_signals=record)
            times.append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(with_signals, without)]
    listed = lambda values, digits=2: ", ".join(f"{v:.{digits}f}" for v in values)  # noqa: E731
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.algo}, {args.steps} steps of 32 x 8")
    print(f"  with the signals:    median {statistics.median(with_signals):.2f} s ({listed(with_signals)})")
    print(f"  without the signals: median {statistics.median(without):.2f} s ({listed(without)})")
    print(f"  with / without: median {statistics.median(ratios):.3f} (all: {listed(ratios, 3)}); target <= 1.05")


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--algo", default="grpo")
    parser.add_argument(
        "--warm-up", default=None, metavar="STEPSxBATCH@LR", help="start from this warm-up instead of the default one"
    )
    parser.add_argument("--no-plain", action="store_true", help="skip the plain reference loop")
    parser.add_argument("--no-step", action="store_true", help="skip rlvr.grpo_step.grpo_step (GRPO only)")
    parser.add_argument(
        "--signals", action="store_true", help="only the cost of recording rlvr.signals: runs with and without, in turn"
    )
    args = parser.parse_args()
    if args.signals:
        signals_cost(args)
        return
    model = warm_up(0.1, 0, cfg=warm_up_config(args.warm_up)).model
    cfg = RLConfig(algo=args.algo, steps=args.steps)
    totals, samplings, trainings, flops, plains, steps, walls = [], [], [], [], [], [], []
    for seed in range(args.runs):
        run = RLConfig(**{**cfg.to_dict(), "seed": seed})
        start = time.perf_counter()
        result = train_rl(run, policy=model, progress=False)
        walls.append(time.perf_counter() - start)
        totals.append(result.timing["total_s"])
        samplings.append(result.timing["sampling_s"])
        trainings.append(result.timing["training_s"])
        flops.append(run_flops(model, result.history, cfg))
        if not args.no_plain:
            plains.append(plain_loop.run(args.steps, cfg.prompts_per_step, cfg.group_size, seed=seed))
        if args.algo == "grpo" and not args.no_step:
            start = time.perf_counter()
            train_with_step(grpo_step, run, policy=model)
            steps.append(time.perf_counter() - start)
    total = statistics.median(totals)
    peak = matmul_gflops()
    shaped = model_shape_gflops(model, cfg.prompts_per_step * cfg.group_size * TRAINED_ANSWER_TOKENS)
    work = statistics.median(flops) / 1e9
    print(f"torch {torch.__version__}, training on {TRAIN_THREADS} thread(s) (rlvr.config.TRAIN_THREADS)")
    print(
        f"{args.algo} {args.steps} steps of 32 x 8: median {total:.1f} s over {args.runs} runs "
        f"(all: {', '.join(f'{t:.1f}' for t in totals)})"
    )
    print(f"  sampling {statistics.median(samplings):.1f} s | training {statistics.median(trainings):.1f} s")
    if plains:
        ratios = [ours / plain["total_s"] for ours, plain in zip(totals, plains)]
        print(
            f"  plain KV-cached loop of the same size (benchmarks/plain_loop.py), run in turn with ours: median "
            f"{statistics.median(p['total_s'] for p in plains):.1f} s (sampling "
            f"{statistics.median(p['sampling_s'] for p in plains):.1f} s, training "
            f"{statistics.median(p['training_s'] for p in plains):.1f} s)"
        )
        print(
            f"  ours / plain: median {statistics.median(ratios):.2f} (all: {', '.join(f'{r:.2f}' for r in ratios)})"
            f"{'; target <= 0.6' if args.algo == 'grpo' else ''}"
        )
    if steps:
        ratios = [trainer / step for trainer, step in zip(walls, steps)]
        print(
            f"  train_with_step(grpo_step, ...) (every answer through the model, no speed trick), run in turn with the "
            f"Trainer: wall-clock median {statistics.median(steps):.1f} s (all: {', '.join(f'{t:.1f}' for t in steps)})"
            f" against the Trainer's {statistics.median(walls):.1f} s; Trainer / grpo_step: median "
            f"{statistics.median(ratios):.2f}"
        )
    print(f"  ~{work / total:.1f} GFLOP/s reached; a 1024x1024 matmul reaches {peak:.0f} GFLOP/s here")
    print(
        f"  the model's own matmul shapes (a training batch, nothing else) reach {shaped:.0f} GFLOP/s: the run's "
        f"~{work:.0f} GFLOP need >= {work / shaped:.1f} s at that rate, "
        f">= {work / peak:.1f} s at the large-matmul rate"
    )
    full, tiny = decode_step_ms(model, cfg.prompts_per_step * cfg.group_size), decode_step_ms(model, 8)
    print(
        f"  one decode step: {full:.2f} ms for 256 answers, {tiny:.2f} ms for 8 (the fixed cost of a step): "
        f"{100 * tiny / full:.0f}% of sampling is per-step overhead that no kernel speedup removes"
    )


if __name__ == "__main__":
    main()
