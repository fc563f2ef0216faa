"""How a dataset shows itself: ``repr``, Rich's repr and the notebook's HTML card, from one cheap summary.

A mixin of ``CachedDataset``. The summary reads the version's metadata only (no shard is read,
no image decoded); the latest version is the one this process last saw, looked up at most every
few seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, TypedDict, cast

from stable_explore._units import format_size
from stable_explore.dataset._members import DatasetMembers

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["DatasetSummary", "Reprs"]


class DatasetSummary(TypedDict):
    """What every repr of a dataset shows, read from its metadata alone."""

    ref: str  # "name@version"
    rows: int  # this dataset's (a view's own)
    total_rows: int  # its version's
    shards: int
    size: str  # the version's bytes, for people ("1.2 MB")
    view: bool
    extent: str  # rows, shards and size in one phrase
    latest: str | None  # the latest version this process last saw (None outside a catalog)


class Reprs(DatasetMembers):
    """``CachedDataset``'s ``__repr__``, ``__rich_repr__`` and ``_repr_html_``."""

    def _summary(self) -> DatasetSummary:
        """The one cheap summary every repr is made from (no image is decoded)."""
        total = self._meta.num_rows
        shards = f"{self._meta.num_shards} shard" + ("" if self._meta.num_shards == 1 else "s")
        size = format_size(self._meta.nbytes)
        if self.is_view:
            # A view's rows live in its version's shards: their size is the version's, not the view's own.
            extent = f"{len(self):,} of {total:,} rows (view) from {shards} of {size}"
        else:
            extent = f"{len(self):,} rows, {shards}, {size}"
        return {
            "ref": f"{self._name or self.cache_dir.name}@{self._version}",
            "rows": len(self),
            "total_rows": total,
            "shards": self._meta.num_shards,
            "size": size,
            "view": self.is_view,
            "extent": extent,
            "latest": self._latest_seen(),
        }

    def _latest_seen(self) -> str | None:
        """:attr:`latest_version` for a repr: as this process last saw it, read at most every few seconds."""
        if self._name is None or self._home is None:
            return None
        from stable_explore.catalog.latest_seen import seen_latest

        return seen_latest(self._home, self._name, lambda: self.latest_version)

    def __repr__(self) -> str:
        s = self._summary()
        return f"CachedDataset({s['ref']}: {s['extent']}{_latest_text(s, self._name)})"

    def __rich_repr__(self) -> Iterator[tuple[str, object]]:
        s = self._summary()
        yield "ref", s["ref"]
        yield "rows", s["rows"]
        yield "shards", s["shards"]
        yield "size", s["size"]
        if s["latest"] is not None:
            yield "latest", s["latest"] == self._version

    def _repr_html_(self) -> str:
        from stable_explore.display.card import dataset_card

        return dataset_card(cast("CachedDataset", self), self._summary())  # mixed into CachedDataset only


def _latest_text(summary: DatasetSummary, name: str | None) -> str:
    """``", latest"``, or ``", latest is pets@<id>"`` when another version is the latest ("" outside a catalog)."""
    latest = summary.get("latest")
    if latest is None:
        return ""
    return ", latest" if summary["ref"].endswith(f"@{latest}") else f", latest is {name}@{latest}"
