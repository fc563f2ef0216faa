"""A bucket's shard read by exact byte ranges: whole columns of a record batch, or a few rows of them.

Through the block cache (:mod:`.remote_file`) a page of 48 rows cost the whole record batch that
holds them: Arrow's reader asks for every buffer of a batch, and a 1,000-row batch of photos is a
few megabytes. Here the batch's header is read first (its buffers' offsets and lengths,
:mod:`~stable_explore.storage.format.ipc_layout`); then only what the take needs is fetched:

1. the headers of the batches touched (one request, a few hundred bytes each);
2. the small columns checked whole against their batch digests (the row hashes, the keys), the
   fixed-width cells of the rows, the validity bitmaps, and the offsets of the rows' binary cells;
3. the bytes of the rows' binary cells (their images).

Each step is one concurrent request of its ranges; ranges closer than :data:`GAP` are merged,
and :data:`~.remote_file.FETCHED` counts every byte that travels, gaps included. The caller
checks what it hands out: the whole columns by their digests, the rows by their row hashes
(:class:`~stable_explore.storage.read.batches.ShardCheck`). Bytes read this way are kept in
memory only; whole batches still come through the block cache.

Examples
--------
>>> import io, pyarrow as pa, pyarrow.ipc as ipc, numpy as np
>>> sink = io.BytesIO()
>>> schema = pa.schema([("x", pa.int64()), ("s", pa.binary())])
>>> with ipc.new_file(sink, schema) as writer:
...     writer.write_batch(pa.record_batch({"x": [1, 2, 3], "s": [b"a", b"bb", b"ccc"]}, schema=schema))
>>> data = sink.getvalue()
>>> ranges = BatchRanges.of_bytes(lambda spans: [data[a:b] for a, b in spans], len(data), schema)
>>> ranges.rows({0: np.array([0, 2])}, [0, 1])[0][1].to_pylist()
[b'a', b'ccc']
>>> ranges.column(0, 0).to_pylist()
[1, 2, 3]
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import xxhash

from stable_explore.storage.backends.read_cache import BLOCK_SIZE
from stable_explore.storage.format.ipc_layout import (
    FILE_TAIL,
    Block,
    FieldNode,
    RecordBatchHeader,
    UnsupportedLayout,
    batch_header,
    column_buffers,
    column_nodes,
    footer_blocks,
    footer_length,
    is_flat,
    offset_width,
)

if TYPE_CHECKING:
    from stable_explore.storage.backends.read_cache import ReadCache

__all__ = ["GAP", "BatchRanges", "Fetch", "cached_fetch", "merged_fetch"]

GAP = 4096
"""Ranges of one request closer than this are fetched as one (the gap travels too, and is counted)."""

Fetch = Callable[[list[tuple[int, int]]], list[bytes]]
"""Fetches byte ranges [start, end) of one file, all in one request: the bytes of each."""


class BatchRanges:
    """Exact-range reads of one Arrow IPC file's record batches (see the module's docs).

    Raises :class:`~stable_explore.storage.format.ipc_layout.UnsupportedLayout` when made for a
    file whose columns cannot be cut this way (compressed, dictionaries, or a type such as a view).
    """

    def __init__(self, fetch: Fetch, blocks: Sequence[Block], schema: pa.Schema) -> None:
        self._fetch = fetch
        self.blocks = tuple(blocks)
        self.schema = schema
        self._spans = column_buffers(schema)  # raises UnsupportedLayout for a type it cannot place
        self._nodes = column_nodes(schema)
        self._headers: dict[int, RecordBatchHeader] = {}
        self._lock = threading.Lock()

    @classmethod
    def of_bytes(cls, fetch: Fetch, size: int, schema: pa.Schema, *, footer: Fetch | None = None) -> BatchRanges:
        """Read the file's footer (through ``footer``, by default ``fetch``) and make the reader."""
        if size < FILE_TAIL + 8:
            msg = f"a file of {size} bytes has no footer"
            raise UnsupportedLayout(msg)
        read_footer = footer or fetch
        length = footer_length(read_footer([(size - FILE_TAIL, size)])[0])
        if length > size - FILE_TAIL - 8:
            msg = f"a footer of {length} bytes does not fit in a file of {size}"
            raise UnsupportedLayout(msg)
        return cls(fetch, footer_blocks(read_footer([(size - FILE_TAIL - length, size - FILE_TAIL)])[0]), schema)

    def _header_of(self, batches: Sequence[int]) -> None:
        """Read the headers of these batches not read yet, in one request."""
        missing = [b for b in dict.fromkeys(batches) if b not in self._headers]
        if not missing:
            return
        spans = [(self.blocks[b].offset, self.blocks[b].offset + self.blocks[b].metadata_length) for b in missing]
        for batch, message in zip(missing, self._fetch(spans), strict=True):
            self._headers[batch] = batch_header(message)

    def header(self, batch: int) -> RecordBatchHeader:
        """The header of record batch ``batch`` (read once)."""
        with self._lock:
            self._header_of([batch])
            return self._headers[batch]

    def _buffer_span(self, batch: int, buffer: int) -> tuple[int, int]:
        spec = self._headers[batch].buffers[buffer]
        start = self.blocks[batch].body_offset + spec.offset
        return start, start + spec.length

    # -- whole columns ---------------------------------------------------------

    def columns(self, wanted: Sequence[tuple[int, int]]) -> list[pa.Array]:
        """Whole columns, as (batch, column) pairs, fetched together: each as Arrow's IPC reader gives it."""
        with self._lock:
            self._header_of([b for b, _ in wanted])
            spans = [self._buffer_span(b, k) for b, c in wanted for k in range(*self._spans[c])]
            data = iter(self._fetch(spans))
            out = []
            for batch, column in wanted:
                lo, hi = self._spans[column]
                buffers = [next(data) for _ in range(lo, hi)]
                out.append(self._array(batch, column, buffers))
            return out

    def column(self, batch: int, column: int) -> pa.Array:
        """One whole column of one batch."""
        return self.columns([(batch, column)])[0]

    def _array(self, batch: int, column: int, buffers: list[bytes]) -> pa.Array:
        nodes = iter(self._headers[batch].nodes[self._nodes[column] :])
        parts = iter(buffers)
        return _build(self.schema.field(column).type, nodes, parts)

    # -- rows --------------------------------------------------------------------

    def rows(self, wanted: Mapping[int, np.ndarray], columns: Sequence[int]) -> dict[int, list[pa.Array]]:
        """Per batch, its cells at the positions asked (ascending, distinct) of flat ``columns``, in that order.

        Only those cells' bytes are fetched (and the validity bitmaps of columns with nulls), for
        every batch at once: the headers, then the fixed-width cells and the offsets, then the
        binary cells. Raises UnsupportedLayout for a column whose type is not flat (a list, a struct).
        """
        for column in columns:
            found = self.schema.field(column)
            if not is_flat(found.type):
                msg = f"column {found.name!r} of type {found.type} is not flat"
                raise UnsupportedLayout(msg)
        asked = {int(b): np.asarray(p, dtype=np.int64) for b, p in wanted.items()}
        with self._lock:
            self._header_of(list(asked))
            cuts = [(b, self._cut(b, c, asked[b])) for b in asked for c in columns]
            first = [span for _, cut in cuts for span in cut.first_round()]
            fetched = iter(self._fetch(first))
            second = [span for _, cut in cuts for span in cut.second_round(fetched)]
            fetched = iter(self._fetch(second))
            out: dict[int, list[pa.Array]] = {b: [] for b in asked}
            for batch, cut in cuts:
                out[batch].append(cut.finish(fetched))
            return out

    def _cut(self, batch: int, column: int, positions: np.ndarray) -> _RowCut:
        """The plan of one flat column's cells at ``positions`` of ``batch``: its node and its buffers' spans."""
        first, end = self._spans[column]
        spans = [self._buffer_span(batch, k) for k in range(first, end)]
        node = self._headers[batch].nodes[self._nodes[column]]
        return _RowCut(self.schema.field(column).type, node, spans, positions)


