"""Exercise checker: run a learner's function on test cases, report one of four outcomes, and name the mistake.

An `Exercise` holds cases (inputs and the expected output) and a library of `Mistake`s (the wrong answers learners
write, each as a function). `check(fn)` runs `fn` on every case, each call under a time limit with its output
captured (`rlvr.checks.guard`), on fresh copies of the inputs, the expected output computed before the call. If a
case fails, the smallest failing case is shown as "expected ..., got ..."; if the learner's outputs equal one library
entry's on every case, the message names that mistake in one sentence and says what to change, in words.
"""

from __future__ import annotations

import copy
import enum
import html
import inspect
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from rlvr.checks.compare import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    compare,
    compare_tensors,
    expected_got,
    max_abs_diff,
)
from rlvr.checks.guard import (
    DEFAULT_LIMIT_S,
    Call,
    TimeLimitExceeded,
    call_guarded,
    describe,
    failure_sentence,
    one_line_error,
    with_printed,
)
from rlvr.config import STRICT_ENV
from rlvr.i18n import N_, _, ngettext

__all__ = [  # names other modules use (compare's helpers stay importable from here, as before)
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "Case",
    "Exercise",
    "FreeAnswer",
    "GradCase",
    "Mistake",
    "Note",
    "Outcome",
    "Question",
    "Result",
    "compare",
    "compare_tensors",
    "max_abs_diff",
    "one_line_error",
    "random_group_cases",
    "seeded_rewards",
    "strict_mode",
]

_TRUE_WORDS = {"1", "true", "yes", "on"}
_UNDEFINED = object()  # a library entry's output on a case where it raises


def strict_mode() -> bool:
    """True when RLVR_STRICT is set to a true value: `check` then raises unless the answer is correct."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in _TRUE_WORDS


# --------------------------------------------------------------------------- outcomes


class Outcome(enum.Enum):
    """The four possible results of checking an exercise."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    NOT_ATTEMPTED = "not attempted"
    UNCHECKABLE = "uncheckable"


_LABELS = {  # the label is translated where it is shown (`label`)
    Outcome.CORRECT: (N_("Correct"), "#1b7f3b", "#e8f5e9"),
    Outcome.INCORRECT: (N_("Incorrect"), "#b71c1c", "#ffebee"),
    Outcome.NOT_ATTEMPTED: (N_("Not attempted"), "#455a64", "#eceff1"),
    Outcome.UNCHECKABLE: (N_("Could not check"), "#e65100", "#fff3e0"),
}
NOT_ATTEMPTED_MESSAGE = N_("replace `raise NotImplementedError` with your code.")


def label(outcome: Outcome) -> str:
    """An outcome's label in the current language ("Correct", "Incorrect", "Not attempted", "Could not check")."""
    return _(_LABELS[outcome][0])


def _html_text(text: str) -> str:
    """Escape `text` for HTML, turn `backtick spans` into <code> and newlines into <br>."""
    escaped = html.escape(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    return escaped.replace("\n", "<br>")


@dataclass
class Result:
    """What `Exercise.check` returns: an outcome and a short message; displays itself in Jupyter.

    `mistake` is the name of the library entry the message names ('' if none)."""

    exercise: str
    outcome: Outcome
    message: str
    mistake: str = ""

    @property
    def passed(self) -> bool:
        """True only for a correct answer."""
        return self.outcome is Outcome.CORRECT

    def __str__(self) -> str:
        """Plain-text form, e.g. `[Incorrect] advantages: ...` (label, exercise name and message translated)."""
        return _("[{outcome}] {exercise}: {message}").format(
            outcome=label(self.outcome), exercise=_(self.exercise), message=_(self.message)
        )

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """IPython plain-text display (instead of the dataclass repr)."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        """Coloured box for Jupyter."""
        _label, colour, background = _LABELS[self.outcome]
        return (
            f'<div style="border-left: 6px solid {colour}; background: {background}; '
            f'padding: 6px 10px; margin: 4px 0; color: #212121;">'
            f'<b style="color: {colour};">{label(self.outcome)}</b> &mdash; <i>{html.escape(_(self.exercise))}</i><br>'
            f"{_html_text(_(self.message))}</div>"
        )


@dataclass
class Note:
    """A hint or a solution: Markdown text that displays itself in Jupyter and prints as plain text."""

    title: str
    text: str

    def __str__(self) -> str:
        """Plain-text form (a hint's or a solution's text is translated when the catalogue has it)."""
        return f"{self.title}\n{_(self.text)}"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """IPython plain-text display."""
        printer.text(str(self))

    def _repr_markdown_(self) -> str:
        """Markdown for Jupyter."""
        return f"**{self.title}**\n\n{_(self.text)}"


# --------------------------------------------------------------------------- cases


def _fresh_copy(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Deep copies of the inputs, so a function that edits its inputs cannot spoil the next call."""
    return copy.deepcopy(args), copy.deepcopy(kwargs)


def _same(before: Any, after: Any) -> bool:
    """A tensor or array holds the same values (NaN equal to NaN) as its copy from before the call."""
    if isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor):
        b, a = before.detach(), after.detach()
        return b.shape == a.shape and bool(torch.equal(b, a) or torch.allclose(b, a, rtol=0, atol=0, equal_nan=True))
    if isinstance(before, np.ndarray) and isinstance(after, np.ndarray):
        return before.shape == after.shape and bool(np.array_equal(before, after, equal_nan=before.dtype.kind == "f"))
    return True


