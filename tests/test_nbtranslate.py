"""Translated notebooks (coursetools.translate): segmentation, catalogues merged with msgmerge semantics, the build, and
the check that fails on a fuzzy or untranslated entry and on a translated notebook out of date."""

import ast
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from coursetools import nbfile, notebooks, repo
from coursetools import translate as t
from coursetools.po import catalogue_text, merge, read_catalogue

ROOT = Path(__file__).resolve().parents[1]

MARKDOWN = """# A title

A paragraph that runs
over two lines, with $x^2$ and `code`.

- first item, wrapped
  onto a second line;
- second item.

| a | b |
|---|---|
| one | two |

```python
print("fenced code is left out")
```

<!-- BEGIN SOLUTION -->
$$
\\frac{1}{G}
$$
<!-- END SOLUTION -->"""

CODE = """import rlvr
X = 3  # a constant with a comment
# a comment on two
# lines that go together
label = "a label"
key = "identifier"
print(f"{X} steps in {X:.1f} s")
def f():
    ### BEGIN SOLUTION
    return 1  # noqa: E501
    ### END SOLUTION
"""


def texts(segments):
    """(kind, text) of each segment."""
    return [(s.kind, s.text) for s in segments]


def test_markdown_is_cut_into_headings_paragraphs_list_items_and_tables():
    found = texts(t.markdown_segments(MARKDOWN))
    assert found == [
        ("heading", "A title"),
        ("paragraph", "A paragraph that runs\nover two lines, with $x^2$ and `code`."),
        ("list item", "first item, wrapped\nonto a second line;"),
        ("list item", "second item."),
        ("table", "| a | b |\n|---|---|\n| one | two |"),
    ]  # fenced code, HTML comments and the paragraph of display math alone are left out


def test_code_gives_its_prose_comments_and_strings_only():
    found = texts(t.code_segments(CODE))
    assert found == [
        ("comment", "a constant with a comment"),
        ("comment", "a comment on two\nlines that go together"),
        ("string", "a label"),
        ("string", "{X} steps in {X:.1f} s"),
    ]  # no marker, no pragma, no identifier-like string


def identity(segments_of, source):
    """A Translations object that maps every segment of `source` to itself."""
    found = t.Translations(Path("identity.po"))
    found.strings = {s.text: s.text for s in segments_of(source)}
    return found


def test_an_identity_translation_gives_back_the_source():
    assert t.translate_markdown(MARKDOWN, identity(t.markdown_segments, MARKDOWN), "here") == MARKDOWN
    assert t.translate_code(CODE, identity(t.code_segments, CODE), "here") == CODE


@pytest.mark.parametrize("path", repo.solution_paths(ROOT), ids=lambda p: p.name)
def test_every_solution_notebook_survives_an_identity_translation(path):
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        segments_of = t.markdown_segments if cell.cell_type == "markdown" else t.code_segments
        if cell.cell_type == "markdown":
            assert t.translate_markdown(cell.source, identity(segments_of, cell.source), "x") == cell.source
        elif cell.cell_type == "code":
            assert t.translate_code(cell.source, identity(segments_of, cell.source), "x") == cell.source


def chinese(source):
    """Translations of CODE's segments into Chinese."""
    found = t.Translations(Path("zh.po"))
    found.strings = {
        "a constant with a comment": "一个带注释的常数",
        "a comment on two\nlines that go together": "两行\n连在一起的注释",
        "a label": "一个标签",
        "{X} steps in {X:.1f} s": "{X} 步用时 {X:.1f} 秒",
    }
    return found


def test_a_translated_code_cell_parses_and_keeps_its_fields():
    out = t.translate_code(CODE, chinese(CODE), "here")
    ast.parse(out)
    assert "X = 3  # 一个带注释的常数" in out
    assert "# 两行\n# 连在一起的注释" in out
    assert 'print(f"{X} 步用时 {X:.1f} 秒")' in out
    assert "### BEGIN SOLUTION" in out and "# noqa: E501" in out


def test_a_translation_that_changes_a_field_is_refused():
    wrong = chinese(CODE)
    wrong.strings["{X} steps in {X:.1f} s"] = "{X} 步用时 {Y:.1f} 秒"
    with pytest.raises(t.TranslationError, match="fields differ"):
        t.translate_code(CODE, wrong, "here")


def test_a_translation_that_breaks_the_code_is_refused():
    wrong = chinese(CODE)
    wrong.strings["a label"] = 'a "quoted" label'
    with pytest.raises(t.TranslationError, match="does not parse"):
        t.translate_code(CODE, wrong, "here")


