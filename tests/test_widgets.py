"""Headless tests of rlvr.widgets: panels are driven through the same callbacks a browser would trigger."""

import base64
import gc
import re
import warnings

import nbformat
import numpy as np
import pytest

from rlvr import widgets as w

X = np.linspace(-3, 3, 200)


def draw_tanh(fig, scale, shift):
    """A cheap vectorised draw function with two parameters."""
    ax = w.fresh_axes(fig)
    ax.plot(X, np.tanh(scale * X) + shift)
    ax.set_ylim(-4, 4)


def two_slider_panel(draw=draw_tanh):
    """An AnalyticPanel with a float and an int slider."""
    controls = {"scale": w.float_slider("scale", 0.1, 3.0, 0.1, 1.0), "shift": w.int_slider("shift", -2, 2, 1, 0)}
    return w.AnalyticPanel(draw, controls)


# ----------------------------------------------------------------------------- helpers and look


def test_slider_helpers_share_the_common_look():
    slider = w.float_slider("clip eps", 0.05, 0.5, 0.05, 0.2)
    assert slider.description == "clip eps"
    assert slider.style.description_width == "initial"
    assert slider.continuous_update is True
    assert slider.readout_format == ".2f"
    assert w.float_slider("quarter", 0.0, 1.0, 0.25, 0.5).readout_format == ".2f"
    assert w.int_slider("n", 1, 9, value=4, description="group size").description == "group size"
    choice = w.choice_slider([1, 2, 4, 8], 4, description="G")
    assert (choice.value, choice.options) == (4, (1, 2, 4, 8))
    log = w.log_slider("lr", 1e-4, 1e-1, 1e-2)
    assert log.value == pytest.approx(1e-2) and log.min == pytest.approx(-4)


def test_panel_can_switch_continuous_update_off():
    controls = {"scale": w.float_slider("scale", 0.1, 3.0, 0.1, 1.0), "shift": w.int_slider("shift", -2, 2, 1, 0)}
    w.AnalyticPanel(draw_tanh, controls, continuous_update=False)
    assert [c.continuous_update for c in controls.values()] == [False, False]


# ----------------------------------------------------------------------------- analytic panel


def test_every_slider_edge_and_middle_redraws_a_different_figure():
    panel = two_slider_panel()
    assert panel.draw_count == 1 and panel.last_draw_seconds > 0
    for name, control in panel.controls.items():
        pictures = []
        for value in (control.min, (control.min + control.max) / 2, control.max):
            before = panel.draw_count
            assert panel.set(**{name: value}) is True
            assert panel.values[name] == pytest.approx(value)
            assert panel.draw_count == before + 1 and panel.last_draw_seconds > 0
            assert panel.error is None and "&#9888;" not in panel.status.value  # only a grey slow-redraw note
            pictures.append(panel.png())
        assert len(set(pictures)) == 3, f"{name}: min, middle and max gave identical figures"
        panel.reset()


def test_png_is_a_real_png_of_the_figure():
    png = two_slider_panel().png()
    assert png.startswith(b"\x89PNG") and len(png) > 1000


def test_slider_move_from_the_browser_triggers_a_redraw():
    panel = two_slider_panel()
    before = panel.png()
    panel.controls["scale"].value = 2.5  # what a slider drag does
    assert panel.draw_count == 2 and panel.png() != before


def test_set_changes_several_controls_with_one_redraw():
    panel = two_slider_panel()
    panel.set(scale=2.0, shift=1)
    assert panel.draw_count == 2 and panel.values == {"scale": 2.0, "shift": 1}


def test_set_rejects_unknown_names():
    with pytest.raises(KeyError, match="scale"):
        two_slider_panel().set(sclae=1.0)


def draw_failing_at_high_shift(fig, scale, shift):
    """Like draw_tanh, but raises at shift == 2."""
    if shift == 2:
        raise ValueError("shift 2 is not allowed\nsecond line")
    draw_tanh(fig, scale, shift)


def test_draw_error_shows_one_red_line_keeps_last_figure_and_recovers():
    panel = two_slider_panel(draw_failing_at_high_shift)
    good = panel.png()
    assert panel.set(shift=2) is False
    assert "shift 2 is not allowed" in panel.status.value and "second line" not in panel.status.value
    assert w.ERROR_COLOR in panel.status.value and "shift=2" in panel.error
    assert "Traceback" in panel.last_traceback
    assert panel.png() == good and panel.draw_count == 1
    assert panel.set(shift=0) is True
    assert panel.error is None and w.ERROR_COLOR not in panel.status.value and panel.draw_count == 2


