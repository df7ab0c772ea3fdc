"""Notebook 06's mystery-run checker: Correct, Incorrect with a pointer to a signal, or Not attempted."""

import pytest

from rlvr.checks import nb06
from rlvr.checks.core import Outcome
from rlvr.experiments import gallery

RIGHT = dict(gallery.MYSTERIES)


def stub():
    raise NotImplementedError


def test_the_right_diagnosis_is_correct_and_a_blank_one_not_attempted():
    assert nb06.mystery.check(lambda: dict(RIGHT)).outcome is Outcome.CORRECT
    assert nb06.mystery.check(stub).outcome is Outcome.NOT_ATTEMPTED
    assert nb06.mystery.check(lambda: {run: None for run in RIGHT}).outcome is Outcome.NOT_ATTEMPTED


@pytest.mark.parametrize("run", list(RIGHT))
def test_a_wrong_name_gets_a_pointer_to_the_signal_not_the_answer(run):
    wrong = next(name for name in nb06.CHOICES if name != RIGHT[run])
    result = nb06.mystery.check(lambda: {**RIGHT, run: wrong})
    assert result.outcome is Outcome.INCORRECT
    assert f"run {run}: not {wrong}" in result.message and nb06.POINTERS[RIGHT[run]] in result.message
    assert RIGHT[run] not in result.message  # the pointer never names the answer


def test_bad_inputs_get_one_sentence():
    for bad, words in ((lambda: ["A"], "return a dict"), (lambda: {**RIGHT, "A": "nope"}, "is not a gallery run")):
        result = nb06.mystery.check(bad)
        assert result.outcome is Outcome.INCORRECT and words in result.message
    assert nb06.mystery.check().outcome is Outcome.UNCHECKABLE
    assert nb06.mystery.check(lambda: 1 / 0).outcome is Outcome.UNCHECKABLE


def test_every_breakage_has_a_pointer_and_hints_hold_no_answer():
    assert set(nb06.POINTERS) == set(nb06.CHOICES)
    for level in (1, 2):
        text = (
            nb06.mystery.hint(level).text
            if hasattr(nb06.mystery.hint(level), "text")
            else str(nb06.mystery.hint(level))
        )
        assert not any(name in text for name in RIGHT.values())
