"""Redraw time of every analytic panel of the notebooks, in the kernel (the browser adds ~100 ms; see
tests/test_browser.py for the end-to-end figure). Goal: a slider move redraws in under 200 ms.

Usage: python benchmarks/bench_panels.py
Discovers every `*_panel()` function of rlvr.experiments.* that builds an AnalyticPanel with no arguments.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import statistics
import time

import rlvr.experiments
from rlvr.widgets import AnalyticPanel, edge_values


def panel_builders():
    """(module.function name, builder) for every argument-free *_panel function of the experiment modules."""
    for info in pkgutil.iter_modules(rlvr.experiments.__path__):
        module = importlib.import_module(f"rlvr.experiments.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            required = [p for p in inspect.signature(fn).parameters.values() if p.default is p.empty
                        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if name.endswith("_panel") and fn.__module__ == module.__name__ and not required:
                yield f"{info.name}.{name}", fn


def redraw_times(panel: AnalyticPanel) -> list[float]:
    """Seconds of each redraw while every control visits its edge and middle values."""
    times = []
    defaults = panel.values
    for name, control in panel.controls.items():
        for value in edge_values(control):
            start = time.perf_counter()
            panel.set(**{**defaults, name: value})
            times.append(time.perf_counter() - start)
    panel.set(**defaults)
    return times


def main() -> None:
    """Measure and print one line per panel."""
    print(f"{'panel':<40} {'median':>8} {'max':>8}  (goal < 200 ms)")
    for label, build in panel_builders():
        panel = build()
        if not isinstance(panel, AnalyticPanel):
            continue
        times = redraw_times(panel)
        print(f"{label:<40} {1000 * statistics.median(times):6.0f} ms {1000 * max(times):6.0f} ms")


if __name__ == "__main__":
    main()
