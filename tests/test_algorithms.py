"""The table of algorithms: every reader takes its rows from it, and the skip rule it owns agrees with the loss."""

import dataclasses

import pytest
import torch

from rlvr import algorithms
from rlvr.algorithms import ALGORITHMS, trains_every_answer
from rlvr.cli import build_parser
from rlvr.model import response_logps, update_logps
from rlvr.sft import SFTConfig, train_sft
from rlvr.train import RL_RULES, RLConfig, Trainer
from rlvr.validation import ConfigError

TINY = dict(steps=1, prompts_per_step=6, group_size=4)


@pytest.fixture(scope="module")
def policy():
    """A briefly warmed-up model: some groups get mixed rewards, some all-equal ones (both kinds are needed)."""
    model, _ = train_sft(SFTConfig(steps=100, batch_size=64, lr=3e-3))
    return model


def test_config_choices_cli_choices_and_labels_come_from_the_table():
    from rlvr.figures.palette import ALGO_COLORS, LABEL_TO_KEY

    assert RL_RULES["algo"].choices == tuple(ALGORITHMS)
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    (algo_option,) = [a for a in train._actions if a.dest == "algo"]
    assert tuple(algo_option.choices) == tuple(ALGORITHMS)
    for name, row in ALGORITHMS.items():
        assert LABEL_TO_KEY[row.label] == name and name in ALGO_COLORS


def test_a_row_naming_what_objectives_lacks_is_refused(monkeypatch):
    bad = dataclasses.replace(ALGORITHMS["grpo"], name="bad", aggregation="token_median")
    monkeypatch.setitem(ALGORITHMS, "bad", bad)
    with pytest.raises(ValueError, match="'bad'"):
        algorithms.check_table()


def test_the_table_decides_defaults_and_limits():
    for name, row in ALGORITHMS.items():
        assert RLConfig(algo=name).epochs == row.updates_per_batch
        if row.min_group_size > 1:
            with pytest.raises(ConfigError, match="group_size"):
                RLConfig(algo=name, group_size=1)
        if row.kl == "none":
            with pytest.raises(ConfigError, match="beta"):
                RLConfig(algo=name, beta=0.1)


def test_a_term_that_survives_a_zero_advantage_makes_every_algorithm_train_every_answer(monkeypatch):
    assert not trains_every_answer("grpo")  # today: GRPO without a KL term leaves all-0 groups out
    for objective in algorithms.RATIO_LOSSES:  # e.g. an entropy bonus folded into every ratio loss
        monkeypatch.setitem(algorithms.SILENT_AT_ZERO_ADVANTAGE, objective, False)
    assert all(trains_every_answer(name) for name in ALGORITHMS)


def _loss_and_grads(trainer, batch, every_row):
    """One update's loss and the policy's gradient when the update runs every answer or only the rule's groups."""
    cfg = trainer.cfg
    logps = update_logps(trainer.policy, batch.rollout, batch.advantages, cfg.group_size, every_row)  # [B, T]
    loss, _ = trainer.policy_loss(batch, logps, logps.detach())
    grads = torch.autograd.grad(loss, list(trainer.policy.parameters()), allow_unused=True)
    flat = torch.cat(
        [(g if g is not None else torch.zeros_like(p)).flatten() for g, p in zip(grads, trainer.policy.parameters())]
    )
    return loss.detach(), flat


SKIP_CASES = [  # every algorithm with per-answer advantages, with and without a KL term where it has one
    (name, beta)
    for name, row in ALGORITHMS.items()
    if not row.value_model
    for beta in (0.0, 0.05)
    if beta == 0 or row.kl != "none"
]


@pytest.mark.parametrize("algo, beta", SKIP_CASES)
def test_the_skip_rule_agrees_with_the_loss(algo, beta, policy):
    """Where the rule lets an update leave the all-0 groups out, the loss and its gradient are those of every answer."""
    cfg = RLConfig(algo=algo, beta=beta, seed=3, **TINY)
    trainer = Trainer(cfg, policy)
    with torch.no_grad():  # a policy away from its reference, so the KL term has a gradient
        for p in trainer.policy.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    batch = trainer.rollout(0)
    batch.ref_logps = trainer.reference_logps(batch)
    trainer.advantages(batch)
    groups = batch.advantages.view(-1, cfg.group_size)  # [P, G]
    assert bool((groups == 0).all(dim=1).any()) and not bool((groups == 0).all()), "the test needs both kinds of group"
    every_loss, every_grad = _loss_and_grads(trainer, batch, every_row=True)
    rule_loss, rule_grad = _loss_and_grads(trainer, batch, every_row=trains_every_answer(algo, beta))
    assert torch.allclose(rule_loss, every_loss, rtol=1e-6, atol=1e-7)
    assert (rule_grad - every_grad).norm() <= 1e-5 * every_grad.norm() + 1e-9


