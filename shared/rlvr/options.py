"""Command-line options, for `python -m rlvr` and `python -m rlvr.scale` alike: the options generated from the config
dataclasses (a field's type, default and `# comment` make its --option), the argparse types that check a value before
any work starts (`positive_int`, `output_file`, `output_folder`), the --json writer, and argparse's own words in the
package's language. A leaf: it imports nothing of rlvr but `rlvr.i18n`, so every command line can use it."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import json
import math
import os
import re
import typing
from pathlib import Path

from .i18n import _, ngettext

_FIELD_COMMENT = re.compile(r"^\s+(?P<name>\w+): [^#]*#\s*(?P<comment>.+)$")


# ----------------------------------------------------------------------------------------------- options from configs


def field_comments(cls) -> dict[str, str]:
    """Field name -> the `# comment` on its line in the dataclass's source (the option's help text)."""
    matches = (_FIELD_COMMENT.match(line) for line in inspect.getsource(cls).splitlines())
    return {m["name"]: m["comment"].strip() for m in matches if m}


def option_kwargs(f: dataclasses.Field, hint, rule, text: str) -> dict | None:
    """add_argument keywords of one dataclass field (type and default from the dataclass), None if not a scalar. The
    help text (a field's comment, `python -m coursetools messages update` extracts them) is in the current language."""
    kinds = {int: int, float: float, str: str, int | None: int, str | None: str}
    if hint is not bool and hint not in kinds:
        return None
    choices = rule.choices if rule is not None else ()
    allowed = f"; {_(rule.allowed)}" if rule is not None and not choices else ""  # argparse itself lists choices
    words = _("{text} (default {default}{allowed})").format(text=_(text), default=f.default, allowed=allowed)
    kwargs = {"dest": f.name, "default": f.default, "help": words.replace("%", "%%")}
    if hint is bool:
        return {**kwargs, "action": argparse.BooleanOptionalAction}
    return {**kwargs, "type": kinds[hint], **({"choices": choices} if choices else {})}


def add_config_options(
    parser: argparse.ArgumentParser, cls, rules: dict, extra_help: dict | None = None, only: tuple = ()
) -> None:
    """One --option per scalar field of the dataclass cls (or of the fields named in `only`; fields of other types,
    like SFTConfig.model, are skipped). `build_config` then builds and checks cls from them."""
    hints, comments = typing.get_type_hints(cls), {**field_comments(cls), **(extra_help or {})}
    for f in dataclasses.fields(cls):
        if only and f.name not in only:
            continue
        kwargs = option_kwargs(f, hints[f.name], rules.get(f.name), comments.get(f.name, f"{cls.__name__}.{f.name}"))
        if kwargs is not None:
            parser.add_argument("--" + f.name.replace("_", "-"), **kwargs)
    parser.set_defaults(config_class=cls, parser=parser)


def build_config(args: argparse.Namespace):
    """The validated config of a sub-command from its options; a bad value exits 2 with `error: argument --x: ...`."""
    cls = args.config_class
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    try:
        return cls(**values)
    except ValueError as err:
        name = getattr(err, "field", None)
        args.parser.error(f"argument --{name.replace('_', '-')}: {err}" if name else str(err))


# ----------------------------------------------------------------------------------------------- argparse types


def output_file(text: str) -> str:
    """argparse type: a file this run can write when it ends (checked before anything trains, nothing created)."""
    path = Path(text).expanduser()
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise argparse.ArgumentTypeError(_("{path} is a folder, not a file").format(path=text))
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(
            _("{path}: the folder {folder} does not exist").format(path=text, folder=folder)
        )
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(_("{path}: not writable").format(path=text))
    return text


def output_folder(text: str) -> Path:
    """argparse type: a folder this run can write into when it ends (made if missing; checked before any work)."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(_("{path} is a file, not a folder").format(path=text))
    existing = next(p for p in (path, *path.absolute().parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        text = _("{path}: {existing} is not a writable folder").format(path=text, existing=existing)
        raise argparse.ArgumentTypeError(text)
    return path


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (anything else is a usage error, exit code 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(_("must be an integer >= 1, got {value}").format(value=repr(text)))
    return value


# ----------------------------------------------------------------------------------------------- --json


def json_safe(obj):
    """Replace NaN / inf by None so the file is strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def write_json(obj, path: str | None) -> None:
    """Write obj as indented strict JSON (no-op without a path)."""
    if path:
        Path(path).write_text(json.dumps(json_safe(obj), indent=2))
        print(_("wrote {path}").format(path=path))


# ----------------------------------------------------------------------------------------------- argparse's words


@contextlib.contextmanager
def argparse_in_language():
    """argparse's own words ('usage:', 'show this help message and exit', its errors) in the package's language
    inside the block: argparse looks its `_` and `ngettext` up at call time, so they are swapped for the block only
    (the catalogue holds them: rlvr/argparse_words.py)."""
    saved = argparse._, argparse.ngettext
    argparse._, argparse.ngettext = _, ngettext
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved
