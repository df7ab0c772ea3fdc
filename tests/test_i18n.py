"""The package in Chinese (rlvr.i18n, coursetools.messages): how the language is chosen, the compiled catalogue shipped
with the package, checker verdicts, panel lines, figures and the CLI in Chinese, and a CJK font with no missing
glyph."""

import argparse
import fnmatch
import io
import tomllib
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from coursetools import messages
from rlvr import i18n

ROOT = Path(__file__).resolve().parents[1]
MO = Path(i18n.LOCALE_DIR) / "zh_CN" / "LC_MESSAGES" / "rlvr.mo"


@pytest.fixture
def chinese():
    """The package speaks Chinese inside the test, English again afterwards."""
    i18n.set_language("zh_CN")
    yield
    i18n.set_language("en")
    i18n.set_language(None)


# ----------------------------------------------------------------------------- choosing the language


def test_set_language_wins_over_the_environment_which_wins_over_the_locale(monkeypatch):
    monkeypatch.delenv("RLVR_LANG", raising=False)
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert i18n.set_language(None) == "zh_CN"  # the locale
    monkeypatch.setenv("RLVR_LANG", "en")
    assert i18n.language() == "en"  # the variable over the locale
    assert i18n.set_language("zh-CN") == "zh_CN"  # set_language over both
    assert i18n.set_language(None) == "en"
    i18n.set_language("en")


def test_an_unknown_language_is_refused():
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        i18n.set_language("fr")


# ----------------------------------------------------------------------------- printed tables


def test_pad_lines_up_chinese_and_english_labels_where_an_f_string_width_does_not():
    from wcwidth import wcswidth

    chinese, english = "长度偏差", "length bias"  # 4 characters in 8 columns, 11 in 11
    for align, spec in (("<", "<"), (">", ">"), ("^", "^")):
        padded = [i18n.pad(label, 14, align) for label in (chinese, english)]
        assert [wcswidth(text) for text in padded] == [14, 14], (align, padded)
        assert [text.strip() for text in padded] == [chinese, english]
        plain = [f"{label:{spec}14}" for label in (chinese, english)]
        assert wcswidth(plain[0]) != wcswidth(plain[1])  # what the f-string width gets wrong
    assert i18n.pad("奖励", 6, ">") == "  奖励" and i18n.pad("奖励", 3) == "奖励"  # never cut
    assert i18n.text_width("a\tb") == 2  # a control character takes no column (wcswidth says -1)


def test_join_puts_the_language_s_list_separator_between_items():
    try:
        assert i18n.join([5, 7, 9]) == "5, 7, 9" and i18n.join_clauses(["a", "b"]) == "a; b"
        i18n.set_language("zh_CN")
        assert i18n.join([5, 7, 9]) == "5、7、9" and i18n.join_clauses(["a", "b"]) == "a；b"
        assert i18n.join(["PPO-8"]) == "PPO-8" and i18n.join([]) == ""
    finally:
        i18n.set_language("en")
        i18n.set_language(None)
    assert i18n.join(x for x in ("a", "b")) == "a, b"  # English again, from any iterable


# ----------------------------------------------------------------------------- the catalogue


def test_the_package_catalogue_is_complete_and_its_mo_is_the_compiled_po():
    assert messages.problems("zh_CN") == []


