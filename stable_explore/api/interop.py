"""Datasets from the formats users already have: Hugging Face ``datasets``, Parquet files, pandas DataFrames.

Each reads its source as rows (images as their encoded bytes, never decoded and re-encoded)
and builds a version with :func:`stable_explore.build`, so every option of a build applies
(``home=``, ``description=``, ``tag=``, ``shard_size=``, ...) and building the same data again
is a cache hit. Features are converted (``datasets``) or inferred when not given.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from stable_explore.api.building import BuildKwargs, build
from stable_explore.dataset._concatenate import ConcatRows, concatenated_name
from stable_explore.dataset._sources import FrameRows, ParquetRows, source_key
from stable_explore.errors import EncodingError, InvalidArgumentTypeError, InvalidOptionError
from stable_explore.io.huggingface import HFRows, hf_source_features, is_hf_dataset
from stable_explore.schema import Boxes, Features
from stable_explore.schema.boxes import BOX_FORMATS

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore.dataset import CachedDataset

__all__ = ["concatenate_datasets", "from_hf", "from_pandas", "from_parquet"]


def from_hf(
    hf: Any,
    features: object = None,
    *,
    name: str | None = None,
    home: str | Path | None = None,
    box_format: str | None = "xywh",
    box_normalized: bool = False,
    **options: Unpack[BuildKwargs],
) -> CachedDataset:
    """Cache a Hugging Face ``datasets.Dataset``: features converted, images kept byte for byte.

    Parameters
    ----------
    hf:
        A ``datasets.Dataset`` (a selection, shuffle or ``select_columns`` of one too).
    features:
        Our features or ``datasets.Features`` for the columns to keep (default: all, converted from
        ``hf.features``). Label names, ``Image``, ``Array3D``, ``Value`` and lists map one to one; a
        feature with no counterpart is a :class:`~stable_explore.SchemaError` naming the column.
        A detection column (``objects``: a list of ``{bbox, category: ClassLabel, ...}`` or a dict of
        such lists) is a :class:`~stable_explore.Boxes` unless ``box_format`` is None.
    name:
        The dataset's name (default: ``hf.info.dataset_name``).
    home:
        The home to build in (as :func:`stable_explore.build` takes it; default: the current home).
    box_format:
        What a detection column's four numbers are: ``"xywh"`` (default: left, top, width, height,
        COCO's convention, as cppe-5 on the Hub stores them), ``"xyxy"`` (corners) or ``"cxcywh"``
        (centre and size). None keeps such a column as the list of dicts it is.
    box_normalized:
        Whether those numbers are fractions of the image's size (default: pixels).
    options:
        Any other option of :func:`stable_explore.build` (``description=``, ``tag=``, ...).

    Returns
    -------
    CachedDataset
        The new version (or the one built before from the same dataset). Rows are keyed by the
        dataset's ``__key__`` column when it has one (``ds.to_hf()`` writes it), else by position.
        A ``Boxes`` column keeps the feature it came in as, so ``ds.to_hf()`` gives ``datasets``
        the same feature back.

    Examples
    --------
    >>> import tempfile, datasets, stable_explore as se
    >>> hf = datasets.Dataset.from_dict({"label": [1, 0]}, features=datasets.Features(
    ...     label=datasets.ClassLabel(names=["cat", "dog"])))
    >>> ds = se.from_hf(hf, name="pets", home=tempfile.mkdtemp(), progress=False)
    >>> ds.features, ds.label_counts()
    (Features(label=ClassLabel(names=['cat', 'dog'])), {'cat': 1, 'dog': 1})
    """
    if not is_hf_dataset(hf):
        msg = f"from_hf needs a datasets.Dataset, got {type(hf).__name__}"
        raise InvalidArgumentTypeError(msg)
    if box_format is not None and box_format not in BOX_FORMATS:
        msg = f"box_format must be one of {list(BOX_FORMATS)} or None (keep lists of dicts), got {box_format!r}"
        raise InvalidOptionError(msg)
    ours = hf_source_features(hf, features, box_format=box_format, box_normalized=box_normalized)
    rows = HFRows(hf, ours)
    name = name or hf.info.dataset_name
    if not name:
        msg = "from_hf needs name= (this datasets.Dataset has no dataset_name)"
        raise InvalidArgumentTypeError(msg)
    options.setdefault("description", hf.info.description or None)
    options.setdefault("license", hf.info.license or None)
    chosen = [n for n, f in ours.items() if isinstance(f, Boxes) and not _given_boxes(features, n)]
    try:
        return _build(rows, name, home, options)
    except EncodingError as exc:
        column = exc.field
        if column is None or column not in chosen:
            raise
        others = " or ".join(repr(f) for f in BOX_FORMATS if f != box_format)
        hint = (
            f"; from_hf read column {column!r} as Boxes (format={box_format!r}, normalized={box_normalized}): "
            f"pass box_format={others} or box_normalized={not box_normalized} when its four numbers are "
            "other ones, or box_format=None to keep it as a list of dicts"
        )
        error = EncodingError(exc.reason + hint, field=exc.field, index=exc.index, key=exc.key)
        notes = getattr(exc, "__notes__", None)  # the build's note (Python 3.11+)
        if notes:
            setattr(error, "__notes__", list(notes))  # noqa: B010
        raise error from exc


def _given_boxes(features: object, column: str) -> bool:
    """Whether the caller's own features named ``column`` a Boxes (then no note about the guess)."""
    return isinstance(features, Features) and isinstance(features.get(column), Boxes)


