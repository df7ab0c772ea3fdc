"""The 5-answer bandit of notebook 01, against independent computations: autograd, enumeration, closed forms."""

import itertools
import math

import numpy as np
import pytest
import torch

from rlvr import widgets as w
from rlvr.experiments import bandit as b
from rlvr.narration import bandit as story
from rlvr.figures import bandit as fb

LOGITS = torch.tensor(b.INIT_LOGITS, dtype=torch.float64)
PARTIAL_CREDIT = (1.0, 0.5, 0.0, 0.0, 0.0)


# ----------------------------------------------------------------------------- independent helpers
def advantages_by_hand(r: np.ndarray, kind: str, eps: float = b.GRPO_EPS) -> np.ndarray:
    """Advantages of ONE group, written with plain numpy loops."""
    g = len(r)
    if kind == "none":
        return r.copy()
    if kind == "mean":
        return r - r.mean()
    if kind == "rloo":
        return np.array([r[i] - (r.sum() - r[i]) / (g - 1) for i in range(g)])
    if kind == "grpo":
        return (r - r.mean()) / (math.sqrt(((r - r.mean()) ** 2).mean()) + eps)
    raise ValueError(kind)


def enumerated_expectation(rewards, group_size: int, kind: str, shift: float = 0.0) -> np.ndarray:
    """E[g_hat] by summing over all 5^G groups: (1/G) sum_i A_i (onehot(z_i) - pi), weighted by their probability."""
    probs = torch.softmax(LOGITS, 0).numpy()
    rewards = np.asarray(rewards) + shift
    total = np.zeros(5)
    for group in itertools.product(range(5), repeat=group_size):
        weight = np.prod(probs[list(group)])
        adv = advantages_by_hand(rewards[list(group)], kind)
        g = sum(a * (np.eye(5)[z] - probs) for a, z in zip(adv, group)) / group_size
        total += weight * g
    return total


def autograd_gradient(rewards, shift: float = 0.0) -> torch.Tensor:
    """dJ/dtheta with J = sum_z softmax(theta)_z (R_z + shift), by autograd."""
    theta = LOGITS.clone().requires_grad_(True)
    objective = (torch.softmax(theta, 0) * (torch.tensor(rewards, dtype=torch.float64) + shift)).sum()
    (grad,) = torch.autograd.grad(objective, theta)
    return grad


# ----------------------------------------------------------------------------- exact gradient and estimators
@pytest.mark.parametrize("rewards", [b.REWARDS, PARTIAL_CREDIT])
def test_exact_gradient_matches_autograd_and_ignores_a_reward_shift(rewards):
    exact = b.exact_gradient(b.INIT_LOGITS, rewards).double()
    assert torch.allclose(exact, autograd_gradient(rewards), atol=1e-6)
    assert torch.allclose(exact, autograd_gradient(rewards, shift=5.0), atol=1e-6)
    assert b.expected_reward(b.INIT_LOGITS) == pytest.approx(float(torch.softmax(LOGITS, 0)[0]), abs=1e-6)


def test_one_group_estimate_equals_the_autograd_gradient_of_the_surrogate():
    answers = torch.tensor([[0, 1, 1, 3], [2, 2, 4, 0]])
    probs = b.policy(b.INIT_LOGITS)
    for kind in ("none", "rloo", "grpo"):
        got = b.group_gradients(answers, probs, b.REWARDS, kind, shift=5.0)
        for row, group in enumerate(answers):
            rewards = np.asarray(b.REWARDS)[group.numpy()] + 5.0
            adv = torch.tensor(advantages_by_hand(rewards, kind))
            theta = LOGITS.clone().requires_grad_(True)
            surrogate = (adv * torch.log_softmax(theta, 0)[group]).mean()
            (want,) = torch.autograd.grad(surrogate, theta)
            assert torch.allclose(got[row].double(), want, atol=1e-5), (kind, row)


@pytest.mark.parametrize("group_size", [2, 3])
def test_enumerated_expectations_none_rloo_exact_mean_shrunk(group_size):
    exact = b.exact_gradient(b.INIT_LOGITS).double().numpy()
    assert np.allclose(enumerated_expectation(b.REWARDS, group_size, "none", shift=5.0), exact, atol=1e-6)
    assert np.allclose(enumerated_expectation(b.REWARDS, group_size, "rloo", shift=5.0), exact, atol=1e-6)
    shrunk = enumerated_expectation(b.REWARDS, group_size, "mean")
    assert np.allclose(shrunk, (group_size - 1) / group_size * exact, atol=1e-6)


