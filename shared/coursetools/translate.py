"""Translated notebooks, generated from the English solution notebooks and one gettext catalogue per notebook.

The English solution notebook stays the one source. `extract` turns it into a template: one entry per Markdown
paragraph, heading, list item or table (segmented by markdown-it-py's CommonMark parser and its tokens' line maps;
fenced code other than a ```text block, HTML comments and a paragraph of display math alone are left out, unless
words sit in its \\text{...}), and in code cells one entry per comment (consecutive full-line comments as one) and per
string literal that reads as prose (found by `tokenize`).
`update_catalogue` folds the template into `i18n/<lang>/<notebook>.po` with Babel's `Catalog.update`, gettext's msgmerge
semantics: a changed English paragraph becomes a fuzzy entry that keeps the previous English beside it (`#| msgid`).
`build` writes `solutions/<lang>/<notebook>.ipynb` from the English source and the catalogue (a missing, empty or
fuzzy entry is an error, never a silent English fallback), with `rlvr.set_language("<lang>")` in the setup cell; the
student version comes from it through `coursetools.nbfile.make_student`. Only the notebooks listed in
`i18n/<lang>/NOTEBOOKS` are built and checked: a translator adds a notebook there when its catalogue is complete.

Usage: ``python -m coursetools notebooks translate [--lang zh_CN] [solutions/NN_*.ipynb ...]``; ``notebooks check`` runs
`translation_problems`.
"""

from __future__ import annotations

import ast
import copy
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from rlvr.i18n import TRANSLATED

from .nbfile import BEGIN_MARKER, END_MARKER, make_student, serialize, write_notebook
from .po import DEFAULT_LANGUAGE, catalogue_text, counts, course_catalogue, format_fields, merge, read_catalogue, short
from .po import without_dates
from .repo import relative

LIST_FILE = "NOTEBOOKS"  # i18n/<lang>/NOTEBOOKS: the notebooks whose translation is complete, one stem per line
DOCS_FILE = "DOCS"  # i18n/<lang>/DOCS: the docs/*.md pages whose translation is complete (docs/<lang>/<stem>.md)
SKIPPED_COMMENTS = (BEGIN_MARKER, END_MARKER)  # a code cell's solution markers are no prose
PRAGMA = re.compile(r"^(noqa|type:|fmt:|pragma)\b")
MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$", re.S)
TEXT_IN_MATH = re.compile(r"\\text\{([^{}]*)\}")  # words inside a formula
MATH_LABELS = {"old", "ref", "mean", "min", "max", "len", "clip", "cap", "pass"}  # \text{} labels kept as they are
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
BRACE_FORMAT_FLAG = "python-brace-format"


class TranslationError(ValueError):
    """A catalogue cannot produce a notebook: an entry is missing, empty or fuzzy, or a translation breaks a rule."""


# --------------------------------------------------------------------------- segments of one cell


@dataclass
class Segment:
    """One translatable piece of a cell: its English text, where it sits, and how to put a translation back."""

    text: str  # the msgid
    kind: str  # "heading", "paragraph", "list item", "table", "comment", "string"
    line: int  # first line in the cell (0-based)
    end: int = 0  # markdown: one past the last line; code: unused
    prefixes: tuple[str, str] = ("", "")  # markdown: before the first line, before each later line
    span: tuple[tuple[int, int], tuple[int, int]] = ((0, 0), (0, 0))  # code: (row, col) start and end (1-based rows)
    quote: tuple[str, str] = ("", "")  # string literal: prefix+opening quote, closing quote
    note: str = ""  # what the translator reads beside the entry
    flags: tuple[str, ...] = ()


