"""Bridge to Hugging Face TRL: our arithmetic task on `trl.GRPOTrainer`, fully offline.

Everything is built in code (no Hugging Face hub): a character-level tokenizer (one token per character, the same ids
as `rlvr.task.VOCAB`), a ~70k-parameter GPT-2 from a config, a dataset of prompts, and our verifier as TRL's reward
function. `$` is the model's eos token, so generation stops there. A random model never earns a reward, so
`warm_up` first imitates the noisy teacher (our SFT loss and teacher, with the longer schedule a plain GPT-2 needs);
`run_grpo` then runs TRL's GRPO from there.

Needs the optional extra: pip install -e '.[scale]'. `python -m rlvr.scale` runs the demo (see `main`);
docs/trl_mapping.md maps our knobs to TRL's and verl's.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from .cache import load_or_create
from .config import pick
from .evaluate import answer_metrics, held_out_prompts
from .sft import SFTConfig, train_sft
from .task import (DEFAULT_TEACHER_ERROR_RATE, MAX_NEW_TOKENS, PAD, PAD_ID, STOI, STOP_ID, VOCAB_SIZE, decode,
                   prompt_text, prompt_tokens, sample_prompts, score_batch, verify)

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything here is built in code: never reach for the hub
INSTALL_HINT = "the TRL bridge needs the optional extra: pip install -e '.[scale]'"


def require_scale() -> None:
    """Import trl, transformers, datasets, accelerate and tokenizers; a clear ImportError if one is missing."""
    for name in ("trl", "transformers", "datasets", "accelerate", "tokenizers"):
        try:
            __import__(name)
        except ImportError as err:
            raise ImportError(f"{name} is not installed: {INSTALL_HINT}") from err


# ----------------------------------------------------------------------------------------------------------------------
# Tokenizer and model


def build_tokenizer():
    """A `PreTrainedTokenizerFast` with one token per character of VOCAB (same ids as `rlvr.task`), eos `$`, pad `.`.

    WordLevel over single characters; the pre-tokenizer isolates every character and the `Fuse` decoder joins tokens
    without the spaces WordLevel would insert.
    """
    require_scale()
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(vocab=dict(STOI), unk_token=None))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="$", pad_token=PAD)
    tokenizer.padding_side = "left"  # decoder-only generation pads prompts on the left (ours all have 11 tokens)
    return tokenizer


@dataclass(frozen=True)
class GPT2Shape:
    """Shape of the small GPT-2 (the defaults give 70,144 parameters, about as many as our TinyTransformer's 68k)."""

    n_embd: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_inner: int = 128  # MLP width (GPT-2's default would be 4 * n_embd)
    n_positions: int = 32  # >= 11 prompt tokens + 16 new tokens

    def to_dict(self) -> dict:
        """Plain dict (hashing, JSON)."""
        return asdict(self)


def build_model(shape: GPT2Shape = GPT2Shape(), seed: int = 0):
    """A randomly initialised `GPT2LMHeadModel` for our 16-token vocabulary, eos = `$`, pad = `.`, no dropout."""
    require_scale()
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=VOCAB_SIZE, n_positions=shape.n_positions, n_embd=shape.n_embd,
                        n_layer=shape.n_layer, n_head=shape.n_head, n_inner=shape.n_inner,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,  # our model has no dropout either
                        bos_token_id=STOP_ID, eos_token_id=STOP_ID, pad_token_id=PAD_ID)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    model.generation_config.eos_token_id = STOP_ID  # generate() and TRL stop at '$'
    model.generation_config.pad_token_id = PAD_ID
    return model


def num_parameters(model) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ----------------------------------------------------------------------------------------------------------------------
# Data and reward


def build_dataset(n_prompts: int, seed: int = 0):
    """A `datasets.Dataset` of prompts: columns `prompt` ('9458073021=') and `digits` (the 10 ints, for the reward)."""
    require_scale()
    from datasets import Dataset

    prompts = sample_prompts(n_prompts, np.random.default_rng(seed))  # [n, 10]
    return Dataset.from_dict({"prompt": [prompt_text(p) for p in prompts], "digits": prompts.tolist()})


