"""Bring your own CS336 assignment-5 code (`python -m rlvr a5 PATH`, or `rlvr.a5.check(PATH)` in a notebook).

The edition (spring 2025 or 2026) is read from the checkout's tests/adapters.py; every function the adapters expose is
checked against our reference (`rlvr.cs336`) on random inputs and edge cases, and named when wrong (`library`,
`verdicts`); then the course's 70k-parameter model trains with the student's code, beside the package's run on the
same seed (`training`, `diagnose`). Student code runs in a subprocess on a copy of the checkout (`sandbox`, `worker`,
`session`). docs/a5.md is the student's guide.
"""

from __future__ import annotations


def check(path, steps: int = 200, seed: int = 0, train: bool = True):
    """Check a checkout from a notebook cell: the report (it displays the table and the curves inline)."""
    from .notebook import NotebookReport
    from .session import check_checkout

    return NotebookReport(check_checkout(path, steps=steps, seed=seed, train=train))
