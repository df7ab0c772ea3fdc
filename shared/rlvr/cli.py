"""Command line: `python -m rlvr sft | train | reproduce | notebooks ...`."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import json
import math
import os
import re
import sys
import typing
from pathlib import Path

from .i18n import N_, _, ngettext, pad

DESCRIPTION = N_("Command line: `python -m rlvr sft | train | reproduce | notebooks ...`.")


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


def _pct(x) -> str:
    """0.193 -> ' 19.3%' (n/a for missing)."""
    return "   n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:5.1f}%"


def summary_lines(name: str, m: dict) -> list[str]:
    """Readable lines for one metrics dict."""
    text = _(
        "{name}: accuracy {accuracy} | think-first {cot} (accuracy {cot_accuracy}) | direct accuracy {direct} | "
        "mean length {length}"
    )
    values = dict(accuracy=_pct(m["accuracy"]), cot=_pct(m["cot_fraction"]), cot_accuracy=_pct(m["cot_accuracy"]))
    values.update(direct=_pct(m["direct_accuracy"]), length=f"{m['mean_length']:.1f}")
    return [text.format(name=pad(_(name), 13, ">"), **values)]


def cmd_sft(args) -> int:
    """Train (or load) the warm-up and report its metrics."""
    from .sft import warm_up, warm_up_report, where_from

    cfg = args.config
    warm = warm_up(cfg.teacher_error_rate, cfg.seed, cfg=cfg, progress=True)
    report = warm_up_report(warm, args.prompts)
    text = _("warm-up (teacher error rate {rate}, seed {seed}): {where}")
    print(text.format(rate=cfg.teacher_error_rate, seed=cfg.seed, where=where_from(warm)))
    lines = summary_lines(N_("temperature 1"), report["temperature1"]) + summary_lines(N_("greedy"), report["greedy"])
    for line in lines:
        print(line)
    write_json(report, args.json)
    return 0


def cmd_train(args) -> int:
    """Run one RL configuration from its warm-up model and report history, final metrics and timing."""
    from .signals import Watch, failures, warning_line
    from .train import final_metrics, run

    cfg = args.config
    watch = Watch(lambda line: print(line, file=sys.stderr, flush=True))  # a failure signature, when it first shows
    result = run(cfg, on_step=watch, progress=sys.stderr.isatty(), use_cache=not args.no_cache)
    final = final_metrics(result.policy, args.eval_prompts)
    first = result.history[0] if result.history else {}
    text = _("{algo}: {steps} steps of {prompts} x {group} answers").format(
        algo=cfg.algo, steps=cfg.steps, prompts=cfg.prompts_per_step, group=cfg.group_size
    )
    print(text + (_(" (loaded from cache)") if result.from_cache else ""))
    if first:
        print(*summary_lines(N_("first step"), first), sep="\n")
    print(*summary_lines(N_("held-out"), final), sep="\n")
    print("pass@k:", ", ".join(f"@{k} {_pct(v)}" for k, v in final["pass_at_k"].items()))
    t = result.timing
    seconds = {key: f"{t[key + '_s']:.1f}" for key in ("total", "sampling", "training")}
    print(_("time: {total} s (sampling {sampling} s, training {training} s)").format(**seconds))
    for failure in failures(result.history):  # again at the end, where the summary is read
        print(warning_line(failure), file=sys.stderr)
    write_json({"config": cfg.to_dict(), "history": result.history, "final": final, "timing": t}, args.json)
    return 0


def cmd_reproduce(args) -> int:
    """Delegate to rlvr.reproduce."""
    from .reproduce import main as reproduce_main

    return reproduce_main(args.rest)


def cmd_site(args) -> int:
    """Delegate to rlvr.site (the course as a static website)."""
    from .site import main as site_main

    return site_main(args.rest)


def cmd_notebooks(args) -> int:
    """Delegate to rlvr.nbtools (generate | check | strip | render)."""
    from .nbtools import main as notebooks_main

    return notebooks_main(args.rest)


# ----------------------------------------------------------------------------------------------- options from configs
SFT_HELP = {  # SFTConfig fields without a comment of their own on their line
    "seed": N_("seed of the warm-up (data and initial weights)"),
    "steps": N_("AdamW steps"),
    "batch_size": N_("teacher answers per step"),
    "warmup_steps": N_("steps of linear learning-rate warm-up"),
}
_FIELD_COMMENT = re.compile(r"^\s+(?P<name>\w+): [^#]*#\s*(?P<comment>.+)$")


def field_comments(cls) -> dict[str, str]:
    """Field name -> the `# comment` on its line in the dataclass's source (the option's help text)."""
    matches = (_FIELD_COMMENT.match(line) for line in inspect.getsource(cls).splitlines())
    return {m["name"]: m["comment"].strip() for m in matches if m}


def option_kwargs(f: dataclasses.Field, hint, rule, text: str) -> dict | None:
    """add_argument keywords of one dataclass field (type and default from the dataclass), None if not a scalar. The
    help text (a field's comment, `python -m rlvr messages update` extracts them) is in the current language."""
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


def build_config(args: argparse.Namespace):
    """The validated config of a sub-command from its options; a bad value exits 2 with `error: argument --x: ...`."""
    cls = args.config_class
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    try:
        return cls(**values)
    except ValueError as err:
        name = getattr(err, "field", None)
        args.parser.error(f"argument --{name.replace('_', '-')}: {err}" if name else str(err))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command (the options of sft and train come from SFTConfig and RLConfig)."""
    from .sft import SFT_RULES, SFTConfig
    from .train import RL_RULES, RLConfig

    parser = argparse.ArgumentParser(prog="python -m rlvr", description=_(DESCRIPTION))
    sub = parser.add_subparsers(dest="command", required=True)

    sft = sub.add_parser(
        "sft",
        help=_("train (or load) the warm-up model and print its metrics"),
        allow_abbrev=False,
        description=_(
            "Options other than --teacher-error-rate and --seed give a warm-up that `train` does not start from (it "
            "uses the default SFTConfig)."
        ),
    )
    add_config_options(sft, SFTConfig, SFT_RULES, SFT_HELP)  # skips model: the Transformer's shape stays the default
    sft.add_argument(
        "--prompts",
        type=positive_int,
        default=2000,
        help=_("held-out prompts to evaluate on (default 2000; an integer >= 1)"),
    )
    sft.add_argument("--json", type=output_file, help=_("write the report to this file"))
    sft.set_defaults(func=cmd_sft)

    tr = sub.add_parser("train", help=_("run one RL configuration"), allow_abbrev=False)  # --prompts: not abbreviated
    add_config_options(tr, RLConfig, RL_RULES)
    tr.add_argument(
        "--eval-prompts",
        type=positive_int,
        default=2000,
        help=_("held-out prompts of the final metrics (default 2000; an integer >= 1)"),
    )
    tr.add_argument("--no-cache", action="store_true", help=_("train even if this configuration is cached"))
    tr.add_argument("--json", type=output_file, help=_("write config, history, final and timing to this file"))
    tr.set_defaults(func=cmd_train)

    for name, func, text in [
        ("reproduce", cmd_reproduce, N_("regenerate every figure of the lecture")),
        ("notebooks", cmd_notebooks, N_("generate | check | strip | render | lint | translate the notebooks")),
        ("site", cmd_site, N_("build the course as a static website under build/site/ (needs the [site] extra)")),
        ("messages", cmd_messages, N_("update | check the package's message catalogues (needs the [i18n] extra)")),
    ]:
        p = sub.add_parser(name, help=_(text), add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=func)
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parsed options, with args.config built and validated for sft and train (nothing is trained here)."""
    args = build_parser().parse_args(argv)
    if getattr(args, "config_class", None) is not None:
        args.config = build_config(args)
    return args


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


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m rlvr` and the `rlvr` script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with argparse_in_language():
        if argv and argv[0] in DELEGATED:  # these parse their own options
            return DELEGATED[argv[0]](argparse.Namespace(rest=argv[1:]))
        args = parse_args(argv)
        return args.func(args)


def cmd_messages(args) -> int:
    """Delegate to rlvr.messages (the package's own catalogue: update | check)."""
    from .messages import main as messages_main

    return messages_main(args.rest)


DELEGATED = {"reproduce": cmd_reproduce, "notebooks": cmd_notebooks, "site": cmd_site, "messages": cmd_messages}


if __name__ == "__main__":
    sys.exit(main())
