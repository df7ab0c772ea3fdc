"""rlvr.cs336 (the assignment-5 reference functions) against independent computations: numpy group statistics,
written-out losses and their autograd gradients, a manual entropy."""

import inspect
import math

import numpy as np
import pytest
import torch

from rlvr import cs336, objectives
from rlvr.cs336 import (
    compute_entropy,
    compute_group_normalized_rewards,
    compute_grpo_clip_loss,
    compute_naive_policy_gradient_loss,
    compute_policy_gradient_loss,
    grpo_microbatch_train_step,
    masked_mean,
    masked_normalize,
    sft_microbatch_train_step,
)


def assert_close(got, expected, rtol=1e-6, atol=1e-7):
    """Elementwise closeness, as numpy arrays."""
    got, expected = torch.as_tensor(got).detach().double(), torch.as_tensor(expected).detach().double()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=rtol, atol=atol)


# ======================================================================================= signatures
SIGNATURES = {
    "compute_group_normalized_rewards": [
        "reward_fn",
        "rollout_responses",
        "repeated_ground_truths",
        "group_size",
        "advantage_eps",
        "normalize_by_std",
    ],
    "compute_naive_policy_gradient_loss": ["raw_rewards_or_advantages", "policy_log_probs"],
    "compute_grpo_clip_loss": ["advantages", "policy_log_probs", "old_log_probs", "cliprange"],
    "compute_policy_gradient_loss": [
        "policy_log_probs",
        "loss_type",
        "raw_rewards",
        "advantages",
        "old_log_probs",
        "cliprange",
    ],
    "masked_mean": ["tensor", "mask", "dim"],
    "masked_normalize": ["tensor", "mask", "dim", "normalize_constant"],
    "compute_entropy": ["logits"],
    "sft_microbatch_train_step": [
        "policy_log_probs",
        "response_mask",
        "gradient_accumulation_steps",
        "normalize_constant",
    ],
    "grpo_microbatch_train_step": [
        "policy_log_probs",
        "response_mask",
        "gradient_accumulation_steps",
        "loss_type",
        "raw_rewards",
        "advantages",
        "old_log_probs",
        "cliprange",
    ],
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_names_and_parameter_order_match_the_assignment(name):
    assert list(inspect.signature(getattr(cs336, name)).parameters) == SIGNATURES[name]


def test_masked_mean_is_the_objectives_function():
    assert cs336.masked_mean is objectives.masked_mean


# ======================================================================================= group-normalised rewards
def _reward_fn(calls):
    """reward_fn(response, ground_truth) -> {"reward", "format_reward", "answer_reward"}; records its calls."""

    def reward_fn(response, ground_truth):
        calls.append((response, ground_truth))
        formatted = response.startswith("<")
        correct = formatted and response.strip("<>") == ground_truth
        return {"reward": float(correct), "format_reward": float(formatted), "answer_reward": float(correct)}

    return reward_fn


RESPONSES = ["<3>", "<4>", "3", "<3>", "<7>", "<7>", "<1>", "x"]
TRUTHS = ["3"] * 4 + ["7"] * 4
RAW = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0]


def _numpy_normalised(raw, group_size, eps, by_std):
    """(r - group mean) [/ (unbiased group std + eps)], by numpy."""
    groups = np.asarray(raw, dtype=np.float64).reshape(-1, group_size)
    centred = groups - groups.mean(axis=1, keepdims=True)
    if by_std:
        centred = centred / (groups.std(axis=1, ddof=1, keepdims=True) + eps)
    return centred.reshape(-1)


