"""The tiny Transformer: size, shapes, KV-cached sampling equal to the uncached forward pass, determinism."""

import copy

import numpy as np
import pytest
import torch

from rlvr.model import ModelConfig, TinyTransformer, ValueModel, response_logps, response_mask, sample
from rlvr.task import MAX_NEW_TOKENS, PAD_ID, PROMPT_LEN, STOP_ID, VOCAB_SIZE, prompt_tokens, sample_prompts


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return TinyTransformer().eval()


@pytest.fixture(scope="module")
def prompts():
    return prompt_tokens(sample_prompts(32, np.random.default_rng(0)))


def test_about_seventy_thousand_parameters(model):
    assert 60_000 <= model.num_parameters() <= 80_000


def test_forward_shape(model, prompts):
    assert model(prompts).shape == (32, PROMPT_LEN, VOCAB_SIZE)


def test_sequence_longer_than_block_is_refused(model):
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, model.cfg.block_size + 1, dtype=torch.long))


def test_cached_sampling_logps_equal_uncached_forward(model, prompts):
    rollout = sample(model, prompts, temperature=1.0, generator=torch.Generator().manual_seed(0))
    full = response_logps(model, prompts, rollout.responses)
    mask = rollout.response_mask
    assert torch.allclose(full[mask], rollout.logps[mask], atol=1e-5)
    assert torch.all(rollout.logps[~mask] == 0)


def test_cached_logits_equal_uncached_at_every_position(model, prompts):
    from rlvr.model import KVCache

    seq = torch.cat([prompts, torch.randint(0, 10, (32, 5))], dim=1)
    cache = KVCache(model.cfg, 32)
    stepwise = [model(seq[:, :PROMPT_LEN], cache)[:, -1]]
    for t in range(PROMPT_LEN, seq.shape[1]):
        stepwise.append(model(seq[:, t : t + 1], cache)[:, -1])
    full = model(seq)[:, PROMPT_LEN - 1 :]
    assert torch.allclose(torch.stack(stepwise, 1), full, atol=1e-5)


def test_sampling_shapes_stop_and_padding(model, prompts):
    r = sample(
        model, prompts, temperature=1.0, max_new_tokens=MAX_NEW_TOKENS, generator=torch.Generator().manual_seed(1)
    )
    assert r.responses.shape == r.logps.shape == r.response_mask.shape
    assert r.responses.shape[1] <= MAX_NEW_TOKENS
    for row, m in zip(r.responses, r.response_mask):
        stops = (row == STOP_ID).nonzero()
        if len(stops):
            first = stops[0].item()
            assert m[: first + 1].all() and not m[first + 1 :].any()
            assert (row[first + 1 :] == PAD_ID).all()


def test_greedy_is_deterministic_and_seeded_sampling_repeats(model, prompts):
    a = sample(model, prompts, temperature=0.0)
    b = sample(model, prompts, temperature=0.0)
    assert torch.equal(a.responses, b.responses)
    c = sample(model, prompts, generator=torch.Generator().manual_seed(5))
    d = sample(model, prompts, generator=torch.Generator().manual_seed(5))
    assert torch.equal(c.responses, d.responses)


def test_negative_temperature_refused(model, prompts):
    with pytest.raises(ValueError):
        sample(model, prompts, temperature=-1.0)


@pytest.mark.parametrize("group_size", [1, 2, 8])
def test_shared_prompt_prefill_gives_the_numbers_of_repeated_prompts(model, prompts, group_size):
    shared = sample(model, prompts[:8], generator=torch.Generator().manual_seed(3), group_size=group_size)
    repeated = sample(
        model, prompts[:8].repeat_interleave(group_size, dim=0), generator=torch.Generator().manual_seed(3)
    )
    for name in ("prompt_ids", "responses", "logps", "response_mask"):
        assert torch.equal(getattr(shared, name), getattr(repeated, name)), name
    assert shared.responses.shape[0] == 8 * group_size


