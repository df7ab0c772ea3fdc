"""Interactive panels for the notebooks: slider panels for cheap curves, Run-button panels for training.

Every panel is a plain Python object that BUILDS widgets; the notebook displays it (last line of a cell).
Tests drive the same callbacks from code with `panel.set(...)` and `panel.click_run()`.

How the panels work, and why:

* Redraw. Each panel owns ONE matplotlib Figure (`matplotlib.figure.Figure` with an Agg canvas, no pyplot,
  no ipympl). A redraw calls the author's draw function on it, encodes it as PNG and assigns the bytes to an
  `ipywidgets.Image`. Measured in JupyterLab 4.6 + chromium, two-line plot, 700x350 px: kernel time 41 ms
  per redraw and 119 ms from key press to new image in the browser. `Output` + `clear_output(wait=True)` +
  `display(fig)` took 71 ms and 188 ms. The Image widget also needs no Output-widget capture (so
  `panel.set()` from another cell and training loops update it too), never flickers, and works when
  pyplot was never imported (display() of a pyplot-free Figure shows only its text repr).
* Reuse. A draw function starts with `fresh_axes(fig, ...)`; when the grid is the same as last time it gets the
  figure's own axes back, emptied, with their tick objects, which matplotlib would otherwise re-create on every
  draw (25-40% of a redraw). `exercise_panel_edges` and `redraw_differences` check that a redraw draws exactly
  the picture a new figure would (nothing left over). The bandit panels go further and keep their artists.
* Memory. An AnalyticPanel made with `remember=N` keeps the images of its last N control settings: dragging a
  slider back over values it has shown costs no drawing at all. Only for draw functions that do nothing but draw
  (a panel that also fills a table, or draws a student's function, must redraw every time).
* Static fallback. `_repr_mimebundle_` returns the widget view PLUS `image/png` of the figure as it is when
  the panel is displayed (at the default values in a fresh run). A live JupyterLab shows only the widget.
  A saved notebook reopened in JupyterLab (widgets gone) shows the PNG. nbconvert's HTML exporter shows
  the widget view only if the notebook's metadata holds that widget's saved state, and the PNG otherwise.
  Careful: nbclient and `jupyter nbconvert --execute` SAVE widget state by default. Then the HTML has
  widget placeholders that need JavaScript from a CDN, and no <img>. So execute with
  `NotebookClient(nb, store_widget_state=False)` (CLI: `--ExecutePreprocessor.store_widget_state=False`),
  or call `drop_widget_state(nb)` before exporting.
* Garbage collection. A kernel that has run a notebook holds ~340k objects that Python's cyclic garbage collector
  tracks (torch, matplotlib, IPython, the notebook's data). A full collection scans them all (216-298 ms in notebook
  01's kernel) and runs inside whatever code allocates the object that makes it due: in the browser test it was the
  first slider move of notebook 01 (kernel 481 ms from the slider message to the image sent, 299 ms of it that
  collection; the moves after it ~110 ms). So a panel built in a kernel calls `settle_heap()`: it collects once, in
  the cell that builds the panel (where a wait is expected), and freezes what is left (`gc.freeze`), so later full
  collections scan only objects made after it (0.0 ms right after, instead of 216 ms). The price: a reference
  cycle among objects alive at that moment is not freed if it becomes garbage later (until `gc.unfreeze()`);
  reference counting still frees everything else.
* Training runs synchronously inside the Run-button click handler. Progress and live-plot updates are
  widget state changes that the kernel sends immediately, so JupyterLab shows them during the run
  (checked in chromium: the bar and the plot move while the handler is still running). To stop a run,
  interrupt the kernel; the panel catches that, keeps earlier results and re-enables Run.
"""

from __future__ import annotations

import base64
import functools
import gc
import html
import io
import math
import statistics
import time
import traceback
import warnings
from collections import OrderedDict
from typing import Any, Callable

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rlvr.config import pick
from rlvr.experiments.common import seconds_text
from rlvr.i18n import _, join_clauses, ngettext, prepare_figures, text_width

prepare_figures()  # a CJK font for figures when the language (RLVR_LANG, the locale) is Chinese

DEFAULT_FIGSIZE = (7.0, 3.5)
DPI = 100
MARGINS = {"left": 0.1, "right": 0.97, "bottom": 0.16, "top": 0.9, "wspace": 0.3, "hspace": 0.45}
SLOW_DRAW_SECONDS = 0.2
REMEMBERED_IMAGES = 32  # images an AnalyticPanel made with remember=REMEMBERED_IMAGES keeps (~100 kB each)
# titles at a fixed height: matplotlib otherwise measures every tick label on each draw to lift titles over a top
# x-axis, which none of our plots has (same image, faster redraws: benchmarks/bench_panels.py)
FIXED_TITLES = {"axes.titley": 1.0}
STYLE = {"description_width": "initial"}
ERROR_COLOR = "#c62828"
NOTE_COLOR = "#666666"
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


# ----------------------------------------------------------------------------- controls


def float_slider(name, min, max, step, value, description=None, continuous_update=True):
    """A FloatSlider labelled `description` (default: `name`) in the common style."""
    return widgets.FloatSlider(
        value=value,
        min=min,
        max=max,
        step=step,
        description=description or name,
        readout_format=readout_format(step),
        continuous_update=continuous_update,
        style=STYLE,
        layout=slider_layout(),
    )


def int_slider(name, min, max, step=1, value=None, description=None, continuous_update=True):
    """An IntSlider labelled `description` (default: `name`) in the common style."""
    return widgets.IntSlider(
        value=min if value is None else value,
        min=min,
        max=max,
        step=step,
        description=description or name,
        continuous_update=continuous_update,
        style=STYLE,
        layout=slider_layout(),
    )


