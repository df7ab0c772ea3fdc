"""The sliders, tested in a real browser: JupyterLab in headless Chromium driven by Playwright.

For each student notebook (a copy, so nothing is written back into the repository): open it in JupyterLab, run all
cells in fast mode, then check that no cell errored, that every panel the kernel displayed is rendered with all its
sliders, that moving each analytic slider changes its plot (and how long that takes, also on the way back to a value
shown before), and that one Run button starts a run whose progress bar appears and finishes. Screenshots go to
build/screenshots/. The kernels use a private checkpoint cache holding only the default warm-up model, so a rerun
finds the same untrained configurations.

Run with:  python -m pytest -m browser -o addopts="" -s
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "build" / "screenshots"
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
TOKEN = "rlvr-browser-test"
RUN_ALL_TIMEOUT_S = 240
LATENCIES_MS: list[tuple[float, float, str]] = []  # (in the page, seen by Playwright, "notebook: slider 'label'")
BACK_LATENCIES_MS: list[tuple[float, float]] = []  # the same, moving back to a value the panel has shown before
ACTIVE = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook shown (JupyterLab keeps other tabs hidden)


CHINESE = ROOT / "notebooks" / "zh_CN" / "06_when_rlvr_breaks.ipynb"  # the translated notebook the test opens
CHINESE_TIMEOUT_S = 900  # run alone (-k chinese), it trains the gallery's fast runs itself; after 06 it loads them


def notebooks() -> list[Path]:
    """The student notebooks (or the ones named in RLVR_BROWSER_NOTEBOOKS, comma-separated)."""
    override = os.environ.get("RLVR_BROWSER_NOTEBOOKS")
    if override:
        return [Path(p).resolve() for p in override.split(",")]
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def free_port() -> int:
    """A free localhost TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(url: str, timeout: float = 90) -> None:
    """Poll the Jupyter server's status endpoint until it answers."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not start at {url} within {timeout} s")


@pytest.fixture(scope="module")
def workdir():
    """A temporary folder holding copies of the notebooks (JupyterLab saves into it, never into the repo)."""
    folder = Path(tempfile.mkdtemp(prefix="rlvr-browser-"))
    for nb in notebooks():
        shutil.copy(nb, folder / nb.name)
    if CHINESE.exists():
        (folder / "zh_CN").mkdir()
        shutil.copy(CHINESE, folder / "zh_CN" / CHINESE.name)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def private_cache(workdir: Path) -> Path:
    """The kernels' checkpoint cache: empty but for the default warm-up model (copied from the user's cache when it
    is there), so every run a panel offers is untrained however often the test has run on this machine."""
    from rlvr.sft import SFTConfig, cache_entry

    folder = workdir.parent / f"{workdir.name}-cache"
    folder.mkdir(parents=True)
    warm_up = cache_entry(SFTConfig()).path()
    if warm_up.exists():
        shutil.copy(warm_up, folder / warm_up.name)
    return folder


@pytest.fixture(scope="module")
def server(workdir):
    """JupyterLab on a free localhost port with a token, kernels in fast mode; stopped when done, pass or fail."""
    port = free_port()
    settings = workdir.parent / f"{workdir.name}-lab-settings"  # outside root_dir: not listed in the file browser
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))  # no news toast
    cache = private_cache(workdir)
    env = {
        **os.environ,
        "RLVR_FAST": "1",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "RLVR_CACHE_DIR": str(cache),
    }
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={workdir}",
        "--ServerApp.open_browser=False",
        "--allow-root",
        "--LabApp.news_url=",
        "--ServerApp.disable_check_xsrf=True",
    ]
    SCREENSHOTS.parent.mkdir(parents=True, exist_ok=True)
    log = open(SCREENSHOTS.parent / "jupyter-browser-test.log", "w")  # the server's log, kept for debugging
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(url)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(settings, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture(scope="module")
def browser_context():
    """Headless Debian Chromium with a fresh profile, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="rlvr-chromium-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        yield context
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


def run_all_cells(page, timeout: float = RUN_ALL_TIMEOUT_S) -> None:
    """Run > Run All Cells, then wait until every code cell shows an execution count and none is running."""
    page.click("div.lm-MenuBar-itemLabel:text-is('Run')")
    page.click("li.lm-Menu-item:has-text('Run All Cells')")
    deadline = time.time() + timeout
    while time.time() < deadline:
        done = page.evaluate("""() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                                .every(e => /\\[\\d+\\]/.test(e.textContent))""")
        if done:
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"cells still queued or running after {timeout:g} s")


