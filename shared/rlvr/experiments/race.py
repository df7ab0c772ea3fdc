"""Notebook 04: a fair race between PPO and GRPO (lecture section 3).

Three runs from the same warm-up model, 256 answers per step (32 prompts x 8 answers), 200 steps:
PPO with a value model and 8 clipped updates per batch ("PPO-8"), GRPO with 1 update per batch ("GRPO-1") and
GRPO with 8 updates per batch ("GRPO-8"). Every run goes through `race_run`: the RL loop of `rlvr.train`
(the same seeds, so the same numbers) plus a few diagnostics, cached on disk per configuration:

* for every update: the share of tokens whose ratio left [1 - eps, 1 + eps] (either side) and the mean |log ratio|;
* for PPO: the mean squared advantage with the value baseline, with no baseline and with the leave-one-out group
  mean, all measured BEFORE the value model is trained on the batch (a fair, out-of-sample check);
* the CPU seconds of sampling and of training (the wall-clock seconds of `rlvr.train` are kept too).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from rlvr.algorithms import algorithm
from rlvr.cache import Entry
from rlvr.config import SIZES, one_thread, size
from rlvr.experiments.common import Row, claim_row, finite_mean, first_step, multiple, seconds_text, smooth
from rlvr.experiments.ppo_parts import memory_gb, memory_totals
from rlvr.i18n import N_, _, join, join_clauses, pad
from rlvr.model import sample
from rlvr.objectives import compute_advantages, masked_mean
from rlvr.task import prompt_tokens, sample_prompts, score_batch
from rlvr.runs import RunResult, cached_run, stored_run, timing_of
from rlvr.train import Batch, RLConfig, StepHooks, run_key, train_rl

STEPS = SIZES["rl_steps"][0]  # RL steps of every run (full size; fast mode: size("rl_steps"))
THINK_TARGET = 0.8  # "steps to reach 80% think-first share"
SMOOTH = 5  # trailing moving average (steps) before reading off a crossing
COST_WINDOW = 9  # steps whose median CPU cost stands for each step's on the cost axis (resists load spikes)
ACCURACY_STEP = 25  # "accuracy at step 25": mean over steps 21-25
FIGURE_STEPS = SIZES["race_figure_steps"][0]  # the lecture's statements are about the early race
SECTION = "3"
NO_CLIP_EPS = 1e6  # "without clipping": the band [1 - eps, 1 + eps] contains every ratio

RACE = {  # label -> RLConfig fields; epochs_per_batch None = the algorithm's default (8 for PPO, 1 for GRPO)
    "PPO-8": {"algo": "ppo"},
    "GRPO-1": {"algo": "grpo"},
    "GRPO-8": {"algo": "grpo", "epochs_per_batch": 8},
}

# What the lecture says in section 3, and the band that counts as agreeing (fixed from the wording before measuring:
# "much faster" = at least 1.5x fewer steps; "the gap disappears" = within a factor 1.5 either way).
MUCH_FASTER = (1.5, math.inf)
SAME_SPEED = (1 / 1.5, 1.5)


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
    """Records, on top of `rlvr.train`'s metrics, the ratio diagnostics of every update, PPO's baseline diagnostics,
    and the CPU time of sampling and training (unlike wall-clock time, it barely depends on what else the machine
    runs). The run itself is unchanged, number for number."""

    def __init__(self, cfg: RLConfig):
        self.group_size, self.clip_eps = cfg.group_size, cfg.clip_eps

    def before_step(self, step: int) -> None:
        """Start the step's CPU clock and empty the per-update lists."""
        self.start, self.outside, self.abs_log_ratio, self.extra = time.process_time(), [], [], {}

    def after_rollout(self, batch: Batch) -> None:
        """Sampling and scoring are done: their CPU seconds."""
        self.sampling_cpu = time.process_time() - self.start

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
        """Add ratio_outside_per_update, abs_log_ratio_per_update [updates], sampling_cpu_s and training_cpu_s."""
        metrics.update(self.extra)
        metrics["training_cpu_s"] = time.process_time() - self.start - self.sampling_cpu
        metrics["sampling_cpu_s"] = self.sampling_cpu
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


