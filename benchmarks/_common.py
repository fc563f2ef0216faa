"""What the build and memory benchmarks share: photo-like JPEGs (small, distinct, made offline), and /proc readings."""

from __future__ import annotations

import io
from pathlib import Path

DISTINCT = 512
SIDE = 64


def make_jpegs(count: int = DISTINCT, side: int = SIDE) -> list[bytes]:
    """Photo-like small JPEGs (a colour gradient and seeded noise), about 1.9 KB each."""
    import numpy as np
    from PIL import Image as PILImage

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:side, 0:side]
    out = []
    for _ in range(count):
        base = rng.integers(0, 256, size=3)
        slope = rng.uniform(-3.0, 3.0, size=(2, 3))
        pixels = base + xx[..., None] * slope[0] + yy[..., None] * slope[1] + rng.normal(0, 20, size=(side, side, 3))
        buffer = io.BytesIO()
        PILImage.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=80)
        out.append(buffer.getvalue())
    return out


def distinct_jpeg(jpegs: list[bytes], row: int) -> bytes:
    """Row ``row``'s JPEG: one of ``jpegs`` with a comment segment (COM) naming the row, so no two rows match."""
    data = jpegs[row % len(jpegs)]
    comment = f"row {row}".encode()
    return data[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + data[2:]


def status_kb(field: str) -> int:
    """A field of this process's /proc/self/status in KB (VmRSS, VmHWM, RssAnon); 0 where it is missing."""
    with Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0
