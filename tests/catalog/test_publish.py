"""Publishing: the version layout, refs, and a version id that depends on content only."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import stable_explore as se
from tests.sources import NUM_FEATURES, numbers


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