def test_grpo_keeps_the_direction_for_0_1_rewards_but_not_for_partial_credit():
    for rewards, parallel in ((b.REWARDS, True), (PARTIAL_CREDIT, False)):
        exact = autograd_gradient(rewards).numpy()
        mean = enumerated_expectation(rewards, 4, "grpo")
        cosine = mean @ exact / np.linalg.norm(mean) / np.linalg.norm(exact)
        assert (cosine > 1 - 1e-9) == parallel, (rewards, cosine)
        assert mean @ exact / (exact @ exact) > 1.2  # and it is longer than the exact gradient


def test_monte_carlo_comparison_agrees_with_enumeration_within_its_standard_error():
    comparison = b.compare_estimators(group_size=3, shift=2.0, n_groups=20_000, seed=3)
    exact = autograd_gradient(b.REWARDS).numpy()
    for kind, stats in comparison.stats.items():
        want = enumerated_expectation(b.REWARDS, 3, kind, shift=2.0)
        assert stats.scale == pytest.approx(want @ exact / (exact @ exact), abs=4 * stats.scale_se), kind
        assert np.linalg.norm(stats.mean.numpy() - want) < 4 * stats.noise_floor, kind
    assert comparison.stats["none"].variance > 10 * comparison.stats["rloo"].variance  # the shift costs variance


def test_smaller_groups_reuse_the_first_columns_of_one_sample_pool():
    small = b.compare_estimators(4, n_groups=1000, seed=1)
    again = b.compare_estimators(4, n_groups=1000, seed=1)
    assert torch.equal(small.stats["rloo"].mean, again.stats["rloo"].mean)
    pool = b.answer_pool(tuple(float(x) for x in b.INIT_LOGITS), 1000, b.MAX_GROUP_SIZE, 1)
    grads = b.group_gradients(pool[:, :4], b.policy(b.INIT_LOGITS), b.REWARDS, "rloo")
    assert torch.allclose(grads.mean(0), small.stats["rloo"].mean, atol=1e-6)


def test_baseline_scale_vs_group_size_follows_g_minus_1_over_g():
    sizes = (2, 4, 16)
    scales = b.baseline_scale_vs_group_size(sizes, n_groups=20_000)
    mean_scales, mean_ses = scales["mean"]
    rloo_scales, rloo_ses = scales["rloo"]
    for g, s, se in zip(sizes, mean_scales, mean_ses):
        assert s == pytest.approx((g - 1) / g, abs=4 * se)
    for s, se in zip(rloo_scales, rloo_ses):
        assert s == pytest.approx(1.0, abs=4 * se)


# ----------------------------------------------------------------------------- training runs
def test_one_sgd_step_moves_the_logits_by_lr_times_the_exact_gradient_on_average():
    exact = b.exact_gradient(b.INIT_LOGITS)
    for kind, shift in (("none", 5.0), ("rloo", 5.0), ("grpo", 0.0)):
        runs = b.train_bandits(kind, shift=shift, steps=1, runs=20_000, lr=0.5, seed=2)
        steps = (runs.final_logits - torch.tensor(b.INIT_LOGITS)) / 0.5  # [R, K]
        se = steps.std(dim=0) / math.sqrt(steps.shape[0])
        want = exact * (3.0 if kind == "grpo" else 1.0)  # GRPO: some longer step along the same direction
        if kind == "grpo":
            scale = float(steps.mean(0) @ exact / exact.dot(exact))
            want = exact * scale
            assert 1.5 < scale < 3.0
        assert torch.all((steps.mean(dim=0) - want).abs() < 4 * se + 1e-6), kind
    assert float(runs.accuracy[0, 0]) == pytest.approx(float(b.policy(b.INIT_LOGITS)[0]))


def test_zero_learning_rate_keeps_the_policy_and_the_baseline_runs_learn():
    frozen = b.train_bandits("none", steps=5, runs=10, lr=0.0)
    assert torch.allclose(frozen.accuracy, frozen.accuracy[0].expand_as(frozen.accuracy))
    result = b.shift_experiment(runs=300)  # the default 150 steps: about 10% of no-baseline runs end stuck
    assert result["rloo"].final_mean > 0.9 and result["rloo"].worst > 0.5
    assert result["none"].stuck_fraction() > 0.05  # some no-baseline runs collapse on a wrong answer
    rows = story.shift_rows([result])
    assert [row.lecture for row in rows] == [0.84, 0.001, 0.99]
    assert rows[0].measured == pytest.approx(result["none"].final_mean)


