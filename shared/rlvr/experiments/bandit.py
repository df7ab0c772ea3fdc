"""One prompt, five possible answers: policy-gradient estimators, baselines and the group std (lecture 2.1, 4.1).

The policy is a softmax over 5 logits, theta. Answer 0 is correct (reward 1), answers 1-4 are wrong (reward 0).
Because there are only 5 answers, the exact gradient of the expected reward is a sum we can write down:

    dJ/dtheta_k = pi_k * (R_k - sum_j pi_j R_j)        (J = sum_j pi_j R_j)

and every estimator built from a group of G sampled answers z_1..z_G can be compared with it:

    g_hat = (1/G) sum_i A_i * grad log pi(z_i),        grad log pi(z) = onehot(z) - pi

where the advantage A_i is the raw reward (no baseline), r_i - mean(r) (mean baseline, the answer itself
included), r_i - mean of the others (RLOO), or the group z-score (GRPO). The advantages come from the
package's reference functions in `rlvr.objectives`.

Contents: the estimator comparison (bias, variance, the (G-1)/G shrink), the "+5 on every reward" training
runs, the expected step along the correct answer's logit with and without dividing by the group std, the share
of groups with no signal, and a best-of-n toy for over-optimising a learned reward. Figures and panels:
`rlvr.figures.bandit`; what the learner reads of them and the lecture's numbers next to ours: `rlvr.narration.bandit`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch

from rlvr.config import SIZES, one_thread
from rlvr.experiments.common import (
    pad,
    text_width,
)
from rlvr.i18n import N_, _
from rlvr.objectives import compute_advantages

# ----------------------------------------------------------------------------------------------- the set-up
NUM_ANSWERS = 5
CORRECT_ANSWER = 0
REWARDS = (1.0, 0.0, 0.0, 0.0, 0.0)  # the verifier: answer 0 is right, the other four are wrong
INIT_LOGITS = (0.0, 1.0, 0.5, 0.0, -0.5)  # pi = [0.14, 0.39, 0.24, 0.14, 0.09]: a wrong answer is the favourite
ESTIMATORS = ("none", "mean", "rloo", "grpo")
LABELS = {  # estimator -> its name in figures and tables (translated where shown: `label`)
    "none": N_("no baseline"),
    "mean": N_("mean baseline (incl. self)"),
    "rloo": N_("leave-one-out (RLOO)"),
    "grpo": N_("group z-score (GRPO)"),
}
SHORT_LABELS = {"none": N_("none"), "mean": N_("mean"), "rloo": "RLOO", "grpo": "GRPO"}
GROUP_SIZE = 8  # answers per group, as in the lecture's comparison
N_GROUPS = 20_000  # repetitions of the group estimate, as in the lecture
GRPO_EPS = 1e-4  # added to the group std (nano-aha-moment, TRL)
MAX_GROUP_SIZE = 64  # the slider's largest G: one pool of samples of this width serves every smaller G

# the "+5 on every reward" runs. The lecture gives the shift, the 150 steps and three outcomes (no-baseline mean
# 0.84, its worst run 0.001, with a baseline ~0.99) but not G or the step size. We chose them by the no-baseline mean
# alone (docs/calibration.md, benchmarks/calibrate_shift.py, seeds 100-102): at G = 8 no step size reaches 0.84 (the
# mean peaks at 0.81 near lr 0.2), at G = 16 lr 0.65 gives 0.84; the worst run and the baseline run are predictions.
SHIFT = 5.0  # constant added to every reward ("5 points for the right format")
SHIFT_STEPS = 150  # training steps, as in the lecture
SHIFT_GROUP_SIZE = 16  # answers per run and step (chosen, see above)
SHIFT_LR = 0.65  # plain SGD on the logits (chosen, see above)
SHIFT_RUNS = SIZES["shift_runs"][0]  # independent runs trained at once (one batched tensor)

# section 4.1
HARD_P = 0.02  # "a very hard prompt": 2% of its answers are right
AMPLIFICATION = 3.5  # the lecture's factor


def as_tensor(values, dtype=torch.float32) -> torch.Tensor:
    """A tuple / list / tensor as a tensor of `dtype`."""
    return torch.as_tensor(values, dtype=dtype)


# ----------------------------------------------------------------------------------------------- exact quantities
def policy(logits) -> torch.Tensor:
    """Softmax policy over the answers. [K] -> [K] (or [R, K] -> [R, K])."""
    return torch.softmax(as_tensor(logits), dim=-1)


def expected_reward(logits, rewards=REWARDS) -> float:
    """J(theta) = sum_z pi(z) R(z), the probability of a correct answer for 0/1 rewards."""
    return float((policy(logits) * as_tensor(rewards)).sum())


def exact_gradient(logits, rewards=REWARDS) -> torch.Tensor:
    """dJ/dtheta_k = pi_k (R_k - J), by enumerating the answers. [K] -> [K]."""
    probs, rewards = policy(logits), as_tensor(rewards)
    return probs * (rewards - (probs * rewards).sum())  # [K]


def no_baseline_variance(
    group_size: int = GROUP_SIZE, shift: float = 0.0, logits=INIT_LOGITS, rewards=REWARDS
) -> float:
    """Exact variance (trace of the covariance) of the no-baseline estimate from one group of G answers.

    One answer contributes X = (R(z) + c)(onehot(z) - pi); the group averages G independent copies, so
    Var = (E||X||^2 - ||grad J||^2) / G, with E||X||^2 = sum_z pi_z (R_z + c)^2 ||onehot(z) - pi||^2.
    """
    probs = policy(logits).double()  # [K]
    r = as_tensor(rewards, torch.float64) + shift  # [K]
    spread = ((torch.eye(len(probs), dtype=torch.float64) - probs) ** 2).sum(dim=1)  # [K] ||onehot(z) - pi||^2
    second_moment = float((probs * r**2 * spread).sum())
    return (second_moment - float(exact_gradient(logits, rewards).double().pow(2).sum())) / group_size


def shift_term_variance(shift: float, group_size: int = GROUP_SIZE, logits=INIT_LOGITS) -> float:
    """Variance of the term a constant c adds to the no-baseline estimate: c^2 (1 - sum_k pi_k^2) / G."""
    probs = policy(logits).double()  # [K]
    return shift**2 * float(1 - (probs**2).sum()) / group_size


def shift_cross_term(shift: float, group_size: int = GROUP_SIZE, logits=INIT_LOGITS, rewards=REWARDS) -> float:
    """The covariance part of the variance a constant c adds: 2c sum_z pi_z R_z ||onehot(z) - pi||^2 / G.

    With c, one answer's X = R(z) Y + c Y, Y = onehot(z) - pi (E[Y] = 0), so the variance grows by
    c^2 Var(Y) / G (`shift_term_variance`) plus 2c Cov(R(z) Y, Y) / G, this term.
    """
    probs = policy(logits).double()  # [K]
    spread = ((torch.eye(len(probs), dtype=torch.float64) - probs) ** 2).sum(dim=1)  # [K] ||onehot(z) - pi||^2
    return 2 * shift * float((probs * as_tensor(rewards, torch.float64) * spread).sum()) / group_size


def label(kind: str, short: bool = False) -> str:
    """An estimator's name in the current language (LABELS, or SHORT_LABELS for a bar's tick); unknown kinds as is."""
    table = SHORT_LABELS if short else LABELS
    return _(table[kind]) if kind in table else kind


def reward_shift_text(shift: float) -> str:
    """'0/1 rewards', '+5 on every reward' or '-3 on every reward' (slider round-off such as 8.9e-16 reads as 0)."""
    shift = round(float(shift), 6)
    return _("0/1 rewards") if shift == 0 else _("{shift} on every reward").format(shift=f"{shift:+g}")


# ----------------------------------------------------------------------------------------------- group estimators
def sample_answers(probs: torch.Tensor, n_groups: int, group_size: int, generator: torch.Generator) -> torch.Tensor:
    """n_groups independent groups of answers from one policy. probs [K] -> answers [N, G] (int64)."""
    return torch.multinomial(probs, n_groups * group_size, replacement=True, generator=generator).view(
        n_groups, group_size
    )


@functools.lru_cache(maxsize=4)
def answer_pool(logits: tuple, n_groups: int, width: int, seed: int) -> torch.Tensor:
    """n_groups rows of `width` answers sampled once; the first G columns of each row are a group of size G."""
    generator = torch.Generator().manual_seed(seed)
    return sample_answers(policy(logits), n_groups, width, generator)  # [N, width]


def group_gradients(
    answers: torch.Tensor, probs: torch.Tensor, rewards, kind: str, shift: float = 0.0, eps: float = GRPO_EPS
) -> torch.Tensor:
    """One gradient estimate per group: (1/G) sum_i A_i (onehot(z_i) - pi).

    Args:
        answers: [N, G] sampled answers; probs: [K] or [N, K] the policy they were sampled from.
        rewards: [K] reward of each answer; shift: constant added to every reward.
        kind: advantage kind of `rlvr.objectives.compute_advantages` (none / mean / rloo / grpo / maxrl; Dr. GRPO's
            is "mean").
    Returns:
        [N, K] gradient estimates with respect to the logits.
    """
    n_groups, group_size = answers.shape
    r = as_tensor(rewards)[answers] + shift  # [N, G]
    advantages = compute_advantages(r.reshape(-1), group_size, kind, eps=eps).view(n_groups, group_size)  # [N, G]
    per_answer = torch.zeros(n_groups, probs.shape[-1]).scatter_add_(1, answers, advantages)  # [N, K]
    return (per_answer - advantages.sum(dim=1, keepdim=True) * probs) / group_size  # [N, K]


@dataclass
class EstimatorStats:
    """Monte-Carlo summary of one estimator against the exact gradient."""

    kind: str
    mean: torch.Tensor  # [K] average estimate (the estimator's expectation, up to Monte-Carlo noise)
    bias: float  # ||mean - exact||
    variance: float  # E ||g_hat - mean||^2 (trace of the covariance)
    noise_floor: float  # sqrt(variance / N): a bias below this cannot be told apart from 0
    relative_noise: float  # sqrt(variance) / ||mean||: noise of one group's estimate relative to its signal
    scale: float  # E[<g_hat, exact>] / ||exact||^2: 1 = right length along the exact gradient
    scale_se: float  # standard error of `scale`
    cosine: float  # cos(mean, exact): 1 = right direction


@dataclass
class EstimatorComparison:
    """Every estimator on the same sampled groups (common random numbers), with the exact gradient."""

    exact: torch.Tensor  # [K]
    stats: dict  # kind -> EstimatorStats
    group_size: int
    shift: float
    n_groups: int
    rewards: tuple = REWARDS

    def rows(self) -> list[list[str]]:
        """The table as strings: header first."""
        head = [
            _("estimator"),
            _("scale E[g]·exact/‖exact‖² (±SE)"),
            _("cos(E[g], exact)"),
            _("bias ‖E[g] − exact‖"),
            _("MC noise √(var/N)"),
            _("variance tr Cov"),
            _("noise/signal √var/‖E[g]‖"),
        ]
        body = [
            [
                label(s.kind),
                f"{s.scale:.3f} ± {s.scale_se:.3f}",
                f"{s.cosine:.3f}",
                f"{s.bias:.4f}",
                f"{s.noise_floor:.4f}",
                f"{s.variance:.4g}",
                f"{s.relative_noise:.2f}",
            ]
            for s in self.stats.values()
        ]
        return [head, *body]

    def title(self) -> str:
        """One line: the set-up and the exact gradient."""
        return _("{n} groups of G = {g}, {rewards}; exact gradient {gradient}").format(
            n=f"{self.n_groups:,}",
            g=self.group_size,
            rewards=reward_shift_text(self.shift),
            gradient=format_vector(self.exact),
        )

    def to_html(self) -> str:
        """HTML table (the panel shows it under the plot)."""
        head, *body = self.rows()
        cells = "".join(f"<th style='text-align:center'>{h}</th>" for h in head)
        lines = [f"<tr>{cells}</tr>"] + [
            "<tr>" + "".join(f"<td style='text-align:center'>{c}</td>" for c in row) + "</tr>" for row in body
        ]
        return f"<div style='font-size:90%'><b>{self.title()}</b><table>{''.join(lines)}</table></div>"

    def _repr_markdown_(self) -> str:
        """Markdown table for Jupyter."""
        head, *body = self.rows()
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return f"**{self.title()}**\n\n" + "\n".join(lines)

    def __repr__(self) -> str:
        """Plain-text table."""
        table = self.rows()
        widths = [max(text_width(row[i]) for row in table) for i in range(len(table[0]))]
        return "\n".join("  ".join(pad(cell, w) for cell, w in zip(row, widths)) for row in table)


def format_vector(v: torch.Tensor) -> str:
    """[0.123, -0.056, ...] with 3 decimals."""
    return "[" + ", ".join(f"{float(x):+.3f}" for x in v) + "]"


def summarize(kind: str, grads: torch.Tensor, exact: torch.Tensor) -> EstimatorStats:
    """Bias, variance, scale and direction of N gradient estimates [N, K] against the exact one [K]."""
    grads, exact = grads.double(), exact.double()
    mean = grads.mean(dim=0)  # [K]
    variance = float(((grads - mean) ** 2).sum(dim=1).mean())
    projections = grads @ exact / exact.dot(exact)  # [N]
    cosine = float(mean.dot(exact) / (mean.norm() * exact.norm()).clamp(min=1e-30))
    return EstimatorStats(
        kind=kind,
        mean=mean.float(),
        bias=float((mean - exact).norm()),
        variance=variance,
        noise_floor=math.sqrt(variance / grads.shape[0]),
        relative_noise=math.sqrt(variance) / max(float(mean.norm()), 1e-30),
        scale=float(projections.mean()),
        scale_se=float(projections.std() / math.sqrt(grads.shape[0])),
        cosine=cosine,
    )


def compare_estimators(
    group_size: int = GROUP_SIZE,
    shift: float = 0.0,
    n_groups: int = N_GROUPS,
    logits=INIT_LOGITS,
    rewards=REWARDS,
    kinds=ESTIMATORS,
    seed: int = 0,
) -> EstimatorComparison:
    """Estimate the gradient from n_groups groups of G answers with each estimator (all in one batched op each)."""
    with one_thread():
        probs = policy(logits)  # [K]
        width = max(group_size, MAX_GROUP_SIZE)
        answers = answer_pool(tuple(float(x) for x in logits), n_groups, width, seed)[:, :group_size]  # [N, G]
        exact = exact_gradient(logits, rewards)  # [K]
        stats = {kind: summarize(kind, group_gradients(answers, probs, rewards, kind, shift), exact) for kind in kinds}
    return EstimatorComparison(exact, stats, group_size, shift, n_groups, tuple(rewards))


def baseline_scale_vs_group_size(
    group_sizes=(2, 3, 4, 8, 16, 32, 64), kinds=("mean", "rloo"), n_groups: int = N_GROUPS, seed: int = 0
) -> dict:
    """E[g_hat] / exact gradient (projected) for each group size. Returns {kind: (scales [S], ses [S])}."""
    out = {kind: ([], []) for kind in kinds}
    for group_size in group_sizes:
        comparison = compare_estimators(group_size, n_groups=n_groups, kinds=kinds, seed=seed)
        for kind in kinds:
            out[kind][0].append(comparison.stats[kind].scale)
            out[kind][1].append(comparison.stats[kind].scale_se)
    return {kind: (np.array(scales), np.array(ses)) for kind, (scales, ses) in out.items()}


# ----------------------------------------------------------------------------------------------- training runs
@dataclass
class BanditRuns:
    """Many independent training runs of the bandit: the probability of the correct answer at every step."""

    kind: str
    shift: float
    lr: float
    group_size: int
    accuracy: torch.Tensor  # [steps + 1, runs]: pi(correct) before each step and after the last one
    final_logits: torch.Tensor  # [runs, K]
    seed: int = 0

    @property
    def final(self) -> torch.Tensor:
        """pi(correct) after the last step. [runs]."""
        return self.accuracy[-1]

    @property
    def mean_curve(self) -> torch.Tensor:
        """pi(correct) averaged over runs. [steps + 1]."""
        return self.accuracy.mean(dim=1)

    @property
    def final_mean(self) -> float:
        """Mean final accuracy over runs."""
        return float(self.final.mean())

    @property
    def final_se(self) -> float:
        """Standard error of the mean final accuracy."""
        return float(self.final.std() / math.sqrt(self.final.numel()))

    @property
    def worst(self) -> float:
        """Final accuracy of the worst run."""
        return float(self.final.min())

    def stuck_fraction(self, below: float = 0.01) -> float:
        """Share of runs whose final accuracy is below `below` (collapsed onto a wrong answer)."""
        return float((self.final < below).float().mean())


def train_bandits(
    kind: str,
    shift: float = SHIFT,
    steps: int = SHIFT_STEPS,
    runs: int = SHIFT_RUNS,
    group_size: int = SHIFT_GROUP_SIZE,
    lr: float = SHIFT_LR,
    logits=INIT_LOGITS,
    rewards=REWARDS,
    seed: int = 0,
) -> BanditRuns:
    """Train `runs` independent bandits at once with plain SGD on the logits, one group of G answers per step.

    Each step: sample G answers per run, A = advantages of (reward + shift), theta += lr * g_hat.
    """
    with one_thread():
        generator = torch.Generator().manual_seed(seed)
        theta = as_tensor(logits).repeat(runs, 1)  # [R, K]
        accuracy = torch.empty(steps + 1, runs)  # [steps + 1, R]
        for step in range(steps):
            probs = torch.softmax(theta, dim=-1)  # [R, K]
            accuracy[step] = probs[:, CORRECT_ANSWER]
            answers = torch.multinomial(probs, group_size, replacement=True, generator=generator)  # [R, G]
            theta = theta + lr * group_gradients(answers, probs, rewards, kind, shift)  # [R, K]
        accuracy[steps] = torch.softmax(theta, dim=-1)[:, CORRECT_ANSWER]
    return BanditRuns(kind, shift, lr, group_size, accuracy, theta, seed)


def shift_experiment(
    shift: float = SHIFT,
    kinds=("none", "rloo"),
    runs: int = SHIFT_RUNS,
    lr: float = SHIFT_LR,
    steps: int = SHIFT_STEPS,
    group_size: int = SHIFT_GROUP_SIZE,
    seed: int = 0,
) -> dict:
    """The lecture's +5 experiment: the same runs without and with a baseline. Returns {kind: BanditRuns}."""
    return {kind: train_bandits(kind, shift, steps, runs, group_size, lr, seed=seed) for kind in kinds}


