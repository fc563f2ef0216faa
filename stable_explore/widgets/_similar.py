"""The detail pane's "Similar rows", and the way back to the grid it replaced, as a mixin of the shard browser.

What rows are similar by is chosen once per version from the schema
(:func:`stable_explore.signals.similarity`): an embedding column, else a perceptual hash column, else
the pHash of the images, computed on the first click and kept for the version. The grid then shows
the row and its nearest neighbours, closest first (``show_rows``); ``back()`` puts back the grid
that was shown before (its filters, sort, subset and page).

The page's button does not wait for that first hashing: :meth:`SimilarMixin.start_similar` runs it on
a thread of its own, with the rows hashed so far in the synced ``similar_progress`` (the page's
progress line) and :meth:`SimilarMixin.cancel_similar` to stop it; a stopped hashing keeps nothing. The
hashes are kept in the home as a signal of the version (:mod:`stable_explore.signals.cache`), so the
next click, a new kernel, or another browser of the version does not hash again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stable_explore.errors import InvalidOptionError, RowIndexError, StableExploreError
from stable_explore.signals import Similarity, similarity
from stable_explore.widgets._errors import error_status
from stable_explore.widgets._members import BrowserMembers

if TYPE_CHECKING:
    import numpy as np


__all__ = ["SIMILAR_ROWS", "Grid", "SimilarMixin"]

SIMILAR_ROWS = 8  # neighbours shown beside the row
_BACK_KEPT = 20  # grids "back" can return to


class _Cancelled(Exception):
    """The page's Cancel stopped the hashing (raised inside it, between batches)."""


@dataclass(frozen=True)
class Grid:
    """What the grid showed: filters, sort, the rows of ``show_rows`` and their title, and the page."""

    shard: int
    label_filter: list[int]
    search: str
    field_filters: list[dict[str, Any]]
    sort_by: str
    sort_desc: bool
    subset: np.ndarray | None
    subset_title: str
    page: int