@pytest.mark.parametrize("by_std", [True, False])
@pytest.mark.parametrize("group_size", [2, 4])
def test_group_normalized_rewards_against_numpy(by_std, group_size):
    calls = []
    adv, raw, meta = compute_group_normalized_rewards(_reward_fn(calls), RESPONSES, TRUTHS, group_size, 1e-6, by_std)
    assert calls == list(zip(RESPONSES, TRUTHS))  # one call per (response, ground truth), in order
    assert raw.tolist() == RAW and adv.shape == (8,)
    assert_close(adv, _numpy_normalised(RAW, group_size, 1e-6, by_std), rtol=1e-5)
    assert math.isclose(meta["reward_mean"], 0.5) and meta["reward_min"] == 0.0 and meta["reward_max"] == 1.0
    assert math.isclose(meta["format_reward_mean"], 6 / 8) and math.isclose(meta["answer_reward_mean"], 0.5)


def test_group_normalized_rewards_exact_values_with_unbiased_std():
    """Group [1, 0, 0, 1]: mean 0.5, torch.std = sqrt(1/3), so A = +-0.5 * sqrt(3) / (1 + eps sqrt(3))."""
    adv, _, _ = compute_group_normalized_rewards(_reward_fn([]), RESPONSES[:4], TRUTHS[:4], 4, 0.0, True)
    a = 0.5 * math.sqrt(3)
    assert_close(adv, [a, -a, -a, a], rtol=1e-6)


def test_group_normalized_rewards_rejects_mismatched_inputs():
    with pytest.raises(ValueError):
        compute_group_normalized_rewards(_reward_fn([]), RESPONSES, TRUTHS[:7], 4, 1e-6, True)
    with pytest.raises(ValueError):
        compute_group_normalized_rewards(_reward_fn([]), RESPONSES[:6], TRUTHS[:6], 4, 1e-6, True)


# ======================================================================================= losses
def _batch(seed=0, B=3, T=5):
    """Log-probs [B, T], old log-probs [B, T] (ratios spread around 1), advantages [B, 1], raw rewards [B, 1]."""
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=gen, dtype=torch.float64) * 3
    logps = old + (torch.rand(B, T, generator=gen, dtype=torch.float64) - 0.5)  # ratio in [0.61, 1.65]
    adv = torch.tensor([[1.5], [-0.8], [0.3]], dtype=torch.float64)[:B]
    raw = torch.tensor([[1.0], [0.0], [1.0]], dtype=torch.float64)[:B]
    return logps, old, adv, raw


def _clip_loss_loop(adv, logps, old, eps):
    """-min(r A, clip(r, 1-eps, 1+eps) A), element by element. [B, T]."""
    out = torch.zeros_like(logps)
    for b in range(logps.shape[0]):
        for t in range(logps.shape[1]):
            r, a = math.exp(float(logps[b, t] - old[b, t])), float(adv[b, 0])
            out[b, t] = -min(r * a, min(max(r, 1 - eps), 1 + eps) * a)
    return out


def test_naive_policy_gradient_loss_is_minus_reward_times_logp():
    logps, _, _, raw = _batch()
    loss = compute_naive_policy_gradient_loss(raw, logps)
    assert loss.shape == logps.shape
    assert_close(loss, -raw.expand_as(logps) * logps)


def test_grpo_clip_loss_against_loop_and_clip_metadata():
    logps, old, adv, _ = _batch()
    loss, meta = compute_grpo_clip_loss(adv, logps, old, 0.2)
    assert_close(loss, _clip_loss_loop(adv, logps, old, 0.2))
    ratio = (logps - old).exp()
    expected_clipped = ((adv > 0) & (ratio > 1.2)) | ((adv < 0) & (ratio < 0.8))
    assert torch.equal(meta["clipped"], expected_clipped) and expected_clipped.any()


@pytest.mark.parametrize("loss_type", ["no_baseline", "reinforce_with_baseline", "grpo_clip"])
def test_policy_gradient_loss_dispatch(loss_type):
    logps, old, adv, raw = _batch(1)
    loss, _ = compute_policy_gradient_loss(logps, loss_type, raw, adv, old, 0.2)
    expected = {
        "no_baseline": -raw * logps,
        "reinforce_with_baseline": -adv * logps,
        "grpo_clip": _clip_loss_loop(adv, logps, old, 0.2),
    }[loss_type]
    assert_close(loss, expected)


