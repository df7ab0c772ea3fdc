"""The arithmetic task: formats, the noisy teacher's statistics, and the verifier on every kind of input."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr import task
from rlvr.task import (
    MAX_NEW_TOKENS,
    VOCAB_SIZE,
    decode,
    encode,
    pad_responses,
    score_batch,
    teacher_answers,
    teacher_chain_digits,
    verify,
)


def test_lecture_example_prompt_answers():
    digits = [9, 4, 5, 8, 0, 7, 3, 0, 2, 1]
    assert task.prompt_text(digits) == "9458073021="
    assert task.direct_answer(digits) == "#9$"
    assert task.think_answer(digits) == "[9386636689]#9$"
    assert task.answer_digits(np.array(digits)) == 9


def test_encode_decode_round_trip_and_bad_character():
    text = "0123456789=[]#$."
    assert decode(encode(text)) == text
    with pytest.raises(ValueError, match="not in the vocabulary"):
        encode("12a")


def test_teacher_error_rate_per_step_and_all_correct_rate():
    rng = np.random.default_rng(0)
    prompts = task.sample_prompts(40_000, rng)
    chains = teacher_chain_digits(prompts, 0.1, rng)  # [n, 10]
    prev = np.concatenate([np.zeros((len(prompts), 1), dtype=int), chains[:, :-1]], axis=1)
    step_ok = chains == (prev + prompts) % 10  # each step judged from what was written before it
    assert abs(1 - step_ok.mean() - 0.1) < 0.005
    all_right = (chains == np.cumsum(prompts, axis=1) % 10).all(axis=1)
    assert abs(all_right.mean() - 0.9**10) < 0.01  # about 35%


def test_teacher_wrong_steps_are_uniform_over_the_nine_other_digits():
    rng = np.random.default_rng(1)
    prompts = task.sample_prompts(30_000, rng)
    chains = teacher_chain_digits(prompts, 0.5, rng)
    prev = np.concatenate([np.zeros((len(prompts), 1), dtype=int), chains[:, :-1]], axis=1)
    shift = (chains - (prev + prompts)) % 10  # 0 = right, 1..9 = which wrong digit
    counts = np.bincount(shift[shift > 0], minlength=10)[1:]
    assert counts.min() > 0.9 * counts.mean() and counts.max() < 1.1 * counts.mean()


def test_perfect_teacher_writes_the_true_chain():
    rng = np.random.default_rng(2)
    prompts = task.sample_prompts(100, rng)
    for p, answer in zip(prompts, teacher_answers(prompts, 0.0, rng, think_fraction=1.0)):
        assert answer == task.think_answer(p)


def test_teacher_batch_mixes_formats_half_half():
    rng = np.random.default_rng(3)
    prompts = task.sample_prompts(4000, rng)
    responses, mask = task.teacher_batch(prompts, 0.1, rng)
    lengths = mask.sum(dim=1)
    assert set(lengths.unique().tolist()) == {3, 15}
    assert abs((lengths == 15).float().mean().item() - 0.5) < 0.03
    scores = score_batch(torch.as_tensor(prompts), responses)
    assert bool((scores["is_think"] | scores["is_direct"]).all())
    assert bool(scores["correct"][scores["is_direct"]].all())  # the teacher's direct answers are right


@pytest.mark.parametrize(
    "response, fmt, correct, chain_ok",
    [
        ("#9$", "direct", True, None),
        ("#3$", "direct", False, None),
        ("[9386636689]#9$", "think", True, True),
        ("[9386636680]#0$", "think", False, False),
        ("[1386636689]#9$", "think", True, False),  # right answer, wrong chain
        ("[9386636689]#9", "malformed", False, None),  # no stop token
        ("#9", "malformed", False, None),
        ("[938663668]#9$", "malformed", False, None),  # nine steps
        ("#9$junk", "direct", True, None),  # anything after '$' is ignored
        ("", "malformed", False, None),
        ("$", "malformed", False, None),
        ("##9$", "malformed", False, None),
    ],
)
def test_verifier_formats(response, fmt, correct, chain_ok):
    digits = [9, 4, 5, 8, 0, 7, 3, 0, 2, 1]
    v = verify(digits, response)
    assert (v.format, v.correct, v.cot_correct, v.reward) == (fmt, correct, chain_ok, float(correct))


token_lists = st.lists(st.integers(0, VOCAB_SIZE - 1), min_size=1, max_size=MAX_NEW_TOKENS)
digit_lists = st.lists(st.integers(0, 9), min_size=10, max_size=10)


@settings(max_examples=300, deadline=None)
@given(digits=digit_lists, tokens=token_lists)
def test_verifier_never_raises_and_batch_agrees(digits, tokens):
    v = verify(digits, tokens)
    assert v.reward in (0.0, 1.0) and v.format in task.FORMATS
    batch = score_batch(torch.tensor([digits]), torch.tensor([tokens]))
    assert batch["reward"].item() == v.reward
    assert bool(batch["is_think"]) == (v.format == "think")
    assert bool(batch["is_direct"]) == (v.format == "direct")
    assert bool(batch["cot_correct"]) == bool(v.cot_correct)
    assert batch["length"].item() == v.length


@settings(max_examples=200, deadline=None)
@given(digits=digit_lists, text=st.text(max_size=40))
def test_verifier_accepts_any_string(digits, text):
    assert verify(digits, text).format in task.FORMATS


def test_pad_responses_mask():
    ids, mask = pad_responses(["#1$", "[0123456789]#9$"])
    assert ids.shape == mask.shape == (2, MAX_NEW_TOKENS)
    assert mask.sum(dim=1).tolist() == [3, 15]
    assert decode(ids[0][:3]) == "#1$"