def test_kv_cache_repeat_interleave_maps_row_i_to_a_group():
    from rlvr.model import KVCache

    cache = KVCache(ModelConfig(), batch=3)
    assert cache.k[0] is None  # the positional layer keeps no keys
    for k, v in zip(cache.k[1:], cache.v[1:]):
        k.copy_(torch.arange(3.0).view(3, 1, 1, 1).expand_as(k))
        v.copy_(-k)
    cache.length = 7
    group = cache.repeat_interleave(4)
    assert group.k[0] is None
    for k, v, k_before in zip(group.k[1:], group.v[1:], cache.k[1:]):
        assert k[:, 0, 0, 0].tolist() == [0.0] * 4 + [1.0] * 4 + [2.0] * 4
        assert torch.equal(v[:, :, :7], -k[:, :, :7])  # the filled positions; the rest is written before it is read
        assert torch.equal(k[:, :, :7], k_before[:, :, :7].repeat_interleave(4, dim=0))
    assert group.length == 7
    assert cache.k[1].shape[0] == 3  # the original is left as it was


@pytest.mark.parametrize("group_size", [2, 8])
def test_shared_prompt_training_forward_matches_the_full_forward(model, prompts, group_size):
    """Log-probs and their gradients with each prompt run once per group equal those of the full sequences."""
    rollout = sample(model, prompts[:6], generator=torch.Generator().manual_seed(4), group_size=group_size)
    weights = torch.randn(rollout.responses.shape, generator=torch.Generator().manual_seed(5))  # [B, T]

    def logps_and_grads(g):
        model.zero_grad(set_to_none=True)
        logps = response_logps(model, rollout.prompt_ids, rollout.responses, group_size=g)  # [B, T]
        (logps * weights * rollout.response_mask).sum().backward()
        return logps.detach(), [p.grad.clone() for p in model.parameters()]

    full, full_grads = logps_and_grads(1)
    shared, shared_grads = logps_and_grads(group_size)
    model.zero_grad(set_to_none=True)
    assert torch.allclose(shared, full, atol=1e-5)
    assert torch.allclose(shared[rollout.response_mask], rollout.logps[rollout.response_mask], atol=1e-5)
    for a, b in zip(shared_grads, full_grads):
        assert torch.allclose(a, b, atol=1e-5 * max(1.0, b.abs().max().item()))


@pytest.mark.parametrize("group_size, n_prompts", [(8, 32), (2, 5), (3, 1)])
def test_joined_keys_and_values_give_the_buffers_numbers_and_gradients_bit_for_bit(biased_model, group_size, n_prompts):
    """A training forward joins its keys and values by cat (JoinedKV): the log-probs and every gradient of the same
    forward through KVCache's buffers, bit for bit."""
    from rlvr.model import KVCache

    prompt_ids = prompt_tokens(sample_prompts(n_prompts, np.random.default_rng(group_size)))
    rollout = sample(biased_model, prompt_ids, generator=torch.Generator().manual_seed(4), group_size=group_size)
    weights = torch.randn(rollout.responses.shape, generator=torch.Generator().manual_seed(5))  # [B, T]

    def through_buffers(model, prompts, tokens, group_size):  # hidden_after_prompts as it was written
        cache = KVCache(model.cfg, prompts.shape[0])
        last = model.hidden(prompts, cache)[:, -1:].repeat_interleave(group_size, dim=0)  # [N*G, 1, D]
        rest = model.hidden(tokens, cache.repeat_interleave(group_size))  # [N*G, T, D]
        return torch.cat([last, rest], dim=1)  # [N*G, 1+T, D]

    results = []
    for hidden in (type(biased_model).hidden_after_prompts, through_buffers):
        biased_model.zero_grad(set_to_none=True)
        prompts, tokens = rollout.prompt_ids[::group_size], rollout.responses[:, :-1]
        logits = biased_model.logits(hidden(biased_model, prompts, tokens, group_size))  # [B, T, V]
        logps = torch.log_softmax(logits, dim=-1).gather(2, rollout.responses[..., None]).squeeze(-1)  # [B, T]
        (logps * weights).sum().backward()
        results.append((logps.detach(), [p.grad.clone() for p in biased_model.parameters()]))
    biased_model.zero_grad(set_to_none=True)
    (joined, joined_grads), (buffers, buffer_grads) = results
    assert torch.equal(joined, buffers)
    for a, b in zip(joined_grads, buffer_grads):
        assert torch.equal(a, b)