@pytest.mark.parametrize(
    "loss_type, kwargs",
    [
        ("no_baseline", {}),
        ("reinforce_with_baseline", {"raw_rewards": torch.ones(3, 1)}),
        ("grpo_clip", {"advantages": torch.ones(3, 1), "cliprange": 0.2}),
        ("ppo", {"advantages": torch.ones(3, 1)}),
    ],
)
def test_policy_gradient_loss_missing_arguments_or_unknown_type_raise(loss_type, kwargs):
    with pytest.raises(ValueError):
        compute_policy_gradient_loss(torch.zeros(3, 5), loss_type, **kwargs)


# ======================================================================================= reductions
def test_masked_mean_against_loop_and_nan_for_an_empty_slice():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    mask = torch.tensor([[1, 0, 1], [0, 0, 0], [1, 1, 1]], dtype=torch.bool)
    rows = masked_mean(x, mask, dim=1)
    assert rows[0] == 2.0 and math.isnan(float(rows[1])) and rows[2] == 8.0
    assert_close(masked_mean(x, mask, dim=0), [4.0, 8.0, 6.0])
    assert math.isclose(float(masked_mean(x, mask)), (1 + 3 + 7 + 8 + 9) / 5, rel_tol=1e-6)
    assert math.isnan(float(masked_mean(x, torch.zeros(3, 3, dtype=torch.bool))))


def test_masked_normalize_positional_order_dim_then_constant():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])  # float masks, as in the assignment
    assert_close(masked_normalize(x, mask, 1, 2.0), [1.5, 5.5])
    assert_close(masked_normalize(x, mask, 0, 4.0), [0.25, 1.75, 1.5])
    assert float(masked_normalize(x, mask)) == 14.0
    assert float(masked_normalize(x, mask, normalize_constant=7.0)) == 2.0


def _entropy_loop(logits):
    """-sum_v p_v log p_v at each position, with p = softmax computed by hand in float64. [B, T]."""
    B, T, _ = logits.shape
    out = torch.zeros(B, T, dtype=torch.float64)
    for b in range(B):
        for t in range(T):
            z = [float(v) for v in logits[b, t]]
            top = max(z)
            weights = [math.exp(v - top) for v in z]
            p = [w / sum(weights) for w in weights]
            out[b, t] = -sum(pi * math.log(pi) for pi in p if pi > 0)
    return out


def test_compute_entropy_against_a_manual_entropy():
    logits = torch.randn(2, 3, 7, generator=torch.Generator().manual_seed(0)) * 3
    entropy = compute_entropy(logits)
    assert entropy.shape == (2, 3)
    assert_close(entropy, _entropy_loop(logits), rtol=1e-5, atol=1e-6)


def test_compute_entropy_uniform_one_hot_and_huge_logits():
    assert_close(compute_entropy(torch.zeros(1, 2, 10)), torch.full((1, 2), math.log(10)), rtol=1e-6)
    peaked = torch.tensor([[[1e4, 0.0, -1e4]]])
    entropy = compute_entropy(peaked)
    assert torch.isfinite(entropy).all() and abs(float(entropy)) < 1e-6


# ======================================================================================= train step
def _explicit_step_loss(loss_type, logps, old, adv, raw, mask):
    """Written-out loss: per-token loss, mean over each answer's real tokens, mean over answers."""
    per_token = {
        "no_baseline": -raw * logps,
        "reinforce_with_baseline": -adv * logps,
        "grpo_clip": -torch.minimum((logps - old).exp() * adv, (logps - old).exp().clamp(0.8, 1.2) * adv),
    }[loss_type]
    m = mask.to(logps.dtype)
    return ((per_token * m).sum(dim=1) / m.sum(dim=1)).mean()