def test_remembering_panel_shows_settings_seen_before_without_drawing():
    controls = {"scale": w.float_slider("scale", 0.1, 3.0, 0.1, 1.0), "shift": w.int_slider("shift", -2, 2, 1, 0)}
    panel = w.AnalyticPanel(draw_tanh, controls, remember=2)  # draws scale=1.0
    first = panel.png()
    panel.set(scale=2.0)
    second = panel.png()
    assert panel.set(scale=1.0) is True
    assert panel.draw_count == 2 and panel.png() == first  # shown again, not drawn
    panel.set(scale=3.0)  # a third image: the least recently shown one (scale=2.0) is forgotten
    assert panel.draw_count == 3 and list(panel.remembered) == ["scale=1,shift=0", "scale=3,shift=0"]
    panel.set(scale=2.0)
    assert panel.draw_count == 4 and panel.png() == second


def test_panel_without_memory_draws_every_time():
    panel = two_slider_panel()
    panel.set(scale=2.0)
    panel.set(scale=1.0)
    assert panel.draw_count == 3 and not panel.remembered


def test_remembering_panel_does_not_remember_a_failed_draw():
    controls = {"scale": w.float_slider("scale", 0.1, 3.0, 0.1, 1.0), "shift": w.int_slider("shift", -2, 2, 1, 0)}
    panel = w.AnalyticPanel(draw_failing_at_high_shift, controls, remember=8)
    assert panel.set(shift=2) is False and panel.set(shift=0) is True
    assert panel.set(shift=2) is False  # tried again, still failing: the red line is back
    assert "shift 2 is not allowed" in panel.status.value and list(panel.remembered) == ["scale=1,shift=0"]


def test_static_fallback_bundle_has_widget_view_and_png():
    panel = two_slider_panel()
    bundle = panel._repr_mimebundle_()
    assert bundle[w.WIDGET_VIEW_MIME]["model_id"] == panel.view.model_id
    assert base64.b64decode(bundle["image/png"]) == panel.png()
    assert "static preview" in bundle["text/plain"]


# ----------------------------------------------------------------------------- exercise_panel_edges


def test_exercise_finds_no_problem_in_a_good_panel_and_restores_defaults():
    panel = two_slider_panel()
    assert w.exercise_panel_edges(panel, max_seconds=None) == []
    assert panel.values == panel.defaults


def test_exercise_reports_a_draw_that_fails_at_an_edge():
    problems = w.exercise_panel_edges(two_slider_panel(draw_failing_at_high_shift), max_seconds=None)
    assert problems and all("shift=2" in p for p in problems)


def test_exercise_reports_warnings_and_a_control_that_changes_nothing():
    def draw_log(fig, scale, shift):
        ax = w.fresh_axes(fig)
        ax.plot(X, np.log(scale - 0.1) + 0 * X)  # log(0) at the lowest scale; shift is ignored

    problems = w.exercise_panel_edges(two_slider_panel(draw_log), max_seconds=None)
    assert any("RuntimeWarning" in p and "scale=0.1" in p for p in problems)
    assert any(p.startswith("shift: the figure is the same") for p in problems)


def test_exercise_visits_every_kind_of_control_edge():
    seen = []

    def draw(fig, lr, mode, clip, group):
        seen.append((lr, mode, clip, group))
        w.fresh_axes(fig).plot(X, lr * X * (1 if clip else 2) + len(mode) + group)

    controls = {
        "lr": w.log_slider("lr", 1e-3, 1e-1, 1e-2),
        "mode": w.choice_slider(["grpo", "ppo", "dr"], "ppo"),
        "clip": w.checkbox("clip", True),
        "group": w.int_slider("group", 2, 4, 1, 2),
    }
    problems = w.exercise_panel_edges(w.AnalyticPanel(draw, controls), max_seconds=None)
    assert problems == []
    assert {round(v[0], 6) for v in seen} >= {1e-3, 1e-2, 1e-1}
    assert {v[1] for v in seen} == {"grpo", "ppo", "dr"}
    assert {v[2] for v in seen} == {True, False} and {v[3] for v in seen} == {2, 3, 4}


