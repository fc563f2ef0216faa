"""Duplicate groups: rows whose images are byte for byte equal, and rows whose images look alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore._arrays import distinct
from stable_explore.errors import ColumnNotFoundError
from stable_explore.signals._rows import image_column, result_table
from stable_explore.signals.grouping import hamming_groups
from stable_explore.signals.images import perceptual_hashes
from stable_explore.signals.perceptual import popcount
from stable_explore.storage.format.hashing import cell_hashes, row_hashes

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from stable_explore.dataset import CachedDataset


def exact_duplicates(ds: CachedDataset, columns: str | list[str] | None = None) -> pa.Table:
    """Groups of rows whose ``columns`` hold equal values (default: the image column, by its stored bytes).

    No image is decoded: equal values are found by a 64-bit hash of each cell (the one the stored row
    hashes are made of), so this reads the column's bytes once. ``columns="row"`` compares whole rows
    by their stored row hash (every column, labels too; free to read).

    Returns
    -------
    pyarrow.Table
        One row per member of a group of two or more: ``row``, ``key``, ``group`` (the group's first
        row), ``group_size`` and ``hash``; largest groups first, then by group and row.

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import exact_duplicates
    >>> images = [np.full((4, 4), v, dtype=np.uint8) for v in (1, 2, 1, 1)]
    >>> features = se.Features(image=se.Image(), label=se.ClassLabel(names=["a", "b"]))
    >>> rows = [{"image": im, "label": i % 2} for i, im in enumerate(images)]
    >>> ds = se.build(rows, features, name="dups", home=tempfile.mkdtemp(), progress=False)
    >>> found = exact_duplicates(ds)
    >>> found.column("row").to_pylist(), found.column("group").to_pylist(), found.column("group_size").to_pylist()
    ([0, 2, 3], [0, 0, 0], [3, 3, 3])
    """
    if columns == "row":
        hashes = ds.row_hashes()
    else:
        names = [image_column(ds, None)] if columns is None else [columns] if isinstance(columns, str) else columns
        missing = [name for name in names if name not in ds.features]
        if missing:
            msg = f"no column {missing[0]!r} to compare; columns are {list(ds.features)}"
            raise ColumnNotFoundError(msg)
        arrays = [ds.arrow_column(name) for name in names]
        hashes = cell_hashes(arrays[0]) if len(arrays) == 1 else row_hashes(arrays)
    _, first, inverse, counts = np.unique(hashes, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    return _groups_table(ds, first[inverse], counts[inverse], {"hash": pa.array(hashes, type=pa.uint64())})


def near_duplicates(
    ds: CachedDataset,
    *,
    threshold: int = 4,
    method: str = "phash",
    column: str | None = None,
    hashes: pa.Table | None = None,
    num_proc: int | None = None,
    executor: Executor | None = None,
    cache: bool = True,
    progress: bool = True,
) -> pa.Table:
    """Groups of rows whose images look alike: perceptual hashes at most ``threshold`` bits apart.

    Parameters
    ----------
    ds
        The dataset (or a view).
    threshold
        Differing bits (of 64) that still count as alike: 0 finds only equal hashes; 4 (the default)
        catches resized and re-encoded copies; 8-10 small crops too, with more look-alikes that are not
        copies. Changing it only regroups: pass ``hashes=`` to skip decoding again.
    method
        ``"phash"`` (DCT signs; the default: few look-alikes that are not copies) or ``"dhash"``
        (gradient signs; faster, but many unrelated images of one kind, such as digits on black,
        share most of their bits).
    column
        The image column (default: the first ``Image`` column).
    hashes
        A :func:`perceptual_hashes` result for ``ds`` to group instead of hashing again.
    num_proc, executor, cache, progress
        As in :func:`~stable_explore.signals.perceptual_hashes`: worker processes (or any
        ``concurrent.futures.Executor``) that decode and hash, the hashes kept in the home for the next
        call, a bar of rows hashed.

    Returns
    -------
    pyarrow.Table
        One row per member of a group of two or more: ``row``, ``key``, ``group`` (the group's first
        row), ``group_size``, ``hash`` and ``distance`` (bits from the group's first row's hash);
        largest groups first. Grouping links any two rows within ``threshold`` (single linkage) and
        never compares all pairs (multi-index hashing; see :mod:`stable_explore.signals.grouping`).

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import near_duplicates
    >>> from PIL import Image as PILImage
    >>> y, x = np.mgrid[0:64, 0:64]
    >>> blob = (255 * np.exp(-((x - 20) ** 2 + (y - 30) ** 2) / 200)).astype(np.uint8)
    >>> bigger = np.asarray(PILImage.fromarray(blob).resize((96, 96)))
    >>> rows = [{"image": blob}, {"image": blob.T.copy()}, {"image": bigger}]
    >>> ds = se.build(rows, se.Features(image=se.Image()), name="near", home=tempfile.mkdtemp(), progress=False)
    >>> near_duplicates(ds, threshold=6).select(["row", "group", "distance"]).to_pylist()
    [{'row': 0, 'group': 0, 'distance': 0}, {'row': 2, 'group': 0, 'distance': 4}]
    """
    if hashes is None:
        hashes = perceptual_hashes(
            ds, column=column, method=method, num_proc=num_proc, executor=executor, cache=cache, progress=progress
        )
    elif hashes.num_rows != len(ds):
        msg = f"hashes= has {hashes.num_rows} rows for a dataset of {len(ds)}: pass perceptual_hashes(ds) of this ds"
        raise ColumnNotFoundError(msg)
    else:
        image_column(ds, column)
    column_of = hashes.column("hash").combine_chunks()
    valid = ~column_of.is_null().to_numpy(zero_copy_only=False)
    values = column_of.fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint64)
    rows = np.flatnonzero(valid)
    groups = np.arange(len(values), dtype=np.int64)  # a row without an image is alone
    groups[rows] = rows[hamming_groups(values[rows], threshold)]
    sizes = np.bincount(groups, minlength=len(values))[groups]
    distance = popcount(values ^ values[groups])
    extra = {"hash": pa.array(values, type=pa.uint64()), "distance": pa.array(distance, type=pa.int64())}
    return _groups_table(ds, groups, sizes, extra)


def extra_copies(*groups: pa.Table) -> list[int]:
    """The rows to drop to keep one row of each duplicate group: every member but the group's first row.

    Groups from several tables (exact and near duplicates) that share rows are merged first, so one row
    of each set of copies stays.

    Examples
    --------
    >>> import pyarrow as pa
    >>> exact = pa.table({"row": [0, 4], "group": [0, 0]})
    >>> near = pa.table({"row": [4, 7, 2, 9], "group": [4, 4, 2, 2]})
    >>> extra_copies(exact, near)  # keeps 0 (of 0, 4, 7) and 2 (of 2, 9)
    [4, 7, 9]
    """
    from stable_explore.signals.grouping import components

    rows = np.concatenate([t.column("row").to_numpy() for t in groups]) if groups else np.zeros(0, np.int64)
    firsts = np.concatenate([t.column("group").to_numpy() for t in groups]) if groups else np.zeros(0, np.int64)
    if len(rows) == 0:
        return []
    ids, inverse = np.unique(np.concatenate([rows, firsts]), return_inverse=True)
    inverse = inverse.ravel()
    linked = components(len(ids), inverse[: len(rows)], inverse[len(rows) :])
    keep = {int(ids[root]) for root in distinct(linked)}  # ids are sorted: a part's smallest is its first row
    return sorted(int(r) for r in set(rows.tolist()) if int(r) not in keep)


def _groups_table(ds: CachedDataset, groups: np.ndarray, sizes: np.ndarray, extra: dict[str, pa.Array]) -> pa.Table:
    """The members of groups of two or more, largest groups first (then by first row, then row)."""
    members = np.flatnonzero(sizes > 1)
    order = np.lexsort((members, groups[members], -sizes[members]))
    members = members[order]
    take = pa.array(members, type=pa.int64())
    columns = {
        "group": pa.array(groups[members], type=pa.int64()),
        "group_size": pa.array(sizes[members], type=pa.int64()),
        **{name: values.take(take) for name, values in extra.items()},
    }
    return result_table(ds, members, columns)