def changed_inputs(before: tuple[tuple, dict], after: tuple[tuple, dict], names: Sequence[str]) -> list[str]:
    """Names of the tensor/array inputs whose values differ after a call (positional ones named from `names`)."""
    changed = []
    for index, (b, a) in enumerate(zip(before[0], after[0])):
        if not _same(b, a):
            changed.append(names[index] if index < len(names) else f"argument {index + 1}")
    changed += [key for key, b in before[1].items() if not _same(b, after[1].get(key))]
    return changed


def _numel(value: Any) -> int:
    """How big an input is: a tensor's or array's number of entries, 1 for anything else."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return int(np.prod(value.shape)) if len(value.shape) else 1
    return 1


@dataclass
class Case:
    """One test input: a description naming the inputs, the arguments, and the expected behaviour.

    Args:
        description: shown when this case fails, e.g. "rewards [1,0,0,0], group_size=4".
        args, kwargs: the inputs passed to the function.
        reference: a correct implementation for this case only.
        expected: the expected output (used when the case has no reference of its own);
            without either, the exercise's reference is used.
        atol, rtol: tolerances for tensors and floats.
    """

    description: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    reference: Callable | None = None
    expected: Any = None
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL

    def title(self) -> str:
        """The description as a learner reads it, in the current language (a checker module marks it with N_)."""
        return _(self.description)

    @property
    def size(self) -> int:
        """Total number of input entries: the smallest failing case is the one shown."""
        return sum(_numel(v) for v in (*self.args, *self.kwargs.values()))

    def expected_output(self, reference: Callable | None) -> Any:
        """The correct output: from the case's own reference, else `expected`, else the exercise's reference."""
        if self.reference is None and self.expected is not None:
            return self.expected
        reference = self.reference or reference
        if reference is None:
            raise ValueError(f"case {self.description!r} needs a reference function or an expected value.")
        args, kwargs = _fresh_copy(self.args, self.kwargs)
        return reference(*args, **kwargs)

    def output_of(self, fn: Callable) -> Any:
        """`fn`'s output on a fresh copy of the inputs (for our own functions: exceptions propagate)."""
        args, kwargs = _fresh_copy(self.args, self.kwargs)
        return fn(*args, **kwargs)

    def student_output(self, fn: Callable) -> Any:
        """Run the learner's function on a fresh copy of the inputs (exceptions propagate)."""
        return self.output_of(fn)

    def learner_run(self, fn: Callable, seconds: float | None, names: Sequence[str] = ()) -> tuple[Call, list[str]]:
        """Run the learner's function on fresh copies under a time limit: (the Call, names of inputs it changed)."""
        args, kwargs = _fresh_copy(self.args, self.kwargs)
        before = _fresh_copy(args, kwargs)
        call = call_guarded(fn, args, kwargs, seconds)
        return call, changed_inputs(before, (args, kwargs), names)

    def verdict(self, got: Any, want: Any) -> tuple[str | None, str]:
        """(problem sentence or None, detail line for a passing case: 'ok | maxdiff 0.0e+00' for tensors, else 'ok'),
        so a correct answer lists every case it passed."""
        problem = compare(got, want, self.atol, self.rtol)
        if problem:
            return problem, ""
        if isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor) and got.shape == want.shape:
            return None, _("ok | maxdiff {diff}").format(diff=f"{max_abs_diff(got, want):.1e}")
        return None, _("ok")

    def show(self, got: Any, want: Any) -> str:
        """'expected ..., got ...' for this case."""
        return expected_got(got, want)


