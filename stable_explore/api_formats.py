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
from typing import TYPE_CHECKING, Any

from stable_explore.api import load
from stable_explore.dataset import CachedDataset, export_layout

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = ["export", "from_lance"]


def from_lance(path: str | Path, *, features: Features | None = None, home: str | Path | None = None) -> CachedDataset:
    """Open a Lance dataset read-only: one ``ds.to_lance`` wrote, stable-datasets' ``lance-rows`` cache, or any other.

    The same as ``se.load(path)`` for a Lance folder: its rows are read once into an Arrow mirror
    under ``home/.foreign`` (default: the local home's), and the Lance folder is never written.

    Parameters
    ----------
    path:
        The Lance dataset's folder (for stable-datasets, the cache folder holding ``_metadata.json``).
    features:
        Class names and types, for a dataset that does not carry ours (stable-datasets' caches);
        checked against a stable-datasets cache's ``schema_fingerprint``.
    home:
        A local catalog home whose ``.foreign`` folder keeps the mirror.

    Notes
    -----
    Needs ``pylance``: ``pip install 'stable-explore[lance]'``.

    Examples
    --------
    >>> import tempfile, pathlib, stable_explore as se
    >>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
    >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
    >>> ds = se.build([{"label": "dog"}], features, name="pets", home=home, progress=False)
    >>> se.from_lance(ds.to_lance(out / "pets.lance"), home=home).features == features
    True
    """
    return load(Path(path), features=features, home=home)


def export(
    ref: str | Path | CachedDataset,
    path: str | Path,
    *,
    layout: str | None = None,
    home: str | Path | None = None,
    overwrite: bool = False,
    **options: Any,
) -> Path:
    """Write a copy of a version (or a dataset) in another tool's layout; see :meth:`CachedDataset.export`.

    ``layout`` is ``"stable-datasets"`` (the ``arrow-shards`` layout its current reader opens),
    ``"stable-datasets-lance"``, ``"lance"``, ``"mds"``, ``"parquet"``, ``"csv"``, ``"jsonl"`` or
    ``"json"``. Without it, the suffix of ``path`` names a file layout (``.parquet``, ``.csv``,
    ``.jsonl``, ``.json``), as for ``stable-explore export --to``; a folder layout must be named.
    ``overwrite=True`` replaces a folder an earlier export wrote, never another.

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