@pytest.mark.parametrize("loss_type", ["no_baseline", "reinforce_with_baseline", "grpo_clip"])
def test_microbatch_step_gradient_is_the_explicit_formula_over_accumulation_steps(loss_type):
    logps0, old, adv, raw = _batch(2)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.bool)
    leaf = logps0.clone().requires_grad_(True)
    loss, _ = grpo_microbatch_train_step(leaf, mask, 4, loss_type, raw, adv, old, 0.2)

    reference = logps0.clone().requires_grad_(True)
    explicit = _explicit_step_loss(loss_type, reference, old, adv, raw, mask)
    (expected_grad,) = torch.autograd.grad(explicit / 4, reference)
    assert math.isclose(float(loss), float(explicit.detach()) / 4, rel_tol=1e-9)
    assert_close(leaf.grad, expected_grad, rtol=1e-9, atol=1e-12)
    assert torch.all(leaf.grad[~mask] == 0)  # padding gets no gradient


def test_microbatch_step_backpropagates_once_per_call_and_accumulates():
    logps0, old, adv, raw = _batch(3)
    mask = torch.ones(3, 5, dtype=torch.bool)
    leaf = logps0.clone().requires_grad_(True)
    grpo_microbatch_train_step(leaf, mask, 2, "reinforce_with_baseline", advantages=adv)
    once = leaf.grad.clone()
    grpo_microbatch_train_step(leaf, mask, 2, "reinforce_with_baseline", advantages=adv)
    assert_close(leaf.grad, 2 * once)
    assert_close(once, -adv.expand(3, 5) / (5 * 3 * 2))  # d/d logp of mean_b mean_t(-A logp) / 2


def test_microbatch_step_reports_clip_fraction():
    logps0, old, adv, _ = _batch(0)
    mask = torch.ones(3, 5, dtype=torch.bool)
    _, meta = grpo_microbatch_train_step(
        logps0.clone().requires_grad_(True), mask, 1, "grpo_clip", advantages=adv, old_log_probs=old, cliprange=0.2
    )
    ratio = (logps0 - old).exp()
    expected = (((adv > 0) & (ratio > 1.2)) | ((adv < 0) & (ratio < 0.8))).double().mean()
    assert math.isclose(float(meta["clip_fraction"]), float(expected), rel_tol=1e-6) and 0 < expected < 1


# ======================================================================================= SFT train step
SFT_MASK = torch.tensor([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1], [0, 0, 1, 0, 0]], dtype=torch.bool)  # B = 3, T = 5


def _sft_step(logps0, mask, steps, constant):
    """sft_microbatch_train_step on a fresh leaf copy of logps0: (loss, metadata, gradient)."""
    leaf = logps0.clone().requires_grad_(True)
    loss, meta = sft_microbatch_train_step(leaf, mask, steps, constant)
    return loss, meta, leaf.grad


def _explicit_sft_loss(logps, mask, steps, constant):
    """Written-out SFT loss: per answer, sum of -log p over its response tokens / constant; mean over answers;
    / steps."""
    per_answer = [
        -sum(logps[b, t] for t in range(logps.shape[1]) if mask[b, t]) / constant for b in range(logps.shape[0])
    ]
    return sum(per_answer) / len(per_answer) / steps


@pytest.mark.parametrize("float_mask", [False, True])
def test_sft_step_gradient_is_autograd_of_the_explicit_formula(float_mask):
    logps0, _, _, _ = _batch(4)
    mask = SFT_MASK.double() if float_mask else SFT_MASK  # the assignment's masks are bool; 1/0 floats work too
    loss, _, grad = _sft_step(logps0, mask, 4, 2.5)

    reference = logps0.clone().requires_grad_(True)
    explicit = _explicit_sft_loss(reference, SFT_MASK, 4, 2.5)
    (expected_grad,) = torch.autograd.grad(explicit, reference)
    assert math.isclose(float(loss), float(explicit.detach()), rel_tol=1e-12)
    assert_close(grad, expected_grad, rtol=1e-12, atol=0)
    assert_close(grad, -SFT_MASK.double() / (2.5 * 3 * 4), rtol=1e-12, atol=0)  # d/d logp: -1 / (c B steps)
    assert torch.all(grad[~SFT_MASK] == 0) and torch.all(grad[SFT_MASK] < 0)  # only response tokens get gradient


