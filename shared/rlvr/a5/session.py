"""One check of a student's checkout, from the path to the Report: read the adapters (no student code runs), copy the
checkout, run the worker subprocess (restarting it without the task it was on when it dies or hangs), train the
reference, read the two runs side by side."""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..config import THREADS_ENV, one_thread
from ..i18n import _, join, language
from . import diagnose
from .edition import inspect_checkout
from .training import NEEDS, a5_config
from .library import DEPENDS
from .verdicts import Verdict, blame_dependencies

CHECK_TASK_S = 180.0  # a function's whole check (its cases, each call limited on its own)
STEP_S = 120.0  # between two training steps (the first one includes loading)
LOAD_S = 120.0  # importing torch, transformers and the student's modules


@dataclass
class TrainingReport:
    """The student's run and the reference's, side by side."""

    steps: int  # steps the student's run completed
    history: list[dict]
    reference: list[dict]
    final: dict | None  # held-out think_first and accuracy of the student's model (None: not trained to the end)
    reference_final: dict
    crash: str | None = None
    skipped: list[str] = field(default_factory=list)  # functions still missing, so nothing was trained
    findings: list[str] = field(default_factory=list)  # diagnose.read_run's lines
    printed: str = ""  # what the student's code printed while training (the first lines)


@dataclass
class Report:
    """What `rlvr a5 PATH` found: the edition, a verdict per function, notes, and the training."""

    checkout: str
    edition: str
    verdicts: dict[str, Verdict]
    notes: list[str] = field(default_factory=list)
    training: TrainingReport | None = None
    stand_ins: list[str] = field(default_factory=list)  # packages the student's code imports, stood in for

    def to_json(self) -> dict:
        """Exactly the schema of issue 42."""
        training = self.training
        return {
            "edition": self.edition,
            "functions": {name: v.to_json() for name, v in self.verdicts.items()},
            "training": {
                "steps": training.steps if training else 0,
                "final": _rates(training.final if training else None),
                "reference": _rates(training.reference_final if training else None),
            },
        }


def _rates(rates: dict | None) -> dict:
    """{"think_first": float, "accuracy": float} (NaN where unknown, written as null by the strict JSON writer)."""
    rates = rates or {}
    return {key: float(rates.get(key, math.nan)) for key in ("think_first", "accuracy")}


class Worker:
    """A worker subprocess on a job, read event by event (a reader thread feeds a queue)."""

    def __init__(self, job: dict, folder: Path):
        path = folder / f"job-{time.monotonic_ns()}.json"
        path.write_text(json.dumps(job), encoding="utf-8")
        self.stderr = open(folder / "worker-stderr.txt", "a+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rlvr.a5.worker", str(path)],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            stdin=subprocess.DEVNULL,
            env=worker_environment(),
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """Every protocol line as an event; None when the stream ends."""
        for line in self.process.stdout:
            try:
                self.events.put(json.loads(line))
            except json.JSONDecodeError:
                continue
        self.events.put(None)

    def next(self, seconds: float) -> dict | None | str:
        """The next event, None when the worker ended, 'timeout' after `seconds` without one."""
        try:
            return self.events.get(timeout=seconds)
        except queue.Empty:
            return "timeout"

    def stop(self) -> str:
        """End the worker (it is ours: killed by its own id); its last stderr line."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.stderr.flush()
        self.stderr.seek(0)
        lines = [line.strip() for line in self.stderr.read().splitlines() if line.strip()]
        self.stderr.close()
        return lines[-1] if lines else ""


def worker_environment() -> dict:
    """The worker's environment: this rlvr first on the path, no bytecode written, offline Hugging Face, the
    current language."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    env.update(PYTHONDONTWRITEBYTECODE="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", RLVR_LANG=language())
    env[THREADS_ENV] = "1"  # the reference trains in this process meanwhile: one core each
    env.pop("RLVR_STRICT", None)
    return env


@dataclass
class Progress:
    """What the session tells its caller as it goes (the CLI prints these lines)."""

    say: Callable[[str], None] = lambda line: None
    on_step: Callable[[int, int, list], None] | None = None


def run_worker(job: dict, folder: Path, report: Report, progress: Progress, history: list) -> dict:
    """Run the job's tasks, restarting the worker without the task it died or hung on; returns the `trained` event
    (or one made up from a crash)."""
    remaining, trained = list(job["tasks"]), {}
    while remaining:
        worker, current = Worker({**job, "tasks": remaining}, folder), None
        limit = LOAD_S
        while True:
            event = worker.next(limit)
            if event is None or event == "timeout":
                last = worker.stop()
                _lost(report, job, current, event == "timeout", limit, last, history, trained)
                if current is None:  # died before any task: the same would happen again
                    return trained
                remaining = remaining[remaining.index(current) + 1 :]
                break
            kind = event["event"]
            if kind == "load_failed":
                worker.stop()
                report.notes.append(event["message"])
                for name in report.verdicts:
                    report.verdicts[name] = Verdict(name, "error", _("not checked: {why}").format(why=event["message"]))
                return trained
            if kind == "loaded":
                note_stand_ins(report, event["stand_ins"])
            elif kind == "start":
                current = event["task"]
                limit = CHECK_TASK_S if current.startswith("check:") else STEP_S
            elif kind == "verdict":
                verdict = Verdict(event["name"], event["verdict"], event["message"], event.get("mistake", ""))
                report.verdicts[event["name"]] = verdict
                job.setdefault("verdicts", {})[event["name"]] = verdict.verdict
                progress.say(verdict_line(verdict))
            elif kind == "step":
                history.append(_floats(event["metrics"]))
                if progress.on_step is not None:
                    progress.on_step(len(history), job["steps"], history)
            elif kind == "trained":
                trained = event
            elif kind == "done":
                worker.stop()
                note_stand_ins(report, event.get("stand_ins") or [])
                return trained
    return trained


