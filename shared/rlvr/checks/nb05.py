"""Exercise checkers of notebook 05 (length bias, Dr. GRPO, Kimi's length reward)."""

import torch

from rlvr.algorithms import DR_GRPO, GRPO
from rlvr.checks import Case, Exercise, FreeAnswer, GradCase, Mistake
from rlvr.objectives import aggregate_loss, kimi_length_reward
from rlvr.i18n import N_

MODES = (GRPO.name, DR_GRPO.name)  # the exercise's `mode`: an algorithm of the table, whose row says its aggregation
AGGREGATION = {row.name: row.aggregation for row in (GRPO, DR_GRPO)}


# ----------------------------------------------------------------------------------------------- Exercise 4 (code)
def _sequence_loss(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Reference: rlvr.objectives.aggregate_loss with GRPO's or Dr. GRPO's aggregation."""
    if mode == DR_GRPO.name and max_len is None:
        raise ValueError(f"{DR_GRPO.name} needs max_len")
    return aggregate_loss(per_token_loss, response_mask, AGGREGATION[mode], max_len)


def _losses(lengths, width, seed):
    """A per-token loss [B, T] with large values on the padding (a missing mask shows) and its mask."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor(lengths)
    mask = torch.arange(width)[None, :] < lengths[:, None]  # [B, T]
    loss = torch.randn(len(lengths), width, generator=generator, dtype=torch.float64)
    return torch.where(mask, loss, torch.full_like(loss, 50.0)), mask


_LOSS_A, _MASK_A = _losses([3, 1], 4, 0)
_LOSS_B, _MASK_B = _losses([2, 5, 4], 6, 1)


def _sums(per_token_loss, response_mask):
    """Each answer's loss summed over its real tokens. [B, T] -> [B]."""
    return (per_token_loss * response_mask).sum(dim=1)


def _lengths(response_mask):
    """Each answer's number of real tokens. [B, T] -> [B]."""
    return response_mask.sum(dim=1)


def _modes(grpo, dr_grpo):
    """A wrong sequence_loss: `grpo(loss, mask)` in mode 'grpo', `dr_grpo(loss, mask, max_len)` otherwise."""

    def wrong(per_token_loss, response_mask, mode="grpo", max_len=None):
        if mode == "grpo":
            return grpo(per_token_loss, response_mask)
        return dr_grpo(per_token_loss, response_mask, max_len)

    return wrong


def _right_grpo(x, m):
    return (_sums(x, m) / _lengths(m)).mean()


def _right_dr_grpo(x, m, max_len):
    return (_sums(x, m) / max_len).mean()


def _positions_first(x, m, floor=None):
    """The mean over the answers at each position (one per token position), then over the positions."""
    count = m.sum(dim=0) if floor is None else m.sum(dim=0).clamp(min=floor)  # [T]
    return ((x * m).sum(dim=0) / count).mean()


# Slips of one mode (the other mode right): name -> (sentence, fix, the mode's wrong loss)
GRPO_SLIPS = {
    "batch_token_mean": (
        N_(
            "In mode 'grpo' you take ONE token mean over the whole batch (DAPO's token-level mean, TRL's 'dapo' and "
            "'bnpo'): every token weighs the same, so long answers weigh more; GRPO averages each answer over its own "
            "tokens first."
        ),
        N_("Divide each answer's token sum by that answer's own number of real tokens, then average the answers."),
        lambda x, m: _sums(x, m).sum() / _lengths(m).sum(),
    ),
    "positions_first": (
        N_(
            "In mode 'grpo' you average in the wrong order: over the answers first (down the batch axis, one mean per "
            "token position), then over the positions; GRPO averages each answer over its own tokens, then over the "
            "answers."
        ),
        N_("Average along the token axis of each answer first (its real tokens), then across the answers."),
        _positions_first,
    ),
    "padded_mean": (
        N_(
            "You average over all T positions of each answer (padding included in the count) instead of over its real "
            "tokens."
        ),
        N_("Divide each answer's masked token sum by its own number of real tokens."),
        lambda x, m: (x * m).mean(dim=1).mean(),
    ),
    "unmasked_mean": (
        N_("You average every position of the tensor, padding's losses included."),
        N_("Sum over the real tokens only and divide by each answer's number of real tokens."),
        lambda x, m: x.mean(dim=1).mean(),
    ),
    "grpo_token_sum": (
        N_("In mode 'grpo' you sum each answer's tokens without dividing by its length."),
        N_("Divide each answer's token sum by its own number of real tokens."),
        lambda x, m: _sums(x, m).mean(),
    ),
}
GRPO_SLIP_VARIANTS = {"positions_first": (lambda x, m: _positions_first(x, m, floor=1),)}  # a 0/0 guarded

DR_GRPO_SLIPS = {
    "dr_grpo_by_length": (
        N_(
            "In mode 'dr_grpo' you still divide each answer by its own length; Dr. GRPO divides every answer by the "
            "same constant, max_len."
        ),
        N_("In Dr. GRPO's mode divide each answer's token sum by max_len."),
        lambda x, m, max_len: _right_grpo(x, m),
    ),
    "dr_grpo_by_width": (
        N_(
            "In mode 'dr_grpo' you divide by the padded width T of the tensor; Dr. GRPO divides by max_len, the "
            "generation budget, which can be larger than T."
        ),
        N_("Divide by the max_len argument."),
        lambda x, m, max_len: (_sums(x, m) / x.shape[1]).mean(),
    ),
    "dr_grpo_batch_token_mean": (
        N_(
            "In mode 'dr_grpo' you take one token mean over the whole batch; Dr. GRPO divides each answer's token sum "
            "by max_len."
        ),
        N_("Divide each answer's token sum by max_len, then average the answers."),
        lambda x, m, max_len: _sums(x, m).sum() / _lengths(m).sum(),
    ),
    "dr_grpo_summed": (
        N_(
            "In mode 'dr_grpo' you add up the answers' losses (the batch's token sum over max_len) instead of "
            "averaging them over the answers."
        ),
        N_("Divide each answer's token sum by max_len, then take the mean over the answers."),
        lambda x, m, max_len: (_sums(x, m) / max_len).sum(),
    ),
}

BOTH_MODES = [  # one slip made in both modes
    Mistake(
        "no_mask",
        N_("You add up the padding's losses too; only an answer's real tokens count."),
        N_("Multiply by the response mask (or select the real tokens) before summing."),
        _modes(
            lambda x, m: (x.sum(dim=1) / _lengths(m)).mean(),
            lambda x, m, max_len: (x.sum(dim=1) / max_len).mean(),
        ),
    ),
    Mistake(
        "summed_over_answers",
        N_("You add up the answers' losses instead of averaging them."),
        N_("Take the mean over the answers (divide the total by the number of answers)."),
        _modes(
            lambda x, m: (_sums(x, m) / _lengths(m)).sum(),
            lambda x, m, max_len: (_sums(x, m) / max_len).sum(),
        ),
    ),
]


def _sequence_loss_mistakes() -> list[Mistake]:
    """A slip of one mode (the other right), a slip made in both modes, then a slip in EACH mode at once."""
    grpo = {
        name: Mistake(
            name,
            says,
            fix,
            _modes(fn, _right_dr_grpo),
            tuple(_modes(v, _right_dr_grpo) for v in GRPO_SLIP_VARIANTS.get(name, ())),
        )
        for name, (says, fix, fn) in GRPO_SLIPS.items()
    }
    dr = {name: Mistake(name, says, fix, _modes(_right_grpo, fn)) for name, (says, fix, fn) in DR_GRPO_SLIPS.items()}
    both = [
        Mistake.both(
            grpo[g],
            dr[d],
            _modes(GRPO_SLIPS[g][2], DR_GRPO_SLIPS[d][2]),
            tuple(_modes(v, DR_GRPO_SLIPS[d][2]) for v in GRPO_SLIP_VARIANTS.get(g, ())),
        )
        for g in GRPO_SLIPS
        for d in DR_GRPO_SLIPS
    ]
    return [*grpo.values(), *BOTH_MODES, *dr.values(), *both]


SEQUENCE_LOSS_MISTAKES = _sequence_loss_mistakes()

sequence_loss = Exercise(
    name=N_("GRPO's and Dr. GRPO's loss aggregation"),
    reference=_sequence_loss,
    cases=[
        GradCase(
            N_("2 answers of 3 and 1 tokens (T = 4), mode='grpo'"),
            kwargs={"per_token_loss": _LOSS_A, "response_mask": _MASK_A, "mode": "grpo"},
            wrt=["per_token_loss"],
        ),
        GradCase(
            N_("2 answers of 3 and 1 tokens (T = 4), mode='dr_grpo', max_len=4"),
            kwargs={"per_token_loss": _LOSS_A, "response_mask": _MASK_A, "mode": DR_GRPO.name, "max_len": 4},
            wrt=["per_token_loss"],
        ),
        GradCase(
            N_("3 answers of 2, 5 and 4 tokens (T = 6), mode='grpo'"),
            kwargs={"per_token_loss": _LOSS_B, "response_mask": _MASK_B, "mode": "grpo"},
            wrt=["per_token_loss"],
        ),
        GradCase(
            N_("3 answers of 2, 5 and 4 tokens (T = 6), mode='dr_grpo', max_len=10 (larger than T)"),
            kwargs={"per_token_loss": _LOSS_B, "response_mask": _MASK_B, "mode": DR_GRPO.name, "max_len": 10},
            wrt=["per_token_loss"],
        ),
    ],
    mistakes=SEQUENCE_LOSS_MISTAKES,
    hint=[
        N_(
            "Both modes add up each answer's per-token losses over its real tokens only (padding contributes nothing), "
            "then average over the answers. They differ in what each answer's sum is divided by."
        ),
        N_(
            r"GRPO: $\frac{1}{B}\sum_i \frac{1}{|o_i|}\sum_{t \le |o_i|} \ell_{i,t}$, with $|o_i|$ the answer's own "
            r"number of real tokens; Dr. GRPO: $\frac{1}{B}\sum_i \frac{1}{L_{max}}\sum_{t \le |o_i|} \ell_{i,t}$, "
            r"with "
            "the constant max_len (not the padded width of the tensor)."
        ),
    ],
    solution=N_("""
token_sums = (per_token_loss * response_mask).sum(dim=1)  # [B]
if mode == "grpo":
    per_answer = token_sums / response_mask.sum(dim=1)  # [B] mean over each answer's own |o_i| tokens
else:
    per_answer = token_sums / max_len  # [B] the same constant for every answer
return per_answer.mean()
"""),
)


# ----------------------------------------------------------------------------------------------- toy log-prob (code)
def _logsig(x):
    """log sigmoid(x)."""
    return torch.nn.functional.logsigmoid(x)


def _length_logprob(k, logit, cap):
    """Reference: k "continue" tokens, then the answer token (free at the cap)."""
    k = torch.as_tensor(k)
    stop = torch.where(k < cap, torch.nn.functional.logsigmoid(-logit), torch.zeros_like(logit))
    return k * torch.nn.functional.logsigmoid(logit) + stop


length_logprob = Exercise(
    name=N_("log-prob of a toy answer with k thinking tokens"),
    reference=_length_logprob,
    cases=[
        GradCase(
            N_("k = [0, 1, 4], logit 0.5, cap 10"),
            kwargs={"k": torch.tensor([0, 1, 4]), "logit": torch.tensor(0.5, dtype=torch.float64), "cap": 10},
            wrt=["logit"],
        ),
        GradCase(
            N_("k = [3, 10] with cap 10 (an answer at the cap has no stop decision)"),
            kwargs={"k": torch.tensor([3, 10]), "logit": torch.tensor(2.0, dtype=torch.float64), "cap": 10},
            wrt=["logit"],
        ),
        GradCase(
            N_("k = [8, 9, 10] with cap 10 (just below the cap the stop still costs)"),
            kwargs={"k": torch.tensor([8, 9, 10]), "logit": torch.tensor(1.0, dtype=torch.float64), "cap": 10},
            wrt=["logit"],
        ),
        GradCase(
            N_("k = [0, 5, 30], logit -1.5, cap 30"),
            kwargs={"k": torch.tensor([0, 5, 30]), "logit": torch.tensor(-1.5, dtype=torch.float64), "cap": 30},
            wrt=["logit"],
        ),
    ],
    mistakes=[
        Mistake(
            "stop_charged_at_cap",
            N_(
                "You charge the 'stop' decision at the cap too; there stopping is forced and costs nothing (log-prob "
                "0)."
            ),
            N_("Add the stop's log-prob only for answers below the cap."),
            lambda k, logit, cap: k * _logsig(logit) + _logsig(-logit),
        ),
        Mistake(
            "no_stop",
            N_("You leave out the 'stop' decision that ends the thinking (the answer token's choice)."),
            N_("Add the log-prob of stopping, for answers below the cap."),
            lambda k, logit, cap: k * _logsig(logit),
        ),
        Mistake(
            "decisions_swapped",
            N_("Your 'continue' and 'stop' log-probs are swapped: continuing has probability sigmoid(logit)."),
            N_("Use the log-sigmoid of the logit for each thinking token and of minus the logit for the stop."),
            lambda k, logit, cap: k * _logsig(-logit) + torch.where(k < cap, _logsig(logit), torch.zeros_like(logit)),
        ),
        Mistake(
            "stop_is_continue",
            N_(
                "Your 'stop' decision has the log-prob of continuing: the stop's probability is 1 - sigmoid(logit), "
                "so its log-prob is the log-sigmoid of MINUS the logit."
            ),
            N_("Use the log-sigmoid of minus the logit for the stop."),
            lambda k, logit, cap: k * _logsig(logit) + torch.where(k < cap, _logsig(logit), torch.zeros_like(logit)),
        ),
        Mistake(
            "stop_free_below_cap",
            N_(
                "Off by one at the cap: your stop is already free one thinking token before the cap; only an answer "
                "AT the cap has no stop decision."
            ),
            N_("Charge the stop to every answer whose k is below the cap, k = cap - 1 included."),
            lambda k, logit, cap: (
                k * _logsig(logit) + torch.where(k < cap - 1, _logsig(-logit), torch.zeros_like(logit))
            ),
        ),
        Mistake(
            "probability",
            N_("You return the probability of the answer, not its log-probability."),
            N_("Add the log-probs of the decisions instead of multiplying their probabilities."),
            lambda k, logit, cap: (
                torch.sigmoid(logit) ** k * torch.where(k < cap, torch.sigmoid(-logit), torch.ones_like(logit))
            ),
        ),
        Mistake(
            "one_continue_too_many",
            N_("You count k + 1 'continue' decisions; an answer with k thinking tokens makes k of them."),
            N_("Multiply the continue log-prob by k."),
            lambda k, logit, cap: (
                (k + 1) * _logsig(logit) + torch.where(k < cap, _logsig(-logit), torch.zeros_like(logit))
            ),
        ),
    ],
    hint=[
        N_(
            "An answer with k thinking tokens is k 'continue' decisions followed by one 'stop' decision; at the cap "
            "the stop is forced and costs nothing. The log-probabilities of successive decisions add up."
        ),
        N_(
            r"$\log p(k) = k \log\sigma(z) + \log\sigma(-z)$ below the cap and $k \log\sigma(z)$ at the cap, with "
            r"$z$ the continue logit and $\sigma$ the logistic function."
        ),
    ],
    solution="""
log_continue = torch.nn.functional.logsigmoid(logit)
log_stop = torch.nn.functional.logsigmoid(-logit)
return k * log_continue + torch.where(k < cap, log_stop, torch.zeros_like(log_stop))
""",
)


# ----------------------------------------------------------------------------------------------- Exercise 5 (code)
def _length_reward(lengths, correct):
    """Reference: rlvr.objectives.kimi_length_reward."""
    return kimi_length_reward(lengths, correct)


def _lam(lengths):
    """Kimi's lambda: +0.5 for the shortest answer to -0.5 for the longest (NaN when all are equal)."""
    lengths = lengths.float()
    return 0.5 - (lengths - lengths.min()) / (lengths.max() - lengths.min())


def _kimi(value):
    """A wrong length reward from `value(lengths, correct)`, with the right 0 for equal lengths."""

    def wrong(lengths, correct):
        if lengths.max() == lengths.min():
            return torch.zeros_like(lengths.float())
        return value(lengths, correct)

    return wrong


LENGTH_REWARD_MISTAKES = [
    Mistake(
        "wrong_answers_get_lambda",
        N_(
            "Your wrong answers get lambda itself, so a short WRONG answer is rewarded; Kimi gives a wrong answer only "
            "min(0, lambda)."
        ),
        N_("For a wrong answer keep lambda only where it is negative, else give 0."),
        _kimi(lambda lengths, correct: _lam(lengths)),
    ),
    Mistake(
        "wrong_answers_get_zero",
        N_("Your wrong answers always get 0; Kimi gives them min(0, lambda), so a LONG wrong answer is penalised."),
        N_("For a wrong answer keep lambda where it is negative."),
        _kimi(lambda lengths, correct: torch.where(correct, _lam(lengths), torch.zeros_like(_lam(lengths)))),
    ),
    Mistake(
        "wrong_answers_get_positive_part",
        N_(
            "Your wrong answers get max(0, lambda), the positive part; Kimi gives them the negative part, min(0, "
            "lambda)."
        ),
        N_("For a wrong answer keep lambda where it is negative and give 0 where it is positive."),
        _kimi(lambda lengths, correct: torch.where(correct, _lam(lengths), _lam(lengths).clamp(min=0))),
    ),
    Mistake(
        "right_and_wrong_swapped",
        N_("You give the right answers min(0, lambda) and the wrong ones lambda: the two cases are swapped."),
        N_("A right answer gets lambda; a wrong one min(0, lambda)."),
        _kimi(lambda lengths, correct: torch.where(correct, _lam(lengths).clamp(max=0), _lam(lengths))),
    ),
    Mistake(
        "lambda_reversed",
        N_("Your lambda runs the wrong way: the LONGEST answer gets +0.5."),
        N_("Start at 0.5 and subtract the answer's position between the shortest and the longest length."),
        _kimi(lambda lengths, correct: torch.where(correct, -_lam(lengths), (-_lam(lengths)).clamp(max=0))),
    ),
    Mistake(
        "lambda_zero_to_one",
        N_("Your lambda runs from 1 (shortest) to 0 (longest); Kimi's runs from +0.5 to -0.5."),
        N_("Start from 0.5, not 1."),
        _kimi(lambda lengths, correct: torch.where(correct, _lam(lengths) + 0.5, (_lam(lengths) + 0.5).clamp(max=0))),
    ),
    Mistake(
        "scaled_by_max",
        N_("You divide by the longest length; Kimi divides by the spread, longest minus shortest."),
        N_(
            "Divide the length above the minimum by (longest - shortest), and give every answer 0 when all lengths are "
            "equal."
        ),
        lambda lengths, correct: torch.where(  # no guard needed: the longest length is never 0
            correct,
            0.5 - (lengths - lengths.min()) / lengths.max(),
            (0.5 - (lengths - lengths.min()) / lengths.max()).clamp(max=0),
        ),
    ),
    Mistake(
        "equal_lengths_divide_by_zero",
        N_("When all lengths are equal you divide 0 by 0 (NaN); Kimi gives every answer 0 then."),
        N_("Treat a group whose lengths are all equal on its own: every answer gets 0."),
        lambda lengths, correct: torch.where(correct, _lam(lengths), _lam(lengths).clamp(max=0)),
    ),
    Mistake(
        "equal_lengths_half",
        N_("When all lengths are equal you give every answer lambda of 0.5; Kimi gives 0 (no length signal)."),
        N_("Return 0 for every answer when the longest and the shortest length are the same."),
        lambda lengths, correct: torch.where(
            correct,
            0.5 - (lengths - lengths.min()) / (lengths.max() - lengths.min()).clamp(min=1e-9),
            (0.5 - (lengths - lengths.min()) / (lengths.max() - lengths.min()).clamp(min=1e-9)).clamp(max=0),
        ),
    ),
]

length_reward = Exercise(
    name=N_("Kimi k1.5's length reward"),
    reference=_length_reward,
    cases=[
        Case(
            N_("Exercise 5: lengths [200, 400, 600, 1000], first two correct"),
            args=(torch.tensor([200.0, 400, 600, 1000]), torch.tensor([True, True, False, False])),
        ),
        Case(
            N_("lengths [50, 80, 120, 300, 90], correct [F, T, F, T, F] (short wrong answers)"),
            args=(torch.tensor([50.0, 80, 120, 300, 90]), torch.tensor([False, True, False, True, False])),
        ),
        Case(
            N_("all four lengths equal to 15 (max_len == min_len)"),
            args=(torch.tensor([15.0, 15, 15, 15]), torch.tensor([True, False, True, False])),
        ),
        Case(
            N_("lengths [3, 15, 15, 16], correct [T, T, F, F] (our arithmetic task)"),
            args=(torch.tensor([3.0, 15, 15, 16]), torch.tensor([True, True, False, False])),
        ),
    ],
    mistakes=LENGTH_REWARD_MISTAKES,
    hint=[
        N_(
            "Within a group the shortest answer gets +0.5 and the longest -0.5, linearly in between. A right answer "
            "gets that value, a wrong one only its negative part (a wrong answer is never paid for being short). "
            "Equal lengths: no length signal at all."
        ),
        N_(
            r"$\lambda_i = 0.5 - \frac{\mathrm{len}_i - \min \mathrm{len}}{\max \mathrm{len} - \min \mathrm{len}}$; "
            r"a right answer gets $\lambda_i$, a wrong one $\min(0, \lambda_i)$, and every answer 0 when all lengths "
            "are the same (Kimi k1.5, section 2.3.3)."
        ),
    ],
    solution="""
lengths = lengths.float()
lo, hi = lengths.min(), lengths.max()
if hi == lo:
    return torch.zeros_like(lengths)
lam = 0.5 - (lengths - lo) / (hi - lo)
return torch.where(correct, lam, lam.clamp(max=0))
""",
)


# ----------------------------------------------------------------------------------------------- free answers
exercise_7d = FreeAnswer(
    N_("Exercise 7(d): does the direction of the length bias change at p = 0.7?"),
    hint=[
        N_("Which sign does the advantage of a correct answer have, whatever p is?"),
        N_(r"Compare $E[A_i \, 1\{\text{correct}\}]$ at $p$ and at $1 - p$: swap the words 'correct' and 'wrong'."),
    ],
    solution=N_(
        "No. The direction is set by the sign of the advantage: a correct answer always has A > 0 in a mixed group "
        "(its reward is above the group mean) and a wrong one A < 0, whatever p is. GRPO's 1/|o_i| turns A > 0 into "
        "'shorter is better' and A < 0 into 'longer is better', so the correct path still shrinks to 0 and the wrong "
        "path still runs to the cap. Even the speed is the same: E[A_i 1{correct}] at p equals E[A_i 1{correct}] at 1 "
        "- p (swapping correct and wrong flips every advantage), and E[A_i] = 0 makes the two paths' pushes equal and "
        "opposite. At p = 0.7 more answers are correct, but each gets a smaller advantage. The measurement above shows "
        "the same final lengths at p = 0.3 and p = 0.7."
    ),
)

arithmetic_prediction = FreeAnswer(
    N_("On the arithmetic task, what can Kimi's length reward do?"),
    hint=[
        N_(
            "List the lengths a group can contain: a well-formed think-first answer has 15 tokens, a direct one 3 "
            "(run-on answers 16). Which answers get +0.5, and which -0.5?"
        ),
        N_(
            "What are the shortest and the longest length of a group that mixes formats, and of a group where every "
            "answer thinks? What does the reward pay for in each?"
        ),
    ],
    solution=N_(
        "It cannot make a chain of thought shorter: every think-first answer has exactly 15 tokens. Lengths differ "
        "only between formats, so the reward is a format reward. In a group that mixes formats, min_len = 3 and "
        "max_len = 15 (or 16): a correct direct answer gets +0.5, a wrong direct answer min(0, 0.5) = 0, and every "
        "think-first answer, right or wrong, gets -0.5. So it pays for answering directly. Switched on at step 0, when "
        "half the answers are direct and thinking is right less than half the time, this penalty outweighs the gain "
        "from thinking, and it holds back (or reverses) the move to think-first answers. Switched on late, when almost "
        "every answer thinks, most groups have equal lengths, so the reward is 0 and it has little to act on. A "
        "think-first answer that is right still beats a direct one by much more than 0.5 in expectation, so thinking "
        "stays."
    ),
)
