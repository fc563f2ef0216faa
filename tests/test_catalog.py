"""se.build, the catalog layout, cache hits and their explanations, load, refs, tags, gc, verify."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from json import dumps
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore import CacheCorruptionError, CacheNotFoundError, Features, Value
from tests.conftest import NAMES, write_seed_v1_cache

ROOT = "data/v1"


def numbers(n, offset=0):
    # a function attribute, not a global value: globals a generator reads are part of its fingerprint
    numbers.calls += 1
    for i in range(n):
        yield f"k{i}", {"x": i + offset, "s": f"{ROOT}/{i}"}


numbers.calls = 0
NUM_FEATURES = Features(x=Value("int64"), s=Value("string"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_layout_refs_and_version_id(home: Path) -> None:
    ds = se.build(numbers, NUM_FEATURES, args=(10,), home=home, progress=False, description="ten")
    assert ds.name == "numbers"
    version_dir = home / "numbers" / "versions" / ds.version
    assert ds.cache_dir == version_dir
    assert (version_dir / "_metadata.json").is_file()
    assert (home / "numbers" / "refs" / "latest").read_text().strip() == ds.version
    raw = json.loads((version_dir / "_metadata.json").read_text())
    for field in ("features", "shard_hashes", "version_id", "created_at", "parent", "operations"):
        assert field in raw
    for field in ("source_fingerprint", "description", "license", "metadata", "content_digest"):
        assert field in raw
    assert raw["version_id"] == ds.version
    assert raw["description"] == "ten"


def test_same_content_has_the_same_version_id_in_any_process_and_home(tmp_path: Path) -> None:
    rows = [{"x": i, "s": "a"} for i in range(50)]
    a = se.build(rows, NUM_FEATURES, name="n", home=tmp_path / "a", progress=False)
    b = se.build(rows, NUM_FEATURES, name="n", home=tmp_path / "b", progress=False, batch_size=7, shard_size=1)
    assert b.num_shards > 1
    assert a.version == b.version
    script = textwrap.dedent(
        f"""
        import stable_explore as se
        rows = [{{"x": i, "s": "a"}} for i in range(50)]
        features = se.Features(x=se.Value("int64"), s=se.Value("string"))
        print(se.build(rows, features, name="n", home={str(tmp_path / "c")!r}, progress=False).version)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == a.version
    changed = se.build(rows, NUM_FEATURES, name="n", home=tmp_path / "a", progress=False, description="other")
    assert changed.version != a.version


def test_moved_home_still_loads_and_verifies(tmp_path: Path) -> None:
    ds = se.build(numbers, NUM_FEATURES, args=(20,), home=tmp_path / "one", progress=False)
    shutil.move(str(tmp_path / "one"), str(tmp_path / "two"))
    moved = se.load("numbers", home=tmp_path / "two")
    assert moved.version == ds.version
    assert moved[19]["x"] == 19
    assert se.verify(moved).num_rows == 20


def test_cache_hit_skips_the_generator_and_says_why(home: Path) -> None:
    numbers.calls = 0
    first = se.build(numbers, NUM_FEATURES, args=(100,), home=home, progress=False)
    assert first.build_info == "built: first build of numbers"
    started = time.perf_counter()
    again = se.build(numbers, NUM_FEATURES, args=(100,), home=home, progress=False)
    elapsed = time.perf_counter() - started
    assert numbers.calls == 1
    assert again.version == first.version
    assert again.build_info == "reused: same source, arguments and features"
    assert elapsed < 1.0


