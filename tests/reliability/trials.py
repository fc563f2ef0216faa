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


HTML_PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "x' onmouseover='alert(3)",
    'y" onclick="alert(4)',
    "a&b",
    "</td></tr></table><script>alert(5)</script>",
    "<svg onload=alert(6)>",
    "javascript:alert(7)",
    "<iframe src=javascript:alert(8)>",
    "<a href='javascript:alert(9)'>x</a>",
    "&lt;script&gt;",
    "<!-- x",
    "--> y",
    "<![CDATA[x]]>",
    "<style>*{display:none}</style>",
    "<body onload=alert(10)>",
    '"><script>alert(11)</script>',
    "'><img src=x onerror=alert(12)>",
    "<math><mi xlink:href=javascript:alert(13)>",
    "<details open ontoggle=alert(14)>",
    "{{7*7}}",
    "${alert(15)}",
    "<scr<script>ipt>alert(16)</script>",
]
"""Text a user's data could carry into HTML: tags, event handlers, broken quoting, comments, entities."""

_OUR_TAGS = {"div", "b", "br", "table", "thead", "tbody", "tr", "th", "td", "code", "figure", "figcaption", "img",
             "span", "style", "details", "summary", "small", "i", "strong", "p", "ul", "li", "caption"}  # fmt: skip
_OUR_ATTRIBUTES = {"class", "style", "src", "alt", "colspan", "title", "data-testid", "open"}


def inert_and_shown(page: str, text: str) -> str | None:
    """None when ``page`` carries no markup of the user's (only our tags and attributes, images inline only)
    and shows ``text`` as text; else what is wrong."""
    from html.parser import HTMLParser

    tags: list[tuple[str, dict[str, str | None]]] = []
    shown: list[str] = []

    class Markup(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append((tag, dict(attrs)))

        def handle_data(self, data: str) -> None:
            shown.append(data)

    parser = Markup(convert_charrefs=True)
    parser.feed(page)
    parser.close()
    for tag, attrs in tags:
        if tag not in _OUR_TAGS:
            return f"a <{tag}> element reached the page"
        if not set(attrs) <= _OUR_ATTRIBUTES:
            return f"attributes {sorted(set(attrs) - _OUR_ATTRIBUTES)} on <{tag}>"
        if tag == "img" and not (attrs.get("src") or "").startswith("data:image/"):
            return f"an image from {attrs.get('src')!r}"
    if text not in "".join(shown):
        return "the text is not shown as it is"
    return None


def html_payload_trials(root: Path, payloads: list[str] = HTML_PAYLOADS) -> tuple[int, int, list[str]]:
    """Each payload in 6 places a user's data reaches HTML: (escaped, tried, what let markup through).

    Places: a description, a license and a class name in the dataset card; a save message in the
    versions table; a row key and a changed description in the diff card.
    """
    import stable_explore as se
    from stable_explore import ClassLabel, Features, Value

    escaped = tried = 0
    failures: list[str] = []
    for index, payload in enumerate(payloads):
        home = root / f"html-{index}"
        features = Features(label=ClassLabel(names=["plain", payload]), x=Value("int64"))
        rows = [(f"{payload}-{i}", {"label": i % 2, "x": i}) for i in range(4)]
        ds = se.build(rows, features, name="h", home=home, progress=False, description=payload, license=payload)
        saved = ds.set(0, "x", 100).save(message=payload, progress=False)
        other = se.build(rows, features, name="h", home=home, progress=False, description=payload + "!")
        card = ds._repr_html_()
        places = {
            "description": (card, payload),
            "license": (card, payload),
            "class name": (card, payload),
            "message in se.versions": (se.versions("h", home=home)._repr_html_(), payload),
            "key in the diff card": (se.compare(ds, saved)._repr_html_(), f"{payload}-0"),
            "description in the diff card": (se.compare(ds, other)._repr_html_(), payload + "!"),
        }
        for place, (page, text) in places.items():
            tried += 1
            problem = inert_and_shown(page, text)
            if problem is None:
                escaped += 1
            else:
                failures.append(f"{place} {payload!r}: {problem}")
    return escaped, tried, failures
