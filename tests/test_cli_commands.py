"""The command line in-process: build from a module, versions, export formats, verify every ref, exit codes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import stable_explore as se
from stable_explore.cli import main

MODULE = """
import stable_explore as se

FEATURES = se.Features(label=se.ClassLabel(names=["even", "odd"]), x=se.Value("int64"))


def numbers(n):
    for i in range(int(n)):
        yield f"k{i}", {"label": i % 2, "x": i}


def broken():
    yield "k0", {"label": "purple", "x": 0}


def talkative(n, verbose):
    for i in range(int(n)):
        yield f"k{i}", {"label": i % 2, "x": i}


def from_file(path):
    for i, word in enumerate(open(path).read().split()):
        yield f"k{i}", {"label": len(word) % 2, "x": len(word)}


def parity(values):
    for value in values:
        yield {"label": int(value) % 2, "x": int(value)}


def crashes(n):
    for i in range(int(n)):
        if i == 2:
            raise ValueError(f"cannot read item {i}")
        yield f"k{i}", {"label": i % 2, "x": i}


def listing(folder):
    import pathlib

    for i, path in enumerate(sorted(pathlib.Path(folder).glob("*.txt"))):
        yield path.name, {"label": i % 2, "x": len(path.read_text())}


def columns(n):
    for start in range(0, int(n), 4):
        xs = list(range(start, min(int(n), start + 4)))
        yield {"__key__": [f"k{i}" for i in xs], "label": [i % 2 for i in xs], "x": xs}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a generator module in it, as the current directory."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "cli_gens.py").write_text(MODULE)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "home"))
    yield folder
    sys.modules.pop("cli_gens", None)


