"""Inputs the checks of `rlvr.a5.library` run a student's functions on: seeded random tensors, reward functions of
strings, the task's texts, and the edge cases that matter (a group whose rewards are all equal, a row whose mask is
all zero, ratios far outside the clip range, gradient accumulation over 4 microbatches)."""

from __future__ import annotations

import torch

from ..checks.core import Case
from ..model import ModelConfig, TinyTransformer
from .hf import causal_lm

GROUND_TRUTH = "42"  # the ground truth of the table reward's responses


def table_reward(response: str, ground_truth: str) -> dict[str, float]:
    """A reward function of strings: the number after ':' in the response ('a:0.5' -> 0.5), 0 unless the ground truth
    is GROUND_TRUTH (so a call with its arguments swapped gets 0)."""
    value = float(response.split(":")[-1]) if ground_truth == GROUND_TRUTH else 0.0
    return {"reward": value, "format_reward": float(value > 0), "answer_reward": value}


def responses(rewards) -> list[str]:
    """Responses that table_reward scores as `rewards` ('r0:1.0', 'r1:0.0', ...)."""
    return [f"r{i}:{float(r)}" for i, r in enumerate(rewards)]


def generator(seed: int) -> torch.Generator:
    """A seeded torch generator."""
    return torch.Generator().manual_seed(seed)


def binary_rewards(groups: int, group_size: int, seed: int, p: float = 0.4) -> list[float]:
    """groups x group_size 0/1 rewards (a 1 with chance p), flat."""
    return (torch.rand(groups * group_size, generator=generator(seed)) < p).float().tolist()


def uniform_rewards(n: int, seed: int) -> list[float]:
    """n rewards uniform in [0, 1), rounded to 3 decimals (so their strings are exact)."""
    return [round(x, 3) for x in torch.rand(n, generator=generator(seed)).tolist()]


def log_probs(batch: int, length: int, seed: int, spread: float = 0.3) -> tuple[torch.Tensor, torch.Tensor]:
    """(policy_log_probs, old_log_probs) [B, T]: log-probs in (-3, 0) and old ones that differ by up to `spread` in
    log (spread 2: ratios from e^-2 to e^2, far outside any clip range)."""
    g = generator(seed)
    old = -3 * torch.rand(batch, length, generator=g) - 0.05
    moved = spread * (2 * torch.rand(batch, length, generator=g) - 1)
    return old + moved, old


def advantages(batch: int, seed: int) -> torch.Tensor:
    """One advantage per answer, both signs: [B, 1]."""
    return torch.randn(batch, 1, generator=generator(seed))


def response_mask(batch: int, length: int, seed: int, empty_row: int | None = None) -> torch.Tensor:
    """A right-padded response mask [B, T]: each row's answer starts at a random position and runs to a random end;
    `empty_row` is all False."""
    g = generator(seed)
    start = torch.randint(0, length // 3 + 1, (batch, 1), generator=g)
    end = start + 1 + torch.randint(0, length - length // 3 - 1, (batch, 1), generator=g)
    positions = torch.arange(length)[None, :]
    mask = (positions >= start) & (positions < end)  # [B, T]
    if empty_row is not None:
        mask[empty_row] = False
    return mask


def random_mask(shape: tuple, seed: int, empty_row: int | None = None) -> torch.Tensor:
    """A random 0/1 mask (every row with at least one 1) [B, T]; `empty_row` all 0."""
    mask = torch.rand(shape, generator=generator(seed)) > 0.5
    mask[:, 0] = True
    if empty_row is not None:
        mask[empty_row] = False
    return mask


def small_model(seed: int = 0) -> torch.nn.Module:
    """A small TinyTransformer with random weights, called the Hugging Face way (model(input_ids).logits)."""
    torch.manual_seed(seed)
    return causal_lm(TinyTransformer(ModelConfig(d_model=16, n_heads=2, d_mlp=32)))


class AnyOfCase(Case):
    """A case with more than one right answer (a masked mean over an all-zero row: NaN or 0), each a reference
    function; the check passes on any of them and shows the first."""

    def __init__(self, description: str, args: tuple = (), kwargs: dict | None = None, alternatives=(), **more):
        super().__init__(description, args, kwargs or {}, **more)
        self.alternatives = list(alternatives)

    def verdict(self, got, want):
        """The first alternative the output matches decides; else the first's verdict."""
        first = super().verdict(got, want)
        if first[0] is None:
            return first
        for alternative in self.alternatives:
            verdict = super().verdict(got, self.output_of(alternative))
            if verdict[0] is None:
                return verdict
        return first
