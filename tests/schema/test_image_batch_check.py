"""A column of images checked at once accepts and refuses exactly what the one-image check does, naming the row."""

from __future__ import annotations

import io
import re

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image as PILImage

from stable_explore import EncodingError
from stable_explore.schema.image_batch_check import check_image_column
from stable_explore.schema.image_header import check_image_bytes
from tests.conftest import jpeg_bytes


def _png(width: int = 5, height: int = 3) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(np.zeros((height, width, 3), dtype=np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def _gif() -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(np.zeros((4, 4), dtype=np.uint8)).save(buffer, format="GIF")
    return buffer.getvalue()


def _with_comment(jpeg: bytes, text: bytes) -> bytes:
    return jpeg[:2] + b"\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + jpeg[2:]


def _plain(reason: str) -> str:
    return re.sub(r" at 0x[0-9a-f]+", "", reason)  # PIL names the BytesIO it read by its address


def _cases() -> dict[str, bytes]:
    jpeg = jpeg_bytes(1)
    big = bytearray(jpeg)
    sof = big.index(b"\xff\xc0")
    big[sof + 5 : sof + 9] = (30000).to_bytes(2, "big") * 2  # declares 30000x30000 pixels
    return {
        "jpeg": jpeg,
        "jpeg with a comment": _with_comment(jpeg, b"row 7"),
        "jpeg padded after its end": jpeg + b"\x00" * 100,
        "jpeg cut short": jpeg[: len(jpeg) // 2],
        "jpeg header only": jpeg[:40],
        "jpeg damaged marker": jpeg[:2] + b"\x00" + jpeg[3:],
        "jpeg bomb": bytes(big),
        "png": _png(),
        "png cut short": _png()[:-12],
        "png zero width": _png()[:16] + b"\x00\x00\x00\x00" + _png()[20:],
        "gif": _gif(),
        "not an image": b"hello, this is a text file and no image at all",
        "empty": b"",
    }


@pytest.mark.parametrize("limit", [0, 50_000])
def test_each_image_is_judged_as_the_one_image_check_judges_it(limit: int) -> None:
    for name, data in _cases().items():
        try:
            check_image_bytes(data, limit)
            expected = None
        except EncodingError as exc:
            expected = _plain(exc.reason)
        good = jpeg_bytes(2)
        column = pa.array([good, None, good, data, good], pa.large_binary())
        if expected is None:
            check_image_column(column, limit)
            continue
        with pytest.raises(EncodingError) as caught:
            check_image_column(column, limit)
        assert (caught.value.index, _plain(caught.value.reason)) == (3, expected), name


def test_a_sliced_binary_column_is_checked_from_its_own_rows() -> None:
    good, bad = jpeg_bytes(3), jpeg_bytes(4)[:30]
    column = pa.array([bad, good, good, bad], pa.binary())
    check_image_column(column.slice(1, 2), 0)
    with pytest.raises(EncodingError) as caught:
        check_image_column(column.slice(1, 3), 0)
    assert caught.value.index == 2


def test_the_first_bad_image_is_named_when_several_are_bad() -> None:
    good = jpeg_bytes(5)
    column = pa.array([good] * 10 + [good[:50]] + [good] * 5 + [b"junk"], pa.large_binary())
    with pytest.raises(EncodingError) as caught:
        check_image_column(column, 0)
    assert caught.value.index == 10


def test_jpegs_cut_at_every_length_and_with_damaged_header_bytes_are_judged_as_one_by_one() -> None:
    # The walk reads each marker's four bytes (0xFF, kind, segment length) and the frame's height and width
    # in one gather: near the end of the data, at every cut and after any damaged header byte, it must still
    # accept exactly what the one-image check accepts and name the first image it refuses.
    rng = np.random.default_rng(26)
    base = _with_comment(jpeg_bytes(6), b"row 26")
    sof = base.index(b"\xff\xc0")
    images = [base[:cut] for cut in range(0, sof + 24)] + [base[: len(base) - cut] for cut in range(0, 6)]
    for _ in range(300):
        damaged = bytearray(base)
        for at in rng.integers(0, sof + 12, size=int(rng.integers(1, 3))).tolist():
            damaged[at] = int(rng.integers(0, 256))
        images.append(bytes(damaged))
    width, height = PILImage.open(io.BytesIO(base)).size
    for limit in (0, width * height):  # no limit; exactly the base's pixels (a damaged size may go over)
        expected = []
        for data in images:
            try:
                check_image_bytes(data, limit)
                expected.append(True)
            except EncodingError:
                expected.append(False)
        for position, data in enumerate(images):  # each image alone after good ones: accepted or named
            column = pa.array([base, base, data], pa.large_binary())
            if expected[position]:
                check_image_column(column, limit)
            else:
                with pytest.raises(EncodingError) as caught:
                    check_image_column(column, limit)
                assert caught.value.index == 2, position
        refused = [position for position, ok in enumerate(expected) if not ok]
        if refused:  # all together: the first refused one is named
            with pytest.raises(EncodingError) as caught:
                check_image_column(pa.array(images, pa.large_binary()), limit)
            assert caught.value.index == refused[0]
