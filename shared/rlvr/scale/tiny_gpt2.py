"""The GPT-2 built in code for our task: a character tokenizer with our ids, a ~70k-parameter model, its warm-up.

Everything is built in code (no Hugging Face hub): a character-level tokenizer (one token per character, the same ids
as `rlvr.task.VOCAB`) and a GPT-2 from a config. `$` is the model's eos token, so generation stops there. A random
model never earns a reward, so `warm_up` first imitates the noisy teacher (our SFT loss and teacher, with the longer
schedule a plain GPT-2 needs); `rlvr.scale.trl_bridge.run_grpo` runs TRL's GRPO from there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import torch

from ..cache import Entry, load_or_create
from ..evaluate import answer_metrics, held_out_prompts
from ..sft import SFTConfig, train_sft
from ..task import (
    DEFAULT_TEACHER_ERROR_RATE,
    MAX_NEW_TOKENS,
    PAD,
    PAD_ID,
    STOI,
    STOP_ID,
    VOCAB_SIZE,
    prompt_tokens,
    score_batch,
)
from .common import require_hf, require_scale


# ----------------------------------------------------------------------------------------------------------------------
# Tokenizer and model


def build_tokenizer():
    """A `PreTrainedTokenizerFast` with one token per character of VOCAB (same ids as `rlvr.task`), eos `$`, pad `.`.

    WordLevel over single characters; the pre-tokenizer isolates every character and the `Fuse` decoder joins tokens
    without the spaces WordLevel would insert. Needs transformers and tokenizers only (`rlvr.a5` uses it too).
    """
    require_hf()
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

    config = GPT2Config(
        vocab_size=VOCAB_SIZE,
        n_positions=shape.n_positions,
        n_embd=shape.n_embd,
        n_layer=shape.n_layer,
        n_head=shape.n_head,
        n_inner=shape.n_inner,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,  # our model has no dropout either
        bos_token_id=STOP_ID,
        eos_token_id=STOP_ID,
        pad_token_id=PAD_ID,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    model.generation_config.eos_token_id = STOP_ID  # generate() and TRL stop at '$'
    model.generation_config.pad_token_id = PAD_ID
    return model


def num_parameters(model) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


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
    out = model.generate(
        prompt_ids,
        attention_mask=torch.ones_like(prompt_ids),
        max_new_tokens=MAX_NEW_TOKENS,
        eos_token_id=STOP_ID,
        pad_token_id=PAD_ID,
        **kwargs,
    )  # [B, 11 + T]
    model.train(was_training)
    return out[:, prompt_ids.shape[1] :]  # [B, T]


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


# A short warm-up for tests and quick checks: well-formed answers (formats are learnt in ~100 steps), not the chain
QUICK_WARM_UP = ScaleWarmUpConfig(sft=SFTConfig(steps=150, batch_size=128, lr=3e-3, warmup_steps=20))


def sft_loss(model, prompt_ids: torch.Tensor, responses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of the target answer tokens. [B, 11], [B, T], [B, T] -> scalar."""
    seq = torch.cat([prompt_ids, responses], dim=1)[:, :-1]  # [B, 11 + T - 1]
    # padding sits after '$' (masked out of the loss) and attention is causal, so every position may attend
    logits = model(input_ids=seq, attention_mask=torch.ones_like(seq)).logits[:, prompt_ids.shape[1] - 1 :]  # [B, T, V]
    logps = torch.log_softmax(logits, dim=-1).gather(2, responses[..., None]).squeeze(-1)  # [B, T]
    return -(logps * mask).sum() / mask.sum()


def train_warm_up(cfg: ScaleWarmUpConfig, log_every: int = 0):
    """Train a fresh GPT-2 on the noisy teacher with our warm-up loop (`rlvr.sft.train_sft`); returns (model,
    losses)."""

    def log(step: int, total: int, loss: float) -> None:
        if log_every and step % log_every == 0:
            print(f"  warm-up step {step}/{total}: loss {loss:.3f}", flush=True)

    return train_sft(cfg.sft, on_step=log, model=build_model(cfg.shape, cfg.sft.seed), loss_fn=sft_loss)


def warm_up(
    teacher_error_rate: float = DEFAULT_TEACHER_ERROR_RATE,
    seed: int = 0,
    *,
    cfg: ScaleWarmUpConfig | None = None,
    use_cache: bool = True,
    log_every: int = 0,
):
    """The warm-up GPT-2 for this teacher: from the checkpoint cache, else trained and cached; (model, losses)."""
    require_scale()
    cfg = cfg or ScaleWarmUpConfig()
    cfg = replace(cfg, sft=replace(cfg.sft, teacher_error_rate=float(teacher_error_rate), seed=int(seed)))

    def create() -> dict:
        model, losses = train_warm_up(cfg, log_every)
        return {"state_dict": model.state_dict(), "losses": losses}

    payload = load_or_create(Entry("scale-sft", cfg.to_dict()), create).payload if use_cache else create()
    model = build_model(cfg.shape, cfg.sft.seed)
    model.load_state_dict(payload["state_dict"])
    model.eval()
    return model, list(payload["losses"])
