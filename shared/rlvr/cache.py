"""Checkpoint cache: results keyed by a hash of everything that determines them, written atomically; a few shipped
with the package (`SHIPPED_DIR`, read-only) so the first run does not train them.

The one owner of the cache's truth: an `Entry` (kind and config) derives its version, key and path; experiments ask
`is_cached(entry)` or `cached(entry)` (never trains) and train through `load_or_create(entry, create)`.

What determines a result besides its config is the way this machine computes (`numerics()`: torch's version, the
kernels it dispatched to, the CPU vendor, the thread count training runs use): each rounds floats differently, and a
seed fixes a run only within one of them. So a cache entry's key includes them, and a run cached under one never
answers for another (`ATEN_CPU_CAPABILITY=default` in CI, RLVR_THREADS=2). Every training run trains on
`rlvr.config.TRAIN_THREADS` threads wherever it runs (`rlvr.config.training_threads`), so the key's thread count is
that one, whatever the process around it uses. A shipped checkpoint is the exception: it is
one file, the same on every machine, named without them."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from . import config
from .config import cache_dir

TMP_SUFFIX = ".tmp"  # a checkpoint being written (save_atomic)
FORMAT_VERSION = 1  # bump when the layout of a saved file ({kind, config, payload}) changes
SHIPPED_DIR = Path(__file__).resolve().parent / "weights"  # checkpoints shipped with the package, named as in the cache
VERSIONS = {  # what is cached -> its version: bump it when the numbers (or the payload) of that kind change
    "sft": 1,  # the warm-up model (rlvr.sft)
    "rl": 8,  # an RL run's history and policy (rlvr.train); v7: each step records its processor seconds; v8: PPO's
    # steps also record their value model's (value_cpu_s)
    "race": 9,  # a race run's history with its diagnostics (rlvr.experiments.race); v9: as rl v8
    "gallery": 3,  # a broken run's history (rlvr.experiments.gallery); v3: as rl v6
    "scale-sft": 1,  # the GPT-2 warm-up of rlvr.scale
    "step-seconds": 1,  # processor seconds of one RL step of a configuration's shape (rlvr.budget's estimates)
    "evaluation": 1,  # a cached RL run's held-out metrics and KL to its warm-up (rlvr.experiments.thinking)
}


@functools.cache
def cpu_vendor() -> str:
    """The CPU's vendor ('GenuineIntel', 'AuthenticAMD', ...; '' where the system does not say): BLAS libraries pick
    their kernels by it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("vendor_id", "CPU implementer")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def numerics() -> dict:
    """How this process computes, besides the config: what decides the bits of a training run (its thread count is the
    one every run trains with, `rlvr.config.TRAIN_THREADS`)."""
    return {
        "torch": torch.__version__.split("+")[0],
        "machine": platform.machine(),
        "vendor": cpu_vendor(),
        "capability": torch.backends.cpu.get_cpu_capability(),
        "threads": config.TRAIN_THREADS,
    }


