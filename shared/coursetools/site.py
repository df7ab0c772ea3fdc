"""The course as a website: `python -m coursetools site` builds a static site under build/site/, readable offline.

Each solution notebook is executed by `coursetools.execute.execute_notebook` (full size, or fast mode with --fast) and
handed to Sphinx with myst-nb (`nb_execution_mode = "off"`: nothing runs twice) and sphinx-book-theme, beside the README
(the home page) and docs/*.md. Math is typeset by MathJax 3 copied into the site from the [site] extra
(sphinx-mathjax-offline), so neither the build nor a reader's browser asks the network for anything. Widgets show the
static PNG each panel attaches to its output. One site per language: build/site/en/, and build/site/zh_CN/ once the
Chinese edition's files exist, with a switch on every page to the same page in the other language.
Usage: ``python -m coursetools site [--fast] [--languages en zh_CN] [--out DIR] [--reuse]``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from rlvr.i18n import LANGUAGES, SOURCE_LANGUAGE
from rlvr.options import output_folder

from .execute import DEFAULT_RENDER_TIMEOUT, execute_notebook
from .nbfile import BEGIN_MARKER, END_MARKER, MARKDOWN_MARKERS, read_notebook, write_notebook
from .repo import NOTEBOOK_PATTERN, default_root

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FIGURE_TYPES = ("image/png", "image/svg+xml", "image/jpeg", "image/gif")
SITE_CSS = """\
.rlvr-run-live pre { font-size: 0.8em; }
.bd-article mjx-container[display="true"] { overflow-x: auto; overflow-y: hidden; }  /* a wide formula scrolls */
.header-article-items__end { display: flex; align-items: center; }  /* the switch beside the buttons, not above */
.rlvr-language-switch { display: flex; gap: 0.6em; align-items: center; margin: 0 0.8em; font-size: 0.9em; }
.rlvr-language-switch .current { font-weight: bold; }
details.rlvr-solution { border-left: 3px solid var(--pst-color-primary); padding: 0.2em 0.8em; margin: 0.8em 0; }
details.rlvr-solution > summary { cursor: pointer; font-weight: bold; }
"""
SWITCH_TEMPLATE = """\
{%- if rlvr_languages|length > 1 %}
<nav class="rlvr-language-switch" aria-label="{{ rlvr_switch_label }}">
{%- for lang in rlvr_languages %}
{%- if lang.current %}<span class="current" lang="{{ lang.html_lang }}">{{ lang.label }}</span>
{%- else %}<a href="{{ lang.href }}" hreflang="{{ lang.html_lang }}" lang="{{ lang.html_lang }}">{{ lang.label }}</a>
{%- endif %}
{%- endfor %}
</nav>
{%- endif %}
"""
TOGGLE_TEMPLATE = """\
<button class="sidebar-toggle primary-toggle btn btn-sm" title="{{ rlvr_toggle_sidebar }}" data-bs-placement="bottom"
  data-bs-toggle="tooltip"><span class="fa-solid fa-bars"></span></button>
"""  # sphinx-book-theme's sidebar button, whose tooltip its template writes in English only
# Sphinx indexes Chinese pages by jieba's words, but its search box looks a query up whole: "策略梯度" finds nothing
# when the index holds "策略" and "梯度". This splitter cuts each run of Han characters into the longest words the
# index holds (forward maximum matching), so a query finds the pages that hold all its words.
CHINESE_QUERY_SPLITTER_JS = r"""
function splitQuery(query) {
  const index = (typeof Search !== "undefined" && Search._index) || {terms: {}, titleterms: {}};
  const known = (word) => Object.hasOwn(index.terms, word) || Object.hasOwn(index.titleterms, word);
  const words = [];
  for (const part of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    for (const run of part.match(/\p{Script=Han}+|[^\p{Script=Han}]+/gu) || []) {
      if (!/\p{Script=Han}/u.test(run) || known(run)) { words.push(run); continue; }
      for (let i = 0; i < run.length;) {
        let j = run.length;
        while (j > i + 1 && !known(run.slice(i, j))) j--;
        if (j > i + 1 || known(run.slice(i, j))) words.push(run.slice(i, j));
        i = j;
      }
    }
  }
  return words;
}
"""
CONF_TEMPLATE = """\
# Written by coursetools.site: the Sphinx settings of the {code} edition of the course website.
from coursetools.site import sphinx_settings

