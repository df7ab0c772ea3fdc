"""Tests of rlvr.experiments.ppo_parts against independent computations (closed forms, enumeration, autograd)."""

import copy
import math
import re

import numpy as np
import pytest
import torch

from rlvr.experiments import ppo_parts as parts
from rlvr.narration import ppo_parts as story
from rlvr.figures import ppo_parts as fparts
from rlvr.experiments.common import half_unit
from rlvr.model import sample
from rlvr.sft import warm_up
from rlvr.task import prompt_tokens, sample_prompts, score_batch
from rlvr.widgets import exercise_panel_edges


def check_panel(panel):
    """Every control's edges and middle draw a new picture without problems (speed: benchmarks/bench_panels.py)."""
    assert exercise_panel_edges(panel) == []
    assert panel.redraw()


@pytest.fixture(scope="module")
def warm_model():
    """The cached warm-up model (teacher error 0.1, seed 0)."""
    return warm_up(0.1, 0).model


def clip_by_hand(r, a, eps):
    """min(r a, clip(r) a) and its derivative in r, written out piece by piece with numpy."""
    value = np.minimum(r * a, np.clip(r, 1 - eps, 1 + eps) * a)
    inside = (r > 1 - eps) & (r < 1 + eps)
    grad = np.where(inside, a, np.where((r >= 1 + eps) & (a > 0) | (r <= 1 - eps) & (a < 0), 0.0, a))
    return value, grad


# ----------------------------------------------------------------------------------------------- clipped objective
@pytest.mark.parametrize("advantage", [2.0, -2.0, 0.7, -0.3])
@pytest.mark.parametrize("eps", [0.05, 0.2, 0.5])
def test_clip_curves_match_the_piecewise_formula(advantage, eps):
    value, grad = parts.clip_objective_and_grad(parts.RATIO_GRID, advantage, eps)
    want_value, want_grad = clip_by_hand(parts.RATIO_GRID, advantage, eps)
    np.testing.assert_allclose(value, want_value, atol=1e-12)
    np.testing.assert_allclose(grad, want_grad, atol=1e-12)


def test_exercise_two_values_and_gradients_are_the_lectures():
    value, grad = parts.clip_objective_and_grad(np.array(parts.EXERCISE_RATIOS), 2.0, 0.2)
    assert value.tolist() == pytest.approx([1.0, 2.0, 2.2, 2.4])
    assert grad.tolist() == pytest.approx([2.0, 2.0, 2.0, 0.0])
    assert f"{grad[-1]:.2f}" == "0.00"  # never "-0.00"
    assert all(row.agrees for row in story.exercise_rows())


def test_zero_gradient_regions_are_beyond_the_clip_in_the_direction_of_the_advantage():
    step = parts.RATIO_GRID[1] - parts.RATIO_GRID[0]
    _, grad = parts.clip_objective_and_grad(parts.RATIO_GRID, 1.0, 0.2)
    [(lo, hi)] = parts.zero_gradient_spans(parts.RATIO_GRID, grad)
    assert lo == pytest.approx(1.2, abs=step) and hi == pytest.approx(2.0, abs=step)
    _, grad = parts.clip_objective_and_grad(parts.RATIO_GRID, -1.0, 0.2)
    [(lo, hi)] = parts.zero_gradient_spans(parts.RATIO_GRID, grad)
    assert lo == pytest.approx(0.0, abs=step) and hi == pytest.approx(0.8, abs=step)
    assert parts.first_zero_gradient_ratio(1.0) == pytest.approx(1.2, abs=1e-4)
    assert parts.first_zero_gradient_ratio(-1.0) == pytest.approx(0.8, abs=1e-4)


def test_one_update_of_ppo_is_the_plain_policy_gradient(warm_model):
    gap = parts.one_update_gradient_gap(warm_model, n_prompts=4, group_size=4)
    assert gap["max_abs_grad"] > 1e-4
    assert gap["max_abs_diff"] < 1e-7


