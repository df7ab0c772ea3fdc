"""Checkpoint cache: keys, atomic writes, corrupted and mismatched files, concurrent writers."""

import multiprocessing as mp
from pathlib import Path

import pytest
import torch

from rlvr import cache, config
from rlvr.cache import Entry, load_or_create, save_atomic, try_load


def _payload(value=1.0):
    return {"w": torch.full((3,), value), "losses": [1.0, 0.5]}


def _entry(x) -> Entry:
    return Entry("sft", {"x": x})


def _load(x, create=_payload, **kwargs):
    """(payload, from_cache) of the test entry x."""
    loaded = load_or_create(_entry(x), create, **kwargs)
    return loaded.payload, loaded.from_cache


def test_key_changes_with_every_field_and_is_stable():
    base = {"teacher_error_rate": 0.1, "seed": 0, "model": {"d_model": 64}}
    key = Entry("sft", base).key()
    assert key == Entry("sft", dict(base)).key()
    assert key != Entry("sft", {**base, "seed": 1}).key()
    assert key != Entry("sft", {**base, "teacher_error_rate": 0.2}).key()
    assert key != Entry("sft", {**base, "model": {"d_model": 32}}).key()
    assert key != Entry("rl", base).key()


def test_a_run_cached_under_one_way_of_computing_never_answers_for_another(monkeypatch, tmp_path):
    """Another kernel dispatch, CPU vendor or thread count rounds differently: another key, so the cache trains anew;
    a shipped checkpoint keeps one name on every machine."""
    entry = Entry("rl", {"x": 1})
    here, shipped = entry.path(tmp_path), entry.path(cache.SHIPPED_DIR)
    save_atomic({"kind": entry.tag, "config": entry.saved_config, "payload": _payload()}, here)
    real = cache.numerics
    for field in ("capability", "vendor", "threads", "torch"):
        other = f"not {real()[field]}"  # another way of computing than this session's, whatever it is
        with monkeypatch.context() as m:
            m.setattr(cache, "numerics", lambda field=field, other=other: {**real(), field: other})
            assert entry.path(tmp_path) != here, field
            assert cache.cached(entry, tmp_path) is None, field
            assert (entry.path(cache.SHIPPED_DIR) == shipped) == (field != "torch"), field
    assert cache.cached(entry, tmp_path).payload["losses"] == [1.0, 0.5]  # and back on this machine's way, it loads


def test_numerics_says_how_this_process_computes(monkeypatch):
    """Its thread count is the one every training run trains with (rlvr.config.TRAIN_THREADS), whatever torch uses
    outside training."""
    monkeypatch.setattr(config, "TRAIN_THREADS", 3)
    with config.torch_threads(2):
        got = cache.numerics()
    assert got["threads"] == 3 and got["capability"] == torch.backends.cpu.get_cpu_capability()
    assert got["torch"] == torch.__version__.split("+")[0] and got["machine"]


def test_the_version_table_names_every_file_and_a_bump_moves_the_key(monkeypatch):
    entry = Entry("rl", {"x": 1})
    before = entry.path()
    assert before.name.startswith(f"rl-v{cache.VERSIONS['rl']}-")
    monkeypatch.setitem(cache.VERSIONS, "rl", cache.VERSIONS["rl"] + 1)
    assert entry.path() != before and entry.tag == f"rl-v{cache.VERSIONS['rl']}"


def test_an_unknown_kind_is_refused_in_one_line():
    with pytest.raises(ValueError, match="unknown cache kind 'sfft'"):
        Entry("sfft", {})


def test_create_then_load(tmp_path):
    calls = []

    def create():
        calls.append(1)
        return _payload()

    a, from_cache_a = _load(1, create, folder=tmp_path)
    b, from_cache_b = _load(1, create, folder=tmp_path)
    assert (from_cache_a, from_cache_b) == (False, True) and len(calls) == 1
    assert torch.equal(a["w"], b["w"])


def test_cached_never_creates(tmp_path):
    assert cache.cached(_entry(7), folder=tmp_path) is None and not list(tmp_path.iterdir())
    _load(7, folder=tmp_path)
    loaded = cache.cached(_entry(7), folder=tmp_path)
    assert loaded.from_cache and loaded.path == _entry(7).path(tmp_path) and not loaded.shipped


def test_corrupted_file_is_reported_in_one_line_and_retrained(tmp_path):
    path = _entry(2).path(tmp_path)
    path.write_bytes(b"not a checkpoint at all")
    messages = []
    payload, from_cache = _load(2, folder=tmp_path, log=messages.append)
    assert not from_cache and torch.equal(payload["w"], _payload()["w"])
    assert len(messages) == 1 and "unreadable" in messages[0] and "\n" not in messages[0]
    assert try_load(path, _entry(2)) is not None  # rewritten, now readable


def test_truncated_file_is_retrained(tmp_path):
    _load(3, folder=tmp_path)
    path = _entry(3).path(tmp_path)
    path.write_bytes(path.read_bytes()[:40])
    messages = []
    _, from_cache = _load(3, folder=tmp_path, log=messages.append)
    assert not from_cache and len(messages) == 1


def test_file_with_another_config_is_not_used(tmp_path):
    path = _entry(4).path(tmp_path)
    save_atomic({"kind": _entry(4).tag, "config": {"x": 999}, "payload": _payload(7.0)}, path)
    messages = []
    payload, from_cache = _load(4, folder=tmp_path, log=messages.append)
    assert not from_cache and payload["w"][0].item() == 1.0 and "does not match" in messages[0]


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    save_atomic({"a": 1}, tmp_path / "f.pt")
    assert [p.name for p in tmp_path.iterdir()] == ["f.pt"]


def _writer(folder: str, value: float) -> None:
    for _ in range(20):
        obj = {"kind": _entry(5).tag, "config": {"x": 5}, "payload": _payload(value)}
        save_atomic(obj, _entry(5).path(Path(folder)))


def test_concurrent_writers_never_leave_a_broken_file(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), float(v))) for v in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    obj = try_load(_entry(5).path(tmp_path), _entry(5))
    assert obj is not None and obj["payload"]["w"][0].item() in (1.0, 2.0)
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch notes the foreign pickle before refusing it
def test_weights_only_load_refuses_pickled_code(tmp_path):
    import pickle

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    path = _entry(6).path(tmp_path)
    with open(path, "wb") as f:
        pickle.dump({"kind": _entry(6).tag, "config": {"x": 6}, "payload": Evil()}, f)
    messages = []
    _, from_cache = _load(6, folder=tmp_path, log=messages.append)
    assert not from_cache and "unreadable" in messages[0]


def test_shipped_checkpoints_are_found_after_the_cache_and_only_for_the_default_folder(monkeypatch, tmp_path):
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(cache, "SHIPPED_DIR", shipped)
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path / "cache"))
    entry = _entry(5)
    save_atomic({"kind": entry.tag, "config": entry.config, "payload": _payload(5.0)}, entry.path(shipped))
    assert cache.is_cached(entry) and not cache.is_cached(_entry(6))
    loaded = load_or_create(entry, lambda: _payload(0.0))
    assert loaded.from_cache and loaded.shipped and torch.equal(loaded.payload["w"], _payload(5.0)["w"])
    assert not (tmp_path / "cache" / entry.path().name).exists()  # read in place, not copied
    payload, from_cache = _load(5, lambda: _payload(0.0), folder=tmp_path / "other")
    assert not from_cache and torch.equal(payload["w"], _payload(0.0)["w"])  # an explicit folder is all it reads
