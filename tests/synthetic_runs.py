"""Synthetic runs for checker tests, in a module of their own so that several test files share one builder."""

from rlvr.runs import RunResult
from rlvr.train import RLConfig


def run_with(steps: int = 20, **curves) -> RunResult:
    """A RunResult of `steps` steps whose history holds the given curves (a constant, or a list of `steps` values)."""
    values = {key: curve if isinstance(curve, list) else [curve] * steps for key, curve in curves.items()}
    return RunResult(RLConfig(), [{key: values[key][i] for key in values} for i in range(steps)])
