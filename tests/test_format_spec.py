"""docs/format.md is true: a reader written from that page alone reads and checks what stable-explore writes.

The reader below uses only json, hashlib, struct, xxhash and pyarrow's IPC reader (no stable_explore code);
each step cites the section of docs/format.md it follows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import math
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
import xxhash
from PIL import Image as PILImage

import stable_explore as se

MASK = (1 << 64) - 1
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


# --- a reader written from docs/format.md ------------------------------------------------------------


def canonical_json(value: Any) -> str:
    """'Version id': keys sorted at every level, no white space, non-ASCII as itself."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def resolve(home: Path, name: str, wanted: str = "latest") -> Path:
    """'The catalog': a tag names a version; otherwise the one version whose id starts with ``wanted``."""
    versions = home / name / "versions"
    ids = [p.name for p in versions.iterdir() if not p.name.startswith(".") and (p / "_metadata.json").is_file()]
    ref = home / name / "refs" / wanted
    if ref.is_file() and ref.read_text().strip() in ids:
        return versions / ref.read_text().strip()
    (match,) = [i for i in ids if i.startswith(wanted)]
    return versions / match


def mix(x: int) -> int:
    """'Row hashes': the SplitMix64 finaliser on unsigned 64-bit integers."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):  # a struct (a box)
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return repr(value)
    return value


def value_hash(value: Any, arrow_type: pa.DataType) -> int:
    """'Row hashes': one value's 64-bit hash."""
    if value is None:
        return 0x9E3779B97F4A7C15
    length = len(str(arrow_type))
    if pa.types.is_temporal(arrow_type):  # the integer Arrow stores: ticks of the unit since the epoch (UTC)
        value = pa.array([value], arrow_type).view(pa.int32() if arrow_type.bit_width == 32 else pa.int64())[0]
        return mix((value.as_py() + length) & MASK)
    if pa.types.is_boolean(arrow_type) or pa.types.is_integer(arrow_type):
        return mix((int(value) + length) & MASK)
    if pa.types.is_floating(arrow_type):
        number = float(value)
        number = 0.0 if number == 0 else (math.nan if math.isnan(number) else number)
        bits = struct.unpack("<Q", struct.pack("<d", number))[0]
        return mix((bits + length) & MASK)
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return xxhash.xxh3_64_intdigest(value.encode())
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return xxhash.xxh3_64_intdigest(value)
    return xxhash.xxh3_64_intdigest(canonical_json(jsonable(value)).encode())


def row_hash(row: dict[str, Any], schema: pa.Schema, columns: list[str]) -> int:
    accumulator = 0x243F6A8885A308D3
    for position, column in enumerate(columns):
        accumulator = mix(accumulator ^ value_hash(row[column], schema.field(column).type) ^ (position + 1))
    return accumulator


_M64 = (1 << 64) - 1


def _splitmix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def runs_digest(kind: str, keys: list, hashes: list, recorded_runs: list | None) -> str:
    """The content digest of format revision 3, computed row by row as docs/format.md says."""
    runs: list[list] = []
    key_stream, length_stream, row_stream, count = xxhash.xxh3_128(), xxhash.xxh3_128(), xxhash.xxh3_128(), 0
    for key, value in zip(keys, hashes, strict=True):
        if kind == "string":
            encoded = key.encode()
            key_stream.update(encoded)
            length_stream.update(struct.pack("<q", len(encoded)))
            key_hash = xxhash.xxh3_64_intdigest(encoded)
        else:
            key_stream.update(struct.pack("<q", key))
            key_hash = _splitmix(key & _M64)
        row_stream.update(struct.pack("<Q", value))
        count += 1
        leaf = _splitmix(key_hash ^ _splitmix(value ^ 0x5851F42D4C957F2D))
        if (leaf >> 40) & 0xFFF == 0:
            joined = key_stream.hexdigest() + length_stream.hexdigest() + row_stream.hexdigest()
            runs.append([count, xxhash.xxh3_128_hexdigest(joined.encode())])
            key_stream, length_stream, row_stream, count = xxhash.xxh3_128(), xxhash.xxh3_128(), xxhash.xxh3_128(), 0
    if count:
        joined = key_stream.hexdigest() + length_stream.hexdigest() + row_stream.hexdigest()
        runs.append([count, xxhash.xxh3_128_hexdigest(joined.encode())])
    if recorded_runs is not None:
        assert recorded_runs == runs
    top = (kind if runs else "") + "".join(f"{rows}:{digest};" for rows, digest in runs)
    return "xxh3_128-runs:" + xxhash.xxh3_128_hexdigest(top.encode())