def test_the_mo_file_is_package_data():
    """pyproject's package-data ships the compiled catalogue (the wheel holds every file its patterns match)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["rlvr"]
    relative = MO.relative_to(Path(i18n.__file__).parent).as_posix()
    assert MO.exists() and any(fnmatch.fnmatch(relative, pattern) for pattern in patterns)


def test_the_course_s_languages_are_listed_once_in_rlvr_i18n():
    """The site's editions, the catalogues checked and the translated notebooks all follow rlvr.i18n.LANGUAGES; no other
    module of rlvr or coursetools defines a LANGUAGES of its own."""
    import ast

    from coursetools import site

    assert tuple(site.EDITIONS) == i18n.LANGUAGES and i18n.LANGUAGES[0] == i18n.SOURCE_LANGUAGE == "en"
    assert all(set(site.ENGLISH_WORDS) <= set(site.EDITIONS[code].words) for code in i18n.LANGUAGES)
    for code in i18n.TRANSLATED:
        assert (Path(i18n.LOCALE_DIR) / code / "LC_MESSAGES" / "rlvr.po").exists() and (ROOT / "i18n" / code).is_dir()
    defined = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "shared").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "LANGUAGES" for t in node.targets)
    ]
    assert defined == ["shared/rlvr/i18n.py"]


def test_every_argparse_word_is_argparse_s_own():
    source = Path(argparse.__file__).read_text()
    from rlvr.argparse_words import PLURALS, WORDS

    missing = [w for w in WORDS if repr(w)[1:-1] not in source and w != "optional arguments"]
    assert missing == [] and all(repr(s)[1:-1] in source for pair in PLURALS for s in pair)


def test_the_message_sources_are_found_not_listed(tmp_path):
    found = messages.sources()
    assert {"rlvr/checks/nb06.py", "rlvr/figures/gallery.py", "rlvr/cli.py", "coursetools/nbfile.py"} <= set(found)
    assert "coursetools/site.py" not in found and "rlvr/model.py" not in found  # `_` as a throwaway name; no words
    for package in messages.PACKAGES:
        (tmp_path / package / "sub").mkdir(parents=True)
    planted = {
        "rlvr/sub/marked.py": "from rlvr.i18n import N_\nWORDS = (N_('a title'),)\n",
        "rlvr/relative.py": "from .i18n import _\n\ndef f():\n    return _('a verdict')\n",
        "rlvr/unpacked.py": "first, _ = 'a b'.split()\n",
        "coursetools/other_gettext.py": "import gettext\n_ = gettext.gettext\nprint(_('not ours'))\n",
    }
    for relative, text in planted.items():
        (tmp_path / relative).write_text(text)
    assert messages.sources(tmp_path) == ["rlvr/relative.py", "rlvr/sub/marked.py"]


def test_a_translation_that_drops_a_field_is_a_problem():
    assert messages.field_problem("passed {n} of {total} cases.", "通过了 {n} 个用例。") is not None
    assert messages.field_problem("unrecognized arguments: %s", "无法识别的参数") is not None
    assert messages.field_problem("passed {n} of {total} cases.", "{total} 个用例通过了 {n} 个。") is None


# ----------------------------------------------------------------------------- what a learner reads


def test_checker_verdicts_hints_and_pointers_in_chinese(chinese):
    from rlvr.checks import nb06

    wrong = nb06.mystery.check(lambda: {"A": "flipped_sign", "B": "greedy_sampling", "C": "lr_too_high"})
    text = str(wrong)
    assert text.startswith("[不正确]") and "神秘运行" in text and "再看一眼" in text
    assert "[未作答]" in str(nb06.mystery.check(lambda: {"A": "", "B": "", "C": ""}))
    assert "提示" in str(nb06.mystery.hint()) and "仪表盘" in str(nb06.mystery.hint())
    assert "无法检查" in str(nb06.mystery.check())


def test_a_learner_error_is_explained_in_chinese(chinese):
    from rlvr.checks import Case, Exercise

    exercise = Exercise("double", [Case("x = 3", args=(3,), expected=6)])
    assert "除以零" in exercise.check(lambda x: 1 / 0).message
    assert "期望 6，得到 7" in exercise.check(lambda x: 7).message


def test_signal_names_and_warnings_in_chinese(chinese):
    from rlvr.signals import SIGNAL_NAMES, Failure, warning_line

    assert SIGNAL_NAMES["grad_norm"] == "梯度范数" and SIGNAL_NAMES.english("grad_norm") == "gradient norm"
    line = warning_line(Failure("nan", 3, "the loss is NaN: look for a division by a zero std or a log of 0"))
    assert line.startswith("警告：第 3 步：") and "NaN" in line


def test_run_progress_lines_in_chinese(chinese):
    from rlvr.widgets import RunProgress

    progress = RunProgress(["健康运行"])
    progress.callback("健康运行")(2, 15)
    assert progress.text().startswith("健康运行：第 2/15 步")


def test_the_cli_and_argparse_speak_chinese(chinese, capsys):
    from rlvr import cli

    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("用法：") and "显示此帮助信息并退出" in out and "学习率" in out
    with pytest.raises(SystemExit):
        cli.main(["train", "--steps", "0"])
    assert "错误" in capsys.readouterr().err
    assert argparse._("usage: ") == "usage: "  # argparse is itself again after the call


def test_the_cli_help_is_english_by_default():
    from rlvr import cli

    buffer = io.StringIO()
    with redirect_stdout(buffer), pytest.raises(SystemExit):
        cli.main(["sft", "--help"])
    assert buffer.getvalue().startswith("usage: ") and "show this help message and exit" in buffer.getvalue()


# ----------------------------------------------------------------------------- figures


def missing_glyphs(draw) -> list[str]:
    """The 'Glyph ... missing from font(s)' warnings of drawing and rendering a figure."""
    from rlvr.widgets import figure_png, new_figure

    fig = new_figure((4, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draw(fig)
        figure_png(fig)
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def chinese_labels(fig) -> None:
    """A small plot whose title, axis labels and legend are Chinese (with Latin and digits mixed in)."""
    ax = fig.subplots()
    ax.plot([0, 1, 2], [0.1, 0.5, 0.9], label="健康运行")
    ax.set(title="奖励和严格正确率", xlabel="强化学习步（RL step）", ylabel="梯度范数 2.5")
    ax.legend()


def test_a_figure_with_chinese_labels_has_no_missing_glyph(chinese):
    assert i18n.cjk_font_file() is not None, "no CJK font: pip install -e '.[zh]'"
    assert missing_glyphs(chinese_labels) == []


def test_without_the_cjk_font_the_same_figure_misses_glyphs(chinese):
    """The check above can fail: with the CJK font taken out, matplotlib warns about every Chinese glyph."""
    import rlvr.widgets  # noqa: F401  its import gives figures the language's font: first, so it cannot undo the next line

    i18n.use_figure_font(False)
    try:
        assert missing_glyphs(chinese_labels)
    finally:
        i18n.use_figure_font(True)


def test_the_gallery_figures_in_chinese_have_no_missing_glyph(chinese):
    from rlvr.experiments.gallery import BREAKAGES
    from rlvr.figures import gallery as figs

    history = [{"step": s, "reward": 0.1 * s, "accuracy": 0.1 * s, "grad_norm": 1.0, "loss": 0.0} for s in range(5)]
    assert missing_glyphs(lambda fig: figs.draw_dashboard(fig, {"健康运行": history})) == []
    assert i18n._("healthy run") == "健康运行" and i18n._(BREAKAGES["healthy"].title) != BREAKAGES["healthy"].title