def test_shared_prompt_forward_refuses_groups_with_different_prompts(model, prompts):
    responses = torch.randint(0, 10, (8, 5))
    with pytest.raises(ValueError, match="share one prompt"):
        response_logps(model, prompts[:8], responses, group_size=4)  # 8 different prompts
    with pytest.raises(ValueError, match="share one prompt"):
        response_logps(model, prompts[:1].repeat(6, 1), responses[:6], group_size=4)  # 6 rows, G = 4


def test_shared_prompt_forward_with_one_token_answers_and_bad_group_sizes(model, prompts):
    group = prompts[:3].repeat_interleave(4, dim=0)  # [12, P]
    responses = torch.randint(0, 10, (12, 1))  # every answer one token long (e.g. a bare '$')
    shared = response_logps(model, group, responses, group_size=4)
    assert shared.shape == (12, 1)
    assert torch.allclose(shared, response_logps(model, group, responses), atol=1e-5)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="group_size must be >= 1"):
            response_logps(model, group, responses, group_size=bad)


def test_value_model_with_a_shared_prompt_matches_the_full_forward(model, prompts):
    value = ValueModel(model)
    torch.nn.init.normal_(value.head.weight)  # a head that is not 0, so the hidden states matter
    group = prompts[:4].repeat_interleave(3, dim=0)  # [12, P]
    responses = torch.randint(0, 10, (12, 6))
    assert torch.allclose(value(group, responses, 3), value(group, responses), atol=1e-5)


def test_group_size_below_one_refused(model, prompts):
    with pytest.raises(ValueError, match="group_size"):
        sample(model, prompts, group_size=0)


def test_response_mask_stops_after_first_stop_token():
    r = torch.tensor([[13, 1, STOP_ID, PAD_ID], [1, 2, 3, 4], [STOP_ID, STOP_ID, 1, 1]])
    assert response_mask(r).tolist() == [[True, True, True, False], [True] * 4, [True, False, False, False]]


def test_value_model_starts_at_zero_and_has_grads(model, prompts):
    value = ValueModel(model)
    responses = torch.randint(0, 10, (32, 6))
    v = value(prompts, responses)
    assert v.shape == (32, 6) and torch.all(v == 0)
    v.sum().backward()
    assert value.head.weight.grad is not None


def test_same_seed_same_initial_weights():
    torch.manual_seed(3)
    a = TinyTransformer(ModelConfig())
    torch.manual_seed(3)
    b = TinyTransformer(ModelConfig())
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


# ---------------------------------------------------------------- the decode step's tricks (issue 22)
def plain_scores(model, prompt_ids, tokens, temperature, group_size):
    """The log-probs `sample` draws each token from, as a loop without its speed-ups computes them (a fresh cache,
    the bias per step, the values of every layer row-major), teacher-forced on `tokens` [B, T]: [B, T, V]."""
    from rlvr.model import KVCache

    cache = KVCache(model.cfg, prompt_ids.shape[0])
    logits = model(prompt_ids, cache)[:, -1].repeat_interleave(group_size, dim=0)  # [B, V]
    cache = cache.repeat_interleave(group_size)
    logprobs = []
    for step in range(tokens.shape[1]):
        logprobs.append(torch.log_softmax(logits if temperature in (0, 1) else logits / temperature, dim=-1))
        if step < tokens.shape[1] - 1:
            logits = model(tokens[:, step : step + 1], cache)[:, -1]  # [B, V]
    return torch.stack(logprobs, dim=1)  # [B, T, V]


@pytest.fixture(scope="module")
def biased_model():
    """A model whose offset biases are far from 0 and whose answers stop at '$' at different lengths."""
    torch.manual_seed(1)
    m = TinyTransformer(ModelConfig(offset_bias_init=2.0)).eval()
    with torch.no_grad():
        m.tok_emb.weight[STOP_ID] += 0.15  # tied output: '$' becomes likely, so answers end early and late
    return m


