"""`python -m coursetools notebooks | site | messages | lint ...`: dispatch to the tool that parses the rest."""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {  # name -> (module, its entry point taking the remaining arguments, what it does)
    "notebooks": (
        "coursetools.notebooks",
        "main",
        "generate | check | strip | render | lint | translate the notebooks",
    ),
    "site": ("coursetools.site", "main", "build the course as a static website under build/site/ (the [site] extra)"),
    "messages": ("coursetools.messages", "main", "update | check rlvr's message catalogue (rlvr/locale/)"),
    "lint": ("coursetools.notebooks", "lint_main", "list what a learner should never meet in a notebook's cells"),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: its help lists the commands; each command parses its own options."""
    parser = argparse.ArgumentParser(
        prog="python -m coursetools",
        description="The course authors' tools (the learner's package is rlvr: python -m rlvr).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for name, (_module, _function, text) in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m coursetools`; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        module, function, _text = COMMANDS[argv[0]]
        return getattr(importlib.import_module(module), function)(argv[1:])
    build_parser().parse_args(argv)  # prints the help, or a usage error (exit code 2)
    return 2
