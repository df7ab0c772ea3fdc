"""The yardstick for `bench_rl.py`: a plain KV-cached PyTorch loop of the lecture's GRPO run's size.

What a straightforward implementation does, nothing shared or fused: a nanoGPT-style model of our shape (d 64, 2
layers, 4 heads, MLP 128, 16 tokens, tied output), each prompt copied for each of its 8 answers, a KV cache grown with
`torch.cat`, `F.scaled_dot_product_attention`, `torch.multinomial`; training runs the whole sequence (prompt and
answer) forward and backward and takes an Adam step on a GRPO-shaped loss. No early stop: a random model almost never
says '$', and our run's answers are 15-16 tokens long within a batch of 256 once the model thinks first.

Usage: python benchmarks/plain_loop.py [--steps 200]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from rlvr.task import EQ_ID, MAX_NEW_TOKENS, N_DIGITS, PROMPT_LEN, VOCAB_SIZE

D_MODEL, N_LAYERS, N_HEADS, D_MLP = 64, 2, 4, 128


class Block(nn.Module):
    """Pre-norm block; returns the new keys and values with its output."""

    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.qkv, self.proj = nn.Linear(D_MODEL, 3 * D_MODEL), nn.Linear(D_MODEL, D_MODEL)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, D_MLP), nn.GELU(), nn.Linear(D_MLP, D_MODEL))

    def forward(self, x, past=None):
        """x [B, T, D], past (k, v) [B, H, S, Dh] or None -> x [B, T, D], (k, v) [B, H, S + T, Dh]."""
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, N_HEADS, D // N_HEADS).permute(2, 0, 3, 1, 4)  # [B, H, T, Dh]
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)  # [B, H, T, Dh]
        x = x + self.proj(out.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x)), (k, v)


class PlainGPT(nn.Module):
    """Token + position embeddings, blocks, final norm, tied output."""

    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB_SIZE, D_MODEL)
        self.pos_emb = nn.Embedding(PROMPT_LEN + MAX_NEW_TOKENS, D_MODEL)
        self.blocks = nn.ModuleList(Block() for _ in range(N_LAYERS))
        self.ln_f = nn.LayerNorm(D_MODEL)

    def forward(self, idx, past=None):
        """idx [B, T] (positions after the cached ones) -> logits [B, T, V], the new cache (one (k, v) per layer)."""
        start = 0 if past is None else past[0][0].shape[2]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(start, start + idx.shape[1]))  # [B, T, D]
        cache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, None if past is None else past[i])
            cache.append(kv)
        return self.ln_f(x) @ self.tok_emb.weight.T, cache


@torch.no_grad()
def generate(model, prompts, new_tokens, generator):
    """Sample new_tokens tokens after each prompt [B, P] -> [B, new_tokens]."""
    logits, past = model(prompts)
    tokens = []
    for t in range(new_tokens):
        tok = torch.multinomial(torch.softmax(logits[:, -1], dim=-1), 1, generator=generator)  # [B, 1]
        tokens.append(tok)
        if t < new_tokens - 1:
            logits, past = model(tok, past)
    return torch.cat(tokens, dim=1)


def train_step(model, opt, prompts, responses, group_size):
    """One GRPO-shaped update: group-normalised rewards, the whole sequence forward and backward, Adam."""
    rewards = (responses == EQ_ID).float().mean(dim=1).view(-1, group_size)  # [P, G] any cheap verifier
    advantages = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)).view(-1, 1)
    seq = torch.cat([prompts, responses], dim=1)  # [B, P + T]
    logits, _ = model(seq[:, :-1])  # [B, P + T - 1, V]
    logps = torch.log_softmax(logits[:, prompts.shape[1] - 1 :], dim=-1).gather(2, responses[..., None]).squeeze(-1)
    loss = -(advantages * torch.exp(logps - logps.detach())).mean()  # [B, T] -> scalar
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def run(steps=200, prompts_per_step=32, group_size=8, new_tokens=MAX_NEW_TOKENS, seed=0):
    """`steps` steps of sampling and training; returns {'sampling_s', 'training_s', 'total_s'}."""
    torch.manual_seed(seed)
    model = PlainGPT()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    generator = torch.Generator().manual_seed(seed)
    sampling = training = 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        digits = torch.randint(0, 10, (prompts_per_step, N_DIGITS), generator=generator)
        prompts = torch.cat([digits, torch.full((prompts_per_step, 1), EQ_ID)], dim=1)  # [P, 11]
        prompts = prompts.repeat_interleave(group_size, dim=0)  # [B, 11] each prompt copied for its group
        model.eval()
        responses = generate(model, prompts, new_tokens, generator)  # [B, T]
        t1 = time.perf_counter()
        model.train()
        train_step(model, opt, prompts, responses, group_size)
        training += time.perf_counter() - t1
        sampling += t1 - t0
    return {"sampling_s": sampling, "training_s": training, "total_s": sampling + training}


def main():
    """Time one run and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    t = run(args.steps)
    print(
        f"plain loop, {args.steps} steps of 32 x 8: {t['total_s']:.1f} s "
        f"(sampling {t['sampling_s']:.1f} s, training {t['training_s']:.1f} s)"
    )


if __name__ == "__main__":
    main()
