"""`python -m rlvr reproduce`: every figure the lecture states, regenerated and compared with the lecture.

Each notebook's experiment module exposes `figures(seeds, fast) -> list[Row]`; the notebooks call the same functions,
so a figure cannot differ between a notebook and this table.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import time
from datetime import date
from pathlib import Path

import torch

from .options import output_file
from .experiments.common import Row, markdown_table, text_table

EXPERIMENTS = [  # (module under rlvr.experiments, what it covers)
    ("bandit", "01: estimators, +5 shift, std amplification (2.1, 4.1, Ex. 1)"),
    ("ppo_parts", "02: clipping, KL estimators, memory (2.2-2.4, Ex. 2)"),
    ("thinking", "03: warm-up, GRPO, Dr. GRPO, RFT, pass@k (3, 5, Ex. 3, 6, 7)"),
    ("race", "04: PPO vs GRPO-1 vs GRPO-8 (3)"),
    ("length_bias", "05: length bias, Dr. GRPO, Kimi length reward (4.2, 6.2, Ex. 4, 5, 7d)"),
]


def run_experiments(
    seeds: tuple[int, ...], fast: bool, only: list[str] | None = None
) -> tuple[list[Row], dict[str, float]]:
    """Call every module's figures(); returns all rows and the seconds each module took."""
    from tqdm.auto import tqdm

    rows, seconds = [], {}
    chosen = [(name, text) for name, text in EXPERIMENTS if not only or name in only]
    with tqdm(chosen, desc="reproduce", unit="experiment") as bar:
        for name, text in bar:
            bar.set_postfix_str(name)
            start = time.perf_counter()
            module = importlib.import_module(f"rlvr.experiments.{name}")
            rows += module.figures(seeds=tuple(seeds), fast=fast)
            seconds[name] = time.perf_counter() - start
            bar.write(f"  {name:<12} {seconds[name]:6.1f} s  {text}")
    return rows, seconds


def machine() -> str:
    """A one-line description of this machine."""
    return f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}"


def report(rows: list[Row], seconds: dict, seeds, fast: bool) -> dict:
    """Everything the JSON file holds."""
    return {
        "date": date.today().isoformat(),
        "machine": machine(),
        "seeds": list(seeds),
        "fast": fast,
        "seconds": seconds,
        "total_seconds": sum(seconds.values()),
        "rows": [r.to_dict() for r in rows],
    }


def markdown_report(rows: list[Row], seconds: dict, seeds, fast: bool) -> str:
    """The table with its date, machine, seeds and timings, as Markdown."""
    agree = sum(r.agrees is True for r in rows)
    checked = sum(r.agrees is not None for r in rows)
    times = ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
    return (
        f"Measured on {date.today().isoformat()} ({machine()}), seeds {', '.join(map(str, seeds))}"
        f"{', fast mode' if fast else ''}; {agree} of {checked} rows agree. Time: {times} "
        f"(total {sum(seconds.values()):.0f} s).\n\n" + markdown_table(rows) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: prints the table; exit code 0 (disagreeing rows are reported, not hidden)."""
    parser = argparse.ArgumentParser(prog="python -m rlvr reproduce", description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds of the stochastic experiments")
    parser.add_argument("--fast", action="store_true", help="small sizes (a smoke test, not a reproduction)")
    parser.add_argument("--only", nargs="+", choices=[name for name, _ in EXPERIMENTS], help="run some modules")
    parser.add_argument("--json", type=output_file, help="write the table and timings to this JSON file")
    parser.add_argument("--markdown", type=output_file, help="write the table to this Markdown file")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    fast = ", fast" if args.fast else ""
    print(f"reproducing the lecture's figures (seeds {args.seeds}{fast}); time per experiment:")
    rows, seconds = run_experiments(tuple(args.seeds), args.fast, args.only)
    print()
    print(text_table(rows))
    agree = sum(r.agrees is True for r in rows)
    disagree = [r for r in rows if r.agrees is False]
    print(
        f"\n{agree} rows agree, {len(disagree)} disagree, {sum(r.agrees is None for r in rows)} without a band; "
        f"{time.perf_counter() - start:.0f} s in all"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report(rows, seconds, args.seeds, args.fast), indent=2, default=str))
        print(f"wrote {args.json}")
    if args.markdown:
        Path(args.markdown).write_text(markdown_report(rows, seconds, args.seeds, args.fast))
        print(f"wrote {args.markdown}")
    return 0
