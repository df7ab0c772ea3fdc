"""Notebook 04: a fair race between PPO and GRPO (lecture section 3).

Three runs from the same warm-up model, 256 answers per step (32 prompts x 8 answers), 200 steps:
PPO with a value model and 8 clipped updates per batch ("PPO-8"), GRPO with 1 update per batch ("GRPO-1") and
GRPO with 8 updates per batch ("GRPO-8"). Every run goes through `race_run`: the RL loop of `rlvr.train`
(the same seeds, so the same numbers) plus a few diagnostics, cached on disk per configuration:

* for every update: the share of tokens whose ratio left [1 - eps, 1 + eps] (either side) and the mean |log ratio|;
* for PPO: the mean squared advantage with the value baseline, with no baseline and with the leave-one-out group
  mean, all measured BEFORE the value model is trained on the batch (a fair, out-of-sample check);
* the CPU seconds of sampling and of training (the wall-clock seconds of `rlvr.train` are kept too).

What the learner reads of the runs (the tables, the comparisons, section 3's statements next to ours) is in
`rlvr.narration.race`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from rlvr.algorithms import algorithm
from rlvr.cache import Entry
from rlvr.config import SIZES, one_thread, size
from rlvr.experiments.common import finite_mean, first_step, smooth
from rlvr.model import sample
from rlvr.objectives import compute_advantages, masked_mean
from rlvr.task import prompt_tokens, sample_prompts, score_batch
from rlvr.runs import RunResult, cached_run, stored_run, timing_of
from rlvr.train import Batch, RLConfig, StepHooks, run_key, train_rl
from rlvr.train import cache_entry as rl_entry
from rlvr.train import run as rl_run

STEPS = SIZES["rl_steps"][0]  # RL steps of every run (full size; fast mode: size("rl_steps"))
THINK_TARGET = 0.8  # "steps to reach 80% think-first share"
SMOOTH = 5  # trailing moving average (steps) before reading off a crossing
COST_WINDOW = 9  # steps whose median CPU cost stands for each step's on the cost axis (resists load spikes)
ACCURACY_STEP = 25  # "accuracy at step 25": mean over steps 21-25
FIGURE_STEPS = SIZES["race_figure_steps"][0]  # the lecture's statements are about the early race
NO_CLIP_EPS = 1e6  # "without clipping": the band [1 - eps, 1 + eps] contains every ratio

RACE = {  # label -> RLConfig fields; epochs_per_batch None = the algorithm's default (8 for PPO, 1 for GRPO)
    "PPO-8": {"algo": "ppo"},
    "GRPO-1": {"algo": "grpo"},
    "GRPO-8": {"algo": "grpo", "epochs_per_batch": 8},
}


# ----------------------------------------------------------------------------------------------- configurations
def race_config(name: str = "GRPO-8", steps: int | None = None, seed: int = 0, **overrides) -> RLConfig:
    """The RLConfig of one run of the race (steps default: size("rl_steps"), 200 or the CI size); overrides change
    fields."""
    fields = {**RACE[name], **overrides}
    cfg = RLConfig.replicate(seed, steps=size("rl_steps") if steps is None else steps, **fields)
    return normalised(cfg)


def normalised(cfg: RLConfig) -> RLConfig:
    """The same run with one canonical config: default update count as None; with 1 update eps is irrelevant."""
    if cfg.epochs_per_batch == algorithm(cfg.algo).updates_per_batch:
        cfg = replace(cfg, epochs_per_batch=None)
    if cfg.epochs == 1 and not algorithm(cfg.algo).value_model:
        cfg = replace(cfg, clip_eps=RLConfig.clip_eps)  # the ratio is exactly 1 in the only update: eps does nothing
    return cfg


# ----------------------------------------------------------------------------------------------- the instrumented loop
def baseline_diagnostics(
    returns: torch.Tensor, advantages: torch.Tensor, response_mask: torch.Tensor, group_size: int
) -> dict:
    """Mean squared advantage (over real tokens) with PPO's value baseline, with none, and with the mean of the
    OTHER answers to the same prompt (leave-one-out, RLOO: like the value model, a baseline that does not depend on
    the answer itself, so the expected gradient is unchanged and the comparison is fair).

    Args:
        returns: [B, T] reward-to-go of each token (with gamma = lam = 1 and beta = 0: the answer's score).
        advantages: [B, T] PPO's advantages, returns - values.
        response_mask: [B, T] bool.
        group_size: answers per prompt (G); the leave-one-out mean needs G >= 2 (NaN otherwise).
    Returns:
        adv_sq_value, adv_sq_none, adv_sq_loo (floats).
    """
    diagnostics = {
        "adv_sq_value": float(masked_mean(advantages**2, response_mask)),
        "adv_sq_none": float(masked_mean(returns**2, response_mask)),
        "adv_sq_loo": math.nan,
    }
    if group_size >= 2:
        totals = returns[:, 0].view(-1, group_size)  # [P, G] return of each whole answer
        loo_mean = ((totals.sum(dim=1, keepdim=True) - totals) / (group_size - 1)).reshape(-1)  # [B]
        diagnostics["adv_sq_loo"] = float(masked_mean((returns - loo_mean[:, None]) ** 2, response_mask))
    return diagnostics


def ratio_diagnostics(
    logps: torch.Tensor, old_logps: torch.Tensor, response_mask: torch.Tensor, clip_eps: float
) -> tuple[float, float]:
    """Share of real tokens with ratio outside [1 - eps, 1 + eps] (either side) and their mean |log ratio|.

    Args:
        logps, old_logps: [B, T] log-probs under the policy being updated and the sampling policy.
    """
    log_ratio = (logps - old_logps).detach()  # [B, T]
    outside = (log_ratio.exp() - 1).abs() > clip_eps  # [B, T]
    return float(masked_mean(outside.float(), response_mask)), float(masked_mean(log_ratio.abs(), response_mask))


class RaceHooks(StepHooks):
    """Records, on top of `rlvr.train`'s metrics (which include the processor seconds of sampling and of training:
    unlike wall-clock time, they barely depend on what else the machine runs), the ratio diagnostics of every update
    and PPO's baseline diagnostics. The run itself is unchanged, number for number."""

    def __init__(self, cfg: RLConfig):
        self.group_size, self.clip_eps = cfg.group_size, cfg.clip_eps

    def before_step(self, step: int) -> None:
        """Empty the per-update lists."""
        self.outside, self.abs_log_ratio, self.extra = [], [], {}

    def after_advantages(self, batch: Batch) -> None:
        """PPO: the baseline diagnostics (value model not yet trained on the batch)."""
        if batch.returns is not None:
            self.extra = baseline_diagnostics(
                batch.returns, batch.advantages, batch.rollout.response_mask, self.group_size
            )

    def before_update(self, batch: Batch, logps: torch.Tensor, old_logps: torch.Tensor) -> None:
        """How far this update's ratio is from 1."""
        outside, abs_log_ratio = ratio_diagnostics(logps, old_logps, batch.rollout.response_mask, self.clip_eps)
        self.outside.append(outside)
        self.abs_log_ratio.append(abs_log_ratio)

    def after_step(self, metrics: dict) -> None:
        """Add ratio_outside_per_update and abs_log_ratio_per_update [updates] (and PPO's baseline diagnostics)."""
        metrics.update(self.extra)
        metrics["ratio_outside_per_update"] = self.outside
        metrics["abs_log_ratio_per_update"] = self.abs_log_ratio


