"""Diff two versions (``se.compare``): O(1) when their ids match, otherwise metadata, schema, rows, labels and shards.

Rows are matched by their stored key and compared by their stored content
hash, so a diff never decodes an image; only the rows that changed are read
to say which fields changed.

Examples
--------
>>> import tempfile, stable_explore as se
>>> features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
>>> ds = se.build([{"label": "cat"}] * 4, features, name="pets", home=tempfile.mkdtemp(), progress=False)
>>> fixed = ds.relabel({1: "dog"}).drop([3]).save(message="fix")
>>> se.compare(ds, fixed).summary()
'+0 -1 ~1 rows; label: cat->dog x1'
>>> se.compare(ds, ds).identical
True
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from typing_extensions import TypedDict

from stable_explore.schema import Boxes, ClassLabel, Features, class_name
from stable_explore.versioning._shared import differing_patches
from stable_explore.versioning.box_diff import BoxChange, box_changes
from stable_explore.versioning.row_diff import RowDiff, RowDiffDict, RowKey, jsonable, row_diff

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore.dataset import CachedDataset

__all__ = ["Diff", "Gallery", "compare"]

_METADATA_FIELDS = ("description", "license", "metadata")


class ClassChange(TypedDict, total=False):
    """How a ClassLabel column's classes changed: names renamed (old -> new), added and removed."""

    renamed: dict[str, str]
    added: list[str]
    removed: list[str]


class SchemaDiff(TypedDict, total=False):
    """:attr:`Diff.schema`: columns added, removed or retyped (``[old repr, new repr]``), classes changed."""

    columns_added: list[str]
    columns_removed: list[str]
    columns_retyped: dict[str, list[str]]
    classes: dict[str, ClassChange]


class ShardDiff(TypedDict, total=False):
    """:attr:`Diff.shards`: pairs ``[file of a, file of b]`` read whole alike, or held by both; the others.

    Empty when a side has no shard digests (a stable-datasets v1 cache).
    """

    identical: list[list[int]]
    only_a: list[int]
    only_b: list[int]
    shared: list[list[int]]


class LabelDiff(TypedDict):
    """One ClassLabel column in :attr:`Diff.labels`: counts per class before and after, and the moves."""

    before: dict[str, int]
    after: dict[str, int]
    relabelled: dict[tuple[object, object], int]  # (old class, new class) -> rows


class LabelDiffDict(TypedDict):
    """A :class:`LabelDiff` as JSON: the moves as ``[old, new, rows]`` triples."""

    before: dict[str, int]
    after: dict[str, int]
    relabelled: list[list[object]]


class DiffDict(TypedDict):
    """:meth:`Diff.to_dict`: the whole comparison as JSON-ready values."""

    a: str
    b: str
    identical: bool
    summary: str
    metadata: dict[str, list[object]]
    schema: SchemaDiff
    rows: RowDiffDict
    labels: dict[str, LabelDiffDict]
    boxes: dict[str, dict[str, dict[str, object]]]
    shards: ShardDiff


