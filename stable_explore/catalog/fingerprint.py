"""Fingerprints of build sources: a generator function's code and its arguments.

A fingerprint decides a cache hit, so it must change whenever the data could,
and be stable across processes: code is hashed from its source text, values
by content. Anything we cannot hash faithfully is refused by name rather than
hashed by identity (which would give false hits or constant misses).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import textwrap
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

import numpy as np
import xxhash

from stable_explore._canonical import canonical_json
from stable_explore.errors import FingerprintError

_MAX_CONTAINER = 10_000


def token(value: Any, name: str) -> Any:
    """A JSON-able stand-in for ``value`` that is equal exactly when the values are.

    Raises FingerprintError naming ``name`` for values that have no faithful token.
    """
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return _with_file_state(value, value)
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, bytes):
        return {"bytes": xxhash.xxh3_128_hexdigest(value)}
    if isinstance(value, PurePath):
        return _with_file_state({"path": str(value)}, str(value))
    if isinstance(value, np.generic):
        return {"np": str(value.dtype), "v": value.item() if value.dtype.kind != "f" else repr(value.item())}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise FingerprintError(_advice(name, value, "a numpy array of Python objects"))
        data = np.ascontiguousarray(value)
        digest = xxhash.xxh3_128_hexdigest(data.tobytes())
        return {"ndarray": str(data.dtype), "shape": list(data.shape), "xxh3": digest}
    if isinstance(value, (list, tuple, set, frozenset)):
        if len(value) > _MAX_CONTAINER:
            raise FingerprintError(_advice(name, value, f"a container of more than {_MAX_CONTAINER} items"))
        items = [token(v, f"{name}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, (set, frozenset)):
            items = sorted(items, key=canonical_json)
        return {type(value).__name__: items}
    if isinstance(value, Mapping):
        if len(value) > _MAX_CONTAINER:
            raise FingerprintError(_advice(name, value, f"a mapping of more than {_MAX_CONTAINER} items"))
        pairs = [[token(k, f"{name} key"), token(v, f"{name}[{k!r}]")] for k, v in value.items()]
        return {"dict": sorted(pairs, key=canonical_json)}
    own_token = getattr(value, "__stable_token__", None)
    if callable(own_token):
        return {type(value).__name__: own_token()}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and type(value).__module__.startswith("stable_explore"):
        return {type(value).__name__: token(to_dict(), name)}
    if inspect.isfunction(value):
        return {"function": function_token(value)}
    raise FingerprintError(_advice(name, value, f"a {type(value).__module__}.{type(value).__qualname__}"))


def _advice(name: str, value: Any, what: str) -> str:
    return (
        f"cannot fingerprint {name} ({what}); stable-explore hashes numbers, strings, paths, "
        "numpy arrays and small containers of these. Pass key=... (--key) to name this build yourself, "
        "or force=True (--force) to rebuild"
    )


def function_token(function: Callable[..., Any], _seen: set[int] | None = None) -> Any:
    """Token of a function: its source text (or bytecode) and the global values it reads.

    Globals that are modules, classes or functions from other modules count as
    code and are skipped; functions of the same module are followed; any other
    global is hashed by content, so editing
    ``ROOT = "data/v2"`` in a notebook changes the fingerprint of a generator
    that reads ``ROOT``.
    """
    seen = _seen if _seen is not None else set()
    seen.add(id(function))
    name = getattr(function, "__qualname__", repr(function))
    code = getattr(function, "__code__", None)
    try:
        text = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        if code is None:
            raise FingerprintError(_advice(f"the source {name}", function, "a callable without code")) from None
        text = repr((code.co_code, code.co_consts, code.co_names))
    namespace = getattr(function, "__globals__", {})
    own_name = getattr(function, "__name__", None)
    read: dict[str, Any] = {}
    for global_name in sorted(_global_names(code)) if code is not None else ():
        if global_name in namespace and global_name != own_name:
            read[global_name] = namespace[global_name]  # not: builtins, undefined names, the function itself
    # variables captured from an enclosing function are inputs just like globals
    for cell_name, cell in zip(
        getattr(code, "co_freevars", ()), getattr(function, "__closure__", None) or (), strict=False
    ):
        try:
            read[cell_name] = cell.cell_contents
        except ValueError:
            continue  # a cell not filled yet
    values_used: dict[str, Any] = {}
    for value_name, value in read.items():
        if inspect.isclass(value) and value.__module__ == getattr(function, "__module__", None):
            values_used[value_name] = _class_token(value)  # a helper class defined beside the generator
            continue
        if inspect.ismodule(value) or inspect.isclass(value) or inspect.isbuiltin(value):
            continue
        if inspect.isfunction(value):
            # Follow the user's own helpers; library functions count as code, like modules.
            if id(value) not in seen and value.__module__ == getattr(function, "__module__", None):
                values_used[value_name] = function_token(value, seen)
            continue
        values_used[value_name] = token(value, f"global variable {value_name!r} read by {name}")
    return {"source": hashlib.sha256(text.encode()).hexdigest()[:16], "globals": values_used}


def _class_token(cls: type) -> str:
    """Hash of a class's source text (its methods are code the generator runs)."""
    try:
        text = inspect.getsource(cls)
    except (OSError, TypeError):
        text = repr(sorted((k, repr(v)) for k, v in vars(cls).items() if not k.startswith("__")))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _with_file_state(token_value: Any, text: str) -> Any:
    """A string or path that names an existing file or folder also carries its modification time.

    So ``pets("data/pets")`` rebuilds after files are added to or removed from ``data/pets``
    (a folder's time changes then), and after a named file is rewritten.
    """
    if not text or len(text) > 4096 or "\x00" in text or "\n" in text:
        return token_value
    try:
        stat = os.stat(text)  # noqa: PTH116 - the text may be a relative path, a URL or anything else
    except (OSError, ValueError):
        return token_value
    return {"value": token_value, "mtime_ns": stat.st_mtime_ns, "size": stat.st_size}


def _global_names(code: Any) -> set[str]:
    """Names a code object (and the code objects nested in it) may look up as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _global_names(const)
    return names


def fingerprint_parts(parts: Mapping[str, Any]) -> str:
    """One digest over named parts (each already tokenised)."""
    return hashlib.sha256(canonical_json(dict(parts)).encode()).hexdigest()[:24]
