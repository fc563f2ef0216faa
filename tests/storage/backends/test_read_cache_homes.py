"""The read cache across homes (a real SeaweedFS): damaged bytes read from one bucket never spoil another's copy."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import stable_explore as se
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.backends.object import ObjectStore
from stable_explore.storage.backends.read_cache import CACHE_ENV
from stable_explore.storage.kept import forget

if TYPE_CHECKING:
    from tests.s3server import S3Server

pytest.importorskip("obstore")
_prefixes = itertools.count()
ROOT = Path(__file__).resolve().parents[2]


def _build(home: str) -> se.CachedDataset:
    features = se.Features(label=se.ClassLabel(names=["a", "b"]), text=se.Value("string"))
    rows = [(f"k{i:04d}", {"label": i % 2, "text": f"row {i} " * 20}) for i in range(600)]
    return se.build(rows, features, name="d", home=home, progress=False, batch_size=100, shard_size="40KB")


def test_a_damaged_copy_in_one_bucket_never_spoils_an_intact_copy_in_another(
    s3_env: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "one-machines-cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    first, second = (f"s3://team/homes-{os.getpid()}-{next(_prefixes)}" for _ in range(2))
    a, b = _build(first), _build(second)
    assert a.cache_meta.shard_hashes == b.cache_meta.shard_hashes, "the same shards: one key in the read cache"
    name = a.cache_meta.shard_filenames[0]
    key = f"d/versions/{a.version}/{name}"
    store = ObjectStore(first)
    damaged = tmp_path / "damaged.arrow"
    store.get_file(key, damaged)
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    store.put_file(key, damaged)

    forget()
    with pytest.raises(CacheCorruptionError, match=f"{first}/{key}"):
        se.load(f"{first}/d").to_arrow()
    forget()
    assert se.load(f"{second}/d").to_arrow().equals(b.to_arrow()), "the intact copy reads, in this process"
    script = f"import stable_explore as se; print(se.load({second + '/d'!r}).to_arrow().num_rows)"
    for _ in range(2):  # and in later processes on this machine
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == "600"
    # the cache now holds bytes that matched the digest: reads of the first home get them (right data), and
    # verify, which reads the bucket itself, still names its damaged object
    forget()
    assert se.load(f"{first}/d").to_arrow().equals(b.to_arrow())
    with pytest.raises(CacheCorruptionError, match=name):
        se.verify(f"d@{a.version}", home=first)
