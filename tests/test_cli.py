"""The stable-explore command line: every subcommand, its output and its exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stable_explore import CachedDataset


def home_of(ds: CachedDataset) -> Path:
    return ds.cache_dir.parents[2]


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "stable_explore.cli", "--home", str(home), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_cli_diff_show_ls_verify_export(pets: CachedDataset, tmp_path: Path) -> None:
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
    out = tmp_path / "export.parquet"
    assert run_cli(home, "export", "pets@clean", "--to", str(out)).returncode == 0
    import pyarrow.parquet as pq

    assert pq.read_table(out).num_rows == 299
    missing = run_cli(home, "show", "pets@nope")
    assert missing.returncode == 1
    assert "no version or tag 'nope'" in missing.stderr
    assert "freed" in run_cli(home, "gc", "--keep", "1").stdout
