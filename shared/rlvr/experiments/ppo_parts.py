"""The parts of PPO (lecture 2.2-2.4): the clipped objective, reward shaping and GAE, KL estimators, memory.

* Clipped objective: its value and autograd gradient against the ratio rho = pi_theta / pi_old, with the
  zero-gradient regions, and what happens to the ratios when one batch is reused for several updates.
* PPO for language models: a PPO run with a KL penalty (beta > 0) from the warm-up model, notebook 02's own run.
  Its curves are the ones the lecture expects (the score and the total reward rise while the KL part of the reward
  falls), and its final policy is the one the rest of the notebook takes apart: AlpacaFarm's per-token reward
  (-beta * KL_t, the score added at the last token, KL_t clamped at >= 0) and GAE on answers it samples. The value of
  every prefix is estimated by Monte-Carlo continuations: what a perfectly trained value model would predict.
* KL estimators k1, k2, k3 (Schulman 2020): Gaussians (his table, closed forms) and a trained policy against the
  warm-up model, per answer (the sum of the per-token estimates).
* Memory of PPO's four models (mixed-precision Adam: 16 bytes per trained parameter, 2 per frozen one).

Every function uses the package's reference objectives (`rlvr.objectives`), so the figures show the code the
training loop runs. What the learner reads of them, and the lecture's numbers next to ours, is in
`rlvr.narration.ppo_parts`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from rlvr.config import one_thread, size
from rlvr.experiments.common import pad, signed  # noqa: F401  (signed: notebook 02 prints with parts.signed)
from rlvr.i18n import N_, _
from rlvr.model import response_logps, sample
from rlvr.objectives import (
    aggregate_loss,
    compute_advantages,
    gae,
    kl_k1,
    kl_k2,
    kl_k3,
    masked_mean,
    policy_gradient_loss,
    ppo_clip_loss,
    shaped_rewards,
)
from rlvr.task import MAX_NEW_TOKENS, decode, prompt_text, prompt_tokens, sample_prompts, score_batch

CLIP_EPS = 0.2  # PPO's clip range (Schulman et al. 2017; AlpacaFarm; the lecture)
RATIO_GRID = np.linspace(0.0025, 1.9975, 400)  # ratios rho for the curves (grid midpoints: never exactly 1 +- eps)
EXERCISE_RATIOS = (0.5, 1.0, 1.1, 1.5)  # Exercise 2: A = +2, eps = 0.2
EXERCISE_ADVANTAGE = 2.0
# rho -> (objective, dJ/drho), as the lecture writes them
EXERCISE_VALUES = {0.5: ("1.0", "2"), 1.0: ("2.0", "2"), 1.1: ("2.2", "2"), 1.5: ("2.4", "0")}

ESTIMATORS = ("k1", "k2", "k3")
KL_FUNCTIONS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}
SCHULMAN_MUS = (0.1, 1.0)  # reference N(mu, 1), policy N(0, 1): true KL 0.005 and 0.5
SCHULMAN_SAMPLES = 10_000_000  # as in the post
SCHULMAN_TABLE = {  # (mu, estimator) -> (bias / true KL, std / true KL): the table of J. Schulman, "Approximating KL
    # Divergence" (2020, joschu.net/blog/kl-approx.html), q = N(0, 1), 10M samples
    (0.1, "k1"): (0.0, 20.0),
    (0.1, "k2"): (0.002, 1.42),
    (0.1, "k3"): (0.0, 1.42),
    (1.0, "k1"): (0.0, 2.0),
    (1.0, "k2"): (0.25, 1.73),
    (1.0, "k3"): (0.0, 1.7),
}
# lecture 2.3, as written: "at true KL 1.36, std of k3 8.1 > k1 1.0"
LECTURE_KL = {"true_kl": "1.36", "k1": "1.0", "k3": "8.1"}


GB = 1e9  # 1 GB = 1e9 bytes (the lecture's 252 GB is 7e9 x 36 bytes)
BYTES_TRAINED = 16  # bf16 weights + bf16 grads + fp32 master weights + Adam m and v (2 + 2 + 4 + 4 + 4)
BYTES_FROZEN = 2  # bf16 weights only
SEVEN_B = 7e9
SETUPS = {  # set-up -> {model: trained?} (names translated where shown: MODEL_NAMES, SETUP_NAMES)
    "PPO": {"policy": True, "value model": True, "reference": False, "reward model": False},
    "no value model": {"policy": True, "reference": False, "reward model": False},
    "rule-based verifier": {"policy": True, "reference": False},
    "verifier, no KL (beta = 0)": {"policy": True},
}
LECTURE_GB = {"PPO": 252.0, "no value model": 140.0, "rule-based verifier": 126.0}
MODEL_NAMES = {  # a model of SETUPS -> its name for the learner
    "policy": N_("policy"),
    "value model": N_("value model"),
    "reference": N_("reference"),
    "reward model": N_("reward model"),
}
SETUP_NAMES = {  # a set-up of SETUPS -> its name for the learner
    "PPO": "PPO",
    "no value model": N_("no value model"),
    "rule-based verifier": N_("rule-based verifier"),
    "verifier, no KL (beta = 0)": N_("verifier, no KL (beta = 0)"),
}


ONE_POINT_FIVE_B = 1.5e9  # CS336 assignment 5's model, Qwen2.5-Math-1.5B
QWEN_MATH_1_5B_KV = {"layers": 28, "kv_heads": 2, "head_dim": 128}  # its config: 12 query heads share 2 KV heads
ASSIGNMENT5_SAMPLING = {"answers": 256, "tokens": 1024}  # the handout's rollout_batch_size, sampling_max_tokens


def kv_cache_gb(
    answers: int, tokens: int, layers: int, kv_heads: int, head_dim: int, bytes_per_value: int = 2
) -> float:
    """GB a sampler's KV cache holds: a key and a value (2) per layer, KV head and head dimension, for every token of
    every answer being written (bf16: 2 bytes)."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value * answers * tokens / GB