class _RowCut:
    """The ranges one flat column's cells at some rows take, and the array made of them."""

    def __init__(
        self, data_type: pa.DataType, node: FieldNode, spans: list[tuple[int, int]], positions: np.ndarray
    ) -> None:
        self.type = data_type
        self.node = node
        self.validity = spans[0]
        self.values = spans[1]
        self.data = spans[2] if offset_width(data_type) else None
        self.positions = positions
        self.starts, self.stops = _runs(positions)
        self.width = offset_width(data_type)
        self.bitmap: bytes | None = None
        self.pieces: list[Any] = []

    def first_round(self) -> list[tuple[int, int]]:
        spans = []
        if self.node.null_count:
            spans.append(self.validity)
        base = self.values[0]
        if self.width:  # offsets [a, b] of each run [a, b)
            spans += [(base + a * self.width, base + (b + 1) * self.width) for a, b in _pairs(self)]
        elif pa.types.is_boolean(self.type):
            spans.append(self.values)  # bits: the whole (small) buffer
        else:
            size = self.type.bit_width // 8
            spans += [(base + a * size, base + b * size) for a, b in _pairs(self)]
        return spans

    def second_round(self, fetched: Any) -> list[tuple[int, int]]:
        self.bitmap = next(fetched) if self.node.null_count else None
        runs = len(self.starts)
        if self.width:
            dtype = "<i4" if self.width == 4 else "<i8"
            self.pieces = [np.frombuffer(next(fetched), dtype=dtype) for _ in range(runs)]
            assert self.data is not None
            base, end = self.data
            spans = []
            for piece in self.pieces:
                a, b = int(piece[0]), int(piece[-1])
                if not 0 <= a <= b <= end - base:
                    msg = f"offsets {a}..{b} point outside the column's {end - base} bytes of data"
                    raise UnsupportedLayout(msg)
                spans.append((base + a, base + b))
            return spans
        if pa.types.is_boolean(self.type):
            self.pieces = [next(fetched)]
        else:
            self.pieces = [next(fetched) for _ in range(runs)]
        return []

    def finish(self, fetched: Any) -> pa.Array:
        positions = self.positions
        count = positions.size
        if count and (positions[0] < 0 or positions[-1] >= self.node.length):
            msg = f"rows {positions[0]}..{positions[-1]} are outside a batch of {self.node.length}"
            raise UnsupportedLayout(msg)
        validity = None
        nulls = 0
        if self.bitmap is not None:
            bits = np.unpackbits(np.frombuffer(self.bitmap, dtype=np.uint8), bitorder="little")
            if bits.size < self.node.length:
                msg = "the validity bitmap is shorter than the column"
                raise UnsupportedLayout(msg)
            picked = bits[positions].astype(bool)
            nulls = int(count - picked.sum())
            validity = pa.py_buffer(np.packbits(picked, bitorder="little").tobytes()) if nulls else None
        if self.width:
            lengths = np.concatenate([np.diff(piece) for piece in self.pieces]) if self.pieces else np.zeros(0)
            offsets = np.zeros(count + 1, dtype="<i4" if self.width == 4 else "<i8")
            np.cumsum(lengths, out=offsets[1:])
            data = b"".join(next(fetched) for _ in self.pieces)
            buffers = [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)]
        elif pa.types.is_boolean(self.type):
            bits = np.unpackbits(np.frombuffer(self.pieces[0], dtype=np.uint8), bitorder="little")[positions]
            buffers = [validity, pa.py_buffer(np.packbits(bits, bitorder="little").tobytes())]
        else:
            buffers = [validity, pa.py_buffer(b"".join(self.pieces))]
        array = pa.Array.from_buffers(self.type, count, buffers, null_count=nulls)
        array.validate(full=True)  # offsets within the data: the copy is whole before any check of its bytes
        return array


