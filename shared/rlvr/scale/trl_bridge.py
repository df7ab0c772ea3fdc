"""Our task on `trl.GRPOTrainer`: a dataset of prompts, our verifier as TRL's reward function, our knobs as TRL's.

The same code runs on one process or on several (`rlvr.scale.processes` starts them): TRL then hands each rank its
share of the groups, gathers the rewards to compute every group's advantages, and the gradients are all-reduced.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..algorithms import ALGORITHMS, ENGINE_AGGREGATION, algorithm
from ..task import decode, prompt_text, sample_prompts, verify
from ..train import RLConfig
from ..validation import ConfigError
from .common import require_scale, verdict_stats
from .hf_model import answer_text, chat_prompt

TASK_METRICS = ("think_share", "accuracy", "malformed_share", "mean_length")  # logged as task/<name> every step


def build_dataset(n_prompts: int, seed: int = 0, tokenizer=None):
    """A `datasets.Dataset` of prompts: `prompt` ('9458073021=', or our instruction as a chat message when the
    tokenizer has a chat template) and `digits` (the 10 ints, for the reward)."""
    require_scale()
    from datasets import Dataset

    prompts = sample_prompts(n_prompts, np.random.default_rng(seed))  # [n, 10]
    texts = [prompt_text(p) if tokenizer is None else chat_prompt(tokenizer, p) for p in prompts]
    return Dataset.from_dict({"prompt": texts, "digits": prompts.tolist()})


def completion_text(completion: str, ids=None, tokenizer=None) -> str:
    """The answer the verifier must see: decoded from the ids when given (TRL's strings have lost the eos).

    TRL decodes completions with skip_special_tokens=True, which drops the eos token (ours is `$`); the ids keep it.
    Ids are read with our vocabulary, or with `tokenizer` for any other model.
    """
    if ids is None:
        return completion
    return decode(ids) if tokenizer is None else answer_text(tokenizer, ids)


class VerifierReward:
    """`rlvr.task.verify` as a TRL reward function; also records what each batch of answers looked like.

    TRL calls it as reward(prompts=[...], completions=[...], completion_ids=[[...]], digits=[...], **other columns);
    it returns one float per completion. Per call (one per generation batch, this process's share of it), `history`
    gets the answers' stats and `prompts` the prompts they answered ('9458073021=').
    """

    __name__ = "verifier"  # TRL names the reward metric after the function (`rewards/verifier/mean`)

    def __init__(self, tokenizer=None):
        self.tokenizer = tokenizer  # None: ids are ours (rlvr.task.VOCAB)
        self.history: list[dict] = []
        self.prompts: list[list[str]] = []

    def __call__(
        self, prompts, completions, completion_ids=None, digits=None, log_metric=None, **kwargs
    ) -> list[float]:
        """One reward (1.0 = well formed and right) per completion."""
        if digits is None:
            raise ValueError("the dataset needs a `digits` column (see build_dataset) for the verifier")
        ids = completion_ids if completion_ids is not None else [None] * len(completions)
        verdicts = [verify(d, completion_text(c, i, self.tokenizer)) for d, c, i in zip(digits, completions, ids)]
        stats = verdict_stats(verdicts)
        self.history.append(stats)
        self.prompts.append([prompt_text(d) for d in digits])
        if log_metric is not None:  # TRL averages these over the processes and logs them next to `reward`, `kl`
            for name in TASK_METRICS:
                log_metric(f"task/{name}", stats[name])
        return [v.reward for v in verdicts]


_GRPO_IN_TRL = {**ALGORITHMS["grpo"].trl, "loss_type": ENGINE_AGGREGATION[RLConfig().aggregation]["trl"]}


@dataclass(frozen=True)
class TRLRunConfig:
    """Our GRPO written as TRL settings (docs/trl_mapping.md has the full table): the defaults are RLConfig's, and
    `from_rl` maps any RLConfig of an algorithm TRL's GRPOTrainer runs."""

    steps: int = 30
    prompts_per_step: int = RLConfig.prompts_per_step
    group_size: int = RLConfig.group_size  # -> num_generations
    lr: float = RLConfig.lr  # -> learning_rate (constant, Adam-like: no weight decay, no gradient clipping)
    beta: float = RLConfig.beta  # -> beta (k3 KL in the loss)
    clip_eps: float = RLConfig.clip_eps  # -> epsilon
    loss_type: str = _GRPO_IN_TRL["loss_type"]  # ours: per-answer token mean (TRL's default is "dapo")
    scale_rewards: str = _GRPO_IN_TRL["scale_rewards"]  # "group" = GRPO's std division, "none" = Dr. GRPO
    num_iterations: int = 1  # updates per generated batch (RLConfig.epochs)
    temperature: float = RLConfig.temperature
    max_completion_length: int = RLConfig.max_new_tokens  # tokens per answer (ours: 16 characters)
    processes: int = 1  # each process generates prompts_per_step / processes groups per step
    seed: int = 0

    def __post_init__(self):
        if self.processes < 1 or self.prompts_per_step % self.processes:
            raise ValueError(
                f"processes must be >= 1 and divide prompts_per_step ({self.prompts_per_step}) so that "
                f"every process gets whole groups, got {self.processes}"
            )

    @classmethod
    def from_rl(cls, cfg: RLConfig, steps: int, **fields) -> TRLRunConfig:
        """The TRL settings of an RLConfig (its algorithm's row says how TRL spells it); `fields` set the rest
        (processes, max_completion_length). ConfigError if TRL's GRPOTrainer cannot run that algorithm."""
        trl = algorithm(cfg.algo).trl
        if trl is None:
            able = ", ".join(name for name, row in ALGORITHMS.items() if row.trl is not None)
            raise ConfigError("algo", cfg.algo, f"one TRL's GRPOTrainer runs ({able})")
        return cls(
            steps=steps,
            prompts_per_step=cfg.prompts_per_step,
            group_size=cfg.group_size,
            lr=cfg.lr,
            beta=cfg.beta,
            clip_eps=cfg.clip_eps,
            num_iterations=cfg.epochs,
            temperature=cfg.temperature,
            seed=cfg.seed,
            loss_type=ENGINE_AGGREGATION[cfg.aggregation]["trl"],
            **{"max_completion_length": cfg.max_new_tokens, **trl, **fields},
        )


def grpo_config(cfg: TRLRunConfig, output_dir: str, **overrides):
    """A `trl.GRPOConfig` for CPU: one generation batch of P x G answers = one optimizer step, logged every step.

    Each of cfg.processes processes generates P x G / processes answers (whole groups); `overrides` replace any
    setting (e.g. the GPU ones of docs/trl_mapping.md).
    """
    require_scale()
    from trl import GRPOConfig

    per_process = cfg.prompts_per_step * cfg.group_size // cfg.processes
    settings = dict(
        output_dir=output_dir,
        max_steps=cfg.steps,
        seed=cfg.seed,
        data_seed=cfg.seed,
        per_device_train_batch_size=per_process,
        gradient_accumulation_steps=1,  # global batch divides by G
        num_generations=cfg.group_size,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        top_k=0,
        top_p=1.0,
        learning_rate=cfg.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=0.0,
        beta=cfg.beta,
        epsilon=cfg.clip_eps,
        loss_type=cfg.loss_type,
        scale_rewards=cfg.scale_rewards,
        num_iterations=cfg.num_iterations,
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,  # GRPOConfig defaults are for GPUs
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        remove_unused_columns=False,  # keep the `digits` column for the reward function
    )
    if cfg.processes > 1:
        settings.update(
            ddp_backend="gloo",  # the CPU backend of torch.distributed
            ddp_find_unused_parameters=False,
        )  # every parameter gets a gradient: skip DDP's search
    return GRPOConfig(**{**settings, **overrides})


@dataclass
class TRLRun:
    """What `run_grpo` leaves behind (on each process, when there are several)."""

    model: object  # the trained model
    history: list[dict]  # one dict per step, means over every process: think_share, accuracy, loss, reward, ...
    step_seconds: list[float]  # wall time of each optimizer step (generation + reward + loss + backward + update)
    trainer: object = None
    local_history: list[dict] | None = None  # this process's answers only: think_share, accuracy, ...
    prompts: list[list[str]] | None = None  # the prompts this process answered, per step


def _step_timer():
    """A `TrainerCallback` that records the wall time of every training step."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        """Seconds from on_step_begin to on_step_end (TRL generates inside the step)."""

        def __init__(self):
            self.seconds: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds.append(time.perf_counter() - self._start)

    return StepTimer()


def make_trainer(
    model, cfg: TRLRunConfig, output_dir: str, reward: VerifierReward | None = None, tokenizer=None, **overrides
):
    """A `trl.GRPOTrainer` on our task: `model`, its tokenizer (default: our character tokenizer), P x steps fresh
    prompts, the verifier as reward; `overrides` go to `grpo_config`."""
    require_scale()
    from trl import GRPOTrainer

    from .tiny_gpt2 import build_tokenizer

    reward = reward or VerifierReward(tokenizer)
    dataset = build_dataset(cfg.prompts_per_step * max(1, cfg.steps), seed=10_000 + cfg.seed, tokenizer=tokenizer)
    return GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=grpo_config(cfg, output_dir, **overrides),
        train_dataset=dataset,
        processing_class=tokenizer or build_tokenizer(),
    )


def _silence(trainer) -> None:
    """Stop the trainer printing every log dict (our caller prints its own summary)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)


def step_history(log_history: list[dict]) -> list[dict]:
    """One dict per optimizer step from TRL's logs: our task metrics (means over every process), loss, reward, ..."""
    logs = [entry for entry in log_history if "loss" in entry]
    return [
        {
            "step": i,
            **{name: entry[f"task/{name}"] for name in TASK_METRICS if f"task/{name}" in entry},
            **{k: entry[k] for k in ("loss", "reward", "kl", "entropy") if k in entry},
        }
        for i, entry in enumerate(logs)
    ]


def run_grpo(
    model, cfg: TRLRunConfig = TRLRunConfig(), output_dir: str | None = None, quiet: bool = True, tokenizer=None
) -> TRLRun:
    """Run TRL's GRPO from `model` (trained in place) and return per-step metrics and step times."""
    require_scale()
    reward, timer = VerifierReward(tokenizer), _step_timer()
    with tempfile.TemporaryDirectory(prefix="rlvr-trl-") as tmp, warnings.catch_warnings():
        # TRL's GRPOConfig still sets transformers' deprecated `gradient_checkpointing` field: not ours to fix
        warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
        trainer = make_trainer(model, cfg, output_dir or tmp, reward, tokenizer)
        trainer.add_callback(timer)
        if quiet:
            _silence(trainer)
        trainer.train()
    model.eval()
    return TRLRun(
        model,
        step_history(trainer.state.log_history),
        timer.seconds,
        trainer,
        local_history=reward.history,
        prompts=reward.prompts,
    )
