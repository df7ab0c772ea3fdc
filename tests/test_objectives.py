"""Every objective of rlvr.objectives against an independent computation: explicit loops, numpy, closed forms,
autograd of the written-out formula, enumeration of a small bandit, and the lecture's exercises (section 9)."""

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rlvr.algorithms import ALGORITHMS
from rlvr.objectives import (
    ADVANTAGE_KINDS,
    RATIO_LOSSES,
    aggregate_loss,
    cispo_loss,
    compute_advantages,
    dr_grpo_advantages,
    gae,
    grpo_advantages,
    gspo_loss,
    kimi_length_reward,
    kl_k1,
    kl_k2,
    kl_k3,
    maxrl_advantages,
    mean_baseline_advantages,
    pass_at_k,
    policy_gradient_loss,
    ppo_clip_loss,
    rft_loss,
    rloo_advantages,
    shaped_rewards,
)

FAST = settings(max_examples=60, deadline=None, database=None, derandomize=True)


def assert_close(got, expected, rtol=1e-5, atol=1e-7):
    """Elementwise closeness (torch.testing.assert_close costs ~2 s of lazy imports on first use)."""
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got.detach().double().numpy(), expected.detach().double().numpy(), rtol=rtol, atol=atol)


# ======================================================================================= advantages
def _group_loop(rewards, group_size, per_group):
    """Apply per_group(list of G floats) -> list of G floats to each group; flat list out."""
    out = []
    for start in range(0, len(rewards), group_size):
        out.extend(per_group([float(r) for r in rewards[start : start + group_size]]))
    return out


def _mean_incl_self(group):
    """r_i - mean of all G rewards."""
    m = sum(group) / len(group)
    return [r - m for r in group]


def _rloo(group):
    """r_i - mean of the other G-1 rewards."""
    return [r - (sum(group) - r) / (len(group) - 1) for r in group]


def _z_score(ddof, eps):
    """(r_i - mean) / (std with ddof + eps), by numpy."""

    def per_group(group):
        g = np.asarray(group, dtype=np.float64)
        return list((g - g.mean()) / (g.std(ddof=ddof) + eps))

    return per_group


REWARDS = [1.0, 0.0, 0.5, 0.25, 0.0, 0.0, 1.0, 1.0, 0.3, 2.0, -1.0, 0.7]


@pytest.mark.parametrize(
    "kind, per_group",
    [
        ("mean", _mean_incl_self),
        ("rloo", _rloo),
        ("none", lambda g: g),
        ("grpo", _z_score(0, 1e-4)),
        ("maxrl", lambda g: [(r - sum(g) / len(g)) / (sum(g) / len(g) + 1e-4) for r in g]),
    ],
)
@pytest.mark.parametrize("group_size", [2, 3, 4])
def test_advantages_match_explicit_loops(kind, per_group, group_size):
    expected = _group_loop(REWARDS, group_size, per_group)
    got = compute_advantages(torch.tensor(REWARDS), group_size, kind)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("std, ddof", [("population", 0), ("unbiased", 1)])
@pytest.mark.parametrize("eps", [0.0, 1e-4, 0.5])
def test_grpo_std_choice_and_eps(std, ddof, eps):
    expected = _group_loop(REWARDS, 4, _z_score(ddof, eps))
    got = grpo_advantages(torch.tensor(REWARDS), 4, eps=eps, std=std)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_named_functions_equal_compute_advantages():
    r = torch.tensor(REWARDS)
    assert_close(mean_baseline_advantages(r, 3), compute_advantages(r, 3, "mean"))
    assert_close(rloo_advantages(r, 3), compute_advantages(r, 3, "rloo"))
    assert_close(dr_grpo_advantages(r, 3), compute_advantages(r, 3, ALGORITHMS["dr_grpo"].advantage))


@pytest.mark.parametrize("kind", ADVANTAGE_KINDS[1:])
@pytest.mark.parametrize("group_size", [2, 3, 5])
@pytest.mark.parametrize("value", [0.0, 1.0, 0.9, 123.456])
def test_all_equal_rewards_give_exactly_zero(kind, group_size, value):
    """A group with one reward value has no signal: exactly 0 for every kind (the GRPO docstring promises it)."""
    adv = compute_advantages(torch.full((group_size,), value), group_size, kind)
    assert torch.equal(adv, torch.zeros(group_size)), adv