def save_and_read(page, path: Path) -> dict:
    """Save the notebook from the browser and read the saved JSON."""
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1500)
    return json.loads(path.read_text())


def error_outputs(nb: dict) -> list[str]:
    """'cell N: Ename: value' for every error output of a saved notebook."""
    return [
        f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]


def displayed_panels(nb: dict) -> list[tuple[str, int]]:
    """(kind, number of controls) of every panel the kernel displayed, from the static-preview captions."""
    panels = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            text = "".join(out.get("data", {}).get("text/plain", ""))
            for kind in ("AnalyticPanel", "TrainingPanel"):
                head = kind + ": static preview at "  # then one "description: value" per control, "; " between
                if text.startswith(head):
                    panels.append((kind, len(text[len(head) :].split("; "))))
    return panels


# Times a slider move inside the page: from the keydown event to the first frame after the new image is decoded
# (what a user sees). Playwright's own round trips (sending the key press, polling for the change) stay out of it.
WATCH_IMAGE_JS = """(img) => {
  const probe = {down: null, shown: null, src: img.src};
  window.__rlvrProbe = probe;
  document.addEventListener('keydown', () => { if (probe.down === null) probe.down = performance.now(); },
                            {capture: true, once: true});
  const observer = new MutationObserver(() => {
    if (img.src === probe.src) return;
    observer.disconnect();
    img.decode().catch(() => null).then(() => requestAnimationFrame(() => { probe.shown = performance.now(); }));
  });
  observer.observe(img, {attributes: true, attributeFilter: ['src']});
}"""


def press_and_time(page, panel, slider, key: str) -> tuple[float, float] | None:
    """Press a key on a slider handle; (ms in the page, ms seen by Playwright) until the new plot is shown, or None
    if the plot did not change."""
    image = panel.locator("img").first
    before_png = image.screenshot()
    slider.locator(".noUi-handle").first.focus()
    image.evaluate(WATCH_IMAGE_JS)
    start = time.perf_counter()
    page.keyboard.press(key)
    try:
        page.wait_for_function("() => window.__rlvrProbe.shown !== null", polling="raf", timeout=10_000)
    except Exception:
        return None
    outside = 1000 * (time.perf_counter() - start)
    inside = page.evaluate("() => window.__rlvrProbe.shown - window.__rlvrProbe.down")
    page.wait_for_timeout(200)
    return (inside, outside) if image.screenshot() != before_png else None


def move_slider(page, panel, slider) -> tuple[tuple[float, float] | None, str]:
    """Move a slider to one end, else to the other (a value past a cap may draw the same picture); returns
    (press_and_time's answer, the key pressed last)."""
    for key in ("End", "Home"):
        latency = press_and_time(page, panel, slider, key)
        if latency is not None:
            return latency, key
    return None, key


def move_away_and_back(page, panel, slider, key: str) -> tuple[float, float] | None:
    """From the end `key` moved the slider to, go to the other end and back; press_and_time of the way back (a
    setting the panel has shown before), or None if the other end draws the same picture."""
    other = {"End": "Home", "Home": "End"}[key]
    if press_and_time(page, panel, slider, other) is None:  # the same picture both ends: just go back
        press_on(page, slider, key)
        settle(page, panel)
        return None
    return press_and_time(page, panel, slider, key)


