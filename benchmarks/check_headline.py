"""The headline of lecture 5.2 on seed pairs nobody chose anything with: from the default warm-up (its own seed),
200 steps of GRPO, Dr. GRPO and RFT (another seed). Prints held-out think-first accuracy (2000 prompts, T=1) and
the share of all-equal groups over the last 20 steps, with what issue 18 asks of them (GRPO >= 90% and >= 35%;
Dr. GRPO and RFT within 4 points of GRPO).

    python benchmarks/check_headline.py --pairs 31:131 32:132 33:133 --workers 2
"""

from __future__ import annotations

import argparse
import statistics
from concurrent.futures import ProcessPoolExecutor


def warm(sft_seed: int) -> None:
    """Train (or load) the default warm-up of this seed, so that the RL jobs never train it twice at once."""
    import torch

    torch.set_num_threads(1)
    from rlvr.sft import warm_up

    warm_up(seed=sft_seed)


def one(pair: tuple[int, int], algo: str) -> dict:
    """Warm-up seed, RL seed, algorithm -> its final metrics (one torch thread: the workers share the cores)."""
    import torch

    torch.set_num_threads(1)
    from rlvr.experiments.thinking import held_out, late_mean
    from rlvr.train import RLConfig, run

    sft_seed, seed = pair
    result = run(RLConfig(algo=algo, sft_seed=sft_seed, seed=seed), progress=False)
    final = held_out(result.policy)
    return {
        "pair": pair,
        "algo": algo,
        "think_acc": final["cot_accuracy"],
        "share": final["cot_fraction"],
        "all_equal": late_mean(result.history),
    }


def main() -> None:
    """Run every (pair, algorithm) and print one line per pair."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", nargs="+", default=["31:131", "32:132", "33:133"], help="warm-up seed:RL seed pairs")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    pairs = [tuple(int(x) for x in p.split(":")) for p in args.pairs]
    from rlvr.experiments.thinking import COMPARED_ALGOS as ALGOS  # lecture 5.2: GRPO, Dr. GRPO, RFT

    jobs = [(p, a) for p in pairs for a in ALGOS]
    with ProcessPoolExecutor(args.workers) as pool:
        list(pool.map(warm, sorted({p[0] for p in pairs})))
        results = list(pool.map(one, *zip(*jobs)))
    by = {(r["pair"], r["algo"]): r for r in results}
    ok = True
    for p in pairs:
        g, d, f = (by[(p, a)] for a in ALGOS)
        passed = (
            g["think_acc"] >= 0.90
            and g["all_equal"] >= 0.35
            and abs(d["think_acc"] - g["think_acc"]) <= 0.04
            and abs(f["think_acc"] - g["think_acc"]) <= 0.04
        )
        ok &= passed
        print(
            f"warm-up seed {p[0]}, RL seed {p[1]}: GRPO {g['think_acc']:.1%} (share {g['share']:.1%}, all-equal "
            f"last 20 {g['all_equal']:.0%}), Dr. GRPO {d['think_acc']:.1%}, RFT {f['think_acc']:.1%} "
            f"-> {'meets' if passed else 'MISSES'} the bar"
        )
    grpo = [by[(p, "grpo")]["think_acc"] for p in pairs]
    print(
        f"GRPO think-first accuracy: median {statistics.median(grpo):.1%}, worst {min(grpo):.1%}; "
        f"{'every pair meets the bar' if ok else 'some pair misses the bar'}"
    )


if __name__ == "__main__":
    main()
