"""One RL loop for every algorithm of the table `rlvr.algorithms.ALGORITHMS` (REINFORCE, GRPO, Dr. GRPO, RFT, PPO,
GSPO, CISPO).

Each step: sample G answers for each of P prompts from the current policy, score them with the verifier, compute
advantages, then `epochs_per_batch` updates on that batch (the clipped ratio only matters when it is > 1). The loop
reads what an algorithm is made of from its row of the table, never from its name.
"""

from __future__ import annotations

import copy
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch

from . import signals
from .algorithms import ALGORITHMS, algorithm, loss_terms, trains_every_answer
from .cache import Entry
from .config import training_threads
from .evaluate import answer_metrics, evaluate, pass_at_k_curve
from .model import Rollout, TinyTransformer, ValueModel, response_logps, sample, update_logps
from .objectives import (
    AGGREGATIONS,
    RATIO_LOSSES,
    aggregate_loss,
    all_same_fraction,
    compute_advantages,
    gae,
    kimi_length_reward,
    kl_k3,
    masked_mean,
    rft_loss,
    shaped_rewards,
)
from .runs import OnStep, RunResult, cached_run, timing_of
from .sft import SFTConfig, WarmUp, warm_up
from .task import DEFAULT_TEACHER_ERROR_RATE, MAX_NEW_TOKENS, prompt_tokens, sample_prompts, score_batch
from .validation import BOOLEAN, SEED, ConfigError, Rule, check_fields, integer, number, one_of, optional


@dataclass(frozen=True)
class RLConfig:
    """Every knob of a run (and so the cache key of its result)."""

    algo: str = "grpo"  # the algorithm, a row of rlvr.algorithms.ALGORITHMS
    steps: int = 200  # RL steps (each: sample, score, update)
    prompts_per_step: int = 32  # prompts sampled per step (P)
    group_size: int = 8  # answers per prompt (G)
    lr: float = 1e-4  # Adam learning rate of the policy
    beta: float = 0.0  # KL weight against the frozen warm-up model (k3 in the loss; PPO: in the reward)
    epochs_per_batch: int | None = None  # updates per sampled batch; None = the algorithm's (8 for PPO, 1 otherwise)
    clip_eps: float = 0.2  # PPO / GRPO ratio clip
    loss_agg_mode: str | None = None  # per-token loss -> one number; None = the algorithm's ("token_mean": DAPO's)
    advantage_eps: float = 1e-4  # added to the group std (GRPO)
    std: str = "population"  # GRPO std: "population" (lecture) or "unbiased" (TRL, torch.std)
    clamp_kl: bool = True  # PPO: clamp the per-token KL at >= 0 in the shaped reward
    value_lr: float = 1e-3  # PPO: Adam learning rate of the value model
    gamma: float = 1.0  # PPO: GAE discount
    lam: float = 1.0  # PPO: GAE lambda
    length_reward_weight: float = 0.0  # Kimi k1.5 length reward weight (0 = off)
    length_reward_start: int = 0  # step at which the length reward switches on
    temperature: float = 1.0  # sampling temperature of the answers (0 = greedy)
    max_new_tokens: int = MAX_NEW_TOKENS  # longest answer sampled, in tokens
    teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE  # selects the warm-up model to start from
    sft_seed: int = 0  # seed of the warm-up model to start from
    seed: int = 0  # seed of the RL run (prompts, sampling, updates)

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Raise ConfigError (a ValueError) naming the first field out of its range (RL_RULES, then the pairs)."""
        check_fields(self, RL_RULES)
        row = ALGORITHMS[self.algo]
        if self.group_size < row.min_group_size:
            raise ConfigError("group_size", self.group_size, f">= 2 for {self.algo} (a group of one has no baseline)")
        if row.kl == "none" and self.beta > 0:
            raise ConfigError("beta", self.beta, f"0 for {self.algo} (its loss has no KL term)")
        if row.objective == "rft" and self.loss_agg_mode is not None:
            raise ConfigError("loss_agg_mode", self.loss_agg_mode, f"None for {self.algo} (its loss is fixed)")

    @classmethod
    def replicate(cls, seed: int, **fields) -> RLConfig:
        """The run of replicate `seed`: its RL seed and its warm-up's seed are both `seed`, so seeds 0, 1, 2 are three
        independent warm-up + RL runs. Every experiment, notebook and `reproduce` builds its runs this way."""
        return cls(seed=seed, sft_seed=seed, **fields)

    @property
    def epochs(self) -> int:
        """Updates per batch after applying the algorithm's default (8 for PPO, 1 otherwise)."""
        return self.epochs_per_batch or ALGORITHMS[self.algo].updates_per_batch

    @property
    def aggregation(self) -> str:
        """How the per-token loss becomes one number (an objectives.AGGREGATIONS mode): loss_agg_mode or the
        algorithm's."""
        return self.loss_agg_mode or ALGORITHMS[self.algo].aggregation

    def to_dict(self) -> dict:
        """Plain dict (hashing, JSON)."""
        return asdict(self)