def assignment5_memory(n_params: float = ONE_POINT_FIVE_B) -> dict[str, float]:
    """GB of what CS336 assignment 5's GRPO run keeps on its two GPUs (no reference model: its loss has no KL term):
    the trained policy on one; on the other (the handout's `init_vllm` puts vLLM "on a GPU separate from the
    policy"), vLLM's bf16 copy of it and its KV cache for the answers of one rollout batch (their prompts add more).
    No activations."""
    models = memory_gb(n_params, {"policy": True, "sampler copy": False})  # trained; vLLM's frozen bf16 copy
    return {**models, "kv cache": kv_cache_gb(**ASSIGNMENT5_SAMPLING, **QWEN_MATH_1_5B_KV)}


def setup_name(setup: str, width: int = 0) -> str:
    """A set-up of SETUPS (a key) as the learner reads it, filled with spaces to `width` columns."""
    return pad(_(SETUP_NAMES.get(setup, setup)), width)


# ============================================================================================== clipped objective
def clip_objective_and_grad(ratios, advantage: float, clip_eps: float = CLIP_EPS) -> tuple[np.ndarray, np.ndarray]:
    """PPO's clipped objective J(rho) = min(rho A, clip(rho, 1-eps, 1+eps) A) and dJ/drho by autograd.

    Uses `rlvr.objectives.ppo_clip_loss` (objective = -loss) with logps = log rho and old_logps = 0.
    Args:
        ratios: [N] positive ratios rho = pi_theta / pi_old.
    Returns:
        objective [N] and gradient [N] (numpy, float64).
    """
    r = torch.as_tensor(np.asarray(ratios, dtype=np.float64)).clone().requires_grad_(True)  # [N]
    logps = torch.log(r)[None, :]  # [1, N]
    adv = torch.tensor([float(advantage)], dtype=torch.float64)  # [1]
    loss, _ = ppo_clip_loss(logps, torch.zeros_like(logps), adv, clip_eps)  # [1, N]
    objective = -loss[0]  # [N]
    (grad,) = torch.autograd.grad(objective.sum(), r)
    return objective.detach().numpy() + 0.0, grad.numpy() + 0.0  # + 0.0 turns a -0.0 into 0.0


