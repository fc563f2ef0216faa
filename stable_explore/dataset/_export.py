"""Exporting a dataset's rows: to pandas (labels as names, images as bytes, PIL, thumbnails or files) and to Parquet.

The dataset hands over its rows as Arrow tables; this module turns them into what the
user asked for. Files are written through :func:`stable_explore.storage.backends.fsutil.replacing`,
so two exports of one path never clobber each other's half-written file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from stable_explore.dataset._export_target import export_file
from stable_explore.dataset._members import DatasetMembers
from stable_explore.errors import (
    ColumnNotFoundError,
    ImageTooLargeError,
    InvalidOptionError,
    UnsafePathError,
    VideoDecodeError,
)
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN, ClassLabel, Features, Image, Video, decode_image_bytes
from stable_explore.schema.image_formats import sniff
from stable_explore.schema.video import video_cell, video_source
from stable_explore.storage.backends.fsutil import replacing, writing

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore.dataset import CachedDataset

__all__ = [
    "FRAME_FEATURES_KEY",
    "IMAGE_EXPORTS",
    "Exports",
    "column_folder",
    "row_keys",
    "to_pandas",
    "to_parquet",
    "write_rows_file",
]

IMAGE_EXPORTS = ("bytes", "pil", "thumbnail", "path", "drop")
FRAME_FEATURES_KEY = "stable_explore.features"
"""The key of ``DataFrame.attrs`` where ``to_pandas`` leaves the features of the frame's columns."""

_CATEGORY_DTYPES: dict[tuple[str, ...], Any] = {}


def row_keys(ds: CachedDataset) -> pa.Array:
    """Each row's key in ``ds``'s order, as Arrow (``int64`` or ``string``): what exports write as ``__key__``.

    A version-1 cache stores no keys: its keys are the row numbers in the version, as ``ds.keys()`` says.
    """
    if ds.cache_meta.is_stable_datasets_v1:
        return pa.array(ds.base_rows(), pa.int64())
    return ds.arrow_column(KEY_COLUMN)


def to_pandas(
    ds: CachedDataset,
    table_of: Callable[[list[str]], pa.Table],
    rows: range | np.ndarray,
    *,
    images: str,
    columns: list[str],
    thumbnail_size: int,
    image_dir: str | Path | None,
    with_keys: bool = True,
) -> pd.DataFrame:
    """``ds.to_pandas``: ``table_of(columns)`` gives the rows, ``rows`` their numbers in the version.

    The index is the rows' keys (named ``key``), or with ``with_keys=False`` their numbers (``row``).
    """
    import pandas as pd
    from pyarrow.types import is_integer

    if images not in IMAGE_EXPORTS:
        msg = f"images must be one of {IMAGE_EXPORTS}, got {images!r}"
        raise InvalidOptionError(msg)
    features = ds.features
    image_columns = [c for c in columns if isinstance(features[c], Image)]
    wanted = [c for c in columns if c not in image_columns] if images == "drop" else list(columns)
    stored_keys = with_keys and not ds.cache_meta.is_stable_datasets_v1
    table = table_of([*wanted, KEY_COLUMN] if stored_keys else wanted)
    keys = table.column(KEY_COLUMN) if stored_keys else None
    if stored_keys:
        table = table.drop_columns([KEY_COLUMN])  # read with the rows: one take, not two
    frame = table.to_pandas(split_blocks=True, self_destruct=False)
    for name in wanted:
        feature = features[name]
        column = table.column(name)
        if is_integer(column.type) and column.null_count:
            # pandas' nullable integers: float64 (Arrow's default here) would round values past 2**53
            frame[name] = column.to_pandas(types_mapper=_nullable_integer)
        elif _items_have_nulls(column.type, column):
            # Arrow makes [1, None, 3] a float array [1.0, nan, 3.0]: lists of Python values keep the None
            frame[name] = pd.Series(column.to_pylist(), index=frame.index, dtype=object)
        if isinstance(feature, ClassLabel):
            # assigning replaces the int column in place: the column order stays as asked
            codes = table.column(name).fill_null(-1).to_numpy()
            codes = np.where((codes >= 0) & (codes < (feature.num_classes or 0)), codes, -1)
            frame[name] = _categorical(pd, codes, feature)
        elif isinstance(feature, Video):  # the path, or "<N bytes video>": a struct's dict says little in a table
            shown = [None if cell is None else str(video_cell(cell)) for cell in column.to_pylist()]
            frame[name] = pd.Series(shown, index=frame.index, dtype=object)
    if images not in ("bytes", "drop"):
        for name in image_columns:
            frame[name] = _export_images(ds, table.column(name), images, thumbnail_size, image_dir, name)
    if images == "thumbnail":  # a video's thumbnail is its poster frame, as the browser shows it
        for name in (c for c in wanted if isinstance(features[c], Video)):
            frame[name] = _export_posters(ds, table.column(name), thumbnail_size, name)
    # the features of the columns, for se.from_pandas (pandas keeps attrs through copies and slices)
    frame.attrs[FRAME_FEATURES_KEY] = {name: features[name].to_dict() for name in frame.columns if name in features}
    if with_keys:
        frame.index = pd.Index((keys if keys is not None else row_keys(ds)).to_pandas(), name="key")
    elif isinstance(rows, range):
        frame.index = pd.RangeIndex(rows.start, rows.stop, rows.step, name="row")
    else:
        frame.index = pd.Index(np.asarray(rows, dtype=np.int64), name="row")
    return frame


