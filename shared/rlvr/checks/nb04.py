"""Exercises of notebook 04 (PPO vs GRPO): your GAE and value loss inside a PPO step, the clip fraction, and a
prediction about GRPO-8 without clipping."""

import torch

from rlvr.checks import Case, Exercise, FreeAnswer
from rlvr.checks.ppo_step import PPOCase, PPOPiecesExercise
from rlvr.objectives import masked_mean, ppo_clip_loss


def _clip_fraction(logps, old_logps, advantages, response_mask, clip_eps=0.2):
    """Reference: share of real tokens where the clipped term of PPO's objective is the active one."""
    _loss, clipped = ppo_clip_loss(logps, old_logps, advantages, clip_eps)  # [B, T] bool
    return float(masked_mean(clipped.float(), response_mask))


def _log(ratios):
    """Log-probs [1, T] whose ratio to old log-probs of 0 is `ratios`."""
    return torch.log(torch.tensor([ratios], dtype=torch.float32))


def _random_batch(seed: int = 42, batch: int = 4, length: int = 7, spread: float = 0.3) -> dict:
    """A seeded realistic batch: answers of different lengths, per-token advantages of both signs and zeros."""
    g = torch.Generator().manual_seed(seed)
    old_logps = -torch.rand(batch, length, generator=g) * 3  # [B, T]
    logps = old_logps + spread * torch.randn(batch, length, generator=g)  # [B, T]
    advantages = torch.randn(batch, 1, generator=g).expand(batch, length).clone()  # [B, T] one value per answer
    advantages[1] = 0.0  # an all-equal group: zero advantage
    lengths = torch.tensor([7, 2, 5, 3])[:batch]
    response_mask = torch.arange(length)[None, :] < lengths[:, None]  # [B, T]
    return {"logps": logps, "old_logps": old_logps, "advantages": advantages, "response_mask": response_mask}


def _cases():
    ratios = [0.5, 0.75, 0.81, 1.1, 1.21, 1.5]
    full = torch.ones(1, 6, dtype=torch.bool)
    zeros = torch.zeros(1, 6)
    return [
        Case(
            "one answer, ratios [0.5, 0.75, 0.81, 1.1, 1.21, 1.5], advantage +1 on every token, eps 0.2",
            args=(_log(ratios), zeros, torch.ones(1, 6), full, 0.2),
        ),
        Case(
            "one answer, ratios [0.5, 0.75, 0.81, 1.1, 1.21, 1.5], advantage -1 on every token, eps 0.2",
            args=(_log(ratios), zeros, -torch.ones(1, 6), full, 0.2),
        ),
        Case(
            "one answer, ratios [0.5, 0.75, 0.81, 1.1, 1.21, 1.5], advantage 0 on every token (an all-equal group), "
            "eps 0.2",
            args=(_log(ratios), zeros, torch.zeros(1, 6), full, 0.2),
        ),
        Case(
            "same ratios, advantage +1, eps 0.05 (a narrower band)",
            args=(_log(ratios), zeros, torch.ones(1, 6), full, 0.05),
        ),
        Case(
            "two answers of lengths 4 and 1 (the rest is padding with extreme ratios), advantages +1 and -1",
            args=(
                _log([[1.5, 0.5, 1.0, 1.0], [1.5, 3.0, 0.1, 3.0]]).squeeze(0),
                torch.zeros(2, 4),
                torch.tensor([[1.0] * 4, [-1.0] * 4]),
                torch.tensor([[True, True, True, True], [True, False, False, False]]),
                0.2,
            ),
        ),
        Case(
            "seeded batch of 4 answers (lengths 7, 2, 5, 3; one with advantage 0), eps 0.2",
            kwargs={**_random_batch(), "clip_eps": 0.2},
        ),
        Case("same seeded batch, eps 0.1", kwargs={**_random_batch(), "clip_eps": 0.1}),
    ]


clip_fraction = Exercise(
    name="clip fraction",
    reference=_clip_fraction,
    cases=_cases(),
    hint=(
        "The ratio is `exp(logps - old_logps)`. A token counts when the clipped term is the one `min` picks AND it "
        "differs from the unclipped one: ratio above `1 + clip_eps` with a positive advantage, or below "
        "`1 - clip_eps` with a negative one (its gradient is then 0). A ratio outside the band on the other side "
        "does NOT count: there the unclipped term is smaller and the gradient flows. Average over the tokens where "
        "`response_mask` is True (padding does not count), over the whole batch at once."
    ),
    solution="""
ratio = torch.exp(logps - old_logps)  # [B, T]
clipped = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))  # [B, T]
mask = response_mask.float()  # [B, T]
return float((clipped.float() * mask).sum() / mask.sum())
""",
)


no_clip_prediction = FreeAnswer(
    "GRPO-8 without clipping",
    hint=(
        "Clipping only acts from the second update on a batch, and only on tokens whose ratio has already moved "
        "more than eps. How far do the ratios move in 8 updates at this learning rate (see the clip-fraction "
        "figure)? What could a policy do with 8 unclipped steps on the same 256 answers?"
    ),
    solution=(
        "Without clipping, every update pushes every token with its full advantage however far its ratio has "
        "already moved, so the 8 updates on one batch can drift as far as they like in the direction that batch "
        "favours. Whether that matters depends on how far the ratios get. If they stay well inside "
        "[1 - eps, 1 + eps], as the clip fraction of section 4 says they do at learning rate 1e-4, the clip was "
        "idle and removing it changes little. With a larger learning rate the ratios do leave the band, but then "
        "the step size itself can be the problem, clip or no clip. The measurement above decides: compare it with "
        "your prediction and your reason."
    ),
)


# ----------------------------------------------------------------------------------------------- your PPO pieces
ppo_pieces = PPOPiecesExercise(
    name="your GAE and value loss inside a PPO step",
    cases=[
        PPOCase("gamma = lam = 1, beta = 0 (the race's setting)"),
        PPOCase(
            "gamma = 0.9, lam = 0.8, beta = 0.1 (a KL reward on every token)", gamma=0.9, lam=0.8, beta=0.1, seed=1
        ),
    ],
    hint=(
        "GAE, backwards over each answer's tokens: `delta = rewards[:, t] + gamma * next_value - values[:, t]`, "
        "`running = (delta + gamma * lam * running) * mask[:, t]`, `advantages[:, t] = running`, "
        "`next_value = values[:, t]`, starting from zeros after the last position (multiply values by the mask "
        "first, so padding has value 0). returns = (advantages + values) * mask. Value loss: the mean of "
        "(values - returns)^2 over the tokens where response_mask is True."
    ),
    solution="See the solution notebook: the backward loop of the hint, and `((values - returns) ** 2 * m).sum() / "
    "m.sum()` with `m = response_mask.float()`.",
)
