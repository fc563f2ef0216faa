"""A package's exported names, imported from their modules when first used (PEP 562), so a bare import stays cheap.

``import stable_explore`` runs in the magic's ``%load_ext``, in every ``stable-explore`` command and in
every DataLoader worker: it should not import the catalog, pyarrow's compute kernels or pandas before
a name is used. A package hands :func:`lazy_exports` the module each name lives in and installs the
two functions it returns as its module ``__getattr__`` and ``__dir__`` (in the ``else:`` of an
``if TYPE_CHECKING:`` whose body imports the same names, so type checkers and IDEs see them all and
a misspelt name stays a type error).

Examples
--------
>>> import sys, types
>>> package = types.ModuleType("demo")
>>> sys.modules["demo"] = package
>>> package.__getattr__, package.__dir__ = lazy_exports("demo", {"dedent": "textwrap"})  # an absolute module
>>> package.dedent("  x")
'x'
>>> "dedent" in vars(package), "dedent" in dir(package)
(True, True)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], submodules: Iterable[str] = ()
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A module ``__getattr__`` importing each name of ``exports`` from its module on first use, and ``__dir__``.

    Parameters
    ----------
    package:
        The package's ``__name__`` (it must be in ``sys.modules``, as it is while its ``__init__`` runs).
    exports:
        ``{name: module}``: the module each exported name is imported from, absolute (``"textwrap"``) or,
        with a leading dot, one of the package's own (``".frame"``, as in a relative import).
    submodules:
        The package's own modules reachable as attributes before anything imported them
        (``se.display.show``, as when the package imported them all).

    Returns
    -------
    tuple
        ``(__getattr__, __dir__)``. A name, once imported, is kept in the package's namespace, so
        later uses are plain attribute reads; ``__dir__`` lists the exported names before they are.

    Examples
    --------
    >>> import sys, types
    >>> sys.modules["demo_names"] = types.ModuleType("demo_names")
    >>> get, _ = lazy_exports("demo_names", {"sqrt": "math"})
    >>> get("sqrt")(9.0)
    3.0
    """
    namespace = vars(sys.modules[package])
    modules = frozenset(submodules)
    exports = {name: f"{package}{module}" if module.startswith(".") else module for name, module in exports.items()}

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None and name in modules:
            __import__(f"{package}.{name}")  # the import system sets it on the package
            return namespace[name]
        if module is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg, name=name, obj=sys.modules[package])
        __import__(module)  # the import statement's own path, so `python -X importtime` shows it as any import
        value: object = getattr(sys.modules[module], name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports) | modules)

    return __getattr__, __dir__