def run_segments(result: BanditRuns, max_lines: int | None = None) -> np.ndarray:
    """Every run's curve as line segments for a LineCollection. Returns [R, T, 2]."""
    accuracy = result.accuracy.numpy()  # [T, R]
    shown = accuracy if max_lines is None else accuracy[:, :max_lines]
    steps = np.arange(accuracy.shape[0])
    return np.stack([np.broadcast_to(steps, shown.T.shape), shown.T], axis=-1)  # [R, T, 2]


# ----------------------------------------------------------------------------------------------- section 4.1
def reward_patterns(group_size: int) -> torch.Tensor:
    """Row m holds a group with m correct answers (1s first). [G + 1, G]."""
    return (torch.arange(group_size)[None, :] < torch.arange(group_size + 1)[:, None]).float()  # [G+1, G]


def binomial_pmf(p, group_size: int) -> torch.Tensor:
    """P(m of G answers are correct) for every m and every p. p [P] -> [P, G + 1] (float64)."""
    p = torch.as_tensor(p, dtype=torch.float64).reshape(-1, 1)  # [P, 1]
    m = torch.arange(group_size + 1, dtype=torch.float64)  # [G+1]
    comb = torch.tensor([math.comb(group_size, int(k)) for k in m], dtype=torch.float64)  # [G+1]
    return comb * p**m * (1 - p) ** (group_size - m)  # [P, G+1]


