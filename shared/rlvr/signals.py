"""What to log when an RLVR run breaks: the signals every RL step records, and the failure signatures that read them.

Every RL run's history has, per step (TRL's name in brackets where it logs the same quantity; docs/trl_mapping.md):
reward [reward] and reward_std [reward_std]; all_same_group_fraction [frac_reward_zero_std]; advantage_std; entropy
[entropy]; clip_fraction [clip_ratio/region_mean] and approx_kl per update (CleanRL's name) when a batch is used more
than once; kl_to_ref (per answer; TRL's kl is per token); grad_norm [grad_norm]; loss [loss]; mean_length_correct and
mean_length_wrong; malformed_fraction and truncated_fraction [completions/clipped_ratio]; for PPO value_loss and
explained_variance (CleanRL's names).

`failures(history)` names the failure signatures a history shows: NaN, no signal (all-equal groups above 90% for 20
steps), entropy collapse, and a reward that pulls away from the strict accuracy (a verifier with a loophole).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .i18n import N_, _, join_clauses
from .task import STOP_ID


class TranslatedNames(dict):
    """A dict of English names that answers in the current language (`names[key]`, `.get`, `.values`, `.items`);
    `english(key)` gives the name as written."""

    def __getitem__(self, key):
        """The name of `key` in the current language."""
        return _(super().__getitem__(key))

    def get(self, key, default=None):
        """The translated name, or `default`."""
        return self[key] if key in self else default

    def values(self):
        """The translated names."""
        return [self[key] for key in self]

    def items(self):
        """(key, translated name) pairs."""
        return [(key, self[key]) for key in self]

    def english(self, key) -> str:
        """The untranslated name."""
        return super().__getitem__(key)


SIGNAL_NAMES = TranslatedNames(  # a history key -> what figures and tables call it
    {
        "reward": N_("reward"),
        "accuracy": N_("strict accuracy"),
        "cot_fraction": N_("think-first share"),
        "all_same_group_fraction": N_("all-equal groups"),
        "advantage_std": N_("advantage std"),
        "entropy": N_("token entropy (nats)"),
        "grad_norm": N_("gradient norm"),
        "loss": N_("loss"),
        "kl_to_ref": N_("KL to the warm-up"),
        "approx_kl": N_("approx KL to sampler"),
        "clip_fraction": N_("clip fraction"),
        "malformed_fraction": N_("malformed answers"),
        "truncated_fraction": N_("answers cut at max length"),
    }
)
KL_EVERY = 10  # without a KL term, the KL to the reference is measured every KL_EVERY steps (an extra forward pass)


# ----------------------------------------------------------------------------------------------- per-step signals
def reward_std(rewards: torch.Tensor) -> float:
    """Std of the batch's rewards (unbiased, as TRL's reward_std). [B] -> float."""
    return float(rewards.float().std()) if rewards.numel() > 1 else 0.0


def advantage_std(advantages: torch.Tensor, response_mask: torch.Tensor) -> float:
    """Std of the advantages the update uses: over answers ([B]), or over real tokens ([B, T], PPO)."""
    values = advantages[response_mask] if advantages.dim() == 2 else advantages  # [n]
    return float(values.float().std(correction=0)) if values.numel() else math.nan


def token_entropy(logprobs: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of each next-token distribution. [..., V] log-probs -> [...]."""
    return torch.special.entr(logprobs.exp()).sum(dim=-1)


def mean_entropy(entropy: torch.Tensor, response_mask: torch.Tensor) -> float:
    """Mean token entropy over the answers' real tokens. [B, T] x 2 -> float."""
    return float((entropy * response_mask).sum() / response_mask.sum().clamp(min=1))


def approx_kl(logps: torch.Tensor, old_logps: torch.Tensor, response_mask: torch.Tensor) -> float:
    """How far an update has moved from the sampling policy: mean of (ratio - 1) - log ratio over real tokens, the
    k3 estimate of KL(sampling || current) (CleanRL's approx_kl). 0 at a batch's first update. [B, T] x 3 -> float."""
    log_ratio = (logps - old_logps).detach()  # [B, T]
    k3 = torch.expm1(log_ratio) - log_ratio  # [B, T], >= 0
    return float((k3 * response_mask).sum() / response_mask.sum().clamp(min=1))


