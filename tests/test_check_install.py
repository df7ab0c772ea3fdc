"""rlvr.check_install: a notebook's setup cell stops in one line when the kernel imports another version of rlvr."""

import pytest

import rlvr


def _checkout(tmp_path, version):
    """A fake course checkout with `version` in its pyproject.toml; returns its notebooks folder."""
    (tmp_path / "shared" / "rlvr").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "rlvr"\nversion = "{version}"\n')
    (tmp_path / "notebooks").mkdir()
    return tmp_path / "notebooks"


def test_matching_checkout_passes(tmp_path):
    rlvr.check_install(_checkout(tmp_path, rlvr.__version__))


def test_other_version_stops_with_the_fix(tmp_path):
    with pytest.raises(RuntimeError, match=r"rlvr 9\.9\.9.*pip install -e \.") as info:
        rlvr.check_install(_checkout(tmp_path, "9.9.9"))
    assert "\n" not in str(info.value)


def test_outside_a_checkout_says_nothing(tmp_path):
    rlvr.check_install(tmp_path)


def test_this_checkout_matches():
    rlvr.check_install()
