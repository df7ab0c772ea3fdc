"""GSPO and CISPO beside GRPO: the lecture's 32 prompts x 8 answers, lr 1e-4, 200 steps, from the warm-up of each seed
(`RLConfig.replicate`), with `--updates` updates per sampled batch (1: notebook 03's on-policy runs; 8: notebook 04's
GRPO-8). GSPO uses its paper's clip range (Zheng et al. 2025, arXiv:2507.18071: 3e-4, on the answer's
length-normalised ratio), GRPO and CISPO (MiniMax et al. 2025, arXiv:2506.13585) 0.2; with one update per batch every
ratio is 1 and the clip range does nothing. Prints, per seed and run: the mean clip fraction (0 with one update), the
first step whose think-first share (rolling mean of 10 steps) reaches 90%, and the held-out accuracy after training.

Usage: python benchmarks/compare_gspo_cispo.py [--seeds 0 1 2] [--steps 200] [--updates 1]
Runs go through the checkpoint cache (a second call only reads them).
"""

from __future__ import annotations

import argparse

import numpy as np

from rlvr.evaluate import evaluate
from rlvr.experiments.common import first_step, smooth
from rlvr.runs import history_curve
from rlvr.train import RLConfig, run

CLIP = {"grpo": 0.2, "gspo": 3e-4, "cispo": 0.2}
LEVEL = 0.9  # the think-first share whose first crossing is compared
WINDOW = 10


def reach(history: list[dict], key: str = "cot_fraction", level: float = LEVEL) -> int | None:
    """First step whose rolling mean (WINDOW steps) of `key` is at least `level`."""
    return first_step(smooth(history_curve(history, key), WINDOW) >= level)


def measure(algo: str, seed: int, steps: int, updates: int) -> dict:
    """One run's figures."""
    clip = CLIP[algo] if updates > 1 else RLConfig.clip_eps  # one update: the ratio is 1, eps does nothing
    cfg = RLConfig.replicate(seed, algo=algo, steps=steps, epochs_per_batch=updates, clip_eps=clip)
    result = run(cfg, progress=False)
    clip_fraction = np.nanmean(history_curve(result.history, "clip_fraction"))
    held_out = evaluate(result.policy, 2000, temperature=1.0, seed=0)
    return {"clip": clip_fraction, "reach": reach(result.history), "accuracy": held_out["accuracy"]}


def main() -> None:
    """Print one line per seed and algorithm, then the means."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--updates", type=int, default=1)
    args = parser.parse_args()
    rows = {algo: [] for algo in CLIP}
    for seed in args.seeds:
        for algo in CLIP:
            m = measure(algo, seed, args.steps, args.updates)
            rows[algo].append(m)
            print(
                f"seed {seed} {algo:>5}-{args.updates}: clip fraction {m['clip']:.3f} | think-first >= {LEVEL:.0%} "
                f"from step {m['reach']} | held-out accuracy {m['accuracy']:.3f}",
                flush=True,
            )
    for algo, ms in rows.items():
        reach = [m["reach"] for m in ms]
        print(
            f"{algo:>5}: clip {np.mean([m['clip'] for m in ms]):.3f}, reach {reach}, "
            f"accuracy {np.mean([m['accuracy'] for m in ms]):.3f}"
        )


if __name__ == "__main__":
    main()
