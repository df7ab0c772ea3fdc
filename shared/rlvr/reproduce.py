"""`python -m rlvr reproduce`: every figure the lecture states, regenerated and compared with the lecture.

Each notebook's topic (`rlvr.narration.TOPICS`) measures its rows with `rows(seeds, fast) -> list[Row]` from the
experiment functions the notebook calls, so a figure cannot differ between a notebook and this table.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import date
from pathlib import Path

import torch

from .experiments.common import Row, markdown_table, text_table
from .narration import TOPICS
from .options import output_file


def run_experiments(
    seeds: tuple[int, ...], fast: bool, only: list[str] | None = None
) -> tuple[list[Row], dict[str, float]]:
    """Every topic's rows (`rlvr.narration.TOPICS`); returns all rows and the seconds each topic took."""
    from tqdm.auto import tqdm

    rows, seconds = [], {}
    chosen = [topic for name, topic in TOPICS.items() if not only or name in only]
    with tqdm(chosen, desc="reproduce", unit="topic") as bar:
        for topic in bar:
            bar.set_postfix_str(topic.name)
            start = time.perf_counter()
            rows += topic.rows(seeds=tuple(seeds), fast=fast)
            seconds[topic.name] = time.perf_counter() - start
            bar.write(f"  {topic.name:<12} {seconds[topic.name]:6.1f} s  {topic.notebook[:2]}: {topic.covers}")
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


def build_parser() -> argparse.ArgumentParser:
    """The command line of `python -m rlvr reproduce`."""
    parser = argparse.ArgumentParser(prog="python -m rlvr reproduce", description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds of the stochastic experiments")
    parser.add_argument("--fast", action="store_true", help="small sizes (a smoke test, not a reproduction)")
    parser.add_argument("--only", nargs="+", choices=list(TOPICS), help="run some topics")
    parser.add_argument("--json", type=output_file, help="write the table and timings to this JSON file")
    parser.add_argument("--markdown", type=output_file, help="write the table to this Markdown file")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: prints the table; exit code 0 (disagreeing rows are reported, not hidden)."""
    args = build_parser().parse_args(argv)
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