@pytest.mark.parametrize("algo", ["grpo", "cispo"])
def test_several_updates_per_batch_watch_every_answer_and_train_as_with_every_row(algo, policy, monkeypatch):
    """Three updates on one batch, the all-0 groups forward only: every update's loss, clip fraction, approx KL and
    gradient norm are those of an update that runs every answer, up to float rounding."""
    import rlvr.train as train_mod

    cfg = RLConfig(algo=algo, seed=3, epochs_per_batch=3, lr=3e-3, **TINY)
    results = []
    for every in (False, True):
        monkeypatch.setattr(train_mod, "trains_every_answer", lambda algo, beta, every=every: every)
        trainer = Trainer(cfg, policy)
        batch = trainer.rollout(0)
        trainer.advantages(batch)
        groups = batch.advantages.view(-1, cfg.group_size)  # [P, G]
        assert bool((groups == 0).all(dim=1).any()) and not bool((groups == 0).all()), "the test needs both kinds"
        results.append(trainer.update(batch))
    skip, full = results
    for key in ("loss", "clip_fraction", "approx_kl", "grad_norm"):
        assert skip[key] == pytest.approx(full[key], rel=1e-4, abs=1e-6), key
    assert max(full["approx_kl"][1:]) > 0  # the policy moved, so the later updates' ratios are not all 1


def test_update_logps_runs_only_the_groups_the_rule_leaves_in(policy, monkeypatch):
    cfg = RLConfig(seed=3, **TINY)
    trainer = Trainer(cfg, policy)
    batch = trainer.rollout(0)
    trainer.advantages(batch)
    rows = []
    import rlvr.model as model_mod

    def counting(model, prompt_ids, responses, **kwargs):
        rows.append(len(responses))
        return response_logps(model, prompt_ids, responses, **kwargs)

    monkeypatch.setattr(model_mod, "response_logps", counting)
    update_logps(trainer.policy, batch.rollout, batch.advantages, cfg.group_size, trains_every_answer("grpo"))
    active = int((batch.advantages.view(-1, cfg.group_size) != 0).any(dim=1).sum())
    assert rows == [active * cfg.group_size] and active < cfg.prompts_per_step


def test_rloo_trains_with_leave_one_out_advantages(policy):
    """RLOO, added as a row of the table: its advantages are each answer's reward minus the mean of the others'."""
    from rlvr.objectives import rloo_advantages
    from rlvr.train import train_rl

    cfg = RLConfig(algo="rloo", seed=1, **TINY)
    trainer = Trainer(cfg, policy)
    batch = trainer.rollout(0)
    trainer.advantages(batch)
    groups = batch.rewards.view(-1, cfg.group_size)  # [P, G]
    others = (groups.sum(dim=1, keepdim=True) - groups) / (cfg.group_size - 1)  # [P, G]
    assert torch.allclose(batch.advantages, (groups - others).reshape(-1))
    assert torch.equal(batch.advantages, rloo_advantages(batch.rewards, cfg.group_size))
    result = train_rl(RLConfig(algo="rloo", beta=0.05, **{**TINY, "steps": 2}), policy=policy, progress=False)
    assert len(result.history) == 2 and all(torch.isfinite(torch.tensor(h["loss"])) for h in result.history)
    with pytest.raises(ConfigError, match="group_size"):
        RLConfig(algo="rloo", group_size=1)


def test_trl_and_verl_settings_come_from_the_rows():
    from rlvr.scale.trl_bridge import TRLRunConfig
    from rlvr.scale.verl_export import check_exportable, verl_overrides

    for name, row in ALGORITHMS.items():
        cfg = RLConfig(algo=name)
        if row.trl is None:
            with pytest.raises(ConfigError, match="algo"):
                TRLRunConfig.from_rl(cfg, steps=3)
        else:
            trl = TRLRunConfig.from_rl(cfg, steps=3)
            assert trl.loss_type == algorithms.ENGINE_AGGREGATION[row.aggregation]["trl"]
            assert all(getattr(trl, key) == value for key, value in row.trl.items())
        if not row.verl:
            with pytest.raises(ConfigError, match="algo"):
                check_exportable(cfg)
        else:
            keys = verl_overrides(cfg, "out")
            assert all(keys[key] == value for key, value in row.verl.items())
            assert (
                keys["actor_rollout_ref.actor.loss_agg_mode"] == algorithms.ENGINE_AGGREGATION[row.aggregation]["verl"]
            )