def race_run(cfg: RLConfig, on_step=None, progress: bool = True) -> RunResult:
    """`train_race` through the disk cache: a configuration already run loads in well under a second.

    A shorter run of a configuration whose full-size (200-step) run is cached is read from that run's first steps.
    """

    def from_longer() -> RunResult | None:
        longer = stored(replace(cfg, steps=STEPS)) if cfg.steps < STEPS else None
        return None if longer is None else prefix(longer, cfg.steps)

    train = lambda on_step: train_race(cfg, on_step=on_step, progress=progress)  # noqa: E731
    return cached_run(cache_entry(cfg), cfg, train, on_step, shortcut=from_longer)


def cache_entry(cfg: RLConfig) -> Entry:
    """The cache entry of a race run (history with the race's diagnostics, no weights)."""
    return Entry("race", run_key(cfg))


def stored(cfg: RLConfig) -> RunResult | None:
    """The cached race run of `cfg`, or None if it was never run (never trains)."""
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


def step_text(step: int | None, steps: int | None = None) -> str:
    """A step found by a crossing, or what to print when there is none ('not reached in 30 steps')."""
    if step is not None:
        return f"{step:d}"
    return _("not reached in {steps} steps").format(steps=steps) if steps else _("not reached")


def race_table(runs: dict[str, RunResult], accuracy_level: float = 0.8) -> str:
    """Markdown table: steps and seconds to 80% think-first share and to `accuracy_level` accuracy, and more; a
    footnote says how the steps are read off ('—' where a run is too short for a column)."""

    def crossing(value, seconds=False):
        if value is None:
            return _("not reached")
        return seconds_text(value) if seconds else f"{value:.0f}"

    think, accurate = f"{THINK_TARGET:.0%}", f"{accuracy_level:.0%}"
    head = [
        "",
        _("steps to {level} think-first").format(level=think),
        _("CPU time to {level} think-first").format(level=think),
        _("steps to {level} accuracy").format(level=accurate),
        _("CPU time to {level} accuracy").format(level=accurate),
        _("accuracy at step {step}").format(step=ACCURACY_STEP),
        _("accuracy, last 10 steps"),
        _("sampling CPU s/step"),
        _("training CPU s/step"),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    short = any(len(run.history) <= ACCURACY_STEP for run in runs.values())
    for name, run in runs.items():
        timing = seconds_per_step(run)
        acc_at = accuracy_at(run)
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    crossing(steps_to(run)),
                    crossing(seconds_to(run), True),
                    crossing(steps_to(run, "accuracy", accuracy_level)),
                    crossing(seconds_to(run, "accuracy", accuracy_level), True),
                    f"{acc_at:.0%}" if math.isfinite(acc_at) else "—",
                    f"{final_value(run):.0%}",
                    f"{timing['sampling_cpu_s']:.2f}",
                    f"{timing['training_cpu_s']:.2f}",
                ]
            )
            + " |"
        )
    lines.append("")
    note = _(
        'Steps count from 0. "Steps to 80%" is the first step whose mean over its last {window} steps (the solid '
        "curves of the figure) reaches 80%; the CPU time is the run's CPU seconds before that step's metrics were "
        "known."
    ).format(window=SMOOTH)
    if short:
        note += " " + _('"—": the run has fewer than {steps} steps.').format(steps=ACCURACY_STEP + 1)
    lines.append(note)
    return "\n".join(lines)


