"""Issue 12 #3: nothing taken from column names or metadata writes or reads outside its folder."""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import Features, Image, SchemaError, UnsafePathError, Value
from stable_explore.cache import write_sharded_arrow_cache
from tests.reliability.trials import edit_metadata, small_jpeg

ESCAPING_NAMES = ["../../../escaped", "a/b", "..", ".", "a\\b", "nul\x00byte", "/abs", " padded"]


@pytest.mark.parametrize("name", ESCAPING_NAMES)
def test_features_refuse_column_names_that_are_not_plain(name: str) -> None:
    with pytest.raises(SchemaError, match="not a plain name"):
        Features({name: Value("int64")})
    features = Features(ok=Value("int64"))
    with pytest.raises(SchemaError, match="not a plain name"):
        features[name] = Value("int64")
    with pytest.raises(SchemaError, match="not a plain name"):
        features.update({name: Value("int64")})
    assert list(features) == ["ok"]


def test_a_hand_made_metadata_column_name_is_refused_on_load(tmp_path: Path) -> None:
    ds = se.build([{"image": small_jpeg()}], Features(image=Image()), name="p", home=tmp_path, progress=False)

    def escape(raw: dict) -> None:
        raw["features"] = {"../../../escaped": raw["features"]["image"]}

    edit_metadata(ds.cache_dir, escape, keep_digest=False)
    with pytest.raises(se.CacheCorruptionError, match="not a plain name"):
        se.load(ds.cache_dir)


@pytest.mark.parametrize("field", ["name", "version_id", "parent", "source_fingerprint"])
@pytest.mark.parametrize("value", ["../../../../tmp/escaped", "/tmp/escaped", "..", "a/../../b"])
def test_path_parts_from_metadata_are_refused(tmp_path: Path, field: str, value: str) -> None:
    out = tmp_path / "made-by-hand"
    write_sharded_arrow_cache([{"image": small_jpeg()}], Features(image=Image()), out)
    edit_metadata(out, lambda raw: raw.update({field: value}), keep_digest=False)
    with pytest.raises(UnsafePathError, match=f"{field} .* is not a plain name"):
        se.load(out).to_pandas(images="path")
    assert not any(p.name == "escaped" for p in tmp_path.parent.rglob("escaped"))


def test_image_paths_stay_inside_the_export_folder(tmp_path: Path) -> None:
    ds = se.build([{"image": small_jpeg(i)} for i in range(3)], Features(image=Image()), name="p",
                  home=tmp_path / "home", progress=False)  # fmt: skip
    frame = ds.to_pandas(images="path", image_dir=tmp_path / "out")
    root = (tmp_path / "out").resolve()
    assert all(Path(p).resolve().is_relative_to(root) for p in frame["image"])


def test_an_export_folder_that_is_a_symlink_out_is_refused(tmp_path: Path) -> None:
    ds = se.build([{"image": small_jpeg()}], Features(image=Image()), name="p", home=tmp_path / "home", progress=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "out" / ds.version).mkdir(parents=True)
    (tmp_path / "out" / ds.version / "image").symlink_to(outside)
    with pytest.raises(UnsafePathError, match="outside"):
        ds.to_pandas(images="path", image_dir=tmp_path / "out")
    assert list(outside.iterdir()) == []


def test_a_version_directory_that_is_a_symlink_out_of_the_home_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ds = se.build([{"x": 1}], Features(x=Value("int64")), name="n", home=home, progress=False)
    elsewhere = tmp_path / "elsewhere" / ds.version
    elsewhere.parent.mkdir()
    ds.cache_dir.rename(elsewhere)
    (home / "n" / "versions" / ds.version).symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="outside the catalog home"):
        se.load("n", home=home)
    with pytest.raises(UnsafePathError, match="outside the catalog home"):
        se.load(f"n@{ds.version[:6]}", home=home)
    report = se.fsck(home=home)
    assert not report.ok
    assert any("outside the catalog home" in str(p) for p in report.problems)


def test_a_symlink_inside_the_home_is_still_fine(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ds = se.build([{"x": 1}], Features(x=Value("int64")), name="n", home=home, progress=False)
    moved = home / ".store" / ds.version
    moved.parent.mkdir()
    ds.cache_dir.rename(moved)
    (home / "n" / "versions" / ds.version).symlink_to(moved)
    assert se.load("n", home=home)[0] == {"x": 1}
