"""The ``stable-explore`` command line: ls, show, diff, verify, gc, export, tag; their output and exit status.

Most tests call ``stable_explore.cli.main`` in this process (fast, and the output is captured);
one runs ``python -m stable_explore.cli`` in a subprocess, as a user's shell would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import stable_explore as se
from stable_explore import CachedDataset, Features
from stable_explore.cli import main
from tests.conftest import pet_rows


@pytest.fixture
def raw(home: Path, pet_features: Features, jpegs: list[bytes]) -> CachedDataset:
    """12 pets (4 of each label) in 2 shards."""
    return se.build(
        pet_rows(12, jpegs), pet_features, name="pets", home=home, progress=False, batch_size=6, shard_size=1,
        description="Pets <subset>", license="CC-BY-4.0",
    )  # fmt: skip


@pytest.fixture
def clean(raw: CachedDataset, capsys: pytest.CaptureFixture[str]) -> CachedDataset:
    """``raw`` with row 3 dropped and row 0 relabelled cat -> dog, tagged ``clean`` (now the latest)."""
    saved = raw.drop([3]).relabel({0: "dog"}).save(message="fix", tag="clean")
    capsys.readouterr()  # the save's progress bar
    return saved


def cli(capsys: pytest.CaptureFixture[str], home: Path | None, *args: str) -> tuple[int, str, str]:
    """Run the command line in this process: (exit status, stdout, stderr)."""
    code = main([*(["--home", str(home)] if home is not None else []), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ls_lists_datasets_then_the_versions_of_one(
    home: Path, raw: CachedDataset, clean: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, home, "ls")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"datasets in {home}"
    assert lines[1].split() == ["name", "latest", "rows", "size", "versions", "created", "tags"]
    assert lines[2].split()[:3] == ["pets", clean.version, "11"]
    assert lines[2].split()[-1] == "clean"
    code, out, err = cli(capsys, home, "ls", "pets")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "versions of pets"
    assert [line.split()[0] for line in lines[2:]] == [clean.version, raw.version]  # newest first
    assert f"{raw.version}  fix" in lines[2]  # parent and message
    assert lines[2].endswith("clean, latest")


def test_ls_of_an_empty_home_says_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    code, out, _ = cli(capsys, tmp_path / "empty", "ls")
    assert code == 0
    assert out.splitlines()[-1] == "(none)"


@pytest.mark.parametrize("command", [["ls"], ["ls", "pets"], ["show", "pets"], ["fsck"], ["gc"], ["versions", "pets"]])
def test_a_missing_home_is_named_not_listed_as_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """Before: `--home <a typo> ls` printed "(none)" and exited 0, as if the home were empty."""
    missing = tmp_path / "no-such-home"
    code, out, err = cli(capsys, missing, *command)
    assert (code, out) == (1, "")
    assert err == (
        f"stable-explore {command[0]}: the home {missing} (from --home) does not exist: check the path "
        "(a build or a pull creates a home)\n"
    )
    assert not missing.exists()  # nothing was created
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(missing))
    code, _, err = cli(capsys, None, *command)
    assert code == 1
    assert f"the home {missing} (from $STABLE_EXPLORE_HOME) does not exist" in err
    (tmp_path / "a-file").write_text("x")
    code, _, err = cli(capsys, tmp_path / "a-file", *command)
    assert code == 1
    assert "is a file, not a folder" in err


def test_show_prints_size_schema_labels_and_lineage(
    home: Path, raw: CachedDataset, clean: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, home, "show", "pets@clean")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"CachedDataset(pets@{clean.version}: 11 rows, 2 shards, ")  # relabel: a cell patch
    assert "description: Pets <subset>" in lines  # plain text: nothing is escaped in a terminal
    assert "license: CC-BY-4.0" in lines
    assert "message: fix" in lines  # this version's own message
    assert f"parent: {raw.version}  (a build)" in lines  # and the parent's, not this one's again
    assert "  label: ClassLabel(names=['cat', 'dog', 'bird'])" in lines
    assert "labels: cat 2, dog 5, bird 4" in lines
    assert lines[-1].startswith("shards: 2 (")
    assert lines[-1].endswith(f") in {clean.cache_dir}")
    _, by_prefix, _ = cli(capsys, home, "show", f"pets@{raw.version[:6]}")
    assert by_prefix.startswith(f"CachedDataset(pets@{raw.version}: 12 rows")
    assert "parent:" not in by_prefix
    _, by_path, _ = cli(capsys, None, "show", str(raw.cache_dir))
    assert by_path.startswith(f"CachedDataset(pets@{raw.version}: 12 rows")


def test_show_leaves_out_labels_a_dataset_does_not_have(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="plain", home=tmp_path, progress=False)
    code, out, _ = cli(capsys, tmp_path, "show", "plain")
    assert code == 0
    assert "  x: Value(dtype='int64')" in out
    assert "labels:" not in out
    assert "description:" not in out


def test_diff_in_words_and_as_json(
    home: Path, raw: CachedDataset, clean: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, home, "diff", f"pets@{raw.version[:8]}", "pets@clean")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"pets@{raw.version} -> pets@{clean.version}"
    assert lines[1] == "+0 -1 ~1 rows; label: cat->dog x1"
    assert "~ pet-00000: label: 'cat' -> 'dog'" in out
    assert "- pet-00003" in out
    code, out, _ = cli(capsys, home, "diff", f"pets@{raw.version}", "pets", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["rows"]["removed"] == ["pet-00003"]
    assert data["rows"]["changed"] == {"pet-00000": {"label": ["cat", "dog"]}}
    _, same, _ = cli(capsys, home, "diff", "pets@clean", "pets")
    assert "identical" in same


def test_verify_reports_each_version_and_fails_on_damage(
    home: Path, raw: CachedDataset, clean: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, home, "verify", "pets", f"pets@{raw.version}")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("pets: ok: 2 shard(s), 11 rows")
    assert lines[1].startswith(f"pets@{raw.version}: ok: 2 shard(s), 12 rows")
    assert all("digests match" in line for line in lines)
    shard = raw.cache_dir / "shard-00001.arrow"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    code, out, err = cli(capsys, home, "verify", f"pets@{raw.version}")
    assert code == 1
    assert out == ""
    assert err.startswith(f"stable-explore verify: {shard}: ")
    assert "does not match" in err
    assert err.count("\n") == 1  # one line, no traceback


def test_verify_checks_every_version_even_after_a_damaged_one(
    home: Path, raw: CachedDataset, clean: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = raw.cache_dir / "shard-00000.arrow"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    # a damaged copy in raw's folder only: clean hard-links the same file, which stays intact
    (raw.cache_dir / "damaged").write_bytes(bytes(data))
    (raw.cache_dir / "damaged").replace(shard)
    code, out, err = cli(capsys, home, "verify", f"pets@{raw.version}", "pets@clean")
    assert code == 1
    assert str(shard) in err
    assert "pets@clean: ok" in out


def test_gc_frees_untagged_versions_and_reports_it(
    home: Path, raw: CachedDataset, clean: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, home, "gc", "--keep", "0")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"removed pets@{raw.version}"  # each version removed is named
    assert out.splitlines()[-1].startswith("freed ")
    assert out.strip().splitlines()[-1] != "freed 0 B"
    assert not raw.cache_dir.exists()  # untagged and not the latest
    assert clean.cache_dir.is_dir()
    assert [row["version"] for row in se.versions("pets", home=home)] == [clean.version]
    code, out, _ = cli(capsys, home, "gc", "pets")
    assert (code, out.strip()) == (0, "freed 0 B")


def test_gc_refuses_an_unknown_dataset_and_a_negative_keep(
    home: Path, raw: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, home, "gc", "nope")
    assert (code, out) == (1, "")
    assert err.startswith("stable-explore gc: no dataset named 'nope'")
    code, _, err = cli(capsys, home, "gc", "--keep", "-1")
    assert code == 1
    assert "keep must be >= 0, got -1" in err
    assert raw.cache_dir.is_dir()


def test_export_to_parquet_and_csv(
    home: Path, tmp_path: Path, clean: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out" / "pets.parquet"
    code, out, err = cli(capsys, home, "export", "pets@clean", "--to", str(target))
    assert (code, err) == (0, "")
    assert out.strip() == f"wrote 11 rows to {target}"
    table = pq.read_table(target)
    assert table.num_rows == 11
    assert table.column_names == ["image", "label", "score", "name", "__key__"]
    assert table.column("__key__").to_pylist() == se.load("pets@clean", home=home).keys()  # from_parquet keys by it
    assert table.column("label").to_pylist()[:2] == [1, 1]  # labels stay ints; row 0 is a dog now
    csv = tmp_path / "pets.csv"
    code, out, _ = cli(capsys, home, "export", "pets", "--to", str(csv))
    assert code == 0
    assert out.strip() == f"wrote 11 rows to {csv}"
    frame = pd.read_csv(csv, index_col=0)
    assert list(frame.columns) == ["label", "score", "name"]  # images are left out of a CSV
    assert frame.index.name == "key"
    assert frame.index.tolist() == se.load("pets", home=home).keys()  # the rows' keys, as the version holds them
    assert frame["label"].tolist()[:3] == ["dog", "dog", "bird"]
    assert frame["name"].tolist()[:3] == ["n0", "n1", "n2"]


def test_export_to_a_path_it_cannot_write_is_a_clear_error(
    home: Path, tmp_path: Path, raw: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, _, err = cli(capsys, home, "export", "pets", "--to", str(blocker / "pets.parquet"))
    assert code == 1
    assert err.startswith("stable-explore export: ")
    assert str(blocker) in err


def test_tag_points_a_tag_at_a_version_and_refuses_bad_names(
    home: Path, raw: CachedDataset, clean: CachedDataset, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, home, "tag", f"pets@{raw.version[:6]}", "raw")
    assert (code, err) == (0, "")
    assert out.strip() == f"raw -> {raw.version}"
    assert se.load("pets@raw", home=home).version == raw.version
    assert se.load("pets", home=home).version == clean.version  # latest did not move
    code, out, err = cli(capsys, home, "tag", f"pets@{raw.version}", "latest")  # a user may choose the latest
    assert (code, err) == (0, "")
    assert se.load("pets", home=home).version == raw.version
    code, _, err = cli(capsys, home, "tag", "pets", "../escape")
    assert code == 1
    assert "tag must start with a letter or digit" in err
    assert not (home / "escape").exists()
    assert sorted(se.datasets(home=home)[0]["tags"]) == ["clean", "raw"]


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["show", "pets@nope"], "show"),
        (["diff", "pets", "pets@nope"], "diff"),
        (["verify", "pets@nope"], "verify"),
        (["export", "pets@nope", "--to", "x.parquet"], "export"),
        (["tag", "pets@nope", "t"], "tag"),
    ],
)
def test_a_bad_ref_exits_1_with_a_message_listing_what_exists(
    home: Path, raw: CachedDataset, capsys: pytest.CaptureFixture[str], args: list[str], command: str
) -> None:
    code, out, err = cli(capsys, home, *args)
    assert code == 1
    assert out == ""
    assert err == (
        f"stable-explore {command}: pets has no version or tag 'nope'; versions: ['{raw.version}']; tags: ['latest']\n"
    )


@pytest.mark.parametrize("args", [["show", "nope"], ["ls", "nope"], ["diff", "nope", "pets"]])
def test_an_unknown_dataset_exits_1_and_lists_the_datasets(
    home: Path, raw: CachedDataset, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = cli(capsys, home, *args)
    assert (code, out) == (1, "")
    assert err == f"stable-explore {args[0]}: no dataset named 'nope' in {home}; datasets: ['pets']\n"


def test_a_missing_cache_path_exits_1_and_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, None, "verify", str(tmp_path / "nowhere"))
    assert code == 1
    assert err.startswith(f"stable-explore verify: no cache at {tmp_path / 'nowhere'}")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "the following arguments are required: command"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["diff", "pets"], "the following arguments are required: b"),
        (["export", "pets"], "the following arguments are required: --to"),
        (["gc", "--keep", "many"], "invalid int value: 'many'"),
    ],
)
def test_usage_errors_exit_2_with_argparse_usage(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: stable-explore")
    assert needle in err


def test_the_home_comes_from_the_environment(
    home: Path, raw: CachedDataset, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(home))
    code, out, _ = cli(capsys, None, "ls")
    assert code == 0
    assert out.splitlines()[0] == f"datasets in {home}"
    assert "pets" in out


def home_of(ds: CachedDataset) -> Path:
    return ds.cache_dir.parents[2]


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "stable_explore.cli", "--home", str(home), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_cli_diff_show_ls_verify_export(pets: CachedDataset, tmp_path_factory: pytest.TempPathFactory) -> None:
    home = home_of(pets)
    fixed = pets.relabel({0: "dog"}).drop([9]).save(message="fix", tag="clean")
    done = run_cli(home, "diff", f"pets@{pets.version}", "pets@clean")
    assert done.returncode == 0, done.stderr
    assert "+0 -1 ~1 rows; label: cat->dog x1" in done.stdout
    assert "~ pet-00000: label: 'cat' -> 'dog'" in done.stdout
    assert "- pet-00009" in done.stdout
    machine = json.loads(run_cli(home, "diff", f"pets@{pets.version}", "pets@clean", "--json").stdout)
    assert machine["rows"]["removed"] == ["pet-00009"]
    assert machine["labels"]["label"]["relabelled"] == [["cat", "dog", 1]]
    listing = run_cli(home, "ls").stdout
    assert "pets" in listing
    assert fixed.version in listing
    assert "fix" in run_cli(home, "ls", "pets").stdout
    shown = run_cli(home, "show", "pets@clean").stdout
    assert "labels: cat 98, dog 101, bird 100" in shown
    assert f"parent: {pets.version}" in shown
    assert "digests match" in run_cli(home, "verify", "pets").stdout
    out = tmp_path_factory.mktemp("exports") / "export.parquet"  # outside the home (the pets fixture's tmp_path)
    assert run_cli(home, "export", "pets@clean", "--to", str(out)).returncode == 0
    import pyarrow.parquet as pq

    assert pq.read_table(out).num_rows == 299
    missing = run_cli(home, "show", "pets@nope")
    assert missing.returncode == 1
    assert "no version or tag 'nope'" in missing.stderr
    assert "freed" in run_cli(home, "gc", "--keep", "1").stdout


def test_every_argument_of_every_command_has_help() -> None:
    """`stable-explore CMD --help` explains each positional too, not only the options."""
    import argparse

    from stable_explore.cli import _parser

    parser = _parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(commands.choices) >= 12
    for name, command in commands.choices.items():
        for action in command._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"stable-explore {name}: {action.dest} has no help"


def test_show_says_when_the_parent_was_collected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = se.build(
        [{"x": i} for i in range(3)], se.Features(x=se.Value("int64")), name="p", home=tmp_path, progress=False
    )
    child = ds.drop([0]).save("one", progress=False)
    grandchild = child.drop([0]).save("two", progress=False)
    se.gc(home=tmp_path)
    code, out, _ = cli(capsys, tmp_path, "show", "p")
    assert code == 0
    assert "message: two" in out.splitlines()
    assert f"parent: {child.version}  (not in this home: removed by gc, or never pushed or pulled here)" in (
        out.splitlines()
    )
    assert grandchild.version in out


def test_show_of_a_pushed_version_does_not_blame_gc_for_a_parent_never_pushed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a version pushed without its parent said the parent "was deleted by gc"; gc never ran."""
    ds = se.build(
        [{"x": i} for i in range(3)], se.Features(x=se.Value("int64")), name="p", home=tmp_path / "a", progress=False
    )
    child = ds.drop([0]).save("one", progress=False)
    se.push(child, tmp_path / "b", progress=False)
    code, out, _ = cli(capsys, tmp_path / "b", "show", "p")
    assert code == 0
    assert f"parent: {ds.version}  (not in this home: removed by gc, or never pushed or pulled here)" in (
        out.splitlines()
    )