def log_slider(name, min, max, value, description=None, steps_per_decade=4, continuous_update=True):
    """A FloatLogSlider from `min` to `max` (real values, e.g. 1e-4 to 1e-1) for learning rates and the like."""
    return widgets.FloatLogSlider(
        value=value,
        base=10,
        min=math.log10(min),
        max=math.log10(max),
        step=1 / steps_per_decade,
        description=description or name,
        readout_format=".1e",
        continuous_update=continuous_update,
        style=STYLE,
        layout=slider_layout(),
    )


def choice_slider(options, value=None, description="", continuous_update=True):
    """A SelectionSlider over `options` (numbers or strings) in the common style."""
    options = list(options)
    return widgets.SelectionSlider(
        options=options,
        value=options[0] if value is None else value,
        description=description,
        continuous_update=continuous_update,
        style=STYLE,
        layout=slider_layout(),
    )


def toggle_buttons(name, options, value=None, description=None):
    """ToggleButtons over a few named choices (an algorithm, an optimizer) in the common style: one click per choice
    instead of a slider. `options` are values, or (label, value) pairs; panels see the value."""
    options = list(options)
    values = [option[1] if isinstance(option, tuple) else option for option in options]
    if value is not None and value not in values:
        raise ValueError(f"{name}: value {value!r} is not one of the options {values}")
    return widgets.ToggleButtons(
        options=options,
        value=values[0] if value is None else value,
        description=description or name,
        style={**STYLE, "button_width": "auto"},
    )


def dropdown(name, options, value=None, description=None):
    """A Dropdown over many named choices (a gallery of runs) in the common style; `options` as for toggle_buttons."""
    options = list(options)
    values = [option[1] if isinstance(option, tuple) else option for option in options]
    if value is not None and value not in values:
        raise ValueError(f"{name}: value {value!r} is not one of the options {values}")
    return widgets.Dropdown(
        options=options, value=values[0] if value is None else value, description=description or name, style=STYLE
    )


def checkbox(name, value=False, description=None):
    """A Checkbox labelled `description` (default: `name`) in the common style."""
    return widgets.Checkbox(value=value, description=description or name, indent=False, style=STYLE)


def readout_format(step) -> str:
    """Readout with as many decimals as the step has (0.05 -> '.2f', 0.25 -> '.2f', 2 -> '.0f')."""
    decimals = f"{step:.6f}".rstrip("0").split(".")[1]
    return f".{len(decimals)}f"


def slider_layout() -> widgets.Layout:
    """Width of every slider: room for a readable description and a usable track."""
    return widgets.Layout(width="400px")


def controls_box(controls: dict) -> widgets.Box:
    """The controls in rows that wrap when the notebook is narrow."""
    return widgets.Box(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))


def panel_layout(rows: list, title: str | None) -> widgets.VBox:
    """The common look: optional bold title, then the given rows (controls, status line, plot)."""
    header = [widgets.HTML(f"<b>{html.escape(title)}</b>")] if title else []
    return widgets.VBox(header + rows)


def set_continuous_update(controls: dict, on: bool) -> None:
    """Switch continuous_update on or off for every control that has it."""
    for control in controls.values():
        if control.has_trait("continuous_update"):
            control.continuous_update = on


# ----------------------------------------------------------------------------- figures and messages


def new_figure(figsize=DEFAULT_FIGSIZE) -> Figure:
    """A pyplot-free matplotlib Figure with an Agg canvas (nothing is displayed automatically)."""
    figure = Figure(figsize=figsize, dpi=DPI)
    FigureCanvasAgg(figure)
    return figure


def fresh_axes(fig: Figure, nrows=1, ncols=1, **subplot_kw):
    """Empty axes for a draw (its first line): the figure's own axes, emptied, when the last draw asked for the same
    grid; otherwise the figure is cleared and new axes are made with margins that fit titles and axis labels.

    Reusing the axes keeps their tick objects: re-creating ticks was 25-40% of a panel's redraw time.
    """
    grid = (nrows, ncols, repr(sorted(subplot_kw.items())))
    state = figure_state(fig)
    axes = state.get("axes")
    if axes is not None and state["grid"] == grid and fig.axes == list(np.ravel(axes)) and not has_units(fig):
        empty_figure(fig)
        return axes
    fig.clear()
    if fig.get_layout_engine() is None:
        fig.subplots_adjust(**MARGINS)
    with matplotlib.rc_context(FIXED_TITLES):
        axes = fig.subplots(nrows, ncols, **subplot_kw)
    state.update(axes=axes, grid=grid)
    return axes


def label_margin(fig: Figure, labels, fontsize: float | None = None, gap: float = 14.0) -> float:
    """The left margin (a fraction of the figure's width) that shows the widest of `labels` as y tick labels, in any
    language (a Chinese label is wider than its English source): measured with the figure's renderer, plus `gap`
    points for the ticks."""
    from matplotlib.font_manager import FontProperties

    prop = FontProperties(size=fontsize or matplotlib.rcParams["ytick.labelsize"])
    get_renderer = getattr(fig.canvas, "get_renderer", None)
    if get_renderer is None:  # a canvas without a renderer to ask (vector backends): ~5.5 points a column
        widest = max(text_width(label) for label in labels) * 5.5 * prop.get_size_in_points() / 10 * fig.dpi / 72
    else:
        renderer = get_renderer()
        widest = max(renderer.get_text_width_height_descent(label, prop, ismath=False)[0] for label in labels)
    return (widest + gap * fig.dpi / 72) / (fig.get_figwidth() * fig.dpi)


