"""Notebook 03's experiment code, checked against independent computations (closed forms, simulation, stubs)."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from rlvr import task
from rlvr.experiments import thinking
from rlvr.narration import thinking as story
from rlvr.figures import thinking as fthink
from rlvr.experiments.common import Row, smooth
from rlvr.model import TinyTransformer
from rlvr.runs import RunResult
from rlvr.sft import SFTConfig
from rlvr.train import RLConfig, run, warm_start
from rlvr.train import cache_entry as rl_entry
from rlvr.widgets import config_key


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny forward passes: one thread avoids OpenMP contention on a shared machine (restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ----------------------------------------------------------------------------- the teacher
def test_teacher_chain_accuracy_is_the_lecture_power():
    assert thinking.teacher_chain_accuracy(0.1) == pytest.approx(0.9**10)
    assert thinking.teacher_chain_accuracy(0.0) == 1.0


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.3, 0.9])
def test_teacher_answer_accuracy_matches_an_enumeration_of_shift_sums(rate):
    # distribution of the total shift mod 10 by repeated convolution (independent of the closed form)
    step = np.full(10, rate / 9)
    step[0] = 1 - rate
    total = np.zeros(10)
    total[0] = 1.0
    for _ in range(10):
        total = np.array([sum(total[j] * step[(i - j) % 10] for j in range(10)) for i in range(10)])
    assert thinking.teacher_answer_accuracy(rate) == pytest.approx(total[0], abs=1e-12)


def test_simulated_teacher_agrees_with_both_closed_forms():
    sim = thinking.simulated_teacher(0.1, n=100_000, seed=1)
    se = math.sqrt(0.25 / sim["n"])
    assert abs(sim["chain_exact"] - thinking.teacher_chain_accuracy(0.1)) < 4 * se
    assert abs(sim["answer_right"] - thinking.teacher_answer_accuracy(0.1)) < 4 * se


def test_teacher_error_steps_finds_the_injected_errors():
    digits = np.array([9, 4, 5, 8, 0, 7, 3, 0, 2, 1])
    chain = np.cumsum(digits) % 10
    assert thinking.teacher_error_steps(digits, chain) == []
    chain[3] = (chain[3] + 4) % 10  # error at step 4, then carry on from the written digit
    chain[4:] = (chain[3] + np.cumsum(digits[4:])) % 10
    assert thinking.teacher_error_steps(digits, chain) == [4]


# ----------------------------------------------------------------------------- the thinking budget
class PerfectThinker(torch.nn.Module):
    """A stub 'model': inside '[...' it writes the running sum; after '#' it copies the digit before ']'."""

    cfg = None

    def forward(self, ids):
        B, T = ids.shape
        logits = torch.full((B, T, task.VOCAB_SIZE), -10.0)
        for b in range(B):
            row = ids[b].tolist()
            for t in range(task.PROMPT_LEN, T):  # the next token after every prefix row[: t + 1] of the answer
                logits[b, t, self.next_digit(row[: t + 1])] = 10.0
        return logits

    @staticmethod
    def next_digit(prefix):
        """Running sum inside the chain; after '#', the digit just before ']' (0 if the chain is empty)."""
        if prefix[-1] == task.HASH_ID:
            before_close = prefix[-3]
            return before_close if before_close < 10 else 0
        if task.OPEN_ID not in prefix or task.PAD_ID in prefix or task.CLOSE_ID in prefix:
            return 0
        chain = prefix[prefix.index(task.OPEN_ID) + 1 :]
        if len(chain) >= task.N_DIGITS:
            return 0
        previous = chain[-1] if chain else 0
        return (previous + prefix[len(chain)]) % 10


def test_thinking_budget_cuts_the_chain_and_forces_the_answer():
    n = 200
    curve = thinking.thinking_budget(PerfectThinker(), range(11), n_prompts=n, temperature=0.0)
    prompts = thinking.held_out_prompts(n)
    partial = np.cumsum(prompts, axis=1) % 10  # [n, 10] running sums
    answers = task.answer_digits(prompts)
    assert curve[0] == pytest.approx(np.mean(answers == 0))
    for b in range(1, 11):
        assert curve[b] == pytest.approx(np.mean(partial[:, b - 1] == answers))
    assert curve[10] == 1.0


def test_thinking_budget_samples_digits_at_temperature_one():
    torch.manual_seed(0)
    curve = thinking.thinking_budget(TinyTransformer(), (0, 5, 10), n_prompts=50, temperature=1.0)
    assert set(curve) == {0, 5, 10}
    assert all(0.0 <= v <= 0.4 for v in curve.values())  # an untrained model guesses (10%)


# ----------------------------------------------------------------------------- small helpers
def test_smooth_is_a_nan_skipping_trailing_moving_average():
    y = np.array([1.0, np.nan, 3.0, 5.0, np.nan, np.nan, np.nan, 7.0])
    got = smooth(y, 3)
    want = [
        np.nanmean(y[max(0, i - 2) : i + 1]) if np.isfinite(y[max(0, i - 2) : i + 1]).any() else np.nan
        for i in range(len(y))
    ]
    assert got[0] == y[0] and np.isnan(got[6])  # starts at the run's first value; NaN where the whole window is
    np.testing.assert_allclose(got, want)
    assert smooth([1.0, 2.0], 9).tolist() == [1.0, 1.5]  # shorter than the window


def test_late_mean_and_the_step_thinking_passes_a_level():
    history = [{"all_same_group_fraction": i / 100, "cot_fraction": min(1.0, i / 50)} for i in range(100)]
    assert thinking.late_mean(history, last=20) == pytest.approx(np.mean(np.arange(80, 100) / 100))
    final = fake_metrics(0.8, 0.9, 0.85, 14.0)
    never = RunResult(RLConfig(steps=30), [{"cot_fraction": 0.0}] * 30, final=final)
    row = thinking.summary_row("never", never)
    assert row["steps to 90% thinking"] is None and row["answers sampled by then"] is None
    step = thinking.summary_row("run", RunResult(RLConfig(steps=100), history, final=final))["steps to 90% thinking"]
    assert step in (49, 50)  # the trailing 9-step mean of i / 50 is 0.9 at step 49 (up to rounding), 0.92 at 50


def test_kl_to_itself_is_zero():
    torch.manual_seed(0)
    model = TinyTransformer().eval()
    assert thinking.kl_to_reference(model, model, n_prompts=20) == pytest.approx(0.0, abs=1e-6)


def test_values_from_key_inverts_config_key():
    for values in ({"beta": 0.04}, {"group_size": 32}, {"teacher_error_rate": 0.15000000000000002}):
        parsed = fthink._values_from_key(config_key(values))
        assert parsed == pytest.approx({k: float(v) for k, v in values.items()})


def test_fast_sizes_are_the_notebook_sizes():
    assert thinking.fast_sizes(False) == {
        "steps": 200,
        "eval_prompts": 2000,
        "pass_prompts": 2000,
        "sft_steps": SFTConfig().steps,
        "budget_prompts": 1000,
    }
    assert thinking.fast_sizes(True)["steps"] < 30


def test_rl_config_is_the_lecture_recipe():
    cfg = thinking.rl_config("grpo", 200, seed=0)
    assert (cfg.prompts_per_step, cfg.group_size, cfg.lr, cfg.steps, cfg.beta) == (32, 8, 1e-4, 200, 0.0)
    assert thinking.rl_config("grpo", 200, group_size=2).group_size == 2


# ----------------------------------------------------------------------------- rows
def fake_metrics(acc, cot, cot_acc, length):
    return {
        "accuracy": acc,
        "cot_fraction": cot,
        "cot_accuracy": cot_acc,
        "direct_accuracy": 0.1,
        "mean_length": length,
        "malformed_fraction": 0.0,
    }


def fake_measurement():
    warm = {
        "temperature1": fake_metrics(0.2, 0.5, 0.33, 9.0),
        "greedy": fake_metrics(0.6, 0.6, 1.0, 10.2),
        "n_prompts": 2000,
    }
    history = [{"all_same_group_fraction": 0.5, "accuracy": 0.9}] * 40
    return {
        "teacher": {"chain_exact": 0.349, "answer_right": 0.377, "n": 200_000},
        "warm": warm,
        "histories": history,
        "evals": {a: fake_metrics(0.9, 0.98, 0.92, 14.8) for a in ("grpo", "dr_grpo", "rft")},
        "warm_pass": {k: 0.3 + 0.04 * k for k in range(1, 17)},
        "grpo_pass": {k: 0.9 + 0.005 * k for k in range(1, 17)},
    }


def test_rows_report_the_measured_values_and_honest_bands():
    rows = story.rows_from([fake_measurement()], seeds=(0,))
    assert all(isinstance(r, Row) for r in rows)
    by_figure = {r.figure: r for r in rows}
    t1_acc = by_figure["warm-up, T=1: accuracy (all answers)"]
    assert t1_acc.measured == pytest.approx(0.2) and t1_acc.lecture == 0.19
    half = 0.005 + 3 * math.sqrt(0.2 * 0.8 / 2000) * math.sqrt(2)  # r of "19%" + 3u, u = SE * sqrt(1 + 1/1)
    assert t1_acc.band == pytest.approx((0.19 - half, 0.19 + half))
    pass16 = [r for r in rows if r.figure == "warm-up pass@16"][0]
    assert pass16.measured == pytest.approx(0.3 + 0.64)
    late = [r for r in rows if r.figure.startswith("groups with all-equal")][0]
    assert late.measured == pytest.approx(0.5) and late.agrees


def test_rows_use_the_spread_over_seeds_when_there_are_several():
    a, b = fake_measurement(), fake_measurement()
    b["evals"]["grpo"] = fake_metrics(0.8, 0.9, 0.82, 14.0)
    rows = story.rows_from([a, b], seeds=(0, 1))
    row = [r for r in rows if r.figure == "after GRPO (T=1, held-out): think-first accuracy"][0]
    assert row.measured == pytest.approx(0.87)
    assert row.spread == pytest.approx(np.std([0.92, 0.82], ddof=1))
    assert row.lecture - row.band[0] == pytest.approx(0.005 + 3 * row.spread * math.sqrt(1 + 1 / 2))
    assert row.band[1] == 1.0  # clipped: a share cannot exceed 100%


# ----------------------------------------------------------------------------- plots and panels
def fake_history(steps=30, seed=0):
    rng = np.random.default_rng(seed)
    keys = ["accuracy", "cot_fraction", "cot_accuracy", "chain_exact", "direct_accuracy", "all_same_group_fraction"]
    history = [{k: float(rng.random()) for k in keys} for _ in range(steps)]
    for h in history:
        h.update(mean_length=9.0, mean_length_think=15.0, mean_length_direct=3.0, kl_to_ref=float("nan"))
    history[steps // 2]["direct_accuracy"] = float("nan")
    return history


def fake_panel_run(**overrides):
    final = {**fake_metrics(0.8, 0.9, 0.85, 14.0), "kl_to_warmup": 1.5}
    return RunResult(RLConfig(steps=4, **overrides), fake_history(steps=4), final=final)


def test_training_curve_figures_draw_single_and_overlaid_runs():
    from rlvr.widgets import new_figure

    fig = new_figure((11, 6))
    fthink.draw_training_curves(fig, fake_history())
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 6
    fthink.draw_algo_comparison(fig, {"GRPO": fake_history(), "RFT": fake_history(seed=1)})
    assert len(fig.axes) == 4
    fthink.draw_pass_at_k(fig, {"a": {k: k / 16 for k in range(1, 17)}})
    fthink.draw_thinking_budget(fig, {"a": {b: 0.1 for b in range(11)}})


def test_training_plots_redrawn_on_their_reused_axes_look_like_new_ones():
    from rlvr.widgets import redraw_differences

    one, two = fake_panel_run(), fake_panel_run(group_size=2)
    two.history = fake_history(steps=4, seed=1)
    for knob in ("group_size", "beta", "teacher_error_rate"):
        calls = [
            ({"G (default)": one}, fake_history(steps=2)),
            ({"G (default)": one, "other": two}, None),
            ({"G (default)": one}, None),
        ]
        assert (
            redraw_differences(
                lambda fig, r, live, knob=knob: fthink.plot_knob_panel(fig, r, live, knob), calls, (11, 3.4)
            )
            == []
        ), knob
    calls = [(fake_history(),), ({"GRPO": fake_history(), "RFT": fake_history(seed=1)},), (fake_history(seed=2),)]
    assert redraw_differences(fthink.draw_training_curves, calls, (11, 6)) == []
    report = {
        "temperature1": fake_metrics(0.2, 0.5, 0.3, 9.0),
        "greedy": fake_metrics(0.5, 0.4, 1.0, 8.0),
        "losses": [2.0, 1.0, 0.7, 0.5],
        "teacher_error_rate": 0.1,
    }
    calls = [({"0.1 (default)": report}, [2.0, 1.5]), ({"0.1 (default)": report, "0.3": report}, None)]
    assert redraw_differences(fthink.plot_teacher_panel, calls, (11, 3.4)) == []


def test_teacher_panel_trains_through_warm_up_with_progress(monkeypatch):
    calls = []

    def fake_warmup_metrics(rate, seed, n_prompts, sft_steps, on_step=None):
        for step in range(1, 5):
            on_step(step, 4, 2.0 / step)
        calls.append((rate, sft_steps))
        metrics = fake_metrics(0.2, 0.5, 0.3, 9.0)
        return {"temperature1": metrics, "greedy": metrics, "losses": [2.0, 1.0, 0.7, 0.5], "teacher_error_rate": rate}

    monkeypatch.setattr(fthink, "warmup_metrics", fake_warmup_metrics)
    monkeypatch.setattr(fthink, "warmup_on_disk", lambda *a, **k: False)
    default = fake_warmup_metrics(0.1, 0, None, 8, on_step=lambda *a: None)
    panel = fthink.teacher_panel(default_result=default, sft_steps=8)
    panel.controls["teacher_error_rate"].value = 0.30000000000000004
    assert panel.click_run() is not None, panel.last_traceback
    assert panel.error is None
    assert calls[-1] == (pytest.approx(0.3), 8)
    assert len(panel.results) == 2


@pytest.mark.parametrize("knob, value", [("group_size", 2), ("beta", 0.04), ("teacher_error_rate", 0.0)])
def test_knob_panels_run_the_chosen_setting_and_overlay_it(monkeypatch, knob, value):
    seen = []

    def fake_panel_run_fn(knob_name, v, steps, n_prompts, sft_steps, on_step=None, seed=0):
        seen.append((knob_name, v))
        history = fake_history(steps=4)
        for step in range(1, len(history) + 1):
            on_step(step, len(history), history[:step])
        return fake_panel_run(**{knob_name: thinking.knob_value(knob_name, v)})

    monkeypatch.setattr(fthink, "panel_run", fake_panel_run_fn)
    monkeypatch.setattr(fthink, "panel_run_on_disk", lambda *a, **k: False)
    panel = fthink.knob_panel(knob, fake_panel_run(), steps=4)
    panel.controls[knob].value = value
    assert panel.click_run() is not None, panel.last_traceback
    assert panel.error is None
    assert seen == [(knob, value)]
    assert len(panel.results) == 2
    table = fthink.panels_summary(panel)
    assert table.text.count("\n") == 3  # header, rule, two runs
    assert fthink.panels_summary(panel, panel).text == table.text  # the shared default is listed once
    assert "| default (G = 8" in table.text


def test_panel_run_keys_match_the_shared_run_cache():
    cfg = thinking.rl_config("grpo", 200, 0, beta=thinking.knob_value("beta", 0.04000000000000001))
    assert cfg.beta == 0.04
    assert cfg == RLConfig(beta=0.04)  # same cache entry as `python -m rlvr train --beta 0.04`


def test_a_cached_runs_evaluation_is_computed_once_and_read_back(monkeypatch, tmp_path):
    # reading a trained run back (the setup cells' start_ahead, then the cell that reads it) must not sample the
    # held-out prompts again; another evaluation size, or a short fast-mode warm-up, is computed afresh
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    cfg = thinking.rl_config("grpo", 200, 0)
    result = RunResult(cfg, [], policy=None)
    monkeypatch.setattr(thinking, "train_from_warmup", lambda cfg, sft_steps=None, on_step=None: (result, None))
    evaluated = []

    def finished(result, warm_model, n_prompts=None):
        evaluated.append(n_prompts)
        return RunResult(result.config, [], None, final={"accuracy": 0.25 * len(evaluated)})

    monkeypatch.setattr(thinking, "finished", finished)
    first = thinking.panel_training(cfg, n_prompts=64)
    again = thinking.panel_training(cfg, n_prompts=64)
    assert first.final == again.final == {"accuracy": 0.25} and evaluated == [64]
    assert thinking.panel_training(cfg, n_prompts=32).final == {"accuracy": 0.5} and evaluated == [64, 32]
    short = thinking.panel_training(replace(cfg, teacher_error_rate=0.0), n_prompts=64, sft_steps=5)
    assert short.final == {"accuracy": 0.75} and evaluated == [64, 32, 64]  # not cached: a short warm-up
    thinking.panel_training(replace(cfg, teacher_error_rate=0.0), n_prompts=64, sft_steps=5)
    assert len(evaluated) == 4


def test_smooth_ratio_pools_answers_not_steps():
    # step 1: 1 direct answer (right); step 2: 99 direct answers (1% right) -> pooled 1.99/100, not mean(100%, 1%)
    got = thinking.smooth_ratio([1.0, 0.01], [0.01, 0.99], window=3)
    np.testing.assert_allclose(got, [1.0, 0.0199])  # step 1 pools only itself: a trailing window


def test_k3_in_the_loss_has_the_gradient_of_the_forward_kl():
    # the claim of Exercise 7(b): on-policy, E_pi[grad k3] = grad KL(pi_ref || pi), not grad KL(pi || pi_ref)
    from rlvr.objectives import kl_k3

    torch.manual_seed(0)
    theta = torch.randn(5, requires_grad=True)
    ref_logps = torch.log_softmax(torch.randn(5), dim=0)
    logps = torch.log_softmax(theta, dim=0)
    expected_k3 = (logps.exp().detach() * kl_k3(logps, ref_logps)).sum()  # exact expectation over the 5 tokens
    forward_kl = (ref_logps.exp() * (ref_logps - logps)).sum()
    reverse_kl = (logps.exp() * (logps - ref_logps)).sum()
    grad_k3, grad_fwd, grad_rev = (
        torch.autograd.grad(x, theta, retain_graph=True)[0] for x in (expected_k3, forward_kl, reverse_kl)
    )
    torch.testing.assert_close(grad_k3, grad_fwd)
    assert not torch.allclose(grad_k3, grad_rev, atol=1e-3)


def test_a_share_whose_seed_spread_covers_0_to_100_percent_gets_no_band_instead_of_a_free_yes():
    coin_flip = story._row("5.1", "greedy think-first share", "65%", [0.5, 0.2, 1.0], 0.01, seeds=(0, 1, 2))
    assert coin_flip.band is None and coin_flip.agrees is None and "no band" in coin_flip.note
    steady = story._row("5.1", "T=1 think-first share", "50%", [0.49, 0.50, 0.51], 0.01, seeds=(0, 1, 2))
    half = 0.005 + 3 * 0.01 * math.sqrt(1 + 1 / 3)
    assert steady.band == pytest.approx((0.5 - half, 0.5 + half)) and steady.agrees is True


def test_warmup_rows_skip_a_seed_that_never_thinks_first_greedily():
    """A seed whose greedy model never thinks first has no greedy think-first accuracy: the row averages the
    other seeds (never NaN) and says which seeds it used."""

    def report(greedy_share):
        metrics = {
            "accuracy": 0.2,
            "cot_fraction": 0.5,
            "cot_accuracy": 0.35,
            "direct_accuracy": 0.1,
            "malformed_fraction": 0.0,
        }
        greedy = {
            "accuracy": 0.1 + 0.9 * greedy_share,
            "cot_fraction": greedy_share,
            "cot_accuracy": 1.0 if greedy_share else None,
            "direct_accuracy": 0.1,
            "malformed_fraction": 0.0,
        }
        return {"temperature1": metrics, "greedy": greedy, "n_prompts": 2000}

    rows = story.warmup_rows([report(0.4), report(0.9), report(0.0)], seeds=(0, 1, 2))
    nan_report = report(0.0)
    nan_report["greedy"]["cot_accuracy"] = math.nan  # evaluate() reports an empty share as NaN
    assert story.warmup_rows([report(0.4), nan_report], seeds=(0, 1))[4].measured == 1.0
    (row,) = [r for r in rows if r.figure == "warm-up, greedy: think-first accuracy"]
    assert row.measured == 1.0 and row.seeds == (0, 1) and "seeds 0, 1 only" in row.note
    assert all(math.isfinite(r.measured) for r in rows)


# ----------------------------------------------------------------------------- what notebook 03 prints and draws
def test_model_card_counts_the_parameters_and_tokenizes_the_lectures_example():
    card = "\n".join(story.model_card())
    assert "70,040 parameters" in card
    assert "9458073021=" in card and "[9386636689]#9$" in card and "#9$" in card
    assert " ".join(map(str, task.encode("#9$"))) in card
    parts = [int(n.replace(",", "")) for n in card.split("\n")[2].split() if n.replace(",", "").isdigit()]
    assert sum(parts) == 70_040  # embeddings + blocks + final norm add up to the model


def test_step_shapes_walk_the_shapes_of_one_grpo_step():
    torch.manual_seed(0)
    stages = {s.name: s for s in thinking.step_shapes(TinyTransformer().eval(), prompts_per_step=3, group_size=4)}
    assert stages["prompts"].shape == (3, 10)
    B, T = stages["rollout.responses"].shape
    assert B == 12 and 1 <= T <= task.MAX_NEW_TOKENS
    assert stages["rewards.view(P, G)"].shape == (3, 4)
    assert stages["advantages"].shape == (12,) and stages["per-answer loss"].shape == (12,)
    assert stages["logps"].shape == (12, T) and stages["loss"].shape == ()


def test_print_warmup_says_how_many_answers_each_share_is_measured_on(capsys):
    greedy = {**fake_metrics(0.9, 0.999, 1.0, 15.0), "direct_accuracy": 0.0, "malformed_fraction": 0.0}
    story.print_warmup({"temperature1": fake_metrics(0.2, 0.5, 0.3, 9.0), "greedy": greedy, "n_prompts": 2000})
    out = capsys.readouterr().out
    assert "0.0% of 2 right" in out and "50.0% of 2000" in out
    never = {**greedy, "cot_fraction": 1.0, "direct_accuracy": float("nan")}
    story.print_warmup({"temperature1": greedy, "greedy": never, "n_prompts": 2000})
    out = capsys.readouterr().out
    assert "| no direct answers |" in out and "none of 0" not in out and "nan" not in out


def test_exercise7_runs_change_one_knob_each_and_time_like_the_default():
    configs = thinking.exercise7_configs(200, seed=0)
    assert [thinking.knob_of(c) for c in configs.values()] == [
        ("teacher_error_rate", 0.0),
        ("beta", 0.04),
        ("group_size", 2),
        ("group_size", 32),
    ]
    assert list(configs) == ["7(a) teacher error 0", "7(b) β = 0.04", "7(c) G = 2", "7(c) G = 32"]
    runs = story.package_runs(200, seed=0)
    timed, entry = runs["7(a) teacher error 0"]  # timing it must not train its warm-up: a default-rate config
    assert timed.teacher_error_rate == 0.1 and entry == thinking.rl_entry(configs["7(a) teacher error 0"])
    assert runs["7(c) G = 32"] == configs["7(c) G = 32"]
    assert thinking.knob_of(thinking.rl_config("grpo", 200)) is None


def test_warmup_steps_are_the_default_warmups_except_a_short_one_for_another_rate():
    assert thinking.warmup_steps(0.1, 60) == thinking.SFT_STEPS  # the shipped warm-up, even in fast mode
    assert thinking.warmup_steps(0.0, thinking.SFT_STEPS) == thinking.SFT_STEPS
    assert thinking.warmup_steps(0.0, 60) == 60


def test_summary_rows_and_findings_read_the_runs():
    default = fake_panel_run()
    for h, share in zip(default.history, (0.5, 0.8, 1.2, 1.6)):
        h["cot_fraction"] = share  # trailing means 0.5, 0.65, 0.83, 1.03: 90% first reached at step 3
    fast = fake_panel_run(group_size=32)
    fast.history = fast.history[:1]
    fast.history[0]["cot_fraction"] = 1.0
    row = thinking.summary_row("G = 32", fast)
    assert row["steps to 90% thinking"] == 0 and row["answers sampled by then"] == 32 * 32  # step 0's answers
    assert thinking.summary_row("default", default)["steps to 90% thinking"] == 3
    lines = story.exercise7_findings(default, {"G = 32": fast})
    assert lines[0] == "G = 32:" and lines[1] == "  thinking passes 90% at step 0 (the default: step 3)"
    assert lines[-1] == "  answers sampled by then 1,024 (the default: 1,024)"
    assert not any(word in " ".join(lines) for word in ("earlier", "later", "higher", "lower", "more", "less"))
    assert all(len(line) <= 110 for line in lines)
    table = fthink.summary_table({"default": default, "G = 32": fast}).text
    assert table.count("\n") == 3 and "1,024" in table


def test_the_lecture_and_us_has_no_band_and_no_verdict():
    rows = story.rows_from([fake_measurement()], seeds=(0,))
    lines = story.lecture_and_us(rows)
    assert len(lines) == len(rows)
    text = repr(lines)
    assert "band" not in text and "NO" not in text and "nan" not in text
    moved = [line for line in lines if line[1].startswith("GRPO pass@16 minus warm-up")][0]
    assert moved[2] == "'barely moves'" and moved[3].endswith("points")
    by_figure = {line[1]: line for line in lines}
    assert by_figure["groups with all-equal rewards, last 20 steps"][2] == "~55%"
    assert by_figure["after GRPO (T=1, held-out): think-first accuracy"][2:] == ("94%", "92.0%")


def test_colours_give_orange_to_dr_grpo_only():
    colors = fthink.run_colors(["the package's step", "your step", "Dr. GRPO", "beta = 0.04", "G = 2 (default)"])
    assert colors["Dr. GRPO"] == "#ff7f0e"
    assert colors["the package's step"] == colors["G = 2 (default)"] == "#000000"
    assert "#ff7f0e" not in (colors["your step"], colors["beta = 0.04"])


def test_live_curves_draw_from_the_first_step(monkeypatch):
    drawn = []
    live = fthink.live_curves(every=10)
    monkeypatch.setattr(live.plot, "draw_fn", lambda fig, history: drawn.append(len(history)))
    history = fake_history(steps=20)
    for step in range(1, 21):
        live(step, 20, history[:step])
    assert drawn == [1, 10, 20]
    cached = fthink.live_curves(every=10)
    monkeypatch.setattr(cached.plot, "draw_fn", lambda fig, history: drawn.append(-len(history)))
    cached(20, 20, history)  # a run loaded from the cache: one call, at its last step
    assert drawn[-1] == -20


def test_knob_panel_holds_the_exercise_runs_it_is_given():
    from rlvr.widgets import new_figure

    default = fake_panel_run()
    runs = {"7(c) G = 2": fake_panel_run(group_size=2), "7(b) β = 0.04": fake_panel_run(beta=0.04)}
    runs["7(b) β = 0.04"].history = [{**h, "kl_to_ref": 0.1 * i} for i, h in enumerate(fake_history(steps=4))]
    panel = fthink.knob_panel("group_size", default, steps=4, runs=runs)
    assert list(panel.results) == ["G = 8 (default)", "G = 2"]
    beta = fthink.knob_panel("beta", default, steps=4, runs=runs)
    assert list(beta.results) == ["β = 0 (default)", "β = 0.04"]
    fig = new_figure((11, 3.4))
    fthink.plot_knob_panel(fig, beta.results, knob="beta")
    kl_axis = fig.axes[2]
    assert any(len(line.get_xdata()) == 4 for line in kl_axis.get_lines())  # a curve, not only a star


# ----------------------------------------------------------------------------- GSPO and CISPO beside GRPO
def _run(rewards, cot=None) -> RunResult:
    """A run record whose history holds these per-step rewards (and think-first shares)."""
    cot = rewards if cot is None else cot
    return RunResult(RLConfig(), [{"reward": r, "cot_fraction": c} for r, c in zip(rewards, cot)])


def test_same_steps_counts_the_leading_steps_with_identical_rewards():
    a = _run([0.1, 0.2, 0.3, 0.4])
    assert thinking.same_steps(a, _run([0.1, 0.2, 0.3, 0.4])) == 4
    assert thinking.same_steps(a, _run([0.1, 0.2, 0.35, 0.4])) == 2
    assert thinking.same_steps(a, _run([0.0, 0.2, 0.3, 0.4])) == 0
    assert thinking.same_steps(a, _run([0.1, 0.2])) == 2  # the shorter run's length


def test_ratio_algo_lines_say_how_long_each_run_retraced_grpo():
    grpo = _run([0.1] * 30, cot=[0.5] * 5 + [1.0] * 25)
    same = _run([0.1] * 30, cot=[0.5] * 5 + [1.0] * 25)
    other = _run([0.1, 0.1, 0.1] + [0.2] * 27, cot=[0.5] * 30)
    metrics = {"accuracy": 0.9, "cot_fraction": 0.95, "cot_accuracy": 0.92}
    lines = story.ratio_algo_lines(
        {"grpo": grpo, "gspo": same, "cispo": other}, dict.fromkeys(("grpo", "gspo", "cispo"), metrics), 100
    )
    first = thinking.thinking_step(grpo)
    assert first is not None and f"from step {first}" in lines[0] and f"from step {first}" in lines[1]
    assert "never reached" in lines[2]
    assert lines[3] == "GSPO drew and scored exactly GRPO's answers at all 30 steps."
    assert (
        lines[4] == "CISPO drew and scored exactly GRPO's answers up to step 2, and answers of its own from step 3 on."
    )
    named = story.ratio_algo_lines(
        {"grpo": grpo, "gspo": same, "cispo": other},
        dict.fromkeys(("grpo", "gspo", "cispo"), metrics),
        100,
        labels={"grpo": "GRPO-1"},
    )
    assert named[0].lstrip().startswith("GRPO-1:") and named[1].lstrip().startswith("GSPO:")  # notebook 04's name
    assert named[3] == "GSPO drew and scored exactly GRPO-1's answers at all 30 steps."


@pytest.mark.claims
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_one_update_per_batch_gspo_retraces_grpo_and_cispo_does_not(seed):
    """Notebook 03's GSPO/CISPO paragraph: with every ratio 1, GSPO's gradient is GRPO's, so it draws GRPO's answers
    (float rounding may part them late: at least the first 50 of 200 steps are asked for, and the same final
    think-first share within 0.05); CISPO averages over the batch's tokens, so it parts from GRPO within 5 steps."""
    runs = {algo: thinking.rl_run(algo, 200, seed) for algo in ("grpo", "gspo", "cispo")}
    assert thinking.same_steps(runs["gspo"], runs["grpo"]) >= 50
    assert thinking.same_steps(runs["cispo"], runs["grpo"]) <= 5
    tail = {algo: float(np.mean(r.curve("cot_fraction")[-20:])) for algo, r in runs.items()}
    assert abs(tail["gspo"] - tail["grpo"]) <= 0.05, tail
    # notebook 04's model answer: CISPO's token mean weighs a wrong direct answer's `#` less, so it switches to
    # thinking first later than GRPO (measured: 10, 10 and 8 steps later on seeds 0-2 natively; 10, 10 and 12 under
    # ATEN_CPU_CAPABILITY=default with two threads)
    steps = {algo: thinking.thinking_step(r) for algo, r in runs.items()}
    assert steps["cispo"] >= steps["grpo"] + 3, steps