def test_sft_step_divides_by_the_batch_size():
    """Same tokens per answer, B = 1 vs B = 3 copies: the batch mean leaves the loss unchanged."""
    logps0, _, _, _ = _batch(5)
    one, _, _ = _sft_step(logps0[:1], SFT_MASK[:1], 1, 1.0)
    three, _, grad = _sft_step(logps0[:1].expand(3, 5), SFT_MASK[:1].expand(3, 5), 1, 1.0)
    assert math.isclose(float(three), float(one), rel_tol=1e-12)
    assert_close(grad, -SFT_MASK[:1].expand(3, 5).double() / 3, rtol=1e-12, atol=0)


@pytest.mark.parametrize("steps, constant", [(2, 1.0), (8, 1.0), (1, 0.5), (1, 4.0), (4, 0.5)])
def test_sft_step_accumulation_steps_and_normalize_constant_scale_exactly(steps, constant):
    """Powers of two, so the scaled loss and gradient equal the unscaled ones times 1 / (steps * constant) bit for
    bit."""
    logps0, _, _, _ = _batch(6)
    base_loss, _, base_grad = _sft_step(logps0, SFT_MASK, 1, 1.0)
    loss, _, grad = _sft_step(logps0, SFT_MASK, steps, constant)
    assert float(loss) == float(base_loss) / (steps * constant) and float(loss) != float(base_loss)
    assert torch.equal(grad, base_grad / (steps * constant))


def test_sft_step_non_power_of_two_scaling():
    logps0, _, _, _ = _batch(7)
    base_loss, _, base_grad = _sft_step(logps0, SFT_MASK, 1, 1.0)
    loss, _, grad = _sft_step(logps0, SFT_MASK, 3, 42.0)
    assert math.isclose(float(loss), float(base_loss) / 126, rel_tol=1e-12)
    assert_close(grad, base_grad / 126, rtol=1e-12, atol=0)


def test_sft_step_returns_detached_loss_and_metadata_and_accumulates():
    logps0, _, _, _ = _batch(8)
    leaf = logps0.clone().requires_grad_(True)
    loss, meta = sft_microbatch_train_step(leaf, SFT_MASK, 2)
    once = leaf.grad.clone()
    assert loss.shape == () and not loss.requires_grad and loss.grad_fn is None
    assert all(not value.requires_grad for value in meta.values())
    assert int(meta["num_response_tokens"]) == 8
    assert math.isclose(float(meta["token_nll"]), float(-logps0[SFT_MASK].mean()), rel_tol=1e-12)
    loss.mul_(0)  # the caller may do anything with the logged loss without touching the graph or the gradient
    sft_microbatch_train_step(leaf, SFT_MASK, 2)  # one backward per call; gradients add up like the GRPO step's
    assert_close(leaf.grad, 2 * once, rtol=1e-12, atol=0)


def test_sft_step_matches_the_assignment_snapshot():
    """The assignment's fixtures (seed 42: log-probs randn(2, 10), mask rand > 0.5, 2 accumulation steps) and its
    v1.0.1 snapshots tests/_snapshots/test_sft_microbatch_train_step{,_normalize}.npz."""
    torch.manual_seed(42)
    logps0 = torch.randn(2, 10)
    torch.manual_seed(42)
    mask = torch.rand_like(logps0) > 0.5
    for constant, expected_loss in [(1.0, -0.60078377), (42.0, -0.01430438)]:
        loss, _, grad = _sft_step(logps0, mask, 2, constant)
        assert math.isclose(float(loss), expected_loss, rel_tol=1e-5)
        assert_close(grad, -mask.float() / (constant * 2 * 2), rtol=1e-6)


