"""``%stable_cache`` and ``%stable_ls``: the IPython front door over :func:`stable_explore.build`.

Load with ``%load_ext stable_explore``. IPython is imported only here, so the
package itself imports without it.

Line form::

    %stable_cache pets = pets("data/pets") --features features --description "Pets subset"

Cell form (the body is the body of a generator, and sees the notebook's variables)::

    %%stable_cache squares --features features
    for i in range(n):
        yield {"x": i * i}
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import inspect
import linecache
import re
import shlex
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import FunctionType
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from stable_explore.api._user_errors import raised_in_user_code, trimmed_traceback
from stable_explore.catalog.build_arguments import BUILD_ARGUMENTS
from stable_explore.catalog.names import LATEST, check_name
from stable_explore.errors import CacheWriteError, StableCacheError, StableExploreError

if TYPE_CHECKING:
    from stable_explore.schema import Features

# ``%load_ext stable_explore`` imports this module: what a build needs (the catalog, the schema, pyarrow)
# is imported by the first %stable_cache, in the methods that use it (issue 39)

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from stable_explore.dataset import CachedDataset
    from stable_explore.display.table import Table

__all__ = ["StableCacheError", "StableMagics", "load_ipython_extension"]

_Method = TypeVar("_Method", bound=Callable[..., object])


@dataclass
class _Scan:
    """One walk over ``EXPR --opt ...``, outside strings: where the options start, and what is left open."""

    options_at: int | None = None  # the space before the first `` --name`` outside brackets and strings
    opened: list[int] = field(default_factory=list)  # the brackets still open at the end
    quote_at: int | None = None  # where a string that is never closed opens


def _scan(text: str) -> _Scan:
    found = _Scan()
    quote: str | None = None
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote, found.quote_at = None, None
                continue
        elif char in "\"'":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else char
            found.quote_at = i
            i += len(quote)
            continue
        elif char in "([{":
            found.opened.append(i)
        elif char in ")]}" and found.opened:
            found.opened.pop()
        elif (
            found.options_at is None
            and not found.opened
            and char.isspace()
            and text[i + 1 : i + 3] == "--"
            and text[i + 3 : i + 4].isalpha()
        ):
            found.options_at = i
        i += 1
    return found


def _split_options(text: str) -> tuple[str, str]:
    """Split ``EXPR --opt ...`` at the first `` --name`` outside brackets and strings."""
    at = _scan(text).options_at
    if at is None:
        return text.strip(), ""
    return text[:at].strip(), text[at + 1 :].strip()


def _check_parses(expression: str) -> None:
    """Say where ``EXPR`` of ``NAME = EXPR`` does not parse, before its options are read or it is run.

    An unclosed bracket or string swallows the options after it (``gen( --features F`` is all expression),
    which used to be reported as a missing ``--features``.
    """
    try:
        ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        column = max((exc.offset or 1) - 1, 0)
        what = exc.msg
        opened = _unclosed(expression)
        if opened is not None:
            column = opened
            what = f"{expression[opened]!r} is never closed, so everything after it (options too) is read as part of it"
        pointer = " " * min(column, len(expression)) + "^"
        msg = (
            f"the expression does not parse: {what}\n    {expression}\n    {pointer}\n"
            "usage: %stable_cache NAME = EXPR [--features F] [options], where EXPR is Python (e.g. gen('data'))"
        )
        raise StableCacheError(msg) from None


def _unclosed(text: str) -> int | None:
    """Where the first bracket or string of ``text`` that is never closed opens (None if all are closed)."""
    found = _scan(text)
    if found.quote_at is not None:
        return found.quote_at
    return found.opened[0] if found.opened else None


_TOKEN = re.compile(r"""\s*("[^"]*"|'[^']*'|\S+)""")


# The options of %stable_cache that take no value (the rest take one); tests check this against its parser.
FLAG_OPTIONS = frozenset({"--force", "--check-content", "--batched", "--quiet", "-q"})


def _leading_options(text: str) -> tuple[str, str]:
    """Split ``[options] NAME ...`` into the options given before NAME and the rest.

    An option that takes a value consumes the next token (a quoted value is one
    token); an option taking several values (``--ignore``) takes one here, so
    ``--ignore a --ignore b`` before the name, or any number after the expression.
    """
    position = 0
    while True:
        match = _TOKEN.match(text, position)
        if match is None or not match.group(1).startswith("-"):
            return text[:position].strip(), text[position:].strip()
        token = match.group(1)
        position = match.end()
        if "=" not in token and token not in FLAG_OPTIONS:
            value = _TOKEN.match(text, position)
            if value is not None:
                position = value.end()


