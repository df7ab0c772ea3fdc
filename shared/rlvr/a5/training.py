"""Train the course's model with a student's assignment-5 functions, in the package's own loop (`rlvr.train`): the
sampler, the verifier, the metrics and the signals are the package's; a `Trainer` subclass hands each update to the
student's code through the Hugging Face interfaces (`rlvr.a5.hf`).

- 2025: the student's compute_group_normalized_rewards gives the advantages; their tokenize_prompt_and_output and
  get_response_log_probs give the log-probs (old log-probs too, before the update, as the assignment's loop does);
  their grpo_microbatch_train_step ("grpo_clip") runs GRADIENT_ACCUMULATION_STEPS microbatches; our loop steps the
  optimizer.
- 2026: the student's grpo_train_step does the whole update and steps our optimizer (standard GRPO: baseline "mean",
  normaliser "std", no importance reweighting, sequence normalisation, a max_grad_norm never reached).

Every call of student code is guarded (`rlvr.checks.guard`); a call that raises, runs out of time or returns the wrong
shape stops the run with one line naming the function and the step (StudentFailed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from .. import signals
from ..checks.guard import OutputTail, call_guarded, one_line_error
from ..evaluate import evaluate
from ..i18n import _
from ..train import Batch, RLConfig, Trainer, train_rl
from .hf import causal_lm, reward_fn, rollout_texts, task_tokenizer

GRADIENT_ACCUMULATION_STEPS = 4  # microbatches per update: 256 answers in 4 x 64
ADVANTAGE_EPS = 1e-6  # the assignment's
CLIPRANGE = 0.2
MAX_GRAD_NORM = 1e6  # 2026's step gets a finite one (some call clip_grad_norm_ unconditionally); never reached, as the
# reference does not clip
CALL_LIMIT_S = 60.0  # per call of student code while training (a right one takes well under a second)
NEEDS = {  # the functions a run of each edition calls
    "2025": ("compute_group_normalized_rewards", "tokenize_prompt_and_output", "get_response_log_probs",
             "grpo_microbatch_train_step"),
    "2026": ("grpo_train_step",),
}  # fmt: skip


def a5_config(steps: int = 200, seed: int = 0) -> RLConfig:
    """The run both the student's code and the reference train: the lecture's GRPO (32 prompts x 8 answers, lr
    1e-4, from the warm-up of `seed`) with the assignment's group std (torch.std, unbiased) and advantage_eps."""
    return RLConfig.replicate(seed, steps=steps, std="unbiased", advantage_eps=ADVANTAGE_EPS)


class StudentFailed(Exception):
    """A student's function failed during training (one line: which function, at which step, what)."""


@dataclass
class StudentFunctions:
    """A student's adapters by the assignment's names (run_<name> of tests/adapters.py)."""

    functions: dict[str, Callable]
    printed: OutputTail

    def call(self, name: str, step: int, *args, **kwargs):
        """The student's function, guarded: its value, or StudentFailed naming it and the step."""
        fn = self.functions.get(name)
        if fn is None:
            raise StudentFailed(_("step {step}: {name} is missing from tests/adapters.py").format(step=step, name=name))
        call = call_guarded(fn, args, kwargs, CALL_LIMIT_S, self.printed)
        if call.timed_out:
            raise StudentFailed(
                _("step {step}: {name} did not finish within {s} s").format(step=step, name=name, s=f"{CALL_LIMIT_S:g}")
            )
        if call.error is not None:
            from .verdicts import last_line

            raise StudentFailed(
                _("step {step}: {name} raised {error}").format(step=step, name=name, error=last_line(call.error))
            )
        return call.value


def _tensor(value, name: str, step: int, shape: tuple | None = None) -> torch.Tensor:
    """value as a float tensor (of `shape` when given), else StudentFailed."""
    if not isinstance(value, torch.Tensor) or (shape is not None and tuple(value.shape) != shape):
        got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise StudentFailed(
            _("step {step}: {name} returned {got} where a tensor of shape {shape} was needed").format(
                step=step, name=name, got=got, shape=shape
            )
        )
    return value