@pytest.mark.parametrize(
    "logps_shape, mask_shape",
    [((3, 5), (3, 4)), ((3, 5), (3, 1)), ((3, 5), (5,)), ((15,), (15,)), ((3, 5, 1), (3, 5, 1))],
)
def test_sft_step_rejects_shape_mismatches(logps_shape, mask_shape):
    """Including masks that would broadcast silently ([3, 1], [5]) and inputs that are not [batch, seq]."""
    leaf = torch.zeros(logps_shape, requires_grad=True)
    with pytest.raises(ValueError, match="batch, seq"):
        sft_microbatch_train_step(leaf, torch.ones(mask_shape, dtype=torch.bool), 1)
    assert leaf.grad is None  # rejected before any backward


# ======================================================================================= tokens, log-probs (2025, 2026)
@pytest.fixture(scope="module")
def char_tokenizer():
    """The task's character tokenizer as a Hugging Face PreTrainedTokenizerFast, padding on the right."""
    from rlvr.scale.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.padding_side = "right"
    return tokenizer


def test_tokenize_prompt_and_output_joins_shifts_and_masks_the_output(char_tokenizer):
    from rlvr.task import PAD_ID, encode

    out = cs336.tokenize_prompt_and_output(["12=", "9="], ["#3$", "[99]#8$"], char_tokenizer)
    full = [encode("12=#3$") + [PAD_ID] * 3, encode("9=[99]#8$")]  # right-padded to the longest (9 tokens)
    assert out["input_ids"].tolist() == [row[:-1] for row in full]
    assert out["labels"].tolist() == [row[1:] for row in full]
    # the mask is aligned with the labels: True where the label is an output token
    assert out["response_mask"].tolist() == [
        [False, False, True, True, True, False, False, False],
        [False, True, True, True, True, True, True, True],
    ]


def test_get_response_log_probs_reads_the_label_after_each_position_and_the_entropy():
    class Logits(torch.nn.Module):
        """A 'model' whose logits at position t depend on the token there: model(ids).logits = table[ids]."""

        def __init__(self):
            super().__init__()
            self.table = torch.nn.Parameter(torch.randn(6, 5, generator=torch.Generator().manual_seed(0)))

        def forward(self, ids):
            return type("Out", (), {"logits": self.table[ids]})()

    model = Logits()
    ids, labels = torch.tensor([[0, 3, 2], [5, 1, 1]]), torch.tensor([[3, 2, 4], [1, 1, 0]])
    out = cs336.get_response_log_probs(model, ids, labels, return_token_entropy=True)
    log_p = torch.log_softmax(model.table.detach(), dim=-1)  # [6, 5]
    for b in range(2):
        for t in range(3):
            assert out["log_probs"][b, t].item() == pytest.approx(log_p[ids[b, t], labels[b, t]].item(), abs=1e-6)
            entropy = -(log_p[ids[b, t]].exp() * log_p[ids[b, t]]).sum()
            assert out["token_entropy"][b, t].item() == pytest.approx(entropy.item(), abs=1e-6)
    assert out["log_probs"].requires_grad and "token_entropy" not in cs336.get_response_log_probs(model, ids, labels)


# ======================================================================================= spring 2026
def _reward_table(response, ground_truth):
    """A reward function: the response's length mod 3 over 2, and whether it ends in the ground truth."""
    return {
        "reward": (len(response) % 3) / 2,
        "format_reward": 1.0,
        "answer_reward": float(response[-1:] == ground_truth),
    }


def test_rollout_rewards_are_reward_fn_in_order_with_component_means():
    raw, meta = cs336.compute_rollout_rewards(_reward_table, ["a", "bb", "ccc2"], ["1", "2", "2"])
    assert raw.tolist() == [0.5, 1.0, 0.5] and raw.dtype == torch.float32
    assert meta["answer_reward_mean"] == pytest.approx(1 / 3) and meta["format_reward_mean"] == 1.0


