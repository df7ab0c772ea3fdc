"""A student's function through its check: one verdict (correct, wrong, missing, error) and one line saying why.

- correct: every case agrees with our reference;
- wrong: a case disagrees; the line names the mistake when the library knows it, else shows the smallest failing case;
  a wrong function that calls one already found wrong is blamed on that one first;
- missing: still the starter's `raise NotImplementedError`;
- error: it raised (the exception's last line), ran out of time, or could not be called.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Callable

from ..checks.core import Outcome
from ..checks.guard import TimeLimitExceeded, one_line_error
from ..i18n import N_, _, join
from .harness import WrongOutput
from .library import FunctionCheck

VERDICTS = ("correct", "wrong", "missing", "error")
COPY_MARK = "/rlvr-a5-"  # in the path of every file of the checkout's copy (rlvr.a5.session's temporary folder)
VERDICT_WORDS = {"correct": N_("correct"), "wrong": N_("wrong"), "missing": N_("missing"), "error": N_("error")}


@dataclass
class Verdict:
    """One function's verdict: its name, the verdict (VERDICTS), one line, and the library mistake named ('')."""

    name: str
    verdict: str
    message: str
    mistake: str = ""

    def to_json(self) -> dict:
        """{"verdict": ..., "message": ...} (the --json schema)."""
        return {"verdict": self.verdict, "message": self.message}


class Recorder:
    """Wraps a function and keeps the last exception it raised (the engine reports a sentence; we want the line)."""

    def __init__(self, fn: Callable):
        self.fn, self.error = fn, None

    def __call__(self, *args, **kwargs):
        try:
            return self.fn(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - kept, then raised again for the engine
            self.error = error
            raise


def last_line(error: BaseException) -> str:
    """The exception's last line, 'ValueError: ...', and where: the deepest frame in the student's checkout (its
    copy), else the deepest one outside rlvr."""
    line = one_line_error(error)
    frames = traceback.extract_tb(error.__traceback__)
    theirs = [f for f in frames if COPY_MARK in f.filename.replace("\\", "/")]
    outside = [f for f in frames if "/rlvr/" not in f.filename.replace("\\", "/")]
    where = (theirs or outside or [None])[-1]
    if where is not None:
        return _("{error} ({file}, line {line})").format(error=line, file=_short(where.filename), line=where.lineno)
    return line


def _short(path: str) -> str:
    """A student file's path from its checkout's root (the part after the copy's temporary folder)."""
    parts = path.replace("\\", "/").split("/")
    for anchor in ("cs336_alignment", "tests"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) :])
    return parts[-1]


def first_line(text: str) -> str:
    """The first line of a message."""
    return text.strip().splitlines()[0] if text.strip() else ""


def smallest_failure(check: FunctionCheck, fn: Callable) -> str:
    """'on `<case>`: <what is wrong>' for the smallest case the function fails ('' if none fails again)."""
    exercise = check.exercise()
    for case in sorted(exercise.cases, key=lambda c: c.size):
        want = case.expected_output(exercise.reference)
        call, _changed = case.learner_run(fn, check.time_limit)
        if call.error is None:
            problem, _detail = case.verdict(call.value, want)
            if problem:
                return _("on `{case}`: {problem}").format(case=case.title(), problem=problem)
    return ""


def judge(check: FunctionCheck, fn: Callable | None, stub: bool = False) -> Verdict:
    """The verdict of one student function (None: the adapter is missing from tests/adapters.py)."""
    if fn is None or stub:
        return Verdict(check.name, "missing", _("not written yet (the adapter still raises NotImplementedError)"))
    recorder = Recorder(check.harness(fn))  # keeps the student's exception, or the harness's WrongOutput
    result = check.exercise().check(recorder)
    if result.outcome is Outcome.CORRECT:
        return Verdict(check.name, "correct", first_line(_(result.message)))
    if result.outcome is Outcome.NOT_ATTEMPTED:
        return Verdict(check.name, "missing", _("not written yet (it raises NotImplementedError)"))
    if result.outcome is Outcome.INCORRECT:
        named = next((m for m in check.mistakes if m.name == result.mistake), None)
        message = (
            _(named.says) if named is not None else smallest_failure(check, recorder) or first_line(result.message)
        )
        return Verdict(check.name, "wrong", message, result.mistake)
    error = recorder.error
    if isinstance(error, WrongOutput):
        return Verdict(check.name, "wrong", str(error))
    if isinstance(error, TimeLimitExceeded):
        return Verdict(check.name, "error", _("did not finish within {s} s").format(s=f"{check.time_limit:g}"))
    if error is not None:
        return Verdict(check.name, "error", last_line(error))
    return Verdict(check.name, "error", first_line(_(result.message)))


def blame_dependencies(verdicts: dict[str, Verdict], depends: dict[str, tuple[str, ...]]) -> None:
    """A function that is wrong (its mistake not named) or raised, and that calls a function found wrong or raising:
    say that one first (`depends`: function -> the functions it usually calls)."""
    for name, verdict in verdicts.items():
        if verdict.verdict not in ("wrong", "error") or verdict.mistake:
            continue
        broken = [d for d in depends.get(name, ()) if d in verdicts and verdicts[d].verdict in ("wrong", "error")]
        if broken:
            verdict.message = _(
                "probably because it calls {names}, found wrong above: fix that first ({detail})"
            ).format(names=join(broken), detail=verdict.message)
