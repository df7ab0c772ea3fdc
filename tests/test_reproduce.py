"""`python -m rlvr reproduce`: table, JSON and Markdown outputs, built from the topics' rows (rlvr.narration.TOPICS)."""

import json
import subprocess
import sys

from pathlib import Path

from rlvr.experiments.common import Row
from rlvr.narration import TOPICS
from rlvr.reproduce import build_parser, markdown_report

ROOT = Path(__file__).resolve().parents[1]


def test_one_registry_names_every_notebook_s_topic_and_reproduce_offers_each():
    notebooks = sorted(path.stem for path in (ROOT / "solutions").glob("0*.ipynb"))
    assert sorted(topic.notebook for topic in TOPICS.values()) == notebooks  # notebook 06 included
    assert all(
        callable(topic.rows) and topic.rows.__module__ == f"rlvr.narration.{name}" for name, topic in TOPICS.items()
    )
    only = next(action for action in build_parser()._actions if action.dest == "only")
    assert list(only.choices) == list(TOPICS)


def test_cli_writes_json_and_markdown(tmp_path):
    out_json, out_md = tmp_path / "t.json", tmp_path / "t.md"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlvr",
            "reproduce",
            "--only",
            "bandit",
            "--fast",
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out_json.read_text())
    assert data["rows"] and {"figure", "lecture", "measured", "band", "agrees"} <= set(data["rows"][0])
    assert "bandit" in data["seconds"] and "| section |" in out_md.read_text()
    assert "agree" in proc.stdout


def test_disagreeing_row_is_shown_as_disagreeing():
    rows = [
        Row(section="9", figure="x", lecture=1.0, measured=5.0, band=(0.9, 1.1)),
        Row(section="9", figure="y", lecture=1.0, measured=1.0, band=(0.9, 1.1)),
        Row(section="9", figure="z", lecture="n/a", measured=None),
    ]
    assert [r.agrees for r in rows] == [False, True, None]
    text = markdown_report(rows, {"m": 1.0}, [0], False)
    assert "| NO |" in text and "| yes |" in text and "1 of 2 rows agree" in text