def step_along_correct(p, group_size: int, kind: str, eps: float = GRPO_EPS) -> torch.Tensor:
    """Exact E[g_hat] along the correct answer's logit for a prompt with accuracy p (0/1 rewards).

    The component is (1/G) sum_i A_i (r_i - p); it depends only on how many answers of the group are right,
    so the expectation is a sum over m ~ Binomial(G, p). p [P] -> [P] (float64).
    """
    r = reward_patterns(group_size)  # [G+1, G]
    advantages = compute_advantages(r.reshape(-1), group_size, kind, eps=eps).view_as(r).double()  # [G+1, G]
    with_reward = (advantages * r.double()).sum(dim=1)  # [G+1]
    total = advantages.sum(dim=1)  # [G+1]
    p = torch.as_tensor(p, dtype=torch.float64).reshape(-1)  # [P]
    per_m = (with_reward[None, :] - p[:, None] * total[None, :]) / group_size  # [P, G+1]
    return (binomial_pmf(p, group_size) * per_m).sum(dim=1)  # [P]


def ideal_step(p, by_std: bool) -> np.ndarray:
    """The lecture's curves: p(1-p) without the std, sqrt(p(1-p)) when divided by the (true) std."""
    variance = np.asarray(p, dtype=float) * (1 - np.asarray(p, dtype=float))
    return np.sqrt(variance) if by_std else variance