@dataclass
class RandomGroupsCase(Case):
    """A case of `random_group_cases`: its description is `words` (translated where shown) and then `more`, the
    keyword arguments of every call as code (", eps=0.0001")."""

    words: str = ""
    more: str = ""

    def title(self) -> str:
        """The words in the current language, then the keyword arguments."""
        return _(self.words) + self.more


def random_group_cases(**kwargs) -> list[Case]:
    """Two seeded cases of group rewards the lecture's examples do not cover: 5 groups of 8 rewards in {0, 1}
    (a 1 with chance 0.4, seed 0) and 3 groups of 5 rewards uniform in [0, 1) (seed 1); kwargs go to every call."""
    suffix = "".join(f", {key}={value}" for key, value in kwargs.items())
    binary = N_("5 groups of 8 random 0/1 rewards (seed 0), group_size=8")
    uniform = N_("3 groups of 5 rewards uniform in [0, 1) (seed 1), group_size=5")
    return [
        RandomGroupsCase(
            binary + suffix,
            args=(seeded_rewards(5, 8, 0, binary=True), 8),
            kwargs=dict(kwargs),
            words=binary,
            more=suffix,
        ),
        RandomGroupsCase(
            uniform + suffix,
            args=(seeded_rewards(3, 5, 1, binary=False), 5),
            kwargs=dict(kwargs),
            words=uniform,
            more=suffix,
        ),
    ]


def seeded_rewards(n_groups: int, group_size: int, seed: int, binary: bool) -> torch.Tensor:
    """Seeded rewards [n_groups * group_size]: 0/1 (a 1 with chance 0.4) or uniform in [0, 1)."""
    generator = torch.Generator().manual_seed(seed)
    rewards = torch.rand(n_groups * group_size, generator=generator)  # [n_groups * group_size]
    return (rewards < 0.4).float() if binary else rewards


def _projection_weights(shape: torch.Size) -> torch.Tensor:
    """Fixed random weights used to turn a non-scalar output into a scalar before backward."""
    generator = torch.Generator().manual_seed(0)
    return torch.rand(shape, generator=generator, dtype=torch.float64) + 0.5


def _to_scalar(output: torch.Tensor) -> torch.Tensor:
    """The output itself if it is a scalar, else a fixed weighted sum of its entries."""
    if output.dim() == 0:
        return output
    return (output * _projection_weights(output.shape).to(output.dtype)).sum()


@dataclass
class GradOutput:
    """A function's output together with its gradients with respect to the chosen inputs."""

    value: Any
    grads: dict | None  # None when the output is detached from the graph
    detached: bool = False


