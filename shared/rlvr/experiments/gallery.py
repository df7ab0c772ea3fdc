"""Notebook 06: a gallery of broken RLVR runs. Each breakage is one realistic bug or setting, trained for real from
the same warm-up as the healthy run (short runs, cached), with the symptom a user sees, the signal that names it
(`rlvr.signals`), the cause and the fix.

A setting is an RLConfig change; a bug in the user's own code (a flipped sign, a mask forgotten, a std without its
epsilon, a reward function with a loophole) is a `StepHooks` that edits what the trainer computed, as the bug would.
A run that crashes (NaN weights cannot be sampled from) keeps its history up to the crash and the error's one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import torch

from rlvr.cache import Entry
from rlvr.config import size
from rlvr.model import ModelConfig, TinyTransformer
from rlvr.i18n import N_, _
from rlvr.signals import failures, nan_step
from rlvr.task import STOP_ID
from rlvr.runs import RunResult, cached_run, timing_of
from rlvr.train import Batch, RLConfig, StepHooks, run_key, train_rl

STEPS = 60  # steps of a gallery run at full size (the loophole's: 250)
STEPS_FULL = 200  # size("rl_steps") at full size: fast mode shrinks a gallery run in proportion


# ----------------------------------------------------------------------------------------------- the bugs, as hooks
class FlippedSign(StepHooks):
    """The loss's sign flipped (e.g. `loss = (ratio * A).mean()` without the minus): the run minimises the reward."""

    def after_advantages(self, batch: Batch) -> None:
        """Negate every advantage (the same as negating the loss)."""
        batch.advantages.neg_()


class ForgottenMask(StepHooks):
    """The response mask forgotten: the loss averages over every position, the padding after '$' included."""

    def after_rollout(self, batch: Batch) -> None:
        """Every position counts as a response token."""
        batch.rollout.response_mask.fill_(True)


class StdWithoutEpsilon(StepHooks):
    """(r - mean) / std with no epsilon and no guard: a group whose rewards are all equal divides 0 by 0."""

    def __init__(self, group_size: int):
        self.group_size = group_size

    def after_advantages(self, batch: Batch) -> None:
        """Replace the advantages by the naive z-score (NaN for an all-equal group)."""
        groups = batch.rewards.view(-1, self.group_size)  # [P, G]
        naive = (groups - groups.mean(dim=1, keepdim=True)) / groups.std(dim=1, correction=0, keepdim=True)
        batch.advantages = naive.reshape(-1)  # [B]


