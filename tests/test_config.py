"""rlvr.config: the one-thread helper the small experiments run under."""

import pytest
import torch

from rlvr.config import one_thread


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
