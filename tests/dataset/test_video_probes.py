"""Video probes kept per version: ds.clips and the browser share them, and a new process reads them from the home."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.testing.videos import indexed_video, write_indexed_video

pytest.importorskip("av")

ROOT = Path(__file__).resolve().parents[2]


def _probes_in_a_new_process(home: Path) -> int:
    """How many videos a fresh process probes for ``ds.clips`` and the browser's duration column."""
    script = textwrap.dedent(
        f"""
        import stable_explore as se
        from stable_explore.schema import video_codec
        calls = []
        probe = video_codec.probe
        def counted(source):
            calls.append(1)
            return probe(source)
        video_codec.probe = counted
        ds = se.load("videos", home={str(home)!r})
        clips = ds.clips(window_length=2)
        assert len(clips) == 4 + 5 + 2, len(clips)
        from stable_explore.widgets._video import derived_column
        assert derived_column(ds, "video.frames").to_pylist() == [5.0, 6.0, 3.0]
        print(len(calls))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT)}
    )
    return int(done.stdout.split()[-1])


def test_a_new_process_reads_the_probes_from_the_home(tmp_path: Path) -> None:
    path = write_indexed_video(tmp_path / "files" / "three.mp4", 3)
    rows = [{"video": indexed_video(5)}, {"video": indexed_video(6)}, {"video": path}]
    home = tmp_path / "home"
    se.build(rows, se.Features(video=se.Video()), name="videos", home=home, progress=False)
    assert _probes_in_a_new_process(home) == 3, "the first process probes each video once, for clips and browser"
    assert _probes_in_a_new_process(home) == 0, "the next one reads them back"
    write_indexed_video(path, 3)  # the file is written again: its probe may be stale
    assert _probes_in_a_new_process(home) == 1


def test_gc_removes_the_probes_of_a_deleted_version(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rows = [{"video": indexed_video(4)}, {"video": indexed_video(5)}]
    ds = se.build(rows, se.Features(video=se.Video()), name="videos", home=home, progress=False)
    ds.clips(window_length=2)
    dropped = ds.drop([0]).save(progress=False)  # latest moves on; the first version is untagged
    dropped.clips(window_length=2)
    kept = home / "videos" / "video-probes"
    assert {p.parent.name for p in kept.glob("*/*.json")} == {ds.version, dropped.version}
    se.gc(home=home, keep=0)
    assert {p.parent.name for p in kept.glob("*/*.json")} == {dropped.version}