# ----------------------------------------------------------------------------- section 4.1
@pytest.mark.parametrize("group_size", [2, 4, 5])
def test_step_along_the_correct_logit_matches_enumeration_of_all_reward_patterns(group_size):
    p_values = np.array([0.02, 0.3, 0.5, 0.9])
    for kind in ("none", "mean", "rloo", "grpo"):
        want = np.zeros_like(p_values)
        for pattern in itertools.product((0.0, 1.0), repeat=group_size):
            r = np.array(pattern)
            m = r.sum()
            weight = p_values**m * (1 - p_values) ** (group_size - m)
            adv = advantages_by_hand(r, kind)
            want += weight * np.array([(adv * (r - p)).mean() for p in p_values])
        got = b.step_along_correct(p_values, group_size, kind).numpy()
        assert np.allclose(got, want, atol=1e-6), kind
    assert np.allclose(
        b.step_along_correct(p_values, group_size, "mean").numpy(),
        (group_size - 1) / group_size * p_values * (1 - p_values),
        atol=1e-7,
    )


def test_grpo_step_tends_to_the_square_root_curve_for_large_groups():
    p_values = np.array([0.1, 0.3, 0.5])
    got = b.step_along_correct(p_values, 1000, "grpo").numpy()
    assert np.allclose(got, b.ideal_step(p_values, by_std=True), rtol=2e-3)
    assert b.amplification([0.3], 2)[0] == pytest.approx(1.0)  # G = 2: GRPO is the mean baseline times 2


def test_the_lectures_3_5x_and_where_it_happens():
    low, high = b.p_for_amplification(3.5)
    assert b.ideal_amplification(low) == pytest.approx(3.5) and b.ideal_amplification(high) == pytest.approx(3.5)
    assert low == pytest.approx(1 - high) and 0.02 < low < 0.022
    assert b.ideal_amplification(0.5) == pytest.approx(1.0)
    assert b.ideal_amplification(0.02) == pytest.approx(0.5 / math.sqrt(0.02 * 0.98))


def test_no_signal_share_matches_enumeration_and_simulation():
    for group_size in (2, 5):
        for p in (0.1, 0.5):
            brute = sum(
                p ** sum(x) * (1 - p) ** (group_size - sum(x))
                for x in itertools.product((0, 1), repeat=group_size)
                if len(set(x)) == 1
            )
            assert b.no_signal_share(p, group_size) == pytest.approx(brute)
    sim = b.simulate_correct_logit([0.1, 0.5, 0.9], 8, n_groups=20_000, seed=4)
    se = np.sqrt(b.no_signal_share(sim.p, 8) * (1 - b.no_signal_share(sim.p, 8)) / 20_000)
    assert np.all(np.abs(sim.no_signal - b.no_signal_share(sim.p, 8)) < 4 * se + 1e-9)
    for kind in ("mean", "grpo"):
        exact = b.step_along_correct(sim.p, 8, kind).numpy()
        assert np.all(np.abs(sim.step[kind] - exact) < 4 * sim.step_se[kind]), kind


def test_amplification_rows_use_the_exact_finite_group_value_in_the_note():
    rows = story.amplification_rows([1.4])
    assert rows[0].measured == pytest.approx(0.5 / math.sqrt(0.02 * 0.98))
    assert f"{b.amplification([0.02], 8)[0]:.2f}x" in rows[1].note


# ----------------------------------------------------------------------------- section 1 toy
def test_best_of_n_picked_by_the_true_reward_is_the_expected_maximum_of_normals():
    result = b.best_of_n(ns=(1, 2, 4), n_trials=20_000, seed=5)
    assert result.true_of_best[1] == pytest.approx(1 / math.sqrt(math.pi), abs=0.03)  # E[max of 2 N(0,1)]
    assert np.all(result.proxy_of_pick >= result.true_of_pick - 1e-9) or result.proxy_of_pick[-1] > 0


# ----------------------------------------------------------------------------- panels and rows()
PANELS = {"estimators": fb.estimator_panel, "std": fb.std_panel, "shift": fb.shift_panel}


@pytest.mark.parametrize("name", list(PANELS))
def test_panel_edges_draw_without_problems(name):
    """Every slider at its edges and middle draws a new picture without warnings (speed: benchmarks/bench_panels.py)."""
    panel = PANELS[name]()
    assert w.exercise_panel_edges(panel) == []