class SimilarMixin(BrowserMembers):
    """The detail pane's similar rows (``show_similar``) and ``back`` for the shard browser."""

    def _similar_described(self) -> dict[str, str]:
        """``similar_by`` (what similar rows are judged by, in words) or ``similar_reason`` (why there are none)."""
        state = self._state
        try:
            state.similarity = similarity(state.opened.ds, state.similar_choice)
        except StableExploreError as exc:  # (a wrong similar_by= was refused when the browser was made)
            state.similarity = None
            return {"similar_by": "", "similar_reason": str(exc)}
        return {"similar_by": state.similarity.title, "similar_reason": ""}

    def similar(self, row: int, k: int = SIMILAR_ROWS) -> np.ndarray:
        """The ``k`` rows most like ``row`` (positions in the browsed dataset), closest first, ``row`` left out."""
        found = self._similarity()
        ds = self._state.opened.ds
        if not 0 <= int(row) < len(ds):
            msg = f"row {row} is out of range for {len(ds):,} rows of {ds.ref}"
            raise RowIndexError(msg)
        return found.nearest(ds, int(row), k)

    def show_similar(self, row: int, k: int = SIMILAR_ROWS) -> None:
        """Show ``row`` and the ``k`` rows most like it, closest first (what the detail pane's button does).

        The grid shown before is kept: ``back()`` (the status line's "back") shows it again.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(emb=se.Sequence(se.Value("float32"), length=2))
        >>> ds = se.build([{"emb": [v, 0]} for v in (0, 10, 1, 11, 3)], features, name="e",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> browser = ds.browse(page_size=24)
        >>> browser.show_similar(1, k=2)
        >>> browser.page_rows().tolist(), browser.subset
        ([1, 3, 4], "row 1 and the 2 rows most like it by the embedding 'emb'")
        >>> browser.back()
        >>> browser.num_rows, browser.subset
        (5, '')
        """
        found = self.similar(row, k)
        title = f"row {int(row)} and the {len(found)} rows most like it by {self._similarity().title}"
        self._remember_grid()
        self.show_rows([int(row), *found.tolist()], title)

    def back(self) -> None:
        """Show the grid shown before the last "similar rows" (its filters, sort, subset and page)."""
        state = self._state
        if not state.grids:
            msg = "no grid to go back to: back() follows show_similar()"
            raise InvalidOptionError(msg)
        grid = state.grids.pop()
        state.ready = False  # one refilter for all these changes
        try:
            self.shard = grid.shard
            self.label_filter = grid.label_filter
            self.search = grid.search
            self.field_filters = grid.field_filters
            self.sort_by = grid.sort_by
            self.sort_desc = grid.sort_desc
            state.subset = grid.subset
            self.subset = grid.subset_title
            self.can_go_back = bool(state.grids)
        finally:
            state.ready = True
        self._refilter()
        self.page = grid.page

    def start_similar(self, row: int) -> bool:
        """Hash the images for similar rows on a thread of its own if they are not at hand; True if it started.

        What the detail pane's button does first. Where the rows' embedding or hashes are at hand
        (read, or hashed before) this returns False and :meth:`show_similar` answers at once.
        Otherwise the images are hashed on a thread, batch by batch, with ``similar_progress``
        (``{"state": "running", "row", "done", "total", "by"}``) following it and the kernel free
        for the page's other requests; ``"done"`` when the hashes are kept (the page then asks for
        the similar rows again), ``"cancelled"`` after :meth:`cancel_similar`.

        Examples
        --------
        >>> import tempfile, numpy as np, stable_explore as se
        >>> rows = [{"image": np.full((8, 8), v, dtype=np.uint8)} for v in (0, 90, 180)]
        >>> ds = se.build(rows, se.Features(image=se.Image()), name="g", home=tempfile.mkdtemp(), progress=False)
        >>> browser = ds.browse(page_size=24)
        >>> browser.start_similar(0)
        True
        >>> browser.wait_similar()
        >>> browser.similar_progress["state"], browser.start_similar(0)
        ('done', False)
        """
        found = self._similarity()
        ds = self._state.opened.ds
        if not 0 <= int(row) < len(ds):
            msg = f"row {row} is out of range for {len(ds):,} rows of {ds.ref}"
            raise RowIndexError(msg)
        if found.kind != "image" or found.is_kept(ds):
            return False
        running = self._hashing
        if running is not None and running.is_alive():
            return True  # one hashing at a time; the page's button waits for it
        cancel = threading.Event()
        progress: dict[str, Any] = {"state": "running", "row": int(row), "done": 0, "total": len(ds), "by": found.title}
        self.similar_progress = dict(progress)

        def on_progress(done: int, total: int) -> None:
            if cancel.is_set():
                raise _Cancelled
            progress.update(done=int(done), total=int(total))
            self.similar_progress = dict(progress)

        def hash_images() -> None:
            try:
                found.values(ds, on_progress)
            except _Cancelled:
                progress["state"] = "cancelled"
                self.status = (
                    f"similar rows: hashing cancelled at {progress['done']:,} / {progress['total']:,} rows; "
                    "nothing kept"
                )
            except Exception as exc:  # noqa: BLE001 - the status line shows it and the log keeps it
                progress["state"] = "error"
                self.status = error_status(exc, "shard browser", "similar rows")
            else:
                progress.update(state="done", done=progress["total"])
            self.similar_progress = dict(progress)

        self._cancel_hashing = cancel
        self._hashing = threading.Thread(target=hash_images, name="stable-explore similar rows", daemon=True)
        self._hashing.start()
        return True

    def cancel_similar(self) -> None:
        """Stop the hashing :meth:`start_similar` began, after the batch under way; nothing of it is kept."""
        cancel = getattr(self, "_cancel_hashing", None)
        if cancel is not None:
            cancel.set()

    def wait_similar(self, timeout: float | None = None) -> None:
        """Wait until the hashing :meth:`start_similar` began has ended (done, cancelled or failed)."""
        running = self._hashing
        if running is not None:
            running.join(timeout)

    _hashing: threading.Thread | None = None
    _cancel_hashing: threading.Event | None = None

    def _similarity(self) -> Similarity:
        found = self._state.similarity
        if found is None:
            raise InvalidOptionError(self.similar_reason or "nothing to find similar rows by")
        return found

    def _remember_grid(self) -> None:
        state = self._state
        grid = Grid(
            shard=int(self.shard),
            label_filter=list(self.label_filter),
            search=str(self.search),
            field_filters=[dict(spec) for spec in self.field_filters],
            sort_by=str(self.sort_by),
            sort_desc=bool(self.sort_desc),
            subset=None if state.subset is None else state.subset.copy(),
            subset_title=str(self.subset),
            page=int(self.page),
        )
        state.grids = [*state.grids[-(_BACK_KEPT - 1) :], grid]
        self.can_go_back = True
