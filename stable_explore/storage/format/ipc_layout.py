"""Where each column's bytes lie in an Arrow IPC file: the footer's record batch blocks, and a batch's buffers.

Arrow's IPC file ends with a footer (a flatbuffer) listing each record batch's block: where its
message starts, how long the message's header is, and how long its body. The header (another
flatbuffer) lists the batch's field nodes (length and null count of each array, depth first)
and its buffers (offset and length within the body, in the same order). With both, a reader
can fetch one column of one batch, or a few rows of it, by byte range: what a bucket's first
page needs, instead of the whole record batch (see :mod:`~stable_explore.storage.backends.remote_ranges`).

pyarrow reads these structures but does not expose them, so the few fields needed are read here
from the flatbuffers directly (the layout is Arrow's ``File.fbs``, ``Message.fbs`` and ``Schema.fbs``:
little-endian tables with vtables, vectors of structs). Compressed bodies and column types whose
buffers are not simple (views, unions, null) are reported as such, and callers read whole batches.

Examples
--------
>>> import io, pyarrow as pa, pyarrow.ipc as ipc
>>> sink = io.BytesIO()
>>> with ipc.new_file(sink, pa.schema([("x", pa.int64()), ("s", pa.string())])) as writer:
...     writer.write_batch(pa.record_batch({"x": [1, 2, 3], "s": ["a", "bb", None]}))
>>> data = sink.getvalue()
>>> blocks = footer_blocks(data[-footer_length(data[-10:]) - 10 :])
>>> block = blocks[0]
>>> header = batch_header(data[block.offset : block.offset + block.metadata_length])
>>> header.length, [(n.length, n.null_count) for n in header.nodes]
(3, [(3, 0), (3, 1)])
>>> spans = column_buffers(pa.schema([("x", pa.int64()), ("s", pa.string())]))
>>> spans
[(0, 2), (2, 5)]
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import pyarrow as pa

__all__ = [
    "Block",
    "BufferSpec",
    "FieldNode",
    "RecordBatchHeader",
    "UnsupportedLayout",
    "batch_header",
    "column_buffers",
    "column_nodes",
    "footer_blocks",
    "footer_length",
    "is_flat",
    "offset_width",
    "FILE_TAIL",
]

FILE_TAIL = 10
"""Bytes at the end of an IPC file after its footer: the footer's length (int32) and ``ARROW1``."""

_MAGIC = b"ARROW1"
_CONTINUATION = 0xFFFFFFFF
_RECORD_BATCH = 3  # MessageHeader union: Schema=1, DictionaryBatch=2, RecordBatch=3


class UnsupportedLayout(ValueError):
    """The file or batch is not one whose columns can be read by range here (read whole batches instead)."""


@dataclass(frozen=True)
class Block:
    """One record batch's place in the file: its message's offset, header length and body length."""

    offset: int
    metadata_length: int
    body_length: int

    @property
    def body_offset(self) -> int:
        """Where the batch's body (its buffers) starts in the file."""
        return self.offset + self.metadata_length


@dataclass(frozen=True)
class FieldNode:
    """One array of a batch (a column, or a child of one): its length and null count."""

    length: int
    null_count: int


@dataclass(frozen=True)
class BufferSpec:
    """One buffer of a batch: its offset within the body and its length."""

    offset: int
    length: int


@dataclass(frozen=True)
class RecordBatchHeader:
    """A record batch's header: its row count, field nodes and buffers (depth-first, as the schema's fields)."""

    length: int
    nodes: tuple[FieldNode, ...]
    buffers: tuple[BufferSpec, ...]


class _Table:
    """A flatbuffer table at ``pos`` of ``data``: its fields found through its vtable."""

    __slots__ = ("data", "pos", "vtable", "vtable_size")

    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos
        self.vtable = pos - struct.unpack_from("<i", data, pos)[0]
        self.vtable_size = struct.unpack_from("<H", data, self.vtable)[0]

    def _field(self, index: int) -> int:
        """The field's position in the data, or 0 when it is absent (it has its default)."""
        slot = 4 + 2 * index
        if slot >= self.vtable_size:
            return 0
        offset = struct.unpack_from("<H", self.data, self.vtable + slot)[0]
        return self.pos + offset if offset else 0

    def scalar(self, index: int, fmt: str, default: int = 0) -> int:
        where = self._field(index)
        return int(struct.unpack_from(fmt, self.data, where)[0]) if where else default

    def table(self, index: int) -> _Table | None:
        where = self._field(index)
        if not where:
            return None
        return _Table(self.data, where + struct.unpack_from("<I", self.data, where)[0])

    def vector(self, index: int) -> tuple[int, int]:
        """(position of the first element, element count) of a vector field; (0, 0) when absent."""
        where = self._field(index)
        if not where:
            return 0, 0
        start = where + struct.unpack_from("<I", self.data, where)[0]
        return start + 4, struct.unpack_from("<I", self.data, start)[0]


def _root(data: bytes) -> _Table:
    if len(data) < 8:
        msg = f"a flatbuffer of {len(data)} bytes is too short"
        raise UnsupportedLayout(msg)
    return _Table(data, struct.unpack_from("<I", data, 0)[0])