def small_file(folder: Path, entry: dict[str, Any]) -> bytes:
    """'Small files': a file named beside _metadata.json, with the XXH3-128 digest and size recorded there."""
    assert "/" not in entry["file"]
    data = (folder / entry["file"]).read_bytes()
    assert len(data) == entry["size"]
    assert entry["digest"] == "xxh3_128:" + xxhash.xxh3_128_hexdigest(data)
    return data


def recorded_runs(folder: Path, meta: dict[str, Any]) -> list | None:
    """'Content digest': the recorded runs, inline (revision 3) or a runs file and splices (revision 4)."""
    recorded = meta.get("content_runs")
    if recorded is None or isinstance(recorded, list):
        return recorded
    runs = json.loads(small_file(folder, recorded))
    assert len(runs) == recorded["runs"]
    for index, removed, inserted in reversed(recorded["splices"]):  # from the end: indexes stay the file's
        runs[index : index + removed] = inserted
    return runs


def read_version(folder: Path) -> tuple[dict[str, Any], pa.Table]:
    """Check a version folder as 'Fields ...', 'Shards', 'Content digest' and 'Version id' say; return its rows."""
    meta = json.loads((folder / "_metadata.json").read_text(encoding="utf-8"))
    assert meta["format"] == "stable-explore"
    assert meta["version_id"] == folder.name
    groups = meta.get("column_groups")
    shard_features = groups["base_features"] if groups is not None else meta["features"]  # 'Column groups'
    files = []
    for name, digest, size in zip(meta["shard_filenames"], meta["shard_hashes"], meta["shard_sizes"], strict=True):
        assert "/" not in name
        assert not name.startswith(".")
        data = (folder / name).read_bytes()
        assert len(data) == size
        assert digest == "xxh3_128:" + xxhash.xxh3_128_hexdigest(data)
        table = ipc.open_file(pa.BufferReader(data)).read_all()  # the IPC file format, with its footer
        assert json.loads(table.schema.metadata[b"stable_explore.features"]) == shard_features
        files.append(table)
    assert [t.num_rows for t in files] == meta["shard_row_counts"]
    patches = meta.get("cell_patches")
    if patches is not None:  # 'Cell patches': cells a version changes in place, by shard digest and row
        assert meta["format_revision"] in (5, 6)  # 6: with column groups too
        assert meta["cache_format_version"] == 2  # 'Format revisions': stable-datasets' reader must refuse it
        entries = json.loads(small_file(folder, patches))
        assert len(entries) == patches["entries"]
        for index, removed, inserted in reversed(patches["splices"]):
            entries[index : index + removed] = inserted
        file_of = {digest: i for i, digest in enumerate(meta["shard_hashes"])}
        for digest, row, new_hash, cells in entries:
            table = files[file_of[digest]]
            for name, value in [*cells, ["__row_hash__", new_hash]]:
                field = table.schema.field(name)
                column = table.column(name).to_pylist()
                column[row] = value
                table = table.set_column(table.schema.get_field_index(name), field, pa.array(column, field.type))
            files[file_of[digest]] = table
    if meta["cache_format_version"] == 2:
        segments = meta["row_segments"]
        if isinstance(segments, dict):  # 'Small files': a segments file, its shard map, and splices
            shard_map = segments["shards"]
            base = [
                [shard_map[shard], start, count] for shard, start, count in json.loads(small_file(folder, segments))
            ]
            assert len(base) == segments["segments"]
            for index, removed, inserted in reversed(segments["splices"]):
                base[index : index + removed] = inserted
            segments = base
    else:
        assert meta["cache_format_version"] == 1
        segments = [[i, 0, count] for i, count in enumerate(meta["shard_row_counts"])]
    parts = [files[shard].slice(start, count) for shard, start, count in segments]
    rows = pa.concat_tables(parts) if parts else None
    assert sum(count for _, _, count in segments) == meta["num_rows"]
    assert rows is not None
    assert rows.schema.names == [*shard_features, "__key__", "__row_hash__"]
    for position, entry in enumerate(meta.get("batch_digests") or []):
        if entry is not None and "file" in entry:  # 'Small files': one shard's batch digests, beside it
            digests = json.loads(small_file(folder, entry))
            assert sum(digests["rows"]) == meta["shard_row_counts"][position]
            assert digests["columns"] == rows.schema.names
    if groups is not None:
        rows = join_groups(folder, meta, rows)
    assert rows.schema.names == [*meta["features"], "__key__", "__row_hash__"]

    keys = rows.column("__key__").to_pylist()
    hashes = rows.column("__row_hash__").to_pylist()
    assert meta["content_digest"] == runs_digest(meta["key_type"], keys, hashes, recorded_runs(folder, meta))

    defining = {
        "features": meta["features"],
        "content_digest": meta["content_digest"],
        "num_rows": meta["num_rows"],
        "description": meta["description"],
        "license": meta["license"],
        "metadata": meta["metadata"] or {},
    }
    assert meta["version_id"] == hashlib.sha256(canonical_json(defining).encode()).hexdigest()[:16]

    columns = list(meta["features"])
    for row, stored in zip(rows.select(columns).to_pylist(), hashes, strict=True):
        assert row_hash(row, rows.schema, columns) == stored
    return meta, rows