@pytest.mark.parametrize("std", ["population", "unbiased"])
def test_grpo_all_equal_rewards_with_eps_zero_is_zero_not_nan(std):
    adv = grpo_advantages(torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]), 4, eps=0.0, std=std)
    assert not torch.isnan(adv).any(), adv
    assert torch.equal(adv, torch.zeros(8))


@pytest.mark.parametrize("kind", ADVANTAGE_KINDS)
def test_groups_are_independent(kind):
    gen = torch.Generator().manual_seed(0)
    rewards = torch.randint(0, 2, (5 * 4,), generator=gen).float() + torch.rand(20, generator=gen)
    batched = compute_advantages(rewards, 4, kind)
    alone = torch.cat([compute_advantages(g, 4, kind) for g in rewards.split(4)])
    assert_close(batched, alone)


def test_lecture_exercise_3_grpo_vs_dr_grpo():
    rewards = torch.tensor([1.0, 0, 0, 0, 0, 0, 0, 0])
    grpo = grpo_advantages(rewards, 8, eps=0.0, std="population")
    assert round(float(grpo[0]), 2) == 2.65 and round(float(grpo[1]), 2) == -0.38
    assert torch.equal(grpo[1:], grpo[1:2].expand(7))
    dr = dr_grpo_advantages(rewards, 8)
    assert float(dr[0]) == 0.875 and torch.equal(dr[1:], torch.full((7,), -0.125))


def test_bad_group_sizes_raise():
    with pytest.raises(ValueError):
        compute_advantages(torch.zeros(6), 4, "mean")
    with pytest.raises(ValueError):
        rloo_advantages(torch.zeros(3), 1)
    with pytest.raises(ValueError):
        grpo_advantages(torch.zeros(4), 2, std="sample")
    with pytest.raises(ValueError):
        compute_advantages(torch.zeros(4), 2, "ppo")


# --------------------------------------------------------------------------------- unbiasedness by enumeration
BANDIT_LOGITS = [1.0, 0.0, -1.0]
BANDIT_REWARDS = [1.0, 0.3, -0.5]


def _exact_gradient():
    """Gradient of E_{z ~ softmax(theta)}[r(z)] with respect to the logits theta. [3]."""
    theta = torch.tensor(BANDIT_LOGITS, dtype=torch.float64, requires_grad=True)
    expected_reward = (torch.softmax(theta, 0) * torch.tensor(BANDIT_REWARDS, dtype=torch.float64)).sum()
    return torch.autograd.grad(expected_reward, theta)[0]