def test_reusing_a_batch_starts_at_ratio_one_and_then_clips(warm_model):
    before = copy.deepcopy(warm_model.state_dict())
    result = parts.reuse_batch(warm_model, updates=3, lr=1e-3, n_prompts=4, group_size=4)
    assert np.allclose(result.quantiles[0], 1.0) and result.clip_fraction[0] == 0.0
    assert result.quantiles[-1, 0] < 1.0 < result.quantiles[-1, -1]
    assert all(torch.equal(before[k], v) for k, v in warm_model.state_dict().items())


# ----------------------------------------------------------------------------------------------- shaping and GAE
def synthetic_example(score=1.0):
    """A 5-token answer with hand-made log-probs (two tokens below the reference) and values."""
    logps = torch.tensor([-0.1, -3.0, -0.2, -2.5, -0.05])
    ref_logps = torch.tensor([-0.7, -1.0, -0.3, -0.4, -0.05])
    return parts.AnswerExample(
        label="toy",
        prompt="0123456789=",
        tokens=list("[12]$"),
        logps=logps,
        ref_logps=ref_logps,
        score=score,
        value_score=torch.tensor([0.6, 0.2, 0.3, 0.1, 0.9]),
        value_kl={True: torch.tensor([0.7, 0.1, 0.1, 0.0, 0.0]), False: torch.tensor([-3.0, -3.6, -1.6, -2.1, 0.0])},
    )


@pytest.mark.parametrize("clamp", [True, False])
def test_shaped_rewards_are_minus_beta_kl_plus_the_score_at_the_end(clamp):
    ex, beta = synthetic_example(), 0.3
    view = parts.shaped_view(ex, beta, 1.0, clamp)
    kl = (ex.logps - ex.ref_logps).numpy()
    kl = np.maximum(kl, 0) if clamp else kl
    want = -beta * kl
    want[-1] += ex.score
    np.testing.assert_allclose(view["rewards"].numpy(), want, atol=1e-6)
    assert (view["rewards"][:-1] <= 0).all() if clamp else (view["rewards"][[1, 3]] > 0).all()


def test_gae_with_gamma_lambda_one_is_reward_to_go_minus_value():
    ex = synthetic_example()
    view = parts.shaped_view(ex, 0.2, 1.0, True)
    rewards = view["rewards"].numpy()
    to_go = np.array([rewards[t:].sum() for t in range(len(rewards))])
    values = ex.value_score.numpy() - 0.2 * ex.value_kl[True].numpy()
    np.testing.assert_allclose(view["advantages"].numpy(), to_go - values, atol=1e-6)
    np.testing.assert_allclose(view["reward_to_go"].numpy(), to_go, atol=1e-6)


def test_gae_with_lambda_zero_is_the_one_step_td_error_and_v_zero_discounts():
    ex = synthetic_example()
    view = parts.shaped_view(ex, 0.0, 0.0, True, critic=parts.CRITICS[0])
    v = ex.value_score.numpy()
    td = view["rewards"].numpy() + np.append(v[1:], 0.0) - v
    np.testing.assert_allclose(view["advantages"].numpy(), td, atol=1e-6)
    lam = 0.5
    blind = parts.shaped_view(ex, 0.0, lam, True, critic=parts.CRITICS[1])
    T = len(ex.tokens)
    np.testing.assert_allclose(
        blind["advantages"].numpy(), [lam ** (T - 1 - t) * ex.score for t in range(T)], atol=1e-6
    )


def test_shaping_panel_redraws_at_every_control_edge():
    examples = [synthetic_example(1.0), synthetic_example(0.0)]
    examples[1].label = "toy wrong"
    panel = fparts.shaping_panel(examples)
    check_panel(panel)


