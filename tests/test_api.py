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
    ds = se.build([{"x": 1}], NUM, name="n", home=tmp_path, progress=False)
    with pytest.raises(SchemaError, match="stores its own features"):
        se.load("n", home=tmp_path, features=Features(x=Value("string")))
    assert se.load("n", home=tmp_path, features=NUM).version == ds.version
