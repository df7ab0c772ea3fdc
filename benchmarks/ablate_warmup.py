"""Warm-up ablation: which supervised warm-up lets 200 GRPO steps reach the lecture's 94% think-first accuracy?

For each arm (a set of `SFTConfig` fields) and seed, it trains the warm-up (through the checkpoint cache), records
its held-out metrics at temperature 1 and greedy, how sharp its per-step digit distribution is, its training time,
then runs the lecture's GRPO (32 prompts x 8 answers, lr 1e-4, 200 steps) from it and evaluates the policy on 2000
held-out prompts at steps 50, 100, 150 and 200. One JSON line per (arm, seed) goes to --out; a rerun skips the lines
already there, so the ablation can be stopped and resumed. `--table` prints the Markdown table of docs/calibration.md.

Usage:
    python benchmarks/ablate_warmup.py --arms now long --seeds 10 11 12 --workers 2 --out build/ablation.jsonl
    python benchmarks/ablate_warmup.py --table --out build/ablation.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rlvr.options import json_safe


def arm(steps: int, batch_size: int, lr: float = 1e-3, min_lr_ratio: float = 0.1) -> dict:
    """The warm-up fields an arm sets (all of them, so that an arm means the same whatever the defaults are)."""
    return {"steps": steps, "batch_size": batch_size, "lr": lr, "min_lr_ratio": min_lr_ratio}


ARMS = {  # name -> the SFTConfig fields the arm sets; the rest are the defaults (model, data, teacher)
    "800x128": arm(800, 128),  # the warm-up before this ablation
    "800x256": arm(800, 256),
    "1200x256": arm(1200, 256),
    "1500x128": arm(1500, 128),
    "1500x256": arm(1500, 256),
    "2000x256": arm(2000, 256),
    "3000x128": arm(3000, 128),
    "3000x256": arm(3000, 256),
    "1500x256-to0": arm(1500, 256, min_lr_ratio=0.0),
    "800x128-lr3e-3": arm(800, 128, lr=3e-3),
    "1500x128-lr3e-3": arm(1500, 128, lr=3e-3),
    "1500x256-lr2e-3": arm(1500, 256, lr=2e-3),
}
CHECK_STEPS = (50, 100, 150, 200)  # held-out evaluation after these GRPO steps
EVAL_PROMPTS = 2000
LATE = 20  # "late in training": the last 20 steps


def digit_sharpness(model, n_prompts: int = 1000) -> dict:
    """How the warm-up writes each chain step, teacher-forced on the *right* chain of held-out prompts.

    Returns the mean probability of the right digit, its 5th percentile over (prompt, step), the share of steps
    where it is below 0.8, and the mean entropy (nats) of the digit distribution.
    """
    import numpy as np
    import torch

    from rlvr.evaluate import held_out_prompts
    from rlvr.model import response_logps
    from rlvr.task import N_DIGITS, pad_responses, prompt_tokens, think_answer

    prompts = held_out_prompts(n_prompts)  # [n, 10]
    responses, _ = pad_responses([think_answer(p) for p in prompts])  # [n, 16]
    with torch.no_grad():
        logps, logits = response_logps(model, prompt_tokens(prompts), responses, return_logits=True)  # [n, T]
    steps = slice(1, 1 + N_DIGITS)  # the ten digits inside the brackets
    p_right = logps[:, steps].exp()  # [n, 10]
    logprobs = torch.log_softmax(logits[:, steps], dim=-1)  # [n, 10, V]
    entropy = -(logprobs.exp() * logprobs).sum(-1)  # [n, 10]
    return {
        "p_right_mean": float(p_right.mean()),
        "p_right_p05": float(np.quantile(p_right.numpy(), 0.05)),
        "share_below_0.8": float((p_right < 0.8).float().mean()),
        "entropy": float(entropy.mean()),
        "p_right_by_step": [round(float(x), 4) for x in p_right.mean(0)],
    }


def one(arm: str, seed: int, rl_steps: int = 200) -> dict:
    """Warm-up + GRPO for one arm and seed; returns a JSON-safe record."""
    os.environ.setdefault("RLVR_THREADS", "1")
    import torch

    from rlvr.config import configure_threads
    from rlvr.evaluate import evaluate
    from rlvr.sft import SFTConfig, warm_up
    from rlvr.train import RLConfig, Trainer

    configure_threads()
    cfg = SFTConfig(**ARMS[arm])
    start = time.perf_counter()
    warm = warm_up(seed=seed, cfg=cfg)
    record = {
        "arm": arm,
        "seed": seed,
        "sft": cfg.to_dict(),
        "sft_from_cache": warm.from_cache,
        "sft_seconds": None if warm.from_cache else time.perf_counter() - start,
        "sft_final_loss": statistics.fmean(warm.losses[-50:]),
        "warm_t1": evaluate(warm.model, EVAL_PROMPTS, 1.0),
        "warm_greedy": evaluate(warm.model, EVAL_PROMPTS, 0.0),
        "sharpness": digit_sharpness(warm.model),
        "threads": torch.get_num_threads(),
    }
    rl = RLConfig(seed=seed, sft_seed=seed, steps=rl_steps)
    torch.manual_seed(rl.seed)
    trainer = Trainer(rl, warm.model)
    history, checks = [], {}
    start = time.perf_counter()
    for step in range(rl.steps):
        history.append(trainer.step(step))
        if step + 1 in CHECK_STEPS:
            checks[step + 1] = evaluate(trainer.policy, EVAL_PROMPTS, 1.0)
    record.update(
        {
            "rl_seconds": time.perf_counter() - start,
            "checks": checks,
            "all_equal_late": statistics.fmean(h["all_same_group_fraction"] for h in history[-LATE:]),
            "train_cot_accuracy_late": statistics.fmean(h["cot_accuracy"] for h in history[-LATE:]),
        }
    )
    return record


def done_keys(path: Path) -> set:
    """(arm, seed) pairs already in the results file."""
    if not path.exists():
        return set()
    return {(r["arm"], r["seed"]) for r in map(json.loads, path.read_text().splitlines()) if r}


def run(arms: list[str], seeds: list[int], workers: int, out: Path) -> None:
    """Every missing (arm, seed), `workers` at a time; each finished record is appended to `out` at once."""
    out.parent.mkdir(parents=True, exist_ok=True)
    todo = [(a, s) for a in arms for s in seeds if (a, s) not in done_keys(out)]
    print(f"{len(todo)} runs to do: {todo}", flush=True)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(one, a, s): (a, s) for a, s in todo}
        for future in futures:
            record = future.result()
            with out.open("a") as f:
                f.write(json.dumps(json_safe(record)) + "\n")
            c = record["checks"]
            print(
                f"{record['arm']:>16} seed {record['seed']:>3}: warm-up T=1 think-first acc "
                f"{record['warm_t1']['cot_accuracy']:.3f}, GRPO "
                + " / ".join(f"{c[k]['cot_accuracy']:.3f}" for k in sorted(c, key=int))
                + f", all-equal late {record['all_equal_late']:.2f}, sft {record['sft_seconds'] or 0:.0f} s",
                flush=True,
            )


def _mean_sd(values: list, scale: float = 100.0, digits: int = 1) -> str:
    """'mean ± sd' of the values that are not None (x100 for percentages by default)."""
    values = [v * scale for v in values if v is not None]
    if not values:
        return "n/a"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.{digits}f} ± {sd:.{digits}f}"


TABLE_HEAD = (
    "| warm-up: steps x batch, peak lr (end lr) | seeds | warm-up s | T=1: acc / think share / think acc "
    "/ direct acc | T=1 malformed | greedy think share | p(right digit): mean / 5th pct "
    "| GRPO think-first acc @ 50 / 100 / 150 / 200 | worst seed @ 200 | all-equal, last 20 "
    "| malformed after GRPO |"
)


def table_row(records: list[dict]) -> str:
    """One arm's records (its seeds) as a Markdown row: means ± std over seeds, percentages."""
    cfg = records[0]["sft"]
    secs = [r["sft_seconds"] for r in records if r["sft_seconds"]]
    t1 = " / ".join(
        _mean_sd([r["warm_t1"][k] for r in records])
        for k in ("accuracy", "cot_fraction", "cot_accuracy", "direct_accuracy")
    )
    grpo = " / ".join(_mean_sd([r["checks"][str(s)]["cot_accuracy"] for r in records]) for s in CHECK_STEPS)
    final = [r["checks"][str(CHECK_STEPS[-1])]["cot_accuracy"] for r in records]
    cells = [
        f"{cfg['steps']} x {cfg['batch_size']}, {cfg['lr']:g} ({cfg['lr'] * cfg.get('min_lr_ratio', 0.1):g})",
        ",".join(str(r["seed"]) for r in records),
        f"{statistics.median(secs):.0f}" if secs else "cached",
        t1,
        _mean_sd([r["warm_t1"]["malformed_fraction"] for r in records], digits=2),
        _mean_sd([r["warm_greedy"]["cot_fraction"] for r in records], digits=0),
        f"{statistics.fmean(r['sharpness']['p_right_mean'] for r in records):.3f} / "
        f"{statistics.fmean(r['sharpness']['p_right_p05'] for r in records):.3f}",
        grpo,
        f"{100 * min(final):.1f}",
        _mean_sd([r["all_equal_late"] for r in records], digits=0),
        _mean_sd([r["checks"][str(CHECK_STEPS[-1])]["malformed_fraction"] for r in records], digits=2),
    ]
    return "| " + " | ".join(cells) + " |"