RL_RULES: dict[str, Rule] = {  # field -> what it accepts (algo-dependent limits are in RLConfig.validate)
    "algo": one_of(tuple(ALGORITHMS)),
    "steps": integer(1),
    "prompts_per_step": integer(1),
    "group_size": integer(
        1,
        allowed="an integer >= 1 (>= 2 for a group baseline: "
        + ", ".join(name for name, row in ALGORITHMS.items() if row.min_group_size > 1)
        + ")",
    ),
    "lr": number(0, ends="(]"),
    "beta": number(
        0,
        allowed="a finite number >= 0 (0 for "
        + ", ".join(name for name, row in ALGORITHMS.items() if row.kl == "none")
        + ")",
    ),
    "epochs_per_batch": optional(integer(1)),
    "clip_eps": number(0, ends="(]"),  # eps >= 1 is legal: "no clipping" (race.NO_CLIP_EPS) uses 1e6
    "loss_agg_mode": optional(one_of(AGGREGATIONS)),
    "advantage_eps": number(0),
    "std": one_of(("population", "unbiased")),
    "clamp_kl": BOOLEAN,
    "value_lr": number(0, ends="(]"),
    "gamma": number(0, 1),
    "lam": number(0, 1),
    "length_reward_weight": number(0),
    "length_reward_start": integer(0),
    "temperature": number(0),
    "max_new_tokens": integer(1, MAX_NEW_TOKENS),
    "teacher_error_rate": number(0, 1),
    "sft_seed": SEED,
    "seed": SEED,
}


def _adam(params, lr: float) -> torch.optim.Adam:
    """Adam as the lecture's runs use it."""
    return torch.optim.Adam(params, lr=lr)


def _rewards_with_length_bonus(scores: dict, cfg: RLConfig, step: int) -> torch.Tensor:
    """Verifier reward plus (optionally) Kimi's length reward within each group. Returns [B]."""
    rewards = scores["reward"].clone()  # [B]
    if cfg.length_reward_weight and step >= cfg.length_reward_start:
        lengths = scores["length"].view(-1, cfg.group_size)  # [P, G]
        correct = scores["correct"].view(-1, cfg.group_size)  # [P, G]
        bonus = torch.stack([kimi_length_reward(n, c) for n, c in zip(lengths, correct)])  # [P, G]
        rewards += cfg.length_reward_weight * bonus.view(-1)
    return rewards


@dataclass
class Batch:
    """What one RL step computed before its updates: the answers, their rewards and advantages (hooks see it)."""

    rollout: Rollout  # B = P x G answers: prompt_ids [B, 11], responses / logps / response_mask [B, T]
    scores: dict  # score_batch's [B] tensors (reward, correct, is_think, ...)
    rewards: torch.Tensor  # [B] verifier reward (+ Kimi's length reward when on)
    ref_logps: torch.Tensor | None = None  # [B, T] frozen warm-up's log-probs (beta > 0 only)
    advantages: torch.Tensor | None = None  # [B], or [B, T] for PPO
    returns: torch.Tensor | None = None  # PPO: [B, T] the value model's regression targets
    values: torch.Tensor | None = None  # PPO: [B, T] the value model's predictions before its updates
    value_cpu_s: float = 0.0  # PPO: processor seconds of the value model's forward pass on this batch


