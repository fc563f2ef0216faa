"""Shared test helpers: real images, real caches in tmp_path."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from PIL import Image as PILImage

from stable_explore import ClassLabel, Features, Image, Value

NAMES = ["cat", "dog", "bird"]


def jpeg_bytes(seed: int, size: int = 16) -> bytes:
    """A small, distinct JPEG."""
    rng = np.random.default_rng(seed)
    array = rng.integers(0, 255, (size, size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(array).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


@pytest.fixture(scope="session")
def jpegs() -> list[bytes]:
    return [jpeg_bytes(i) for i in range(64)]


@pytest.fixture
def pet_features() -> Features:
    return Features(image=Image(), label=ClassLabel(names=NAMES), score=Value("float32"), name=Value("string"))


def pet_rows(n: int, jpegs: list[bytes], *, start: int = 0) -> Iterator[tuple[str, dict]]:
    for i in range(start, start + n):
        yield f"pet-{i:05d}", {"image": jpegs[i % len(jpegs)], "label": NAMES[i % 3], "score": i / 2, "name": f"n{i}"}


def write_seed_v1_cache(cache_dir: Path, tables: list[pa.Table]) -> None:
    """A cache exactly as seed 000's writer lays it out: shards and version-1 metadata only."""
    cache_dir.mkdir(parents=True)
    names = []
    for i, table in enumerate(tables):
        name = f"shard-{i:05d}.arrow"
        with pa.OSFile(str(cache_dir / name), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        names.append(name)
    meta = {
        "cache_format_version": 1,
        "schema_fingerprint": "0123456789abcdef",
        "num_rows": sum(t.num_rows for t in tables),
        "num_shards": len(tables),
        "shard_row_counts": [t.num_rows for t in tables],
        "shard_filenames": names,
        "shard_size_target_bytes": 256 * 1024 * 1024,
    }
    (cache_dir / "_metadata.json").write_text(json.dumps(meta, indent=2))