class StudentTrainer(Trainer):
    """The package's Trainer whose updates run a student's code (subclasses: one per edition). Records, besides the
    usual signals, kl_to_sampler (the student's log-probs of the sampled tokens against the sampler's, k3, per
    token) and the clip fraction of the update."""

    student: StudentFunctions  # set by the factory

    def __init__(self, cfg: RLConfig, policy=None, hooks=None, record_signals: bool = True):
        super().__init__(cfg, policy, hooks, record_signals=record_signals)
        self.model = causal_lm(self.policy)  # model(input_ids).logits, sharing the policy's parameters
        self.tokenizer = task_tokenizer()
        self.step_index = 0
        self.extra: dict = {}

    def step(self, step: int) -> dict:
        """The package's step; then kl_to_sampler and the clip fraction this update measured."""
        self.step_index, self.extra = step, {}
        metrics = super().step(step)
        metrics.update(self.extra)
        return metrics

    def texts(self, batch: Batch) -> tuple[list[str], list[str], list[str]]:
        """The batch as the assignment's strings: repeated prompts, responses, repeated ground truths."""
        prompts = batch.rollout.prompt_ids[:, :-1].numpy()  # [B, 10] the digits (the last prompt token is '=')
        return rollout_texts(prompts, batch.rollout.responses)

    def kl_to_sampler(self, log_probs: torch.Tensor, batch: Batch) -> float:
        """Mean k3 KL between the sampler's and the student's log-probs of the sampled tokens (at the assignment's
        label positions of the response), NaN when the student's log-probs do not have the expected layout."""
        rollout = batch.rollout
        width = rollout.responses.shape[1]
        start = batch.rollout.prompt_ids.shape[1] - 1  # labels drop the first id: token t of the answer sits here
        if log_probs.dim() != 2 or log_probs.shape[0] != len(rollout.responses) or log_probs.shape[1] < start + 1:
            return math.nan
        theirs = log_probs.detach()[:, start : start + width]  # [B, <=T]
        mask = rollout.response_mask[:, : theirs.shape[1]]
        return signals.approx_kl(theirs, rollout.logps[:, : theirs.shape[1]], mask)


