"""Notebook 06's gallery of broken runs: each bug does what it says, each run shows its symptom on three seeds, and the
failure signatures fire on the runs that should trigger them and never on the healthy one."""

import math

import numpy as np
import pytest
import torch

from rlvr import signals
from rlvr.experiments import gallery
from rlvr.narration import gallery as story
from rlvr.figures import gallery as figs
from rlvr.model import Rollout
from rlvr.runs import RunResult
from rlvr.task import STOP_ID, encode
from rlvr.train import Batch

SEEDS = (0, 1, 2)


def batch(rewards, responses=None) -> Batch:
    """A Batch of given rewards (groups of 4) and, optionally, responses."""
    rewards = torch.tensor(rewards, dtype=torch.float32)
    responses = torch.zeros(len(rewards), 3, dtype=torch.long) if responses is None else responses
    mask = torch.tensor([[True, True, False]] * len(rewards))
    rollout = Rollout(torch.zeros(len(rewards), 11, dtype=torch.long), responses, torch.zeros(len(rewards), 3), mask)
    return Batch(rollout, {}, rewards, advantages=rewards - 0.5)


def test_each_bug_edits_what_the_trainer_computed():
    b = batch([1.0, 0, 0, 0, 1, 1, 1, 1])
    gallery.FlippedSign().after_advantages(b)
    assert torch.equal(b.advantages, 0.5 - b.rewards)
    gallery.ForgottenMask().after_rollout(b)
    assert bool(b.rollout.response_mask.all())
    gallery.StdWithoutEpsilon(group_size=4).after_advantages(b)
    assert torch.allclose(b.advantages[:4], torch.tensor([3.0, -1, -1, -1]) / math.sqrt(3))  # (1 - 1/4) / std
    assert bool(torch.isnan(b.advantages[4:]).all())  # an all-equal group: 0 / 0


def test_the_loophole_verifier_pays_for_the_right_digit_anywhere_before_the_stop():
    prompts = torch.tensor([[1, 2, 3, 0, 0, 0, 0, 0, 0, 0]] * 4)  # the answer is 6
    texts = ["#6$", "01234567", "#5$6", "[1369999999]#9$"]
    responses = torch.tensor([encode(t.ljust(16, "."))[:16] for t in texts])
    got = gallery.digit_anywhere_reward(prompts, responses)
    assert got.tolist() == [1.0, 1.0, 0.0, 1.0]  # after '$' does not count; a wrong final digit does not matter
    assert responses[2, 3] == 6 and responses[2, 2] == STOP_ID


def test_the_table_names_what_the_package_has():
    for bounds in gallery.SYMPTOMS.values():  # each reading names the signals it reads (the second-signal checker)
        assert all(set(bound.signals) <= set(signals.SIGNAL_NAMES) for bound in bounds)
    for name, b in gallery.BREAKAGES.items():
        assert b.bug is None or b.bug in gallery.HOOKS
        assert name in gallery.SYMPTOMS
        if name not in gallery.NOT_BROKEN:
            assert b.signal and b.symptom and b.cause and b.fix
            cfg = gallery.gallery_config(name)
            assert cfg.steps == b.steps and all(getattr(cfg, k) == v for k, v in b.overrides.items())
    assert set(gallery.MYSTERIES.values()) <= set(gallery.BREAKAGES) - set(gallery.NOT_BROKEN)
    assert set(gallery.LOOKALIKES) == set(gallery.MYSTERIES.values())
    assert all(set(runs) <= set(gallery.BREAKAGES) - set(gallery.NOT_BROKEN) for runs in gallery.LOOKALIKES.values())


@pytest.mark.claims
@pytest.mark.parametrize("name", list(gallery.BREAKAGES))
def test_every_run_shows_its_symptom_with_margin_on_three_seeds(name):
    """The sentence notebook 06 says of each run holds on every seed, and clears its limits by the margins of
    gallery.Bound (5 points of a share, a factor of 2 of a KL or a norm): true on this machine's roundings and, by the
    margin, on another's (CI runs this test again under ATEN_CPU_CAPABILITY=default and one thread)."""
    for seed in SEEDS:
        run, healthy = gallery.gallery_run(name, seed), gallery.gallery_run("healthy", seed)
        assert gallery.shows_symptom(name, run, healthy), (name, seed, story.reading(run, healthy))
        weak = gallery.symptom_margins(name, run, healthy)
        assert not weak, (name, seed, weak)


