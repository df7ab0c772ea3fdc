"""Checkpoint cache: keys, atomic writes, corrupted and mismatched files, concurrent writers."""

import multiprocessing as mp
from pathlib import Path

import pytest
import torch

from rlvr import cache
from rlvr.cache import cache_key, cache_path, load_or_create, save_atomic, try_load


def _payload(value=1.0):
    return {"w": torch.full((3,), value), "losses": [1.0, 0.5]}


def test_key_changes_with_every_field_and_is_stable():
    base = {"teacher_error_rate": 0.1, "seed": 0, "model": {"d_model": 64}}
    assert cache_key("sft", base) == cache_key("sft", dict(base))
    assert cache_key("sft", base) != cache_key("sft", {**base, "seed": 1})
    assert cache_key("sft", base) != cache_key("sft", {**base, "teacher_error_rate": 0.2})
    assert cache_key("sft", base) != cache_key("sft", {**base, "model": {"d_model": 32}})
    assert cache_key("sft", base) != cache_key("rl", base)


def test_create_then_load(tmp_path):
    calls = []

    def create():
        calls.append(1)
        return _payload()

    a, from_cache_a = load_or_create("sft", {"x": 1}, create, folder=tmp_path)
    b, from_cache_b = load_or_create("sft", {"x": 1}, create, folder=tmp_path)
    assert (from_cache_a, from_cache_b) == (False, True) and len(calls) == 1
    assert torch.equal(a["w"], b["w"])


def test_corrupted_file_is_reported_in_one_line_and_retrained(tmp_path):
    path = cache_path("sft", {"x": 2}, tmp_path)
    path.write_bytes(b"not a checkpoint at all")
    messages = []
    payload, from_cache = load_or_create("sft", {"x": 2}, _payload, folder=tmp_path, log=messages.append)
    assert not from_cache and torch.equal(payload["w"], _payload()["w"])
    assert len(messages) == 1 and "unreadable" in messages[0] and "\n" not in messages[0]
    assert try_load(path, "sft", {"x": 2}) is not None  # rewritten, now readable


def test_truncated_file_is_retrained(tmp_path):
    load_or_create("sft", {"x": 3}, _payload, folder=tmp_path)
    path = cache_path("sft", {"x": 3}, tmp_path)
    path.write_bytes(path.read_bytes()[:40])
    messages = []
    _, from_cache = load_or_create("sft", {"x": 3}, _payload, folder=tmp_path, log=messages.append)
    assert not from_cache and len(messages) == 1


def test_file_with_another_config_is_not_used(tmp_path):
    path = cache_path("sft", {"x": 4}, tmp_path)
    save_atomic({"kind": "sft", "config": {"x": 999}, "payload": _payload(7.0)}, path)
    messages = []
    payload, from_cache = load_or_create("sft", {"x": 4}, _payload, folder=tmp_path, log=messages.append)
    assert not from_cache and payload["w"][0].item() == 1.0 and "does not match" in messages[0]


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    save_atomic({"a": 1}, tmp_path / "f.pt")
    assert [p.name for p in tmp_path.iterdir()] == ["f.pt"]


def _writer(folder: str, value: float) -> None:
    for _ in range(20):
        obj = {"kind": "sft", "config": {"x": 5}, "payload": _payload(value)}
        save_atomic(obj, cache_path("sft", {"x": 5}, Path(folder)))


def test_concurrent_writers_never_leave_a_broken_file(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), float(v))) for v in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    obj = try_load(cache_path("sft", {"x": 5}, tmp_path), "sft", {"x": 5})
    assert obj is not None and obj["payload"]["w"][0].item() in (1.0, 2.0)
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch notes the foreign pickle before refusing it
def test_weights_only_load_refuses_pickled_code(tmp_path):
    import pickle

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    path = cache_path("sft", {"x": 6}, tmp_path)
    with open(path, "wb") as f:
        pickle.dump({"kind": "sft", "config": {"x": 6}, "payload": Evil()}, f)
    messages = []
    _, from_cache = load_or_create("sft", {"x": 6}, _payload, folder=tmp_path, log=messages.append)
    assert not from_cache and "unreadable" in messages[0]


def test_shipped_checkpoints_are_found_after_the_cache_and_only_for_the_default_folder(monkeypatch, tmp_path):
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(cache, "SHIPPED_DIR", shipped)
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path / "cache"))
    config = {"x": 5}
    save_atomic({"kind": "sft", "config": config, "payload": _payload(5.0)}, cache_path("sft", config, shipped))
    assert cache.is_cached("sft", config) and not cache.is_cached("sft", {"x": 6})
    payload, from_cache = load_or_create("sft", config, lambda: _payload(0.0))
    assert from_cache and torch.equal(payload["w"], _payload(5.0)["w"])
    assert not (tmp_path / "cache" / cache_path("sft", config).name).exists()  # read in place, not copied
    payload, from_cache = load_or_create("sft", config, lambda: _payload(0.0), folder=tmp_path / "other")
    assert not from_cache and torch.equal(payload["w"], _payload(0.0)["w"])  # an explicit folder is all it reads