def join_groups(folder: Path, meta: dict[str, Any], rows: pa.Table) -> pa.Table:
    """'Column groups': each group's files, row for row; a group column shadows one of the same name."""
    assert meta["format_revision"] == 6
    assert meta["cache_format_version"] == 2
    columns = {name: rows.column(name) for name in meta["column_groups"]["base_features"]}
    features = dict(meta["column_groups"]["base_features"])
    hashes = rows.column("__row_hash__").to_pylist()
    for group in meta["column_groups"]["groups"]:
        tables = []
        for entry in group["files"]:
            data = small_file(folder, entry)  # digest and size, as for a small file
            table = ipc.open_file(pa.BufferReader(data)).read_all()
            assert table.num_rows == entry["rows"]
            assert json.loads(table.schema.metadata[b"stable_explore.features"]) == group["features"]
            expected = [*group["features"], *(["__row_hash__"] if group["row_hash"] else [])]
            assert table.schema.names == expected
            if entry["batches"] is not None:
                digests = json.loads(small_file(folder, entry["batches"]))
                assert sum(digests["rows"]) == entry["rows"]
            tables.append(table)
        joined = pa.concat_tables(tables) if tables else None
        assert sum(entry["rows"] for entry in group["files"]) == meta["num_rows"]
        for name, feature in group["features"].items():
            features[name] = feature  # replaced in place, or appended
            columns[name] = joined.column(name) if joined is not None else pa.chunked_array([], pa.null())
        order = list(features)
        if group["row_hash"]:
            hashes = joined.column("__row_hash__").to_pylist() if joined is not None else []
        else:  # carried on over this group's columns, at their positions among the features
            schema = pa.schema([pa.field(name, columns[name].type) for name in group["features"]])
            for index, row in enumerate(joined.select(list(group["features"])).to_pylist() if joined else []):
                accumulator = hashes[index]
                for name in group["features"]:
                    value = value_hash(row[name], schema.field(name).type)
                    accumulator = mix(accumulator ^ value ^ (order.index(name) + 1))
                hashes[index] = accumulator
    assert features == meta["features"]
    arrays = [columns[name] for name in features]
    arrays += [rows.column("__key__"), pa.chunked_array([pa.array(hashes, pa.uint64())])]
    return pa.table(dict(zip([*features, "__key__", "__row_hash__"], arrays, strict=True)))