def test_math_code_spans_and_table_shape_must_be_kept():
    paragraph = t.Segment("with $x^2$ and `code`.", "paragraph", 0)
    assert t.translation_problem(paragraph, "有 $x^2$ 和 `code`。") is None
    assert "math or code differs" in t.translation_problem(paragraph, "有 $x^3$ 和 `code`。")
    assert "math or code differs" in t.translation_problem(paragraph, "有 $x^2$ 和 code。")
    table = t.Segment("| a | b |\n|---|---|\n| one | two |", "table", 0)
    assert t.translation_problem(table, "| 甲 | 乙 |\n|---|---|\n| 一 | 二 |") is None
    assert "rows or columns" in t.translation_problem(table, "| 甲 |\n|---|\n| 一 |")


def test_words_inside_math_text_may_be_translated_and_nothing_else_in_the_formula():
    paragraph = t.Segment(r"so $\mathbf{1}\{\text{correct}\}$ and $\pi_{\text{old}}$.", "paragraph", 0)
    assert t.translation_problem(paragraph, r"所以 $\mathbf{1}\{\text{正确}\}$ 和 $\pi_{\text{old}}$。") is None
    assert "math or code differs" in t.translation_problem(paragraph, r"所以 $\mathbf{1}\{\text{正确}\}$ 和 $\pi$。")
    assert "math or code differs" in t.translation_problem(paragraph, r"所以 $\mathbf{1}\{\text{正确} c\}$ 和 ...")


def test_display_math_is_an_entry_only_when_words_sit_in_it():
    prose = "$$a = \\begin{cases} 1 & \\text{otherwise} \\end{cases}$$"
    labels = "$$\\pi_{\\text{old}} = \\pi_{\\text{ref}}\\ (\\text{GRPO})$$"
    assert [s.text for s in t.markdown_segments(prose)] == [prose]
    assert t.markdown_segments(labels) == []


def test_a_missing_entry_names_itself():
    empty = t.Translations(Path("zh.po"))
    with pytest.raises(t.TranslationError, match=r"zh\.po: here: entry not translated: 'A title'"):
        t.translate_markdown(MARKDOWN, empty, "here")


def test_the_language_call_goes_right_after_import_rlvr():
    assert t.with_language_call("import rlvr\nx = 1", "zh_CN") == 'import rlvr\nrlvr.set_language("zh_CN")\nx = 1'
    assert t.with_language_call("x = 1", "zh_CN") == 'import rlvr\nrlvr.set_language("zh_CN")\nx = 1'


# ----------------------------------------------------------------------------- a tiny repository, end to end

SETUP = "import rlvr\nSTEPS = 3  # steps of the run"
EXERCISE = "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
ZH = {
    "Tiny": "小笔记本",
    "The model learns in a few steps.": "模型几步就学会了。",
    "steps of the run": "运行的步数",
    "**Your answer:**": "**你的回答：**",
    "It doubles.": "它翻倍。",
}


def tiny_repo(root: Path, paragraph: str = "The model learns in a few steps.") -> Path:
    """A repository with one English solution notebook and the zh_CN list naming it."""
    cells = [
        new_markdown_cell(f"# Tiny\n\n{paragraph}"),
        new_code_cell(SETUP),
        new_markdown_cell("**Your answer:**\n\n<!-- BEGIN SOLUTION -->\nIt doubles.\n<!-- END SOLUTION -->"),
        new_code_cell(EXERCISE),
    ]
    (root / "solutions").mkdir(exist_ok=True)
    (root / "notebooks").mkdir(exist_ok=True)
    path = root / "solutions" / "01_tiny.ipynb"
    nbformat.write(nbfile.clean_notebook(new_notebook(cells=cells)), str(path))
    notebooks.generate(root)
    (root / "i18n" / "zh_CN").mkdir(parents=True, exist_ok=True)
    (root / "i18n" / "zh_CN" / "NOTEBOOKS").write_text("# complete catalogues\n01_tiny\n")
    return path


def fill(po: Path, strings: dict) -> None:
    """Give a catalogue's entries the translations in `strings` (fuzzy ones stay fuzzy unless cleared)."""
    catalog = read_catalogue(po)
    for message in catalog:
        if message.id in strings:
            message.string = strings[message.id]
    po.write_text(catalogue_text(catalog), encoding="utf-8")


