"""One colour per meaning in every figure of the module (a colour never means two things, and no figure tells two
things apart by red against green alone).

- An algorithm or advantage estimator has its colour wherever it appears (ALGO_COLORS, keyed like
  rlvr.algorithms.ALGORITHMS and objectives.ADVANTAGE_KINDS).
- References have their own: an exact value, the default run other runs are compared with, the warm-up model, the
  teacher, a learned reward model; a broken run drawn over the healthy one has its own too.
- Right and wrong answers are told apart by line style (RIGHT solid, WRONG dashed), never by colour, so a figure can
  colour by algorithm and style by correctness at once.
- Runs that differ by one knob (a panel's G = 2, 4, 32 ...) take KNOB_COLORS in order, colours no other meaning uses.
"""

from rlvr.algorithms import ALGORITHMS

ALGO_COLORS = {
    "none": "#7f7f7f",  # no baseline / REINFORCE
    "reinforce": "#7f7f7f",  # REINFORCE: the policy gradient with no baseline
    "mean": "#17becf",  # the group mean, the answer itself included
    "rloo": "#2ca02c",  # leave-one-out
    "grpo": "#1f77b4",
    "dr_grpo": "#ff7f0e",
    "rft": "#9467bd",
    "ppo": "#d62728",
}
REFERENCE_COLORS = {
    "exact": "#000000",  # an exact value, and the default run other runs are drawn against
    "warmup": "#8c564b",  # the warm-up (SFT) model, where RL starts
    "teacher": "#bcbd22",  # the noisy teacher the warm-up imitated (a dashed line)
    "learned_reward": "#e377c2",  # a learned reward model (lecture §1's over-optimisation)
    "broken": "#c51b7d",  # a broken run, drawn over the healthy one (notebook 06)
}
COLORS = {**ALGO_COLORS, **REFERENCE_COLORS}
KNOB_COLORS = ("#6a3d9a", "#b15928", "#01665e", "#4d4d4d")  # one-knob variations, in order
RIGHT = {"ls": "-"}  # right answers (line style)
WRONG = {"ls": "--"}  # wrong answers (line style)
LABEL_TO_KEY = {row.label: name for name, row in ALGORITHMS.items()}


def algo_color(label: str, default: str | None = None) -> str | None:
    """The module's colour of an algorithm named by key ("grpo") or label ("Dr. GRPO"), else `default`."""
    key = LABEL_TO_KEY.get(label, label)
    return ALGO_COLORS.get(key, default)


def knob_color(index: int) -> str:
    """The colour of the index-th one-knob variation of a run (cycling)."""
    return KNOB_COLORS[index % len(KNOB_COLORS)]