def test_exercise_reports_slow_panels():
    def slow_draw(fig, scale, shift):
        import time

        time.sleep(0.03)
        draw_tanh(fig, scale, shift)

    problems = w.exercise_panel_edges(two_slider_panel(slow_draw), max_seconds=0.01)
    assert any(p.startswith("slow") for p in problems)


def test_exercise_reports_a_redraw_that_keeps_what_the_last_draw_left():
    def draw_piling_up(fig, scale, shift):
        ax = fig.axes[0] if fig.axes else fig.subplots()  # never emptied: every redraw adds a line
        ax.plot(X, np.tanh(scale * X) + shift)

    problems = w.exercise_panel_edges(two_slider_panel(draw_piling_up), max_seconds=None)
    assert problems and all("differs from a draw on a new figure" in p for p in problems)


def test_same_picture_forgives_antialiasing_jitter_but_not_a_left_over_mark():
    import io

    from PIL import Image

    def png(pixels):
        buffer = io.BytesIO()
        Image.fromarray(pixels.astype(np.uint8)).save(buffer, format="png")
        return buffer.getvalue()

    base = np.full((20, 30, 3), 255)
    jitter, mark = base.copy(), base.copy()
    jitter[5, 5] -= 3  # a line's edge antialiased one level differently
    mark[5, 5:9] = 0  # a short dark stroke: something the last draw left
    assert w.same_picture(png(base), png(jitter))
    assert not w.same_picture(png(base), png(mark))
    assert not w.same_picture(png(base), png(base[:10]))


# ----------------------------------------------------------------------------- axes reused between draws


def draw_everything(fig, log: bool, n_bars: int, legend: bool, note: str):
    """A draw that uses what our panels use: scales, tick labels, bars, legends, grids, figure texts, titles."""
    ax_a, ax_b = w.fresh_axes(fig, 1, 2)
    ax_a.plot(X, np.exp(X) if log else X, label="curve")
    if log:
        ax_a.set_yscale("log")
        ax_a.set_ylim(1e-2, 1e3)  # autoscaling off on this axis: the next draw must turn it on again
        ax_a.grid(alpha=0.3)
    ax_a.set(xlabel="x", ylabel="log y" if log else "y", title=f"log={log}")
    bars = ax_b.bar(range(n_bars), np.arange(1, n_bars + 1), label="bars")
    ax_b.set_xticks(range(n_bars), [f"b{i}" for i in range(n_bars)])
    ax_b.text(0, 1, note)
    if legend:
        ax_a.legend()
        ax_b.legend(handles=[bars])
    fig.suptitle(note)
    fig.text(0.01, 0.01, note)


@pytest.mark.parametrize(
    "order",
    [
        [(True, 5, True, "a"), (False, 2, False, "b")],
        [(False, 2, False, "b"), (True, 5, True, "a"), (False, 3, True, "")],
    ],
)
def test_reused_axes_draw_the_same_picture_as_new_ones(order):
    fig = w.new_figure()
    for values in order:
        draw_everything(fig, *values)
        fresh = w.new_figure()
        draw_everything(fresh, *values)
        assert w.figure_png(fig) == w.figure_png(fresh), f"left over from the last draw at {values}"


def test_same_grid_reuses_the_axes_emptied_and_another_grid_makes_new_ones():
    fig = w.new_figure()
    first = w.fresh_axes(fig, 1, 2)
    first[0].plot([0, 1], [0, 1], label="x")
    first[0].legend()
    first[0].set_title("t")
    again = w.fresh_axes(fig, 1, 2)
    assert list(again) == list(first) and fig.axes == list(first)
    assert not again[0].lines and again[0].get_legend() is None and again[0].get_title() == ""
    other = w.fresh_axes(fig, 2, 1)
    assert not set(other) & set(first) and len(fig.axes) == 2


def test_axes_with_categories_or_extra_axes_are_made_new():
    fig = w.new_figure()
    ax = w.fresh_axes(fig)
    ax.barh(["a", "b"], [1, 2])  # a category axis: its categories cannot be emptied
    assert w.fresh_axes(fig) is not ax
    ax = w.fresh_axes(fig)
    ax.twinx()
    assert w.fresh_axes(fig) is not ax and len(fig.axes) == 1


# ----------------------------------------------------------------------------- toggle buttons