def _markdown_parser():
    """markdown-it-py's CommonMark parser with GFM tables (what Jupyter renders)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def has_prose(text: str) -> bool:
    """True if `text` holds a letter outside math, code spans and HTML tags, or a word in a math \\text{...} (else it
    is left out)."""
    bare = MATH.sub(" ", CODE_SPAN.sub(" ", re.sub(r"<[^>]+>", " ", text)))
    return any(ch.isalpha() for ch in bare) or any(math_words(m.group(0)) for m in MATH.finditer(text))


def math_words(math: str) -> list[str]:
    """The words of a formula's \\text{...} parts a reader reads as prose ("correct", "otherwise"): not the labels
    papers keep in every language (old, ref, mean, min, max, ...) nor names in capitals (GRPO, LOO)."""
    words = [word for part in TEXT_IN_MATH.findall(math) for word in re.findall(r"[A-Za-z]+", part)]
    return [w for w in words if len(w) >= 3 and not w.isupper() and w.lower() not in MATH_LABELS]


def _prefixes(lines: list[str], content: list[str]) -> tuple[str, str]:
    """What comes before a block's text on its first and later lines (list markers, indentation, '> ')."""
    first = lines[0][: max(0, lines[0].find(content[0]))] if content and content[0] else ""
    if len(lines) > 1 and len(content) > 1 and content[1]:
        rest = lines[1][: max(0, lines[1].find(content[1]))]
    else:
        rest = re.sub(r"[-*+]|\d+[.)]", lambda m: " " * len(m.group()), first)
    return first, rest


def markdown_segments(source: str) -> list[Segment]:
    """The headings, paragraphs (list items' included) and tables of a Markdown cell, from markdown-it's tokens."""
    lines = source.split("\n")
    tokens = _markdown_parser().parse(source)
    segments, in_item, depth = [], 0, 0
    for index, token in enumerate(tokens):
        if token.type == "list_item_open":
            in_item += 1
        elif token.type == "list_item_close":
            in_item -= 1
        elif token.type == "table_open" and depth == 0:
            start, end = token.map
            text = "\n".join(lines[start:end])
            segments.append(Segment(text, "table", start, end, note="Markdown table: keep every row and every |"))
        elif token.type in ("heading_open", "paragraph_open") and token.map and depth == 0:
            inline = tokens[index + 1]
            start, end = token.map
            content = inline.content.split("\n")
            if token.type == "heading_open":
                end = start + len(content)  # a setext heading's underline stays as it is
            kind = "heading" if token.type == "heading_open" else ("list item" if in_item else "paragraph")
            if has_prose(inline.content):
                prefixes = _prefixes(lines[start:end], content)
                segments.append(Segment(inline.content, kind, start, end, prefixes, note=f"Markdown {kind}"))
        elif token.type == "fence" and token.info.strip() == "text" and token.map and depth == 0 and not in_item:
            start, end = token.map[0] + 1, token.map[1] - 1  # the lines between the fences
            text = "\n".join(lines[start:end])
            note = "A text block (pseudo-code or a drawing): translate its words; keep names, symbols and alignment"
            segments.append(Segment(text, "text block", start, end, note=note))
        if token.type == "table_open":
            depth += 1
        elif token.type == "table_close":
            depth -= 1
    return segments


def _split_literal(token_text: str) -> tuple[str, str, str]:
    """(prefix and opening quote, inner text, closing quote) of a string literal's source."""
    match = re.match(r"(?is)^([rbuf]*)('''|\"\"\"|'|\")", token_text)
    opening = match.group(0)
    quote = match.group(2)
    return opening, token_text[len(opening) : len(token_text) - len(quote)], quote


def _string_tokens(tokens: list[tokenize.TokenInfo]) -> list[tuple[str, tuple, tuple]]:
    """(literal source, start, end) of every string literal; an f-string split by Python 3.12's tokenizer is joined."""
    found, start = [], None
    for tok in tokens:
        kind = tokenize.tok_name[tok.type]
        if kind == "STRING":
            found.append((tok.string, tok.start, tok.end))
        elif kind == "FSTRING_START":
            start = tok
        elif kind == "FSTRING_END" and start is not None:
            found.append((None, start.start, tok.end))
            start = None
    return found


def _source_between(lines: list[str], start: tuple, end: tuple) -> str:
    """The cell's text from (row, col) `start` to `end` (rows 1-based)."""
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] : end[1]]
    middle = lines[start[0] : end[0] - 1]
    return "\n".join([lines[start[0] - 1][start[1] :], *middle, lines[end[0] - 1][: end[1]]])


