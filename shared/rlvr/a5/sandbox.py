"""Student code is untrusted: it runs in a copy of the checkout, in a subprocess, with stand-ins for GPU-only packages.

- `copy_checkout`: the checkout's source files (Python, prompts, small configs) copied to a temporary folder; the
  student's own files are never written to (not even __pycache__: the worker runs with bytecode writing off).
- `StandIns`: an import hook that, for a package the student's code imports and that is not installed here (vllm,
  wandb, flash_attn, the assignment's math_verify, jaxtyping, ...), gives a module whose every attribute is a
  stand-in: importing it, annotating or decorating with it, subclassing it works while the modules load; once they
  are loaded, calling it raises StandInUsed with one line saying the package is not installed here.
- `load_adapters`: tests/adapters.py of the copy, imported as the package `tests` (as pytest does), its run_*
  functions by the assignment's names, or one line saying why it could not be imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import shutil
import sys
import tempfile
import types
from pathlib import Path

from ..i18n import _

SKIPPED_FOLDERS = {
    ".git", ".venv", "venv", "env", "__pycache__", "data", "wandb", "outputs", "output", "checkpoints", "models",
    "runs", "logs", "results", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints",
}  # fmt: skip
COPIED_SUFFIXES = {".py", ".prompt", ".txt", ".json", ".yaml", ".yml", ".toml", ".jinja", ".cfg", ".ini", ".md"}
MAX_FILE_BYTES = 2_000_000
MAX_FILES = 5000


class StandInUsed(RuntimeError):
    """Student code used a package that is not installed here (the message is one line)."""


def copy_checkout(checkout, into: Path | None = None) -> Path:
    """A copy of the checkout's source files in a new temporary folder (or `into`); returns the copy's root."""
    source = Path(checkout).expanduser().resolve()
    root = Path(into) if into is not None else Path(tempfile.mkdtemp(prefix="rlvr-a5-"))
    copied = 0
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if any(part in SKIPPED_FOLDERS for part in relative.parts[:-1]) or not path.is_file():
            continue
        if path.suffix not in COPIED_SUFFIXES or path.stat().st_size > MAX_FILE_BYTES:
            continue
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied += 1
        if copied >= MAX_FILES:
            break
    return root


def _installed(name: str) -> bool:
    """Whether a top-level package can be imported for real (looked up without the stand-in hook)."""
    return any(
        finder.find_spec(name, None) is not None
        for finder in sys.meta_path
        if not isinstance(finder, StandIns) and hasattr(finder, "find_spec")
    )


class _StandInMeta(type):
    """The type of stand-ins. While the student's modules load (or one is imported later, inside a function),
    anything goes: attributes, subscripts (`Float[...]`) and calls give more stand-ins, and a decorator returns what
    it decorates. Otherwise a call raises StandInUsed: the package is not installed here."""

    hook: StandIns | None = None

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return stand_in(f"{cls.__qualname__}.{name}")

    def __getitem__(cls, item):
        return stand_in(f"{cls.__qualname__}[...]")

    def __call__(cls, *args, **kwargs):
        if _StandInMeta.hook is not None and (_StandInMeta.hook.loading or _StandInMeta.hook.student_module_runs()):
            if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _StandInMeta):
                return args[0]  # used as a decorator: the function stays the student's
            return stand_in(f"{cls.__qualname__}()")
        package = cls.__qualname__.split(".")[0]
        raise StandInUsed(
            _(
                "{name}() was called, but {package} is not installed here (the checker stood in for it so your "
                "modules load; it never runs {package})"
            ).format(name=cls.__qualname__, package=package)
        )


def stand_in(qualname: str) -> type:
    """A stand-in class named like the thing it stands in for ('vllm.LLM')."""
    return _StandInMeta(qualname.rsplit(".", 1)[-1], (), {"__qualname__": qualname, "__module__": "rlvr.a5.stand_in"})


class _StandInModule(types.ModuleType):
    """A module whose every attribute is a stand-in."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return stand_in(f"{self.__name__}.{name}")


def _importer_file() -> str:
    """The file of the code running the import statement (the first frame outside importlib)."""
    frame = sys._getframe(2)
    while frame is not None and (
        frame.f_code.co_filename.startswith("<frozen importlib") or "importlib" in frame.f_code.co_filename
    ):
        frame = frame.f_back
    return frame.f_code.co_filename if frame is not None else ""


class StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import hook at the end of sys.meta_path: a package that student code (a file under `root`) imports and that
    is not installed here (vllm, wandb, flash_attn, the assignment's math_verify, ...) gets a stand-in module;
    `used` lists them. Other code's imports (torch, transformers probing optional packages) are left alone."""

    def __init__(self, root: Path):
        self.root = str(Path(root).resolve())
        self.used: list[str] = []
        self.loading = True
        _StandInMeta.hook = self

    def student_module_runs(self) -> bool:
        """Whether the top level of one of the student's modules is running (an import inside a function)."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "<module>" and str(Path(frame.f_code.co_filename).resolve()).startswith(
                self.root
            ):
                return True
            frame = frame.f_back
        return False

    def find_spec(self, fullname, path=None, target=None):
        """A spec for a package student code imports that is not installed, or for one of its submodules."""
        top = fullname.split(".")[0]
        if top not in self.used:
            importer = str(Path(_importer_file()).resolve()) if _importer_file() else ""
            if fullname != top or not importer.startswith(self.root) or _installed(top):
                return None
            self.used.append(top)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        """A stand-in module."""
        module = _StandInModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        """Nothing to run."""


def install_stand_ins(root: Path) -> StandIns:
    """Put the stand-in hook at the end of sys.meta_path (real packages are found first)."""
    hook = StandIns(root)
    sys.meta_path.append(hook)
    return hook


class LoadFailed(Exception):
    """tests/adapters.py (or a module it imports) could not be imported: one line naming the file."""


def load_adapters(root: Path, names) -> dict:
    """The copy's run_<name> functions by the assignment's name (the ones it has); LoadFailed with one line."""
    root = Path(root)
    for name in [m for m in sys.modules if m == "tests" or m.startswith("tests.")]:
        del sys.modules[name]  # another package's `tests` must not shadow the checkout's
    sys.path.insert(0, str(root))
    init = root / "tests" / "__init__.py"
    if not init.exists():
        init.write_text("")  # in the copy only
    importlib.invalidate_caches()
    try:
        module = importlib.import_module("tests.adapters")
    except StandInUsed as error:
        raise LoadFailed(_("importing tests/adapters.py: {error}").format(error=error)) from None
    except SyntaxError as error:
        where = _relative(error.filename, root)
        raise LoadFailed(
            _("{file}, line {line}: syntax error: {message}").format(file=where, line=error.lineno, message=error.msg)
        ) from None
    except BaseException as error:  # noqa: BLE001 - any failure at import time is the student's, in one line
        from .verdicts import last_line

        if isinstance(error, KeyboardInterrupt):
            raise
        raise LoadFailed(_("importing tests/adapters.py raised {error}").format(error=last_line(error))) from None
    return {name: getattr(module, f"run_{name}") for name in names if callable(getattr(module, f"run_{name}", None))}


def _relative(path: str | None, root: Path) -> str:
    """A path inside the copy, relative to the checkout's root."""
    if not path:
        return "?"
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return path
