"""rlvr: the helper package of the RLVR course module (CS336 Lecture 16) — task, model, objectives, training,
widgets and exercise checks."""

from .config import configure_threads
from .i18n import set_language as set_language  # the Chinese notebooks call rlvr.set_language("zh_CN")

__version__ = "0.1.0"
configure_threads()


def require(version: str) -> None:
    """Stop a notebook early, with a clear message, if the installed package is not the version it was written for."""
    if version != __version__:
        raise RuntimeError(
            f"This notebook was written for rlvr {version}, but rlvr {__version__} is installed. "
            "From the repository root run `pip install -e .` (or check out the matching notebooks), "
            "then restart the kernel."
        )