def reads_as_prose(text: str) -> bool:
    """A comment or string a learner reads: it holds a space and a letter (identifiers and keys do not)."""
    return " " in text.strip() and has_prose(text)


def _comment_text(comment: str) -> str:
    """A comment's words: '#' (or '##', ...) and one space removed."""
    return re.sub(r"^#+ ?", "", comment).rstrip()


def code_segments(source: str) -> list[Segment]:
    """The prose comments (consecutive full-line comments at one column as one entry) and prose string literals of a
    code cell, found by `tokenize`."""
    lines = source.split("\n")
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    segments: list[Segment] = []
    for tok in tokens:
        if tok.type != tokenize.COMMENT or tok.string.strip() in SKIPPED_COMMENTS:
            continue
        text = _comment_text(tok.string)
        if PRAGMA.match(text) or not reads_as_prose(text):
            continue
        full_line = not lines[tok.start[0] - 1][: tok.start[1]].strip()
        last = segments[-1] if segments else None
        if (
            full_line
            and last is not None
            and last.kind == "comment"
            and last.span[1][0] == tok.start[0] - 1
            and last.span[0][1] == tok.start[1]
            and last.note.startswith("comment lines")
        ):
            last.text += "\n" + text
            last.span = (last.span[0], tok.end)
            continue
        note = "comment lines (one '# ' line per line you write)" if full_line else "comment after code"
        segments.append(Segment(text, "comment", tok.start[0] - 1, span=(tok.start, tok.end), note=note))
    for literal, start, end in _string_tokens(tokens):
        literal = literal if literal is not None else _source_between(lines, start, end)
        opening, inner, closing = _split_literal(literal)
        if not reads_as_prose(inner):
            continue
        formatted = "f" in opening.lower() or "{" in inner
        note = "string literal" + (": keep every {...} field as it is" if formatted else "")
        flags = (BRACE_FORMAT_FLAG,) if formatted else ()
        segments.append(
            Segment(inner, "string", start[0] - 1, span=(start, end), quote=(opening, closing), note=note, flags=flags)
        )
    return sorted(segments, key=lambda s: s.span[0])


def cell_segments(cell) -> list[Segment]:
    """The translatable segments of one notebook cell (raw cells have none)."""
    if cell.cell_type == "markdown":
        return markdown_segments(cell.source)
    if cell.cell_type == "code":
        return code_segments(cell.source)
    return []


# --------------------------------------------------------------------------- template and catalogue


def _location(path: Path, cell, segment: Segment) -> tuple[str, int]:
    """Where an entry comes from, as the catalogue writes it: `<notebook>#<cell id>:<line in the cell, 1-based>`."""
    return f"{path.name}#{cell.get('id', '')}", segment.line + 1


def extract(path: Path, lang: str = DEFAULT_LANGUAGE):
    """The template (a Babel Catalog without translations) of one English solution notebook, or of one docs/*.md
    page, in reading order."""
    from babel.messages.catalog import Catalog

    template = Catalog(locale=None, domain=Path(path).stem, project="rlvr notebooks", fuzzy=False)
    if Path(path).suffix == ".md":
        for segment in markdown_segments(Path(path).read_text(encoding="utf-8")):
            note = [segment.note] if segment.note else []
            template.add(segment.text, locations=[(f"docs/{Path(path).name}", segment.line + 1)], auto_comments=note)
        return template
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        for segment in cell_segments(cell):
            template.add(
                segment.text,
                locations=[_location(Path(path), cell, segment)],
                auto_comments=[segment.note] if segment.note else [],
                flags=segment.flags,
            )
    return template


def catalogue_path(root: Path, lang: str, notebook: Path) -> Path:
    """`i18n/<lang>/<notebook stem>.po`."""
    return Path(root) / "i18n" / lang / f"{Path(notebook).stem}.po"