def test_a_miss_names_what_changed(home: Path) -> None:
    se.build(numbers, NUM_FEATURES, args=(5,), home=home, progress=False)
    changed_arg = se.build(numbers, NUM_FEATURES, args=(6,), home=home, progress=False)
    assert changed_arg.build_info == "rebuilt: argument 'n' changed"
    forced = se.build(numbers, NUM_FEATURES, args=(6,), home=home, progress=False, force=True)
    assert forced.build_info.startswith("rebuilt: force=True")
    assert "identical content" in forced.build_info
    global ROOT
    old_root = ROOT
    try:
        ROOT = "data/v2"
        changed_global = se.build(numbers, NUM_FEATURES, args=(6,), home=home, progress=False)
    finally:
        ROOT = old_root
    assert changed_global.build_info == "rebuilt: variable 'ROOT' changed"
    assert changed_global[0]["s"] == "data/v2/0"
    other_features = Features(x=Value("int32"), s=Value("string"))
    assert "features changed" in se.build(numbers, other_features, args=(6,), home=home, progress=False).build_info


def test_edited_generator_source_is_a_miss(home: Path) -> None:
    namespace: dict = {}
    exec("def gen(n):\n    for i in range(n):\n        yield {'x': i, 's': 'a'}\n", namespace)
    se.build(namespace["gen"], NUM_FEATURES, name="g", args=(3,), home=home, progress=False)
    exec("def gen(n):\n    for i in range(n):\n        yield {'x': i * 2, 's': 'a'}\n", namespace)
    rebuilt = se.build(namespace["gen"], NUM_FEATURES, name="g", args=(3,), home=home, progress=False)
    # without source text, bytecode stands in for it
    assert rebuilt.build_info == "rebuilt: generator source changed"
    assert rebuilt[2]["x"] == 4


def test_plain_iterables_always_build_unless_keyed(home: Path) -> None:
    rows = [{"x": 1, "s": "a"}]
    first = se.build(rows, NUM_FEATURES, name="plain", home=home, progress=False)
    assert "plain iterable has no fingerprint" in first.build_info
    keyed = se.build(rows, NUM_FEATURES, name="plain", key="v1", home=home, progress=False)
    assert se.build(iter(()), NUM_FEATURES, name="plain", key="v1", home=home, progress=False).version == keyed.version


def test_unhashable_argument_builds_and_is_named_with_advice(home: Path) -> None:
    import threading

    class Opaque:
        def __init__(self) -> None:
            self.lock = threading.Lock()  # no content hash: the build runs every time, and says why

        def __radd__(self, other: int) -> int:
            return other

    with pytest.warns(se.UnfingerprintableWarning, match=r"argument 'offset'.*key=.*ignore=\['offset'\]"):
        ds = se.build(numbers, NUM_FEATURES, args=(3,), kwargs={"offset": Opaque()}, home=home, progress=False)
    assert len(ds) == 3
    ds = se.build(numbers, NUM_FEATURES, args=(3,), kwargs={"offset": 0}, key="manual", home=home, progress=False)
    assert len(ds) == 3


def test_numpy_arguments_are_hashed_by_content(home: Path) -> None:
    def from_array(values):
        for v in values:
            yield {"x": int(v), "s": "a"}

    a = np.arange(5)
    se.build(from_array, NUM_FEATURES, args=(a,), home=home, progress=False)
    assert se.build(from_array, NUM_FEATURES, args=(a.copy(),), home=home, progress=False).build_info.startswith(
        "reused"
    )
    b = a.copy()
    b[0] = 99
    assert (
        "argument 'values' changed"
        in se.build(from_array, NUM_FEATURES, args=(b,), home=home, progress=False).build_info
    )


