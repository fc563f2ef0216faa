"""``ds.to_lance``, ``ds.to_mds`` and ``ds.export(layout=...)``: other tools' formats, mixed into ``CachedDataset``.

Each method hands the work to the module of its format (``_lance``, ``_mds``, ``_stable_datasets``);
all of them stream the rows in batches, so memory stays at about one batch (an MDS shard, for MDS).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from stable_explore.errors import InvalidOptionError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pyarrow as pa

    from stable_explore.dataset._selection import Rows
    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["EXPORT_LAYOUTS", "FormatExports"]

EXPORT_LAYOUTS = ("stable-datasets", "stable-datasets-lance", "lance", "mds", "parquet")


class FormatExports:
    """Writing a dataset's rows in other tools' formats (mixed into ``CachedDataset`` only)."""

    if TYPE_CHECKING:  # what CachedDataset provides

        def _all_rows(self) -> Rows: ...

        def _table_of(self, rows: Rows, columns: Sequence[str] | None = None) -> pa.Table: ...

    def _feature_tables(self, batch_size: int) -> Iterator[pa.Table]:
        """The rows' feature columns, ``batch_size`` rows at a time, as stored."""
        if batch_size < 1:
            msg = f"batch_size must be positive, got {batch_size}"
            raise InvalidOptionError(msg)
        ds = cast("CachedDataset", self)
        rows = self._all_rows()
        for start in range(0, len(rows), batch_size):
            yield self._table_of(rows[start : start + batch_size], list(ds.features))

    def to_lance(
        self, path: str | Path, *, mode: str = "create", batch_size: int = 1000, with_keys: bool = True
    ) -> Path:
        """Write the rows as a Lance dataset (the ``lance`` extra); ``se.load(path)`` reads it back.

        Labels are stored as ints and images as their encoded bytes (no re-encode); each row's key
        is in a ``__key__`` column and the features (class names, shapes) in the schema metadata.

        Parameters
        ----------
        path:
            The Lance dataset's folder (``pets.lance``).
        mode:
            ``"create"`` (refuses an existing dataset) or ``"overwrite"`` (a new Lance version).
        batch_size:
            Rows per record batch handed to Lance.
        with_keys:
            Write each row's key as ``__key__`` (default), so :func:`stable_explore.from_lance`
            builds the same rows as the same version; False leaves the column out.

        Returns
        -------
        Path
            ``path``.

        Notes
        -----
        Needs ``pylance``: ``pip install 'stable-explore[lance]'``.

        Examples
        --------
        >>> import tempfile, pathlib, lance, stable_explore as se
        >>> home = pathlib.Path(tempfile.mkdtemp())
        >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
        >>> ds = se.build([{"label": "dog"}, {"label": "cat"}], features, name="pets", home=home, progress=False)
        >>> lance.dataset(str(ds.to_lance(home / "pets.lance"))).to_table().column("label").to_pylist()
        [1, 0]
        >>> se.load(home / "pets.lance", home=home).label_counts()
        {'cat': 1, 'dog': 1}
        """
        from stable_explore.dataset._lance import write_lance

        ds = cast("CachedDataset", self)
        return write_lance(ds, self._feature_tables(batch_size), Path(path), mode=mode, with_keys=with_keys)

    def to_mds(self, path: str | Path, *, size_limit: int = 1 << 26, batch_size: int = 1000) -> Path:
        """Write the rows in MosaicML streaming's MDS format, which ``streaming.StreamingDataset`` reads.

        Our own writer lays the files out (``streaming`` is not needed to write). Images keep their
        bytes (``jpeg``/``png`` encodings where a shard's images are all one format, so
        ``StreamingDataset`` hands back PIL images; ``bytes`` otherwise); labels are int64 codes and
        the class names are in ``stable-explore.json`` beside ``index.json``. The mapping of every
        feature type is in :mod:`stable_explore.dataset._mds`.

        Parameters
        ----------
        path:
            The output folder (replaced as a whole if it exists).
        size_limit:
            Bytes of samples per shard file (MDSWriter's default, 64 MiB).
        batch_size:
            Rows read at a time.

        Returns
        -------
        Path
            ``path``.

        Raises
        ------
        EncodingError
            A value is missing (MDS has no nulls): names the row, its key and the field.

        Examples
        --------
        >>> import json, tempfile, pathlib, stable_explore as se
        >>> home = pathlib.Path(tempfile.mkdtemp())
        >>> ds = se.build([{"x": i} for i in range(3)], se.Features(x=se.Value("int32")), name="n", home=home,
        ...               progress=False)
        >>> index = json.loads((ds.to_mds(home / "mds") / "index.json").read_text())
        >>> [(s["samples"], s["column_encodings"]) for s in index["shards"]]
        [(3, ['int32'])]
        """
        from stable_explore.dataset._mds import write_mds

        return write_mds(
            cast("CachedDataset", self), self._feature_tables(batch_size), Path(path), size_limit=size_limit
        )

    def export(self, path: str | Path, *, layout: str = "stable-datasets", **options: Any) -> Path:
        """Write a copy of the rows in another tool's layout: stable-datasets', Lance, MDS or Parquet.

        ``"stable-datasets"`` writes the ``arrow-shards`` layout its current reader opens (its
        ``format``/``layout`` keys and the ``schema_fingerprint`` of these features; the mapping and
        what it leaves out are in docs/format.md); ``"stable-datasets-lance"`` its ``lance-rows``
        layout (the ``lance`` extra). Options go to the writer: ``shard_size_bytes``,
        ``compression``, ``image_encoding`` (the ``Image(encode_format=...)`` the reader's features
        name: ``"PNG"``, its default, or ``"JPEG"``) for stable-datasets; those of :meth:`to_lance`,
        :meth:`to_mds` and :meth:`to_parquet` for the others.

        Returns
        -------
        Path
            ``path``.

        Examples
        --------
        >>> import json, tempfile, pathlib, stable_explore as se
        >>> home = pathlib.Path(tempfile.mkdtemp())
        >>> features = se.Features(x=se.Value("int32"), label=se.ClassLabel(names=["a", "b"]))
        >>> ds = se.build([{"x": 1, "label": "b"}], features, name="t", home=home, progress=False)
        >>> meta = json.loads((ds.export(home / "t_default_train") / "_metadata.json").read_text())
        >>> meta["format"], meta["layout"], meta["num_rows"]
        ('arrow', 'arrow-shards', 1)
        >>> se.load(home / "t_default_train")[0]
        {'x': 1, 'label': 1}
        """
        ds = cast("CachedDataset", self)
        if layout == "stable-datasets":
            from stable_explore.dataset._stable_datasets import write_stable_datasets

            batch_size = options.pop("batch_size", 1000)
            return write_stable_datasets(ds, self._feature_tables(batch_size), Path(path), **options)
        if layout == "stable-datasets-lance":
            from stable_explore.dataset._stable_datasets import write_stable_datasets_lance

            batch_size = options.pop("batch_size", 1000)
            return write_stable_datasets_lance(ds, self._feature_tables(batch_size), Path(path), **options)
        if layout == "lance":
            return self.to_lance(path, **options)
        if layout == "mds":
            return self.to_mds(path, **options)
        if layout == "parquet":
            return ds.to_parquet(path, **options)
        msg = f"layout must be one of {EXPORT_LAYOUTS}, got {layout!r}"
        raise InvalidOptionError(msg)