def _estimator_mean(kind, group_size):
    """Exact E[(1/G) sum_i A_i grad log p(z_i)] over all G-tuples of i.i.d. samples. [3]."""
    theta = torch.tensor(BANDIT_LOGITS, dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(theta, 0)  # [3]
    surrogate = torch.zeros((), dtype=torch.float64)
    for tuple_ in itertools.product(range(3), repeat=group_size):
        prob = math.prod(float(logp[z].detach().exp()) for z in tuple_)
        rewards = torch.tensor([BANDIT_REWARDS[z] for z in tuple_])
        adv = compute_advantages(rewards, group_size, kind).double()  # [G], no gradient
        surrogate = surrogate + prob * sum(adv[i] * logp[z] for i, z in enumerate(tuple_)) / group_size
    return torch.autograd.grad(surrogate, theta)[0]


@pytest.mark.parametrize("group_size", [2, 3])
def test_rloo_and_raw_rewards_are_unbiased(group_size):
    exact = _exact_gradient()
    assert_close(_estimator_mean("rloo", group_size), exact, rtol=1e-6, atol=1e-9)
    assert_close(_estimator_mean("none", group_size), exact, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("group_size", [2, 3])
def test_mean_including_self_scales_the_gradient_by_g_minus_1_over_g(group_size):
    expected = (group_size - 1) / group_size * _exact_gradient()
    assert_close(_estimator_mean("mean", group_size), expected, rtol=1e-6, atol=1e-9)
    assert_close(_estimator_mean(ALGORITHMS["dr_grpo"].advantage, group_size), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("group_size", [2, 3])
def test_grpo_z_score_is_not_proportional_to_the_gradient(group_size):
    """Component-wise ratios to the true gradient differ (about 1.1 / 1.5 / 0.8 for G = 2): no common scale."""
    ratios = _estimator_mean("grpo", group_size) / _exact_gradient()  # [3]
    assert float(ratios.max() - ratios.min()) > 0.3, ratios


# ======================================================================================= PPO clip
def _clip_objective(r, a, eps):
    """min(r A, clip(r, 1-eps, 1+eps) A) for floats."""
    return min(r * a, min(max(r, 1 - eps), 1 + eps) * a)


def _clip_objective_grad_logp(r, a, eps):
    """d objective / d log pi: r A where the unclipped term is active, 0 where the clip binds."""
    clipped = (a > 0 and r > 1 + eps) or (a < 0 and r < 1 - eps)
    return 0.0 if clipped else r * a


def _random_ratios(n=200, seed=0, eps=0.2):
    """Log-ratios spread over [-1, 1], kept away from the clip boundaries."""
    log_r = torch.empty(n, dtype=torch.float64).uniform_(-1, 1, generator=torch.Generator().manual_seed(seed))
    r = log_r.exp()
    keep = ((r - (1 + eps)).abs() > 1e-3) & ((r - (1 - eps)).abs() > 1e-3)
    return log_r[keep]


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_ppo_clip_value_and_gradient_against_the_explicit_objective(sign):
    log_r = _random_ratios()
    adv = sign * torch.linspace(0.1, 3.0, len(log_r), dtype=torch.float64)
    old = torch.linspace(-3, -0.1, len(log_r), dtype=torch.float64)
    logps = (old + log_r).requires_grad_(True)
    loss, clipped = ppo_clip_loss(logps[None], old[None], adv[None, :], clip_eps=0.2)
    (grad,) = torch.autograd.grad(loss.sum(), logps)
    r, a = log_r.exp().tolist(), adv.tolist()
    expected_loss = [-_clip_objective(ri, ai, 0.2) for ri, ai in zip(r, a)]
    expected_grad = [-_clip_objective_grad_logp(ri, ai, 0.2) for ri, ai in zip(r, a)]
    np.testing.assert_allclose(loss[0].detach().numpy(), expected_loss, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad.numpy(), expected_grad, rtol=1e-10, atol=1e-12)
    assert torch.equal(clipped[0], grad == 0)  # the clip mask is true exactly where the gradient vanishes


def test_lecture_exercise_2_objective_and_slope():
    ratio = torch.tensor([0.5, 1.0, 1.1, 1.5], dtype=torch.float64, requires_grad=True)
    loss, clipped = ppo_clip_loss(
        torch.log(ratio)[None],
        torch.zeros(1, 4, dtype=torch.float64),
        torch.tensor([2.0], dtype=torch.float64),
        clip_eps=0.2,
    )
    objective = -loss[0]
    (slope,) = torch.autograd.grad(objective.sum(), ratio)
    np.testing.assert_allclose(objective.detach().numpy(), [1.0, 2.0, 2.2, 2.4], rtol=1e-12)
    np.testing.assert_allclose(slope.numpy(), [2.0, 2.0, 2.0, 0.0], rtol=1e-12)
    assert clipped[0].tolist() == [False, False, False, True]


def test_negative_advantage_gradient_vanishes_below_one_minus_eps():
    ratio = torch.tensor([0.5, 0.7, 0.9, 1.0, 1.5], dtype=torch.float64, requires_grad=True)
    loss, clipped = ppo_clip_loss(
        torch.log(ratio)[None],
        torch.zeros(1, 5, dtype=torch.float64),
        torch.tensor([-1.0], dtype=torch.float64),
        clip_eps=0.2,
    )
    (slope,) = torch.autograd.grad((-loss).sum(), ratio)
    np.testing.assert_allclose((-loss[0]).detach().numpy(), [-0.8, -0.8, -0.9, -1.0, -1.5], rtol=1e-12)
    np.testing.assert_allclose(slope.numpy(), [0.0, 0.0, -1.0, -1.0, -1.0], rtol=1e-12)
    assert clipped[0].tolist() == [True, True, False, False, False]


def test_first_update_gradient_is_the_plain_policy_gradient():
    """Ratio 1 (the policy has not moved yet): the clipped loss has the REINFORCE gradient -A grad log pi."""
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 4, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    tokens = torch.randint(0, 5, (3, 4), generator=gen)
    adv = torch.tensor([1.5, -0.7, 0.2], dtype=torch.float64)

    def logps():
        return torch.log_softmax(logits, -1).gather(-1, tokens[..., None])[..., 0]  # [3, 4]

    loss, clipped = ppo_clip_loss(logps(), logps().detach(), adv, clip_eps=0.2)
    (ppo_grad,) = torch.autograd.grad(loss.sum(), logits)
    (pg_grad,) = torch.autograd.grad((-(adv[:, None] * logps())).sum(), logits)
    assert_close(ppo_grad, pg_grad)
    assert not clipped.any()


def test_maxrl_divides_by_the_group_mean_so_a_hard_prompt_weighs_more():
    """The assignment's "mean" normaliser: a lone right answer among 8 gets (1 - 1/8) / (1/8) = 7, among 2 of 2 right
    and 2 wrong (mean 1/2) it gets 1; eps sits in the denominator."""
    got = maxrl_advantages(torch.tensor([1.0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]), 8, eps=0.0)
    assert_close(got[:2], torch.tensor([7.0, -1.0]))
    assert_close(got[8:10], torch.tensor([3.0, 3.0]))  # (1 - 1/4) / (1/4)
    assert_close(maxrl_advantages(torch.tensor([1.0, 0.0]), 2, eps=0.5), torch.tensor([0.5, -0.5]))


def _logps_pair(b=4, t=6, seed=0, spread=1.0):
    """(logps with graph, old_logps), float64, [b, t]: log-ratios spread over [-spread, spread]."""
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(b, t, generator=gen, dtype=torch.float64) * 3 - 0.1
    log_r = (torch.rand(b, t, generator=gen, dtype=torch.float64) * 2 - 1) * spread
    return (old + log_r).requires_grad_(True), old


def test_gspo_uses_one_length_normalised_ratio_per_answer_clipped_per_answer():
    logps, old = _logps_pair(spread=0.6)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0]]).bool()
    adv = torch.tensor([1.0, -2.0, 0.5, -0.3], dtype=torch.float64)
    loss, clipped = gspo_loss(logps, old, adv, 0.05, mask)
    assert bool(clipped[:, 0].any()) and not bool(clipped[:, 0].all()), "the case needs both kinds of answer"
    for i in range(4):
        n = int(mask[i].sum())
        s = math.exp(float((logps[i, :n].detach() - old[i, :n]).mean()))  # the geometric mean of the answer's ratios
        a = float(adv[i])
        expected = -_clip_objective(s, a, 0.05)
        assert torch.allclose(loss[i], torch.full((6,), expected, dtype=torch.float64))  # on every token
        assert clipped[i].tolist() == [bool((a > 0 and s > 1.05) or (a < 0 and s < 0.95))] * 6
    # the gradient of answer i's loss: -A s / |o_i| on each real token (0 on padding), or 0 once clipped
    (grad,) = torch.autograd.grad(aggregate_loss(loss, mask, "seq_mean_token_mean"), logps)
    for i in range(4):
        n, a = int(mask[i].sum()), float(adv[i])
        s = math.exp(float((logps[i, :n].detach() - old[i, :n]).mean()))
        want = 0.0 if bool(clipped[i, 0]) else -a * s / n / 4
        assert torch.allclose(grad[i, :n], torch.full((n,), want, dtype=torch.float64))
        assert torch.equal(grad[i, n:], torch.zeros(6 - n, dtype=torch.float64))


