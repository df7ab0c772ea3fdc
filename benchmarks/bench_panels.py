"""Redraw time of every analytic panel of the notebooks, in the kernel (tests/test_browser.py measures the whole
way from the key press to the new image in the browser). Goal: a slider move shows its new plot in a median
<= 150 ms, max <= 300 ms.

Usage: python benchmarks/bench_panels.py [--repeats 3]
For every argument-free `*_panel()` of rlvr.figures.* that builds an AnalyticPanel, each control visits its
edge and middle values `--repeats` times. Columns: the panel's redraw (draw function + PNG, on the panel's figure,
whose axes are reused), the same values drawn on a new figure each time (nothing reused), and the split of the
panel's redraw into the draw function and rendering + PNG encoding.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import statistics
import time

import matplotlib

import rlvr.figures
from rlvr.widgets import AnalyticPanel, edge_values, figure_png, fresh_png


def analytic_panels():
    """("module.function", panel) for every argument-free *_panel function of the figure modules that builds an
    AnalyticPanel (training panels need a Run click; shaping_panel needs sampled answers)."""
    for info in pkgutil.iter_modules(rlvr.figures.__path__):
        module = importlib.import_module(f"rlvr.figures.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            required = [
                p
                for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
            if name.endswith("_panel") and fn.__module__ == module.__name__ and not required:
                panel = fn()
                if isinstance(panel, AnalyticPanel):
                    yield f"{info.name}.{name}", panel


def timed(fn) -> float:
    """Seconds one call of fn takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def panel_times(panel: AnalyticPanel, repeats: int) -> dict[str, list[float]]:
    """Seconds per redraw at every edge value of every control: reused axes (split) and a new figure."""
    times = {"redraw": [], "draw": [], "render": [], "new figure": []}
    defaults = panel.values
    size = tuple(panel.figure.get_size_inches())
    for _ in range(repeats):
        for name, control in panel.controls.items():
            for value in edge_values(control):
                values = {**defaults, name: value}
                times["draw"].append(timed(lambda v=values: panel.draw_fn(panel.figure, **v)))
                times["render"].append(timed(lambda: figure_png(panel.figure)))
                times["redraw"].append(times["draw"][-1] + times["render"][-1])
                times["new figure"].append(timed(lambda v=values: fresh_png(panel.draw_fn, size, **v)))
    panel.set(**defaults)
    return times


def main() -> None:
    """Measure and print one line per panel, then the median over all redraws."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="visits of every edge value (default 3)")
    args = parser.parse_args()
    ms = lambda values: 1000 * statistics.median(values)  # noqa: E731
    print(f"matplotlib {matplotlib.__version__}")
    print(f"{'panel':<36} {'redraw':>7} {'max':>6} {'new figure':>11}   {'draw fn':>7} {'render+PNG':>10}  (median ms)")
    everything = {"redraw": [], "new figure": []}
    for label, panel in analytic_panels():
        times = panel_times(panel, args.repeats)
        for key in everything:
            everything[key] += times[key]
        print(
            f"{label:<36} {ms(times['redraw']):7.0f} {1000 * max(times['redraw']):6.0f} "
            f"{ms(times['new figure']):11.0f}   {ms(times['draw']):7.0f} {ms(times['render']):10.0f}"
        )
    print(
        f"{'all panels':<36} {ms(everything['redraw']):7.0f} {1000 * max(everything['redraw']):6.0f} "
        f"{ms(everything['new figure']):11.0f}   (browser goal, key press to new plot: median <= 150 ms, max <= 300 ms)"
    )


if __name__ == "__main__":
    main()