def test_estimator_panel_back_at_a_setting_redraws_the_same_plot_and_table():
    panel = fb.estimator_panel(n_groups=2_000)
    panel.set(group_size=16)
    first = (panel.png(), panel.table.value)
    panel.set(group_size=4)
    assert panel.table.value != first[1]
    draws = panel.draw_count
    panel.set(group_size=16)
    assert (panel.png(), panel.table.value) == first and panel.draw_count == draws + 1  # redrawn: the table too


def test_rows_fast_have_every_lecture_number():
    rows = story.rows(fast=True)
    lecture = [row.lecture for row in rows]
    assert lecture == [0.84, 0.001, 0.99, 0.875, 1.0, 1.0, 3.5, 3.5]
    assert all(row.measured is not None and math.isfinite(row.measured) for row in rows)
    assert all(row.band is not None for row in rows)


def test_estimator_band_uses_each_seeds_own_standard_error_when_the_seeds_agree_by_luck():
    from types import SimpleNamespace as NS

    def comparison(scale, scale_se, shift=0.0):
        stats = {kind: NS(scale=scale, scale_se=scale_se) for kind in ("mean", "rloo", "none")}
        return NS(stats=stats, group_size=8, shift=shift, n_groups=20_000)

    close = [comparison(0.98 + 0.001 * i, 0.045) for i in range(3)]  # spread 0.001, each seed's s.e. 0.045
    rows = story.estimator_rows(close, [comparison(0.98, 0.045, 5.0)] * 3, seeds=(0, 1, 2))
    low, high = rows[1].band  # RLOO, lecture value 1
    assert high - low == pytest.approx(2 * 3 * 0.045 / 3**0.5)
    spread_out = [comparison(0.9 + 0.1 * i, 0.001) for i in range(3)]  # spread 0.1 dominates
    low, high = story.estimator_rows(spread_out, spread_out, seeds=(0, 1, 2))[1].band
    assert high - low == pytest.approx(2 * 3 * 0.1 / 3**0.5)


# ----------------------------------------------------------------------------- the +5 shift's variance, the figures
@pytest.mark.parametrize("shift", [0.0, 5.0])
def test_no_baseline_variance_is_the_monte_carlo_variance(shift):
    """The closed form against 20,000 groups (the variance of a variance estimate: a few percent here)."""
    measured = b.compare_estimators(8, shift, n_groups=20_000, seed=3).stats["none"].variance
    assert b.no_baseline_variance(8, shift) == pytest.approx(measured, rel=0.05)


def test_shift_term_variance_is_c_squared_times_one_minus_sum_pi_squared_over_g():
    probs = torch.softmax(LOGITS, 0)
    assert b.shift_term_variance(5.0, 8) == pytest.approx(25 * float(1 - (probs**2).sum()) / 8)
    # by enumeration of one answer: Var of c (onehot(z) - pi), trace, divided by G
    second = sum(
        float(p) * float(((torch.eye(5, dtype=torch.float64)[z] - probs) ** 2).sum()) for z, p in enumerate(probs)
    )
    assert b.shift_term_variance(5.0, 8) == pytest.approx(25 * second / 8)
    assert b.shift_term_variance(0.0, 8) == 0


def test_shift_histogram_bars_of_the_two_methods_do_not_overlap():
    """The 'where the runs end' panel: each method's bar sits beside the other's, none hides another."""
    import matplotlib.pyplot as plt

    fig = plt.figure()
    fb.draw_shift_runs(fig, b.shift_experiment(runs=20, steps=5, seed=0))
    bars = [patch for patch in fig.axes[-1].patches]
    spans = sorted((p.get_x(), p.get_x() + p.get_width()) for p in bars)
    assert all(end <= start + 1e-12 for (_, end), (start, _) in zip(spans, spans[1:]))
    plt.close(fig)


def test_figures_use_the_modules_palette_and_label_their_axes():
    import matplotlib.pyplot as plt

    from rlvr.figures.palette import COLORS

    assert all(fb.COLORS[kind] == COLORS[kind] for kind in fb.COLORS)
    assert fb.LEARNED_REWARD_COLOR == COLORS["learned_reward"] and fb.NO_SIGNAL_COLOR == COLORS["exact"]
    fig = plt.figure()
    fb.draw_estimators(fig, b.compare_estimators(8, n_groups=500))
    assert all(ax.get_ylabel() for ax in fig.axes)
    fig.clear()
    sizes = (2, 4, 8)
    fb.draw_baseline_scale(fig, sizes, b.baseline_scale_vs_group_size(sizes, n_groups=500))
    assert fig.axes[0].get_ylabel() and len(fig.axes[0].get_legend().get_texts()) == 4
    plt.close(fig)


