"""Exercise checkers for the notebooks (in the style of Kaggle's learntools).

A per-notebook module (``rlvr/checks/nb01.py`` ... ``nb05.py``) defines its exercises like this::

    import torch
    from rlvr.checks import Case, Exercise, FreeAnswer, GradCase


    def _advantages(rewards, group_size, normalize_by_std=True):
        \"\"\"Reference solution (kept private: students see only hint() and solution()).\"\"\"
        groups = rewards.view(-1, group_size)
        centered = groups - groups.mean(dim=1, keepdim=True)
        if normalize_by_std:
            centered = centered / (groups.std(dim=1, keepdim=True) + 1e-6)
        return centered.flatten()


    advantages = Exercise(
        name="group-normalised advantages",
        reference=_advantages,
        cases=[
            Case("rewards [1,0,0,0], group_size=4, normalize_by_std=False",
                 args=(torch.tensor([1.0, 0, 0, 0]), 4), kwargs={"normalize_by_std": False}),
            Case("rewards [1,1,1,1], group_size=4 (all equal: std is 0)",
                 args=(torch.tensor([1.0, 1, 1, 1]), 4)),
        ],
        hint="Reshape to `(num_groups, group_size)` and subtract the mean of each row.",
        solution=\"\"\"
    groups = rewards.view(-1, group_size)
    ...
    \"\"\",
    )

    def _pg_loss(logprobs, advantages):
        return -(logprobs * advantages).mean()


    loss_grad = Exercise(
        name="policy-gradient loss (value and gradient)",
        reference=_pg_loss,
        cases=[GradCase("3 tokens", kwargs={"logprobs": torch.randn(3), "advantages": torch.ones(3)},
                        wrt=["logprobs"])],
    )

    why_std = FreeAnswer("why divide by the std?", hint="...", solution="...")

In the notebook the student runs ``advantages.check(compute_advantages)``, ``advantages.hint()``
and ``advantages.solution()``, each as the LAST line of a cell (the returned object displays itself).
Call the student's function only through ``check`` (it reports "not attempted" for a stub that raises
NotImplementedError instead of crashing the cell). With ``RLVR_STRICT=1`` any outcome other than
correct raises ``AssertionError`` (used when testing the solution notebooks).

A case's expected output comes from its own ``reference``, else its ``expected`` value, else the
exercise's ``reference``. Tolerances: ``atol=1e-5, rtol=1e-4`` unless the case sets its own.
"""

from rlvr.checks.core import (
    Case,
    Exercise,
    FreeAnswer,
    GradCase,
    Note,
    Outcome,
    Question,
    Result,
    compare,
    strict_mode,
)

__all__ = [
    "Case",
    "Exercise",
    "FreeAnswer",
    "GradCase",
    "Note",
    "Outcome",
    "Question",
    "Result",
    "compare",
    "strict_mode",
]
