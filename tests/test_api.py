"""The public API: se.build, load, datasets, versions, tag, gc, verify, browse, compare."""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import Features, SchemaError, Value

NUM = Features(x=Value("int64"))


def test_features_need_a_column_and_loads_keep_stored_features(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="at least one column"):
        se.build([{}], Features(), name="empty", home=tmp_path, progress=False)
    # no features, or something else in their place: say what fits, not "'NoneType' object is not iterable"
    for wrong in (None, Value("int64"), ["x"]):
        with pytest.raises(se.InvalidArgumentTypeError, match=r"features must be a stable_explore\.Features .*se\."):
            se.build([{"x": 1}], wrong, name="n", home=tmp_path, progress=False)  # type: ignore[arg-type]
    assert se.datasets(home=tmp_path).column("name") == []  # nothing was published
    ds = se.build([{"x": 1}], NUM, name="n", home=tmp_path, progress=False)
    with pytest.raises(SchemaError, match="stores its own features"):
        se.load("n", home=tmp_path, features=Features(x=Value("string")))
    assert se.load("n", home=tmp_path, features=NUM).version == ds.version


def squares(n, scale=1):
    for i in range(n):
        yield f"k{i}", {"x": i * i * scale}


def test_the_design_names_are_exported() -> None:
    design = [
        "Features", "Value", "ClassLabel", "Image", "Array3D", "Sequence", "Video", "Boxes", "Mask", "Keypoints",
        "build", "load", "datasets", "versions", "tag", "gc", "verify", "browse", "compare", "CachedDataset",
        "StableExploreError", "EncodingError", "SchemaError", "CacheNotFoundError",
        "CacheCorruptionError", "CacheWriteError",
    ]  # fmt: skip
    assert set(design) <= set(se.__all__)
    for name in se.__all__:
        assert getattr(se, name) is not None, name
    assert callable(se.load_ipython_extension)


def test_build_takes_dicts_pairs_or_a_generator_function(home: Path) -> None:
    plain = se.build([{"x": 5}, {"x": 6}], NUM, name="plain", home=home, progress=False)
    assert plain.keys() == [0, 1]  # no keys given: the running index
    assert [row["x"] for row in plain] == [5, 6]
    keyed = se.build([("a", {"x": 1}), ("b", {"x": 2})], NUM, name="keyed", home=home, progress=False)
    assert keyed.keys() == ["a", "b"]
    generated = se.build(squares, NUM, args=(3,), kwargs={"scale": 2}, home=home, progress=False)
    assert generated.name == "squares"  # the generator function's name
    assert generated.build_info == "built: first build of squares"
    assert [row["x"] for row in generated] == [0, 2, 8]
    assert generated.keys() == ["k0", "k1", "k2"]
    started = se.build(squares(2), NUM, name="started", home=home, progress=False)  # a generator object
    assert "plain iterable has no fingerprint" in started.build_info
    as_mapping = se.build([{"x": 1}], {"x": Value("int64")}, name="mapping", home=home, progress=False)
    assert as_mapping.features == NUM
    assert [row["name"] for row in se.datasets(home=home)] == ["keyed", "mapping", "plain", "squares", "started"]


@pytest.mark.parametrize("source", [[{"x": 1}], lambda: iter([{"x": 1}])])
def test_a_source_without_a_function_name_needs_name(home: Path, source: object) -> None:
    with pytest.raises(TypeError, match="name= is required"):
        se.build(source, NUM, home=home, progress=False)
    assert not home.exists()


def test_build_records_description_license_metadata_and_tag(home: Path) -> None:
    ds = se.build(
        [{"x": 1}], NUM, name="described", home=home, progress=False,
        description="One row", license="CC0-1.0", metadata={"source": "hand-made", "rows": [1]}, tag="v1",
    )  # fmt: skip
    assert (ds.DESCR, ds.LICENSE, ds.metadata.SOURCE) == ("One row", "CC0-1.0", "hand-made")
    assert ds.metadata["rows"] == [1]
    again = se.load("described@v1", home=home)
    assert again.version == ds.version
    assert again.metadata["source"] == "hand-made"


