"""Check a JSON-ready value against the TypedDict that declares it, at run time, key for key.

mypy checks the code that builds a message against its TypedDict; :func:`conforms` checks what the
code really produced (every required key there, no key undeclared, each value of its declared type),
so a declaration cannot drift from the JSON a page or a file receives.
"""

from __future__ import annotations

import collections.abc
import types
import typing

import typing_extensions as te

from stable_explore._json import Json, JsonObject

# names a TypedDict's module imports for type checking only (its annotations name them as text)
_TYPE_ONLY = {"Json": Json, "JsonObject": JsonObject}


def conforms(value: object, hint: object, where: str = "message") -> None:
    """Assert ``value`` is of the type ``hint`` (TypedDicts, lists, dicts, unions, Literals, plain types)."""
    if isinstance(hint, typing.ForwardRef):  # inside the recursive Json alias: list["Json"], dict[str, "Json"]
        hint = _TYPE_ONLY[hint.__forward_arg__]
    origin = te.get_origin(hint)
    if te.is_typeddict(hint):
        assert isinstance(value, dict), f"{where}: expected an object, found {value!r}"
        hints = te.get_type_hints(hint, include_extras=True, localns=_TYPE_ONLY)
        undeclared = set(value) - set(hints)
        assert not undeclared, f"{where}: keys {sorted(undeclared)} are not in {hint.__name__}"
        for key, field in hints.items():
            optional = te.get_origin(field) is te.NotRequired or not getattr(hint, "__total__", True)
            if te.get_origin(field) in (te.NotRequired, te.Required):
                field = te.get_args(field)[0]
            if key not in value:
                assert optional, f"{where}: {hint.__name__} requires {key!r}, missing from {sorted(value)}"
                continue
            conforms(value[key], field, f"{where}.{key}")
    elif origin in (typing.Union, types.UnionType):
        failures = []
        for option in te.get_args(hint):
            try:
                conforms(value, option, where)
            except AssertionError as exc:
                failures.append(str(exc))
            else:
                return
        raise AssertionError(f"{where}: {value!r} is none of {hint}: {failures}")
    elif origin is te.Literal:
        assert value in te.get_args(hint), f"{where}: {value!r} is not one of {te.get_args(hint)}"
    elif origin is tuple:
        assert isinstance(value, tuple), f"{where}: expected a tuple, found {value!r}"
        items = te.get_args(hint)
        assert len(value) == len(items), f"{where}: expected {len(items)} items, found {value!r}"
        for i, (element, item) in enumerate(zip(value, items, strict=True)):
            conforms(element, item, f"{where}[{i}]")
    elif origin is list:
        assert isinstance(value, list), f"{where}: expected a list, found {value!r}"
        (item,) = te.get_args(hint)
        for i, element in enumerate(value):
            conforms(element, item, f"{where}[{i}]")
    elif origin in (dict, collections.abc.Mapping):
        assert isinstance(value, dict), f"{where}: expected a dict, found {value!r}"
        key_type, value_type = te.get_args(hint)
        for key, element in value.items():
            conforms(key, key_type, f"{where} key")
            conforms(element, value_type, f"{where}[{key!r}]")
    elif hint is None or hint is type(None):
        assert value is None, f"{where}: expected None, found {value!r}"
    elif hint is float:
        assert isinstance(value, (int, float)), f"{where}: expected a number, found {value!r}"
        assert not isinstance(value, bool), f"{where}: expected a number, found {value!r}"
    elif hint is int:
        assert isinstance(value, int), f"{where}: expected an int, found {value!r}"
        assert not isinstance(value, bool), f"{where}: expected an int, found {value!r}"
    elif hint is object:
        return
    else:
        assert isinstance(hint, type), f"{where}: the test cannot check {hint!r}"
        assert isinstance(value, hint), f"{where}: expected {hint.__name__}, found {value!r}"
