"""Where a shipped function's code was written, so a worker's traceback can point at the user's own lines.

A generator defined in a notebook or ``__main__`` travels to worker processes by value (cloudpickle).
Since cloudpickle 3.1.3 the code objects it rebuilds carry a placeholder file name (``<dynamic-code>``)
instead of the cell's or script's, so a worker's frames name no file the driver can read. Function
names and line numbers do survive, so the driver, which still holds the original function, maps each
such frame back to the file of the code object with that name whose lines contain the frame's line.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["CodePlace", "code_places", "place_of"]

CodePlace = tuple[str, int, int, str]
"""A code object's (function name, first line, last line, file name)."""

_MOST_CODE_OBJECTS = 500  # a bound on the walk through globals; a generator reaches a few dozen at most


def code_places(source: Callable[..., Any]) -> list[CodePlace]:
    """Every code object the function reaches: its own, nested ones, and functions of its module it calls.

    Examples
    --------
    >>> def outer():
    ...     def inner():
    ...         return 1
    ...     return inner()
    >>> sorted(name for name, *_ in code_places(outer))
    ['inner', 'outer']
    """
    places: list[CodePlace] = []
    seen: set[int] = set()
    pending: list[tuple[types.CodeType, dict[str, object]]] = list(_entry_codes(source))
    while pending and len(seen) < _MOST_CODE_OBJECTS:
        code, namespace = pending.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        lines = [line for _, _, line in code.co_lines() if line is not None]
        places.append((code.co_name, min(lines, default=code.co_firstlineno), max(lines, default=0), code.co_filename))
        pending.extend((const, namespace) for const in code.co_consts if isinstance(const, types.CodeType))
        for name in code.co_names:  # functions of the same module that the code calls by name
            value = namespace.get(name)
            if isinstance(value, types.FunctionType):
                pending.append((value.__code__, value.__globals__))
    return places


def place_of(places: list[CodePlace], function: str, line: int) -> str | None:
    """The file of the code object named ``function`` whose lines contain ``line``, if exactly one place fits."""
    files = {file for name, first, last, file in places if name == function and first <= line <= last}
    return files.pop() if len(files) == 1 else None


def _entry_codes(source: object) -> Iterator[tuple[types.CodeType, dict[str, Any]]]:
    """The code objects a callable runs first: a function's, a partial's function's, a callable object's."""
    while isinstance(source, functools.partial):
        source = source.func
    if isinstance(source, types.MethodType):
        source = source.__func__
    if isinstance(source, types.FunctionType):
        yield source.__code__, source.__globals__
        return
    call = vars(type(source)).get("__call__")  # a callable instance of the user's own class
    if isinstance(call, types.FunctionType):
        yield call.__code__, call.__globals__