@pytest.mark.parametrize("temperature", [1.0, 0.0, 0.7])
@pytest.mark.parametrize("n_prompts, group_size", [(32, 8), (7, 1), (3, 4)])
def test_sample_draws_each_token_as_the_plain_loop_would(biased_model, temperature, n_prompts, group_size):
    """Teacher-forced on what `sample` drew, a plain loop gives the same log-probs (to float rounding: the positional
    layer sums in another order), and each token is the argmax of those log-probs plus the call's Gumbel noise."""
    from rlvr.model import gumbel_noise

    prompt_ids = prompt_tokens(sample_prompts(n_prompts, np.random.default_rng(n_prompts)))
    for seed in range(3):
        got = sample(
            biased_model,
            prompt_ids,
            temperature,
            generator=torch.Generator().manual_seed(seed),
            group_size=group_size,
        )
        tokens = got.responses.masked_fill(~got.response_mask, STOP_ID)  # [B, T] what was fed back at each step
        logprobs = plain_scores(biased_model, prompt_ids, tokens, temperature, group_size)  # [B, T, V]
        mask = got.response_mask
        want = logprobs.gather(2, tokens[..., None]).squeeze(-1)  # [B, T]
        assert torch.allclose(got.logps[mask], want[mask], atol=1e-5)
        assert torch.all(got.logps[~mask] == 0) and torch.all(got.responses[~mask] == PAD_ID)
        noise = gumbel_noise((MAX_NEW_TOKENS, *logprobs[:, 0].shape), torch.Generator().manual_seed(seed))
        scores = logprobs if temperature == 0 else logprobs + noise[: tokens.shape[1]].transpose(0, 1)  # [B, T, V]
        chosen = scores.gather(2, tokens[..., None]).squeeze(-1)  # [B, T]
        assert torch.all((scores.max(dim=-1).values - chosen)[mask] <= 1e-4)  # the best, or tied with it
        assert torch.equal(mask, response_mask(got.responses.masked_fill(~mask, STOP_ID)))
    lengths = got.response_mask.sum(1)
    assert temperature == 0 or lengths.min() < lengths.max()  # answers of several lengths: padding is exercised


def test_gumbel_max_draws_tokens_with_their_probabilities():
    """argmax(log p + Gumbel noise) is a draw from p (the Gumbel-max trick): frequencies within 5 standard errors."""
    from rlvr.model import gumbel_noise

    n = 200_000
    for seed in range(3):
        logprobs = torch.log_softmax(2 * torch.randn(VOCAB_SIZE, generator=torch.Generator().manual_seed(seed)), -1)
        draws = (logprobs + gumbel_noise((n, VOCAB_SIZE), torch.Generator().manual_seed(seed))).argmax(-1)  # [n]
        freq = torch.bincount(draws, minlength=VOCAB_SIZE).double() / n
        p = logprobs.double().exp()
        assert torch.all((freq - p).abs() <= 5 * (p * (1 - p) / n).sqrt() + 1e-12), (freq, p)


def test_gumbel_noise_is_finite_and_never_draws_an_impossible_token(monkeypatch):
    from rlvr.model import gumbel_noise

    monkeypatch.setattr(torch, "rand", lambda shape, generator=None: torch.zeros(shape))  # U = 0, the worst case
    noise = gumbel_noise((4, VOCAB_SIZE), None)
    assert torch.isfinite(noise).all()
    logprobs = torch.full((4, VOCAB_SIZE), float("-inf"))
    logprobs[:, 3] = 0.0  # only token 3 is possible
    assert torch.all((logprobs + noise).argmax(-1) == 3)


def test_sampling_draws_the_noise_once_per_call(biased_model, prompts):
    """Two calls from one generator use up exactly one uniform per (step, answer, token) each."""
    gen, ref = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    for _ in range(2):
        sample(biased_model, prompts[:3], generator=gen, group_size=4)
        torch.rand((MAX_NEW_TOKENS, 12, VOCAB_SIZE), generator=ref)
    assert torch.equal(gen.get_state(), ref.get_state())


