"""Every read path of a version, checked against the model's rows; and the same in a fresh process.

A read either returns exactly the model's rows or, when a file was damaged on purpose, raises
``CacheCorruptionError`` naming that file; anything else (wrong data, a raw exception) fails.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image as PILImage

from stable_explore.errors import CacheCorruptionError
from tests.model.model import CLASS_NAMES, Row, Rows

if TYPE_CHECKING:
    import stable_explore as se

ROOT = Path(__file__).resolve().parents[2]
PALETTE_SIZE = 4


@cache
def palette_png(index: int) -> bytes:
    """A small, distinct lossless image per palette index (grey, RGB, RGBA and palette modes)."""
    rng = np.random.default_rng(index)
    mode, shape = [("L", (5, 4)), ("RGB", (3, 6, 3)), ("RGBA", (4, 4, 4)), ("L", (2, 7))][index]
    image = PILImage.fromarray(rng.integers(0, 255, shape, dtype=np.uint8), mode=mode)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@cache
def palette_pixels(index: int) -> tuple[str, tuple[int, int], bytes]:
    with PILImage.open(io.BytesIO(palette_png(index))) as image:
        return image.mode, image.size, image.tobytes()


def source_rows(rows: Rows) -> list[tuple[str, dict[str, Any]]]:
    """What a generator yields for these rows (classes by name or index alternately, as users mix them)."""
    out = []
    for i, (key, row) in enumerate(rows):
        label: Any = CLASS_NAMES["label"][row.label] if i % 2 else row.label
        out.append((key, {"label": label, "flag": CLASS_NAMES["flag"][row.flag], "x": row.x, "s": row.s,
                          "image": palette_png(row.image), "seq": list(row.seq)}))  # fmt: skip
    return out


def _pixels(image: Any) -> tuple[str, tuple[int, int], bytes]:
    return image.mode, image.size, image.tobytes()


def _listed(value: Any) -> Any:
    """A list column's value as a list (pandas gives numpy arrays)."""
    return value.tolist() if hasattr(value, "tolist") else value


def _expected_decoded(row: Row) -> tuple[Any, ...]:
    return (row.label, row.flag, row.x, row.s, palette_pixels(row.image), list(row.seq))


def _decoded(item: dict[str, Any]) -> tuple[Any, ...]:
    return (item["label"], item["flag"], item["x"], item["s"], _pixels(item["image"]), _listed(item["seq"]))


def _raw(row: Row) -> tuple[Any, ...]:
    return (row.label, row.flag, row.x, row.s, palette_png(row.image), list(row.seq))


def _named(row: Row) -> tuple[Any, ...]:
    label, flag = CLASS_NAMES["label"][row.label], CLASS_NAMES["flag"][row.flag]
    return (label, flag, row.x, row.s, palette_png(row.image), list(row.seq))


def names(exc: CacheCorruptionError) -> str:
    """The name of the file a corruption error blames (its path may be a URL)."""
    return str(exc.path).rstrip("/").rsplit("/", 1)[-1]


def read_paths(ds: se.CachedDataset, rows: Rows) -> list[tuple[str, Callable[[], Any], Any]]:
    """(path name, read, what it must give) for every read path users have."""
    n = len(rows)
    decoded = [_expected_decoded(r) for _, r in rows]
    middle = slice(n // 3, n - n // 4)
    picks = [i for i in (n - 1, 0, n // 2, n - 1) if 0 <= i < n]

    def table() -> list[tuple[Any, ...]]:
        t = ds.to_arrow()
        columns = [t.column(c).to_pylist() for c in ("label", "flag", "x", "s", "image", "seq")]
        return [tuple(values) for values in zip(*columns, strict=True)]

    def frame() -> list[tuple[Any, ...]]:
        df = ds.to_pandas()
        got = df[["label", "flag", "x", "s", "image", "seq"]].itertuples(index=False, name=None)
        return [(*r[:5], _listed(r[5])) for r in got]

    def view(v: se.CachedDataset) -> list[tuple[Any, ...]]:
        return [_decoded(v[j]) for j in range(len(v))]

    return [
        ("keys", lambda: list(ds.keys()), [k for k, _ in rows]),
        ("len", lambda: len(ds), n),
        ("ds[i]", lambda: [_decoded(ds[i]) for i in range(n)], decoded),
        ("ds[-1]", lambda: _decoded(ds[-1]) if n else None, decoded[-1] if n else None),
        ("slice", lambda: view(ds[middle]), decoded[middle]),
        ("select", lambda: view(ds.select(picks)), [decoded[i] for i in picks]),
        ("to_arrow", table, [_raw(r) for _, r in rows]),
        ("to_pandas", frame, [_named(r) for _, r in rows]),
        ("iteration", lambda: [_decoded(item) for item in ds], decoded),
    ]


def check_reads(ds: se.CachedDataset, rows: Rows, *, damaged: str | None = None) -> int:
    """Read ``ds`` through every path; returns how many paths refused (only allowed when ``damaged`` is set)."""
    refused = 0
    for path, read, expected in read_paths(ds, rows):
        try:
            got = read()
        except CacheCorruptionError as exc:
            if damaged is None or names(exc) != damaged:
                raise  # damage where there is none, or an error naming another file than the damaged one
            refused += 1
            continue
        assert got == expected, f"{path} of {ds.ref} ({'damaged ' + damaged if damaged else 'healthy'}): wrong data"
    return refused


_FRESH_READER = textwrap.dedent(
    """
    import hashlib, json, sys
    import stable_explore as se
    out = {}
    for ref in json.loads(sys.argv[1]):
        ds = se.load(ref, home=sys.argv[2])
        t = ds.to_arrow()
        rows = [[t.column(c)[i].as_py() for c in ("label", "flag", "x", "s", "seq")]
                + [hashlib.sha256(t.column("image")[i].as_py()).hexdigest()] for i in range(len(t))]
        out[ref] = {"version": ds.version, "keys": list(ds.keys()), "rows": rows,
                    "first": [ds[0]["x"], ds[0]["image"].size] if len(ds) else None}
    print(json.dumps(out))
    """
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_in_fresh_process(home: str, refs: dict[str, tuple[str, Rows]]) -> None:
    """Load each ``name@version`` in a new Python process (no cache of this one) and compare with the model."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", _FRESH_READER, json.dumps(list(refs)), home],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"a fresh process failed to read {list(refs)}:\n{result.stderr[-3000:]}"
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    for ref, (version, rows) in refs.items():
        expected = {
            "version": version,
            "keys": [k for k, _ in rows],
            "rows": [
                [r.label, r.flag, r.x, r.s, list(r.seq), hashlib.sha256(palette_png(r.image)).hexdigest()]
                for _, r in rows
            ],
            "first": [rows[0][1].x, list(palette_pixels(rows[0][1].image)[1])] if rows else None,
        }
        assert seen[ref] == expected, f"a fresh process reads {ref} otherwise than the model"