def settle(page, panel) -> str:
    """Wait until the kernel has handled a slider move (its indicator is idle again); the panel's text."""
    page.wait_for_timeout(300)
    page.wait_for_selector(f"{ACTIVE} .jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
    page.wait_for_timeout(300)
    return panel.inner_text()


def press_on(page, slider, key: str) -> bool:
    """Press a key on a slider's handle; True if its value (the readout) changed."""
    readout = slider.locator(".widget-readout").first
    before = readout.inner_text()
    slider.locator(".noUi-handle").first.focus()
    page.keyboard.press(key)
    page.wait_for_timeout(100)
    return readout.inner_text() != before


def move_to_a_configuration_not_run(page, panel) -> None:
    """Move one slider of a training panel one notch from its default (cheapest change first) until the panel
    says 'not run yet' (the panel looks in memory and on disk); fail if every neighbour is already cached."""
    for slider in reversed(panel.locator(".widget-slider").all()):  # the last control is the cheapest to change
        for there, back in (("ArrowLeft", "ArrowRight"), ("ArrowRight", "ArrowLeft")):
            if not press_on(page, slider, there):  # already at that end
                continue
            if "not run yet" in settle(page, panel):
                return
            press_on(page, slider, back)
            settle(page, panel)
    raise AssertionError(f"every one-notch neighbour of the default is already cached: {panel.inner_text()[:300]!r}")


def click_one_run(page) -> None:
    """Move the first training panel to a configuration not run yet, click Run: the bar must move and finish."""
    panel = page.locator(f"{ACTIVE} .rlvr-training").first
    move_to_a_configuration_not_run(page, panel)
    button = panel.locator("button:has-text('Run')").first
    bar = panel.locator(".progress-bar").first
    button.click()
    try:
        # 'trained N run(s)' is the status line written after the run is stored and the final plot drawn
        page.wait_for_function(
            "el => ['trained ', '⚠', 'no training needed'].some(t => el.innerText.includes(t))",
            arg=panel.element_handle(),
            timeout=300_000,
        )
        page.wait_for_timeout(1000)
    except Exception as error:
        raise AssertionError(f"the run did not finish; the panel shows: {panel.inner_text()[:400]!r}") from error
    assert "⚠" not in panel.inner_text(), f"the run reported an error: {panel.inner_text()[:300]}"
    assert "no training needed" not in panel.inner_text(), "the panel said 'not run yet' but read the run from a cache"
    assert bar.evaluate("el => el.style.width") in ("100%", ""), "the progress bar did not reach its end"


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_notebook_in_jupyterlab(notebook, server, workdir, browser_context):
    page = browser_context.new_page()
    # a workspace of its own per notebook, so no other notebook's tab (and panels) is open in the page
    page.goto(f"{server}/lab/workspaces/{notebook.stem}/tree/{notebook.name}?reset&token={TOKEN}")
    page.wait_for_selector(".jp-Notebook", timeout=90_000)
    page.wait_for_selector(".jp-CodeCell", timeout=90_000)
    page.wait_for_timeout(2000)  # let the kernel connect before Run All
    run_all_cells(page)
    saved = save_and_read(page, workdir / notebook.name)

    errors = error_outputs(saved)
    assert not errors, f"{notebook.name}: cells raised errors: {errors}"
    assert all(c.get("execution_count") for c in saved["cells"] if c["cell_type"] == "code"), "not every cell ran"
    expected = displayed_panels(saved)
    assert expected, f"{notebook.name}: no slider panel was displayed"
    page.wait_for_timeout(1000)
    assert "Error displaying widget" not in page.content(), "a widget failed to render (model not found?)"
    rendered = page.locator(f"{ACTIVE} .rlvr-panel")
    assert rendered.count() == len(expected), f"{len(expected)} panels displayed, {rendered.count()} rendered"
    for i, (kind, n_controls) in enumerate(expected):
        panel = rendered.nth(i)
        assert ("rlvr-analytic" if kind == "AnalyticPanel" else "rlvr-training") in panel.get_attribute("class")
        assert panel.locator("img").count() >= 1, f"panel {i} ({kind}) shows no plot"
        assert panel.locator(".widget-inline-hbox, .widget-checkbox, .widget-dropdown").count() >= n_controls

    for panel in page.locator(f"{ACTIVE} .rlvr-analytic").all():
        panel.scroll_into_view_if_needed()
        for slider in panel.locator(".widget-slider").all():
            latency, key = move_slider(page, panel, slider)
            label = slider.inner_text().split("\n")[0]
            assert latency is not None, f"{notebook.name}: moving slider '{label}' did not change its plot"
            LATENCIES_MS.append((*latency, f"{notebook.stem}: slider '{label}'"))
            back = move_away_and_back(page, panel, slider, key)
            if back is not None:
                BACK_LATENCIES_MS.append(back)
            print(
                f"  {notebook.stem}: slider '{label}' -> new plot shown after {latency[0]:.0f} ms "
                f"(Playwright: {latency[1]:.0f} ms)" + (f"; back at that value: {back[0]:.0f} ms" if back else "")
            )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}.png"), full_page=True)

    if page.locator(f"{ACTIVE} .rlvr-training").count():
        page.locator(f"{ACTIVE} .rlvr-training").first.scroll_into_view_if_needed()
        click_one_run(page)
        page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}-after-run.png"), full_page=True)
    page.close()


# Draws a character in the page's sans-serif font and a private-use character no font has (a box): the same pixels
# mean the browser has no font for Chinese and shows boxes.
SHOWS_GLYPH_JS = """(ch) => {
  const canvas = document.createElement('canvas'); canvas.width = canvas.height = 48;
  const ctx = canvas.getContext('2d');
  const draw = (c) => { ctx.clearRect(0, 0, 48, 48); ctx.font = '36px sans-serif'; ctx.fillText(c, 4, 40);
                        return ctx.getImageData(0, 0, 48, 48).data.join(','); };
  return draw(ch) !== draw('\\uE000');
}"""