def cost_ratios(runs: dict[str, RunResult], reference: str = "GRPO-1") -> dict[str, dict]:
    """Per run: median training and sampling CPU seconds per step and the whole run's CPU time at those medians,
    each also as a multiple of `reference`'s (medians resist load spikes on a shared machine)."""
    out = {}
    base = seconds_per_step(runs[reference])
    for name, run in runs.items():
        timing = seconds_per_step(run)
        total = len(run.history) * (timing["sampling_cpu_s"] + timing["training_cpu_s"])
        base_total = len(runs[reference].history) * (base["sampling_cpu_s"] + base["training_cpu_s"])
        out[name] = {
            "training_cpu_s": timing["training_cpu_s"],
            "sampling_cpu_s": timing["sampling_cpu_s"],
            "run_cpu_s": total,
            "training_x": timing["training_cpu_s"] / base["training_cpu_s"],
            "sampling_x": timing["sampling_cpu_s"] / base["sampling_cpu_s"],
            "run_x": total / base_total,
        }
    return out


def ratio_text(name: str, a: float, b: float, reference: str) -> str:
    """'GRPO-1 / PPO-8 = 3.0x' (Chinese: 'GRPO-1 是 PPO-8 的 3.0 倍'), the ratio a / b of two runs' numbers."""
    if a is not None and b:
        return _("{name} / {reference} = {x}x").format(name=name, reference=reference, x=f"{a / b:.1f}")
    return _("{name} / {reference} = n/a").format(name=name, reference=reference)


def race_summary_text(runs: dict[str, RunResult], accuracy_level: float = 0.8, reference: str = "GRPO-1") -> str:
    """The race's comparisons from the runs themselves (what the prose after the table reads): steps to each level
    and their ratios to PPO-8's, then the CPU cost per step and per run as multiples of `reference`'s."""
    levels = (
        ("cot_fraction", _("{level} think-first").format(level=f"{THINK_TARGET:.0%}"), THINK_TARGET),
        ("accuracy", _("{level} accuracy").format(level=f"{accuracy_level:.0%}"), accuracy_level),
    )
    lines = []
    for key, what, level in levels:
        s = {name: steps_to(run, key, level) for name, run in runs.items()}
        lines.append(
            _("steps to {what}: {steps}   ({ratios})").format(
                what=what,
                steps=join(f"{name} {step_text(s[name])}" for name in runs),
                ratios=join_clauses(ratio_text(name, s[name], s["PPO-8"], "PPO-8") for name in runs if name != "PPO-8"),
            )
        )
    for key, what, level in levels:
        seconds = {name: seconds_to(run, key, level) for name, run in runs.items()}
        reached = {name: t for name, t in seconds.items() if t is not None}
        times = join(f"{name} {seconds_text(t) if t is not None else _('not reached')}" for name, t in seconds.items())
        if reached:
            text = _("CPU time to {what}: {times}   (least: {least})")
        else:
            text = _("CPU time to {what}: {times}")
        lines.append(text.format(what=what, times=times, least=min(reached, key=reached.get) if reached else ""))
    costs = cost_ratios(runs, reference)
    others = [name for name in runs if name != reference]
    n = len(runs[reference].history)
    pair = (
        "   "
        + _("({ratio})").format(
            ratio=ratio_text("PPO-8", costs["PPO-8"]["training_cpu_s"], costs["GRPO-8"]["training_cpu_s"], "GRPO-8")
        )
        if {"PPO-8", "GRPO-8"} <= set(costs)
        else ""
    )
    lines.append(
        _("training CPU time per step (median), as a multiple of {reference}'s: {multiples}").format(
            reference=reference,
            multiples=join(f"{name} " + multiple(f"{costs[name]['training_x']:.1f}") for name in others),
        )
        + pair
    )
    lines.append(
        _("sampling CPU time per step (median), as a multiple of {reference}'s: {multiples}").format(
            reference=reference,
            multiples=join(f"{name} " + multiple(f"{costs[name]['sampling_x']:.1f}") for name in others),
        )
    )
    lines.append(
        _("CPU time of all {n} steps at the median cost per step: {times}   ({multiples})").format(
            n=n,
            times=join(f"{name} {seconds_text(c['run_cpu_s'])}" for name, c in costs.items()),
            multiples=join_clauses(
                _("{name} = {x}x {reference}").format(name=name, x=f"{costs[name]['run_x']:.1f}", reference=reference)
                for name in others
            ),
        )
    )
    return "\n".join(lines)


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
    """Median CPU and wall-clock seconds per step of sampling and of training (medians resist load spikes)."""
    keys = ("sampling_cpu_s", "training_cpu_s", "sampling_s", "training_s")
    return {key: float(np.median(run.curve(key))) for key in keys}


