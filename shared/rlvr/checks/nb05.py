"""Exercise checkers of notebook 05 (length bias, Dr. GRPO, Kimi's length reward)."""

import torch

from rlvr.checks import Case, Exercise, FreeAnswer, GradCase
from rlvr.objectives import aggregate_loss, kimi_length_reward

AGGREGATION = {"grpo": "seq_mean_token_mean", "dr_grpo": "seq_mean_token_sum_norm"}


# ----------------------------------------------------------------------------------------------- Exercise 4 (code)
def _sequence_loss(per_token_loss, response_mask, mode="grpo", max_len=None):
    """Reference: rlvr.objectives.aggregate_loss with GRPO's or Dr. GRPO's aggregation."""
    if mode == "dr_grpo" and max_len is None:
        raise ValueError("dr_grpo needs max_len")
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

sequence_loss = Exercise(
    name="GRPO's and Dr. GRPO's loss aggregation",
    reference=_sequence_loss,
    cases=[
        GradCase(
            "2 answers of 3 and 1 tokens (T = 4), mode='grpo'",
            kwargs={"per_token_loss": _LOSS_A, "response_mask": _MASK_A, "mode": "grpo"},
            wrt=["per_token_loss"],
        ),
        GradCase(
            "2 answers of 3 and 1 tokens (T = 4), mode='dr_grpo', max_len=4",
            kwargs={"per_token_loss": _LOSS_A, "response_mask": _MASK_A, "mode": "dr_grpo", "max_len": 4},
            wrt=["per_token_loss"],
        ),
        GradCase(
            "3 answers of 2, 5 and 4 tokens (T = 6), mode='grpo'",
            kwargs={"per_token_loss": _LOSS_B, "response_mask": _MASK_B, "mode": "grpo"},
            wrt=["per_token_loss"],
        ),
        GradCase(
            "3 answers of 2, 5 and 4 tokens (T = 6), mode='dr_grpo', max_len=10 (larger than T)",
            kwargs={"per_token_loss": _LOSS_B, "response_mask": _MASK_B, "mode": "dr_grpo", "max_len": 10},
            wrt=["per_token_loss"],
        ),
    ],
    hint=(
        "Multiply by the mask before summing over tokens (dim=1). GRPO divides each answer's sum by its own "
        "number of real tokens `response_mask.sum(dim=1)`; Dr. GRPO divides every answer by the same `max_len` "
        "(not by the padded width T). Then take the mean over answers."
    ),
    solution="""
token_sums = (per_token_loss * response_mask).sum(dim=1)  # [B]
if mode == "grpo":
    per_answer = token_sums / response_mask.sum(dim=1)  # [B] mean over each answer's own |o_i| tokens
else:
    per_answer = token_sums / max_len  # [B] the same constant for every answer
return per_answer.mean()
""",
)


# ----------------------------------------------------------------------------------------------- toy log-prob (code)
def _length_logprob(k, logit, cap):
    """Reference: k "continue" tokens, then the answer token (free at the cap)."""
    k = torch.as_tensor(k)
    stop = torch.where(k < cap, torch.nn.functional.logsigmoid(-logit), torch.zeros_like(logit))
    return k * torch.nn.functional.logsigmoid(logit) + stop


