"""verify: every shard's digest, the rows' digest, and the version id against the metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import CacheCorruptionError, CachedDataset, verify
from tests.conftest import write_pets
from tests.sources import NUM_FEATURES, numbers


def test_verify_names_a_shard_with_one_flipped_byte(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 300, batch_size=100, shard_size_bytes=1)
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


def test_verify_detects_a_tampered_description(home: Path) -> None:
    ds = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False, description="true")
    assert "digests match" in str(se.verify(ds))
    assert se.verify("numbers", home=home).num_rows == 3
    meta_path = ds.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    raw["description"] = "forged"
    meta_path.write_text(json.dumps(raw))
    with pytest.raises(CacheCorruptionError, match="version id"):
        se.verify(ds)


@pytest.mark.parametrize(("field", "damage"), [("shard_filenames", "shasd-00000.arrow"), ("shard_sizes", 7)])
def test_a_damaged_shard_name_or_size_in_the_metadata_is_named_as_the_metadatas_damage(
    home: Path, field: str, damage: object
) -> None:
    # found by the state machine (tests/model): one flipped byte turned "shard-00000.arrow" into
    # "shasd-00000.arrow", and load, verify and fsck blamed a missing shard, not the damaged metadata
    ds = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    meta_path = ds.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    raw[field][0] = damage
    meta_path.write_text(json.dumps(raw))
    for check in (lambda: se.load("numbers", home=home), lambda: se.verify("numbers", home=home)):
        with pytest.raises(CacheCorruptionError) as info:
            check()
        assert info.value.path == meta_path, str(info.value)
    assert str(se.fsck(home=home)).startswith(f"{meta_path}: ")


def test_verify_catches_a_tampered_row_segment(big_shards: CachedDataset) -> None:
    import json

    saved = big_shards.set(10, "x", -10).save()  # row 10 written anew: shard 0 read in two runs
    assert "digests match" in str(se.verify(saved))
    meta_path = saved.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    run = next(r for r in raw["row_segments"] if r[1] > 0)
    run[1] -= 1  # the same run one row earlier: same lengths, different rows
    meta_path.write_text(json.dumps(raw))
    with pytest.raises(se.CacheCorruptionError, match=r"does not match its own 'metadata_digest'"):
        se.verify(saved.cache_dir)  # the metadata's own digest catches the edit when it is read
    del raw["metadata_digest"]  # as a cache written before format revision 2 would be
    meta_path.write_text(json.dumps(raw))
    with pytest.raises(se.CacheCorruptionError, match=r"rows .* give"):
        se.verify(saved.cache_dir)