def completion_text(completion: str, ids=None) -> str:
    """The answer the verifier must see: decoded from the ids when given (TRL's strings have lost the eos `$`).

    TRL decodes completions with skip_special_tokens=True, which drops the eos token; the ids keep it.
    """
    return decode(ids) if ids is not None else completion


class VerifierReward:
    """`rlvr.task.verify` as a TRL reward function; also records what each batch of answers looked like.

    TRL calls it as reward(prompts=[...], completions=[...], completion_ids=[[...]], digits=[...], **other columns);
    it returns one float per completion. `history` gets one dict per call (one per generation batch).
    """

    __name__ = "verifier"  # TRL names the reward metric after the function (`rewards/verifier/mean`)

    def __init__(self):
        self.history: list[dict] = []

    def __call__(self, prompts, completions, completion_ids=None, digits=None, log_metric=None,
                 **kwargs) -> list[float]:
        """One reward (1.0 = well formed and right) per completion."""
        if digits is None:
            raise ValueError("the dataset needs a `digits` column (see build_dataset) for the verifier")
        ids = completion_ids if completion_ids is not None else [None] * len(completions)
        verdicts = [verify(d, completion_text(c, i)) for d, c, i in zip(digits, completions, ids)]
        stats = verdict_stats(verdicts)
        self.history.append(stats)
        if log_metric is not None:  # shows up in TRL's logs next to `reward`, `kl`, `entropy`
            for name in ("think_share", "accuracy", "malformed_share"):
                log_metric(f"task/{name}", stats[name])
        return [v.reward for v in verdicts]


def verdict_stats(verdicts) -> dict:
    """Think-first share, accuracy, malformed share and mean length of a list of `Verdict`s."""
    n = max(1, len(verdicts))
    return {"think_share": sum(v.format == "think" for v in verdicts) / n,
            "accuracy": sum(v.correct for v in verdicts) / n,
            "malformed_share": sum(v.format == "malformed" for v in verdicts) / n,
            "mean_length": sum(v.length for v in verdicts) / n}


# ----------------------------------------------------------------------------------------------------------------------
# Sampling and evaluation with transformers' generate()


@torch.no_grad()
def generate(model, prompt_ids: torch.Tensor, temperature: float = 1.0, seed: int = 0) -> torch.Tensor:
    """Sample answers with `model.generate` (seeds torch's global RNG), stopping at '$'.

    prompt_ids [B, 11] -> responses [B, T <= 16], PAD after '$'.
    """
    was_training = model.training
    model.eval()
    torch.manual_seed(seed)
    kwargs = {"do_sample": True, "temperature": temperature, "top_k": 0} if temperature > 0 else {"do_sample": False}
    out = model.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids), max_new_tokens=MAX_NEW_TOKENS,
                         eos_token_id=STOP_ID, pad_token_id=PAD_ID, **kwargs)  # [B, 11 + T]
    model.train(was_training)
    return out[:, prompt_ids.shape[1]:]  # [B, T]


def evaluate_model(model, n_prompts: int = 1000, temperature: float = 1.0, seed: int = 0) -> dict[str, float]:
    """Held-out metrics (accuracy, cot_fraction = think-first share, ...) of one sampled answer per prompt."""
    prompts = held_out_prompts(n_prompts)  # [n, 10]
    responses = generate(model, prompt_tokens(prompts), temperature, seed)  # [n, T]
    return answer_metrics(score_batch(torch.as_tensor(prompts), responses))


# ----------------------------------------------------------------------------------------------------------------------
# Warm-up (our SFT recipe on the GPT-2)


@dataclass(frozen=True)
class ScaleWarmUpConfig:
    """Everything that determines the GPT-2 warm-up weights (and so its cache key)."""

    # A plain GPT-2 has no offset bias to find "the digit 11 tokens back": with our recipe (600 x 256 at lr 1e-3) it
    # stays on the loss plateau (~1.5) and never learns the chain. Many small batches at lr 3e-3 get it off the
    # plateau after ~1,000-2,500 steps (seeds 0-2; same compute as 1,000 steps of 256).
    sft: SFTConfig = field(default_factory=lambda: SFTConfig(steps=4000, batch_size=64, lr=3e-3, warmup_steps=100))
    shape: GPT2Shape = field(default_factory=GPT2Shape)

    def to_dict(self) -> dict:
        """Plain dict (hashing, JSON); includes the transformers version, whose GPT-2 is being trained."""
        import transformers
        return {"sft": self.sft.to_dict(), "shape": self.shape.to_dict(), "transformers": transformers.__version__}