def test_build_from_a_module_then_reuse(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "10", "-q"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "numbers@" in first
    assert "built: first build of numbers" in first
    assert main(argv) == 0
    assert "reused: same source, arguments and features" in capsys.readouterr().out
    assert se.load("numbers").label_counts() == {"even": 5, "odd": 5}


def test_build_takes_the_fingerprint_options_the_magic_takes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--ignore, --watch and --check-content mean in the CLI what they mean in %stable_cache."""
    base = ["build", "cli_gens:talkative", "--features", "cli_gens:FEATURES", "--arg", "4", "-q"]
    assert main([*base, "--arg", "1", "--ignore", "verbose"]) == 0
    capsys.readouterr()
    assert main([*base, "--arg", "2", "--ignore", "verbose"]) == 0
    assert "reused" in capsys.readouterr().out  # an ignored argument does not change the fingerprint

    words = project / "words.txt"
    words.write_text("aa bbb")
    settings = project / "settings.txt"
    settings.write_text("one")
    build = ["build", "cli_gens:from_file", "--features", "cli_gens:FEATURES", "--arg", "words.txt", "-q"]
    assert main([*build, "--watch", "settings.txt"]) == 0
    capsys.readouterr()
    settings.write_text("two, longer")
    assert main([*build, "--watch", "settings.txt"]) == 0
    assert "built" in capsys.readouterr().out  # a watched file's change is a new build

    # Same size and modification time, other bytes: only --check-content sees it.
    assert main([*build, "--watch", "settings.txt", "--check-content"]) == 0
    capsys.readouterr()
    assert main([*build, "--watch", "settings.txt", "--check-content"]) == 0
    assert "reused" in capsys.readouterr().out
    stat = words.stat()
    words.write_text("cc ddd")
    os.utime(words, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert main([*build, "--watch", "settings.txt"]) == 0
    assert "reused" in capsys.readouterr().out
    assert main([*build, "--watch", "settings.txt", "--check-content"]) == 0
    assert "built" in capsys.readouterr().out


def test_build_batched_takes_dicts_of_lists_as_the_rows_they_hold(project: Path) -> None:
    assert main(["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "10", "-q"]) == 0
    argv = ["build", "cli_gens:columns", "--features", "cli_gens:FEATURES", "--arg", "10", "--batched", "-q"]
    assert main(argv) == 0
    assert se.load("columns").version == se.load("numbers").version


def test_build_errors_name_the_row_and_exit_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["build", "cli_gens:broken", "--features", "cli_gens:FEATURES", "--name", "bad", "-q"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "stable-explore build: row 0, key 'k0', field 'label': unknown class 'purple'" in err
    assert main(["build", "cli_gens:nothing", "--features", "cli_gens:FEATURES"]) == 1
    assert "module 'cli_gens' has no 'nothing'" in capsys.readouterr().err
    assert main(["build", "nomodule", "--features", "cli_gens:FEATURES"]) == 1
    assert "must be MODULE:NAME" in capsys.readouterr().err


def test_a_generator_that_raises_is_shown_from_its_own_code_and_exits_1(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the magic does: one line saying what was kept, then the traceback cut down to the user's code."""
    assert main(["build", "cli_gens:crashes", "--features", "cli_gens:FEATURES", "--arg", "5", "-q"]) == 1
    err = capsys.readouterr().err
    first, *rest = err.strip().splitlines()
    assert first == (
        "stable-explore build: your code raised ValueError; 2 rows were read; nothing was saved; "
        "no version of crashes existed before"
    )
    assert rest[0] == "Traceback (most recent call last):"
    assert 'cli_gens.py", line' in err
    assert rest[-1] == "ValueError: cannot read item 2"
    assert "stable_explore" not in err  # none of our frames


def test_build_in_tasks_gives_the_serial_version(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["build", "cli_gens:parity", "--features", "cli_gens:FEATURES", "--list", "values", *"3141592", "-q"]
    assert main([*argv, "--name", "serial"]) == 0
    assert main([*argv, "--name", "tasks", "--num-proc", "2"]) == 0
    assert "built: first build of tasks" in capsys.readouterr().out
    tasks = se.load("tasks")
    assert (tasks.version, tasks.num_shards) == (se.load("serial").version, 2)
    assert tasks.to_pandas()["x"].tolist() == [3, 1, 4, 1, 5, 9, 2]
    numbers = ["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "4", "--num-proc", "2"]
    assert main(numbers) == 1
    assert "none is a list (arguments: n (str))" in capsys.readouterr().err
    assert main([*argv, "--list", "2x", "1"]) == 1
    assert "'2x' is not an argument name" in capsys.readouterr().err


def test_versions_and_export_formats(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "6", "-q"])
    main(["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "8", "-q"])
    capsys.readouterr()
    assert main(["versions", "numbers"]) == 0
    listing = capsys.readouterr().out
    assert listing.count("numbers") >= 1
    assert len([line for line in listing.splitlines() if line[:1].isalnum()]) >= 3  # header + 2 versions
    assert main(["export", "numbers", "--to", "out.parquet"]) == 0
    assert pq.read_table(project / "out.parquet").column("x").to_pylist() == list(range(8))
    assert main(["export", "numbers", "--to", "table.txt", "--format", "csv"]) == 0
    assert pd.read_csv(project / "table.txt")["label"].tolist()[:2] == ["even", "odd"]
    with pytest.raises(SystemExit) as usage:  # an unknown format is a usage error: exit 2, as argparse's are
        main(["export", "numbers", "--to", "c.xlsx"])
    assert usage.value.code == 2
    said = capsys.readouterr().err
    assert "usage: stable-explore" in said
    assert "cannot tell the format from 'c.xlsx': give --format (one of parquet, csv, jsonl, json)" in said
    assert not (project / "c.xlsx").exists()


def test_verify_reports_every_ref_and_fails_if_any_is_damaged(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "6", "--name", "a", "-q"])
    main(["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "7", "--name", "b", "-q"])
    capsys.readouterr()
    shard = se.load("a").cache_meta.shard_paths[0]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert main(["verify", "a", "b", "nope"]) == 1
    captured = capsys.readouterr()
    assert "b: ok: 1 shard(s), 7 rows" in captured.out
    assert f"stable-explore verify: {shard}: " in captured.err
    assert "stable-explore verify: no dataset named 'nope'" in captured.err


def test_usage_errors_exit_2_and_diff_json(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["export", "numbers"])  # --to is required
    assert usage.value.code == 2
    main(["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "4", "-q"])
    main(["build", "cli_gens:numbers", "--features", "cli_gens:FEATURES", "--arg", "5", "-q"])
    ids = [row["version"] for row in se.versions("numbers")]
    capsys.readouterr()
    assert main(["diff", f"numbers@{ids[1]}", "numbers", "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["rows"]["added"] == ["k4"]


def test_an_empty_build_is_refused_without_allow_empty_and_said_in_our_words(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the build published an empty version, made it latest, and printed a raw Python warning line."""
    notes = project / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("hello")
    build = ["build", "cli_gens:listing", "--features", "cli_gens:FEATURES", "-q"]
    assert main([*build, "--arg", str(notes)]) == 0
    full = se.load("listing")
    capsys.readouterr()
    typo = str(project / "ntoes")  # names nothing: the generator yields no rows
    assert main([*build, "--arg", typo]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"stable-explore build: listing: the source yielded no rows, so nothing was published "
        f"(listing@{full.version[:12]} stays the latest). Check the source's arguments: a path that names no file "
        "or folder yields nothing. To publish an empty version and make it the latest, pass allow_empty=True "
        "(stable-explore build --allow-empty)\n"
    )
    assert se.load("listing").version == full.version
    assert len(se.versions("listing")) == 1  # nothing published
    assert main([*build, "--arg", typo, "--allow-empty"]) == 0
    out, err = capsys.readouterr()
    empty = se.load("listing")
    assert len(empty) == 0
    assert empty.version != full.version
    assert err.startswith(f"stable-explore build: listing: the source yielded no rows, so listing@{empty.version[:12]}")
    assert "Warning" not in err  # no Python warning line (file:line: EmptyBuildWarning ...)
    assert err.count("\n") == 1


def test_a_first_build_that_yields_nothing_leaves_no_dataset(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build = ["build", "cli_gens:listing", "--features", "cli_gens:FEATURES", "-q", "--arg", str(project / "none")]
    assert main(build) == 1
    assert "(listing has no version yet)" in capsys.readouterr().err
    assert "listing" not in str(se.datasets())