@pytest.mark.parametrize(
    ("options", "error", "needle"),
    [
        ({"shard_size": "lots"}, ValueError, "a size must be"),
        ({"shard_size": 0}, ValueError, "positive"),
        ({"batch_size": 0}, ValueError, "batch_size must be a positive int"),
        ({"compression": "gzip"}, ValueError, "compression must be one of"),
        ({"metadata": {"when": object()}}, TypeError, "metadata must be JSON-serialisable"),
        ({"tag": "../x"}, ValueError, "tag must start with a letter or digit"),
        ({"name": "../x"}, ValueError, "dataset name must start with a letter or digit"),
    ],
)
def test_bad_options_fail_before_the_generator_runs(
    home: Path, options: dict, error: type[Exception], needle: str
) -> None:
    calls = []

    def rows():
        calls.append(1)
        yield {"x": 1}

    with pytest.raises(error, match=needle):
        se.build(rows, NUM, **{"home": home, "progress": False, **options})
    assert calls == []
    assert not home.exists()  # nothing was written


def test_without_home_everything_uses_the_default_home(default_home: Path) -> None:
    ds = se.build([{"x": 1}], NUM, name="here", progress=False)
    assert ds.cache_dir.is_relative_to(default_home)
    assert se.load("here").version == ds.version
    assert [row["name"] for row in se.datasets()] == ["here"]
    assert len(se.versions("here")) == 1
    assert se.verify("here").num_rows == 1


