"""One colour per algorithm (and per estimator) in every figure of the module."""

from rlvr.algorithms import ALGORITHMS

ALGO_COLORS = {
    "none": "#7f7f7f",  # no baseline / REINFORCE
    "mean": "#17becf",  # the group mean, the answer itself included
    "rloo": "#2ca02c",  # leave-one-out
    "grpo": "#1f77b4",
    "dr_grpo": "#ff7f0e",
    "rft": "#9467bd",
    "ppo": "#d62728",
    "exact": "#000000",  # an exact or reference value
    "warmup": "#525252",  # the warm-up (SFT) model, where RL starts
}
ALGO_COLORS["reinforce"] = ALGO_COLORS["none"]  # REINFORCE: the policy gradient with no baseline
LABEL_TO_KEY = {row.label: name for name, row in ALGORITHMS.items()}


def algo_color(label: str, default: str | None = None) -> str | None:
    """The module's colour of an algorithm named by key ("grpo") or label ("Dr. GRPO"), else `default`."""
    key = LABEL_TO_KEY.get(label, label)
    return ALGO_COLORS.get(key, default)