def test_translate_writes_the_chinese_notebooks_and_check_passes(tmp_path):
    path = tiny_repo(tmp_path)
    report, errors = t.translate(tmp_path, "zh_CN", [path])
    assert errors == ["error: 01_tiny.po: 01_tiny.ipynb cell 0: entry not translated: 'Tiny'"]
    fill(tmp_path / "i18n" / "zh_CN" / "01_tiny.po", ZH)
    report, errors = t.translate(tmp_path, "zh_CN", [path])
    assert errors == []
    assert "wrote solutions/zh_CN/01_tiny.ipynb" in report
    solution = nbformat.read(str(tmp_path / "solutions" / "zh_CN" / "01_tiny.ipynb"), as_version=4)
    student = nbformat.read(str(tmp_path / "notebooks" / "zh_CN" / "01_tiny.ipynb"), as_version=4)
    assert solution.cells[0].source == "# 小笔记本\n\n模型几步就学会了。"
    assert solution.cells[1].source == 'import rlvr\nrlvr.set_language("zh_CN")\nSTEPS = 3  # 运行的步数'
    assert "它翻倍。" in solution.cells[2].source and "它翻倍。" not in student.cells[2].source
    assert "raise NotImplementedError" in student.cells[3].source
    assert notebooks.check_repo(tmp_path) == []


def test_an_english_edit_makes_the_entry_fuzzy_and_the_check_fail_until_it_is_translated(tmp_path):
    path = tiny_repo(tmp_path)
    po = tmp_path / "i18n" / "zh_CN" / "01_tiny.po"
    t.update_catalogue(tmp_path, "zh_CN", path)
    fill(po, ZH)
    assert t.translate(tmp_path, "zh_CN", [path])[1] == []

    tiny_repo(tmp_path, paragraph="The model learns in a few more steps.")  # the planted English edit
    problems = notebooks.check_repo(tmp_path)
    assert any("not in the catalogue" in p and "a few more steps" in p for p in problems)
    report, errors = t.translate(tmp_path, "zh_CN", [path])
    assert errors and "fuzzy" in errors[0]
    message = read_catalogue(po).get("The model learns in a few more steps.")
    assert message.fuzzy and message.previous_id == ["The model learns in a few steps."]
    assert message.string == "模型几步就学会了。"  # the old translation, for the translator to update
    assert '#| msgid "The model learns in a few steps."' in po.read_text(encoding="utf-8")
    assert any("fuzzy entry" in p for p in notebooks.check_repo(tmp_path))

    catalog = read_catalogue(po)
    catalog.get("The model learns in a few more steps.").flags.discard("fuzzy")
    catalog.get("The model learns in a few more steps.").string = "模型再多几步就学会了。"
    po.write_text(catalogue_text(catalog), encoding="utf-8")
    assert any("out of date" in p for p in notebooks.check_repo(tmp_path))  # the notebook is not rebuilt yet
    assert t.translate(tmp_path, "zh_CN", [path])[1] == []
    assert notebooks.check_repo(tmp_path) == []


def test_a_chinese_notebook_not_listed_is_a_problem(tmp_path):
    path = tiny_repo(tmp_path)
    t.update_catalogue(tmp_path, "zh_CN", path)
    fill(tmp_path / "i18n" / "zh_CN" / "01_tiny.po", ZH)
    t.translate(tmp_path, "zh_CN", [path])
    (tmp_path / "i18n" / "zh_CN" / "NOTEBOOKS").write_text("")
    assert notebooks.check_repo(tmp_path) == [
        "solutions/zh_CN/01_tiny.ipynb: not listed in i18n/zh_CN/NOTEBOOKS",
        "notebooks/zh_CN/01_tiny.ipynb: not listed in i18n/zh_CN/NOTEBOOKS",
    ]


def test_an_unlisted_notebook_gets_its_catalogue_and_no_notebook(tmp_path):
    path = tiny_repo(tmp_path)
    (tmp_path / "i18n" / "zh_CN" / "NOTEBOOKS").write_text("")
    report, errors = t.translate(tmp_path, "zh_CN", [path])
    assert errors == [] and "no notebook written" in report[1]
    assert "0 translated, 0 fuzzy, 5 untranslated" in report[0]
    assert not (tmp_path / "solutions" / "zh_CN").exists()
    assert notebooks.check_repo(tmp_path) == []


def test_rewriting_an_unchanged_catalogue_changes_nothing(tmp_path):
    path = tiny_repo(tmp_path)
    po, changed = t.update_catalogue(tmp_path, "zh_CN", path)
    before = po.read_text(encoding="utf-8")
    assert changed and t.update_catalogue(tmp_path, "zh_CN", path) == (po, False)
    assert po.read_text(encoding="utf-8") == before


def test_every_notebook_has_a_catalogue():
    """Translators start from these; an unlisted one may lag behind its English (translate merges it again)."""
    for path in repo.solution_paths(ROOT):
        po = t.catalogue_path(ROOT, "zh_CN", path)
        assert po.exists(), f"{po.name} missing: run `python -m coursetools notebooks translate`"


