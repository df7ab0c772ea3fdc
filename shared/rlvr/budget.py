"""What a notebook will train the first time it runs, and about how long that takes on this machine.

A notebook's setup cell lists its runs (label -> RLConfig); `first_run` says which are already on disk (they load in
a second) and estimates the others from two steps of each configuration timed here and now (a few tenths of a
second for GRPO, about a second for PPO's eight updates).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from .cache import Entry, is_cached
from .train import RLConfig, cache_entry, train_rl, warm_start

TIMED_STEPS = 2  # steps timed per configuration shape (the first one pays for warm-up costs, so we keep the faster)
_SECONDS_PER_STEP: dict = {}  # (algo, epochs, prompts, group size, beta > 0) -> seconds per step, timed once


@dataclass(frozen=True)
class PlannedRun:
    """One run a notebook needs: whether it is on disk and, if not, about how long training it takes here."""

    label: str
    cached: bool
    seconds: float  # 0 when cached


def _shape(cfg: RLConfig) -> tuple:
    """What decides a step's cost (not its seed or learning rate)."""
    return (cfg.algo, cfg.epochs, cfg.prompts_per_step, cfg.group_size, cfg.beta > 0)


def seconds_per_step(cfg: RLConfig) -> float:
    """Seconds one RL step of this configuration's shape takes on this machine (timed once per process)."""
    shape = _shape(cfg)
    if shape not in _SECONDS_PER_STEP:
        start = warm_start(cfg).model  # the shipped (or cached) warm-up: loading it is not part of a step
        times = []
        probe = replace(cfg, steps=1)
        for _ in range(TIMED_STEPS):
            t0 = time.perf_counter()
            train_rl(probe, policy=start, progress=False)
            times.append(time.perf_counter() - t0)
        _SECONDS_PER_STEP[shape] = min(times)
    return _SECONDS_PER_STEP[shape]


def plan(runs: dict[str, RLConfig | tuple[RLConfig, Entry]]) -> list[PlannedRun]:
    """label -> RLConfig (cached as an RL run) or (RLConfig, the Entry it is cached under): one PlannedRun each."""
    planned = []
    for label, run in runs.items():
        cfg, entry = run if isinstance(run, tuple) else (run, cache_entry(run))
        cached = is_cached(entry)
        planned.append(PlannedRun(label, cached, 0.0 if cached else cfg.steps * seconds_per_step(cfg)))
    return planned


def first_run_text(runs: dict) -> str:
    """A few lines for a setup cell: what is already on disk, what will train, and about how long in all."""
    planned = plan(runs)
    todo = [p for p in planned if not p.cached]
    lines = [
        f"  {p.label}: " + ("on disk, loads in a second" if p.cached else f"trains, ~{p.seconds:.0f} s")
        for p in planned
    ]
    total = sum(p.seconds for p in todo)
    head = (
        "Everything this notebook trains is already on disk."
        if not todo
        else f"The first run trains {len(todo)} of {len(planned)} runs: about {total:.0f} s on this machine "
        f"(timed just now); afterwards they load from disk."
    )
    return "\n".join([head, *lines])