def zero_gradient_spans(ratios: np.ndarray, grad: np.ndarray) -> list[tuple[float, float]]:
    """Intervals of rho where the gradient is exactly 0 (each grid point widened by half a grid step)."""
    half = 0.5 * float(ratios[1] - ratios[0])
    zero = np.concatenate([[False], grad == 0, [False]]).astype(int)  # [N + 2]
    starts = np.flatnonzero(np.diff(zero) == 1)  # first zero point of each run
    ends = np.flatnonzero(np.diff(zero) == -1) - 1  # last zero point of each run
    return [(float(ratios[a] - half), float(ratios[b] + half)) for a, b in zip(starts, ends)]


def first_zero_gradient_ratio(advantage: float, clip_eps: float = CLIP_EPS, step: float = 1e-4) -> float:
    """Where the gradient switches off: the smallest zero-gradient rho for A > 0, the largest for A < 0."""
    ratios = np.arange(step / 2, 2.0, step)  # [N]
    _, grad = clip_objective_and_grad(ratios, advantage, clip_eps)
    zero = ratios[grad == 0]
    return float(zero.min() if advantage > 0 else zero.max())


# ---------------------------------------------------------------------------------------------- one update vs many
@one_thread()
def one_update_gradient_gap(model, n_prompts: int = 8, group_size: int = 4, seed: int = 0) -> dict:
    """Gradients of PPO's clipped loss at ratio 1 and of the plain policy-gradient loss, on one sampled batch.

    Returns:
        dict with the largest absolute difference over all parameters and the largest gradient entry.
    """
    rng, generator = np.random.default_rng(seed), torch.Generator().manual_seed(seed)
    prompts = sample_prompts(n_prompts, rng)  # [P, 10]
    rollout = sample(model, prompt_tokens(prompts), 1.0, generator=generator, group_size=group_size)
    prompts = np.repeat(prompts, group_size, axis=0)  # [B, 10]
    rewards = score_batch(torch.as_tensor(prompts), rollout.responses)["reward"]  # [B]
    advantages = compute_advantages(rewards, group_size, "grpo")  # [B]
    mask = rollout.response_mask

    def grads(loss_fn):
        model.zero_grad(set_to_none=True)
        logps = response_logps(model, rollout.prompt_ids, rollout.responses)  # [B, T]
        aggregate_loss(loss_fn(logps), mask, "token_mean").backward()
        return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    ppo = grads(lambda logps: ppo_clip_loss(logps, logps.detach(), advantages, CLIP_EPS)[0])
    plain = grads(lambda logps: policy_gradient_loss(logps, advantages))
    model.zero_grad(set_to_none=True)
    return {"max_abs_diff": float((ppo - plain).abs().max()), "max_abs_grad": float(plain.abs().max())}


@dataclass
class ReuseResult:
    """Ratios pi_theta / pi_old over the tokens of one batch, before each of several updates on it."""

    lr: float
    clip_eps: float
    quantiles: np.ndarray  # [U, 5] min, 1%, median, 99%, max of the ratio before update u
    clip_fraction: np.ndarray  # [U] share of tokens whose clipped term is the smaller one (gradient 0)


@one_thread()
def reuse_batch(
    model,
    updates: int = 8,
    lr: float = 1e-4,
    clip_eps: float = CLIP_EPS,
    n_prompts: int = 16,
    group_size: int = 8,
    seed: int = 0,
) -> ReuseResult:
    """Sample one batch, then take `updates` Adam steps on PPO's clipped loss with it (GRPO advantages).

    The model is copied, never changed. Records the ratio before every update: before the first one it is 1.
    """
    import copy

    policy = copy.deepcopy(model).train()
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    rng, generator = np.random.default_rng(seed), torch.Generator().manual_seed(seed)
    prompts = sample_prompts(n_prompts, rng)  # [P, 10]
    rollout = sample(policy.eval(), prompt_tokens(prompts), 1.0, generator=generator, group_size=group_size)
    prompts = np.repeat(prompts, group_size, axis=0)  # [B, 10]
    advantages = compute_advantages(score_batch(torch.as_tensor(prompts), rollout.responses)["reward"], group_size)
    mask, old_logps = rollout.response_mask, None
    quantiles, clip_fraction = [], []
    policy.train()
    for _update in range(updates):
        logps = response_logps(policy, rollout.prompt_ids, rollout.responses)  # [B, T]
        old_logps = logps.detach() if old_logps is None else old_logps
        per_token, clipped = ppo_clip_loss(logps, old_logps, advantages, clip_eps)  # [B, T]
        ratio = torch.exp(logps.detach() - old_logps)[mask]  # [N tokens]
        quantiles.append(torch.quantile(ratio.double(), torch.tensor([0, 0.01, 0.5, 0.99, 1], dtype=torch.float64)))
        clip_fraction.append(float(masked_mean(clipped.float(), mask)))
        opt.zero_grad(set_to_none=True)
        aggregate_loss(per_token, mask, "seq_mean_token_mean").backward()
        opt.step()
    return ReuseResult(lr, clip_eps, torch.stack(quantiles).numpy(), np.array(clip_fraction))


