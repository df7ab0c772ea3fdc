"""Exercise checkers of notebook 06 (when RLVR breaks): name the breakage behind each mystery run, then the look-alike
it was told from and the signal that tells them apart.

    from rlvr.checks import nb06 as checks
    checks.mystery.check(my_diagnosis)   # my_diagnosis() -> {"A": "...", "B": "...", "C": "..."}
    checks.second_signal.check(my_second_signals, mysteries, healthy)   # -> {"A": ("look-alike", "history key"), ...}

A wrong name gets a pointer to the signal that tells the true breakage apart (never its name); a second signal is
checked on the learner's own runs: it must rule the look-alike's symptom out there (`gallery.ruling_readings`). A
blank function is Not attempted.
"""

from __future__ import annotations

from typing import Callable

from rlvr.checks.core import MISSING, NOT_ATTEMPTED_MESSAGE, Outcome, Question, Result, call_problem
from rlvr.checks.guard import call_guarded, describe, failure_sentence
from rlvr.experiments.gallery import BREAKAGES, LOOKALIKES, MYSTERIES, NOT_BROKEN, ruling_readings
from rlvr.i18n import N_, _, join
from rlvr.runs import RunResult
from rlvr.signals import SIGNAL_NAMES

CHOICES = tuple(name for name in BREAKAGES if name not in NOT_BROKEN)
POINTERS = {  # the true breakage -> where to look (a signal, not the answer)
    "lr_too_high": N_("follow its malformed answers and its reward over the first twenty steps"),
    "beta_too_large": N_("compare its KL to the warm-up with the healthy run's"),
    "greedy_sampling": N_("read its share of all-equal groups and its gradient norm from the very first step"),
    "flipped_sign": N_("does its reward go up or down, and what does its entropy do meanwhile?"),
    "forgotten_mask": N_(
        "compare its gradient norm with the healthy run's at step 0, and look at its KL to the warm-up"
    ),
    "std_without_epsilon": N_("look at its loss at step 0"),
    "no_clip_many_updates": N_("read its approx KL to the sampling policy and its clip fraction"),
    "from_scratch": N_("look at its malformed answers and its reward at step 0"),
    "loophole_verifier": N_("put its reward and its strict accuracy side by side"),
}


def called(name: str, fn: Callable, problem: str | None) -> tuple[Result | None, object]:
    """(None, fn()'s value), or (the Result that ends the check first: a problem with the call, Not attempted, an
    error in the learner's function, None)."""
    if problem:
        return Result(name, Outcome.UNCHECKABLE, problem), None
    call = call_guarded(fn)
    if call.not_attempted:
        return Result(name, Outcome.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE), None
    if call.error is not None:
        return Result(name, Outcome.UNCHECKABLE, failure_sentence(call)), None
    return None, call.value


def not_a_gallery_run(run: str, guess) -> str:
    """'run A: 'greedy' is not a gallery run; choose from ...'."""
    text = _("run {run}: {guess} is not a gallery run; choose from {choices}.")
    return text.format(run=run, guess=repr(guess), choices=", ".join(CHOICES))


class Diagnosis(Question):
    """Name the gallery run each mystery run looks like; a wrong name gets a pointer to the telling signal."""

    shape = N_("return a dict with one name per mystery run ({runs}), e.g. {{'A': 'flipped_sign', ...}}; got {got}.")
    blank = N_("name a gallery run for each mystery run.")

    def __init__(self, name: str, answers: dict[str, str], hint, solution: str):
        super().__init__(name, hint, solution)
        self.answers = dict(answers)

    def check(self, fn: Callable = MISSING, *more) -> Result:
        """Call fn() (it returns {run: breakage name}) and compare with the answers."""
        return self.checked(lambda: self._evaluate(fn, *more))

    def _evaluate(self, fn: Callable = MISSING, *more) -> Result:
        """The verdict on the learner's diagnosis."""
        stop, value = called(self.name, fn, call_problem((fn, *more), [N_("your function")], "check(my_diagnosis)"))
        return stop or self._verdict(value)

    def _verdict(self, given, *runs) -> Result:
        """Correct, or Incorrect with one line per wrong run (`runs`: what `_read` reads each answer on)."""
        if not isinstance(given, dict) or set(given) != set(self.answers):
            got = describe(given) if not isinstance(given, dict) else f"keys {sorted(given)}"
            listed = ", ".join(f"'{run}'" for run in self.answers)
            return Result(self.name, Outcome.INCORRECT, _(self.shape).format(runs=listed, got=got))
        if all(value in (None, "", ...) for value in given.values()):
            return Result(self.name, Outcome.NOT_ATTEMPTED, self.blank)
        read = [self._read(run, truth, given[run], *runs) for run, truth in self.answers.items()]
        lines = [line for line, reason in read if line]
        if lines:
            right = _("{right} of {total} right.").format(right=len(self.answers) - len(lines), total=len(self.answers))
            return Result(self.name, Outcome.INCORRECT, "\n".join([right, *lines]))
        return Result(self.name, Outcome.CORRECT, self._correct([reason for line, reason in read]))

    def _read(self, run: str, truth: str, guess) -> tuple[str, str]:
        """(what is wrong with one run's name, '') or ('', 'A = flipped_sign')."""
        if guess not in CHOICES:
            return not_a_gallery_run(run, guess), ""
        if guess != truth:
            return _("run {run}: not {guess}. Look again: {pointer}.").format(
                run=run, guess=guess, pointer=_(POINTERS[truth])
            ), ""
        return "", f"{run} = {truth}"

    def _correct(self, reasons: list[str]) -> str:
        """The Correct message, from each run's reason."""
        return _("all {n} right: {names}.").format(n=len(reasons), names=join(reasons))