def source_name(stem: str) -> str:
    """The English file a catalogue translates: 'the notebook solutions/<stem>.ipynb' or 'the page docs/<stem>.md'."""
    return f"the notebook solutions/{stem}.ipynb" if stem[:2].isdigit() else f"the page docs/{stem}.md"


def new_catalogue(stem: str, lang: str):
    """An empty catalogue for one notebook."""
    header = (
        f"# {lang} translation of {source_name(stem)} (rlvr, CS336 Lecture 16).\n"
        f"# Generated and merged by `python -m coursetools notebooks translate`; terms: i18n/{lang}/GLOSSARY.md;\n"
        "# how to translate: i18n/README.md."
    )
    return course_catalogue(lang, stem, "rlvr notebooks", header)


def update_catalogue(root: Path, lang: str, notebook: Path) -> tuple[Path, bool]:
    """Extract the notebook's template and merge it into its catalogue file; (the .po path, whether it changed)."""
    path = catalogue_path(root, lang, notebook)
    existing = read_catalogue(path, lang) if path.exists() else new_catalogue(Path(notebook).stem, lang)
    old_text = path.read_text(encoding="utf-8") if path.exists() else ""
    catalog = merge(extract(notebook, lang), existing)
    text = catalogue_text(catalog)
    if without_dates(text) == without_dates(old_text):
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path, True


# --------------------------------------------------------------------------- checks of one translation


def kept_pieces(text: str) -> Counter:
    """What a translation must keep exactly: math ($...$, $$...$$; the words inside its \\text{...} may be
    translated) and code spans (`...`)."""
    spans = [m.group(0) for m in CODE_SPAN.finditer(text)]
    math = [TEXT_IN_MATH.sub(r"\\text{}", m.group(0)) for m in MATH.finditer(CODE_SPAN.sub(" ", text))]
    return Counter(spans + math)


def _table_shape(text: str) -> list[int]:
    """Cells per row of a Markdown table (escaped pipes and pipes in code spans do not count)."""
    rows = []
    for row in text.strip().split("\n"):
        bare = CODE_SPAN.sub("x", row.replace("\\|", "x")).strip().strip("|")
        rows.append(bare.count("|") + 1)
    return rows


def translation_problem(segment: Segment, translation: str) -> str | None:
    """Why a translation cannot replace its English (None if it can)."""
    if segment.kind == "string" or BRACE_FORMAT_FLAG in segment.flags:
        if Counter(format_fields(translation)) != Counter(format_fields(segment.text)):
            return "its {...} fields differ from the English ones"
        if segment.kind == "string" and "\n" in translation and len(segment.quote[1]) == 1:
            return "a one-line string literal cannot hold a line break"
        return None
    if segment.kind in ("comment", "text block"):
        return None
    if kept_pieces(translation) != kept_pieces(segment.text):
        missing = kept_pieces(segment.text) - kept_pieces(translation)
        extra = kept_pieces(translation) - kept_pieces(segment.text)
        return f"math or code differs from the English (missing {sorted(missing)}, added {sorted(extra)})"
    if segment.kind == "table" and _table_shape(translation) != _table_shape(segment.text):
        return "the table's rows or columns differ from the English"
    return None


# --------------------------------------------------------------------------- building a translated notebook


@dataclass
class Translations:
    """The usable translations of one catalogue, and what it says about the others."""

    path: Path
    strings: dict[str, str] = field(default_factory=dict)  # msgid -> msgstr (translated, not fuzzy)
    fuzzy: set = field(default_factory=set)

    @classmethod
    def read(cls, path: Path, lang: str) -> Translations:
        """Read a catalogue file (a missing file has no translations)."""
        found = cls(Path(path))
        if not Path(path).exists():
            return found
        for message in read_catalogue(path, lang):
            if not message.id:
                continue
            if message.fuzzy:
                found.fuzzy.add(message.id)
            elif message.string:
                found.strings[message.id] = message.string
        return found

    def get(self, segment: Segment, where: str) -> str:
        """The translation of one segment; TranslationError (one line, naming the entry) if there is none."""
        if segment.text in self.strings:
            problem = translation_problem(segment, self.strings[segment.text])
            if problem:
                raise TranslationError(f"{self.path.name}: {where}: {problem}: {short(segment.text)}")
            return self.strings[segment.text]
        state = "fuzzy (the English changed)" if segment.text in self.fuzzy else "not translated"
        raise TranslationError(f"{self.path.name}: {where}: entry {state}: {short(segment.text)}")


