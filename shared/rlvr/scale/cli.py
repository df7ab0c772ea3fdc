"""`python -m rlvr.scale`: our GRPO on TRL (our GPT-2 or any causal LM by path, on one or several CPU processes), and
`python -m rlvr.scale export-verl OUT/`: our task, verifier and knobs as files verl reads.

Bad input (a missing model folder, an OUT that is a file, --processes 0, ...) is a usage error: one `error:` line,
exit code 2, before anything is loaded or trained.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..options import add_config_options, build_config, output_file, output_folder, positive_int
from ..config import pick
from ..task import MAX_NEW_TOKENS
from ..train import RL_RULES, RLConfig
from .common import require_scale
from .hf_model import ModelFolderError, check_model_dir

RUN_FIELDS = ("prompts_per_step", "group_size", "lr", "beta", "clip_eps", "temperature", "seed")  # RLConfig's options

RUN_DESCRIPTION = (
    "Warm up a GPT-2 built in code (or load any causal LM with --model), run TRL's GRPO on our task "
    "on --processes CPU processes, print the think-first share and accuracy before and after."
)


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def run_parser() -> argparse.ArgumentParser:
    """Options of the GRPO run."""
    p = argparse.ArgumentParser(
        prog="python -m rlvr.scale",
        description=RUN_DESCRIPTION,
        allow_abbrev=False,
        epilog="python -m rlvr.scale export-verl --help: the verl export",
    )
    p.add_argument("--steps", type=positive_int, default=pick(40, 8), help="GRPO steps (default %(default)s)")
    add_config_options(p, RLConfig, RL_RULES, only=RUN_FIELDS)  # checked by RLConfig, as `python -m rlvr train`
    p.add_argument(
        "--processes",
        type=positive_int,
        default=1,
        help="CPU processes (gloo); each generates prompts-per-step / processes groups (default 1)",
    )
    p.add_argument(
        "--model",
        help="a local Hugging Face causal LM folder (config.json, weights, tokenizer); "
        "default: our GPT-2, warmed up (cached)",
    )
    p.add_argument(
        "--max-completion-length",
        type=positive_int,
        default=MAX_NEW_TOKENS,
        help=f"tokens per answer (default {MAX_NEW_TOKENS})",
    )
    p.add_argument(
        "--eval-prompts",
        type=non_negative_int,
        default=pick(1000, 300),
        help="held-out prompts evaluated before and after (0: skip; default %(default)s)",
    )
    p.add_argument("--save", type=output_folder, help="write the trained model and tokenizer to this folder")
    p.add_argument("--json", type=output_file, help="write config, history, step seconds and evaluations to this file")
    return p


def parse_run(argv: list[str]) -> argparse.Namespace:
    """Options of the run, checked (a usage error exits 2 before anything loads)."""
    parser = run_parser()
    args = parser.parse_args(argv)
    args.config = build_config(args)  # an RLConfig of GRPO: a bad value is `error: argument --x: ...`
    if args.prompts_per_step % args.processes:
        parser.error(
            f"argument --processes: must divide --prompts-per-step ({args.prompts_per_step}) so that every "
            f"process gets whole groups, got {args.processes}"
        )
    if args.model is not None:
        try:
            check_model_dir(args.model)
        except ModelFolderError as err:
            parser.error(f"argument --model: {err}")
    return args


def export_parser() -> argparse.ArgumentParser:
    """Options of export-verl: OUT and every RLConfig field (the same options as `python -m rlvr train`)."""
    p = argparse.ArgumentParser(
        prog="python -m rlvr.scale export-verl",
        allow_abbrev=False,
        description="Write train/test parquet in verl's format, a reward-function file around "
        "our verifier and verl overrides for this RLConfig to the folder OUT.",
    )
    p.add_argument("out", metavar="OUT", help="folder to write (created if missing)")
    add_config_options(p, RLConfig, RL_RULES)
    p.add_argument("--train-prompts", type=positive_int, help="training prompts (default: steps x prompts-per-step)")
    p.add_argument("--test-prompts", type=positive_int, default=1000, help="held-out prompts (default 1000)")
    return p


def parse_export(argv: list[str]) -> argparse.Namespace:
    """Options of export-verl with args.config built and checked (usage errors exit 2 before anything is written)."""
    from .verl_export import check_exportable

    parser = export_parser()
    args = parser.parse_args(argv)
    args.config = build_config(args)
    try:
        check_exportable(args.config)
    except ValueError as err:
        parser.error(f"argument --{err.field.replace('_', '-')}: {err}")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        parser.error(f"argument OUT: {args.out} is a file, not a folder")
    return args


def _fmt(metrics: dict) -> str:
    """'think-first 0.48, accuracy 0.22' of an evaluation."""
    return f"think-first {metrics['think_share']:.2f}, accuracy {metrics['accuracy']:.2f}"


def starting_model(args, tmp: Path):
    """(model, tokenizer, folder the ranks load): --model, or our warmed-up GPT-2 (saved to tmp for several ranks)."""
    from .hf_model import load_causal_lm, save_model
    from .tiny_gpt2 import build_tokenizer, num_parameters, warm_up

    if args.model is not None:
        model, tokenizer = load_causal_lm(args.model)
        print(
            f"model {args.model}: {num_parameters(model):,} parameters, chat template: "
            f"{'yes' if getattr(tokenizer, 'chat_template', None) else 'no'}"
        )
        return model, tokenizer, Path(args.model)
    start = time.perf_counter()
    model, losses = warm_up(seed=args.seed, log_every=250)
    print(
        f"warm-up GPT-2 ({num_parameters(model):,} parameters): final SFT loss {losses[-1]:.3f} "
        f"({time.perf_counter() - start:.0f} s incl. cache)"
    )
    tokenizer = build_tokenizer()
    folder = save_model(model, tokenizer, tmp / "start") if args.processes > 1 else None
    return model, tokenizer, folder


def train(args, cfg, model, tokenizer, folder: Path | None, tmp: Path):
    """GRPO on args.processes processes: (trained model, history, step seconds of rank 0)."""
    from .hf_model import load_causal_lm
    from .processes import run_processes
    from .trl_bridge import run_grpo

    if cfg.processes == 1:
        run = run_grpo(model, cfg, tokenizer=tokenizer)
        return run.model, run.history, run.step_seconds
    ranks = run_processes(folder, cfg, save_dir=tmp / "trained")
    same = len({r.parameter_hash for r in ranks}) == 1
    print(
        f"{cfg.processes} processes ({ranks[0].threads} torch thread(s) each): parameters identical on every rank "
        f"after training: {'yes' if same else 'NO'}"
    )
    model, _ = load_causal_lm(tmp / "trained")
    return model, ranks[0].history, ranks[0].step_seconds


def run(args) -> dict:
    """The GRPO command: load or warm up, evaluate, train on TRL, evaluate; prints a summary, returns the results."""
    require_scale()
    import torch
    import transformers
    import trl

    from .hf_model import evaluate_text_model
    from .trl_bridge import TRLRunConfig

    print(f"TRL {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}")
    cfg = TRLRunConfig.from_rl(
        args.config, args.steps, processes=args.processes, max_completion_length=args.max_completion_length
    )

    def evaluate(model, tokenizer):
        return (
            evaluate_text_model(model, tokenizer, args.eval_prompts, max_new_tokens=cfg.max_completion_length)
            if args.eval_prompts
            else None
        )

    with tempfile.TemporaryDirectory(prefix="rlvr-scale-") as tmp:
        model, tokenizer, folder = starting_model(args, Path(tmp))
        before = evaluate(model, tokenizer)
        if before:
            print(f"before GRPO: {_fmt(before)}")
        model, history, seconds = train(args, cfg, model, tokenizer, folder, Path(tmp))
    every = max(1, len(history) // 10)
    for h in history:  # (the logged loss is ~0 on-policy: the advantages have zero mean in every group)
        if (h["step"] + 1) % every == 0 or h["step"] == 0:
            print(
                f"  step {h['step'] + 1:3d}: think-first {h['think_share']:.2f}  accuracy {h['accuracy']:.2f}  "
                f"mean length {h['mean_length']:.1f}"
            )
    after = evaluate(model, tokenizer)
    median = float(np.median(seconds[1:] if len(seconds) > 1 else seconds))
    print(
        f"after {cfg.steps} TRL GRPO steps on {cfg.processes} process(es): "
        f"{_fmt(after) + '  ' if after else ''}(median {median:.2f} s per {cfg.prompts_per_step} x "
        f"{cfg.group_size} step, first step not counted)"
    )
    if args.save:
        from .hf_model import save_model

        print(f"trained model saved to {save_model(model, tokenizer, args.save)}")
    result = {
        "config": asdict(cfg),
        "model": args.model or "tiny GPT-2",
        "before": before,
        "after": after,
        "history": history,
        "step_seconds": seconds,
        "median_step_seconds": median,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result


def export(args) -> dict:
    """The export-verl command: write the files, print what went where."""
    from .verl_export import export_verl, verl_differences

    cfg = args.config
    paths = export_verl(args.out, cfg, n_train=args.train_prompts, n_test=args.test_prompts)
    for name, path in paths.items():
        print(f"{name:>9}: {path}")
    print(f"run on a GPU machine with verl installed: MODEL=/path/to/instruct-model bash {paths['run']}")
    for note in verl_differences(cfg):
        print(f"note: {note}")
    if cfg.lr > 1e-5:
        print(f"note: lr {cfg.lr:g} is RLConfig's for a 70k-parameter model; a 0.5B-1.5B model wants ~1e-6 (--lr 1e-6)")
    return paths


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m rlvr.scale [export-verl OUT]`."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["export-verl"]:
        export(parse_export(argv[1:]))
    else:
        run(parse_run(argv))
    return 0
