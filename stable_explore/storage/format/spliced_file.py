"""A list kept in a small JSON file beside ``_metadata.json``, which saves link and splice.

The runs of the content digest and the cell patches are both such lists: a field of the
metadata names the file (``{"file", "digest", "size"}``), says how many items it holds and
records the splices that turn them into the version's list. :class:`SplicedList` says how one
list is named and checked; it reads the field and writes it, linking the parent's file while
the splices stay under :func:`~stable_explore.storage.format.splices.rebase_limit`.

Examples
--------
>>> import tempfile, pathlib
>>> numbers = SplicedList("numbers.json", "'numbers'", "numbers", lambda v, where, path: list(v), lambda n: n)
>>> first = pathlib.Path(tempfile.mkdtemp())
>>> field = numbers.field_value(first, list(range(100)))
>>> items, parent = numbers.load(first, field, first / "_metadata.json")
>>> second = pathlib.Path(tempfile.mkdtemp())
>>> numbers.field_value(second, [*items, 100], parent)["splices"]  # the file is linked: one splice recorded
[[100, 0, [100]]]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.format.sidecars import FileRef, link_small_file, read_json_file, write_json_file
from stable_explore.storage.format.splices import Splice, apply_splices, keeps_splicing, parse_splices, splices_between

if TYPE_CHECKING:
    from stable_explore.storage.format.remote_location import RemoteLocation

__all__ = ["ParentList", "SplicedList", "SplicedRecord"]

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True)
class SplicedRecord(Generic[T]):
    """The metadata's field: the file, how many items it holds, and the splices."""

    base: FileRef
    count: int
    splices: tuple[Splice[T], ...]


@dataclass(frozen=True)
class ParentList(Generic[T]):
    """A version's file, its items, and its folder (a save links the file from there)."""

    directory: Path
    record: SplicedRecord[T]
    base: list[T]


@dataclass(frozen=True)
class SplicedList(Generic[T]):
    """One such list: its file's name, its field (for messages), the key of its count, and its items' check and form."""

    file: str
    field: str
    count_key: str
    check_items: Callable[[Any, str, Path], list[T]]
    item_json: Callable[[T], Any]

    def record_to_json(self, record: SplicedRecord[T]) -> dict[str, Any]:
        """The form ``_metadata.json`` records."""
        splices = [[index, removed, [self.item_json(i) for i in items]] for index, removed, items in record.splices]
        return {**record.base.to_json(), self.count_key: record.count, "splices": splices}

    def record_from_json(self, raw: Any, meta_path: Path) -> SplicedRecord[T]:
        """Check and type the field (the file itself is read by :meth:`load`)."""
        base = FileRef.from_json(raw, meta_path, self.field)
        assert isinstance(raw, Mapping)
        count = raw.get(self.count_key)
        if type(count) is not int or count < 0:
            msg = f"{self.field} needs {self.count_key!r}, a count, found {raw!r:.150}"
            raise CacheCorruptionError(meta_path, msg)
        return SplicedRecord(base, count, parse_splices(raw.get("splices"), self.field, meta_path, self.check_items))

    def load(
        self, directory: Path, raw: Any, meta_path: Path, remote: RemoteLocation | None = None
    ) -> tuple[list[T], ParentList[T]]:
        """The items the field gives (its file, checked, with the splices applied), and the file for a save."""
        record = self.record_from_json(raw, meta_path)
        path = directory / record.base.file
        base = self.check_items(read_json_file(directory, record.base, meta_path, remote), self.file, path)
        if len(base) != record.count:
            raise CacheCorruptionError(path, f"holds {len(base)} {self.count_key}, not {record.count}")
        return apply_splices(base, record.splices, meta_path), ParentList(directory, record, base)

    def field_value(self, out_dir: Path, items: Sequence[T], parent: ParentList[T] | None = None) -> dict[str, Any]:
        """Record ``items`` for a version being written in ``out_dir``: the field to store.

        With ``parent``, the parent's file is linked and only the splices are recorded, while they
        stay under :func:`~stable_explore.storage.format.splices.rebase_limit`; otherwise a new file is written.
        """
        if parent is not None:
            splices = splices_between(parent.base, items)
            if keeps_splicing(len(parent.base), splices, parent.record.splices):
                base = link_small_file(parent.directory, parent.record.base, out_dir, self.file)
                return self.record_to_json(SplicedRecord(base, len(parent.base), tuple(splices)))
        base = write_json_file(out_dir, self.file, [self.item_json(item) for item in items])
        return self.record_to_json(SplicedRecord(base, len(items), ()))
