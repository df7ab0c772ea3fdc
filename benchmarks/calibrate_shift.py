"""Calibrate the +5 reward-shift runs of lecture 2.1: which group size G and SGD step size give the lecture's
no-baseline mean (0.84)? The worst run (0.001) and the baseline run (~0.99) are then checked as predictions.

The lecture gives the shift (+5), the 150 steps and the three outcomes, not G or the step size. For each G the
sweep prints the no-baseline mean on the calibration seeds (100-102); the chosen (G, lr) is then run on the
reproduction seeds (0-2), which played no part in the choice.

    python benchmarks/calibrate_shift.py
"""

from __future__ import annotations

import statistics

from rlvr.experiments.bandit import SHIFT_GROUP_SIZE, SHIFT_LR, train_bandits

CALIBRATION_SEEDS = (100, 101, 102)
CHECK_SEEDS = (0, 1, 2)
GRID = {
    8: (0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1.0),
    16: (0.2, 0.5, 0.6, 0.65, 0.7, 0.8, 1.0),
    32: (0.5, 1.0, 1.5, 1.75, 2.0),
}


def mean_over_seeds(kind: str, group_size: int, lr: float, seeds, stat) -> float:
    """`stat` of the 1000 runs, averaged over seeds."""
    return statistics.fmean(stat(train_bandits(kind, group_size=group_size, lr=lr, seed=s)) for s in seeds)


def main() -> None:
    """Print the sweep, then the predictions of the chosen setting."""
    print("| G | SGD lr | no baseline: mean final (seeds 100-102) | worst run | with RLOO: mean final |")
    print("|---|---|---|---|---|")
    for group_size, lrs in GRID.items():
        for lr in lrs:
            mean = mean_over_seeds("none", group_size, lr, CALIBRATION_SEEDS, lambda r: r.final_mean)
            worst = mean_over_seeds("none", group_size, lr, CALIBRATION_SEEDS, lambda r: r.worst)
            base = mean_over_seeds("rloo", group_size, lr, CALIBRATION_SEEDS, lambda r: r.final_mean)
            print(f"| {group_size} | {lr:g} | {mean:.3f} | {worst:.2g} | {base:.3f} |")
    print(f"\nchosen: G = {SHIFT_GROUP_SIZE}, lr = {SHIFT_LR:g}; on seeds {CHECK_SEEDS} (not used to choose):")
    for seed in CHECK_SEEDS:
        none = train_bandits("none", group_size=SHIFT_GROUP_SIZE, lr=SHIFT_LR, seed=seed)
        rloo = train_bandits("rloo", group_size=SHIFT_GROUP_SIZE, lr=SHIFT_LR, seed=seed)
        print(
            f"  seed {seed}: no baseline mean {none.final_mean:.3f} (lecture 0.84), worst {none.worst:.2g} "
            f"(0.001), stuck below 0.01 {none.stuck_fraction():.0%}; RLOO mean {rloo.final_mean:.3f} (0.99)"
        )


if __name__ == "__main__":
    main()
