"""Canonical JSON (sorted keys, no whitespace) and the short hash of it that names schemas and versions.

Example
-------
>>> canonical_json({"b": 1, "a": [1, 2]})
'{"a":[1,2],"b":1}'
>>> len(fingerprint({"a": 1}))
16
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "fingerprint"]


def canonical_json(obj: Any) -> str:
    """Serialise ``obj`` to JSON with sorted keys and no whitespace."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def fingerprint(obj: Any, length: int = 16) -> str:
    """SHA-256 hex prefix of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]