def translate_markdown(source: str, translations: Translations, where: str) -> str:
    """A Markdown cell with every segment replaced by its translation (structure and prefixes kept)."""
    lines = source.split("\n")
    segments = markdown_segments(source)
    found = [translations.get(segment, where) for segment in segments]  # in reading order: the first gap is named
    for segment, text in reversed(list(zip(segments, found))):
        if segment.kind in ("table", "text block"):
            new = text.split("\n")
        else:
            first, rest = segment.prefixes
            new = [(first if i == 0 else rest) + line for i, line in enumerate(text.split("\n"))]
        lines[segment.line : segment.end] = new
    return "\n".join(lines)


def _offset(lines: list[str], position: tuple[int, int]) -> int:
    """Character offset in the cell of a tokenize (row, col) position."""
    return sum(len(line) + 1 for line in lines[: position[0] - 1]) + position[1]


def _code_replacement(segment: Segment, text: str, indent: str) -> str:
    """What replaces a comment or a literal in the code."""
    if segment.kind == "string":
        return segment.quote[0] + text + segment.quote[1]
    return ("\n" + indent).join("# " + line if line else "#" for line in text.split("\n"))


def translate_code(source: str, translations: Translations, where: str) -> str:
    """A code cell with its prose comments and strings translated; it must still parse and keep its {...} fields."""
    lines = source.split("\n")
    out = source
    segments = code_segments(source)
    found = [translations.get(segment, where) for segment in segments]
    for segment, text in reversed(list(zip(segments, found))):
        start, end = (_offset(lines, pos) for pos in segment.span)
        indent = lines[segment.span[0][0] - 1][: segment.span[0][1]]
        out = out[:start] + _code_replacement(segment, text, indent if not indent.strip() else "") + out[end:]
    if _parses(source) and not _parses(out):
        raise TranslationError(f"{translations.path.name}: {where}: the translated code does not parse")
    return out


def _parses(source: str) -> bool:
    """True if the cell is valid Python."""
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def with_language_call(source: str, lang: str) -> str:
    """The setup cell with `rlvr.set_language("<lang>")` right after its `import rlvr` (both at the top if absent)."""
    call = f'rlvr.set_language("{lang}")'
    lines = source.split("\n")
    if "import rlvr" in (line.strip() for line in lines):
        at = [line.strip() for line in lines].index("import rlvr") + 1
        return "\n".join([*lines[:at], call, *lines[at:]])
    return "\n".join(["import rlvr", call, *lines])


def one_folder_deeper(markdown: str) -> str:
    """Relative links of a notebook moved from solutions/ to solutions/<lang>/: '](../docs/x.md)' ->
    '](../../docs/x.md)'."""
    return markdown.replace("](../", "](../../")


def to_translated_docs(markdown: str, lang: str, docs: list[str]) -> str:
    """Links of a translated notebook to a docs page that has a translation made to point at it:
    '](../../docs/notation.md)' -> '](../../docs/<lang>/notation.md)'."""
    for stem in docs:
        markdown = markdown.replace(f"](../../docs/{stem}.md", f"](../../docs/{lang}/{stem}.md")
    return markdown


def build_doc(page: Path, catalogue: Path, lang: str = DEFAULT_LANGUAGE) -> str:
    """The translated docs page: the English Markdown with every entry from the catalogue, its relative links one
    folder deeper (docs/<lang>/ sits below docs/)."""
    translations = Translations.read(catalogue, lang)
    text = translate_markdown(Path(page).read_text(encoding="utf-8"), translations, f"docs/{Path(page).name}")
    return one_folder_deeper(text)


