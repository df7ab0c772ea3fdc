"""One record of a training run (`RunResult`), and the one way an experiment obtains a run through the checkpoint
cache (`cached_run`).

Every experiment keeps the same record: notebook 03's runs and panels, 04's race, 05's runs, 06's gallery. What one
of them needs beyond the curves is a field every run may have (held-out metrics measured after training, a crash's
one line, the name an experiment gives a run) or a function of the record in the experiment's module (the race's
per-update readings, a gallery run's breakage); nothing subclasses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .cache import Entry, cached, load_or_create

OnStep = Callable[[int, int, list], None]  # on_step(step, total, history): live plots, progress lines
TIME_KEYS = ("sampling_s", "training_s", "sampling_cpu_s", "training_cpu_s")  # per-step seconds a history may hold


@dataclass
class RunResult:
    """What a run leaves behind."""

    config: Any  # its rlvr.train.RLConfig
    history: list[dict]  # one dict of metrics per step
    policy: Any = None  # the trained TinyTransformer; None where an experiment keeps only the curves (race, gallery)
    timing: dict = field(default_factory=dict)  # total_s, sampling_s, training_s (and CPU seconds where recorded)
    from_cache: bool = False  # True if nothing was trained
    final: dict = field(default_factory=dict)  # held-out metrics measured after training (notebook 03's panels)
    crash: str | None = None  # 'step 3: RuntimeError: ...' for a run that crashed (its history stops there)
    name: str = ""  # what its experiment calls it (a gallery run: its breakage)

    def curve(self, key: str) -> np.ndarray:
        """One metric against step, as an array (NaN where a step lacks it). [steps]"""
        return history_curve(self.history, key)

    def payload(self) -> dict:
        """What the cache stores of it: history and timing, the policy's weights if kept, its crash if any."""
        payload = {"history": self.history, "timing": self.timing}
        if self.policy is not None:
            payload["state_dict"] = self.policy.state_dict()
        if self.crash is not None:
            payload["crash"] = self.crash
        return payload


def history_curve(history: list[dict], key: str) -> np.ndarray:
    """One metric of a run's per-step history against step (NaN where a step lacks it). [steps]"""
    return np.array([h.get(key, np.nan) for h in history], dtype=float)


def timing_of(history: list[dict]) -> dict:
    """A run's seconds from its history: the sum of each per-step time it recorded, total_s (sampling + training)
    and, where CPU seconds were recorded, total_cpu_s."""
    recorded = [key for key in TIME_KEYS if history and key in history[0]]
    timing = {key: float(sum(h.get(key, np.nan) for h in history)) for key in recorded}
    timing["total_s"] = timing.get("sampling_s", 0.0) + timing.get("training_s", 0.0)
    if "sampling_cpu_s" in timing:
        timing["total_cpu_s"] = timing["sampling_cpu_s"] + timing.get("training_cpu_s", 0.0)
    return timing


def from_payload(
    cfg, payload: dict, from_cache: bool, shell: Callable[[], Any] | None = None, name: str = ""
) -> RunResult:
    """The record of a stored payload; `shell()` makes the model its weights load into (None: no policy kept)."""
    policy = None
    if shell is not None and "state_dict" in payload:
        policy = shell()  # an untrained model of the right shape: loading never trains a warm-up
        policy.load_state_dict(payload["state_dict"])
        policy.eval()
    history = payload["history"]
    timing = payload.get("timing") or timing_of(history)
    return RunResult(cfg, history, policy, timing, from_cache, crash=payload.get("crash"), name=name)


def stored_run(entry: Entry, cfg, shell: Callable[[], Any] | None = None, name: str = "") -> RunResult | None:
    """The run of `entry` if the cache holds it, else None (never trains, says nothing)."""
    loaded = cached(entry)
    return None if loaded is None else from_payload(cfg, loaded.payload, True, shell, name)


def cached_run(
    entry: Entry,
    cfg,
    train: Callable[[OnStep | None], RunResult],
    on_step: OnStep | None = None,
    shell: Callable[[], Any] | None = None,
    name: str = "",
    shortcut: Callable[[], RunResult | None] | None = None,
) -> RunResult:
    """The run of `entry`: from the checkpoint cache, else `train(on_step)` written to it. A run that trains calls
    on_step after every step; one read from the cache calls it once, with its whole history (a live plot then draws
    the finished run).

    Args:
        cfg: the run's RLConfig (cfg.steps is the `total` on_step is told).
        shell: makes the model a stored policy's weights load into (None: the experiment keeps no policy).
        name: what the experiment calls the run (`RunResult.name`).
        shortcut: another way to read the run from the cache before training it (the race reads a short run from
            the first steps of a longer cached one); returns None when it cannot.
    """
    result = shortcut() if shortcut is not None else None
    if result is None:
        loaded = load_or_create(entry, lambda: train(on_step).payload())
        result = from_payload(cfg, loaded.payload, loaded.from_cache, shell, name)
    if result.from_cache and on_step is not None:
        on_step(cfg.steps, cfg.steps, result.history)
    return result
