"""Wall-clock time of the default `python -m rlvr a5 PATH` (200 steps) on the fixture checkouts, as a student runs it:
a fresh process, its worker subprocess, the function checks, the training with the student's code and the reference
run beside it. Issue 42 asks for under a minute on a 2-core laptop.

Usage: python benchmarks/bench_a5.py [--runs 3] [--steps 200] [--edition 2025 2026] [--cold]
The reference run is cached after its first run (`rlvr.train.run`); --cold times each run with an empty cache folder
(the shipped warm-up is still used), which is what a student's first run pays. Time it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = {"2025": ROOT / "tests" / "fixtures" / "a5_2025", "2026": ROOT / "tests" / "fixtures" / "a5_2026"}


def one_run(path: Path, steps: int, cache: str) -> float:
    """Seconds of one `python -m rlvr a5 PATH --steps N` in a fresh process (exit 0 expected)."""
    env = {**os.environ, "RLVR_CACHE_DIR": cache, "PYTHONPATH": str(ROOT / "shared")}
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "rlvr", "a5", str(path), "--steps", str(steps), "--png", f"{out}/c.png"],
            capture_output=True,
            text=True,
            env=env,
        )
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"rlvr a5 {path} failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    return seconds


def main() -> None:
    """Print the median time per edition, and whether it is under a minute."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--edition", nargs="+", default=["2025", "2026"], choices=sorted(FIXTURES))
    parser.add_argument("--cold", action="store_true", help="an empty cache folder for each run")
    args = parser.parse_args()
    shared_cache = tempfile.mkdtemp(prefix="bench-a5-")
    if not args.cold:
        one_run(FIXTURES[args.edition[0]], args.steps, shared_cache)  # trains and caches the reference once
    for edition in args.edition:
        times = []
        for _ in range(args.runs):
            cache = tempfile.mkdtemp(prefix="bench-a5-cold-") if args.cold else shared_cache
            times.append(one_run(FIXTURES[edition], args.steps, cache))
        median = statistics.median(times)
        verdict = "under a minute" if median < 60 else "OVER a minute"
        runs = ", ".join(f"{t:.1f}" for t in times)
        cache_state = "empty cache" if args.cold else "reference cached"
        print(
            f"rlvr a5, {edition} fixture, {args.steps} steps ({cache_state}): median {median:.1f} s over {args.runs} "
            f"runs ({runs}): {verdict}"
        )


if __name__ == "__main__":
    main()