def draw_algo(fig, algo, scale):
    """A draw function whose picture depends on a named choice."""
    ax = w.fresh_axes(fig)
    ax.plot(X, np.tanh(scale * X) * (1 if algo == "grpo" else -1))


def test_toggle_buttons_show_labels_and_give_values_in_the_common_style():
    toggle = w.toggle_buttons("algo", [("GRPO", "grpo"), ("PPO", "ppo")], "ppo", description="algorithm")
    assert (toggle.value, toggle.label, toggle.description) == ("ppo", "PPO", "algorithm")
    assert toggle.style.description_width == "initial"
    assert w.toggle_buttons("optimizer", ["sgd", "adam"]).value == "sgd"  # plain options; the first by default
    with pytest.raises(ValueError, match="not one of the options"):
        w.toggle_buttons("algo", ["grpo", "ppo"], "dr_grpo")


def test_analytic_panel_redraws_and_remembers_on_a_toggle_click():
    controls = {
        "algo": w.toggle_buttons("algo", [("GRPO", "grpo"), ("PPO", "ppo")]),
        "scale": w.float_slider("scale", 0.5, 2.0, 0.5, 1.0),
    }
    panel = w.AnalyticPanel(draw_algo, controls, remember=4, continuous_update=False)
    first = panel.png()
    panel.controls["algo"].value = "ppo"  # a click in the browser sets the value
    assert panel.draw_count == 2 and panel.values == {"algo": "ppo", "scale": 1.0} and panel.png() != first
    panel.controls["algo"].value = "grpo"
    assert panel.draw_count == 2 and panel.png() == first, "a setting shown before comes from memory"
    assert w.edge_values(controls["algo"]) == ["grpo", "ppo"]
    assert w.exercise_panel_edges(panel) == []


def test_training_panel_caches_runs_by_the_toggled_value_and_disables_the_toggle_while_running():
    calls, disabled = [], []

    def run(algo, lr, on_step):
        calls.append((algo, lr))
        disabled.append(panel.controls["algo"].disabled)
        on_step(1, 1, [lr])
        return [lr, algo]

    controls = {
        "algo": w.toggle_buttons("algo", [("GRPO", "grpo"), ("PPO", "ppo")]),
        "lr": w.float_slider("lr", 0.1, 1.0, 0.1, 0.5),
    }
    panel = w.TrainingPanel(run, RecordingPlot(), controls)
    panel.click_run()
    panel.controls["algo"].value = "ppo"
    assert len(calls) == 1, "a click on a toggle must never train"
    panel.click_run()
    panel.controls["algo"].value = "grpo"
    assert panel.click_run() == [0.5, "grpo"] and calls == [("grpo", 0.5), ("ppo", 0.5)]
    assert disabled == [True, True] and not panel.controls["algo"].disabled
    assert list(panel.results) == ["algo=grpo, lr=0.5 (default)", "algo=ppo, lr=0.5"]


# ----------------------------------------------------------------------------- training panel


class FakeTraining:
    """A run function that counts its calls, reports progress and can be told to fail."""

    def __init__(self, fail_at_lr=None):
        self.calls, self.fail_at_lr, self.seen_disabled = [], fail_at_lr, []

    def __call__(self, lr, steps, on_step):
        self.calls.append((lr, steps))
        history = []
        for step in range(1, steps + 1):
            if self.fail_at_lr is not None and lr == pytest.approx(self.fail_at_lr) and step == 3:
                raise RuntimeError("loss is nan")
            history.append(lr * step)
            on_step(step, steps, list(history))
        return history


class RecordingPlot:
    """A plot function that records what it was asked to draw."""

    def __init__(self):
        self.calls = []

    def __call__(self, fig, results, live):
        self.calls.append((list(results), live is not None))
        ax = w.fresh_axes(fig)
        for label, curve in results.items():
            ax.plot(curve, label=label)
        if live is not None:
            ax.plot(live, "k--")


def training_panel(run=None, plot=None, **kwargs):
    """A TrainingPanel over (lr, steps) with a fake run."""
    controls = {"lr": w.float_slider("lr", 0.1, 1.0, 0.1, 0.5), "steps": w.int_slider("steps", 5, 20, 5, 10)}
    return w.TrainingPanel(run or FakeTraining(), plot or RecordingPlot(), controls, **kwargs)


