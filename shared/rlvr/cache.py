"""Checkpoint cache: weights keyed by a hash of everything that determines them, written atomically; a few shipped
with the package (`SHIPPED_DIR`, read-only) so the first run does not train them."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

import torch

from .config import cache_dir

FORMAT_VERSION = 1  # bump when the meaning of a saved file changes
SHIPPED_DIR = Path(__file__).resolve().parent / "weights"  # checkpoints shipped with the package, named as in the cache


def cache_key(kind: str, config: dict) -> str:
    """Stable hash of a config dict (with the kind, format version and torch version)."""
    payload = {"kind": kind, "format": FORMAT_VERSION, "torch": torch.__version__.split("+")[0], "config": config}
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_path(kind: str, config: dict, folder: Path | None = None) -> Path:
    """Where the checkpoint of this config lives."""
    return Path(folder or cache_dir()) / f"{kind}-{cache_key(kind, config)}.pt"


def save_atomic(obj: dict, path: Path) -> None:
    """torch.save to a temporary file in the same folder, then rename: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def try_load(path: Path, kind: str, config: dict, log: Callable[[str], None] = print) -> dict | None:
    """Load a cached checkpoint, or None (with a one-line message) if it is missing, unreadable or mismatched."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated, corrupted, or not a torch file
        log(f"[rlvr cache] {path.name} is unreadable ({type(err).__name__}); retraining.")
        return None
    expected = json.loads(json.dumps(config, default=str))
    if not isinstance(obj, dict) or obj.get("kind") != kind or obj.get("config") != expected:
        log(f"[rlvr cache] {path.name} does not match the requested config; retraining.")
        return None
    return obj


def candidates(kind: str, config: dict, folder: Path | None = None) -> list[Path]:
    """Where this config's checkpoint may be, in the order `load_or_create` reads them: `folder` (the checkpoint
    cache by default), then, for the default folder only, the package's shipped checkpoints."""
    return [cache_path(kind, config, folder)] + ([cache_path(kind, config, SHIPPED_DIR)] if folder is None else [])


def source(kind: str, config: dict) -> Path | None:
    """The file `load_or_create` would read for this config (the first candidate that exists), or None."""
    return next((path for path in candidates(kind, config) if path.exists()), None)


def is_cached(kind: str, config: dict) -> bool:
    """True if this config loads without training: in the checkpoint cache or shipped with the package."""
    return source(kind, config) is not None


def load_or_create(
    kind: str, config: dict, create: Callable[[], dict], folder: Path | None = None, log: Callable[[str], None] = print
) -> tuple[dict, bool]:
    """Return (payload, loaded_from_cache); `create()` builds the payload (tensors, numbers, strings) when needed.
    Reads the first of `candidates` that loads; a new payload is written to the first."""
    for path in candidates(kind, config, folder):
        obj = try_load(path, kind, config, log)
        if obj is not None:
            return obj["payload"], True
    payload = create()
    save_checkpoint(kind, config, payload, folder)
    return payload, False


def save_checkpoint(kind: str, config: dict, payload: dict, folder: Path | None = None, **extra) -> Path:
    """Write a checkpoint as `try_load` reads it (kind, config, payload, and any `extra` fields) to this config's path
    in `folder` (the checkpoint cache by default); returns the path."""
    path = cache_path(kind, config, folder)
    save_atomic(
        {"kind": kind, "config": json.loads(json.dumps(config, default=str)), "payload": payload, **extra}, path
    )
    return path