def decode(meta: dict[str, Any], rows: pa.Table, position: int) -> dict[str, Any]:
    """'Features': one row as a reader would present it."""
    out: dict[str, Any] = {}
    for column, feature in meta["features"].items():
        value = rows.column(column)[position].as_py()
        if value is not None and feature["_type"] == "ClassLabel":
            value = feature["names"][value]
        elif value is not None and feature["_type"] == "Image":
            value = PILImage.open(io.BytesIO(value))
        elif value is not None and feature["_type"] == "Boxes":
            value = [
                {
                    **box,
                    "category": feature["names"][box["category"]],
                    "attributes": json.loads(box["attributes"] or "{}"),
                }
                for box in value
            ]
        elif value is not None and feature["_type"] == "Mask":
            value = np.asarray(PILImage.open(io.BytesIO(value)))
        elif value is not None and feature["_type"] == "Array3D":
            value = np.frombuffer(value, dtype=np.dtype(feature["dtype"]).newbyteorder("<")).reshape(feature["shape"])
        out[column] = value
    return out


# --- the checks -------------------------------------------------------------------------------------

NAMES = ["cat", "dog", "bird"]
FEATURES = se.Features(
    image=se.Image(),
    label=se.ClassLabel(names=NAMES),
    score=se.Value("float32"),
    count=se.Value("int16"),
    flag=se.Value("bool"),
    note=se.Value("string"),
    blob=se.Value("binary"),
    patch=se.Array3D(shape=(2, 2, 1), dtype="float32"),
    tags=se.Sequence(se.Value("float64")),
    seen=se.Value("timestamp[us, tz=UTC]"),
    born=se.Value("date32"),
    visits=se.Sequence(se.Value("timestamp[ms, tz=Europe/Paris]")),
    objects=se.Boxes(names=NAMES),
    mask=se.Mask(names=NAMES),
    pose=se.Keypoints(names=["head", "tail"]),
)


LEAP_NIGHT = dt.datetime(2024, 2, 29, 23, tzinfo=dt.timezone.utc)


def pets(n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    for i in range(n):
        pixels = np.full((6, 6, 3), i % 256, dtype=np.uint8)
        yield (
            f"pet-{i:04d}-é",
            {
                "image": pixels,
                "label": NAMES[i % 3],
                "score": [0.5 * i, -0.0, float("nan")][i % 3],
                "count": i - 300,
                "flag": i % 2 == 0,
                "note": None if i % 5 == 0 else f"note {i} ✓",
                "blob": bytes([i % 256]) * (i % 4),
                "patch": np.full((2, 2, 1), i / 3, dtype=np.float32),
                "tags": [float(i), float("inf")] if i % 7 else [],
                "seen": None
                if i % 6 == 0
                else dt.datetime(2024, 2, 29, 23, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i),
                "born": dt.date(1969, 12, 31) + dt.timedelta(days=i),
                "visits": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=i)],
                "objects": [
                    {"bbox": [i, 1.5, 2, 3], "category": NAMES[(i + b) % 3], "score": 0.5, "iscrowd": b}
                    for b in range(i % 3)
                ],
                "mask": np.full((3, 4), i % 3, dtype=np.uint8),
                "pose": np.full((i % 2, 2, 3), i / 4, dtype=np.float32),
            },
        )


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, se.CachedDataset, se.CachedDataset]:
    home = tmp_path_factory.mktemp("catalog")
    built = se.build(
        pets,
        FEATURES,
        args=(1200,),
        home=home,
        shard_size="1KB",  # every batch of 400 rows closes a shard: three shards
        batch_size=400,
        description="pets für the spec",
        license="CC0-1.0",
        metadata={"source": "tests", "n": 1200},
        progress=False,
    )
    saved = built.drop([3, 900]).relabel({700: "bird", 701: "cat"}).save(message="spec", tag="clean", progress=False)
    return home, built, saved