def test_run_produces_result_fills_progress_and_draws_live():
    run, plot = FakeTraining(), RecordingPlot()
    panel = training_panel(run, plot)
    result = panel.click_run()
    assert result == [0.5 * s for s in range(1, 11)]
    assert panel.progress.value == panel.progress.max == 10
    assert "done" in panel.progress_label.value
    assert any(live for _labels, live in plot.calls), "no live frame was drawn during the run"
    assert plot.calls[-1] == (["lr=0.5, steps=10 (default)"], False)
    assert not panel.running and not panel.button.disabled


def test_button_and_controls_are_disabled_while_running():
    states = []

    def run(lr, steps, on_step):
        states.append((panel.running, panel.button.disabled, panel.controls["lr"].disabled))
        return [lr]

    panel = training_panel(run)
    panel.click_run()
    assert states == [(True, True, True)]
    assert (panel.running, panel.button.disabled, panel.controls["lr"].disabled) == (False, False, False)


def test_same_values_hit_the_cache_and_new_values_overlay_the_default():
    run, plot = FakeTraining(), RecordingPlot()
    panel = training_panel(run, plot)
    first = panel.click_run()
    assert panel.click_run() is first and len(run.calls) == 1
    panel.controls["lr"].value = 0.9
    assert len(run.calls) == 1, "moving a slider must never train"
    panel.click_run()
    assert len(run.calls) == 2
    assert list(panel.results) == ["lr=0.5, steps=10 (default)", "lr=0.9, steps=10"]
    assert plot.calls[-1] == (list(panel.results), False)


def test_moving_back_to_a_run_configuration_shows_it_without_training():
    run, plot = FakeTraining(), RecordingPlot()
    panel = training_panel(run, plot)
    panel.click_run()
    panel.controls["lr"].value = 0.9
    panel.click_run()
    shown_for_09 = panel.png()
    panel.controls["lr"].value = 0.2
    assert "not run yet" in panel.status.value and panel.png() != shown_for_09
    panel.controls["lr"].value = 0.9
    assert "cached" in panel.status.value and panel.png() == shown_for_09 and len(run.calls) == 2


def test_first_run_at_other_values_also_trains_the_default_for_the_overlay():
    run = FakeTraining()
    panel = training_panel(run)
    panel.controls["lr"].value = 0.3
    panel.click_run()
    assert run.calls == [(0.5, 10), (pytest.approx(0.3), 10)]


def test_precomputed_default_result_is_not_retrained():
    run = FakeTraining()
    panel = training_panel(run, default_result=[0.0, 1.0])
    assert list(panel.results) == ["lr=0.5, steps=10 (default)"]
    panel.controls["steps"].value = 5
    panel.click_run()
    assert run.calls == [(0.5, 5)]


def test_failing_run_shows_error_reenables_button_and_keeps_results():
    run = FakeTraining(fail_at_lr=0.7)
    panel = training_panel(run)
    panel.click_run()
    before = dict(panel.results)
    panel.controls["lr"].value = 0.7
    assert panel.click_run() is None
    assert "loss is nan" in panel.status.value and w.ERROR_COLOR in panel.status.value
    assert not panel.button.disabled and not panel.running
    assert panel.results == before
    panel.controls["lr"].value = 0.8
    assert panel.click_run() == [0.8 * s for s in range(1, 11)]


def test_interrupted_run_reenables_button():
    def run(lr, steps, on_step):
        raise KeyboardInterrupt

    panel = training_panel(run)
    assert panel.click_run() is None
    assert "interrupted" in panel.status.value and not panel.button.disabled


def test_disk_cache_hooks_load_before_training_and_save_after():
    store, loads = {}, []

    def load(key):
        loads.append(key)
        return store.get(key)

    run = FakeTraining()
    panel = training_panel(run, disk_cache=True, load=load, save=store.__setitem__)
    panel.click_run()
    assert list(store) == ["lr=0.5,steps=10"] and len(run.calls) == 1
    fresh = training_panel(run, disk_cache=True, load=load, save=store.__setitem__)
    assert fresh.click_run() == store["lr=0.5,steps=10"] and len(run.calls) == 1


