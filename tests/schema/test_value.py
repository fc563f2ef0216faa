"""Value: scalar columns, with no silent truncation."""

from __future__ import annotations

import pytest

from stable_explore import EncodingError, SchemaError, Value


def test_value_refuses_silent_truncation_and_wrong_types() -> None:
    assert Value("int64").encode_column([1, 2.0, None]).to_pylist() == [1, 2, None]
    with pytest.raises(EncodingError, match=r"row 1: expected int64, got 3.5"):
        Value("int64").encode_column([1, 3.5])
    with pytest.raises(EncodingError, match="expected uint8"):
        Value("uint8").encode_column([300])
    with pytest.raises(EncodingError, match="expected string, got 2"):
        Value("string").encode_column(["a", 2])
    with pytest.raises(SchemaError, match="dtype"):
        Value("int128")