class StepHooks:
    """Callbacks `Trainer.step` calls with what it computes; override the ones you need (e.g. the race's
    diagnostics). They observe: changing the tensors they receive changes the run."""

    def before_step(self, step: int) -> None:
        """A step starts."""

    def after_rollout(self, batch: Batch) -> None:
        """The answers are sampled and scored (batch.rollout, scores, rewards)."""

    def after_advantages(self, batch: Batch) -> None:
        """The advantages (and PPO's returns and values) are known; no update has run yet."""

    def before_update(self, batch: Batch, logps: torch.Tensor, old_logps: torch.Tensor) -> None:
        """One update is about to use logps [B, T] (with graph) against the sampling policy's old_logps [B, T]. Rows
        of groups the update leaves out (`rlvr.algorithms.trains_every_answer`) have no graph: they hold the sampling
        log-probs with one update per batch, the policy's with several."""

    def after_step(self, metrics: dict) -> None:
        """The step's metrics (add keys to record more)."""


def value_loss(values: torch.Tensor, returns: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """PPO's value loss: the mean squared error over real tokens. [B, T] x 3 -> scalar."""
    return masked_mean((values - returns) ** 2, response_mask)


class Trainer:
    """Holds the policy, the frozen reference, the optimisers (and PPO's value model) of one run.

    gae_fn, value_loss_fn: PPO's pieces (objectives.gae's and value_loss's signatures); notebook 04's checker passes
    a learner's versions to compare one PPO step stage by stage. record_signals: the signals of `rlvr.signals`.
    """

    def __init__(
        self,
        cfg: RLConfig,
        policy: TinyTransformer | None = None,
        hooks: StepHooks | None = None,
        gae_fn: Callable = gae,
        value_loss_fn: Callable = value_loss,
        record_signals: bool = True,
    ):
        self.cfg, self.algorithm = cfg, algorithm(cfg.algo)
        start = policy if policy is not None else warm_start(cfg).model
        self.policy = copy.deepcopy(start).train()
        self.ref = copy.deepcopy(start).eval().requires_grad_(False)  # the frozen warm-up model
        self.opt = _adam(self.policy.parameters(), cfg.lr)
        self.value = ValueModel(start) if self.algorithm.value_model else None
        self.value_opt = _adam(self.value.parameters(), cfg.value_lr) if self.value is not None else None
        self.beside = ThreadPoolExecutor(1, "rlvr-value") if self.value is not None else None  # see `update`
        self.rng = np.random.default_rng(cfg.seed)
        self.generator = torch.Generator().manual_seed(cfg.seed)
        self.needs_ref = cfg.beta > 0
        self.hooks = hooks or StepHooks()
        self.gae_fn, self.value_loss_fn = gae_fn, value_loss_fn
        self.record_signals = record_signals  # False only to measure what recording them costs (bench_rl.py)

    def rollout(self, step: int) -> Batch:
        """Sample P x G answers and score them (a Batch without advantages)."""
        cfg = self.cfg
        prompts = sample_prompts(cfg.prompts_per_step, self.rng)  # [P, 10]
        rollout = sample(
            self.policy,
            prompt_tokens(prompts),
            cfg.temperature,
            cfg.max_new_tokens,
            self.generator,
            group_size=cfg.group_size,
        )  # B = P x G answers, a group per prompt
        prompts = np.repeat(prompts, cfg.group_size, axis=0)  # [B, 10]
        scores = score_batch(torch.as_tensor(prompts), rollout.responses)
        return Batch(rollout, scores, _rewards_with_length_bonus(scores, cfg, step))

    def reference_logps(self, batch: Batch, always: bool = False) -> torch.Tensor | None:
        """The frozen warm-up's log-probs of the answers [B, T] when beta > 0 (or `always`), else None."""
        if not (self.needs_ref or always):
            return None
        rollout = batch.rollout
        with torch.no_grad():
            return response_logps(
                self.ref, rollout.prompt_ids, rollout.responses, group_size=self.cfg.group_size
            )  # [B, T]

    def advantages(self, batch: Batch) -> dict:
        """Fill batch.advantages ([B], or [B, T] with a value model, with batch.returns and batch.values); extra
        metrics."""
        cfg = self.cfg
        if not self.algorithm.value_model:
            batch.advantages = compute_advantages(
                batch.rewards, cfg.group_size, self.algorithm.advantage, cfg.advantage_eps, cfg.std
            )  # [B]
            return {}
        rollout, ref_logps = batch.rollout, batch.ref_logps
        value_c0 = time.thread_time()
        with torch.no_grad():
            values = self.value(rollout.prompt_ids, rollout.responses, cfg.group_size)  # [B, T]
        batch.value_cpu_s = time.thread_time() - value_c0  # the value model's forward pass (its updates add theirs)
        with torch.no_grad():
            kl = torch.zeros_like(rollout.logps)  # [B, T]
            if ref_logps is not None:  # KL of the policy itself (temperature 1), not of the sampling distribution
                logps = (
                    rollout.logps
                    if cfg.temperature == 1.0
                    else response_logps(self.policy, rollout.prompt_ids, rollout.responses, group_size=cfg.group_size)
                )  # [B, T]
                kl = logps - ref_logps
        token_rewards = shaped_rewards(batch.rewards, kl, rollout.response_mask, cfg.beta, cfg.clamp_kl)  # [B, T]
        batch.advantages, batch.returns = self.gae_fn(
            token_rewards, values, rollout.response_mask, cfg.gamma, cfg.lam
        )  # [B, T] each
        batch.values = values
        return {"value_mean": float(values[:, 0].mean())}

    def policy_loss(self, batch: Batch, logps, old_logps) -> tuple[torch.Tensor, float]:
        """Scalar loss of one update and its clip fraction."""
        cfg, mask = self.cfg, batch.rollout.response_mask
        if self.algorithm.objective == "rft":
            loss, clip_frac = rft_loss(logps, mask, batch.scores["correct"]), 0.0  # right answers, whatever the bonus
        else:
            ratio_loss = RATIO_LOSSES[self.algorithm.objective]  # PPO's clip, GSPO's or CISPO's
            per_token, clipped = ratio_loss(logps, old_logps, batch.advantages, cfg.clip_eps, mask)  # [B, T]
            clip_frac = float(masked_mean(clipped.float(), mask))
            if "kl" in loss_terms(cfg.algo, cfg.beta):  # TRL / DeepSeekMath: k3 penalty in the loss
                per_token = per_token + cfg.beta * kl_k3(logps, batch.ref_logps)
            loss = aggregate_loss(per_token, mask, cfg.aggregation, cfg.max_new_tokens)
        return loss, clip_frac

    def value_update(self, batch: Batch) -> float:
        """One regression step of PPO's value model towards batch.returns. Returns the loss."""
        rollout = batch.rollout
        values = self.value(rollout.prompt_ids, rollout.responses, self.cfg.group_size)  # [B, T]
        loss = self.value_loss_fn(values, batch.returns, rollout.response_mask)
        self.value_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.value_opt.step()
        return loss.item()

    def step(self, step: int) -> dict:
        """One RL step (sample, score, `epochs` updates); returns its metrics and signals."""
        self.hooks.before_step(step)
        t0, c0 = time.perf_counter(), time.process_time()
        self.policy.eval()
        batch = self.rollout(step)
        self.hooks.after_rollout(batch)
        batch.ref_logps = self.reference_logps(batch)
        t1, c1 = time.perf_counter(), time.process_time()
        self.policy.train()
        extra = self.advantages(batch)
        self.hooks.after_advantages(batch)
        updates = self.update(batch)
        t2, c2 = time.perf_counter(), time.process_time()
        metrics = {
            **answer_metrics(batch.scores),
            "step": step,
            "reward": float(batch.rewards.mean()),
            "loss": float(np.mean(updates["loss"])),
            "all_same_group_fraction": all_same_fraction(batch.scores["reward"], self.cfg.group_size),
            "clip_fraction": float(np.mean(updates["clip_fraction"][1:])) if self.cfg.epochs > 1 else 0.0,
            "clip_fraction_per_update": updates["clip_fraction"],
            "value_loss": float(np.mean(updates["value_loss"])) if updates["value_loss"] else float("nan"),
            "sampling_s": t1 - t0,
            "training_s": t2 - t1,
            "sampling_cpu_s": c1 - c0,  # processor seconds (PPO: with its value updates' thread): what the step costs
            "training_cpu_s": c2 - c1,
            **({"value_cpu_s": batch.value_cpu_s + updates["value_cpu_s"]} if self.value is not None else {}),
            **extra,
            **(self.signals(batch, updates, step) if self.record_signals else {}),
        }
        self.hooks.after_step(metrics)
        return metrics

    def value_updates(self, batch: Batch) -> tuple[list[float], float]:
        """PPO's `epochs` regression steps of the value model on one batch: their losses, and the processor seconds
        they took (on the thread they run on)."""
        c0 = time.thread_time()
        losses = [self.value_update(batch) for _epoch in range(self.cfg.epochs)]
        return losses, time.thread_time() - c0

    def update(self, batch: Batch) -> dict:
        """The `epochs` updates on one batch; per-update lists of loss, clip_fraction, approx_kl, grad_norm and
        value_loss, and old_logps [B, T] (the sampling policy's).

        PPO's value updates read only the batch (its returns were computed before), never the policy, so they run on a
        second thread beside the policy's updates: the same operations in the same order on each model,
        the same numbers, in about the time of the policy's updates alone when a second core is free."""
        cfg, rollout = self.cfg, batch.rollout
        out = {key: [] for key in ("loss", "clip_fraction", "approx_kl", "grad_norm", "value_loss")}
        values_done = self.beside.submit(self.value_updates, batch) if self.value is not None else None
        every_row = trains_every_answer(cfg.algo, cfg.beta)
        watch = cfg.epochs > 1  # the clip fraction and approx KL of later updates read every answer's ratio
        old_logps = None
        for _epoch in range(cfg.epochs):
            logps = update_logps(self.policy, rollout, batch.advantages, cfg.group_size, every_row, watch)  # [B, T]
            if old_logps is None:  # the policy has not moved yet: these are the sampling log-probs
                old_logps = logps.detach()
            self.hooks.before_update(batch, logps, old_logps)
            loss, clip_frac = self.policy_loss(batch, logps, old_logps)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            if self.record_signals:
                out["grad_norm"].append(signals.grad_norm(self.policy.parameters()))
                out["approx_kl"].append(signals.approx_kl(logps, old_logps, rollout.response_mask))
            self.opt.step()
            out["loss"].append(loss.item())
            out["clip_fraction"].append(clip_frac)
        value_cpu_s = 0.0
        if values_done is not None:
            out["value_loss"], value_cpu_s = values_done.result()
        return {**out, "old_logps": old_logps, "value_cpu_s": value_cpu_s}

    def signals(self, batch: Batch, updates: dict, step: int) -> dict:
        """What to log when a run breaks (`rlvr.signals`): reward and advantage spread, entropy, approx KL and
        gradient norm per update, KL to the reference (every KL_EVERY steps without a KL term), truncation, PPO's
        explained variance."""
        rollout, mask = batch.rollout, batch.rollout.response_mask
        ref_logps = batch.ref_logps
        if ref_logps is None and step % signals.KL_EVERY == 0:
            ref_logps = self.reference_logps(batch, always=True)
        kl = ((updates["old_logps"] - ref_logps) * mask).sum(dim=1).mean() if ref_logps is not None else math.nan
        out = {
            "reward_std": signals.reward_std(batch.rewards),
            "advantage_std": signals.advantage_std(batch.advantages, mask),
            "entropy": signals.mean_entropy(rollout.entropy, mask),
            "approx_kl": float(np.mean(updates["approx_kl"][1:])) if self.cfg.epochs > 1 else 0.0,
            "approx_kl_per_update": updates["approx_kl"],
            "grad_norm": float(np.mean(updates["grad_norm"])),
            "kl_to_ref": float(kl),
            "truncated_fraction": signals.truncated_fraction(rollout.responses),
        }
        if batch.returns is not None:
            out["explained_variance"] = signals.explained_variance(batch.values, batch.returns, mask)
        return out


def train_rl(
    cfg: RLConfig = RLConfig(),
    policy: TinyTransformer | None = None,
    on_step: OnStep | None = None,
    progress: bool = True,
    hooks: StepHooks | None = None,
    record_signals: bool = True,
    trainer: Callable[..., Trainer] = Trainer,
) -> RunResult:
    """Run `cfg.steps` RL steps from the warm-up model (or `policy`); deterministic given the seeds.

    Args:
        on_step: called after every step as on_step(step, total, history) (live plots, progress bars).
        progress: show a tqdm progress bar.
        hooks: StepHooks that record more per step (same seeds, same numbers).
        record_signals: record `rlvr.signals` (False only to measure their cost; same numbers either way).
        trainer: the Trainer (sub)class, called as trainer(cfg, policy, hooks, record_signals=...): `rlvr.a5` passes
            one whose updates run a student's assignment code.
    """
    with training_threads():  # one thread count wherever it trains: see rlvr.config.training_threads
        torch.manual_seed(cfg.seed)
        trainer = trainer(cfg, policy, hooks, record_signals=record_signals)
        history: list[dict] = []
        bar = _progress_bar(cfg, progress)
        try:
            for step in range(cfg.steps):
                history.append(trainer.step(step))
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(acc=f"{history[-1]['accuracy']:.2f}", think=f"{history[-1]['cot_fraction']:.2f}")
                if on_step is not None:
                    on_step(step + 1, cfg.steps, history)
        finally:
            if bar is not None:
                bar.close()
    trainer.policy.eval()
    return RunResult(cfg, history, trainer.policy, timing_of(history))


def _progress_bar(cfg: RLConfig, enabled: bool):
    """A tqdm bar (notebook-aware) or None."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    updates = f", {cfg.epochs} updates per batch" if cfg.epochs > 1 else ""
    return tqdm(total=cfg.steps, desc=f"{cfg.algo} G={cfg.group_size}{updates}", leave=False)


def warmup_config(cfg: RLConfig) -> SFTConfig:
    """The warm-up a run starts from (the default warm-up for its teacher error rate and sft_seed)."""
    return SFTConfig(teacher_error_rate=cfg.teacher_error_rate, seed=cfg.sft_seed)


def warm_start(cfg: RLConfig) -> WarmUp:
    """The warm-up model a run starts from: the one `warmup_config` (and so `run_key`) names, cached on disk."""
    warm = warmup_config(cfg)
    return warm_up(warm.teacher_error_rate, warm.seed, cfg=warm)


def run_key(cfg: RLConfig) -> dict:
    """What determines a run's numbers: its RLConfig and the config of the warm-up it starts from."""
    return {**cfg.to_dict(), "warm_up": warmup_config(cfg).to_dict()}


def cache_entry(cfg: RLConfig) -> Entry:
    """The cache entry of an RL run (history and policy)."""
    return Entry("rl", run_key(cfg))


def run(
    cfg: RLConfig = RLConfig(), on_step: OnStep | None = None, progress: bool = True, use_cache: bool = True
) -> RunResult:
    """`train_rl` through the checkpoint cache: a configuration already run loads in well under a second."""
    if not use_cache:
        return train_rl(cfg, on_step=on_step, progress=progress)
    return cached_run(
        cache_entry(cfg),
        cfg,
        lambda on_step: train_rl(cfg, on_step=on_step, progress=progress),
        on_step,
        shell=lambda: TinyTransformer(warmup_config(cfg).model),  # a shell for the weights: loading never trains
    )


def final_metrics(policy: TinyTransformer, n_prompts: int = 2000, n_samples: int = 16, seed: int = 0) -> dict:
    """Held-out metrics at temperature 1 and pass@k (k = 1, 2, 4, ..., n_samples) from n_samples per prompt."""
    metrics = evaluate(policy, n_prompts, temperature=1.0, seed=seed)
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= n_samples]
    metrics["pass_at_k"] = pass_at_k_curve(policy, n_prompts, n_samples, ks, seed=seed)
    return metrics