def test_slider_move_to_a_saved_configuration_shows_it_as_cached_before_any_run():
    store = {"lr=0.9,steps=10": [9.0]}
    run = FakeTraining()
    panel = training_panel(run, disk_cache=True, load=store.get, save=store.__setitem__)
    assert "not run yet" in panel.status.value
    panel.controls["lr"].value = 0.9
    assert "cached result" in panel.status.value and panel.results["lr=0.9, steps=10"] == [9.0]
    assert panel.click_run() == [9.0] and len(run.calls) == 1, "only the default is trained"


def test_unreadable_saved_run_counts_as_not_run():
    def load(key):
        raise EOFError("truncated file")

    panel = training_panel(FakeTraining(), disk_cache=True, load=load, save=lambda key, result: None)
    panel.controls["lr"].value = 0.9
    assert "not run yet" in panel.status.value
    assert panel.click_run() == [0.9 * s for s in range(1, 11)]


def test_training_panel_set_moves_several_controls_with_one_refresh_and_never_trains():
    run, plot = FakeTraining(), RecordingPlot()
    panel = training_panel(run, plot)
    panel.click_run()
    draws = len(plot.calls)
    assert panel.set(lr=0.9, steps=5) is False and len(plot.calls) == draws + 1 and len(run.calls) == 1
    assert "not run yet" in panel.status.value
    panel.click_run()
    assert panel.reset() is True and "cached result" in panel.status.value
    with pytest.raises(KeyError, match="unknown control"):
        panel.set(learning_rate=0.1)


def test_disk_cache_needs_both_hooks():
    with pytest.raises(ValueError):
        training_panel(disk_cache=True, load=lambda key: None)


def test_training_panel_static_fallback_shows_placeholder_then_results():
    panel = training_panel()
    placeholder = base64.b64decode(panel._repr_mimebundle_()["image/png"])
    panel.click_run()
    after = base64.b64decode(panel._repr_mimebundle_()["image/png"])
    assert placeholder.startswith(b"\x89PNG") and after != placeholder


def test_failing_plot_shows_error_instead_of_raising():
    def plot(fig, results, live):
        raise IndexError("no curves")

    panel = training_panel(plot=plot, default_result=[1.0])
    assert "no curves" in panel.status.value


# ----------------------------------------------------------------------------- live_plot


def test_live_plot_outside_ipython_prints_progress_lines(capsys):
    drawn = []
    callback = w.live_plot(lambda fig, history: drawn.append(len(history)), every=5)
    history = []
    for step in range(1, 13):
        history.append(step)
        callback(step, 12, history)
    assert capsys.readouterr().out.splitlines()[0].startswith("step 5/12")
    assert drawn == [5, 10, 12] and callback.updates == 3


def test_live_plot_says_when_a_finished_run_came_from_the_cache(capsys):
    """A cached run calls on_step once, at its last step: no 'step 200/200, 0.0 s' that contradicts its real time."""
    drawn = []
    cached = w.live_plot(lambda fig, history: drawn.append(len(history)), every=5)
    cached(12, 12, list(range(12)))
    assert capsys.readouterr().out.strip() == "12 steps, loaded from the cache" and drawn == [12]
    trained = w.live_plot(lambda fig, history: None, every=5)
    for step in range(1, 13):
        trained(step, 12, [])
    assert "loaded from the cache" not in capsys.readouterr().out


# ----------------------------------------------------------------------------- garbage collection


@pytest.fixture
def frozen_heap_released():
    """Nothing frozen before the test, and what the test froze released after it (the test process keeps its GC)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.parametrize("make", [two_slider_panel, training_panel], ids=["analytic", "training"])
def test_a_panel_built_in_a_kernel_keeps_the_heap_out_of_later_full_collections(
    frozen_heap_released, monkeypatch, make
):
    # notebook 01's first slider move paid a full collection of the kernel's ~340k objects (299 ms of 481 ms):
    # after a panel is built, a full collection only scans objects made after it
    monkeypatch.setattr(w, "in_notebook", lambda: True)
    heap = [[i] for i in range(20_000)]  # stands for the libraries and data a notebook's kernel holds
    panel = make()
    assert gc.get_freeze_count() >= len(heap)
    tracked = {id(obj) for obj in gc.get_objects()}  # what a full collection still scans
    assert not any(id(obj) in tracked for obj in heap) and id(heap) not in tracked
    assert len(tracked) < len(heap) // 10
    panel.set(**panel.defaults)  # still works
    assert panel.error is None


def test_outside_a_kernel_a_panel_leaves_the_garbage_collector_alone(frozen_heap_released):
    two_slider_panel()
    training_panel()
    assert w.settle_heap() is False
    assert gc.get_freeze_count() == 0


# ----------------------------------------------------------------------------- HTML export (runs a kernel)

DEMO_CELL = """
import numpy as np
from rlvr import widgets as w
def draw(fig, scale):
    w.fresh_axes(fig).plot(np.linspace(0, 1, 50) * scale)