# ============================================================================================== PPO for LMs
def reference_model(result):
    """The frozen warm-up model a run started from (its KL reference)."""
    from rlvr.train import warm_start

    return warm_start(result.config).model


# ---------------------------------------------------------------------------------------------- PPO with a KL penalty
KL_RUN_BETA = 0.1  # the KL weight of the beta > 0 run (Demo 2's default; the runs of notebooks 03-05 use 0)


def kl_run_steps(fast: bool | None = None) -> int:
    """Steps of the beta > 0 PPO run: half the lecture's 200 RL steps (`rl_steps`)."""
    return size("rl_steps", fast) // 2


def kl_run_config(seed: int = 0, beta: float = KL_RUN_BETA, steps: int | None = None, fast: bool | None = None):
    """The RLConfig of notebook 02's PPO run: PPO (8 updates per batch, KL_t clamped at >= 0) from the warm-up of
    `seed` with -beta KL_t in every token's reward. steps=None: `kl_run_steps(fast)`."""
    from rlvr.train import RLConfig

    steps = kl_run_steps(fast) if steps is None else steps
    return RLConfig.replicate(seed, algo="ppo", beta=beta, steps=steps)


@one_thread()
def kl_run(seed: int = 0, fast: bool | None = None):
    """Notebook 02's PPO run with a KL penalty (`kl_run_config`): from the cache, or trained now."""
    from rlvr.train import run

    return run(kl_run_config(seed, fast=fast))


def trained_policy(seed: int = 0, fast: bool | None = None):
    """(policy, reference): notebook 02's PPO run and the frozen warm-up model it started from (its KL reference)."""
    result = kl_run(seed, fast)
    return result.policy, reference_model(result)


@dataclass
class KLCurves:
    """A PPO run's per-step score, KL part of the reward and their sum (the total reward), raw and smoothed."""

    beta: float
    step: np.ndarray  # [T]
    score: np.ndarray  # [T] mean verifier score of the step's answers
    kl: np.ndarray  # [T] mean over answers of sum_t (log pi - log pi_ref): the policy's KL to the warm-up
    kl_reward: np.ndarray  # [T] -beta * kl: the KL part of an answer's reward (before the clamp)
    score_smooth: np.ndarray  # [T]
    kl_reward_smooth: np.ndarray  # [T]
    total: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [T] score + kl_reward: an answer's reward
    total_smooth: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [T]


def kl_curves(result, window: int = 9) -> KLCurves:
    """The curves of a beta > 0 run from its history (`reward` and `kl_to_ref`), smoothed over `window` steps
    (trailing: each curve starts where the run starts)."""
    from rlvr.experiments.common import smooth
    from rlvr.runs import history_curve

    beta = result.config.beta
    score, kl = history_curve(result.history, "reward"), history_curve(result.history, "kl_to_ref")  # [T] each
    kl_reward = -beta * kl
    total = score + kl_reward
    return KLCurves(
        beta,
        np.arange(len(score)),
        score,
        kl,
        kl_reward,
        smooth(score, window),
        smooth(kl_reward, window),
        total,
        smooth(total, window),
    )


