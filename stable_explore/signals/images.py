"""Per-image signals: statistics and perceptual hashes, one row per dataset row, in row order."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore.signals._rows import check_executor, check_num_proc, image_column, map_images, result_table
from stable_explore.signals.cache import cached_signal
from stable_explore.signals.perceptual import BATCH_FUNCTIONS, REVISIONS, check_method
from stable_explore.signals.stats import COLUMNS, STATS_REVISION, stats_batch

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Executor

    from stable_explore.dataset import CachedDataset


def image_stats(
    ds: CachedDataset,
    *,
    column: str | None = None,
    num_proc: int | None = None,
    executor: Executor | None = None,
    cache: bool = True,
    progress: bool = True,
) -> pa.Table:
    """Width, height, aspect, brightness, contrast, blur, channels and file size of every image.

    Parameters
    ----------
    ds
        The dataset (or a view of it).
    column
        The image column (default: the first ``Image`` column).
    num_proc
        Processes that decode images, this one among them: N - 1 workers, each reading its rows from the cache
        itself, while this process takes runs of rows too.
    executor
        Instead: any :class:`concurrent.futures.Executor` (a Dask client's ``get_executor()``, Ray's)
        whose workers read runs of rows from the cache; the result equals the serial one.
    cache
        Keep the result in the home and read it back next time (same version, rows and column; see
        :mod:`stable_explore.signals.cache`); False computes afresh and keeps nothing.
    progress
        A bar of rows measured (over 1,024 rows); Ctrl-C stops it with nothing kept.

    Returns
    -------
    pyarrow.Table
        One row per row of ``ds``, in order: ``row``, ``key``, then the statistics. Brightness and
        contrast are the grey image's mean and standard deviation in 0..1; ``blur`` is the variance of
        its Laplacian (0..255 scale: low means blurred or flat); ``file_size`` is the stored bytes.
        A row without an image has zeros and NaNs. ``.to_pandas()`` sorts and filters it.

    Notes
    -----
    An image over 4 megapixels (:data:`~stable_explore.signals.stats.STATS_MAX_PIXELS`) is measured on
    a reduced copy (a JPEG decoded at 1/2 to 1/8 scale, then a whole-factor box filter), so one huge
    image costs megabytes, not a gigabyte; width, height, channels and file size stay the stored
    image's, brightness and contrast move by about 0.01, and blur reads the reduced image.

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import image_stats
    >>> rows = [{"image": np.full((4, 6), v, dtype=np.uint8)} for v in (0, 255)]
    >>> ds = se.build(rows, se.Features(image=se.Image()), name="flat", home=tempfile.mkdtemp(), progress=False)
    >>> image_stats(ds).select(["row", "width", "height", "brightness", "blur"]).to_pylist()[1]
    {'row': 1, 'width': 6, 'height': 4, 'brightness': 1.0, 'blur': 0.0}
    """
    name = image_column(ds, column)
    check_num_proc(num_proc)
    check_executor(executor)

    def compute() -> pa.Table:
        values = map_images(ds, name, stats_batch, num_proc, executor=executor, progress=progress, verb="measuring")
        return result_table(ds, _rows(ds), {key: values[key] for key in COLUMNS})

    params = {"column": name, "revision": STATS_REVISION}
    return cached_signal(ds, "image_stats", params, compute, cache=cache)


def perceptual_hashes(
    ds: CachedDataset,
    *,
    column: str | None = None,
    method: str = "phash",
    num_proc: int | None = None,
    executor: Executor | None = None,
    cache: bool = True,
    progress: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
) -> pa.Table:
    """The 64-bit perceptual hash of every image (``phash``, the default, or ``dhash``), for near-duplicate search.

    Each image is decoded only as far as its grey thumbnail needs (a JPEG at 1/2 to 1/8 scale, see
    :mod:`stable_explore.signals.perceptual`), and the hashes are taken over stacks of thumbnails.
    ``num_proc``, ``executor``, ``cache`` and ``progress`` are as in :func:`image_stats`: the result is
    kept in the home, so a second call, or a new kernel's, reads it back. ``on_progress(rows hashed,
    rows in all)`` is called after each batch (the browser's progress line); an exception it raises
    stops the hashing with nothing kept.

    Returns
    -------
    pyarrow.Table
        ``row``, ``key``, ``hash`` (uint64; null for a row without an image), in row order.

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import perceptual_hashes
    >>> ramp = np.tile(np.arange(0, 256, 8, dtype=np.uint8), (32, 1))
    >>> rows = [{"image": ramp}, {"image": ramp[:, ::-1]}]
    >>> ds = se.build(rows, se.Features(image=se.Image()), name="ramps", home=tempfile.mkdtemp(), progress=False)
    >>> [hex(h) for h in perceptual_hashes(ds, method="dhash").column("hash").to_pylist()]
    ['0xffffffffffffffff', '0x0']
    """
    name = image_column(ds, column)
    check_method(method)
    check_num_proc(num_proc)
    check_executor(executor)

    def compute() -> pa.Table:
        fn = BATCH_FUNCTIONS[method]
        values = map_images(
            ds, name, fn, num_proc, executor=executor, progress=progress, verb=f"{method} of", on_progress=on_progress
        )
        hashes = pa.array(values["hash"], type=pa.uint64(), mask=~values["valid"])
        return result_table(ds, _rows(ds), {"hash": hashes})

    params = {"column": name, "method": method, "revision": REVISIONS[method]}
    return cached_signal(ds, "perceptual_hashes", params, compute, cache=cache)


def _rows(ds: CachedDataset) -> np.ndarray:
    return np.arange(len(ds), dtype=np.int64)
