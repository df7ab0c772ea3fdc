"""A tiny causal Transformer (about 70k parameters), batched KV-cached sampling, and response log-probs."""

from __future__ import annotations

import copy
import threading
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .signals import token_entropy
from .task import MAX_NEW_TOKENS, PAD_ID, PROMPT_LEN, STOP_ID, VOCAB_SIZE


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the Transformer (the defaults give 70,040 parameters)."""

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


_BMM_OWN_LOOP = 400  # torch.bmm multiplies matrices of fewer multiply-adds (m * k * n) than this in its own loop
_STATIC = threading.local()  # per thread, .pool: (name, shape, dtype, device) -> the buffer static caches reuse
_MAX_STATIC_BUFFERS = 32  # a fuller pool starts over, so its memory stays bounded


def _buffer(shape: tuple, name: str, static: bool, device=None, dtype=torch.float32) -> torch.Tensor:
    """An uninitialised buffer. static: the one the previous static cache of this shape used as `name`, kept for
    reuse (no fresh memory pages per `sample` call, whose page faults took ~20% of it at 256 answers)."""
    if not static:
        return torch.empty(shape, device=device, dtype=dtype)
    pool = _STATIC.__dict__.setdefault("pool", {})
    key = (name, tuple(shape), dtype, torch.device(device or "cpu"), torch.is_inference_mode_enabled())
    if key not in pool:
        if len(pool) >= _MAX_STATIC_BUFFERS:
            pool.clear()
        pool[key] = torch.empty(shape, device=device, dtype=dtype)
    return pool[key]


class KVCache:
    """Keys and values of every layer so far: incremental decoding, or a prompt shared by its group of answers.

    One pre-allocated buffer per layer (keys only for the layers that read them: a positional layer's weights ignore
    them, so `k[i]` is None there). Each call of the model writes each layer's buffer once, before reading it, so the
    cache also works under autograd (training forwards use `JoinedKV`, the same numbers). A `static` cache (no
    autograd, alive only during one call, as in `sample`) reuses the buffers of the previous static cache of its
    shape: at most one static cache of a shape may be in use at a time, per thread.

    Extras that `sample` switches on for its decode steps (less work per token; only valid while the weights do not
    change): `bias`: each layer's attention bias for every query and key position, computed once per call instead of
    once per token (a step reads its row). `v_t`: a content layer's values again, position-fastest, for the
    weights @ values products small enough for bmm's own loop, which then reads them in order (the same sums, ~2.5x
    faster at 256 answers). `v_h` and `weights`: a positional layer's values head-major and its attention weights
    (the same for every answer, so computed once per call): a step mixes all answers' values in one matrix product
    per head instead of one per answer and head (the same sums up to float rounding).
    """

    def __init__(self, cfg: ModelConfig, batch: int, device=None, dtype=torch.float32, static: bool = False):
        shape = (batch, cfg.n_heads, cfg.block_size, cfg.d_model // cfg.n_heads)  # [B, H, T, Dh]
        self.static = static
        self.k = [
            _buffer(shape, f"k{i}", static, device, dtype) if i >= cfg.positional_layers else None
            for i in range(cfg.n_layers)
        ]  # L x [B, H, T, Dh] (None for a positional layer)
        self.v = [_buffer(shape, f"v{i}", static, device, dtype) for i in range(cfg.n_layers)]  # L x [B, H, T, Dh]
        self.length = 0  # positions filled so far
        self.bias: list[torch.Tensor] | None = None  # L x [H, T, T] (block_size each), or None: computed per call
        self.v_t: list[torch.Tensor | None] | None = None  # L x [B, H, Dh, T]: content layers' values position-fastest
        self.v_h: list[torch.Tensor | None] | None = None  # L x [H, T, B, Dh]: positional layers' values head-major
        self.weights: list[torch.Tensor | None] | None = None  # L x [H, T, T]: positional layers' attention weights

    def start_decoding(self) -> None:
        """From now on (after the prefill; `bias` set) keep the values as the decode steps read them: position-
        fastest in the content layers (`v_t`), head-major in the positional ones (`v_h`, with their `weights`)."""
        if self.bias is None:
            raise ValueError("set the cache's bias table (model.position_biases()) before start_decoding")
        positional = [k is None for k in self.k]  # a positional layer keeps no keys
        self.v_t, self.v_h = [], []
        for i, v in enumerate(self.v):
            B, H, T, Dh = v.shape
            if positional[i]:
                v_h = _buffer((H, T, B, Dh), f"v_h{i}", self.static, v.device, v.dtype)
                v_h[:, : self.length] = v[:, :, : self.length].permute(1, 2, 0, 3)  # [H, length, B, Dh]
                self.v_t.append(None)
                self.v_h.append(v_h)
            else:
                v_t = _buffer((B, H, Dh, T), f"v_t{i}", self.static, v.device, v.dtype)
                v_t[..., : self.length] = v[:, :, : self.length].transpose(-1, -2)  # [B, H, Dh, length]
                self.v_t.append(v_t)
                self.v_h.append(None)
        self.weights = [torch.softmax(b, dim=-1) if p else None for b, p in zip(self.bias, positional)]

    def positional_step(self, layer: int, v: torch.Tensor) -> torch.Tensor:
        """A positional layer's attention output for one new position: store its values v [B, H, 1, Dh], then mix
        the values of every position so far by the weights of the newest one: [B, 1, H * Dh]."""
        B, H, _, Dh = v.shape
        t, v_h = self.length, self.v_h[layer]  # v_h [H, T, B, Dh]
        v_h[:, t] = v[:, :, 0].transpose(0, 1)  # [H, B, Dh]
        out = self.weights[layer][:, t : t + 1, : t + 1] @ v_h[:, : t + 1].flatten(2)  # [H, 1, B * Dh]
        return out.view(H, B, Dh).transpose(0, 1).reshape(B, 1, H * Dh)

    def repeat_interleave(self, repeats: int) -> KVCache:
        """A cache whose row i * repeats + j is row i of this one (j < repeats): a prompt's keys and values shared
        by its group of answers. Only the positions filled so far are copied."""
        out = copy.copy(self)
        out.k = [k if k is None else self._repeat(k, repeats, f"k{i}") for i, k in enumerate(self.k)]
        out.v = [self._repeat(v, repeats, f"v{i}") for i, v in enumerate(self.v)]  # L x [B * repeats, H, T, Dh]
        if self.v_t is not None or self.v_h is not None:
            raise ValueError("repeat_interleave a cache before start_decoding")
        return out

    def _repeat(self, buffer: torch.Tensor, repeats: int, name: str, dim: int = 2) -> torch.Tensor:
        """A buffer whose row i * repeats + j is row i of `buffer` at the positions filled so far (along `dim`).
        [B, ...] -> [B * repeats, ...]."""
        B = buffer.shape[0]
        out = _buffer((B * repeats,) + buffer.shape[1:], name, self.static, buffer.device, buffer.dtype)
        filled = (slice(None),) * (dim + 1) + (slice(0, self.length),)
        out.view(B, repeats, *buffer.shape[1:])[filled] = buffer[:, None][filled]  # one broadcast copy
        return out

    def append(self, layer: int, k: torch.Tensor | None, v: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
        """Store the newest positions' keys (None in a positional layer) and values [B, H, T, Dh]; returns all so far,
        [B, H, length + T, Dh]."""
        end = self.length + v.shape[2]
        if k is not None:
            self.k[layer][:, :, self.length : end] = k
        self.v[layer][:, :, self.length : end] = v
        if self.v_t is not None and self.v_t[layer] is not None:
            self.v_t[layer][:, :, :, self.length : end] = v.transpose(-1, -2)
        return (None if k is None else self.k[layer][:, :, :end]), self.v[layer][:, :, :end]

    def values_for_bmm(self, layer: int, end: int) -> torch.Tensor:
        """The values of positions < end [B, H, end, Dh] laid out for `weights @ values` with one query: position-
        fastest when bmm multiplies them in its own loop (the same sums in the same order, whatever the layout), else
        row-major (the BLAS path, whose sums depend on the layout)."""
        if self.v_t is not None and self.v_t[layer] is not None and end * self.v_t[layer].shape[2] < _BMM_OWN_LOOP:
            return self.v_t[layer][:, :, :, :end].transpose(-1, -2)
        return self.v[layer][:, :, :end]


class JoinedKV:
    """A training forward's keys and values under autograd: the prompt's, then its group's answers' joined to them by
    one cat per layer. KVCache's numbers, but the backward slices the gradient instead of zero-filling and cloning
    whole buffers."""

    def __init__(self, cfg: ModelConfig):
        self.k: list[torch.Tensor | None] = [None] * cfg.n_layers  # L x [B, H, length, Dh] (None: none yet / no keys)
        self.v: list[torch.Tensor | None] = [None] * cfg.n_layers  # L x [B, H, length, Dh]
        self.length = 0  # positions filled so far
        self.bias = None  # computed per call

    def repeat_interleave(self, repeats: int) -> JoinedKV:
        """The cache of the group: the joins broadcast each prompt row to its `repeats` rows (`append` infers it)."""
        out = copy.copy(self)
        out.k, out.v = list(self.k), list(self.v)  # appending to the group's cache leaves this one as it is
        return out

    def append(self, layer: int, k: torch.Tensor | None, v: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
        """KVCache.append's keys and values [B, H, length + T, Dh]."""
        self.k[layer], self.v[layer] = _join(self.k[layer], k), _join(self.v[layer], v)
        return self.k[layer], self.v[layer]

    def values_for_bmm(self, layer: int, end: int) -> torch.Tensor:
        """All values so far, [B, H, end, Dh]."""
        return self.v[layer]