def test_the_catalog_layout(catalog: tuple[Path, se.CachedDataset, se.CachedDataset]) -> None:
    home, built, saved = catalog
    root = home / "pets"
    assert {p.name for p in root.iterdir() if not p.name.startswith(".")} == {"versions", "refs", "sources"}
    assert sorted(p.name for p in (root / "versions").iterdir()) == sorted([built.version, saved.version])
    for version in (built.version, saved.version):
        assert len(version) == 16
        assert set(version) <= set("0123456789abcdef")
    assert (root / "refs" / "latest").read_text() == saved.version + "\n"
    assert (root / "refs" / "clean").read_text() == saved.version + "\n"
    (record,) = (root / "sources").iterdir()
    assert record.read_text() == built.version + "\n"
    assert len(record.name) == 24
    assert resolve(home, "pets") == saved.cache_dir
    assert resolve(home, "pets", built.version[:5]) == built.cache_dir


def test_a_built_version_is_format_1(catalog: tuple[Path, se.CachedDataset, se.CachedDataset]) -> None:
    home, built, _ = catalog
    meta, rows = read_version(resolve(home, "pets", built.version))
    assert meta["cache_format_version"] == 1
    assert meta["num_shards"] > 2
    assert "row_segments" not in meta
    assert meta["key_type"] == "string"
    assert meta["parent"] is None
    assert meta["source_fingerprint"] is not None
    assert rows.column("__key__").to_pylist() == built.keys()
    for position in (0, 1, 2, 5, 7, 1199):
        mine, theirs = decode(meta, rows, position), built.with_format("pil")[position]
        assert mine["label"] == NAMES[theirs["label"]]
        assert np.array_equal(np.asarray(mine["image"]), np.asarray(theirs["image"]))
        assert np.array_equal(mine["patch"], theirs["patch"])
        assert mine["note"] == theirs["note"]
        assert mine["blob"] == theirs["blob"]
        boxes = theirs["objects"]
        assert (
            [b["bbox"] for b in mine["objects"]]
            == boxes["bbox"]
            == [[float(position), 1.5, 2.0, 3.0]] * len(mine["objects"])
        )
        assert [b["category"] for b in mine["objects"]] == [NAMES[c] for c in boxes["category"]]
        assert [b["attributes"] for b in mine["objects"]] == [{"iscrowd": b} for b in range(position % 3)]
        assert np.array_equal(mine["mask"], theirs["mask"])
        assert np.array_equal(np.asarray(mine["pose"], dtype=np.float32).reshape(-1, 2, 3), theirs["pose"])


def test_a_saved_version_is_format_2_with_row_segments_and_cell_patches(
    catalog: tuple[Path, se.CachedDataset, se.CachedDataset],
) -> None:
    home, built, saved = catalog
    meta, rows = read_version(resolve(home, "pets", "clean"))
    assert meta["cache_format_version"] == 2
    assert meta["format_revision"] == 5  # the relabels are cell patches: the rows stay in the parent's files
    assert meta["cell_patches"]["entries"] == 2
    assert meta["num_rows"] == 1198
    assert meta["parent"] == built.version
    assert meta["message"] == "spec"
    assert meta["source_fingerprint"] is None
    assert meta["operations"] == [
        {"op": "drop", "keys": ["pet-0003-é", "pet-0900-é"]},
        {"op": "relabel", "column": "label", "changes": [["pet-0700-é", "dog", "bird"], ["pet-0701-é", "bird", "cat"]]},
    ]
    assert all(
        start >= 0 and 0 < count <= meta["shard_row_counts"][shard] - start
        for shard, start, count in meta["row_segments"]
    )
    assert [shard for shard, _, _ in meta["row_segments"]] != list(range(meta["num_shards"]))  # runs of files
    keys = rows.column("__key__").to_pylist()
    assert keys == saved.keys()
    assert "pet-0003-é" not in keys
    assert decode(meta, rows, keys.index("pet-0701-é"))["label"] == "cat"
    assert decode(meta, rows, keys.index("pet-0700-é"))["label"] == "bird"
    # reused runs are hard links to the parent's files
    linked = [name for name in meta["shard_filenames"] if (saved.cache_dir / name).stat().st_nlink > 1]
    assert linked