globals().update(sphinx_settings({settings!r}))
"""


@dataclass(frozen=True)
class Language:
    """One edition of the course: where its files are (the source language's at the top of the repository, a
    translation's in files and folders named by its code) and the words the site adds to its pages."""

    code: str  # one of rlvr.i18n.LANGUAGES: Sphinx's language code, and the site's folder
    words: dict  # the site's own phrases (see ENGLISH_WORDS), the language's own name among them

    @property
    def label(self) -> str:
        """Its name in the language switch."""
        return self.words["name"]

    @property
    def readme(self) -> str:
        """The home page, relative to the repository root: README.md, README.<code>.md."""
        return "README.md" if self.code == SOURCE_LANGUAGE else f"README.{self.code}.md"

    def folder(self, english: str) -> str:
        """The language's counterpart of an English folder: solutions, solutions/<code>."""
        return english if self.code == SOURCE_LANGUAGE else f"{english}/{self.code}"

    @property
    def solutions(self) -> str:
        """Folder of its solution notebooks."""
        return self.folder("solutions")

    @property
    def notebooks(self) -> str:
        """Folder of its student notebooks."""
        return self.folder("notebooks")

    @property
    def docs(self) -> str:
        """Folder of its docs/*.md (the English docs where it has none)."""
        return self.folder("docs")


ENGLISH_WORDS = {
    "name": "English",  # in the language switch
    "run_live": "Run it live",
    "this_page": "This page is the solution notebook `{solution}` (every exercise solved), executed {how}.",
    "full": "at full size",
    "fast": "in fast mode (RLVR_FAST=1: smaller runs than you will get)",
    "yourself": "To run it yourself, with the exercises left for you in `{student}`, from the repository root:",
    "our_solution": "Our solution",
    "show_solution": "Show our solution",
    "hide_solution": "Hide our solution",
    "notebooks": "Notebooks",
    "docs": "Notation and docs",
    "switch": "Language",
    "your_answer": "**Your answer:**",  # a written answer's label (nbfile.MARKDOWN_STUB), dropped on the page
    "search_bar": "Search...",  # the search box's placeholder
    "toggle_sidebar": "Toggle primary sidebar",
}
CHINESE_WORDS = {
    "name": "中文",
    "run_live": "在本机运行",
    "this_page": "本页是解答笔记本 `{solution}`（所有练习均已解答）{how}的运行结果。",
    "full": "按完整规模",
    "fast": "以快速模式（RLVR_FAST=1：实验规模比你运行时小）",
    "yourself": "想自己运行并完成练习（练习留空的版本在 `{student}`），请在仓库根目录执行：",
    "our_solution": "我们的解答",
    "show_solution": "显示我们的解答",
    "hide_solution": "隐藏我们的解答",
    "notebooks": "笔记本",
    "docs": "记号与文档",
    "switch": "语言",
    "your_answer": "**你的回答：**",
    "search_found": "搜索完成，找到 ${resultCount} 个匹配的页面。",
    "theme": {  # the theme's and Sphinx's own words their Chinese catalogues leave in English
        "System Settings": "跟随系统",
        "Color mode": "颜色模式",
        "Link to this heading": "链接到此标题",
    },
    "search_bar": "搜索……",
    "toggle_sidebar": "显示或隐藏侧栏",
}
WORDS = {"en": ENGLISH_WORDS, "zh_CN": CHINESE_WORDS}  # the site's words in each of rlvr.i18n.LANGUAGES
EDITIONS = {code: Language(code, WORDS[code]) for code in LANGUAGES}  # the course's languages, English first


@dataclass
class Page:
    """One page of the built site: which language, its Sphinx document name, its source and figures."""

    language: str
    docname: str  # e.g. "solutions/03_grpo" (the page is <language>/<docname>.html)
    source: str  # the repository file it shows
    figures: int = 0  # images among its outputs (for notebooks)

    @property
    def url(self) -> str:
        """The page's path under the site's root."""
        return f"{self.language}/{self.docname}.html"


@dataclass
class Site:
    """What `build` made: the output folder, its pages, and the notebooks that failed to execute."""

    out: Path
    languages: list[str]
    pages: list[Page]
    failures: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- what each language has


def has_edition(root: Path, code: str) -> bool:
    """Whether the repository holds solution notebooks in this language."""
    return any((Path(root) / EDITIONS[code].solutions).glob(NOTEBOOK_PATTERN))


def available_languages(root: Path) -> list[str]:
    """The languages whose solution notebooks exist, English first."""
    return [code for code in EDITIONS if has_edition(root, code)]


def readme_path(root: Path, lang: Language) -> Path:
    """The language's README, else the English one."""
    own = Path(root) / lang.readme
    return own if own.exists() else Path(root) / EDITIONS[SOURCE_LANGUAGE].readme


MAINTAINER_PAGES = ("authoring",)  # docs for the course's authors: in the English edition only, never translated


def doc_paths(root: Path, lang: Language) -> list[Path]:
    """Every English docs/*.md page, or its translation in the language's docs folder where there is one (a
    maintainer page only in English); the notation page first."""
    english = sorted((Path(root) / EDITIONS[SOURCE_LANGUAGE].docs).glob("*.md"))
    if lang.code != SOURCE_LANGUAGE:
        english = [p for p in english if p.stem not in MAINTAINER_PAGES]
    paths = [Path(root) / lang.docs / p.name if (Path(root) / lang.docs / p.name).exists() else p for p in english]
    return sorted(paths, key=lambda p: (p.stem != "notation", p.stem))


def quick_start(readme: str) -> str:
    """The README's first ```bash block (the commands that install and open the course), each command's trailing
    comment moved to a line of its own above it, so the block fits the page's width."""
    match = re.search(r"^```bash\n(.*?)^```", readme, flags=re.M | re.S)
    if not match:
        raise ValueError("the README has no ```bash block (its Quick start) to put on each page")
    lines = []
    for line in match.group(1).rstrip("\n").split("\n"):
        command, _, comment = line.partition("  #")
        lines += [f"# {comment.strip()}", command.rstrip()] if comment.strip() else [line]
    return "\n".join(lines)


# --------------------------------------------------------------------------- a notebook as a web page


def web_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop widget views and state, so each panel shows the static PNG attached to its output."""
    from rlvr.widgets import drop_widget_state

    drop_widget_state(nb)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data and any(kind in data for kind in FIGURE_TYPES):
                del data[WIDGET_VIEW]
    return nb


def count_figures(nb: nbformat.NotebookNode) -> int:
    """The outputs that show an image."""
    outputs = (output for cell in nb.cells for output in cell.get("outputs", []))
    return sum(any(kind in output.get("data", {}) for kind in FIGURE_TYPES) for output in outputs)


def fold_markdown_solutions(source: str, summary: str, label: str = "") -> str:
    """Put each BEGIN/END SOLUTION region of a Markdown cell in a closed <details> block (markers dropped, and the
    student's `label`, e.g. '**Your answer:**', dropped from its start: on the page it is our answer)."""
    lines_out, opened = [], False
    for line in source.split("\n"):
        marker = MARKDOWN_MARKERS.get(line.strip(), line.strip())
        if marker == BEGIN_MARKER:
            lines_out += [f'<details class="rlvr-solution"><summary>{summary}</summary>', ""]
            opened = True
        elif marker == END_MARKER:
            lines_out += ["", "</details>"]
        else:
            if opened and label and line.startswith(label):
                line = line[len(label) :].lstrip()
            opened = opened and not line.strip()
            lines_out.append(line)
    return "\n".join(lines_out)


def without_markers(code: str) -> str:
    """A solution's code without its '### BEGIN/END SOLUTION' lines (they mean nothing on a page)."""
    return "\n".join(line for line in code.split("\n") if line.strip() not in (BEGIN_MARKER, END_MARKER))


def fold_solutions(nb: nbformat.NotebookNode, words: dict) -> nbformat.NotebookNode:
    """Fold every solved exercise: a solution's code behind a toggle (its check's output shows), a model answer too."""
    for cell in nb.cells:
        if BEGIN_MARKER not in cell.source and not any(m in cell.source for m in MARKDOWN_MARKERS):
            continue
        if cell.cell_type == "markdown":
            cell.source = fold_markdown_solutions(cell.source, words["our_solution"], words["your_answer"])
        elif cell.cell_type == "code":
            cell.source = without_markers(cell.source)
            tags = cell.metadata.setdefault("tags", [])
            tags.append("hide-input")
            cell.metadata["mystnb"] = {
                "code_prompt_show": words["show_solution"],
                "code_prompt_hide": words["hide_solution"],
            }
    return nb


def banner(lang: Language, solution: str, student: str, commands: str, fast: bool) -> str:
    """The note at the top of a notebook's page: what it shows, and the README's commands to run it live."""
    words = lang.words
    how = words["fast"] if fast else words["full"]
    return "\n".join(
        [
            f":::{{admonition}} {words['run_live']}",
            ":class: tip rlvr-run-live",
            words["this_page"].format(solution=solution, how=how),
            words["yourself"].format(student=student),
            "```bash",
            commands,
            "```",
            ":::",
        ]
    )


def split_title(nb: nbformat.NotebookNode) -> int:
    """Cut the first Markdown cell after its `# ` title line; return where a note under the title goes."""
    first = nb.cells[0] if nb.cells else None
    if first is None or first.cell_type != "markdown" or not first.source.startswith("# "):
        return 0
    title, _, rest = first.source.partition("\n")
    first.source = title
    if rest.strip():
        intro = nbformat.v4.new_markdown_cell(rest.strip("\n"))
        intro.id = "rlvr-site-intro"
        nb.cells.insert(1, intro)
    return 1


def web_notebook(nb: nbformat.NotebookNode, lang: Language, path: Path, commands: str, fast: bool):
    """An executed notebook as the site shows it: static figures, folded solutions, the run-it-live note under its
    title."""
    nb = web_outputs(copy.deepcopy(nb))
    site_links(nb, lang)
    fold_solutions(nb, lang.words)
    solution = f"{lang.solutions}/{path.name}"
    student = f"{lang.notebooks}/{path.name}"
    note = nbformat.v4.new_markdown_cell(banner(lang, solution, student, commands, fast))
    note.id = "rlvr-site-run-live"
    nb.cells.insert(split_title(nb), note)
    return nb


def site_links(nb: nbformat.NotebookNode, lang: Language) -> None:
    """Relative links written for the notebook's folder in the repository ('../../docs/' from solutions/zh_CN/)
    made right for the site, where every edition's notebooks sit one folder below its docs/."""
    up = "](" + "../" * len(Path(lang.solutions).parts)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace(up, "](../").replace(f"](../{lang.docs}/", "](../docs/")


# --------------------------------------------------------------------------- executing (once)


def source_stamp(path: Path, fast: bool) -> str:
    """What an executed copy was made from: the notebook's bytes and the mode."""
    return hashlib.sha256(Path(path).read_bytes() + (b"fast" if fast else b"full")).hexdigest()


def executed(path: Path, keep: Path, fast: bool, timeout: float, reuse: bool) -> nbformat.NotebookNode:
    """The notebook with outputs: run by `execute_notebook`, or (reuse) the copy kept by an earlier build."""
    stamp_file = keep.with_suffix(".stamp")
    stamp = source_stamp(path, fast)
    if reuse and keep.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        print(f"    reused {keep} (same notebook, same mode)", flush=True)
        return read_notebook(keep)
    nb = execute_notebook(path, fast=fast, strict=False, timeout=timeout)
    write_notebook(nb, keep)
    stamp_file.write_text(stamp)
    return nb


# --------------------------------------------------------------------------- one language's Sphinx source


def home_links(readme: str, lang: Language) -> str:
    """The README's links made right for the site: a notebook links to its page, the other edition's README to that
    edition's home page."""
    readme = readme.replace(f"]({lang.notebooks}/", "](solutions/")
    for other in EDITIONS.values():
        readme = re.sub(
            rf"\[([^\]]+)\]\({re.escape(other.readme)}\)", rf'<a href="../{other.code}/index.html">\1</a>', readme
        )
    return readme


def index_text(readme: str, notebooks: list[str], docs: list[str], words: dict) -> str:
    """The home page: the README, then the (hidden) tables of contents of the notebooks and the docs."""

    def toctree(caption: str, names: list[str]) -> str:
        """A hidden toctree block."""
        return "\n".join(["```{toctree}", ":hidden:", f":caption: {caption}", "", *names, "```", ""])

    return readme.rstrip("\n") + "\n\n" + toctree(words["notebooks"], notebooks) + "\n" + toctree(words["docs"], docs)


def stage_notebooks(root: Path, lang: Language, src: Path, keep: Path, opts: dict) -> tuple[list[Page], list[str]]:
    """Execute the language's solution notebooks into src/<solutions folder>/; return their pages and failures."""
    readme = readme_path(root, lang).read_text(encoding="utf-8")
    commands = quick_start(readme)
    paths = sorted((Path(root) / lang.solutions).glob(NOTEBOOK_PATTERN))
    pages, failures = [], []
    for number, path in enumerate(paths, start=1):
        print(f"[{lang.code} {number}/{len(paths)}] {lang.solutions}/{path.name} ...", flush=True)
        start = time.perf_counter()
        try:
            nb = executed(path, keep / path.name, opts["fast"], opts["timeout"], opts["reuse"])
        except Exception as error:  # noqa: BLE001 - report and go on with the next notebook
            failures.append(f"{lang.solutions}/{path.name}: {type(error).__name__}")
            print(f"    FAILED after {time.perf_counter() - start:.0f} s: {type(error).__name__}: {error}", flush=True)
            continue
        page = web_notebook(nb, lang, path, commands, opts["fast"])
        write_notebook(page, src / "solutions" / path.name)
        docname = f"solutions/{path.stem}"
        pages.append(Page(lang.code, docname, f"{lang.solutions}/{path.name}", count_figures(page)))
        print(f"    done in {time.perf_counter() - start:.0f} s", flush=True)
    return pages, failures


def stage(root: Path, lang: Language, src: Path, keep: Path, opts: dict) -> tuple[list[Page], list[str]]:
    """Write one language's Sphinx source folder (home page, notebooks, docs); return its pages and failures."""
    if src.exists():
        shutil.rmtree(src)
    (src / "docs").mkdir(parents=True)
    keep.mkdir(parents=True, exist_ok=True)
    pages, failures = stage_notebooks(root, lang, src, keep, opts)
    docs = []
    for path in doc_paths(root, lang):
        shutil.copy(path, src / "docs" / path.name)
        docs.append(Page(lang.code, f"docs/{path.stem}", str(path.relative_to(root))))
    readme = readme_path(root, lang)
    names = [page.docname for page in pages]
    text = index_text(
        home_links(readme.read_text(encoding="utf-8"), lang), names, [d.docname for d in docs], lang.words
    )
    (src / "index.md").write_text(text, encoding="utf-8")
    home = Page(lang.code, "index", str(readme.relative_to(root)))
    return [home, *pages, *docs], failures


def site_title(root: Path) -> str:
    """The README's first heading (the course's name)."""
    first = next(
        line
        for line in readme_path(root, EDITIONS[SOURCE_LANGUAGE]).read_text(encoding="utf-8").splitlines()
        if line.startswith("# ")
    )
    return first[2:].split(":")[0].strip()


SEARCH_SUMMARY = (  # Sphinx 8's search summary (searchtools.js), singular and plural
    "Search finished, found one page matching the search query.",
    "Search finished, found ${resultCount} pages matching the search query.",
)


def search_catalogue(lang: Language, locale: Path) -> Path | None:
    """Sphinx's JavaScript catalogue of the language with the search summary added (Sphinx 8 reworded it; its Chinese
    catalogue has only the old wording), written as locale/<code>/LC_MESSAGES/sphinx.js; returns `locale`, or None
    when the language needs no catalogue of its own."""
    import sphinx

    found = lang.words.get("search_found")
    shipped = Path(sphinx.__file__).parent / "locale" / lang.code / "LC_MESSAGES" / "sphinx.js"
    if not found or not shipped.is_file():
        return None
    text = shipped.read_text(encoding="utf-8")
    start, end = text.index("{"), text.rindex("}") + 1
    catalogue = json.loads(text[start:end])
    catalogue["messages"].setdefault(SEARCH_SUMMARY[0], [found, found])
    target = locale / lang.code / "LC_MESSAGES" / "sphinx.js"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text[:start] + json.dumps(catalogue, ensure_ascii=False, indent=4) + text[end:], encoding="utf-8")
    return locale


def theme_catalogue(lang: Language, locale: Path) -> Path | None:
    """The theme's words its own catalogue leaves untranslated (lang.words["theme"]), as a Sphinx message catalogue
    locale/<code>/LC_MESSAGES/sphinx.mo, read before the theme's; returns `locale`, or None when there are none."""
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo

    words = lang.words.get("theme")
    if not words:
        return None
    catalog = Catalog(locale=lang.code)
    for english, translated in words.items():
        catalog.add(english, translated)
    target = locale / lang.code / "LC_MESSAGES" / "sphinx.mo"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as handle:
        write_mo(handle, catalog)
    return locale


def write_conf(src: Path, lang: Language, title: str, all_pages: dict[str, list[str]]) -> None:
    """conf.py, the language switch's template, the site's CSS and (where needed) its search and theme words, for
    one language."""
    settings = {"language": lang.code, "title": title, "pages": all_pages}
    written = [search_catalogue(lang, src / "_locale"), theme_catalogue(lang, src / "_locale")]
    if any(folder is not None for folder in written):
        settings["locale_dirs"] = [str((src / "_locale").resolve())]
    (src / "conf.py").write_text(CONF_TEMPLATE.format(code=lang.code, settings=settings), encoding="utf-8")
    (src / "_templates").mkdir(exist_ok=True)
    (src / "_templates" / "language-switch.html").write_text(SWITCH_TEMPLATE, encoding="utf-8")
    (src / "_templates" / "rlvr-toggle-sidebar.html").write_text(TOGGLE_TEMPLATE, encoding="utf-8")
    (src / "_static").mkdir(exist_ok=True)
    (src / "_static" / "rlvr-site.css").write_text(SITE_CSS, encoding="utf-8")


# --------------------------------------------------------------------------- Sphinx settings (read by conf.py)


def language_links(code: str, pagename: str, pages: dict[str, list[str]]) -> list[dict]:
    """The switch's entries on one page: each language, linking to the same page there (else to its home page)."""
    up = "../" * (pagename.count("/") + 1)
    links = []
    for other in pages:
        target = pagename if pagename in pages[other] else "index"
        links.append(
            {
                "label": EDITIONS[other].label,
                "html_lang": other.replace("_", "-"),
                "href": f"{up}{other}/{target}.html",
                "current": other == code,
            }
        )
    return links


def chinese_search():
    """Sphinx's Chinese search (jieba's words in the index) with a query splitter that finds them in a phrase."""
    from sphinx.search.zh import SearchChinese

    class SearchChineseWords(SearchChinese):
        """Chinese search whose query box splits a run of Han characters into the index's words."""

        js_splitter_code = CHINESE_QUERY_SPLITTER_JS

    return SearchChineseWords


def sphinx_settings(settings: dict) -> dict:
    """The conf.py values of one language's site (settings: language, title, and every language's page names)."""
    code, pages = settings["language"], settings["pages"]

    def add_links(app, pagename, templatename, context, doctree):
        """html-page-context: the language switch's links for this page."""
        context["rlvr_languages"] = language_links(code, pagename, pages)
        context["rlvr_switch_label"] = EDITIONS[code].words["switch"]
        context["rlvr_toggle_sidebar"] = EDITIONS[code].words["toggle_sidebar"]

    def setup(app):
        """Connect the language switch (and, for Chinese, the query splitter)."""
        app.connect("html-page-context", add_links)
        app.add_css_file("rlvr-site.css")
        if code.startswith("zh"):
            app.add_search_language(chinese_search())

    return {
        "project": settings["title"],
        "author": "",  # no "By Author name not set" in the footer
        "html_title": settings["title"],
        "language": code,
        "root_doc": "index",
        "extensions": ["myst_nb", "sphinx-mathjax-offline"],  # the latter copies MathJax 3 into _static/mathjax
        "exclude_patterns": ["_build", "**.ipynb_checkpoints"],
        "templates_path": ["_templates"],
        "html_static_path": ["_static"],
        "html_theme": "sphinx_book_theme",
        "html_theme_options": {
            "home_page_in_toc": True,
            "show_navbar_depth": 1,
            "article_header_start": ["rlvr-toggle-sidebar.html"],
            "article_header_end": ["language-switch.html", "article-header-buttons.html"],
            "use_download_button": True,
            "search_bar_text": EDITIONS[code].words["search_bar"],
        },
        "html_copy_source": True,
        "html_last_updated_fmt": None,
        "myst_enable_extensions": ["dollarmath", "amsmath", "colon_fence"],
        "myst_heading_anchors": 3,
        "myst_dmath_double_inline": True,  # $$...$$ inside a paragraph or list item, as Jupyter shows it
        "nb_execution_mode": "off",  # executed by coursetools.execute before the build
        "nb_render_markdown_format": "myst",  # a cell's Markdown output gets the same math as the narrative
        "nb_mime_priority_overrides": [("html", WIDGET_VIEW, None)],  # the static PNG, never an empty widget view
        "nb_ipywidgets_js": {},  # no widget manager from a CDN
        "suppress_warnings": ["mystnb.unknown_mime_type", "misc.highlighting_failure"],
        "setup": setup,
        "locale_dirs": settings.get("locale_dirs", []),  # Sphinx reads a sphinx.js here before its own
    }


# --------------------------------------------------------------------------- building


def run_sphinx(src: Path, out: Path) -> int:
    """sphinx-build -b html src out (a fresh build); returns its exit code."""
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-d", str(src / "_doctrees"), str(src), str(out)]
    return subprocess.run(cmd, check=False).returncode


def write_redirect(out: Path, code: str) -> None:
    """build/site/index.html: sends the reader to the first language's home page."""
    target = f"{code}/index.html"
    (out / "index.html").write_text(
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={target}">'
        f'<title>RLVR</title></head><body><a href="{target}">{target}</a></body></html>\n',
        encoding="utf-8",
    )


def build(
    root: Path,
    out: Path,
    languages: list[str] | None = None,
    fast: bool = False,
    timeout: float = DEFAULT_RENDER_TIMEOUT,
    reuse: bool = False,
) -> Site:
    """Execute the notebooks of each language and build the site under `out` (one folder per language)."""
    root, out = Path(root).resolve(), Path(out).resolve()
    languages = languages or available_languages(root)
    work = out.parent / f"{out.name}-src"
    opts = {"fast": fast, "timeout": timeout, "reuse": reuse}
    pages, failures, staged = [], [], {}
    for code in languages:
        lang = EDITIONS[code]
        keep = work / "executed" / ("fast" if fast else "full") / code
        lang_pages, lang_failures = stage(root, lang, work / code, keep, opts)
        pages += lang_pages
        failures += lang_failures
        staged[code] = [page.docname for page in lang_pages]
    out.mkdir(parents=True, exist_ok=True)
    for code in languages:
        write_conf(work / code, EDITIONS[code], site_title(root), staged)
        print(f"[{code}] sphinx-build -> {out / code}", flush=True)
        if run_sphinx(work / code, out / code) != 0:
            failures.append(f"sphinx-build of {code}")
    write_redirect(out, languages[0])
    return Site(out, languages, pages, failures)


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for `python -m coursetools site`."""
    parser = argparse.ArgumentParser(prog="python -m coursetools site", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: this checkout)")
    parser.add_argument("--out", type=output_folder, help="output folder (default: <root>/build/site)")
    parser.add_argument(
        "--languages", nargs="+", choices=list(EDITIONS), help="editions to build (default: those whose files exist)"
    )
    parser.add_argument("--fast", action="store_true", help="execute in fast mode (RLVR_FAST=1) instead of full size")
    parser.add_argument("--timeout", type=float, default=DEFAULT_RENDER_TIMEOUT, help="seconds per notebook")
    parser.add_argument(
        "--reuse", action="store_true", help="reuse notebooks an earlier build executed (same notebook file and mode)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m coursetools site`; returns the exit code."""
    args = build_parser().parse_args(argv)
    root = Path(args.root or default_root()).resolve()
    missing = [code for code in args.languages or [] if not has_edition(root, code)]
    if missing:
        print(f"error: no solution notebooks for {', '.join(missing)} in {root}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    site = build(root, args.out or root / "build" / "site", args.languages, args.fast, args.timeout, args.reuse)
    for failure in site.failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print(f"site: {site.out / 'index.html'} ({len(site.pages)} pages, {time.perf_counter() - start:.0f} s)")
    return 1 if site.failures else 0


if __name__ == "__main__":
    sys.exit(main())