def _join(past: torch.Tensor | None, new: torch.Tensor | None) -> torch.Tensor | None:
    """past [N, H, S, Dh] then new [N * G, H, T, Dh] along the positions, row i of past before rows i*G ... i*G+G-1
    of new: [N * G, H, S + T, Dh] (new alone, made contiguous as a buffer would hold it, when there is no past)."""
    if new is None or past is None:
        return None if new is None else new.contiguous()
    N, G = past.shape[0], new.shape[0] // past.shape[0]
    shared = _ContiguousGrad.apply(past[:, None].expand(N, G, *past.shape[1:]))  # [N, G, H, S, Dh]
    joined = torch.cat([shared, new.view(N, G, *new.shape[1:])], dim=3)  # [N, G, H, S + T, Dh]
    return joined.view(N * G, *joined.shape[2:])


class _ContiguousGrad(torch.autograd.Function):
    """Identity whose backward makes the gradient contiguous: the group sum of a shared prompt's gradient then runs
    over the layout (and so in the order) of KVCache's broadcast copy."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        """x itself (as a view)."""
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        """The gradient, contiguous."""
        return grad.contiguous()


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

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor]:
        """q, k, v [B, H, T, Dh] from x [B, T, D]. A positional layer, whose weights ignore q and k, computes only v
        from the value rows of the linear (q, k None): the same numbers and gradients, a third of the work."""
        B, T, D = x.shape
        if self.positional:
            v = F.linear(x, self.qkv.weight[2 * D :], self.qkv.bias[2 * D :])  # [B, T, D]
            return None, None, v.view(B, T, self.n_heads, D // self.n_heads).transpose(1, 2)  # [B, H, T, Dh]
        q, k, v = (
            part.view(B, T, self.n_heads, D // self.n_heads).transpose(1, 2)  # [B, H, T, Dh]
            for part in self.qkv(x).split(D, dim=-1)
        )  # the same views as one reshape, a cheaper backward
        return q, k, v

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """x [B, T, D] -> [B, T, D]; with a cache, x holds the T newest positions."""
        B, T, D = x.shape
        q, k, v = self.heads(x)  # [B, H, T, Dh] each (q, k None in a positional layer)
        if self.positional and T == 1 and cache is not None and cache.v_h is not None:  # a decode step
            return self.proj(cache.positional_step(self.layer, v))
        start = 0
        if cache is not None:
            start = cache.length
            k, v = cache.append(self.layer, k, v)  # [B, H, start+T, Dh]
        if cache is not None and cache.bias is not None:  # the same numbers, sliced from the table of the call
            bias = cache.bias[self.layer][:, start : start + T, : start + T]  # [H, T, start+T]
        else:
            bias = self.position_bias(start, T, v.shape[2])  # [H, T, start+T]
        if T == 1 and cache is not None:
            v = cache.values_for_bmm(self.layer, start + 1)  # [B, H, start+1, Dh]
        if self.positional:  # weights depend on the offset alone: the same "look k back" at every position
            out = torch.softmax(bias, dim=-1) @ v  # [B, H, T, Dh]
        else:  # SDPA's own arithmetic, without its check for rows with every key masked (a causal row has one)
            scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5 + bias  # [B, H, T, start+T]
            out = scores.softmax(dim=-1) @ v  # [B, H, T, Dh]
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
        pos = self.pos_emb.weight[start : start + idx.shape[1]]  # [T, D] the rows an embedding lookup would return
        x = self.tok_emb(idx) + pos if self.cfg.abs_pos else self.tok_emb(idx)  # [B, T, D]
        for block in self.blocks:
            x = block(x, cache)
        if cache is not None:
            cache.length += idx.shape[1]
        return self.ln_f(x)

    def position_biases(self) -> list[torch.Tensor]:
        """Every layer's attention bias for all query and key positions: L x [H, T, T] (T = block_size)."""
        T = self.cfg.block_size
        return [block.attn.position_bias(0, T, T) for block in self.blocks]

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits. idx [B, T] -> [B, T, V]."""
        return self.logits(self.hidden(idx, cache))

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Next-token logits from final hidden states (tied embeddings). [..., D] -> [..., V]."""
        return hidden @ self.tok_emb.weight.T

    def hidden_after_prompts(self, prompt_ids: torch.Tensor, tokens: torch.Tensor, group_size: int) -> torch.Tensor:
        """Final hidden states at each prompt's last position and at every token that continues it; each prompt runs
        through the model once and its keys and values are shared by its G = group_size continuations.

        Args:
            prompt_ids: int64 [N, P].
            tokens: int64 [N * G, T]; rows i*G ... i*G+G-1 continue prompt i.
        Returns:
            [N * G, 1 + T, D]: position P-1, then P ... P+T-1.

        Under autograd the keys and values are joined with one cat per layer (`JoinedKV`) instead of written into
        buffers: the numbers and gradients of the buffers, with a lighter backward.
        """
        if torch.is_grad_enabled():
            cache = JoinedKV(self.cfg)
        else:
            cache = KVCache(self.cfg, prompt_ids.shape[0], device=prompt_ids.device, static=True)
        last = self.hidden(prompt_ids, cache)[:, -1:].repeat_interleave(group_size, dim=0)  # [N*G, 1, D]
        rest = self.hidden(tokens, cache.repeat_interleave(group_size))  # [N*G, T, D]
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

    def forward(self, prompt_ids: torch.Tensor, responses: torch.Tensor, group_size: int = 1) -> torch.Tensor:
        """Value of the state before each response token. [B, P], [B, T] -> [B, T] (group_size: as in
        `response_logps`)."""
        h = _hidden_before_responses(self.body, prompt_ids, responses, group_size)  # [B, T, D]
        return self.head(h).squeeze(-1)  # [B, T]