def test_gspo_at_the_first_update_has_grpos_gradient():
    """Ratio 1 (the policy has not moved): GSPO's per-answer loss and GRPO's per-answer token mean differ in value only
    by the sign convention and have the same gradient."""
    logps, _ = _logps_pair(seed=2)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0]]).bool()
    adv = torch.tensor([1.0, -2.0, 0.5, -0.3], dtype=torch.float64)
    grads = []
    for name in ("clip", "gspo"):
        loss, clipped = RATIO_LOSSES[name](logps, logps.detach(), adv, 0.2, mask)
        (grad,) = torch.autograd.grad(aggregate_loss(loss, mask, "seq_mean_token_mean"), logps)
        grads.append(grad)
        assert not clipped.any()
    assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-14)


def test_cispo_caps_the_weight_from_above_detaches_it_and_keeps_every_tokens_gradient():
    logps, old = _logps_pair(spread=1.0, seed=1)
    adv = torch.tensor([1.0, -2.0, 0.5, -0.3], dtype=torch.float64)
    loss, clipped = cispo_loss(logps, old, adv, 0.2)
    (grad,) = torch.autograd.grad(loss.sum(), logps)
    ratio = (logps - old).exp().detach()
    weight = ratio.clamp(max=1.2)
    assert_close(loss, -weight * adv[:, None] * logps.detach(), rtol=1e-12)
    assert_close(grad, -weight * adv[:, None].expand_as(ratio), rtol=1e-12)  # d/dlogp of sg(w) A logp: w A
    assert torch.equal(clipped, ratio > 1.2)
    assert bool(clipped.any()) and bool((ratio < 0.8).any()), "the case needs ratios beyond both ends"
    # PPO's clip zeroes the gradient of a positive-advantage token past 1 + eps; CISPO caps it at (1 + eps) A
    ppo, _ = ppo_clip_loss(logps, old, adv, 0.2)
    (ppo_grad,) = torch.autograd.grad(ppo.sum(), logps)
    past = (ratio > 1.2) & (adv[:, None] > 0)
    assert bool(past.any()) and bool((ppo_grad[past] == 0).all()) and bool((grad[past] != 0).all())


