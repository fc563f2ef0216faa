"""Issue 22 item 10: no raw errors from JSON nesting bombs (in a bucket, in user metadata) or long column names."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore.errors import CacheCorruptionError, SchemaError

F = se.Features(x=se.Value("int64"))
BOMB = "[" * 200_000 + "]" * 200_000  # valid JSON, nested far deeper than any parser's recursion goes


def _nested_list(depth: int) -> list[Any]:
    top: list[Any] = []
    here = top
    for _ in range(depth):
        here.append([])
        here = here[0]
    return top


def _nested(depth: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    here = top
    for _ in range(depth):
        here["a"] = {}
        here = here["a"]
    return top


@pytest.mark.parametrize("depth", [1_000, 5_000])
def test_user_metadata_nested_too_deep_is_a_type_error_naming_the_path(tmp_path: Path, depth: int) -> None:
    with pytest.raises(TypeError, match=r"metadata\['a'\]\['a'\]\['a'\].*nested more than \d+ levels deep") as caught:
        se.build([{"x": 1}], F, name="d", home=tmp_path, metadata=_nested(depth), progress=False)
    assert not isinstance(caught.value, RecursionError)
    assert not (tmp_path / "d" / "versions").is_dir() or not any((tmp_path / "d" / "versions").iterdir())
    # within the limit it is kept as given
    fine = se.build([{"x": 1}], F, name="d", home=tmp_path, metadata=_nested(50), progress=False)
    assert fine.cache_meta.version_metadata.metadata == _nested(50)


def test_a_save_refuses_deep_metadata_too(tmp_path: Path) -> None:
    ds = se.build([{"x": i} for i in range(3)], F, name="d", home=tmp_path, progress=False)
    with pytest.raises(TypeError, match=r"metadata\['a'\]"):
        ds.drop([0]).save(metadata=_nested(2_000), progress=False)
    with pytest.raises(TypeError, match=r"metadata\['list'\]\[0\]\[0\]"):
        ds.drop([0]).save(metadata={"list": _nested_list(3_000)}, progress=False)


def test_a_local_metadata_bomb_is_corruption_everywhere(tmp_path: Path) -> None:
    ds = se.build([{"x": 1}], F, name="d", home=tmp_path, progress=False)
    meta = ds.cache_dir / "_metadata.json"
    meta.write_text(BOMB)
    with pytest.raises(CacheCorruptionError, match=r"_metadata\.json.*nested too deeply"):
        se.load("d", home=tmp_path)
    report = se.fsck(home=tmp_path)
    assert any("_metadata.json" in str(p) for p in report.problems)
    se.gc(home=tmp_path, keep=0)  # never raises on a damaged version


@pytest.fixture
def bucket_with_a_bomb(s3_env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    from stable_explore.storage.backends.object import ObjectStore
    from stable_explore.storage.backends.read_cache import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "read-cache"))
    home = f"s3://team/bomb-{os.getpid()}-{tmp_path.name}"
    ds = se.build([{"x": i} for i in range(5)], F, name="d", home=home, progress=False)
    ObjectStore(home).write_text(f"d/versions/{ds.version}/_metadata.json", BOMB)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "second-machine"))  # a machine that has no mirror of it yet
    return home, ds.version


def test_a_bucket_metadata_bomb_is_corruption_on_pull_load_and_fsck(
    bucket_with_a_bomb: tuple[str, str], tmp_path: Path
) -> None:
    home, version = bucket_with_a_bomb
    with pytest.raises(CacheCorruptionError, match=r"_metadata\.json"):
        se.load("d", home=home)
    with pytest.raises(CacheCorruptionError, match=r"_metadata\.json"):
        se.pull(f"{home}/d@{version}", home=tmp_path / "local", progress=False)
    report = se.fsck(home=home)
    assert any("_metadata.json" in str(p) for p in report.problems), [str(p) for p in report.problems]
    se.gc(home=home, keep=0)  # never raises on a damaged version


def _png() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (4, 4), (200, 10, 10)).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize("name", ["c" * 300, "é" * 200, "x" * 255])
def test_a_long_column_name_exports_its_images(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    features = se.Features({name: se.Image(), "label": se.ClassLabel(names=["a", "b"])})
    ds = se.build([{name: _png(), "label": i % 2} for i in range(3)], features, name="d", home=tmp_path, progress=False)
    frame = ds.to_pandas(images="path")
    paths = [Path(p) for p in frame[name]]
    assert all(p.is_file() and p.read_bytes() == _png() for p in paths)
    assert all(len(part.encode()) <= 255 for p in paths for part in p.parts)
    chosen = ds.to_pandas(images="path", image_dir=tmp_path / "out")
    assert all(Path(p).is_file() for p in chosen[name])
    # another long column with the same first characters exports into its own folder
    other = name[:-1] + "z"
    features2 = se.Features({name: se.Image(), other: se.Image()})
    both = se.build([{name: _png(), other: _png()}], features2, name="two", home=tmp_path, progress=False)
    exported = both.to_pandas(images="path")
    assert Path(exported[name][0]).parent != Path(exported[other][0]).parent
    ds.to_parquet(tmp_path_factory.mktemp("exports") / "d.parquet")  # outside the home (tmp_path here)


def test_short_column_names_keep_their_export_folders(tmp_path: Path) -> None:
    features = se.Features(image=se.Image())
    ds = se.build([{"image": _png()}], features, name="d", home=tmp_path, progress=False)
    (path,) = ds.to_pandas(images="path")["image"]
    assert Path(path).parent.name == "image"


def test_column_names_that_are_no_plain_name_are_still_refused() -> None:
    with pytest.raises(SchemaError, match="not a plain name"):
        se.Features({"a/b": se.Value("int64")})