def test_monte_carlo_values_are_exact_where_the_answer_is_decided(warm_model):
    rng, generator = np.random.default_rng(3), torch.Generator().manual_seed(3)
    prompts = sample_prompts(6, rng)
    rollout = sample(warm_model, prompt_tokens(prompts), 0.0, generator=generator)  # greedy answers
    value_score, value_kl = parts.monte_carlo_values(
        warm_model, warm_model, rollout.prompt_ids, rollout.responses, rollout.response_mask, prompts, n=8, seed=0
    )
    mask = rollout.response_mask
    assert value_kl[True].abs().max() < 1e-5 and value_kl[False].abs().max() < 1e-5  # policy == reference
    assert torch.all((value_score >= 0) & (value_score <= 1)) and torch.all(value_score[~mask] == 0)
    last = mask.sum(dim=1) - 1  # before the stop token the final digit is written: the score is known
    scores = score_batch(torch.as_tensor(prompts), rollout.responses)["reward"]
    at_last = value_score[torch.arange(6), last]
    assert torch.allclose(at_last, scores, atol=0.25)


def test_pick_examples_finds_the_three_kinds():
    mask = torch.ones(4, 3, dtype=torch.bool)
    logps = torch.tensor([[-0.1, -0.1, -0.1], [-3.0, -0.1, -0.1], [-0.1, -0.1, -0.1], [-5.0, -0.1, -0.1]])
    candidates = {
        "rollout": type("R", (), {"response_mask": mask, "logps": logps})(),
        "ref_logps": torch.full((4, 3), -0.2),
        "cot_correct": torch.tensor([False, False, True, False]),
        "correct": torch.tensor([False, False, True, False]),
        "is_think": torch.tensor([True, True, True, False]),
        "is_direct": torch.tensor([False, False, False, True]),
    }
    assert parts.pick_examples(candidates) == {
        parts.EXAMPLE_LABELS[0]: 2,
        parts.EXAMPLE_LABELS[1]: 1,
        parts.EXAMPLE_LABELS[2]: 3,
    }


# ----------------------------------------------------------------------------------------------- KL estimators
@pytest.mark.parametrize("mu", [0.1, 1.0])
def test_gaussian_closed_forms_give_schulmans_table(mu):
    exact = parts.gaussian_closed_form(mu)
    kl = exact["true_kl"]
    assert kl == pytest.approx(mu * mu / 2)
    for name in parts.ESTIMATORS:
        bias, std = parts.SCHULMAN_TABLE[(mu, name)]
        assert (exact["mean"][name] - kl) / kl == pytest.approx(bias, abs=half_unit(f"{bias:g}") + 1e-3)
        assert exact["std"][name] / kl == pytest.approx(std, abs=half_unit(f"{std:g}") + 1e-9)