def _items_have_nulls(arrow_type: pa.DataType, column: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a list column holds a null item at some depth, or dicts (a null list itself does not count).

    A list of dicts is always made of Python values: Arrow's conversion turns a dict field's
    missing int into a float (``1`` into ``1.0``) as it does a list's.
    """
    import pyarrow.compute as pc

    list_like = pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)
    if not (list_like or pa.types.is_fixed_size_list(arrow_type)):
        return False
    if pa.types.is_struct(arrow_type.value_type):
        return True
    items = pc.list_flatten(column)
    return bool(items.null_count) or _items_have_nulls(arrow_type.value_type, items)


def _nullable_integer(arrow_type: pa.DataType) -> Any:
    """The nullable pandas integer dtype of an Arrow integer type (``Int64`` for ``int64``), for ``types_mapper``."""
    import pandas as pd
    from pyarrow.types import is_integer

    if not is_integer(arrow_type):
        return None
    name = str(arrow_type).replace("uint", "UInt").replace("int", "Int")
    return pd.api.types.pandas_dtype(name)


def _export_posters(ds: CachedDataset, column: pa.ChunkedArray, size: int, name: str) -> list[Any]:
    """PIL thumbnails of each video's poster frame (None for a row without a video)."""
    from stable_explore.display.images import array_thumbnail
    from stable_explore.schema.video_codec import poster_frame

    out: list[object] = []
    keys = None
    for i, (row, value) in enumerate(zip(ds.base_rows().tolist(), column.to_pylist(), strict=True)):
        source = video_source(value)
        if source is None:
            out.append(None)
            continue
        try:
            out.append(array_thumbnail(poster_frame(source), size))
        except VideoDecodeError as exc:
            keys = ds.keys() if keys is None else keys
            raise exc.located(field=name, index=row, key=keys[i]) from exc
    return out


def _export_images(
    ds: CachedDataset, column: pa.ChunkedArray, how: str, size: int, image_dir: str | Path | None, name: str
) -> list[Any]:
    from stable_explore.display.images import open_thumbnail

    values = column.to_pylist()
    if how in ("pil", "thumbnail"):
        feature = ds.features[name]
        limit = feature.max_pixels if isinstance(feature, Image) else None
        opened: list[object] = []
        for row, value in zip(ds.base_rows().tolist(), values, strict=True):
            try:
                if value is None:
                    opened.append(None)
                elif how == "pil":
                    opened.append(decode_image_bytes(value, limit))
                else:
                    opened.append(open_thumbnail(value, size))
            except ImageTooLargeError as exc:
                msg = f"row {row} (in {ds.ref}), field {name!r}: {exc}"
                raise ImageTooLargeError(msg) from exc
        return opened
    # one folder per version and column, so exports of other columns or versions never collide
    root = Path(image_dir) if image_dir is not None else _default_export_dir(ds)
    column = column_folder(name)
    folder = _inside(root, ds.version, column) if image_dir is not None else _inside(root, column)
    folder.mkdir(parents=True, exist_ok=True)
    if not folder.resolve().is_relative_to(root.resolve()):
        msg = f"the export folder leads (through a symlink) to {folder.resolve()}, outside {root}; refusing to write"
        raise UnsafePathError(folder, msg)
    paths: list[object] = []
    for row, data in zip(ds.base_rows().tolist(), values, strict=True):
        if data is None:
            paths.append(None)
            continue
        kind = sniff(data)
        path = folder / f"{row:08d}{kind.extension if kind else '.img'}"
        if not path.exists():  # versions are immutable: a file written once stays right
            with replacing(path, durable=False) as tmp:
                tmp.write_bytes(data)
        paths.append(str(path))
    return paths


_FOLDER_BYTES = 100  # column names up to this many UTF-8 bytes are their own export folder's name
_KEPT_BYTES = 64  # a longer name keeps this much of itself, then a digest of the whole name


def column_folder(name: str) -> str:
    """The export folder of a column: its name, or for a long name a short prefix and a digest of the name.

    Column names have no length limit (Arrow, pandas and Parquet have none), but a folder name does
    (255 bytes on most file systems, less on some), so a long name must not decide whether an
    export can be written.

    Examples
    --------
    >>> column_folder("image")
    'image'
    >>> long = column_folder("c" * 300)
    >>> long[:8], len(long)
    ('cccccccc', 81)
    """
    data = name.encode("utf-8")
    if len(data) <= _FOLDER_BYTES:
        return name
    kept = data[:_KEPT_BYTES].decode("utf-8", errors="ignore").rstrip(" .")
    return f"{kept}-{hashlib.sha256(data).hexdigest()[:16]}"


def _inside(root: Path, *parts: str) -> Path:
    """``root / parts``, where each part (a name, version id or column name from metadata) is a plain name."""
    for part in parts:
        if not isinstance(part, str) or part in ("", ".", "..") or any(s in part for s in ("/", "\\", "\x00")):
            msg = f"refusing to export into {part!r}: a name taken from the metadata must be a plain folder name"
            raise UnsafePathError(root, msg)
    return root.joinpath(*parts)


def _default_export_dir(ds: CachedDataset) -> Path:
    if ds.home is not None and ds.name:
        # a bucket's version exports beside this machine's mirror of its metadata, never into the bucket
        root = ds.home if isinstance(ds.home, Path) else ds.cache_dir.parents[2]
        return _inside(root, ds.name, "exports", ds.version)
    return _inside(ds.cache_dir.parent, f"{ds.cache_dir.name}-exports")


def write_rows_file(ds: CachedDataset, path: Path, layout: str) -> Path:
    """``ds.export(path, layout="csv" | "jsonl" | "json")``: the key first, labels as names, no images.

    The key column is ``key`` (``__key__`` when the dataset has a ``key`` column of its own); the
    file is replaced only when the new one is complete.
    """
    target = export_file(path, what=layout.upper(), ds=ds)
    frame = ds.to_pandas(images="drop")
    frame.insert(0, "key" if "key" not in frame.columns else KEY_COLUMN, ds.keys())  # a row's key names it
    with writing(target):  # a folder that is a file, a full disk: a CacheWriteError naming the target
        target.parent.mkdir(parents=True, exist_ok=True)
        with replacing(target, durable=False) as tmp, tmp.open("w", encoding="utf-8", newline="") as out:
            if layout == "csv":
                frame.to_csv(out, index=False)
            else:
                frame.to_json(out, orient="records", lines=layout == "jsonl", force_ascii=False)
    return target


def to_parquet(
    target: Path, chunks: Iterable[pa.Table], schema: pa.Schema, *, rows_per_group: int, compression: str
) -> Path:
    """Write ``chunks`` (tables of ``schema``'s columns) to one Parquet file, replacing ``target`` only when done."""
    import pyarrow.parquet as pq

    with writing(target):  # a folder that is a file, a full disk: a CacheWriteError naming the target
        target.parent.mkdir(parents=True, exist_ok=True)
        with (
            replacing(target, durable=False) as tmp,
            pq.ParquetWriter(str(tmp), schema, compression=compression) as parquet,
        ):
            for chunk in chunks:
                parquet.write_table(chunk.cast(schema), row_group_size=rows_per_group)
    return target


def _categorical(pd: Any, codes: np.ndarray, feature: ClassLabel) -> Any:
    """Codes (already clamped to -1 .. n-1) as a pandas Categorical of the class names."""
    names = tuple(feature.names or ())
    dtype = _CATEGORY_DTYPES.get(names)
    if dtype is None:  # building one checks the names for uniqueness: worth doing once per label set
        dtype = _CATEGORY_DTYPES[names] = pd.CategoricalDtype(list(names), ordered=False)
    try:
        return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)  # pandas >= 2.1
    except TypeError:
        return pd.Categorical.from_codes(codes, dtype=dtype)


