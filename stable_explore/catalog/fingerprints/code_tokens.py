"""What counts as the user's own code, and the digest of code: the part of a fingerprint that is code.

Code in site-packages, the standard library and stable-explore itself is library code: it is not
fingerprinted. Everything else (a notebook, a script, a module beside it, a package installed in
development mode) is the user's, and its code is hashed from its source text and its bytecode.

Examples
--------
>>> import os
>>> is_user_file(os.__file__), is_user_file("<ipython-input-3-1a2b>")
(False, True)
>>> def f(x):
...     return x + 1
>>> code_digest(f) == code_digest(f), len(code_digest(f))
(True, 16)
"""

from __future__ import annotations

import dis
import hashlib
import inspect
import sys
import textwrap
from collections.abc import Iterator
from types import CodeType
from typing import Any

from stable_explore._frames import is_user_file, user_stacklevel

__all__ = [
    "attribute_chains",
    "code_digest",
    "global_names",
    "is_plain_user_object",
    "is_user_class",
    "is_user_file",
    "source_text",
    "unwrapped",
    "user_stacklevel",
]


def module_file(module_name: str | None) -> str | None:
    module = sys.modules.get(module_name or "")
    if module is None:
        return None
    if module_name == "__main__" and getattr(module, "__file__", None) is None:
        return "<__main__>"  # a notebook or an interactive session
    return getattr(module, "__file__", None)


def is_user_class(cls: type) -> bool:
    """Whether a class is defined in the user's own code (not site-packages or the standard library)."""
    return is_user_file(module_file(cls.__module__))


def _code_digest(code: CodeType, hasher: Any) -> None:
    """Feed what a code object runs into ``hasher``: bytecode, names and constants, nested code too.

    Line numbers and file names are left out; memory addresses never get in.
    """
    hasher.update(code.co_code)
    hasher.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_argcount)).encode())
    for const in code.co_consts:
        if isinstance(const, CodeType):
            _code_digest(const, hasher)
        elif isinstance(const, frozenset):
            hasher.update(repr(sorted(repr(c) for c in const)).encode())  # set order varies by process
        else:
            hasher.update(repr(const).encode())


def source_text(obj: Any) -> str:
    """The dedented source of a function or class, or an empty string when it has none on disk."""
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return ""


def code_digest(function: object) -> str:
    """The digest of a function's code: its source text (when there is one) and its bytecode.

    Both, so that an edited file not yet re-imported (new text, old code) and a re-imported one
    (new text, new code) differ from each other and from the original.
    """
    hasher = hashlib.sha256(source_text(function).encode())
    code = getattr(function, "__code__", None)
    if code is not None:
        _code_digest(code, hasher)
    return hasher.hexdigest()[:16]


_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def global_names(code: CodeType) -> set[str]:
    """Names a code object (and the code objects nested in it) looks up as globals.

    Read from the bytecode, not ``co_names``: ``row.data`` reads an attribute, not a global ``data``.
    """
    names = {str(i.argval) for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS}
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= global_names(const)
    return names


_ATTR_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def attribute_chains(code: CodeType) -> Iterator[tuple[str, ...]]:
    """``mylib.transform`` and ``pkg.sub.f`` as read by the code: a global followed by attribute loads."""
    chain: list[str] = []
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            if len(chain) > 1:
                yield tuple(chain)
            chain = [str(instruction.argval)]
        elif instruction.opname in _ATTR_OPS and chain:
            chain.append(str(instruction.argval))
        else:
            if len(chain) > 1:
                yield tuple(chain)
            chain = []
    if len(chain) > 1:
        yield tuple(chain)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from attribute_chains(const)


def unwrapped(value: object) -> Any:
    """The function a decorator wraps (``functools.wraps``, ``lru_cache``): its code is what runs."""
    if callable(value) and not inspect.isclass(value) and getattr(value, "__wrapped__", None) is not None:
        try:
            return inspect.unwrap(value)
        except ValueError:
            return value
    return value


def is_plain_user_object(value: object) -> bool:
    """An instance of the user's own plain Python class (every class in its MRO is theirs, or ``object``)."""
    cls = type(value)
    return all(base is object or is_user_class(base) for base in cls.__mro__) and (
        hasattr(value, "__dict__") or any(getattr(c, "__slots__", ()) for c in cls.__mro__)
    )
