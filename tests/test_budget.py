"""A notebook's first-run budget: which runs are on disk, and an estimate of the rest timed on this machine."""

import pytest

from rlvr import budget
from rlvr.train import RLConfig, run

TINY = dict(steps=3, prompts_per_step=4, group_size=4)


def test_a_cached_run_costs_nothing_and_an_uncached_one_is_timed(monkeypatch, tmp_path):
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    cached, fresh = RLConfig(seed=1, **TINY), RLConfig(seed=2, **TINY)
    run(cached, progress=False)
    planned = budget.plan({"cached": cached, "fresh": fresh})
    assert [(p.label, p.cached) for p in planned] == [("cached", True), ("fresh", False)]
    assert planned[0].seconds == 0 and planned[1].seconds == 3 * budget.seconds_per_step(fresh) > 0
    text = budget.first_run_text({"cached": cached, "fresh": fresh})
    assert text.startswith("The first time, this notebook trains 1 of its 2 runs") and "cached: on disk" in text
    assert budget.first_run_text({"cached": cached}).startswith("Everything this notebook trains is already on disk")


def test_a_missing_warm_up_is_counted_and_the_shipped_one_is_not(monkeypatch, tmp_path):
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    assert budget.warm_up_seconds(RLConfig(**TINY)) == 0  # the default warm-up ships with the package
    other = RLConfig(sft_seed=5, **TINY)  # its warm-up would train first: two SFT steps timed, times 1500
    assert budget.warm_up_seconds(other) > 0
    assert budget.plan({"other": other})[0].seconds > 3 * budget.seconds_per_step(other)


def test_waiting_is_the_longest_core_with_runs_side_by_side_longest_first():
    assert budget.waiting_seconds([2, 3, 2, 3, 2], 2) == 7  # the longest first, each to the freer core: 3+2+2, 3+2
    assert budget.waiting_seconds([3, 3, 2, 2, 2], 1) == 12
    assert budget.waiting_seconds([10, 1, 1], 2) == 10  # one long run decides
    assert budget.waiting_seconds([], 2) == 0


def test_a_run_listed_under_two_labels_is_planned_once(monkeypatch, tmp_path):
    """Notebook 04 lists GRPO-1 for its race and for its section 4: one run, trained once, counted once."""
    from rlvr.experiments import race

    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    grpo1 = race.race_config("GRPO-1", 3, 0, prompts_per_step=4, group_size=4)
    other = RLConfig(seed=2, **TINY)
    planned = budget.plan({"GRPO-1": (grpo1, race.cache_entry(grpo1)), "GRPO-1 again": grpo1, "other": other})
    assert [p.label for p in planned] == ["GRPO-1", "other"]
    assert budget.first_run_text({"a": other, "b": other}).startswith(
        "The first time, this notebook trains 1 of its 1 runs"
    )


def test_a_shape_timed_once_is_read_from_disk_by_the_next_notebook(monkeypatch, tmp_path):
    """The first notebook that needs a configuration's shape times it; the next one (another kernel) reads the seconds
    from the cache instead of training again; another shape is timed anew."""
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(budget, "_SECONDS_PER_STEP", {})
    first = budget.seconds_per_step(RLConfig(seed=1, **TINY))
    assert first > 0

    def no_training(*args, **kwargs):
        raise AssertionError("timed again")

    monkeypatch.setattr(budget, "_SECONDS_PER_STEP", {})  # a new kernel
    monkeypatch.setattr(budget, "train_rl", no_training)
    assert budget.seconds_per_step(RLConfig(seed=2, lr=1e-3, **TINY)) == first  # same shape: seed and lr aside
    with pytest.raises(AssertionError, match="timed again"):
        budget.seconds_per_step(RLConfig(epochs_per_batch=2, **TINY))