def _build(
    rows: HFRows | ParquetRows | FrameRows | ConcatRows, name: str, home: str | Path | None, options: BuildKwargs
) -> CachedDataset:
    """Build the rows, keyed by their content so the same data is a cache hit (unless ``key=`` is given)."""
    if options.get("key") is None:
        options = {**options, "key": source_key(rows)}
    return build(rows, rows.features, name, home=home, **options)


def from_parquet(
    path: str | Path,
    features: Features | None = None,
    *,
    name: str | None = None,
    home: str | Path | None = None,
    **options: Unpack[BuildKwargs],
) -> CachedDataset:
    """Cache the rows of a Parquet file, keyed by its ``__key__`` column when it has one (else by position).

    ``ds.to_parquet`` writes ``__key__``, so the same rows build the same version.

    Parameters
    ----------
    path:
        The file.
    features:
        The columns to keep and their types. By default they come from the file: the features
        stable-explore or ``datasets`` wrote in it, else its column types (``bytes`` columns of
        image files become ``Image``); a column that fits no type is a
        :class:`~stable_explore.SchemaError` that names it.
    name:
        The dataset's name (default: the file's name without ``.parquet``).
    home:
        The home to build in (as :func:`stable_explore.build` takes it; default: the current home).
    options:
        Any other option of :func:`stable_explore.build`.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd, stable_explore as se
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"x": [1, 2, 3]}).to_parquet(folder / "numbers.parquet")
    >>> ds = se.from_parquet(folder / "numbers.parquet", home=folder / "home", progress=False)
    >>> ds.name, ds["x"]
    ('numbers', [1, 2, 3])
    """
    rows = ParquetRows(path, features)
    return _build(rows, name or Path(path).stem, home, options)


def from_pandas(
    frame: pd.DataFrame,
    features: Features | None = None,
    *,
    name: str,
    home: str | Path | None = None,
    **options: Unpack[BuildKwargs],
) -> CachedDataset:
    """Cache the rows of a pandas DataFrame, keyed by its index (when unique, of ints or text; else by position).

    ``ds.to_pandas()`` indexes the frame by the rows' keys, so the same rows build the same version.

    Parameters
    ----------
    frame:
        The rows. A ``Categorical`` column is a ``ClassLabel`` of its categories; missing values
        (``NA``, ``NaT``, a missing category) are nulls.
    features:
        The columns to keep and their types (inferred from the column dtypes when not given: bytes
        of image files become ``Image``; a column that fits no type is a
        :class:`~stable_explore.SchemaError` naming it). Image columns take bytes, paths, PIL
        images or arrays, as in any build.
    name:
        The dataset's name.
    home:
        The home to build in (as :func:`stable_explore.build` takes it; default: the current home).
    options:
        Any other option of :func:`stable_explore.build`.

    Examples
    --------
    >>> import tempfile, pandas as pd, stable_explore as se
    >>> frame = pd.DataFrame({"label": pd.Categorical(["dog", "cat"]), "size": [2.5, 1.0]})
    >>> ds = se.from_pandas(frame, name="pets", home=tempfile.mkdtemp(), progress=False)
    >>> ds.features["label"], ds[0]
    (ClassLabel(names=['cat', 'dog']), {'label': 1, 'size': 2.5})
    """
    rows = FrameRows(frame, features)
    return _build(rows, name, home, options)


def concatenate_datasets(
    dsets: Sequence[CachedDataset],
    *,
    name: str | None = None,
    keys: str = "keep",
    axis: int = 0,
    home: str | Path | None = None,
    **options: Unpack[BuildKwargs],
) -> CachedDataset:
    """The rows of ``dsets`` one after another, as a new version, as ``datasets.concatenate_datasets`` gives them.

    Parameters
    ----------
    dsets:
        Datasets (or views) with the same features; a column that differs (missing, or of another
        feature) is a :class:`~stable_explore.SchemaError` naming it and both datasets.
    name:
        The dataset the new version belongs to (default: the inputs' names joined by ``-``, then
        ``-concatenated``, so no input's ``latest`` moves).
    keys:
        Each row keeps its key (``"keep"``, default): a key found twice is a
        :class:`~stable_explore.DuplicateKeyError` naming it, both datasets and rows, before anything
        is written; when every input's keys are its running index (datasets built without keys), the
        result's keys are its running index. ``"index"`` numbers the rows 0, 1, ...; ``"prefix"``
        makes each key ``"<i>/<key>"`` (``i``: the dataset's position in ``dsets``).
    axis:
        0: rows after rows (the only way here; ``datasets``' ``axis=1``, columns beside columns, is
        ``ds.add_columns``).
    home:
        The home to build in (default: the first dataset's home).
    options:
        Any other option of :func:`stable_explore.build` (``tag=``, ``description=``, ...).

    Returns
    -------
    CachedDataset
        The new version (or the one made before from the same inputs: a cache hit). Images are
        handed over as their stored bytes, never decoded.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> a = se.build([{"x": 1}, {"x": 2}], se.Features(x=se.Value("int64")), name="a", home=home, progress=False)
    >>> b = se.build([{"x": 3}], se.Features(x=se.Value("int64")), name="b", home=home, progress=False)
    >>> both = se.concatenate_datasets([a, b], progress=False)
    >>> both.name, both["x"], both.keys()
    ('a-b-concatenated', [1, 2, 3], [0, 1, 2])
    """
    if axis != 0:
        msg = (
            f"concatenate_datasets puts rows after rows (axis=0), got axis={axis!r}; to put columns beside "
            "a dataset's columns, use ds.add_columns({name: values})"
        )
        raise InvalidOptionError(msg)
    rows = ConcatRows(dsets, keys)
    if home is None:
        home = rows.parts[0].home
    return _build(rows, name or concatenated_name(rows.parts), home, options)
