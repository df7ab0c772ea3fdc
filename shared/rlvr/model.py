"""A tiny causal Transformer (about 70k parameters), batched KV-cached sampling, and response log-probs."""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .task import MAX_NEW_TOKENS, PAD_ID, PROMPT_LEN, STOP_ID, VOCAB_SIZE


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the Transformer (the defaults give 68k parameters)."""

    vocab_size: int = VOCAB_SIZE
    block_size: int = PROMPT_LEN + MAX_NEW_TOKENS  # longest sequence: prompt + answer
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_mlp: int = 128
    abs_pos: bool = True  # learned absolute position embeddings
    positional_layers: int = 1  # the first layers attend by relative offset only (no query-key content)
    offset_bias_init: float = 0.0
    offset_bias_scale: float = 100.0  # offset biases are stored / this, so Adam moves them 100x faster

    def to_dict(self) -> dict:
        """Plain dict (for hashing and JSON)."""
        return asdict(self)


class KVCache:
    """Keys and values of every layer so far: incremental decoding, or a prompt shared by its group of answers.

    One pre-allocated buffer per layer. Each call of the model writes each layer's buffer once, before reading it,
    so the cache also works under autograd (the shared prompt of a training forward).
    """

    def __init__(self, cfg: ModelConfig, batch: int, device=None, dtype=torch.float32):
        shape = (batch, cfg.n_heads, cfg.block_size, cfg.d_model // cfg.n_heads)
        self.k = [torch.empty(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)]  # L x [B, H, T, Dh]
        self.v = [torch.empty(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)]  # L x [B, H, T, Dh]
        self.length = 0  # positions filled so far

    def repeat_interleave(self, repeats: int) -> KVCache:
        """A cache whose row i * repeats + j is row i of this one (j < repeats): a prompt's keys and values shared
        by its group of answers."""
        out = copy.copy(self)
        out.k = [k.repeat_interleave(repeats, dim=0) for k in self.k]  # L x [B * repeats, H, T, Dh]
        out.v = [v.repeat_interleave(repeats, dim=0) for v in self.v]  # L x [B * repeats, H, T, Dh]
        return out

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the newest positions' keys and values [B, H, T, Dh]; returns all so far, [B, H, length + T, Dh]."""
        end = self.length + k.shape[2]
        self.k[layer][:, :, self.length:end] = k
        self.v[layer][:, :, self.length:end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]


