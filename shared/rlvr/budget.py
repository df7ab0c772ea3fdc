"""What a notebook will train the first time it runs, and about how long that takes on this machine.

A notebook's setup cell lists its runs (label -> RLConfig); `first_run` says which are already on disk (they load in
a second) and estimates the others from two steps of each configuration's shape timed on this machine (a few tenths
of a second for GRPO, about a second for PPO's eight updates), the first time a notebook needs that shape. The probe
counts the training thread's processor time, not the clock: other jobs on the machine slow a run down, but do not
inflate the estimate of what it costs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from .cache import Entry, is_cached, load_or_create
from .config import TRAIN_THREADS
from .i18n import _
from .parallel import cores
from .sft import cache_entry as sft_entry
from .sft import train_sft
from .train import RLConfig, cache_entry, train_rl, warm_start, warmup_config

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


def _busy_seconds() -> float:
    """Processor seconds of the training thread (with more torch threads: of this process, per thread): an idle
    machine's clock time for the same work. PPO's value updates, on a thread of their own beside the policy's
    (`rlvr.train.Trainer.update`), take no longer than the policy's and are not counted twice."""
    return time.thread_time() if TRAIN_THREADS == 1 else time.process_time() / TRAIN_THREADS


def seconds_per_step(cfg: RLConfig) -> float:
    """Seconds one RL step of this configuration's shape takes on this machine: timed once, then kept in the
    checkpoint cache (keyed, as every entry is, by how this machine computes), so the next notebook reads it."""
    shape = _shape(cfg)
    if shape not in _SECONDS_PER_STEP:
        entry = Entry("step-seconds", {"shape": list(shape)})
        loaded = load_or_create(entry, lambda: {"seconds": _timed_step(cfg)}, log=lambda _message: None)
        _SECONDS_PER_STEP[shape] = float(loaded.payload["seconds"])
    return _SECONDS_PER_STEP[shape]


def _timed_step(cfg: RLConfig) -> float:
    """Processor seconds of one RL step of cfg's shape, timed here: the faster of TIMED_STEPS one-step runs."""
    start = warm_start(RLConfig()).model  # the shipped warm-up: its cost per step is any warm-up's
    times = []
    probe = replace(cfg, steps=1)
    for _step in range(TIMED_STEPS):
        t0 = _busy_seconds()
        train_rl(probe, policy=start, progress=False)
        times.append(_busy_seconds() - t0)
    return min(times)


def warm_up_seconds(cfg: RLConfig) -> float:
    """Seconds to train the warm-up a run starts from if it is not on disk (two SFT steps timed here), else 0."""
    warm = warmup_config(cfg)
    if is_cached(sft_entry(warm)):
        return 0.0
    if warm not in _SECONDS_PER_STEP:
        probe = replace(warm, steps=TIMED_STEPS, warmup_steps=0)
        t0 = _busy_seconds()
        train_sft(probe)
        _SECONDS_PER_STEP[warm] = (_busy_seconds() - t0) / TIMED_STEPS * warm.steps
    return _SECONDS_PER_STEP[warm]


def plan(runs: dict[str, RLConfig | tuple[RLConfig, Entry]]) -> list[PlannedRun]:
    """label -> RLConfig (cached as an RL run) or (RLConfig, the Entry it is cached under): one PlannedRun each,
    counting the warm-up it needs if that is not on disk either; a run listed under two labels (the same entry) is
    planned once, under the first."""
    planned, seen = [], set()
    for label, run in runs.items():
        cfg, entry = run if isinstance(run, tuple) else (run, cache_entry(run))
        key = (entry.kind, entry.key())
        if key in seen:
            continue
        seen.add(key)
        cached = is_cached(entry)
        seconds = 0.0 if cached else cfg.steps * seconds_per_step(cfg) + warm_up_seconds(cfg)
        planned.append(PlannedRun(label, cached, seconds))
    return planned


def duration(seconds: float) -> str:
    """'~40 s' or '~3.5 min' ('约 40 秒', '约 3.5 分钟' in Chinese)."""
    if seconds < 120:
        return _("~{seconds} s").format(seconds=f"{seconds:.0f}")
    return _("~{minutes} min").format(minutes=f"{seconds / 60:.1f}")


def waiting_seconds(seconds: list[float], cores: int) -> float:
    """How long runs of these lengths take side by side on `cores` cores, one run per core at a time, the longest
    first (each to the core that frees up first)."""
    loads = [0.0] * max(1, cores)
    for length in sorted(seconds, reverse=True):
        loads[loads.index(min(loads))] += length
    return max(loads)


def first_run_text(runs: dict) -> str:
    """A few lines for a setup cell: what is already on disk, what will train, and about how long in all."""
    planned = plan(runs)
    todo = [p for p in planned if not p.cached]
    lines = [
        "  "
        + _("{label}: {status}").format(
            label=p.label,
            status=(
                _("on disk, loads in a second")
                if p.cached
                else _("trains, ~{seconds} s").format(seconds=f"{p.seconds:.0f}")
            ),
        )
        for p in planned
    ]
    total = sum(p.seconds for p in todo)
    n_cores = cores()
    waiting = waiting_seconds([p.seconds for p in todo], n_cores)
    if not todo:
        head = _("Everything this notebook trains is already on disk.")
    elif waiting < 0.9 * total:
        head = _(
            "The first time, this notebook trains {todo} of its {total} runs: {time} of computing on this machine, "
            "{cores} runs at a time, so {waiting} of waiting (from steps of each kind timed here; evaluating them adds "
            "a little, other jobs on the machine can make it several times longer); afterwards they load from disk."
        ).format(todo=len(todo), total=len(planned), time=duration(total), waiting=duration(waiting), cores=n_cores)
    else:
        head = _(
            "The first time, this notebook trains {todo} of its {total} runs: {time} of computing on this machine "
            "(from steps of each kind timed here; evaluating them adds a little, other jobs on the machine can make it "
            "several times longer); afterwards they load from disk."
        ).format(todo=len(todo), total=len(planned), time=duration(total))
    return "\n".join([head, *lines])