@dataclass(frozen=True)
class Entry:
    """One cached result: what kind it is (a key of VERSIONS) and everything that determines it (a JSON-able dict)."""

    kind: str
    config: dict

    def __post_init__(self):
        if self.kind not in VERSIONS:
            raise ValueError(f"unknown cache kind {self.kind!r}; add it to rlvr.cache.VERSIONS")

    @property
    def tag(self) -> str:
        """The kind with its version, as written in the file ('rl-v4')."""
        return f"{self.kind}-v{VERSIONS[self.kind]}"

    @property
    def saved_config(self) -> dict:
        """The config as the file stores it (through JSON: tuples become lists)."""
        return json.loads(json.dumps(self.config, default=str))

    def key(self, shipped: bool = False) -> str:
        """Stable hash of the config with the tag, the file format and this machine's `numerics()` (a shipped
        checkpoint's key has only torch's version: the file is the same everywhere)."""
        how = {"torch": numerics()["torch"]} if shipped else numerics()
        payload = {"kind": self.tag, "format": FORMAT_VERSION, **how}
        text = json.dumps({**payload, "config": self.config}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def path(self, folder: Path | None = None) -> Path:
        """Where this entry's checkpoint lives in `folder` (the checkpoint cache by default; in SHIPPED_DIR under its
        machine-independent key)."""
        folder = Path(folder or cache_dir())
        return folder / f"{self.tag}-{self.key(shipped=folder == SHIPPED_DIR)}.pt"


@dataclass
class Loaded:
    """What `load_or_create` returns: the payload and the file it came from (None: just created)."""

    payload: dict
    path: Path | None

    @property
    def from_cache(self) -> bool:
        """True if nothing was trained."""
        return self.path is not None

    @property
    def shipped(self) -> bool:
        """True if it came from the checkpoints shipped with the package."""
        return self.path is not None and self.path.parent == SHIPPED_DIR


def save_atomic(obj: dict, path: Path) -> None:
    """torch.save to a temporary file in the same folder, then rename: readers never see half a file. The temporary
    file's name holds this process's id (`temporary_files`), so whoever stops a process can remove what it left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.{os.getpid()}.", suffix=TMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def temporary_files(pid: int, folder: Path | None = None) -> list[Path]:
    """The temporary files process `pid` is writing (or left, if it was killed) in `folder` (the cache by default)."""
    return sorted(Path(folder or cache_dir()).glob(f"*.{pid}.*{TMP_SUFFIX}"))


def try_load(path: Path, entry: Entry, log: Callable[[str], None] = print) -> dict | None:
    """Load the checkpoint of `entry` at `path`, or None (with a one-line message) if it is missing, unreadable or
    holds something else."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated, corrupted, or not a torch file
        log(f"[rlvr cache] {path.name} is unreadable ({type(err).__name__}); retraining.")
        return None
    if not isinstance(obj, dict) or obj.get("kind") != entry.tag or obj.get("config") != entry.saved_config:
        log(f"[rlvr cache] {path.name} does not match the requested config; retraining.")
        return None
    return obj


def candidates(entry: Entry, folder: Path | None = None) -> list[Path]:
    """Where this entry's checkpoint may be, in the order `load_or_create` reads them: `folder` (the checkpoint cache
    by default), then, for the default folder only, the package's shipped checkpoints."""
    return [entry.path(folder)] + ([entry.path(SHIPPED_DIR)] if folder is None else [])


def cached(entry: Entry, folder: Path | None = None) -> Loaded | None:
    """The entry's checkpoint if one of its candidates loads, else None (never trains, says nothing)."""
    for path in candidates(entry, folder):
        obj = try_load(path, entry, log=lambda _message: None)
        if obj is not None:
            return Loaded(obj["payload"], path)
    return None


def is_cached(entry: Entry) -> bool:
    """True if this entry loads without training: in the checkpoint cache or shipped with the package."""
    return any(path.exists() for path in candidates(entry))


def load_or_create(
    entry: Entry, create: Callable[[], dict], folder: Path | None = None, log: Callable[[str], None] = print
) -> Loaded:
    """The entry's payload from the first of `candidates` that loads, else `create()` (tensors, numbers, strings),
    written to the first candidate."""
    for path in candidates(entry, folder):
        obj = try_load(path, entry, log)
        if obj is not None:
            return Loaded(obj["payload"], path)
    payload = create()
    save_checkpoint(entry, payload, folder)
    return Loaded(payload, None)


def save_checkpoint(entry: Entry, payload: dict, folder: Path | None = None, **extra) -> Path:
    """Write a checkpoint as `try_load` reads it (tag, config, payload, and any `extra` fields) to the entry's path in
    `folder` (the checkpoint cache by default); returns the path."""
    path = entry.path(folder)
    save_atomic({"kind": entry.tag, "config": entry.saved_config, "payload": payload, **extra}, path)
    return path
