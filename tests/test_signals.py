"""The signals every RL step records, computed by hand on small tensors, and the failure signatures that read them."""

import math

import pytest
import torch

from rlvr import signals
from rlvr.model import response_logps, sample
from rlvr.sft import SFTConfig, train_sft
from rlvr.task import STOP_ID, prompt_tokens, sample_prompts
from rlvr.train import RLConfig, train_rl

TINY = dict(steps=3, prompts_per_step=4, group_size=4)
MASK = torch.tensor([[True, True, False], [True, True, True]])  # answers of 2 and 3 tokens


@pytest.fixture(scope="module")
def policy():
    """A briefly warmed-up model: well-formed answers, some right."""
    model, _ = train_sft(SFTConfig(steps=100, batch_size=64, lr=3e-3))
    return model


def test_reward_and_advantage_spread():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0])
    assert signals.reward_std(rewards) == pytest.approx(math.sqrt(1 / 3))  # unbiased over the batch, as TRL's
    assert signals.advantage_std(torch.tensor([1.0, -1.0]), MASK) == pytest.approx(1.0)
    per_token = torch.tensor([[2.0, 2.0, 99.0], [0.0, 0.0, 0.0]])  # padding (99) is not counted
    assert signals.advantage_std(per_token, MASK) == pytest.approx(math.sqrt(0.96))


def test_entropy_of_a_uniform_and_a_certain_distribution():
    uniform = torch.log(torch.full((4,), 0.25))
    certain = torch.log(torch.tensor([1.0, 0.0, 0.0, 0.0]))  # log 0 = -inf must not make a NaN
    assert signals.token_entropy(uniform) == pytest.approx(math.log(4))
    assert signals.token_entropy(certain) == 0.0
    entropy = torch.tensor([[1.0, 3.0, 50.0], [2.0, 2.0, 2.0]])
    assert signals.mean_entropy(entropy, MASK) == pytest.approx(2.0)


def test_approx_kl_is_zero_before_the_policy_moves_and_k3_after():
    logps = torch.tensor([[-1.0, -2.0, 0.0], [-0.5, -0.5, -0.5]])
    assert signals.approx_kl(logps, logps.clone(), MASK) == 0.0
    moved = logps + 0.1
    assert signals.approx_kl(moved, logps, MASK) == pytest.approx(math.expm1(0.1) - 0.1, rel=1e-5)


def test_grad_norm_and_truncation_and_explained_variance():
    a, b = torch.zeros(2, requires_grad=True), torch.zeros(1, requires_grad=True)
    (3 * a.sum() + 4 * b.sum()).backward()
    assert signals.grad_norm([a, b]) == pytest.approx(math.sqrt(9 + 9 + 16))
    responses = torch.tensor([[1, STOP_ID, 0], [1, 2, 3]])
    assert signals.truncated_fraction(responses) == 0.5
    returns = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    assert signals.explained_variance(returns.clone(), returns, MASK) == 1.0  # a perfect value model
    assert signals.explained_variance(-returns, returns, MASK) == pytest.approx(-3.0)  # worse than a constant
    const = torch.full_like(returns, returns[MASK].mean())
    assert signals.explained_variance(const, returns, MASK) == pytest.approx(0.0, abs=1e-6)  # a constant: 0


def test_sampled_entropy_is_the_drawn_distributions(policy):
    prompts = prompt_tokens(sample_prompts(6, __import__("numpy").random.default_rng(0)))
    rollout = sample(policy, prompts, 1.0, generator=torch.Generator().manual_seed(0))
    _, logits = response_logps(policy, rollout.prompt_ids, rollout.responses, return_logits=True)  # [B, T, V]
    expected = signals.token_entropy(torch.log_softmax(logits, dim=-1)) * rollout.response_mask  # [B, T]
    assert torch.allclose(rollout.entropy, expected, atol=1e-5)
    greedy = sample(policy, prompts, 0.0)
    assert float(greedy.entropy.abs().sum()) == 0.0  # one choice: 0 nats


def test_every_run_records_the_signals(policy):
    ppo = train_rl(RLConfig(algo="ppo", **TINY), policy=policy, progress=False).history
    grpo = train_rl(RLConfig(algo="grpo", epochs_per_batch=3, **TINY), policy=policy, progress=False).history
    keys = ("reward_std", "advantage_std", "entropy", "approx_kl", "grad_norm", "truncated_fraction", "kl_to_ref")
    for history in (ppo, grpo):
        assert all(key in h for h in history for key in keys)
        assert len(history[0]["approx_kl_per_update"]) == (RLConfig(algo="ppo").epochs if history is ppo else 3)
        assert history[0]["approx_kl_per_update"][0] == 0.0 and history[0]["approx_kl"] > 0
        assert math.isfinite(history[0]["kl_to_ref"]) and math.isnan(history[1]["kl_to_ref"])  # every KL_EVERY steps
        assert all(h["grad_norm"] > 0 and h["entropy"] > 0 for h in history)
    assert all(math.isfinite(h["explained_variance"]) for h in ppo)


def test_signals_change_no_number_of_the_run(policy):
    cfg = RLConfig(algo="grpo", beta=0.04, **TINY)
    on = train_rl(cfg, policy=policy, progress=False)
    off = train_rl(cfg, policy=policy, progress=False, record_signals=False)
    assert [h["loss"] for h in on.history] == [h["loss"] for h in off.history]
    assert all(torch.equal(x, y) for x, y in zip(on.policy.state_dict().values(), off.policy.state_dict().values()))
    assert "entropy" not in off.history[0]


