"""ClassLabel: names and ints, and the values it refuses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore import ClassLabel, EncodingError, Features, SchemaError
from tests.conftest import NAMES


def test_class_label_names_and_ints() -> None:
    labels = ClassLabel(names=["cat", "dog"])
    assert labels.str2int("cat") == 0
    assert labels.int2str([1, 0]) == ["dog", "cat"]
    assert labels.encode_column(["dog", 0, None, np.int64(1)]).to_pylist() == [1, 0, None, 1]
    assert ClassLabel(num_classes=3).names == ("0", "1", "2")
    with pytest.raises(EncodingError, match=r"unknown class 'dgo'.*did you mean 'dog'"):
        labels.encode_column(["cat", "dgo"])
    with pytest.raises(EncodingError, match="row 1"):
        labels.encode_column([0, 5])
    with pytest.raises(EncodingError):
        labels.encode_column([True])
    with pytest.raises(SchemaError, match="unique"):
        ClassLabel(names=["a", "a"])
    with pytest.raises(SchemaError, match="names"):
        ClassLabel()


def test_labels_refuse_floats_and_bools_and_none_relabels(tmp_path: Path) -> None:
    labels = ClassLabel(names=NAMES)
    for bad in (1.0, np.bool_(True), True, np.float64(2)):
        with pytest.raises(EncodingError):
            labels.encode_column([0, bad])
    ds = se.build([{"label": 0}], Features(label=labels), name="l", home=tmp_path, progress=False)
    with pytest.raises(EncodingError, match="got None"):
        ds.relabel({0: None})