def build(notebook: Path, catalogue: Path, lang: str = DEFAULT_LANGUAGE) -> nbformat.NotebookNode:
    """The translated solution notebook: every cell of the English one with its text from the catalogue."""
    translations = Translations.read(catalogue, lang)
    docs = listed_docs(Path(notebook).resolve().parents[1], lang)
    nb = copy.deepcopy(nbformat.read(str(notebook), as_version=4))
    setup_done = False
    for index, cell in enumerate(nb.cells):
        where = f"{Path(notebook).name} cell {index}"
        if cell.cell_type == "markdown":
            cell.source = one_folder_deeper(translate_markdown(cell.source, translations, where))
            cell.source = to_translated_docs(cell.source, lang, docs)
        elif cell.cell_type == "code":
            cell.source = translate_code(cell.source, translations, where)
            if not setup_done:
                cell.source, setup_done = with_language_call(cell.source, lang), True
    nb.metadata["rlvr_translation"] = {"language": lang, "source": f"solutions/{Path(notebook).name}"}
    return nb


# --------------------------------------------------------------------------- the repository


def list_file(root: Path, lang: str, name: str) -> list[str]:
    """The stems listed in `i18n/<lang>/<name>`, one per line ('#' starts a comment; a missing file lists none)."""
    path = Path(root) / "i18n" / lang / name
    if not path.exists():
        return []
    lines = (line.split("#")[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def listed_notebooks(root: Path, lang: str) -> list[str]:
    """The notebook stems in `i18n/<lang>/NOTEBOOKS` (translation complete: built and checked)."""
    return list_file(root, lang, LIST_FILE)


def listed_docs(root: Path, lang: str) -> list[str]:
    """The docs page stems in `i18n/<lang>/DOCS` (translation complete: docs/<lang>/<stem>.md built and checked)."""
    return list_file(root, lang, DOCS_FILE)


def doc_paths(root: Path, lang: str) -> list[Path]:
    """The English docs pages listed for translation into `lang`."""
    return [Path(root) / "docs" / f"{stem}.md" for stem in listed_docs(root, lang)]


def translated_paths(root: Path, lang: str, stem: str) -> tuple[Path, Path]:
    """(solutions/<lang>/<stem>.ipynb, notebooks/<lang>/<stem>.ipynb)."""
    return Path(root) / "solutions" / lang / f"{stem}.ipynb", Path(root) / "notebooks" / lang / f"{stem}.ipynb"


def expected_translations(root: Path, lang: str, stem: str) -> dict[Path, nbformat.NotebookNode]:
    """What `translate` writes for one listed notebook: {path: notebook} for the solution and the student version."""
    source = Path(root) / "solutions" / f"{stem}.ipynb"
    solution = build(source, catalogue_path(root, lang, source), lang)
    solution_path, student_path = translated_paths(root, lang, stem)
    return {
        solution_path: solution,
        student_path: make_student(solution, f"{lang}/{stem}.ipynb", language=lang),
    }


def catalogue_problems(root: Path, lang: str, stem: str, source: Path | None = None) -> list[str]:
    """Entries of a listed notebook's (or docs page's) catalogue that are fuzzy, untranslated, missing, or that
    break a rule."""
    source = source or Path(root) / "solutions" / f"{stem}.ipynb"
    path = catalogue_path(root, lang, source)
    name = relative(path, root)
    if not source.exists():
        listing = DOCS_FILE if source.suffix == ".md" else LIST_FILE
        return [f"{name}: listed in i18n/{lang}/{listing} but {relative(source, root)} does not exist"]
    if not path.exists():
        return [f"{name}: missing (run `python -m coursetools notebooks translate`)"]
    catalog = read_catalogue(path, lang)
    problems = [f"{name}: fuzzy entry (the English changed): {short(m.id)}" for m in catalog if m.id and m.fuzzy]
    problems += [f"{name}: untranslated entry: {short(m.id)}" for m in catalog if m.id and not m.fuzzy and not m.string]
    known = {m.id for m in catalog if m.id}
    problems += [
        f"{name}: not in the catalogue (run `python -m coursetools notebooks translate`): {short(m.id)}"
        for m in extract(source, lang)
        if m.id and m.id not in known
    ]
    return problems


def translation_problems(root: Path) -> list[str]:
    """Every problem of the translated editions: catalogues of listed notebooks incomplete or behind the English,
    translated notebooks missing, out of date, or not listed (empty list when all is well)."""
    root = Path(root)
    problems = []
    for lang in TRANSLATED:
        listed = listed_notebooks(root, lang)
        for stem in listed:
            found = catalogue_problems(root, lang, stem)
            problems += found
            if found:
                continue
            try:
                expected = expected_translations(root, lang, stem)
            except TranslationError as error:
                problems.append(str(error))
                continue
            problems += [p for path, nb in expected.items() if (p := written_problem(root, path, serialize(nb)))]
        for folder in ("solutions", "notebooks"):
            for path in sorted((root / folder / lang).glob("*.ipynb")):
                if path.stem not in listed:
                    problems.append(f"{relative(path, root)}: not listed in i18n/{lang}/{LIST_FILE}")
        problems += doc_problems(root, lang)
    return problems


def written_problem(root: Path, path: Path, expected: str) -> str | None:
    """Why a generated file (a translated notebook or docs page) is not what `translate` would write, else None."""
    if not path.exists():
        return f"{relative(path, root)}: missing (run `python -m coursetools notebooks translate`)"
    if path.read_text(encoding="utf-8") != expected:
        return (
            f"{relative(path, root)}: out of date with its catalogue and its English source "
            "(run `python -m coursetools notebooks translate`)"
        )
    return None


def doc_problems(root: Path, lang: str) -> list[str]:
    """The translated docs pages of one language: catalogues incomplete or behind the English, pages missing, out of
    date, or not listed."""
    problems = []
    for page in doc_paths(root, lang):
        found = catalogue_problems(root, lang, page.stem, page)
        problems += found
        if found:
            continue
        target = Path(root) / "docs" / lang / page.name
        try:
            text = build_doc(page, catalogue_path(root, lang, page), lang)
        except TranslationError as error:
            problems.append(str(error))
            continue
        problem = written_problem(root, target, text)
        if problem:
            problems.append(problem)
    for path in sorted((Path(root) / "docs" / lang).glob("*.md")):
        if path.stem not in listed_docs(root, lang):
            problems.append(f"{relative(path, root)}: not listed in i18n/{lang}/{DOCS_FILE}")
    return problems


def translate(root: Path, lang: str, notebooks: list[Path]) -> tuple[list[str], list[str]]:
    """Merge each notebook's template into its catalogue, then write the translated notebooks of the listed ones.
    Returns (lines to print, errors)."""
    report, errors = [], []
    listed = listed_notebooks(root, lang)
    for notebook in notebooks:
        path, changed = update_catalogue(root, lang, notebook)
        done, fuzzy, untranslated = counts(read_catalogue(path, lang))
        state = "updated" if changed else "unchanged"
        report.append(f"{relative(path, root)}: {state}; {done} translated, {fuzzy} fuzzy, {untranslated} untranslated")
        if notebook.suffix == ".md":
            if notebook.stem in listed_docs(root, lang):
                try:
                    text = build_doc(notebook, path, lang)
                except TranslationError as error:
                    errors.append(f"error: {error}")
                    continue
                target = Path(root) / "docs" / lang / notebook.name
                if not target.exists() or target.read_text(encoding="utf-8") != text:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
                    report.append(f"wrote {relative(target, root)}")
            continue
        if notebook.stem not in listed:
            report.append(f"    (not listed in i18n/{lang}/{LIST_FILE}: no notebook written)")
            continue
        try:
            expected = expected_translations(root, lang, notebook.stem)
        except TranslationError as error:
            errors.append(f"error: {error}")
            continue
        for target, nb in expected.items():
            if not target.exists() or target.read_text(encoding="utf-8") != serialize(nb):
                write_notebook(nb, target)
                report.append(f"wrote {relative(target, root)}")
    return report, errors
