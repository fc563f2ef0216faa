"""Value: scalar columns, with no silent truncation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
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


def test_a_row_of_a_dataframe_with_missing_values_says_to_give_none(tmp_path: Path) -> None:
    """Iterating a DataFrame gives NaN, NA or NaT where a value is missing: the error says what to give."""
    import stable_explore as se

    frame = pd.DataFrame(
        {
            "name": ["a", None],  # pandas 3: a str column, missing as NaN (pandas 2: None, which is fine)
            "n": pd.array([1, None], dtype="Int64"),
            "flag": pd.array([True, None], dtype="boolean"),
            "label": pd.Series(["cat", np.nan], dtype=object),
            "when": pd.to_datetime(["2024-01-01", None]),
        }
    )
    features = {
        "name": Value("string"),
        "n": Value("int64"),
        "flag": Value("bool"),
        "label": se.ClassLabel(names=["cat", "dog"]),
        "when": Value("timestamp[us]"),
    }
    hint = r"a missing value as pandas marks it; give None for one, or use se\.from_pandas"
    refused = 0
    for column, feature in features.items():
        rows = [(i, {column: value}) for i, value in enumerate(frame[column])]
        if rows[1][1][column] is None:
            continue  # pandas 2 keeps None in an object column of text
        with pytest.raises(EncodingError, match=rf"row 1, key 1, field '{column}': .*\(\w+: {hint}\)"):
            se.build(rows, se.Features({column: feature}), name=column, home=tmp_path, progress=False)
        refused += 1
    assert refused >= 4
    # a NaN in a float column is a value, not a missing one: stored as NaN
    floats = se.build([{"x": float("nan")}], se.Features(x=Value("float32")), name="f", home=tmp_path, progress=False)
    assert np.isnan(floats[0]["x"])
    # and se.from_pandas turns every one of them into a null, as the hint says
    assert se.from_pandas(frame, name="frame", home=tmp_path, progress=False)[1] == dict.fromkeys(frame.columns)