def test_bias_table_rows_equal_the_bias_of_each_step(biased_model):
    for block, table in zip(biased_model.blocks, biased_model.position_biases()):
        T = biased_model.cfg.block_size
        assert torch.equal(table, block.attn.position_bias(0, T, T))
        for start in range(T):
            assert torch.equal(table[:, start : start + 1, : start + 1], block.attn.position_bias(start, 1, start + 1))


def test_decoding_values_give_the_products_of_the_row_major_ones_at_every_length():
    """start_decoding: a content layer's position-fastest values give the row-major products bit for bit; a
    positional layer's head-major step gives softmax(bias) @ values to float rounding."""
    from rlvr.model import KVCache

    torch.manual_seed(0)
    cfg = ModelConfig()
    H, Dh, T = cfg.n_heads, cfg.d_model // cfg.n_heads, cfg.block_size
    cache = KVCache(cfg, batch=256)
    for v in cache.v:
        v.normal_()
    cache.bias = [torch.randn(H, T, T).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))] * cfg.n_layers
    cache.length = T - 1
    cache.start_decoding()
    assert cache.v_t[0] is None and cache.v_h[1] is None  # layer 0 attends by position only, layer 1 by content
    for end in range(1, T + 1):
        weights = torch.softmax(torch.randn(256, H, 1, end), dim=-1)  # [B, H, 1, end]
        row_major = cache.v[1][:, :, :end]
        fast = cache.values_for_bmm(1, end)
        assert torch.equal(fast, row_major)
        assert torch.equal(weights @ fast, weights @ row_major), end
    v0 = cache.v[0].clone()  # [B, H, T, Dh]
    cache.length = T - 1
    out = cache.positional_step(0, v0[:, :, T - 1 :])  # [B, 1, H * Dh]
    want = torch.softmax(cache.bias[0][:, T - 1 :], dim=-1) @ v0  # [B, H, 1, Dh]
    assert torch.allclose(out, want.transpose(1, 2).reshape(256, 1, H * Dh), atol=1e-6)


def test_a_cache_repeats_its_rows_only_before_decoding_starts():
    from rlvr.model import KVCache

    cfg = ModelConfig()
    cache = KVCache(cfg, batch=2)
    cache.bias = [torch.zeros(cfg.n_heads, cfg.block_size, cfg.block_size)] * cfg.n_layers
    cache.start_decoding()
    with pytest.raises(ValueError, match="before start_decoding"):
        cache.repeat_interleave(2)
    with pytest.raises(ValueError, match="bias table"):
        KVCache(cfg, batch=2).start_decoding()


def test_static_cache_reuses_its_buffers_and_a_plain_one_does_not():
    from rlvr.model import _STATIC, KVCache

    _STATIC.__dict__.pop("pool", None)  # a pool left full by earlier tests would start over between a and b
    cfg = ModelConfig()
    a, b = KVCache(cfg, 5, static=True), KVCache(cfg, 5, static=True)
    assert a.k[1] is b.k[1] and a.v[1] is b.v[1]
    assert KVCache(cfg, 6, static=True).k[1] is not a.k[1]  # another shape, another buffer
    assert KVCache(cfg, 5).k[1] is not KVCache(cfg, 5).k[1]


def test_no_grad_shared_prompt_forward_equals_the_one_with_grad(model, prompts):
    rollout = sample(model, prompts[:4], generator=torch.Generator().manual_seed(2), group_size=8)
    with_grad = response_logps(model, rollout.prompt_ids, rollout.responses, group_size=8)
    with torch.no_grad():
        sample(model, prompts, group_size=8)  # leaves other numbers in the static buffers
        without = response_logps(model, rollout.prompt_ids, rollout.responses, group_size=8)
    assert torch.equal(with_grad.detach(), without)