@pytest.mark.parametrize("baseline", ["mean", "none"])
@pytest.mark.parametrize("normalizer", ["std", "none", "mean"])
def test_2026_group_normalization_against_numpy(baseline, normalizer):
    rewards = np.array([1.0, 0.0, 0.5, 0.25, 0.0, 0.0, 1.0, 1.0, 0.3, 2.0, -1.0, 0.7, 1.0, 1.0, 1.0, 1.0])
    got, _ = cs336.compute_group_normalized_rewards_2026(torch.tensor(rewards), 4, baseline, 1e-3, normalizer)
    g = rewards.reshape(-1, 4)
    centred = g - g.mean(axis=1, keepdims=True) if baseline == "mean" else g
    scale = {"std": g.std(axis=1, ddof=1, keepdims=True) + 1e-3, "mean": g.mean(axis=1, keepdims=True) + 1e-3}
    expected = centred / scale.get(normalizer, 1.0)
    assert_close(got, torch.tensor(expected.reshape(-1)), rtol=1e-5, atol=1e-6)
    if baseline == "mean":  # the all-equal last group gets exactly 0 (its float mean need not be exact)
        assert torch.equal(got[12:], torch.zeros(4))


def test_2026_group_normalization_refuses_an_unknown_choice():
    with pytest.raises(ValueError, match="advantage_normalizer"):
        cs336.compute_group_normalized_rewards_2026(torch.ones(4), 2, "mean", 1e-6, "max")


def _pg_inputs(seed=0):
    """Advantages [B, 1], log-probs with graph, old log-probs, response mask [B, T] (B=3, T=5), float64."""
    gen = torch.Generator().manual_seed(seed)
    adv = torch.tensor([[1.5], [-0.7], [0.4]], dtype=torch.float64)
    old = -torch.rand(3, 5, generator=gen, dtype=torch.float64) * 2
    logps = (old + torch.randn(3, 5, generator=gen, dtype=torch.float64) * 0.5).requires_grad_(True)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]]).bool()
    return adv, logps, old, mask


def test_2026_policy_gradient_losses_are_the_handouts_formulas():
    adv, logps, old, mask = _pg_inputs()
    ratio = (logps - old).exp()
    expected = {
        "none": -adv * logps,
        "noclip": -adv * ratio,
        "grpo": -torch.minimum(adv * ratio, adv * ratio.clamp(0.9, 1.1)),
        "cispo": -adv * ratio.clamp(max=1.1).detach() * logps,
    }
    for method, want in expected.items():
        got, meta = cs336.compute_policy_gradient_loss_2026(adv, logps, method, old, 0.1, mask)
        assert_close(got, want, rtol=1e-12)
        (g1,) = torch.autograd.grad(got.sum(), logps)
        (g2,) = torch.autograd.grad(want.sum(), logps, retain_graph=True)  # the expected losses share `ratio`
        assert_close(g1, g2, rtol=1e-12)
    got, meta = cs336.compute_policy_gradient_loss_2026(adv[:, 0], logps, "gspo", old, 0.1, mask)
    for i in range(3):
        n = int(mask[i].sum())
        s = float((logps[i, :n].detach() - old[i, :n]).mean().exp())
        a = float(adv[i])
        want = -min(s * a, min(max(s, 0.9), 1.1) * a)
        assert torch.allclose(got[i].detach(), torch.full((5,), want, dtype=torch.float64))


def test_2026_aggregation_sequence_and_constant():
    per_token = torch.tensor([[1.0, 2.0, 3.0, 9.0], [4.0, 9.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]]).bool()
    assert cs336.aggregate_loss_across_microbatch(per_token, mask).item() == pytest.approx((2.0 + 4.0) / 2)
    assert cs336.aggregate_loss_across_microbatch(per_token, mask, "constant", 5).item() == pytest.approx(10.0 / 5)
    with pytest.raises(ValueError, match="normalization_constant"):
        cs336.aggregate_loss_across_microbatch(per_token, mask, "constant")


