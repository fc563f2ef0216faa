"""Thumbnails: sizes, formats, EXIF orientation, tiny images, arrays, data URIs, and PIL's bomb guard."""

from __future__ import annotations

import base64
import io
import struct
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

import stable_explore as se
from stable_explore.display.images import (
    array_thumbnail,
    data_uri,
    encode_thumbnail,
    is_image_array_shape,
    open_thumbnail,
    thumbnail_bytes,
)


def encoded(image: PILImage.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def halves(size: tuple[int, int]) -> PILImage.Image:
    """Left half red, right half blue: where the red ends up shows how the image was turned."""
    image = PILImage.new("RGB", size, (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, size[0] // 2, size[1]))
    return image


def opened(data: bytes) -> PILImage.Image:
    return PILImage.open(io.BytesIO(data))


def bomb_png(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` pixels, with almost no data behind it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def test_small_web_images_are_sent_as_stored_and_large_ones_shrunk(tmp_path: Path, jpegs: list[bytes]) -> None:
    from stable_explore.display.images import thumbnail_bytes

    assert thumbnail_bytes(jpegs[0], 128) == (jpegs[0], "image/jpeg")
    big = io.BytesIO()
    PILImage.new("RGB", (600, 300), (200, 10, 10)).save(big, format="JPEG")
    data, mime = thumbnail_bytes(big.getvalue(), 128)
    assert mime == "image/jpeg"
    assert PILImage.open(io.BytesIO(data)).size == (128, 64)
    # a photo taken sideways (EXIF orientation 6) is turned upright, as browsers show it
    exif = PILImage.Exif()
    exif[0x0112] = 6
    sideways = io.BytesIO()
    PILImage.new("RGB", (100, 50), (0, 0, 255)).save(sideways, format="JPEG", exif=exif.tobytes())
    data, _ = thumbnail_bytes(sideways.getvalue(), 128)
    assert PILImage.open(io.BytesIO(data)).size == (50, 100)
    cmyk = io.BytesIO()
    PILImage.new("CMYK", (20, 20)).save(cmyk, format="JPEG")
    data, _ = thumbnail_bytes(cmyk.getvalue(), 128)
    assert PILImage.open(io.BytesIO(data)).mode == "RGB"  # re-encoded: browsers differ on CMYK JPEGs


@pytest.mark.parametrize(
    ("size", "expected"),
    [((600, 300), (128, 64)), ((300, 600), (64, 128)), ((1000, 1000), (128, 128)), ((129, 5), (128, 5)),
     ((2000, 1), (128, 1))],
)  # fmt: skip
@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "BMP"])
def test_a_thumbnail_fits_the_box_and_keeps_the_aspect_ratio(
    size: tuple[int, int], expected: tuple[int, int], fmt: str
) -> None:
    data = encoded(halves(size), fmt)
    assert open_thumbnail(data, 128).size == expected
    thumb, mime = thumbnail_bytes(data, 128)
    assert mime == "image/jpeg"
    assert opened(thumb).format == "JPEG"
    assert opened(thumb).size == expected


@pytest.mark.parametrize(("size", "expected"), [((8, 8), (64, 64)), ((1, 1), (64, 64)), ((10, 5), (60, 30))])
def test_tiny_images_are_enlarged_by_a_whole_factor_and_stay_sharp(
    size: tuple[int, int], expected: tuple[int, int]
) -> None:
    pixels = (np.indices(size[::-1]).sum(axis=0) % 2 * 255).astype(np.uint8)  # a checkerboard
    image = open_thumbnail(encoded(PILImage.fromarray(pixels), "PNG"), 64)
    assert image.size == expected
    factor = expected[0] // size[0]
    big = np.asarray(image.convert("L"))
    np.testing.assert_array_equal(big, np.kron(pixels, np.ones((factor, factor), dtype=np.uint8)))  # no blur


@pytest.mark.parametrize(
    ("orientation", "size", "red_at"),
    [(1, (100, 50), (0, 0)), (3, (100, 50), (99, 49)), (6, (50, 100), (0, 0)), (8, (50, 100), (0, 99))],
)
def test_exif_orientation_is_applied_as_browsers_do(
    orientation: int, size: tuple[int, int], red_at: tuple[int, int]
) -> None:
    exif = PILImage.Exif()
    exif[0x0112] = orientation
    data = encoded(halves((200, 100)), "JPEG", exif=exif.tobytes(), quality=95)
    for image in (open_thumbnail(data, 100), opened(thumbnail_bytes(data, 100)[0])):
        assert image.size == size
        red, _, blue = image.convert("RGB").getpixel(red_at)
        assert red > 200, (orientation, red_at, image.getpixel(red_at))
        assert blue < 60, (orientation, red_at, image.getpixel(red_at))


@pytest.mark.parametrize(
    ("mode", "fmt", "options", "mime", "thumb_mode"),
    [
        ("RGBA", "PNG", {}, "image/png", "RGBA"),  # transparency survives as PNG
        ("LA", "PNG", {}, "image/png", "RGBA"),
        ("P", "PNG", {"transparency": 0}, "image/png", "RGBA"),
        ("P", "PNG", {}, "image/jpeg", "RGB"),
        ("L", "PNG", {}, "image/jpeg", "L"),
        ("1", "PNG", {}, "image/jpeg", "RGB"),
        ("CMYK", "JPEG", {}, "image/jpeg", "RGB"),
        ("RGB", "GIF", {}, "image/jpeg", "RGB"),
    ],
)
def test_large_images_of_every_mode_become_web_thumbnails(
    mode: str, fmt: str, options: dict, mime: str, thumb_mode: str
) -> None:
    data = encoded(PILImage.new(mode, (300, 200)), fmt, **options)
    thumb, found = thumbnail_bytes(data, 64)
    assert found == mime
    assert opened(thumb).mode == thumb_mode
    assert opened(thumb).size == (64, 43)


def test_small_browser_ready_images_are_passed_through_untouched() -> None:
    for mode, fmt, mime in (("RGBA", "PNG", "image/png"), ("L", "JPEG", "image/jpeg"), ("P", "PNG", "image/png")):
        data = encoded(PILImage.new(mode, (20, 10)), fmt)
        assert thumbnail_bytes(data, 64) == (data, mime)
    gif = encoded(PILImage.new("RGB", (20, 10)), "GIF")  # small, but not a format every page shows as stored
    assert thumbnail_bytes(gif, 64)[1] == "image/jpeg"


def test_encode_thumbnail_uses_png_only_for_alpha() -> None:
    data, mime = encode_thumbnail(PILImage.new("RGBA", (4, 4), (1, 2, 3, 4)))
    assert (mime, opened(data).format, opened(data).getpixel((0, 0))) == ("image/png", "PNG", (1, 2, 3, 4))
    data, mime = encode_thumbnail(PILImage.new("RGB", (4, 4)), quality=50)
    assert (mime, opened(data).format) == ("image/jpeg", "JPEG")


def test_data_uris_carry_the_bytes_and_the_type() -> None:
    data = encoded(PILImage.new("RGB", (3, 3)), "PNG")
    uri = data_uri(data, "image/png")
    prefix, payload = uri.split(",", 1)
    assert prefix == "data:image/png;base64"
    assert base64.b64decode(payload) == data
    assert data_uri(b"", "image/jpeg") == "data:image/jpeg;base64,"


@pytest.mark.parametrize(
    ("array", "mode", "size"),
    [
        (np.zeros((8, 8), dtype=np.uint8), "L", (64, 64)),
        (np.zeros((8, 8, 1), dtype=np.uint8), "L", (64, 64)),
        (np.zeros((8, 16, 3), dtype=np.uint8), "RGB", (64, 32)),
        (np.zeros((300, 150), dtype=np.uint8), "L", (32, 64)),
    ],
)
def test_array_thumbnails_take_gray_and_colour_arrays(array: np.ndarray, mode: str, size: tuple[int, int]) -> None:
    image = array_thumbnail(array, 64)
    assert (image.mode, image.size) == (mode, size)


def test_array_thumbnails_stretch_other_dtypes_to_the_full_range() -> None:
    values = np.array([[-1.0, 0.0], [1.0, np.nan]], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(array_thumbnail(values, 2)), [[0, 127], [255, 0]])
    flat = array_thumbnail(np.full((4, 4), 7.5), 4)  # one value everywhere: no division by zero
    assert flat.getextrema() == (0, 0)
    assert array_thumbnail(np.array([[0, 1000]], dtype=np.int32), 2).getextrema() == (0, 255)


def test_an_all_nan_array_gives_a_blank_thumbnail_quietly() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "All-NaN slice" warning must not reach the notebook
        assert array_thumbnail(np.full((4, 4), np.nan, dtype=np.float32), 4).getextrema() == (0, 0)
        infinite = np.array([[-np.inf, 0.0], [1.0, np.inf]])
        np.testing.assert_array_equal(np.asarray(array_thumbnail(infinite, 2)), [[0, 0], [255, 255]])


def test_image_shaped_arrays_are_gray_or_colour_images() -> None:
    assert is_image_array_shape((8, 8, 1))
    assert is_image_array_shape((8, 8, 3))
    assert not is_image_array_shape((8, 8, 4))
    assert not is_image_array_shape((8, 8))
    assert not is_image_array_shape((2, 8, 8, 3))


def test_the_decompression_bomb_guard_stays_on() -> None:
    bomb = bomb_png(20_000, 20_000)  # 400 million pixels claimed, a few hundred bytes on disk
    assert len(bomb) < 1_000
    # the guard is ours now (ImageTooLargeError, a StableExploreError), and PIL's own stays on beneath it
    with pytest.raises(se.ImageTooLargeError, match="decompression bomb"):
        open_thumbnail(bomb, 64)
    with pytest.raises(se.ImageTooLargeError, match="decompression bomb"):
        thumbnail_bytes(bomb, 64)


def test_bytes_that_are_not_an_image_raise_pils_error() -> None:
    with pytest.raises(UnidentifiedImageError):
        thumbnail_bytes(b"not an image", 64)
    with pytest.raises(OSError):  # UnidentifiedImageError is an OSError
        open_thumbnail(b"\xff\xd8\xff", 64)


def test_sixteen_bit_grayscale_pngs_get_thumbnails() -> None:
    depth = np.arange(400 * 1000, dtype=np.uint16).reshape(400, 1000)
    data = encoded(PILImage.fromarray(depth), "PNG")
    assert opened(data).mode == "I;16"
    assert open_thumbnail(data, 64).size == (64, 26)
    assert opened(thumbnail_bytes(data, 64)[0]).size == (64, 26)
    # stretched to the full 0..255 range, not clipped at 255 (which would paint most of a depth map white)
    ramp = np.tile(np.linspace(0, 65535, 1000).astype(np.uint16), (400, 1))
    low, high = open_thumbnail(encoded(PILImage.fromarray(ramp), "PNG"), 64).getextrema()
    assert low < 10
    assert high > 245