# ----------------------------------------------------------------------------------------------- the value model
def value_text(run: RunResult) -> str:
    """What PPO's value model does early on, from a run's history: its prediction at steps 0 and 1 next to the mean
    reward, when its baseline first beats none and the leave-one-out mean, and how it compares afterwards."""

    def number(x: float) -> str:
        return "0" if x == 0 else f"{x:.3f}"

    lines = []
    for step in range(min(2, len(run.history))):
        h = run.history[step]
        lines.append(
            _("value prediction at step {step}: {value}   (mean reward of that batch: {reward})").format(
                step=step, value=number(h["value_mean"]), reward=f"{h['reward']:.3f}"
            )
        )
    helps = value_helps_step(run)
    steps = len(run.history)
    lines.append(
        _(
            "first step the value baseline's squared advantage is below no baseline's: {none}; below the "
            "leave-one-out mean's: {loo}"
        ).format(none=step_text(helps["beats_no_baseline"], steps), loo=step_text(helps["beats_group_mean"], steps))
    )
    value, loo = run.curve("adv_sq_value")[1:], run.curve("adv_sq_loo")[1:]  # [steps - 1] each
    defined = np.isfinite(value) & np.isfinite(loo) & (loo > 0)  # a batch whose groups all agree has loo = 0
    ratio = value[defined] / loo[defined]
    if len(ratio):
        left_out = len(value) - len(ratio)
        if left_out:
            which = _("steps 1-{last} ({left_out} left out: every group's rewards all equal)")
        else:
            which = _("steps 1-{last}")
        lines.append(
            _(
                "squared advantage, value model / leave-one-out mean, {which}: median {median}, below 1 at {share} "
                "of the steps"
            ).format(
                which=which.format(last=steps - 1, left_out=left_out),
                median=f"{np.median(ratio):.2f}",
                share=f"{np.mean(ratio < 1):.0%}",
            )
        )
    return "\n".join(lines)


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


