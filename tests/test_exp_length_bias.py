"""Notebook 05's experiments against independent computations: autograd, exact enumeration, closed forms."""

import itertools
import math

import numpy as np
import pytest
import torch

from rlvr.experiments import length_bias as lb
from rlvr.narration import length_bias as story
from rlvr.figures import length_bias as flb
from rlvr.objectives import aggregate_loss, compute_advantages, kimi_length_reward, policy_gradient_loss
from rlvr.widgets import exercise_panel_edges


# ----------------------------------------------------------------------------------------------- per-token weights
@pytest.mark.parametrize("mode", ["grpo", "dr_grpo", "token_mean"])
def test_per_token_weight_matches_autograd_of_the_package_loss(mode):
    advantages, lengths = [1.5, -0.5, 0.25, -2.0], [3, 17, 40, 9]
    closed = lb.per_token_weight(advantages, lengths, mode, max_len=40)
    measured = lb.token_weights_by_autograd(advantages, lengths, mode, max_len=40).numpy()
    np.testing.assert_allclose(measured, closed, rtol=1e-12)


def test_every_token_of_an_answer_gets_the_same_weight_and_padding_none():
    lengths, max_len = torch.tensor([2, 5]), 6
    logps = torch.zeros(2, max_len, dtype=torch.float64, requires_grad=True)
    mask = torch.arange(max_len)[None, :] < lengths[:, None]
    loss = aggregate_loss(policy_gradient_loss(logps, torch.tensor([1.0, -1.0], dtype=torch.float64)), mask)
    (grad,) = torch.autograd.grad(loss, logps)
    assert torch.all(grad[~mask] == 0)
    assert torch.allclose(grad[0, :2], grad[0, 0].expand(2)) and torch.allclose(grad[1, :5], grad[1, 0].expand(5))


def test_exercise4_rows_reproduce_the_lecture_exactly():
    for row in story.exercise4_rows():
        assert row.agrees, row