@dataclass
class GradCase(Case):
    """A case that checks the value AND the autograd gradient with respect to some inputs.

    Args:
        wrt: names of keyword arguments (or positions of positional ones) to differentiate against;
            they must be floating-point tensors.
        output_index: if the function returns a tuple, which item to differentiate (e.g. 0 for the loss).
    """

    wrt: Sequence[str | int] = ()
    output_index: int | None = None

    def _inputs_with_grad(self) -> tuple[list, dict, dict]:
        """Fresh inputs where every `wrt` tensor is a new leaf that requires grad."""
        args, kwargs = _fresh_copy(self.args, self.kwargs)
        args = list(args)
        leaves = {}
        for key in self.wrt:
            holder = args if isinstance(key, int) else kwargs
            holder[key] = holder[key].detach().clone().requires_grad_(True)
            leaves[key] = holder[key]
        return args, kwargs, leaves

    def _pick_output(self, value: Any) -> Any:
        """The item to differentiate: `value[output_index]` for tuple outputs, else `value` itself."""
        if self.output_index is None:
            return value
        if isinstance(value, (tuple, list)) and len(value) > self.output_index:
            return value[self.output_index]
        return None

    def _differentiate(self, fn: Callable, args: list, kwargs: dict, leaves: dict) -> GradOutput:
        """Call `fn`, then backpropagate from its (scalarised) output to the `wrt` inputs."""
        value = fn(*args, **kwargs)
        output = self._pick_output(value)
        if not isinstance(output, torch.Tensor) or not output.is_floating_point():
            return GradOutput(value, None)
        if output.grad_fn is None and not output.requires_grad:
            return GradOutput(value, None, detached=True)
        grads = torch.autograd.grad(_to_scalar(output), list(leaves.values()), allow_unused=True)
        zeros_if_unused = [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, leaves.values())]
        return GradOutput(value, dict(zip(leaves, zeros_if_unused)))

    def output_of(self, fn: Callable) -> GradOutput:
        """`fn`'s value and gradients (for our own functions: exceptions propagate)."""
        args, kwargs, leaves = self._inputs_with_grad()
        return self._differentiate(fn, args, kwargs, leaves)

    def expected_output(self, reference: Callable | None) -> GradOutput:
        """The reference's value and gradients."""
        reference = self.reference or reference
        if reference is None:
            raise ValueError(f"GradCase {self.description!r} needs a reference function.")
        return self.output_of(reference)

    def learner_run(self, fn: Callable, seconds: float | None, names: Sequence[str] = ()) -> tuple[Call, list[str]]:
        """The learner's value and gradients under a time limit (the backward pass included)."""
        args, kwargs, leaves = self._inputs_with_grad()
        before = _fresh_copy(tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args), kwargs)
        call = call_guarded(self._differentiate, (fn, args, kwargs, leaves), None, seconds)
        return call, changed_inputs(before, (tuple(args), kwargs), names)

    def verdict(self, got: GradOutput, want: GradOutput) -> tuple[str | None, str]:
        """Check the value, then that the output is attached, then each gradient."""
        problem = compare(got.value, want.value, self.atol, self.rtol)
        if problem:
            return _("value WRONG: {problem}").format(problem=problem), ""
        if got.detached or (got.grads is None and want.grads is not None):
            return (
                _(
                    "value ok | your output is detached from the inputs (it has no grad_fn), so no gradient "
                    "can flow: avoid .detach(), .item(), .numpy() and torch.tensor(...) on intermediate results."
                ),
                "",
            )
        if want.grads is None:
            return None, _("value ok")
        return self._grad_verdict(got.grads, want.grads)

    def _grad_verdict(self, got: dict, want: dict) -> tuple[str | None, str]:
        """Compare gradients input by input, karpathy style: `value ok | grad ok | maxdiff ...`."""
        worst = 0.0
        for key in want:
            worst = max(worst, max_abs_diff(got[key], want[key]))
            problem = compare_tensors(got[key], want[key], self.atol, self.rtol)
            if problem:
                return _("value ok | grad WRONG with respect to `{key}`: {problem}").format(
                    key=key, problem=problem
                ), ""
        return None, _("value ok | grad ok | maxdiff {diff}").format(diff=f"{worst:.1e}")

    def show(self, got: GradOutput, want: GradOutput) -> str:
        """'expected ..., got ...' of the value, else of the first gradient that differs."""
        if not isinstance(got, GradOutput):
            return expected_got(got, want.value)
        if compare(got.value, want.value, self.atol, self.rtol) is not None:
            return expected_got(got.value, want.value)
        if got.grads is None or want.grads is None:
            return _("the value is right but your output carries no gradient")
        for key in want.grads:
            if compare_tensors(got.grads[key], want.grads[key], self.atol, self.rtol) is not None:
                return self._show_grad(key, got.grads[key], want.grads[key], want.value)
        return expected_got(got.value, want.value)

    def _show_grad(self, key, got: torch.Tensor, want: torch.Tensor, value: Any) -> str:
        """The gradients side by side: entry by entry (d output_i / d input_i) when the output has the input's
        shape, else the gradient of the fixed weighted sum of the outputs the check differentiates."""
        if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape == want.shape:
            weights = _projection_weights(value.shape).to(want.dtype)
            pair = expected_got(got / weights.to(got.dtype), want / weights)
            return _("the value is right; the derivative of each entry with respect to its `{key}`: {pair}").format(
                key=key, pair=pair
            )
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            return _(
                "the value is right; the gradient with respect to `{key}` (of a fixed weighted sum of the outputs): "
                "{pair}"
            ).format(key=key, pair=expected_got(got, want))
        return _("the value is right; the gradient with respect to `{key}`: {pair}").format(
            key=key, pair=expected_got(got, want)
        )


