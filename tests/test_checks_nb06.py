"""Notebook 06's mystery-run checker: Correct, Incorrect with a pointer to a signal, or Not attempted."""

import pytest

from rlvr.checks import nb06
from rlvr.checks.core import Outcome
from rlvr.experiments import gallery
from synthetic_runs import run_with

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


# ------------------------------------------------------------------------------- the look-alike and the second signal
PAIRS = {
    "A": ("lr_too_high", "malformed_fraction"),
    "B": ("greedy_sampling", "grad_norm"),
    "C": ("lr_too_high", "malformed_fraction"),
}


def mystery_runs(malformed_a=0.3, malformed_c_start=1.0):
    """Mystery runs with the readings the look-alikes are told apart by: A's malformed share (well formed at step 0,
    as at lr_too_high's), B's mixed groups and nonzero gradient, C's malformed answers from step 0."""
    healthy = run_with(reward=0.5, accuracy=0.5, malformed_fraction=0.0, grad_norm=0.5, all_same_group_fraction=0.2)
    a = run_with(reward=0.02, malformed_fraction=[0.0] + [malformed_a] * 19, grad_norm=0.4, all_same_group_fraction=0.5)
    b = run_with(reward=0.3, malformed_fraction=0.0, grad_norm=0.3, all_same_group_fraction=0.3)
    c = run_with(
        reward=0.0, malformed_fraction=[malformed_c_start] + [1.0] * 19, grad_norm=0.0, all_same_group_fraction=1.0
    )
    return {"mystery A": a, "mystery B": b, "mystery C": c}, healthy


def test_the_model_pairs_are_correct_and_say_what_rules_each_look_alike_out():
    mysteries, healthy = mystery_runs()
    result = nb06.second_signal.check(lambda: dict(PAIRS), mysteries, healthy)
    assert result.outcome is Outcome.CORRECT, result.message
    assert "run C: malformed_fraction rules out lr_too_high: malformed share at step 0 is 1" in result.message
    assert "run B: grad_norm rules out greedy_sampling: largest gradient norm of a step is 0.3" in result.message
    assert nb06.second_signal.check(stub, mysteries, healthy).outcome is Outcome.NOT_ATTEMPTED


def test_a_signal_is_judged_on_the_learners_own_run():
    """The same pair is right on a run whose reading clears the look-alike's limit by the margin, wrong on one that
    does not (run A's malformed share over the last 10 steps: lr_too_high's is above 0.9, the margin 5 points)."""
    mysteries, healthy = mystery_runs(malformed_a=0.87)
    result = nb06.second_signal.check(lambda: dict(PAIRS), mysteries, healthy)
    assert result.outcome is Outcome.INCORRECT
    assert "run A: on your run, malformed_fraction does not rule out lr_too_high" in result.message
    assert "malformed share, last 10 steps is 0.87, where lr_too_high shows above 0.9" in result.message
    mysteries, healthy = mystery_runs(malformed_c_start=0.0)  # a C that started well formed: not told apart there
    result = nb06.second_signal.check(lambda: dict(PAIRS), mysteries, healthy)
    assert result.outcome is Outcome.INCORRECT and "run C: on your run" in result.message


@pytest.mark.parametrize(
    "run, pair, words",
    [
        ("A", ("flipped_sign", "reward"), "does not share its most visible symptom; which other gallery run's reward"),
        ("B", ("lr_too_high", "reward"), "which other gallery run's policy stays near its warm-up?"),
        ("C", ("greedy", "reward"), "'greedy' is not a gallery run"),
        ("C", ("lr_too_high", "malformed"), "'malformed' is not a signal of the history"),
        ("C", ("lr_too_high", "entropy"), "the gallery does not read lr_too_high's symptom from entropy"),
        ("C", ("lr_too_high", "reward"), "on your run, reward does not rule out lr_too_high"),
        ("B", "greedy_sampling", "give a pair (look-alike, signal)"),
    ],
)
def test_each_wrong_pair_is_named(run, pair, words):
    mysteries, healthy = mystery_runs()
    result = nb06.second_signal.check(lambda: {**PAIRS, run: pair}, mysteries, healthy)
    assert result.outcome is Outcome.INCORRECT and f"run {run}: " in result.message and words in result.message
    assert "2 of 3 right" in result.message


def test_a_wrong_look_alike_is_pointed_at_without_its_name():
    for truth, pointer in nb06.LOOKALIKE_POINTERS.items():
        assert not any(name in pointer for name in nb06.CHOICES), truth
    assert set(nb06.LOOKALIKE_POINTERS) == set(gallery.MYSTERIES.values())


def test_the_second_signal_checker_needs_the_runs():
    mysteries, healthy = mystery_runs()
    for args in ((), (None, healthy), (mysteries, None), ({"mystery A": mysteries["mystery A"]}, healthy)):
        result = nb06.second_signal.check(lambda: dict(PAIRS), *args)
        assert result.outcome is Outcome.UNCHECKABLE and "pass the notebook's `mysteries`" in result.message
    assert nb06.second_signal.check(lambda: ["A"], mysteries, healthy).outcome is Outcome.INCORRECT
    assert nb06.second_signal.check(lambda: 1 / 0, mysteries, healthy).outcome is Outcome.UNCHECKABLE


def test_the_runs_are_found_by_their_letter_in_any_language():
    mysteries, healthy = mystery_runs()
    translated = {label.replace("mystery", "神秘运行"): run for label, run in mysteries.items()}
    assert nb06.second_signal.check(lambda: dict(PAIRS), translated, healthy).outcome is Outcome.CORRECT
