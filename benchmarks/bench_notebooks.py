"""What a learner waits for: the six solution notebooks executed cold (an empty checkpoint cache, full size) in the
learner's order, sharing one cache as a learner's machine does.

Prints every cell over `--over` seconds with its first line, each notebook's total, the module's total, the longest
cell, and the peak memory of the largest process (a kernel or one of its training workers). `--keep DIR` writes each
executed notebook and its plain-text view there (what a reader of the rendered module reads). `--against CHECKOUT`
times another checkout of the repository too (its notebooks, its package, a cache of its own), notebook by notebook in
turn with this one, so that both meet the same load on a shared machine; it prints both sides and their totals.

Usage: python benchmarks/bench_notebooks.py [--lang en|zh_CN] [--notebooks 01 03] [--cache DIR] [--keep DIR]
       [--against CHECKOUT]
Needs the [author] extra (nbclient). Run it on a quiet machine: other processes inflate every number.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_CELL_S = 90  # issue 46: no learner cell over a minute and a half on a cold 2-core laptop


def cell_seconds(cell) -> float | None:
    """A code cell's execution time from nbclient's timing metadata, or None if it did not run."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not start or not end:
        return None
    parse = lambda stamp: datetime.fromisoformat(stamp.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def first_line(source: str) -> str:
    """A cell's first line that is not blank, shortened."""
    line = next((s for s in source.splitlines() if s.strip()), "")
    return line if len(line) <= 90 else line[:87] + "..."


def idle_core_seconds() -> float | None:
    """Seconds the machine's cores have spent idle since boot (Linux /proc/stat; None elsewhere): the difference over a
    notebook says how much of the machine its cells left unused."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")  # idle + iowait


def notebook_paths(lang: str, wanted: list[str] | None, root: Path = ROOT) -> list[Path]:
    """The solution notebooks of one edition, in the learner's order (optionally only those whose name starts so)."""
    folder = root / "solutions" if lang == "en" else root / "solutions" / lang
    paths = sorted(folder.glob("0*.ipynb"))
    if wanted:
        paths = [p for p in paths if any(p.name.startswith(w) for w in wanted)]
    if not paths:
        sys.exit(f"error: no solution notebooks found in {folder}")
    return paths


def main() -> None:
    """Execute, time, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", default="en", help="en (default) or zh_CN")
    parser.add_argument("--notebooks", nargs="*", help="name prefixes, e.g. 03 04 (default: all six)")
    parser.add_argument("--cache", help="checkpoint cache to use (default: a new empty folder)")
    parser.add_argument("--keep", help="write the executed notebooks and their text views to this folder")
    parser.add_argument("--over", type=float, default=5.0, help="list cells that took longer than this (seconds)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed per notebook")
    parser.add_argument("--against", help="another checkout of this repository, timed in turn with this one")
    args = parser.parse_args()
    if args.over < 0 or args.timeout <= 0:
        parser.error("--over must be >= 0 and --timeout > 0")
    sides = {"": ROOT}
    if args.against:
        other = Path(args.against).expanduser().resolve()
        if not (other / "shared" / "rlvr").is_dir() or not (other / "solutions").is_dir():
            parser.error(f"--against {args.against}: not a checkout of this repository (no shared/rlvr, solutions)")
        sides = {"this: ": ROOT, "against: ": other}
    paths = {label: notebook_paths(args.lang, args.notebooks, root) for label, root in sides.items()}
    caches = {}
    for label in sides:
        given = Path(args.cache) / label.strip(": ") if args.cache and args.against else args.cache
        caches[label] = Path(given) if given else Path(tempfile.mkdtemp(prefix="rlvr-bench-nb-"))
        caches[label].mkdir(parents=True, exist_ok=True)
    os.environ.pop("RLVR_FAST", None)
    keep = Path(args.keep) if args.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)

    print(f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}")
    for label, root in sides.items():
        print(f"{label}{root} (cache {caches[label]})")
    totals = {label: {} for label in sides}
    longest = {label: (0.0, "") for label in sides}
    path_python = os.environ.get("PYTHONPATH", "")
    for index in range(len(paths[""] if "" in paths else paths["this: "])):
        for label, root in sides.items():
            path = paths[label][index]
            os.environ["RLVR_CACHE_DIR"] = str(caches[label])  # the kernels inherit them
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root / "shared"), path_python]))
            computing, slow, nb = time_notebook(path, args.timeout, args.over, label)
            totals[label][path.stem] = computing
            if slow and slow[0][0] > longest[label][0]:
                longest[label] = (slow[0][0], f"{path.stem} cell {slow[0][1]}")
            if keep and label in ("", "this: "):
                import nbformat

                from coursetools.execute import to_text

                nbformat.write(nb, keep / path.name)
                (keep / f"{path.stem}.txt").write_text(to_text(nb), encoding="utf-8")
    os.environ["PYTHONPATH"] = path_python
    for label in sides:
        seconds = totals[label]
        print(
            f"\n{label}module ({args.lang}): {sum(seconds.values()):.0f} s in cells, "
            + ", ".join(f"{k[:2]} {c:.0f}" for k, c in seconds.items())
        )
        verdict = "within" if longest[label][0] <= GOAL_CELL_S else "over"
        print(
            f"{label}longest cell: {longest[label][0]:.0f} s ({longest[label][1]}), {verdict} the {GOAL_CELL_S} s goal"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak memory of the largest process: {peak_mb:.0f} MB")


def time_notebook(path: Path, timeout: float, over: float, label: str = ""):
    """Execute one notebook cold and print (after `label`) its cells over `over` seconds; returns its seconds in
    cells, its longest cell then its cells over `over` as (seconds, index), and the executed notebook."""
    from coursetools.execute import execute_notebook

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    start, idle_before = time.perf_counter(), idle_core_seconds()
    nb = execute_notebook(path, fast=False, strict=False, timeout=timeout)
    wall = time.perf_counter() - start
    idle = None if idle_before is None else idle_core_seconds() - idle_before
    seconds = [(cell_seconds(c), i) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    computing = sum(s for s, _ in seconds if s is not None)
    unused = "" if idle is None else f"; the cores idle {idle:.0f} core-s of its {wall * cores:.0f}"
    print(f"\n{label}{path.stem}: {computing:.0f} s in cells ({wall:.0f} s with the kernel's start and stop{unused})")
    slow = [(s, i) for s, i in seconds if s is not None and s > over]
    for s, i in slow:
        print(f"  cell {i:3d}: {s:6.1f} s  {first_line(nb.cells[i].source)}")
    longest = max(((s, i) for s, i in seconds if s is not None), default=(0.0, 0))
    return computing, [longest, *slow], nb


if __name__ == "__main__":
    main()
