"""Exercise checker: run a student's function on test cases and report one of four outcomes."""

from __future__ import annotations

import copy
import enum
import html
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from rlvr.config import STRICT_ENV

DEFAULT_ATOL = 1e-5
DEFAULT_RTOL = 1e-4
MAX_ERROR_CHARS = 300
_TRUE_WORDS = {"1", "true", "yes", "on"}


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


_LABELS = {
    Outcome.CORRECT: ("Correct", "#1b7f3b", "#e8f5e9"),
    Outcome.INCORRECT: ("Incorrect", "#b71c1c", "#ffebee"),
    Outcome.NOT_ATTEMPTED: ("Not attempted", "#455a64", "#eceff1"),
    Outcome.UNCHECKABLE: ("Could not check", "#e65100", "#fff3e0"),
}


def _html_text(text: str) -> str:
    """Escape `text` for HTML, turn `backtick spans` into <code> and newlines into <br>."""
    escaped = html.escape(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    return escaped.replace("\n", "<br>")


@dataclass
class Result:
    """What `Exercise.check` returns: an outcome and a short message; displays itself in Jupyter."""

    exercise: str
    outcome: Outcome
    message: str

    @property
    def passed(self) -> bool:
        """True only for a correct answer."""
        return self.outcome is Outcome.CORRECT

    def __str__(self) -> str:
        """Plain-text form, e.g. `[Incorrect] advantages: ...`."""
        label = _LABELS[self.outcome][0]
        return f"[{label}] {self.exercise}: {self.message}"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """IPython plain-text display (instead of the dataclass repr)."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        """Coloured box for Jupyter."""
        label, colour, background = _LABELS[self.outcome]
        return (
            f'<div style="border-left: 6px solid {colour}; background: {background}; '
            f'padding: 6px 10px; margin: 4px 0; color: #212121;">'
            f'<b style="color: {colour};">{label}</b> &mdash; <i>{html.escape(self.exercise)}</i><br>'
            f"{_html_text(self.message)}</div>"
        )


@dataclass
class Note:
    """A hint or a solution: Markdown text that displays itself in Jupyter and prints as plain text."""

    title: str
    text: str

    def __str__(self) -> str:
        """Plain-text form."""
        return f"{self.title}\n{self.text}"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """IPython plain-text display."""
        printer.text(str(self))

    def _repr_markdown_(self) -> str:
        """Markdown for Jupyter."""
        return f"**{self.title}**\n\n{self.text}"


# --------------------------------------------------------------------------- comparing values


def _describe(value: Any) -> str:
    """Short name of a value's type with an article, e.g. `a torch.Tensor`, `a float`, `None`."""
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return "a torch.Tensor"
    if isinstance(value, np.ndarray):
        return "a numpy array"
    name = type(value).__name__
    article = "an" if name[0].lower() in "aeiou" else "a"
    return f"{article} {name}"


def _dtype_kind(dtype: torch.dtype) -> str:
    """'floating-point', 'integer', 'boolean' or 'complex'."""
    if dtype == torch.bool:
        return "boolean"
    if dtype.is_floating_point:
        return "floating-point"
    if dtype.is_complex:
        return "complex"
    return "integer"


def _nonfinite_problem(got: torch.Tensor, want: torch.Tensor) -> str | None:
    """A sentence if `got` has NaN/inf where the reference is finite, else None."""
    if not (got.is_floating_point() or got.is_complex()):
        return None
    unexpected = ~torch.isfinite(got) & torch.isfinite(want)
    if not unexpected.any():
        return None
    kind = "NaN" if torch.isnan(got[unexpected]).any() else "inf"
    return (
        f"your output contains {kind} ({int(unexpected.sum())} of {got.numel()} entries): "
        "look for a division by zero (e.g. a std of equal rewards) or a log of 0."
    )


def compare_tensors(got: torch.Tensor, want: torch.Tensor, atol: float, rtol: float) -> str | None:
    """Compare two tensors; return a one-sentence problem (never the expected values) or None."""
    got, want = got.detach().cpu(), want.detach().cpu()
    if tuple(got.shape) != tuple(want.shape):
        return f"your output has shape {tuple(got.shape)} but shape {tuple(want.shape)} was expected."
    if _dtype_kind(got.dtype) != _dtype_kind(want.dtype):
        return (
            f"your output has dtype {got.dtype} but a {_dtype_kind(want.dtype)} tensor was expected "
            f"(e.g. {want.dtype})."
        )
    problem = _nonfinite_problem(got, want)
    if problem:
        return problem
    if want.dtype == torch.bool or not (want.is_floating_point() or want.is_complex()):
        if torch.equal(got, want):
            return None
        return f"{int((got != want).sum())} of {want.numel()} entries differ from the expected values."
    got = got.to(want.dtype)
    if torch.allclose(got, want, atol=atol, rtol=rtol, equal_nan=True):
        return None
    return f"the values are off (max abs difference {max_abs_diff(got, want):.3g})."


def max_abs_diff(got: torch.Tensor, want: torch.Tensor) -> float:
    """Largest |got - want| over entries that are finite in both (0.0 when none are)."""
    both_finite = torch.isfinite(got) & torch.isfinite(want)
    if not both_finite.any():
        return 0.0
    return float((got[both_finite].double() - want[both_finite].double()).abs().max())


def _as_number(got: Any) -> float | None:
    """`got` as a Python float if it is a single number (int, float, numpy scalar, 1-element tensor/array)."""
    if isinstance(got, bool):
        return None
    if isinstance(got, (int, float, np.number)):
        return float(got)
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        return float(got.item())
    if isinstance(got, np.ndarray) and got.size == 1:
        return float(got.item())
    return None


def compare_numbers(got: Any, want: float, atol: float, rtol: float) -> str | None:
    """Compare a returned single number with an expected float; return a problem sentence or None."""
    number = _as_number(got)
    if number is None:
        if isinstance(got, (torch.Tensor, np.ndarray)):
            return f"your output has shape {tuple(got.shape)} but a single number was expected."
        return f"your function returned {_describe(got)} but a number was expected."
    if math.isnan(want) and math.isnan(number):
        return None
    if not math.isfinite(number) and math.isfinite(want):
        return f"your output is {number}: look for a division by zero or a log of 0."
    if math.isclose(number, want, rel_tol=rtol, abs_tol=atol):
        return None
    return f"the value is off (abs difference {abs(number - want):.3g})."


def compare_sequences(got: Any, want: Sequence, atol: float, rtol: float) -> str | None:
    """Compare a returned tuple/list element-wise with an expected one."""
    kind = type(want).__name__
    if not isinstance(got, (tuple, list)):
        return f"your function returned {_describe(got)} but a {kind} of {len(want)} items was expected."
    if len(got) != len(want):
        return f"your function returned {len(got)} items but {len(want)} were expected."
    for index, (got_item, want_item) in enumerate(zip(got, want)):
        problem = compare(got_item, want_item, atol, rtol)
        if problem:
            return f"item {index} of the returned {kind}: {problem}"
    return None


def compare(got: Any, want: Any, atol: float = DEFAULT_ATOL, rtol: float = DEFAULT_RTOL) -> str | None:
    """Compare a student's output with the reference output; return a one-sentence problem or None."""
    if got is None and want is not None:
        return "your function returned None: did you forget the `return` statement?"
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"your function returned {_describe(got)} but a torch.Tensor was expected."
        return compare_tensors(got, want, atol, rtol)
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"your function returned {_describe(got)} but a numpy array was expected."
        return compare_tensors(torch.from_numpy(np.asarray(got)), torch.from_numpy(want), atol, rtol)
    if isinstance(want, (float, int, np.number)) and not isinstance(want, bool):
        return compare_numbers(got, float(want), atol, rtol)
    if isinstance(want, (tuple, list)):
        return compare_sequences(got, want, atol, rtol)
    return compare_plain(got, want)


def compare_plain(got: Any, want: Any) -> str | None:
    """Compare any other values (strings, booleans, ...) with ==."""
    try:
        equal = bool(got == want)
    except Exception:  # noqa: BLE001 - e.g. comparing a tensor with a string
        equal = False
    return None if equal else "your output differs from the expected value."


# --------------------------------------------------------------------------- cases


def _fresh_copy(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Deep copies of the inputs, so a function that edits its inputs cannot spoil the next call."""
    return copy.deepcopy(args), copy.deepcopy(kwargs)


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

    def expected_output(self, reference: Callable | None) -> Any:
        """The correct output: from the case's own reference, else `expected`, else the exercise's reference."""
        if self.reference is None and self.expected is not None:
            return self.expected
        reference = self.reference or reference
        if reference is None:
            raise ValueError(f"case {self.description!r} needs a reference function or an expected value.")
        args, kwargs = _fresh_copy(self.args, self.kwargs)
        return reference(*args, **kwargs)

    def student_output(self, fn: Callable) -> Any:
        """Run the student's function on a fresh copy of the inputs (exceptions propagate)."""
        args, kwargs = _fresh_copy(self.args, self.kwargs)
        return fn(*args, **kwargs)

    def verdict(self, got: Any, want: Any) -> tuple[str | None, str]:
        """(problem sentence or None, detail line for a passing case: 'ok | maxdiff 0.0e+00' for tensors, else 'ok'),
        so a correct answer lists every case it passed."""
        problem = compare(got, want, self.atol, self.rtol)
        if problem:
            return problem, ""
        if isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor) and got.shape == want.shape:
            return None, f"ok | maxdiff {max_abs_diff(got, want):.1e}"
        return None, "ok"


def random_group_cases(**kwargs) -> list[Case]:
    """Two seeded cases of group rewards the lecture's examples do not cover: 5 groups of 8 rewards in {0, 1}
    (a 1 with chance 0.4, seed 0) and 3 groups of 5 rewards uniform in [0, 1) (seed 1); kwargs go to every call."""
    suffix = "".join(f", {key}={value}" for key, value in kwargs.items())
    return [
        Case(
            f"5 groups of 8 random 0/1 rewards (seed 0), group_size=8{suffix}",
            args=(seeded_rewards(5, 8, 0, binary=True), 8),
            kwargs=dict(kwargs),
        ),
        Case(
            f"3 groups of 5 rewards uniform in [0, 1) (seed 1), group_size=5{suffix}",
            args=(seeded_rewards(3, 5, 1, binary=False), 5),
            kwargs=dict(kwargs),
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

    def _run_with_grad(self, fn: Callable) -> GradOutput:
        """Call `fn`, then backpropagate from its (scalarised) output to the `wrt` inputs."""
        args, kwargs, leaves = self._inputs_with_grad()
        value = fn(*args, **kwargs)
        output = self._pick_output(value)
        if not isinstance(output, torch.Tensor):
            return GradOutput(value, None)
        if output.grad_fn is None and not output.requires_grad:
            return GradOutput(value, None, detached=True)
        grads = torch.autograd.grad(_to_scalar(output), list(leaves.values()), allow_unused=True)
        zeros_if_unused = [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, leaves.values())]
        return GradOutput(value, dict(zip(leaves, zeros_if_unused)))

    def expected_output(self, reference: Callable | None) -> GradOutput:
        """The reference's value and gradients."""
        reference = self.reference or reference
        if reference is None:
            raise ValueError(f"GradCase {self.description!r} needs a reference function.")
        return self._run_with_grad(reference)

    def student_output(self, fn: Callable) -> GradOutput:
        """The student's value and gradients (exceptions propagate)."""
        return self._run_with_grad(fn)

    def verdict(self, got: GradOutput, want: GradOutput) -> tuple[str | None, str]:
        """Check the value, then that the output is attached, then each gradient."""
        problem = compare(got.value, want.value, self.atol, self.rtol)
        if problem:
            return f"value WRONG: {problem}", ""
        if got.detached:
            return (
                "value ok | your output is detached from the inputs (it has no grad_fn), so no gradient "
                "can flow: avoid .detach(), .item(), .numpy() and torch.tensor(...) on intermediate results.",
                "",
            )
        return self._grad_verdict(got.grads, want.grads)

    def _grad_verdict(self, got: dict, want: dict) -> tuple[str | None, str]:
        """Compare gradients input by input, karpathy style: `value ok | grad ok | maxdiff ...`."""
        worst = 0.0
        for key in want:
            worst = max(worst, max_abs_diff(got[key], want[key]))
            problem = compare_tensors(got[key], want[key], self.atol, self.rtol)
            if problem:
                return f"value ok | grad WRONG with respect to `{key}`: {problem}", ""
        return None, f"value ok | grad ok | maxdiff {worst:.1e}"


# --------------------------------------------------------------------------- exercises


def _one_line_error(error: BaseException) -> str:
    """`TypeName: message` on one line, shortened."""
    text = " ".join(str(error).split())
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 3] + "..."


def _warning_note(caught: list) -> str:
    """' (warning seen: ...)' for the first warning raised by the student's code, else ''."""
    if not caught:
        return ""
    first = caught[0]
    return f" (warning seen: {first.category.__name__}: {' '.join(str(first.message).split())})"


def _run_student(case: Case, fn: Callable) -> tuple[Any, BaseException | None, str]:
    """Run the student's function on one case; return (output, exception or None, warning note)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
        warnings.simplefilter("always")
        try:
            return case.student_output(fn), None, _warning_note(caught)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # noqa: BLE001 - the student's code may raise anything
            return None, error, _warning_note(caught)


class Question:
    """An exercise with a hint and a solution only (e.g. a Markdown / free-answer question)."""

    def __init__(self, name: str, hint: str = "", solution: str = ""):
        """Args: name shown in messages; hint and solution as Markdown text."""
        self.name = name
        self._hint = hint
        self._solution = solution

    def checked(self, evaluate: Callable[[], Result]) -> Result:
        """Run an evaluation: a checker bug becomes "Could not check"; strict mode raises unless it is correct."""
        try:
            result = evaluate()
        except KeyboardInterrupt:
            raise
        except Exception as error:  # noqa: BLE001 - a checker bug must not crash the notebook
            result = Result(self.name, Outcome.UNCHECKABLE, f"internal checker error: {_one_line_error(error)}")
        if strict_mode() and not result.passed:
            raise AssertionError(str(result))
        return result

    def hint(self) -> Note:
        """Show the hint."""
        return Note(f"Hint ({self.name})", self._hint or "No hint for this one.")

    def solution(self) -> Note:
        """Show the solution."""
        return Note(f"Solution ({self.name})", self._solution or "No solution text for this one.")


FreeAnswer = Question


class Exercise(Question):
    """A code exercise: run a student's function on a list of cases and report the outcome."""

    def __init__(
        self,
        name: str,
        cases: Sequence[Case],
        hint: str = "",
        solution: str = "",
        reference: Callable | None = None,
    ):
        """Args: name; cases to run; hint (Markdown); solution (Python code); reference used by cases
        that have neither their own reference nor an `expected` value."""
        super().__init__(name, hint, solution)
        self.cases = list(cases)
        self.reference = reference

    def solution(self) -> Note:
        """Show the solution code."""
        if not self._solution:
            return super().solution()
        return Note(f"Solution ({self.name})", f"```python\n{self._solution.strip()}\n```")

    def check(self, fn: Callable) -> Result:
        """Check `fn` on every case; return a Result (and raise AssertionError in strict mode unless correct)."""
        return self.checked(lambda: self._evaluate(fn))

    def _evaluate(self, fn: Callable) -> Result:
        """Run the cases in order and stop at the first one that does not pass."""
        if not callable(fn):
            return Result(self.name, Outcome.UNCHECKABLE, f"check() needs your function, but got {_describe(fn)}.")
        details = []
        for case in self.cases:
            failure = self._check_case(case, fn)
            if isinstance(failure, Result):
                return failure
            if failure:
                details.append(f"{case.description}: {failure}")
        summary = f"passed {len(self.cases)} of {len(self.cases)} cases."
        return Result(self.name, Outcome.CORRECT, "\n".join([summary, *details]))

    def _check_case(self, case: Case, fn: Callable) -> Result | str:
        """A failing Result for this case, or the detail line of a passing case."""
        want = case.expected_output(self.reference)
        got, error, note = _run_student(case, fn)
        where = f"case `{case.description}`"
        if isinstance(error, NotImplementedError):
            return Result(self.name, Outcome.NOT_ATTEMPTED, "replace `raise NotImplementedError` with your code.")
        if error is not None:
            message = f"{where}: your function raised {_one_line_error(error)}{note}"
            return Result(self.name, Outcome.UNCHECKABLE, message)
        problem, detail = case.verdict(got, want)
        if problem:
            return Result(self.name, Outcome.INCORRECT, f"{where}: {problem}{note}")
        return detail