# ----------------------------------------------------------------------------------------------- the toy model
def test_length_pmf_sums_to_one_and_matches_the_token_logps():
    cap, logits = 6, torch.tensor([0.7, -1.2], dtype=torch.float64)
    k = torch.arange(cap + 1).repeat(2)
    paths = torch.arange(2).repeat_interleave(cap + 1)
    logps, mask = lb.toy_token_logps(logits, paths, k, cap)
    answer_logp = (logps * mask).sum(dim=1).view(2, cap + 1)
    pmf = lb.length_pmf(logits.numpy(), cap)
    np.testing.assert_allclose(pmf.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(answer_logp.exp().numpy(), pmf, rtol=1e-10)
    assert mask.sum(dim=1).tolist() == (k + 1).tolist()  # |o_i| = k + 1


def test_mean_thinking_tokens_matches_the_geometric_closed_form():
    for logit, cap in [(math.log(9), 30), (0.0, 5), (-2.0, 12)]:
        s = 1 / (1 + math.exp(-logit))
        closed = s * (1 - s**cap) / (1 - s)
        assert lb.mean_thinking_tokens(logit, cap) == pytest.approx(closed, rel=1e-10)


def test_length_score_is_the_autograd_derivative_of_the_answer_logp():
    cap = 8
    logits = torch.tensor([1.3, -0.4], dtype=torch.float64, requires_grad=True)
    k, paths = torch.tensor([0, 3, 8, 5, 8]), torch.tensor([0, 0, 0, 1, 1])
    logps, mask = lb.toy_token_logps(logits, paths, k, cap)
    grads = [
        torch.autograd.grad((logps[i] * mask[i]).sum(), logits, retain_graph=True)[0][paths[i]].item()
        for i in range(len(k))
    ]
    np.testing.assert_allclose(
        grads, lb.length_score(k.numpy(), logits.detach().numpy()[paths.numpy()], cap), rtol=1e-10
    )


def test_sampled_lengths_follow_the_pmf():
    rng = np.random.default_rng(0)
    logit, cap, n = 1.5, 10, 200_000
    log_continue = np.full(n, -np.logaddexp(0, -logit))
    k = lb.sample_thinking_tokens(log_continue, np.log(1 - rng.random(n)), cap)
    counts = np.bincount(k.astype(int), minlength=cap + 1) / n
    pmf = lb.length_pmf(logit, cap)
    np.testing.assert_allclose(counts, pmf, atol=4 * np.sqrt(pmf * (1 - pmf) / n).max())


def test_numpy_twins_match_the_package():
    rng = np.random.default_rng(1)
    rewards = rng.integers(0, 2, size=(6, 4)).astype(float)
    rewards[0] = 1.0  # an all-equal group
    for kind in (lb.GRPO.advantage, lb.DR_GRPO.advantage):
        want = compute_advantages(torch.tensor(rewards.ravel()), 4, kind).numpy().reshape(6, 4)
        np.testing.assert_allclose(lb.group_advantages(rewards, kind), want, atol=1e-5)
    lengths = rng.integers(1, 9, size=(6, 4)).astype(float)
    lengths[2] = 5.0
    correct = rng.random((6, 4)) < 0.5
    want = np.stack([kimi_length_reward(torch.tensor(lengths[i]), torch.tensor(correct[i])).numpy() for i in range(6)])
    np.testing.assert_allclose(lb.kimi_reward_np(lengths, correct), want, atol=1e-6)


@pytest.mark.parametrize("loss", ["grpo", "dr_grpo", "token_mean"])
def test_one_training_step_is_sgd_on_the_package_loss(loss):
    """Replay the first step's random numbers, build the token log-probs and differentiate the package loss."""
    p, G, n_runs, per_step, cap, lr, seed = 0.4, 4, 3, 8, 6, 0.7, 5
    run = lb.train_toy(
        loss,
        p_correct=p,
        group_size=G,
        steps=1,
        n_runs=n_runs,
        lr=lr,
        answers_per_step=per_step,
        cap=cap,
        init_logit=0.9,
        seed=seed,
        optimizer="sgd",
    )
    rng = np.random.default_rng(seed)
    shape = (n_runs, per_step // G, G)
    correct = rng.random(shape) < p
    log_u = np.log(1 - rng.random(shape))
    k = lb.sample_thinking_tokens(np.full(shape, -np.logaddexp(0, -0.9)), log_u, cap)
    for r in range(n_runs):
        logits = torch.tensor([0.9, 0.9], dtype=torch.float64, requires_grad=True)
        paths = torch.tensor((~correct[r]).astype(int).ravel())
        logps, mask = lb.toy_token_logps(logits, paths, torch.tensor(k[r].astype(int).ravel()), cap)
        adv = compute_advantages(torch.tensor(correct[r].astype(float).ravel()), G, lb.TOY_LOSSES[loss].advantage)
        loss_value = aggregate_loss(
            policy_gradient_loss(logps, adv.double()), mask, lb.TOY_LOSSES[loss].aggregation, cap + 1
        )
        (grad,) = torch.autograd.grad(loss_value, logits)
        np.testing.assert_allclose(run.logits[1, r], 0.9 - lr * grad.numpy(), rtol=1e-6, atol=1e-9)


def brute_force_expected_gradient(loss, logits, p, G, cap):
    """E[d loss / d logits] by enumerating every outcome and length of a group, with autograd of the package loss."""
    theta = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    total = torch.zeros(2, dtype=torch.float64)
    pmf = lb.length_pmf(np.array(logits), cap)
    for outcome in itertools.product((1, 0), repeat=G):
        p_outcome = math.prod(p if c else 1 - p for c in outcome)
        paths = torch.tensor([1 - c for c in outcome])
        adv = compute_advantages(torch.tensor(outcome, dtype=torch.float64), G, lb.TOY_LOSSES[loss].advantage).double()
        for ks in itertools.product(range(cap + 1), repeat=G):
            prob = p_outcome * math.prod(pmf[1 - c, k] for c, k in zip(outcome, ks))
            logps, mask = lb.toy_token_logps(theta, paths, torch.tensor(ks), cap)
            value = aggregate_loss(policy_gradient_loss(logps, adv), mask, lb.TOY_LOSSES[loss].aggregation, cap + 1)
            total += prob * torch.autograd.grad(value, theta)[0]
    return total.numpy()


@pytest.mark.parametrize("G,cap", [(2, 3), (3, 1)])
def test_expected_gradients_match_brute_force_enumeration(G, cap):
    logits, p = (0.8, -0.3), 0.35
    exact = lb.expected_gradients(logits, p, G, cap)
    for loss in ("grpo", "dr_grpo"):
        # the package's z-score has eps 1e-4 on the std like ours, so the two agree to ~1e-4 relative
        np.testing.assert_allclose(
            exact[loss], brute_force_expected_gradient(loss, logits, p, G, cap), rtol=1e-6, atol=1e-12
        )


def test_true_and_dr_grpo_expected_gradients_are_zero_and_grpo_is_not():
    for logits in [(lb.INIT_LOGIT, lb.INIT_LOGIT), (0.0, 3.0), (-2.0, 1.0)]:
        grads = lb.expected_gradients(logits)
        assert np.abs(grads["true"]).max() < 1e-12
        assert np.abs(grads["dr_grpo"]).max() < 1e-12
        assert grads["grpo"][0] > 1e-4 and grads["grpo"][1] < -1e-4  # descent: correct shorter, wrong longer


def test_grpo_bias_is_symmetric_in_p_and_one_minus_p():
    for G in (2, 8, 16):
        a = lb.expected_gradients(p_correct=0.3, group_size=G)["grpo"]
        b = lb.expected_gradients(p_correct=0.7, group_size=G)["grpo"]
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_monte_carlo_gradient_agrees_with_the_enumeration():
    """Mean SGD step over many runs of one step = -lr * expected gradient (within 5 standard errors)."""
    lr, n_runs = 1.0, 4000
    run = lb.train_toy("grpo", steps=1, n_runs=n_runs, lr=lr, answers_per_step=8, optimizer="sgd", seed=3)
    steps = run.logits[1] - run.logits[0]  # [N, 2]
    expected = -lr * lb.expected_gradients()["grpo"]
    se = steps.std(axis=0) / math.sqrt(n_runs)
    assert np.all(np.abs(steps.mean(axis=0) - expected) < 5 * se)


def test_training_moves_lengths_under_grpo_only():
    runs = lb.train_toy_pair()
    start = lb.mean_thinking_tokens(lb.INIT_LOGIT)
    grpo, dr = runs["grpo"].mean_length()[-1], runs["dr_grpo"].mean_length()[-1]
    assert grpo[:, 1].min() > 0.9 * lb.L_CAP and grpo[:, 0].max() < 1.0
    assert np.abs(dr.mean(axis=0) - start).max() < 1.0


def test_toy_rows_agree_with_the_lecture():
    rows = story.gradient_rows() + story.toy_rows()
    assert all(row.agrees is not False for row in rows), [r for r in rows if r.agrees is False]


# ----------------------------------------------------------------------------------------------- Kimi
def test_exercise5_rows_reproduce_the_lecture_exactly():
    assert all(row.agrees for row in story.exercise5_rows())


def test_length_reward_on_the_arithmetic_lengths_is_a_format_reward():
    rewards = kimi_length_reward(torch.tensor([3, 15, 15, 3]), torch.tensor([True, True, False, False]))
    assert rewards.tolist() == [0.5, -0.5, -0.5, 0.0]
    assert kimi_length_reward(torch.tensor([15, 15, 15]), torch.tensor([True, False, True])).abs().sum() == 0


def test_kimi_toy_shortens_both_paths_under_dr_grpo():
    runs = lb.train_toy_pair(length_reward_weight=1.0, length_reward_start=0)
    start = lb.mean_thinking_tokens(lb.INIT_LOGIT)
    assert np.all(runs["dr_grpo"].mean_length()[-1].mean(axis=0) < start - 3)


# ----------------------------------------------------------------------------------------------- panels
PANELS = [flb.token_weight_panel, flb.toy_panel, flb.kimi_group_panel, flb.toy_kimi_panel]


@pytest.mark.parametrize("make", PANELS, ids=lambda f: f.__name__)
def test_panel_edges(make):
    panel = make()
    # redraw speed is measured by benchmarks/bench_panels.py, never in a test
    assert exercise_panel_edges(panel, max_seconds=None) == []


def test_token_weight_panel_says_when_an_answer_is_longer_than_l_max():
    panel = flb.token_weight_panel()
    panel.set(correct_length=1500, max_len=1000)
    texts = [t.get_text() for ax in panel.figure.axes for t in ax.texts]
    assert any("correct, 1000 tokens*" in t and "capped at L_max" in t for t in texts)
    panel.set(correct_length=900)
    texts = [t.get_text() for ax in panel.figure.axes for t in ax.texts]
    assert not any("capped" in t for t in texts)


def test_summary_text_shows_a_dash_for_a_share_of_no_answers_and_warns_nothing():
    from rlvr.runs import RunResult
    from rlvr.train import RLConfig

    steps = [
        {
            "cot_fraction": 0.0,
            "accuracy": 0.0,
            "cot_accuracy": math.nan,
            "mean_length": 1.0,
            "all_same_group_fraction": 1.0,
        }
    ] * 5
    thinking = [
        {
            "cot_fraction": 1.0,
            "accuracy": 0.5,
            "cot_accuracy": 0.5,
            "mean_length": 15.0,
            "all_same_group_fraction": 0.25,
        }
    ] * 5
    runs = {"collapsed": RunResult(RLConfig(), steps), "thinking": RunResult(RLConfig(), thinking)}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lines = story.summary_text(runs, last=3).splitlines()
    assert lines[0].startswith("last 3 steps")
    collapsed, thinks = lines[1].split(), lines[2].split()
    assert collapsed[1:] == ["0.0%", "0.0%", "—", "1.0", "100.0%"]
    assert thinks[1:] == ["100.0%", "50.0%", "50.0%", "15.0", "25.0%"]
    assert len({len(line) for line in lines}) == 1  # right-aligned under their headers


# ----------------------------------------------------------------------------------------------- printed lines
def test_row_lines_print_each_case_next_to_the_lecture_and_an_exact_zero_as_0():
    lines = story.row_lines(story.exercise5_rows()).splitlines()
    assert len(lines) == 4 and lines[0].endswith("+0.5000   (lecture: 0.5)")
    assert lines[2].split()[-3:] == ["0", "(lecture:", "0)"]  # min(0, 0), never '-0.0000'
    assert story.signed(-3e-17, 4) == "0" and story.signed(-0.00123, 4) == "-0.0012"
    assert "+0.0100   (lecture: 0.01)" in story.row_lines(story.exercise4_rows())


def test_expected_gradient_text_prints_round_off_as_0_and_grpo_as_equal_and_opposite():
    rows = story.expected_gradient_text().splitlines()
    true, grpo, dr = rows[1].split()[-2:], rows[2].split()[-2:], rows[3].split()[-2:]
    assert true == ["0", "0"] and dr == ["0", "0"]
    assert float(grpo[0]) == pytest.approx(-float(grpo[1])) and float(grpo[0]) > 0
    from rlvr.i18n import set_language, text_width

    try:
        for lang in ("en", "zh_CN"):  # each header ends over its column, in both languages (CJK counted double)
            set_language(lang)
            header, row = story.expected_gradient_text().splitlines()[:2]
            assert text_width(header) == text_width(row.rstrip())
    finally:
        set_language(None)


def test_toy_drift_and_length_split_texts_read_the_runs():
    runs = lb.train_toy_pair(lb.P_CORRECT)
    mean = runs["grpo"].mean_length().mean(axis=1)  # [S+1, 2]
    step = int(np.nonzero(mean[:, 1] >= 0.9 * lb.L_CAP)[0][0])
    assert f"reaches 27 tokens (90% of the cap) at step {step};" in story.toy_drift_text(runs)
    assert 0 < step < lb.STEPS
    text = story.length_split_text({0.3: runs})
    overall = runs["grpo"].mean_length_all().mean(axis=1)
    assert f"{overall[0]:.1f} thinking tokens at the start, {overall[-1]:.1f} after {lb.STEPS} steps" in text


# ----------------------------------------------------------------------------------------------- figures
def test_overlapping_correct_and_wrong_curves_both_stay_visible():
    from rlvr.widgets import new_figure

    fig = new_figure((9, 3.8))
    flb.draw_token_weights(fig)  # |A| = 1 for both answers: the GRPO curves coincide
    lines = {line.get_label(): line for line in fig.axes[0].lines if not line.get_label().startswith("_")}
    correct, wrong = lines["GRPO, correct (A = +1)"], lines["GRPO, wrong (A = -1)"]
    assert np.allclose(correct.get_ydata(), wrong.get_ydata())
    assert correct.get_linewidth() > 2 * wrong.get_linewidth() and correct.get_zorder() <= wrong.get_zorder()
    assert fig.axes[0].lines.index(correct) < fig.axes[0].lines.index(wrong)  # drawn first, so underneath


def test_toy_panel_picks_the_optimizer_with_buttons():
    panel = flb.toy_panel()
    assert type(panel.controls["optimizer"]).__name__ == "ToggleButtons"
    before = panel.png()
    panel.controls["optimizer"].value = "adam"
    assert panel.png() != before and "Adam" in panel.figure.texts[0].get_text()  # the display name, not "adam"


def test_kimi_runs_are_drawn_as_the_default_run_and_two_knob_colours_the_late_one_from_its_switch():
    from rlvr.runs import RunResult
    from rlvr.figures.palette import COLORS, knob_color
    from rlvr.train import RLConfig
    from rlvr.widgets import new_figure

    history = [{"cot_fraction": 0.5, "accuracy": 0.5, "mean_length": 9.0}] * 10
    runs = {label: RunResult(RLConfig(), history) for label in ("none", "from 0", "from 5")}
    fig = new_figure((10, 3.3))
    flb.plot_kimi_arithmetic(fig, runs, switch_on=5)
    lines = [line for line in fig.axes[0].lines if not line.get_label().startswith("_")]
    assert [line.get_color() for line in lines] == [COLORS["exact"], knob_color(0), knob_color(1)]
    assert all(line.get_linestyle() == "-" for line in lines)  # dashes mean 'wrong answers' in this notebook
    assert lines[2].get_xdata()[0] == 5 and lines[0].get_xdata()[0] == 0
    assert lines[2].get_marker() == "o" and lines[2].get_zorder() > lines[0].get_zorder()  # visible where they meet


def test_right_and_wrong_are_told_apart_by_line_style_and_losses_by_their_algorithm_colour():
    from rlvr.figures.palette import ALGO_COLORS
    from rlvr.widgets import new_figure

    fig = new_figure((9, 3.8))
    flb.draw_token_weights(fig)
    lines = {line.get_label(): line for line in fig.axes[0].lines if not line.get_label().startswith("_")}
    for loss, key in (("GRPO", "grpo"), ("Dr. GRPO", "dr_grpo")):
        correct, wrong = lines[f"{loss}, correct (A = +1)"], lines[f"{loss}, wrong (A = -1)"]
        assert correct.get_linestyle() == "-" and wrong.get_linestyle() == "--"
        assert correct.get_color() == wrong.get_color() == ALGO_COLORS[key]
    fig = new_figure((9, 3.8))
    flb.plot_toy_lengths(fig, lb.train_toy_pair(steps=3))
    styles = {line.get_label().split(":")[0]: line.get_linestyle() for line in fig.axes[0].lines}
    assert styles["correct path"] == "-" and styles["wrong path"] == "--"


def test_exercise4_text_prints_the_three_aggregations_next_to_the_lecture():
    lines = story.exercise4_text().splitlines()
    assert len(lines) == 4
    assert lines[1].split()[2:4] == ["+0.0100", "-0.0010"] and lines[1].endswith("+0.01, -0.001")
    assert lines[2].split()[3:5] == ["+0.0010", "-0.0010"]
    assert "+0.0018" in lines[3] and "-0.0018" in lines[3] and "not in the lecture" in lines[3]


def test_token_mean_keeps_only_a_small_bias_that_shrinks_with_the_batch():
    small = lb.train_toy("token_mean", answers_per_step=128).mean_length()[-1].mean(axis=0)
    large = lb.train_toy("token_mean", answers_per_step=2048).mean_length()[-1].mean(axis=0)
    grpo = lb.train_toy("grpo").mean_length()[-1].mean(axis=0)
    assert small[1] - small[0] > large[1] - large[0] > 0  # the wrong path a little longer, less so in big batches
    assert small[1] - small[0] < 0.25 * (grpo[1] - grpo[0])
    text = story.token_mean_text(batches=(128,))
    assert f"{small[1]:.1f}" in text and f"{grpo[1]:.1f}" in text


def synthetic_kimi_runs():
    """Three runs: the early one dips in think-first share and comes back; the late one equals the base."""
    from rlvr.runs import RunResult
    from rlvr.train import RLConfig

    steps = 40
    base = [
        {"cot_fraction": min(1.0, 0.5 + t / 40), "accuracy": 0.2 + t / 60, "cot_accuracy": 0.3 + t / 60}
        for t in range(steps)
    ]
    early = [
        {
            "cot_fraction": 0.5 - t / 50 if t < 10 else min(1.0, 0.3 + (t - 10) / 20),
            "accuracy": 0.2 + t / 70,
            "cot_accuracy": 0.3 + t / 40,
        }
        for t in range(steps)
    ]
    return {
        "no length reward": RunResult(RLConfig(), base),
        "length reward from step 0": RunResult(RLConfig(), early),
        "length reward from step 20": RunResult(RLConfig(), base[:20] + early[20:]),
    }


def test_kimi_story_text_reads_the_dip_the_crossing_and_the_catch_up_off_the_runs():
    text = story.kimi_story_text(synthetic_kimi_runs(), switch_on=20).splitlines()
    assert text[0].startswith("length reward from step 0: think-first share 50% at step 0, lowest")
    assert "first right 65% of the time or more at step" in text[1]
    assert "back within 5 points" in text[2]
    assert "identical to the run with" in text[3] and "not identical" not in text[3]


def test_lecture_and_us_text_has_every_lecture_figure_and_no_verdict():
    text = story.lecture_and_us_text(synthetic_kimi_runs())
    for lecture in ("+0.01, -0.001", "+0.001, -0.001", "wrong to the cap, correct to 0", "0.5, 0.25, 0, -0.5"):
        assert lecture in text
    assert "+0.0100, -0.0010" in text and "+0.50, +0.25, 0, -0.50" in text
    assert not any(word in text for word in ("band", "agrees", " NO", "e-1"))


def test_outcome_lengths_text_prints_the_first_and_the_last_step():
    from rlvr.runs import RunResult
    from rlvr.train import RLConfig

    step = {key: 0.5 for key in story.OUTCOME_ROWS} | {"mean_length": 9.0}
    text = story.outcome_lengths_text(RunResult(RLConfig(), [step, step])).splitlines()
    assert text[0].split() == ["step", "0", "step", "1"] and "9.0" in text[3] and "50.0%" in text[4]


def test_the_toy_losses_are_the_algorithm_table_s_rows():
    """One owner: GRPO's and Dr. GRPO's advantage and aggregation come from rlvr.algorithms.ALGORITHMS; the token mean
    is GRPO's row with DAPO's aggregation."""
    from rlvr.algorithms import ALGORITHMS

    assert all(lb.TOY_LOSSES[loss] is ALGORITHMS[loss] for loss in lb.LOSSES)
    token_mean = lb.TOY_LOSSES["token_mean"]
    assert (token_mean.advantage, token_mean.aggregation) == (ALGORITHMS["grpo"].advantage, "token_mean")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_adam_the_dr_grpo_runs_wander_apart_while_the_grpo_loss_drifts_as_with_sgd(seed):
    # notebook 05's sentence under the toy panel: "GRPO's curves barely change, but Dr. GRPO's runs now wander"
    ends = {}
    for optimizer in ("sgd", "adam"):
        for loss, run in lb.train_toy_pair(lb.P_CORRECT, seed=seed, optimizer=optimizer).items():
            ends[optimizer, loss] = run.mean_length()[-1]  # [R, 2]: each run's thinking tokens per path
    assert np.allclose(ends["sgd", "grpo"].mean(axis=0), ends["adam", "grpo"].mean(axis=0), atol=1.0)
    assert ends["adam", "dr_grpo"].std(axis=0).min() > 5 * ends["sgd", "dr_grpo"].std(axis=0).max()


def test_optimizer_text_prints_both_optimizers_and_both_losses():
    text = story.optimizer_text(lb.P_CORRECT)
    lines = text.splitlines()
    assert len(lines) == 3 and lines[1].lstrip().startswith("SGD") and lines[2].lstrip().startswith("Adam")
    assert all("GRPO loss:" in line and "Dr. GRPO loss:" in line for line in lines[1:])