def test_concurrent_builders_of_one_source_build_once(tmp_path: Path) -> None:
    marker = tmp_path / "runs.log"
    script = textwrap.dedent(
        f"""
        import time, stable_explore as se
        def slow(n):
            with open({str(marker)!r}, "a") as f:
                f.write("run\\n")
            for i in range(n):
                time.sleep(0.002)
                yield {{"x": i}}
        ds = se.build(slow, se.Features(x=se.Value("int64")), args=(300,), home={str(tmp_path / "home")!r},
                      progress=False)
        print(ds.version, ds.build_info)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120)[0].split(" ", 1) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert marker.read_text().count("run") == 1
    assert outputs[0][0] == outputs[1][0]
    assert sorted(o[1].split(":")[0] for o in outputs) == ["built", "reused"]


def test_load_by_name_prefix_tag_and_path(home: Path) -> None:
    a = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False, tag="small")
    b = se.build(numbers, NUM_FEATURES, args=(4,), home=home, progress=False)
    assert se.load("numbers", home=home).version == b.version
    assert se.load("numbers@small", home=home).version == a.version
    assert se.load(f"numbers@{a.version[:5]}", home=home).version == a.version
    by_path = se.load(a.cache_dir)
    assert (by_path.name, by_path.version, len(by_path)) == ("numbers", a.version, 3)
    assert se.load(str(a.cache_dir)).version == a.version


def test_unknown_and_ambiguous_refs_list_what_exists(home: Path) -> None:
    a = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False, tag="small")
    with pytest.raises(CacheNotFoundError, match=r"no dataset named 'nope'.*\['numbers'\]"):
        se.load("nope", home=home)
    with pytest.raises(CacheNotFoundError, match=rf"no version or tag 'zzz'.*{a.version}.*small"):
        se.load("numbers@zzz", home=home)
    for n in range(4, 40):
        se.build(numbers, NUM_FEATURES, args=(n,), home=home, progress=False)
    ids = [row["version"] for row in se.versions("numbers", home=home)]
    prefix = next(p for p in "0123456789abcdef" if sum(v.startswith(p) for v in ids) > 1)
    with pytest.raises(CacheNotFoundError, match="ambiguous"):
        se.load(f"numbers@{prefix}", home=home)


def test_home_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "env-home"))
    ds = se.build([{"x": 1, "s": "a"}], NUM_FEATURES, name="envy", progress=False)
    assert ds.cache_dir.is_relative_to(tmp_path / "env-home")
    assert se.load("envy").version == ds.version


def test_versions_datasets_and_tags(home: Path) -> None:
    a = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    b = se.build(numbers, NUM_FEATURES, args=(4,), home=home, progress=False)
    se.tag(a, "clean", home=home)
    table = se.versions("numbers", home=home)
    assert [row["version"] for row in table] == [b.version, a.version]  # newest first
    tags = {row["version"]: row["tags"] for row in table}
    assert tags[a.version] == ["clean"]
    assert tags[b.version] == ["latest"]
    frame = table.to_pandas()
    assert list(frame.columns) == ["version", "created", "rows", "size", "parent", "message", "tags"]
    assert "<table" in table._repr_html_()
    assert "numbers" in str(se.datasets(home=home))
    listing = se.datasets(home=home)
    assert listing[0]["name"] == "numbers"
    assert listing[0]["versions"] == 2
    assert listing[0]["tags"] == ["clean"]
    se.tag(a, "latest", home=home)  # the user may say which version is the latest (issue 11)
    assert se.load("numbers", home=home).version == a.version
    with pytest.raises(ValueError, match="tag must"):
        se.tag(a, "../escape", home=home)


def test_gc_frees_untagged_versions_and_never_tagged_ones(home: Path) -> None:
    kept = se.build(numbers, NUM_FEATURES, args=(300,), home=home, progress=False, tag="keep")
    doomed = se.build(numbers, NUM_FEATURES, args=(200,), home=home, progress=False)
    latest = se.build(numbers, NUM_FEATURES, args=(100,), home=home, progress=False)
    freed = se.gc(home=home, keep=0)
    assert freed >= doomed.nbytes
    remaining = {row["version"] for row in se.versions("numbers", home=home)}
    assert remaining == {kept.version, latest.version}
    assert se.gc(home=home, keep=0) == 0
    # the source index no longer points at the deleted version: building it again works
    again = se.build(numbers, NUM_FEATURES, args=(200,), home=home, progress=False)
    assert again.build_info.startswith("rebuilt")
    assert len(again) == 200


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


def test_bad_row_during_build_publishes_nothing(home: Path) -> None:
    good = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)

    def broken():
        yield "a", {"x": 1, "s": "ok"}
        yield "b", {"x": "two", "s": "bad"}

    with pytest.raises(se.EncodingError, match=r"row 1, key 'b', field 'x'"):
        se.build(broken, NUM_FEATURES, home=home, name="numbers", progress=False)
    assert se.load("numbers", home=home).version == good.version
    assert [p.name for p in (home / "numbers" / "versions").iterdir()] == [good.version]


def test_seed_v1_cache_loads_by_path_with_caller_features(tmp_path: Path, jpegs) -> None:
    import pyarrow as pa

    write_seed_v1_cache(
        tmp_path / "seed",
        [pa.table({"image": pa.array(jpegs[:4], pa.binary()), "label": pa.array([0, 1, 2, 1], pa.int64())})],
    )
    features = Features(image=se.Image(), label=se.ClassLabel(names=NAMES))
    ds = se.load(tmp_path / "seed", features=features)
    assert ds.version.startswith("v1-")
    assert ds.label_counts() == {"cat": 1, "dog": 2, "bird": 1}
    assert ds[0]["image"].size == (16, 16)
    assert ds.keys() == [0, 1, 2, 3]
    assert ds.to_pandas()["label"].tolist() == ["cat", "dog", "bird", "dog"]
    assert "cat" in ds._repr_html_()


def test_progress_bar_shows_rows_and_bytes(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    se.build(numbers, NUM_FEATURES, args=(2500,), home=home, batch_size=500)
    err = capsys.readouterr().err
    assert "caching numbers" in err
    assert "2.50k" in err or "2500" in err
    assert "written" in err


def test_names_are_checked(home: Path) -> None:
    with pytest.raises(ValueError, match="dataset name"):
        se.build([{"x": 1, "s": "a"}], NUM_FEATURES, name="../up", home=home, progress=False)
    with pytest.raises(TypeError, match="name= is required"):
        se.build([{"x": 1, "s": "a"}], NUM_FEATURES, home=home, progress=False)


def test_library_functions_a_generator_calls_count_as_code(home: Path) -> None:
    # json.dumps reads module globals (an encoder object) that have no faithful token;
    # a user's generator that calls it must still fingerprint.
    def encoded(n):
        for i in range(n):
            yield {"x": len(dumps([i])), "s": dumps({"i": i})}

    se.build(encoded, NUM_FEATURES, args=(3,), home=home, progress=False)
    assert se.build(encoded, NUM_FEATURES, args=(3,), home=home, progress=False).build_info.startswith("reused")


def test_closure_variables_are_part_of_the_fingerprint(home: Path) -> None:
    def make(prefix):
        def tagged(n):
            for i in range(n):
                yield {"x": i, "s": f"{prefix}{i}"}

        return tagged

    se.build(make("a"), NUM_FEATURES, name="closure", args=(2,), home=home, progress=False)
    assert se.build(
        make("a"), NUM_FEATURES, name="closure", args=(2,), home=home, progress=False
    ).build_info.startswith("reused")
    changed = se.build(make("b"), NUM_FEATURES, name="closure", args=(2,), home=home, progress=False)
    assert changed.build_info == "rebuilt: variable 'prefix' changed"
    assert changed[1]["s"] == "b1"


def test_a_hit_on_the_latest_version_writes_nothing(home: Path) -> None:
    se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    ref = home / "numbers" / "refs" / "latest"
    before = ref.stat().st_mtime_ns
    se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    assert ref.stat().st_mtime_ns == before


def test_gc_counts_only_bytes_it_frees_from_an_interrupted_save(home: Path) -> None:
    import os
    import socket

    ds = se.build(numbers, NUM_FEATURES, args=(300,), home=home, progress=False)
    versions = home / "numbers" / "versions"
    stale = versions / f".staging.tmp-{socket.gethostname()}-999999-dead"
    stale.mkdir()
    (stale / "new.arrow").write_bytes(b"x" * 1000)
    os.link(ds.cache_dir / "shard-00000.arrow", stale / "linked.arrow")  # still the parent's
    freed = se.gc(home=home)
    assert freed == 1000
    assert not stale.exists()
    assert se.verify(ds).num_rows == 300
