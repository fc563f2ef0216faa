"""``ds.to_mds(dir)``: MosaicML streaming's MDS format, written by our own writer (``streaming`` is not needed).

MDS is plain: a folder with ``index.json`` and shard files ``shard.NNNNN.mds``. A shard is
``[n: uint32][n + 1 offsets: uint32][its config as JSON][n samples]``; a sample is the sizes of its
variable-size columns (uint32 each, in column order) followed by every column's bytes, columns
sorted by name. ``index.json`` lists each shard's config (column names, encodings and sizes, the
size limit), its sample count and its file's size. ``streaming.StreamingDataset`` reads it.

Columns are mapped by feature type:

============================  =====================================================================
ours                          MDS encoding (what ``StreamingDataset`` hands back)
============================  =====================================================================
``Value`` int/uint/float      the same name (``int64``, ``float32``, ...): a numpy scalar
``Value("bool")``             ``uint8`` (0 or 1)
``Value`` string              ``str``
``Value`` binary              ``bytes``
``ClassLabel``                ``int64``: the code; the names are in ``stable-explore.json``
``Image``                     ``jpeg`` / ``png`` when every image of the shard is one (the stored
                              bytes as they are, no re-encode; read back as a PIL image), else
                              ``bytes`` (the encoded bytes)
``Array3D``                   ``ndarray:<dtype>:<shape>``: a numpy array
``Sequence``                  ``json``: a list
``Video``                     ``str``: the path (a video stored as bytes only is refused, naming
                              the row: MDS has no place for it)
============================  =====================================================================

MDS has no nulls: a missing value raises, naming the row, its key and the field. Beside
``index.json``, ``stable-explore.json`` keeps our features (class names, shapes), the row count
and the version it came from.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.dataset._export_target import export_folder, write_export_marker
from stable_explore.errors import EncodingError, InvalidOptionError, SchemaError
from stable_explore.schema import KEY_COLUMN, Array3D, ClassLabel, Feature, Image, Sequence, Value, Video
from stable_explore.schema.fields import Fields
from stable_explore.schema.image_formats import sniff
from stable_explore.schema.video import video_path_array
from stable_explore.storage.backends.fsutil import publish_dir, temp_dir_beside

if TYPE_CHECKING:
    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["DEFAULT_SIZE_LIMIT", "MDS_SIDECAR", "mds_encoding", "write_mds"]

DEFAULT_SIZE_LIMIT = 1 << 26  # MDSWriter's default: 64 MiB of samples per shard
MDS_SIDECAR = "stable-explore.json"
_FIXED = {
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "float16": 2,
    "float32": 4,
    "float64": 8,
}
_TEXT = frozenset({"string", "large_string"})
_BINARY = frozenset({"binary", "large_binary"})
_IMAGE_ENCODINGS = {"JPEG": "jpeg", "PNG": "png"}


def _holds_bytes(feature: Feature) -> bool:
    """Whether values of ``feature`` hold bytes somewhere (JSON cannot write them)."""
    if isinstance(feature, (Image, Array3D)):
        return True
    if isinstance(feature, Value):
        return feature.dtype in _BINARY
    if isinstance(feature, Fields):
        return any(_holds_bytes(f) for _, f in feature.fields)
    return isinstance(feature, Sequence) and _holds_bytes(feature.feature)


def mds_encoding(feature: Feature) -> str:
    """The MDS encoding of a column of ``feature`` (an ``Image`` column's may narrow per shard; see the module)."""
    if isinstance(feature, ClassLabel):
        return "int64"
    if isinstance(feature, Image):
        return "bytes"
    if isinstance(feature, Value):
        if feature.dtype in _FIXED:
            return feature.dtype
        if feature.dtype == "bool":
            return "uint8"
        if feature.dtype in _TEXT:
            return "str"
        if feature.dtype in _BINARY:
            return "bytes"
    if isinstance(feature, Array3D):
        return f"ndarray:{feature.dtype}:{','.join(str(d) for d in feature.shape)}"
    if isinstance(feature, Sequence):
        if _holds_bytes(feature.feature):
            msg = (
                f"a {feature!r} column has no MDS encoding: MDS stores a list as JSON, which holds no image or "
                "bytes values; drop the column (ds.remove_columns) or export with to_parquet / to_lance"
            )
            raise SchemaError(msg)
        return "json"
    if isinstance(feature, Video):
        return "str"
    msg = f"a {feature!r} column has no MDS encoding (see stable_explore.io.mds for the mapping)"
    raise SchemaError(msg)


def _encoder(encoding: str) -> Callable[[Any], bytes]:
    if encoding in _FIXED:
        dtype = np.dtype(encoding)
        return lambda value: dtype.type(value).tobytes()
    if encoding == "uint8":  # bool
        return lambda value: bytes([int(value)])
    if encoding == "str":
        return lambda value: value.encode("utf-8")
    if encoding == "json":
        return lambda value: json.dumps(value).encode("utf-8")
    return bytes  # bytes, jpeg, png, ndarray (our Array3D cells are the array's C-order bytes already)


def _fixed_size(encoding: str) -> int | None:
    if encoding in _FIXED:
        return _FIXED[encoding]
    if encoding.startswith("ndarray:"):
        _, dtype, shape = encoding.split(":")
        return int(np.prod([int(d) for d in shape.split(",")])) * np.dtype(dtype).itemsize
    return None


class _Shard:
    """One shard's samples, as Python values column by column, until it is full."""

    def __init__(self, names: list[str], encodings: dict[str, str]) -> None:
        self.names = names
        self.encodings = dict(encodings)
        self.columns: dict[str, list[Any]] = {name: [] for name in names}
        self.size = 0
        self.rows = 0

    def narrow_images(self, image_columns: list[str]) -> None:
        """An image column whose images are all JPEG (or all PNG) is written as ``jpeg`` (``png``)."""
        for name in image_columns:
            kinds = {getattr(sniff(value[:12]), "name", None) for value in self.columns[name]}
            if len(kinds) == 1:
                self.encodings[name] = _IMAGE_ENCODINGS.get(kinds.pop() or "", "bytes")

    def encode(self, size_limit: int) -> tuple[bytes, dict[str, Any]]:
        encodings = [self.encodings[name] for name in self.names]
        sizes = [_fixed_size(e) for e in encodings]
        config = {
            "version": 2,
            "format": "mds",
            "compression": None,
            "hashes": [],
            "size_limit": size_limit,
            "column_names": self.names,
            "column_encodings": encodings,
            "column_sizes": sizes,
        }
        encoders = [_encoder(e) for e in encodings]
        samples = []
        for row in range(self.rows):
            data = [encode(self.columns[name][row]) for name, encode in zip(self.names, encoders, strict=True)]
            variable = [len(d) for d, size in zip(data, sizes, strict=True) if size is None]
            head = struct.pack(f"<{len(variable)}I", *variable)
            samples.append(head + b"".join(data))
        config_bytes = json.dumps(config, sort_keys=True).encode("utf-8")
        offsets = np.cumsum([0, *map(len, samples)], dtype=np.int64) + 4 + 4 * (self.rows + 1) + len(config_bytes)
        if offsets[-1] >= 1 << 32:
            msg = f"an MDS shard holds at most 4 GiB; lower size_limit (now {size_limit})"
            raise InvalidOptionError(msg)
        body = struct.pack("<I", self.rows) + offsets.astype("<u4").tobytes() + config_bytes + b"".join(samples)
        return body, config


def write_mds(
    ds: CachedDataset, tables: Iterator[pa.Table], out: Path, *, size_limit: int, overwrite: bool = False
) -> Path:
    """Write ``ds``'s rows to ``out`` as an MDS dataset (a new or empty folder, or an export's with ``overwrite``)."""
    if size_limit < 1:
        msg = f"size_limit must be positive, got {size_limit}"
        raise InvalidOptionError(msg)
    out = export_folder(out, layout="mds", ds=ds, overwrite=overwrite)
    features = ds.features
    names = sorted(features)
    encodings = {}
    for name in names:
        try:
            encodings[name] = mds_encoding(features[name])
        except SchemaError as exc:
            msg = f"column {name!r}: {exc}"
            raise SchemaError(msg) from None
    image_columns = [name for name in names if isinstance(features[name], Image)]
    keys = (
        ds.arrow_column(KEY_COLUMN) if not ds.cache_meta.is_stable_datasets_v1 else pa.array(ds.base_rows(), pa.int64())
    )
    with temp_dir_beside(out) as tmp:
        shards: list[dict[str, object]] = []

        def flush(shard: _Shard) -> None:
            shard.narrow_images(image_columns)
            body, config = shard.encode(size_limit)
            basename = f"shard.{len(shards):05d}.mds"
            (tmp / basename).write_bytes(body)
            raw = {"basename": basename, "bytes": len(body), "hashes": {}}
            shards.append({**config, "samples": shard.rows, "raw_data": raw, "zip_data": None})

        shard = _Shard(names, encodings)
        position = 0
        for table in tables:
            columns = {
                name: (
                    video_path_array(table.column(name), column=name, first_row=position)
                    if isinstance(features[name], Video)
                    else table.column(name)
                ).to_pylist()
                for name in names
            }
            for row in range(table.num_rows):
                values = {name: columns[name][row] for name in names}
                size = 4 + _sample_size(values, names, encodings, keys, position)
                if shard.rows and shard.size + size > size_limit:
                    flush(shard)
                    shard = _Shard(names, encodings)
                for name in names:
                    shard.columns[name].append(values[name])
                shard.size += size
                shard.rows += 1
                position += 1
        if shard.rows:
            flush(shard)
        (tmp / "index.json").write_text(json.dumps({"version": 2, "shards": shards}, sort_keys=True))
        sidecar = {"features": features.to_dict(), "num_rows": position, "version": ds.version, "name": ds.name}
        (tmp / MDS_SIDECAR).write_text(json.dumps(sidecar, indent=2, ensure_ascii=False))
        write_export_marker(tmp, layout="mds", ds=ds)
        publish_dir(tmp, out)
    return out


def _sample_size(values: dict[str, Any], names: list[str], encodings: dict[str, str], keys: pa.Array, row: int) -> int:
    """Bytes the sample takes (its data and size header); raises on a value MDS cannot hold, naming it."""
    total = 0
    for name in names:
        value = values[name]
        if value is None:
            msg = "MDS has no nulls: this value is missing; fill it (ds.set) or drop the row before to_mds"
            raise EncodingError(msg, field=name, index=row, key=keys[row].as_py())
        fixed = _fixed_size(encodings[name])
        if fixed is not None:
            total += fixed
        elif encodings[name] == "str":
            total += 4 + len(value.encode("utf-8"))
        elif encodings[name] == "json":
            total += 4 + len(json.dumps(value))
        else:
            total += 4 + len(value)
    return total