mystery = Diagnosis(
    N_("the three mystery runs"),
    MYSTERIES,
    hint=(
        N_(
            "Each mystery run shares its most visible symptom with another gallery run (a reward that sinks to 0, or a "
            "policy that stays near its warm-up): find the panel of its dashboard where it differs most from the "
            "healthy run's, then a second panel that tells it from the look-alike."
        ),
        N_(
            "Use the gallery table of §3: its 'signal' column says which panel names each breakage. Compare the "
            "mystery run's value of that signal with the gallery run's, then check it against the look-alike on "
            "another signal: the malformed share, its value at step 0, the share of all-equal groups."
        ),
    ),
    solution=N_(
        "Run A: its reward sinks towards 0, as after a learning rate that is too high, but its answers stay mostly "
        "well formed (the malformed share stays far below that run's) and its entropy rises: the update pushes right "
        "answers down (`flipped_sign`). Run B: nothing looks broken, yet its accuracy lags the healthy run's and its "
        "KL to the warm-up stays a fraction of the healthy run's; greedy sampling also keeps the policy at its "
        "warm-up, but there every group is all-equal and the gradient is 0, while B's groups are mixed: a KL penalty "
        "holds the policy near its warm-up (`beta_too_large`). Run C: nearly every answer is malformed and the reward "
        "is 0, as after a learning rate that is too high, but already at step 0, before any update: it did not start "
        "from the warm-up (`from_scratch`)."
    ),
)


LOOKALIKE_POINTERS = {  # a mystery's breakage -> the symptom its look-alikes share (never their names)
    "flipped_sign": N_("which other gallery run's reward sinks towards 0?"),
    "beta_too_large": N_("which other gallery run's policy stays near its warm-up?"),
    "from_scratch": N_("which other gallery run writes malformed answers and earns no reward?"),
}


def _reading_text(bound, value: float, lookalike: str) -> str:
    """'malformed share at step 0 is 1, where lr_too_high shows below 0.1'."""
    if bound.above:  # an exact reading (no margin) is a share of 1 or a count: 'at least 1', not 'above 1 - 1e-9'
        side = _("at least {limit:g}") if bound.margin == 0 else _("above {limit:g}")
    else:
        side = _("below {limit:g}")
    return _("{reading} is {value:.3g}, where {lookalike} shows {side}").format(
        reading=_(bound.reading), value=value, lookalike=lookalike, side=side.format(limit=round(bound.limit, 6))
    )


def mystery_run(mysteries, run: str) -> RunResult | None:
    """The run labelled '... {run}' in the notebook's `mysteries` ('mystery A', or its translation), None if not one."""
    if not isinstance(mysteries, dict):
        return None
    found = [value for label, value in mysteries.items() if isinstance(label, str) and label.split()[-1:] == [run]]
    return found[0] if len(found) == 1 and isinstance(found[0], RunResult) else None


