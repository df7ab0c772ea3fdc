"""Command line: `python -m rlvr sft | train | reproduce`. It only dispatches: the options and argparse types come
from `rlvr.options`, the work from the modules each command names (the authors' tools are `python -m coursetools`)."""

from __future__ import annotations

import argparse
import math
import sys

from .i18n import N_, _, pad
from .options import add_config_options, argparse_in_language, build_config, output_file, positive_int, write_json

DESCRIPTION = N_("Command line: `python -m rlvr sft | train | reproduce`.")


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


def cmd_a5(args) -> int:
    """Delegate to rlvr.a5.cli (check a CS336 assignment-5 checkout)."""
    from .a5.cli import main as a5_main

    return a5_main(args.rest)


DELEGATED = {  # sub-commands that parse their own options: name -> (handler, help); one line each
    "reproduce": (cmd_reproduce, N_("regenerate every figure of the lecture")),
    "a5": (cmd_a5, N_("check your CS336 assignment-5 code and train the course's model with it (needs [a5])")),
}
SFT_HELP = {  # SFTConfig fields without a comment of their own on their line
    "seed": N_("seed of the warm-up (data and initial weights)"),
    "steps": N_("AdamW steps"),
    "batch_size": N_("teacher answers per step"),
    "warmup_steps": N_("steps of linear learning-rate warm-up"),
}


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

    for name, (func, text) in DELEGATED.items():
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m rlvr` and the `rlvr` script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with argparse_in_language():
        if argv and argv[0] in DELEGATED:  # these parse their own options
            func, _text = DELEGATED[argv[0]]
            return func(argparse.Namespace(rest=argv[1:]))
        args = parse_args(argv)
        return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