def test_a_previous_msgid_survives_reading_and_writing(tmp_path):
    """Babel's reader keeps `#| msgid` as a comment; read_catalogue gives it back as the fuzzy entry's previous_id."""
    long_english = "An English paragraph long enough to be wrapped, " * 3 + 'with a "quote"\nand  a break.'
    catalog = t.new_catalogue("x", "zh_CN")
    catalog.add("The new English.", string="旧的中文。", flags=["fuzzy"], previous_id=[long_english])
    catalog.add("Untouched.", string="不变。")
    po = tmp_path / "x.po"
    po.write_text(catalogue_text(catalog), encoding="utf-8")
    again = read_catalogue(po)
    assert again.get("The new English.").previous_id == [long_english]
    assert again.get("The new English.").user_comments == []
    assert catalogue_text(again) == po.read_text(encoding="utf-8")
    again.get("The new English.").flags.discard("fuzzy")
    po.write_text(catalogue_text(again), encoding="utf-8")
    assert "#|" in po.read_text(encoding="utf-8")  # Babel still writes it while previous_id is set ...
    assert "#|" not in catalogue_text(read_catalogue(po))  # ... and it goes once the entry is not fuzzy


def test_an_english_text_that_comes_back_gets_its_old_translation_back():
    """msgmerge semantics: a removed entry goes obsolete (#~) with its translation, and returns with it."""
    catalog = t.new_catalogue("x", "zh_CN")
    catalog.add("Old English.", string="旧的中文。")
    without = t.new_catalogue("x", None)
    without.add("Something else entirely, about bananas.")
    catalog = merge(without, catalog)
    assert "Old English." in catalog.obsolete and catalog.get("Old English.") is None
    again = t.new_catalogue("x", None)
    again.add("Old English.")
    catalog = merge(again, catalog)
    assert catalog.get("Old English.").string == "旧的中文。" and not catalog.get("Old English.").fuzzy


def test_a_docs_page_is_translated_linked_from_the_notebooks_and_kept_in_step(tmp_path):
    path = tiny_repo(tmp_path, paragraph="See [the notation](../docs/notation.md).")
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "notation.md"
    page.write_text("# Notation\n\nThe symbols.\n", encoding="utf-8")
    (tmp_path / "i18n" / "zh_CN" / "DOCS").write_text("notation\n")
    report, errors = t.translate(tmp_path, "zh_CN", [path, page])
    assert any("notation.po" in e and "not translated" in e for e in errors)
    fill(tmp_path / "i18n" / "zh_CN" / "notation.po", {"Notation": "记号", "The symbols.": "这些符号。"})
    fill(
        tmp_path / "i18n" / "zh_CN" / "01_tiny.po",
        {**ZH, "See [the notation](../docs/notation.md).": "见[记号](../docs/notation.md)。"},
    )
    report, errors = t.translate(tmp_path, "zh_CN", [path, page])
    assert errors == [] and "wrote docs/zh_CN/notation.md" in report
    assert (tmp_path / "docs" / "zh_CN" / "notation.md").read_text(encoding="utf-8") == "# 记号\n\n这些符号。\n"
    solution = nbformat.read(str(tmp_path / "solutions" / "zh_CN" / "01_tiny.ipynb"), as_version=4)
    assert "见[记号](../../docs/zh_CN/notation.md)。" in solution.cells[0].source
    assert notebooks.check_repo(tmp_path) == []

    page.write_text("# Notation\n\nThe symbols we use.\n", encoding="utf-8")  # the planted English edit
    assert any("notation.po" in p and "The symbols we use." in p for p in notebooks.check_repo(tmp_path))
    (tmp_path / "docs" / "zh_CN" / "stray.md").write_text("x")
    assert any("stray.md: not listed in i18n/zh_CN/DOCS" in p for p in notebooks.check_repo(tmp_path))


def test_a_text_block_is_an_entry_and_other_fenced_code_is_not():
    source = "Loop:\n\n```text\nrepeat:\n    sample\n```\n\n```python\nx = 1  # stays\n```\n"
    segments = t.markdown_segments(source)
    assert [(s.kind, s.text) for s in segments] == [("paragraph", "Loop:"), ("text block", "repeat:\n    sample")]
    translations = t.Translations(Path("x.po"), {"Loop:": "循环：", "repeat:\n    sample": "重复：\n    采样"})
    assert t.translate_markdown(source, translations, "x") == source.replace("Loop:", "循环：").replace(
        "repeat:\n    sample", "重复：\n    采样"
    )
