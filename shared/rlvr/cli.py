"""Command line: `python -m rlvr sft | train | reproduce | notebooks ...`."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import math
import os
import re
import sys
import typing
from pathlib import Path


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
        print(f"wrote {path}")


def _pct(x) -> str:
    """0.193 -> ' 19.3%' (n/a for missing)."""
    return "   n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:5.1f}%"


def summary_lines(name: str, m: dict) -> list[str]:
    """Readable lines for one metrics dict."""
    return [
        f"{name:>13}: accuracy {_pct(m['accuracy'])} | think-first {_pct(m['cot_fraction'])} "
        f"(accuracy {_pct(m['cot_accuracy'])}) | direct accuracy {_pct(m['direct_accuracy'])} | "
        f"mean length {m['mean_length']:.1f}"
    ]


def cmd_sft(args) -> int:
    """Train (or load) the warm-up and report its metrics."""
    from .sft import warm_up, warm_up_report, where_from

    cfg = args.config
    warm = warm_up(cfg.teacher_error_rate, cfg.seed, cfg=cfg, progress=True)
    report = warm_up_report(warm, args.prompts)
    print(f"warm-up (teacher error rate {cfg.teacher_error_rate}, seed {cfg.seed}): {where_from(warm)}")
    for line in summary_lines("temperature 1", report["temperature1"]) + summary_lines("greedy", report["greedy"]):
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
    print(
        f"{cfg.algo}: {cfg.steps} steps of {cfg.prompts_per_step} x {cfg.group_size} answers"
        + (" (loaded from cache)" if result.from_cache else "")
    )
    if first:
        print(*summary_lines("first step", first), sep="\n")
    print(*summary_lines("held-out", final), sep="\n")
    print("pass@k:", ", ".join(f"@{k} {_pct(v)}" for k, v in final["pass_at_k"].items()))
    t = result.timing
    print(f"time: {t['total_s']:.1f} s (sampling {t['sampling_s']:.1f} s, training {t['training_s']:.1f} s)")
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
    "seed": "seed of the warm-up (data and initial weights)",
    "steps": "AdamW steps",
    "batch_size": "teacher answers per step",
    "warmup_steps": "steps of linear learning-rate warm-up",
}
_FIELD_COMMENT = re.compile(r"^\s+(?P<name>\w+): [^#]*#\s*(?P<comment>.+)$")


def field_comments(cls) -> dict[str, str]:
    """Field name -> the `# comment` on its line in the dataclass's source (the option's help text)."""
    matches = (_FIELD_COMMENT.match(line) for line in inspect.getsource(cls).splitlines())
    return {m["name"]: m["comment"].strip() for m in matches if m}


def option_kwargs(f: dataclasses.Field, hint, rule, text: str) -> dict | None:
    """add_argument keywords of one dataclass field (type and default from the dataclass), None if not a scalar."""
    kinds = {int: int, float: float, str: str, int | None: int, str | None: str}
    if hint is not bool and hint not in kinds:
        return None
    choices = rule.choices if rule is not None else ()
    allowed = f"; {rule.allowed}" if rule is not None and not choices else ""  # argparse itself lists choices
    kwargs = {"dest": f.name, "default": f.default, "help": f"{text} (default {f.default}{allowed})".replace("%", "%%")}
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
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"{text}: not writable")
    return text


def output_folder(text: str) -> Path:
    """argparse type: a folder this run can write into when it ends (made if missing; checked before any work)."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    existing = next(p for p in (path, *path.absolute().parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: {existing} is not a writable folder")
    return path


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (anything else is a usage error, exit code 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
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

    parser = argparse.ArgumentParser(prog="python -m rlvr", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sft = sub.add_parser(
        "sft",
        help="train (or load) the warm-up model and print its metrics",
        allow_abbrev=False,
        description="Options other than --teacher-error-rate and --seed give a warm-up that "
        "`train` does not start from (it uses the default SFTConfig).",
    )
    add_config_options(sft, SFTConfig, SFT_RULES, SFT_HELP)  # skips model: the Transformer's shape stays the default
    sft.add_argument(
        "--prompts",
        type=positive_int,
        default=2000,
        help="held-out prompts to evaluate on (default 2000; an integer >= 1)",
    )
    sft.add_argument("--json", type=output_file, help="write the report to this file")
    sft.set_defaults(func=cmd_sft)

    tr = sub.add_parser("train", help="run one RL configuration", allow_abbrev=False)  # --prompts != --prompts-per-step
    add_config_options(tr, RLConfig, RL_RULES)
    tr.add_argument(
        "--eval-prompts",
        type=positive_int,
        default=2000,
        help="held-out prompts of the final metrics (default 2000; an integer >= 1)",
    )
    tr.add_argument("--no-cache", action="store_true", help="train even if this configuration is cached")
    tr.add_argument("--json", type=output_file, help="write config, history, final and timing to this file")
    tr.set_defaults(func=cmd_train)

    for name, func, text in [
        ("reproduce", cmd_reproduce, "regenerate every figure of the lecture"),
        ("notebooks", cmd_notebooks, "generate | check | strip | render the notebooks"),
        ("site", cmd_site, "build the course as a static website under build/site/ (needs the [site] extra)"),
    ]:
        p = sub.add_parser(name, help=text, add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=func)
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parsed options, with args.config built and validated for sft and train (nothing is trained here)."""
    args = build_parser().parse_args(argv)
    if getattr(args, "config_class", None) is not None:
        args.config = build_config(args)
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m rlvr` and the `rlvr` script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in DELEGATED:  # these parse their own options
        return DELEGATED[argv[0]](argparse.Namespace(rest=argv[1:]))
    args = parse_args(argv)
    return args.func(args)


DELEGATED = {"reproduce": cmd_reproduce, "notebooks": cmd_notebooks, "site": cmd_site}


if __name__ == "__main__":
    sys.exit(main())
