"""The one band rule every lecture row follows (rlvr.experiments.common): |ours - lecture| <= r + 3u."""

import math

import pytest

from rlvr.experiments.common import Row, claim_row, half_unit, lecture_row, lecture_value, uncertainty


@pytest.mark.parametrize(
    "shown, r",
    [
        ("94%", 0.005),
        ("1.36", 0.005),
        ("1.0", 0.05),
        ("252", 0.5),
        ("8.1", 0.05),
        ("~55%", 0.025),
        ("0.875", 0.0005),
        ("-0.38", 0.005),
        ("exact", 0.0),
        ("0", 0.0),
    ],
)
def test_r_is_half_a_unit_of_the_last_digit_the_lecture_shows(shown, r):
    assert half_unit(shown) == pytest.approx(r)


def test_lecture_values_are_read_in_the_rows_units():
    assert lecture_value("94%") == pytest.approx(0.94) and lecture_value("~55%") == pytest.approx(0.55)
    assert lecture_value("3.5x") == 3.5 and lecture_value("-0.125") == -0.125


def test_u_uses_the_larger_of_the_seed_spread_and_the_standard_error():
    assert uncertainty([0.5], se=0.01) == pytest.approx(0.01 * math.sqrt(2))  # one seed: SE stands in for the spread
    assert uncertainty([0.5, 0.5, 0.5], se=0.01) == pytest.approx(0.01 * math.sqrt(4 / 3))  # seeds agree by luck
    assert uncertainty([0.4, 0.5, 0.6], se=0.01) == pytest.approx(0.1 * math.sqrt(4 / 3))
    assert uncertainty([0.4, 0.5, 0.6], se=0.01, lecture_is_a_run=False) == pytest.approx(0.1 / math.sqrt(3))


def test_a_row_agrees_exactly_inside_r_plus_3u():
    u = 0.01 * math.sqrt(2)
    inside = lecture_row(
        section="5", figure="x", lecture="94%", values=[0.94 + 0.005 + 3 * u - 1e-6], se=0.01, unit="%"
    )
    outside = lecture_row(
        section="5", figure="x", lecture="94%", values=[0.94 + 0.005 + 3 * u + 1e-6], se=0.01, unit="%"
    )
    assert inside.agrees is True and outside.agrees is False
    assert inside.lecture == pytest.approx(0.94) and "r 0.5%" in inside.note


def test_bands_are_clipped_to_what_a_share_allows():
    row = lecture_row(section="5", figure="x", lecture="98%", values=[0.97], se=0.02, unit="%")
    assert row.band[1] == 1.0 and row.band[0] < 0.98


def test_a_quantity_with_bounds_keeps_its_band_inside_them():
    row = lecture_row(section="2.3", figure="a std", lecture="8.1", values=[14.0, 2.0, 26.0], bounds=(0.0, math.inf))
    assert row.band[0] == 0.0 and row.band[1] > 26


def test_exact_values_get_r_only():
    row = lecture_row(section="Ex", figure="x", lecture="2.65", values=[2.6458], lecture_is_a_run=False)
    assert row.band == pytest.approx((2.645, 2.655)) and row.agrees


def test_claims_keep_their_fixed_interval_and_rows_are_keyword_only():
    row = claim_row(
        section="3", figure="speed-up", lecture="much faster", values=[2.0, 3.0], band=(1.5, math.inf), unit="x"
    )
    assert row.measured == 2.5 and row.agrees and row.spread == pytest.approx(math.sqrt(0.5))
    with pytest.raises(TypeError):
        Row("3", "positional", 1.0, 1.0)  # the Row dataclass is keyword-only


def test_table_values_carry_their_unit_in_the_right_number():
    from rlvr.experiments.common import fmt

    assert fmt(1, "tokens") == "1 token"
    assert fmt(0, "tokens") == "0 tokens" and fmt(29.6, "tokens") == "29.6 tokens"
    assert fmt(14.97, "tokens") == "15.0 tokens" and fmt(9.18, "tokens") == "9.2 tokens"  # mean lengths, one decimal
    assert fmt(0.5, "%") == "50.0%" and fmt(1.5, "x") == "1.5x" and fmt(None) == "—"


def test_a_value_just_outside_its_band_never_prints_as_its_edge():
    from rlvr.experiments.common import Row, band_text, measured_text

    outside = Row(section="5.1", figure="accuracy", lecture="19%", measured=0.23504, band=(0.145, 0.235), unit="%")
    assert not outside.agrees
    assert measured_text(outside) == "23.504%" and band_text(outside) == "[14.500%, 23.500%]"
    on_edge = Row(section="5.1", figure="accuracy", lecture="19%", measured=0.235, band=(0.145, 0.235), unit="%")
    assert on_edge.agrees and measured_text(on_edge) == "23.5%" and band_text(on_edge) == "[14.5%, 23.5%]"
    plain = Row(section="2.3", figure="KL", lecture="1.36", measured=1.4501, band=(1.27, 1.45), spread=0.02)
    assert measured_text(plain) == "1.4501 ± 0.02" and band_text(plain) == "[1.27, 1.45]"


def test_markdown_output_reads_as_text_where_no_markdown_renderer_is():
    """Notebook tables (06's gallery, 04's race, 02's and 04's lecture tables) render in Jupyter and read as their
    source in a plain-text view, not as '<... Markdown object>'."""
    from rlvr.experiments.common import Markdown

    table = Markdown("**Runs**\n\n| run | reward |\n|---|---|\n| healthy | 0.9 |")
    assert table._repr_markdown_().startswith("**Runs**")
    assert repr(table) == "Runs\n\n| run | reward |\n|---|---|\n| healthy | 0.9 |"
