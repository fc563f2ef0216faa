"""Selection, flags and pending edits of the shard browser, as methods of :class:`ShardBrowser` (a mixin).

What a click, shift-click or ctrl-click selects (in the order the filter shows rows), what ``x`` flags,
and the :class:`~stable_explore.versioning.edits.Draft` that drop and relabel build until ``save`` writes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stable_explore.errors import InvalidOptionError
from stable_explore.versioning.edits import Draft
from stable_explore.widgets._members import BrowserMembers

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.widgets._state import Opened

__all__ = ["SelectionMixin"]


class SelectionMixin(BrowserMembers):
    """Row navigation, selection, flags and the pending edits of the shard browser."""

    def _place(self, row: int) -> int:
        """Where ``row`` stands in the rows shown, or where it would stand (row order) if filtered out."""
        position = self._state.place(row)
        if position >= 0 or not self._state.in_row_order:
            return max(position, 0)
        return self._state.insertion(row)

    def neighbour(self, row: int, step: int) -> int:
        """The row ``step`` places from ``row`` in the current filter (clamped at the ends)."""
        rows = self._state.rows
        position = self._state.place(row)
        if position < 0:
            return int(rows[0]) if len(rows) else row
        return int(rows[min(max(0, position + step), len(rows) - 1)])

    # -- selection --------------------------------------------------------------

    def click(self, row: int, *, shift: bool = False, toggle: bool = False) -> None:
        """What a click does: select one row; shift: a range in filter order; ctrl/cmd: toggle."""
        row = int(row)
        state = self._state
        if shift and state.anchor is not None:
            lo, hi = sorted((self._place(state.anchor), self._place(row)))
            span = state.shown(lo, hi + 1).tolist()
            self.selected = list(dict.fromkeys([*self.selected, *span]))
            return
        state.anchor = row
        if toggle:
            current = list(self.selected)
            self.selected = [r for r in current if r != row] if row in current else [*current, row]
        else:
            self.selected = [row]

    def select_page(self) -> None:
        """Add every row of the current page to the selection."""
        self.selected = list(dict.fromkeys([*self.selected, *self.page_rows().tolist()]))

    def clear_selection(self) -> None:
        """Select nothing."""
        self.selected = []
        self._state.anchor = None

    def flag_selection(self) -> None:
        """Flag the selected rows (or unflag them, if all are flagged already)."""
        chosen = set(self.selected)
        if not chosen:
            return
        flagged = set(self.flagged)
        self.flagged = sorted(flagged - chosen) if chosen <= flagged else sorted(flagged | chosen)

    # -- edits ------------------------------------------------------------------

    @property
    def draft(self) -> Draft | None:
        """The pending edits made in the browser (None when there are none)."""
        return self._state.draft

    def _set_draft(self, draft: Draft | None) -> None:
        self._state.draft = draft
        edits = draft.pending_edits if draft is not None else None
        self.dropped = sorted(edits.dropped) if edits else []
        column = self.label_column
        pending = sorted(edits.relabelled.items()) if edits else []
        self.pending_labels = {str(row): code for (row, name), code in pending if name == column}
        self.pending = edits.summary() if edits else ""
        self._push_detail_marks()

    def drop_flagged(self) -> None:
        """Make a pending edit that drops every flagged row (``save`` writes it)."""
        if not self.flagged:
            self.status = "nothing flagged to drop"
            return
        base = self._state.draft or Draft(self._state.opened.ds)
        self._set_draft(base.drop(list(self.flagged)))
        self.flagged = []

    def relabel_selection(self, label: str | int) -> None:
        """Make a pending edit that gives every selected row this class."""
        if not self.label_column:
            self.status = "this dataset has no ClassLabel column"
            return
        if not self.selected:
            self.status = "select rows to relabel"
            return
        base = self._state.draft or Draft(self._state.opened.ds)
        self._set_draft(base.relabel(dict.fromkeys(self.selected, label), column=self.label_column))

    def discard(self) -> None:
        """Forget the pending edits."""
        self._set_draft(None)

    def _browse_saved(self, ds: CachedDataset, opened: Opened | None = None) -> None:
        """After a save: no draft, selection or flags; browse ``ds`` (as ``opened`` when given), refiltered once."""
        state = self._state
        self._set_draft(None)
        self.selected = []
        self.flagged = []
        state.reopen(ds)
        if opened is not None:
            state.opened = opened
        state.ready = False  # one refilter (and one page) for all these changes, not one each
        try:
            for name, value in self._described().items():
                setattr(self, name, value)
            self.shard = -1
        finally:
            state.ready = True
        self._refilter()

    def save(self, message: str | None = None, **options: Any) -> CachedDataset:
        """Write the pending edits as a new version, and browse it. Returns the new version."""
        state = self._state
        if state.draft is None:
            msg = "no pending edits to save (drop flagged rows or relabel a selection first)"
            raise InvalidOptionError(msg)
        old = state.opened.ds
        was_view = old.is_view
        detail_key = old.select([state.detail_row]).keys()[0] if state.detail_row is not None else None
        summary = self.pending
        saved = state.draft.save(message, **{"progress": False, **options})
        self._browse_saved(saved)
        # one short line: which version, how many rows, what changed (its build_info has the long story)
        if saved.version == old.version:
            self.status = f"nothing to save: the edits change no row of {old.ref}"
        else:
            view = " of the view browsed" if was_view else ""
            self.status = f"saved {saved.ref}: {len(saved):,} rows{view} ({summary})"
        self._refresh_detail(detail_key)
        self._update_snapshot()
        return saved
