"""What "similar rows" are judged by in a dataset, chosen from its columns, with the arrays kept per version.

:func:`similarity` chooses, from the schema alone (nothing is read): a float embedding column (one
whose name says ``emb`` first), else a stored 64-bit perceptual hash column (named ``phash`` or
``dhash``), else the pHash of the first image column, computed when first asked. A dataset with none
of these gets an error that says what to add. :meth:`Similarity.nearest` then answers one row at a
time; the embedding or the hashes it compares are read (or computed) once per version and rows, and
kept (:mod:`stable_explore.storage.kept`), so the next row costs one scan, not a decode of
every image.

Examples
--------
>>> import tempfile, stable_explore as se
>>> features = se.Features(emb=se.Sequence(se.Value("float32"), length=2), label=se.ClassLabel(names=["a"]))
>>> ds = se.build([{"emb": [i * i, 0], "label": 0} for i in range(6)], features, name="sq",
...               home=tempfile.mkdtemp(), progress=False)
>>> by = similarity(ds)
>>> by.title, by.nearest(ds, 2, k=3).tolist()
("the embedding 'emb'", [1, 0, 3])
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from stable_explore.errors import ColumnNotFoundError, InvalidArgumentTypeError, InvalidOptionError
from stable_explore.schema import Array3D, Image, Sequence, Value
from stable_explore.signals.embeddings import embedding_matrix
from stable_explore.signals.images import perceptual_hashes
from stable_explore.signals.neighbors import nearest_neighbors
from stable_explore.signals.perceptual import METHODS
from stable_explore.signals.similar import closest_by_hash
from stable_explore.storage.kept import Kept, kept

if TYPE_CHECKING:
    from collections.abc import Callable

    from stable_explore.dataset import CachedDataset

__all__ = ["Similarity", "similarity"]

_KEPT: Kept[tuple[str, ...], np.ndarray] = kept(
    "similar rows: embeddings and hashes", max_entries=8, weight=lambda value: int(value.nbytes), max_bytes=2 << 30
)
_FLOATS = ("float16", "float32", "float64")
_NUMBERS = (*_FLOATS, "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


@dataclass(frozen=True)
class Similarity:
    """What rows are compared by: an ``"embedding"`` column, a stored ``"hash"`` column, or ``"image"`` hashes.

    ``column`` names the embedding, hash or image column; ``method`` the perceptual hash computed of
    an image column (``"phash"`` or ``"dhash"``).
    """

    kind: str
    column: str
    method: str = ""

    @property
    def title(self) -> str:
        """What the rows are similar by, in words: ``"the embedding 'emb'"``."""
        if self.kind == "embedding":
            return f"the embedding {self.column!r}"
        if self.kind == "hash":
            return f"the perceptual hash {self.column!r}"
        return f"the {self.method} of {self.column!r}"

    def _key(self, ds: CachedDataset) -> tuple[str, ...]:
        digest = hashlib.blake2b(np.ascontiguousarray(ds.base_rows()).tobytes(), digest_size=16).hexdigest()
        return (ds.version, self.kind, self.column, self.method, digest)

    def is_kept(self, ds: CachedDataset) -> bool:
        """Whether :meth:`values` of ``ds`` is in this process's memory already (the next call is instant)."""
        return _KEPT.get(self._key(ds)) is not None

    def values(self, ds: CachedDataset, on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """The embedding matrix or the hashes of every row of ``ds``: read (or computed) once, then kept.

        ``on_progress(rows hashed, rows in all)`` follows the hashing of images, batch by batch; an
        exception it raises stops it with nothing kept, in memory or in the home.
        """
        key = self._key(ds)
        found = _KEPT.get(key)
        if found is None:
            if self.kind == "embedding":  # float32: half the memory, and a scan of 1M x 64 in ~60 ms, not ~360
                found = embedding_matrix(ds, self.column).astype(np.float32)
            elif self.kind == "hash":
                column = ds.arrow_column(self.column)
                found = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False)).astype(np.uint64)
            else:
                # kept in the home too: a new kernel, or the next browser of this version, reads them back
                table = perceptual_hashes(
                    ds, column=self.column, method=self.method, progress=False, on_progress=on_progress
                )
                found = np.asarray(table.column("hash").fill_null(0).to_numpy(zero_copy_only=False), dtype=np.uint64)
            found.setflags(write=False)
            _KEPT.put(key, found)
        return found

    def nearest(self, ds: CachedDataset, row: int, k: int = 8) -> np.ndarray:
        """The ``k`` rows of ``ds`` most like ``row`` (itself left out), closest first; ties: lower row first."""
        values = self.values(ds)
        if self.kind == "embedding":
            _, positions = nearest_neighbors(values, k, rows=[row], backend="numpy")
            nearest: np.ndarray = positions[0]
            return nearest
        return closest_by_hash(values, row, k)


