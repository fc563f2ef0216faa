"""The versioning package loads its names lazily: a save imports the edit code, not compare and its display code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter (a clean ``sys.modules``); it prints one JSON object."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_save_does_not_import_compare(tmp_path: Path) -> None:
    code = f"""
import json, sys
import stable_explore as se
features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
ds = se.build([{{"label": "cat"}}] * 4, features, name="pets", home={str(tmp_path)!r}, progress=False)
saved = ds.relabel({{1: "dog"}}).save(progress=False)
print(json.dumps({{"counts": saved.label_counts(), "loaded": sorted(sys.modules)}}))
"""
    found = _run(code)
    assert found["counts"] == {"cat": 3, "dog": 1}
    loaded = found["loaded"]
    assert isinstance(loaded, list)
    assert "stable_explore.versioning.edits" in loaded
    for unused in (
        "stable_explore.versioning.compare",
        "stable_explore.versioning.row_diff",
        "stable_explore.display.card",
    ):
        assert unused not in loaded


def test_package_names_resolve_whatever_was_imported_first() -> None:
    # importing the submodule ``compare`` binds it on the package; the package's ``compare`` stays the function
    code = """
import json
import stable_explore.versioning as v
import stable_explore.versioning.compare as module_path
from stable_explore.versioning import Diff, Draft, PendingEdits, RowDiff, compare
print(json.dumps({
    "compare": [compare.__module__, compare.__name__, callable(v.compare), v.compare is compare],
    "classes": [c.__module__ + "." + c.__name__ for c in (Diff, Draft, PendingEdits, RowDiff)],
    "all_listed": sorted(v.__all__) == sorted(n for n in dir(v) if n in v.__all__),
}))
"""
    found = _run(code)
    assert found["compare"] == ["stable_explore.versioning.compare", "compare", True, True]
    assert found["classes"] == [
        "stable_explore.versioning.compare.Diff",
        "stable_explore.versioning.edits.Draft",
        "stable_explore.versioning.edits.PendingEdits",
        "stable_explore.versioning.row_diff.RowDiff",
    ]
    assert found["all_listed"] is True


def test_an_unknown_name_is_an_attribute_error() -> None:
    import stable_explore.versioning as versioning

    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = versioning.nope