@dataclass
class Diff:
    """The difference between two versions (``a`` -> ``b``).

    Attributes
    ----------
    identical:
        Same version id (decided without reading data), or same rows, schema and metadata.
    metadata:
        ``{field: (old, new)}`` for description, license and user metadata.
    schema:
        Columns added, removed or retyped; class names added, removed or renamed.
    rows:
        :class:`RowDiff`: added / removed / changed keys, and the fields that changed.
    labels:
        Per ClassLabel column: counts per class before and after, and a relabel
        matrix ``{(old, new): count}``. Counted when first asked for (a whole-column read of
        ``a``; ``b``'s counts follow from the row diff), so ``compare`` itself costs what changed.
    shards:
        ``identical``: pairs of shard files both versions read whole and unchanged (by digest);
        ``shared``: pairs of files both versions hold (by digest), however much of each they read
        (a save's "reused N of the parent's" counts these); ``only_a`` / ``only_b``: the files of
        each side not in ``identical``.
    """

    a: str
    b: str
    identical: bool
    metadata: dict[str, tuple[object, object]] = field(default_factory=dict)
    schema: SchemaDiff = field(default_factory=lambda: SchemaDiff())
    rows: RowDiff = field(default_factory=RowDiff)
    shards: ShardDiff = field(default_factory=lambda: ShardDiff())
    datasets: tuple[CachedDataset, CachedDataset] | None = field(default=None, repr=False, compare=False)
    _labels: dict[str, LabelDiff] | None = field(default=None, repr=False, compare=False)

    @property
    def labels(self) -> dict[str, LabelDiff]:
        """Per ClassLabel column: ``before`` and ``after`` counts per class and the ``relabelled`` matrix."""
        if self._labels is None:
            self._labels = _label_diff(*self.datasets, self.rows) if self.datasets and not self.identical else {}
        return self._labels

    @labels.setter
    def labels(self, value: dict[str, LabelDiff]) -> None:
        self._labels = value

    @property
    def boxes(self) -> dict[str, dict[RowKey, BoxChange]]:
        """Per Boxes column, the changed rows' box changes by key: added, removed, moved (IoU), relabelled.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> features = se.Features(objects=se.Boxes(names=["cat", "dog"]))
        >>> rows = [{"objects": {"bbox": [[0, 0, 10, 10], [20, 20, 5, 5]], "category": ["cat", "cat"]}}]
        >>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
        >>> fixed = ds.relabel_boxes({0: {1: "dog"}}).drop_boxes({0: [0]}).save(message="fix")
        >>> se.compare(ds, fixed).boxes["objects"][0].describe()
        'box 1 cat->dog; -box 0 cat'
        """
        if self.datasets is None or self.identical:
            return {}
        a, b = self.datasets
        out: dict[str, dict[RowKey, BoxChange]] = {}
        for column, feature in a.features.items():
            other = b.features.get(column)
            if not (isinstance(feature, Boxes) and isinstance(other, Boxes)):
                continue
            changes = {}
            for key in self.rows.changed:
                cell = self.rows.changed_fields.get(key, {}).get(column)
                if cell is not None:
                    change = box_changes(cell[0], cell[1], feature, other)
                    if change:
                        changes[key] = change
            if changes:
                out[column] = changes
        return out

    def summary(self) -> str:
        """One line: ``"+0 -5 ~10 rows; label: cat->dog x2 ..."``."""
        if self.identical:
            return f"identical ({self.a} == {self.b})"
        parts = [f"+{len(self.rows.added)} -{len(self.rows.removed)} ~{len(self.rows.changed)} rows"]
        relabelled = _relabelled(*self.datasets, self.rows) if self.datasets else {}
        for column, moved in relabelled.items():  # from the row diff alone: no counts read
            moves = sorted(moved.items(), key=lambda item: (-item[1], item[0]))
            if moves:
                shown = ", ".join(f"{old}->{new} x{count}" for (old, new), count in moves[:5])
                more = f", ... {len(moves) - 5} more" if len(moves) > 5 else ""
                parts.append(f"{column}: {shown}{more}")
        for column, changes in self.boxes.items():
            total = BoxChange()
            for change in changes.values():
                total.added += change.added
                total.removed += change.removed
                total.moved += change.moved
                total.relabelled += change.relabelled
            parts.append(f"{column}: boxes {total.summary()} in {len(changes)} row(s)")
        if self.schema:
            parts.append("schema changed")
        if self.metadata:
            parts.append("metadata: " + ", ".join(sorted(self.metadata)))
        if self.rows.repeated_keys:
            parts.append("repeated keys in " + " and ".join(sorted(self.rows.repeated_keys)))
        return "; ".join(parts)

    def to_dict(self) -> DiffDict:
        """Everything, JSON-ready."""
        return {
            "a": self.a,
            "b": self.b,
            "identical": self.identical,
            "summary": self.summary(),
            "metadata": {k: [jsonable(v[0]), jsonable(v[1])] for k, v in self.metadata.items()},
            "schema": jsonable(self.schema),
            "rows": self.rows.to_dict(),
            "labels": {
                column: {
                    "before": info["before"],
                    "after": info["after"],
                    "relabelled": [[old, new, n] for (old, new), n in sorted(info["relabelled"].items())],
                }
                for column, info in self.labels.items()
            },
            "boxes": {
                column: {str(key): change.to_dict() for key, change in changes.items()}
                for column, changes in self.boxes.items()
            },
            "shards": self.shards,
        }

    def to_json(self) -> str:
        """The whole comparison as indented JSON (what ``stable-explore diff --json`` prints)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def to_pandas(self) -> pd.DataFrame:
        """One row per added, removed or changed row: key, change, positions, and old -> new per field."""
        import pandas as pd

        records = []
        groups = (
            ("added", self.rows.added, self.rows.added_rows),
            ("removed", self.rows.removed, self.rows.removed_rows),
            ("changed", self.rows.changed, self.rows.changed_rows),
        )
        for kind, keys, rows in groups:
            for key, (row_a, row_b) in zip(keys, rows, strict=True):
                record: dict[str, object] = {"key": key, "change": kind, "row_a": row_a, "row_b": row_b}
                fields = self.rows.changed_fields.get(key, {})
                record["fields"] = ", ".join(fields)
                for name, (old, new) in fields.items():
                    record[f"{name}_a"] = "<bytes>" if isinstance(old, bytes) else old
                    record[f"{name}_b"] = "<bytes>" if isinstance(new, bytes) else new
                records.append(record)
        return pd.DataFrame.from_records(records, columns=None if records else ["key", "change", "row_a", "row_b"])

    def __repr__(self) -> str:
        return f"Diff({self.a} -> {self.b}: {self.summary()})"

    def __str__(self) -> str:
        from stable_explore.display.card import shard_line  # the UI layer, as the card renders it

        lines = [f"{self.a} -> {self.b}", self.summary()]
        for name, (old, new) in sorted(self.metadata.items()):
            lines.append(f"  metadata {name}: {old!r} -> {new!r}")
        for what, items in self.schema.items():
            lines.append(f"  schema {what}: {items}")
        for column, info in self.labels.items():
            changed = {k: (info["before"].get(k, 0), info["after"].get(k, 0)) for k in info["after"] | info["before"]}
            moved = {k: v for k, v in changed.items() if v[0] != v[1]}
            if moved:
                lines.append(f"  {column} counts: " + ", ".join(f"{k} {a}->{b}" for k, (a, b) in sorted(moved.items())))
        if self.shards:
            lines.append(f"  {shard_line(self.shards)}")
        for side, keys in self.rows.repeated_keys.items():
            lines.append(f"  repeated keys in {side}: {keys[:10]}{' ...' if len(keys) > 10 else ''}")
        boxes = self.boxes
        for key in self.rows.changed[:20]:
            fields = self.rows.changed_fields.get(key, {})
            shown = ", ".join(
                f"{f}: {boxes[f][key].describe()}" if key in boxes.get(f, {}) else f"{f}: {_short(o)} -> {_short(n)}"
                for f, (o, n) in fields.items()
            )
            lines.append(f"  ~ {key}: {shown}")
        for key in self.rows.removed[:10]:
            lines.append(f"  - {key}")
        for key in self.rows.added[:10]:
            lines.append(f"  + {key}")
        return "\n".join(lines)

    def gallery(self, change: str = "removed", page: int = 0, page_size: int = 24) -> Gallery:
        """One page of the ``"removed"``, ``"added"`` or ``"changed"`` rows, shown as thumbnails with their keys.

        The HTML of a diff shows the first page of each; this shows any other.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(30)], se.Features(x=se.Value("int64")),
        ...               name="n", home=tempfile.mkdtemp(), progress=False)
        >>> diff = se.compare(ds, ds.drop(list(range(28))).save())
        >>> page = diff.gallery("removed", page=1, page_size=24)
        >>> page.keys, page.num_pages
        ([24, 25, 26, 27], 2)
        """
        from stable_explore.errors import InvalidOptionError

        groups = {
            "removed": (self.rows.removed, self.rows.removed_rows),
            "added": (self.rows.added, self.rows.added_rows),
            "changed": (self.rows.changed, self.rows.changed_rows),
        }
        if change not in groups:
            msg = f"change must be one of {sorted(groups)}, got {change!r}"
            raise InvalidOptionError(msg)
        if page_size < 1:
            msg = f"page_size must be at least 1, got {page_size}"
            raise InvalidOptionError(msg)
        keys, rows = groups[change]
        num_pages = max(1, -(-len(keys) // page_size))
        page = min(max(0, page), num_pages - 1)
        chosen = slice(page * page_size, (page + 1) * page_size)
        return Gallery(self, change, keys[chosen], rows[chosen], page, num_pages, len(keys))

    def _repr_html_(self) -> str:
        from stable_explore.display.card import diff_card

        return diff_card(self)


@dataclass
class Gallery:
    """One page of a diff's removed, added or changed rows (see :meth:`Diff.gallery`); renders as thumbnails."""

    diff: Diff = field(repr=False)
    change: str
    keys: list[RowKey]
    rows: list[tuple[int, int]] = field(repr=False)
    page: int
    num_pages: int
    total: int

    def _repr_html_(self) -> str:
        from stable_explore.display.card import gallery_html

        return gallery_html(self)