def _show_error(
    shell: InteractiveShell, etype: type, value: BaseException, tb: object, tb_offset: int | None = None
) -> list[str]:
    """IPython custom-exception handler for StableCacheError."""
    if isinstance(value, StableCacheError) and value.original is not None:
        stb = [str(value), *trimmed_traceback(value.original)]
    else:
        stb = [f"{etype.__name__}: {value}"]
    shell._showtraceback(etype, value, stb)
    return stb


def _failure_note(error: BaseException, *, pop: bool = False) -> str | None:
    """What a failed build left, noted on its error (taken off with ``pop``); an error with no notes has none."""
    if not getattr(error, "__notes__", None):  # no note, and no catalog build to import for it
        return None
    from stable_explore.catalog.build import failure_note_of, pop_failure_note

    return pop_failure_note(error) if pop else failure_note_of(error)


def _when(created_at: str | None) -> str:
    if not created_at:
        return "at an unknown time"
    return created_at[:16].replace("T", " ") + " UTC"


def _build_arguments(method: _Method) -> _Method:
    """Add the build options the CLI's ``build`` shares (``BUILD_ARGUMENTS``), in their order.

    Each ``argument`` decorator notes its option on the method and returns the method itself.
    """
    for flags, options in reversed(BUILD_ARGUMENTS):
        method = argument(*flags, **options)(method)
    return method