def ideal_amplification(p) -> np.ndarray:
    """Weight of a prompt with accuracy p relative to p = 0.5 after dividing by the true std: 0.5 / sqrt(p(1-p))."""
    return ideal_step(p, True) / ideal_step(p, False) / 2.0


def p_for_amplification(target: float = AMPLIFICATION) -> tuple[float, float]:
    """The two accuracies where the ideal amplification equals `target`: p(1-p) = 1 / (4 target^2)."""
    variance = 1.0 / (4.0 * target**2)
    low = (1 - math.sqrt(1 - 4 * variance)) / 2
    return low, 1 - low


def amplification(p, group_size: int, eps: float = GRPO_EPS) -> np.ndarray:
    """Exact relative weight GRPO / mean baseline at accuracy p, divided by the same ratio at p = 0.5 (std from G)."""
    p = np.asarray(p, dtype=float).reshape(-1)
    grid = torch.as_tensor(np.append(p, 0.5))
    ratio = (step_along_correct(grid, group_size, "grpo", eps) / step_along_correct(grid, group_size, "mean")).numpy()
    return ratio[:-1] / ratio[-1]


def no_signal_share(p, group_size: int) -> np.ndarray:
    """Share of groups whose answers are all right or all wrong: p^G + (1-p)^G."""
    p = np.asarray(p, dtype=float)
    return p**group_size + (1 - p) ** group_size