def test_a_relabel_only_save_is_format_2_with_every_file_whole(
    catalog: tuple[Path, se.CachedDataset, se.CachedDataset],
) -> None:
    home, built, _ = catalog
    names = built.features["label"].names
    first, second = [i for i, code in enumerate(built.arrow_column("label").to_pylist()) if names[code] != "cat"][:2]
    relabelled = built.relabel({first: "cat", second: "cat"}).save(name="relabelled", progress=False)
    meta, rows = read_version(resolve(home, "relabelled"))
    assert meta["cache_format_version"] == 2  # 'Format 2': patched cells, so not format 1
    assert meta["row_segments"] == [[i, 0, count] for i, count in enumerate(meta["shard_row_counts"])]
    assert meta["cell_patches"]["entries"] == 2
    assert [decode(meta, rows, i)["label"] for i in (first, second)] == ["cat", "cat"]
    assert rows.column("__key__").to_pylist() == relabelled.keys()


def test_int_keys_and_an_empty_version(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("int64"), y=se.Value("float16"))
    numbered = se.build(
        [{"x": i, "y": i / 4} for i in range(10)], features, name="numbered", home=tmp_path, progress=False
    )
    meta, rows = read_version(numbered.cache_dir)
    assert meta["key_type"] == "int64"
    assert rows.column("__key__").to_pylist() == list(range(10))
    with pytest.warns(se.EmptyBuildWarning):
        empty = se.build([], features, name="empty", home=tmp_path, progress=False)
    meta = json.loads((empty.cache_dir / "_metadata.json").read_text())
    assert meta["num_rows"] == 0
    assert meta["content_digest"] == "xxh3_128-runs:" + xxhash.xxh3_128_hexdigest(b"")
    assert recorded_runs(empty.cache_dir, meta) == []


def test_a_version_with_column_groups_is_revision_6(catalog: tuple[Path, se.CachedDataset, se.CachedDataset]) -> None:
    home, built, _ = catalog
    n = len(built)
    added = built.add_columns({"rank": np.arange(n) / 3, "tag": [f"t{i % 4}" for i in range(n)]}, progress=False)
    meta, rows = read_version(resolve(home, "pets", added.version))
    assert meta["column_groups"]["base_features"] == FEATURES.to_dict()
    assert rows.column("rank").to_pylist()[:3] == [0.0, 1 / 3, 2 / 3]
    assert rows.column("__key__").to_pylist() == added.keys()
    # a replaced column (the group stores the rows' hashes), then a map that appends on top of it
    replaced = added.add_columns({"count": np.arange(n, dtype=np.int16)}, progress=False)
    mapped = replaced.map(lambda row: {"twice": row["count"] * 2}, progress=False)
    meta, rows = read_version(resolve(home, "pets", mapped.version))
    assert [g["row_hash"] for g in meta["column_groups"]["groups"]] == [False, True, False]
    assert list(meta["features"])[-3:] == ["rank", "tag", "twice"]
    assert rows.column("count").to_pylist()[:3] == [0, 1, 2]
    assert decode(meta, rows, 5)["twice"] == 10
    # a save of edits on top: one group, for the saved rows
    saved = mapped.drop([0]).relabel({2: "cat"}).save(message="groups", progress=False)
    meta, rows = read_version(resolve(home, "pets", saved.version))
    assert len(meta["column_groups"]["groups"]) == 1
    assert decode(meta, rows, 1)["label"] == "cat"
    assert rows.column("twice").to_pylist()[:2] == [2, 4]
