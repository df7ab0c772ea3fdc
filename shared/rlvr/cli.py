"""Command line: `python -m rlvr sft | train | reproduce | notebooks ...`."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def _json_safe(obj):
    """Replace NaN / inf by None so the file is strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def write_json(obj, path: str | None) -> None:
    """Write obj as indented strict JSON (no-op without a path)."""
    if path:
        Path(path).write_text(json.dumps(_json_safe(obj), indent=2))
        print(f"wrote {path}")


def _pct(x) -> str:
    """0.193 -> ' 19.3%' (n/a for missing)."""
    return "   n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:5.1f}%"


def summary_lines(name: str, m: dict) -> list[str]:
    """Readable lines for one metrics dict."""
    return [f"{name:>13}: accuracy {_pct(m['accuracy'])} | think-first {_pct(m['cot_fraction'])} "
            f"(accuracy {_pct(m['cot_accuracy'])}) | direct accuracy {_pct(m['direct_accuracy'])} | "
            f"mean length {m['mean_length']:.1f}"]


def cmd_sft(args) -> int:
    """Train (or load) the warm-up and report its metrics."""
    from .sft import warm_up, warm_up_report
    warm = warm_up(args.teacher_error_rate, args.seed)
    report = warm_up_report(warm, args.prompts)
    source = "loaded from cache" if warm.from_cache else f"trained in {warm.seconds:.1f} s"
    print(f"warm-up (teacher error rate {args.teacher_error_rate}, seed {args.seed}): {source}")
    for line in summary_lines("temperature 1", report["temperature1"]) + summary_lines("greedy", report["greedy"]):
        print(line)
    write_json(report, args.json)
    return 0


def cmd_train(args) -> int:
    """Run one RL configuration from its warm-up model and report history, final metrics and timing."""
    from .train import RLConfig, final_metrics, run
    cfg = RLConfig(algo=args.algo, steps=args.steps, prompts_per_step=args.prompts_per_step,
                   group_size=args.group_size, lr=args.lr, beta=args.beta, epochs_per_batch=args.epochs_per_batch,
                   clip_eps=args.clip_eps, teacher_error_rate=args.teacher_error_rate, sft_seed=args.sft_seed,
                   seed=args.seed)
    result = run(cfg, progress=sys.stderr.isatty(), use_cache=not args.no_cache)
    final = final_metrics(result.policy, args.eval_prompts)
    first = result.history[0] if result.history else {}
    print(f"{cfg.algo}: {cfg.steps} steps of {cfg.prompts_per_step} x {cfg.group_size} answers"
          + (" (loaded from cache)" if result.from_cache else ""))
    if first:
        print(*summary_lines("first step", first), sep="\n")
    print(*summary_lines("held-out", final), sep="\n")
    print("pass@k:", ", ".join(f"@{k} {_pct(v)}" for k, v in final["pass_at_k"].items()))
    t = result.timing
    print(f"time: {t['total_s']:.1f} s (sampling {t['sampling_s']:.1f} s, training {t['training_s']:.1f} s)")
    write_json({"config": cfg.to_dict(), "history": result.history, "final": final, "timing": t}, args.json)
    return 0


def cmd_reproduce(args) -> int:
    """Delegate to rlvr.reproduce."""
    from .reproduce import main as reproduce_main
    return reproduce_main(args.rest)


def cmd_notebooks(args) -> int:
    """Delegate to rlvr.nbtools (generate | check | strip | render)."""
    from .nbtools import main as notebooks_main
    return notebooks_main(args.rest)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = argparse.ArgumentParser(prog="python -m rlvr", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sft = sub.add_parser("sft", help="train (or load) the warm-up model and print its metrics")
    sft.add_argument("--teacher-error-rate", type=float, default=0.1)
    sft.add_argument("--seed", type=int, default=0)
    sft.add_argument("--prompts", type=int, default=2000, help="held-out prompts to evaluate on")
    sft.add_argument("--json", help="write the report to this file")
    sft.set_defaults(func=cmd_sft)

    tr = sub.add_parser("train", help="run one RL configuration")
    tr.add_argument("--algo", default="grpo", choices=["reinforce", "grpo", "dr_grpo", "rft", "ppo"])
    tr.add_argument("--steps", type=int, default=200)
    tr.add_argument("--prompts-per-step", type=int, default=32)
    tr.add_argument("--group-size", type=int, default=8)
    tr.add_argument("--lr", type=float, default=1e-4)
    tr.add_argument("--beta", type=float, default=0.0)
    tr.add_argument("--epochs-per-batch", type=int, default=None, help="default: 8 for ppo, 1 otherwise")
    tr.add_argument("--clip-eps", type=float, default=0.2)
    tr.add_argument("--teacher-error-rate", type=float, default=0.1)
    tr.add_argument("--sft-seed", type=int, default=0)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--eval-prompts", type=int, default=2000)
    tr.add_argument("--no-cache", action="store_true", help="train even if this configuration is cached")
    tr.add_argument("--json", help="write config, history, final and timing to this file")
    tr.set_defaults(func=cmd_train)

    for name, func, text in [("reproduce", cmd_reproduce, "regenerate every figure of the lecture"),
                             ("notebooks", cmd_notebooks, "generate | check | strip | render the notebooks")]:
        p = sub.add_parser(name, help=text, add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m rlvr` and the `rlvr` script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in DELEGATED:  # these parse their own options
        return DELEGATED[argv[0]](argparse.Namespace(rest=argv[1:]))
    args = build_parser().parse_args(argv)
    return args.func(args)


DELEGATED = {"reproduce": cmd_reproduce, "notebooks": cmd_notebooks}


if __name__ == "__main__":
    sys.exit(main())