panel = w.AnalyticPanel(draw, {"scale": w.float_slider("scale", 0.5, 2.0, 0.5, 1.0)})
panel
"""


LIVE_CELL = """
callback = w.live_plot(lambda fig, history: w.fresh_axes(fig).plot(history), every=5)
for step in range(1, 21):
    callback(step, 20, list(range(step)))
"""


def executed_demo(store_widget_state):
    """A notebook with a panel and a live_plot cell, executed in a real kernel."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(DEMO_CELL), nbformat.v4.new_code_cell(LIVE_CELL)])
    NotebookClient(nb, timeout=120, store_widget_state=store_widget_state).execute()
    return nb


def html_of(nb):
    """The notebook exported with nbconvert's HTML exporter."""
    from nbconvert import HTMLExporter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HTMLExporter().from_notebook_node(nb)[0]


def png_images(html):
    """How many <img> tags with an embedded PNG the HTML has."""
    return len(re.findall(r'<img[^>]*src="data:image/png;base64,', html))


def test_html_export_shows_the_static_png():
    nb = executed_demo(store_widget_state=True)
    output = nb.cells[0].outputs[0]
    assert {w.WIDGET_VIEW_MIME, "image/png"} <= set(output["data"])
    assert png_images(html_of(nb)) == 1, "only live_plot's image: nbconvert picked the widget view for the panel"
    assert png_images(html_of(w.drop_widget_state(nb))) == 2
    assert png_images(html_of(executed_demo(store_widget_state=False))) == 2


def test_a_panel_in_a_real_kernel_freezes_the_objects_alive_when_it_is_built():
    from nbclient import NotebookClient

    check = "import gc\nprint(gc.get_freeze_count() > 10 * len(gc.get_objects()))"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(DEMO_CELL), nbformat.v4.new_code_cell(check)])
    NotebookClient(nb, timeout=120, store_widget_state=False).execute()
    assert nb.cells[1].outputs[0]["text"].strip() == "True"


def test_live_plot_in_a_kernel_updates_one_text_line_and_one_image():
    outputs = executed_demo(store_widget_state=False).cells[1].outputs
    assert [o["data"].get("text/plain", "").split(",")[0] for o in outputs][0] == "step 20/20"
    assert len(outputs) == 2 and "image/png" in outputs[1]["data"]


def test_a_float_slider_value_is_read_on_its_grid_and_the_first_draw_is_not_called_slow(monkeypatch):
    import time as _time

    from rlvr import widgets as w

    slider = w.float_slider("shift", -3.0, 3.0, 0.1, 0.0)
    slider.value = 0.1 + 0.2 - 0.3  # what slider arithmetic leaves for 0: 5.6e-17
    assert w.on_grid(slider) == 0.0 and str(w.on_grid(slider)) == "0.0"
    slider.value = -0.30000000000000004
    assert w.on_grid(slider) == -0.3

    def slow_draw(fig, shift):
        _time.sleep(w.SLOW_DRAW_SECONDS + 0.05)

    panel = w.AnalyticPanel(slow_draw, {"shift": slider})
    assert "slow redraw" not in panel.status.value  # the draw made at construction builds the layout
    panel.controls["shift"].value = 1.0
    assert "slow redraw" in panel.status.value


def test_run_progress_names_a_run_by_its_title_where_one_is_given(capsys):
    """A gallery run's line reads its short title ('lr too high'), not its label ('lr_too_high'); a run without a
    title keeps its label."""
    from rlvr.widgets import RunProgress

    progress = RunProgress(["lr_too_high", "GRPO"], titles={"lr_too_high": "lr too high"})
    assert progress.text() == "lr too high: waiting\nGRPO: waiting"
    progress.start("lr_too_high")
    progress.fail("GRPO", "boom")
    assert "lr too high: training" in capsys.readouterr().out
    assert progress.text().splitlines() == ["lr too high: training", "GRPO: failed: boom"]


