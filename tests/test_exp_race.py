"""Notebook 04's experiment module: diagnostics against hand computations, the instrumented loop against train_rl,
the curve readers, the cost accounting and the panel (with a fake trainer)."""

import math
import warnings

import numpy as np
import pytest
import torch

from rlvr.experiments import race
from rlvr.narration import race as story
from rlvr.experiments.common import first_step, smooth
from rlvr.figures import race as frace
from rlvr.model import TinyTransformer
from rlvr.objectives import gae, shaped_rewards
from rlvr.runs import RunResult
from rlvr.train import RLConfig, train_rl
from rlvr import widgets
from rlvr.widgets import config_key

TINY = dict(steps=2, prompts_per_step=4, group_size=4)


@pytest.fixture(scope="module")
def policy():
    torch.manual_seed(0)
    return TinyTransformer().eval()


# ----------------------------------------------------------------------------- diagnostics by hand
def test_baseline_diagnostics_match_a_loop():
    scores = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])  # two groups of 3
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    values = torch.tensor(
        [[0.5, 0.2, 9.0], [0.1, 9.0, 9.0], [0.3, 0.3, 0.3], [0.0, 1.0, 9.0], [0.7, 9.0, 9.0], [1.0, 1.0, 1.0]]
    )
    advantages, returns = gae(shaped_rewards(scores, torch.zeros(6, 3), mask, 0.0), values, mask)
    got = race.baseline_diagnostics(returns, advantages, mask, group_size=3)
    tokens = [(i, t) for i in range(6) for t in range(3) if mask[i, t]]

    def others_mean(i):
        group = range(3 * (i // 3), 3 * (i // 3) + 3)
        return np.mean([float(scores[j]) for j in group if j != i])

    want_value = np.mean([float(scores[i] - values[i, t]) ** 2 for i, t in tokens])
    want_none = np.mean([float(scores[i]) ** 2 for i, t in tokens])
    want_loo = np.mean([(float(scores[i]) - others_mean(i)) ** 2 for i, t in tokens])
    assert got["adv_sq_value"] == pytest.approx(want_value, rel=1e-6)
    assert got["adv_sq_none"] == pytest.approx(want_none, rel=1e-6)
    assert got["adv_sq_loo"] == pytest.approx(want_loo, rel=1e-6)
    assert math.isnan(race.baseline_diagnostics(returns, advantages, mask, group_size=1)["adv_sq_loo"])


def test_ratio_diagnostics_count_both_sides_and_skip_padding():
    ratios = torch.tensor([[0.5, 0.9, 1.1, 1.5, 100.0]])
    mask = torch.tensor([[True, True, True, True, False]])
    outside, abs_log = race.ratio_diagnostics(ratios.log(), torch.zeros(1, 5), mask, clip_eps=0.2)
    assert outside == pytest.approx(2 / 4)
    assert abs_log == pytest.approx(np.mean(np.abs(np.log([0.5, 0.9, 1.1, 1.5]))), rel=1e-5)
    assert race.ratio_diagnostics(ratios.log(), torch.zeros(1, 5), mask, clip_eps=1e6)[0] == 0.0


# ----------------------------------------------------------------------------- the instrumented loop
@pytest.mark.parametrize("algo, epochs", [("ppo", 2), ("grpo", 2)])
def test_race_loop_reproduces_train_rl_and_adds_diagnostics(policy, algo, epochs):
    cfg = RLConfig(algo=algo, epochs_per_batch=epochs, **TINY)
    plain = train_rl(cfg, policy=policy, progress=False)
    seen = []
    ours = race.train_race(cfg, progress=False, policy=policy, on_step=lambda s, n, h: seen.append((s, n, len(h))))
    assert seen == [(1, 2, 1), (2, 2, 2)]
    for a, b in zip(plain.history, ours.history):
        for key in a:
            if not key.endswith("_s"):
                assert a[key] == b[key] or (a[key] != a[key] and b[key] != b[key]), key
        assert len(b["ratio_outside_per_update"]) == epochs == len(b["abs_log_ratio_per_update"])
        assert b["ratio_outside_per_update"][0] == 0.0  # the first update is on-policy: ratio exactly 1
    if algo == "ppo":
        first = ours.history[0]
        assert first["value_mean"] == 0.0
        assert first["adv_sq_value"] == pytest.approx(first["adv_sq_none"])  # value 0: the baseline does nothing
    assert ours.timing["total_s"] == pytest.approx(ours.timing["sampling_s"] + ours.timing["training_s"])
    assert all(h["sampling_cpu_s"] > 0 and h["training_cpu_s"] > 0 for h in ours.history)


def test_a_plain_run_is_notebook_03s_run_with_its_only_ratio_at_one(monkeypatch, tmp_path):
    """GRPO-1 (one update, no value model) is read from `rlvr.train.run`'s cache entry, the run notebook 03 trains:
    the same numbers as the race's instrumented loop, whose only ratio per step is exactly 1."""
    from rlvr import train

    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    cfg = race.race_config("GRPO-1", 2, 0, prompts_per_step=4, group_size=4)
    assert race.is_plain_run(cfg) and race.cache_entry(cfg) == train.cache_entry(cfg)
    assert not race.is_plain_run(race.race_config("GRPO-8", 2)) and not race.is_plain_run(RLConfig(algo="ppo"))
    instrumented = race.train_race(cfg, progress=False)
    ours = race.race_run(cfg, progress=False)
    assert not ours.from_cache and train.run(cfg, progress=False).from_cache  # trained once, as notebook 03's run
    for run in (ours, race.stored(cfg)):
        for a, b in zip(instrumented.history, run.history, strict=True):
            assert set(a) == set(b)
            for key in a:
                if not key.endswith("_s"):
                    assert a[key] == b[key] or (a[key] != a[key] and b[key] != b[key]), key
    assert all(h["sampling_cpu_s"] > 0 and h["training_cpu_s"] > 0 for h in ours.history)


def test_clip_fraction_never_exceeds_ratio_outside_band():
    from rlvr.sft import warm_up

    cfg = RLConfig(algo="grpo", epochs_per_batch=3, lr=1e-2, **TINY)
    run = race.train_race(cfg, progress=False, policy=warm_up().model)  # warm-up: some answers are right
    clipped = race.per_update(run, "clip_fraction_per_update")  # [steps, updates]
    outside = race.per_update(run, "ratio_outside_per_update")  # [steps, updates]
    assert clipped.shape == outside.shape == (2, 3)
    assert (clipped <= outside + 1e-7).all()  # clipped tokens are a subset of the tokens outside the band
    assert outside[:, 1:].max() > 0  # lr 1e-2 moves the ratio


# ----------------------------------------------------------------------------- configurations
def test_configs_share_cache_keys_with_the_package_defaults():
    assert race.race_config("PPO-8", steps=200) == RLConfig(algo="ppo")
    assert race.race_config("GRPO-1", steps=200) == RLConfig(algo="grpo")
    assert race.race_config("GRPO-8", steps=200).epochs == 8
    assert race.panel_config("grpo", 1e-4, 0.35, 1, steps=200) == RLConfig(algo="grpo")  # 1 update: eps irrelevant
    assert race.panel_config("ppo", 1e-4, 0.2, 8, steps=200) == RLConfig(algo="ppo")
    assert race.panel_config("grpo", 1e-4, 0.2, 8, steps=200) == race.race_config("GRPO-8", steps=200)
    assert race.panel_config("grpo", 1e-3, 0.2, 8, steps=200).lr == 1e-3
    assert race.race_config("GRPO-8", steps=5, clip_eps=race.NO_CLIP_EPS).clip_eps == 1e6


def test_values_from_key_inverts_config_key():
    values = {"algo": "ppo", "lr": 3e-4, "clip_eps": 0.35, "updates": 3}
    assert frace.values_from_key(config_key(values)) == values


# ----------------------------------------------------------------------------- reading curves
def test_smooth_is_a_trailing_moving_average_that_starts_where_the_run_starts():
    x = np.array([0.0, 1, 2, 3, 10])
    assert smooth(x, 3) == pytest.approx([0, 0.5, 1, 2, 5])


def test_first_crossings():
    x = np.array([0.0, 0, 0, 1, 1, 1, 1])
    assert first_step(smooth(x, 1) >= 0.5) == 3
    assert first_step(smooth(x, 3) >= 0.5) == 4  # smoothed: [0, 0, 0, 1/3, 2/3, 1, 1]
    assert first_step(smooth(x, 3) >= 2.0) is None
    assert first_step(np.array([1.0, 1, 0, 0]) < np.array([1.0, 0.5, 0.5, 0.5]), start=1) == 2
    assert first_step(np.array([True, False, True]), start=1) == 2 and first_step([], start=0) is None


def fake_run(cot, seconds=(1.0, 0.5), **extra):
    """A race run with a given think-first curve, constant CPU step times (wall-clock 3x that) and extra keys."""
    history = [
        {
            "cot_fraction": c,
            "accuracy": c / 2,
            "sampling_s": 3 * seconds[0],
            "training_s": 3 * seconds[1],
            "sampling_cpu_s": seconds[0],
            "training_cpu_s": seconds[1],
            **{k: v[i] for k, v in extra.items()},
        }
        for i, c in enumerate(cot)
    ]
    return RunResult(RLConfig(steps=len(cot)), history)


def test_wall_clock_and_seconds_to_think():
    run = fake_run([0.0] * 3 + [0.9] * 7)
    assert race.clock(run, "cpu") == pytest.approx([1.0 + 1.5 * i for i in range(10)])
    assert race.clock(run, "wall") == pytest.approx([3.0 + 4.5 * i for i in range(10)])
    assert race.steps_to_think(run) == 7  # trailing means of 5: 0.54 at step 5, 0.72 at step 6, 0.9 at step 7
    assert race.seconds_to(run) == pytest.approx(race.clock(run, "cpu")[7])
    assert race.seconds_to(run, kind="wall") == pytest.approx(race.clock(run, "wall")[7])
    assert race.steps_to(run, "accuracy", 0.4) == 7 and race.seconds_to(run, "accuracy", 0.5) is None


def test_measurements_and_rows():
    ppo = fake_run(
        [0.0, 1, 1, 1, 1, 1],
        seconds=(1.0, 2.0),
        value_mean=[0.0] * 6,
        adv_sq_value=[0.5, 0.5, 0.1, 0.1, 0.1, 0.1],
        adv_sq_none=[0.5] * 6,
        adv_sq_loo=[0.2] * 6,
    )
    grpo1 = fake_run([0.0, 0, 0, 0, 1, 1, 1, 1], seconds=(1.0, 0.1))
    grpo8 = fake_run([0.0, 0, 1, 1, 1, 1], seconds=(1.0, 1.0))
    m = race.race_measurements({"PPO-8": ppo, "GRPO-1": grpo1, "GRPO-8": grpo8})
    assert m["speedup_ppo_vs_grpo1"] == pytest.approx(m["steps_GRPO-1"] / m["steps_PPO-8"])
    assert m["training_s_ratio_ppo_grpo8"] == pytest.approx(2.0)
    rows = story.rows_from([m, {**m, "steps_PPO-8": m["steps_PPO-8"] + 2}], seeds=(0, 1))
    by_figure = {r.figure: r for r in rows}
    assert by_figure["PPO value prediction at step 0 (mean, 1st answer token)"].agrees is True
    row = next(r for r in rows if r.figure.endswith("think-first share, PPO-8"))
    assert row.measured == pytest.approx(m["steps_PPO-8"] + 1) and row.spread == pytest.approx(math.sqrt(2))
    assert all(r.section == "3" for r in rows)
    undefined = next(r for r in rows if r.figure == "accuracy at step 25, PPO-8")  # a 6-step run has no step 25
    assert undefined.measured is None and "not defined in 6 steps" in undefined.note
    from rlvr.experiments.common import markdown_table

    assert "nan" not in markdown_table(rows)


def race_of_fakes():
    """Think-first curves whose trailing 5-step means reach 80% at step 5 (PPO-8, GRPO-8) and 7 (GRPO-1), e.g.
    steps 3-7 of GRPO-1 average (0 + 1 + 1 + 1 + 1) / 5; CPU seconds per step 3.0, 1.1 and 2.0."""
    return {
        "PPO-8": fake_run([0.0, 0, 1, 1, 1, 1, 1, 1], seconds=(1.0, 2.0), value_cpu_s=[0.8] * 8),
        "GRPO-1": fake_run([0.0, 0, 0, 0, 1, 1, 1, 1], seconds=(1.0, 0.1)),
        "GRPO-8": fake_run([0.0, 0, 1, 1, 1, 1, 1, 1], seconds=(1.0, 1.0)),
    }


def test_race_table_says_how_steps_are_read_and_marks_a_column_a_short_run_cannot_fill():
    table = story.race_table(race_of_fakes())
    assert "| PPO-8 | 5 |" in table and "| GRPO-1 | 7 |" in table
    assert "mean over its last 5 steps" in table
    assert "| — |" in table and "fewer than 26 steps" in table  # accuracy at step 25 of an 8-step run
    assert "nan" not in table.lower()
    full = {name: fake_run([1.0] * 30) for name in ("PPO-8", "GRPO-1")}
    assert "—" not in story.race_table(full)


def test_race_summary_prints_the_ratios_the_prose_reads():
    text = story.race_summary_text(race_of_fakes())
    assert "steps to 80% think-first: PPO-8 5, GRPO-1 7, GRPO-8 5" in text
    assert "GRPO-1 / PPO-8 = 1.4x" in text and "GRPO-8 / PPO-8 = 1.0x" in text
    assert "training CPU time per step, as a multiple of GRPO-1's: PPO-8 20.0x, GRPO-8 10.0x" in text
    assert (
        "of PPO-8's training CPU time per step, the value model takes 0.800 s (0.8x GRPO-8's step) and the policy's "
        "updates 1.200 s (1.2x: a backward pass over every answer" in text
    )
    assert "of PPO-8's" not in story.race_summary_text({k: v for k, v in race_of_fakes().items() if k != "GRPO-8"})
    assert "median" not in text and "all 8 steps" not in text  # a per-step cost, no timing method in the lesson
    never = {**race_of_fakes(), "GRPO-1": fake_run([0.0] * 8)}
    assert "GRPO-1 not reached" in story.race_summary_text(never) and "= n/a" in story.race_summary_text(never)


def test_race_summary_prints_each_grpo_runs_share_of_all_equal_groups_early_and_overall(monkeypatch):
    runs = race_of_fakes()
    runs["PPO-8"] = RunResult(RLConfig(algo="ppo", steps=8), runs["PPO-8"].history)  # a value baseline: none left out
    for name, shares in (("GRPO-1", [0.0] * 4 + [1.0] * 4), ("GRPO-8", [0.5] * 4 + [1.0] * 4)):
        for h, share in zip(runs[name].history, shares):
            h["all_same_group_fraction"] = share
    monkeypatch.setattr(story, "EARLY_STEPS", 4)
    line = next(x for x in story.race_summary_text(runs).splitlines() if x.startswith("all-equal groups"))
    assert line.endswith("over steps 0-3 / over all steps: GRPO-1 0% / 50%, GRPO-8 50% / 75%")
    assert "PPO-8" not in line


def test_step_and_seconds_text():
    assert story.step_text(3) == "3" and story.step_text(None, 30) == "not reached in 30 steps"
    assert [story.seconds_text(x) for x in (2.44, 51.2, 190.0)] == ["2.4 s", "51 s", "3.2 min"]


def test_clip_summary_reads_the_last_update_and_the_peak_step():
    run = fake_run(
        [0.5] * 3,
        clip_fraction=[0.01, 0.03, 0.02],
        clip_fraction_per_update=[[0, 0.01]] * 3,
        abs_log_ratio_per_update=[[0, 0.004], [0, 0.006], [0, 0.005]],
    )
    summary = race.clip_summary(run)
    assert summary["last_update"] == pytest.approx(0.01)
    assert summary["abs_log_ratio_last_update"] == pytest.approx(0.005)
    assert (summary["peak"], summary["peak_step"]) == (pytest.approx(0.03), 1)


def test_train_runs_says_which_runs_trained_and_which_came_from_the_cache(capsys):
    def runner(cfg, on_step=None, progress=True):
        assert progress is False  # no tqdm bar: the line says it all
        run = fake_run([0.5] * cfg.steps)
        run.from_cache = cfg.seed >= 1
        run.timing = {"total_s": 12.0, **({"total_cpu_s": 20.0} if cfg.seed == 2 else {})}
        for step in range(1, cfg.steps + 1):
            on_step(step, cfg.steps, run.history)
        return run

    configs = {"A": RLConfig(steps=3, seed=0), "B": RLConfig(steps=3, seed=1), "C": RLConfig(steps=3, seed=2)}
    results = widgets.train_runs(configs, runner)
    out = capsys.readouterr().out.splitlines()
    assert list(results) == ["A", "B", "C"] and len(out) == 3
    assert out[0].startswith("A: 3 steps, trained now in ") and out[0].endswith(" s")
    assert out[1] == "B: 3 steps, loaded from disk (training took 12 s when it ran)"  # a run that kept no CPU time
    assert out[2] == "C: 3 steps, loaded from disk (training it took 20 s of processor time)"  # what it cost


# ----------------------------------------------------------------------------- costs
def test_cost_table_uses_notebook_02s_memory_accounting():
    table = story.cost_table(70_000, 64)
    assert "| 238 GB |" in table  # PPO with a verifier: 16 B x (policy + value) + 2 B x reference, 7B each
    assert "| 126 GB |" in table  # GRPO with a verifier: the lecture's 126 GB


def test_value_model_doubles_the_trained_parameters(policy):
    from rlvr.model import ValueModel

    n = policy.num_parameters()
    value = sum(p.numel() for p in ValueModel(policy).parameters())
    assert race.trained_parameters("ppo", n, policy.cfg.d_model) == n + value
    assert race.trained_parameters("grpo", n, policy.cfg.d_model) == n
    assert "PPO" in story.cost_table(n, policy.cfg.d_model)


# ----------------------------------------------------------------------------- plots and the panel
def test_plots_draw_something_on_every_axes(tmp_path):
    """Each of notebook 04's figures, drawn from fake runs: every axes holds drawn data (lines, markers, bars), and
    every run's curve appears where the figure overlays the runs."""
    from rlvr.widgets import new_figure

    ppo = fake_run(
        [0.2, 0.5, 0.9],
        value_mean=[0, 0.1, 0.2],
        value_loss=[0.2, 0.1, 0.05],
        reward=[0.2, 0.3, 0.4],
        adv_sq_value=[0.2, 0.1, 0.1],
        adv_sq_none=[0.2] * 3,
        adv_sq_loo=[0.15] * 3,
        clip_fraction=[0.0, 0.1, 0.1],
        clip_fraction_per_update=[[0, 0.1]] * 3,
        ratio_outside_per_update=[[0, 0.2]] * 3,
        abs_log_ratio_per_update=[[0, 0.05]] * 3,
    )
    ppo.config = RLConfig(algo="ppo", steps=3, epochs_per_batch=2)
    runs = {"PPO-8": ppo, "GRPO-1": fake_run([0.2, 0.3, 0.4])}
    cases = (  # figure, what it draws, the runs whose curves it shows (plot_clipping: multi-update runs only)
        (frace.plot_race, runs, runs),
        (frace.plot_value, ppo, ()),
        (frace.plot_clipping, runs, ("PPO-8",)),
        (frace.plot_no_clip, {"a": ppo, "b": ppo}, ("a", "b")),
    )
    for draw, arg, shown in cases:
        fig = new_figure()
        draw(fig, arg)
        fig.savefig(tmp_path / "x.png")
        empty = [i for i, ax in enumerate(fig.axes) if not ax.has_data()]
        assert fig.axes and empty == [], (draw.__name__, empty)
        labels = [line.get_label() for ax in fig.axes for line in ax.lines]
        missing = [name for name in shown if not any(label.startswith(name) for label in labels)]
        assert missing == [], (draw.__name__, missing)


def visible_labels(axis) -> list[str]:
    """The tick labels an axis shows inside its view limits (after a draw)."""
    low, high = sorted(axis.get_view_interval())
    return [
        tick.get_text()
        for tick, value in zip(axis.get_ticklabels(), axis.get_ticklocs())
        if tick.get_text() and low <= value <= high
    ]


def test_figures_use_the_module_palette_a_log_cpu_axis_and_readable_log_axes():
    from rlvr.figures.palette import ALGO_COLORS, knob_color
    from rlvr.widgets import new_figure

    n = 40
    runs = {
        name: fake_run([0.5] * n, seconds=seconds)
        for name, seconds in (("PPO-8", (0.05, 0.9)), ("GRPO-1", (0.05, 0.05)), ("GRPO-8", (0.05, 0.45)))
    }
    fig = new_figure((11, 6.5))
    frace.plot_race(fig, runs)
    colours = {line.get_label(): line.get_color() for line in fig.axes[0].lines if not line.get_label().startswith("_")}
    assert colours["PPO-8"] == ALGO_COLORS["ppo"] and colours["GRPO-1"] == ALGO_COLORS["grpo"]
    assert colours["GRPO-8"] == knob_color(0)  # one knob (updates per batch) away from GRPO-1
    assert len(set(colours.values())) == 3
    first = {
        line.get_label(): line.get_ydata()[0] for line in fig.axes[0].lines if not line.get_label().startswith("_")
    }
    assert first["PPO-8"] == pytest.approx(0.25)  # trailing average: each curve starts at its run's step 0
    assert fig.axes[1].get_xscale() == "log" and fig.axes[0].get_xscale() == "linear"
    rng = np.random.default_rng(0)
    reward = np.clip(0.9 + 0.02 * rng.standard_normal(n), 0, 1)
    ppo = fake_run(
        [0.5] * n,
        value_mean=list(reward),
        reward=list(reward),
        value_loss=list(reward * (1 - reward)),
        adv_sq_value=[0.08] * n,
        adv_sq_none=[0.9] * n,
        adv_sq_loo=[0.09] * n,
    )
    fig = new_figure((11, 6.5))
    frace.plot_value(fig, ppo)
    fig.canvas.draw()
    loss_axes = fig.axes[1]
    assert loss_axes.get_yscale() == "log" and len(visible_labels(loss_axes.yaxis)) >= 2  # less than a decade
    assert len(visible_labels(fig.axes[2].yaxis)) >= 3
    ratio = fig.axes[3].lines[0].get_ydata()
    assert ratio[n // 2] == pytest.approx(0.08 / 0.09)
    levels = sorted(float(line.get_ydata()[0]) for line in fig.axes[3].lines[1:])
    assert levels == pytest.approx([7 / 8, 1.0])  # a value model knowing each p, RLOO's (not the group mean's (7/8)^2)
    low, high = fig.axes[3].get_ylim()
    assert low < 7 / 8 and 1.0 < high < 1.5  # zoomed on the levels and the curve
    styles = {line.get_color(): line.get_linestyle() for line in fig.axes[2].lines}
    assert styles[ALGO_COLORS["ppo"]] != styles[ALGO_COLORS["rloo"]]  # never red against green by colour alone


def test_panel_plot_redrawn_on_its_reused_axes_looks_like_a_new_one():
    from rlvr.widgets import redraw_differences

    default, other = fake_run([0.2, 0.5, 0.9], clip_fraction=[0.0, 0.1, 0.1]), fake_run([0.1, 0.2, 0.6])
    live = fake_run([0.1, 0.3]).history
    calls = [
        ({"GRPO-8 (default)": default}, None),
        ({"GRPO-8 (default)": default}, live),
        ({"GRPO-8 (default)": default, "PPO-8": other}, None),
    ]
    assert redraw_differences(frace.plot_panel, calls, (11, 3.4)) == []


def test_panel_trains_through_race_run_and_overlays_on_the_default(monkeypatch):
    calls = []

    def fake_race_run(cfg, on_step=None, progress=True):
        calls.append(cfg)
        run = fake_run([0.5] * cfg.steps, clip_fraction=[0.1] * cfg.steps)
        if on_step is not None:
            on_step(cfg.steps, cfg.steps, run.history)
        return run

    monkeypatch.setattr(frace, "race_run", fake_race_run)  # the panel calls the names it imported
    monkeypatch.setattr(frace, "stored", lambda cfg: None)
    default = fake_run([0.4] * 3, clip_fraction=[0.0] * 3)
    panel = frace.epsilon_panel(default_result=default, steps=3)
    assert panel.error is None and len(panel.results) == 1
    assert type(panel.controls["algo"]).__name__ == "ToggleButtons" and panel.controls["algo"].label == "GRPO"
    panel.controls["clip_eps"].value = 0.5
    panel.controls["updates"].value = 4
    panel.controls["lr"].value = 1e-3
    assert panel.click_run() is not None and panel.error is None
    assert calls[-1].clip_eps == 0.5 and calls[-1].epochs == 4 and calls[-1].steps == 3 and calls[-1].lr == 1e-3
    assert len(panel.shown_results()) == 2


def test_a_short_run_is_read_from_the_cached_full_run(monkeypatch):
    full = fake_run([min(1.0, i / 20) for i in range(200)])
    monkeypatch.setattr(race, "stored", lambda cfg: full if cfg.steps == race.STEPS else None)
    monkeypatch.setattr(race, "train_race", lambda *args, **kwargs: pytest.fail("should not train"))
    short = race.race_run(RLConfig(steps=30, epochs_per_batch=8))
    assert short.history == full.history[:30] and short.config.steps == 30
    assert short.timing["total_cpu_s"] == pytest.approx(30 * 1.5)
    assert short.timing["total_s"] == pytest.approx(30 * 4.5)
    assert race.steps_to_think(short) == race.steps_to_think(full) == 18  # (t - 2) / 20 >= 0.8


# ----------------------------------------------------------------------------- what the notebook prints
def test_summary_compares_ppo_with_grpo8_and_names_the_cheapest_run_per_cpu_second():
    text = story.race_summary_text(race_of_fakes())
    assert "(PPO-8 / GRPO-8 = 2.0x)" in text  # 2.0 s against 1.0 s of training per step
    assert "CPU time to 80% think-first: PPO-8 16 s, GRPO-1 8.7 s, GRPO-8 11 s   (least: GRPO-1)" in text


def test_value_text_reads_the_value_model_from_the_history():
    ppo = fake_run(
        [0.5] * 4,
        value_mean=[0.0, 0.3, 0.4, 0.4],
        reward=[0.2, 0.35, 0.4, 0.5],
        adv_sq_value=[0.5, 0.1, 0.1, 0.3],
        adv_sq_none=[0.5] * 4,
        adv_sq_loo=[0.2, 0.2, 0.0, 0.2],  # step 2: every group's rewards all equal
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division by zero
        text = story.value_text(ppo)
    assert "value prediction at step 0: 0   (mean reward of that batch: 0.200)" in text
    assert "value prediction at step 1: 0.300   (mean reward of that batch: 0.350)" in text
    assert "steps 1-3 (1 left out: every group's rewards all equal): median 1.00, below 1 at 50%" in text
    assert "nan" not in text


def test_the_group_mean_advantage_is_seven_eighths_of_leave_one_out():
    from rlvr.sft import warm_up

    scales = race.mean_vs_leave_one_out(warm_up(0.1, 0).model, n_prompts=8, group_size=8, seed=0)
    assert len(scales.ratios) + scales.n_all_equal == scales.n_answers == 64 and len(scales.ratios) > 0
    np.testing.assert_allclose(scales.ratios, 7 / 8, rtol=1e-6)
    assert scales.mean_sq_ratio == pytest.approx((7 / 8) ** 2, rel=1e-6)
    text = story.baseline_scales_text(scales)
    assert "from 0.8750 to 0.8750" in text and "0.7656" in text


def test_clip_and_no_clip_texts_compare_with_the_edge_and_between_runs():
    run = fake_run(
        [0.0, 1, 1, 1, 1, 1, 1, 1, 1, 1],
        clip_fraction=[0.01] * 10,
        clip_fraction_per_update=[[0, 0.01]] * 10,
        abs_log_ratio_per_update=[[0, 0.01]] * 10,
    )
    run.config = RLConfig(steps=10, epochs_per_batch=2)
    text = story.clip_text({"GRPO-8": run, "GRPO-1": fake_run([0.5] * 10)})
    assert "GRPO-1" not in text and "0  1.00%" in text and "log(1 + clip_eps) = 0.1823" in text
    other = fake_run(
        [0.0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
        clip_fraction=[0.0] * 10,
        clip_fraction_per_update=[[0, 0.0]] * 10,
        abs_log_ratio_per_update=[[0, 0.02]] * 10,
    )
    text = story.no_clip_text({"with": run, "without": other})
    assert "steps to 80% think-first: 4 with the clip, 5 without" in text
    assert "largest gap between the two smoothed accuracy curves: 25.0 points (step 1)" in text
    assert "(2.00x)" in text and "nan" not in text


def test_lecture_and_us_puts_each_statement_of_section_three_next_to_the_runs():
    runs = race_of_fakes()
    runs["PPO-8"] = fake_run(
        [0.0, 0, 1, 1, 1, 1, 1, 1],
        seconds=(1.0, 2.0),
        value_mean=[0.0] * 8,
        adv_sq_value=[0.5, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
        adv_sq_none=[0.5] * 8,
        adv_sq_loo=[0.2] * 8,
        value_cpu_s=[0.5] * 8,
    )
    table = story.lecture_and_us(runs, n_policy=1000, d_model=10)
    assert "PPO-8 5, GRPO-1 7 (1.4x PPO-8's)" in table and "GRPO-8 5 (1.0x PPO-8's)" in table
    assert "value at step 0: 0 |" in table and "from step 1" in table
    assert "2,011 (PPO) against 1,000 (GRPO)" in table and "PPO-8 2.0x GRPO-8's, its value model alone 0.5x" in table
    assert "| 252 GB and 126 GB by the same accounting (notebook 02) |" in table
    assert "nan" not in table.lower() and "band" not in table


def test_panel_draws_the_default_run_in_black_and_the_others_in_one_knob_colours():
    from rlvr.figures.palette import COLORS, knob_color
    from rlvr.widgets import new_figure

    fig = new_figure((11, 3.4))
    results = {
        "GRPO-8, lr 0.0001, clip_eps 0.2 (default)": fake_run([0.5] * 3, clip_fraction=[0.0] * 3),
        "GRPO-8, lr 0.001, clip_eps 0.2": fake_run([0.6] * 3, clip_fraction=[0.1] * 3),
    }
    frace.plot_panel(fig, results, live=fake_run([0.1] * 2).history)
    colours = [line.get_color() for line in fig.axes[0].lines]
    assert colours == [COLORS["exact"], knob_color(frace.PANEL_FIRST_KNOB), knob_color(frace.PANEL_FIRST_KNOB + 1)]
    assert fig.axes[0].lines[-1].get_linestyle() == ":"  # the run in progress


def test_cpu_clock_ignores_a_load_spike_but_follows_a_trend():
    run = fake_run([0.5] * 20)
    spiked = fake_run([0.5] * 20)
    spiked.history[6]["sampling_cpu_s"] = 50.0  # one step slowed by another job
    spiked.history[6]["sampling_s"] = 150.0
    assert race.clock(spiked, "cpu") == pytest.approx(race.clock(run, "cpu"))
    assert race.clock(spiked, "wall")[-1] > race.clock(run, "wall")[-1] + 100
    longer = fake_run([0.5] * 20)
    for i, h in enumerate(longer.history):  # responses grow longer: sampling gets dearer step by step
        h["sampling_cpu_s"] = 1.0 + 0.1 * i
    steps = np.diff(race.clock(longer, "cpu"))
    assert np.all(steps > 0) and steps[-1] > steps[0] + 1.0


def test_rolling_median():
    assert race.rolling_median(np.array([1.0, 9.0, 1.0, 1.0, 2.0]), 3) == pytest.approx([5.0, 1.0, 1.0, 1.0, 1.5])


def test_the_setup_plan_lists_the_races_grpo_1_once_under_notebook_03s_name():
    configs = {name: race.race_config(name, 200, 0) for name in race.RACE}
    ratio = {algo: RLConfig.replicate(0, algo=algo, steps=200) for algo in ("grpo", "gspo", "cispo")}
    text = story.first_run_text(configs, ratio)
    assert text.count("GRPO-1 (notebook 03's run)") == 1 and "GRPO-1:" not in text
    assert all(name in text for name in ("PPO-8", "GRPO-8", "GSPO", "CISPO"))


def test_the_no_clip_gap_is_read_against_the_two_points_of_noise_one_gap_carries():
    assert story.gap_reading(2.0).startswith("within twice the 2 points")
    assert story.gap_reading(4.0).startswith("within")
    assert story.gap_reading(4.1).startswith("two to three times") and story.gap_reading(6.0).startswith("two to three")
    assert story.gap_reading(6.1).startswith("over three times")


def test_per_step_reading_says_whether_eight_updates_explain_ppos_lead():
    def steps(ppo, grpo1, grpo8):
        return {"PPO-8": ppo, "GRPO-1": grpo1, "GRPO-8": grpo8}

    lead = [steps(6, 21, 5), steps(11, 54, 13)]  # notebook 04's numbers: GRPO-8 0.8x and 1.2x, GRPO-1 3.5x and 4.9x
    assert "GRPO-8 keeps PPO-8's pace on both levels (within 1.5x) and GRPO-1 does not" in story.per_step_reading(lead)
    part = [steps(6, 21, 5), steps(11, 54, 20)]  # 1.8x on the second level
    assert "explain only part of PPO-8's lead" in story.per_step_reading(part)
    none = [steps(6, 8, 5), steps(11, 54, 13)]  # GRPO-1 within 1.5x on the first level
    assert "PPO-8 has no clear lead" in story.per_step_reading(none)
    never = [steps(6, None, 5), steps(11, 54, 13)]
    assert "cannot be compared" in story.per_step_reading(never)
    assert "cannot be compared" in story.per_step_reading([steps(0, 21, 5), steps(11, 54, 13)])  # a ratio to 0
