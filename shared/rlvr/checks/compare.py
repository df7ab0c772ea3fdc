"""Comparing a learner's output with the expected one: a one-sentence problem (or None), and both values shown side
by side ("expected [0.75, -0.25], got [0.667, -0.333]") for the smallest case that fails."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from rlvr.checks.guard import describe
from rlvr.i18n import N_, _

DEFAULT_ATOL = 1e-5
DEFAULT_RTOL = 1e-4
SHOWN_ENTRIES = 8  # entries of a tensor shown in a message
LOW_PRECISION = (torch.float16, torch.bfloat16)


def dtype_kind(dtype: torch.dtype) -> str:
    """'floating-point', 'integer', 'boolean' or 'complex'."""
    if dtype == torch.bool:
        return N_("boolean")
    if dtype.is_floating_point:
        return N_("floating-point")
    if dtype.is_complex:
        return N_("complex")
    return N_("integer")


def nonfinite_problem(got: torch.Tensor, want: torch.Tensor) -> str | None:
    """A sentence if `got` has NaN/inf where the reference is finite, else None."""
    if not (got.is_floating_point() or got.is_complex()):
        return None
    unexpected = ~torch.isfinite(got) & torch.isfinite(want)
    if not unexpected.any():
        return None
    kind = "NaN" if torch.isnan(got[unexpected]).any() else "inf"
    return _(
        "your output contains {kind} ({n} of {total} entries): look for a division by zero (e.g. a std of equal "
        "rewards) or a log of 0."
    ).format(kind=kind, n=int(unexpected.sum()), total=got.numel())


def precision_problem(got: torch.Tensor, want: torch.Tensor) -> str | None:
    """A sentence if `got` is half precision (bfloat16 / float16) where a float32 or float64 result is expected."""
    if got.dtype in LOW_PRECISION and want.dtype not in LOW_PRECISION and want.is_floating_point():
        return _(
            "your output is {dtype}, which keeps only 2 to 3 significant digits: keep the computation in the inputs' "
            "precision ({wanted}) and do not convert to a half-precision type."
        ).format(dtype=got.dtype, wanted=want.dtype)
    return None


def compare_tensors(got: torch.Tensor, want: torch.Tensor, atol: float, rtol: float) -> str | None:
    """Compare two tensors; return a one-sentence problem or None."""
    got, want = got.detach().cpu(), want.detach().cpu()
    if tuple(got.shape) != tuple(want.shape):
        return _("your output has shape {got} but shape {want} was expected.").format(
            got=tuple(got.shape), want=tuple(want.shape)
        )
    if dtype_kind(got.dtype) != dtype_kind(want.dtype):
        return _("your output has dtype {dtype} but a {kind} tensor was expected (e.g. {wanted}).").format(
            dtype=got.dtype, kind=_(dtype_kind(want.dtype)), wanted=want.dtype
        )
    problem = nonfinite_problem(got, want) or precision_problem(got, want)
    if problem:
        return problem
    if want.dtype == torch.bool or not (want.is_floating_point() or want.is_complex()):
        if torch.equal(got, want):
            return None
        return _("{n} of {total} entries differ from the expected values.").format(
            n=int((got != want).sum()), total=want.numel()
        )
    got = got.to(want.dtype)
    if torch.allclose(got, want, atol=atol, rtol=rtol, equal_nan=True):
        return None
    return _("the values are off (max abs difference {diff}).").format(diff=f"{max_abs_diff(got, want):.3g}")


def max_abs_diff(got: torch.Tensor, want: torch.Tensor) -> float:
    """Largest |got - want| over entries that are finite in both (0.0 when none are)."""
    both_finite = torch.isfinite(got) & torch.isfinite(want)
    if not both_finite.any():
        return 0.0
    return float((got[both_finite].double() - want[both_finite].double()).abs().max())


def as_number(got: Any) -> float | None:
    """`got` as a Python float if it is a single number (int, float, numpy scalar, 1-element tensor/array)."""
    if isinstance(got, bool):
        return None
    if isinstance(got, (int, float, np.number)):
        return float(got)
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        return float(got.detach().double().item())
    if isinstance(got, np.ndarray) and got.size == 1:
        return float(got.item())
    return None


def compare_numbers(got: Any, want: float, atol: float, rtol: float) -> str | None:
    """Compare a returned single number with an expected float; return a problem sentence or None."""
    number = as_number(got)
    if number is None:
        if isinstance(got, (torch.Tensor, np.ndarray)):
            return _("your output has shape {shape} but a single number was expected.").format(shape=tuple(got.shape))
        return _("your function returned {value} but a number was expected.").format(value=describe(got))
    if math.isnan(want) and math.isnan(number):
        return None
    if not math.isfinite(number) and math.isfinite(want):
        return _("your output is {number}: look for a division by zero or a log of 0.").format(number=number)
    if math.isclose(number, want, rel_tol=rtol, abs_tol=atol):
        return None
    return _("the value is off (abs difference {diff}).").format(diff=f"{abs(number - want):.3g}")


def compare_sequences(got: Any, want: Sequence, atol: float, rtol: float) -> str | None:
    """Compare a returned tuple/list element-wise with an expected one."""
    kind = type(want).__name__
    if not isinstance(got, (tuple, list)):
        return _("your function returned {value} but a {kind} of {n} items was expected.").format(
            value=describe(got), kind=kind, n=len(want)
        )
    if len(got) != len(want):
        return _("your function returned {n} items but {want} were expected.").format(n=len(got), want=len(want))
    for index, (got_item, want_item) in enumerate(zip(got, want)):
        problem = compare(got_item, want_item, atol, rtol)
        if problem:
            return _("item {index} of the returned {kind}: {problem}").format(index=index, kind=kind, problem=problem)
    return None


def compare(got: Any, want: Any, atol: float = DEFAULT_ATOL, rtol: float = DEFAULT_RTOL) -> str | None:
    """Compare a learner's output with the reference output; return a one-sentence problem or None."""
    if got is None and want is not None:
        return _("your function returned None: did you forget the `return` statement?")
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return _("your function returned {value} but a torch.Tensor was expected.").format(value=describe(got))
        return compare_tensors(got, want, atol, rtol)
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return _("your function returned {value} but a numpy array was expected.").format(value=describe(got))
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
    return None if equal else _("your output differs from the expected value.")


