"""What every part of the bridge needs: the optional extra's check, offline Hugging Face, a summary of verdicts."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # models come from code or a local folder: never reach for the hub
INSTALL_HINT = "the TRL bridge needs the optional extra: pip install -e '.[scale]'"


def require(names: tuple[str, ...], hint: str = INSTALL_HINT) -> None:
    """Import each module of `names`; a clear ImportError naming the first one missing and `hint`."""
    for name in names:
        try:
            __import__(name)
        except ImportError as err:
            raise ImportError(f"{name} is not installed: {hint}") from err


def require_scale() -> None:
    """Import trl, transformers, datasets, accelerate and tokenizers; a clear ImportError if one is missing."""
    require(("trl", "transformers", "datasets", "accelerate", "tokenizers"))


def require_hf(hint: str = INSTALL_HINT) -> None:
    """Import transformers and tokenizers (a Hugging Face tokenizer and model output need no more)."""
    require(("transformers", "tokenizers"), hint)


def verdict_stats(verdicts) -> dict:
    """Think-first share, accuracy, malformed share and mean length of a list of `rlvr.task.Verdict`s."""
    n = max(1, len(verdicts))
    return {
        "think_share": sum(v.format == "think" for v in verdicts) / n,
        "accuracy": sum(v.correct for v in verdicts) / n,
        "malformed_share": sum(v.format == "malformed" for v in verdicts) / n,
        "mean_length": sum(v.length for v in verdicts) / n,
    }
