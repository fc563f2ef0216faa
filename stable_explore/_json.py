"""JSON as :mod:`json` reads and writes it: one recursive type for documents checked where they are read.

``json.load`` returns ``Any``; a reader that assigns its result to :data:`Json` makes mypy follow every
``isinstance`` check that narrows it (a ``dict`` to ``dict[str, Json]``, a ``list`` to ``list[Json]``),
so a field used before it is checked is a type error.

Examples
--------
>>> import json
>>> document: Json = json.loads('{"images": [{"id": 1}]}')
>>> isinstance(document, dict) and document["images"]
[{'id': 1}]
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["Json", "JsonObject"]

Json: TypeAlias = bool | int | float | str | list["Json"] | dict[str, "Json"] | None
JsonObject: TypeAlias = dict[str, Json]