@pytest.mark.parametrize("mu", [0.3, 1.0, 1.65])
def test_gaussian_samples_agree_with_the_closed_forms(mu):
    x = torch.randn(200_000, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    exact = parts.gaussian_closed_form(mu)
    for name, values in parts.gaussian_estimates(mu, x).items():
        stats = parts.estimator_stats(values, exact["true_kl"])
        assert abs(stats["mean"] - exact["mean"][name]) < 5 * stats["bias_se"]
        assert abs(stats["std"] - exact["std"][name]) < 5 * stats["std_se"]
    assert torch.all(parts.gaussian_estimates(mu, x)["k3"] >= 0)


def test_std_standard_error_matches_the_normal_formula():
    x = torch.randn(200_000, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 3.0
    stats = parts.estimator_stats(x, 1.0)
    assert stats["std_se"] == pytest.approx(stats["std"] / math.sqrt(2 * x.numel()), rel=0.05)


def test_crossover_where_k3_becomes_noisier_than_k1():
    kl = parts.gaussian_crossover_kl()
    std = parts.gaussian_closed_form(parts.mu_for_kl(kl))["std"]
    assert std["k3"] == pytest.approx(std["k1"], rel=1e-9)
    below, above = (parts.gaussian_closed_form(parts.mu_for_kl(k))["std"] for k in (0.9 * kl, 1.1 * kl))
    assert below["k3"] < below["k1"] and above["k3"] > above["k1"]


def test_schulman_rows_agree_within_their_bands():
    table = parts.schulman_table(n=1_000_000, seed=0)
    rows = story.schulman_rows([table], (0,))
    assert len(rows) == 12 and all(row.agrees for row in rows), [r for r in rows if not r.agrees]


def test_policy_kl_estimators_on_the_warm_up_model_and_a_perturbed_copy(warm_model):
    same = parts.policy_kl_samples(warm_model, warm_model, n=64, seed=0)
    for name in (*parts.ESTIMATORS, "exact"):
        assert np.allclose(same[name], 0.0, atol=1e-6)
    moved = copy.deepcopy(warm_model)
    with torch.no_grad():
        moved.tok_emb.weight.mul_(1.5)  # a sharper copy of the model
    samples = parts.policy_kl_samples(moved, warm_model, n=400, seed=0, batch=150)
    summary = parts.policy_kl_summary(samples)
    assert summary["true_kl"] > 0.05
    assert abs(summary["k1"]["bias"]) < 4 * summary["k1"]["bias_se"] + 4 * summary["true_kl_se"]
    assert (samples["k2"] >= 0).all() and (samples["k3"] >= -1e-6).all()
    assert summary["k1_clamped"]["mean"] >= summary["k1"]["mean"]
    assert (samples["exact"] >= -1e-6).all()  # a sum of per-token KLs between two distributions


def test_kl_panel_redraws_at_every_slider_edge():
    check_panel(fparts.kl_panel(n_samples=5000))


def test_clip_panel_redraws_at_every_slider_edge():
    check_panel(fparts.clip_panel())


# ----------------------------------------------------------------------------------------------- memory
def test_memory_reproduces_the_lecture_exactly():
    totals = parts.memory_totals(7e9)
    assert totals["PPO"] == 252.0 and totals["no value model"] == 140.0 and totals["rule-based verifier"] == 126.0
    per_model = parts.memory_gb(7e9, parts.SETUPS["PPO"])
    assert per_model == {"policy": 112.0, "value model": 112.0, "reference": 14.0, "reward model": 14.0}
    assert all(row.agrees for row in story.memory_rows())


def test_memory_panel_redraws_at_every_slider_edge():
    check_panel(fparts.memory_panel())


def test_policy_kl_rows_report_the_claim_and_bands():
    summary = {
        "true_kl": 1.5,
        "true_kl_se": 0.01,
        "k1": {"std": 1.0, "std_se": 0.05},
        "k3": {"std": 8.0, "std_se": 2.0},
    }
    rows = story.policy_kl_rows([summary], (0,))
    assert [r.agrees for r in rows] == [False, True, True, True]
    half = 0.005 + 3 * 0.01 * 2**0.5  # the lecture's "1.36" rounds to 0.005; one seed: u = SE * sqrt(1 + 1/1)
    assert rows[0].band == pytest.approx((1.36 - half, 1.36 + half))


# ----------------------------------------------------------------------------------------------- PPO with a KL penalty
def fake_run(scores, kls, beta=0.1):
    """A RunResult-like object with a history of `reward` and `kl_to_ref` per step."""
    from types import SimpleNamespace as NS

    history = [{"reward": s, "kl_to_ref": k} for s, k in zip(scores, kls)]
    return NS(config=NS(beta=beta), history=history, timing={"total_s": 51.6}, from_cache=False)


def test_kl_curves_are_minus_beta_times_the_summed_kl_and_the_summary_reads_the_ends():
    scores, kls = np.linspace(0.2, 0.9, 40), np.linspace(0.0, 2.0, 40)
    curves = parts.kl_curves(fake_run(scores, kls, beta=0.1), window=5)
    np.testing.assert_allclose(curves.kl_reward, -0.1 * kls)
    np.testing.assert_allclose(curves.score_smooth[5:], scores[5:] - 2 * (scores[1] - scores[0]))  # a line lags 2
    summary = parts.kl_run_summary(curves, window=10)
    assert summary["window"] == 10
    assert summary["score"] == pytest.approx((scores[:10].mean(), scores[-10:].mean()))
    assert summary["kl_reward"] == pytest.approx((-0.1 * kls[:10].mean(), -0.1 * kls[-10:].mean()))
    assert "as the lecture expects" in story.kl_run_statement(summary)
    assert parts.kl_run_summary(parts.kl_curves(fake_run(scores[:6], kls[:6])), window=10)["window"] == 3


def test_kl_run_statement_says_so_when_the_curves_do_not_do_what_the_lecture_expects():
    flat = parts.kl_run_summary(parts.kl_curves(fake_run([0.5] * 20, np.linspace(0, 1, 20))))
    assert "did not rise" in story.kl_run_statement(flat) and "not the picture" in story.kl_run_statement(flat)


def test_kl_run_steps_are_half_the_lectures_rl_steps():
    from rlvr.config import SIZES

    assert parts.kl_run_steps(fast=False) == SIZES["rl_steps"][0] // 2
    assert parts.kl_run_steps(fast=True) == SIZES["rl_steps"][1] // 2
    cfg = parts.kl_run_config(seed=1, fast=False)
    assert (cfg.algo, cfg.beta, cfg.steps, cfg.epochs, cfg.clamp_kl) == ("ppo", 0.1, 100, 8, True) and cfg.sft_seed == 1


def test_draw_kl_run_plots_the_total_reward_and_its_two_parts_in_ppo_red():
    import matplotlib.pyplot as plt

    from rlvr.figures.palette import ALGO_COLORS

    fig = plt.figure()
    scores, kls = np.linspace(0.2, 0.9, 30), np.linspace(0, 2, 30)
    fparts.draw_kl_run(fig, parts.kl_curves(fake_run(scores, kls)))
    lines = [line for ax in fig.axes for line in ax.get_lines() if len(line.get_xdata()) == 30]
    assert len(lines) == 6 and {line.get_color() for line in lines} == {ALGO_COLORS["ppo"]}
    np.testing.assert_allclose(lines[0].get_ydata(), scores - 0.1 * kls)  # the total reward, every step
    assert lines[1].get_ydata()[0] == pytest.approx(scores[0])  # the trailing average starts where the run starts
    assert all(ax.get_ylabel() for ax in fig.axes)
    plt.close(fig)


def test_kl_run_text_says_what_the_total_reward_and_its_parts_did():
    summary = parts.kl_run_summary(parts.kl_curves(fake_run(np.linspace(0.2, 0.9, 40), np.linspace(0.0, 2.0, 40))))
    assert summary["total"] == pytest.approx(
        (summary["score"][0] + summary["kl_reward"][0], summary["score"][1] + summary["kl_reward"][1])
    )
    text = story.kl_run_text(summary)
    printed = [float(x) for x in re.findall(r"-?\d+\.\d+", text.splitlines()[1])]  # total, score, KL reward ends
    total, score, kl_reward = printed[0:2], printed[2:4], printed[4:6]
    for end in (0, 1):  # the printed parts add up to the printed total, as a reader checks them
        assert total[end] == pytest.approx(score[end] + kl_reward[end], abs=0.0015)
        assert total[end] == pytest.approx(summary["total"][end], abs=0.0005)
    assert "the total reward rose" in text and "nan" not in text


def test_lecture_and_us_lists_every_lecture_number_next_to_ours():
    summary = parts.kl_run_summary(parts.kl_curves(fake_run(np.linspace(0.2, 0.9, 40), np.linspace(0.0, 2.0, 40))))
    table = parts.schulman_table(20_000, seed=0)
    kl = parts.policy_kl_summary(
        {
            "k1": np.array([1.0, 2.0, 3.0]),
            "k2": np.array([1.0, 1.0, 2.0]),
            "k3": np.array([0.5, 1.0, 9.0]),
            "k1_clamped": np.array([1.0, 2.0, 3.0]),
            "exact": np.array([2.0, 2.0, 2.0]),
        }
    )
    text = story.lecture_and_us(summary, table, kl)
    assert (
        "| 1.0, 2.0, 2.2, 2.4 | 1.00, 2.00, 2.20, 2.40 |" in text and "| 2, 2, 2, 0 | 2.00, 2.00, 2.00, 0.00 |" in text
    )
    assert "| 1.2, 0.8 | 1.200, 0.800 |" in text and "| 252, 140, 126 | 252, 140, 126 |" in text
    assert "| 1.36 | 2.00 |" in text and "| 20, 1.42, 1.42 |" in text
    assert "$k_3$ is the noisier estimator" in text and "-0.00" not in text and "band" not in text


def test_reuse_text_prints_an_exact_zero_as_0_percent_not_0_0():
    res = parts.ReuseResult(1e-4, 0.2, np.tile([0.5, 0.8, 1.0, 1.25, 2.0], (3, 1)), np.array([0.0, 0.01, 0.125]))
    assert story.reuse_text([res]) == (
        "lr 0.0001: clip fraction before updates 1-3: 0% 1.0% 12.5%;  before the last update 98% of the ratios lie in "
        "[0.80, 1.25]\nthe first update with a clip fraction of 10% or more: update 3 at lr 0.0001"
    )


def test_reuse_text_says_when_no_update_reaches_a_sizeable_clip_fraction():
    low = parts.ReuseResult(1e-4, 0.2, np.tile([0.5, 0.8, 1.0, 1.25, 2.0], (3, 1)), np.array([0.0, 0.01, 0.05]))
    high = parts.ReuseResult(1e-3, 0.2, np.tile([0.5, 0.8, 1.0, 1.25, 2.0], (3, 1)), np.array([0.0, 0.2, 0.1]))
    last = story.reuse_text([low, high]).splitlines()[-1]
    assert last.endswith("none of its 3 updates at lr 0.0001, update 2 at lr 0.001"), last


# ----------------------------------------------------------------------------------------------- printing
def test_signed_never_prints_negative_zero():
    assert parts.signed(-0.004) == "0" and parts.signed(-0.0) == "0"
    assert parts.signed(-0.006) == "-0.01" and parts.signed(1.744) == "+1.74" and parts.signed(-6.012, 1) == "-6.0"


def test_tail_effect_drops_the_largest_values():
    samples = {"k3": np.array([0.0, 1.0, 2.0, 3.0, 100.0, 300.0])}
    tail = parts.tail_effect(samples, "k3", top=2)
    assert list(tail["largest"]) == [300.0, 100.0] and tail["n"] == 6
    assert tail["std"] == pytest.approx(np.std(samples["k3"]))
    assert tail["std_without"] == pytest.approx(np.std([0, 1, 2, 3]))


def test_exercise_rows_and_figure_labels_name_the_ratio_rho():
    """Notation: rho is the PPO ratio (r is a reward); no row or clip-figure label uses r for the ratio."""
    import matplotlib.pyplot as plt

    figures = [row.figure for row in story.exercise_rows()]
    assert all("ρ" in f for f in figures) and not any("r=" in f or "dJ/dr" in f or "r =" in f for f in figures)
    fig = plt.figure()
    fparts.draw_clip_both_signs(fig)
    labels = [ax.get_ylabel() + ax.get_xlabel() for ax in fig.axes]
    labels += [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert all("(r)" not in text and "dJ/dr" not in text and "$rA$" not in text for text in labels)
    assert any(r"\rho" in text for text in labels)
    plt.close(fig)


def test_the_kv_cache_counts_a_key_and_a_value_per_layer_kv_head_and_dimension_for_every_token():
    one = parts.kv_cache_gb(1, 1, layers=1, kv_heads=1, head_dim=1)
    assert one == pytest.approx(2 * 2 / parts.GB)  # a key and a value, 2 bytes each
    assert parts.kv_cache_gb(3, 5, layers=7, kv_heads=2, head_dim=4) == pytest.approx(3 * 5 * 7 * 2 * 4 * one)
    memory = parts.assignment5_memory()
    assert memory["policy"] == pytest.approx(parts.ONE_POINT_FIVE_B * parts.BYTES_TRAINED / parts.GB)
    assert memory["kv cache"] == pytest.approx(
        parts.kv_cache_gb(**parts.ASSIGNMENT5_SAMPLING, **parts.QWEN_MATH_1_5B_KV)
    )
    text = story.assignment5_memory_text()
    assert "28,672 bytes per token" in text and f"{memory['sampler copy'] + memory['kv cache']:.1f} GB" in text
    assert f"{sum(memory.values()):.1f} GB" not in text  # two GPUs: the handout's vLLM is not on the policy's


def test_blame_text_finds_where_each_lambda_puts_the_blame_of_a_wrong_answer():
    # beta = 0: A_t = -V_t with lambda = 1, V_{t+1} - V_t with lambda = 0 (the value falls at the third token)
    right, wrong = synthetic_example(1.0), synthetic_example(0.0)
    wrong.label, wrong.value_score = "toy wrong", torch.tensor([0.6, 0.6, 0.6, 0.1, 0.0])
    lines = story.blame_text([right, wrong], beta=0.0).splitlines()
    assert lines[0] == "toy wrong: 0123456789= [12]$"  # the wrong answer, not the first one
    assert (
        "λ = 1: A_t below -0.01 on 4 of 5 tokens, from -0.60 to -0.10; the most negative on token 1 ('[')" in lines[1]
    )
    assert "where the value stood at 0.60: 31.6% of the summed |A_t|" in lines[1]  # 0.6 / 1.9
    assert "λ = 0: A_t below -0.01 on 2 of 5 tokens; the most negative, -0.50, on token 3 ('2')" in lines[2]
    assert "goes from 0.60 to 0.10: 83.3% of the summed |A_t|" in lines[2]  # 0.5 / 0.6
    assert lines[3] == (
        "λ = 0 concentrates the blame: 83.3% of the summed |A_t| on its most blamed token, "
        "against 31.6% for λ = 1 (2.6x)"
    )
    assert lines[4] == (  # 0..9 has running sums 0136051865: '1' already differs from '0'
        "the first token that differs from the right answer [0136051865]#5$: token 2 ('1' where '0' is right); "
        "λ = 0 blames another token most"
    )
    wrong.tokens = list("[0136051864]#4$")  # the chain's last digit wrong: that is the token to blame
    assert story.first_wrong_text(wrong, 10).endswith("token 11 ('4' where '5' is right); λ = 0 blames this token most")
    assert story.two_decimals(-0.001) == "0.00" and story.two_decimals(-0.5) == "-0.50"  # never '-0.00'
    flat = synthetic_example(0.0)  # lambda = 1's A_t all within 0.1 of each other: no token stands out
    flat.value_score = torch.tensor([0.95, 0.97, 0.99, 0.96, 0.0])
    line = story.blame_text([flat], beta=0.0).splitlines()[1]
    assert line.startswith("  λ = 1: A_t below -0.01 on 4 of 5 tokens, all from -0.99 to -0.95: no token stands out")
    assert "where the value stood" not in line and "token 3" not in line  # no token named from a near-tie
    assert line.endswith("(none has more than 25.6% of the summed |A_t|)")
    even = synthetic_example(0.0)  # values that fall and rise: lambda = 0 spreads its blame as widely
    assert story.blame_text([even], beta=0.0).splitlines()[-2].startswith("λ = 0 does not concentrate")