# --------------------------------------------------------------------------- the mistake library


@dataclass(frozen=True)
class Mistake:
    """A wrong answer learners write: the function that writes it, one sentence naming it, what to change (words).

    Args:
        name: a short id (tests and the trial counts use it).
        says: names the mistake in one sentence, e.g. "Your baseline leaves the answer itself out (RLOO)".
        fix: what to change, in words and without code.
        fn: the wrong answer, with the exercise's signature.
        variants: other ways of writing the same mistake (another std, another eps); the mistake is named when the
            learner's outputs equal those of `fn` or of one variant on every case.
        parts: for two slips made at once (`Mistake.both`), the two mistakes; `says` and `fix` are then theirs joined,
            and each part is translated on its own.
    """

    name: str
    says: str
    fix: str
    fn: Callable
    variants: tuple[Callable, ...] = ()
    parts: tuple[Mistake, ...] = ()

    @property
    def ways(self) -> tuple[Callable, ...]:
        """Every function that writes this mistake: `fn`, then the variants."""
        return (self.fn, *self.variants)

    def sentence(self) -> str:
        """`says` in the current language (a compound's parts one after the other)."""
        return " ".join(part.sentence() for part in self.parts) if self.parts else _(self.says)

    def advice(self) -> str:
        """`fix` in the current language (a compound's parts one after the other)."""
        return " ".join(part.advice() for part in self.parts) if self.parts else _(self.fix)

    @classmethod
    def both(cls, first: Mistake, second: Mistake, fn: Callable, variants: tuple[Callable, ...] = ()) -> Mistake:
        """Two slips made at once, e.g. one per mode of a function: named `first+second`, both sentences said."""
        return cls(
            f"{first.name}+{second.name}",
            f"{first.says} {second.says}",
            f"{first.fix} {second.fix}",
            fn,
            variants,
            (first, second),
        )


@dataclass
class CaseRun:
    """A learner's output on one case, with the expected output and the verdict."""

    index: int
    case: Case
    want: Any
    call: Call
    problem: str | None
    detail: str
    changed: list[str]


# --------------------------------------------------------------------------- exercises


class Question:
    """An exercise with hints and a solution only (e.g. a Markdown / free-answer question).

    `hint` is one Markdown text or a sequence of them: `hint()` shows the first (a nudge naming the idea),
    `hint(2)` the second (a pointer to the formula); neither gives the solution's code."""

    def __init__(self, name: str, hint: str | Sequence[str] = "", solution: str = ""):
        """Args: name shown in messages; hint (one text or several levels) and solution as Markdown text."""
        self.name = name
        self.hints = (hint,) if isinstance(hint, str) else tuple(hint)
        self._solution = solution

    def checked(self, evaluate: Callable[[], Result]) -> Result:
        """Run an evaluation: a checker bug becomes "Could not check"; strict mode raises unless it is correct."""
        try:
            result = evaluate()
        except KeyboardInterrupt:
            raise
        except (Exception, TimeLimitExceeded) as error:  # noqa: BLE001 - a checker bug must not crash the notebook
            message = _("internal checker error: {error}").format(error=one_line_error(error))
            result = Result(self.name, Outcome.UNCHECKABLE, message)
        if strict_mode() and not result.passed:
            raise AssertionError(str(result))
        return result

    def hint(self, level: int = 1) -> Note:
        """Show hint number `level` (1: a nudge naming the idea; 2: a pointer to the formula)."""
        hints = [h for h in self.hints if h]
        name = _(self.name)
        if not hints:
            return Note(_("Hint ({name})").format(name=name), _("No hint for this one."))
        level = max(1, min(int(level) if isinstance(level, (int, float)) else 1, len(hints)))
        more = "\n\n" + _("(One more: `hint({level})`.)").format(level=level + 1) if level < len(hints) else ""
        if len(hints) > 1:
            title = _("Hint {level} of {count} ({name})").format(level=level, count=len(hints), name=name)
        else:
            title = _("Hint ({name})").format(name=name)
        return Note(title, _(hints[level - 1]) + more)

    def solution(self) -> Note:
        """Show the solution."""
        title = _("Solution ({name})").format(name=_(self.name))
        return Note(title, self._solution or _("No solution text for this one."))