def sft_loss(model, prompt_ids: torch.Tensor, responses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of the target answer tokens. [B, 11], [B, T], [B, T] -> scalar."""
    seq = torch.cat([prompt_ids, responses], dim=1)[:, :-1]  # [B, 11 + T - 1]
    # padding sits after '$' (masked out of the loss) and attention is causal, so every position may attend
    logits = model(input_ids=seq, attention_mask=torch.ones_like(seq)).logits[:, prompt_ids.shape[1] - 1:]  # [B, T, V]
    logps = torch.log_softmax(logits, dim=-1).gather(2, responses[..., None]).squeeze(-1)  # [B, T]
    return -(logps * mask).sum() / mask.sum()


def train_warm_up(cfg: ScaleWarmUpConfig, log_every: int = 0):
    """Train a fresh GPT-2 on the noisy teacher with our warm-up loop (`rlvr.sft.train_sft`); returns (model,
    losses)."""
    def log(step: int, total: int, loss: float) -> None:
        if log_every and step % log_every == 0:
            print(f"  warm-up step {step}/{total}: loss {loss:.3f}", flush=True)

    return train_sft(cfg.sft, on_step=log, model=build_model(cfg.shape, cfg.sft.seed), loss_fn=sft_loss)


def warm_up(teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE, seed: int = 0, *,
            cfg: ScaleWarmUpConfig | None = None, use_cache: bool = True, log_every: int = 0):
    """The warm-up GPT-2 for this teacher: from the checkpoint cache, else trained and cached; (model, losses)."""
    require_scale()
    cfg = cfg or ScaleWarmUpConfig()
    cfg = replace(cfg, sft=replace(cfg.sft, teacher_error_rate=float(teacher_error_rate), seed=int(seed)))

    def create() -> dict:
        model, losses = train_warm_up(cfg, log_every)
        return {"state_dict": model.state_dict(), "losses": losses}

    payload = load_or_create("scale-sft", cfg.to_dict(), create)[0] if use_cache else create()
    model = build_model(cfg.shape, cfg.sft.seed)
    model.load_state_dict(payload["state_dict"])
    model.eval()
    return model, list(payload["losses"])


# ----------------------------------------------------------------------------------------------------------------------
# GRPO with TRL


@dataclass(frozen=True)
class TRLRunConfig:
    """Our GRPO defaults written as TRL settings (docs/trl_mapping.md has the full table)."""

    steps: int = 30
    prompts_per_step: int = 32
    group_size: int = 8  # -> num_generations
    lr: float = 1e-4  # -> learning_rate (constant, Adam-like: no weight decay, no gradient clipping)
    beta: float = 0.0  # -> beta (k3 KL in the loss)
    clip_eps: float = 0.2  # -> epsilon
    loss_type: str = "grpo"  # ours: per-answer token mean (TRL's default is "dapo")
    scale_rewards: str = "group"  # "group" = GRPO's std division, "none" = Dr. GRPO
    num_iterations: int = 1  # updates per generated batch
    temperature: float = 1.0
    seed: int = 0


def grpo_config(cfg: TRLRunConfig, output_dir: str):
    """A `trl.GRPOConfig` for CPU: one generation batch of P x G answers = one optimizer step, logged every step."""
    require_scale()
    from trl import GRPOConfig

    batch = cfg.prompts_per_step * cfg.group_size
    return GRPOConfig(
        output_dir=output_dir, max_steps=cfg.steps, seed=cfg.seed, data_seed=cfg.seed,
        per_device_train_batch_size=batch, gradient_accumulation_steps=1,  # batch must divide by num_generations
        num_generations=cfg.group_size, max_completion_length=MAX_NEW_TOKENS, temperature=cfg.temperature,
        top_k=0, top_p=1.0,
        learning_rate=cfg.lr, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=0.0,
        beta=cfg.beta, epsilon=cfg.clip_eps, loss_type=cfg.loss_type, scale_rewards=cfg.scale_rewards,
        num_iterations=cfg.num_iterations,
        use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False,  # GRPOConfig defaults are for GPUs
        logging_steps=1, report_to="none", save_strategy="no", disable_tqdm=True, dataloader_num_workers=0,
        remove_unused_columns=False,  # keep the `digits` column for the reward function
    )


@dataclass
class TRLRun:
    """What `run_grpo` leaves behind."""

    model: object  # the trained GPT2LMHeadModel
    history: list[dict]  # one dict per step: think_share, accuracy, malformed_share, mean_length, loss, reward, ...
    step_seconds: list[float]  # wall time of each optimizer step (generation + reward + loss + backward + update)
    trainer: object = None


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


def make_trainer(model, cfg: TRLRunConfig, output_dir: str, reward: VerifierReward | None = None):
    """A `trl.GRPOTrainer` on our task: `model`, our tokenizer, P x steps fresh prompts, the verifier as reward."""
    require_scale()
    from trl import GRPOTrainer

    reward = reward or VerifierReward()
    dataset = build_dataset(cfg.prompts_per_step * max(1, cfg.steps), seed=10_000 + cfg.seed)
    return GRPOTrainer(model=model, reward_funcs=reward, args=grpo_config(cfg, output_dir), train_dataset=dataset,
                       processing_class=build_tokenizer())


def _silence(trainer) -> None:
    """Stop the trainer printing every log dict (our caller prints its own summary)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)