class Attention(nn.Module):
    """Multi-head causal self-attention with a learned bias per head and relative offset; can use a KV cache.

    The bias (T5-style, one number per head and offset) lets a head learn "look k tokens back" once for every
    position: the chain-of-thought step j needs the prompt digit exactly 11 tokens back.
    """

    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.n_heads, self.layer = cfg.n_heads, layer
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        init = torch.randn(cfg.n_heads, cfg.block_size) * cfg.offset_bias_init / cfg.offset_bias_scale  # [H, offset]
        self.rel_bias = nn.Parameter(init)
        self.positional = layer < cfg.positional_layers
        self.offset_bias_scale = cfg.offset_bias_scale

    def position_bias(self, q_start: int, n_q: int, n_k: int) -> torch.Tensor:
        """Additive attention bias [H, n_q, n_k]: the learned offset bias, -inf on future keys."""
        offsets = torch.arange(q_start, q_start + n_q)[:, None] - torch.arange(n_k)[None, :]  # [n_q, n_k]
        bias = self.rel_bias[:, offsets.clamp(min=0)] * self.offset_bias_scale  # [H, n_q, n_k]
        return bias.masked_fill(offsets < 0, float("-inf"))

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, D] -> [B, T, D]; with a cache, x holds the T newest positions."""
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)  # [B, H, T, Dh]
        start = 0
        if cache is not None:
            start = cache.length
            k, v = cache.append(self.layer, k, v)  # [B, H, start+T, Dh]
        bias = self.position_bias(start, T, k.shape[2])  # [H, T, start+T]
        if self.positional:  # weights depend on the offset alone: the same "look k back" at every position
            out = torch.softmax(bias, dim=-1) @ v  # [B, H, T, Dh]
        elif T == 1:  # one new position: plain matmuls beat SDPA's kernel at this size
            scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5 + bias  # [B, H, 1, start+1]
            out = scores.softmax(dim=-1) @ v  # [B, H, 1, Dh]
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)  # [B, H, T, Dh]
        return self.proj(out.transpose(1, 2).reshape(B, T, D))


class Block(nn.Module):
    """Pre-norm Transformer block: attention then MLP, each with a residual connection."""

    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg, layer)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_mlp), nn.GELU(), nn.Linear(cfg.d_mlp, cfg.d_model))

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, D] -> [B, T, D]."""
        x = x + self.attn(self.ln1(x), cache)
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    """Character-level GPT: token + learned position embeddings, offset-biased attention, pre-norm blocks, tied
    output."""

    def __init__(self, cfg: ModelConfig = ModelConfig()):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.apply(_init_weights)

    def hidden(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Final hidden states. idx [B, T] -> [B, T, D] (with a cache: positions cache.length onwards)."""
        start = 0 if cache is None else cache.length
        if start + idx.shape[1] > self.cfg.block_size:
            raise ValueError(f"sequence of {start + idx.shape[1]} tokens exceeds block_size {self.cfg.block_size}")
        pos = torch.arange(start, start + idx.shape[1], device=idx.device)  # [T]
        x = self.tok_emb(idx) + self.pos_emb(pos) if self.cfg.abs_pos else self.tok_emb(idx)  # [B, T, D]
        for block in self.blocks:
            x = block(x, cache)
        if cache is not None:
            cache.length += idx.shape[1]
        return self.ln_f(x)

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits. idx [B, T] -> [B, T, V]."""
        return self.logits(self.hidden(idx, cache))

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Next-token logits from final hidden states (tied embeddings). [..., D] -> [..., V]."""
        return hidden @ self.tok_emb.weight.T

    def hidden_after_prompts(self, prompt_ids: torch.Tensor, tokens: torch.Tensor,
                             samples_per_prompt: int) -> torch.Tensor:
        """Final hidden states at each prompt's last position and at every token that continues it; each prompt runs
        through the model once and its keys and values are shared by its G = samples_per_prompt continuations.

        Args:
            prompt_ids: int64 [N, P].
            tokens: int64 [N * G, T]; rows i*G ... i*G+G-1 continue prompt i.
        Returns:
            [N * G, 1 + T, D]: position P-1, then P ... P+T-1.
        """
        cache = KVCache(self.cfg, prompt_ids.shape[0], device=prompt_ids.device)
        last = self.hidden(prompt_ids, cache)[:, -1:].repeat_interleave(samples_per_prompt, dim=0)  # [N*G, 1, D]
        rest = self.hidden(tokens, cache.repeat_interleave(samples_per_prompt))  # [N*G, T, D]
        return torch.cat([last, rest], dim=1)  # [N*G, 1+T, D]

    def num_parameters(self) -> int:
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def _init_weights(module: nn.Module) -> None:
    """GPT-2 style initialisation: N(0, 0.02) weights, zero biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class ValueModel(nn.Module):
    """PPO's critic: a Transformer body (copied from the policy) with a scalar head that starts at exactly 0."""

    def __init__(self, policy: TinyTransformer):
        super().__init__()
        self.body = TinyTransformer(policy.cfg)
        self.body.load_state_dict(policy.state_dict())
        self.head = nn.Linear(policy.cfg.d_model, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, prompt_ids: torch.Tensor, responses: torch.Tensor, samples_per_prompt: int = 1) -> torch.Tensor:
        """Value of the state before each response token. [B, P], [B, T] -> [B, T] (samples_per_prompt: as in
        `response_logps`)."""
        h = _hidden_before_responses(self.body, prompt_ids, responses, samples_per_prompt)  # [B, T, D]
        return self.head(h).squeeze(-1)  # [B, T]


@dataclass
class Rollout:
    """A batch of sampled answers."""

    prompt_ids: torch.Tensor  # [B, P] int64
    responses: torch.Tensor  # [B, T] int64, PAD after the stop token
    logps: torch.Tensor  # [B, T] log-prob of each sampled token under the sampling distribution (0 on padding)
    response_mask: torch.Tensor  # [B, T] bool, True up to and including the first '$'


@torch.no_grad()
def sample(model: TinyTransformer, prompt_ids: torch.Tensor, temperature: float = 1.0,
           max_new_tokens: int = MAX_NEW_TOKENS, generator: torch.Generator | None = None,
           samples_per_prompt: int = 1) -> Rollout:
    """Sample answers for a batch of equal-length prompts with a KV cache; stop at '$' or after max_new_tokens.

    Args:
        prompt_ids: int64 [N, P].
        temperature: 1.0 samples the policy itself; 0 decodes greedily.
        generator: torch.Generator that fixes the samples.
        samples_per_prompt: G answers per prompt (rows i*G ... i*G+G-1 answer prompt i). Each prompt is run
            through the model once and its cache shared by its G answers: the same numbers as repeating the prompt
            G times, with 1/G of the prompt work.
    Returns:
        Rollout of B = N * samples_per_prompt answers: prompt_ids [B, P]; responses, logps, response_mask [B, T],
        T <= max_new_tokens.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if samples_per_prompt < 1:
        raise ValueError(f"samples_per_prompt must be >= 1, got {samples_per_prompt}")
    N, P = prompt_ids.shape
    max_new_tokens = min(max_new_tokens, model.cfg.block_size - P)
    cache = KVCache(model.cfg, N, device=prompt_ids.device)
    logits = model(prompt_ids, cache)[:, -1]  # [N, V]
    if samples_per_prompt > 1:
        prompt_ids = prompt_ids.repeat_interleave(samples_per_prompt, dim=0)  # [B, P]
        logits = logits.repeat_interleave(samples_per_prompt, dim=0)  # [B, V]
        cache = cache.repeat_interleave(samples_per_prompt)
    B = prompt_ids.shape[0]
    tokens, logps = [], []
    done = torch.zeros(B, dtype=torch.bool, device=prompt_ids.device)  # [B]
    for step in range(max_new_tokens):
        logprobs = torch.log_softmax(logits if temperature == 0 else logits / temperature, dim=-1)  # [B, V]
        if temperature == 0:
            tok = logprobs.argmax(dim=-1)  # [B]
        else:
            tok = torch.multinomial(logprobs.exp(), 1, generator=generator).squeeze(1)  # [B]
        lp = logprobs.gather(1, tok[:, None]).squeeze(1)  # [B]
        tokens.append(torch.where(done, PAD_ID, tok))
        logps.append(torch.where(done, 0.0, lp))
        done = done | (tok == STOP_ID)
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        logits = model(tokens[-1][:, None], cache)[:, -1]  # [B, V]
    responses = torch.stack(tokens, dim=1)  # [B, T]
    return Rollout(prompt_ids, responses, torch.stack(logps, dim=1), response_mask(responses))


def response_mask(responses: torch.Tensor) -> torch.Tensor:
    """True for every token up to and including the first '$' (all tokens if there is none). [B, T] -> [B, T]."""
    is_stop = (responses == STOP_ID).int()  # [B, T]
    stops_before = torch.cumsum(is_stop, dim=1) - is_stop  # [B, T] number of '$' strictly before t
    return stops_before == 0


def response_logps(model: TinyTransformer, prompt_ids: torch.Tensor, responses: torch.Tensor,
                   return_logits: bool = False, samples_per_prompt: int = 1):
    """Log-prob of each response token in one batched forward pass (keeps the graph for training).

    Args:
        prompt_ids: int64 [B, P]; responses: int64 [B, T].
        samples_per_prompt: G > 1 when rows i*G ... i*G+G-1 share one prompt (a group): the prompt then runs through
            the model once for its group, as in `sample`; about a third less work for this task's 11-token prompts.
    Returns:
        logps [B, T] (and the logits [B, T, V] when return_logits).
    """
    if samples_per_prompt == 1:  # logits of every position, then the slice: the warm-up's numbers since day one
        seq = torch.cat([prompt_ids, responses], dim=1)[:, :-1]  # [B, P+T-1]
        logits = model(seq)[:, prompt_ids.shape[1] - 1:]  # [B, T, V]
    else:
        logits = model.logits(_hidden_before_responses(model, prompt_ids, responses, samples_per_prompt))  # [B, T, V]
    logps = torch.log_softmax(logits, dim=-1).gather(2, responses[..., None]).squeeze(-1)  # [B, T]
    return (logps, logits) if return_logits else logps


def _hidden_before_responses(model: TinyTransformer, prompt_ids: torch.Tensor, responses: torch.Tensor,
                             samples_per_prompt: int) -> torch.Tensor:
    """Final hidden state at the position before each response token. [B, P], [B, T] -> [B, T, D]."""
    P = prompt_ids.shape[1]
    if samples_per_prompt < 1:
        raise ValueError(f"samples_per_prompt must be >= 1, got {samples_per_prompt}")
    if samples_per_prompt == 1:
        seq = torch.cat([prompt_ids, responses], dim=1)[:, :-1]  # [B, P+T-1]
        return model.hidden(seq)[:, P - 1:]  # [B, T, D]
    prompts = prompt_ids[::samples_per_prompt]  # [N, P]
    if prompt_ids.shape[0] % samples_per_prompt or not torch.equal(
            prompts.repeat_interleave(samples_per_prompt, dim=0), prompt_ids):
        raise ValueError(f"samples_per_prompt={samples_per_prompt}: rows i*G ... i*G+G-1 must share one prompt "
                         f"(got {prompt_ids.shape[0]} rows)")
    return model.hidden_after_prompts(prompts, responses[:, :-1], samples_per_prompt)  # [B, T, D]