SECOND_SIGNALS = {  # notebook 06's model answer to "the second signal" (its solution names both signals of B)
    "A": (("lr_too_high", "malformed_fraction"), ("from_scratch", "malformed_fraction")),
    "B": (("greedy_sampling", "all_same_group_fraction"), ("greedy_sampling", "grad_norm")),
    "C": (("lr_too_high", "malformed_fraction"),),
}


@pytest.mark.claims
@pytest.mark.parametrize("mystery", list(gallery.MYSTERIES))
def test_every_mystery_run_shows_its_breakage_with_margin(mystery):
    """Notebook 06's exercise: each mystery run (RL seed MYSTERY_SEED, from the warm-up of the notebook's SEED) shows
    the symptom of the breakage it hides, against the healthy run of SEED, for SEED 0, 1 and 2."""
    name = gallery.MYSTERIES[mystery]
    for seed in SEEDS:
        run = gallery.gallery_run(name, gallery.MYSTERY_SEED, sft_seed=seed)
        healthy = gallery.gallery_run("healthy", seed)
        assert gallery.shows_symptom(name, run, healthy), (mystery, seed, story.reading(run, healthy))
        weak = gallery.symptom_margins(name, run, healthy)
        assert not weak, (mystery, seed, weak)
        for lookalike in gallery.LOOKALIKES[name]:  # the second signal the model answer reads
            assert gallery.rules_out(lookalike, run, healthy), (mystery, seed, lookalike)
        for lookalike, signal in SECOND_SIGNALS[mystery]:  # notebook 06's second-signal answer rules it out
            readings = gallery.ruling_readings(lookalike, signal, run, healthy)
            assert any(bound.short_of(value) for bound, value in readings), (mystery, seed, lookalike, readings)


def test_a_bound_rules_a_symptom_out_only_short_of_its_limit_by_the_margin():
    share = gallery.Bound("a share", lambda r, h: 0.0, True, 0.9, 0.05)
    assert share.short_of(0.84) and not share.short_of(0.86) and not share.short_of(0.95)
    low = gallery.Bound("a ratio", lambda r, h: 0.0, False, 0.5, 2.0, factor=True)
    assert low.short_of(1.1) and not low.short_of(0.9)
    exact = gallery.Bound("a norm", lambda r, h: 0.0, False, 1e-12, 0)
    assert exact.short_of(0.1) and not exact.short_of(0.0)


def test_a_bound_asks_for_its_margin_past_the_limit():
    share = gallery.Bound("a share", lambda r, h: 0.0, True, 0.9, 0.05)
    assert share.beyond(0.92) and not share.beyond(0.92, share.margin) and share.beyond(0.96, share.margin)
    kl = gallery.Bound("a KL", lambda r, h: 0.0, True, 0.02, 2.0, factor=True)
    assert kl.beyond(0.021) and not kl.beyond(0.021, kl.margin) and kl.beyond(0.041, kl.margin)
    low = gallery.Bound("a ratio", lambda r, h: 0.0, False, 0.5, 2.0, factor=True)
    assert low.beyond(0.4) and not low.beyond(0.4, low.margin) and low.beyond(0.2, low.margin)


SHOULD_WARN = {  # breakage -> the failure signature `python -m rlvr train` must warn about on it
    "std_without_epsilon": "nan",
    "greedy_sampling": "no_signal",
    "from_scratch": "no_signal",
    "loophole_verifier": "reward_hacking",
}
SILENT = ("healthy", "beta_too_large", "flipped_sign", "forgotten_mask")  # notebook 06: no detector flags these
# The detectors' limits moved by the margins of gallery.Bound (a share or a share's gap by 5 points, a count of steps
# or an entropy by a factor of 2): a run that should warn still does with every limit made harder to reach, and a run
# that should not still does not with every limit made easier to reach.
HARDER = {"NO_SIGNAL_SHARE": 0.95, "NO_SIGNAL_STEPS": 40, "ENTROPY_FLOOR": 0.01, "HACK_GAP": 0.2}
EASIER = {"NO_SIGNAL_SHARE": 0.85, "NO_SIGNAL_STEPS": 10, "ENTROPY_FLOOR": 0.04, "HACK_GAP": 0.1}


@pytest.mark.claims
def test_the_warnings_fire_where_they_should_and_nowhere_else_with_margin(monkeypatch):
    for seed in SEEDS:
        with monkeypatch.context() as m:
            for name, value in HARDER.items():
                m.setattr(signals, name, value)
            for name, signature in SHOULD_WARN.items():
                assert signature in gallery.signatures(gallery.gallery_run(name, seed)), (name, seed)
        with monkeypatch.context() as m:
            for name, value in EASIER.items():
                m.setattr(signals, name, value)
            for name in SILENT:
                assert gallery.signatures(gallery.gallery_run(name, seed)) == [], (name, seed)


