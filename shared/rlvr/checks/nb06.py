"""Exercise checkers of notebook 06 (when RLVR breaks): name the breakage behind each mystery run.

    from rlvr.checks import nb06 as checks
    checks.mystery.check(my_diagnosis)   # my_diagnosis() -> {"A": "...", "B": "...", "C": "..."}

A wrong name gets a pointer to the signal that tells the true breakage apart (never its name); a blank function is
Not attempted.
"""

from __future__ import annotations

from typing import Callable

from rlvr.checks.core import MISSING, NOT_ATTEMPTED_MESSAGE, Outcome, Question, Result, call_problem
from rlvr.checks.guard import call_guarded, describe, failure_sentence
from rlvr.experiments.gallery import BREAKAGES, MYSTERIES, NOT_BROKEN
from rlvr.i18n import N_, _, join

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


class Diagnosis(Question):
    """Name the gallery run each mystery run looks like; a wrong name gets a pointer to the telling signal."""

    def __init__(self, name: str, answers: dict[str, str], hint, solution: str):
        super().__init__(name, hint, solution)
        self.answers = dict(answers)

    def check(self, fn: Callable = MISSING, *more) -> Result:
        """Call fn() (it returns {run: breakage name}) and compare with the answers."""
        return self.checked(lambda: self._evaluate(fn, *more))

    def _evaluate(self, fn: Callable = MISSING, *more) -> Result:
        """The verdict on the learner's diagnosis."""
        problem = call_problem((fn, *more), [N_("your function")], "check(my_diagnosis)")
        if problem:
            return Result(self.name, Outcome.UNCHECKABLE, problem)
        call = call_guarded(fn)
        if call.not_attempted:
            return Result(self.name, Outcome.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE)
        if call.error is not None:
            return Result(self.name, Outcome.UNCHECKABLE, failure_sentence(call))
        return self._verdict(call.value)

    def _verdict(self, diagnosis) -> Result:
        """Correct, or Incorrect with one line per wrong run."""
        runs = ", ".join(f"'{run}'" for run in self.answers)
        if not isinstance(diagnosis, dict) or set(diagnosis) != set(self.answers):
            got = describe(diagnosis) if not isinstance(diagnosis, dict) else f"keys {sorted(diagnosis)}"
            message = _(
                "return a dict with one name per mystery run ({runs}), e.g. {{'A': 'flipped_sign', ...}}; got {got}."
            ).format(runs=runs, got=got)
            return Result(self.name, Outcome.INCORRECT, message)
        if all(value in (None, "", ...) for value in diagnosis.values()):
            return Result(self.name, Outcome.NOT_ATTEMPTED, N_("name a gallery run for each mystery run."))
        lines = []
        for run, truth in self.answers.items():
            guess = diagnosis[run]
            if guess not in CHOICES:
                text = _("run {run}: {guess} is not a gallery run; choose from {choices}.")
                lines.append(text.format(run=run, guess=repr(guess), choices=", ".join(CHOICES)))
            elif guess != truth:
                text = _("run {run}: not {guess}. Look again: {pointer}.")
                lines.append(text.format(run=run, guess=guess, pointer=_(POINTERS[truth])))
        if lines:
            right = _("{right} of {total} right.").format(right=len(self.answers) - len(lines), total=len(self.answers))
            return Result(self.name, Outcome.INCORRECT, "\n".join([right, *lines]))
        names = join(f"{run} = {truth}" for run, truth in self.answers.items())
        return Result(self.name, Outcome.CORRECT, _("all {n} right: {names}.").format(n=len(self.answers), names=names))


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
