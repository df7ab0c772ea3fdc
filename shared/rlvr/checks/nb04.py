"""Exercises of notebook 04 (PPO vs GRPO): your GAE and value loss inside a PPO step, the clip fraction, and a
prediction about GRPO-8 without clipping."""

import torch

from rlvr.checks import Case, Exercise, FreeAnswer, Mistake
from rlvr.checks.ppo_step import PPOCase, PPOPiecesExercise
from rlvr.objectives import masked_mean, ppo_clip_loss
from rlvr.i18n import N_


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
            N_("one answer, ratios [0.5, 0.75, 0.81, 1.1, 1.21, 1.5], advantage +1 on every token, eps 0.2"),
            args=(_log(ratios), zeros, torch.ones(1, 6), full, 0.2),
        ),
        Case(
            N_("one answer, ratios [0.5, 0.75, 0.81, 1.1, 1.21, 1.5], advantage -1 on every token, eps 0.2"),
            args=(_log(ratios), zeros, -torch.ones(1, 6), full, 0.2),
        ),
        Case(
            N_(
                "one answer, ratios [0.5, 0.75, 0.81, 1.1, 1.21, 1.5], advantage 0 on every token (an all-equal "
                "group), eps 0.2"
            ),
            args=(_log(ratios), zeros, torch.zeros(1, 6), full, 0.2),
        ),
        Case(
            N_("same ratios, advantage +1, eps 0.05 (a narrower clip range)"),
            args=(_log(ratios), zeros, torch.ones(1, 6), full, 0.05),
        ),
        Case(
            N_("two answers of lengths 4 and 1 (the rest is padding with extreme ratios), advantages +1 and -1"),
            args=(
                _log([[1.5, 0.5, 1.0, 1.0], [1.5, 3.0, 0.1, 3.0]]).squeeze(0),
                torch.zeros(2, 4),
                torch.tensor([[1.0] * 4, [-1.0] * 4]),
                torch.tensor([[True, True, True, True], [True, False, False, False]]),
                0.2,
            ),
        ),
        Case(
            N_(
                "two answers of lengths 2 and 3 (the rest is padding), advantages -1 and +1, each with one real token "
                "clipped"
            ),
            args=(
                _log([[0.5, 0.9, 0.1, 3.0], [1.5, 1.0, 0.7, 2.0]]).squeeze(0),
                torch.zeros(2, 4),
                torch.tensor([[-1.0] * 4, [1.0] * 4]),
                torch.tensor([[True, True, False, False], [True, True, True, False]]),
                0.2,
            ),
        ),
        Case(
            N_("seeded batch of 4 answers (lengths 7, 2, 5, 3; one with advantage 0), eps 0.2"),
            kwargs={**_random_batch(), "clip_eps": 0.2},
        ),
        Case(N_("same seeded batch, eps 0.1"), kwargs={**_random_batch(), "clip_eps": 0.1}),
    ]


def _ratio(logps, old_logps):
    """rho = pi / pi_old per token. [B, T]."""
    return torch.exp(logps - old_logps)


def _active(ratio, advantages, clip_eps):
    """Where the clip is the active term: above the band with A > 0, below it with A < 0. [B, T] bool."""
    return ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))


def _outside(ratio, clip_eps):
    """Ratio outside [1 - eps, 1 + eps]. [B, T] bool."""
    return (ratio - 1).abs() > clip_eps


def _ties(ratio, advantages, clip_eps):
    """Where the min equals the clipped term (ties included): the active tokens, and every token inside the band or
    with advantage 0. [B, T] bool."""
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * advantages  # [B, T]
    return torch.minimum(ratio * advantages, clipped) == clipped