def per_update(run: RunResult, key: str) -> np.ndarray:
    """A per-update metric of a run (e.g. clip_fraction_per_update) as an array [steps, updates]."""
    return np.array([h[key] for h in run.history], dtype=float).reshape(len(run.history), -1)


def prefix(run: RunResult, steps: int) -> RunResult:
    """The first `steps` steps of a run (the same numbers a run of `steps` steps gives: seeds do not depend on
    length)."""
    history = run.history[:steps]
    return RunResult(replace(run.config, steps=len(history)), history, None, timing_of(history), run.from_cache)


def clock(run: RunResult, kind: str = "cpu") -> np.ndarray:
    """Seconds spent before each step's metrics were known (earlier steps + this step's sampling). [steps]

    kind: "cpu" (what the run costs: each step's CPU seconds replaced by the median of the COST_WINDOW steps around
    it, so a burst of other jobs on the machine does not move a run along the axis) or "wall" (wall-clock time as
    measured: what you wait, inflated when the machine is busy).
    """
    if kind == "cpu":
        sampling = rolling_median(run.curve("sampling_cpu_s"), COST_WINDOW)  # [steps]
        training = rolling_median(run.curve("training_cpu_s"), COST_WINDOW)  # [steps]
    else:
        sampling, training = run.curve("sampling_s"), run.curve("training_s")
    return np.cumsum(sampling + training) - training


