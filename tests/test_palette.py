"""rlvr.figures.palette: one colour per meaning. No two meanings (an algorithm, a reference, an answer format, the
policy, a one-knob variation) share a colour or have colours a reader could mistake for each other (CIEDE2000), the
knob colours stand out from the default run's black, and the figure modules take their colours from the palette."""

import itertools
import math
from collections import defaultdict

import pytest
from matplotlib.colors import to_hex, to_rgb

from rlvr.figures import palette


def lab(color: str) -> tuple[float, float, float]:
    """CIELAB (D65) of a matplotlib colour (sRGB)."""
    linear = [u / 12.92 if u <= 0.04045 else ((u + 0.055) / 1.055) ** 2.4 for u in to_rgb(color)]
    r, g, b = linear
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    f = lambda t: t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def ciede2000(lab1, lab2) -> float:
    """CIEDE2000 colour difference of two CIELAB colours (Sharma, Wu and Dalal 2005): about 1 is just noticeable."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1 = math.degrees(math.atan2(b1, a1)) % 360 if c1 else 0.0
    h2 = math.degrees(math.atan2(b2, a2)) % 360 if c2 else 0.0
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    d_big_h = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(h_mean - 30))
        + 0.24 * math.cos(math.radians(2 * h_mean))
        + 0.32 * math.cos(math.radians(3 * h_mean + 6))
        - 0.20 * math.cos(math.radians(4 * h_mean - 63))
    )
    rotation = -2 * math.sqrt(c_mean**7 / (c_mean**7 + 25**7))
    rotation *= math.sin(math.radians(60 * math.exp(-(((h_mean - 275) / 25) ** 2))))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    dl, dc, dh_ = (l2 - l1) / s_l, (c2 - c1) / s_c, d_big_h / s_h
    return math.sqrt(dl**2 + dc**2 + dh_**2 + rotation * dc * dh_)


def distance(color1: str, color2: str) -> float:
    """CIEDE2000 between two matplotlib colours."""
    return ciede2000(lab(color1), lab(color2))


def meanings() -> dict[str, str]:
    """Every meaning a figure colours by -> its colour (an alias of palette.ALIASES once; each knob colour apart)."""
    found = {f"algorithm {name}": c for name, c in palette.ALGO_COLORS.items() if name not in palette.ALIASES}
    found.update({f"reference {name}": color for name, color in palette.REFERENCE_COLORS.items()})
    found.update({f"answers {name}": color for name, color in palette.ANSWER_COLORS.items()})
    found["the policy (models of PPO)"] = palette.POLICY_COLOR
    found.update({f"knob variation {i}": color for i, color in enumerate(palette.KNOB_COLORS)})
    return found


@pytest.mark.parametrize(
    "lab1, lab2, expected",  # pairs of Sharma, Wu and Dalal's published test data
    [
        ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
        ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
        ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
        ((90.8027, -2.0831, 1.441), (91.1528, -1.6435, 0.0447), 1.4441),
        ((50.0, 2.5, 0.0), (50.0, 0.0, -2.5), 4.3065),
    ],
)
def test_the_colour_difference_is_ciede2000(lab1, lab2, expected):
    assert ciede2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)
    assert lab("#ffffff") == pytest.approx((100.0, 0.0, 0.0), abs=0.05)  # white: L* 100, no colour


def test_no_colour_means_two_things():
    by_colour = defaultdict(list)
    for meaning, color in meanings().items():
        by_colour[to_hex(color)].append(meaning)
    assert [names for names in by_colour.values() if len(names) > 1] == []
    for alias, name in palette.ALIASES.items():  # two names of one meaning: one colour
        assert palette.ALGO_COLORS[alias] == palette.ALGO_COLORS[name]


def test_every_two_meanings_are_told_apart():
    close = [
        (first, second, round(distance(a, b), 1))
        for (first, a), (second, b) in itertools.combinations(meanings().items(), 2)
        if distance(a, b) < palette.MIN_DISTANCE
    ]
    assert close == [], f"colours closer than {palette.MIN_DISTANCE} (CIEDE2000)"


def test_knob_colours_stand_out_from_the_default_run():
    default = palette.COLORS["exact"]  # the default run a knob's variations are drawn against
    assert [c for c in palette.KNOB_COLORS if distance(c, default) < palette.KNOB_FROM_DEFAULT] == []
    assert [palette.knob_color(i) for i in range(len(palette.KNOB_COLORS) + 1)] == [
        *palette.KNOB_COLORS,
        palette.KNOB_COLORS[0],
    ]


def test_figures_take_their_colours_from_the_palette():
    from rlvr.figures import gallery, ppo_parts, thinking

    assert (thinking.THINK_COLOR, thinking.DIRECT_COLOR, thinking.CHAIN_COLOR) == tuple(
        palette.ANSWER_COLORS[name] for name in ("think", "direct", "chain")
    )
    assert ppo_parts.MODEL_COLORS["policy"] == palette.POLICY_COLOR
    assert gallery.RUN_COLOR == palette.COLORS["broken"]