FreeAnswer = Question


def _parameter_names(fn: Callable | None) -> list[str]:
    """The names of `fn`'s parameters, in order ([] if unknown)."""
    try:
        return list(inspect.signature(fn).parameters) if fn is not None else []
    except (TypeError, ValueError):
        return []


MISSING = object()


def call_problem(given: tuple, needed: Sequence[str], usage: str) -> str | None:
    """One sentence if `check` was called with the wrong number of functions (or a non-function), else None."""
    given = tuple(g for g in given if g is not MISSING)
    if len(given) != len(needed):
        text = ngettext(
            "`{usage}` needs {n} function; it was given {given}.",
            "`{usage}` needs {n} functions; it was given {given}.",
            len(needed),
        )
        return text.format(usage=usage, n=len(needed), given=len(given))
    for value, name in zip(given, needed):
        if not callable(value):
            text = _("check() needs {name} itself (its name, without brackets), but got {value}.")
            return text.format(name=_(name), value=describe(value))
    return None


class Exercise(Question):
    """A code exercise: run a learner's function on a list of cases, report the outcome, name the mistake."""

    def __init__(
        self,
        name: str,
        cases: Sequence[Case],
        hint: str | Sequence[str] = "",
        solution: str = "",
        reference: Callable | None = None,
        mistakes: Sequence[Mistake] = (),
        time_limit: float | None = DEFAULT_LIMIT_S,
    ):
        """Args: name; cases to run; hint(s) (Markdown); solution (Python code); reference used by cases that have
        neither their own reference nor an `expected` value; mistakes (the library, most specific first);
        time_limit in seconds per call of the learner's function."""
        super().__init__(name, hint, solution)
        self.cases = list(cases)
        self.reference = reference
        self.mistakes = list(mistakes)
        self.time_limit = time_limit
        self._mistake_outputs: dict[tuple[int, int, int], Any] = {}

    def solution(self) -> Note:
        """Show the solution code."""
        if not self._solution:
            return super().solution()
        code = _(self._solution).strip()  # the same code; a catalogue may translate its comments
        return Note(_("Solution ({name})").format(name=_(self.name)), f"```python\n{code}\n```")

    def check(self, fn: Callable = MISSING, *more) -> Result:
        """Check `fn` on every case; return a Result (and raise AssertionError in strict mode unless correct)."""
        return self.checked(lambda: self._evaluate(fn, *more))

    def _evaluate(self, fn: Callable = MISSING, *more) -> Result:
        """Run every case; the smallest failing one is shown and the library names the mistake."""
        problem = call_problem((fn, *more), [N_("your function")], "check(your_function)")
        if problem:
            return Result(self.name, Outcome.UNCHECKABLE, problem)
        runs: list[CaseRun] = []
        for index, case in enumerate(self.cases):
            want = case.expected_output(self.reference)  # before the learner's call, on copies
            call, changed = case.learner_run(fn, self.time_limit, _parameter_names(self.reference))
            if call.not_attempted:
                return Result(self.name, Outcome.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE)
            if call.error is not None:
                if any(run.problem for run in runs):
                    break  # an earlier case already shows what is wrong
                message = _("case `{case}`: {failure}").format(case=case.title(), failure=failure_sentence(call))
                return Result(self.name, Outcome.UNCHECKABLE, message)
            problem, detail = case.verdict(call.value, want)
            runs.append(CaseRun(index, case, want, call, problem, detail, changed))
        failing = [run for run in runs if run.problem]
        if failing:
            return self._incorrect(runs, failing)
        edited = next((run for run in runs if run.changed), None)
        if edited is not None:
            return Result(self.name, Outcome.INCORRECT, _capital(in_place_message(edited)), "in_place")
        details = [_("{name}: {value}").format(name=run.case.title(), value=run.detail) for run in runs if run.detail]
        summary = _("passed {n} of {total} cases.").format(n=len(self.cases), total=len(self.cases))
        printed = next((run.call for run in runs if run.call.printed.summary()), None)
        message = "\n".join([summary, *details])
        return Result(self.name, Outcome.CORRECT, with_printed(message, printed) if printed else message)

    # ----------------------------------------------------------------------- diagnosis
    def _incorrect(self, runs: list[CaseRun], failing: list[CaseRun]) -> Result:
        """The message for a wrong answer: the mistake named if the library knows it, the smallest case shown."""
        shown = min(failing, key=lambda run: (run.case.size, run.index))
        case = shown.case
        pair = case.show(shown.call.value, shown.want)
        seen = _("On `{case}`: {pair}.").format(case=case.title(), pair=pair)
        mistake, everywhere = self.named_mistake(runs)
        if mistake is not None and everywhere:
            message = f"{mistake.sentence()} {seen} {mistake.advice()}"
        elif mistake is not None:
            message = f"{mistake.sentence()} {seen} {mistake.advice()} " + _(
                "(On every case that fails your output is exactly what this mistake gives; on a case you pass, it "
                "would differ.)"
            )
        else:
            message = _("On `{case}` (the smallest case that fails): {problem} {pair}.").format(
                case=case.title(), problem=shown.problem, pair=_capital(pair)
            )
        if shown.changed or any(run.changed for run in runs):
            edited = next(run for run in runs if run.changed)
            message += " " + _("Also: {what}").format(what=in_place_message(edited))
        return Result(self.name, Outcome.INCORRECT, with_printed(message, shown.call), mistake.name if mistake else "")

    def mistake_output(self, m: int, c: int, way: int = 0) -> Any:
        """Library entry m's output on case c, written its `way`-th way (cached; _UNDEFINED where it raises)."""
        key = (m, way, c)
        if key not in self._mistake_outputs:
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    self._mistake_outputs[key] = self.cases[c].output_of(self.mistakes[m].ways[way])
            except Exception:  # noqa: BLE001 - an entry may not apply to every case (e.g. a mode it ignores)
                self._mistake_outputs[key] = _UNDEFINED
        return self._mistake_outputs[key]

    def _agrees(self, m: int, run: CaseRun, way: int = 0) -> bool:
        """The learner's output on this case equals library entry m's (written its `way`-th way)."""
        theirs = self.mistake_output(m, run.index, way)
        return theirs is not _UNDEFINED and run.case.verdict(run.call.value, theirs)[0] is None

    def _fits(self, m: int, runs: list[CaseRun]) -> bool:
        """One way of writing library entry m gives the learner's outputs on every one of `runs`."""
        return any(all(self._agrees(m, run, way) for run in runs) for way in range(len(self.mistakes[m].ways)))

    def named_mistake(self, runs: list[CaseRun]) -> tuple[Mistake | None, bool]:
        """(the library entry whose outputs equal the learner's on every case, True); else (the only entry equal to
        the learner's on every FAILING case, when at least two fail, False); else (None, False). One case alone
        names nothing: on a small case two different mistakes often give the same numbers."""
        for m, mistake in enumerate(self.mistakes):
            if self._fits(m, runs):
                return mistake, True
        failing = [run for run in runs if run.problem]
        if len(failing) >= 2:
            fitting = [mistake for m, mistake in enumerate(self.mistakes) if self._fits(m, failing)]
            if len(fitting) == 1:
                return fitting[0], False
        return None, False


def _capital(text: str) -> str:
    """`text` with its first letter in upper case."""
    return text[:1].upper() + text[1:]


def in_place_message(run: CaseRun) -> str:
    """The sentence for a function that changed its inputs."""
    names = ", ".join(f"`{name}`" for name in run.changed)
    return _(
        "your function changes its input {names} in place (on `{case}` its values after the call differ from "
        "before), so whatever uses it next sees changed numbers. Leave the inputs as they are and build the result "
        "in new tensors (an ordinary subtraction or division, not the in-place kind)."
    ).format(names=names, case=run.case.title())
