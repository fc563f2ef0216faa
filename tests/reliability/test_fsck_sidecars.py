"""Issue 22 item 9: fsck lists damage to every small file beside the metadata, and never raises on it.

Each kind of file a version folder holds besides its shards (``shard-NNNNN.batches``,
``cell-patches.json``, ``content-runs.json``, ``row-segments.json``, ``_metadata.json``) is
damaged in turn, four ways: truncated, one byte flipped, not JSON, and JSON of the wrong
types with its digest and the metadata resealed (so that only the file's own checks can tell).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xxhash

import stable_explore as se
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.write.writer import write_metadata

FEATURES = se.Features(label=se.ClassLabel(names=["a", "b", "c"]), x=se.Value("int64"))
ROWS = 3000


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A home with a build, a save that patches cells, and a save of many row segments."""
    home = tmp_path_factory.mktemp("sidecars") / "home"
    rows = ((f"k{i:05d}", {"label": i % 3, "x": i}) for i in range(ROWS))
    built = se.build(rows, FEATURES, name="d", home=home, progress=False, shard_size="8KB", batch_size=100)
    patched = built.relabel({5: "a", 1500: "b"}).save(progress=False)
    rng = np.random.default_rng(3)
    dropped = sorted(rng.choice(ROWS, 100, replace=False).tolist())
    segmented = patched.drop(dropped).save(name="e", progress=False)
    return home, patched.version, segmented.version


def _small_files(version_dir: Path) -> list[str]:
    names = sorted(p.name for p in version_dir.iterdir() if not p.name.endswith(".arrow"))
    return [n for n in names if n != "_metadata.json"]


def test_the_fixture_has_every_kind_of_small_file(pristine: tuple[Path, str, str]) -> None:
    home, patched, segmented = pristine
    kinds = {
        name.rsplit(".", 1)[-1] if name.endswith(".batches") else name
        for name in _small_files(home / "d" / "versions" / patched) + _small_files(home / "e" / "versions" / segmented)
    }
    assert {"batches", "cell-patches.json", "content-runs.json", "row-segments.json"} <= kinds
    assert not se.fsck(home=home).problems


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    _replace(path, data[: len(data) // 2])


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x04
    _replace(path, bytes(data))


def _not_json(path: Path) -> None:
    _replace(path, b'{"rows": [1, 2, ')


def _replace(path: Path, data: bytes) -> None:
    path.unlink()  # the file may be linked into other versions: damage this version's copy only
    path.write_bytes(data)


def _wrong_types(value: Any) -> Any:
    """The same shape of JSON with every leaf of another type."""
    if isinstance(value, dict):
        return {k: _wrong_types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wrong_types(v) for v in value]
    if isinstance(value, str):
        return 7
    if isinstance(value, bool) or value is None:
        return "x"
    return "seven"


def _resealed(version_dir: Path, name: str, make: Callable[[Any], Any]) -> None:
    """Replace small file ``name`` with ``make(its JSON)``, and record its new digest in resealed metadata."""
    path = version_dir / name
    data = json.dumps(make(json.loads(path.read_bytes())), separators=(",", ":")).encode()
    _replace(path, data)
    meta_path = version_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    found = 0

    def walk(value: Any) -> None:
        nonlocal found
        if isinstance(value, dict):
            if value.get("file") == name:
                value.update(size=len(data), digest="xxh3_128:" + xxhash.xxh3_128_hexdigest(data))
                found += 1
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(raw)
    assert found, name
    meta_path.unlink()
    write_metadata(version_dir, raw)


DAMAGE: dict[str, Callable[[Path, str], None]] = {
    "truncated": lambda folder, name: _truncate(folder / name),
    "a byte flipped": lambda folder, name: _flip(folder / name),
    "not JSON": lambda folder, name: _not_json(folder / name),
    "wrong types": lambda folder, name: _resealed(folder, name, _wrong_types),
    "a list of nulls": lambda folder, name: _resealed(folder, name, lambda v: [None] * 3),
    "a bare number": lambda folder, name: _resealed(folder, name, lambda v: 12),
}
FILES = [
    ("d", "patched", "shard-00000.batches"),
    ("d", "patched", "cell-patches.json"),
    ("d", "patched", "content-runs.json"),
    ("e", "segmented", "row-segments.json"),
    ("e", "segmented", "cell-patches.json"),
    ("d", "patched", "_metadata.json"),
]


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize(("dataset", "which", "name"), FILES)
def test_fsck_lists_damage_to_each_small_file_and_never_raises(
    pristine: tuple[Path, str, str], tmp_path: Path, dataset: str, which: str, name: str, damage: str
) -> None:
    import shutil

    source, patched, segmented = pristine
    home = tmp_path / "home"
    shutil.copytree(source, home)  # copies: a damaged file is damaged in this test's home only
    version = patched if which == "patched" else segmented
    folder = home / dataset / "versions" / version
    if name == "_metadata.json" and damage in ("wrong types", "a list of nulls", "a bare number"):
        text = {"wrong types": json.dumps(_wrong_types(json.loads((folder / name).read_text()))),
                "a list of nulls": "[null, null, null]", "a bare number": "12"}[damage]  # fmt: skip
        _replace(folder / name, text.encode())
    else:
        DAMAGE[damage](folder, name)
    report = se.fsck(home=home)  # never raises for damage
    assert report.problems, f"{name} {damage}: nothing reported"
    named = [p for p in report.problems if name in str(p) or str(folder) in str(p.path)]
    assert named, f"{name} {damage}: no problem names the file: {[str(p) for p in report.problems]}"
    assert any(name in str(p) for p in report.problems), [str(p) for p in report.problems]
    # the other dataset's versions are still checked (one damaged file does not hide the rest)
    assert report.versions == 3
    # verify and reads name the damage as corruption, never as a raw error
    with pytest.raises(CacheCorruptionError):
        se.verify(folder)
    with contextlib.suppress(CacheCorruptionError):  # some damage (a patch file) shows at load, some only at fsck
        se.load(folder).to_arrow()


def test_fsck_lists_damage_in_two_datasets_at_once(pristine: tuple[Path, str, str], tmp_path: Path) -> None:
    import shutil

    source, patched, segmented = pristine
    home = tmp_path / "home"
    shutil.copytree(source, home)
    _not_json(home / "d" / "versions" / patched / "cell-patches.json")
    _resealed(home / "e" / "versions" / segmented, "shard-00001.batches", _wrong_types)
    report = se.fsck(home=home)
    text = "\n".join(str(p) for p in report.problems)
    assert "cell-patches.json" in text
    assert "shard-00001.batches" in text


@pytest.mark.parametrize(
    "change",
    [
        lambda d: {**d, "columns": ["label", "y", *d["columns"][2:]]},
        lambda d: {**d, "rows": [d["rows"][0] + 1, d["rows"][1] - 1, *d["rows"][2:]]},
    ],
    ids=["a column renamed", "rows moved between batches"],
)
def test_batch_digests_that_describe_other_batches_are_listed_though_the_shard_is_whole(
    pristine: tuple[Path, str, str], tmp_path: Path, change: Callable[[Any], Any]
) -> None:
    import shutil

    source, patched, _ = pristine
    home = tmp_path / "home"
    shutil.copytree(source, home)
    folder = home / "d" / "versions" / patched
    _resealed(folder, "shard-00002.batches", change)  # well formed, sealed, and wrong: reads would refuse the shard
    with pytest.raises(CacheCorruptionError):
        se.load(folder).to_arrow()
    problems = [str(p) for p in se.fsck(home=home).problems]
    assert any("shard-00002.batches" in p and "describe other batches" in p for p in problems), problems
