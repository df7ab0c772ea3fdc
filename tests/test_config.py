"""rlvr.config: the one-thread helper the small experiments run under, the one thread count every training run uses,
and the guard that lets a caller find out which runs the cache holds without training any."""

import pytest
import torch

from rlvr import config
from rlvr.config import TrainingRefused, loading_only, one_thread, training_threads


def test_one_thread_as_block_and_decorator_restores_the_thread_count_even_after_an_error():
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1

    @one_thread()
    def failing():
        assert torch.get_num_threads() == 1
        raise ValueError("inside")

    for _ in range(2):  # a decorated function can be called again
        with pytest.raises(ValueError):
            failing()
        assert torch.get_num_threads() == before


def test_training_runs_on_train_threads_whatever_the_process_uses(monkeypatch):
    monkeypatch.setattr(config, "TRAIN_THREADS", 1)
    before = torch.get_num_threads()
    with config.torch_threads(2):
        with training_threads():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before


def test_nothing_trains_inside_loading_only_and_a_gallery_run_does_not_mistake_it_for_a_crash(monkeypatch, tmp_path):
    from rlvr.experiments import gallery
    from rlvr.model import TinyTransformer
    from rlvr.train import RLConfig, train_rl

    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    steps = []
    with loading_only(), pytest.raises(TrainingRefused):
        train_rl(
            RLConfig(steps=2, prompts_per_step=2, group_size=2),
            policy=TinyTransformer(),
            on_step=lambda *a: steps.append(a),
        )
    with loading_only(), pytest.raises(TrainingRefused):  # not recorded as the run's crash, nothing cached
        gallery.gallery_run("healthy", steps=2)
    assert steps == [] and list(tmp_path.iterdir()) == []
    with training_threads():  # outside the block, training goes on
        pass


def test_one_size_table_serves_every_notebook_and_reproduce(monkeypatch):
    """rlvr.config.SIZES is the one source: the experiments' defaults and fast sizes read it, and the default warm-up's
    length is the panel's full warm-up length."""
    from rlvr.config import SIZES, size
    from rlvr.experiments import length_bias, race, thinking
    from rlvr.sft import SFTConfig

    assert SIZES["panel_sft_steps"][0] == SFTConfig().steps
    monkeypatch.delenv("RLVR_FAST", raising=False)
    assert size("rl_steps") == 200 and size("rl_steps", fast=True) == SIZES["rl_steps"][1] < 30
    monkeypatch.setenv("RLVR_FAST", "1")
    fast_steps = SIZES["rl_steps"][1]  # notebook 03's GRPO run has ONE fast size everywhere
    assert thinking.rl_config().steps == race.race_config("GRPO-1").steps == fast_steps
    assert length_bias.arithmetic_config().steps == fast_steps == thinking.fast_sizes()["steps"]
    assert size("rl_steps", fast=False) == 200
