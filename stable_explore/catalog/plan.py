"""The cache decision's input: what a build's source is, fingerprinted, and what changed since the last build.

A source is an explicit ``key``, or a generator function: its code and the code it reaches in
the user's own modules, the globals it reads, its arguments, and the state of the files and
folders those name (plus ``watch`` paths). With it go the features, the compression and the
descriptive fields, because they shape the version too. A plain iterable has no fingerprint:
it always builds.

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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore._canonical import canonical_json, fingerprint
from stable_explore.catalog.fingerprints.file_state import (
    FILE_LIMIT,
    Entry,
    FileState,
    describe_listing_changes,
    file_state,
)
from stable_explore.catalog.fingerprints.fingerprint import Tokenizer, fingerprint_parts
from stable_explore.errors import InvalidArgumentTypeError

if TYPE_CHECKING:
    from stable_explore._json import Json
    from stable_explore.catalog.options import BuildOptions
    from stable_explore.schema import Features

__all__ = ["SourcePlan", "describe_feature_changes", "explain_changes", "plan_map", "plan_source"]

_QUOTED = re.compile(r"^(?:argument|variable) '([^']+)'")


@dataclass(frozen=True)
class SourcePlan:
    """How a build source is fingerprinted: the parts (for explaining a miss) and their digest.

    ``unstable`` names the inputs that have no content hash (label -> what they are): a source
    with any cannot be recognised next time, so it builds every run. ``file_states`` are the
    listings of the folders in ``parts["files"]``, kept so a later rebuild can name the files that
    changed in them (a single file's change is named by its path).
    """

    parts: dict[str, Json] | None
    fingerprint: str | None
    unstable: dict[str, str] = field(default_factory=dict)
    file_states: tuple[FileState, ...] = field(default=(), repr=False, compare=False)

    def as_cell(self, name: str) -> SourcePlan:
        """The same plan, for a ``%%stable_cache`` cell body (so a miss says "cell changed")."""
        if self.parts is None or self.parts.get("kind") != "function":
            return self
        return SourcePlan(
            {**self.parts, "kind": "cell", "function": name}, self.fingerprint, self.unstable, self.file_states
        )

    def advice(self) -> str:
        """Why this source builds every run, and how to avoid it (empty when it is fingerprinted)."""
        if not self.unstable:
            return ""
        described = "; ".join(f"{label} is {what}" for label, what in sorted(self.unstable.items()))
        names = sorted({ignore_name(label) for label in self.unstable})
        return (
            f"{described}, which stable-explore cannot fingerprint, so every run of this build rebuilds it. "
            f"To reuse the cache, pass key='...' (--key) to name the build yourself, or ignore={names!r} "
            f"(--ignore {' '.join(names)}) if it does not change the data"
        )


def ignore_name(label: str) -> str:
    """The name to pass to ``ignore=`` for an input label: ``"variable 'mylib.CONN'[0]"`` -> ``"CONN"``."""
    match = _QUOTED.match(label)
    name = match.group(1) if match else label
    return name.rsplit(".", 1)[-1]


def plan_source(
    source: object,
    features: Features,
    options: BuildOptions,
    *,
    args: tuple[object, ...] = (),
    kwargs: Mapping[str, object] | None = None,
    home: str | Path | None = None,
) -> SourcePlan:
    """Fingerprint a build: an explicit ``options.key``, or a generator function's code, inputs and files.

    ``home`` (the catalog's root) is left out of folder listings: a build changes it.
    """
    common: dict[str, Json] = {
        "features": features.fingerprint(),
        "compression": options.compression,
        # The descriptive fields shape the version id, so a hit must match them too. The key is
        # still called "labels" in stored source records: renaming it would miss every old cache.
        "labels": fingerprint(options.descriptive),
    }
    if options.batched:  # dicts read as columns, not rows: other rows (absent when False, so older plans match)
        common["batched"] = True
    tokens = Tokenizer(ignore=frozenset(options.ignore))
    if options.key is not None:
        parts: dict[str, Json] = {"kind": "key", "key": str(options.key), **common}
    elif callable(source) and (inspect.isgeneratorfunction(source) or inspect.isfunction(source)):
        code = tokens.source(source)
        try:
            bound = inspect.signature(source).bind(*args, **(kwargs or {}))
            bound.apply_defaults()  # a default read from a notebook variable is an input too
        except TypeError as exc:
            msg = f"{getattr(source, '__name__', source)} cannot take these arguments: {exc}"
            raise InvalidArgumentTypeError(msg) from exc
        arguments: dict[str, Json] = {
            arg: fingerprint(tokens.value(value, f"argument {arg!r}"))
            for arg, value in bound.arguments.items()
            if arg not in options.ignore
        }
        parts = {
            "kind": "function",
            "function": getattr(source, "__qualname__", "?"),
            "code": code,
            "globals": {n: fingerprint(v) for n, v in tokens.globals.items()},
            "arguments": arguments,
            **common,
        }
        if tokens.code:
            parts["code_used"] = dict(sorted(tokens.code.items()))
    else:
        return SourcePlan(None, None)
    return _finished(
        parts,
        tokens,
        watch=options.watch,
        check_content=options.check_content,
        home=home,
        keyed=options.key is not None,
    )


def plan_map(
    function: Callable[..., object],
    parent: str,
    *,
    batched: bool,
    features: Features | None,
    ignore: frozenset[str] = frozenset(),
    home: str | Path | None = None,
) -> SourcePlan:
    """Fingerprint a ``ds.map``: its function, the parent version it maps, ``batched`` and the features asked for.

    The function is fingerprinted as a build's generator is: its code, the globals and code it
    reaches, and the files they name.

    Examples
    --------
    >>> def double(row):
    ...     return {"y": row["x"] * 2}
    >>> a, b = plan_map(double, "0123456789abcdef", batched=False, features=None), plan_map(
    ...     double, "fedcba9876543210", batched=False, features=None)
    >>> a.fingerprint != b.fingerprint, explain_changes(a.parts, b.parts)
    (True, ['parent version changed (0123456789abcdef -> fedcba9876543210)'])
    """
    tokens = Tokenizer(ignore=ignore)
    if not callable(function):
        msg = f"map needs a function, got {type(function).__name__}"
        raise InvalidArgumentTypeError(msg)
    try:
        code = tokens.source(function)
    except (TypeError, OSError):  # a builtin, or code without source: fingerprinted by its value, if it can be
        code = fingerprint(tokens.value(function, "function"))
    parts: dict[str, Json] = {
        "kind": "map",
        "function": getattr(function, "__qualname__", type(function).__name__),
        "code": code,
        "globals": {n: fingerprint(v) for n, v in tokens.globals.items()},
        "arguments": {},
        "parent": parent,
        "batched": bool(batched),
        "features": features.fingerprint() if features is not None else None,
    }
    if tokens.code:
        parts["code_used"] = dict(sorted(tokens.code.items()))
    return _finished(parts, tokens, watch=(), check_content=False, home=home, keyed=False)


def _finished(
    parts: dict[str, Json],
    tokens: Tokenizer,
    *,
    watch: Sequence[object],
    check_content: bool,
    home: str | Path | None,
    keyed: bool,
) -> SourcePlan:
    """A plan of ``parts``, with the state of the files and folders the source names (and ``watch``)."""
    named = dict(tokens.paths)
    for watched in watch:
        named.setdefault(str(watched), "watched path")
    unstable = dict(tokens.unstable)
    files: dict[str, Json] = {}
    states = []
    exclude = [home] if home is not None else []
    for path, label in named.items():
        if _too_broad(path):
            unstable.setdefault(label, f"{path!r}, the file system's root or your home folder")
            continue
        state = file_state(path, check_content=check_content, exclude=exclude)
        if state is None:
            if label == "watched path":
                files[path] = {"by": label, "digest": None}  # a watched path that is missing is a state too
            continue
        if not state.complete:
            unstable.setdefault(label, f"a folder with more than {FILE_LIMIT:,} files ({path})")
        kind = "folder" if Path(path).is_dir() else "file"
        files[path] = {"by": label, "digest": state.digest, "files": state.files, "kind": kind}
        if kind == "folder":  # a file's change is explained by its path alone: only folders keep a listing
            states.append(state)
    if files:
        parts["files"] = files
        if check_content:
            parts["check_content"] = True
    if keyed:
        unstable = {}  # the user named this build: the key decides, whatever else it reads
    return SourcePlan(parts, fingerprint_parts(parts), unstable, tuple(states))


def _too_broad(path: str) -> bool:
    """The root, the home folder or a folder above it: listing them is not a fingerprint, it is a disk scan."""
    try:
        real = Path(path).expanduser().resolve()
        home = Path.home().resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return real == Path(real.anchor) or real == home or real in home.parents


Listing = Callable[[str], "Mapping[str, Entry] | None"]


def explain_changes(
    old: Mapping[str, Json] | None,
    new: Mapping[str, Json] | None,
    *,
    listing: Listing | None = None,
    features: tuple[Mapping[str, object], Mapping[str, object]] | None = None,
    descriptive: tuple[Mapping[str, object], Mapping[str, object]] | None = None,
) -> list[str]:
    """What differs between two source plans, in words.

    ``listing`` finds a folder's listing by digest (to name the files that changed);
    ``features`` and ``descriptive`` are the (old, new) values, to name what changed in them.
    """
    if not old or not new:
        return []
    if old.get("kind") != new.get("kind"):
        return [f"source kind changed ({old.get('kind')} -> {new.get('kind')})"]
    changes = []
    if old.get("code") != new.get("code"):
        kind = new.get("kind")
        changes.append(
            {"cell": "cell changed", "map": "function source changed"}.get(str(kind), "generator source changed")
        )
    if old.get("parent") != new.get("parent"):
        changes.append(f"parent version changed ({old.get('parent')} -> {new.get('parent')})")
    if old.get("batched") != new.get("batched"):
        changes.append(f"batched changed ({bool(old.get('batched'))} -> {bool(new.get('batched'))})")
    if old.get("key") != new.get("key"):
        changes.append(f"key changed ({old.get('key')!r} -> {new.get('key')!r})")
    for label, group in (("argument", "arguments"), ("variable", "globals")):
        before, after = _object(old.get(group)), _object(new.get(group))
        for item in sorted(set(before) | set(after)):
            if before.get(item) != after.get(item):
                changes.append(f"{label} {item!r} changed")
    before_code, after_code = _object(old.get("code_used")), _object(new.get("code_used"))
    for item in sorted(set(before_code) | set(after_code)):
        if before_code.get(item) != after_code.get(item):
            changes.append(f"code of {item} changed")
    changes.extend(_file_changes(_object(old.get("files")), _object(new.get("files")), changes, listing))
    if old.get("features") != new.get("features"):
        described = describe_feature_changes(*features) if features is not None else []
        changes.append("features changed: " + ", ".join(described) if described else "features changed")
    if old.get("compression") != new.get("compression"):
        changes.append(f"compression changed ({old.get('compression')} -> {new.get('compression')})")
    if old.get("labels") != new.get("labels"):
        described = _descriptive_changes(*descriptive) if descriptive is not None else []
        changes.extend(described or ["description, license or metadata changed"])
    return changes


def _file_changes(
    before: Mapping[str, object], after: Mapping[str, object], reported: list[str], listing: Listing | None
) -> list[str]:
    """'files changed under argument 'root' (data/pets): 1 added (cat/c.jpg)' for each path whose state differs."""
    out = []
    for path in sorted(set(before) | set(after)):
        old, new = _object_or_none(before.get(path)), _object_or_none(after.get(path))
        if old is not None and new is not None and old.get("digest") == new.get("digest"):
            continue
        by = str((new or old or {}).get("by", "a path"))
        named = _QUOTED.match(by)
        if named and f"{named.group(0)} changed" in reported:
            continue  # the input itself changed: its old files are no news
        where = f"{by} ({path})"
        if old is None or old.get("digest") is None:
            out.append(f"{where} now exists")
        elif new is None or new.get("digest") is None:
            out.append(f"{where} no longer exists")
        else:
            old_entries = listing(str(old["digest"])) if listing is not None else None
            new_entries = listing(str(new["digest"])) if listing is not None else None
            if old_entries is not None and new_entries is not None:
                detail = describe_listing_changes(old_entries, new_entries)
            else:
                detail = f"{old.get('files')} -> {new.get('files')} files"
            what = "file changed" if new.get("kind") == "file" else "files changed under"
            out.append(f"{what} {where}: {detail}" if what != "file changed" else f"{what}: {where}")
    return out


def _object(value: object) -> Mapping[str, object]:
    """A part that should be an object (a stored plan is JSON read back): it, or empty if it is not one."""
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _object_or_none(value: object) -> Mapping[str, object] | None:
    return value if isinstance(value, Mapping) else None


def _feature_text(spec: Mapping[str, object]) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in spec.items() if k != "_type")
    return f"{spec.get('_type', '?')}({args})"


def describe_feature_changes(old: Mapping[str, object], new: Mapping[str, object], *, show: int = 5) -> list[str]:
    """What differs between two features (as ``Features.to_dict()``): ``label: class 'ten' added``.

    Examples
    --------
    >>> describe_feature_changes({"label": {"_type": "ClassLabel", "names": ["a"]}},
    ...                          {"label": {"_type": "ClassLabel", "names": ["a", "b"]}, "x": {"_type": "Image"}})
    ["column 'x' added (Image())", "label: class 'b' added"]
    """
    out = [f"column {c!r} added ({_feature_text(_object(new[c]))})" for c in new if c not in old]
    out += [f"column {c!r} removed" for c in old if c not in new]
    for column in (c for c in new if c in old):
        before, after = _object(old[column]), _object(new[column])
        if canonical_json(old[column]) == canonical_json(new[column]):
            continue
        if before.get("_type") == after.get("_type") == "ClassLabel":
            old_names, new_names = _list(before.get("names")), _list(after.get("names"))
            added = [n for n in new_names if n not in old_names]
            removed = [n for n in old_names if n not in new_names]
            out += [f"{column}: class {n!r} added" for n in added[:show]]
            out += [f"{column}: class {n!r} removed" for n in removed[:show]]
            if len(added) + len(removed) > 2 * show:
                out.append(f"{column}: {len(added)} classes added, {len(removed)} removed in all")
            if not added and not removed:
                out.append(f"{column}: class order changed ({old_names} -> {new_names})")
        else:
            out.append(f"{column}: {_feature_text(before)} -> {_feature_text(after)}")
    if not out and list(old) != list(new):
        out.append(f"column order changed ({list(old)} -> {list(new)})")
    return out


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _descriptive_changes(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    """``description: 'a' -> 'b'``, ``metadata: 'source' added``."""
    out = []
    for name in ("description", "license"):
        if old.get(name) != new.get(name):
            out.append(f"{name}: {_short(old.get(name))} -> {_short(new.get(name))}")
    old_meta, new_meta = _object(old.get("metadata")), _object(new.get("metadata"))
    for key in sorted(set(old_meta) | set(new_meta), key=str):
        if key not in old_meta:
            out.append(f"metadata: {key!r} added ({_short(new_meta[key])})")
        elif key not in new_meta:
            out.append(f"metadata: {key!r} removed")
        elif canonical_json(old_meta[key]) != canonical_json(new_meta[key]):
            out.append(f"metadata: {key!r}: {_short(old_meta[key])} -> {_short(new_meta[key])}")
    return out