def _pairs(cut: _RowCut) -> list[tuple[int, int]]:
    return list(zip(cut.starts.tolist(), cut.stops.tolist(), strict=True))


def _runs(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ascending distinct positions as runs of consecutive rows: their starts and (exclusive) stops."""
    if positions.size == 0:
        return positions, positions
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    starts = positions[np.concatenate([[0], breaks])]
    stops = positions[np.concatenate([breaks - 1, [positions.size - 1]])] + 1
    return starts, stops


def _build(data_type: pa.DataType, nodes: Any, buffers: Any) -> pa.Array:
    """One array (children included) from its field nodes and buffers, depth first, as the IPC reader makes it."""
    node = next(nodes)
    validity = next(buffers)
    mask = pa.py_buffer(validity) if node.null_count else None  # the IPC reader drops an all-valid bitmap
    if pa.types.is_struct(data_type):
        children = [_build(data_type.field(i).type, nodes, buffers) for i in range(data_type.num_fields)]
        return pa.Array.from_buffers(data_type, node.length, [mask], node.null_count, children=children)
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or pa.types.is_map(data_type):
        offsets = pa.py_buffer(next(buffers))
        if pa.types.is_map(data_type):
            child_type: pa.DataType = pa.struct([data_type.key_field, data_type.item_field])
        else:
            child_type = data_type.value_type
        child = _build(child_type, nodes, buffers)
        return pa.Array.from_buffers(data_type, node.length, [mask, offsets], node.null_count, children=[child])
    if pa.types.is_fixed_size_list(data_type):
        child = _build(data_type.value_type, nodes, buffers)
        return pa.Array.from_buffers(data_type, node.length, [mask], node.null_count, children=[child])
    if offset_width(data_type):
        offsets = pa.py_buffer(next(buffers))
        data = pa.py_buffer(next(buffers))
        return pa.Array.from_buffers(data_type, node.length, [mask, offsets, data], node.null_count)
    values = pa.py_buffer(next(buffers))
    return pa.Array.from_buffers(data_type, node.length, [mask, values], node.null_count)


def merged_fetch(read: Fetch, gap: int = GAP, counted: Callable[[int], None] | None = None) -> Fetch:
    """``read`` with ranges closer than ``gap`` merged into one; ``counted`` is told the bytes that travel."""

    def fetch(spans: list[tuple[int, int]]) -> list[bytes]:
        if not spans:
            return []
        order = sorted(range(len(spans)), key=lambda i: spans[i])
        merged: list[list[int]] = []
        for i in order:
            start, end = spans[i]
            if merged and start <= merged[-1][1] + gap:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        parts = read([(a, b) for a, b in merged])
        if counted is not None:
            counted(sum(len(p) for p in parts))
        out: list[bytes] = [b""] * len(spans)
        which = 0
        for i in order:
            start, end = spans[i]
            while merged[which][1] < end or merged[which][0] > start:
                which += 1
            base = merged[which][0]
            out[i] = bytes(memoryview(parts[which])[start - base : end - base])
        return out

    return fetch


def cached_fetch(fetch: Fetch, cache: ReadCache, digest: str, *, tail: tuple[int, bytes] = (0, b"")) -> Fetch:
    """``fetch`` through the local read cache: its blocks, and one entry per request named by its ranges.

    A range whose blocks are all cached (the batch was read whole before) costs no request; the
    same page opened again (by this process or another on the node) asks for the same ranges and
    finds them in the request's entry. ``drop`` of the shard's digest deletes both kinds. ``tail`` is
    the file's last bytes and where they start (a small file is all tail).
    """
    tail_start, tail_bytes = tail

    def known(start: int, end: int) -> bytes | None:
        if tail_bytes and start >= tail_start:
            return tail_bytes[start - tail_start : end - tail_start]
        return _from_blocks(cache, digest, start, end)

    def read(spans: list[tuple[int, int]]) -> list[bytes]:
        if not spans:
            return []
        name = "q" + xxhash.xxh3_64_hexdigest(struct.pack(f"<{2 * len(spans)}q", *(v for s in spans for v in s)))
        lengths = [end - start for start, end in spans]
        found = cache.get(digest, name)
        if found is not None and len(found) == sum(lengths):
            out, at = [], 0
            for length in lengths:
                out.append(found[at : at + length])
                at += length
            return out
        parts: list[bytes | None] = [known(start, end) for start, end in spans]
        missing = [i for i, part in enumerate(parts) if part is None]
        if missing:
            for i, data in zip(missing, fetch([spans[i] for i in missing]), strict=True):
                parts[i] = data
        whole = [part if part is not None else b"" for part in parts]
        if missing:
            cache.put(digest, name, b"".join(whole))
        return whole

    return read


def _from_blocks(cache: ReadCache, digest: str, start: int, end: int) -> bytes | None:
    """Bytes [start, end) of a shard from its cached blocks, or None when one of them is not cached."""
    if end <= start:
        return b""
    first, last = start // BLOCK_SIZE, (end - 1) // BLOCK_SIZE
    blocks = []
    for block in range(first, last + 1):
        data = cache.get(digest, block)
        if data is None:
            return None
        blocks.append(data)
    joined = blocks[0] if len(blocks) == 1 else b"".join(blocks)
    offset = start - first * BLOCK_SIZE
    piece = joined[offset : offset + end - start]
    return piece if len(piece) == end - start else None