@dataclass
class Rollout:
    """A batch of sampled answers."""

    prompt_ids: torch.Tensor  # [B, P] int64
    responses: torch.Tensor  # [B, T] int64, PAD after the stop token
    logps: torch.Tensor  # [B, T] log-prob of each sampled token under the sampling distribution (0 on padding)
    response_mask: torch.Tensor  # [B, T] bool, True up to and including the first '$'
    entropy: torch.Tensor | None = None  # [B, T] entropy (nats) of the distribution each token was drawn from


@torch.no_grad()
def sample(
    model: TinyTransformer,
    prompt_ids: torch.Tensor,
    temperature: float = 1.0,
    max_new_tokens: int = MAX_NEW_TOKENS,
    generator: torch.Generator | None = None,
    group_size: int = 1,
) -> Rollout:
    """Sample answers for a batch of equal-length prompts with a KV cache; stop at '$' or after max_new_tokens.

    Args:
        prompt_ids: int64 [N, P].
        temperature: 1.0 samples the policy itself; 0 decodes greedily.
        generator: torch.Generator that fixes the samples.
        group_size: G answers per prompt (rows i*G ... i*G+G-1 answer prompt i). Each prompt is run
            through the model once and its cache shared by its G answers: the same numbers as repeating the prompt
            G times, with 1/G of the prompt work.
    Returns:
        Rollout of B = N * group_size answers: prompt_ids [B, P]; responses, logps, response_mask [B, T],
        T <= max_new_tokens.

    A decode step does only what depends on the new token: the attention biases are computed once per call
    (`KVCache.bias`), the noise of every draw too (the Gumbel-max trick: a step's draw is one add and an argmax of
    the log-probs it has anyway; `gumbel_noise`), and the padding after '$' and the sampled tokens' log-probs are
    filled in once at the end. The steps run in inference mode (less bookkeeping per operation than no_grad); the
    returned tensors are ordinary ones.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    with torch.inference_mode():
        tokens, logprobs = _decode(model, prompt_ids, temperature, max_new_tokens, generator, group_size)
    drawn = torch.stack(tokens, dim=1)  # [B, T] with what was drawn after '$' too
    mask = response_mask(drawn)  # [B, T]
    logprobs = torch.stack(logprobs, dim=1)  # [B, T, V]
    logps = logprobs.gather(2, drawn[..., None]).squeeze(-1)  # [B, T]
    if torch.isnan(logps).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    entropy = token_entropy(logprobs) if temperature > 0 else torch.zeros_like(logps)  # greedy: one choice, 0 nats
    return Rollout(
        prompt_ids.repeat_interleave(group_size, dim=0),
        drawn.masked_fill(~mask, PAD_ID),
        logps.masked_fill(~mask, 0.0),
        mask,
        entropy.masked_fill(~mask, 0.0),
    )


def _decode(
    model: TinyTransformer,
    prompt_ids: torch.Tensor,
    temperature: float,
    max_new_tokens: int,
    generator: torch.Generator | None,
    group_size: int,
) -> tuple[list, list]:
    """`sample`'s loop: the tokens drawn (T x [B], also after '$') and the log-probs they were drawn from
    (T x [B, V])."""
    N, P = prompt_ids.shape
    max_new_tokens = min(max_new_tokens, model.cfg.block_size - P)
    cache = KVCache(model.cfg, N, device=prompt_ids.device, static=True)
    cache.bias = model.position_biases()
    logits = model(prompt_ids, cache)[:, -1]  # [N, V]
    if group_size > 1:
        logits = logits.repeat_interleave(group_size, dim=0)  # [B, V]
        cache = cache.repeat_interleave(group_size)
    cache.start_decoding()
    tokens, logprobs = [], []  # T x [B], T x [B, V]
    done = torch.zeros(logits.shape[0], dtype=torch.bool, device=prompt_ids.device)  # [B]
    noise = None if temperature == 0 else gumbel_noise((max_new_tokens, *logits.shape), generator)  # [T, B, V]
    for step in range(max_new_tokens):
        scaled = logits if temperature in (0, 1) else logits / temperature  # dividing by 1 changes no bit
        logprobs.append(torch.log_softmax(scaled, dim=-1))  # [B, V]
        tokens.append((logprobs[-1] if noise is None else logprobs[-1] + noise[step]).argmax(dim=-1))  # [B]
        done |= tokens[-1] == STOP_ID
        if step == max_new_tokens - 1 or bool(done.all()):
            break
        logits = model(tokens[-1][:, None], cache)[:, -1]  # [B, V]
    return tokens, logprobs


def gumbel_noise(shape: tuple, generator: torch.Generator | None) -> torch.Tensor:
    """Standard Gumbel noise -log(E), E ~ Exp(1) = -log(1 - U) with U uniform on [0, 1): argmax(logprobs + noise)
    over the last dim draws a token from softmax(logprobs) (the Gumbel-max trick). E is kept >= the smallest normal
    float so the noise stays finite and a token of probability 0 (logprob -inf) is never drawn."""
    noise = torch.rand(shape, generator=generator)  # U
    return noise.neg_().log1p_().neg_().clamp_(min=torch.finfo(noise.dtype).tiny).log_().neg_()


def response_mask(responses: torch.Tensor) -> torch.Tensor:
    """True for every token up to and including the first '$' (all tokens if there is none). [B, T] -> [B, T]."""
    is_stop = (responses == STOP_ID).int()  # [B, T]
    stops_before = torch.cumsum(is_stop, dim=1) - is_stop  # [B, T] number of '$' strictly before t
    return stops_before == 0


def response_logps(
    model: TinyTransformer,
    prompt_ids: torch.Tensor,
    responses: torch.Tensor,
    return_logits: bool = False,
    group_size: int = 1,
):
    """Log-prob of each response token in one batched forward pass (keeps the graph for training).

    Args:
        prompt_ids: int64 [B, P]; responses: int64 [B, T].
        group_size: G > 1 when rows i*G ... i*G+G-1 share one prompt (a group): the prompt then runs through
            the model once for its group, as in `sample`; about a third less work for this task's 11-token prompts.
    Returns:
        logps [B, T] (and the logits [B, T, V] when return_logits).
    """
    if group_size == 1:  # logits of every position, then the slice: the warm-up's numbers since day one
        seq = torch.cat([prompt_ids, responses], dim=1)[:, :-1]  # [B, P+T-1]
        logits = model(seq)[:, prompt_ids.shape[1] - 1 :]  # [B, T, V]
    else:
        logits = model.logits(_hidden_before_responses(model, prompt_ids, responses, group_size))  # [B, T, V]
    logps = torch.log_softmax(logits, dim=-1).gather(2, responses[..., None]).squeeze(-1)  # [B, T]
    return (logps, logits) if return_logits else logps


def _hidden_before_responses(
    model: TinyTransformer, prompt_ids: torch.Tensor, responses: torch.Tensor, group_size: int
) -> torch.Tensor:
    """Final hidden state at the position before each response token. [B, P], [B, T] -> [B, T, D]."""
    P = prompt_ids.shape[1]
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if group_size == 1:
        seq = torch.cat([prompt_ids, responses], dim=1)[:, :-1]  # [B, P+T-1]
        return model.hidden(seq)[:, P - 1 :]  # [B, T, D]
    prompts = prompt_ids[::group_size]  # [N, P]
    if prompt_ids.shape[0] % group_size or not torch.equal(prompts.repeat_interleave(group_size, dim=0), prompt_ids):
        raise ValueError(
            f"group_size={group_size}: rows i*G ... i*G+G-1 must share one prompt (got {prompt_ids.shape[0]} rows)"
        )
    return model.hidden_after_prompts(prompts, responses[:, :-1], group_size)  # [B, T, D]


def update_logps(
    policy: TinyTransformer,
    rollout: Rollout,
    advantages: torch.Tensor,
    group_size: int,
    every_row: bool = False,
    watch_every_row: bool = False,
) -> torch.Tensor:
    """The policy's log-probs of a rollout's answers [B, T] with their graph, for an update by group advantages.

    A group whose G answers all got the same reward has advantage 0 on every answer: with no KL term (every_row
    False) it adds exactly 0 to the clipped loss and to its gradient, so its answers get no graph (late in a GRPO run,
    over half of the groups). Their rows hold the sampling log-probs, detached; or, with watch_every_row (several
    updates per batch, whose ratio diagnostics watch every answer), the policy's log-probs computed without a graph:
    a forward pass instead of a forward and a backward. every_row=True (a KL term): `response_logps` of every answer.

    Args:
        rollout: `sample`'s answers, rows i*G ... i*G+G-1 for prompt i (G = group_size).
        advantages: [B], one per answer.
    """
    B = rollout.responses.shape[0]
    if not every_row:
        if not isinstance(advantages, torch.Tensor) or tuple(advantages.shape) != (B,) or B % group_size:
            got = tuple(advantages.shape) if isinstance(advantages, torch.Tensor) else type(advantages).__name__
            raise ValueError(
                f"advantages must be a tensor of shape ({B},), one per answer in groups of {group_size}; got {got}"
            )
        groups = (advantages.reshape(-1, group_size) != 0).any(dim=1)  # [P]; NaN counts as not 0
    if every_row or bool(groups.all()):
        return response_logps(policy, rollout.prompt_ids, rollout.responses, group_size=group_size)
    if not groups.any():
        groups[0] = True  # one group runs, so the loss has a graph (its gradient is 0; the optimizer still steps)
    rows = groups.repeat_interleave(group_size)  # [B]
    logps = rollout.logps.clone()  # [B, T]
    if watch_every_row:
        with torch.no_grad():
            logps[~rows] = response_logps(
                policy, rollout.prompt_ids[~rows], rollout.responses[~rows], group_size=group_size
            )  # [B - B', T] without graph
    logps[rows] = response_logps(
        policy, rollout.prompt_ids[rows], rollout.responses[rows], group_size=group_size
    )  # [B', T] with graph
    return logps
