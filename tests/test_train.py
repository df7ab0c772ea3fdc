"""The RL loop at tiny size: every algorithm runs, metrics are valid, losses finite, runs are deterministic."""

import math

import numpy as np
import pytest
import torch

from rlvr.sft import SFTConfig, train_sft
from rlvr.algorithms import ALGORITHMS
from rlvr.train import RLConfig, Trainer, run, train_rl

TINY = dict(steps=3, prompts_per_step=4, group_size=4)


@pytest.fixture(scope="module")
def policy():
    """A briefly warmed-up model: it writes well-formed answers, so some earn a reward (a random one never does)."""
    model, _ = train_sft(SFTConfig(steps=100, batch_size=64, lr=3e-3))
    return model


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_every_algorithm_runs_with_valid_metrics(algo, policy):
    beta = 0.0 if ALGORITHMS[algo].kl == "none" else 0.05  # RFT has no KL term (RLConfig refuses beta > 0)
    result = train_rl(RLConfig(algo=algo, beta=beta, **TINY), policy=policy, progress=False)
    assert len(result.history) == 3
    for h in result.history:
        assert 0.0 <= h["accuracy"] <= 1.0 and 0.0 <= h["cot_fraction"] <= 1.0
        assert 0.0 <= h["all_same_group_fraction"] <= 1.0
        assert math.isfinite(h["loss"]) and (math.isfinite(h["kl_to_ref"]) or beta == 0)
        assert h["sampling_s"] > 0 and h["training_s"] > 0
        assert len(h["clip_fraction_per_update"]) == ALGORITHMS[algo].updates_per_batch
    if ALGORITHMS[algo].value_model:
        assert all(math.isfinite(h["value_loss"]) for h in result.history)
        assert result.history[0]["value_mean"] == 0.0  # the value head starts at exactly 0


def test_policy_moves_and_reference_does_not(policy):
    trainer = Trainer(RLConfig(algo="reinforce", lr=1e-2, **TINY), policy)
    before = [p.clone() for p in trainer.policy.parameters()]
    ref_before = [p.clone() for p in trainer.ref.parameters()]
    for step in range(2):
        trainer.step(step)
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(ref_before, trainer.ref.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(before, policy.parameters()))  # the caller's model is untouched


def test_same_seed_same_run_and_other_seed_differs(policy):
    a = train_rl(RLConfig(**TINY), policy=policy, progress=False)
    b = train_rl(RLConfig(**TINY), policy=policy, progress=False)
    c = train_rl(RLConfig(seed=1, **TINY), policy=policy, progress=False)
    keys = ("accuracy", "loss", "mean_length")
    assert [[h[k] for k in keys] for h in a.history] == [[h[k] for k in keys] for h in b.history]
    assert [[h[k] for k in keys] for h in a.history] != [[h[k] for k in keys] for h in c.history]


def test_single_update_has_no_clipping_and_many_updates_can_clip(policy):
    one = train_rl(RLConfig(epochs_per_batch=1, lr=1e-2, **TINY), policy=policy, progress=False)
    many = train_rl(RLConfig(epochs_per_batch=4, lr=1e-2, **TINY), policy=policy, progress=False)
    assert all(h["clip_fraction_per_update"] == [0.0] for h in one.history)
    assert any(f > 0 for h in many.history for f in h["clip_fraction_per_update"][1:])


def test_on_step_callback_sees_growing_history(policy):
    seen = []
    train_rl(
        RLConfig(**TINY),
        policy=policy,
        progress=False,
        on_step=lambda step, total, history: seen.append((step, total, len(history))),
    )
    assert seen == [(1, 3, 1), (2, 3, 2), (3, 3, 3)]