def figure_state(fig: Figure) -> dict:
    """The one place a figure keeps what its draws reuse (its axes and grid, a plot's artists): a dict on the figure,
    gone with it."""
    if not hasattr(fig, "_rlvr_state"):
        fig._rlvr_state = {}
    return fig._rlvr_state


def has_units(fig: Figure) -> bool:
    """True if an axis of `fig` has units, e.g. the categories of barh(names, ...): they cannot be emptied."""
    return any(axis.units is not None for ax in fig.axes for axis in (ax.xaxis, ax.yaxis))


def empty_figure(fig: Figure) -> None:
    """Remove what a draw added (artists, legends, titles, labels, figure texts) and undo its axis settings
    (scales, limits, tick locators), keeping the axes and their tick objects."""
    for text in list(fig.texts):
        text.remove()
    for legend in list(fig.legends):
        legend.remove()
    if fig.get_suptitle():
        fig.suptitle("")
    if fig.get_layout_engine() is None:
        fig.subplots_adjust(**MARGINS)
    for ax in fig.axes:
        empty_axes(ax)


def empty_axes(ax) -> None:
    """One axes as a new one would be, except that its tick objects are kept (see empty_figure)."""
    for container in list(ax.containers):  # bar groups (legend entries), with their patches
        container.remove()
    for artist in [*ax.lines, *ax.patches, *ax.collections, *ax.texts, *ax.images, *ax.artists, *ax.tables]:
        artist.remove()
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    for loc in ("left", "center", "right"):
        ax.set_title("", loc=loc)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_xscale("linear")  # also the default tick locators and formatters
    ax.set_yscale("linear")
    ax.grid(False)
    ax.set_visible(True)
    ax.set_prop_cycle(None)
    ax.set_autoscale_on(True)
    ax.relim()
    ax.margins(matplotlib.rcParams["axes.xmargin"], matplotlib.rcParams["axes.ymargin"])


def figure_png(fig: Figure) -> bytes:
    """The figure rendered as PNG bytes, made for speed (benchmarks/bench_panels.py): zlib level 1 (a third less
    encoding time than the default, 2% larger) and text without font hinting (~15% less rendering time; glyphs a
    little softer)."""
    buffer = io.BytesIO()
    with matplotlib.rc_context({"text.hinting": "no_hinting"}):
        fig.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
    return buffer.getvalue()


def draw_placeholder(fig: Figure, text: str) -> None:
    """An empty figure with a grey centred note (used before the first training run)."""
    fig.clear()
    fig.text(0.5, 0.5, text, ha="center", va="center", color=NOTE_COLOR, wrap=True)


def settle_heap() -> bool:
    """In a Jupyter kernel: collect garbage now and take the objects still alive out of later full collections
    (`gc.freeze`), so no slider move pays a scan of the whole heap (see the module docstring); True if it did.
    Elsewhere (tests, scripts) it does nothing and returns False."""
    if not in_notebook():
        return False
    gc.collect()
    gc.freeze()
    return True