@dataclass
class CorrectLogitSimulation:
    """Simulated groups with 0/1 rewards at several accuracies p: steps along the correct logit, no-signal share."""

    p: np.ndarray  # [P]
    group_size: int
    n_groups: int
    step: dict  # kind -> [P] mean step along the correct answer's logit
    step_se: dict  # kind -> [P] its standard error
    no_signal: np.ndarray  # [P] share of all-equal groups

    @property
    def no_signal_se(self) -> np.ndarray:
        """Standard error of each no-signal share (a proportion over n_groups groups). [P]"""
        return np.sqrt(self.no_signal * (1 - self.no_signal) / self.n_groups)

    def amplification(self, reference_p: float = 0.5) -> np.ndarray:
        """(GRPO step / mean-baseline step) at each p, relative to the same ratio at reference_p (must be in p)."""
        ratio = self.step["grpo"] / self.step["mean"]
        return ratio / ratio[int(np.argmin(np.abs(self.p - reference_p)))]


def simulate_correct_logit(
    p, group_size: int, n_groups: int = 4000, kinds=("mean", "grpo"), seed: int = 0
) -> CorrectLogitSimulation:
    """Draw n_groups groups of G Bernoulli(p) rewards per p (one batched tensor) and average the steps."""
    p_values = np.asarray(p, dtype=float).reshape(-1)
    with one_thread():
        generator = torch.Generator().manual_seed(seed)
        p_t = torch.as_tensor(p_values, dtype=torch.float32)[:, None, None]  # [P, 1, 1]
        rewards = (torch.rand(len(p_values), n_groups, group_size, generator=generator) < p_t).float()  # [P, N, G]
        steps, ses = {}, {}
        for kind in kinds:
            advantages = compute_advantages(rewards.reshape(-1), group_size, kind).view_as(rewards)  # [P, N, G]
            per_group = (advantages * (rewards - p_t)).mean(dim=-1).double()  # [P, N]
            steps[kind] = per_group.mean(dim=1).numpy()
            ses[kind] = (per_group.std(dim=1) / math.sqrt(n_groups)).numpy()
        no_signal = (rewards == rewards[..., :1]).all(dim=-1).float().mean(dim=1).numpy()  # [P]
    return CorrectLogitSimulation(p_values, group_size, n_groups, steps, ses, no_signal)


