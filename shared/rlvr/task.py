"""The lecture's arithmetic task: add 10 digits, say the last digit of the sum, directly or after thinking.

Prompt ``9458073021=``; direct answer ``#9$``; think-first answer ``[9386636689]#9$`` where the brackets hold
the running sum's last digit after each digit. A noisy teacher writes chains of thought with errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

N_DIGITS = 10
PROMPT_LEN = N_DIGITS + 1  # digits and "="
THINK_LEN = N_DIGITS + 5  # "[" + 10 digits + "]#d$"
DIRECT_LEN = 3  # "#d$"
MAX_NEW_TOKENS = 16  # one more than the longest well-formed answer, so run-on output is visible

PAD = "."
VOCAB = "0123456789=[]#$" + PAD
STOI = {ch: i for i, ch in enumerate(VOCAB)}
EQ_ID, OPEN_ID, CLOSE_ID, HASH_ID, STOP_ID, PAD_ID = (STOI[c] for c in "=[]#$" + PAD)
VOCAB_SIZE = len(VOCAB)
DEFAULT_TEACHER_ERROR_RATE = 0.1

FORMATS = ("direct", "think", "malformed")
_DIRECT_RE = re.compile(r"#(\d)\$")
_THINK_RE = re.compile(rf"\[(\d{{{N_DIGITS}}})\]#(\d)\$")


def encode(text: str) -> list[int]:
    """Token ids of a string of vocabulary characters (one token per character)."""
    try:
        return [STOI[ch] for ch in text]
    except KeyError as err:
        raise ValueError(f"character {err.args[0]!r} is not in the vocabulary {VOCAB!r}") from None


def decode(ids) -> str:
    """String of token ids; ids outside the vocabulary become '?' (a model can only emit valid ids)."""
    return "".join(VOCAB[i] if 0 <= i < VOCAB_SIZE else "?" for i in (int(t) for t in ids))


def sample_prompts(n: int, rng: np.random.Generator) -> np.ndarray:
    """n prompts of 10 uniform digits. Returns int64 array [n, 10]."""
    return rng.integers(0, 10, size=(n, N_DIGITS), dtype=np.int64)


def prompt_text(digits) -> str:
    """'9458073021=' for the digits [9, 4, 5, ...]."""
    return "".join(str(int(d)) for d in digits) + "="


def answer_digits(digits: np.ndarray) -> np.ndarray:
    """Last digit of each prompt's sum. digits [..., 10] -> [...]."""
    return np.asarray(digits).sum(axis=-1) % 10


def running_sums(digits) -> list[int]:
    """Last digit of the running sum after each digit: [9, 4, 5] -> [9, 3, 8]."""
    return [int(s) for s in np.cumsum(np.asarray(digits)) % 10]


def direct_answer(digits) -> str:
    """The correct direct answer, e.g. '#9$'."""
    return f"#{int(np.sum(digits)) % 10}$"


def think_answer(digits) -> str:
    """The correct think-first answer, e.g. '[9386636689]#9$'."""
    return chain_text(running_sums(digits))


def teacher_chain_digits(prompts: np.ndarray, error_rate: float, rng: np.random.Generator) -> np.ndarray:
    """The digits a noisy teacher writes inside the brackets, for a batch of prompts. [n, 10] -> [n, 10].

    At each step the teacher errs with probability `error_rate`: it writes one of the 9 other digits uniformly.
    The next step continues from what was written, and the final answer is the last digit written.
    """
    prompts = np.asarray(prompts)
    errs = rng.random(prompts.shape) < error_rate  # [n, 10]
    offsets = rng.integers(1, 10, size=prompts.shape)  # [n, 10] shift to a wrong digit
    written = np.zeros(prompts.shape, dtype=np.int64)  # [n, 10]
    prev = np.zeros(len(prompts), dtype=np.int64)  # [n]
    for j in range(prompts.shape[1]):
        prev = (prev + prompts[:, j] + errs[:, j] * offsets[:, j]) % 10
        written[:, j] = prev
    return written


def chain_text(chain) -> str:
    """'[9386636689]#9$' for the written chain [9, 3, 8, ...]: the answer is the last digit written."""
    return "[" + "".join(str(int(c)) for c in chain) + f"]#{int(chain[-1])}$"


def teacher_chain(digits, error_rate: float, rng: np.random.Generator) -> str:
    """One think-first answer written by the noisy teacher (see `teacher_chain_digits`)."""
    return chain_text(teacher_chain_digits(np.asarray(digits)[None], error_rate, rng)[0])


def teacher_answers(
    prompts: np.ndarray, error_rate: float, rng: np.random.Generator, think_fraction: float = 0.5
) -> list[str]:
    """Warm-up targets: a think-first teacher chain with probability think_fraction, else the direct answer."""
    use_think = rng.random(len(prompts)) < think_fraction  # [n]
    chains = teacher_chain_digits(prompts, error_rate, rng)  # [n, 10]
    return [chain_text(c) if t else direct_answer(p) for p, c, t in zip(prompts, chains, use_think)]


