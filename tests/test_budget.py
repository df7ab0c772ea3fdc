"""A notebook's first-run budget: which runs are on disk, and an estimate of the rest timed on this machine."""

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
    assert text.startswith("The first run trains 1 of 2 runs") and "cached: on disk" in text
    assert budget.first_run_text({"cached": cached}).startswith("Everything this notebook trains is already on disk")
