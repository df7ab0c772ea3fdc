"""rlvr: the helper package of the RLVR course module (CS336 Lecture 16) — task, model, objectives, training,
widgets and exercise checks."""

from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: no check
    tomllib = None

from .config import configure_threads
from .i18n import set_language as set_language  # the Chinese notebooks call rlvr.set_language("zh_CN")

__version__ = "0.1.0"
configure_threads()


def _checkout_version(start: Path) -> str | None:
    """The version in the pyproject.toml of the rlvr checkout holding `start`, or None outside one."""
    for folder in (start, *start.parents):
        pyproject = folder / "pyproject.toml"
        if tomllib is not None and pyproject.is_file() and (folder / "shared" / "rlvr").is_dir():
            try:
                return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
            except (OSError, KeyError, tomllib.TOMLDecodeError):
                return None
    return None


def check_install(start: Path | None = None) -> None:
    """Stop a notebook early, with one clear line, if the installed rlvr is not the checkout the notebook sits in."""
    version = _checkout_version((start or Path.cwd()).resolve())
    if version is not None and version != __version__:
        raise RuntimeError(
            f"These notebooks are rlvr {version}, but the kernel imports rlvr {__version__} ({Path(__file__).parent}). "
            "From the repository root run `pip install -e .`, then restart the kernel."
        )