def test_dapo_token_mean_is_a_loss_option_of_every_clipped_algorithm(policy):
    """loss_agg_mode='token_mean' (DAPO's aggregation, TRL's default): every real token of the batch weighs the same,
    so a long answer counts for more than a short one, unlike GRPO's per-answer mean."""
    cfg = RLConfig(algo="grpo", loss_agg_mode="token_mean", seed=2, **TINY)
    assert cfg.aggregation == "token_mean" and RLConfig(algo="grpo").aggregation == "seq_mean_token_mean"
    trainer = Trainer(cfg, policy)
    batch = trainer.rollout(0)
    trainer.advantages(batch)
    mask = batch.rollout.response_mask
    logps = torch.zeros_like(batch.rollout.logps, requires_grad=True)  # [B, T]: ratio 1, so d loss / d logps = -A
    loss, _ = trainer.policy_loss(batch, logps, logps.detach())
    loss.backward()
    expected = -batch.advantages[:, None] * mask / mask.sum()  # [B, T]: each token's weight, 1 / (all real tokens)
    assert torch.allclose(logps.grad, expected, atol=1e-7)
    result = __import__("rlvr.train").train.train_rl(cfg, policy=policy, progress=False)
    assert len(result.history) == 1
    with pytest.raises(ConfigError, match="loss_agg_mode"):
        RLConfig(algo="rft", loss_agg_mode="token_mean")
    with pytest.raises(ConfigError, match="loss_agg_mode"):
        RLConfig(loss_agg_mode="token_median")


@pytest.mark.parametrize("algo, ratio_loss", [("gspo", "gspo_loss"), ("cispo", "cispo_loss")])
def test_gspo_and_cispo_update_with_their_own_ratio_loss(algo, ratio_loss, policy):
    """GSPO and CISPO, rows of the table: an update's loss is their objective (rlvr.objectives) aggregated the row's
    way, on a batch whose ratios are far from 1 (here the clip binds, unlike GRPO's); and the run trains."""
    from rlvr import objectives
    from rlvr.train import train_rl

    cfg = RLConfig(algo=algo, seed=4, clip_eps=0.05, **{**TINY, "prompts_per_step": 12})
    trainer = Trainer(cfg, policy)
    batch = trainer.rollout(0)
    trainer.advantages(batch)
    assert bool((batch.advantages != 0).any()), "the test needs a group with mixed rewards"
    mask = batch.rollout.response_mask
    old = batch.rollout.logps  # [B, T]
    gen = torch.Generator().manual_seed(0)
    moved = 0.3 * torch.randn(len(old), 1, generator=gen) + 0.2 * torch.randn(old.shape, generator=gen)  # [B, T]
    logps = (old + moved).requires_grad_(True)  # [B, T] a policy that moved away from the sampler
    loss, clip_fraction = trainer.policy_loss(batch, logps, old)
    per_token, clipped = getattr(objectives, ratio_loss)(logps, old, batch.advantages, 0.05, mask)
    assert torch.allclose(loss, objectives.aggregate_loss(per_token, mask, ALGORITHMS[algo].aggregation))
    assert clip_fraction == pytest.approx(float(objectives.masked_mean(clipped.float(), mask))) and clip_fraction > 0
    grpo_loss, _ = Trainer(RLConfig(seed=4, clip_eps=0.05, **TINY), policy).policy_loss(batch, logps, old)  # same batch
    assert not torch.allclose(loss, grpo_loss)  # the batch tells the objectives apart
    result = train_rl(RLConfig(algo=algo, epochs_per_batch=2, **{**TINY, "steps": 2}), policy=policy, progress=False)
    assert len(result.history) == 2 and all(torch.isfinite(torch.tensor(h["loss"])) for h in result.history)


def test_dr_grpo_is_named_only_by_its_row():
    """The string "dr_grpo" is the table's (its row and TRL's loss_type): other modules name the row, DR_GRPO."""
    import ast
    from pathlib import Path

    import rlvr

    root = Path(rlvr.__file__).parent
    owners = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value == "dr_grpo":
                owners.add(path.relative_to(root).as_posix())
    assert owners == {"algorithms.py"}, owners
