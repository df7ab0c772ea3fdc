"""GRPO on two CPU processes (`rlvr.scale.processes`, gloo): the ranks split the groups, share one update, log means.

Runs with `-m scale` (needs the [scale] extra); ~40 s, most of it two interpreters importing TRL.
"""

import collections
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from rlvr import scale

pytestmark = [pytest.mark.scale]


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory):
    """3 steps of 8 prompts x 4 answers on 2 processes from the quick warm-up; (config, ranks, start hash, saved)."""
    model, _ = scale.warm_up(cfg=scale.QUICK_WARM_UP)  # cached: shared with test_scale.py
    tmp = tmp_path_factory.mktemp("two-ranks")
    folder = scale.save_model(model, scale.build_tokenizer(), tmp / "start")
    cfg = scale.TRLRunConfig(steps=3, prompts_per_step=8, group_size=4, lr=1e-3, processes=2)
    ranks = scale.run_processes(folder, cfg, out_dir=tmp / "ranks", save_dir=tmp / "trained")
    return cfg, ranks, scale.parameter_hash(model), tmp / "trained"


def test_ranks_end_with_identical_parameters(two_rank_run):
    """Gradients are all-reduced: both ranks take the same steps although they saw different answers."""
    cfg, ranks, start, saved = two_rank_run
    assert [r.rank for r in ranks] == [0, 1]
    assert all(len(r.history) == len(r.step_seconds) == cfg.steps for r in ranks)
    assert ranks[0].parameter_hash == ranks[1].parameter_hash
    assert ranks[0].parameter_hash != start, "the parameters did not move"
    trained, _ = scale.load_causal_lm(saved)
    assert scale.parameter_hash(trained) == ranks[0].parameter_hash  # rank 0 saved the trained model


def test_each_rank_answers_its_own_whole_groups(two_rank_run):
    """Per step, each rank answers half of the prompts, every one group_size times; no prompt is on both ranks."""
    cfg, ranks, _, _ = two_rank_run
    for step in range(cfg.steps):
        seen = [r.prompts[step] for r in ranks]
        for prompts in seen:
            counts = collections.Counter(prompts)
            assert len(counts) == cfg.prompts_per_step // 2
            assert set(counts.values()) == {cfg.group_size}
        assert not set(seen[0]) & set(seen[1]), f"step {step}: a prompt was answered on both ranks"
    assert ranks[0].prompts != ranks[1].prompts


def test_logged_metrics_are_the_mean_over_ranks(two_rank_run):
    """Each step's logged task metrics and reward (identical on both ranks) are the mean of the ranks' own answers."""
    cfg, ranks, _, _ = two_rank_run
    assert ranks[0].history == ranks[1].history
    for step, logged in enumerate(ranks[0].history):
        local = [r.local_history[step] for r in ranks]
        for name in scale.TASK_METRICS:
            assert logged[name] == pytest.approx(sum(x[name] for x in local) / 2, abs=1e-5), (step, name)
        assert logged["reward"] == pytest.approx(sum(x["accuracy"] for x in local) / 2, abs=1e-6)
    differing = [s for s in range(cfg.steps) if ranks[0].local_history[s] != ranks[1].local_history[s]]
    assert differing, "the ranks' own answers never differed: the mean check tells nothing"