PREFLIGHT_HARDER = {  # every preflight limit made harder to pass by a factor of 2 (the std's band halved)
    "PREFLIGHT_LOSS": 5e-4,
    "PREFLIGHT_KL": 0.005,
    "PREFLIGHT_ALL_EQUAL": 0.25,
    "PREFLIGHT_ADVANTAGE_STD": (0.75, 1.025),
}
PREFLIGHT_EASIER = {
    "PREFLIGHT_LOSS": 2e-3,
    "PREFLIGHT_KL": 0.02,
    "PREFLIGHT_ALL_EQUAL": 0.75,
    "PREFLIGHT_ADVANTAGE_STD": (0.25, 1.1),
}
PREFLIGHT_PASSES = ("healthy", "flipped_sign", "loophole_verifier")  # notebook 06: the healthy run and some broken ones
PREFLIGHT_FAILS = ("greedy_sampling", "forgotten_mask", "std_without_epsilon", "from_scratch")  # a bug from step 1


@pytest.mark.claims
def test_the_preflight_passes_the_healthy_run_and_some_broken_ones_and_fails_bugs_from_the_first_step(monkeypatch):
    """Notebook 06 §5: 'The healthy run passes, and so do some broken ones: a preflight catches a bug that is there
    from the first step'. With every limit twice as hard to pass the passing runs still pass; with every limit twice
    as easy the runs broken from step 1 still fail, on seeds 0-2."""
    for seed in SEEDS:
        with monkeypatch.context() as m:
            for name, value in PREFLIGHT_HARDER.items():
                m.setattr(signals, name, value)
            for name in PREFLIGHT_PASSES:
                run = gallery.gallery_run(name, seed)
                assert signals.preflight_text(run.history, run.config) == "passes", (name, seed)
        with monkeypatch.context() as m:
            for name, value in PREFLIGHT_EASIER.items():
                m.setattr(signals, name, value)
            for name in PREFLIGHT_FAILS:
                run = gallery.gallery_run(name, seed)
                assert signals.preflight_text(run.history, run.config) != "passes", (name, seed)


def test_a_gallery_run_is_cached_and_a_crash_keeps_the_history_before_it(monkeypatch, tmp_path):
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    first = gallery.gallery_run("std_without_epsilon", seed=0, steps=3)
    second = gallery.gallery_run("std_without_epsilon", seed=0, steps=3)
    assert not first.from_cache and second.from_cache and second.crash == first.crash
    assert first.crash.startswith("step 1: RuntimeError") and len(first.history) == 1
    assert np.isnan(first.history[0]["loss"]) and signals.nan_step(first.history) == 0


def fake_run(name: str, steps: int = 12, crash: str | None = None) -> RunResult:
    """A gallery run with a made-up history holding every signal the figures draw."""
    keys = [key for _title, curves, _scale in figs.PANELS for key, _label, _style in curves]
    history = [{"step": i, **{key: 0.1 + 0.01 * i for key in keys}} for i in range(steps)]
    return RunResult(gallery.gallery_config(name), history, crash=crash, name=name)


def test_the_dashboard_and_the_gallery_figure_draw_every_panel():
    from rlvr.widgets import new_figure

    runs = {name: fake_run(name) for name in gallery.BREAKAGES}
    runs["std_without_epsilon"] = fake_run("std_without_epsilon", steps=1, crash="step 1: RuntimeError: nan")
    runs["std_without_epsilon"].history[0]["loss"] = math.nan  # where the signal went NaN is read off the history
    fig = new_figure((12, 8))
    figs.draw_gallery(fig, runs, runs["healthy"])
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == len(gallery.BREAKAGES) - len(gallery.NOT_BROKEN)
    assert any("NaN at step 0" in t.get_text() for ax in shown for t in ax.texts)  # the crash, said in words
    fig = new_figure((13, 7.5))
    figs.draw_gallery_run(fig, runs["forgotten_mask"], runs["healthy"])
    assert len(fig.axes) == len(figs.PANELS) and all(ax.lines for ax in fig.axes)