def _short(value: object) -> str:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


# --- computing a diff ------------------------------------------------------------


def compare(a: CachedDataset, b: CachedDataset) -> Diff:
    """The difference from version (or view) ``a`` to ``b``; ``se.compare`` also takes refs such as ``"pets@clean"``.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> v1 = se.build([{"x": 1}, {"x": 2}], se.Features(x=se.Value("int64")), name="n", home=home, progress=False)
    >>> v2 = se.build([{"x": 1}, {"x": 3}], se.Features(x=se.Value("int64")), name="n", home=home, progress=False)
    >>> d = compare(v1, v2)
    >>> d.rows.changed, d.rows.changed_fields[1]
    ([1], {'x': (2, 3)})
    """
    left, right = a, b
    diff = Diff(left.ref, right.ref, identical=False, datasets=(left, right))
    has_ids = all(ds.cache_meta.version_metadata.content_digest for ds in (left, right))
    if has_ids and left.version == right.version and not left.is_view and not right.is_view:
        diff.identical = True
        diff.rows = RowDiff(unchanged=len(left))  # the same version: every row is unchanged
        return diff
    diff.metadata = _metadata_diff(left, right)
    diff.schema = _schema_diff(left.features, right.features)
    diff.shards = _shard_diff(left, right)
    diff.rows = row_diff(left, right)
    diff.identical = not (diff.metadata or diff.schema or diff.rows.added or diff.rows.removed or diff.rows.changed)
    return diff