def test_nan_probabilities_are_refused_as_multinomial_refuses_them(prompts):
    broken = TinyTransformer().eval()
    with torch.no_grad():
        broken.ln_f.weight.fill_(float("nan"))
    with pytest.raises(RuntimeError, match="probability tensor"):
        sample(broken, prompts[:2], generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("T, start, grad", [(14, 11, True), (11, 0, False), (26, 0, True)])
def test_attention_arithmetic_is_sdpas_bit_for_bit(T, start, grad):
    """The content layer computes softmax(q k^T / sqrt(Dh) + bias) v itself: the numbers (and gradients) of
    F.scaled_dot_product_attention, which it replaced, for a training forward, a prefill and a full sequence."""
    import torch.nn.functional as F

    torch.manual_seed(T)
    B, H, Dh, n = 64, 4, 16, start + T
    q, k, v = (torch.randn(B, H, n, Dh, requires_grad=grad) for _ in range(3))
    bias = torch.randn(H, n, n).masked_fill(torch.ones(n, n).triu(1).bool(), float("-inf"))
    bias = bias[:, start:].clone().requires_grad_(grad)  # [H, T, n]
    mine = torch.softmax((q[:, :, start:] @ k.transpose(-1, -2)) * Dh**-0.5 + bias, dim=-1) @ v
    sdpa = F.scaled_dot_product_attention(q[:, :, start:], k, v, attn_mask=bias)
    assert torch.equal(mine, sdpa)
    if grad:
        g = torch.randn_like(mine)
        for a, b in zip(torch.autograd.grad(mine, (q, k, v, bias), g), torch.autograd.grad(sdpa, (q, k, v, bias), g)):
            assert torch.equal(a, b)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("B, T", [(256, 1), (32, 11), (256, 14), (256, 15), (7, 26)])
def test_positional_layer_values_alone_are_the_full_linears_bit_for_bit(B, T, threads):
    """A positional layer computes v from the value rows of qkv alone: the numbers and gradients (weight, bias,
    input) of the whole linear split into q, k, v, at a decode step, a prefill and training forwards."""
    torch.manual_seed(B * T)
    attn = TinyTransformer(ModelConfig(offset_bias_init=2.0)).blocks[0].attn
    assert attn.positional
    x = torch.randn(B, T, 64, requires_grad=True)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        _, _, v_alone = attn.heads(x)  # [B, H, T, Dh]
        g = torch.randn_like(v_alone)
        grads_alone = torch.autograd.grad(v_alone, (attn.qkv.weight, attn.qkv.bias, x), g)
        D, H = 64, attn.n_heads
        v_full = attn.qkv(x).split(D, dim=-1)[2].view(B, T, H, D // H).transpose(1, 2)  # the straightforward way
        grads_full = torch.autograd.grad(v_full, (attn.qkv.weight, attn.qkv.bias, x), g)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(v_alone, v_full)
    for a, b in zip(grads_alone, grads_full):
        assert torch.equal(a, b) and torch.equal(a.signbit(), b.signbit())  # zeros of q's and k's rows included


# ---------------------------------------------------------------- update_logps: only the groups the loss learns from
def _grpo_loss(logps, rollout, advantages):
    """The package's GRPO loss for one update (ratio 1 in value)."""
    from rlvr.objectives import aggregate_loss, ppo_clip_loss

    per_token, _ = ppo_clip_loss(logps, logps.detach(), advantages)
    return aggregate_loss(per_token, rollout.response_mask, "seq_mean_token_mean")


@pytest.fixture(scope="module")
def grouped(biased_model, prompts):
    """A rollout of 6 groups of 4 and advantages that are 0 on groups 1, 2 and 4."""
    rollout = sample(biased_model, prompts[:6], generator=torch.Generator().manual_seed(3), group_size=4)
    advantages = torch.randn(24, generator=torch.Generator().manual_seed(0))
    advantages.view(6, 4)[[1, 2, 4]] = 0.0
    return rollout, advantages


def test_update_logps_runs_only_groups_with_an_advantage(biased_model, grouped, monkeypatch):
    import rlvr.model as m

    rollout, advantages = grouped
    seen = []
    real = m.response_logps
    monkeypatch.setattr(m, "response_logps", lambda *a, **k: seen.append(a[1].shape[0]) or real(*a, **k))
    logps = m.update_logps(biased_model, rollout, advantages, 4)
    assert seen == [12]  # groups 0, 3, 5
    full = real(biased_model, rollout.prompt_ids, rollout.responses, group_size=4)
    rows = (advantages.view(6, 4) != 0).any(1).repeat_interleave(4)
    assert torch.allclose(logps[rows], full[rows], atol=1e-6)
    assert torch.equal(logps[~rows], rollout.logps[~rows])
    assert logps.requires_grad


def test_update_logps_gives_the_gradient_of_every_row(biased_model, grouped):
    """Skipping the all-0 groups changes the loss and its gradient by float rounding only."""
    from rlvr.model import update_logps

    rollout, advantages = grouped
    grads = []
    for every_row in (False, True):
        biased_model.zero_grad(set_to_none=True)
        loss = _grpo_loss(update_logps(biased_model, rollout, advantages, 4, every_row), rollout, advantages)
        loss.backward()
        grads.append((loss.item(), torch.cat([p.grad.reshape(-1) for p in biased_model.parameters()])))
    biased_model.zero_grad(set_to_none=True)
    (skip_loss, skip_grad), (full_loss, full_grad) = grads
    assert skip_loss == pytest.approx(full_loss, rel=1e-6, abs=1e-9)
    assert float((skip_grad - full_grad).norm()) <= 1e-5 * float(full_grad.norm())
    assert float(full_grad.norm()) > 0


def test_update_logps_keeps_a_graph_when_every_advantage_is_zero(biased_model, grouped):
    from rlvr.model import update_logps

    rollout, _ = grouped
    zeros = torch.zeros(24)
    loss = _grpo_loss(update_logps(biased_model, rollout, zeros, 4), rollout, zeros)
    loss.backward()  # the optimizer still gets (zero) gradients and takes its step, as with every row
    assert all(p.grad is not None and torch.all(p.grad == 0) for p in biased_model.parameters())
    biased_model.zero_grad(set_to_none=True)


def test_update_logps_refuses_advantages_of_the_wrong_shape_in_one_line(biased_model, grouped):
    from rlvr.model import update_logps

    rollout, advantages = grouped
    with pytest.raises(ValueError, match=r"shape \(24,\)") as err:
        update_logps(biased_model, rollout, advantages[:, None].expand(24, 3), 4)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="must be a tensor of shape"):
        update_logps(biased_model, rollout, advantages.numpy(), 4)
    nan = advantages.clone()
    nan[4] = float("nan")  # a NaN is not 0: its group runs, so the NaN reaches the loss for the checks to name
    assert update_logps(biased_model, rollout, nan, 4).requires_grad


def test_update_logps_watching_every_row_gives_the_policys_logps_without_graph(biased_model, grouped, monkeypatch):
    """With several updates per batch the left-out groups run forward only: the policy's log-probs (not the sampling
    ones) on every row, a graph only through the groups with an advantage, the same loss and gradient."""
    import rlvr.model as m
    from rlvr.objectives import ppo_clip_loss

    rollout, advantages = grouped
    with torch.no_grad():  # a policy that has moved since it sampled, so its log-probs differ from the rollout's
        moved = copy.deepcopy(biased_model)
        for p in moved.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    seen = []
    real = m.response_logps
    monkeypatch.setattr(
        m, "response_logps", lambda *a, **k: seen.append((a[1].shape[0], torch.is_grad_enabled())) or real(*a, **k)
    )
    logps = m.update_logps(moved, rollout, advantages, 4, watch_every_row=True)
    assert sorted(seen) == [(12, False), (12, True)]  # groups 1, 2, 4 forward only; groups 0, 3, 5 with a graph
    full = real(moved, rollout.prompt_ids, rollout.responses, group_size=4)
    assert torch.allclose(logps, full, atol=1e-6) and not torch.allclose(logps, rollout.logps, atol=1e-3)
    rows = (advantages.view(6, 4) != 0).any(1).repeat_interleave(4)
    old = rollout.logps
    grads = []
    for lp in (logps, full):
        per_token, _ = ppo_clip_loss(lp, old, advantages)  # [B, T]
        loss = (per_token * rollout.response_mask).sum()
        grads.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, list(moved.parameters()))]))
    assert float((grads[0] - grads[1]).norm()) <= 1e-5 * float(grads[1].norm())
    assert float(grads[1].norm()) > 0 and bool(rows.any()) and not bool(rows.all())
