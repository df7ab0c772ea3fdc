"""The course website (`python -m coursetools site`), read in headless Chromium with the network cut off.

The site is built from the fast-mode render of every edition whose files exist (English today; Chinese once
solutions/zh_CN/ exists) and served from 127.0.0.1; every request to another host is blocked and counted as a
failure. Every page must load with zero failed requests and no script error, every formula must be typeset by the
MathJax copied into the site (no raw `$`, no MathJax error), every figure a notebook drew must be on its page, search
must find a word on the page it comes from, and the language switch must land on the same page. A tiny bilingual
course proves the Chinese search and the switch now, and planted problems (a CDN script, raw `$`, a broken formula, a
missing figure) prove the checks fail.

Run with:  python -m pytest -m site -o addopts=""   (needs the [site] and [browser] extras and Debian's chromium)
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest

from coursetools import site

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "build" / "screenshots" / "site"
CHROMIUM = os.environ.get("RLVR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_HOSTS = ("127.0.0.1",)
REAL_LANGUAGES = site.available_languages(ROOT)

# The page's text outside code, outputs and typeset math: a `$` or `\(` there is math MathJax did not typeset.
PAGE_REPORT_JS = """() => {
  const article = document.querySelector('article') || document.body;
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight, .cell_output .output';
  const raw = [];
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest(skip)) continue;
    // a pair of $ (a lone $ is a character, e.g. the task's end-of-answer token), or \\( \\[ MathJax left alone
    if (/\\$[^$]*\\$|\\\\\\(|\\\\\\[/.test(node.textContent)) raw.push(node.textContent.trim().slice(0, 80));
  }
  const formulas = [...article.querySelectorAll('.math')];
  const images = [...article.querySelectorAll('img')];
  return {
    raw,
    formulas: formulas.length,
    untypeset: formulas.filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 80)),
    // a TeX error, or an undefined macro (MathJax's noundefined package writes its name in red)
    errors: [...article.querySelectorAll('mjx-merror, [data-mjx-error], mjx-container [style*="color: red"]')]
      .map(e => (e.getAttribute('data-mjx-error') || e.closest('mjx-container').getAttribute('aria-label')
                 || e.textContent).slice(0, 80)),
    outputImages: article.querySelectorAll('.cell_output img').length,
    broken: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src').slice(0, 80)),
  };
}"""
WAIT_FOR_MATHJAX_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  return Boolean(window.MathJax && MathJax.version);
}"""


@dataclass
class PageReport:
    """What one page did in the browser."""

    url: str
    failed: list[str] = field(default_factory=list)  # blocked, failed or >= 400 requests
    script_errors: list[str] = field(default_factory=list)
    mathjax: bool = False
    raw: list[str] = field(default_factory=list)
    formulas: int = 0
    untypeset: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    outputImages: int = 0  # noqa: N815 - the name the page's JavaScript reports
    broken: list[str] = field(default_factory=list)

    def problems(self, figures: int | None = None) -> list[str]:
        """Everything wrong with the page (figures: the images its notebook's outputs hold)."""
        found = [f"request failed: {url}" for url in self.failed]
        found += [f"script error: {text}" for text in self.script_errors]
        found += [f"raw math text: {text!r}" for text in self.raw]
        found += [f"formula not typeset: {text!r}" for text in self.untypeset]
        found += [f"MathJax error: {text!r}" for text in self.errors]
        found += [f"figure not shown: {src}" for src in self.broken]
        if self.formulas and not self.mathjax:
            found.append("MathJax did not load")
        if figures is not None and self.outputImages != figures:
            found.append(f"{self.outputImages} figures on the page, its notebook drew {figures}")
        return found


