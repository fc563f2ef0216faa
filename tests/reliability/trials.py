"""Hostile inputs for the reliability suite and ``benchmarks/bench_reliability.py``: bombs, broken images,
flipped bytes, hand-made metadata. Every helper writes real files; nothing here mocks our storage.
"""

from __future__ import annotations

import functools
import io
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image as PILImage


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


@functools.cache
def png_bomb(width: int = 20000, height: int = 20000) -> bytes:
    """A real, decodable grey PNG of ``width`` x ``height`` zeros: a small file that decodes to w*h bytes.

    One block of rows is deflated once and repeated (a full flush makes each copy independent),
    so making a 400-megapixel bomb takes milliseconds.
    """
    row = b"\x00" * (width + 1)  # filter byte + one byte per pixel
    rows_per_block = max(1, min(height, (1 << 22) // len(row)))
    blocks, rest = divmod(height, rows_per_block)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = deflate.compress(row * rows_per_block) + deflate.flush(zlib.Z_FULL_FLUSH)
    tail = deflate.compress(row * rest) + deflate.flush(zlib.Z_FINISH)
    checksum = ((len(row) * height) % 65521) << 16 | 1  # Adler-32 of zeros: a stays 1, b counts the bytes
    stream = b"\x78\xda" + block * blocks + tail + struct.pack(">I", checksum)
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", stream) + _chunk(b"IEND", b"")


def small_jpeg(seed: int = 0, size: int = 16) -> bytes:
    array = np.random.default_rng(seed).integers(0, 255, (size, size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(array).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def small_png(seed: int = 0, size: int = 16) -> bytes:
    array = np.random.default_rng(seed).integers(0, 255, (size, size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def jpeg_declaring(width: int, height: int, seed: int = 0) -> bytes:
    """A small JPEG whose frame header is patched to declare ``width`` x ``height``."""
    data = bytearray(small_jpeg(seed))
    position = 2
    while True:
        marker = data[position + 1]
        length = struct.unpack_from(">H", data, position + 2)[0]
        if marker in (0xC0, 0xC1, 0xC2):
            struct.pack_into(">HH", data, position + 5, height, width)
            return bytes(data)
        position += 2 + length


def gif_declaring(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("P", (4, 4)).save(buffer, format="GIF")
    data = bytearray(buffer.getvalue())
    struct.pack_into("<HH", data, 6, width, height)
    return bytes(data)


@functools.cache
def bombs() -> dict[str, bytes]:
    """Images that must be refused at build: bombs by size, and broken files."""
    return {
        "png 20000x20000": png_bomb(20000, 20000),
        "jpeg 65000x65000": jpeg_declaring(65000, 65000),
        "gif 65535x65535": gif_declaring(65535, 65535),
        "truncated jpeg": small_jpeg(1, 64)[: len(small_jpeg(1, 64)) // 2],
        "truncated png": small_png(2, 64)[: len(small_png(2, 64)) // 2],
        "bare GIF89a": b"GIF89a",
        "png without IHDR": b"\x89PNG\r\n\x1a\n" + b"\x00" * 30,
        "jpeg header only": b"\xff\xd8\xff\xe0",
    }


def flip_byte(path: Path, offset: int, mask: int = 0x01) -> None:
    """Flip bits of one byte of a file in place (a real write to the real file)."""
    with path.open("r+b") as f:
        f.seek(offset)
        value = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([value ^ mask]))


def edit_metadata(cache_dir: Path, change: Any, *, keep_digest: bool = True) -> None:
    """Hand-edit ``_metadata.json``: ``change(raw)`` mutates the parsed dict, which is written back as it is."""
    path = cache_dir / "_metadata.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    change(raw)
    if not keep_digest:
        raw.pop("metadata_digest", None)
    path.write_text(json.dumps(raw), encoding="utf-8")
