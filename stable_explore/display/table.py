"""A small read-only table for listings (versions, datasets): text, HTML and pandas views."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from stable_explore._units import format_size

if TYPE_CHECKING:
    import pandas as pd

_TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$")
_UNBROKEN = {"size", "created", "rows", "version"}


def _short_time(value: str) -> str:
    """An ISO timestamp to the second, as people read it: ``2026-11-25 14:03:12 UTC``.

    Examples
    --------
    >>> _short_time("2026-11-25T14:03:12.123456+00:00")
    '2026-11-25 14:03:12 UTC'
    """
    match = _TIMESTAMP.match(value)
    if match is None:
        return value
    day, clock, _, zone = match.groups()
    zone = " UTC" if zone in ("Z", "+00:00", "+0000") else (f" {zone}" if zone else "")
    return f"{day} {clock}{zone}"


class Table(Sequence[dict[str, Any]]):
    """Rows of plain values with named columns; prints as text, renders as escaped HTML.

    Examples
    --------
    >>> t = Table(["name", "rows"], [{"name": "pets", "rows": 3}])
    >>> print(t)
    name  rows
    pets     3
    >>> t[0]["rows"]
    3
    """

    def __init__(self, columns: Sequence[str], rows: Sequence[dict[str, object]], *, title: str = "") -> None:
        self.columns = list(columns)
        self.rows = [dict(r) for r in rows]
        self.title = title

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:  # type: ignore[override]
        return self.rows[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def column(self, name: str) -> list[Any]:
        """The values of one column, top to bottom."""
        return [row.get(name) for row in self.rows]

    def to_pandas(self) -> pd.DataFrame:
        """The table as a DataFrame (one column per column, in order)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)

    @staticmethod
    def _cell(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, (list, tuple)):
            return ", ".join(str(v) for v in value)
        if isinstance(value, str) and _TIMESTAMP.match(value):
            return _short_time(value)
        return str(value)

    def __str__(self) -> str:
        cells = [[self._cell(row.get(c)) for c in self.columns] for row in self.rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        numeric = [bool(self.rows) and all(isinstance(r.get(c), (int, float)) for r in self.rows) for c in self.columns]

        def line(values: list[str]) -> str:
            parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
            return "  ".join(parts).rstrip()

        out = [self.title] if self.title else []
        out.append(line(self.columns))
        out.extend(line(r) for r in cells)
        if not self.rows:
            out.append("(none)")
        return "\n".join(out)

    def __repr__(self) -> str:
        return str(self)

    def _td(self, value: object, column: str) -> str:
        """One HTML cell: sizes, numbers and times never wrap ("408.6 KiB" on one line)."""
        text = html.escape(self._cell(value))
        keep = (
            column in _UNBROKEN
            or isinstance(value, (int, float))
            or (isinstance(value, str) and _TIMESTAMP.match(value))
        )
        return f"<td style='white-space:nowrap'>{text}</td>" if keep else f"<td>{text}</td>"

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th>{esc(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(self._td(row.get(c), c) for c in self.columns) + "</tr>" for row in self.rows)
        caption = f"<caption>{esc(self.title)}</caption>" if self.title else ""
        return f'<table class="se-table">{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def listing_table(columns: Sequence[str], rows: Sequence[dict[str, Any]], *, title: str = "") -> Table:
    """A catalog listing as a :class:`Table`: a ``bytes`` column is shown as a readable ``size``.

    Each row keeps its ``bytes`` for code that sums or sorts them.

    Examples
    --------
    >>> print(listing_table(["name", "bytes"], [{"name": "pets", "bytes": 2048}]))
    name  size
    pets  2.0 KiB
    """
    shown = ["size" if column == "bytes" else column for column in columns]
    sized = [{**row, "size": format_size(row["bytes"])} if "bytes" in row else dict(row) for row in rows]
    return Table(shown, sized, title=title)