@pytest.mark.claims
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_a_perfect_teacher_thinking_passes_90_percent_later_not_sooner(seed):
    """Notebook 03's Exercise 7(a) model answer: the perfect teacher's run passes 90% thinking later than the default
    run (measured: 6, 28 and 29 steps later on seeds 0-2 natively; 6, 3 and 14 under the portable kernels), so asked
    to be later by at least 2 steps."""
    default = thinking.rl_run("grpo", 200, seed)
    perfect = thinking.rl_run("grpo", 200, seed, teacher_error_rate=0.0)
    assert thinking.thinking_step(perfect) >= thinking.thinking_step(default) + 2


@pytest.mark.claims
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grpo_switches_to_thinking_first_sooner_than_dr_grpo_and_rft(seed):
    """Notebook 03 §6: GRPO's per-answer mean weighs a short direct answer's tokens more, so it passes 90% thinking
    before Dr. GRPO and RFT (measured natively: 31/39/45, 33/40/44 and 32/38/41 steps on seeds 0-2); asked to be at
    least 3 steps sooner than both."""
    steps = {algo: thinking.thinking_step(thinking.rl_run(algo, 200, seed)) for algo in ("grpo", "dr_grpo", "rft")}
    assert steps["grpo"] + 3 <= min(steps["dr_grpo"], steps["rft"]), steps