def hard_prompt_amplification(
    group_size: int = GROUP_SIZE, n_groups: int = SIZES["hard_groups"][0], p: float = HARD_P, seed: int = 0
) -> float:
    """Simulated relative weight of a prompt with accuracy p against p = 0.5, std estimated in groups of G."""
    simulation = simulate_correct_logit([p, 0.5], group_size, n_groups, seed=seed)
    return float(simulation.amplification()[0])


P_GRID = np.linspace(0.005, 0.995, 199)  # p of the exact curves
P_DOTS = np.array([0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98])  # p of the simulated dots


@dataclass
class StdEffect:
    """Notebook 01's group-std figure for one G: exact curves over P_GRID, simulated points at P_DOTS."""

    group_size: int
    exact: dict[str, np.ndarray]  # "mean" / "grpo" -> [len(P_GRID)] expected step along the correct logit
    no_signal: np.ndarray  # [len(P_GRID)] share of all-equal groups
    sim: CorrectLogitSimulation  # the same three quantities simulated at P_DOTS


def std_effect(group_size: int = GROUP_SIZE, n_answers: int = 40_000, seed: int = 0) -> StdEffect:
    """Exact curves and a simulation of n_answers answers per p (n_answers // G groups: every G costs the same)."""
    sim = simulate_correct_logit(P_DOTS, group_size, max(200, n_answers // group_size), seed=seed)
    exact = {kind: step_along_correct(P_GRID, group_size, kind).numpy() for kind in ("mean", "grpo")}
    return StdEffect(group_size, exact, no_signal_share(P_GRID, group_size), sim)


# ----------------------------------------------------------------------------------------------- section 1 toy
@dataclass
class BestOfN:
    """Best-of-n selection with a learned reward (true quality + heavy-tailed error) and with the true one."""

    ns: np.ndarray  # [S]
    proxy_of_pick: np.ndarray  # [S] learned reward of the answer the learned reward picks
    true_of_pick: np.ndarray  # [S] true quality of that answer
    true_of_best: np.ndarray  # [S] true quality of the answer a verifier (the true reward) picks


def best_of_n(
    ns=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096), n_trials: int = 1000, error_df: int = 2, seed: int = 0
) -> BestOfN:
    """Pick the best of n answers by a learned reward = quality + Student-t error; compare with picking by quality."""
    with one_thread():
        generator = torch.Generator().manual_seed(seed)
        n_max = max(ns)
        quality = torch.randn(n_trials, n_max, generator=generator)  # [T, n]
        normal = torch.randn(n_trials, n_max, generator=generator)  # [T, n]
        chi2 = (torch.randn(error_df, n_trials, n_max, generator=generator) ** 2).sum(dim=0)  # [T, n]
        error = normal / torch.sqrt(chi2 / error_df)  # [T, n] Student-t with error_df degrees of freedom
        proxy = quality + error  # [T, n]
        proxy_pick, true_pick, true_best = [], [], []
        for n in ns:
            index = proxy[:, :n].argmax(dim=1, keepdim=True)  # [T, 1]
            proxy_pick.append(float(proxy[:, :n].gather(1, index).mean()))
            true_pick.append(float(quality[:, :n].gather(1, index).mean()))
            true_best.append(float(quality[:, :n].max(dim=1).values.mean()))
    return BestOfN(np.array(ns), np.array(proxy_pick), np.array(true_pick), np.array(true_best))
