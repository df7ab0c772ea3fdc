"""Which edition of CS336 assignment 5 a checkout is, read from its `tests/adapters.py` without running it: the
parameters of each `run_*` adapter, and which adapters are still the starter's `raise NotImplementedError`.

Spring 2025: `compute_group_normalized_rewards(reward_fn, rollout_responses, repeated_ground_truths, group_size,
advantage_eps, normalize_by_std)`, `grpo_microbatch_train_step`, `masked_mean`, ... Spring 2026:
`compute_rollout_rewards`, `compute_group_normalized_rewards(raw_rewards, group_size, baseline, ...)`,
`aggregate_loss_across_microbatch`, `grpo_train_step`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from ..cs336 import EDITIONS
from ..i18n import _

ADAPTERS = Path("tests") / "adapters.py"
ONLY_IN = {  # an adapter's name or first parameter that one edition has and the other does not
    "2025": {"grpo_microbatch_train_step", "masked_mean", "compute_grpo_clip_loss", "normalize_by_std"},
    "2026": {"grpo_train_step", "compute_rollout_rewards", "aggregate_loss_across_microbatch", "advantage_normalizer"},
}


class CheckoutError(ValueError):
    """A path that cannot be checked (the message is one line)."""


@dataclass
class Adapters:
    """What a checkout's tests/adapters.py says: its edition, each adapter's parameters, which are stubs."""

    edition: str
    parameters: dict[str, list[str]]  # the assignment's function name -> the adapter's parameter names
    stubs: set[str] = field(default_factory=set)  # adapters whose body is only `raise NotImplementedError`

    @property
    def functions(self) -> list[str]:
        """The edition's functions, in the assignment's order."""
        return list(EDITIONS[self.edition])


def adapters_path(checkout) -> Path:
    """tests/adapters.py of a checkout, or CheckoutError saying in one line why the path cannot be one."""
    root = Path(checkout).expanduser()
    if not root.exists():
        raise CheckoutError(_("{path}: no such file or folder").format(path=checkout))
    if not root.is_dir():
        raise CheckoutError(_("{path} is a file; give the folder of your assignment-5 checkout").format(path=checkout))
    path = root / ADAPTERS
    if not path.is_file():
        raise CheckoutError(
            _(
                "{path} has no tests/adapters.py, so it is not an assignment-5 checkout (give the folder that holds "
                "tests/ and cs336_alignment/)"
            ).format(path=checkout)
        )
    return path


def _is_stub(node: ast.FunctionDef) -> bool:
    """The body is a docstring (optional) and `raise NotImplementedError` (or `...` / `pass`)."""
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1:
        return False
    statement = body[0]
    if isinstance(statement, ast.Pass):
        return True
    if not isinstance(statement, ast.Raise) or statement.exc is None:
        return False
    exc = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def read_adapters(path: Path) -> dict[str, tuple[list[str], bool]]:
    """The assignment's name -> (the adapter's parameters, is it a stub) for every `def run_*` in the file.

    A syntax error raises CheckoutError naming the file and line."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except SyntaxError as err:
        raise CheckoutError(
            _("{path}, line {line}: syntax error: {message}").format(path=path, line=err.lineno, message=err.msg)
        ) from None
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("run_"):
            params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
            found[node.name[len("run_") :]] = (params, _is_stub(node))
    return found


def edition_of(found: dict[str, tuple[list[str], bool]]) -> str | None:
    """'2025' or '2026' from the adapters' names and parameters (the one with more marks), None if neither."""
    marks = {edition: 0 for edition in ONLY_IN}
    for name, (params, _stub) in found.items():
        for edition, only in ONLY_IN.items():
            marks[edition] += (name in only) + sum(p in only for p in params)
    best = max(marks, key=marks.get)
    if marks[best] == 0 or list(marks.values()).count(marks[best]) > 1:
        return None
    return best


def inspect_checkout(checkout) -> Adapters:
    """The Adapters of a checkout, or CheckoutError (one line) for a path that is not one."""
    path = adapters_path(checkout)
    found = read_adapters(path)
    edition = edition_of(found)
    if edition is None:
        raise CheckoutError(
            _(
                "{path}: its run_* adapters match neither the spring 2025 nor the spring 2026 edition of assignment 5"
            ).format(path=path)
        )
    names = EDITIONS[edition]
    return Adapters(
        edition,
        {name: params for name, (params, _stub) in found.items() if name in names},
        {name for name, (_params, stub) in found.items() if stub and name in names},
    )