class _Table(torch.nn.Module):
    """A tiny causal 'LM' for the train step: logits at position t = a learned table row of the token there."""

    def __init__(self, vocab: int):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(vocab, vocab, generator=torch.Generator().manual_seed(3)))

    def forward(self, ids):
        return type("Out", (), {"logits": self.table[ids]})()


def _train_step(char_tokenizer, steps, **kwargs):
    """(loss, the table's change) of one grpo_train_step with SGD(lr=1) on 4 groups of 2 answers."""
    from rlvr.task import VOCAB_SIZE

    model = _Table(VOCAB_SIZE)
    before = model.table.detach().clone()
    prompts = ["12=", "12=", "3=", "3=", "45=", "45=", "7=", "7="]
    responses = ["#3$", "[13]#3$", "#4$", "#3$", "[49]#9$", "#0$", "#7$", "#7$"]
    loss, meta = cs336.grpo_train_step(
        model,
        char_tokenizer,
        torch.optim.SGD(model.parameters(), lr=1.0),
        steps,
        None,
        lambda r, gt: {"reward": float(r[-2] == gt)},
        prompts,
        responses,
        ["3", "3", "3", "3", "9", "9", "7", "7"],
        2,
        **kwargs,
    )
    assert model.table.grad is None  # the step clears its gradients
    return loss, model.table.detach() - before


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"loss_normalization": "constant", "normalization_constant": 64, "advantage_normalizer": "none"},
        {
            "baseline": "none",
            "advantage_normalizer": "none",
            "loss_normalization": "constant",
            "normalization_constant": 9,
        },
    ],
)
def test_grpo_train_step_accumulates_microbatches_into_the_whole_batchs_update(char_tokenizer, kwargs):
    """The loss and the update do not depend on how many microbatches the batch is cut into (the handout's point)."""
    whole_loss, whole = _train_step(char_tokenizer, 1, **kwargs)
    for steps in (2, 4, 3):
        loss, delta = _train_step(char_tokenizer, steps, **kwargs)
        assert loss.item() == pytest.approx(whole_loss.item(), rel=1e-5, abs=1e-7)
        assert torch.allclose(delta, whole, rtol=1e-5, atol=1e-7)
    assert whole.abs().max() > 0


def test_grpo_train_step_is_the_explicit_gradient_of_the_sequence_mean(char_tokenizer):
    """Standard GRPO: -1/B sum_i A_i / |o_i| sum_t grad log pi(o_t), with torch.std advantages, one SGD step."""
    loss, delta = _train_step(char_tokenizer, 2)
    model = _Table(char_tokenizer.vocab_size)
    prompts = ["12=", "12=", "3=", "3=", "45=", "45=", "7=", "7="]
    responses = ["#3$", "[13]#3$", "#4$", "#3$", "[49]#9$", "#0$", "#7$", "#7$"]
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]).view(4, 2)
    adv = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-6)).view(-1)
    objective = 0.0
    for i, (p, r) in enumerate(zip(prompts, responses)):
        ids = char_tokenizer(p + r, add_special_tokens=False)["input_ids"]
        logp = torch.log_softmax(model.table[ids[:-1]], -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
        objective = objective + adv[i] * logp[len(p) - 1 :].mean() / len(prompts)
    (-objective).backward()
    assert loss.item() == pytest.approx(-objective.item(), rel=1e-5)
    assert torch.allclose(delta, -model.table.grad, rtol=1e-5, atol=1e-7)


def test_every_edition_lists_the_assignments_functions():
    assert set(cs336.EDITIONS["2025"]) >= set(SIGNATURES)
    assert list(inspect.signature(cs336.EDITIONS["2026"]["grpo_train_step"]).parameters)[:10] == [
        "model",
        "tokenizer",
        "optimizer",
        "gradient_accumulation_steps",
        "max_grad_norm",
        "reward_fn",
        "repeated_prompts",
        "rollout_responses",
        "repeated_ground_truths",
        "group_size",
    ]