def kl_run_summary(curves: KLCurves, window: int = 10) -> dict:
    """Means of the score, the KL reward, their sum and the KL over the first and the last `window` steps (fewer for
    a short run)."""
    n = max(1, min(window, len(curves.score) // 2))
    first, last = slice(0, n), slice(len(curves.score) - n, None)
    ends = {
        key: (float(values[first].mean()), float(values[last].mean()))
        for key, values in (
            ("score", curves.score),
            ("kl_reward", curves.kl_reward),
            ("total", curves.total),
            ("kl", curves.kl),
        )
    }
    return {"window": n, **ends}


@dataclass
class AnswerExample:
    """One sampled answer with what reward shaping and GAE need."""

    label: str
    prompt: str  # e.g. "9458073021="
    tokens: list[str]  # the answer's characters, up to and including "$"
    logps: torch.Tensor  # [T] log-prob of each token under the policy that sampled it
    ref_logps: torch.Tensor  # [T] ... under the frozen reference (the warm-up model)
    score: float  # the verifier's reward (1 right, 0 wrong)
    value_score: torch.Tensor  # [T] E[score | tokens before t], Monte Carlo under the policy
    value_kl: dict = field(default_factory=dict)  # clamp_kl -> [T] E[sum_{k >= t} KL_k | tokens before t]

    @property
    def kl(self) -> torch.Tensor:
        """Per-token KL_t = log pi - log pi_ref (k1, as in AlpacaFarm). [T]"""
        return kl_k1(self.logps, self.ref_logps)


@one_thread()
def candidate_answers(policy, ref, n: int, seed: int = 0) -> dict:
    """Sample n answers from the policy and score them; log-probs under policy and reference."""
    rng, generator = np.random.default_rng(seed), torch.Generator().manual_seed(seed)
    prompts = sample_prompts(n, rng)  # [n, 10]
    rollout = sample(policy, prompt_tokens(prompts), 1.0, generator=generator)
    with torch.no_grad():
        ref_logps = response_logps(ref, rollout.prompt_ids, rollout.responses)  # [n, T]
    scores = score_batch(torch.as_tensor(prompts), rollout.responses)
    return {"prompts": prompts, "rollout": rollout, "ref_logps": ref_logps * rollout.response_mask, **scores}


EXAMPLE_LABELS = (  # the answers' keys (AnswerExample.label); the panel's dropdown shows them translated
    N_("correct think-first answer"),
    N_("wrong think-first answer, KL summed < 0"),
    N_("direct answer"),
)


def example_label(label: str, width: int = 0) -> str:
    """An answer's label (AnswerExample.label, a key of EXAMPLE_LABELS) as the learner reads it, filled with spaces
    to `width` columns."""
    return pad(_(label), width)


def pick_examples(candidates: dict) -> dict[str, int]:
    """Indices of up to three instructive answers (EXAMPLE_LABELS).

    The first correct think-first answer; the wrong think-first answer whose summed KL_t is the most negative (its
    unclamped KL reward is positive: the policy made its tokens less likely than the reference did); the first
    direct answer, if the policy wrote one.
    """
    mask = candidates["rollout"].response_mask
    total_kl = (kl_k1(candidates["rollout"].logps, candidates["ref_logps"]) * mask).sum(dim=1)  # [n]
    chosen: dict[str, int] = {}
    good = torch.nonzero(candidates["cot_correct"] & candidates["correct"]).flatten()
    if len(good):
        chosen[EXAMPLE_LABELS[0]] = int(good[0])
    below = torch.nonzero(candidates["is_think"] & ~candidates["correct"] & (total_kl < 0)).flatten()
    if len(below):
        chosen[EXAMPLE_LABELS[1]] = int(below[torch.argmin(total_kl[below])])
    direct = torch.nonzero(candidates["is_direct"]).flatten()
    if len(direct):
        chosen[EXAMPLE_LABELS[2]] = int(direct[0])
    return chosen


@one_thread()
@torch.no_grad()
def monte_carlo_values(
    policy,
    ref,
    prompt_ids: torch.Tensor,
    responses: torch.Tensor,
    mask: torch.Tensor,
    prompts: np.ndarray,
    n: int,
    seed: int = 0,
) -> tuple[torch.Tensor, dict]:
    """Value of every prefix of every answer, estimated from n continuations sampled from the policy.

    V_t = E[ sum_{k >= t} r_k | tokens before t ] = E[score] - beta * E[sum_{k >= t} KL_k]; we return both parts.
    Args:
        prompt_ids [B, P], responses [B, T], mask [B, T]; prompts [B, 10] digits (for the verifier).
    Returns:
        value_score [B, T] and {clamp_kl: value_kl [B, T]} for clamp_kl in (True, False) (0 after the answer).
    """
    generator = torch.Generator().manual_seed(seed)
    B, T = responses.shape
    value_score = torch.zeros(B, T)
    value_kl = {True: torch.zeros(B, T), False: torch.zeros(B, T)}
    lengths = mask.sum(dim=1)  # [B]
    for t in range(T):
        rows = torch.nonzero(lengths > t).flatten()  # answers that still have a token at t
        if not len(rows):
            break
        prefix = torch.cat([prompt_ids[rows], responses[rows, :t]], dim=1).repeat_interleave(n, dim=0)  # [b*n, P+t]
        cont = sample(policy, prefix, 1.0, MAX_NEW_TOKENS - t, generator)  # continuations [b*n, T']
        ref_lp = response_logps(ref, prefix, cont.responses)  # [b*n, T']
        kl = kl_k1(cont.logps, ref_lp) * cont.response_mask  # [b*n, T']
        full = torch.cat([responses[rows, :t].repeat_interleave(n, dim=0), cont.responses], dim=1)  # [b*n, t+T']
        digits = torch.as_tensor(prompts)[rows].repeat_interleave(n, dim=0)  # [b*n, 10]
        score = score_batch(digits, full)["reward"].view(len(rows), n)  # [b, n]
        value_score[rows, t] = score.mean(dim=1)
        value_kl[True][rows, t] = kl.clamp(min=0).sum(dim=1).view(len(rows), n).mean(dim=1)
        value_kl[False][rows, t] = kl.sum(dim=1).view(len(rows), n).mean(dim=1)
    return value_score, value_kl


def shaping_examples(policy, ref, n_candidates: int = 256, n_values: int = 64, seed: int = 0) -> list[AnswerExample]:
    """The instructive answers of `pick_examples`, each with Monte-Carlo values of its prefixes."""
    cand = candidate_answers(policy, ref, n_candidates, seed)
    chosen = pick_examples(cand)
    idx = torch.tensor(list(chosen.values()), dtype=torch.long)
    rollout = cand["rollout"]
    value_score, value_kl = monte_carlo_values(
        policy,
        ref,
        rollout.prompt_ids[idx],
        rollout.responses[idx],
        rollout.response_mask[idx],
        cand["prompts"][idx.numpy()],
        n_values,
        seed,
    )
    examples = []
    for j, (label, i) in enumerate(chosen.items()):
        T = int(rollout.response_mask[i].sum())
        examples.append(
            AnswerExample(
                label=label,
                prompt=prompt_text(cand["prompts"][i]),
                tokens=list(decode(rollout.responses[i, :T])),
                logps=rollout.logps[i, :T].clone(),
                ref_logps=cand["ref_logps"][i, :T].clone(),
                score=float(cand["reward"][i]),
                value_score=value_score[j, :T].clone(),
                value_kl={clamp: value_kl[clamp][j, :T].clone() for clamp in (True, False)},
            )
        )
    return examples


def shaped_view(
    example: AnswerExample, beta: float, lam: float = 1.0, clamp_kl: bool = True, critic: str = "Monte-Carlo value"
) -> dict:
    """Per-token KL, shaped rewards, values, GAE advantages and returns of one answer (gamma = 1).

    critic: "Monte-Carlo value" (what a perfect value model predicts) or "untrained (V = 0)".
    Returns:
        dict of [T] tensors: kl, rewards, values, advantages, returns.
    """
    T = len(example.tokens)
    mask = torch.ones(1, T, dtype=torch.bool)  # [1, T]
    rewards = shaped_rewards(torch.tensor([example.score]), example.kl[None], mask, beta, clamp_kl)  # [1, T]
    if critic.startswith("Monte"):
        values = example.value_score - beta * example.value_kl[clamp_kl]  # [T]
    else:
        values = torch.zeros(T)
    advantages, returns = gae(rewards, values[None], mask, gamma=1.0, lam=lam)  # [1, T]
    return {
        "kl": example.kl,
        "rewards": rewards[0],
        "values": values,
        "advantages": advantages[0],
        "returns": returns[0],
        "reward_to_go": rewards[0].flip(0).cumsum(0).flip(0),
    }


CRITICS = (N_("Monte-Carlo value"), N_("untrained (V = 0)"))  # the critic's keys; translated where shown


# ============================================================================================== KL estimators
def gaussian_estimates(mu: float, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """k1, k2, k3 on samples x of the policy q = N(0, 1) against the reference p = N(mu, 1). [N] -> {name: [N]}."""
    logps = -0.5 * x**2  # log q(x) (the shared -log sqrt(2 pi) cancels in every estimator)
    ref_logps = -0.5 * (x - mu) ** 2  # log p(x)
    return {name: fn(logps, ref_logps) for name, fn in KL_FUNCTIONS.items()}


def gaussian_closed_form(mu: float) -> dict:
    """Exact KL(q || p) = mu^2 / 2 and each estimator's mean and std for q = N(0, 1), p = N(mu, 1)."""
    m2 = mu * mu
    return {
        "true_kl": m2 / 2,
        "mean": {"k1": m2 / 2, "k2": m2 / 2 + m2 * m2 / 8, "k3": m2 / 2},
        "std": {"k1": abs(mu), "k2": m2 * math.sqrt(2 + m2) / 2, "k3": math.sqrt(math.expm1(m2) - m2)},
    }


def estimator_stats(values: torch.Tensor, true_kl: float) -> dict:
    """Bias and std of one estimator's samples, divided by the true KL, with their standard errors.

    The std's standard error is the delta-method one, sqrt((m4 - s^4) / (4 n s^2)), so heavy tails widen it.
    """
    v = values.double()
    n = v.numel()
    mean = float(v.mean())
    centred = v - mean
    var = float((centred**2).mean())
    m4 = float((centred**4).mean())
    std = math.sqrt(var)
    std_se = math.sqrt(max(m4 - var * var, 0.0) / (4 * n * var)) if var > 0 else 0.0
    return {
        "mean": mean,
        "std": std,
        "bias": mean - true_kl,
        "bias_se": std / math.sqrt(n),
        "rel_bias": (mean - true_kl) / true_kl,
        "rel_bias_se": std / math.sqrt(n) / true_kl,
        "rel_std": std / true_kl,
        "rel_std_se": std_se / true_kl,
        "std_se": std_se,
        "n": n,
    }


@one_thread()
def schulman_table(n: int = SCHULMAN_SAMPLES, seed: int = 0, mus=SCHULMAN_MUS) -> dict:
    """Schulman's table by Monte Carlo: {(mu, estimator): estimator_stats} from n samples of N(0, 1) per mu."""
    generator = torch.Generator().manual_seed(seed)
    table = {}
    for mu in mus:
        x = torch.randn(n, generator=generator, dtype=torch.float64)  # [n] samples of the policy
        true_kl = mu * mu / 2
        for name, values in gaussian_estimates(mu, x).items():
            table[(mu, name)] = estimator_stats(values, true_kl)
        del x
    return table


KL_PANEL_SAMPLES = 50_000
LOG_R_GRID = np.linspace(-5, 5, 301)


@dataclass
class GaussianKL:
    """What notebook 02's KL-estimator panel shows for one mu: exact moments, sampled statistics, the curves."""

    mu: float
    exact: dict  # gaussian_closed_form(mu)
    stats: dict  # estimator -> estimator_stats of the samples
    log_r: np.ndarray  # [N] log pi_ref - log pi of each sample
    curves: dict  # estimator -> [len(LOG_R_GRID)] its value against log r


@one_thread()
def gaussian_kl_view(mu: float, x: torch.Tensor) -> GaussianKL:
    """The three estimators on samples x [N] of the policy N(0, 1) against the reference N(mu, 1)."""
    exact = gaussian_closed_form(mu)
    estimates = gaussian_estimates(mu, x)
    g = torch.as_tensor(LOG_R_GRID)
    curves = {"k1": (-g).numpy(), "k2": (g**2 / 2).numpy(), "k3": (torch.exp(g) - 1 - g).numpy()}
    stats = {name: estimator_stats(estimates[name], exact["true_kl"]) for name in ESTIMATORS}
    return GaussianKL(mu, exact, stats, (mu * x - mu * mu / 2).numpy(), curves)


def gaussian_crossover_kl(tol: float = 1e-12) -> float:
    """The true KL above which k3's std exceeds k1's for Gaussians: solve exp(m) - 1 - m = m for m = mu^2 > 0."""
    lo, hi = 0.5, 3.0  # f(m) = expm1(m) - 2m is < 0 at 0.5 and > 0 at 3
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.expm1(mid) - 2 * mid < 0 else (lo, mid)
    return (lo + hi) / 4  # KL = mu^2 / 2


def mu_for_kl(true_kl: float) -> float:
    """The mean shift with KL(N(0,1) || N(mu,1)) = true_kl."""
    return math.sqrt(2 * true_kl)


@one_thread()
@torch.no_grad()
def policy_kl_samples(policy, ref, n: int = 2000, seed: int = 0, batch: int = 1000) -> dict:
    """Per-answer KL estimates of KL(policy || reference) from n answers sampled from the policy.

    Each estimator is summed over the answer's tokens (as in a KL penalty). "exact" sums the exact per-token KL
    over the vocabulary given the sampled prefix: unbiased for the true KL with much less noise.
    Returns:
        dict of [n] numpy arrays: k1, k2, k3, k1_clamped, exact.
    """
    rng, generator = np.random.default_rng(seed), torch.Generator().manual_seed(seed)
    parts: dict[str, list] = {name: [] for name in (*ESTIMATORS, "k1_clamped", "exact")}
    for start in range(0, n, batch):
        prompts = sample_prompts(min(batch, n - start), rng)  # [b, 10]
        rollout = sample(policy, prompt_tokens(prompts), 1.0, generator=generator)
        mask = rollout.response_mask  # [b, T]
        logps, logits = response_logps(policy, rollout.prompt_ids, rollout.responses, return_logits=True)  # [b, T]
        ref_logps, ref_logits = response_logps(ref, rollout.prompt_ids, rollout.responses, return_logits=True)
        for name, fn in KL_FUNCTIONS.items():
            parts[name].append((fn(logps, ref_logps) * mask).sum(dim=1))
        parts["k1_clamped"].append((kl_k1(logps, ref_logps).clamp(min=0) * mask).sum(dim=1))
        q, p = torch.log_softmax(logits, dim=-1), torch.log_softmax(ref_logits, dim=-1)  # [b, T, V]
        parts["exact"].append(((q.exp() * (q - p)).sum(dim=-1) * mask).sum(dim=1))
    return {name: torch.cat(chunks).numpy() for name, chunks in parts.items()}


def policy_kl_summary(samples: dict) -> dict:
    """True KL (mean of the exact per-answer KL, with its s.e.) and bias / std of each estimator."""
    exact = torch.as_tensor(samples["exact"], dtype=torch.float64)
    true_kl = float(exact.mean())
    out = {"true_kl": true_kl, "true_kl_se": float(exact.std() / math.sqrt(exact.numel())), "n": exact.numel()}
    for name in (*ESTIMATORS, "k1_clamped"):
        out[name] = estimator_stats(torch.as_tensor(samples[name]), true_kl)
    out["negative_fraction"] = float((samples["k1"] < 0).mean())
    return out


def tail_effect(samples: dict, name: str = "k3", top: int = 3) -> dict:
    """How much the `top` largest per-answer values of one estimator weigh: those values, and its std with and
    without them."""
    values = np.sort(np.asarray(samples[name], dtype=float))  # [n] ascending
    return {
        "largest": values[::-1][:top],
        "n": len(values),
        "std": float(values.std()),
        "std_without": float(values[:-top].std()) if len(values) > top else float("nan"),
    }


# ============================================================================================== memory
def memory_gb(
    n_params: float, models: dict, bytes_trained: float = BYTES_TRAINED, bytes_frozen: float = BYTES_FROZEN
) -> dict[str, float]:
    """GB (1e9 bytes) of each model: n_params x (bytes_trained if trained else bytes_frozen). No activations."""
    return {name: n_params * (bytes_trained if trained else bytes_frozen) / GB for name, trained in models.items()}


def memory_totals(
    n_params: float = SEVEN_B, bytes_trained: float = BYTES_TRAINED, bytes_frozen: float = BYTES_FROZEN
) -> dict[str, float]:
    """Total GB of every set-up in SETUPS."""
    return {
        setup: sum(memory_gb(n_params, models, bytes_trained, bytes_frozen).values())
        for setup, models in SETUPS.items()
    }