@pytest.mark.claims
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_over_the_first_steps_the_first_token_moves_at_close_to_its_bound_and_slower_with_a_perfect_teacher(seed):
    """Notebook 03's optional 7(a) cells: over the first 10 steps each run's first token moves at close to the bound
    at its start (lr x the L1 norm of its log-odds' gradient), and the perfect teacher's moves slower. Measured
    natively: 84%/100% of the bound, 0.72x (seed 0); 88%/94%, 0.43x (seed 1); 82%/97%, 0.45x (seed 2); asked: at least
    70% and at most 115% of the bound, and at most 0.85x. The bound at the end of the 200 steps: 4.6x and 5.2x its start
    (seed 0), asked to be at least 1.5x."""
    configs = [thinking.rl_config("grpo", 200, seed), thinking.rl_config("grpo", 200, seed, teacher_error_rate=0.0)]
    paces = [thinking.first_token_pace(cfg, steps=10, n_prompts=2000) for cfg in configs]
    bounds = [cfg.lr * thinking.first_token_reach(warm_start(cfg).model, 2000)["l1"] for cfg in configs]
    shares = [pace / bound for pace, bound in zip(paces, bounds)]
    assert all(0.7 <= share <= 1.15 for share in shares), shares
    assert paces[1] <= 0.85 * paces[0], paces
    # "the bound then grows with training": at the end of the 200 steps each run's bound is above its start's
    ends = [cfg.lr * thinking.first_token_reach(run(cfg).policy, 2000)["l1"] for cfg in configs]
    assert all(end > 1.5 * start for end, start in zip(ends, bounds)), (bounds, ends)