def _lost(report: Report, job: dict, task, timed_out: bool, limit: float, last: str, history, trained) -> None:
    """Say in one line what the worker was doing when it died or hung."""
    why = (
        _("it did not finish within {s} s (stopped there)").format(s=f"{limit:g}")
        if timed_out
        else _("the process running it ended ({last})").format(last=last or _("no message"))
    )
    if task is None:
        report.notes.append(_("importing tests/adapters.py: {why}").format(why=why))
        for name in report.verdicts:
            report.verdicts[name] = Verdict(name, "error", _("not checked: {why}").format(why=why))
    elif task.startswith("check:"):
        name = task.split(":", 1)[1]
        report.verdicts[name] = Verdict(name, "error", why)
    else:
        trained.update(crash=_("step {step}: {why}").format(step=len(history), why=why), final=None, skipped=[])


def note_stand_ins(report: Report, names: list[str]) -> None:
    """The one note saying which packages were stood in for (updated when a later import adds one)."""
    new = [name for name in names if name not in report.stand_ins]
    if not new:
        return
    if report.stand_ins:
        report.notes.remove(stand_in_note(report.stand_ins))
    report.stand_ins += new
    report.notes.append(stand_in_note(report.stand_ins))


def stand_in_note(names: list[str]) -> str:
    """The one line saying which packages were stood in for."""
    return _(
        "{names} not installed here: the checker stood in for them so your modules load; a call into them fails "
        "with a clear line (the checker never runs them)"
    ).format(names=join(names))


def verdict_line(verdict: Verdict) -> str:
    """'  compute_entropy: correct' as printed while checking."""
    from .verdicts import VERDICT_WORDS

    return f"  {verdict.name}: {_(VERDICT_WORDS[verdict.verdict])}"


def _floats(metrics: dict) -> dict:
    """JSON's None back to NaN."""
    return {k: (math.nan if v is None else v) for k, v in metrics.items()}


def reference_run(steps: int, seed: int, eval_prompts: int) -> tuple[list[dict], dict, dict]:
    """The reference: the package's run of the same config (through the checkpoint cache), its held-out rates, and
    the held-out rates of the warm-up both runs start from."""
    from ..train import run, warm_start
    from .training import final_rates

    cfg = a5_config(steps, seed)
    result = run(cfg, progress=False)
    return result.history, final_rates(result.policy, eval_prompts), final_rates(warm_start(cfg).model, eval_prompts)


def check_checkout(
    checkout, steps: int = 200, seed: int = 0, eval_prompts: int = 2000, train: bool = True, progress=None
) -> Report:
    """The whole check (CheckoutError for a path that cannot be one: raised before any work)."""
    progress = progress or Progress()
    adapters = inspect_checkout(checkout)
    report = Report(str(checkout), adapters.edition, {})
    for name in adapters.functions:
        report.verdicts[name] = Verdict(name, "missing", _("no run_{name} in tests/adapters.py").format(name=name))
    tasks = [f"check:{name}" for name in adapters.functions if name in adapters.parameters]
    trainable = train and all(
        name in adapters.parameters and name not in adapters.stubs for name in NEEDS[report.edition]
    )
    with tempfile.TemporaryDirectory(prefix="rlvr-a5-") as folder, ThreadPoolExecutor(1) as pool, one_thread():
        reference = pool.submit(reference_run, steps, seed, eval_prompts) if train else None  # beside the worker
        from .sandbox import copy_checkout

        root = copy_checkout(checkout, Path(folder) / "checkout")
        job = {
            "root": str(root),
            "edition": adapters.edition,
            "tasks": tasks + (["train"] if trainable else []),
            "stubs": sorted(adapters.stubs),
            "steps": steps,
            "seed": seed,
            "eval_prompts": eval_prompts,
        }
        history: list[dict] = []
        trained = run_worker(job, Path(folder), report, progress, history) if job["tasks"] else {}
        blame_dependencies(report.verdicts, DEPENDS[report.edition])
        if reference is not None:
            report.training = training_report(report, trained, history, reference.result(), steps, seed, trainable)
    return report


def training_report(report, trained: dict, history, reference_of, steps, seed, trainable) -> TrainingReport:
    """The student's run read beside the reference's. `final` is the held-out rates of the student's model when it
    trained to the end; the last step's batch rates when it stopped early; the warm-up's when nothing trained."""
    reference, reference_final, warm_final = reference_of
    skipped = list(trained.get("skipped") or [])
    if not trainable or not trained:
        skipped = [n for n in NEEDS[report.edition] if report.verdicts[n].verdict in ("missing", "error")] or list(
            NEEDS[report.edition]
        )
    final, crash = trained.get("final"), trained.get("crash")
    if final is None and history:
        final = {"think_first": history[-1]["cot_fraction"], "accuracy": history[-1]["accuracy"]}
    elif final is None:
        final = warm_final
    out = TrainingReport(
        len(history), history, reference, final, reference_final, crash, skipped if not history else [],
        printed=trained.get("printed") or "",
    )  # fmt: skip
    if history:
        out.findings = diagnose.read_run(history, reference, crash, a5_config(steps, seed))
    return out