class Exports(DatasetMembers):
    """``ds.to_arrow``, ``ds.to_pandas`` and ``ds.to_parquet``: mixed into ``CachedDataset`` (only there)."""

    def to_arrow(
        self, columns: Sequence[str] | None = None, *, with_row_columns: bool = False, layout: str = "stored"
    ) -> pa.Table:
        """The rows as a ``pyarrow.Table``: labels as ints, the schema in its metadata twice over.

        The schema metadata holds our features JSON and, under the ``huggingface`` key, the features
        as Hugging Face ``datasets`` reads them, so ``datasets.Dataset(table)`` keeps the label names.

        Parameters
        ----------
        columns:
            Only these columns.
        with_row_columns:
            Add each row's key and content hash (``__key__``, ``__row_hash__``).
        layout:
            ``"stored"`` (default): images and arrays as the shards hold them, encoded bytes.
            ``"huggingface"``: images as ``struct<bytes, path>`` and arrays as nested lists, as
            ``datasets`` stores them (image bytes are not copied through Python), so ``datasets``
            also keeps the ``Image`` features.

        Examples
        --------
        >>> import tempfile, datasets, stable_explore as se
        >>> ds = se.build([{"label": "dog"}], se.Features(label=se.ClassLabel(names=["cat", "dog"])),
        ...               name="tiny", home=tempfile.mkdtemp(), progress=False)
        >>> datasets.Dataset(ds.to_arrow()).features["label"]
        ClassLabel(names=['cat', 'dog'])
        """
        from stable_explore.schema.huggingface import hf_schema_metadata, to_hf_layout

        wanted = list(columns) if columns is not None else self._feature_columns()
        if with_row_columns and not self.cache_meta.is_stable_datasets_v1:
            wanted += [c for c in (KEY_COLUMN, HASH_COLUMN) if c not in wanted]
        shown = _features_of(self.features, wanted)
        metadata = {**self.features.to_arrow_schema().metadata, **hf_schema_metadata(shown, layout=layout)}
        table = self._table_of(self._all_rows(), wanted)
        if layout == "huggingface":
            table = to_hf_layout(table, shown)
        return table.replace_schema_metadata(metadata)

    def to_pandas(
        self,
        images: str = "bytes",
        *,
        columns: Sequence[str] | None = None,
        thumbnail_size: int = 128,
        image_dir: str | Path | None = None,
        with_keys: bool = True,
    ) -> pd.DataFrame:
        """The rows as a pandas DataFrame, indexed by the rows' keys (or their numbers in the version).

        Parameters
        ----------
        images:
            What each image cell holds:

            - ``"bytes"`` (default, fastest): the encoded file bytes (JPEG, PNG, ...), as stored;
            - ``"pil"``: decoded ``PIL.Image.Image`` objects at full size;
            - ``"thumbnail"``: PIL images no larger than ``thumbnail_size`` pixels (cheap to keep many);
              a ``Video`` column's cells become its poster frames, as thumbnails too;
            - ``"path"``: paths of image files written once under ``image_dir``
              (for tools that read files);
            - ``"drop"``: no image columns.

            pandas prints a PIL image as ``<PIL.Image.Image ...>`` text. To see the images in a
            notebook, wrap the frame: ``stable_explore.display.show(df)`` draws every image cell
            (PIL or bytes) as an inline thumbnail.
        columns:
            Only these columns.
        with_keys:
            Index the frame by each row's key, named ``key`` (default), so
            :func:`stable_explore.from_pandas` keys the rows as they were here and the same rows build
            the same version. False: by each row's number in the version, named ``row``.

        Returns
        -------
        pandas.DataFrame
            ClassLabel columns are ``Categorical`` of the class names. A list column holding a
            missing item is of Python lists (``[1, None, 3]``); other list columns of numpy arrays.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"label": "b"}, {"label": "a"}], se.Features(label=se.ClassLabel(names=["a", "b"])),
        ...               name="tiny", home=tempfile.mkdtemp(), progress=False)
        >>> ds.to_pandas()["label"].cat.categories.tolist()
        ['a', 'b']
        """
        wanted = list(columns) if columns is not None else self._feature_columns()
        unknown = [c for c in wanted if c not in self.features]
        if unknown:
            msg = f"no column(s) {unknown}; columns are {list(self.features)}"
            raise ColumnNotFoundError(msg)
        rows = self._all_rows()
        return to_pandas(
            cast("CachedDataset", self),
            lambda names: self._table_of(rows, names),
            rows,
            images=images,
            columns=wanted,
            thumbnail_size=thumbnail_size,
            image_dir=image_dir,
            with_keys=with_keys,
        )

    def to_parquet(
        self,
        path: str | Path,
        *,
        rows_per_group: int = 10_000,
        compression: str = "zstd",
        layout: str = "huggingface",
        with_keys: bool = True,
        with_row_columns: bool = False,
    ) -> Path:
        """Write the rows to a Parquet file (readable by DuckDB, Polars, Spark), in bounded memory.

        Labels are stored as ints; the full features JSON is in the file's schema metadata, and the
        features as Hugging Face ``datasets`` reads them under its ``huggingface`` key. The default
        ``layout="huggingface"`` writes images as ``struct<bytes, path>`` (the encoded bytes, as
        cached) and arrays as nested lists: the layout of the Parquet files on the Hugging Face Hub,
        so ``datasets.Dataset.from_parquet(path)`` keeps the class names and the ``Image`` features,
        and DuckDB reads an image as ``image.bytes``. ``layout="stored"`` writes images and arrays
        as the shards hold them, encoded bytes (``datasets`` then keeps the class names only).
        Each row's key is written in a ``__key__`` column after the features (``with_keys=False``
        leaves it out), so :func:`stable_explore.from_parquet` keys the rows as they were here: the
        same rows then build the same version. ``with_row_columns=True`` also adds each row's content
        hash (``__row_hash__``). The file is replaced only once the new one is complete; a path inside
        a catalog home or a version is refused (:class:`~stable_explore.ExportTargetError`).

        Examples
        --------
        >>> import tempfile, pathlib, pyarrow.parquet as pq, stable_explore as se
        >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
        >>> ds = se.build([{"x": i} for i in range(5)], se.Features(x=se.Value("int64")), name="n", home=home,
        ...               progress=False)
        >>> pq.read_table(ds[1:4].to_parquet(out / "n.parquet")).column("x").to_pylist()
        [1, 2, 3]
        """
        from stable_explore.schema.huggingface import hf_arrow_type, hf_schema_metadata, to_hf_layout

        ds = cast("CachedDataset", self)
        rows = self._all_rows()
        features = self.features
        hashes = [HASH_COLUMN] if with_row_columns and not self.cache_meta.is_stable_datasets_v1 else []
        keys = row_keys(ds) if with_keys or with_row_columns else None

        def chunks() -> Iterator[pa.Table]:
            for start in range(0, len(rows), rows_per_group):
                chunk = self._table_of(rows[start : start + rows_per_group], [*features, *hashes])
                if layout == "huggingface":
                    chunk = to_hf_layout(chunk, features)
                if keys is not None:
                    chunk = chunk.add_column(len(features), KEY_COLUMN, keys.slice(start, chunk.num_rows))
                yield chunk

        schema = features.to_arrow_schema()
        if layout == "huggingface":
            schema = pa.schema([pa.field(name, hf_arrow_type(f)) for name, f in features.items()])
        else:
            schema = pa.schema([schema.field(name) for name in features])
        if keys is not None:
            schema = schema.append(pa.field(KEY_COLUMN, keys.type))
        if hashes:
            schema = schema.append(self._table_of(rows[:0], hashes).schema.field(HASH_COLUMN))
        schema = schema.with_metadata(
            {**features.to_arrow_schema().metadata, **hf_schema_metadata(features, layout=layout)}
        )
        target = export_file(path, what="Parquet", ds=ds)
        return to_parquet(target, chunks(), schema, rows_per_group=rows_per_group, compression=compression)


def _features_of(features: Features, columns: Sequence[str]) -> Features:
    """The features of those of ``columns`` that are features (not the row key and hash columns)."""
    return Features({name: features[name] for name in columns if name in features})
