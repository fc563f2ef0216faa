"""Issue 12 #4: a flipped bit in a shard is never handed out as data by a plain read."""

from __future__ import annotations

import json
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore import CacheCorruptionError, ClassLabel, Features, Value
from stable_explore.storage.kept import forget
from tests.reliability.trials import edit_metadata, flip_byte

FEATURES = Features(x=Value("int64"), label=ClassLabel(names=["a", "b", "c"]), s=Value("string"))
ROWS = 5000


def numbers(n: int = ROWS):
    for i in range(n):
        yield {"x": 1000 + i, "label": i % 3, "s": f"row-{i}"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _build(home: Path, **options) -> se.CachedDataset:
    return se.build(numbers, FEATURES, name="n", home=home, progress=False, batch_size=500, **options)


def _where_x(shard: Path, value: int) -> int:
    """The file offset of the stored ``x`` of the row whose x is ``value`` (two consecutive values: unambiguous)."""
    return shard.read_bytes().index(value.to_bytes(8, "little") + (value + 1).to_bytes(8, "little"))


def test_the_flipped_bit_of_the_issue_is_refused_naming_shard_batch_and_rows(home: Path) -> None:
    ds = _build(home)
    shard = ds.cache_meta.shard_paths[0]
    flip_byte(shard, _where_x(shard, 1042), 0x10)  # 1042 -> 1058 if it were read
    fresh = se.load("n", home=home)
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.arrow: record batch 0, column 'x' \(rows 0-499 of "
                       r"this shard; rows 0-499 of the version\) does not match its xxh3_64 digest"):  # fmt: skip
        fresh[42]
    assert fresh[4000]["x"] == 5000  # other batches still read
    with pytest.raises(CacheCorruptionError, match="record batch 0"):
        fresh.to_pandas()
    with pytest.raises(CacheCorruptionError, match="record batch 0"):
        fresh.select([3999, 42]).to_pandas()
    # a take checks the rows it hands out (issue 26): row 7 beside the damage is intact, and reads
    assert fresh.select([3999, 7]).to_pandas()["x"].tolist() == [4999, 1007]


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_random_flips_are_always_detected_by_plain_reads(home: Path, compression: str | None) -> None:
    ds = _build(home, compression=compression)
    shard = ds.cache_meta.shard_paths[0]
    pristine = shard.read_bytes()
    expected = list(range(1000, 1000 + ROWS))
    rng = random.Random(12)
    detected = unused = 0
    trials = 40
    for _ in range(trials):
        shard.write_bytes(pristine)
        flip_byte(shard, rng.randrange(len(pristine)), 1 << rng.randrange(8))
        try:
            frame = se.load("n", home=home).to_pandas()
        except CacheCorruptionError:
            detected += 1
            continue
        # no error: the flip hit bytes this read does not use (other columns, padding); the values are the true ones
        assert frame["x"].tolist() == expected, "a flipped bit was read as data"
        assert frame["s"].tolist() == [f"row-{i}" for i in range(ROWS)]
        with pytest.raises(CacheCorruptionError, match="content digest"):
            se.verify(ds)  # ... and verify still finds the damaged file
        unused += 1
    assert detected + unused == trials
    assert detected >= trials // 5  # the rest hit the key and row-hash columns, padding or unused metadata


def test_a_batch_is_checked_once_per_process(home: Path) -> None:
    ds = _build(home)
    assert ds[10]["x"] == 1010
    shard = ds.cache_meta.shard_paths[0]
    stat = shard.stat()
    flip_byte(shard, _where_x(shard, 1010), 0x01)
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same file identity as when it was checked
    forget("opened shards")  # opened again (a kept shard would still hold the bytes it was checked with)
    assert se.load("n", home=home)[10]["x"] == 1011  # checked before in this process: not read again
    forget()
    with pytest.raises(CacheCorruptionError, match="record batch 0"):
        se.load("n", home=home)[10]


def test_a_new_process_and_a_pickled_dataset_check_again(home: Path, tmp_path: Path) -> None:
    ds = _build(home)
    assert ds[10]["x"] == 1010
    flip_byte(ds.cache_meta.shard_paths[0], _where_x(ds.cache_meta.shard_paths[0], 1010))
    pickled = tmp_path / "ds.pickle"
    pickled.write_bytes(pickle.dumps(ds))
    code = (
        "import pickle, sys\n"
        f"ds = pickle.loads(open({str(pickled)!r}, 'rb').read())\n"
        "try:\n    ds[10]\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert result.stdout.startswith("CacheCorruptionError")
    assert "record batch 0" in result.stdout


def test_a_damaged_footer_or_schema_is_refused_when_the_shard_is_mapped(home: Path) -> None:
    ds = _build(home)
    shard = ds.cache_meta.shard_paths[0]
    pristine = shard.read_bytes()
    for offset in range(len(pristine) - 200, len(pristine) - 10, 7):  # the footer: block offsets and the schema
        shard.write_bytes(pristine)
        flip_byte(shard, offset, 0x04)
        forget()
        try:
            values = [row["x"] for row in se.load("n", home=home).with_format("python")]
        except CacheCorruptionError:
            continue
        assert values == list(range(1000, 1000 + ROWS)), f"a flip at byte {offset} of the footer was read as data"


def test_saved_edits_carry_the_batch_digests_of_linked_shards(home: Path) -> None:
    ds = se.build(numbers, FEATURES, name="n", home=home, progress=False, batch_size=500, shard_size="16KB")
    saved = ds.relabel({4500: "a"}).save()
    assert saved.cache_meta.batch_digests is not None
    assert all(d is not None for d in saved.cache_meta.batch_digests)
    assert "record batch digests match" in str(se.verify(saved))
    shard = saved.cache_meta.shard_paths[0]
    flip_byte(shard, _where_x(shard, 1001))
    with pytest.raises(CacheCorruptionError, match="record batch"):
        se.load(f"n@{saved.version}", home=home)[1]


def test_old_caches_without_batch_digests_keep_working_and_verify_says_so(home: Path) -> None:
    ds = _build(home)

    def as_revision_1(raw: dict) -> None:
        del raw["batch_digests"]
        raw["format_revision"] = 1

    edit_metadata(ds.cache_dir, as_revision_1, keep_digest=False)
    old = se.load("n", home=home)
    assert old.cache_meta.batch_digests is None
    assert old[42]["x"] == 1042
    assert len(old.to_pandas()) == ROWS
    assert "no record batch digests (written before format revision 2" in str(se.verify(old))


def test_verify_and_seed_readers_see_format_revision_4(home: Path) -> None:
    ds = _build(home)
    raw = json.loads((ds.cache_dir / "_metadata.json").read_text())
    assert raw["cache_format_version"] == 1  # stable-datasets' reader still reads it
    assert raw["format_revision"] == 4
    sidecar = json.loads((ds.cache_dir / raw["batch_digests"][0]["file"]).read_text())
    assert len(sidecar["digests"]) == ROWS // 500
    assert "10 record batch digests match" in str(se.verify(ds))


def test_a_damaged_or_missing_batch_digests_file_is_named(home: Path) -> None:
    ds = _build(home)
    sidecar = ds.cache_dir / "shard-00000.batches"
    text = sidecar.read_text()
    sidecar.write_text(text.replace('"rows":[500', '"rows":[501', 1)[: len(text)])  # same size, other bytes
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.batches.*damaged or replaced"):
        se.load("n", home=home).to_pandas()
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.batches"):
        se.verify("n", home=home)
    sidecar.unlink()
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.batches.*listed in _metadata.json but missing"):
        se.load("n", home=home)


def test_numpy_takes_of_many_rows_check_every_batch_they_touch(home: Path) -> None:
    ds = _build(home)
    shard = ds.cache_meta.shard_paths[0]
    flip_byte(shard, _where_x(shard, 5990))
    fresh = se.load("n", home=home)
    rows = np.random.default_rng(0).permutation(ROWS)[:3000]
    with pytest.raises(CacheCorruptionError, match=r"record batch 9, column 'x' \(rows 4500-4999"):
        fresh.select(rows).to_pandas()


def test_reading_one_column_checks_only_that_column(home: Path) -> None:
    ds = _build(home)
    shard = ds.cache_meta.shard_paths[0]
    flip_byte(shard, _where_x(shard, 1010))  # damage the x column of batch 0
    fresh = se.load("n", home=home)
    assert fresh.label_counts() == {"a": 1667, "b": 1667, "c": 1666}  # the label column is whole: read, and right
    assert fresh["s"][:2] == ["row-0", "row-1"]
    with pytest.raises(CacheCorruptionError, match="record batch 0, column 'x'"):
        fresh["x"]