def test_config_validation():
    with pytest.raises(ValueError):
        RLConfig(algo="dpo")
    with pytest.raises(ValueError):
        RLConfig(algo="grpo", group_size=1)
    assert RLConfig(algo="reinforce", group_size=1).group_size == 1  # no baseline needed: a group of one is fine
    for bad in (
        dict(steps=0),
        dict(group_size=0),
        dict(lr=float("nan")),
        dict(beta=-1.0),
        dict(clip_eps=-0.2),
        dict(teacher_error_rate=1.5),
        dict(algo="rft", beta=0.05),
        dict(epochs_per_batch=0),
    ):
        with pytest.raises(ValueError, match=f"^{list(bad)[-1]} must be .*, got "):
            RLConfig(**bad)
    assert RLConfig(algo="ppo").epochs == 8 and RLConfig(algo="grpo").epochs == 1


def test_length_reward_changes_rewards_only_after_its_start(policy):
    cfg = RLConfig(length_reward_weight=1.0, length_reward_start=2, **TINY)
    trainer = Trainer(cfg, policy)
    early = trainer.rollout(step=0)
    assert torch.equal(early.rewards, early.scores["reward"])
    late = trainer.rollout(step=2)
    bonus = late.rewards - late.scores["reward"]
    assert bonus.abs().max() <= 0.5 + 1e-6


def test_rft_keeps_every_right_answer_whatever_the_length_bonus(policy):
    """RFT selects on correctness: with a length-reward weight of 2 the longest right answer of a mixed group earns
    1 + 2 * (-0.5) = 0, and it must still be imitated."""
    trainer = Trainer(
        RLConfig(algo="rft", length_reward_weight=2.0, steps=1, prompts_per_step=16, group_size=8), policy
    )
    batch = trainer.rollout(step=0)
    correct = batch.scores["correct"]
    assert bool((batch.rewards[correct] <= 0).any()), "no right answer lost its reward: the test needs one"
    logps = torch.zeros_like(batch.rollout.logps, requires_grad=True)  # [B, T]
    loss, _ = trainer.policy_loss(batch, logps, logps.detach())
    loss.backward()
    assert torch.equal(logps.grad.abs().sum(dim=1) > 0, correct)  # exactly the right answers are in the loss


def test_run_caches_results(monkeypatch, tmp_path, policy):
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    import rlvr.train as train_mod

    monkeypatch.setattr(train_mod, "warm_start", lambda cfg: type("W", (), {"model": policy})())
    first = run(RLConfig(**TINY), progress=False)
    second = run(RLConfig(**TINY), progress=False)
    assert not first.from_cache and second.from_cache
    assert first.history[-1]["accuracy"] == second.history[-1]["accuracy"]
    for x, y in zip(first.policy.state_dict().values(), second.policy.state_dict().values()):
        assert torch.equal(x, y)


def test_loading_a_cached_run_never_trains_a_warm_up(monkeypatch, tmp_path, policy):
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    import rlvr.train as train_mod

    monkeypatch.setattr(train_mod, "warm_start", lambda cfg: type("W", (), {"model": policy})())
    trained = run(RLConfig(**TINY), progress=False)
    monkeypatch.setattr(train_mod, "warm_start", lambda cfg: pytest.fail("loading a cached run built its warm-up"))
    loaded = run(RLConfig(**TINY), progress=False)
    assert loaded.from_cache and all(
        torch.equal(x, y) for x, y in zip(trained.policy.state_dict().values(), loaded.policy.state_dict().values())
    )


def test_a_different_warm_up_is_a_different_cached_run(monkeypatch, tmp_path, policy):
    """The cache key holds the warm-up's config: changing a warm-up default must not reuse an old run."""
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    import rlvr.train as train_mod

    monkeypatch.setattr(train_mod, "warm_start", lambda cfg: type("W", (), {"model": policy})())
    assert not run(RLConfig(**TINY), progress=False).from_cache
    assert run(RLConfig(**TINY), progress=False).from_cache
    longer = lambda cfg: SFTConfig(teacher_error_rate=cfg.teacher_error_rate, seed=cfg.sft_seed, steps=7)  # noqa: E731
    monkeypatch.setattr(train_mod, "warmup_config", longer)
    assert not run(RLConfig(**TINY), progress=False).from_cache