# ----------------------------------------------------------------------------------------------- showing values
def number_text(x: float) -> str:
    """A number in at most 4 significant digits ('0.75', '-0.3333', '2.646', 'nan')."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    return f"{x + 0.0:.4g}"  # + 0.0 turns -0.0 into 0.0


def _flat_text(values: list) -> str:
    """'[a, b, c]' of a flat list of numbers or booleans."""
    return "[" + ", ".join(number_text(v) for v in values) + "]"


def tensor_text(t: torch.Tensor, start: int = 0) -> str:
    """A tensor as a short list: all entries if few, else SHOWN_ENTRIES of them from flat index `start`."""
    t = t.detach().cpu()
    if t.dim() == 0:
        return number_text(t.item())
    if t.numel() <= SHOWN_ENTRIES:
        rows = t.tolist()
        if t.dim() == 1:
            return _flat_text(rows)
        if t.dim() == 2:
            return "[" + ", ".join(_flat_text(r) for r in rows) + "]"
    flat = t.reshape(-1)
    start = max(0, min(start, flat.numel() - SHOWN_ENTRIES))
    end = start + SHOWN_ENTRIES
    if t.dim() > 1:
        where = _("entries {start}-{end} of {total} (flattened)").format(start=start, end=end - 1, total=flat.numel())
    else:
        where = _("entries {start}-{end}").format(start=start, end=end - 1)
    return f"{_flat_text(flat[start:end].tolist())} ({where})"


def value_text(value: Any, start: int = 0) -> str:
    """Any output, shortly: a tensor's entries, a number, a type."""
    if isinstance(value, torch.Tensor):
        return tensor_text(value, start)
    if isinstance(value, np.ndarray):
        return _("a numpy array") + " " + tensor_text(torch.from_numpy(np.asarray(value, dtype=float)), start)
    number = as_number(value)
    if number is not None:
        return number_text(number)
    if isinstance(value, (tuple, list)):
        return _("{value} of {n} items").format(value=describe(value), n=len(value))
    return describe(value)


def first_difference(got: torch.Tensor, want: torch.Tensor) -> int:
    """Flat index of the first entry that differs (0 if none or the shapes differ)."""
    if tuple(got.shape) != tuple(want.shape):
        return 0
    g, w = got.detach().cpu().reshape(-1).double(), want.detach().cpu().reshape(-1).double()
    bad = ~torch.isclose(g, w, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL, equal_nan=True)
    return int(bad.nonzero()[0]) if bad.any() else 0


def expected_got(got: Any, want: Any) -> str:
    """'expected X, got Y' for a learner's output, with shapes when they differ."""
    if isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)) and len(got) == len(want):
        for index, (g, w) in enumerate(zip(got, want)):
            if compare(g, w) is not None:
                return _("item {index}: {pair}").format(index=index, pair=expected_got(g, w))
    if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
        start = max(0, first_difference(got, want) - 2)
        if tuple(got.shape) != tuple(want.shape):
            return _("expected shape {want_shape} {want}, got shape {got_shape} {got}").format(
                want_shape=tuple(want.shape), want=tensor_text(want), got_shape=tuple(got.shape), got=tensor_text(got)
            )
        dtype = f" ({got.dtype})" if got.dtype != want.dtype else ""
        return (
            _("expected {want}, got {got}").format(want=tensor_text(want, start), got=tensor_text(got, start)) + dtype
        )
    return _("expected {want}, got {got}").format(want=value_text(want), got=value_text(got))
