"""Fingerprints of what a build reads: the code it runs, the values it reads, the paths they name.

A fingerprint decides a cache hit, so it must change whenever the data could, and be stable
across processes. :class:`Tokenizer` walks a generator function: its own code, the globals and
closure variables it reads, and the code it reaches in the user's own modules (functions,
classes and their methods, followed through modules the generator uses) -- never
site-packages or the standard library. Values are hashed by content (numbers, strings, bytes,
containers, numpy arrays and Generators, pandas objects, PIL images, torch tensors,
dataclasses and instances of the user's classes by their fields). A value with no faithful
content hash is *unstable*: the build runs anyway, and says so by name.

Examples
--------
>>> import numpy as np
>>> tokens = Tokenizer()
>>> tokens.value(np.random.default_rng(0), "rng") == Tokenizer().value(np.random.default_rng(0), "rng")
True
>>> _ = tokens.value(open, "opener"), tokens.value(iter([1]), "rows")
>>> tokens.unstable
{'rows': 'a builtins.list_iterator'}
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import fractions
import functools
import hashlib
import inspect
import logging
import random
import re
import sys
import types
import uuid
import zoneinfo
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import PurePath
from types import FunctionType, ModuleType
from typing import TYPE_CHECKING

import numpy as np
import xxhash

from stable_explore._canonical import canonical_json
from stable_explore.catalog.fingerprints.code_tokens import (
    attribute_chains,
    code_digest,
    global_names,
    is_plain_user_object,
    is_user_class,
    is_user_file,
    source_text,
    unwrapped,
)

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore._json import Json

__all__ = ["Tokenizer", "fingerprint_parts"]

MAX_ITEMS = 1_000_000
"""Items (container elements, fields) hashed per build source; past it a value is unstable."""

_PLAIN_VALUE_TYPES = (
    complex,
    decimal.Decimal,
    fractions.Fraction,
    dt.date,
    dt.time,
    dt.timedelta,
    dt.timezone,
    zoneinfo.ZoneInfo,  # ZoneInfo(key='Europe/Paris'): its key names the rules
    types.EllipsisType,
    uuid.UUID,
)


class Tokenizer:
    """Turns what a build reads into JSON-able tokens, equal exactly when the inputs are.

    Attributes
    ----------
    globals:
        Label -> token of each value the code reads from a module namespace or a closure
        (``"ROOT"``, or ``"mylib.SCALE"`` for another module's), and of the user's helper
        functions and classes the generator names directly.
    code:
        ``"mylib.transform"`` -> digest, for code reached in the user's other modules.
    paths:
        Each string or path met that may name a file or folder -> the label of the first input naming it.
    unstable:
        Label -> what it is, for values with no faithful content hash.
    """

    def __init__(self, *, ignore: frozenset[str] = frozenset()) -> None:
        self.ignore = ignore
        self.globals: dict[str, Json] = {}
        self.code: dict[str, str] = {}
        self.paths: dict[str, str] = {}
        self.unstable: dict[str, str] = {}
        self._walked: set[int] = set()
        self._classes: dict[int, str] = {}
        self._active: set[int] = set()
        self._items = 0
        self._home_module: str | None = None
        self._root: object = None

    # -- code ------------------------------------------------------------------

    def source(self, function: Callable[..., object]) -> str:
        """Walk the generator function; return the digest of its own code (the rest lands in the attributes)."""
        self._home_module = getattr(function, "__module__", None)
        self._root = function
        self._walk(function)
        return code_digest(function)

    def _label(self, module: str | None, name: str) -> str:
        return name if module == self._home_module else f"{module}.{name}"

    def _walk(self, function: object) -> None:
        """Follow a user function: the globals, closure variables and defaults it reads."""
        if id(function) in self._walked:
            return
        self._walked.add(id(function))
        code = getattr(function, "__code__", None)
        if code is None:
            return
        module = getattr(function, "__module__", None)
        namespace: dict[str, object] = getattr(function, "__globals__", {})
        own_name = getattr(function, "__name__", None)
        for name in sorted(global_names(code)):
            if name in namespace and name != own_name and name not in self.ignore:
                self._global(module, name, namespace[name])
        for chain in sorted(set(attribute_chains(code))):
            if chain[0] in namespace and chain[0] not in self.ignore:
                self._attribute_chain(namespace[chain[0]], chain)
        for cell_name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or (), strict=False):
            if cell_name in self.ignore:
                continue
            try:
                contents = cell.cell_contents
            except ValueError:
                continue  # a cell not filled yet
            self._global(module, cell_name, contents)
        if function is not self._root:  # the generator's own defaults are bound as its arguments
            defaults = (getattr(function, "__defaults__", None), getattr(function, "__kwdefaults__", None))
            if any(defaults):
                label = self._label(module, f"{getattr(function, '__qualname__', '?')} defaults")
                qualname = getattr(function, "__qualname__", "?")
                self.globals[label] = self.value(defaults, f"the defaults of {qualname}")

    def _global(self, module: str | None, name: str, value: object) -> None:
        label = self._label(module, name)
        if label in self.globals:
            return
        value = unwrapped(value)
        if isinstance(value, ModuleType):
            return  # a module's parts the code uses are followed by attribute (below)
        if isinstance(value, FunctionType):
            if is_user_file(value.__code__.co_filename):
                self._code_of(value, label, module)
            return  # library functions count as code, like modules
        if inspect.isclass(value):
            if is_user_class(value):
                self._code_of(value, label, module)
            return
        if inspect.isbuiltin(value) or inspect.ismethoddescriptor(value) or isinstance(value, functools.partial):
            if isinstance(value, functools.partial):
                self.globals[label] = self.value(value, f"variable {label!r}")
            return
        self.globals[label] = self.value(value, f"variable {label!r}")

    def _code_of(self, obj: FunctionType | type, label: str, module: str | None) -> None:
        """Record the code of a user function or class: in ``globals`` beside the generator, else in ``code``."""
        digest = self._class_digest(obj) if inspect.isclass(obj) else self._function_digest(obj)
        if getattr(obj, "__module__", None) == self._home_module:
            self.globals[label] = {"code": digest}
        else:
            self.code[f"{obj.__module__}.{obj.__qualname__}"] = digest

    def _function_digest(self, function: object) -> str:
        self._walk(function)
        return code_digest(function)

    def _class_digest(self, cls: type) -> str:
        """A user class: its source text, its methods' code (followed like functions) and its user bases."""
        if id(cls) in self._classes:
            return self._classes[id(cls)]
        self._classes[id(cls)] = "(being hashed)"  # a method that names its own class
        hasher = hashlib.sha256(source_text(cls).encode())
        for base in cls.__mro__[1:]:
            if base is not object and is_user_class(base):
                hasher.update(self._class_digest(base).encode())
        for attr, member in sorted(vars(cls).items()):
            function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if isinstance(function, property):
                function = function.fget
            if isinstance(function, FunctionType):
                hasher.update(attr.encode())
                hasher.update(self._function_digest(function).encode())
        digest = hasher.hexdigest()[:16]
        self._classes[id(cls)] = digest
        return digest

    def _attribute_chain(self, root: object, chain: tuple[str, ...]) -> None:
        """``mylib.transform``: follow a user module's attribute the code reads."""
        value = root
        for position, attr in enumerate(chain[1:], start=1):
            if not isinstance(value, ModuleType) or not is_user_file(getattr(value, "__file__", None)):
                return
            if not hasattr(value, attr):
                return
            module_name = value.__name__
            value = getattr(value, attr)
            if isinstance(value, ModuleType):
                continue
            if attr in self.ignore:
                return
            label = f"{module_name}.{attr}"
            if isinstance(value, FunctionType) or inspect.isclass(value):
                if (isinstance(value, FunctionType) and is_user_file(value.__code__.co_filename)) or (
                    inspect.isclass(value) and is_user_class(value)
                ):
                    digest = self._class_digest(value) if inspect.isclass(value) else self._function_digest(value)
                    self.code[f"{value.__module__}.{value.__qualname__}"] = digest
                return
            if (position == len(chain) - 1 or not callable(value)) and (
                label not in self.globals and not inspect.isbuiltin(value)
            ):
                self.globals[label] = self.value(value, f"variable {label!r}")
            return

    # -- values ----------------------------------------------------------------

    def value(self, value: object, label: str) -> Json:
        """A JSON-able token of ``value``; strings and paths are also noted in :attr:`paths`."""
        self._items += 1
        if self._items > MAX_ITEMS:
            return self._unstable(label, f"more than {MAX_ITEMS:,} values")
        if value is None or isinstance(value, (bool, int)):
            return value
        if isinstance(value, str):
            self._note_path(value, label)
            return value
        if isinstance(value, float):
            return {"float": repr(value)}
        if isinstance(value, (bytes, bytearray, memoryview)):
            return {"bytes": xxhash.xxh3_128_hexdigest(bytes(value))}
        if isinstance(value, PurePath):
            self._note_path(str(value), label)
            return {"path": str(value)}
        if isinstance(value, enum.Enum):
            return {"enum": f"{type(value).__module__}.{type(value).__qualname__}", "name": value.name}
        if isinstance(value, _PLAIN_VALUE_TYPES):
            return {type(value).__qualname__: repr(value)}
        if isinstance(value, range):
            return {"range": [value.start, value.stop, value.step]}
        if isinstance(value, slice):
            return {"slice": [self.value(part, label) for part in (value.start, value.stop, value.step)]}
        if isinstance(value, re.Pattern):
            return {"regex": self.value(value.pattern, label), "flags": value.flags}
        if id(value) in self._active:
            return {"cycle": type(value).__qualname__}
        self._active.add(id(value))
        try:
            return self._composite(unwrapped(value), label)
        except RecursionError:
            return self._unstable(label, "nested too deeply to hash")
        finally:
            self._active.discard(id(value))

    def _composite(self, value: object, label: str) -> Json:
        numpy_token = self._numpy(value, label)
        if numpy_token is not None:
            return numpy_token
        if isinstance(value, (list, tuple, set, frozenset, deque)):
            items = [self.value(v, f"{label}[{i}]") for i, v in enumerate(value)]
            if isinstance(value, (set, frozenset)):
                items = sorted(items, key=canonical_json)
            if isinstance(value, deque):
                return {"deque": items, "maxlen": value.maxlen}
            return {type(value).__name__: items}
        if isinstance(value, dict) or (isinstance(value, Mapping) and type(value).__module__ == "collections"):
            pairs = [[self.value(k, f"{label} key"), self.value(v, f"{label}[{k!r}]")] for k, v in value.items()]
            return {"dict": sorted(pairs, key=canonical_json)}
        if isinstance(value, random.Random):
            return {"random.Random": self.value(value.getstate(), label)}
        if isinstance(value, logging.Logger):
            return {"logger": value.name}  # where messages go, not what the data is
        argparse = sys.modules.get("argparse")  # not imported: no value can be its Namespace (and a build need not)
        if isinstance(value, types.SimpleNamespace) or (argparse is not None and isinstance(value, argparse.Namespace)):
            return {type(value).__qualname__: self._fields(value, label)}
        library_token = self._library_value(value, label)
        if library_token is not None:
            return library_token
        own_token = getattr(value, "__stable_token__", None)
        if callable(own_token) and not inspect.isclass(value):
            return {type(value).__name__: self.value(own_token(), label)}
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict) and type(value).__module__.startswith("stable_explore"):
            return {type(value).__name__: self.value(to_dict(), label)}
        return self._callable_or_object(value, label)

    def _numpy(self, value: object, label: str) -> Json:
        if isinstance(value, np.generic):
            item = value.item()
            return {"np": str(value.dtype), "v": repr(item) if value.dtype.kind in "fc" else self.value(item, label)}
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                return {"ndarray": "object", "shape": list(value.shape), "items": self.value(value.tolist(), label)}
            data = np.ascontiguousarray(value)
            digest = xxhash.xxh3_128_hexdigest(data.reshape(-1).view(np.uint8).data if data.size else b"")
            return {"ndarray": data.dtype.str, "shape": list(data.shape), "xxh3": digest}
        if isinstance(value, np.random.Generator):
            bit_generator = value.bit_generator
            return {"np.Generator": type(bit_generator).__name__, "state": self.value(bit_generator.state, label)}
        if isinstance(value, np.random.RandomState):
            return {"np.RandomState": self.value(value.get_state(legacy=False), label)}
        if isinstance(value, np.dtype):
            return {"dtype": value.str}
        return None

    def _library_value(self, value: object, label: str) -> Json:
        """Pandas objects, PIL images and torch tensors, when those packages are loaded (else they cannot occur)."""
        pandas = sys.modules.get("pandas")
        if pandas is not None and (value is pandas.NA or value is pandas.NaT):
            return {"pandas": repr(value)}
        if pandas is not None and isinstance(value, pandas.Period):
            return {"pandas": "Period", "value": str(value), "freq": value.freqstr}
        if pandas is not None and isinstance(value, pandas.Interval):
            ends = [self.value(value.left, label), self.value(value.right, label)]
            return {"pandas": "Interval", "ends": ends, "closed": value.closed}
        if pandas is not None and isinstance(value, pandas.Categorical):
            return {
                "pandas": "Categorical",
                "categories": self.value(value.categories, label),
                "codes": self.value(np.asarray(value.codes), label),
                "ordered": bool(value.ordered),
            }
        if pandas is not None and isinstance(value, (pandas.DataFrame, pandas.Series, pandas.Index)):
            try:
                hashed = pandas.util.hash_pandas_object(value, index=not isinstance(value, pandas.Index))
            except (TypeError, ValueError) as exc:
                return self._unstable(label, f"a pandas {type(value).__name__} whose cells cannot be hashed ({exc})")
            token: dict[str, Json] = {
                "pandas": type(value).__name__,
                "shape": list(value.shape),
                "xxh3": xxhash.xxh3_128_hexdigest(np.ascontiguousarray(hashed.to_numpy(np.uint64)).data),
                # an Index's own level names; a Series' or DataFrame's, those of its index
                "index": [repr(n) for n in (value.names if isinstance(value, pandas.Index) else value.index.names)],
            }
            if isinstance(value, pandas.DataFrame):
                token["columns"] = [repr(c) for c in value.columns]
                token["dtypes"] = [str(d) for d in value.dtypes]
                self._note_paths_in(value, label)
            else:
                token["dtype"] = str(value.dtype)
                token["name"] = repr(value.name)
            return token
        pil = sys.modules.get("PIL.Image")
        if pil is not None and isinstance(value, pil.Image):
            palette = value.getpalette() if value.mode == "P" else None
            return {
                "PIL": value.mode,
                "size": list(value.size),
                "xxh3": xxhash.xxh3_128_hexdigest(value.tobytes()),
                "palette": palette,
            }
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, (torch.device, torch.dtype)):
            return {"torch": str(value)}
        if torch is not None and isinstance(value, torch.Tensor):
            tensor = value.detach().cpu().contiguous()
            raw = tensor.reshape(-1).view(torch.uint8).numpy() if tensor.numel() else b""
            return {"torch": str(tensor.dtype), "shape": list(tensor.shape), "xxh3": xxhash.xxh3_128_hexdigest(raw)}
        return None

    def _note_paths_in(self, frame: pd.DataFrame, label: str) -> None:
        """A table of file paths (an index of images, say) names files whose state counts too."""
        for column in frame.columns:
            series = frame[column]
            if series.dtype.kind not in "OSU" and str(series.dtype) not in ("string", "str"):
                continue
            for text in series.tolist():
                self._items += 1
                if self._items > MAX_ITEMS:
                    return
                if isinstance(text, str):
                    self._note_path(text, f"{label} column {column!r}")

    def _callable_or_object(self, value: object, label: str) -> Json:
        if isinstance(value, functools.partial):
            return {
                "partial": self.value(value.func, label),
                "args": self.value(value.args, label),
                "kwargs": self.value(dict(value.keywords), label),
            }
        if isinstance(value, FunctionType):
            name = f"{value.__module__}.{value.__qualname__}"
            if is_user_file(value.__code__.co_filename):
                return {"function": name, "code": self._function_digest(value)}
            return {"function": name}
        if inspect.isclass(value):
            name = f"{value.__module__}.{value.__qualname__}"
            return {"class": name, "code": self._class_digest(value)} if is_user_class(value) else {"class": name}
        if isinstance(value, ModuleType):
            return {"module": value.__name__}
        if inspect.isbuiltin(value) or inspect.ismethoddescriptor(value):
            return {"builtin": f"{getattr(value, '__module__', None)}.{getattr(value, '__qualname__', repr(value))}"}
        if inspect.ismethod(value):
            return {"method": value.__func__.__qualname__, "of": self.value(value.__self__, label)}
        if dataclasses.is_dataclass(value):
            cls = type(value)
            fields = {
                f.name: self.value(getattr(value, f.name), f"{label}.{f.name}") for f in dataclasses.fields(value)
            }
            return {"dataclass": self._class_token(cls), "fields": fields}
        if is_plain_user_object(value):
            return {"object": self._class_token(type(value)), "fields": self._fields(value, label)}
        kind = type(value)
        return self._unstable(label, f"a {kind.__module__}.{kind.__qualname__}")

    def _class_token(self, cls: type) -> Json:
        name = f"{cls.__module__}.{cls.__qualname__}"
        return [name, self._class_digest(cls)] if is_user_class(cls) else name

    def _fields(self, value: object, label: str) -> dict[str, Json]:
        fields: dict[str, Json] = {}
        for name, field_value in sorted(getattr(value, "__dict__", {}).items()):
            fields[name] = self.value(field_value, f"{label}.{name}")
        for cls in type(value).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if slot not in ("__dict__", "__weakref__") and hasattr(value, slot) and slot not in fields:
                    fields[slot] = self.value(getattr(value, slot), f"{label}.{slot}")
        return fields

    def _unstable(self, label: str, what: str) -> Json:
        self.unstable.setdefault(label, what)
        return {"unstable": label}

    def _note_path(self, text: str, label: str) -> None:
        if text and len(text) <= 4096 and "\x00" not in text and "\n" not in text and "://" not in text:
            self.paths.setdefault(text, label)


def fingerprint_parts(parts: Mapping[str, object]) -> str:
    """One digest over named parts (each already tokenised)."""
    return hashlib.sha256(canonical_json(dict(parts)).encode()).hexdigest()[:24]
