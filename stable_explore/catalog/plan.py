"""The cache decision's input: what a build's source is, fingerprinted, and what changed since the last build.

A source is an explicit ``key``, or a generator function (its code, the globals it reads, its
arguments); with it go the features, the compression and the descriptive fields, because they
shape the version too. A plain iterable has no fingerprint: it always builds.

Examples
--------
>>> from stable_explore import Features, Value
>>> from stable_explore.catalog import BuildOptions
>>> def numbers(n):
...     yield from ({"x": i} for i in range(n))
>>> features = Features(x=Value("int64"))
>>> a = plan_source(numbers, features, BuildOptions(), args=(3,))
>>> b = plan_source(numbers, features, BuildOptions(), args=(4,))
>>> a.fingerprint != b.fingerprint, explain_changes(a.parts, b.parts)
(True, ["argument 'n' changed"])
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stable_explore._canonical import fingerprint
from stable_explore.catalog.fingerprint import fingerprint_parts, function_token, token
from stable_explore.errors import InvalidArgumentTypeError

if TYPE_CHECKING:
    from stable_explore.catalog.options import BuildOptions
    from stable_explore.schema import Features

__all__ = ["SourcePlan", "explain_changes", "plan_source"]


@dataclass(frozen=True)
class SourcePlan:
    """How a build source is fingerprinted: the parts (for explaining a miss) and their digest."""

    parts: dict[str, Any] | None
    fingerprint: str | None

    def as_cell(self, name: str) -> SourcePlan:
        """The same plan, for a ``%%stable_cache`` cell body (so a miss says "cell changed")."""
        if self.parts is None or self.parts.get("kind") != "function":
            return self
        return SourcePlan({**self.parts, "kind": "cell", "function": name}, self.fingerprint)


def plan_source(
    source: Any,
    features: Features,
    options: BuildOptions,
    *,
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
) -> SourcePlan:
    """Fingerprint a build: an explicit ``options.key``, or a generator function's code and arguments."""
    common: dict[str, Any] = {
        "features": features.fingerprint(),
        "compression": options.compression,
        # The descriptive fields shape the version id, so a hit must match them too. The key is
        # still called "labels" in stored source records: renaming it would miss every old cache.
        "labels": fingerprint(options.descriptive),
    }
    if options.key is not None:
        parts = {"kind": "key", "key": str(options.key), **common}
    elif callable(source) and (inspect.isgeneratorfunction(source) or inspect.isfunction(source)):
        code = function_token(source)
        try:
            bound = inspect.signature(source).bind(*args, **(kwargs or {}))
            bound.apply_defaults()  # a default read from a notebook variable is an input too
        except TypeError as exc:
            msg = f"{getattr(source, '__name__', source)} cannot take these arguments: {exc}"
            raise InvalidArgumentTypeError(msg) from exc
        arguments = {arg: fingerprint(token(value, f"argument {arg!r}")) for arg, value in bound.arguments.items()}
        parts = {
            "kind": "function",
            "function": getattr(source, "__qualname__", "?"),
            "code": code["source"],
            "globals": {n: fingerprint(v) for n, v in code["globals"].items()},
            "arguments": arguments,
            **common,
        }
    else:
        return SourcePlan(None, None)
    return SourcePlan(parts, fingerprint_parts(parts))


def explain_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """What differs between two source plans, in words."""
    if not old or not new:
        return []
    if old.get("kind") != new.get("kind"):
        return [f"source kind changed ({old.get('kind')} -> {new.get('kind')})"]
    changes = []
    if old.get("code") != new.get("code"):
        changes.append("cell changed" if new.get("kind") == "cell" else "generator source changed")
    if old.get("key") != new.get("key"):
        changes.append(f"key changed ({old.get('key')!r} -> {new.get('key')!r})")
    for label, group in (("argument", "arguments"), ("variable", "globals")):
        before, after = old.get(group) or {}, new.get(group) or {}
        for item in sorted(set(before) | set(after)):
            if before.get(item) != after.get(item):
                changes.append(f"{label} {item!r} changed")
    if old.get("features") != new.get("features"):
        changes.append("features changed")
    if old.get("compression") != new.get("compression"):
        changes.append("compression changed")
    if old.get("labels") != new.get("labels"):
        changes.append("description, license or metadata changed")
    return changes