def _embedding_columns(ds: CachedDataset, *, floats_only: bool) -> list[str]:
    kinds = _FLOATS if floats_only else _NUMBERS
    found = []
    for name, feature in ds.features.items():
        if isinstance(feature, Sequence) and isinstance(feature.feature, Value) and feature.feature.dtype in kinds:
            if feature.length != 1:
                found.append(name)
        elif isinstance(feature, Array3D) and not floats_only:
            found.append(name)
    return found


def _hash_columns(ds: CachedDataset) -> list[str]:
    return [
        name
        for name, feature in ds.features.items()
        if isinstance(feature, Value) and feature.dtype == "uint64" and any(m in name.lower() for m in METHODS)
    ]


def _chosen(ds: CachedDataset, by: str) -> Similarity:
    features = ds.features
    if by in features:
        feature = features[by]
        if by in _embedding_columns(ds, floats_only=False):
            return Similarity("embedding", by)
        if isinstance(feature, Value) and feature.dtype == "uint64":
            return Similarity("hash", by)
        if isinstance(feature, Image):
            return Similarity("image", by, "phash")
        msg = (
            f"similar_by={by!r}: that column holds {feature!r}, not an embedding (a Sequence of numbers), "
            "a 64-bit perceptual hash (uint64) or an Image"
        )
        raise InvalidOptionError(msg)
    if by in METHODS:
        image = features.first_of(Image)
        if image is not None:
            return Similarity("image", image, by)
        msg = f"similar_by={by!r} hashes images, and this dataset has no Image column (columns: {list(features)})"
        raise ColumnNotFoundError(msg)
    msg = f"similar_by={by!r} is neither a column ({list(features)}) nor one of {METHODS}"
    raise InvalidOptionError(msg)


def similarity(ds: CachedDataset, by: str | None = None) -> Similarity:
    """What rows of ``ds`` are compared by for similar rows: ``by`` (a column, ``"phash"``, ``"dhash"``) or a choice.

    Without ``by``: a float embedding column (a name with ``emb`` first, else the first), else a
    ``uint64`` column named for a perceptual hash, else the pHash of the first ``Image`` column.

    Raises
    ------
    ColumnNotFoundError
        Nothing to compare by; the message says what to add.
    InvalidOptionError
        ``by`` names no column or method that can be compared.
    """
    if by is not None and not isinstance(by, str):
        msg = (
            f"by= names what to compare rows by (a column, 'phash' or 'dhash'), got {type(by).__name__}; "
            f"to compare by vectors you hold, add them as a column first (ds.add_columns({{'embedding': vectors}}))"
        )
        raise InvalidArgumentTypeError(msg)
    if by is not None:
        return _chosen(ds, by)
    embeddings = _embedding_columns(ds, floats_only=True)
    if embeddings:
        named = [name for name in embeddings if "emb" in name.lower()]
        return Similarity("embedding", (named or embeddings)[0])
    hashes = _hash_columns(ds)
    if hashes:
        return Similarity("hash", hashes[0])
    image = ds.features.first_of(Image)
    if image is not None:
        return Similarity("image", image, "phash")
    msg = (
        "nothing to find similar rows by: no embedding column (a Sequence of floats), no perceptual hash column "
        "(uint64, named phash or dhash) and no Image column to hash. Add an embedding with "
        "ds.add_columns({'embedding': vectors}) (a model's, one vector per row), then browse again"
    )
    raise ColumnNotFoundError(msg)
