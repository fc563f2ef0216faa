"""``se.from_lance`` and ``se.export``: other tools' formats in and out (the methods they call live on the dataset).

Examples
--------
>>> import tempfile, pathlib, stable_explore as se
>>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
>>> ds = se.build([{"x": 1}, {"x": 2}], se.Features(x=se.Value("int64")), name="n", home=home, progress=False)
>>> copy = se.export("n", out / "n_default_train", layout="stable-datasets", home=home)
>>> [row["x"] for row in se.load(copy)]
[1, 2]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from typing_extensions import Unpack

from stable_explore.api.building import BuildKwargs, load
from stable_explore.dataset import CachedDataset, export_layout

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = ["export", "from_lance"]


def from_lance(
    path: str | Path,
    features: Features | None = None,
    *,
    name: str | None = None,
    home: str | Path | None = None,
    **options: Unpack[BuildKwargs],
) -> CachedDataset:
    """Cache the rows of a Lance dataset: one ``ds.to_lance`` wrote, stable-datasets' ``lance-rows`` cache, or any.

    The rows are read once into an Arrow mirror under ``<local home>/.foreign`` (as ``se.load(path)``
    reads a Lance folder; the Lance folder is never written), then built as a version of ``name``
    in ``home``, as :func:`stable_explore.from_parquet` builds a file. Rows are keyed by the
    dataset's ``__key__`` column when it has one (``ds.to_lance`` writes it), so the same rows build
    the same version; else by position.

    Parameters
    ----------
    path:
        The Lance dataset's folder (for stable-datasets, the cache folder holding ``_metadata.json``).
    features:
        Class names and types, for a dataset that does not carry ours (stable-datasets' caches);
        checked against a stable-datasets cache's ``schema_fingerprint``.
    name:
        The dataset's name (default: the folder's name without ``.lance``).
    home:
        The home to build in (as :func:`stable_explore.build` takes it; default: the current home);
        the mirror goes in its ``.foreign`` folder when it is a local folder.
    options:
        Any other option of :func:`stable_explore.build` (``description=``, ``tag=``, ...).

    Notes
    -----
    Needs ``pylance``: ``pip install 'stable-explore[lance]'``. ``se.load(path)`` opens the mirror
    alone, read-only and keyed by position, without building a version.

    Examples
    --------
    >>> import tempfile, pathlib, stable_explore as se
    >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
    >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
    >>> ds = se.build([("a.png", {"label": "dog"})], features, name="pets", home=home, progress=False)
    >>> back = se.from_lance(ds.to_lance(out / "pets.lance"), home=home, progress=False)
    >>> back.name, back.keys(), back.version == ds.version
    ('pets', ['a.png'], True)
    """
    from stable_explore.api.building import build
    from stable_explore.dataset._sources import source_key
    from stable_explore.errors import NotACacheError
    from stable_explore.io.lance import LanceRows
    from stable_explore.storage.read.lance_rows import is_lance_dataset

    folder = Path(path).expanduser()
    if not is_lance_dataset(folder):
        msg = "from_lance reads a Lance dataset (a folder with _versions/); se.load opens other caches"
        raise NotACacheError(folder, msg)
    mirror = load(folder, features=features, home=home)
    rows = LanceRows(mirror, folder)
    if options.get("key") is None:
        options = {**options, "key": source_key(rows)}
    default = folder.name[: -len(".lance")] if folder.name.endswith(".lance") else folder.name
    return build(rows, rows.features, name or default, home=home, **options)


def export(
    ref: str | Path | CachedDataset,
    path: str | Path,
    *,
    layout: str | None = None,
    home: str | Path | None = None,
    overwrite: bool = False,
    **options: object,
) -> Path:
    """Write a copy of a version (or a dataset) in another tool's layout; see :meth:`CachedDataset.export`.

    ``layout`` is ``"stable-datasets"`` (the ``arrow-shards`` layout its current reader opens),
    ``"stable-datasets-lance"``, ``"stable-datasets-video"`` (its ``lance-video-frames`` layout), ``"lance"``,
    ``"mds"``, ``"parquet"``, ``"csv"``, ``"jsonl"`` or ``"json"``. Without it, the suffix of ``path`` names a
    file layout (``.parquet``, ``.csv``, ``.jsonl``, ``.json``), as for ``stable-explore export --to``; a
    folder layout must be named. ``overwrite=True`` replaces a folder an earlier export wrote, never another.

    Examples
    --------
    >>> import tempfile, pathlib, stable_explore as se
    >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
    >>> ds = se.build([("a", {"x": 1})], se.Features(x=se.Value("int64")), name="n", home=home, progress=False)
    >>> print(se.export(ds, out / "n.csv").read_text().strip())
    key,x
    a,1
    """
    chosen = export_layout(path, layout)  # before anything is read: a path that names no layout is refused
    ds = ref if isinstance(ref, CachedDataset) else load(ref, home=home)
    return ds.export(path, layout=chosen, overwrite=overwrite, **options)