@magics_class
class StableMagics(Magics):
    """The ``%stable_cache`` / ``%%stable_cache`` and ``%stable_ls`` magics."""

    def __init__(self, shell: InteractiveShell | None = None, **kwargs: object) -> None:
        super().__init__(shell, **kwargs)
        self._shadowed: dict[str, FunctionType] = {}  # ``pets = pets(...)``: the generator the dataset hides

    @magic_arguments()
    @argument("--features", "-f", metavar="F", help="the Features (a variable name or expression)")
    @argument("--name", help="the dataset's name in the catalog (default: NAME)")
    @argument("--metadata", metavar="M", help="a variable holding a JSON-ready dict of metadata")
    @_build_arguments
    @argument(
        "--num-proc",
        type=int,
        default=None,
        metavar="K",
        help="build on K processes: the generator's list arguments are split into K tasks (same version id)",
    )
    @argument("--home", help="the catalog root: a folder or s3://bucket/prefix (default $STABLE_EXPLORE_HOME)")
    @argument("--quiet", "-q", action="store_true", help="no progress bar and no summary line")
    @line_cell_magic
    def stable_cache(self, line: str, cell: str | None = None) -> CachedDataset | None:
        """Cache what a generator yields as a version of a dataset, or reuse the version it built before.

        Line form: ``%stable_cache [options] NAME = EXPR [options]``, where EXPR calls a
        generator function (``pets("data/pets")``) or is any iterable. Cell form:
        ``%%stable_cache [options] NAME [options]``, whose body is the body of a
        generator. The dataset is bound to NAME and displayed (end the line
        with ``;`` to silence it).

        A re-run is a cache hit when the generator's source (or the cell's
        text), the code it reaches in your own modules, its arguments, the
        notebook variables it reads, the files under the paths those name and
        the features are unchanged; otherwise it rebuilds and says what changed.
        A hit never moves ``latest``.
        """
        text = line.rstrip()
        silent = text.endswith(";")
        if silent:
            text = text[:-1].rstrip()
        variable: str | None = None
        args: argparse.Namespace | None = None
        try:
            # options may come first too: ``%stable_cache -q pets = pets("data") --features F``
            leading, text = _leading_options(text)
            if leading:  # a bad option before the name is named as such, not as a missing "NAME ="
                self.stable_cache.parser.parse_args(shlex.split(leading))
            if cell is None:
                variable, expression, options = self._parse_line(text)
            else:
                variable, _, options = text.partition(" ")
                variable, expression = variable.strip(), None
                if not variable.isidentifier():
                    msg = f"usage: %%stable_cache NAME [options]; {variable!r} is not a variable name"
                    raise StableCacheError(msg)
            # shlex, not IPython's arg_split, so that quotes are removed as in a shell
            args = self.stable_cache.parser.parse_args(shlex.split(f"{leading} {options}"))
            ds = self._build(variable, expression, cell, args)
        except (StableCacheError, UsageError):
            raise
        except KeyboardInterrupt as exc:
            msg = f"interrupted: {self._kept(variable, args, exc)}"
            raise StableCacheError(msg) from None
        except CacheWriteError as exc:
            # a full disk, a quota, a read-only home: the machine's state, not a bug; one line says it
            msg = f"could not write the cache: {exc}; {self._kept(variable, args, exc)}"
            raise StableCacheError(msg) from None
        except StableExploreError as exc:
            note = _failure_note(exc)
            raise StableCacheError(f"{exc}; {note}" if note else str(exc)) from None
        except Exception as exc:
            if not raised_in_user_code(exc):
                raise  # our own failure: the full traceback is what a bug report needs
            msg = f"the generator raised {type(exc).__name__}; {self._kept(variable, args, exc)}"
            _failure_note(exc, pop=True)  # said in the first line; the traceback below ends at the user's code
            raise StableCacheError(msg, original=exc) from None
        assert variable is not None
        assert args is not None
        previous = self._namespace.get(variable)
        if inspect.isfunction(previous):
            # ``pets = pets("data")``: the dataset takes the function's name; keep the function for re-runs
            self._shadowed[variable] = previous
        self._namespace[variable] = ds
        if not args.quiet:
            print(self._summary_line(ds))
        return None if silent else ds

    def _parse_line(self, text: str) -> tuple[str, str, str]:
        head, equals, rest = text.partition("=")
        variable = head.strip()
        if not equals or not variable.isidentifier() or rest.startswith("="):
            msg = "usage: %stable_cache NAME = EXPR [--features F] [options]  (see %stable_cache?)"
            raise StableCacheError(msg)
        expression, options = _split_options(rest)
        if not expression:
            msg = f"nothing to cache: give an expression after '{variable} ='"
            raise StableCacheError(msg)
        _check_parses(expression)
        return variable, expression, options

    @property
    def _namespace(self) -> dict[str, object]:
        assert self.shell is not None, "the magics are registered on a shell"
        namespace: dict[str, object] = self.shell.user_ns
        return namespace

    def _eval(self, expression: str) -> object:
        try:
            return eval(expression, self._namespace)  # noqa: S307 - the user's own notebook expression
        except Exception as exc:  # noqa: BLE001 - any error in the user's expression is theirs to see
            msg = f"evaluating {expression!r} raised {type(exc).__name__}; nothing was cached"
            raise StableCacheError(msg, original=exc) from None

    def _features(self, args: argparse.Namespace) -> Features:
        from stable_explore.schema import Features

        if not args.features:
            msg = "pass --features F, where F is a stable_explore.Features describing each example"
            raise StableCacheError(msg)
        value = self._eval(args.features)
        if isinstance(value, Mapping) and not isinstance(value, Features):
            try:
                return Features(value)  # a dict of feature types, as se.build takes it
            except StableExploreError as exc:
                raise StableCacheError(str(exc)) from None
        if not isinstance(value, Features):
            msg = f"--features {args.features} is a {type(value).__name__}, not a stable_explore.Features"
            raise StableCacheError(msg)
        return value

    def _build(
        self, variable: str, expression: str | None, cell: str | None, args: argparse.Namespace
    ) -> CachedDataset:
        from stable_explore.api.building import build_from_options
        from stable_explore.catalog import open_catalog, options_from_args, plan_source

        name = check_name(args.name or variable)
        features = self._features(args)
        metadata = self._eval(args.metadata) if args.metadata else None
        options = options_from_args(args, metadata=metadata or {})
        catalog = open_catalog(args.home)
        call_args: tuple[object, ...] = ()
        call_kwargs: dict[str, object] = {}
        if cell is not None:
            source: object = self._cell_function(variable, cell)
            plan = plan_source(source, features, options, home=catalog.home).as_cell(name)
        else:
            assert expression is not None
            source, call_args, call_kwargs = self._line_source(expression)
            plan = plan_source(source, features, options, args=call_args, kwargs=call_kwargs, home=catalog.home)
        return build_from_options(
            catalog,
            name,
            source,
            features,
            options,
            args=call_args,
            kwargs=call_kwargs,
            plan=plan,
            progress=not args.quiet,
        )

    def _line_source(self, expression: str) -> tuple[object, tuple[object, ...], dict[str, object]]:
        """A generator function and its evaluated arguments when EXPR is such a call; else the iterable."""
        try:
            tree = ast.parse(expression, mode="eval").body
        except SyntaxError as exc:
            msg = f"cannot parse {expression!r}: {exc.msg}"
            raise StableCacheError(msg) from None
        if isinstance(tree, ast.Call) and not any(isinstance(a, ast.Starred) for a in tree.args):
            function = self._function_named(tree.func)
            if inspect.isfunction(function) and all(k.arg is not None for k in tree.keywords):
                call_args = tuple(self._eval(ast.unparse(a)) for a in tree.args)
                call_kwargs = {k.arg: self._eval(ast.unparse(k.value)) for k in tree.keywords if k.arg}
                return function, call_args, call_kwargs
        # a bare generator function (called with no arguments), or any iterable
        value = self._eval(expression)
        if isinstance(tree, ast.Name) and not inspect.isfunction(value) and tree.id in self._shadowed:
            return self._shadowed[tree.id], (), {}
        return value, (), {}

    def _function_named(self, node: ast.expr) -> object:
        """Evaluate the called expression; ``pets = pets(...)`` re-run finds the function the dataset shadows."""
        value = self._eval(ast.unparse(node))
        if isinstance(node, ast.Name) and not inspect.isfunction(value) and node.id in self._shadowed:
            return self._shadowed[node.id]
        return value

    def _cell_function(self, name: str, cell: str) -> FunctionType:
        """Compile the cell body as the body of a generator function over the notebook's namespace."""
        body = textwrap.indent(textwrap.dedent(cell), "    ") or "    pass\n"
        source = f"def {name}():\n{body}\n"
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]
        filename = f"<stable_cache {name} {digest}>"
        # Registered so inspect.getsource and tracebacks can show the cell's lines.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            code = compile(source, filename, "exec")
        except SyntaxError as exc:
            msg = f"the cell is not valid Python: {exc.msg} (line {(exc.lineno or 1) - 1})"
            raise StableCacheError(msg) from None
        namespace = self._namespace
        scratch: dict[str, object] = {}
        exec(code, namespace, scratch)  # noqa: S102 - defines the user's own generator
        function = scratch[name]
        if not inspect.isfunction(function) or not inspect.isgeneratorfunction(function):
            msg = "the cell body must yield examples (dicts, or (key, dict) pairs)"
            raise StableCacheError(msg)
        return function

    @staticmethod
    def _kept(variable: str | None, args: object, error: BaseException | None = None) -> str:
        """What a failed build left: how many rows were read, nothing new, and which version is still the latest."""
        note = _failure_note(error) if error is not None else None
        if note:
            return note
        name = (getattr(args, "name", None) or variable) if args is not None else variable
        kept = "no version existed before"
        if name:
            from stable_explore.catalog import open_catalog

            try:
                catalog = open_catalog(getattr(args, "home", None))
                latest = catalog.read_ref(name, LATEST) if catalog.version_ids(name) else None
            except (OSError, ValueError):
                latest = None
            if latest:
                kept = f"{name}@{latest} is kept as the latest version"
        return f"nothing was saved; {kept}"

    @staticmethod
    def _summary_line(ds: CachedDataset) -> str:
        created = _when(ds.metadata.get("created_at"))
        latest = ds.latest_version
        if latest is None:
            where = ""
        elif latest == ds.version:
            where = " · latest"
        else:
            where = f" · latest is {ds.name}@{latest}"
        return f"{ds.ref}: {ds.build_info} · {len(ds):,} rows, built {created}{where}"

    @magic_arguments()
    @argument("name", nargs="?", help="a dataset: list its versions")
    @argument("--home", help="the catalog root: a folder or s3://bucket/prefix (default $STABLE_EXPLORE_HOME)")
    @line_magic
    def stable_ls(self, line: str) -> Table:
        """List datasets (``%stable_ls``) or one dataset's versions (``%stable_ls NAME``)."""
        from stable_explore.api import datasets, versions

        args = self.stable_ls.parser.parse_args(shlex.split(line))
        return versions(args.name, home=args.home) if args.name else datasets(home=args.home)


def load_ipython_extension(ipython: Any) -> None:  # the shell, passed on by stable_explore's own hook
    """Register the magics and the short error display (``%load_ext stable_explore``)."""
    ipython.register_magics(StableMagics)
    ipython.set_custom_exc((StableCacheError,), _show_error)


def unload_ipython_extension(ipython: Any) -> None:
    """Drop the short error display (``%unload_ext stable_explore``)."""
    ipython.set_custom_exc((), None)