def footer_length(tail: bytes) -> int:
    """The footer's length, from the file's last :data:`FILE_TAIL` bytes."""
    if len(tail) != FILE_TAIL or tail[4:] != _MAGIC:
        msg = "not the end of an Arrow IPC file (no ARROW1 magic)"
        raise UnsupportedLayout(msg)
    length = int(struct.unpack_from("<i", tail, 0)[0])
    if length <= 0:
        msg = f"the footer's length is {length}"
        raise UnsupportedLayout(msg)
    return length


def footer_blocks(footer: bytes) -> tuple[Block, ...]:
    """The record batch blocks listed in a file's footer (``footer`` is the flatbuffer, with the tail or not)."""
    try:
        table = _root(footer)
        start, count = table.vector(3)  # Footer.recordBatches: [Block]
        blocks = []
        for i in range(count):  # struct Block { offset: long; metaDataLength: int; (pad); bodyLength: long }
            offset, metadata_length, body_length = struct.unpack_from("<qi4xq", footer, start + 24 * i)
            blocks.append(Block(int(offset), int(metadata_length), int(body_length)))
        dictionaries = table.vector(2)[1]
    except struct.error as exc:
        msg = f"the footer cannot be read: {exc}"
        raise UnsupportedLayout(msg) from exc
    if dictionaries:
        msg = "the file has dictionary batches"
        raise UnsupportedLayout(msg)
    return tuple(blocks)


def batch_header(message: bytes) -> RecordBatchHeader:
    """A record batch's header from its message's first ``metadata_length`` bytes (prefix included)."""
    try:
        if struct.unpack_from("<I", message, 0)[0] == _CONTINUATION:
            size, start = struct.unpack_from("<i", message, 4)[0], 8
        else:  # the format before Arrow 0.15: no continuation marker
            size, start = struct.unpack_from("<i", message, 0)[0], 4
        flat = message[start : start + size]
        root = _root(flat)
        if root.scalar(1, "<B") != _RECORD_BATCH:
            msg = "the message is not a record batch"
            raise UnsupportedLayout(msg)
        batch = root.table(2)
        if batch is None:
            msg = "the record batch message has no header"
            raise UnsupportedLayout(msg)
        if batch.table(3) is not None:
            msg = "the record batch's body is compressed"
            raise UnsupportedLayout(msg)
        length = batch.scalar(0, "<q")
        node_start, node_count = batch.vector(1)
        nodes = tuple(FieldNode(*struct.unpack_from("<qq", flat, node_start + 16 * i)) for i in range(node_count))
        buffer_start, buffer_count = batch.vector(2)
        buffers = tuple(
            BufferSpec(*struct.unpack_from("<qq", flat, buffer_start + 16 * i)) for i in range(buffer_count)
        )
    except struct.error as exc:
        msg = f"the record batch header cannot be read: {exc}"
        raise UnsupportedLayout(msg) from exc
    return RecordBatchHeader(int(length), nodes, buffers)


def _counts(data_type: pa.DataType) -> tuple[int, int]:
    """(field nodes, buffers) one array of this type takes in a record batch, children included."""
    if pa.types.is_struct(data_type):
        nodes, buffers = 1, 1
        for i in range(data_type.num_fields):
            child = _counts(data_type.field(i).type)
            nodes, buffers = nodes + child[0], buffers + child[1]
        return nodes, buffers
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or pa.types.is_map(data_type):
        if pa.types.is_map(data_type):  # a map is a list of struct<key, value>
            child = _counts(pa.struct([data_type.key_field, data_type.item_field]))
        else:
            child = _counts(data_type.value_type)
        return 1 + child[0], 2 + child[1]
    if pa.types.is_fixed_size_list(data_type):
        child = _counts(data_type.value_type)
        return 1 + child[0], 1 + child[1]
    if is_flat(data_type):
        return 1, 3 if offset_width(data_type) else 2
    msg = f"columns of type {data_type} are not read by range"
    raise UnsupportedLayout(msg)


def is_flat(data_type: pa.DataType) -> bool:
    """Whether rows of a column of this type can be cut by byte range (fixed-width values, or offsets and data)."""
    if offset_width(data_type):
        return True
    if pa.types.is_boolean(data_type):
        return True
    try:
        width = data_type.bit_width
    except ValueError:
        return False
    return bool(width and width % 8 == 0 and not pa.types.is_dictionary(data_type))


def offset_width(data_type: pa.DataType) -> int:
    """Bytes per offset of a binary or text type (4 or 8); 0 for any other type."""
    if pa.types.is_binary(data_type) or pa.types.is_string(data_type):
        return 4
    if pa.types.is_large_binary(data_type) or pa.types.is_large_string(data_type):
        return 8
    return 0


def column_buffers(schema: pa.Schema) -> list[tuple[int, int]]:
    """Per column of ``schema``, the [first, end) of its buffers among a batch's buffers (children included)."""
    spans = []
    position = 0
    for field in schema:
        buffers = _counts(field.type)[1]
        spans.append((position, position + buffers))
        position += buffers
    return spans


def column_nodes(schema: pa.Schema) -> list[int]:
    """Per column of ``schema``, the index of its field node among a batch's nodes."""
    found = []
    position = 0
    for field in schema:
        found.append(position)
        position += _counts(field.type)[0]
    return found