length_logprob = Exercise(
    name="log-prob of a toy answer with k thinking tokens",
    reference=_length_logprob,
    cases=[
        GradCase(
            "k = [0, 1, 4], logit 0.5, cap 10",
            kwargs={"k": torch.tensor([0, 1, 4]), "logit": torch.tensor(0.5, dtype=torch.float64), "cap": 10},
            wrt=["logit"],
        ),
        GradCase(
            "k = [3, 10] with cap 10 (an answer at the cap has no stop decision)",
            kwargs={"k": torch.tensor([3, 10]), "logit": torch.tensor(2.0, dtype=torch.float64), "cap": 10},
            wrt=["logit"],
        ),
        GradCase(
            "k = [0, 5, 30], logit -1.5, cap 30",
            kwargs={"k": torch.tensor([0, 5, 30]), "logit": torch.tensor(-1.5, dtype=torch.float64), "cap": 30},
            wrt=["logit"],
        ),
    ],
    hint=(
        "Each thinking token is a 'continue' decision with log-prob `logsigmoid(logit)`; the answer token after "
        "them is a 'stop' decision with log-prob `logsigmoid(-logit)`, except at k = cap where stopping is "
        "forced (log-prob 0). Use `torch.where(k < cap, ...)`."
    ),
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


length_reward = Exercise(
    name="Kimi k1.5's length reward",
    reference=_length_reward,
    cases=[
        Case(
            "Exercise 5: lengths [200, 400, 600, 1000], first two correct",
            args=(torch.tensor([200.0, 400, 600, 1000]), torch.tensor([True, True, False, False])),
        ),
        Case(
            "lengths [50, 80, 120, 300, 90], correct [F, T, F, T, F] (short wrong answers)",
            args=(torch.tensor([50.0, 80, 120, 300, 90]), torch.tensor([False, True, False, True, False])),
        ),
        Case(
            "all four lengths equal to 15 (max_len == min_len)",
            args=(torch.tensor([15.0, 15, 15, 15]), torch.tensor([True, False, True, False])),
        ),
        Case(
            "lengths [3, 15, 15, 16], correct [T, T, F, F] (our arithmetic task)",
            args=(torch.tensor([3.0, 15, 15, 16]), torch.tensor([True, True, False, False])),
        ),
    ],
    hint=(
        "lam_i = 0.5 - (len_i - min_len) / (max_len - min_len). Correct answers get lam_i, wrong ones "
        "min(0, lam_i) (`torch.where` and `clamp(max=0)`). When every length is the same, return zeros "
        "(do not divide by 0)."
    ),
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
    "Exercise 7(d): does the direction of the length bias change at p = 0.7?",
    hint=(
        "Which sign does the advantage of a correct answer have, whatever p is? Then compare "
        "E[A_i * 1{correct}] at p and at 1 - p (swap the words 'correct' and 'wrong')."
    ),
    solution=(
        "No. The direction is set by the sign of the advantage: a correct answer always has A > 0 in a mixed group "
        "(its reward is above the group mean) and a wrong one A < 0, whatever p is. GRPO's 1/|o_i| turns A > 0 into "
        "'shorter is better' and A < 0 into 'longer is better', so the correct path still shrinks to 0 and the wrong "
        "path still runs to the cap. Even the speed is the same: E[A_i 1{correct}] at p equals E[A_i 1{correct}] at "
        "1 - p (swapping correct and wrong flips every advantage), and E[A_i] = 0 makes the two paths' pushes equal "
        "and opposite. At p = 0.7 more answers are correct, but each gets a smaller advantage. The measurement "
        "above shows the same final lengths at p = 0.3 and p = 0.7."
    ),
)

arithmetic_prediction = FreeAnswer(
    "On the arithmetic task, what can Kimi's length reward do?",
    hint=(
        "List the lengths a group can contain: a well-formed think-first answer has 15 tokens, a direct one 3 "
        "(run-on answers 16). What are min_len and max_len of a group, and which answers get +0.5 and -0.5? "
        "What happens in a group where every answer thinks?"
    ),
    solution=(
        "It cannot make a chain of thought shorter: every think-first answer has exactly 15 tokens. Lengths differ "
        "only between formats, so the reward is a format reward. In a group that mixes formats, min_len = 3 and "
        "max_len = 15 (or 16): a correct direct answer gets +0.5, a wrong direct answer min(0, 0.5) = 0, and every "
        "think-first answer, right or wrong, gets -0.5. So it pays for answering directly. Switched on at step 0, "
        "when half the answers are direct and thinking is right less than half the time, this penalty outweighs the "
        "gain from thinking, and it holds back (or reverses) the move to think-first answers. "
        "Switched on late, when almost every answer thinks, most groups have equal lengths, so the reward is 0 and "
        "it has little to act on. A think-first answer that is right still beats a direct one by much more "
        "than 0.5 in expectation, so thinking stays."
    ),
)
