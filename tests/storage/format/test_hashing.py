"""Row hashes: fixed values across releases, and the same whichever path computes them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from stable_explore.storage.format.hashing import _column_hashes, row_hashes

IMAGES = [b"\xff\xd8\xffabc", b"\x89PNG\r\n\x1a\nxyz", b""]
TEXTS = ["cat", "é", ""]


def test_row_hashes_are_pinned() -> None:
    # Versions written by earlier releases are compared row by row with new ones:
    # a change here would report every row of every old version as changed.
    columns = [
        pa.array(IMAGES, type=pa.large_binary()),
        pa.array([0, 2, 1], type=pa.int64()),
        pa.array([0.5, -0.0, float("nan")], type=pa.float32()),
        pa.array(TEXTS, type=pa.string()),
    ]
    expected = [11242301756388134808, 6571036401593588162, 2924708038247541451]
    assert row_hashes(columns).tolist() == expected
    assert row_hashes(columns, [IMAGES, None, None, TEXTS]).tolist() == expected


@pytest.mark.parametrize(
    ("values", "arrow_type"),
    [
        (TEXTS, pa.string()),
        ([t.encode() for t in TEXTS], pa.string()),  # bytes given for a text column
        (IMAGES, pa.large_binary()),
        ([bytearray(b) for b in IMAGES], pa.large_binary()),
        (["cat", b"dog", "é"], pa.large_binary()),  # mixed str and bytes
        ([np.str_("cat"), np.str_("é")], pa.string()),
        (["a", "b"] * 600, pa.string()),
    ],
)
def test_hashing_python_values_matches_hashing_arrow_buffers(values: list, arrow_type: pa.DataType) -> None:
    array = pa.array(values, type=arrow_type)
    assert _column_hashes(array, values).tolist() == _column_hashes(array).tolist()


def test_values_that_are_not_text_or_bytes_fall_back_to_the_buffers() -> None:
    array = pa.array([b"ab", b"cd"], type=pa.binary())
    assert _column_hashes(array, [object(), object()]).tolist() == _column_hashes(array).tolist()


def test_a_null_in_a_bool_column_hashes_as_the_null_hash() -> None:
    # fill_null(0) cannot fill a boolean array: a bool column with a null crashed every build
    with_null = _column_hashes(pa.array([True, None, False]))
    assert with_null[[0, 2]].tolist() == _column_hashes(pa.array([True, False])).tolist()
    assert with_null[1] == _column_hashes(pa.array([None], type=pa.int64()))[0]


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()])
def test_cells_hash_as_their_bytes_in_a_slice_past_several_thousand_rows_and_beside_nulls(
    arrow_type: pa.DataType,
) -> None:
    texts = [f"row {i} é" * (i % 5) for i in range(9_000)]
    cells = [t if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) else t.encode() for t in texts]
    whole = pa.array(cells, type=arrow_type)
    expected = [xxhash.xxh3_64_intdigest(t.encode()) for t in texts]
    assert _column_hashes(whole).tolist() == expected
    assert _column_hashes(whole.slice(4_000, 4_500)).tolist() == expected[4_000:8_500]  # across a slice's end
    with_null = pa.array([*cells[:5_000], None, *cells[5_000:]], type=arrow_type)
    hashed = _column_hashes(with_null).tolist()
    assert hashed[:5_000] + hashed[5_001:] == expected
    assert hashed[5_000] == _column_hashes(pa.array([None], type=pa.int64()))[0]