# --------------------------------------------------------------------------- serving and browsing


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder without logging each request."""

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        """Say nothing."""


@contextmanager
def serve(folder: Path):
    """Serve `folder` on a free port of 127.0.0.1; yields the base URL."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def offline_browser():
    """Headless Debian Chromium (fresh profile) whose requests outside 127.0.0.1 are aborted and recorded."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="rlvr-site-chromium-")
    blocked: list[str] = []

    def only_local(route):
        """Let requests to this machine through; abort and record the others."""
        if urlsplit(route.request.url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        context.route("**/*", only_local)
        context.blocked = blocked
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


def open_page(context, url: str, screenshot: Path | None = None) -> PageReport:
    """Load a page, wait for MathJax, and report its failed requests, script errors, math and images."""
    report = PageReport(url)
    page = context.new_page()
    page.on("requestfailed", lambda request: report.failed.append(f"{request.url} ({request.failure})"))
    page.on(
        "response",
        lambda response: response.status >= 400 and report.failed.append(f"{response.url} {response.status}"),
    )
    page.on("pageerror", lambda error: report.script_errors.append(str(error)))
    try:
        page.goto(url, wait_until="load")
        report.mathjax = page.evaluate(WAIT_FOR_MATHJAX_JS)
        page.wait_for_load_state("networkidle")
        for key, value in page.evaluate(PAGE_REPORT_JS).items():
            setattr(report, key, value)
        if screenshot:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=False)
    finally:
        page.close()
    return report


def search_results(context, base: str, language: str, term: str) -> list[str]:
    """The pages (docnames) the site's search lists for `term`, in order; the summary it prints above them must be in
    the page's language."""
    page = context.new_page()
    try:
        page.goto(f"{base}/{language}/search.html?q={term}", wait_until="load")
        page.wait_for_function("() => (document.querySelector('.search-summary') || {}).textContent", timeout=30_000)
        hrefs = page.eval_on_selector_all("#search-results ul.search li > a", "links => links.map(a => a.href)")
        summary = page.inner_text(".search-summary")
    finally:
        page.close()
    if language.startswith("zh"):
        assert "Search finished" not in summary and "搜索完成" in summary, summary
    prefix = f"{base}/{language}/"
    pages = [href.split("?")[0].split("#")[0][len(prefix) :].removesuffix(".html") for href in hrefs]
    return list(dict.fromkeys(pages))  # a page and its sections are listed apart


def switch_language(context, base: str, page: site.Page, target: str) -> str:
    """Click the switch's link to `target` on a page; return where it lands (relative to the site's root)."""
    tab = context.new_page()
    try:
        tab.goto(f"{base}/{page.url}", wait_until="load")
        label = site.EDITIONS[target].label
        tab.click(f".rlvr-language-switch a:text-is('{label}')")
        tab.wait_for_load_state("load")
        return tab.url[len(base) + 1 :]
    finally:
        tab.close()


# --------------------------------------------------------------------------- what to search for


def search_language(code: str):
    """Sphinx's own search language for an edition (how its index splits and stems words)."""
    if code.startswith("zh"):
        from sphinx.search.zh import SearchChinese

        return SearchChinese({})
    from sphinx.search.en import SearchEnglish

    return SearchEnglish({})


def prose_words(page: site.Page, src: Path) -> list[str]:
    """The words of a page's Markdown (its narrative: no math, code, HTML or link targets), in order."""
    path = src / page.language / f"{page.docname}.ipynb"
    if path.exists():
        cells = nbformat.read(str(path), as_version=4).cells
        text = "\n".join(c.source for c in cells if c.cell_type == "markdown" and c.id != "rlvr-site-run-live")
    else:
        text = (src / page.language / f"{page.docname}.md").read_text(encoding="utf-8")
    text = re.sub(r"\$[^$]*\$|`[^`]*`|<[^>]*>|\]\([^)]*\)", " ", text)
    words = search_language(page.language).split(text)
    if page.language.startswith("zh"):
        return [w for w in words if re.fullmatch(r"[\u4e00-\u9fff]{2,}", w)]
    return [w for w in words if re.fullmatch(r"[A-Za-z]{7,}", w)]