@pytest.mark.claims
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_a_perfect_teacher_thinking_passes_90_percent_later_on_a_second_rl_seed_too(seed):
    """Notebook 03 §8 runs 7(a) again with RL seed SEED + 1 beside §6's GRPO run of that seed, and the model answer
    says "later on both RL seeds" (measured at seed 0 natively: 39 against 31 for RL seeds 1, 2 and 3 alike: 39/31,
    39/32, 40/30), so asked to be later by at least 2 steps."""
    default = run(thinking.other_seed_configs(200, seed, seed + 1)["grpo"])
    perfect = run(thinking.perfect_teacher_other_seed(200, seed, seed + 1))
    assert perfect.config.teacher_error_rate == 0.0 and perfect.config.sft_seed == seed == default.config.sft_seed
    assert thinking.thinking_step(perfect) >= thinking.thinking_step(default) + 2


def test_print_all_equal_gives_the_first_step_then_early_and_late(capsys):
    """The prediction of notebook 03 §4 is graded at the first step: its line comes first, with the formula at that
    step's accuracy."""
    history = [{"accuracy": 0.25, "all_same_group_fraction": 0.125}] + [
        {"accuracy": 0.5, "all_same_group_fraction": 0.0}
    ] * 30
    story.print_all_equal(history, group_size=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and "step 0:" in lines[0] and "first 10 steps" in lines[1] and "last 20 steps" in lines[2]
    assert "p = 25.0%" in lines[0] and "measured 12.5%" in lines[0] and "= 62.5%" in lines[0]  # 0.25^2 + 0.75^2


def test_print_all_equal_starts_with_the_formula_at_the_warm_ups_accuracy_when_given(capsys):
    """Notebook 03 §4 asks for the share 'at the start' from the warm-up's printed accuracy: its formula comes first."""
    history = [{"accuracy": 0.25, "all_same_group_fraction": 0.125}] * 31
    story.print_all_equal(history, group_size=2, warm_accuracy=0.2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and "warm-up" in lines[0] and "p = 20.0%" in lines[0] and "= 68.0%" in lines[0]
    assert "step 0:" in lines[1]  # steps count from 0, as in the figures


def test_ratio_algo_lines_say_only_at_step_0_and_from_step_0():
    """Steps count from 0: a run that shares only GRPO's first step says 'only at step 0', one that shares none
    'from step 0' (never 'up to step 0' or 'up to step -1')."""
    grpo = _run([0.1] * 10, cot=[0.5] * 10)
    first_only = _run([0.1] + [0.2] * 9, cot=[0.5] * 10)
    none = _run([0.3] * 10, cot=[0.5] * 10)
    metrics = {"accuracy": 0.9, "cot_fraction": 0.95, "cot_accuracy": 0.92}
    lines = story.ratio_algo_lines(
        {"grpo": grpo, "gspo": first_only, "cispo": none}, dict.fromkeys(("grpo", "gspo", "cispo"), metrics), 100
    )
    assert (
        lines[3] == "GSPO drew and scored exactly GRPO's answers only at step 0, and answers of its own from step 1 on."
    )
    assert lines[4] == "CISPO drew answers of its own from step 0 on."


def test_first_token_odds_reads_how_the_first_token_splits_between_thinking_and_answering():
    """P([) per prompt from the policy's logits at the prompt's last position; [ leads where P([) > P(#)."""
    from rlvr.narration.thinking import first_token_text
    from rlvr.task import HASH_ID, OPEN_ID, VOCAB_SIZE

    def policy(prompts):  # [n, 11] -> [n, 11, V]: the first half of the prompts lean to [, the second half to #
        n = prompts.shape[0]
        logits = torch.full((n, prompts.shape[1], VOCAB_SIZE), -1e9)
        lean = torch.where(torch.arange(n) < n // 2, 0.6, 0.3)  # [n]
        logits[:, -1, OPEN_ID], logits[:, -1, HASH_ID] = lean.log(), (1 - lean).log()
        return logits

    odds = thinking.first_token_odds(policy, 100)
    assert odds["think_leads"] == pytest.approx(0.5)
    assert (odds["p10"], odds["median"], odds["p90"]) == (pytest.approx(0.3), pytest.approx(0.45), pytest.approx(0.6))
    line = first_token_text(odds, 100)
    assert "0.300 / 0.450 / 0.600" in line and "on 50.0% of them" in line


def test_a_mean_length_in_the_lecture_table_prints_with_one_decimal():
    """15.0 tokens beside 9.2, not '15 tokens' beside '9.18 tokens'."""
    assert story._value_text(14.97, "tokens") == "15.0 tokens" and story._value_text(9.18, "tokens") == "9.2 tokens"


def test_the_second_rl_seed_starts_from_the_same_warm_up_and_draws_other_numbers():
    configs = thinking.other_seed_configs(200, seed=0, rl_seed=1)
    assert list(configs) == list(thinking.COMPARED_ALGOS)
    for algo, cfg in configs.items():
        first = thinking.rl_config(algo, 200, 0)
        assert cfg.seed == 1 and cfg.sft_seed == first.sft_seed == 0 and cfg.algo == algo
        assert rl_entry(cfg) != rl_entry(first)  # a run of its own in the cache
    titles = story.other_seed_titles(1)
    assert titles["rft"] == "RFT, RL seed 1" and len(set(titles.values())) == 3
    assert all(title in story.first_run_text(200, 0) for title in titles.values())  # the setup cell lists them


def test_seed_spread_lines_set_the_gap_between_algorithms_against_the_gap_between_seeds():
    def metrics(accuracy):
        return {"accuracy": accuracy, "cot_fraction": 0.99, "cot_accuracy": accuracy}

    def run_passing_90_at(step):
        return RunResult(RLConfig(), [{"cot_fraction": 0.5}] * step + [{"cot_fraction": 1.0}] * 40)

    first = {"grpo": metrics(0.94), "dr_grpo": metrics(0.90), "rft": metrics(0.91)}
    second = {"grpo": metrics(0.92), "dr_grpo": metrics(0.93), "rft": metrics(0.905)}
    runs = {"grpo": run_passing_90_at(20), "dr_grpo": run_passing_90_at(30), "rft": run_passing_90_at(30)}
    other = {"grpo": run_passing_90_at(25), "dr_grpo": run_passing_90_at(26), "rft": run_passing_90_at(40)}
    lines = story.seed_spread_lines(runs, first, other, second, 2000, rl_seed=1)
    assert lines[0].startswith("the same three") and "RL seed 1" in lines[0] and len(lines) == 9
    assert "RFT" in lines[3] and "90.5%" in lines[3]
    step = thinking.thinking_step(runs["grpo"])
    assert lines[4].startswith(f"steps to 90% thinking, RL seed 0 / 1: GRPO {step} / ")
    assert "Dr. GRPO 90.0% / 93.0%" in lines[5]
    # within a seed: 0.94 - 0.90 = 4.0 points (seed 0), 0.93 - 0.905 = 2.5 (seed 1); between seeds: Dr. GRPO 3.0
    assert "one seed 4.0 points; the largest gap between the two seeds of one algorithm 3.0 points;" in lines[6]
    se = 100 * math.sqrt(np.mean([a * (1 - a) for a in (0.94, 0.90, 0.91, 0.92, 0.93, 0.905)]) / 2000)
    assert lines[6].endswith(
        f"on 2000 answers carries a standard error of about {se:.1f} points, a gap between two such accuracies about "
        f"{math.sqrt(2) * se:.1f}"
    )
    # GRPO first on both seeds, no common last (RFT ties Dr. GRPO on seed 0); the least accurate differs
    assert lines[7] == (
        "GRPO is the first to reach 90% thinking on both seeds; no algorithm ends least accurate on both seeds"
    )
    assert "RFT is not before or after GRPO and Dr. GRPO on both seeds" in lines[8]  # it ties Dr. GRPO on seed 0
    tied = {"grpo": run_passing_90_at(30), "dr_grpo": run_passing_90_at(30), "rft": run_passing_90_at(40)}
    far = {"grpo": metrics(0.94), "dr_grpo": metrics(0.86), "rft": metrics(0.91)}  # 5 points below RFT: > 2 SE
    assert story.seed_spread_lines(tied, far, tied, far, 2000, 1)[-2] == (
        "RFT is the last to reach 90% thinking on both seeds; "
        "Dr. GRPO ends least accurate on both seeds, by 5.0 and 5.0 points: more than two standard errors of a gap "
        "each, a hint at an order"
    )
    close = {"grpo": metrics(0.945), "dr_grpo": metrics(0.95), "rft": metrics(0.951)}  # 0.5 points < 2 SE
    assert story.seed_spread_lines(tied, close, tied, close, 2000, 1)[-2].endswith(
        "GRPO ends least accurate on both seeds, by 0.5 and 0.5 points: within two standard errors of a gap, "
        "no more than noise"
    )
    # a gap of 1.2 points: more than two standard errors of one accuracy (0.5) but not of a gap between two (0.7)
    near = {"grpo": metrics(0.93), "dr_grpo": metrics(0.942), "rft": metrics(0.95)}
    assert story.seed_spread_lines(tied, near, tied, near, 2000, 1)[-2].endswith(
        "within two standard errors of a gap, no more than noise"
    )


def test_a_step_run_with_a_knob_in_its_label_keeps_the_package_black_and_yours_blue():
    # notebook 03 §5 draws "your step, β = 0.04" over "the package's step, β = 0.04": the same two colours as the
    # β = 0 pair (the package's curve drawn wide underneath), not two knob colours that hide one another
    colors = fthink.run_colors(["the package's step, β = 0.04", "your step, β = 0.04"])
    assert list(colors.values()) == list(fthink.run_colors(["the package's step", "your step"]).values())
    assert fthink.is_default("the package's step, β = 0.04") and not fthink.is_default("your step, β = 0.04")


def test_rft_against_the_lecture_places_rft_on_both_seeds():
    """Notebook 03 §6 sets the lecture's "RFT is even slightly faster" beside where RFT reaches 90% thinking among
    the three algorithms, only when both seeds agree."""
    last = {"grpo": (31, 31), "dr_grpo": (39, 38), "rft": (45, 42)}  # notebook 03's runs on this machine
    assert story.rft_against_the_lecture(last) == (
        'the lecture: RFT "even slightly faster"; here RFT reaches 90% thinking after GRPO and Dr. GRPO on both seeds'
    )
    first = {"grpo": (31, 31), "dr_grpo": (39, 38), "rft": (30, 29)}
    assert "before GRPO and Dr. GRPO on both seeds" in story.rft_against_the_lecture(first)
    mixed = {"grpo": (31, 31), "dr_grpo": (39, 38), "rft": (35, 42)}
    assert "not before or after GRPO and Dr. GRPO on both seeds" in story.rft_against_the_lecture(mixed)
    never = {"grpo": (31, 31), "dr_grpo": (39, None), "rft": (45, 42)}
    assert "cannot place RFT" in story.rft_against_the_lecture(never)


@pytest.mark.claims
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_perfect_teachers_warm_up_steers_its_first_token_through_fewer_weights(seed):
    """Notebook 03's why of Exercise 7(a): one Adam step moves the first token's log-odds by at most lr x the L1 norm
    of their gradient, and the perfect teacher's warm-up has the smaller one, at a similar L2 norm ("fewer weights").
    Measured natively on the warm-ups of seeds 0-2 (512 prompts): L1 ratios 0.60, 0.40 and 0.38 at L2 norms within 8%,
    so asked to be at most 0.8, and the L1 / L2 ratio too."""
    from rlvr.sft import warm_up

    default = thinking.first_token_reach(warm_up(0.1, seed).model)
    perfect = thinking.first_token_reach(warm_up(0.0, seed).model)
    assert perfect["l1"] <= 0.8 * default["l1"], (default, perfect)
    assert perfect["l1"] / perfect["l2"] <= 0.8 * default["l1"] / default["l2"], (default, perfect)


def test_the_kl_panel_reads_every_run_at_the_same_steps_and_averages_them_alike():
    """A run with a KL term measures its KL at every step, one without at every 10th: the panel draws both at the
    same steps with the same window, so a penalised run's curve never lags or leads the default's by smoothing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dense = [{"kl_to_ref": float(step)} for step in range(50)]  # [50] every step
    sparse = [{"kl_to_ref": float(step) if step % 10 == 0 else float("nan")} for step in range(50)]
    fig, ax = plt.subplots()
    fthink._draw_kl(ax, dense, None, "C0", "-", "dense")
    fthink._draw_kl(ax, sparse, None, "C1", "-", "sparse")
    (x_dense, y_dense), (x_sparse, y_sparse) = [(line.get_xdata(), line.get_ydata()) for line in ax.lines]
    plt.close(fig)
    assert list(x_dense) == list(x_sparse) == [1, 11, 21, 31, 41]
    assert np.allclose(y_dense, y_sparse)


def test_the_first_token_reach_lines_give_the_bound_before_and_after_rl():
    default, perfect = {"l1": 920.0, "l2": 18.6}, {"l1": 552.0, "l2": 18.7}
    lines = story.first_token_reach_lines(default, perfect, lr=1e-4)
    assert len(lines) == 2 and "default warm-up 0.092 nats, perfect teacher's 0.055 (0.60x)" in lines[0]
    after = ({"l1": 4240.0, "l2": 50.0}, {"l1": 2840.0, "l2": 40.0})
    lines = story.first_token_reach_lines(default, perfect, lr=1e-4, after=after, steps=200)
    assert lines[2] == (
        "the same bound after 200 RL steps: the default run 0.424 nats, the perfect teacher's run 0.284 (0.67x)"
    )
    lines = story.first_token_reach_lines(
        default, perfect, lr=1e-4, after=after, steps=200, pace=(0.077, 0.055), pace_steps=10
    )
    assert len(lines) == 4 and lines[2].startswith("what the first 10 RL steps of each run did")
    assert "0.077 nats per step in the default run, 0.055 in the perfect teacher's (0.71x); 84% and 100%" in lines[2]
    assert lines[3].startswith("the same bound after 200 RL steps")