def train_race(cfg: RLConfig, on_step=None, progress: bool = True, policy=None) -> RunResult:
    """`rlvr.train.train_rl` with RaceHooks (same seeds, same numbers) and no weights kept.

    Args:
        on_step: called after every step as on_step(step, total, history).
        policy: start from this model instead of the cached warm-up model (tests).
    """
    result = train_rl(cfg, policy, on_step, progress, hooks=RaceHooks(cfg))
    return RunResult(cfg, result.history, None, timing_of(result.history))


def is_plain_run(cfg: RLConfig) -> bool:
    """A run with one update per batch and no value model (GRPO-1) is the plain RL run of `rlvr.train.run`, the one
    notebook 03 trains: its only update's ratio is exactly 1, so the race has nothing of its own to record."""
    return cfg.epochs == 1 and not algorithm(cfg.algo).value_model


def with_ratio_at_one(run: RunResult) -> RunResult:
    """A plain run with the race's per-update readings: the ratio of a batch's only update is exactly 1 (the policy
    has not moved since it sampled), so no token is outside the band and |log ratio| is 0."""
    history = [{**h, "ratio_outside_per_update": [0.0], "abs_log_ratio_per_update": [0.0]} for h in run.history]
    return replace(run, history=history)


def race_run(cfg: RLConfig, on_step=None, progress: bool = True) -> RunResult:
    """`train_race` through the disk cache: a configuration already run loads in well under a second. A plain run
    (`is_plain_run`) is `rlvr.train.run`'s, shared with notebook 03.

    A shorter run of a configuration whose full-size (200-step) run is cached is read from that run's first steps.
    """
    if is_plain_run(cfg):
        return with_ratio_at_one(rl_run(cfg, on_step, progress))

    def from_longer() -> RunResult | None:
        longer = stored(replace(cfg, steps=STEPS)) if cfg.steps < STEPS else None
        return None if longer is None else prefix(longer, cfg.steps)

    train = lambda on_step: train_race(cfg, on_step=on_step, progress=progress)  # noqa: E731
    return cached_run(cache_entry(cfg), cfg, train, on_step, shortcut=from_longer)


def cache_entry(cfg: RLConfig) -> Entry:
    """The cache entry of a race run: a plain run's `rlvr.train` entry, else the history with the race's diagnostics
    (no weights)."""
    return rl_entry(cfg) if is_plain_run(cfg) else Entry("race", run_key(cfg))


def stored(cfg: RLConfig) -> RunResult | None:
    """The cached race run of `cfg`, or None if it was never run (never trains)."""
    if is_plain_run(cfg):
        run = stored_run(rl_entry(cfg), cfg)
        return None if run is None else with_ratio_at_one(run)
    return stored_run(cache_entry(cfg), cfg)


def run_race(steps: int | None = None, seed: int = 0, progress: bool = True) -> dict[str, RunResult]:
    """The three runs of the race, label -> run (at full size a few minutes on a quiet laptop; cached)."""
    return {name: race_run(race_config(name, steps, seed), progress=progress) for name in RACE}


# ----------------------------------------------------------------------------------------------- reading the curves
def smoothed(run: RunResult, key: str, window: int = SMOOTH) -> np.ndarray:
    """One metric of a run, smoothed over the race's window (`common.smooth`). [steps]"""
    return smooth(run.curve(key), window)


def steps_to(run: RunResult, key: str = "cot_fraction", level: float = THINK_TARGET) -> int | None:
    """RL steps until the (smoothed) metric `key` reaches `level` (None if never)."""
    return first_step(smoothed(run, key) >= level)


def seconds_to(
    run: RunResult, key: str = "cot_fraction", level: float = THINK_TARGET, kind: str = "cpu"
) -> float | None:
    """CPU (or wall-clock) seconds until the (smoothed) metric `key` reaches `level` (None if never)."""
    step = steps_to(run, key, level)
    return None if step is None else float(clock(run, kind)[step])


