"""One colour per meaning in every figure of the module (a colour never means two things, and no figure tells two
things apart by red against green alone).

- An algorithm or advantage estimator has its colour wherever it appears (ALGO_COLORS, keyed like
  rlvr.algorithms.ALGORITHMS and objectives.ADVANTAGE_KINDS).
- References have their own: an exact value, the default run other runs are compared with, the warm-up model, the
  teacher, a learned reward model; a broken run drawn over the healthy one has its own too.
- Right and wrong answers are told apart by line style (RIGHT solid, WRONG dashed), never by colour, so a figure can
  colour by algorithm and style by correctness at once.
- Notebook 03's answer formats have theirs (ANSWER_COLORS): think-first teal (its fully right chains a near-black
  brown, dashed over it: the two curves nearly coincide), direct coral.
- Runs that differ by one knob (a panel's G = 2, 4, 32 ...) take KNOB_COLORS in order (sky blue, sage,
  periwinkle, ochre): colours no other meaning uses, all of them far from the black of the default run they are drawn
  against; the first two, a panel's usual pair, differ in lightness too (told apart without red-green vision).

Every two meanings' colours are at least MIN_DISTANCE apart in CIEDE2000, and a knob colour KNOB_FROM_DEFAULT from
black (tests/test_palette.py; tab10's red and brown, the closest pair of the algorithm and reference colours, are 16
apart).
"""

from rlvr.algorithms import ALGORITHMS, DR_GRPO

ALGO_COLORS = {
    "none": "#7f7f7f",  # no baseline / REINFORCE
    "reinforce": "#7f7f7f",  # REINFORCE: the policy gradient with no baseline
    "mean": "#e6ab02",  # the group mean, the answer itself included: gold
    "rloo": "#2ca02c",  # leave-one-out
    "grpo": "#1f77b4",
    DR_GRPO.name: "#ff7f0e",
    "rft": "#9467bd",
    "ppo": "#d62728",
    "gspo": "#3344ff",  # GSPO: a violet blue, GRPO's family
    "cispo": "#664400",  # CISPO: dark brown
}
REFERENCE_COLORS = {
    "exact": "#000000",  # an exact value, and the default run other runs are drawn against
    "warmup": "#8c564b",  # the warm-up (SFT) model, where RL starts
    "teacher": "#bcbd22",  # the noisy teacher the warm-up imitated (a dashed line)
    "learned_reward": "#e377c2",  # a learned reward model (lecture §1's over-optimisation)
    "broken": "#c51b7d",  # a broken run, drawn over the healthy one (notebook 06)
}
ANSWER_COLORS = {  # notebook 03's two answer formats, whatever run they come from
    "think": "#00796b",  # think-first answers: teal
    "chain": "#3e2723",  # think-first chains with every step right (dashed over think-first accuracy): near-black brown
    "direct": "#f58a84",  # direct answers: coral
}
POLICY_COLOR = "#37474f"  # the policy itself where a figure shows the models of PPO (notebook 02's memory): slate
COLORS = {**ALGO_COLORS, **REFERENCE_COLORS}
KNOB_COLORS = ("#00bfff", "#7cb196", "#91a4e3", "#9c7611")  # one-knob variations, in order
ALIASES = {"none": "reinforce"}  # two names of one meaning (one colour): no baseline is REINFORCE
MIN_DISTANCE = 15.0  # CIEDE2000 between the colours of two meanings (two knob colours included)
KNOB_FROM_DEFAULT = 30.0  # CIEDE2000 between a knob colour and the default run's black
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