class Trainer2025(StudentTrainer):
    """Advantages from the student's compute_group_normalized_rewards; updates through their tokenization,
    log-probs and grpo_microbatch_train_step (grpo_clip, GRADIENT_ACCUMULATION_STEPS microbatches); our optimizer."""

    def advantages(self, batch: Batch) -> dict:
        """The student's group-normalised advantages [B] (and raw rewards), from the batch's strings."""
        _prompts, responses, truths = self.texts(batch)
        n = len(responses)
        out = self.student.call(
            "compute_group_normalized_rewards", self.step_index, reward_fn, responses, truths,
            self.cfg.group_size, ADVANTAGE_EPS, True,
        )  # fmt: skip
        if not isinstance(out, (tuple, list)) or len(out) < 2:
            raise StudentFailed(
                _(
                    "step {step}: compute_group_normalized_rewards returned {got}, not (advantages, raw_rewards, ...)"
                ).format(step=self.step_index, got=type(out).__name__)
            )
        batch.advantages = _tensor(out[0], "compute_group_normalized_rewards", self.step_index, (n,)).detach().float()
        self.raw_rewards = _tensor(out[1], "compute_group_normalized_rewards", self.step_index, (n,)).detach().float()
        return {}

    def student_log_probs(self, ids, labels, entropy: bool = False) -> torch.Tensor:
        """The student's get_response_log_probs(model, input_ids, labels)["log_probs"]."""
        out = self.student.call("get_response_log_probs", self.step_index, self.model, ids, labels, entropy)
        if not isinstance(out, dict) or "log_probs" not in out:
            raise StudentFailed(
                _("step {step}: get_response_log_probs returned no 'log_probs'").format(step=self.step_index)
            )
        return _tensor(out["log_probs"], "get_response_log_probs", self.step_index, tuple(labels.shape))

    def update(self, batch: Batch) -> dict:
        """One optimizer step over the student's microbatch steps; the lists Trainer.step expects."""
        prompts, responses, _truths = self.texts(batch)
        tokens = self.student.call("tokenize_prompt_and_output", self.step_index, prompts, responses, self.tokenizer)
        if not isinstance(tokens, dict) or not {"input_ids", "labels", "response_mask"} <= set(tokens):
            raise StudentFailed(
                _("step {step}: tokenize_prompt_and_output returned no input_ids, labels and response_mask").format(
                    step=self.step_index
                )
            )
        ids, labels, mask = tokens["input_ids"], tokens["labels"], tokens["response_mask"]
        with torch.no_grad():
            old = self.student_log_probs(ids, labels)  # [B, L] the policy before the update, as the assignment's loop
        self.extra["kl_to_sampler"] = self.kl_to_sampler(old, batch)
        n = len(responses)
        size = -(-n // GRADIENT_ACCUMULATION_STEPS)
        advantages, raw = batch.advantages[:, None], self.raw_rewards[:, None]  # [B, 1]
        self.opt.zero_grad(set_to_none=True)
        losses, clipped = [], []
        for start in range(0, n, size):
            rows = slice(start, start + size)
            log_probs = self.student_log_probs(ids[rows], labels[rows], entropy=True)
            ratio = torch.exp(log_probs.detach() - old[rows])
            clipped.append(((ratio - 1).abs() > CLIPRANGE)[mask[rows].bool()].float())
            out = self.student.call(
                "grpo_microbatch_train_step", self.step_index, log_probs, mask[rows], GRADIENT_ACCUMULATION_STEPS,
                "grpo_clip", raw[rows], advantages[rows], old[rows], CLIPRANGE,
            )  # fmt: skip
            losses.append(float(torch.as_tensor(out[0] if isinstance(out, (tuple, list)) else out).detach().sum()))
        norm = signals.grad_norm(self.policy.parameters())
        self.opt.step()
        self.extra["clip_fraction"] = float(torch.cat(clipped).mean()) if clipped else 0.0
        return _updates(sum(losses), norm, batch)


class Trainer2026(StudentTrainer):
    """The student's grpo_train_step does each update (standard GRPO, on-policy) and steps our optimizer."""

    def advantages(self, batch: Batch) -> dict:
        """The package's advantages, for the signals only (the student's step computes its own)."""
        return super().advantages(batch)

    def update(self, batch: Batch) -> dict:
        """One call of the student's grpo_train_step; the lists Trainer.step expects."""
        prompts, responses, truths = self.texts(batch)
        if {"tokenize_prompt_and_output", "get_response_log_probs"} <= set(self.student.functions):
            self.extra["kl_to_sampler"] = self.sampler_kl_2026(prompts, responses, batch)
        optimizer = RecordingOptimizer(self.opt, self.policy)
        out = self.student.call(
            "grpo_train_step", self.step_index, self.model, self.tokenizer, optimizer, GRADIENT_ACCUMULATION_STEPS,
            MAX_GRAD_NORM, reward_fn, prompts, responses, truths, self.cfg.group_size,
        )  # fmt: skip
        if optimizer.steps > 1:  # 0 is fine: a step may skip a batch whose advantages are all 0 (nothing to learn)
            raise StudentFailed(
                _("step {step}: grpo_train_step called optimizer.step() {n} times (once per batch is right)").format(
                    step=self.step_index, n=optimizer.steps
                )
            )
        loss = out[0] if isinstance(out, (tuple, list)) else out
        self.extra["clip_fraction"] = 0.0  # on-policy: the ratio is 1
        return _updates(float(torch.as_tensor(loss).detach().sum()), optimizer.grad_norm, batch)

    def sampler_kl_2026(self, prompts, responses, batch: Batch) -> float:
        """kl_to_sampler from the student's own tokenization and log-probs (before the update); NaN if they fail."""
        try:
            tokens = self.student.call(
                "tokenize_prompt_and_output", self.step_index, prompts, responses, self.tokenizer
            )
            with torch.no_grad():
                out = self.student.call(
                    "get_response_log_probs", self.step_index, self.model, tokens["input_ids"], tokens["labels"], False
                )
            return self.kl_to_sampler(out["log_probs"], batch)
        except (StudentFailed, KeyError, TypeError, IndexError):
            return math.nan


class RecordingOptimizer:
    """Our optimizer as the student's step sees it: step() is counted and records the gradient norm first."""

    def __init__(self, optimizer: torch.optim.Optimizer, policy: torch.nn.Module):
        self.optimizer, self.policy, self.steps, self.grad_norm = optimizer, policy, 0, math.nan

    def step(self, *args, **kwargs):
        """Record the gradient norm, then the real step."""
        self.steps += 1
        self.grad_norm = signals.grad_norm(self.policy.parameters())
        return self.optimizer.step(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.optimizer, name)


def _updates(loss: float, grad_norm: float, batch: Batch) -> dict:
    """What Trainer.update returns, for one update: per-update lists and the sampler's log-probs as old_logps."""
    return {
        "loss": [loss],
        "clip_fraction": [0.0],
        "approx_kl": [0.0],
        "grad_norm": [grad_norm],
        "value_loss": [],
        "old_logps": batch.rollout.logps,
    }


TRAINERS = {"2025": Trainer2025, "2026": Trainer2026}


@dataclass
class StudentRun:
    """What training with a student's code left: the history, and the one line that stopped it (None: it ran)."""

    config: RLConfig
    history: list[dict]
    crash: str | None
    policy: torch.nn.Module | None


def train_student(
    edition: str,
    functions: dict[str, Callable],
    cfg: RLConfig,
    on_step: Callable[[int, int, list], None] | None = None,
    printed: OutputTail | None = None,
) -> StudentRun:
    """`cfg.steps` steps of the package's loop with the student's functions doing each update; a failure ends the run
    and keeps the history before it (with one line naming the function and the step)."""
    student = StudentFunctions(functions, printed or OutputTail())
    trainer_class = type(TRAINERS[edition].__name__, (TRAINERS[edition],), {"student": student})
    history: list[dict] = []
    holder: dict = {}

    def record(step: int, total: int, steps: list) -> None:
        history[:] = steps
        if on_step is not None:
            on_step(step, total, steps)

    def factory(*args, **kwargs):
        holder["trainer"] = trainer_class(*args, **kwargs)
        return holder["trainer"]

    crash = None
    try:
        train_rl(cfg, on_step=record, progress=False, trainer=factory)
    except StudentFailed as failure:
        crash = str(failure)
    except (RuntimeError, ValueError) as error:  # NaN weights cannot be sampled from: the run's end, in one line
        crash = _("step {step}: {error}").format(step=len(history), error=one_line_error(error))
    trainer = holder.get("trainer")
    return StudentRun(cfg, history, crash, trainer.policy.eval() if trainer is not None else None)


EVAL_PROMPTS = 2000  # held-out prompts of the final think-first share and accuracy (the same for both runs)


def final_rates(policy: torch.nn.Module, n_prompts: int = EVAL_PROMPTS) -> dict[str, float]:
    """The held-out think-first share and strict accuracy of one sampled answer per prompt (temperature 1)."""
    metrics = evaluate(policy, n_prompts, temperature=1.0, seed=0)
    return {"think_first": metrics["cot_fraction"], "accuracy": metrics["accuracy"]}