class SecondSignal(Diagnosis):
    """Name, for each mystery run, the look-alike ruled out and the signal that rules it out, checked on the runs."""

    usage = "check(my_second_signals, mysteries, healthy)"
    shape = N_(
        "return a dict with one (look-alike, signal) pair per mystery run ({runs}), e.g. "
        "{{'A': ('no_clip_many_updates', 'clip_fraction'), ...}}; got {got}."
    )
    blank = N_("name a look-alike and a signal for each mystery run.")

    def check(self, fn: Callable = MISSING, mysteries=None, healthy=None) -> Result:
        """Call fn() (it returns {run: (look-alike, history key)}) and read each pair on the learner's runs."""
        return self.checked(lambda: self._evaluate(fn, mysteries, healthy))

    def _evaluate(self, fn, mysteries, healthy) -> Result:
        """The verdict, or why it cannot be given."""
        problem = call_problem((fn,), [N_("your function")], self.usage) or self._runs_problem(mysteries, healthy)
        stop, value = called(self.name, fn, problem)
        return stop or self._verdict(value, mysteries, healthy)

    def _runs_problem(self, mysteries, healthy) -> str | None:
        """One sentence if the runs to read are not the notebook's `mysteries` and `healthy`, else None."""
        if not isinstance(healthy, RunResult) or not all(mystery_run(mysteries, run) for run in self.answers):
            text = _(
                "`{usage}` reads your runs: pass the notebook's `mysteries` (one run each for {runs}) and `healthy`."
            )
            return text.format(usage=self.usage, runs=join(self.answers))
        return None

    def _read(self, run: str, truth: str, pair, mysteries: dict, healthy: RunResult) -> tuple[str, str]:
        """(what is wrong with one run's pair, '') or ('', what rules its look-alike out on the learner's run)."""
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            text = _(
                "run {run}: give a pair (look-alike, signal), e.g. ('no_clip_many_updates', 'clip_fraction'); "
                "got {got}."
            )
            return text.format(run=run, got=describe(pair)), ""
        lookalike, signal = pair
        if lookalike not in CHOICES:
            return not_a_gallery_run(run, lookalike), ""
        if lookalike not in LOOKALIKES[truth]:
            text = _("run {run}: {lookalike} does not share its most visible symptom; {pointer}")
            return text.format(run=run, lookalike=lookalike, pointer=_(LOOKALIKE_POINTERS[truth])), ""
        if signal not in SIGNAL_NAMES:
            text = _("run {run}: {signal} is not a signal of the history; choose from {keys}.")
            return text.format(run=run, signal=repr(signal), keys=", ".join(SIGNAL_NAMES)), ""
        readings = ruling_readings(lookalike, signal, mystery_run(mysteries, run), healthy)
        clear = [(bound, value) for bound, value in readings if bound.short_of(value)]
        if clear:
            text = _("run {run}: {signal} rules out {lookalike}: {reading}.")
            return "", text.format(
                run=run, signal=signal, lookalike=lookalike, reading=_reading_text(*clear[0], lookalike)
            )
        if readings:
            text = _("run {run}: on your run, {signal} does not rule out {lookalike}: {readings}.")
            shown = "; ".join(_reading_text(bound, value, lookalike) for bound, value in readings)
            return text.format(run=run, signal=signal, lookalike=lookalike, readings=shown), ""
        text = _(
            "run {run}: the gallery does not read {lookalike}'s symptom from {signal}, so {signal} cannot rule it out; "
            "look for the panel where {lookalike} is most unlike the healthy run."
        )
        return text.format(run=run, signal=signal, lookalike=lookalike), ""

    def _correct(self, reasons: list[str]) -> str:
        """The Correct message: what rules each look-alike out, one line per run."""
        return "\n".join([_("all {n} right:").format(n=len(reasons)), *reasons])


second_signal = SecondSignal(
    N_("the look-alike and the second signal"),
    MYSTERIES,
    hint=(
        N_(
            "For each run, name the gallery run whose dashboard looks most like it at first sight, then a signal where "
            "that look-alike's symptom shows and this run's does not."
        ),
        N_(
            "In the gallery figure of §3, each small panel is the signal that names a breakage: read the look-alike's "
            "panel on the mystery run's dashboard. A malformed share, its value at step 0, the share of all-equal "
            "groups and the gradient norm are the signals to try."
        ),
    ),
    solution=N_(
        "Run A's reward sinks as after a learning rate that is too high (`lr_too_high`) or a run without a warm-up "
        "(`from_scratch`), but its malformed share stays far below theirs (over 90% over the last 10 steps): "
        "`('lr_too_high', 'malformed_fraction')`. Run B stays near its warm-up as under greedy sampling, but its "
        "groups are mixed and its gradient is not 0: `('greedy_sampling', 'all_same_group_fraction')` (or "
        "`'grad_norm'`); its loss also climbs above 0, as a KL term's does (§5: with one update per batch, the loss "
        "is about 0 only without one). Run C writes malformed answers and earns nothing, as after a learning rate "
        "that is too high, but already at step 0, where that run's answers are still well formed: "
        "`('lr_too_high', 'malformed_fraction')`."
    ),
)
