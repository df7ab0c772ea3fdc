"""`python -m rlvr a5 PATH [--steps N] [--json FILE] [--png FILE] [--seed S]`: check a CS336 assignment-5 checkout."""

from __future__ import annotations

import argparse
import sys

from ..i18n import N_, _

DESCRIPTION = N_(
    "Check a CS336 assignment-5 checkout (spring 2025 or 2026): each function of tests/adapters.py against a "
    "reference, then the course's model trained with your code beside the reference run."
)


def build_parser() -> argparse.ArgumentParser:
    """The options of `rlvr a5`."""
    from ..options import output_file, positive_int

    parser = argparse.ArgumentParser(prog="python -m rlvr a5", description=_(DESCRIPTION))
    parser.add_argument("path", help=_("your assignment-5 checkout (the folder that holds tests/adapters.py)"))
    parser.add_argument(
        "--steps", type=positive_int, default=200, help=_("RL steps to train with your code (default 200)")
    )
    parser.add_argument("--seed", type=int, default=0, help=_("seed of both runs and of the warm-up (default 0)"))
    parser.add_argument("--json", type=output_file, help=_("write the verdicts and final rates to this file"))
    parser.add_argument(
        "--png", type=output_file, default="a5_curves.png", help=_("the curves' file (default a5_curves.png)")
    )
    parser.add_argument("--no-train", action="store_true", help=_("check the functions only"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the check; print the report; write the JSON and the PNG. Exit 0 when every function is correct, 1 when
    some is not, 2 for a path that cannot be checked."""
    from ..options import write_json
    from .edition import CheckoutError

    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.seed < 0:
        build_parser().error(_("argument --seed: must be >= 0, got {value}").format(value=args.seed))
    try:
        from .hf import require_transformers

        require_transformers()
        from .report import report_lines
        from .session import Progress, check_checkout

        report = check_checkout(
            args.path, steps=args.steps, seed=args.seed, train=not args.no_train, progress=Progress(say=_progress)
        )
    except (CheckoutError, ImportError) as error:
        print(_("error: {error}").format(error=error), file=sys.stderr)
        return 2
    print("\n".join(report_lines(report)))
    if report.training is not None and report.training.history:
        from ..figures.a5 import save_runs

        save_runs(args.png, report.training.history, report.training.reference)
        print(_("wrote {path}").format(path=args.png))
    write_json(report.to_json(), args.json)
    return 0 if all(v.verdict == "correct" for v in report.verdicts.values()) else 1


def _progress(line: str) -> None:
    """A progress line on stderr (the report itself goes to stdout)."""
    print(line, file=sys.stderr, flush=True)