def steps_to_think(run: RunResult, level: float = THINK_TARGET) -> int | None:
    """RL steps until the (smoothed) think-first share reaches `level` (None if never)."""
    return steps_to(run, "cot_fraction", level)


def accuracy_at(run: RunResult, step: int = ACCURACY_STEP, window: int = SMOOTH) -> float:
    """Accuracy at `step` (mean over the `window` steps up to it; NaN if the run is shorter)."""
    if step >= len(run.history):
        return math.nan
    return float(smoothed(run, "accuracy", window)[step])


def value_helps_step(run: RunResult) -> dict:
    """When PPO's value baseline starts to help: first step (from 1) where its squared advantage is below no baseline,
    and below the leave-one-out group mean (smoothed curves; None if never)."""
    value, none, loo = (smoothed(run, key) for key in ("adv_sq_value", "adv_sq_none", "adv_sq_loo"))
    return {
        "beats_no_baseline": first_step(value < none, start=1),
        "beats_group_mean": first_step(value < loo, start=1),
    }


def ratio(a: int | float | None, b: int | float | None) -> float:
    """a / b of two readings (steps or seconds), NaN when either is missing or b is 0."""
    return a / b if a is not None and b else math.nan


def final_value(run: RunResult, key: str = "accuracy", last: int = 10) -> float:
    """Mean of a metric over the last `last` steps."""
    return finite_mean(run.curve(key)[-last:])


def all_equal_share(run: RunResult, steps: int | None = None) -> float:
    """Mean share of groups whose rewards all agree (advantage 0 on every answer), over the first `steps` steps (all
    if None)."""
    return finite_mean(run.curve("all_same_group_fraction")[:steps])


def cost_ratios(runs: dict[str, RunResult], reference: str = "GRPO-1") -> dict[str, dict]:
    """Per run: median training and sampling CPU seconds per step, each also as a multiple of `reference`'s (medians
    resist load spikes on a shared machine)."""
    out = {}
    base = seconds_per_step(runs[reference])
    for name, run in runs.items():
        timing = seconds_per_step(run)
        out[name] = {
            "training_cpu_s": timing["training_cpu_s"],
            "sampling_cpu_s": timing["sampling_cpu_s"],
            "training_x": timing["training_cpu_s"] / base["training_cpu_s"],
            "sampling_x": timing["sampling_cpu_s"] / base["sampling_cpu_s"],
            **{key: timing[key] for key in ("value_cpu_s", "policy_cpu_s") if key in timing},
        }
    return out


def clip_summary(run: RunResult) -> dict:
    """How hard the clip works in a multi-update run: the clipped share in the last update (mean over steps), and the
    largest clipped share of a step (mean over its updates after the first) with that step."""
    per_step = run.curve("clip_fraction")
    peak = int(np.nanargmax(per_step)) if np.isfinite(per_step).any() else -1
    return {
        "last_update": float(mean_clip_per_update(run)[-1]),
        "peak": float(per_step[peak]) if peak >= 0 else math.nan,
        "peak_step": peak,
        "abs_log_ratio_last_update": float(mean_clip_per_update(run, "abs_log_ratio_per_update")[-1]),
    }


def mean_clip_per_update(run: RunResult, key: str = "clip_fraction_per_update") -> np.ndarray:
    """Mean over steps of a per-update metric. Returns [updates]."""
    return per_update(run, key).mean(axis=0)


def rolling_median(values: np.ndarray, window: int) -> np.ndarray:
    """Median of the `window` values centred on each one (fewer at the ends). [n] -> [n]"""
    half = window // 2
    return np.array([np.median(values[max(0, i - half) : i + half + 1]) for i in range(len(values))])


def seconds_per_step(run: RunResult) -> dict:
    """Median CPU and wall-clock seconds per step of sampling and of training (medians resist load spikes); with a
    value model, its share of the training CPU time (value_cpu_s) and the policy's (policy_cpu_s, the rest)."""
    keys = ("sampling_cpu_s", "training_cpu_s", "sampling_s", "training_s")
    out = {key: float(np.median(run.curve(key))) for key in keys}
    if run.history and "value_cpu_s" in run.history[0]:
        value = run.curve("value_cpu_s")  # [steps]
        out["value_cpu_s"] = float(np.median(value))
        out["policy_cpu_s"] = float(np.median(run.curve("training_cpu_s") - value))
    return out