def teacher_batch(
    prompts: np.ndarray, error_rate: float, rng: np.random.Generator, think_fraction: float = 0.5
) -> tuple[torch.Tensor, torch.Tensor]:
    """Warm-up targets as right-padded token ids, built without Python loops over the batch.

    Returns:
        responses int64 [n, 15] (PAD after '$') and response_mask bool [n, 15].
    """
    n = len(prompts)
    use_think = rng.random(n) < think_fraction  # [n]
    chains = teacher_chain_digits(prompts, error_rate, rng)  # [n, 10]
    think = np.concatenate(
        [
            np.full((n, 1), OPEN_ID),
            chains,
            np.full((n, 1), CLOSE_ID),
            np.full((n, 1), HASH_ID),
            chains[:, -1:],
            np.full((n, 1), STOP_ID),
        ],
        axis=1,
    )  # [n, 15]
    direct = np.full((n, THINK_LEN), PAD_ID)  # [n, 15]
    direct[:, 0], direct[:, 1], direct[:, 2] = HASH_ID, answer_digits(prompts), STOP_ID
    responses = torch.as_tensor(np.where(use_think[:, None], think, direct), dtype=torch.long)  # [n, 15]
    lengths = torch.as_tensor(np.where(use_think, THINK_LEN, DIRECT_LEN))  # [n]
    return responses, torch.arange(THINK_LEN)[None, :] < lengths[:, None]


@dataclass(frozen=True)
class Verdict:
    """What the verifier says of one answer."""

    reward: float  # 1.0 if well formed and the final digit is right, else 0.0
    format: str  # "direct", "think" or "malformed"
    correct: bool
    cot_correct: bool | None  # think format: is every step of the chain right? else None
    length: int  # tokens up to and including the first "$" (all tokens if there is none)


def response_text(response) -> str:
    """A response as text, cut after the first '$' (padding and anything after the stop are ignored)."""
    text = response if isinstance(response, str) else decode(response)
    stop = text.find("$")
    return text if stop < 0 else text[: stop + 1]


def verify(digits, response) -> Verdict:
    """Score one answer (a string or token ids) to the prompt with these 10 digits. Never raises on odd input."""
    text = response_text(response)
    target = int(np.sum(digits)) % 10
    if m := _DIRECT_RE.fullmatch(text):
        correct = int(m.group(1)) == target
        return Verdict(float(correct), "direct", correct, None, len(text))
    if m := _THINK_RE.fullmatch(text):
        correct = int(m.group(2)) == target
        chain_ok = [int(c) for c in m.group(1)] == running_sums(digits)
        return Verdict(float(correct), "think", correct, chain_ok, len(text))
    return Verdict(0.0, "malformed", False, None, len(text))


def score_batch(prompts: torch.Tensor, responses: torch.Tensor) -> dict[str, torch.Tensor]:
    """Vectorised verifier, same verdicts as `verify`.

    Args:
        prompts: int64 [B, 10] digits.
        responses: int64 [B, T] token ids (anything after the first '$' is ignored).
    Returns:
        dict of [B] tensors: reward (float), is_think, is_direct (bool), correct (bool), cot_correct (bool),
        length (int64, tokens up to the first '$' inclusive).
    """
    B, T = responses.shape
    if T < THINK_LEN:
        responses = torch.cat([responses, responses.new_full((B, THINK_LEN - T), PAD_ID)], dim=1)
    is_stop = responses == STOP_ID  # [B, T']
    has_stop = is_stop.any(dim=1)  # [B]
    first_stop = torch.where(has_stop, is_stop.int().argmax(dim=1), torch.full_like(has_stop, T, dtype=torch.long))
    length = torch.where(has_stop, first_stop + 1, torch.full_like(first_stop, T))  # [B]
    is_digit = responses < 10  # [B, T']
    target = prompts.sum(dim=1) % 10  # [B]

    is_direct = has_stop & (length == DIRECT_LEN) & (responses[:, 0] == HASH_ID) & is_digit[:, 1]
    think_digits = responses[:, 1 : 1 + N_DIGITS]  # [B, 10]
    is_think = (
        has_stop
        & (length == THINK_LEN)
        & (responses[:, 0] == OPEN_ID)
        & is_digit[:, 1 : 1 + N_DIGITS].all(dim=1)
        & (responses[:, N_DIGITS + 1] == CLOSE_ID)
        & (responses[:, N_DIGITS + 2] == HASH_ID)
        & is_digit[:, N_DIGITS + 3]
    )
    final = torch.where(is_think, responses[:, N_DIGITS + 3], responses[:, 1])  # [B]
    correct = (is_direct | is_think) & (final == target)
    chains = prompts.cumsum(dim=1) % 10  # [B, 10]
    cot_correct = is_think & (think_digits == chains).all(dim=1)
    return {
        "reward": correct.float(),
        "is_think": is_think,
        "is_direct": is_direct,
        "correct": correct,
        "cot_correct": cot_correct,
        "length": length,
    }


def prompt_tokens(prompts: np.ndarray) -> torch.Tensor:
    """Token ids of the prompts: digits then '='. [n, 10] -> int64 [n, 11]."""
    digits = torch.as_tensor(np.asarray(prompts), dtype=torch.long)  # [n, 10]
    return torch.cat([digits, torch.full((len(digits), 1), EQ_ID, dtype=torch.long)], dim=1)


def pad_responses(texts: list[str], length: int = MAX_NEW_TOKENS) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and mask of answer strings, right-padded. Returns ([n, length] int64, [n, length] bool)."""
    ids = torch.full((len(texts), length), PAD_ID, dtype=torch.long)
    for i, text in enumerate(texts):
        row = encode(text)[:length]
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    mask = torch.arange(length)[None, :] < torch.tensor([min(len(t), length) for t in texts])[:, None]
    return ids, mask