def test_ppo_kl_reward_uses_the_policy_not_the_sampling_temperature(policy):
    """At the first step the policy equals the reference, so its KL is 0 even when sampling at temperature 0.5."""
    from rlvr.model import response_logps
    from rlvr.objectives import gae, shaped_rewards

    trainer = Trainer(RLConfig(algo="ppo", beta=1.0, temperature=0.5, **TINY), policy)
    batch = trainer.rollout(step=0)
    rollout, rewards = batch.rollout, batch.rewards
    batch.ref_logps = response_logps(trainer.ref, rollout.prompt_ids, rollout.responses).detach()
    trainer.advantages(batch)
    zero_kl = shaped_rewards(rewards, torch.zeros_like(batch.ref_logps), rollout.response_mask, 1.0)
    expected, _ = gae(zero_kl, torch.zeros_like(batch.ref_logps), rollout.response_mask)  # the value model starts at 0
    assert torch.allclose(batch.advantages, expected, atol=1e-5)


def test_scores_of_several_answers_per_prompt_match_repeated_prompts(policy):
    from rlvr.evaluate import held_out_prompts, sample_scores

    prompts = held_out_prompts(30)
    shared = sample_scores(policy, prompts, seed=2, batch_size=40, group_size=4)
    repeated = sample_scores(policy, np.repeat(prompts, 4, axis=0), seed=2, batch_size=40)
    assert shared.keys() == repeated.keys()
    for key in shared:
        assert torch.equal(shared[key], repeated[key]), key
    assert shared["correct"].shape == (120,)


def test_a_replicate_starts_from_the_warm_up_of_its_own_seed():
    """One recipe for every experiment: replicate s = warm-up seed s + RL seed s (race, ppo_parts, thinking agree)."""
    from rlvr.experiments import race, thinking

    cfg = RLConfig.replicate(2, algo="grpo", steps=3)
    assert (cfg.seed, cfg.sft_seed, cfg.steps) == (2, 2, 3)
    assert race.race_config("PPO-8", 5, seed=1).sft_seed == 1
    assert race.panel_config("grpo", 1e-4, 0.2, 1, steps=5, seed=1).sft_seed == 1
    assert thinking.rl_config("grpo", 5, seed=1).sft_seed == 1


class _Inline:
    """An executor that runs what it is given at once, in the calling thread."""

    def submit(self, fn, *args):
        from concurrent.futures import Future

        done = Future()
        done.set_result(fn(*args))
        return done


class _ValueFirst(Trainer):
    """PPO's Trainer with every value update of a batch run before the policy's, in this thread."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.beside = _Inline()


def test_ppo_value_updates_beside_the_policy_give_the_numbers_of_one_thread(policy):
    """The value model's updates run on a second thread beside the policy's: they read only the batch, so running
    them all first, in this thread, gives the same history and the same weights, bit for bit."""
    cfg = RLConfig(algo="ppo", lr=1e-3, **TINY)
    beside = train_rl(cfg, policy=policy, progress=False)
    first = train_rl(cfg, policy=policy, progress=False, trainer=_ValueFirst)
    keep = ("loss", "value_loss", "reward", "clip_fraction_per_update", "value_mean", "explained_variance")
    assert [[h[k] for k in keep] for h in beside.history] == [[h[k] for k in keep] for h in first.history]
    assert all(
        torch.equal(a, b) for a, b in zip(beside.policy.state_dict().values(), first.policy.state_dict().values())
    )


def test_ppo_steps_record_their_value_models_processor_seconds_within_the_training_time(policy):
    """Notebook 04 splits PPO-8's training cost into the value model's and the policy's: value_cpu_s (the value
    model's forward pass and its updates, on their own thread) is part of training_cpu_s (every thread of the
    process), and GRPO, without a value model, records none."""
    ppo = train_rl(RLConfig(algo="ppo", epochs_per_batch=4, **TINY), policy=policy, progress=False)
    for h in ppo.history:
        assert 0 < h["value_cpu_s"] <= h["training_cpu_s"] + 1e-3, h
    grpo = train_rl(RLConfig(algo="grpo", **TINY), policy=policy, progress=False)
    assert all("value_cpu_s" not in h for h in grpo.history)