# ----------------------------------------------------------------------------------------------- the value model


@dataclass
class BaselineScales:
    """GRPO's group mean (the answer itself included) against the leave-one-out mean, on one sampled batch."""

    group_size: int
    n_answers: int
    n_all_equal: int  # answers in groups whose rewards are all equal (both advantages are 0)
    ratios: np.ndarray  # [n] A_mean / A_loo for every answer whose leave-one-out advantage is not 0
    mean_sq_ratio: float  # mean of A_mean^2 / mean of A_loo^2 over the batch


@one_thread()
def mean_vs_leave_one_out(model, n_prompts: int = 32, group_size: int = 8, seed: int = 0) -> BaselineScales:
    """Sample n_prompts x group_size answers from `model`, score them, and compare the two baselines' advantages."""
    rng, generator = np.random.default_rng(seed), torch.Generator().manual_seed(seed)
    prompts = sample_prompts(n_prompts, rng)  # [P, 10]
    rollout = sample(model, prompt_tokens(prompts), 1.0, generator=generator, group_size=group_size)
    digits = torch.as_tensor(np.repeat(prompts, group_size, axis=0))  # [B, 10]
    rewards = score_batch(digits, rollout.responses)["reward"]  # [B]
    a_mean = compute_advantages(rewards, group_size, "mean")  # [B] r_i - mean(r)
    a_loo = compute_advantages(rewards, group_size, "rloo")  # [B] r_i - mean of the others
    moving = a_loo != 0
    return BaselineScales(
        group_size,
        len(rewards),
        int((~moving).sum()),
        (a_mean[moving] / a_loo[moving]).numpy(),
        float((a_mean**2).mean() / (a_loo**2).mean()),
    )


# ----------------------------------------------------------------------------------------------- costs
def trained_parameters(algo: str, n_policy: int, d_model: int) -> int:
    """Parameters the optimiser updates: the policy, plus for PPO a value model (policy-sized body + d_model+1 head)."""
    return n_policy + (n_policy + d_model + 1 if algo == "ppo" else 0)


# ----------------------------------------------------------------------------------------------- the panel


def panel_config(
    algo: str, lr: float, clip_eps: float, updates: int, steps: int | None = None, seed: int = 0
) -> RLConfig:
    """The RLConfig of one panel setting (canonical, so equivalent settings share one cached run)."""
    steps = size("rl_steps") if steps is None else steps
    return normalised(
        RLConfig.replicate(
            seed, algo=algo, steps=steps, lr=float(lr), clip_eps=float(clip_eps), epochs_per_batch=int(updates)
        )
    )


# ----------------------------------------------------------------------------------------------- for the rows
def race_measurements(runs: dict[str, RunResult], steps: int = FIGURE_STEPS) -> dict:
    """Every number the comparison table reports, from the first `steps` steps of one seed's three runs."""
    runs = {name: prefix(run, steps) for name, run in runs.items()}
    steps = {name: steps_to_think(run) for name, run in runs.items()}
    helps = value_helps_step(runs["PPO-8"])
    timing = {name: seconds_per_step(run) for name, run in runs.items()}
    return {
        "steps": min(len(run.history) for run in runs.values()),
        "value_at_start": runs["PPO-8"].history[0]["value_mean"],
        **{f"steps_{name}": steps[name] for name in runs},
        **{f"accuracy_{name}": accuracy_at(run) for name, run in runs.items()},
        "speedup_ppo_vs_grpo1": ratio(steps["GRPO-1"], steps["PPO-8"]),
        "speedup_ppo_vs_grpo8": ratio(steps["GRPO-8"], steps["PPO-8"]),
        "value_beats_no_baseline": helps["beats_no_baseline"],
        "value_beats_group_mean": helps["beats_group_mean"],
        "training_s_ratio_ppo_grpo8": timing["PPO-8"]["training_cpu_s"] / timing["GRPO-8"]["training_cpu_s"],
    }