def _metadata_diff(a: CachedDataset, b: CachedDataset) -> dict[str, tuple[object, object]]:
    record_a, record_b = a.cache_meta.version_metadata, b.cache_meta.version_metadata
    out: dict[str, tuple[object, object]] = {}
    for name in _METADATA_FIELDS:
        old, new = getattr(record_a, name), getattr(record_b, name)
        if name == "metadata":
            old, new = dict(old), dict(new)
        if old != new:
            out[name] = (old, new)
    return out


def _schema_diff(a: Features, b: Features) -> SchemaDiff:
    out: SchemaDiff = {}
    added = [n for n in b if n not in a]
    removed = [n for n in a if n not in b]
    retyped = {
        n: [repr(a[n]), repr(b[n])]
        for n in a
        if n in b and a[n] != b[n] and not (isinstance(a[n], ClassLabel) and isinstance(b[n], ClassLabel))
    }
    if added:
        out["columns_added"] = added
    if removed:
        out["columns_removed"] = removed
    if retyped:
        out["columns_retyped"] = retyped
    for name in a:
        old, new = a[name], b.get(name)
        if isinstance(old, ClassLabel) and isinstance(new, ClassLabel) and old.names != new.names:
            old_names, new_names = list(old.names or ()), list(new.names or ())
            renamed = {
                o: n
                for o, n in zip(old_names, new_names, strict=False)
                if o != n and o not in new_names and n not in old_names
            }
            change: ClassChange = {}
            if renamed:
                change["renamed"] = renamed
            added = [n for n in new_names if n not in old_names and n not in renamed.values()]
            if added:
                change["added"] = added
            removed = [o for o in old_names if o not in new_names and o not in renamed]
            if removed:
                change["removed"] = removed
            out.setdefault("classes", {})[name] = change
    return out