# The clip fraction's slips lie on two axes: WHICH tokens count as clipped, and WHAT the count is averaged over.
# counted: name -> (sentence, fix, the tokens counted [B, T] bool from logps, old_logps, advantages, clip_eps)
COUNTED = {
    "two_sided": (
        N_(
            "You count every ratio outside the band whatever the advantage's sign (CleanRL's two-sided clipfrac); "
            "here a token counts only where the clip is the term the min keeps, so its gradient is 0."
        ),
        N_(
            "Count a token when its ratio is above 1 + clip_eps with a positive advantage, or below 1 - clip_eps with "
            "a negative one."
        ),
        lambda lp, old, adv, eps: _outside(_ratio(lp, old), eps),
    ),
    "two_sided_nonzero": (
        N_(
            "You count every ratio outside the band on tokens with a nonzero advantage, whatever its sign; a token "
            "counts only on the side where the clip is the term the min keeps."
        ),
        N_("Above the band counts only with a positive advantage, below the band only with a negative one."),
        lambda lp, old, adv, eps: _outside(_ratio(lp, old), eps) & (adv != 0),
    ),
    "ties_counted": (
        N_(
            "You count a token whenever the min equals the clipped term; inside the band (and where the advantage is "
            "0) the two terms are equal, so those tokens count although nothing is clipped."
        ),
        N_(
            "Count a token only where the clipped term is strictly smaller than the unclipped one: there its gradient "
            "is 0."
        ),
        lambda lp, old, adv, eps: _ties(_ratio(lp, old), adv, eps),
    ),
    "upper_only": (
        N_(
            "You count only ratios above the band (with positive advantages); with a negative advantage the clip acts "
            "below the band."
        ),
        N_("Also count the tokens whose ratio is below 1 - clip_eps while their advantage is negative."),
        lambda lp, old, adv, eps: (adv > 0) & (_ratio(lp, old) > 1 + eps),
    ),
    "lower_only": (
        N_(
            "You count only ratios below the band (with negative advantages); with a positive advantage the clip acts "
            "above the band."
        ),
        N_("Also count the tokens whose ratio is above 1 + clip_eps while their advantage is positive."),
        lambda lp, old, adv, eps: (adv < 0) & (_ratio(lp, old) < 1 - eps),
    ),
    "sides_swapped": (
        N_(
            "You pair the sides the wrong way round: a ratio above the band with a NEGATIVE advantage is not clipped "
            "(there the unclipped term is the smaller one, and its gradient flows)."
        ),
        N_("Above the band counts with a positive advantage, below the band with a negative one."),
        lambda lp, old, adv, eps: ((adv < 0) & (_ratio(lp, old) > 1 + eps)) | ((adv > 0) & (_ratio(lp, old) < 1 - eps)),
    ),
    "zero_advantage_counted": (
        N_(
            "You count tokens with advantage 0 as if it were positive; with A = 0 both terms are 0 and nothing is "
            "clipped."
        ),
        N_("Use a strict comparison: only a positive advantage counts above the band."),
        lambda lp, old, adv, eps: (
            ((adv >= 0) & (_ratio(lp, old) > 1 + eps)) | ((adv < 0) & (_ratio(lp, old) < 1 - eps))
        ),
    ),
    "log_ratio_band": (
        N_(
            "You compare the LOG ratio with plus or minus clip_eps; the band is on the ratio itself, [1 - clip_eps, "
            "1 + clip_eps]."
        ),
        N_("Exponentiate the log-prob difference first, then compare the ratio with 1 - clip_eps and 1 + clip_eps."),
        lambda lp, old, adv, eps: _active(lp - old + 1, adv, eps),  # log ratio > eps  <=>  log ratio + 1 > 1 + eps
    ),
    "inverted_ratio": (
        N_("Your ratio is upside down: old over new. The ratio is the new policy's probability over the old one's."),
        N_("Exponentiate the new log-probs minus the old ones."),
        lambda lp, old, adv, eps: _active(_ratio(old, lp), adv, eps),
    ),
}

# averaged: name -> (sentence, fix, the fraction from the counted tokens [B, T] bool and the response mask [B, T])
AVERAGED = {
    "no_mask": (
        N_("You average over the padding too; only an answer's real tokens count."),
        N_("Count and divide over the tokens where the response mask is True."),
        lambda hit, mask: float(hit.float().mean()),
    ),
    "padding_in_numerator": (
        N_(
            "You count the clipped tokens of the padding too (the numerator runs over every position) and divide by "
            "the number of real tokens."
        ),
        N_("Count only the clipped tokens where the response mask is True."),
        lambda hit, mask: float(hit.float().sum() / mask.float().sum()),
    ),
    "padding_in_denominator": (
        N_("You count the clipped real tokens but divide by every position, padding included."),
        N_("Divide by the number of real tokens (where the response mask is True)."),
        lambda hit, mask: float((hit & mask).sum() / mask.numel()),
    ),
    "per_answer_mean": (
        N_(
            "You average within each answer first, then over answers; the clip fraction is one mean over all the real "
            "tokens of the batch."
        ),
        N_("Count the clipped real tokens of the whole batch and divide by the number of real tokens of the batch."),
        lambda hit, mask: float(((hit.float() * mask).sum(dim=1) / mask.float().sum(dim=1)).mean()),
    ),
    "count": (
        N_("You return the NUMBER of clipped tokens; the exercise asks for their share of the real tokens."),
        N_("Divide the count by the number of real tokens."),
        lambda hit, mask: float((hit & mask).sum()),
    ),
}


def _share(hit, mask):
    """Share of the real tokens that are counted (one mean over the whole batch): the right average."""
    m = mask.float()  # [B, T]
    return float((hit.float() * m).sum() / m.sum())


def _right_tokens(lp, old, adv, eps):
    """The tokens the clip is active on: the right count."""
    return _active(_ratio(lp, old), adv, eps)


