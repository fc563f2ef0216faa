"""``ds.to_lance``, ``ds.to_mds`` and ``ds.export(layout=...)``: other tools' formats, mixed into ``CachedDataset``.

Each method hands the work to the module of its format (``_lance``, ``_mds``, ``_stable_datasets``);
all of them stream the rows in batches, so memory stays at about one batch (an MDS shard, for MDS).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from stable_explore.dataset._members import DatasetMembers
from stable_explore.errors import InvalidOptionError

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa

    from stable_explore.dataset.cached_dataset import CachedDataset

__all__ = ["EXPORT_LAYOUTS", "FILE_LAYOUTS", "FormatExports", "export_layout"]

FILE_LAYOUTS = {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".json": "json"}
"""The single-file layouts, by the suffix that names them (``se.export`` and ``stable-explore export`` infer them)."""
FOLDER_LAYOUTS = ("stable-datasets", "stable-datasets-lance", "stable-datasets-video", "lance", "mds")
EXPORT_LAYOUTS = (*FOLDER_LAYOUTS, *FILE_LAYOUTS.values())


def export_layout(path: str | Path, layout: str | None = None, *, default: str | None = None) -> str:
    """The layout an export of ``path`` writes: ``layout`` if given, else the one ``path``'s suffix names.

    The one rule of ``ds.export``, ``se.export`` and ``stable-explore export``: ``.parquet``,
    ``.csv``, ``.jsonl`` and ``.json`` name their file layouts; a folder layout (``"mds"``,
    ``"lance"``, ``"stable-datasets"``, ``"stable-datasets-lance"``, ``"stable-datasets-video"``) is chosen with
    ``layout=``.
    Without either, ``default`` (``ds.export``'s is ``"stable-datasets"``), else an error.

    Examples
    --------
    >>> export_layout("pets.CSV"), export_layout("out/pets", "mds")
    ('csv', 'mds')
    >>> export_layout("out/pets", default="stable-datasets")
    'stable-datasets'
    """
    if layout is not None:
        if layout not in EXPORT_LAYOUTS:
            msg = f"layout must be one of {EXPORT_LAYOUTS}, got {layout!r}"
            raise InvalidOptionError(msg)
        return layout
    suffix = Path(os.fspath(path)).suffix.lower()
    if suffix in FILE_LAYOUTS:
        return FILE_LAYOUTS[suffix]
    if default is not None:
        return default
    msg = (
        f"cannot tell the layout from {Path(os.fspath(path)).name!r}: end the path in "
        f"{', '.join(FILE_LAYOUTS)}, or give layout= one of {EXPORT_LAYOUTS}"
    )
    raise InvalidOptionError(msg)


class FormatExports(DatasetMembers):
    """Writing a dataset's rows in other tools' formats (mixed into ``CachedDataset`` only)."""

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
            ``"create"``: a new or empty folder. ``"overwrite"``: also a Lance dataset an export wrote
            earlier (a new Lance version of it). Any other folder, and any path inside a catalog home,
            is refused (:class:`~stable_explore.ExportTargetError`).
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
        >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
        >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
        >>> ds = se.build([{"label": "dog"}, {"label": "cat"}], features, name="pets", home=home, progress=False)
        >>> lance.dataset(str(ds.to_lance(out / "pets.lance"))).to_table().column("label").to_pylist()
        [1, 0]
        >>> se.load(out / "pets.lance", home=home).label_counts()
        {'cat': 1, 'dog': 1}
        """
        from stable_explore.io.lance import write_lance

        ds = cast("CachedDataset", self)
        return write_lance(ds, self._feature_tables(batch_size), Path(path), mode=mode, with_keys=with_keys)

    def to_mds(
        self, path: str | Path, *, size_limit: int = 1 << 26, batch_size: int = 1000, overwrite: bool = False
    ) -> Path:
        """Write the rows in MosaicML streaming's MDS format, which ``streaming.StreamingDataset`` reads.

        Our own writer lays the files out (``streaming`` is not needed to write). Images keep their
        bytes (``jpeg``/``png`` encodings where a shard's images are all one format, so
        ``StreamingDataset`` hands back PIL images; ``bytes`` otherwise); labels are int64 codes and
        the class names are in ``stable-explore.json`` beside ``index.json``. The mapping of every
        feature type is in :mod:`stable_explore.io.mds`.

        Parameters
        ----------
        path:
            The output folder: a new or empty one, outside every catalog home.
        size_limit:
            Bytes of samples per shard file (MDSWriter's default, 64 MiB).
        batch_size:
            Rows read at a time.
        overwrite:
            Replace the folder when an export wrote it earlier (it holds ``.stable-explore-export``).
            A folder no export wrote is never replaced.

        Returns
        -------
        Path
            ``path``.

        Raises
        ------
        EncodingError
            A value is missing (MDS has no nulls): names the row, its key and the field.
        ExportTargetError
            ``path`` is inside (or holds) a catalog home or a version, is a file, or is a non-empty
            folder that no export wrote (or one that an export wrote, without ``overwrite=True``).

        Examples
        --------
        >>> import json, tempfile, pathlib, stable_explore as se
        >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
        >>> ds = se.build([{"x": i} for i in range(3)], se.Features(x=se.Value("int32")), name="n", home=home,
        ...               progress=False)
        >>> index = json.loads((ds.to_mds(out / "mds") / "index.json").read_text())
        >>> [(s["samples"], s["column_encodings"]) for s in index["shards"]]
        [(3, ['int32'])]
        """
        from stable_explore.io.mds import write_mds

        return write_mds(
            cast("CachedDataset", self),
            self._feature_tables(batch_size),
            Path(path),
            size_limit=size_limit,
            overwrite=overwrite,
        )

    def export(self, path: str | Path, *, layout: str | None = None, overwrite: bool = False, **options: Any) -> Path:
        """Write a copy of the rows in another tool's layout: stable-datasets', Lance, MDS, Parquet, CSV or JSON.

        ``layout`` defaults to the one ``path``'s suffix names (``.parquet``, ``.csv``, ``.jsonl``,
        ``.json``: :func:`export_layout`, the rule ``se.export`` and ``stable-explore export`` follow),
        else ``"stable-datasets"``. ``"stable-datasets"`` writes the ``arrow-shards`` layout its current
        reader opens (its ``format``/``layout`` keys and the ``schema_fingerprint`` of these features; the
        mapping and what it leaves out are in docs/format.md); ``"stable-datasets-lance"`` its
        ``lance-rows`` layout (the ``lance`` extra); ``"stable-datasets-video"`` its ``lance-video-frames``
        layout (one WebP frame per Lance row), from frame-level rows (options ``video=`` the video key column,
        default ``"video_id"``, ``frame=`` the frame index column, default ``"frame_idx"``, ``image=``) or from a
        ``Video`` column (decoded frame by frame with PyAV), with ``quality=`` (65) or ``lossless=True``.
        ``"csv"``, ``"jsonl"`` and ``"json"`` write each row's key first (column ``key``), labels as names,
        and leave images out. Options go to the writer: ``shard_size_bytes``, ``compression``,
        ``image_encoding`` (the ``Image(encode_format=...)`` the reader's features name: ``"PNG"``, its
        default, or ``"JPEG"``) for stable-datasets; those of
        :meth:`to_lance`, :meth:`to_mds` and :meth:`to_parquet` for the others.

        A folder layout writes a new or empty folder; ``overwrite=True`` replaces a folder an export
        wrote earlier (it holds ``.stable-explore-export``), never any other. A file layout replaces
        its file only once the new one is complete. No export writes inside a catalog home or a
        version (:class:`~stable_explore.ExportTargetError` names the path and what to do).

        Returns
        -------
        Path
            ``path``.

        Examples
        --------
        >>> import json, tempfile, pathlib, stable_explore as se
        >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
        >>> features = se.Features(x=se.Value("int32"), label=se.ClassLabel(names=["a", "b"]))
        >>> ds = se.build([{"x": 1, "label": "b"}], features, name="t", home=home, progress=False)
        >>> meta = json.loads((ds.export(out / "t_default_train") / "_metadata.json").read_text())
        >>> meta["format"], meta["layout"], meta["num_rows"]
        ('arrow', 'arrow-shards', 1)
        >>> se.load(out / "t_default_train")[0]
        {'x': 1, 'label': 1}
        >>> print(ds.export(out / "t.csv").read_text().strip())
        key,x,label
        0,1,b
        """
        ds = cast("CachedDataset", self)
        chosen = export_layout(path, layout, default="stable-datasets")
        if chosen == "stable-datasets":
            from stable_explore.io.stable_datasets import write_stable_datasets

            batch_size = options.pop("batch_size", 1000)
            return write_stable_datasets(
                ds, self._feature_tables(batch_size), Path(path), overwrite=overwrite, **options
            )
        if chosen == "stable-datasets-lance":
            from stable_explore.io.stable_datasets import write_stable_datasets_lance

            batch_size = options.pop("batch_size", 1000)
            return write_stable_datasets_lance(
                ds, self._feature_tables(batch_size), Path(path), overwrite=overwrite, **options
            )
        if chosen == "stable-datasets-video":
            from stable_explore.dataset._video_frames_export import write_video_frames

            return write_video_frames(ds, Path(path), overwrite=overwrite, **options)
        if chosen == "lance":
            mode = options.pop("mode", "overwrite" if overwrite else "create")
            return self.to_lance(path, mode=mode, **options)
        if chosen == "mds":
            return self.to_mds(path, overwrite=overwrite, **options)
        if chosen == "parquet":
            return ds.to_parquet(path, **options)
        from stable_explore.dataset._export import write_rows_file

        if options:
            msg = f"a {chosen} export takes no options, got {sorted(options)}"
            raise InvalidOptionError(msg)
        return write_rows_file(ds, Path(os.fspath(path)), chosen)