def _whole_files(ds: CachedDataset) -> dict[str, int]:
    """Digest -> file index for the shard files a version reads whole, exactly once."""
    meta = ds.cache_meta
    hashes = meta.shard_hashes or []
    uses: dict[int, list[tuple[int, int]]] = {}
    for shard, start, count in meta.segments:
        uses.setdefault(shard, []).append((start, count))
    return {hashes[i]: i for i, used in uses.items() if i < len(hashes) and used == [(0, meta.shard_row_counts[i])]}


def _shard_diff(a: CachedDataset, b: CachedDataset) -> ShardDiff:
    """Shard files both versions read whole and unchanged (by digest); the others of each side."""
    if not a.cache_meta.shard_hashes or not b.cache_meta.shard_hashes:
        return {}
    whole_a, whole_b = _whole_files(a), _whole_files(b)
    patched = differing_patches(a.cache_meta, b.cache_meta)  # read differently from the same bytes
    identical = sorted([i, whole_b[h]] for h, i in whole_a.items() if h in whole_b and h not in patched)
    matched_a = {i for i, _ in identical}
    matched_b = {j for _, j in identical}
    files_b = {h: j for j, h in enumerate(b.cache_meta.shard_hashes)}
    shared = sorted([i, files_b[h]] for i, h in enumerate(a.cache_meta.shard_hashes) if h in files_b)
    return {
        "identical": identical,
        "only_a": [i for i in range(len(a.cache_meta.shard_hashes)) if i not in matched_a],
        "only_b": [j for j in range(len(b.cache_meta.shard_hashes)) if j not in matched_b],
        "shared": shared,
    }


def _label_columns(a: CachedDataset, b: CachedDataset) -> list[tuple[str, ClassLabel, ClassLabel]]:
    """The ClassLabel columns both sides have: (name, a's feature, b's feature)."""
    out = []
    for name, feature in a.features.items():
        other = b.features.get(name)
        if isinstance(feature, ClassLabel) and isinstance(other, ClassLabel):
            out.append((name, feature, other))
    return out


def _relabelled(a: CachedDataset, b: CachedDataset, rows: RowDiff) -> dict[str, Counter[tuple[object, object]]]:
    """Per ClassLabel column, ``{(old class, new class): rows}`` of the changed rows (from the row diff)."""
    out: dict[str, Counter[tuple[object, object]]] = {}
    for name, _, _ in _label_columns(a, b):
        moved: Counter[tuple[object, object]] = Counter()
        for key in rows.changed:
            change = rows.changed_fields.get(key, {}).get(name)
            if change is not None:
                moved[change] += 1
        out[name] = moved
    return out


def _label_diff(a: CachedDataset, b: CachedDataset, rows: RowDiff) -> dict[str, LabelDiff]:
    out: dict[str, LabelDiff] = {}
    relabelled = _relabelled(a, b, rows)
    for name, feature, other in _label_columns(a, b):
        before = a.label_counts(name) if len(a) else dict.fromkeys(feature.names or (), 0)
        if list(feature.names or ()) == list(other.names or ()) and not rows.repeated_keys:
            after = _counts_after(a, b, name, before, rows, relabelled[name])  # O(changed): no second read
        else:  # classes renamed or rows matched by repeated keys: count b's column itself
            after = b.label_counts(name) if len(b) else dict.fromkeys(other.names or (), 0)
        out[name] = {"before": before, "after": after, "relabelled": dict(relabelled[name])}
    return out


def _counts_after(
    a: CachedDataset,
    b: CachedDataset,
    name: str,
    before: dict[str, int],
    rows: RowDiff,
    moved: Counter[tuple[object, object]],
) -> dict[str, int]:
    """``b``'s counts per class: ``a``'s, less the removed rows' classes, plus the added rows', plus the moves."""
    after = dict(before)
    for (old, new), count in moved.items():
        for label, step in ((old, -count), (new, count)):
            if label in after:
                after[label] += step
    for side, positions, step in (
        (a, [row_a for row_a, _ in rows.removed_rows], -1),
        (b, [row_b for _, row_b in rows.added_rows], 1),
    ):
        if positions:
            feature = side.features[name]
            assert isinstance(feature, ClassLabel)
            for value in side[positions].arrow_column(name).to_pylist():
                label = class_name(feature, value) if value is not None else None
                if label in after:
                    after[label] += step
    return after
