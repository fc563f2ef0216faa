"""The writing path: examples -> encoded batches -> shards and metadata; bad input, interrupts, full disks."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stable_explore import EncodingError, Features, Value, verify
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.read.reader import ArrowBackend
from stable_explore.storage.read.shard_file import read_shard
from stable_explore.storage.write.writer import write_sharded_arrow_cache
from tests.conftest import NAMES, pet_rows, write_pets


def test_rows_keep_keys_and_content_hashes(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 10)
    table = read_shard(meta.shard_paths[0])
    assert table.column("__key__").to_pylist() == [f"pet-{i:05d}" for i in range(10)]
    hashes = table.column("__row_hash__").to_pylist()
    assert len(set(hashes)) == 10
    # the same content gives the same hash, whatever the key
    again = write_sharded_arrow_cache(
        ({"image": jpegs[i], "label": NAMES[i % 3], "score": i / 2, "name": f"n{i}"} for i in range(10)),
        pet_features,
        tmp_path / "again",
    )
    again_table = read_shard(again.shard_paths[0])
    assert again_table.column("__key__").to_pylist() == list(range(10))
    assert again_table.column("__row_hash__").to_pylist() == hashes
    assert again.shard_hashes != meta.shard_hashes  # keys differ, so the files differ


def test_labels_are_written_as_names_or_ints(tmp_path: Path, pet_features, jpegs) -> None:
    rows = [{"image": jpegs[0], "label": label, "score": 1.0, "name": "x"} for label in ("dog", 2, 0)]
    meta = write_sharded_arrow_cache(rows, pet_features, tmp_path / "c")
    assert read_shard(meta.shard_paths[0]).column("label").to_pylist() == [1, 2, 0]


def test_empty_generator_gives_zero_shards(tmp_path: Path, pet_features) -> None:
    meta = write_sharded_arrow_cache(iter(()), pet_features, tmp_path / "empty")
    assert (meta.num_rows, meta.num_shards) == (0, 0)
    again = read_sharded_cache_meta(tmp_path / "empty")
    assert again.shard_filenames == []
    backend = ArrowBackend.from_meta(again)
    assert backend.num_rows == 0
    assert "image" in backend.schema.names
    assert verify(tmp_path / "empty").num_rows == 0


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_compressed_shards_round_trip(tmp_path: Path, pet_features, jpegs, compression: str) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 30, compression=compression)
    assert read_sharded_cache_meta(meta.cache_dir).compression == compression
    table = read_shard(meta.shard_paths[0])
    assert table.column("name").to_pylist() == [f"n{i}" for i in range(30)]
    assert table.column("image").to_pylist()[5] == jpegs[5]
    verify(meta.cache_dir)


def test_unknown_compression_is_refused(tmp_path: Path, pet_features, jpegs) -> None:
    with pytest.raises(ValueError, match=r"compression"):
        write_pets(tmp_path, pet_features, jpegs, 3, compression="gzip")


@pytest.mark.parametrize(
    ("bad", "field", "needle"),
    [
        ({"label": "cow"}, "label", "unknown class 'cow'"),
        ({"score": "high"}, "score", "expected float32"),
        ({"image": b"garbage bytes"}, "image", "not an image"),
        ({"name": 5}, "name", "expected string"),
    ],
)
def test_bad_example_names_row_key_and_field_and_keeps_old_cache(
    tmp_path: Path, pet_features, jpegs, bad: dict, field: str, needle: str
) -> None:
    old = write_pets(tmp_path, pet_features, jpegs, 20)
    old_listing = {p.name: p.stat().st_mtime_ns for p in old.cache_dir.iterdir()}

    def rows():
        for key, example in pet_rows(2500, jpegs):
            if key == "pet-01234":
                example = {**example, **bad}
            yield key, example

    with pytest.raises(EncodingError) as info:
        write_sharded_arrow_cache(rows(), pet_features, old.cache_dir, batch_size=500, shard_size_bytes=1)
    message = str(info.value)
    assert "row 1234" in message
    assert "'pet-01234'" in message
    assert f"field {field!r}" in message
    assert needle in message
    assert (info.value.index, info.value.key, info.value.field) == (1234, "pet-01234", field)
    assert {p.name: p.stat().st_mtime_ns for p in old.cache_dir.iterdir()} == old_listing
    assert read_sharded_cache_meta(old.cache_dir).num_rows == 20
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


def test_missing_and_extra_fields_are_named(tmp_path: Path, pet_features, jpegs) -> None:
    rows = [{"image": jpegs[0], "label": 0, "score": 1.0, "name": "a"}, {"image": jpegs[0], "label": 0, "nme": "b"}]
    with pytest.raises(EncodingError, match=r"row 1, key 1: missing field\(s\) \['score', 'name'\].*\['nme'\]"):
        write_sharded_arrow_cache(rows, pet_features, tmp_path / "c")
    with pytest.raises(EncodingError, match=r"row 0.*expected a dict"):
        write_sharded_arrow_cache([[1, 2]], pet_features, tmp_path / "c")


def test_mixed_key_types_are_refused(tmp_path: Path) -> None:
    rows = [(1, {"x": 1}), ("b", {"x": 2})]
    with pytest.raises(EncodingError, match=r"row 1, key 'b'.*one key type"):
        write_sharded_arrow_cache(rows, Features(x=Value("int64")), tmp_path / "c")


def test_keyboard_interrupt_mid_write_leaves_nothing(tmp_path: Path, pet_features, jpegs) -> None:
    old = write_pets(tmp_path, pet_features, jpegs, 7)

    def interrupted():
        yield from pet_rows(1500, jpegs)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_sharded_arrow_cache(interrupted(), pet_features, old.cache_dir, batch_size=100, shard_size_bytes=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pets.lock", "pets"]
    assert read_sharded_cache_meta(old.cache_dir).num_rows == 7
    verify(old.cache_dir)


def test_sigkill_of_a_writer_leaves_the_old_cache_readable_and_is_swept(tmp_path: Path, pet_features, jpegs) -> None:
    old = write_pets(tmp_path, pet_features, jpegs, 9)
    script = textwrap.dedent(
        f"""
        import itertools, sys
        from stable_explore.cache import write_sharded_arrow_cache
        from stable_explore import Features, Value
        def rows():
            for i in itertools.count():
                if i == 3000:
                    print("writing", flush=True)
                yield {{"x": i}}
        write_sharded_arrow_cache(rows(), Features(x=Value("int64")), {str(old.cache_dir)!r}, batch_size=100)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "writing"
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    leftovers = [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    assert leftovers, "the killed writer should have left its temp dir"
    assert read_sharded_cache_meta(old.cache_dir).num_rows == 9
    assert ArrowBackend.from_meta(read_sharded_cache_meta(old.cache_dir)).get_row(8)["name"] == "n8"
    verify(old.cache_dir)
    # the next build beside it sweeps the dead writer's temp dir
    write_pets(tmp_path, pet_features, jpegs, 3)
    assert [p for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
def test_a_full_disk_names_the_shard_and_keeps_the_old_cache(tmp_path: Path, pet_features, jpegs) -> None:
    old = write_pets(tmp_path, pet_features, jpegs, 9)
    # A file-size limit makes the kernel refuse writes past 2 MB (EFBIG), as a full disk would (ENOSPC).
    script = textwrap.dedent(
        f"""
        import resource, signal
        from stable_explore.cache import write_sharded_arrow_cache
        from stable_explore import Features, Value
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2_000_000, 2_000_000))
        rows = ({{"blob": bytes([i % 251]) * 50_000, "n": i}} for i in range(200))
        try:
            write_sharded_arrow_cache(rows, Features(blob=Value("binary"), n=Value("int64")), {str(old.cache_dir)!r})
        except OSError as exc:
            print(type(exc).__name__, exc)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "CacheWriteError [Errno 27] File too large" in proc.stdout  # an OSError, and one of ours
    assert "shard-00000.arrow" in proc.stdout  # the error names the file it could not write
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []
    assert read_sharded_cache_meta(old.cache_dir).num_rows == 9
    verify(old.cache_dir)


def test_rebuild_replaces_the_old_cache_whole(tmp_path: Path, pet_features, jpegs) -> None:
    write_pets(tmp_path, pet_features, jpegs, 50, batch_size=10, shard_size_bytes=1)
    meta = write_pets(tmp_path, pet_features, jpegs, 12)
    assert sorted(p.name for p in meta.cache_dir.iterdir()) == [
        "_metadata.json",
        "content-runs.json",
        "shard-00000.arrow",
        "shard-00000.batches",
    ]
    assert read_sharded_cache_meta(meta.cache_dir).num_rows == 12


def test_progress_callback_reports_rows_and_bytes(tmp_path: Path, pet_features, jpegs) -> None:
    seen: list[tuple[int, int]] = []
    write_pets(
        tmp_path, pet_features, jpegs, 250, batch_size=100, on_batch=lambda rows, nbytes: seen.append((rows, nbytes))
    )
    assert [rows for rows, _ in seen] == [100, 100, 50]
    assert seen[-1][1] > seen[0][1] > 0


def test_string_keys_give_the_pinned_content_digest_from_rows_and_from_column_batches(tmp_path: Path) -> None:
    # A build hashes its string keys once a batch, for the content digest's runs and the duplicate-key check
    # both, from the Python keys where it has them: the digest (and so every version id) must stay the one
    # earlier releases gave, here pinned, from rows and from column batches cut at other places.
    import pyarrow as pa

    from stable_explore import ClassLabel
    from stable_explore.storage.write.writer import write_shards

    features = Features(x=Value("int64"), label=ClassLabel(names=["a", "b"]))
    keys = [f"key-{i:05d}-é" for i in range(5_000)]
    rows = ((key, {"x": i * 3, "label": i % 2}) for i, key in enumerate(keys))
    batches = (
        pa.record_batch(
            {
                "__key__": pa.array(keys[start : start + 700]),
                "x": pa.array([i * 3 for i in range(start, min(start + 700, 5_000))]),
                "label": pa.array([i % 2 for i in range(start, min(start + 700, 5_000))]),
            }
        )
        for start in range(0, 5_000, 700)
    )
    pinned = "xxh3_128-runs:298eb15522a40e9425e14102361e9f26"
    (tmp_path / "rows").mkdir()
    (tmp_path / "columns").mkdir()
    assert write_shards(rows, features, tmp_path / "rows", batch_size=1000)["content_digest"] == pinned
    assert write_shards(batches, features, tmp_path / "columns", batch_size=1000)["content_digest"] == pinned