# ----------------------------------------------------------------------------- what the learner reads
@pytest.mark.parametrize("shift", [-3.0, 0.5, 5.0])
def test_the_variance_a_constant_adds_is_the_c_squared_term_plus_the_covariance_term(shift):
    jump = b.no_baseline_variance(8, shift) - b.no_baseline_variance(8, 0.0)
    assert jump == pytest.approx(b.shift_term_variance(shift, 8) + b.shift_cross_term(shift, 8), rel=1e-6)
    assert np.sign(b.shift_cross_term(shift, 8)) == np.sign(shift)


def test_reward_shift_text_reads_slider_round_off_as_0_and_never_prints_plus_minus():
    assert b.reward_shift_text(8.881784197001252e-16) == "0/1 rewards"
    assert b.reward_shift_text(-1e-17) == "0/1 rewards"
    assert b.reward_shift_text(-3.0) == "-3 on every reward"
    assert b.reward_shift_text(5.0) == "+5 on every reward"


def test_slider_values_are_put_back_on_their_grid():
    assert fb.on_grid(8.881784197001252e-16, 0.5) == 0.0 and str(fb.on_grid(-1e-17, 0.5)) == "0.0"
    assert fb.on_grid(2.4999999999999996, 0.5) == 2.5 and fb.on_grid(-3.0000000000000004, 0.5) == -3.0


@pytest.mark.parametrize("shift, title", [(8.881784197001252e-16, "0/1 rewards"), (-3.0, "-3 on every reward")])
def test_estimator_panel_titles_say_the_shift_a_learner_set(shift, title):
    panel = fb.estimator_panel(n_groups=500)
    panel.set(shift=shift)
    texts = [panel.figure.axes[0].get_title(), panel.table.value]
    assert all(title in text for text in texts), texts
    assert not any("e-16" in text or "+-" in text for text in texts)


def test_lecture_and_us_text_puts_every_lecture_figure_next_to_ours_without_verdicts():
    runs = b.shift_experiment(runs=50, steps=20, seed=0)
    comparison, shifted = b.compare_estimators(8, n_groups=500), b.compare_estimators(8, 5.0, n_groups=500)
    text = story.lecture_and_us_text(runs, comparison, shifted, 1.4)
    for lecture in ("0.84", "0.001", "about 0.99", "(G-1)/G = 0.875", "3.5x", "1.40x simulated"):
        assert lecture in text
    group_row = next(line for line in text.splitlines() if "std of a group of 8" in line)
    assert "not stated (its 3.5x is the true std's)" in group_row  # the lecture's 3.5x is for the true std only
    assert not any(word in text for word in ("band", "agrees", "NO", "seed"))
    assert f"{runs['none'].final_mean:.3f} ± " in text


def test_first_run_text_prints_the_times_it_measured():
    text = story.first_run_text(runs=20, hard_groups=2_000)
    assert "trains no language model" in text and "2 x 20 bandits x 150 steps: about" in text
    assert text.count(" s") >= 2


def test_the_no_signal_share_carries_its_binomial_standard_error():
    sim = b.simulate_correct_logit([0.02, 0.5], 8, n_groups=5_000, seed=1)
    expected = np.sqrt(sim.no_signal * (1 - sim.no_signal) / 5_000)
    assert np.allclose(sim.no_signal_se, expected) and np.all(sim.no_signal_se > 0)


def test_noise_signal_line_names_the_estimator_with_the_least_noise_per_unit_of_its_step():
    comparison = b.compare_estimators(b.GROUP_SIZE, n_groups=4000, seed=1)
    line = story.noise_signal_text(comparison)
    ratios = {kind: s.relative_noise for kind, s in comparison.stats.items()}
    best = min(ratios, key=ratios.get)
    assert line.startswith(f"least noise per unit of signal: {b.label(best)}, noise/signal {ratios[best]:.2f}")
    others = sorted(v for kind, v in ratios.items() if kind != best)
    assert f"the others {others[0]:.2f} to {others[-1]:.2f}" in line
    assert f"{comparison.stats[best].scale:.2f} times the exact gradient" in line