@pytest.mark.parametrize("name", sorted(RATIO_LOSSES))
def test_ratio_losses_are_silent_at_a_zero_advantage(name):
    """Value and gradient 0 for an answer whose advantage is 0 (what lets an update leave all-0 groups out)."""
    logps, old = _logps_pair(spread=1.0, seed=3)
    mask = torch.ones(4, 6, dtype=torch.bool)
    loss, _ = RATIO_LOSSES[name](logps, old, torch.zeros(4, dtype=torch.float64), 0.2, mask)
    (grad,) = torch.autograd.grad(loss.sum(), logps)
    assert torch.equal(loss.detach(), torch.zeros_like(loss)) and torch.equal(grad, torch.zeros_like(grad))


def test_policy_gradient_loss_is_minus_advantage_times_logp():
    logps = torch.tensor([[-0.5, -1.0], [-2.0, -0.1]])
    got = policy_gradient_loss(logps, torch.tensor([2.0, -1.0]))
    assert_close(got, torch.tensor([[1.0, 2.0], [-2.0, -0.1]]))


# ======================================================================================= KL estimators
def _gaussian_samples(mu, n=400_000, seed=0):
    """x ~ q = N(0,1); returns (log q(x), log p(x)) with p = N(mu, 1), float64."""
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    log_norm = -0.5 * math.log(2 * math.pi)
    return log_norm - x**2 / 2, log_norm - (x - mu) ** 2 / 2


@pytest.mark.parametrize("mu", [0.3, 1.0])
def test_kl_estimators_match_schulmans_closed_forms(mu):
    logq, logp = _gaussian_samples(mu)
    kl = mu**2 / 2
    k1, k2, k3 = kl_k1(logq, logp), kl_k2(logq, logp), kl_k3(logq, logp)
    n = len(logq)

    def close(estimate, target, spread):
        assert abs(estimate - target) < 5 * spread / math.sqrt(n), (estimate, target)

    close(float(k1.mean()), kl, mu)  # unbiased, std mu
    close(float(k3.mean()), kl, math.sqrt(math.exp(mu**2) - 1 - mu**2))  # unbiased
    close(float(k2.mean()) - kl, mu**4 / 8, float(k2.std()))  # biased by mu^4 / 8
    assert abs(float(k1.std()) - mu) < 0.01 * mu
    var_k3 = math.exp(mu**2) - 1 - mu**2
    assert abs(float(k3.var()) - var_k3) < 0.05 * var_k3