def on_grid(control):
    """A control's value; a FloatSlider's rounded to its step's decimals (its arithmetic leaves 8.9e-16 for 0)."""
    if isinstance(control, widgets.FloatSlider) and control.step:
        decimals = max(0, -math.floor(math.log10(control.step))) + 2
        return round(control.value, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0
    return control.value


def format_values(values: dict) -> str:
    """'beta=0.1, lr=0.001': control values as a short human label."""
    return ", ".join(f"{name}={format_value(value)}" for name, value in values.items())


def format_value(value) -> str:
    """A float without slider round-off noise (0.30000000000000004 -> 0.3), anything else as str()."""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def config_key(values: dict) -> str:
    """Cache key of a configuration: names sorted, floats without round-off noise."""
    return ",".join(f"{name}={format_value(values[name])}" for name in sorted(values))


def one_line_error(exc: BaseException) -> str:
    """'ValueError: bad value' on one line, at most 200 characters."""
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
    return text if len(text) <= 200 else text[:197] + "..."


def red_html(text: str) -> str:
    """A one-line red message for the status line."""
    return f'<span style="color:{ERROR_COLOR}">&#9888; {html.escape(text)}</span>'


def grey_html(text: str) -> str:
    """A one-line grey note for the status line."""
    return f'<span style="color:{NOTE_COLOR}">{html.escape(text)}</span>'


def with_static_png(bundle: dict, png: bytes | None, caption: str) -> dict:
    """Add the static image/png fallback (and a caption as text/plain) to a widget mimebundle."""
    bundle = dict(bundle or {})
    if png:
        bundle["image/png"] = base64.b64encode(png).decode("ascii")
    bundle["text/plain"] = caption
    return bundle


def drop_widget_state(nb) -> Any:
    """Remove saved widget state from an executed notebook so HTML export shows the static PNGs."""
    nb.metadata.pop("widgets", None)
    return nb


# ----------------------------------------------------------------------------- shared panel base


class Panel:
    """What both panels share: controls, one figure, an Image showing it, a status line, the static fallback."""

    kind = "Panel"

    def __init__(self, controls: dict, figsize=DEFAULT_FIGSIZE, defaults: dict | None = None):
        self.controls = dict(controls)
        for name, value in (defaults or {}).items():
            self.controls[name].value = value
        self.defaults = self.values
        self.figure = new_figure(figsize)
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.status = widgets.HTML()
        self.error: str | None = None
        self.last_traceback: str | None = None
        self._holding = False  # set() is changing several controls: refresh once at the end
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

    @property
    def values(self) -> dict:
        """Current value of every control, by name (a float slider's value on its own grid: 0.0, not 8.9e-16)."""
        return {name: on_grid(control) for name, control in self.controls.items()}

    def refresh(self) -> bool:
        """Show the panel for the current values (each panel kind says how); True if it could."""
        raise NotImplementedError

    def _on_change(self, change) -> None:
        """Slider callback: refresh unless set() is changing several controls at once."""
        if not self._holding:
            self.refresh()

    def set(self, **values) -> bool:
        """Change controls from code (the same path as a slider move, one refresh); returns refresh()'s answer."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise KeyError(f"unknown control(s) {sorted(unknown)}; this panel has {list(self.controls)}")
        self._holding = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._holding = False
        return self.refresh()

    def reset(self) -> bool:
        """Move every control back to its default value."""
        return self.set(**self.defaults)

    def png(self) -> bytes:
        """The PNG the panel is showing now (after a failed draw: the last good one)."""
        return bytes(self.image.value)

    def show_png(self) -> None:
        """Render the figure and show it (an AnalyticPanel may instead show an image it remembers)."""
        self.image.value = figure_png(self.figure)

    def report_failure(self, exc: BaseException, where: str) -> None:
        """Show a one-line red error, keep the full traceback in `last_traceback`, keep the last good image."""
        self.error = f"{where}: {one_line_error(exc)}"
        self.last_traceback = traceback.format_exc()
        self.status.value = red_html(self.error)

    def shown_values(self) -> str:
        """'answer: wrong think-first answer, ...; beta (KL weight): 0.1': every control as the learner reads it (its
        description, and a drop-down's shown option rather than its key), for the plain-text view."""
        parts = []
        for name, control in self.controls.items():
            label = getattr(control, "description", "") or name
            value = on_grid(control)
            if getattr(control, "options", None) and getattr(control, "label", None):  # a drop-down or a choice slider
                value = control.label
            elif isinstance(value, bool):
                value = _("yes") if value else _("no")
            parts.append(_("{label}: {value}").format(label=label, value=format_value(value)))
        return join_clauses(parts)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Live widget for JupyterLab + static image/png for HTML export (see the module docstring)."""
        bundle = self.view._repr_mimebundle_(include=include, exclude=exclude)
        caption = _("{panel}: static preview at {values}").format(panel=self.kind, values=self.shown_values())
        return with_static_png(bundle, self.png(), caption)


# ----------------------------------------------------------------------------- analytic panel


class AnalyticPanel(Panel):
    """Sliders on top, one figure below; every control change redraws it with draw(fig, **values)."""

    kind = "AnalyticPanel"

    def __init__(
        self,
        draw: Callable,
        controls: dict,
        figsize=DEFAULT_FIGSIZE,
        continuous_update: bool | None = None,
        title: str | None = None,
        remember: int = 0,
    ):
        super().__init__(controls, figsize)
        self.draw_fn = draw
        self.draw_count = 0
        self.last_draw_seconds: float | None = None
        if remember < 0:
            raise ValueError(f"remember must be >= 0 (0 = always draw), got {remember}")
        self.remember = remember  # images kept for settings shown before (0 = always draw)
        self.remembered: OrderedDict[str, bytes] = OrderedDict()  # config_key(values) -> PNG, oldest first
        if continuous_update is not None:
            set_continuous_update(self.controls, continuous_update)
        self.view = panel_layout([controls_box(self.controls), self.status, self.image], title)
        self.view.add_class("rlvr-panel").add_class("rlvr-analytic")  # found by the browser test
        self.redraw()
        settle_heap()

    def refresh(self) -> bool:
        """Redraw at the current values; True if the draw worked."""
        return self.redraw()

    def redraw(self) -> bool:
        """Draw at the current values and show it (or show the image remembered for them); on failure show a red
        line and keep the last image."""
        values = self.values
        key = config_key(values)
        start = time.perf_counter()
        if key in self.remembered:
            self.remembered.move_to_end(key)
            self.image.value = self.remembered[key]
        else:
            try:
                self.draw_fn(self.figure, **values)
                self.show_png()
            except Exception as exc:
                self.report_failure(exc, _("draw failed at {values}").format(values=format_values(values)))
                return False
            self.draw_count += 1
            self.keep_image(key)
        self.last_draw_seconds = time.perf_counter() - start
        self.error = None
        slow = self.last_draw_seconds > SLOW_DRAW_SECONDS and self.draw_count > 1  # the first draw builds the layout
        slow_text = _("slow redraw: {seconds} s").format(seconds=f"{self.last_draw_seconds:.2f}")
        self.status.value = grey_html(slow_text) if slow else ""
        return True

    def keep_image(self, key: str) -> None:
        """Remember the image just shown for the settings `key`, forgetting the oldest beyond `remember`."""
        if self.remember > 0:
            self.remembered[key] = bytes(self.image.value)
            while len(self.remembered) > self.remember:
                self.remembered.popitem(last=False)


# ----------------------------------------------------------------------------- training panel


class TrainingPanel(Panel):
    """Controls + Run button + progress bar + live plot; finished runs are cached by their control values.

    run(**values, on_step=callback) -> result trains once; it should call on_step(step, total, history)
    with step = 1..total and `history` = whatever plot() can draw as a live curve.
    plot(fig, results, live) draws: `results` maps label -> result (the default run first), `live` is the
    running history or None. Moving the sliders never trains; only Run does.
    """

    kind = "TrainingPanel"

    def __init__(
        self,
        run: Callable,
        plot: Callable,
        controls: dict,
        defaults: dict | None = None,
        label: Callable[[dict], str] | None = None,
        default_result: Any = None,
        figsize=DEFAULT_FIGSIZE,
        update_every: int | None = None,
        show_all: bool = False,
        disk_cache: bool = False,
        load: Callable | None = None,
        save: Callable | None = None,
        title: str | None = None,
    ):
        super().__init__(controls, figsize, defaults)
        if disk_cache and (load is None or save is None):
            raise ValueError("disk_cache=True needs both load(key) and save(key, result)")
        self.run_fn, self.plot_fn, self.label_fn = run, plot, label or format_values
        self.update_every, self.show_all = update_every, show_all
        self.load, self.save = (load, save) if disk_cache else (None, None)
        self.cache: dict[str, Any] = {}
        self.cache_values: dict[str, dict] = {}
        self.running = False
        self.run_count = 0
        self.button = widgets.Button(description=_("Run"), button_style="primary", icon="play")
        self.progress = widgets.IntProgress(value=0, min=0, max=1, layout=widgets.Layout(width="240px"))
        self.progress_label = widgets.Label("")
        run_row = widgets.HBox([self.button, self.progress, self.progress_label])
        self.view = panel_layout([controls_box(self.controls), run_row, self.status, self.image], title)
        self.view.add_class("rlvr-panel").add_class("rlvr-training")  # found by the browser test
        self.button.on_click(lambda _button: self.click_run())
        if default_result is not None:
            self.store(self.defaults, default_result)
        else:
            self.try_disk(self.defaults)
        self.show_current()
        settle_heap()

    @property
    def results(self) -> dict:
        """Every finished run, label -> result, in the order they were run."""
        return {self.label_of(values): self.cache[key] for key, values in self.cache_values.items()}

    def label_of(self, values: dict) -> str:
        """The label of a configuration in plots ('(default)' appended for the default one)."""
        text = self.label_fn(values)
        return _("{label} (default)").format(label=text) if config_key(values) == config_key(self.defaults) else text

    def store(self, values: dict, result: Any) -> None:
        """Put a finished run into the in-memory cache."""
        key = config_key(values)
        self.cache[key] = result
        self.cache_values[key] = dict(values)

    def try_disk(self, values: dict) -> bool:
        """Load a configuration's result with the user's load(key) into the cache; True if found."""
        if self.load is None:
            return False
        try:
            result = self.load(config_key(values))
        except Exception:  # not saved (KeyError), or unreadable: Run trains it again
            return False
        if result is None:
            return False
        self.store(values, result)
        return True

    def shown_results(self) -> dict:
        """What the plot overlays: the default run, then the current run (or every run if show_all)."""
        default_key, current_key = config_key(self.defaults), config_key(self.values)
        keys = list(self.cache) if self.show_all else [default_key, current_key]
        ordered = [default_key] + [key for key in keys if key != default_key]
        return {self.label_of(self.cache_values[key]): self.cache[key] for key in ordered if key in self.cache}

    def draw(self, live: Any = None) -> None:
        """Plot the shown results (and the live run) and show the image; a failing plot shows a red line."""
        results = self.shown_results()
        try:
            if results or live is not None:
                self.plot_fn(self.figure, results, live)
            else:
                text = _("No runs yet: press Run.\nDefault: {values}").format(values=format_values(self.defaults))
                draw_placeholder(self.figure, text)
            self.show_png()
        except Exception as exc:
            self.report_failure(exc, _("plot failed"))

    def refresh(self) -> bool:
        """After a slider move or set(): show the run for these values; True if one is shown (never trains)."""
        return self.show_current()

    def show_current(self, note: str | None = None) -> bool:
        """Show the run for the current values (from memory or disk) instantly, or say it is not run yet; True if
        a run is shown. During a run it changes nothing (the live plot owns the figure)."""
        values = self.values
        if self.running:
            return config_key(values) in self.cache
        self.error = None
        cached = config_key(values) in self.cache or self.try_disk(values)
        self.status.value = grey_html(note or (_("cached result") if cached else _("not run yet: press Run")))
        self.draw()
        return cached

    def click_run(self) -> Any:
        """The Run button: train at the current values (default first if missing); return the result or None."""
        if self.running:
            return None
        values, runs_before, start = self.values, self.run_count, time.perf_counter()
        self.set_running(True)
        try:
            if config_key(self.defaults) not in self.cache:
                self.obtain(self.defaults, _("default run: "))
            result = self.obtain(values, "")
        except KeyboardInterrupt:
            self.fail(KeyboardInterrupt(_("stopped; previous results kept")), _("run interrupted"))
            return None
        except Exception as exc:
            self.fail(exc, _("run failed at {values}").format(values=format_values(values)))
            return None
        finally:
            self.set_running(False)
        trained = self.run_count - runs_before
        if not trained:
            self.progress_label.value = _("cached: no training needed")
        seconds = f"{time.perf_counter() - start:.1f}"
        self.show_current(
            _("trained {n} run(s) in {seconds} s").format(n=trained, seconds=seconds) if trained else None
        )
        return result

    def fail(self, exc: BaseException, where: str) -> None:
        """A run failed: red line, previous results redrawn without the half-finished live curve."""
        self.report_failure(exc, where)
        self.draw()

    def set_running(self, on: bool) -> None:
        """Disable the Run button and the controls while a run is going."""
        self.running = on
        self.button.disabled = on
        for control in self.controls.values():
            control.disabled = on

    def obtain(self, values: dict, prefix: str) -> Any:
        """The result for `values`: from memory, else from disk, else by training (then cached and saved)."""
        key = config_key(values)
        if key in self.cache or self.try_disk(values):
            return self.cache[key]
        result = self.train(values, prefix)
        self.store(values, result)
        if self.save is not None:
            self.save(key, result)
        return result

    def train(self, values: dict, prefix: str) -> Any:
        """Call run() once with a progress/live-plot callback; leave the bar full when it returns."""
        text = _("{prefix}training at {values} (interrupt the kernel to stop)")
        self.status.value = grey_html(text.format(prefix=prefix, values=format_values(values)))
        tracker = ProgressTracker(self, prefix)
        result = self.run_fn(**values, on_step=tracker)
        self.run_count += 1
        self.progress.value = self.progress.max
        seconds = f"{time.perf_counter() - tracker.start:.1f}"
        self.progress_label.value = _("{prefix}done in {seconds} s").format(prefix=prefix, seconds=seconds)
        return result


class ProgressTracker:
    """The on_step(step, total, history) callback of one training run: progress bar + live plot."""

    def __init__(self, panel: TrainingPanel, prefix: str = ""):
        self.panel, self.prefix = panel, prefix
        self.start = time.perf_counter()
        self.last_label_time = -1.0
        panel.progress.value = 0

    def __call__(self, step: int, total: int, history: Any = None) -> None:
        """Move the bar (at most every 0.05 s) and redraw the live plot every few steps."""
        now = time.perf_counter()
        if step >= total or now - self.last_label_time > 0.05:
            self.last_label_time = now
            self.panel.progress.max = max(1, int(total))
            self.panel.progress.value = min(int(step), int(total))
            text = _("{prefix}step {step}/{total}, {seconds} s")
            seconds = f"{now - self.start:.1f}"
            self.panel.progress_label.value = text.format(prefix=self.prefix, step=step, total=total, seconds=seconds)
        if history is not None and is_due(step, total, self.panel.update_every):
            self.panel.draw(live=history)


def is_due(step: int, total: int, every: int | None) -> bool:
    """True on every `every`-th step and the last one (default: about 20 frames per run, 2 in fast mode)."""
    every = every or max(1, total // pick(20, 2))
    return step % every == 0 or step >= total


# ----------------------------------------------------------------------------- checking panels


def exercise_panel_edges(
    panel: AnalyticPanel, max_seconds: float | None = None, require_change: bool = True
) -> list[str]:
    """Drive every control of an AnalyticPanel to its edges and middle; return the problems found (empty = fine).

    A problem is: a draw that raises, a warning during a draw (NaN/inf, log of 0, ...), a redraw that differs from
    a draw of the same values on a new figure (something of the previous draw was left over), a control whose
    lowest and highest value give the same picture (require_change), or (only when max_seconds is given, e.g. in a
    benchmark; tests never time) a median redraw slower than max_seconds.
    """
    defaults = panel.values
    problems, seconds = [], []
    for name, control in panel.controls.items():
        edges = edge_values(control)
        pictures = [try_values(panel, {**defaults, name: value}, problems, seconds) for value in edges]
        good = [picture for picture in pictures if picture is not None]
        if require_change and len(pictures) > 1 and len(good) == len(pictures) and good[0] == good[-1]:
            problems.append(f"{name}: the figure is the same at {edges[0]!r} and {edges[-1]!r}")
    for corner in (0, -1):
        try_values(panel, {name: edge_values(c)[corner] for name, c in panel.controls.items()}, problems, seconds)
    panel.set(**defaults)
    if max_seconds is not None and seconds and statistics.median(seconds) > max_seconds:
        problems.append(f"slow: median redraw {statistics.median(seconds):.3f} s > {max_seconds} s")
    return problems


def try_values(panel: AnalyticPanel, values: dict, problems: list, seconds: list) -> bytes | None:
    """Set `values` on the panel; append any problem; return the PNG if the draw worked."""
    label = format_values(values)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            drawn = panel.set(**values)
        except Exception as exc:
            problems.append(f"{label}: set() raised {one_line_error(exc)}")
            return None
    if not drawn:
        problems.append(panel.error)
        return None
    seconds.append(panel.last_draw_seconds)
    for warning in caught:
        if not issubclass(warning.category, (DeprecationWarning, PendingDeprecationWarning)):
            problems.append(f"{label}: {warning.category.__name__}: {warning.message}")
    try:
        fresh = fresh_png(panel.draw_fn, tuple(panel.figure.get_size_inches()), **values)
    except Exception as exc:
        problems.append(f"{label}: a draw on a new figure raised {one_line_error(exc)}")
        return None
    if not same_picture(panel.png(), fresh):
        problems.append(f"{label}: the redraw differs from a draw on a new figure (left over from the last draw?)")
    return panel.png()


def redraw_differences(draw: Callable, calls: list[tuple], figsize=DEFAULT_FIGSIZE) -> list[int]:
    """Draw draw(fig, *args) for each args of `calls` in turn on one figure, as a panel or a live plot redraws;
    return the indices of the calls whose picture differs from the same call on a new figure (left-over state)."""
    figure = new_figure(figsize)
    differ = []
    for index, args in enumerate(calls):
        draw(figure, *args)
        if not same_picture(figure_png(figure), fresh_png(draw, figsize, *args)):
            differ.append(index)
    return differ


JITTER = 16  # of 255: antialiasing differs by a few levels along a line redrawn through other limits; a left-over
# line, dot or text differs by far more


def same_picture(a: bytes, b: bytes) -> bool:
    """Two PNGs show the same picture: same size, no pixel differing by more than JITTER in any channel."""
    if a == b:
        return True
    from PIL import Image  # matplotlib's own dependency

    first, second = (np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"), dtype=np.int16) for png in (a, b))
    return first.shape == second.shape and int(np.abs(first - second).max()) <= JITTER


def fresh_png(draw: Callable, figsize, *args, **kwargs) -> bytes:
    """The PNG of draw(fig, *args, **kwargs) on a new figure of `figsize`; its warnings are silenced (the redraw it
    is compared with has reported them)."""
    figure = new_figure(figsize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        draw(figure, *args, **kwargs)
    return figure_png(figure)


def edge_values(control) -> list:
    """Values to try for one control: min, middle, max (every value of a short list; both checkbox states)."""
    if isinstance(control, (widgets.Checkbox, widgets.ToggleButton)):
        return [False, True]
    if hasattr(control, "_options_values"):
        return spread(list(control._options_values))
    if isinstance(control, widgets.FloatLogSlider):
        return [control.base**e for e in (control.min, middle(control.min, control.max, control.step), control.max)]
    if isinstance(control, (widgets.IntRangeSlider, widgets.FloatRangeSlider)):
        return [(control.min, control.min), (control.min, control.max), (control.max, control.max)]
    if isinstance(control, widgets.IntSlider):
        return spread(list(range(control.min, control.max + 1, control.step)))
    if hasattr(control, "min") and hasattr(control, "max"):
        return [control.min, middle(control.min, control.max, control.step), control.max]
    return [control.value]


def spread(options: list, limit: int = 12) -> list:
    """All options if there are few, else first, middle and last."""
    return options if len(options) <= limit else [options[0], options[len(options) // 2], options[-1]]


def middle(low: float, high: float, step: float) -> float:
    """The slider position nearest the middle of [low, high] on the step grid."""
    return min(high, low + round((high - low) / step / 2) * step)


# ----------------------------------------------------------------------------- live curves without widgets


def in_notebook() -> bool:
    """True inside a Jupyter kernel, where display() reaches a notebook front-end."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


# ----------------------------------------------------------------------------- training cells
class RunProgress:
    """What a cell that trains several runs shows while they train: one line per run (waiting, step and seconds so
    far, failed), and at the end 'trained in ...' or 'loaded from the cache'. In a notebook the lines are one text
    output updated in place (the saved notebook keeps the final state, never a frozen progress bar); elsewhere a run
    prints its line when it starts training, when it fails and when it is done."""

    def __init__(self, labels, every_seconds: float = 0.5, titles: dict | None = None, ahead=()):
        self.titles = dict(titles or {})  # label -> what the line calls the run (default: the label)
        self.ahead = set(ahead)  # the runs a setup cell started in the background: this cell only waits for them
        self.lines = {label: _("{label}: waiting").format(label=self.title(label)) for label in labels}
        self.every_seconds, self.last = every_seconds, -1.0
        self.notebook = in_notebook()
        self.handle = None
        self.started: dict = {}

    def title(self, label: str) -> str:
        """What a run's line calls it."""
        return self.titles.get(label, label)

    def text(self) -> str:
        """The current lines."""
        return "\n".join(self.lines.values())

    def show(self, force: bool = False) -> None:
        """Update the notebook output (at most every `every_seconds`, unless forced)."""
        now = time.perf_counter()
        if not self.notebook or (not force and now - self.last < self.every_seconds):
            return
        self.last = now
        from IPython.display import display

        data = {"text/plain": self.text()}
        if self.handle is None:
            self.handle = display(data, raw=True, display_id=True)
        else:
            self.handle.update(data, raw=True)

    def say(self, label: str, line: str) -> None:
        """Set a run's line and show it (outside a notebook: print it)."""
        self.lines[label] = line
        self.show(force=True)
        if not self.notebook:
            print(line, flush=True)

    def start(self, label: str) -> None:
        """A run starts training (in a worker process, or here)."""
        self.started[label] = time.perf_counter()
        self.say(label, _("{label}: training").format(label=self.title(label)))

    def callback(self, label: str):
        """The on_step(step, total, history) of one run."""

        def on_step(step: int, total: int, history=None) -> None:
            took = seconds_text(time.perf_counter() - self.started.get(label, time.perf_counter()))
            self.lines[label] = _("{label}: step {step}/{total}, {time}").format(
                label=self.title(label), step=step, total=total, time=took
            )
            self.show(force=step == 1)

        return on_step

    def finish(self, label: str, result, seconds: float) -> None:
        """Say how the run was obtained: trained now (in how long) or loaded from the cache."""
        steps = len(result.history)
        if result.from_cache and "total_cpu_s" in result.timing:  # its cost, whatever ran beside it or its priority
            line = ngettext(
                "{label}: {steps} step, loaded from disk (training it took {time} of processor time)",
                "{label}: {steps} steps, loaded from disk (training it took {time} of processor time)",
                steps,
            )
            took = seconds_text(result.timing["total_cpu_s"])
            self.say(label, line.format(label=self.title(label), steps=steps, time=took))
        elif result.from_cache:
            took = result.timing.get("total_s", float("nan"))
            line = ngettext(
                "{label}: {steps} step, loaded from disk (training took {time} when it ran)",
                "{label}: {steps} steps, loaded from disk (training took {time} when it ran)",
                steps,
            )
            self.say(label, line.format(label=self.title(label), steps=steps, time=seconds_text(took)))
        elif label in self.ahead:  # `seconds`: since this cell started waiting for it
            line = ngettext(
                "{label}: {steps} step, trained in the background; ready {time} into this cell",
                "{label}: {steps} steps, trained in the background; ready {time} into this cell",
                steps,
            )
            self.say(label, line.format(label=self.title(label), steps=steps, time=seconds_text(seconds)))
        else:
            line = ngettext(
                "{label}: {steps} step, trained now in {time}", "{label}: {steps} steps, trained now in {time}", steps
            )
            self.say(label, line.format(label=self.title(label), steps=steps, time=seconds_text(seconds)))

    def fail(self, label: str, message: str) -> None:
        """Say in one line that a run failed, and why."""
        self.say(label, _("{label}: failed: {error}").format(label=self.title(label), error=message))


def train_runs(configs: dict, runner=None, titles: dict | None = None, sizes: dict | None = None) -> dict:
    """Obtain every run of `configs` (label -> what `runner` takes, an RLConfig by default) with
    `runner(item, on_step=..., progress=False)` (default: `rlvr.train.run`; the race passes `race.race_run`, the
    gallery its runs' names): the runs the cache holds load here, the others train side by side in worker processes,
    one per core (`rlvr.parallel.train_all`), the longest first (`longest_first` of `sizes`, label -> RLConfig, or of
    the configs), so that no long run is left alone at the end; one progress line each (RunProgress), in the order of
    `configs`. Interrupting the cell stops them all; a run that fails says so on its line and the others finish.
    Returns label -> result in the order of `configs` (the runs that did not fail). `titles` (label -> text) names the
    runs on their lines where a label is not what the learner reads."""
    from rlvr.parallel import started_ahead, train_all

    jobs = run_jobs(configs, runner)
    progress = RunProgress(configs, titles=titles, ahead=started_ahead(jobs))
    progress.show(force=True)
    runs = train_all(
        {label: jobs[label] for label in longest_first(sizes or configs)},
        on_step=progress.callback,
        on_start=progress.start,
        on_done=progress.finish,
        on_fail=progress.fail,
    )
    return {label: runs[label] for label in configs if label in runs}


def start_runs(configs: dict, runner=None, sizes: dict | None = None) -> None:
    """Start training, in the background below the kernel's priority, the runs of `configs` (as `train_runs` takes
    them) that the cache does not hold, the longest first (as `train_runs` orders them), so that no long run is left
    alone at the end; the `train_runs` cell that reads one later waits for what is left of it, or trains it itself if
    no worker has taken it yet. Prints nothing (`rlvr.parallel.start_ahead`)."""
    from rlvr.parallel import start_ahead

    jobs = run_jobs(configs, runner)
    start_ahead({label: jobs[label] for label in longest_first(sizes or configs)})


def longest_first(configs: dict) -> dict:
    """configs (label -> RLConfig) ordered by how much computing a run takes, the largest first: answers per step
    times steps times (sampling + updates + the reference model's forward when beta > 0), twice for PPO's value model
    (ties keep their order; configs that are not all RLConfigs keep theirs)."""
    from rlvr.train import RLConfig

    if not all(isinstance(cfg, RLConfig) for cfg in configs.values()):
        return dict(configs)

    def work(cfg: RLConfig) -> float:
        passes = 1 + cfg.epochs + (1 if cfg.beta > 0 else 0)
        return cfg.steps * cfg.prompts_per_step * cfg.group_size * passes * (2 if cfg.algo == "ppo" else 1)

    return dict(sorted(configs.items(), key=lambda item: -work(item[1])))


def run_jobs(configs: dict, runner=None) -> dict:
    """label -> the job that obtains the run: `runner(item, on_step=..., progress=False)` (default `rlvr.train.run`)."""
    if runner is None:
        from rlvr.train import run as runner
    return {label: functools.partial(runner, cfg, progress=False) for label, cfg in configs.items()}


class LivePlot:
    """An on_step(step, total, history) callback that redraws draw(fig, history) in a normal cell output."""

    def __init__(self, draw: Callable, every: int | None = None, figsize=DEFAULT_FIGSIZE):
        self.draw_fn, self.every = draw, every
        self.figure = new_figure(figsize)
        self.start = time.perf_counter()
        self.text_handle = self.image_handle = None
        self.notebook = in_notebook()
        self.updates = 0
        self.calls = 0

    def __call__(self, step: int, total: int, history: Any = None) -> None:
        """Redraw on every `every`-th step and on the last step; outside a notebook print one line instead. A first
        call that is already the last step is a finished run loaded from the cache, and says so."""
        from_cache = self.calls == 0 and step == total and total > 1
        self.calls += 1
        if not is_due(step, total, self.every):
            return
        seconds = f"{time.perf_counter() - self.start:.1f}"
        line = (
            _("{total} steps, loaded from the cache").format(total=total)
            if from_cache
            else _("step {step}/{total}, {seconds} s").format(step=step, total=total, seconds=seconds)
        )
        if history is not None:
            self.draw_fn(self.figure, history)
        if self.notebook:
            self.show(line, history is not None)
        else:
            print(line, flush=True)
        self.updates += 1

    def show(self, line: str, with_image: bool) -> None:
        """Create the two outputs (text line, image) on the first call, update them afterwards."""
        from IPython.display import Image, display

        text = {"text/plain": line}
        if self.text_handle is None:
            self.text_handle = display(text, raw=True, display_id=True)
        else:
            self.text_handle.update(text, raw=True)
        if with_image:
            image = Image(data=figure_png(self.figure))
            if self.image_handle is None:
                self.image_handle = display(image, display_id=True)
            else:
                self.image_handle.update(image)


def live_plot(draw: Callable, every: int | None = None, figsize=DEFAULT_FIGSIZE) -> LivePlot:
    """Callback factory for plain training cells: train(..., on_step=live_plot(draw_curves, every=20))."""
    return LivePlot(draw, every, figsize)
