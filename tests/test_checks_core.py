"""Tests for the exercise checker: outcomes, messages, strict mode and the gradient case."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.checks import Case, Exercise, FreeAnswer, GradCase, Mistake, Outcome, Result, compare, strict_mode
from rlvr.config import STRICT_ENV


@pytest.fixture(autouse=True)
def normal_mode(monkeypatch):
    """Every test starts outside strict mode."""
    monkeypatch.delenv(STRICT_ENV, raising=False)


def reference_advantages(rewards, group_size, normalize_by_std=True):
    """Group-normalised advantages (the 'teacher' solution)."""
    groups = rewards.view(-1, group_size)
    centered = groups - groups.mean(dim=1, keepdim=True)
    if normalize_by_std:
        centered = centered / (groups.std(dim=1, keepdim=True) + 1e-6)
    return centered.flatten()


def advantages_without_eps(rewards, group_size, normalize_by_std=True):
    """A buggy student version: divides by a std that is 0 for equal rewards."""
    groups = rewards.view(-1, group_size)
    centered = groups - groups.mean(dim=1, keepdim=True)
    if normalize_by_std:
        centered = centered / groups.std(dim=1, keepdim=True)
    return centered.flatten()


FIRST_CASE = "rewards [1,0,0,0], group_size=4, normalize_by_std=False"


def make_exercise():
    """An exercise with a plain case, an all-equal case and a two-group case."""
    return Exercise(
        name="advantages",
        reference=reference_advantages,
        cases=[
            Case(FIRST_CASE, args=(torch.tensor([1.0, 0, 0, 0]), 4), kwargs={"normalize_by_std": False}),
            Case("rewards [1,1,1,1], group_size=4", args=(torch.tensor([1.0, 1, 1, 1]), 4)),
            Case("two groups of 2", args=(torch.tensor([1.0, 0, 0, 1]), 2)),
        ],
        hint="Reshape to (num_groups, group_size).",
        solution="groups = rewards.view(-1, group_size)",
    )


def check(fn):
    """Check `fn` against the advantages exercise."""
    return make_exercise().check(fn)


# ----------------------------------------------------------------------------- the four outcomes


def test_reference_is_correct():
    result = check(reference_advantages)
    assert result.outcome is Outcome.CORRECT
    assert result.passed


def test_stub_is_not_attempted():
    def stub(rewards, group_size, normalize_by_std=True):
        raise NotImplementedError

    assert check(stub).outcome is Outcome.NOT_ATTEMPTED


def test_other_exception_is_uncheckable_with_one_line_message():
    def crashes(rewards, group_size, normalize_by_std=True):
        raise ValueError("boom\nsecond line")

    result = check(crashes)
    assert result.outcome is Outcome.UNCHECKABLE
    assert "ValueError: boom second line" in result.message
    assert "Traceback" not in result.message
    assert "\n" not in result.message


def test_wrong_values_are_incorrect_and_show_the_smallest_failing_case():
    """rewards * 2 fails on every case; the smallest one (4 rewards, no keyword) is the one shown."""
    result = check(lambda rewards, group_size, normalize_by_std=True: rewards * 2)
    assert result.outcome is Outcome.INCORRECT
    assert "On `rewards [1,1,1,1], group_size=4` (the smallest case that fails)" in result.message


def test_incorrect_message_shows_expected_against_got():
    exercise = Exercise("double", [Case("x = [1, -2]", args=(torch.tensor([1.0, -2.0]),))], reference=lambda x: 2 * x)
    result = exercise.check(lambda x: x + 10.0)
    assert result.outcome is Outcome.INCORRECT
    assert "Expected [2, -4], got [11, 8]" in result.message


def test_later_case_failure_is_reported():
    def ignores_std(rewards, group_size, normalize_by_std=True):
        return reference_advantages(rewards, group_size, normalize_by_std=False)

    result = check(ignores_std)
    assert result.outcome is Outcome.INCORRECT
    assert "two groups of 2" in result.message


# ----------------------------------------------------------------------------- one-sentence messages


def test_nan_output_is_reported():
    result = check(advantages_without_eps)
    assert result.outcome is Outcome.INCORRECT
    assert "NaN" in result.message
    assert "rewards [1,1,1,1]" in result.message


def test_wrong_shape_is_reported():
    result = check(lambda rewards, group_size, normalize_by_std=True: rewards.view(-1, group_size))
    assert result.outcome is Outcome.INCORRECT
    assert "shape (1, 4)" in result.message


def test_integer_dtype_is_reported():
    result = check(lambda rewards, group_size, normalize_by_std=True: rewards.long())
    assert result.outcome is Outcome.INCORRECT
    assert "torch.int64" in result.message
    assert "floating-point" in result.message


def test_returning_none_is_reported():
    result = check(lambda rewards, group_size, normalize_by_std=True: None)
    assert result.outcome is Outcome.INCORRECT
    assert "None" in result.message and "return" in result.message


def test_returning_a_list_instead_of_a_tensor_is_reported():
    result = check(lambda rewards, group_size, normalize_by_std=True: rewards.tolist())
    assert result.outcome is Outcome.INCORRECT
    assert "a list" in result.message and "torch.Tensor" in result.message


def test_numpy_nan_warning_is_caught_and_mentioned():
    exercise = Exercise("ratio", [Case("zeros", args=(np.zeros(3),), expected=np.zeros(3))])
    result = exercise.check(lambda x: x / x)
    assert result.outcome is Outcome.INCORRECT
    assert "NaN" in result.message and "RuntimeWarning" in result.message


def test_function_editing_its_input_in_place_is_told_so_and_cannot_spoil_the_case():
    def edits_input(rewards, group_size, normalize_by_std=True):
        answer = reference_advantages(rewards.clone(), group_size, normalize_by_std)
        rewards.fill_(123.0)
        return answer

    exercise = make_exercise()
    result = exercise.check(edits_input)
    assert result.outcome is Outcome.INCORRECT and result.mistake == "in_place"
    assert "changes its input `rewards` in place" in result.message
    assert exercise.cases[0].args[0].tolist() == [1.0, 0, 0, 0]


def test_a_wrong_answer_that_also_edits_its_input_is_told_both():
    def subtracts_in_place(rewards, group_size, normalize_by_std=True):
        rewards -= 1.0
        return rewards

    result = check(subtracts_in_place)
    assert result.outcome is Outcome.INCORRECT and "Also: your function changes its input" in result.message


def test_a_half_precision_output_is_named():
    result = check(
        lambda rewards, group_size, normalize_by_std=True: reference_advantages(
            rewards, group_size, normalize_by_std
        ).bfloat16()
    )
    assert result.outcome is Outcome.INCORRECT and "torch.bfloat16" in result.message
    assert "half-precision" in result.message


def test_a_float64_output_is_accepted():
    result = check(
        lambda rewards, group_size, normalize_by_std=True: reference_advantages(
            rewards.double(), group_size, normalize_by_std
        )
    )
    assert result.passed, result.message


# ----------------------------------------------------------------------------- tuples and scalars


def mean_and_max(x):
    """Returns a tuple (tensor mean, python float max)."""
    return x.mean(), float(x.max())


def make_tuple_exercise():
    return Exercise("stats", [Case("x = [1, 2, 6]", args=(torch.tensor([1.0, 2.0, 6.0]),))], reference=mean_and_max)


def test_tuple_output_is_compared_element_wise():
    exercise = make_tuple_exercise()
    assert exercise.check(mean_and_max).outcome is Outcome.CORRECT
    result = exercise.check(lambda x: (x.mean(), float(x.min())))
    assert result.outcome is Outcome.INCORRECT
    assert "item 1" in result.message


def test_tuple_of_wrong_length_is_reported():
    result = make_tuple_exercise().check(lambda x: (x.mean(),))
    assert result.outcome is Outcome.INCORRECT
    assert "1 items" in result.message


def test_scalar_float_accepts_a_zero_dim_tensor_and_rejects_a_wrong_value():
    exercise = Exercise("mean", [Case("x = [1, 2]", args=([1.0, 2.0],), expected=1.5)])
    assert exercise.check(lambda x: torch.tensor(x).mean()).outcome is Outcome.CORRECT
    assert exercise.check(lambda x: sum(x) / len(x)).outcome is Outcome.CORRECT
    assert exercise.check(lambda x: max(x)).outcome is Outcome.INCORRECT


def test_expected_value_of_a_case_overrides_the_exercise_reference():
    exercise = Exercise("add one", [Case("x = 1", args=(1.0,), expected=2.0)], reference=lambda x: x)
    assert exercise.check(lambda x: x + 1).outcome is Outcome.CORRECT
    assert exercise.check(lambda x: x).outcome is Outcome.INCORRECT


def test_compare_respects_tolerance():
    want = torch.tensor([1.0, 2.0])
    assert compare(want + 1e-7, want) is None
    assert compare(want + 1e-2, want) is not None


# ----------------------------------------------------------------------------- gradient cases


def reference_loss(logprobs, advantages):
    """Policy-gradient loss."""
    return -(logprobs * advantages).mean()


def make_grad_exercise():
    inputs = {"logprobs": torch.tensor([-1.0, -0.5, -2.0]), "advantages": torch.tensor([1.0, -1.0, 0.5])}
    return Exercise("pg loss", [GradCase("3 tokens", kwargs=inputs, wrt=["logprobs"])], reference=reference_loss)


def test_gradient_case_accepts_the_reference():
    result = make_grad_exercise().check(reference_loss)
    assert result.outcome is Outcome.CORRECT
    assert "value ok | grad ok | maxdiff" in result.message


def test_gradient_case_catches_a_wrong_gradient_with_the_right_value():
    def wrong_grad(logprobs, advantages):
        value = reference_loss(logprobs, advantages)
        return value.detach() + (logprobs - logprobs.detach()).sum()

    result = make_grad_exercise().check(wrong_grad)
    assert result.outcome is Outcome.INCORRECT
    assert "value ok" in result.message and "grad WRONG" in result.message and "logprobs" in result.message


def test_gradient_case_reports_a_detached_output():
    result = make_grad_exercise().check(lambda logprobs, advantages: reference_loss(logprobs, advantages).detach())
    assert result.outcome is Outcome.INCORRECT
    assert "detached" in result.message


def test_gradient_case_reports_a_wrong_value():
    result = make_grad_exercise().check(lambda logprobs, advantages: (logprobs * advantages).mean())
    assert result.outcome is Outcome.INCORRECT
    assert "value WRONG" in result.message


def test_gradient_case_for_a_vector_output():
    exercise = Exercise(
        "square", [GradCase("x = [1, 2, 3]", args=(torch.tensor([1.0, 2.0, 3.0]),), wrt=[0])], reference=lambda x: x**2
    )
    assert exercise.check(lambda x: x * x).outcome is Outcome.CORRECT
    assert exercise.check(lambda x: x.detach() * x).outcome is Outcome.INCORRECT


# ----------------------------------------------------------------------------- strict mode and robustness


@pytest.mark.parametrize("text, expected", [("1", True), ("true", True), (" Yes ", True), ("0", False), ("", False)])
def test_strict_mode_parses_the_environment(monkeypatch, text, expected):
    monkeypatch.setenv(STRICT_ENV, text)
    assert strict_mode() is expected


def test_strict_mode_raises_unless_correct(monkeypatch):
    def stub(rewards, group_size, normalize_by_std=True):
        raise NotImplementedError

    monkeypatch.setenv(STRICT_ENV, "1")
    assert check(reference_advantages).passed
    with pytest.raises(AssertionError, match="shape"):
        check(lambda rewards, group_size, normalize_by_std=True: rewards[:2])
    with pytest.raises(AssertionError, match="Not attempted"):
        check(stub)


def test_normal_mode_never_raises_even_on_a_checker_bug():
    def broken_reference(x):
        raise RuntimeError("bug in the exercise")

    exercise = Exercise("broken", [Case("x = 1", args=(1,))], reference=broken_reference)
    result = exercise.check(lambda x: x)
    assert result.outcome is Outcome.UNCHECKABLE
    assert "bug in the exercise" in result.message


def test_passing_something_that_is_not_a_function_is_uncheckable():
    result = make_exercise().check(42)
    assert result.outcome is Outcome.UNCHECKABLE
    assert "an int" in result.message and "without brackets" in result.message


@pytest.mark.parametrize("args, count", [((), "given 0"), ((reference_advantages, reference_advantages), "given 2")])
def test_a_wrong_call_of_check_answers_in_one_sentence(args, count):
    result = make_exercise().check(*args)
    assert result.outcome is Outcome.UNCHECKABLE and count in result.message and "\n" not in result.message


# ----------------------------------------------------------------------------- display, hint, solution


def test_result_displays_as_html_and_text():
    result = Result("demo <x>", Outcome.INCORRECT, "case `a < b`: wrong")
    assert "<code>a &lt; b</code>" in result._repr_html_()
    assert "&lt;x&gt;" in result._repr_html_()
    assert str(result).startswith("[Incorrect] demo <x>")


def test_hints_have_levels():
    question = FreeAnswer("q", hint=["the idea", "the formula"], solution="s")
    assert "the idea" in question.hint().text and "hint(2)" in question.hint().text
    assert "the formula" in question.hint(2).text and "hint(3)" not in question.hint(2).text
    assert question.hint(9).text == question.hint(2).text  # past the last level: the last one
    assert "1 of 2" in question.hint().title


def test_hint_and_solution_show_their_text():
    exercise = make_exercise()
    assert "Reshape" in exercise.hint()._repr_markdown_()
    assert "```python" in exercise.solution()._repr_markdown_()
    assert "rewards.view" in str(exercise.solution())


def test_free_answer_has_hint_and_solution_but_no_check():
    question = FreeAnswer("why std?", hint="think of scale", solution="It makes advantages scale-free.")
    assert "scale" in str(question.hint())
    assert "scale-free" in str(question.solution())
    assert not hasattr(question, "check")


# ----------------------------------------------------------------------------- property: tolerance


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.floats(-100, 100), min_size=1, max_size=8), shift=st.floats(0.1, 10.0))
def test_compare_accepts_equal_tensors_and_rejects_shifted_ones(values, shift):
    want = torch.tensor(values, dtype=torch.float64)
    assert compare(want.clone(), want) is None
    assert compare(want + shift, want) is not None


def test_a_correct_answer_lists_every_case_it_passed():
    exercise = Exercise(
        "double",
        cases=[
            Case("a tensor of three", args=(torch.tensor([1.0, 2.0, 3.0]),)),
            Case("a plain number", args=(2.0,)),
        ],
        reference=lambda x: 2 * x,
    )
    result = exercise.check(lambda x: x + x)
    assert result.passed
    lines = result.message.splitlines()
    assert lines == ["passed 2 of 2 cases.", "a tensor of three: ok | maxdiff 0.0e+00", "a plain number: ok"]
    assert not exercise.check(lambda x: 3 * x).passed


# ----------------------------------------------------------------------------- the mistake library


def ignores_std(rewards, group_size, normalize_by_std=True):
    """A library entry: never divides by the std."""
    return reference_advantages(rewards, group_size, normalize_by_std=False)


def batch_mean(rewards, group_size, normalize_by_std=True):
    """A library entry: the mean of the whole batch, and the std never."""
    return rewards - rewards.mean() + 0.0 * group_size


def library_exercise():
    """make_exercise with two named mistakes."""
    exercise = make_exercise()
    exercise.mistakes = [
        Mistake("ignores_std", "You never divide by the std.", "Divide by the std when asked.", ignores_std),
        Mistake("batch_mean", "You use the batch mean.", "Use each group's mean.", batch_mean),
    ]  # on `two groups of 2` ([1, 0, 0, 1]) both give the same numbers: neither is named from that case alone
    return exercise


def test_a_mistake_of_the_library_is_named_with_its_fix_and_the_smallest_case():
    def written_by_a_learner(rewards, group_size, normalize_by_std=True):
        r = rewards.view(-1, group_size)
        return (r - r.mean(dim=1, keepdim=True)).flatten()  # forgets the std

    result = library_exercise().check(written_by_a_learner)
    assert result.outcome is Outcome.INCORRECT and result.mistake == "ignores_std"
    assert result.message.startswith("You never divide by the std. On `two groups of 2`: expected [")
    assert result.message.endswith("Divide by the std when asked.")


def test_a_mistake_is_named_only_when_it_explains_every_case():
    def two_mistakes(rewards, group_size, normalize_by_std=True):
        return batch_mean(rewards, group_size) * 3

    result = library_exercise().check(two_mistakes)
    assert result.outcome is Outcome.INCORRECT and result.mistake == ""
    assert "the smallest case that fails" in result.message


def centred(x):
    """A toy reference: x minus its mean."""
    return x - x.mean()


def toy_library(*mistakes):
    """Three cases (2, 3 and 6 entries), with the given (name, function) entries."""
    return Exercise(
        "toy",
        [
            Case("two", args=(torch.tensor([1.0, 0.0]),)),
            Case("three", args=(torch.tensor([1.0, 0.0, 0.0]),)),
            Case("six", args=(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0]),)),
        ],
        reference=centred,
        mistakes=[Mistake(name, f"{name} says.", f"{name} fix.", fn) for name, fn in mistakes],
    )


def test_a_mistake_explaining_every_failing_case_is_named_with_a_caveat():
    """Wrong on the two small cases exactly as 'plus_one' is, right on the big one (where 'plus_one' is wrong)."""
    exercise = toy_library(("plus_one", lambda x: centred(x) + 1), ("doubled", lambda x: 2 * centred(x)))

    def plus_one_on_short_inputs(x):
        return centred(x) + 1 if len(x) <= 3 else centred(x)

    result = exercise.check(plus_one_on_short_inputs)
    assert result.mistake == "plus_one" and "on a case you pass, it would differ" in result.message
    assert result.message.startswith("plus_one says. On `two`: expected [0.5, -0.5], got [1.5, 0.5].")


def test_one_case_alone_names_no_mistake():
    """On `two`, doubling and adding 0.5 to the first entry both give [1, -1]: a coincidence names nothing."""
    exercise = toy_library(("doubled", lambda x: 2 * centred(x)))

    def doubled_on_pairs_only(x):
        return 2 * centred(x) if len(x) == 2 else centred(x) + 1

    result = exercise.check(doubled_on_pairs_only)
    assert result.outcome is Outcome.INCORRECT and result.mistake == ""


def test_no_mistake_is_named_when_two_entries_explain_the_failures():
    exercise = toy_library(("plus_one", lambda x: centred(x) + 1), ("shifted", lambda x: centred(x) + 1 + 0 * x))

    def plus_one_on_short_inputs(x):
        return centred(x) + 1 if len(x) <= 3 else centred(x)

    result = exercise.check(plus_one_on_short_inputs)
    assert result.outcome is Outcome.INCORRECT and result.mistake == ""


def test_a_variant_of_a_mistake_names_it_and_one_variant_must_explain_every_case():
    """`doubled` is written 2x or 3x; an answer that doubles some inputs and triples others matches no one way."""
    exercise = toy_library()
    exercise.mistakes = [
        Mistake("scaled", "scaled says.", "scaled fix.", lambda x: 2 * centred(x), (lambda x: 3 * centred(x),))
    ]
    assert exercise.check(lambda x: 3 * centred(x)).mistake == "scaled"
    assert exercise.check(lambda x: (2 if len(x) == 2 else 3) * centred(x)).mistake == ""


def test_two_slips_at_once_are_named_together_and_each_part_is_translated():
    from rlvr import i18n

    sign = Mistake("sign", "Your advantages have the wrong sign: baseline minus reward.", "fix one.", lambda x: -x)
    batch = Mistake(
        "batch_mean", "You subtract the mean of the whole batch, not the mean of each group.", "fix two.", lambda x: x
    )
    both = Mistake.both(sign, batch, lambda x: -centred(x))
    assert both.name == "sign+batch_mean" and both.parts == (sign, batch)
    assert both.says == f"{sign.says} {batch.says}" and both.fix == "fix one. fix two."
    exercise = toy_library()
    exercise.mistakes = [sign, batch, both]
    result = exercise.check(lambda x: x.mean() - x)
    assert result.mistake == "sign+batch_mean" and result.message.startswith(both.says)
    i18n.set_language("zh_CN")
    try:
        sentence, parts = both.sentence(), (i18n._(sign.says), i18n._(batch.says))
    finally:
        i18n.set_language("en")
        i18n.set_language(None)
    assert sentence == " ".join(parts) and parts != (sign.says, batch.says) and "整批" in sentence