def table(path: Path) -> str:
    """The Markdown table of docs/calibration.md: one row per arm, in the order the arms first appear."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line]
    arms = list(dict.fromkeys(r["arm"] for r in records))
    lines = [TABLE_HEAD, "|" + "---|" * TABLE_HEAD.count(" | ") + "---|"]
    lines += [table_row([r for r in records if r["arm"] == a]) for a in arms]
    return "\n".join(lines)


WHY_METRICS = {  # label -> how to read it from a record
    "T=1 malformed share": lambda r: r["warm_t1"]["malformed_fraction"],
    "p(right digit), 5th percentile": lambda r: r["sharpness"]["p_right_p05"],
    "p(right digit), mean": lambda r: r["sharpness"]["p_right_mean"],
    "T=1 think-first accuracy": lambda r: r["warm_t1"]["cot_accuracy"],
    "digit entropy": lambda r: r["sharpness"]["entropy"],
}


def correlations(path: Path, diverged_below: float = 0.5) -> str:
    """Correlation of each warm-up metric with GRPO's think-first accuracy at step 200, over the runs whose
    warm-up did not diverge (GRPO above `diverged_below`)."""
    import numpy as np

    records = [json.loads(line) for line in path.read_text().splitlines() if line]
    final = lambda r: r["checks"][str(CHECK_STEPS[-1])]["cot_accuracy"]  # noqa: E731
    kept = [r for r in records if final(r) > diverged_below]
    lines = [f"{len(kept)} of {len(records)} runs (the rest diverged in the warm-up):"]
    for label, metric in WHY_METRICS.items():
        r = np.corrcoef([metric(x) for x in kept], [final(x) for x in kept])[0, 1]
        lines.append(f"  corr({label}, GRPO think-first accuracy @ {CHECK_STEPS[-1]}) = {r:+.2f}")
    return "\n".join(lines)


def main() -> None:
    """Run the missing arms, or print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[10, 11, 12])
    parser.add_argument("--workers", type=int, default=2, help="processes, one torch thread each")
    parser.add_argument("--out", type=Path, default=Path("build/ablation.jsonl"))
    parser.add_argument("--table", action="store_true", help="print the table of the results so far")
    parser.add_argument("--why", action="store_true", help="print how each warm-up metric tracks GRPO's result")
    args = parser.parse_args()
    if args.table or args.why:
        print(table(args.out) if args.table else correlations(args.out))
    else:
        run(args.arms, args.seeds, args.workers, args.out)


if __name__ == "__main__":
    main()
