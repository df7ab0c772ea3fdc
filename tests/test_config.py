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