def chinese_title() -> str:
    """The Chinese notebook's first heading, from its catalogue (what the page must show)."""
    from coursetools import po

    catalog = po.read_catalogue(ROOT / "i18n" / "zh_CN" / f"{CHINESE.stem}.po")
    return next(m.string for m in catalog if m.id and m.id.startswith("06 "))


@pytest.mark.skipif(not CHINESE.exists(), reason="no Chinese notebook yet")
def test_chinese_notebook_renders(server, workdir, browser_context):
    """A translated notebook in JupyterLab: it runs clean, its Markdown, widgets and checker box speak Chinese, and
    the browser has glyphs for the Chinese characters (no boxes)."""
    page = browser_context.new_page()
    page.goto(f"{server}/lab/workspaces/zh06/tree/zh_CN/{CHINESE.name}?reset&token={TOKEN}")
    page.wait_for_selector(".jp-CodeCell", timeout=90_000)
    page.wait_for_timeout(2000)
    run_all_cells(page, CHINESE_TIMEOUT_S)
    saved = save_and_read(page, workdir / "zh_CN" / CHINESE.name)
    assert not error_outputs(saved), f"cells raised errors: {error_outputs(saved)}"
    page.wait_for_timeout(1000)
    assert "Error displaying widget" not in page.content()
    title = page.locator(f"{ACTIVE} .jp-RenderedMarkdown h1").first
    title.scroll_into_view_if_needed()  # JupyterLab hides cells far from the view
    assert title.text_content().strip().rstrip("¶").strip() == chinese_title()
    page.locator(f"{ACTIVE} .jp-Cell").nth(15).scroll_into_view_if_needed()  # the panel's cell: rendered when seen
    panel = page.locator(f"{ACTIVE} .rlvr-panel", has_text="故障运行").first  # the dropdown's label, in Chinese
    panel.wait_for(state="visible", timeout=60_000)  # a busy machine renders the widget's view late
    assert panel.locator("img").count() >= 1  # its figure
    assert "未作答" in " ".join(page.locator(f"{ACTIVE} .jp-OutputArea").all_text_contents())  # the checker's box
    assert page.evaluate(SHOWS_GLYPH_JS, "故"), "the browser has no font for Chinese: it would show boxes"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"zh_CN-{CHINESE.stem}.png"), full_page=True)
    page.close()


BROKEN_MS = 5000  # a slider whose plot takes seconds to change is broken, not slow (the speed goal: a benchmark)


def latency_report() -> list[str]:
    """The slider latencies the tests above measured, as lines: median and max in the page and as Playwright sees
    them, the slowest move, and the moves back to a value shown before."""
    inside, outside, places = zip(*LATENCIES_MS)
    slowest = max(range(len(inside)), key=inside.__getitem__)
    lines = [
        f"slider key press -> new plot shown, over {len(inside)} moves: median {statistics.median(inside):.0f} ms, "
        f"max {max(inside):.0f} ms in the page; as Playwright sees it (adds its round trips): median "
        f"{statistics.median(outside):.0f} ms, max {max(outside):.0f} ms",
        f"slowest move: {places[slowest]}, {inside[slowest]:.0f} ms in the page",
    ]
    if BACK_LATENCIES_MS:
        back = [inside for inside, _ in BACK_LATENCIES_MS]
        lines.append(
            f"back at a value shown before (panels remember their last images), over {len(back)} moves: "
            f"median {statistics.median(back):.0f} ms, max {max(back):.0f} ms in the page"
        )
    return lines


def test_every_slider_moved_shows_a_new_plot():
    """Every analytic slider the tests above moved showed a new plot, each within BROKEN_MS; prints the latencies.
    Whether they meet the authoring guide's goal (median <= 150 ms, every move <= 300 ms) is
    benchmarks/bench_slider_latency.py's to say: a timed assertion fails on a busy machine, not on slow code."""
    assert LATENCIES_MS, "no analytic slider was moved"
    print("\n" + "\n".join(latency_report()))
    slow = [f"{place}: {inside:.0f} ms" for inside, _outside, place in LATENCIES_MS if not inside <= BROKEN_MS]
    assert not slow, f"no new plot within {BROKEN_MS} ms: {slow}"