def article_stems(built: Path, page: site.Page) -> set[str]:
    """The stems of every word in a built page's article (code and outputs included: search indexes them too)."""
    html = (built / page.url).read_text(encoding="utf-8")
    article = html[html.find("<article") : html.rfind("</article>")]
    text = unescape(re.sub(r"<[^>]+>", " ", re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", article)))
    lang = search_language(page.language)
    return {lang.stem(word) for word in lang.split(text)}


def unique_word(page: site.Page, pages: list[site.Page], built: Path, src: Path) -> str:
    """The first word of a page's prose whose stem is in no word of another page of its edition (search also lists
    pages whose words merely contain a query's stem): search must list that page alone."""
    lang = search_language(page.language)
    others = set().union(*(article_stems(built, p) for p in pages if p.language == page.language and p != page))
    haystack = "\n".join(others)
    for word in prose_words(page, src):
        if lang.stem(word) not in haystack:
            return word
    raise AssertionError(f"{page.url}: no word of its own to search for")


# --------------------------------------------------------------------------- a tiny bilingual course


def notebook(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """A notebook from (kind, source) pairs."""
    make = {"md": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb = nbformat.v4.new_notebook(cells=[make[kind](source) for kind, source in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


PLOT = "import matplotlib.pyplot as plt\nplt.plot([0, 1, 4])\nplt.show()"
SOLVED = "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\nprint(double(2))"
TINY_EN = [
    (
        "md",
        "# 01 · A tiny notebook\n\nThe policy $\\pi_\\theta$ and its gradient, a quaternion of facts:\n\n"
        "$$\\nabla_\\theta J = \\mathbb{E}[A \\nabla_\\theta \\log \\pi_\\theta]$$\n\n"
        "See [the notation](../docs/notation.md).",
    ),
    ("code", PLOT),
    ("code", SOLVED),
    ("md", "<!-- BEGIN SOLUTION -->\n**Your answer:** twice $x$.\n<!-- END SOLUTION -->"),
]
TINY_ZH = [
    (
        "md",
        "# 01 · 一个小笔记本\n\n策略 $\\pi_\\theta$ 与它的策略梯度：\n\n"
        "$$\\nabla_\\theta J = \\mathbb{E}[A \\nabla_\\theta \\log \\pi_\\theta]$$\n\n强化学习只需要一个验证器。",
    ),
    ("code", PLOT),
    ("code", SOLVED),
    ("md", "### BEGIN SOLUTION\n**你的回答：** $x$ 的两倍。\n### END SOLUTION"),
]
TINY_README = "# {title}: tiny\n\n```bash\npip install -e . && jupyter lab notebooks/\n```\n\n{text}\n"


def write_tiny_course(root: Path) -> Path:
    """A repository with one notebook in English and in Chinese, both READMEs and a notation page."""
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text(TINY_README.format(title="Tiny course", text="The home page."), encoding="utf-8")
    zh_readme = TINY_README.format(title="小课程", text="这是首页。")
    (root / "README.zh_CN.md").write_text(zh_readme, encoding="utf-8")
    (root / "docs" / "notation.md").write_text("# Notation\n\n$\\rho$ is the ratio.\n", encoding="utf-8")
    (root / "solutions" / "zh_CN").mkdir(parents=True)
    nbformat.write(notebook(TINY_EN), str(root / "solutions" / "01_tiny.ipynb"))
    nbformat.write(notebook(TINY_ZH), str(root / "solutions" / "zh_CN" / "01_tiny.ipynb"))
    return root


@pytest.fixture(scope="module")
def tiny_site(tmp_path_factory):
    """The tiny bilingual course, built in fast mode: (site, its Sphinx source folder)."""
    root = write_tiny_course(tmp_path_factory.mktemp("tiny-course"))
    built = site.build(root, root / "build" / "site", fast=True, timeout=300)
    assert not built.failures, built.failures
    return built, root / "build" / "site-src"


@pytest.fixture(scope="module")
def real_site():
    """The course's own site, built from the fast-mode render of every edition whose files exist."""
    out = Path(tempfile.mkdtemp(prefix="rlvr-site-")) / "site"
    built = site.build(ROOT, out, REAL_LANGUAGES, fast=True)
    assert not built.failures, built.failures
    yield built, out.parent / "site-src"
    shutil.rmtree(out.parent, ignore_errors=True)


# --------------------------------------------------------------------------- quick checks of the pieces (no browser)


def test_markdown_solution_is_folded_and_its_markers_dropped():
    """Both marker styles become one closed <details> block around the answer."""
    for begin, end in (
        ("<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"),
        ("### BEGIN SOLUTION", "### END SOLUTION"),
    ):
        folded = site.fold_markdown_solutions(f"Q?\n{begin}\n**Your answer:** yes\n{end}", "Our solution")
        assert "BEGIN" not in folded and "END" not in folded
        assert folded.index("<details") < folded.index("**Your answer:** yes") < folded.index("</details>")
        label = site.EDITIONS["en"].words["your_answer"]
        ours = site.fold_markdown_solutions(f"Q?\n{begin}\n**Your answer:** yes, **because**\n{end}", "Ours", label)
        assert "Your answer" not in ours and "\nyes, **because**\n" in ours


def test_solution_code_on_a_page_has_no_marker_lines():
    code = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"
    assert site.without_markers(code) == "def f():\n    return 1"


def test_switch_links_to_the_same_page_or_the_home_page():
    """From en/solutions/01.html, zh_CN's link is ../../zh_CN/solutions/01.html; a page it lacks sends home."""
    pages = {"en": ["index", "solutions/01", "docs/extra"], "zh_CN": ["index", "solutions/01"]}
    links = {link["label"]: link for link in site.language_links("en", "solutions/01", pages)}
    assert links["中文"]["href"] == "../../zh_CN/solutions/01.html" and links["English"]["current"]
    home = {link["label"]: link["href"] for link in site.language_links("en", "docs/extra", pages)}
    assert home["中文"] == "../../zh_CN/index.html"


def test_a_translated_notebooks_links_reach_the_docs_in_the_repository_and_on_the_site():
    """solutions/zh_CN/ is one folder deeper than solutions/; on the site both sit one folder below docs/."""
    from coursetools.translate import one_folder_deeper

    english = "See [the notation](../docs/notation.md) and [a paper](https://arxiv.org/abs/2402.03300)."
    moved = one_folder_deeper(english)
    assert "](../../docs/notation.md)" in moved and "](https://arxiv.org" in moved
    for code, text in (("en", english), ("zh_CN", moved)):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
        site.site_links(nb, site.EDITIONS[code])
        assert nb.cells[0].source == english, code


def test_the_home_page_links_each_notebook_to_its_page_and_the_other_readme_to_its_home():
    """Both READMEs link every notebook of their table; on the site those links reach the notebook's page."""
    for code, other in (("en", "zh_CN"), ("zh_CN", "en")):
        lang = site.EDITIONS[code]
        readme = (ROOT / lang.readme).read_text(encoding="utf-8")
        home = site.home_links(readme, lang)
        for path in sorted((ROOT / lang.notebooks).glob("0*.ipynb")):
            assert f"]({lang.notebooks}/{path.name})" in readme, (code, path.name)
            assert f"](solutions/{path.name})" in home, (code, path.name)
        assert f"]({lang.notebooks}/" not in home
        assert f'<a href="../{other}/index.html">' in home and f"]({site.EDITIONS[other].readme})" not in home


def test_a_translated_docs_page_replaces_its_english_one_on_the_site(tmp_path):
    """docs/zh_CN/notation.md stands in for docs/notation.md on the Chinese site (the other pages stay English), and a
    Chinese notebook's link to it lands on the site's docs/ folder."""
    for name in ("notation.md", "trl_mapping.md", "authoring.md"):
        (tmp_path / "docs").mkdir(exist_ok=True)
        (tmp_path / "docs" / name).write_text("# x\n")
    (tmp_path / "docs" / "zh_CN").mkdir()
    (tmp_path / "docs" / "zh_CN" / "notation.md").write_text("# 记号\n")
    paths = site.doc_paths(tmp_path, site.EDITIONS["zh_CN"])
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == ["docs/zh_CN/notation.md", "docs/trl_mapping.md"]
    assert len(site.doc_paths(tmp_path, site.EDITIONS["en"])) == 3  # the authors' guide: English edition only
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("见[记号](../../docs/zh_CN/notation.md)。")])
    site.site_links(nb, site.EDITIONS["zh_CN"])
    assert nb.cells[0].source == "见[记号](../docs/notation.md)。"


def test_each_page_gets_the_readme_commands():
    """The run-it-live note quotes the README's Quick start block, names the solution and the student notebook."""
    commands = site.quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "jupyter lab" in commands and "pytest" in commands
    note = site.banner(site.EDITIONS["en"], "solutions/03_grpo.ipynb", "notebooks/03_grpo.ipynb", commands, True)
    assert commands in note and "solutions/03_grpo.ipynb" in note and "notebooks/03_grpo.ipynb" in note


# --------------------------------------------------------------------------- the tiny bilingual course in the browser


@pytest.mark.site
def test_tiny_course_chinese_pages_have_the_theme_words_in_chinese(tiny_site):
    """The theme's switcher label, left English by its own zh catalogue, reads 跟随系统 on every Chinese page."""
    built, _ = tiny_site
    pages = sorted((built.out / "zh_CN").rglob("*.html"))
    assert pages and all("System Settings" not in p.read_text(encoding="utf-8") for p in pages)
    assert all("Search..." not in p.read_text(encoding="utf-8") for p in pages)
    home = (built.out / "zh_CN" / "index.html").read_text(encoding="utf-8")
    assert "跟随系统" in home and "搜索……" in home and "Color mode" not in home
    assert "Toggle primary sidebar" not in home and 'title="显示或隐藏侧栏"' in home


@pytest.mark.site
def test_tiny_course_pages_load_offline_with_math_and_figures(tiny_site):
    """Both editions of the tiny course: zero failed requests, every formula typeset, the figure shown."""
    built, _ = tiny_site
    with serve(built.out) as base, offline_browser() as context:
        for page in built.pages:
            shot = SCREENSHOTS / "tiny" / f"{page.url.replace('/', '_')}.png"
            report = open_page(context, f"{base}/{page.url}", shot)
            assert not report.problems(page.figures if page.docname.startswith("solutions/") else None), page.url
            assert report.formulas > 0 or page.docname == "index", f"{page.url}: no formula was found to check"
        assert not context.blocked


@pytest.mark.site
@pytest.mark.parametrize("language, term", [("en", "quaternion"), ("zh_CN", "策略梯度"), ("zh_CN", "验证器")])
def test_tiny_course_search_finds_the_word_on_its_page(tiny_site, language, term):
    """Search (Sphinx's, with jieba for Chinese) lists the notebook for a word only it uses."""
    built, _ = tiny_site
    with serve(built.out) as base, offline_browser() as context:
        assert search_results(context, base, language, term) == ["solutions/01_tiny"]


@pytest.mark.site
def test_tiny_course_switch_lands_on_the_same_notebook(tiny_site):
    """English -> 中文 and back, from the notebook and from the home page."""
    built, _ = tiny_site
    with serve(built.out) as base, offline_browser() as context:
        for page in built.pages:
            other = "zh_CN" if page.language == "en" else "en"
            assert switch_language(context, base, page, other) == f"{other}/{page.docname}.html"


@pytest.mark.site
@pytest.mark.parametrize(
    "plant, expected",
    [
        ('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js"></script>', "request failed"),
        ("<p>costs $x^2$ to read</p>", "raw math text"),
        ('<p><span class="math notranslate nohighlight">\\(\\undefinedmacro{x}\\)</span></p>', "MathJax error"),
        ('<p><span class="math notranslate nohighlight">\\(\\frac{1}\\)</span></p>', "MathJax error"),
        ('<div class="cell_output"><img src="../_images/missing.png"></div>', "figure"),
    ],
)
def test_checks_fail_on_a_planted_problem(tiny_site, tmp_path, plant, expected):
    """A CDN script, raw `$`, a broken formula or a missing figure planted in a page makes its check fail."""
    built, _ = tiny_site
    out = shutil.copytree(built.out, tmp_path / "site")
    page = next(p for p in built.pages if p.url == "en/solutions/01_tiny.html")
    html = (out / page.url).read_text(encoding="utf-8")
    (out / page.url).write_text(html.replace("</article>", plant + "</article>", 1), encoding="utf-8")
    with serve(out) as base, offline_browser() as context:
        problems = open_page(context, f"{base}/{page.url}").problems(page.figures)
    assert any(expected in problem for problem in problems), problems


# --------------------------------------------------------------------------- the course's own site


@pytest.mark.site
@pytest.mark.parametrize("language", REAL_LANGUAGES)
def test_every_page_loads_offline_with_math_and_figures(real_site, language):
    """Every HTML page of an edition (search and index pages too): zero failed requests, no script error, math
    typeset; a notebook's page shows every figure its outputs hold."""
    built, _ = real_site
    figures = {p.url: p.figures for p in built.pages if p.language == language and p.docname.startswith("solutions/")}
    assert figures, "no notebook pages were built"
    urls = sorted(str(path.relative_to(built.out)) for path in (built.out / language).rglob("*.html"))
    urls = [url for url in urls if not any(part.startswith("_") for part in Path(url).parts)]
    assert set(figures) <= set(urls)
    problems = []
    with serve(built.out) as base, offline_browser() as context:
        for url in urls:
            report = open_page(context, f"{base}/{url}", SCREENSHOTS / f"{url.replace('/', '_')}.png")
            problems += [f"{url}: {p}" for p in report.problems(figures.get(url))]
            if url in figures and (not report.formulas or not figures[url]):
                problems.append(f"{url}: {report.formulas} formulas, {figures[url]} figures: nothing checked")
        problems += [f"blocked: {url}" for url in context.blocked]
    assert not problems, "\n".join(problems)


@pytest.mark.site
@pytest.mark.parametrize("language", REAL_LANGUAGES)
def test_search_finds_each_notebooks_own_word(real_site, language):
    """For each notebook, a word of its prose that no other page holds: search lists that notebook, and only it."""
    built, src = real_site
    pages = [p for p in built.pages if p.language == language]
    wrong = {}
    with serve(built.out) as base, offline_browser() as context:
        for page in (p for p in pages if p.docname.startswith("solutions/")):
            term = unique_word(page, pages, built.out, src)
            found = search_results(context, base, language, term)
            if found != [page.docname]:
                wrong[f"{page.docname} ({term})"] = found
    assert not wrong, json.dumps(wrong, ensure_ascii=False, indent=1)


@pytest.mark.site
@pytest.mark.parametrize("language", REAL_LANGUAGES)
def test_language_switch_lands_on_the_same_notebook(real_site, language):
    """Every page's switch leads to the same page in each other edition, or to its home page when that edition has no
    such page yet (needs a second edition)."""
    built, _ = real_site
    if len(built.languages) < 2:
        pytest.skip("one edition so far: tests/test_site.py's tiny course checks the switch")
    docnames = {code: {p.docname for p in built.pages if p.language == code} for code in built.languages}
    with serve(built.out) as base, offline_browser() as context:
        for page in (p for p in built.pages if p.language == language):
            for other in (code for code in built.languages if code != language):
                target = page.docname if page.docname in docnames[other] else "index"  # not translated yet: home
                assert switch_language(context, base, page, other) == f"{other}/{target}.html"
