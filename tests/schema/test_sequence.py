"""Sequence: lists of a feature, with the bad item named."""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import ClassLabel, EncodingError, Features, Sequence, Value


def test_sequence_reports_the_bad_item() -> None:
    feature = Sequence(ClassLabel(names=["a"]))
    with pytest.raises(EncodingError, match="item 1: unknown class 'z'"):
        feature.encode_value(["a", "z"])
    with pytest.raises(EncodingError, match="expected a list"):
        feature.encode_value("a")
    with pytest.raises(EncodingError, match="length 3"):
        Sequence(Value("int64"), length=3).encode_value([1])


def test_infinities_in_sequences_are_cached(tmp_path: Path) -> None:
    features = Features(v=se.Sequence(Value("float32")))
    ds = se.build(
        [{"v": [1.0, float("inf")]}, {"v": [float("-inf")]}], features, name="inf", home=tmp_path, progress=False
    )
    assert ds[0]["v"] == [1.0, float("inf")]