def test_load_by_name_tag_prefix_and_path_of_every_kind(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = se.build(squares, NUM, args=(2,), home=home, progress=False, tag="first")
    latest = se.build(squares, NUM, args=(3,), home=home, progress=False)
    assert se.load("squares", home=home).version == latest.version
    with pytest.raises(se.InvalidNameError, match="nothing after '@'"):  # an empty tag variable, not "latest"
        se.load("squares@", home=home)
    assert se.load("squares@latest", home=home).version == latest.version
    assert se.load("squares@first", home=str(home)).version == first.version
    assert se.load(f"squares@{first.version[:4]}", home=home).version == first.version
    relative = Path("home") / "squares" / "versions" / first.version
    for ref in (first.cache_dir, str(first.cache_dir)):
        by_path = se.load(ref)
        assert (by_path.name, by_path.version, len(by_path)) == ("squares", first.version, 2)
    monkeypatch.chdir(tmp_path)
    assert se.load(f"./{relative}").version == first.version
    assert se.load(relative).version == first.version
    monkeypatch.setenv("HOME", str(tmp_path))
    assert se.load(f"~/{relative}").version == first.version
    # opened by path inside a catalog, a version keeps its name and home: it can be tagged and edited there
    assert se.tag(se.load(first.cache_dir), "by-path") == first.version
    assert se.load("squares@by-path", home=home).version == first.version


def test_load_errors_name_what_exists(home: Path) -> None:
    ds = se.build([{"x": 1}], NUM, name="one", home=home, progress=False)
    with pytest.raises(se.CacheNotFoundError, match=r"no dataset named 'two' in .*; datasets: \['one'\]") as missing:
        se.load("two", home=home)
    no_version = rf"one has no version or tag 'zz'; versions: \['{ds.version}'\]"
    with pytest.raises(FileNotFoundError, match=no_version) as bad:
        se.load("one@zz", home=home)  # CacheNotFoundError is also a FileNotFoundError
    # one error, not the same one twice ("During handling of the above exception, another exception occurred")
    assert missing.value.__context__ is None
    assert bad.value.__context__ is None
    with pytest.raises(se.StableExploreError, match=r"no cache at .*nowhere"):
        se.load(home / "nowhere")
    with pytest.raises(ValueError, match="dataset name must start with a letter or digit"):
        se.load("not a name", home=home)


def test_a_dataset_folder_or_a_home_given_as_a_path_is_understood(home: Path) -> None:
    """The folder a user finds under ~/.cache/stable-explore is a dataset (or its home), not a version's."""
    first = se.build(squares, NUM, args=(2,), home=home, progress=False, tag="first")
    latest = se.build(squares, NUM, args=(3,), home=home, progress=False)
    by_folder = se.load(home / "squares")  # the dataset's folder: its latest version
    assert (by_folder.name, by_folder.version, by_folder.home) == ("squares", latest.version, home)
    assert se.load(f"{home / 'squares'}@first").version == first.version  # FOLDER@TAG, as a bucket's URL takes it
    assert se.load(str(home / "squares")).version == latest.version
    with pytest.raises(se.CacheNotFoundError, match=r"is a catalog home \(datasets: \['squares'\]\).*se\.load"):
        se.load(home)
    with pytest.raises(se.CacheNotFoundError, match=r"squares has no version or tag 'nope'"):
        se.load(f"{home / 'squares'}@nope")
    assert se.verify(f"{home / 'squares'}@first").num_rows == 2  # verify takes the same paths
    assert se.verify(home / "squares").num_rows == 3


def test_versions_and_datasets_are_tables(home: Path) -> None:
    assert len(se.datasets(home=home)) == 0
    assert str(se.datasets(home=home)).endswith("(none)")
    first = se.build(squares, NUM, args=(2,), home=home, progress=False, tag="first")
    latest = se.build(squares, NUM, args=(3,), home=home, progress=False)
    table = se.versions("squares@first", home=home)  # any ref names its dataset: every version is listed
    assert table.column("version") == [latest.version, first.version]
    assert table.to_pandas()["rows"].tolist() == [3, 2]
    listing = se.datasets(home=home)
    assert listing.column("name") == ["squares"]
    assert listing[0]["latest"] == latest.version
    assert "<table" in listing._repr_html_()
    with pytest.raises(se.CacheNotFoundError, match="no dataset named 'cubes'"):
        se.versions("cubes", home=home)


def test_tag_a_dataset_or_a_ref(home: Path, default_home: Path) -> None:
    first = se.build(squares, NUM, args=(2,), home=home, progress=False)
    latest = se.build(squares, NUM, args=(3,), home=home, progress=False)
    assert se.tag(first, "reviewed") == first.version  # no home=: the dataset's own home
    assert list(default_home.iterdir()) == []
    assert se.load("squares@reviewed", home=home).version == first.version
    assert se.tag(f"squares@{latest.version[:6]}", "reviewed", home=home) == latest.version  # a tag moves
    assert se.load("squares@reviewed", home=home).version == latest.version
    assert (home / "squares" / "refs" / "reviewed").read_text().strip() == latest.version
    se.tag(first, "latest")  # a user may say which version is the latest (issue 11)
    assert se.load("squares", home=home).version == first.version
    with pytest.raises(se.CacheNotFoundError):
        se.tag("squares@nope", "x", home=home)
    assert sorted(se.datasets(home=home)[0]["tags"]) == ["reviewed"]


def test_gc_returns_the_bytes_it_freed(home: Path) -> None:
    old = se.build(squares, NUM, args=(300,), home=home, progress=False)
    tagged = se.build(squares, NUM, args=(200,), home=home, progress=False, tag="keep")
    latest = se.build(squares, NUM, args=(100,), home=home, progress=False)
    old_bytes = sum(p.stat().st_size for p in old.cache_dir.iterdir())
    assert se.gc(home=home) == old_bytes  # keep=1: the newest untagged version stays, and every tagged one
    assert not old.cache_dir.exists()
    assert tagged.cache_dir.is_dir()
    assert latest.cache_dir.is_dir()
    assert se.gc("squares", keep=0, home=home) == 0  # the rest are tagged (latest included)
    with pytest.raises(se.CacheNotFoundError, match="no dataset named 'cubes'"):
        se.gc("cubes", home=home)
    with pytest.raises(ValueError, match="keep must be >= 0"):
        se.gc(keep=-1, home=home)


def test_verify_a_dataset_a_ref_or_a_path(home: Path) -> None:
    ds = se.build(squares, NUM, args=(5,), home=home, progress=False, tag="five")
    for target in (ds, "squares", "squares@five", ds.cache_dir, str(ds.cache_dir)):
        report = se.verify(target, home=home)
        assert (report.num_rows, report.num_shards, report.hashed) == (5, 1, True)
        assert report.cache_dir == ds.cache_dir
    shard = ds.cache_dir / "shard-00000.arrow"
    data = bytearray(shard.read_bytes())
    data[-40] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(se.CacheCorruptionError, match="does not match") as info:
        se.verify("squares@five", home=home)
    assert info.value.path == shard
    with pytest.raises(se.CacheNotFoundError):
        se.verify("squares@six", home=home)


def test_browse_a_ref_or_a_dataset(home: Path) -> None:
    pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")
    ds = se.build(squares, NUM, args=(30,), home=home, progress=False, tag="thirty")
    browser = se.browse("squares@thirty", home=home, page_size=24)
    assert (browser.num_rows, browser.num_pages) == (30, 2)
    assert browser.dataset.version == ds.version
    assert se.browse(ds[:10]).num_rows == 10
    with pytest.raises(se.CacheNotFoundError):
        se.browse("squares@nope", home=home)


def test_compare_datasets_or_refs(home: Path) -> None:
    first = se.build(squares, NUM, args=(3,), home=home, progress=False, tag="first")
    latest = se.build(squares, NUM, args=(4,), kwargs={"scale": 2}, home=home, progress=False)
    diff = se.compare("squares@first", "squares", home=home)
    assert (diff.a, diff.b) == (f"squares@{first.version}", f"squares@{latest.version}")
    assert diff.summary() == "+1 -0 ~2 rows"  # k0 is 0 either way
    assert diff.rows.added == ["k3"]
    assert se.compare(first, "squares@first", home=home).identical
    assert se.compare(latest, first).rows.removed == ["k3"]
    with pytest.raises(se.CacheNotFoundError, match="no version or tag 'second'"):
        se.compare("squares@first", "squares@second", home=home)


def _lance_rows_cache(folder: Path) -> Path:
    """A small fake of stable-datasets' Lance layout: metadata naming the layout, rows in a .lance folder."""
    import json

    folder.mkdir(parents=True)
    (folder / "data.lance" / "_versions").mkdir(parents=True)
    (folder / "data.lance" / "_versions" / "1.manifest").write_bytes(b"LANC")
    meta = {
        "layout": "lance-rows",
        "layout_version": 1,
        "schema_fingerprint": "83810d311e4f1df4",
        "num_rows": 10,
        "features": {"x": {"_type": "Value", "dtype": "int64"}},
        "lance_dir": "data.lance",
    }
    (folder / "_metadata.json").write_text(json.dumps(meta))
    return folder


def test_a_cache_in_another_layout_is_named_as_such_not_as_damage(home: Path, tmp_path: Path) -> None:
    foreign = _lance_rows_cache(tmp_path / "lance-cache")
    expected = "layout 'lance-rows' is not a stable-explore cache"
    for call in (se.load, se.verify):
        with pytest.raises(se.NotACacheError, match=expected) as info:
            call(foreign)
        assert not isinstance(info.value, se.CacheCorruptionError)
        assert info.value.path == foreign / "_metadata.json"
    # a Lance dataset opens (through its Arrow mirror, the lance extra); this fake one is named as unreadable
    with pytest.raises(se.CacheCorruptionError, match="Lance cannot open it") as damaged:
        se.load(foreign / "data.lance")
    assert damaged.value.path == foreign / "data.lance"
    se.build(squares, NUM, args=(2,), home=home, progress=False)
    copied = _lance_rows_cache(home / "squares" / "versions" / "0123456789abcdef")  # copied into a home by hand
    problems = [str(p) for p in se.fsck(home=home).problems]
    assert len(problems) == 1
    assert problems[0].startswith(f"{copied / '_metadata.json'}: {expected}")
    assert "damaged" not in problems[0]
    assert "corrupt" not in problems[0]
