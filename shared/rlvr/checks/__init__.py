"""Exercise checkers for the notebooks (in the style of Kaggle's learntools).

A per-notebook module (``rlvr/checks/nb01.py`` ... ``nb05.py``) defines its exercises like this::

    import torch
    from rlvr.checks import Case, Exercise, FreeAnswer, Mistake


    def _advantages(rewards, group_size):
        \"\"\"Reference solution (kept private: learners see only hint() and solution()).\"\"\"
        r = rewards.view(-1, group_size)
        return (r - r.mean(dim=1, keepdim=True)).reshape(-1)


    advantages = Exercise(
        name="group baseline",
        reference=_advantages,
        cases=[
            Case("rewards [1, 0, 0, 0], group_size=4", args=(torch.tensor([1.0, 0, 0, 0]), 4)),
            Case("two groups [1, 0, 1, 1], group_size=2", args=(torch.tensor([1.0, 0, 1, 1]), 2)),
        ],
        mistakes=[
            Mistake(
                "batch_mean",
                "You subtract the mean of the whole batch, not of each group.",  # names it, one sentence
                "Give every group its own mean.",  # what to change, in words
                lambda rewards, group_size: rewards - rewards.mean(),  # the wrong answer itself
            ),
        ],
        hint=["a nudge that names the idea", "a pointer to the formula (math in $...$, no code)"],
        solution=\"\"\"
    r = rewards.view(-1, group_size)
    ...
    \"\"\",
    )

    why_std = FreeAnswer("why divide by the std?", hint=["...", "..."], solution="...")

In the notebook the learner runs ``advantages.check(my_function)``, ``advantages.hint()`` (``hint(2)`` for the
second level) and ``advantages.solution()``, each as the LAST line of a cell (the returned object displays itself).

``check`` runs the learner's function on every case, each call on fresh copies of the inputs, under a time limit,
with what it prints captured (``rlvr.checks.guard``); the expected output is computed before the call. Outcomes:
Correct; Incorrect (the smallest failing case as "expected ..., got ..."; when the learner's outputs equal one library
entry's on every case, that mistake is named and what to change is said; a function that edits its inputs in place is
told so); Not attempted (the stub's NotImplementedError); Could not check (the function raised, exited or ran out of
time: the error explained in words, with the first lines it printed). ``check`` never raises in normal mode; with
``RLVR_STRICT=1`` any outcome other than correct raises ``AssertionError`` (used when testing the solution notebooks).

A mistake written several ways (another std, another eps) lists the others as ``variants``; two slips made at once
are named together by ``Mistake.both(first, second, fn)`` (name ``first+second``, both sentences, each translated on
its own). A TypeError that the learner's own code gets by calling a function wrongly (a wrong keyword to a package
function) names that function and its parameters; only a call of the learner's function by the checker itself is
blamed on the template's signature. ``tests/test_checks_corpus.py`` holds the learners' answers every checker is held
to.

A case's expected output comes from its own ``reference``, else its ``expected`` value, else the
exercise's ``reference``. Tolerances: ``atol=1e-5, rtol=1e-4`` unless the case sets its own.
Whole-step exercises live in ``rlvr.checks.step`` (notebook 03's GRPO step) and ``rlvr.checks.ppo_step`` (notebook
04's GAE and value loss); they compare stage by stage with the package and name the first stage that differs.
"""

from rlvr.checks.core import (
    Case,
    Exercise,
    FreeAnswer,
    GradCase,
    Mistake,
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
    "Mistake",
    "Note",
    "Outcome",
    "Question",
    "Result",
    "compare",
    "strict_mode",
]