def digit_anywhere_reward(prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """A verifier with a loophole: 1 if the right digit appears anywhere in the answer (up to its '$'), whatever the
    format. [B, 10], [B, T] -> [B]."""
    target = prompts.sum(dim=1) % 10  # [B]
    before_stop = torch.cumsum(responses == STOP_ID, dim=1) == 0  # [B, T] positions before the first '$'
    return ((responses == target[:, None]) & before_stop).any(dim=1).float()


class LoopholeVerifier(StepHooks):
    """The reward comes from `digit_anywhere_reward`; accuracy is still measured by the strict verifier."""

    def __init__(self, prompts_of: Callable[[Batch], torch.Tensor]):
        self.prompts_of = prompts_of

    def after_rollout(self, batch: Batch) -> None:
        """Pay by the loose rule."""
        batch.rewards = digit_anywhere_reward(self.prompts_of(batch), batch.rollout.responses)


def prompt_digits(batch: Batch) -> torch.Tensor:
    """The [B, 10] digits of each answer's prompt (the prompt tokens without their '=')."""
    return batch.rollout.prompt_ids[:, :10]


HOOKS: dict[str, Callable[[RLConfig], StepHooks]] = {
    "flipped_sign": lambda cfg: FlippedSign(),
    "forgotten_mask": lambda cfg: ForgottenMask(),
    "std_without_epsilon": lambda cfg: StdWithoutEpsilon(cfg.group_size),
    "loophole_verifier": lambda cfg: LoopholeVerifier(prompt_digits),
}


# ----------------------------------------------------------------------------------------------- the gallery
@dataclass(frozen=True)
class Breakage:
    """One broken run: what is changed, what the user sees, which signal names it, why, and the fix."""

    name: str
    title: str
    overrides: dict = field(default_factory=dict)  # RLConfig fields
    bug: str | None = None  # a key of HOOKS
    from_scratch: bool = False  # start from a random model instead of the warm-up
    steps: int = STEPS  # a loophole takes longer to exploit than a bug takes to show
    symptom: str = ""
    signal: str = ""  # the history key that names it
    early: bool = False  # the signal is read over the first 5 steps (where the breakage shows), not the last 10
    compare_with: str = "healthy"  # the run its reading is printed beside (one whose signal can differ from it)
    cause: str = ""
    fix: str = ""


HEALTHY = Breakage(
    "healthy",
    N_("the lecture's GRPO run (32 prompts x 8 answers, lr 1e-4)"),
    symptom=N_("reward and accuracy climb together, entropy falls slowly"),
)
BREAKAGES: dict[str, Breakage] = {
    b.name: b
    for b in (
        HEALTHY,
        Breakage(
            "lr_too_high",
            N_("learning rate 3e-2 (300x the lecture's)"),
            overrides={"lr": 3e-2},  # at 1e-2 a run on two threads (portable kernels, seed 1) kept 27% well formed
            symptom=N_(
                "the answers turn to garbage: nearly every one malformed, the reward near 0, and it never comes back"
            ),
            signal="malformed_fraction",
            cause=N_(
                "each update moves the policy so far that it forgets the answer format; once every answer gets 0, "
                "every group is all-equal and no gradient can bring it back"
            ),
            fix=N_("lower the learning rate (1e-4 here); watch the gradient norm and the malformed share early on"),
        ),
        Breakage(
            "beta_too_large",
            N_("KL weight beta = 1 (the lecture's runs use 0; TRL's default was 0.04)"),
            overrides={"beta": 1.0},
            symptom=N_("it learns, but slowly: accuracy lags the healthy run"),
            signal="kl_to_ref",
            cause=N_("the KL penalty outweighs the reward: the policy cannot move far from its warm-up"),
            fix=N_(
                "beta between 0 and 0.04; a KL that stays near 0 while the reward stalls means the leash is too short"
            ),
        ),
        Breakage(
            "greedy_sampling",
            N_("answers sampled at temperature 0"),
            overrides={"temperature": 0.0},
            symptom=N_(
                '"the loss is 0 and nothing learns": the weights never change, whatever reward the greedy answers get'
            ),
            signal="all_same_group_fraction",
            cause=N_("greedy decoding gives every answer of a group the same text, so every advantage is 0"),
            fix=N_("sample the group at temperature ~1 (exploration is what GRPO compares)"),
        ),
        Breakage(
            "flipped_sign",
            N_("the loss's sign flipped (a bug in your own loss)"),
            bug="flipped_sign",
            symptom=N_("the reward falls below where it started"),
            signal="reward",
            cause=N_("the update minimises the reward: right answers are pushed down, wrong ones up"),
            fix=N_("loss = -(advantage x ratio): minimising the loss must maximise the reward"),
        ),
        Breakage(
            "forgotten_mask",
            N_("the response mask forgotten (the padding after '$' is trained)"),
            bug="forgotten_mask",
            symptom=N_("nothing learns, or it gets worse"),
            signal="grad_norm",
            cause=N_("the padding's log-probabilities dominate the gradient and the per-answer mean"),
            fix=N_("multiply every per-token term by the response mask before averaging"),
        ),
        Breakage(
            "std_without_epsilon",
            N_("(r - mean) / std with no epsilon (a bug in your own advantages)"),
            bug="std_without_epsilon",
            symptom=N_("the loss is NaN and the run crashes within its first steps, when sampling meets NaN weights"),
            signal="loss",
            cause=N_("a group whose rewards are all equal divides 0 by 0: NaN advantages, NaN weights"),
            fix=N_("add advantage_eps to the std, or give all-equal groups advantage 0"),
        ),
        Breakage(
            "no_clip_many_updates",
            N_("16 updates per batch at lr 3e-4, without clipping"),
            overrides={"epochs_per_batch": 16, "lr": 3e-4, "clip_eps": 1e6},
            symptom=N_("accuracy sinks to about chance (10%) or below and stays there"),
            signal="approx_kl",
            early=True,
            compare_with="clipped_many_updates",  # the healthy run's one update has an approx KL of 0 by definition
            cause=N_("reusing a batch 16 times lets the policy run far from the one that sampled it"),
            fix=N_("clip the ratio (clip_eps 0.2: the same 16 updates then train well) or use fewer updates per batch"),
        ),
        Breakage(
            "from_scratch",
            N_("RL from a random model, no warm-up"),
            from_scratch=True,
            symptom=N_("the reward stays at about 0: almost no answer is even well formed"),
            signal="malformed_fraction",
            cause=N_("a random model almost never writes a well-formed answer: nearly every group is all 0"),
            fix=N_("start from a model that can already answer sometimes (SFT warm-up, or a stronger base model)"),
        ),
        Breakage(
            "loophole_verifier",
            N_("a verifier that pays for the right digit anywhere in the answer (lr 1e-3, 250 steps)"),
            bug="loophole_verifier",
            overrides={"lr": 1e-3},  # optimisation pressure: at 3e-4 the run learns the task instead on some seeds
            steps=250,  # and CPUs (an AVX2 run ended at 53% strict accuracy, 28% at its start), at 1e-3 none did
            symptom=N_("the reward climbs while the strict accuracy falls to about 0"),
            signal="accuracy",
            compare_with="strict_verifier",  # the same lr and steps with the strict verifier: one thing changed
            cause=N_(
                "any answer with the right digit somewhere is paid: the policy stops caring which digit it ends on, "
                "and ends up writing digit soup the strict verifier rejects (lecture §1: over-optimisation)"
            ),
            fix=N_("make the verifier check the format and the answer; log a strict metric beside the reward"),
        ),
    )
}
CLIPPED = Breakage(  # not broken: the fix of no_clip_many_updates, trained to show that it is the fix
    "clipped_many_updates",
    N_("the same 16 updates per batch at lr 3e-4, clipped at 0.2"),
    overrides={"epochs_per_batch": 16, "lr": 3e-4},
    symptom=N_("trains well: the clip keeps each batch's updates near the policy that sampled it"),
    signal="approx_kl",
)
BREAKAGES[CLIPPED.name] = CLIPPED
STRICT = Breakage(  # not broken: loophole_verifier's run with the strict verifier, so that only the verifier differs
    "strict_verifier",
    N_("the same lr 1e-3 and 250 steps with the strict verifier"),
    overrides={"lr": 1e-3},
    steps=250,
    symptom=N_("trains: the strict accuracy climbs, as the healthy run's does"),
    signal="accuracy",
)
BREAKAGES[STRICT.name] = STRICT
NOT_BROKEN = ("healthy", CLIPPED.name, STRICT.name)
SHORT_TITLES = {  # a run's name -> the title of its small panel in the gallery (English: the name with spaces)
    "healthy": N_("healthy"),
    "lr_too_high": N_("lr too high"),
    "beta_too_large": N_("beta too large"),
    "greedy_sampling": N_("greedy sampling"),
    "flipped_sign": N_("flipped sign"),
    "forgotten_mask": N_("forgotten mask"),
    "std_without_epsilon": N_("std without epsilon"),
    "no_clip_many_updates": N_("no clip many updates"),
    "from_scratch": N_("from scratch"),
    "loophole_verifier": N_("loophole verifier"),
    "clipped_many_updates": N_("clipped many updates"),
    "strict_verifier": N_("strict verifier"),
}


def short_title(name: str) -> str:
    """A gallery run's short title as the learner reads it: 'lr too high' (in Chinese with the run's name)."""
    return _(SHORT_TITLES[name]) if name in SHORT_TITLES else name.replace("_", " ")


def crash_parts(crash: str) -> tuple[str, str]:
    """('1', 'ZeroDivisionError: ...') from a RunResult's crash text 'step 1: ZeroDivisionError: ...'."""
    where, _colon, error = crash.partition(": ")
    return where.split()[-1], error


MYSTERY_SEED = 7  # the mystery runs: gallery runs with an RL seed no other cell shows, from the seed-0 warm-up
MYSTERIES = {"A": "flipped_sign", "B": "beta_too_large", "C": "from_scratch"}  # the answers of notebook 06's exercise
LOOKALIKES = {  # a mystery's breakage -> gallery runs sharing its most visible symptom, ruled out by a second signal
    "flipped_sign": ("lr_too_high", "from_scratch"),  # a reward sinking to 0; its answers stay mostly well formed
    "beta_too_large": ("greedy_sampling",),  # a policy that stays near its warm-up; its groups are mixed
    "from_scratch": ("lr_too_high",),  # malformed answers and no reward; already at step 0, before any update
}


def breakage(run: RunResult) -> Breakage:
    """The breakage a gallery run trained (its name is the run's)."""
    return BREAKAGES[run.name]


def reference_of(run: RunResult, runs: dict[str, RunResult], healthy: RunResult) -> tuple[str, RunResult]:
    """The run a broken run's signal is read beside, with its name: its breakage's `compare_with` run where `runs`
    holds it, else the healthy run (the gallery table and figure both read it here)."""
    against = breakage(run).compare_with
    return (against, runs[against]) if against in runs else ("healthy", healthy)


def gallery_steps(name: str, fast: bool | None = None) -> int:
    """Steps of a gallery run: its breakage's at full size, fewer in proportion in fast mode (`size("rl_steps")`)."""
    b = BREAKAGES[name]
    return min(b.steps, size("rl_steps", fast) * b.steps // STEPS_FULL)


def gallery_config(name: str, seed: int = 0, steps: int | None = None, sft_seed: int | None = None) -> RLConfig:
    """The RLConfig of one gallery run (the lecture's GRPO with the breakage's overrides; its own steps, fewer in fast
    mode: `gallery_steps`), from the warm-up of `seed` (or of `sft_seed`)."""
    b = BREAKAGES[name]
    cfg = RLConfig.replicate(seed, steps=steps or gallery_steps(name), **b.overrides)
    return cfg if sft_seed is None else replace(cfg, sft_seed=sft_seed)


def cache_entry(name: str, cfg: RLConfig) -> Entry:
    """The cache entry of a gallery run: its config and what is broken."""
    b = BREAKAGES[name]
    return Entry("gallery", {**run_key(cfg), "bug": b.bug, "from_scratch": b.from_scratch})


def random_model(seed: int) -> TinyTransformer:
    """An untrained model (what `from_scratch` starts from)."""
    torch.manual_seed(seed)
    return TinyTransformer(ModelConfig())


def train_gallery_run(name: str, cfg: RLConfig, on_step=None) -> RunResult:
    """Train one breakage (no weights kept); a crash ends the run, keeps the history before it and its one line."""
    b = BREAKAGES[name]
    history: list[dict] = []

    def record(step: int, total: int, steps: list) -> None:
        history[:] = steps
        if on_step is not None:
            on_step(step, total, steps)

    hooks = HOOKS[b.bug](cfg) if b.bug else None
    policy = random_model(cfg.seed) if b.from_scratch else None
    try:
        train_rl(cfg, policy=policy, on_step=record, progress=False, hooks=hooks)
        crash = None
    except (RuntimeError, ValueError) as err:
        crash = f"step {len(history)}: {type(err).__name__}: {str(err).splitlines()[0]}"
    return RunResult(cfg, history, None, timing_of(history), crash=crash, name=name)


def gallery_run(
    name: str,
    seed: int = 0,
    steps: int | None = None,
    on_step=None,
    progress: bool = False,
    sft_seed: int | None = None,
) -> RunResult:
    """One gallery run through the checkpoint cache."""
    cfg = gallery_config(name, seed, steps, sft_seed)
    train = lambda on_step: train_gallery_run(name, cfg, on_step)  # noqa: E731
    return cached_run(cache_entry(name, cfg), cfg, train, on_step, name=name)


def signatures(run: RunResult) -> list[str]:
    """The failure signatures (rlvr.signals) the run's history shows."""
    return [f.name for f in failures(run.history)]


def first_finite(values: np.ndarray) -> float:
    """The first finite value of a curve (NaN if none)."""
    finite = values[np.isfinite(values)]
    return float(finite[0]) if finite.size else math.nan


# ----------------------------------------------------------------------------------------------- reading the runs
def tail(run: RunResult, key: str, last: int = 10) -> float:
    """Mean of a metric over the run's last `last` steps, skipping the steps that did not measure it (a metric
    logged every few steps, the KL to the warm-up, reads its points in that window; NaN if none)."""
    values = run.curve(key)[-last:]  # [last]
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


def last_common_step(run: RunResult, other: RunResult, key: str) -> tuple[int | None, float, float]:
    """The last step where both runs measured a metric (the KL to the warm-up is measured every 10 steps unless the
    loss uses it) and the two readings there: (step, run's, other's); (None, NaN, NaN) if they share none."""
    a, b = run.curve(key), other.curve(key)
    n = min(len(a), len(b))
    both = np.flatnonzero(np.isfinite(a[:n]) & np.isfinite(b[:n]))
    return (int(both[-1]), float(a[both[-1]]), float(b[both[-1]])) if both.size else (None, math.nan, math.nan)


def last_common(run: RunResult, other: RunResult, key: str) -> tuple[float, float]:
    """A metric of two runs at the last step where both measured it: (run's, other's), NaN if they share none."""
    return last_common_step(run, other, key)[1:]


def measured_every_step(run: RunResult, key: str, last: int = 10) -> bool:
    """True if the run measured the metric at each of its last `last` steps (the KL without a KL term is not)."""
    return bool(np.isfinite(run.curve(key)[-last:]).all())


def head(run: RunResult, key: str, first: int = 5) -> float:
    """Mean of the first `first` steps of a metric (NaN-skipping)."""
    values = run.curve(key)[:first]
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


@dataclass(frozen=True)
class Bound:
    """One condition of a symptom: a reading of the run (against the healthy run of its seed) beyond a limit. The
    symptom is shown when every reading is beyond its limit; the claim is *robust* when every reading clears its limit
    by the margin (shares by `margin` points of 1, scale readings such as a KL or a gradient norm by a factor of
    `margin`), so that a run computed with other float roundings (another CPU, seed or thread count) shows it too."""

    reading: str  # what is read, in words (for messages)
    value: Callable[[RunResult, RunResult], float]
    above: bool  # True: the symptom is value > limit; False: value < limit
    limit: float
    margin: float  # 0: an exact fact (a NaN, a gradient of exactly 0), no margin to ask for
    factor: bool = False  # the margin is a factor (value > limit * margin), not a difference
    signals: tuple[str, ...] = ()  # the history keys (rlvr.signals.SIGNAL_NAMES) the reading is read from

    def beyond(self, value: float, margin: float = 0.0) -> bool:
        """Whether `value` is past the limit by `margin` (in this bound's terms)."""
        if self.factor and margin:
            return value > self.limit * margin if self.above else value < self.limit / margin
        return value > self.limit + margin if self.above else value < self.limit - margin

    def short_of(self, value: float) -> bool:
        """Whether `value` falls short of the limit by the margin: this reading robustly does not show the symptom."""
        if self.factor and self.margin:
            return value < self.limit / self.margin if self.above else value > self.limit * self.margin
        return value < self.limit - self.margin if self.above else value > self.limit + self.margin

    def clears(self, run: RunResult, healthy: RunResult) -> tuple[bool, bool, float]:
        """(shown, robust, value) of this bound on one run."""
        value = self.value(run, healthy)
        return self.beyond(value), self.beyond(value, self.margin), value


def _ratio(a: float, b: float) -> float:
    """a / b, infinite when b is 0 and a is not."""
    return a / b if b else (math.inf if a else 1.0)


def _signature_free(run: RunResult, _healthy: RunResult) -> float:
    """1 if no failure signature shows in the run, else 0 (the detectors' own margins: tests/test_exp_gallery.py)."""
    return float(not signatures(run))


def above(reading: str, value: Callable, limit: float, margin: float, factor: bool = False, on=()) -> Bound:
    """A symptom reading, read from the history keys `on`, that must be above `limit` (by `margin`)."""
    return Bound(reading, value, True, limit, margin, factor, tuple(on))


def below(reading: str, value: Callable, limit: float, margin: float, factor: bool = False, on=()) -> Bound:
    """A symptom reading, read from the history keys `on`, that must be below `limit` (by `margin`)."""
    return Bound(reading, value, False, limit, margin, factor, tuple(on))


def _gain(key: str) -> Callable[[RunResult, RunResult], float]:
    """A metric's change from the first 5 steps to the last 10."""
    return lambda r, h: tail(r, key) - head(r, key)


def _lead_growth(run: RunResult, _healthy: RunResult) -> float:
    """How much the reward's lead over the strict accuracy grew from the first 5 steps to the last 10."""
    return (tail(run, "reward") - tail(run, "accuracy")) - (head(run, "reward") - head(run, "accuracy"))


def _lag(key: str) -> Callable[[RunResult, RunResult], float]:
    """How far a metric ends below the healthy run's (last 10 steps)."""
    return lambda r, h: tail(h, key) - tail(r, key)


SHARE, SCALE = 0.05, 2.0  # the margins: 5 points for a share or an accuracy; a factor of 2 for a KL or a norm
NATS = 1.0  # the margin of a signed KL in nats (the forgotten mask's, which sums over padding)
# fmt: off
SYMPTOMS: dict[str, tuple[Bound, ...]] = {  # name -> the readings that show its symptom
    "healthy": (
        above(N_("accuracy gain, first 5 -> last 10 steps"), _gain("accuracy"), 0.3, SHARE, on=["accuracy"]),
        below(N_("all-equal groups, last 10 steps (06: a minority)"), lambda r, h: tail(r, "all_same_group_fraction"),
              0.5, SHARE, on=["all_same_group_fraction"]),
        above(N_("no failure signature"), _signature_free, 0.5, 0),
    ),
    "lr_too_high": (
        below(N_("malformed share at step 0"), lambda r, h: r.curve("malformed_fraction")[0], 0.1, SHARE,
              on=["malformed_fraction"]),
        above(N_("malformed share, last 10 steps"), lambda r, h: tail(r, "malformed_fraction"), 0.9, SHARE,
              on=["malformed_fraction"]),
        below(N_("reward, last 10 steps"), lambda r, h: tail(r, "reward"), 0.05, SHARE / 2, on=["reward"]),
    ),
    "beta_too_large": (
        above(N_("accuracy gain, first 5 -> last 10 steps"), _gain("accuracy"), 0.0, SHARE, on=["accuracy"]),
        above(N_("accuracy lag behind the healthy run, last 10 steps"), _lag("accuracy"), 0.15, SHARE,
              on=["accuracy"]),
        below(N_("KL to the warm-up / the healthy run's, at the last step both measured"),
              lambda r, h: _ratio(*last_common(r, h, "kl_to_ref")), 0.5, SCALE, factor=True, on=["kl_to_ref"]),
    ),
    "greedy_sampling": (  # exact: greedy decoding writes a group's answers alike, so every advantage is exactly 0
        above(N_("smallest all-equal share of a step"), lambda r, h: float(r.curve("all_same_group_fraction").min()),
              1 - 1e-9, 0, on=["all_same_group_fraction"]),
        below(N_("largest gradient norm of a step"), lambda r, h: float(r.curve("grad_norm").max()), 1e-12, 0,
              on=["grad_norm"]),
    ),
    "flipped_sign": (
        below(N_("reward change, first 5 -> last 10 steps"), _gain("reward"), 0.0, SHARE, on=["reward"]),
        above(N_("entropy change, first 5 -> last 10 steps (nats)"), _gain("entropy"), 0.0, SHARE, on=["entropy"]),
    ),
    "forgotten_mask": (
        above(N_("accuracy lag behind the healthy run, last 10 steps"), _lag("accuracy"), 0.3, SHARE,
              on=["accuracy"]),
        # "the padding dominates the gradient": 3.8x the healthy run's on seed 2 under the portable kernels (the
        # lowest of 3 seeds x 2 backends), so the limit is 1.5 (a reading of at least 3 with the factor-2 margin)
        above(N_("gradient norm / the healthy run's, first 5 steps"),
              lambda r, h: _ratio(head(r, "grad_norm"), head(h, "grad_norm")), 1.5, SCALE, factor=True,
              on=["grad_norm"]),
        # notebook 06: its 'KL' is far from 0 at step 0, where the policy still is the warm-up, and goes negative
        above(N_("|KL to the warm-up| at step 0 (nats)"), lambda r, h: abs(r.curve("kl_to_ref")[0]), 1.0, SCALE,
              factor=True, on=["kl_to_ref"]),
        below(N_("lowest KL to the warm-up (nats)"), lambda r, h: float(np.nanmin(r.curve("kl_to_ref"))), 0.0, NATS,
              on=["kl_to_ref"]),
    ),
    "std_without_epsilon": (  # exact: a NaN advantage makes a NaN loss, and NaN weights cannot be sampled from
        above(N_("crashed"), lambda r, h: float(r.crash is not None), 0.5, 0),
        above(N_("NaN loss at some step"), lambda r, h: float(nan_step(r.history) is not None), 0.5, 0, on=["loss"]),
    ),
    "no_clip_many_updates": (
        below(N_("accuracy, last 10 steps"), lambda r, h: tail(r, "accuracy"), 0.2, SHARE, on=["accuracy"]),
        # a PPO rule of thumb stops reusing a batch near an approx KL of 0.02 (CleanRL's target_kl: 0.015)
        above(N_("approx KL to the sampler, first 5 steps"), lambda r, h: head(r, "approx_kl"), 0.02, SCALE,
              factor=True, on=["approx_kl"]),
    ),
    "from_scratch": (
        below(N_("largest reward of a step"), lambda r, h: float(np.nanmax(r.curve("reward"))), 0.05, SHARE / 2,
              on=["reward"]),
        above(N_("malformed share, last 10 steps"), lambda r, h: tail(r, "malformed_fraction"), 0.9, SHARE,
              on=["malformed_fraction"]),
    ),
    "loophole_verifier": (
        # the loophole already pays about 60% of the warm-up's answers, so the reward has little room to climb (one
        # thread: +0.27 to +0.38 on seeds 0-2, ending at 0.87-0.99); its lead over the strict accuracy is what grows
        above(N_("reward gain, first 5 -> last 10 steps"), _gain("reward"), 0.1, SHARE, on=["reward"]),
        above(N_("growth of the reward's lead over the strict accuracy, first 5 -> last 10 steps"), _lead_growth, 0.3,
              SHARE, on=["reward", "accuracy"]),
        below(N_("strict accuracy change, first 5 -> last 10 steps"), _gain("accuracy"), 0.0, SHARE, on=["accuracy"]),
        below(N_("strict accuracy, last 10 steps"), lambda r, h: tail(r, "accuracy"), 0.1, SHARE, on=["accuracy"]),
    ),
    "clipped_many_updates": (  # trains as well as the healthy run (it learns within its first steps)
        above(N_("accuracy gain, step 0 -> last 10 steps"), lambda r, h: tail(r, "accuracy") - r.curve("accuracy")[0],
              0.3, SHARE, on=["accuracy"]),
        below(N_("accuracy behind the healthy run, last 10 steps"), _lag("accuracy"), 0.1, SHARE, on=["accuracy"]),
    ),
    "strict_verifier": (  # the loophole's lr and steps learn the task when the verifier is strict
        above(N_("accuracy gain, step 0 -> last 10 steps"), lambda r, h: tail(r, "accuracy") - r.curve("accuracy")[0],
              0.3, SHARE, on=["accuracy"]),
        below(N_("accuracy behind the healthy run, last 10 steps"), _lag("accuracy"), 0.1, SHARE, on=["accuracy"]),
    ),
}
# fmt: on


def shows_symptom(name: str, run: RunResult, healthy: RunResult) -> bool:
    """Whether a gallery run shows its breakage's symptom (every reading beyond its limit)."""
    return all(bound.clears(run, healthy)[0] for bound in SYMPTOMS[name])


def rules_out(name: str, run: RunResult, healthy: RunResult) -> bool:
    """Whether a run robustly does not show breakage `name`'s symptom: one of its readings falls short of its limit by
    the margin (a mystery run against the look-alikes of LOOKALIKES)."""
    return any(bound.short_of(bound.value(run, healthy)) for bound in SYMPTOMS[name])


def ruling_readings(name: str, signal: str, run: RunResult, healthy: RunResult) -> list[tuple[Bound, float]]:
    """The readings of breakage `name`'s symptom, read from history key `signal`, with their values on `run`: a run
    robustly without that symptom has one of them short of its limit by the margin (`Bound.short_of`)."""
    return [(bound, bound.value(run, healthy)) for bound in SYMPTOMS[name] if signal in bound.signals]


def symptom_margins(name: str, run: RunResult, healthy: RunResult) -> list[str]:
    """The readings that do not clear their limit by the margin: 'approx KL ...: 0.021 (limit > 0.02, margin x2)'."""
    weak = []
    for bound in SYMPTOMS[name]:
        _shown, robust, value = bound.clears(run, healthy)
        if not robust:
            margin = f"x{bound.margin:g}" if bound.factor else f"{bound.margin:+g}"
            weak.append(
                f"{bound.reading}: {value:.3g} (limit {'>' if bound.above else '<'} {bound.limit:g}, margin {margin})"
            )
    return weak