def test_kl_sign_convention_log_r_is_ref_minus_policy():
    logps, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])  # r = p_ref / pi = 0.5
    assert_close(kl_k1(logps, ref), torch.tensor([math.log(2.0)]))
    assert_close(kl_k2(logps, ref), torch.tensor([math.log(2.0) ** 2 / 2]))
    assert_close(kl_k3(logps, ref), torch.tensor([0.5 - 1 + math.log(2.0)]))


@FAST
@given(st.floats(-20, 20), st.floats(-20, 20), st.sampled_from([torch.float32, torch.float64]))
@example(-1.0, -0.99999994, torch.float32)  # one float32 step apart
def test_k2_k3_are_never_negative(logp, ref, dtype):
    logps, ref_logps = torch.tensor([logp], dtype=dtype), torch.tensor([ref], dtype=dtype)
    assert float(kl_k3(logps, ref_logps)) >= 0
    assert float(kl_k2(logps, ref_logps)) >= 0


def test_k3_is_not_negative_when_policy_and_reference_differ_by_one_float32_step():
    logps = torch.tensor([-1.0, -2.3])
    ref_logps = torch.nextafter(logps, torch.zeros(2))  # log r = +1 ulp: true k3 ~ 1e-15 > 0
    assert torch.all(kl_k3(logps, ref_logps) >= 0), kl_k3(logps, ref_logps)


# ======================================================================================= reward shaping, GAE
def _mask(lengths, T):
    """Right-padded bool mask [B, T] from lengths."""
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]


def test_shaped_rewards_score_on_last_real_token_kl_elsewhere_padding_zero():
    lengths, T, beta = [3, 1, 5], 5, 0.1
    kl = torch.tensor([[0.2, -0.3, 0.4, 9.0, 9.0], [0.5, 9.0, 9.0, 9.0, 9.0], [0.1, 0.2, -0.1, 0.3, 0.6]])
    scores = torch.tensor([1.0, 0.0, 2.0])
    for clamp in (True, False):
        got = shaped_rewards(scores, kl, _mask(lengths, T), beta, clamp_kl=clamp)
        expected = torch.zeros(3, T)
        for b, length in enumerate(lengths):
            for t in range(length):
                k = max(float(kl[b, t]), 0.0) if clamp else float(kl[b, t])
                expected[b, t] = -beta * k + (float(scores[b]) if t == length - 1 else 0.0)
        assert_close(got, expected)


def _gae_by_definition(rewards, values, gamma, lam):
    """A_t = sum_l (gamma lam)^l delta_{t+l}, delta_t = r_t + gamma V_{t+1} - V_t, V after the end = 0."""
    L = len(rewards)
    v = list(values) + [0.0]
    deltas = [rewards[t] + gamma * v[t + 1] - v[t] for t in range(L)]
    return [sum((gamma * lam) ** k * deltas[t + k] for k in range(L - t)) for t in range(L)]


def _padded_case(seed=0):
    """Rewards, values (with junk on padding) and mask for lengths 4, 2, 6 in T = 6."""
    gen = torch.Generator().manual_seed(seed)
    mask = _mask([4, 2, 6], 6)
    rewards = torch.randn(3, 6, generator=gen, dtype=torch.float64)
    values = torch.randn(3, 6, generator=gen, dtype=torch.float64)
    return rewards, values, mask


def test_gae_gamma_lambda_one_is_reward_to_go_minus_value():
    rewards, values, mask = _padded_case()
    adv, returns = gae(rewards, values, mask, 1.0, 1.0)
    for b in range(3):
        L = int(mask[b].sum())
        to_go = [sum(rewards[b, t:L].tolist()) for t in range(L)]
        np.testing.assert_allclose(adv[b, :L].numpy(), np.array(to_go) - values[b, :L].numpy(), atol=1e-12)
        np.testing.assert_allclose(returns[b, :L].numpy(), to_go, atol=1e-12)


