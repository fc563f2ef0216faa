r"""Canonical JSON (sorted keys, no whitespace) and the short hash of it that names schemas and versions.

Examples
--------
>>> canonical_json({"b": 1, "a": [1, 2]})
'{"a":[1,2],"b":1}'
>>> len(fingerprint({"a": 1}))
16
>>> json_value({"raw": b"\x01\xff", "scores": (1.5, float("nan"))})
{'raw': '01ff', 'scores': [1.5, 'nan']}
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Literal

__all__ = ["canonical_json", "fingerprint", "json_value"]


def canonical_json(obj: Any) -> str:
    """Serialise ``obj`` to JSON with sorted keys and no whitespace."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def fingerprint(obj: Any, length: int = 16) -> str:
    """SHA-256 hex prefix of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def json_value(value: Any, *, bytes_as: Literal["hex", "size"] = "hex") -> Any:
    """A JSON-ready form of a stored value.

    Bytes become hex (or ``"<n bytes>"`` for display), tuples lists, numpy scalars Python numbers,
    and NaN and infinities their ``repr`` (JSON has no form for them).

    Row hashes hash this form of non-binary values, so it must never change for values Arrow returns.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return data.hex() if bytes_as == "hex" else f"<{len(data)} bytes>"
    if isinstance(value, (list, tuple)):
        return [json_value(v, bytes_as=bytes_as) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v, bytes_as=bytes_as) for k, v in value.items()}
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value
