"""The shard writer and metadata reader: layout, atomicity, bad input, corruption."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from stable_explore import CacheCorruptionError, CacheNotFoundError, EncodingError, Features, SchemaError, Value, verify
from stable_explore.backend import ArrowBackend
from stable_explore.cache import (
    ShardedCacheMeta,
    open_shard,
    read_shard,
    read_sharded_cache_meta,
    validate_sharded_cache,
    write_sharded_arrow_cache,
)
from stable_explore.storage.hashing import hash_file
from tests.conftest import NAMES, pet_rows, write_seed_v1_cache

REPO = Path(__file__).resolve().parents[1]


def build(
    tmp_path: Path, pet_features: Features, jpegs: list[bytes], n: int = 100, **kwargs: object
) -> ShardedCacheMeta:
    return write_sharded_arrow_cache(pet_rows(n, jpegs), pet_features, tmp_path / "pets", **kwargs)  # type: ignore[arg-type]


def test_layout_and_metadata_keep_seed_fields_and_add_ours(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 250, batch_size=50, shard_size_bytes=1)
    assert meta.num_rows == 250
    assert meta.num_shards == 5
    assert meta.shard_row_counts == [50] * 5
    files = sorted(p.name for p in (tmp_path / "pets").iterdir())
    assert files == ["_metadata.json"] + [f"shard-{i:05d}.arrow" for i in range(5)]
    raw = json.loads((tmp_path / "pets" / "_metadata.json").read_text())
    for seed_field in (
        "cache_format_version",
        "schema_fingerprint",
        "num_rows",
        "num_shards",
        "shard_row_counts",
        "shard_filenames",
        "shard_size_target_bytes",
    ):
        assert seed_field in raw
    assert raw["cache_format_version"] == 1
    assert Features.from_dict(raw["features"]) == pet_features
    assert all(h.startswith("xxh3_128:") for h in raw["shard_hashes"])
    assert raw["shard_sizes"] == [p.stat().st_size for p in meta.shard_paths]
    assert raw["key_type"] == "string"
    # nothing but the published directory and its lock is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pets.lock", "pets"]


def test_shard_digests_streamed_while_writing_match_the_files(tmp_path: Path) -> None:
    # ~2.4 MB per batch of incompressible bytes: each shard is digested in several steps while it is
    # written, and the recorded digest must still be the digest of the whole file as it lies on disk.
    rng = np.random.default_rng(7)
    blobs = [rng.bytes(24_000) for _ in range(16)]
    features = Features(blob=Value("binary"), n=Value("int64"))
    rows = ({"blob": blobs[i % 16], "n": i} for i in range(2_000))
    meta = write_sharded_arrow_cache(rows, features, tmp_path / "c", batch_size=100, shard_size_bytes=20 * 2**20)
    assert meta.num_shards == 3
    assert meta.shard_hashes == [hash_file(p) for p in meta.shard_paths]
    assert meta.shard_sizes == [p.stat().st_size for p in meta.shard_paths]
    assert verify(tmp_path / "c").hashed


def test_rows_keep_keys_and_content_hashes(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 10)
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
    meta = build(tmp_path, pet_features, jpegs, 30, compression=compression)
    assert read_sharded_cache_meta(meta.cache_dir).compression == compression
    table = read_shard(meta.shard_paths[0])
    assert table.column("name").to_pylist() == [f"n{i}" for i in range(30)]
    assert table.column("image").to_pylist()[5] == jpegs[5]
    verify(meta.cache_dir)


def test_unknown_compression_is_refused(tmp_path: Path, pet_features, jpegs) -> None:
    with pytest.raises(ValueError, match=r"compression"):
        build(tmp_path, pet_features, jpegs, 3, compression="gzip")


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
    old = build(tmp_path, pet_features, jpegs, 20)
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
    old = build(tmp_path, pet_features, jpegs, 7)

    def interrupted():
        yield from pet_rows(1500, jpegs)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_sharded_arrow_cache(interrupted(), pet_features, old.cache_dir, batch_size=100, shard_size_bytes=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pets.lock", "pets"]
    assert read_sharded_cache_meta(old.cache_dir).num_rows == 7
    verify(old.cache_dir)


def test_sigkill_of_a_writer_leaves_the_old_cache_readable_and_is_swept(tmp_path: Path, pet_features, jpegs) -> None:
    old = build(tmp_path, pet_features, jpegs, 9)
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
    build(tmp_path, pet_features, jpegs, 3)
    assert [p for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
def test_a_full_disk_names_the_shard_and_keeps_the_old_cache(tmp_path: Path, pet_features, jpegs) -> None:
    old = build(tmp_path, pet_features, jpegs, 9)
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
    build(tmp_path, pet_features, jpegs, 50, batch_size=10, shard_size_bytes=1)
    meta = build(tmp_path, pet_features, jpegs, 12)
    assert sorted(p.name for p in meta.cache_dir.iterdir()) == ["_metadata.json", "shard-00000.arrow"]
    assert read_sharded_cache_meta(meta.cache_dir).num_rows == 12


def test_verify_names_a_shard_with_one_flipped_byte(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 300, batch_size=100, shard_size_bytes=1)
    assert "digests match" in str(verify(meta.cache_dir))
    target = meta.shard_paths[1]
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises(CacheCorruptionError) as info:
        verify(meta.cache_dir)
    assert info.value.path == target
    assert "shard-00001.arrow" in str(info.value)
    assert "does not match" in str(info.value)


def test_truncated_shard_is_reported_with_its_path(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 200, batch_size=100, shard_size_bytes=1)
    target = meta.shard_paths[0]
    target.write_bytes(target.read_bytes()[:-300])
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.arrow.*truncated"):
        read_sharded_cache_meta(meta.cache_dir)
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.arrow"):
        open_shard(target)


def test_truncated_shard_raises_in_a_subprocess_and_never_crashes(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 200, batch_size=50)
    target = meta.shard_paths[0]
    target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    script = textwrap.dedent(
        f"""
        from stable_explore.backend import ArrowBackend
        from stable_explore.errors import CacheCorruptionError
        backend = ArrowBackend(shard_paths=[{str(target)!r}], shard_row_counts=[200])
        try:
            backend.take([5, 150, 3]).to_pylist()
        except CacheCorruptionError as exc:
            print("raised:", exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"raised: {target}" in done.stdout


def test_random_byte_flips_never_crash_the_interpreter(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 120, batch_size=40)
    script = textwrap.dedent(
        f"""
        import random, shutil, pathlib
        from stable_explore.backend import ArrowBackend
        from stable_explore.cache import open_shard
        from stable_explore.errors import CacheCorruptionError
        source = pathlib.Path({str(meta.shard_paths[0])!r})
        clean = source.read_bytes()
        work = pathlib.Path({str(tmp_path / "fuzz.arrow")!r})
        rng = random.Random(1234)
        outcomes = {{"raised": 0, "read": 0}}
        for trial in range(150):
            data = bytearray(clean)
            for _ in range(rng.choice([1, 1, 2, 8])):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            work.write_bytes(bytes(data))
            try:
                backend = ArrowBackend(shard_paths=[work], shard_row_counts=[120])
                table = backend.take([3, 100, 7, 3])
                table.to_pylist()
                backend.slice(0, 120).column("name").to_pylist()
                outcomes["read"] += 1
            except CacheCorruptionError:
                outcomes["raised"] += 1
        print(outcomes)
        assert outcomes["raised"] > 0 and outcomes["read"] > 0
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"interpreter died with {done.returncode}: {done.stderr[-2000:]}"
    assert "raised" in done.stdout


def test_tampered_metadata_paths_are_rejected(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 5)
    (tmp_path / "x").write_bytes(meta.shard_paths[0].read_bytes())
    meta_path = meta.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    for evil in ("../x", "/etc/passwd", "sub/shard.arrow", "..", "a\\b"):
        meta_path.write_text(json.dumps({**raw, "shard_filenames": [evil]}))
        with pytest.raises(CacheCorruptionError, match=r"_metadata\.json") as info:
            read_sharded_cache_meta(meta.cache_dir)
        assert info.value.path == meta_path


def test_symlinked_shard_pointing_outside_is_rejected(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 5)
    outside = tmp_path / "outside.arrow"
    meta.shard_paths[0].rename(outside)
    meta.shard_paths[0].symlink_to(outside)
    with pytest.raises(CacheCorruptionError, match="outside"):
        read_sharded_cache_meta(meta.cache_dir)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"num_rows": 999}, "add up"),
        ({"num_shards": 3}, "claims 3 shards"),
        ({"shard_row_counts": [-5]}, "non-negative"),
        ({"cache_format_version": 7}, "unsupported"),
        ({"features": {"x": {"_type": "Nope"}}}, "features"),
        ({"shard_hashes": "abc"}, "shard_hashes"),
    ],
)
def test_inconsistent_metadata_is_reported(tmp_path: Path, pet_features, jpegs, change: dict, needle: str) -> None:
    meta = build(tmp_path, pet_features, jpegs, 5)
    meta_path = meta.cache_dir / "_metadata.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), **change}))
    with pytest.raises(CacheCorruptionError, match=needle):
        read_sharded_cache_meta(meta.cache_dir)


def test_garbled_metadata_json_and_missing_cache(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 5)
    (meta.cache_dir / "_metadata.json").write_text("{not json")
    with pytest.raises(CacheCorruptionError, match="not valid JSON"):
        read_sharded_cache_meta(meta.cache_dir)
    with pytest.raises(CacheNotFoundError, match="no cache at"):
        read_sharded_cache_meta(tmp_path / "nowhere")
    (meta.cache_dir / "_metadata.json").unlink()
    with pytest.raises(FileNotFoundError):
        read_sharded_cache_meta(meta.cache_dir)


def test_validate_compares_the_schema(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 5)
    assert validate_sharded_cache(meta.cache_dir, pet_features).num_rows == 5
    with pytest.raises(SchemaError, match="rebuild"):
        validate_sharded_cache(meta.cache_dir, Features(x=Value("int64")))


def test_seed_v1_cache_opens_validates_and_verifies(tmp_path: Path, jpegs) -> None:
    tables = [
        pa.table({"image": pa.array(jpegs[:3], pa.binary()), "label": pa.array([0, 1, 2], pa.int64())}),
        pa.table({"image": pa.array(jpegs[3:5], pa.binary()), "label": pa.array([2, 2], pa.int64())}),
    ]
    write_seed_v1_cache(tmp_path / "seed", tables)
    meta = read_sharded_cache_meta(tmp_path / "seed")
    assert meta.is_seed_v1
    assert meta.features is None
    from stable_explore import ClassLabel, Image

    features = Features(image=Image(), label=ClassLabel(names=NAMES))
    assert validate_sharded_cache(tmp_path / "seed", features).num_rows == 5
    with pytest.raises(SchemaError, match="no column 'name'"):
        validate_sharded_cache(tmp_path / "seed", Features(name=Value("string")))
    backend = ArrowBackend.from_meta(meta)
    assert backend.schema.field("image").type == pa.large_binary()
    assert backend.take([4, 0]).column("image").to_pylist() == [jpegs[4], jpegs[0]]
    report = verify(tmp_path / "seed")
    assert not report.hashed
    assert "no digests" in str(report)


def test_progress_callback_reports_rows_and_bytes(tmp_path: Path, pet_features, jpegs) -> None:
    seen: list[tuple[int, int]] = []
    build(tmp_path, pet_features, jpegs, 250, batch_size=100, on_batch=lambda rows, nbytes: seen.append((rows, nbytes)))
    assert [rows for rows, _ in seen] == [100, 100, 50]
    assert seen[-1][1] > seen[0][1] > 0


def test_row_segments_are_checked_against_their_shards(tmp_path: Path, pet_features, jpegs) -> None:
    meta = build(tmp_path, pet_features, jpegs, 100, batch_size=50, shard_size_bytes=1)
    meta_path = meta.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    del raw["metadata_digest"]  # hand-made segments, as metadata written before format revision 2
    segmented = {**raw, "cache_format_version": 2, "row_segments": [[1, 10, 40], [0, 0, 50]], "num_rows": 90}
    meta_path.write_text(json.dumps(segmented))
    again = read_sharded_cache_meta(meta.cache_dir)
    backend = ArrowBackend.from_meta(again)
    assert backend.num_rows == 90
    assert backend.take([0, 39, 40]).column("name").to_pylist() == ["n60", "n99", "n0"]
    for bad in ([[2, 0, 1]], [[0, 40, 20]], [[0, -1, 5]], [[0, 0, 0]], "x"):
        meta_path.write_text(json.dumps({**segmented, "row_segments": bad}))
        with pytest.raises(CacheCorruptionError, match=r"row segment|row_segments"):
            read_sharded_cache_meta(meta.cache_dir)
    meta_path.write_text(json.dumps({**segmented, "num_rows": 91}))
    with pytest.raises(CacheCorruptionError, match="add up"):
        read_sharded_cache_meta(meta.cache_dir)
