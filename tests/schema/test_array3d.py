"""Array3D: fixed-shape arrays, checked for shape and dtype."""

from __future__ import annotations

import numpy as np
import pytest

from stable_explore import Array3D, EncodingError, SchemaError


def test_array3d_checks_shape_and_dtype() -> None:
    feature = Array3D(shape=(2, 2, 3), dtype="uint8")
    with pytest.raises(EncodingError, match=r"expected an array of shape \(2, 2, 3\), got shape \(2, 2\)"):
        feature.encode_value(np.zeros((2, 2)))
    with pytest.raises(EncodingError, match="dtype uint8"):
        feature.encode_value(np.full((2, 2, 3), 1.5))
    with pytest.raises(SchemaError):
        Array3D(shape=(2, 2), dtype="uint8")
