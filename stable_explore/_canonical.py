r"""Canonical JSON (sorted keys, no whitespace) and the short hash of it that names schemas and versions.

Examples
--------
>>> canonical_json({"b": 1, "a": [1, 2]})
'{"a":[1,2],"b":1}'
>>> len(fingerprint({"a": 1}))
16
>>> json_value({"raw": b"\x01\xff", "scores": (1.5, float("nan"))})
{'raw': '01ff', 'scores': [1.5, 'nan']}
>>> print(unencodable_text({"notes": ["ok", "bad \ud800"]}))
['notes'][1]: lone surrogate '\ud800' at position 4
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
from typing import Any, Literal

__all__ = [
    "MAX_NESTING",
    "canonical_json",
    "fingerprint",
    "json_value",
    "nested_too_deep",
    "parse_json",
    "unencodable_text",
]

MAX_NESTING = 100
"""How deep user metadata may nest lists and dicts (JSON tools recurse per level; ours stays far from their limit)."""


def nested_too_deep(obj: object, limit: int = MAX_NESTING) -> str | None:
    """Where ``obj`` nests lists, tuples or dicts deeper than ``limit`` (a path such as ``['a'][0]...``), or None.

    Walked without recursion, so any depth is answered; the path shows the first levels.

    Examples
    --------
    >>> nested_too_deep({"a": [[1]]}) is None
    True
    >>> print(nested_too_deep({"a": [[1]]}, limit=2))
    ['a'][0]: nested more than 2 levels deep
    """
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(obj, 0, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, dict):
            children: Any = value.items()
        elif isinstance(value, (list, tuple)):
            children = enumerate(value)
        else:
            continue
        if depth >= limit:
            shown = "".join(f"[{step!r}]" for step in path[:8]) + ("..." if len(path) > 8 else "")
            return f"{shown}: nested more than {limit} levels deep"
        stack.extend((child, depth + 1, (*path, key) if len(path) < 9 else path) for key, child in children)
    return None


def parse_json(text: str | bytes) -> Any:
    """``json.loads``, with JSON nested deeper than the parser goes refused as ``JSONDecodeError`` too.

    Python's parser recurses per level and raises ``RecursionError`` past about 1,000 levels; a
    file from elsewhere (a bucket, a damaged disk) is data, and its damage must be reported the
    way any invalid JSON is: every caller that handles ``ValueError`` handles this as well.

    Examples
    --------
    >>> parse_json('{"a": [1]}')
    {'a': [1]}
    >>> try:
    ...     parse_json("[" * 100_000 + "]" * 100_000)
    ... except ValueError as exc:
    ...     print(exc.msg)
    JSON nested too deeply to read (deeper than the parser's recursion limit)
    """
    try:
        return json.loads(text)
    except RecursionError:
        msg = "JSON nested too deeply to read (deeper than the parser's recursion limit)"
        doc = text if isinstance(text, str) else text.decode("utf-8", errors="replace")
        raise json.JSONDecodeError(msg, doc[:0], 0) from None


def canonical_json(obj: object) -> str:
    """Serialise ``obj`` to JSON with sorted keys and no whitespace."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def fingerprint(obj: object, length: int = 16) -> str:
    """SHA-256 hex prefix of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def json_value(value: object, *, bytes_as: Literal["hex", "size"] = "hex") -> Any:
    """A JSON-ready form of a stored value.

    Bytes become hex (or ``"<n bytes>"`` for display), tuples lists, numpy scalars Python numbers,
    NaN and infinities their ``repr`` (JSON has no form for them), dates, times and datetimes ISO 8601
    text and durations their ``str``.

    Row hashes hash this form of non-binary values, so it must never change for values Arrow returns.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return data.hex() if bytes_as == "hex" else f"<{len(data)} bytes>"
    if isinstance(value, (list, tuple)):
        return [json_value(v, bytes_as=bytes_as) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v, bytes_as=bytes_as) for k, v in value.items()}
    if isinstance(value, (datetime.date, datetime.time)):  # datetime.datetime and pandas.Timestamp too
        return value.isoformat()  # a zone Arrow gives is the column's, never the process's
    if isinstance(value, datetime.timedelta):
        return str(value)
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def unencodable_text(obj: object, where: str = "") -> str | None:
    r"""Where ``obj`` (text, or lists and dicts of it) holds a lone surrogate UTF-8 cannot store, or None.

    Such text (from ``surrogateescape`` decoding, or a broken ``\ud800`` escape) cannot be written to
    metadata or hashed, so it is refused where it enters, with this description of where it is.
    """
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError as exc:
            prefix = f"{where}: " if where else ""
            return f"{prefix}lone surrogate {obj[exc.start]!r} at position {exc.start}"
        return None
    if isinstance(obj, dict):
        items: Any = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return None
    for key, value in items:
        found = unencodable_text(key, f"{where}[{key!r}] (the key)") if isinstance(key, str) else None
        found = found or unencodable_text(value, f"{where}[{key!r}]")
        if found:
            return found
    return None
