"""The subprocess that runs a student's code: `python -m rlvr.a5.worker JOB.json`.

It imports the copy's tests/adapters.py (with stand-ins for GPU-only packages), then does the job's tasks in order —
`check:<name>` (one function's verdict) and `train` (the run with the student's code) — and writes one JSON object
per line to its protocol stream (the original stdout; the student's own prints go to stderr): `loaded` or
`load_failed`, then `start` before each task, `verdict`, `step` (each training step's metrics) and `trained`, and
`done` at the end. The parent (`rlvr.a5.session`) restarts it without the task it was on if it dies or hangs.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path


def _json_safe(obj):
    """NaN / inf as None, tuples as lists (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


class Protocol:
    """The worker's line-per-event stream, on a duplicate of the original stdout; stdout itself then goes to stderr
    so that a student's print cannot corrupt it."""

    def __init__(self):
        self.stream = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def send(self, event: str, **fields) -> None:
        """One event as one line."""
        self.stream.write(json.dumps(_json_safe({"event": event, **fields})) + "\n")
        self.stream.flush()


def run(job: dict, protocol: Protocol) -> None:
    """Load the adapters, then each task of the job."""
    from ..checks.guard import OutputTail
    from ..cs336 import EDITIONS
    from . import sandbox

    stand_ins = sandbox.install_stand_ins(Path(job["root"]))
    edition = job["edition"]
    try:
        functions = sandbox.load_adapters(Path(job["root"]), EDITIONS[edition])
    except sandbox.LoadFailed as failure:
        protocol.send("load_failed", message=str(failure))
        return
    stand_ins.loading = False  # from now on a call into a stood-in package fails with one line
    protocol.send("loaded", stand_ins=stand_ins.used, found=sorted(functions))
    checks = None
    job.setdefault("verdicts", {})
    for task in job["tasks"]:
        protocol.send("start", task=task)
        if task.startswith("check:"):
            checks = checks or _checks(edition)
            name = task.split(":", 1)[1]
            verdict = _judge(checks[name], functions.get(name), name in job.get("stubs", ()))
            job["verdicts"][name] = verdict.verdict
            protocol.send(
                "verdict", name=name, verdict=verdict.verdict, message=verdict.message, mistake=verdict.mistake
            )
        elif task == "train":
            _train(job, edition, functions, protocol, OutputTail())
    protocol.send("done", stand_ins=stand_ins.used)


def _checks(edition: str) -> dict:
    """The edition's checks by name."""
    from .library import checks

    return {check.name: check for check in checks(edition)}


def _judge(check, fn, stub: bool):
    """A verdict, also when the checker itself fails (said as an error, never a traceback)."""
    from ..checks.guard import one_line_error
    from .verdicts import Verdict, judge

    try:
        return judge(check, fn, stub)
    except Exception as error:  # noqa: BLE001 - a checker bug must still leave a one-line verdict
        return Verdict(check.name, "error", f"internal checker error: {one_line_error(error)}")


def _train(job: dict, edition: str, functions: dict, protocol: Protocol, printed) -> None:
    """Train with the student's functions; a `step` event per step, then `trained` with the held-out metrics."""
    from .training import NEEDS, a5_config, final_rates, train_student

    cfg = a5_config(job["steps"], job["seed"])

    def on_step(step: int, total: int, history: list) -> None:
        protocol.send("step", metrics=_kept(history[-1]))

    missing = [name for name in NEEDS[edition] if job.get("verdicts", {}).get(name) == "missing"]
    if missing:
        protocol.send("trained", skipped=missing, crash=None, final=None, printed="")
        return
    run = train_student(edition, functions, cfg, on_step, printed)
    final = final_rates(run.policy, job["eval_prompts"]) if run.policy is not None and run.crash is None else None
    protocol.send("trained", skipped=[], crash=run.crash, final=final, printed=printed.summary())


def _kept(metrics: dict) -> dict:
    """A step's metrics without its per-update lists (one line stays short)."""
    return {k: v for k, v in metrics.items() if not isinstance(v, (list, tuple))}


def main(argv: list[str] | None = None) -> int:
    """Entry point: the job file's path is the one argument."""
    argv = sys.argv[1:] if argv is None else argv
    protocol = Protocol()
    sys.dont_write_bytecode = True
    os.environ.pop("RLVR_STRICT", None)  # a wrong student function is a verdict here, not an AssertionError
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    os.chdir(job["root"])  # relative paths in student code resolve inside the copy
    import torch

    torch.manual_seed(job["seed"])
    run(job, protocol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
