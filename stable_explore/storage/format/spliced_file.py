"""A list kept in a small JSON file beside ``_metadata.json``, which saves link and splice.

The runs of the content digest and the cell patches are both such lists: a field of the
metadata names the file (``{"file", "digest", "size"}``), says how many items it holds and
records the splices that turn them into the version's list. :class:`SplicedList` says how one
list is named and checked, makes the list of a field and its file's value, and says whether a
save may link the parent's file (while the splices stay under
:func:`~stable_explore.storage.format.splices.rebase_limit`). The file is read by
:mod:`stable_explore.storage.read.small_files` and written or linked by :mod:`stable_explore.storage.write.small_files`.

Examples
--------
>>> from pathlib import Path
>>> numbers = SplicedList("numbers.json", "'numbers'", "numbers", lambda v, where, path: list(v), lambda n: n)
>>> ref = FileRef("numbers.json", "xxh3_128:" + "0" * 32, 100)
>>> field = numbers.record_to_json(SplicedRecord(ref, 3, ((3, 0, (3,)),)))
>>> record = numbers.record_from_json(field, Path("_metadata.json"))
>>> items, parent = numbers.items_from(record, [0, 1, 2], Path("."), Path("_metadata.json"))
>>> items
[0, 1, 2, 3]
>>> numbers.splices_against(parent, [*items, 4])  # few splices: a save links the file and records them
[(3, 0, (3, 4))]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.format.file_ref import FileRef
from stable_explore.storage.format.splices import Splice, apply_splices, keeps_splicing, parse_splices, splices_between

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

    def record_from_json(self, raw: object, meta_path: Path) -> SplicedRecord[T]:
        """Check and type the field (its file is read by :mod:`stable_explore.storage.read.small_files`)."""
        base = FileRef.from_json(raw, meta_path, self.field)
        assert isinstance(raw, Mapping)
        count = raw.get(self.count_key)
        if type(count) is not int or count < 0:
            msg = f"{self.field} needs {self.count_key!r}, a count, found {raw!r:.150}"
            raise CacheCorruptionError(meta_path, msg)
        return SplicedRecord(base, count, parse_splices(raw.get("splices"), self.field, meta_path, self.check_items))

    def items_from(
        self, record: SplicedRecord[T], value: object, directory: Path, meta_path: Path
    ) -> tuple[list[T], ParentList[T]]:
        """The items ``record`` gives from its file's parsed ``value`` (checked, splices applied), and the file."""
        path = directory / record.base.file
        base = self.check_items(value, self.file, path)
        if len(base) != record.count:
            raise CacheCorruptionError(path, f"holds {len(base)} {self.count_key}, not {record.count}")
        return apply_splices(base, record.splices, meta_path), ParentList(directory, record, base)

    def written(
        self, raw: object, items: Sequence[T], parent: ParentList[T] | None, directory: Path, meta_path: Path
    ) -> ParentList[T] | None:
        """The file of a version just written in ``directory``, as :meth:`items_from` would give it, from memory.

        ``raw`` is the field recorded for ``items``: the ``parent``'s file linked with splices, or a
        new file of ``items`` (see :func:`~stable_explore.storage.write.small_files.spliced_field`).
        None when the field does not describe them so (the file is then read, as any other version's).
        """
        record = self.record_from_json(raw, meta_path)
        linked = parent is not None and record.base.digest == parent.record.base.digest
        base = list(parent.base) if linked and parent is not None else list(items)
        if len(base) != record.count or apply_splices(base, record.splices, meta_path) != list(items):
            return None
        return ParentList(directory, record, base)

    def splices_against(self, parent: ParentList[T], items: Sequence[T]) -> list[Splice[T]] | None:
        """The splices that make ``items`` of ``parent``'s file, while a save may still link it (None: write anew).

        Linking holds while the splices stay under :func:`~stable_explore.storage.format.splices.rebase_limit`.
        """
        splices = splices_between(parent.base, items)
        return splices if keeps_splicing(len(parent.base), splices, parent.record.splices) else None