def test_each_gallery_panel_draws_its_run_beside_the_run_the_table_reads_it_against():
    """The run without a clip is drawn against the clipped one (the healthy run's approx KL is 0 by definition)."""
    from rlvr.widgets import new_figure

    runs = {name: fake_run(name) for name in gallery.BREAKAGES}
    runs["clipped_many_updates"].history = [{**h, "approx_kl": 0.5} for h in runs["clipped_many_updates"].history]
    fig = new_figure((12, 8))
    figs.draw_gallery(fig, runs, runs["healthy"])
    by_title = {ax.get_title().splitlines()[0]: ax for ax in fig.axes if ax.get_visible()}
    no_clip = by_title[f"{gallery.short_title('no_clip_many_updates')}: {figs.SIGNAL_NAMES['approx_kl']}"]
    assert "clipped" in no_clip.get_title().splitlines()[1]
    assert list(no_clip.lines[0].get_ydata()) == [0.5] * 12  # black: the clipped run, not the healthy one
    greedy = by_title[f"{gallery.short_title('greedy_sampling')}: {figs.SIGNAL_NAMES['all_same_group_fraction']}"]
    assert "\n" not in greedy.get_title()
    assert list(greedy.lines[0].get_ydata()) == [h["all_same_group_fraction"] for h in runs["healthy"].history]
    loophole = by_title[f"{gallery.short_title('loophole_verifier')}: {figs.SIGNAL_NAMES['accuracy']}"]
    assert "strict verifier" in loophole.get_title().splitlines()[1]  # one thing changed: the verifier
    longer = fake_run("lr_too_high", steps=20)  # a breakage trained longer than the healthy run says so
    fig = new_figure((12, 8))
    figs.draw_gallery(fig, {**runs, "lr_too_high": longer}, runs["healthy"])
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert any(t.endswith("(20 steps; black: 12)") for t in titles)
    assert sum("steps; black" in t for t in titles) == 1  # the others train as long as the run they are drawn against


def test_the_gallery_table_reads_each_signal_off_the_runs():
    runs = {name: fake_run(name) for name in gallery.BREAKAGES}
    table = story.gallery_table(runs, runs["healthy"])
    assert table.count("\n") == 1 + len(gallery.BREAKAGES) - len(gallery.NOT_BROKEN)
    assert "gradient norm, last 10 steps: 0.16 (healthy run: 0.16)" in table  # mean of 0.1 + 0.01 i over i = 2-11


def test_a_reading_never_prints_negative_zero():
    """A tiny negative reading (portable kernels gave one in notebook 06's table) prints as 0.00."""
    from rlvr.narration.gallery import two_decimals

    assert two_decimals(-0.001) == "0.00" and two_decimals(-0.006) == "-0.01" and two_decimals(0.5) == "0.50"


def test_a_reading_of_a_metric_logged_every_few_steps_names_the_step_it_reads():
    """The KL to the warm-up is logged every 10 steps: "last 10 steps" once averaged the last 10 *logged points*, every
    point of a 60-step run (06's table printed 0.62 for a healthy run whose dashboard ends at 1.19); then it read the
    one point in the window and still called it "last 10 steps". It names the step both runs measured last."""
    from rlvr.narration.gallery import reading
    from rlvr.runs import RunResult
    from rlvr.train import RLConfig

    def logged_every_10(values):
        return [{"kl_to_ref": values[i // 10] if i % 10 == 0 else float("nan")} for i in range(10 * len(values))]

    healthy = RunResult(RLConfig(), logged_every_10([0.0, 0.5, 0.8, 1.0, 1.1, 1.2]), name="healthy")
    beta = RunResult(RLConfig(), logged_every_10([0.0, 0.1, 0.1, 0.2, 0.2, 0.2]), name="beta_too_large")
    assert gallery.tail(healthy, "kl_to_ref") == pytest.approx(1.2)
    text = reading(beta, healthy)
    assert "at step 50, the last both runs measured: 0.20 (healthy run: 1.20)" in text, text
    beta.history[55]["kl_to_ref"] = 0.3  # a reading the healthy run has not: not the one compared
    assert "at step 50" in reading(beta, healthy)


def test_a_dashboard_draws_every_runs_kl_at_the_cadence_of_a_run_without_a_kl_term():
    # a run with beta > 0 logs its KL every step, one without every KL_EVERY steps: drawn alike, mystery B's dots
    # cannot give its breakage away
    every_step = [{"kl_to_ref": 0.1 * step, "reward": 0.5} for step in range(25)]
    kl = figs.drawn_curve(every_step, "kl_to_ref")
    shown = np.flatnonzero(np.isfinite(kl))
    assert list(shown) == list(range(0, 25, signals.KL_EVERY)) and kl[10] == pytest.approx(1.0)
    assert np.isfinite(figs.drawn_curve(every_step, "reward")).all()