def _history(**curves) -> list[dict]:
    """A synthetic history: one dict per step with the given curves (lists of equal length)."""
    n = len(next(iter(curves.values())))
    return [{"step": i, **{key: float(values[i]) for key, values in curves.items()}} for i in range(n)]


def test_each_failure_signature_fires_on_its_pattern_and_not_on_a_healthy_one():
    steps = 60
    healthy = _history(
        loss=[0.0] * steps,
        reward=[0.2 + 0.01 * i for i in range(steps)],
        accuracy=[0.2 + 0.01 * i for i in range(steps)],
        entropy=[0.5 - 0.005 * i for i in range(steps)],
        all_same_group_fraction=[0.3] * steps,
        grad_norm=[1.0] * steps,
    )
    assert signals.failures(healthy) == []
    broken = {
        "nan": dict(loss=[0.1] * 10 + [math.nan] * (steps - 10)),
        "no_signal": dict(all_same_group_fraction=[1.0] * steps),
        "entropy_collapse": dict(entropy=[0.5] * 30 + [0.001] * (steps - 30)),
        "reward_hacking": dict(
            reward=[0.2 + 0.012 * i for i in range(steps)], accuracy=[0.2 - 0.002 * i for i in range(steps)]
        ),
    }
    for name, change in broken.items():
        history = [{**h, **{k: v[i] for k, v in change.items()}} for i, h in enumerate(healthy)]
        found = signals.failures(history)
        assert [f.name for f in found] == [name], (name, found)
    assert signals.no_signal_step(_history(all_same_group_fraction=[1.0] * 19)) is None  # 19 steps are not 20
    both = {**broken["reward_hacking"], "all_same_group_fraction": [0.0] * 40 + [1.0] * (steps - 40)}
    history = [{**h, **{k: v[i] for k, v in both.items()}} for i, h in enumerate(healthy)]
    found = signals.failures(history)  # the no-signal detector comes first in SIGNATURES, but shows later here
    assert [f.name for f in found] == ["reward_hacking", "no_signal"] and found[0].step < found[1].step


@pytest.mark.slow  # two 200-step runs, seed 1's after its own 1500-step warm-up: minutes on 2 cores
@pytest.mark.parametrize("seed", [0, 1])
def test_the_default_run_shows_no_failure_signature(seed):
    """The lecture's GRPO run (200 steps, 32 x 8) is healthy: no warning may fire on it."""
    from rlvr.experiments.thinking import rl_run

    history = rl_run("grpo", steps=200, seed=seed).history
    assert signals.failures(history) == []


def preflight_history(**first_steps) -> list[dict]:
    """Five steps of a healthy GRPO history, with any metric replaced by the given per-step values."""
    healthy = {"loss": 0.0, "grad_norm": 0.5, "kl_to_ref": 0.0, "all_same_group_fraction": 0.1, "advantage_std": 0.95}
    steps = [{"step": i, **healthy} for i in range(5)]
    for key, values in first_steps.items():
        for step, value in zip(steps, values):
            step[key] = value
    return steps


@pytest.mark.parametrize(
    "broken, failed",
    [
        ({}, []),
        ({"grad_norm": [0.5, 0.0, 0.5, 0.5, 0.5]}, ["smallest gradient norm"]),
        ({"kl_to_ref": [3.0, 0.0, 0.0, 0.0, 0.0]}, ["KL to the warm-up at step 0"]),
        ({"all_same_group_fraction": [1.0] * 5, "advantage_std": [0.0] * 5}, ["all-equal groups", "advantage std"]),
        ({"loss": [0, math.nan, 0, 0, 0], "advantage_std": [math.nan] * 5}, ["largest |loss|", "advantage std"]),
        ({"loss": [0.0, 0.2, 0.0, 0.0, 0.0]}, ["largest |loss|"]),
        ({"advantage_std": [1.4] * 5}, ["advantage std"]),
    ],
)
def test_the_preflight_names_each_check_a_history_fails_and_no_other(broken, failed):
    checks = signals.preflight(preflight_history(**broken))
    assert [c.name for c in checks if not c.ok] == failed
    assert (signals.preflight_text(preflight_history(**broken)) == "passes") == (failed == [])


def test_the_preflight_reads_the_loss_only_where_it_must_be_zero():
    history = preflight_history(loss=[0.0, 0.2, 0.0, 0.0, 0.0])  # several updates per batch, or a KL term
    several = RLConfig(epochs_per_batch=4)
    with_kl = RLConfig(beta=0.04)
    assert not signals.loss_is_zero(several) and not signals.loss_is_zero(with_kl) and signals.loss_is_zero(RLConfig())
    assert signals.preflight_text(history, several) == "passes" == signals.preflight_text(history, with_kl)
    assert "largest |loss| 0.2" in signals.preflight_text(history, RLConfig())


def test_the_preflight_prints_a_share_as_a_percentage_and_a_nan_in_words():
    text = signals.preflight_text(preflight_history(all_same_group_fraction=[1.0] * 5, advantage_std=[math.nan] * 5))
    assert "all-equal groups 100%" in text and "advantage std not a number" in text and "nan" not in text.lower()