def baseline_scales_text(scales: BaselineScales) -> str:
    """Three lines: the batch, the per-answer ratio of the two advantages, the ratio of their mean squares."""
    n = scales.n_answers
    return "\n".join(
        [
            _(
                "one batch of {n} answers ({prompts} prompts x {g}); {equal} of them in groups whose rewards are all "
                "equal (both advantages 0)"
            ).format(n=n, prompts=n // scales.group_size, g=scales.group_size, equal=scales.n_all_equal),
            _("A_mean / A_leave-one-out on the other {n} answers: from {low} to {high}").format(
                n=len(scales.ratios), low=f"{scales.ratios.min():.4f}", high=f"{scales.ratios.max():.4f}"
            ),
            _("mean of A_mean^2 / mean of A_leave-one-out^2: {ratio}").format(ratio=f"{scales.mean_sq_ratio:.4f}"),
        ]
    )


# ----------------------------------------------------------------------------------------------- the clip
def clip_text(runs: dict[str, RunResult]) -> str:
    """Per multi-update run: the clipped share by update (mean over steps), the largest step, and how far the ratios
    move in the last update next to the band's edge (log(1 + eps))."""
    lines = []
    for name, run in runs.items():
        if run.config.epochs < 2:
            continue
        clip = clip_summary(run)
        shares = "  ".join("0" if x == 0 else f"{x:.2%}" for x in mean_clip_per_update(run))
        edge = math.log(1 + run.config.clip_eps)
        lines += [
            _("{name}: clipped share by update (mean over steps): {shares}").format(name=name, shares=shares),
            _(
                "{name}: largest clipped share of one step (mean of its updates 2-{updates}): {peak} at step {step};  "
                "mean |log ratio| in the last update {last}; the clip starts at log(1 + clip_eps) = {edge}"
            ).format(
                name=name,
                updates=run.config.epochs,
                peak=f"{clip['peak']:.1%}",
                step=clip["peak_step"],
                last=f"{clip['abs_log_ratio_last_update']:.4f}",
                edge=f"{edge:.4f}",
            ),
        ]
    return "\n".join(lines)


def no_clip_text(runs: dict[str, RunResult], accuracy_level: float = 0.8) -> str:
    """Two runs that differ by the clip only (with, without): crossings, final accuracy, the largest gap between
    their smoothed accuracy curves, and how far the ratios move in the last update."""
    (_name_a, a), (_name_b, b) = runs.items()
    crossings = []
    for key, level, what in (
        ("cot_fraction", THINK_TARGET, _("to {level} think-first")),
        ("accuracy", accuracy_level, _("to {level} accuracy")),
    ):
        crossings.append(
            _("{what}: {with_clip} with the clip, {without} without").format(
                what=what.format(level=f"{level:.0%}"),
                with_clip=step_text(steps_to(a, key, level)),
                without=step_text(steps_to(b, key, level)),
            )
        )
    gap = np.abs(smoothed(a, "accuracy") - smoothed(b, "accuracy"))  # [steps]
    worst = int(np.nanargmax(gap))
    log_a, log_b = (clip_summary(run)["abs_log_ratio_last_update"] for run in (a, b))
    return "\n".join(
        [
            _("steps {crossings}").format(crossings=join_clauses(crossings)),
            _("accuracy over the last 10 steps: {with_clip} with the clip, {without} without").format(
                with_clip=f"{final_value(a):.1%}", without=f"{final_value(b):.1%}"
            ),
            _("largest gap between the two smoothed accuracy curves: {gap} points (step {step})").format(
                gap=f"{100 * gap[worst]:.1f}", step=worst
            ),
            _("mean |log ratio| in the last update: {with_clip} with the clip, {without} without ({ratio}x)").format(
                with_clip=f"{log_a:.4f}", without=f"{log_b:.4f}", ratio=f"{log_b / log_a:.2f}"
            ),
        ]
    )


# ----------------------------------------------------------------------------------------------- costs
def trained_parameters(algo: str, n_policy: int, d_model: int) -> int:
    """Parameters the optimiser updates: the policy, plus for PPO a value model (policy-sized body + d_model+1 head)."""
    return n_policy + (n_policy + d_model + 1 if algo == "ppo" else 0)


def cost_table(n_policy: int, d_model: int, billions: float = 7.0) -> str:
    """Markdown table: what the value model costs in parameters (our model) and in memory (a 7B model)."""
    lines = [
        _("| | trained parameters (ours) | memory at 7B, verifier reward, with reference (lecture's accounting) |"),
        "|---|---|---|",
    ]
    n = billions * 1e9
    for algo, name in (("ppo", _("PPO (policy + value model)")), ("grpo", _("GRPO (policy only)"))):
        ours = trained_parameters(algo, n_policy, d_model)
        models = (
            {"policy": True, "value model": True, "reference": False}
            if algo == "ppo"
            else {"policy": True, "reference": False}
        )
        big = sum(memory_gb(n, models).values())  # notebook 02's accounting
        lines.append(f"| {name} | {ours:,} | {big:.0f} GB |")
    return "\n".join(lines)


PPO_EXTRA_KNOBS = {  # what PPO adds to tune or decide, and our setting (RLConfig fields where there is one)
    "value_lr": N_("Adam learning rate of the value model (1e-3)"),
    "gamma, lam": N_("GAE discount and lambda (1, 1: a bandit, the reward comes at the end)"),
    "clamp_kl": N_("clamp the per-token KL in the shaped reward at >= 0 (True; matters only with beta > 0)"),
    N_("value head init"): N_("zeros, so the first predictions are exactly 0"),
    N_("value updates per batch"): N_("one value step per policy update (8)"),
    N_("value model size"): N_("a full copy of the policy (another 70k trained parameters here, 7B in the lecture)"),
}  # the worded knobs and the meanings are translated where shown (`extra_knobs_text`); field names stay as they are


def extra_knobs_text() -> str:
    """What PPO adds to tune or decide, one line each with our setting in brackets (a title line first)."""
    lines = [_("What PPO adds to tune or decide (our settings in brackets):")]
    lines += [f"  {pad(_(knob), 24)} {_(meaning)}" for knob, meaning in PPO_EXTRA_KNOBS.items()]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- figures


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


# ----------------------------------------------------------------------------------------------- the lecture and us
def lecture_and_us(runs: dict[str, RunResult], n_policy: int, d_model: int) -> str:
    """Markdown table: each statement of lecture section 3 next to what the race's runs (all their steps) show."""
    steps = {name: steps_to_think(run) for name, run in runs.items()}
    ppo = runs["PPO-8"]
    cfg = ppo.config
    helps = value_helps_step(ppo)
    costs = cost_ratios(runs)
    n = len(ppo.history)

    def ratio(name: str) -> str:
        a, b = steps[name], steps["PPO-8"]
        if a is not None and b:
            return _("{ratio}x PPO-8's").format(ratio=f"{a / b:.1f}")
        return _("no ratio")

    value_0 = ppo.history[0]["value_mean"]
    rows = [
        (
            _("the race: 256 answers per step, 200 steps"),
            _("{prompts} prompts x {g} answers = {answers} per step, {n} steps").format(
                prompts=cfg.prompts_per_step, g=cfg.group_size, answers=cfg.prompts_per_step * cfg.group_size, n=n
            ),
        ),
        (
            _("at first sight PPO (8 updates per batch) is much faster than GRPO (1 update)"),
            _("steps to {level} think-first: PPO-8 {ppo}, GRPO-1 {grpo} ({ratio})").format(
                level=f"{THINK_TARGET:.0%}",
                ppo=step_text(steps["PPO-8"], n),
                grpo=step_text(steps["GRPO-1"], n),
                ratio=ratio("GRPO-1"),
            ),
        ),
        (
            _("with 8 updates per batch, GRPO closes the gap"),
            _("GRPO-8 {steps} ({ratio})").format(steps=step_text(steps["GRPO-8"], n), ratio=ratio("GRPO-8")),
        ),
        (
            _("PPO's value model predicts 0 at first: its baseline does nothing"),
            _("value at step 0: {value}").format(value="0" if value_0 == 0 else f"{value_0:.3f}"),
        ),
        (
            _("its baseline helps only once the value loss has come down"),
            _("below no baseline from step {none}, below the leave-one-out mean from step {loo}").format(
                none=step_text(helps["beats_no_baseline"], n), loo=step_text(helps["beats_group_mean"], n)
            ),
        ),
        (
            _("the difference is mostly complexity: PPO trains a second model"),
            _(
                "trained parameters {ppo} (PPO) against {grpo} (GRPO); training CPU time per step PPO-8 / GRPO-8 = "
                "{ratio}x"
            ).format(
                ppo=f"{trained_parameters('ppo', n_policy, d_model):,}",
                grpo=f"{trained_parameters('grpo', n_policy, d_model):,}",
                ratio=f"{costs['PPO-8']['training_cpu_s'] / costs['GRPO-8']['training_cpu_s']:.1f}",
            ),
        ),
    ]
    totals = memory_totals()
    rows.append(
        (
            _("its memory bill at 7B (lecture §2.4): 252 GB for PPO, 126 GB without the value and reward models"),
            _("{ppo} GB and {verifier} GB by the same accounting (notebook 02)").format(
                ppo=f"{totals['PPO']:.0f}", verifier=f"{totals['rule-based verifier']:.0f}"
            ),
        )
    )
    lines = [_("| the lecture (§3) | ours |"), "|---|---|"]
    lines += [f"| {lecture} | {ours} |" for lecture, ours in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- the lecture's rows
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


def rows_from(measured: list[dict], seeds: tuple) -> list[Row]:
    """The Rows of section 3 from one measurement dict per seed (statements in words: `claim_row`s)."""

    def row(figure, lecture, key, band=None, unit="", note=""):
        return claim_row(
            section=SECTION,
            figure=figure,
            lecture=lecture,
            values=[math.nan if m[key] is None else m[key] for m in measured],  # None: never reached
            band=band,
            unit=unit,
            seeds=seeds,
            note=note,
        )

    target = f"{THINK_TARGET:.0%}"
    steps = min(m.get("steps", STEPS) for m in measured)
    return [
        undefined_as_dash(r, steps)
        for r in [
            row(
                "PPO value prediction at step 0 (mean, 1st answer token)",
                0.0,
                "value_at_start",
                (-1e-9, 1e-9),
                note="zero-initialised head: the baseline does nothing at first",
            ),
            row(f"steps to {target} think-first share, PPO-8", "fast at first sight", "steps_PPO-8", unit="steps"),
            row(f"steps to {target} think-first share, GRPO-1", "slower than PPO", "steps_GRPO-1", unit="steps"),
            row(f"steps to {target} think-first share, GRPO-8", "as fast as PPO", "steps_GRPO-8", unit="steps"),
            row(
                f"GRPO-1 steps / PPO-8 steps to {target} think-first",
                "PPO much faster than GRPO-1",
                "speedup_ppo_vs_grpo1",
                MUCH_FASTER,
                "x",
                note="band fixed from the wording: >= 1.5x",
            ),
            row(
                f"GRPO-8 steps / PPO-8 steps to {target} think-first",
                "gap disappears with 8 updates",
                "speedup_ppo_vs_grpo8",
                SAME_SPEED,
                "x",
                note="band fixed from the wording: within 1.5x",
            ),
            row(f"accuracy at step {ACCURACY_STEP}, PPO-8", None, "accuracy_PPO-8", unit="%"),
            row(f"accuracy at step {ACCURACY_STEP}, GRPO-1", None, "accuracy_GRPO-1", unit="%"),
            row(f"accuracy at step {ACCURACY_STEP}, GRPO-8", None, "accuracy_GRPO-8", unit="%"),
            row(
                "first step at which the value baseline beats no baseline",
                "only after training the value model",
                "value_beats_no_baseline",
            ),
            row(
                "first step at which the value baseline beats the leave-one-out mean",
                "only after training the value model",
                "value_beats_group_mean",
            ),
            row(
                "training CPU time per step, PPO-8 / GRPO-8",
                "PPO costs more (a value model to train)",
                "training_s_ratio_ppo_grpo8",
                (1.0, math.inf),
                "x",
                note="median CPU seconds per step",
            ),
        ]
    ]


def undefined_as_dash(row: Row, steps: int) -> Row:
    """A row whose value these steps do not define (a level never reached, a step past the run's end) shows '—' and
    says why, never 'nan'."""
    if row.measured is None or math.isfinite(row.measured):
        return row
    why = f"not defined in {steps} steps (never reached, or past the run's end)"
    return replace(row, measured=None, spread=None, note=f"{row.note}; {why}" if row.note else why)


def figures(seeds=(0,), fast: bool | None = None) -> list[Row]:
    """Section 3's statements next to our measurement: three runs of 30 steps per seed (read from the notebook's
    200-step runs when they are cached; about 20 seconds per seed on a quiet 2-core laptop otherwise)."""
    steps = size("race_figure_steps", fast)
    measured = [race_measurements(run_race(steps, seed, progress=False)) for seed in seeds]
    return rows_from(measured, tuple(seeds))