def test_run_progress_says_a_run_started_ahead_trained_in_the_background_and_how_long_the_cell_waited():
    """A run the setup cell started: its line says it trained in the background and how long this cell waited for it,
    never 'trained now in' the seconds of a wait (a reader took those for the run's own time)."""
    from types import SimpleNamespace

    from rlvr.widgets import RunProgress

    progress = RunProgress(["GRPO-8", "PPO-8", "G = 2", "G = 32"], ahead={"GRPO-8"})
    run = SimpleNamespace(history=[{}] * 200, from_cache=False, timing={})
    progress.finish("GRPO-8", run, 38.0)
    progress.finish("PPO-8", run, 78.0)
    progress.finish("G = 2", run, 5.0)
    progress.finish("G = 32", run, 9.0)
    assert progress.text().splitlines() == [
        "GRPO-8: 200 steps, trained in the background; ready 38 s into this cell",
        "PPO-8: 200 steps, trained now in 78 s",
        "G = 2: 200 steps, trained now in 5.0 s",  # queued in the background, trained here: no machinery talk
        "G = 32: 200 steps, trained now in 9.0 s",
    ]


def test_runs_started_ahead_go_longest_first_and_ties_keep_their_order():
    from rlvr.train import RLConfig
    from rlvr.widgets import longest_first

    configs = {
        "small": RLConfig(group_size=2),
        "default": RLConfig(),
        "same as default": RLConfig(seed=1),
        "with a KL term": RLConfig(beta=0.04),
        "large group": RLConfig(group_size=32),
        "PPO": RLConfig(algo="ppo", epochs_per_batch=8),
    }
    assert list(longest_first(configs)) == [
        "PPO",
        "large group",
        "with a KL term",
        "default",
        "same as default",
        "small",
    ]
    names = {"b": "healthy", "a": "lr_too_high"}  # not RLConfigs (the gallery's names): their order stays
    assert list(longest_first(names)) == ["b", "a"]


def test_train_runs_queues_the_longest_first_and_returns_the_learners_order(monkeypatch):
    """A cell's own runs go to the workers the longest first (here the gallery's 16-updates runs, sized by their
    RLConfigs; a long run queued last left a core idle for half of notebook 06's gallery cell), and come back, and show
    their lines, in the order the cell lists them."""
    import rlvr.parallel
    from rlvr.experiments import gallery
    from rlvr.figures import gallery as figs

    queued = []

    def fake_train_all(jobs, **callbacks):
        queued.extend(jobs)
        return {label: f"run of {label}" for label in jobs}

    monkeypatch.setattr(rlvr.parallel, "train_all", fake_train_all)
    names = {name: name for name in gallery.BREAKAGES}
    runs = figs.train_gallery(names, seed=0)
    assert list(runs) == list(names) and runs["healthy"] == "run of healthy"
    updates = {name: gallery.gallery_config(name).epochs for name in names}
    assert {updates[name] for name in queued[:2]} == {16} and max(updates[name] for name in queued[2:]) < 16
    assert queued.index("loophole_verifier") == 2  # 250 steps: the next longest


def test_static_fallback_text_reads_each_control_as_the_learner_sees_it():
    """The plain-text view names a drop-down's shown option and each control's description, not the keys the code
    uses (a Chinese reader found 'critic=Monte-Carlo value' in a Chinese notebook)."""
    import ipywidgets

    def draw(fig, critic, beta):
        fig.add_subplot(111).plot([0, 1], [0, beta])

    controls = {
        "critic": ipywidgets.Dropdown(options=[("shown value", "key")], value="key", description="value model"),
        "beta": w.float_slider("beta", 0.0, 1.0, 0.05, 0.1, description="beta (KL weight)"),
        "lr": w.choice_slider((1e-4, 1e-3), 1e-3, description="learning rate"),
        "clamp": w.checkbox("clamp", True, description="clamp"),
    }
    text = w.AnalyticPanel(lambda fig, critic, beta, lr, clamp: draw(fig, critic, beta), controls)._repr_mimebundle_()[
        "text/plain"
    ]
    assert text.endswith(
        "static preview at value model: shown value; beta (KL weight): 0.1; learning rate: 0.001; clamp: yes"
    ), text
    assert "key" not in text and "critic" not in text