def test_gae_lambda_zero_is_the_one_step_td_error():
    rewards, values, mask = _padded_case(1)
    adv, _ = gae(rewards, values, mask, gamma=0.9, lam=0.0)
    for b in range(3):
        L = int(mask[b].sum())
        v = values[b, :L].tolist() + [0.0]
        td = [float(rewards[b, t]) + 0.9 * v[t + 1] - v[t] for t in range(L)]
        np.testing.assert_allclose(adv[b, :L].numpy(), td, atol=1e-12)


def test_gae_hand_computed_case():
    """gamma 0.9, lam 0.8, r = (0, 0, 1), V = (0.5, 0.6, 0.7): deltas 0.04, 0.03, 0.3."""
    rewards = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    values = torch.tensor([[0.5, 0.6, 0.7]], dtype=torch.float64)
    adv, returns = gae(rewards, values, torch.ones(1, 3, dtype=torch.bool), gamma=0.9, lam=0.8)
    expected = [0.04 + 0.72 * 0.246, 0.03 + 0.72 * 0.3, 0.3]  # 0.21712, 0.246, 0.3
    np.testing.assert_allclose(adv[0].numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(adv[0].numpy(), _gae_by_definition([0, 0, 1], [0.5, 0.6, 0.7], 0.9, 0.8), atol=1e-12)
    np.testing.assert_allclose(returns[0].numpy(), [0.71712, 0.846, 1.0], atol=1e-12)


def test_gae_ignores_padding():
    rewards, values, mask = _padded_case(2)
    adv, returns = gae(rewards, values, mask, gamma=0.95, lam=0.9)
    for b in range(3):
        L = int(mask[b].sum())
        expected = _gae_by_definition(rewards[b, :L].tolist(), values[b, :L].tolist(), 0.95, 0.9)
        np.testing.assert_allclose(adv[b, :L].numpy(), expected, atol=1e-12)
        assert torch.all(adv[b, L:] == 0) and torch.all(returns[b, L:] == 0)


# ======================================================================================= aggregation
def _lossy_batch(seed=0):
    """Per-token loss [3, 6] with junk on padding, lengths 2, 6, 4."""
    loss = torch.randn(3, 6, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return loss, _mask([2, 6, 4], 6)


def test_aggregations_against_explicit_loops():
    loss, mask = _lossy_batch()
    rows = [[float(loss[b, t]) for t in range(6) if mask[b, t]] for b in range(3)]
    grpo = sum(sum(row) / len(row) for row in rows) / 3
    dr_grpo = sum(sum(row) / 10 for row in rows) / 3
    token_mean = sum(sum(row) for row in rows) / sum(len(row) for row in rows)
    assert math.isclose(float(aggregate_loss(loss, mask, "seq_mean_token_mean")), grpo, rel_tol=1e-12)
    assert math.isclose(float(aggregate_loss(loss, mask, "seq_mean_token_sum_norm", 10)), dr_grpo, rel_tol=1e-12)
    assert math.isclose(
        float(aggregate_loss(loss, mask, "seq_mean_token_sum_norm")), dr_grpo * 10 / 6, rel_tol=1e-12
    )  # max_len defaults to T
    assert math.isclose(float(aggregate_loss(loss, mask, "token_mean")), token_mean, rel_tol=1e-12)
    with pytest.raises(ValueError):
        aggregate_loss(loss, mask, "sum")


@pytest.mark.parametrize(
    "mode, short_weight, long_weight",
    [("seq_mean_token_mean", 0.01, -0.001), ("seq_mean_token_sum_norm", 0.001, -0.001)],
)
def test_lecture_exercise_4_length_bias(mode, short_weight, long_weight):
    """Weight on grad log pi of each token, times B = 2 (the mean over answers divides every weight by B)."""
    mask = _mask([100, 1000], 1000)
    logps = torch.full((2, 1000), -1.0, dtype=torch.float64, requires_grad=True)
    loss = aggregate_loss(
        policy_gradient_loss(logps, torch.tensor([1.0, -1.0], dtype=torch.float64)), mask, mode, max_len=1000
    )
    (grad,) = torch.autograd.grad(loss, logps)
    weight = -2 * grad  # d(-loss)/d log pi, times the number of answers
    np.testing.assert_allclose(weight[0, :100].numpy(), short_weight, rtol=1e-12)
    np.testing.assert_allclose(weight[1].numpy(), long_weight, rtol=1e-12)
    assert torch.all(weight[0, 100:] == 0)


# ======================================================================================= RFT
def test_rft_loss_uses_only_correct_answers():
    mask = _mask([2, 3, 1], 4)
    logps = torch.tensor([[-1.0, -2.0, 7, 7], [-0.5, -0.5, -0.5, 7], [-3.0, 7, 7, 7]], requires_grad=True)
    loss = rft_loss(logps, mask, torch.tensor([1.0, 0.0, 1.0]))
    assert math.isclose(float(loss.detach()), (1.0 + 2.0 + 3.0) / 3, rel_tol=1e-6)
    (grad,) = torch.autograd.grad(loss, logps)
    expected = torch.zeros(3, 4)
    expected[0, :2] = expected[2, 0] = -1 / 3
    assert_close(grad, expected)


def test_rft_loss_is_zero_with_zero_gradient_when_nothing_is_correct():
    logps = torch.randn(2, 3, requires_grad=True)
    loss = rft_loss(logps, torch.ones(2, 3, dtype=torch.bool), torch.zeros(2))
    (grad,) = torch.autograd.grad(loss, logps)
    assert float(loss.detach()) == 0.0 and torch.equal(grad, torch.zeros(2, 3))


# ======================================================================================= Kimi, pass@k
def test_lecture_exercise_5_kimi_length_reward():
    got = kimi_length_reward(torch.tensor([200, 400, 600, 1000]), torch.tensor([True, True, False, False]))
    assert_close(got, torch.tensor([0.5, 0.25, 0.0, -0.5]))


def test_kimi_equal_lengths_give_zeros():
    got = kimi_length_reward(torch.tensor([7, 7, 7]), torch.tensor([True, False, True]))
    assert torch.equal(got, torch.zeros(3))


@FAST
@given(st.lists(st.tuples(st.integers(1, 500), st.booleans()), min_size=1, max_size=16))
def test_kimi_reward_by_definition_and_range(answers):
    lengths = [length for length, _ in answers]
    lo, hi = min(lengths), max(lengths)
    got = kimi_length_reward(torch.tensor(lengths), torch.tensor([ok for _, ok in answers])).tolist()
    for (length, ok), value in zip(answers, got):
        lam = 0.0 if hi == lo else 0.5 - (length - lo) / (hi - lo)
        assert math.isclose(value, lam if ok else min(0.0, lam), abs_tol=1e-6)
        assert -0.5 <= value <= 0.5


def test_pass_at_k_check_values():
    assert math.isclose(pass_at_k(10, 3, 5), 0.91667, abs_tol=5e-6)
    assert math.isclose(pass_at_k(10, 3, 5), 1 - 1 / 12, rel_tol=1e-12)
    assert all(math.isclose(pass_at_k(n, c, 1), c / n) for n in (1, 7, 20) for c in range(n + 1))
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 8, 3) == 1.0  # n - c = 2 < k


def test_pass_at_k_equals_the_binomial_formula_on_a_grid():
    for n in range(1, 21):
        for c in range(n + 1):
            for k in range(1, n + 1):
                expected = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert math.isclose(pass_at_k(n, c, k), expected, rel_tol=1e-9, abs_tol=1e-12), (n, c, k)


@pytest.mark.parametrize("p, rounded", [(0.1, 0.81), (0.9, 1.0)])
def test_lecture_exercise_6_pass_at_16(p, rounded):
    n = 100_000
    got = pass_at_k(n, int(p * n), 16)
    assert abs(got - (1 - (1 - p) ** 16)) < 1e-3
    assert round(got, 2) == rounded


@pytest.mark.parametrize("n, c, k", [(10, 11, 1), (10, -1, 1), (10, 3, 0), (10, 3, 11), (0, 0, 1)])
def test_pass_at_k_invalid_inputs_raise(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