def run_grpo(model, cfg: TRLRunConfig = TRLRunConfig(), output_dir: str | None = None, quiet: bool = True) -> TRLRun:
    """Run TRL's GRPO from `model` (trained in place) and return per-step metrics and step times."""
    require_scale()
    reward, timer = VerifierReward(), _step_timer()
    with tempfile.TemporaryDirectory(prefix="rlvr-trl-") as tmp, warnings.catch_warnings():
        # TRL's GRPOConfig still sets transformers' deprecated `gradient_checkpointing` field: not ours to fix
        warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
        trainer = make_trainer(model, cfg, output_dir or tmp, reward)
        trainer.add_callback(timer)
        if quiet:
            _silence(trainer)
        trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    history = [{**stats, "step": i, **{k: logs[i][k] for k in ("loss", "reward", "kl", "entropy") if k in logs[i]}}
               for i, stats in enumerate(reward.history[:len(logs)])]
    model.eval()
    return TRLRun(model, history, timer.seconds, trainer)


# ----------------------------------------------------------------------------------------------------------------------
# Demo


def _fmt(metrics: dict) -> str:
    """'think-first 0.48, accuracy 0.22' of an evaluate_model dict."""
    return f"think-first {metrics['cot_fraction']:.2f}, accuracy {metrics['accuracy']:.2f}"


def main(argv: list[str] | None = None) -> dict:
    """`python -m rlvr.scale`: warm up a GPT-2, run TRL's GRPO, print the think-first share rising."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=pick(40, 8), help="GRPO steps (32 prompts x 8 answers each)")
    parser.add_argument("--eval-prompts", type=int, default=pick(1000, 300))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    require_scale()
    import transformers
    import trl

    print(f"TRL {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}")
    start = time.perf_counter()
    model, losses = warm_up(seed=args.seed, log_every=250)
    print(f"warm-up GPT-2 ({num_parameters(model):,} parameters): final SFT loss {losses[-1]:.3f} "
          f"({time.perf_counter() - start:.0f} s incl. cache)")
    before = evaluate_model(model, args.eval_prompts)
    print(f"before GRPO: {_fmt(before)}")
    run = run_grpo(model, TRLRunConfig(steps=args.steps, seed=args.seed))
    every = max(1, len(run.history) // 10)
    for h in run.history:  # (the logged loss is ~0 on-policy: the advantages have zero mean in every group)
        if (h["step"] + 1) % every == 0 or h["step"] == 0:
            print(f"  step {h['step'] + 1:3d}: think-first {h['think_share']:.2f}  accuracy {h['accuracy']:.2f}  "
                  f"mean length {h['mean_length']:.1f}")
    after = evaluate_model(model, args.eval_prompts)
    print(f"after {args.steps} TRL GRPO steps: {_fmt(after)}  "
          f"(median {np.median(run.step_seconds):.2f} s per 32 x 8 step)")
    return {"before": before, "after": after, "history": run.history}


if __name__ == "__main__":
    main()
