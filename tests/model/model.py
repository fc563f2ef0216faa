"""The oracle of the state machine: a plain-Python model of the rows of every version, the refs and ``latest``.

Nothing here imports stable_explore: the model says what a home must hold after each operation,
computed from the operations alone (what was built, edited, tagged, collected and copied).

Examples
--------
>>> home = HomeModel()
>>> rows = (("k1", Row(0, 1, 5, "a", 2, (1, 2))),)
>>> home.publish("d", "v1", rows, reused=False)
>>> home.refs["d"]["latest"], home.rows("d", "v1")[0][1].x
('v1', 5)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

LABELS = ["cat", "dog", "bird"]
FLAGS = ["x", "y"]
CLASS_NAMES = {"label": LABELS, "flag": FLAGS}
SCALARS = ("x", "s")
COLUMNS = ("label", "flag", "x", "s", "image", "seq")
GRACE_SECONDS = 60.0  # stable_explore.catalog.maintenance.gc.GRACE_SECONDS: a version a build reused is kept this long


@dataclass(frozen=True)
class Row:
    """One row as the model holds it: class indices, an int, a string, an image (its palette index), a list."""

    label: int
    flag: int
    x: int
    s: str
    image: int
    seq: tuple[int, ...] = ()

    def get(self, column: str) -> Any:
        return getattr(self, column)


Rows = tuple[tuple[str, Row], ...]
"""A version's rows in order: (key, row)."""


@dataclass
class Draft:
    """Edits pending on one version (row positions are positions in that version)."""

    name: str
    origin: str
    dropped: frozenset[int] = frozenset()
    relabelled: dict[tuple[int, str], int] = field(default_factory=dict)  # (position, column) -> class
    values: dict[tuple[int, str], Any] = field(default_factory=dict)  # (position, column) -> value
    origin_gone: bool = False  # gc removed the origin after the draft began

    def changes_nothing(self, origin_rows: Rows) -> bool:
        """What the library treats as no save at all: no drop, no set, and relabels to the class a row has only."""
        if self.dropped or self.values:
            return False
        return all(origin_rows[p][1].get(c) == code for (p, c), code in self.relabelled.items())

    def apply(self, origin_rows: Rows) -> Rows:
        out = []
        for position, (key, row) in enumerate(origin_rows):
            if position in self.dropped:
                continue
            changes = {c: v for (p, c), v in [*self.relabelled.items(), *self.values.items()] if p == position}
            out.append((key, replace(row, **changes) if changes else row))
        return tuple(out)


@dataclass
class HomeModel:
    """What one home holds: versions' rows by dataset, refs, creation order, and builds' reuse marks."""

    versions: dict[str, dict[str, Rows]] = field(default_factory=dict)
    refs: dict[str, dict[str, str]] = field(default_factory=dict)
    created: dict[tuple[str, str], int] = field(default_factory=dict)  # creation order (created_at)
    reused: dict[tuple[str, str], float] = field(default_factory=dict)  # when a build was last handed it

    def live(self) -> list[tuple[str, str]]:
        return sorted((name, v) for name, versions in self.versions.items() for v in versions)

    def rows(self, name: str, version: str) -> Rows:
        return self.versions[name][version]

    def add(self, name: str, version: str, rows: Rows, created: int) -> bool:
        """Hold ``version`` (a new one keeps ``created``); True when it was not there yet."""
        held = self.versions.setdefault(name, {})
        if version in held:
            assert held[version] == rows, f"{name}@{version} came back with other rows than it holds"
            return False
        held[version] = rows
        self.created[(name, version)] = created
        return True

    def publish(self, name: str, version: str, rows: Rows, *, reused: bool, created: int | None = None) -> None:
        """A build or a save gave ``version``: it is held, and ``latest`` points at it."""
        self.add(name, version, rows, created if created is not None else next_created())
        if reused:
            self.reused[(name, version)] = time.monotonic()
        self.refs.setdefault(name, {})["latest"] = version

    def gc_removes(self, name: str | None, keep: int, *, grace: bool) -> tuple[set[str], set[str]]:
        """(what gc must remove, what it may remove or keep: reused just about ``GRACE_SECONDS`` ago)."""
        must, may = set(), set()
        now = time.monotonic()
        for dataset in [name] if name is not None else sorted(self.versions):
            held = self.versions.get(dataset, {})
            by_age = sorted(held, key=lambda v: self.created[(dataset, v)], reverse=True)
            protected = set(self.refs.get(dataset, {}).values()) | set(by_age[:keep])
            for version in by_age:
                if version in protected:
                    continue
                age = now - self.reused.get((dataset, version), -1e9)
                if grace and age < GRACE_SECONDS - 5:
                    continue
                (may if grace and age < GRACE_SECONDS + 5 else must).add(f"{dataset}@{version}")
        return must, may

    def remove(self, removed: set[str]) -> None:
        for entry in removed:
            dataset, _, version = entry.partition("@")
            del self.versions[dataset][version]
            self.created.pop((dataset, version), None)
            self.reused.pop((dataset, version), None)

    def copy_in(self, source: HomeModel, name: str, version: str) -> None:
        """A push or pull of ``name@version`` from ``source``: files, tags pointing at it, ``latest`` only forward."""
        self.add(name, version, source.rows(name, version), source.created[(name, version)])
        refs = self.refs.setdefault(name, {})
        for tag, pointed in source.refs.get(name, {}).items():
            if pointed == version and tag != "latest":
                refs[tag] = version
        current = refs.get("latest")
        theirs = source.created[(name, version)]
        if current is None or (current != version and self.created[(name, current)] < theirs):
            refs["latest"] = version


_counter = [0]


def next_created() -> int:
    """A creation stamp later than every one before (the model's ``created_at``)."""
    _counter[0] += 1
    return _counter[0]


def decoded(column: str, value: Any) -> Any:
    """The value ``compare`` shows for a model value: class names for ClassLabel columns."""
    if column in CLASS_NAMES:
        return CLASS_NAMES[column][value]
    return value


def row_diff(a: Rows, b: Rows) -> tuple[set[str], set[str], dict[str, set[str]]]:
    """(added keys, removed keys, changed key -> columns that changed) from ``a`` to ``b`` (keys are unique)."""
    left, right = dict(a), dict(b)
    added = set(right) - set(left)
    removed = set(left) - set(right)
    changed = {}
    for key in set(left) & set(right):
        columns = {c for c in COLUMNS if left[key].get(c) != right[key].get(c)}
        if columns:
            changed[key] = columns
    return added, removed, changed