def grad_norm(parameters) -> float:
    """L2 norm of all the gradients, before the optimizer's step (0 when none has a gradient)."""
    norms = [p.grad.detach().norm() for p in parameters if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0


def truncated_fraction(responses: torch.Tensor) -> float:
    """Share of answers that never said '$' (cut at max_new_tokens). [B, T] -> float."""
    return float((~(responses == STOP_ID).any(dim=1)).float().mean())


def explained_variance(values: torch.Tensor, returns: torch.Tensor, response_mask: torch.Tensor) -> float:
    """1 - Var(returns - values) / Var(returns) over real tokens: 1 = the value model predicts every return, 0 = no
    better than a constant, < 0 = worse. [B, T] x 3 -> float (NaN if the returns do not vary)."""
    returns, values = returns[response_mask], values[response_mask]  # [n]
    spread = returns.var(correction=0)
    return float(1 - (returns - values).var(correction=0) / spread) if spread > 0 else math.nan


# ----------------------------------------------------------------------------------------------- failure signatures
@dataclass(frozen=True)
class Failure:
    """A failure signature seen in a history: its name, the first step it shows at, and one line for the user."""

    name: str
    step: int
    message: str

    @property
    def title(self) -> str:
        """The signature's name as the learner reads it ('no_signal' in English, 没有信号 in Chinese)."""
        return signature_name(self.name)


NO_SIGNAL_SHARE, NO_SIGNAL_STEPS = 0.9, 20  # all-equal groups above 90% for 20 steps in a row
ENTROPY_FLOOR = 0.02  # nats per token: the policy has become (almost) deterministic
COLLAPSE_ACCURACY = 0.9  # ... while its accuracy is below this: a sharp policy that is mostly right is a success
HACK_WINDOW = 20  # steps over which reward and accuracy trends are compared
HACK_GAP = 0.15  # the reward's lead over the strict accuracy grows by this much


def _curve(history: list[dict], key: str) -> np.ndarray:
    """One metric of a history against step (NaN where missing)."""
    return np.array([h.get(key, math.nan) for h in history], dtype=float)


def nan_step(history: list[dict]) -> int | None:
    """First step whose loss, reward or gradient norm is NaN or infinite."""
    for h in history:
        if any(isinstance(h.get(k), float) and not math.isfinite(h[k]) for k in ("loss", "reward", "grad_norm")):
            return int(h["step"])
    return None


def no_signal_step(history: list[dict]) -> int | None:
    """Step at which all-equal groups have been above NO_SIGNAL_SHARE for NO_SIGNAL_STEPS steps in a row."""
    run = 0
    for h, share in zip(history, _curve(history, "all_same_group_fraction")):
        run = run + 1 if share > NO_SIGNAL_SHARE else 0
        if run == NO_SIGNAL_STEPS:
            return int(h["step"])
    return None


def entropy_collapse_step(history: list[dict]) -> int | None:
    """First step whose token entropy is below ENTROPY_FLOOR while the accuracy is below COLLAPSE_ACCURACY (a sharp
    policy that is mostly right is a success, not a collapse)."""
    for h, entropy, accuracy in zip(history, _curve(history, "entropy"), _curve(history, "accuracy")):
        if entropy < ENTROPY_FLOOR and accuracy < COLLAPSE_ACCURACY:
            return int(h["step"])
    return None


def hacking_step(history: list[dict]) -> int | None:
    """First step at which, over the last HACK_WINDOW steps, the reward is above its first steps' and its lead over
    the strict accuracy has grown by HACK_GAP since then: the verifier pays for something the strict check rejects.
    (A run whose reward is the strict verifier's has no lead at all; Kimi's length reward only lowers it.)"""
    reward, accuracy = _curve(history, "reward"), _curve(history, "accuracy")
    lead = reward - accuracy  # [steps]
    start_reward, start_lead = reward[:5].mean(), lead[:5].mean()
    for end in range(HACK_WINDOW, len(history) + 1):
        window = slice(end - HACK_WINDOW, end)
        if reward[window].mean() > start_reward and lead[window].mean() - start_lead > HACK_GAP:
            return int(history[end - 1]["step"])
    return None


SIGNATURES = {  # name -> (detector, what the user reads: translated when shown)
    "nan": (nan_step, N_("the loss is NaN: look for a division by a zero std or a log of 0")),
    "no_signal": (
        no_signal_step,
        N_("over 90% of groups have all-equal rewards for 20 steps: the loss is 0, nothing learns"),
    ),
    "entropy_collapse": (
        entropy_collapse_step,
        N_("token entropy collapsed below 0.02 nats while accuracy is below 90%"),
    ),
    "reward_hacking": (
        hacking_step,
        N_("the reward pulls away from the strict accuracy: the verifier has a loophole"),
    ),
}

SIGNATURE_NAMES = {  # a signature's name -> as the learner reads it (English: the name as written)
    "nan": N_("nan"),
    "no_signal": N_("no_signal"),
    "entropy_collapse": N_("entropy_collapse"),
    "reward_hacking": N_("reward_hacking"),
}


def signature_name(name: str) -> str:
    """A failure signature's name in the current language."""
    return _(SIGNATURE_NAMES[name]) if name in SIGNATURE_NAMES else name


def failures_text(history: list[dict]) -> str:
    """'nan detected at step 1; no_signal detected at step 3' for every signature the history shows (at the step the
    detector first sees it, earliest first), or 'no warning'."""
    found = failures(history)
    if not found:
        return _("no warning")
    return join_clauses(_("{name} detected at step {step}").format(name=f.title, step=f.step) for f in found)


def failures(history: list[dict]) -> list[Failure]:
    """Every failure signature the history shows, with the first step it shows at, in the order they showed."""
    found = []
    for name, (detect, message) in SIGNATURES.items():
        step = detect(history)
        if step is not None:
            found.append(Failure(name, step, message))
    return sorted(found, key=lambda failure: failure.step)


PREFLIGHT_STEPS = 5  # the first steps of a run that the preflight reads
PREFLIGHT_LOSS = 1e-3  # |loss| below this: zero up to float rounding
PREFLIGHT_KL = 0.01  # nats per answer: the KL to the warm-up at step 0, where the policy is the warm-up
PREFLIGHT_ALL_EQUAL = 0.5  # all-equal groups below this share: a minority
PREFLIGHT_ADVANTAGE_STD = (0.5, 1.05)  # GRPO's z-scores: 1 in a mixed group, 0 in an all-equal one


@dataclass
class PreflightCheck:
    """One preflight check: what it reads, the reading, what a healthy run gives, and whether the reading is that."""

    name: str
    reading: float
    healthy: str
    ok: bool
    share: bool = False  # the reading is a share of groups (printed as a percentage)

    def reading_text(self) -> str:
        """The reading as printed: a percentage for a share, three digits otherwise, words for a NaN."""
        if not math.isfinite(self.reading):
            return _("not a number")
        return f"{self.reading:.0%}" if self.share else f"{self.reading:.3g}"


def preflight(history: list[dict], steps: int = PREFLIGHT_STEPS, loss_is_zero: bool = True) -> list[PreflightCheck]:
    """Five checks on the first `steps` steps of a GRPO run (what a CS336 student can read before a long run): the
    loss about 0 (only where it must be: `loss_is_zero`, one update per batch and no KL term) while the gradient is
    not, the KL to the warm-up about 0 at step 0, a minority of all-equal groups, an advantage std near 1."""
    first = history[:steps]
    loss = np.abs(_curve(first, "loss"))  # [steps]
    grad = _curve(first, "grad_norm")  # [steps]
    kl0 = float(_curve(first, "kl_to_ref")[0])
    same = float(np.mean(_curve(first, "all_same_group_fraction")))
    adv = float(np.mean(_curve(first, "advantage_std")))
    low, high = PREFLIGHT_ADVANTAGE_STD
    checks = [
        PreflightCheck(N_("largest |loss|"), float(np.max(loss)), N_("about 0"), bool(np.max(loss) < PREFLIGHT_LOSS)),
        PreflightCheck(N_("smallest gradient norm"), float(np.min(grad)), N_("above 0"), bool(np.min(grad) > 0)),
        PreflightCheck(N_("KL to the warm-up at step 0"), kl0, N_("about 0"), bool(abs(kl0) < PREFLIGHT_KL)),
        PreflightCheck(N_("all-equal groups"), same, N_("a minority"), bool(same < PREFLIGHT_ALL_EQUAL), share=True),
        PreflightCheck(N_("advantage std"), adv, N_("near 1"), bool(low <= adv <= high)),
    ]
    return checks if loss_is_zero else checks[1:]


def loss_is_zero(config) -> bool:
    """Whether a run's loss is 0 at every step when healthy: GRPO-style centred advantages, one update per batch
    (the ratio is 1) and no KL term in the loss."""
    return config.epochs == 1 and config.beta == 0


def preflight_text(history: list[dict], config=None, steps: int = PREFLIGHT_STEPS) -> str:
    """'passes' or the failed checks of `preflight` (the loss read only where `config` says it must be 0), one
    clause each, with their readings and what is healthy."""
    checks = preflight(history, steps, loss_is_zero=config is None or loss_is_zero(config))
    failed = [check for check in checks if not check.ok]
    if not failed:
        return _("passes")
    return join_clauses(
        _("{name} {reading} (healthy: {healthy})").format(
            name=_(check.name), reading=check.reading_text(), healthy=_(check.healthy)
        )
        for check in failed
    )


class Watch:
    """An on_step(step, total, history) callback that says one line the first time each failure signature shows
    (`python -m rlvr train` prints them to stderr as they happen, and again at the end)."""

    def __init__(self, say: Callable[[str], None]):
        self.say, self.seen = say, {}

    def __call__(self, step: int, total: int, history: list[dict]) -> None:
        """Check the history so far; announce what is new."""
        for failure in failures(history):
            if failure.name not in self.seen:
                self.seen[failure.name] = failure
                self.say(warning_line(failure))


def warning_line(failure: Failure) -> str:
    """'warning: step 23: ...' for one failure signature (in the current language)."""
    return _("warning: step {step}: {message}").format(step=failure.step, message=_(failure.message))