def _fraction(counted, averaged):
    """A clip fraction from a way of counting tokens and a way of averaging them."""
    return lambda logps, old_logps, advantages, response_mask, clip_eps=0.2: averaged(
        counted(logps, old_logps, advantages, clip_eps), response_mask
    )


def _clip_fraction_mistakes() -> list[Mistake]:
    """One slip on either axis, then two at once (e.g. the wrong side counted over the padding too)."""
    counted = {name: Mistake(name, says, fix, _fraction(fn, _share)) for name, (says, fix, fn) in COUNTED.items()}
    averaged = {
        name: Mistake(name, says, fix, _fraction(_right_tokens, fn)) for name, (says, fix, fn) in AVERAGED.items()
    }
    both = [
        Mistake.both(counted[c], averaged[a], _fraction(COUNTED[c][2], AVERAGED[a][2]))
        for c in COUNTED
        for a in AVERAGED
    ]
    return [*counted.values(), *averaged.values(), *both]


CLIP_FRACTION_MISTAKES = _clip_fraction_mistakes()

clip_fraction = Exercise(
    name=N_("clip fraction"),
    reference=_clip_fraction,
    cases=_cases(),
    mistakes=CLIP_FRACTION_MISTAKES,
    hint=[
        N_(
            "A token counts as clipped when the clipped term is the one PPO's min keeps AND it differs from the "
            "unclipped one, so that its gradient is 0. That happens on one side of the band only, and the side depends "
            "on the sign of the advantage. Padding does not count."
        ),
        N_(
            r"Clipped: $\rho_t > 1+\epsilon$ with $A_t > 0$, or $\rho_t < 1-\epsilon$ with $A_t < 0$, where "
            r"$\rho_t = \exp(\log\pi_\theta - \log\pi_{old})$. The fraction is the number of such real tokens over "
            "the number of real tokens of the whole batch (one mean, not one per answer)."
        ),
    ],
    solution="""
ratio = torch.exp(logps - old_logps)  # [B, T]
clipped = ((advantages > 0) & (ratio > 1 + clip_eps)) | ((advantages < 0) & (ratio < 1 - clip_eps))  # [B, T]
mask = response_mask.float()  # [B, T]
return float((clipped.float() * mask).sum() / mask.sum())
""",
)


no_clip_prediction = FreeAnswer(
    N_("GRPO-8 without clipping"),
    hint=[
        N_(
            "Clipping only acts from the second update on a batch, and only on tokens whose ratio has already moved "
            "out of the band. How far do the ratios move in 8 updates at this learning rate?"
        ),
        N_(
            "Read the clip-fraction figure of section 4: what share of the tokens is clipped by the 8th update? What "
            "could 8 unclipped steps on the same 256 answers do if that share were large?"
        ),
    ],
    solution=N_(
        "Without clipping, every update pushes every token with its full advantage however far its ratio has "
        "already moved, so the 8 updates on one batch can drift as far as they like in the direction that batch "
        "favours. Whether that matters depends on how far the ratios get. If they stay well inside [1 - eps, 1 + "
        "eps] (section 4 printed the clipped share and the mean |log ratio| at learning rate 1e-4), the clip was "
        "nearly idle and removing it changes little. With a larger learning rate the ratios do leave the band, but"
        " then the step size itself can be the problem, clip or no clip. The measurement above decides: compare it"
        " with your prediction and your reason."
    ),
)


# ----------------------------------------------------------------------------------------------- your PPO pieces
ppo_pieces = PPOPiecesExercise(
    name=N_("your GAE and value loss inside a PPO step"),
    cases=[
        PPOCase(N_("gamma = lam = 1, beta = 0 (the race's setting)")),
        PPOCase(
            N_("gamma = 0.9, lam = 0.8, beta = 0.1 (a KL reward on every token)"), gamma=0.9, lam=0.8, beta=0.1, seed=1
        ),
    ],
    hint=[
        N_(
            "GAE runs backwards over each answer's tokens: a token's advantage is its one-step surprise (its reward "
            "plus the discounted next value, minus its own value) plus the discounted advantage of the next token. "
            "Padding has value 0 and advantage 0, and nothing comes after the last real token. The value loss is a "
            "mean squared error over the real tokens."
        ),
        N_(
            r"$\delta_t = r_t + \gamma V_{t+1} - V_t$ (with $V$ 0 after the last real token), "
            r"$A_t = \delta_t + \gamma\lambda A_{t+1}$ from the last token back, returns $R_t = A_t + V_t$, all 0 on "
            r"padding; value loss $\frac{1}{N}\sum_{\text{real } t} (V_t - R_t)^2$ with $N$ the number of real tokens."
        ),
    ],
    solution=N_(
        "See the solution notebook: the backward loop of the hint, and `((values - returns) ** 2 * m).sum() / "
        "m.sum()` with `m = response_mask.float()`."
    ),
)
