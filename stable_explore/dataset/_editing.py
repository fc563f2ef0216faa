"""Edits, computed columns and the browser on a dataset, each a lazy import of the layer above that does it.

``ds.drop``, ``relabel``, ``set``, ``save`` and ``pending_edits`` (``stable_explore.versioning.edits``),
``ds.map`` and ``add_columns`` (``stable_explore.versioning.columns``) and ``ds.browse``
(``stable_explore.widgets``): mixed into ``CachedDataset`` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from stable_explore._optional import require
from stable_explore.dataset._members import DatasetMembers

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from typing_extensions import Unpack

    from stable_explore.dataset.cached_dataset import CachedDataset
    from stable_explore.dataset.map_options import MapOptions
    from stable_explore.schema import Features
    from stable_explore.versioning.edits import Draft, PendingEdits
    from stable_explore.widgets.browser import ShardBrowser

__all__ = ["EditMethods"]


class EditMethods(DatasetMembers):
    """Edits as drafts, computed columns as versions, and the browser (mixed into ``CachedDataset`` only)."""

    def _dataset(self) -> CachedDataset:
        return cast("CachedDataset", self)  # this class is mixed into CachedDataset only

    # -- edits (lazy; see stable_explore.versioning.edits) --------------------------------

    def drop(self, rows: Sequence[int] | int) -> Draft:
        """A draft without these rows; ``.save(message=...)`` writes it as a new version.

        Row numbers are positions in this dataset, also after other edits in the same chain.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]), x=se.Value("int64"))
        >>> rows = [{"label": "cat", "x": i} for i in range(4)]
        >>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> draft = ds.drop([0, 2])
        >>> len(draft), len(ds)
        (2, 4)
        >>> draft.save(message="drop two")["x"]
        [1, 3]
        """
        from stable_explore.versioning.edits import Draft

        self._check_stored_columns("drop")
        return Draft(self._dataset()).drop(rows)

    def relabel(self, changes: dict[int, str | int], *, column: str | None = None) -> Draft:
        """A draft with rows given new classes: ``ds.relabel({42: "dog"})``.

        ``changes`` maps row positions to a class name or index; ``column`` names the
        ClassLabel column when there are several.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]), x=se.Value("int64"))
        >>> rows = [{"label": "cat", "x": i} for i in range(4)]
        >>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> ds.relabel({1: "dog"}).save(message="1 is a dog").label_counts()
        {'cat': 3, 'dog': 1}
        """
        from stable_explore.versioning.edits import Draft

        self._check_stored_columns("relabel")
        return Draft(self._dataset()).relabel(changes, column=column)

    def set(self, row: int, field: str, value: object) -> Draft:
        """A draft with one field of one row changed: a value, a class, a list, an array or an image."""
        from stable_explore.versioning.edits import Draft

        self._check_stored_columns("set")
        return Draft(self._dataset()).set(row, field, value)

    # -- computed columns (lazy; see stable_explore.versioning.columns) -----------------

    def map(self, function: Callable[..., Any], **options: Unpack[MapOptions]) -> CachedDataset:
        """A new version with the columns ``function`` returns, added (or replacing those of the same name).

        As in Hugging Face ``datasets``: ``function`` gets an example (a dict, decoded in this
        dataset's format) and returns a dict of new values; with ``batched=True`` it gets a batch
        (a dict of lists, ``batch_size`` rows) and returns a dict of lists. Only the new columns
        are written (a column group beside this version's shards, which the new version links).

        A map is a cache decision like a build, keyed by this version and the function's
        fingerprint (its code, the globals and code it reaches, the files they name): running it
        again returns the version it made, and ``build_info`` says why it was reused or recomputed.

        Parameters
        ----------
        function:
            ``example -> dict`` (or ``batch -> dict of lists`` with ``batched=True``).
        options:
            The keyword options below, declared once as :class:`~stable_explore.dataset.map_options.MapOptions`
            (a misspelt one is a type error, and an :class:`~stable_explore.InvalidArgumentTypeError` when run).
        batched, batch_size:
            Whether ``function`` takes batches (default ``False``), and how many rows each batch (or task)
            has (default 1000).
        num_proc, executor:
            Run the batches in ``num_proc`` worker processes, or on any
            ``concurrent.futures.Executor`` (a Dask client's, Ray's); the result is the same version.
            By default the batches run in this process.
        features:
            Features of the returned columns; by default a column it replaces keeps its feature,
            and a new one is inferred from its values.
        message, tag:
            Recorded with the new version; ``tag`` is also pointed at it.
        force:
            Compute again even when this map was done before (default ``False``).
        progress:
            Show a progress bar (default ``True``).
        set_latest:
            Also point the dataset's ``latest`` at the new version. By default, as in ``datasets``,
            ``map`` returns a new dataset and leaves what ``se.load(name)`` opens as it was; the
            result's repr says ``latest is <name>@<id>`` while it is not the latest.

        On a view (``ds[10:20].map(fn)``) the function runs on the view's rows only, and the result is
        those rows, in the view's order, with the new columns: the view's rows are first saved as a
        version of their own (the new version's parent; its shard files are linked, not copied).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(3)], se.Features(x=se.Value("int64")),
        ...               name="numbers", home=tempfile.mkdtemp(), progress=False)
        >>> def plus(batch):
        ...     return {"next": [x + 1 for x in batch["x"]]}
        >>> more = ds.map(plus, batched=True, progress=False)
        >>> more["next"], more.metadata["parent"] == ds.version
        ([1, 2, 3], True)
        >>> more.latest_version == ds.version  # se.load("numbers") still opens ds
        True
        >>> ds[1:].map(plus, batched=True, progress=False)["next"]
        [2, 3]
        """
        from stable_explore.versioning.columns import map_rows

        return map_rows(self._dataset(), function, **options)

    def add_columns(
        self,
        columns: Mapping[str, Any],
        *,
        features: Features | Mapping[str, Any] | None = None,
        message: str | None = None,
        tag: str | None = None,
        progress: bool = True,
        set_latest: bool = True,
    ) -> CachedDataset:
        """A new version with ``columns`` (name -> one value per row) added, or replacing those of the same name.

        For values computed elsewhere: model predictions, embeddings (a 2-D numpy array becomes a
        fixed-length ``Sequence``). Only the new columns are written: one float column over a
        million rows writes about 8 MB. ``features`` gives their features; by default a replaced
        column keeps its own and a new one is inferred from the values. Like a save, it moves the
        dataset's ``latest`` to the new version (``set_latest=False`` leaves it).

        Examples
        --------
        >>> import tempfile, numpy as np, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(3)], se.Features(x=se.Value("int64")),
        ...               name="numbers", home=tempfile.mkdtemp(), progress=False)
        >>> scored = ds.add_columns({"score": np.array([0.5, 0.25, 1.0]), "emb": np.zeros((3, 2))}, progress=False)
        >>> scored.features["emb"], scored[0]["score"]
        (Sequence(feature=Value(dtype='float64'), length=2), 0.5)
        """
        from stable_explore.versioning.columns import add_columns

        return add_columns(
            self._dataset(),
            columns,
            features=features,
            message=message,
            tag=tag,
            progress=progress,
            set_latest=set_latest,
        )

    @property
    def pending_edits(self) -> PendingEdits:
        """Edits not yet saved: none, on a dataset (drafts have them)."""
        from stable_explore.versioning.edits import PendingEdits

        return PendingEdits()

    def save(self, message: str | None = None, **options: Any) -> CachedDataset:
        """Save these rows (a view: only its rows, in its order) as a new version whose parent is this one.

        ``options`` are those of :meth:`~stable_explore.versioning.Draft.save` (``tag``, ``name``,
        ``description``, ``license``, ``metadata``, ``progress``, ``lock_timeout``).

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]), x=se.Value("int64"))
        >>> rows = [{"label": "cat", "x": i} for i in range(4)]
        >>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> first_two = ds[:2].save(message="the first two", tag="small", progress=False)
        >>> len(first_two), first_two.metadata["parent"] == ds.version
        (2, True)
        """
        from stable_explore.versioning.edits import Draft

        self._check_stored_columns("save")
        return Draft(self._dataset()).save(message, **options)

    # -- browsing ------------------------------------------------------------

    def browse(
        self, *, page_size: int = 48, thumb_size: int = 128, similar_by: str | None = None, evaluation: object = None
    ) -> ShardBrowser:
        """A notebook widget: thumbnails with label names, per shard, filtered, with detail view and selection.

        Needs the ``lab`` extra (anywidget). ``browser.selected`` and
        ``browser.selection()`` hand the selected rows back to Python. ``similar_by`` names what the
        detail pane's "Similar rows" compares (an embedding column, a perceptual hash column, an
        image column, ``"phash"`` or ``"dhash"``; default: an embedding column, else a hash column,
        else the pHash of the images). ``evaluation`` takes what ``se.evaluate(self, ...)`` returned: boxes
        are drawn as true positives, false positives and false negatives, and buttons show the rows with
        a false positive, a false negative, or the most confident mistakes first (docs/evaluation.md).
        """
        require("anywidget", "lab", "the shard browser")
        from stable_explore.widgets.browser import ShardBrowser

        return ShardBrowser(
            self._dataset(), page_size=page_size, thumb_size=thumb_size, similar_by=similar_by, evaluation=evaluation
        )
