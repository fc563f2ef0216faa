"""Computed columns: ``ds.add_columns`` and ``ds.map`` give a new version that writes only the new columns.

``add_columns`` takes values computed elsewhere (model predictions, embeddings); ``map`` runs a
function over the rows, as Hugging Face ``datasets`` users expect: it gets an example (a dict),
or with ``batched=True`` a batch (a dict of lists), and returns a dict of new or replaced
columns. Either way the new version links its parent's files and writes one column group
(see :mod:`stable_explore.storage.format.column_groups`): one float column over a million rows
of images writes about 8 MB.

A ``map`` is a cache decision like a build: it is keyed by the parent version and the
function's fingerprint (its code, the globals and code it reaches, the files they name), so
running the cell again is a hit that says why, and a changed function says what changed.

Examples
--------
>>> import tempfile, stable_explore as se
>>> ds = se.build([{"x": i} for i in range(4)], se.Features(x=se.Value("int64")),
...               name="numbers", home=tempfile.mkdtemp(), progress=False)
>>> def square(row):
...     return {"square": row["x"] ** 2}
>>> squared = ds.map(square, progress=False)
>>> squared["square"], squared.build_info.split(":")[0]
([0, 1, 4, 9], 'computed')
>>> ds.map(square, progress=False).build_info
'reused: same function, parent version and features'
>>> ds.add_columns({"half": [0.0, 0.5, 1.0, 1.5]}, progress=False)[3]
{'x': 3, 'half': 1.5}
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pyarrow as pa
from typing_extensions import Unpack

from stable_explore._arrays import complex_refusal, holds_complex
from stable_explore.catalog import LATEST, check_name, open_catalog, plan_map
from stable_explore.catalog.parallel.executor import owned_pool
from stable_explore.catalog.plan import explain_changes
from stable_explore.dataset.map_options import MapOptions, check_map_options
from stable_explore.errors import EncodingError, InvalidArgumentTypeError, InvalidOptionError, SchemaError
from stable_explore.schema import HASH_COLUMN, KEY_COLUMN, Features, Value
from stable_explore.schema import Sequence as SequenceFeature
from stable_explore.storage.format.metadata import VersionMetadata
from stable_explore.versioning._column_version import publish_columns

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.schema.base import Feature

__all__ = ["add_columns", "map_rows"]

ColumnValues: TypeAlias = "pa.Array | pa.ChunkedArray | np.ndarray | Sequence[object]"  # a column's values

_CHUNK_ROWS = 65536  # add_columns writes its values this many rows at a time
_RESERVED = (KEY_COLUMN, HASH_COLUMN)
_RECENT_MAPS = 200  # versions looked at to explain why a map ran again


# -- values -> Arrow ---------------------------------------------------------------


def _feature_of(name: str, values: ColumnValues) -> Feature:
    """The feature for values given without one: from a numpy array's dtype and shape, or Arrow's inference."""
    array = values
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        arrow_type = values.type
    elif isinstance(values, np.ndarray) and values.ndim == 2 and values.dtype.kind in "biuf":
        return SequenceFeature(Value(str(pa.from_numpy_dtype(values.dtype))), length=int(values.shape[1]))
    else:
        try:
            array = pa.array(values if isinstance(values, np.ndarray) else list(values))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            if holds_complex(values):
                raise SchemaError(complex_refusal(name)) from exc
            msg = f"cannot tell the type of column {name!r} from its values ({exc}); pass features={{{name!r}: ...}}"
            raise SchemaError(msg) from exc
        arrow_type = array.type
    if pa.types.is_null(arrow_type):
        msg = f"column {name!r} holds only None: its type cannot be told; pass features={{{name!r}: ...}}"
        raise SchemaError(msg)
    try:
        return Features.from_arrow_schema(pa.schema([pa.field(name, arrow_type)]))[name]
    except SchemaError as exc:
        msg = f"column {name!r}: {exc}"
        raise SchemaError(msg) from exc


def _encoded(name: str, feature: Feature, values: ColumnValues, first_row: int = 0) -> pa.Array:
    """``values`` as ``feature`` stores them; an error names the column and the row."""
    arrow_type = feature.arrow_type
    try:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if isinstance(values, pa.Array) and values.type == arrow_type:
            return values
        if isinstance(values, np.ndarray) and values.ndim == 2 and pa.types.is_fixed_size_list(arrow_type):
            flat = pa.array(np.ascontiguousarray(values).reshape(-1), type=arrow_type.value_type)
            return pa.FixedSizeListArray.from_arrays(flat, int(values.shape[1]))
        if (
            isinstance(values, np.ndarray)
            and values.ndim == 1
            and isinstance(feature, Value)
            and not feature.is_temporal
        ):
            if values.dtype.kind == "f" and pa.types.is_integer(arrow_type) and not np.all(np.mod(values, 1) == 0):
                bad = int(np.flatnonzero(np.mod(values, 1) != 0)[0])
                msg = f"expected {feature.dtype}, got {values[bad]!r}, which would be truncated"
                raise EncodingError(msg, index=bad)
            return pa.array(values, type=arrow_type)
        listed = values.to_pylist() if isinstance(values, pa.Array) else list(values)
        listed = [v.tolist() if isinstance(v, np.ndarray) else v for v in listed]
        return feature.encode_column(listed)
    except EncodingError as exc:
        index = None if exc.index is None else first_row + exc.index
        raise EncodingError(exc.reason, field=name, index=index) from None
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        msg = f"expected {arrow_type}: {exc}"
        raise EncodingError(msg, field=name) from exc


def _check_columns(origin: CachedDataset, names: Sequence[str]) -> None:
    for name in names:
        if not isinstance(name, str) or not name:
            msg = f"a column needs a name of text, not empty; got {name!r}: name the column (a non-empty str)"
            raise SchemaError(msg)
        if name in _RESERVED:
            msg = f"{name!r} cannot be a column name (the row columns {list(_RESERVED)} are reserved)"
            raise SchemaError(msg)


def _record(origin: CachedDataset, operation: dict[str, Any], message: str | None, **source: Any) -> VersionMetadata:
    parent = origin.cache_meta.version_metadata
    return VersionMetadata(
        parent=origin.version,
        operations=(operation,),
        description=parent.description,
        license=parent.license,
        metadata=dict(parent.metadata),
        message=message,
        **source,
    )


def _progress(
    origin: CachedDataset, show: bool
) -> contextlib.AbstractContextManager[Callable[[int, int], None] | None]:
    if not show:
        return contextlib.nullcontext()
    from stable_explore.display.progress import saving_bar  # the UI layer, only for a bar that shows

    return saving_bar(origin.name or "dataset", len(origin))


# -- add_columns --------------------------------------------------------------------


def add_columns(
    origin: CachedDataset,
    columns: Mapping[str, ColumnValues],
    *,
    features: Features | Mapping[str, Feature] | None = None,
    message: str | None = None,
    tag: str | None = None,
    progress: bool = True,
    set_latest: bool = True,
) -> CachedDataset:
    """A new version of ``origin`` with ``columns`` added (or, for a name it has, replaced); see ``ds.add_columns``."""
    if not isinstance(columns, Mapping) or not columns:
        msg = "add_columns needs a dict of column name -> values (a list, numpy array or pyarrow array)"
        raise InvalidArgumentTypeError(msg)
    if tag is not None:
        check_name(tag, "tag")
    _check_columns(origin, list(columns))
    given = dict(features or {})
    stray = sorted(set(given) - set(columns))
    if stray:
        msg = f"features= names column(s) {stray} that are not among the columns added {list(columns)}"
        raise SchemaError(msg)
    added = Features(
        {
            name: given.get(name) or origin.features.get(name) or _feature_of(name, values)
            for name, values in columns.items()
        }
    )
    arrays = {}
    for name, values in columns.items():
        count = len(values)
        if count != len(origin):
            msg = f"column {name!r} has {count} values, but {origin.ref} has {len(origin)} rows"
            raise EncodingError(msg, field=name)
        arrays[name] = _encoded(name, added[name], values)

    def chunks() -> Iterator[pa.Table]:
        for start in range(0, len(origin), _CHUNK_ROWS):
            yield pa.table({name: array.slice(start, _CHUNK_ROWS) for name, array in arrays.items()})

    operation = {"op": "add_columns", "columns": list(added)}
    with _progress(origin, progress) as on_rows:
        dataset, info = publish_columns(
            origin,
            added,
            chunks(),
            _record(origin, operation, message),
            tag=tag,
            on_rows=on_rows,
            set_latest=set_latest,
        )
    dataset.build_info = f"saved: added {', '.join(added)}; {info}{_latest_note(dataset, set_latest)}"
    return dataset


# -- map -------------------------------------------------------------------------------


def _apply(function: Callable[..., object], rows: CachedDataset, batched: bool, first: int) -> dict[str, list[object]]:
    """The function's output over some rows, as column -> values; an error names the row."""
    out: dict[str, list[object]] = {}
    if batched:
        batch = next(rows.iter(batch_size=max(1, len(rows))), None) if len(rows) else None
        if batch is None:
            return out
        try:
            result = function(batch)
        except Exception as exc:
            _note(exc, f"ds.map: {_name(function)} failed on the batch of rows {first}-{first + len(rows) - 1}")
            raise
        if not isinstance(result, Mapping):
            msg = (
                f"ds.map: {_name(function)} returned {type(result).__name__} for {_batch_named(rows, first)}; "
                f"{_BATCHED_RULE} ({len(rows)} values)"
            )
            raise InvalidArgumentTypeError(msg)
        for name, values in result.items():
            if not _is_column(values):
                msg = (
                    f"ds.map: {_name(function)} returned {type(values).__name__} for column {name!r} of "
                    f"{_batch_named(rows, first)}; {_BATCHED_RULE} ({len(rows)} values)"
                )
                raise InvalidArgumentTypeError(msg)
            values = list(values)
            if len(values) != len(rows):
                msg = (
                    f"ds.map: {_name(function)} returned {len(values)} values for column {name!r} from a batch of "
                    f"{len(rows)} rows (rows {first}-{first + len(rows) - 1}); a batched map keeps the row count"
                )
                raise EncodingError(msg, field=str(name))
            out[str(name)] = values
        return out
    for offset, row in enumerate(rows):
        try:
            result = function(row)
        except Exception as exc:
            _note(exc, f"ds.map: {_name(function)} failed on row {first + offset}")
            raise
        if not isinstance(result, Mapping):
            msg = f"ds.map: {_name(function)} returned {type(result).__name__} for row {first + offset}, not a dict"
            raise InvalidArgumentTypeError(msg)
        if offset and {str(name) for name in result} != set(out):
            msg = (
                f"ds.map: {_name(function)} returned columns {sorted(result)} for row {first + offset}, "
                f"but {sorted(out)} for the rows before; every row must give the same columns"
            )
            raise SchemaError(msg)
        for name, value in result.items():
            out.setdefault(str(name), []).append(value)
    return out


_BATCHED_RULE = "a batched function must return a dict of columns, each a list as long as the batch"


def _batch_named(rows: CachedDataset, first: int) -> str:
    """``the batch of rows 0-9 (its first row, 0, has key 'k0')``, for an error about a batched map's output."""
    try:
        key: object = rows[0:1].keys()[0]
    except Exception:  # noqa: BLE001 - naming the key is a courtesy: the rows are named anyway
        return f"the batch of rows {first}-{first + len(rows) - 1}"
    return f"the batch of rows {first}-{first + len(rows) - 1} (its first row, {first}, has key {key!r})"


def _is_column(values: object) -> bool:
    """Whether a batched map's output for one column is a column of values (a list, an array), not one value."""
    if isinstance(values, (str, bytes, bytearray, Mapping)) or not isinstance(values, Iterable):
        return False
    return getattr(values, "ndim", 1) != 0  # a 0-d numpy array is one value


def _map_range(
    function: Callable[..., object] | bytes, rows: CachedDataset, batched: bool, batch_size: int, first: int
) -> list[dict[str, list[object]]]:
    """A worker's share of a map: its rows, batch after batch (``function`` may be pickled bytes)."""
    # the caller's own function, sent to its own workers (pickled by _shipped)
    run: Callable[..., object] = pickle.loads(function) if isinstance(function, bytes) else function  # noqa: S301
    return [
        _apply(run, rows[start : start + batch_size], batched, first + start)
        for start in range(0, len(rows), batch_size)
    ]


def _note(error: BaseException, note: str) -> None:
    add = getattr(error, "add_note", None)
    if add is not None:
        add(note)


def _name(function: object) -> str:
    return str(getattr(function, "__qualname__", type(function).__name__))


def _shipped(function: Callable[..., object]) -> Callable[..., object] | bytes:
    """The function as worker processes get it: by cloudpickle when installed (notebook functions), else as is."""
    try:
        import cloudpickle
    except ImportError:
        return function
    pickled: bytes = cloudpickle.dumps(function)
    return pickled


def _outputs(
    origin: CachedDataset,
    function: Callable[..., object],
    *,
    batched: bool,
    batch_size: int,
    num_proc: int | None,
    executor: Executor | None,
) -> Iterator[tuple[int, dict[str, list[object]]]]:
    """(first row, outputs) of each batch of rows, in row order, computed here or by ``executor`` / ``num_proc``."""
    total = len(origin)
    if executor is None and (num_proc is None or num_proc <= 1 or total <= batch_size):
        for start in range(0, total, batch_size):
            yield start, _apply(function, origin[start : start + batch_size], batched, start)
        return
    own = executor is None
    pool: Executor
    if executor is None:
        assert num_proc is not None
        pool = owned_pool(num_proc)  # its workers end when this process is killed
    else:
        pool = executor
    workers = num_proc or 4
    per_task = max(batch_size, -(-total // (workers * 4)) // batch_size * batch_size or batch_size)
    shipped = _shipped(function)
    try:
        futures = [
            (start, pool.submit(_map_range, shipped, origin[start : start + per_task], batched, batch_size, start))
            for start in range(0, total, per_task)
        ]
        for start, future in futures:
            for offset, outputs in enumerate(future.result()):
                yield start + offset * batch_size, outputs
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)


def _last_map(origin: CachedDataset, function_name: str) -> VersionMetadata | None:
    """The newest version of the dataset a map of a function of this name made (to explain a recompute)."""
    catalog = open_catalog(origin.home)
    assert origin.name is not None
    found: list[VersionMetadata] = []
    for version_id in catalog.version_ids(origin.name)[-_RECENT_MAPS:]:
        with contextlib.suppress(OSError, ValueError):
            record = catalog.version_meta(origin.name, version_id).version_metadata
            source = record.source or {}
            if source.get("kind") == "map" and source.get("function") == function_name:
                found.append(record)
    return max(found, key=lambda r: r.created_at or "", default=None)


def map_rows(
    origin: CachedDataset,
    function: Callable[..., object],
    **options: Unpack[MapOptions],
) -> CachedDataset:
    """A new version of ``origin`` with the columns ``function`` returns; see ``ds.map`` (and its defaults)."""
    check_map_options(options)
    batched = options.get("batched", False)
    batch_size = options.get("batch_size", 1000)
    num_proc = options.get("num_proc")
    executor = options.get("executor")
    features = options.get("features")
    message = options.get("message")
    tag = options.get("tag")
    force = options.get("force", False)
    progress = options.get("progress", True)
    set_latest = options.get("set_latest", False)
    if batch_size < 1:
        msg = f"batch_size must be at least 1, got {batch_size}"
        raise InvalidOptionError(msg)
    if num_proc is not None and num_proc < 1:
        msg = f"num_proc must be at least 1, got {num_proc}"
        raise InvalidOptionError(msg)
    if tag is not None:
        check_name(tag, "tag")
    if origin.home is None or not origin.name:
        msg = (
            f"map needs a version in a catalog, and {origin.ref} was opened by its folder: build it into one "
            "(se.build(ds, ds.features, name=...)), then map it"
        )
        raise InvalidOptionError(msg)
    if origin.is_view:  # its rows become a version of their own (linked, not copied), which the map then extends
        saved = _saved_view(origin, function, progress=progress)
        try:
            return map_rows(saved, function, **options)
        except BaseException:
            _take_back(saved)
            raise
    assert origin.name is not None
    assert origin.home is not None
    given = Features(dict(features)) if features is not None else None
    plan = plan_map(function, origin.version, batched=batched, features=given, home=open_catalog(origin.home).home)
    catalog = open_catalog(origin.home)
    if tag is not None:  # a tag that cannot move fails now, not after the function ran over every row
        catalog.check_ref_movable(origin.name, tag)
    decides = plan.fingerprint is not None and not plan.unstable
    if decides and not force:
        assert plan.fingerprint is not None
        hit = catalog.reuse_source(origin.name, plan.fingerprint)
        if hit is not None:
            from stable_explore.dataset import CachedDataset

            if tag is not None:
                catalog.write_ref(origin.name, tag, hit)
            if set_latest:
                catalog.write_ref(origin.name, LATEST, hit)
            return CachedDataset(
                catalog.version_meta(origin.name, hit),
                name=origin.name,
                version=hit,
                home=catalog.where,
                build_info="reused: same function, parent version and features",
            )
    if force:
        why = "recomputed: force=True"
    elif not decides:
        why = "computed: " + (plan.advice() or "the function has no fingerprint")
    else:
        earlier = _last_map(origin, _name(function))
        changes = explain_changes(earlier.source, plan.parts) if earlier is not None else []
        why = (
            "recomputed: " + "; ".join(changes)
            if changes
            else f"computed: first map of {_name(function)} on {origin.ref}"
        )

    added: Features | None = None

    def chunks() -> Iterator[pa.Table]:
        nonlocal added
        for start, outputs in _outputs(
            origin, function, batched=batched, batch_size=batch_size, num_proc=num_proc, executor=executor
        ):
            if added is None:
                _check_columns(origin, list(outputs))
                if not outputs:
                    msg = f"ds.map: {_name(function)} returned no columns (a dict of new or replaced columns)"
                    raise SchemaError(msg)
                added = Features(
                    {
                        name: (given.get(name) if given is not None else None)
                        or origin.features.get(name)
                        or _feature_of(name, values)
                        for name, values in outputs.items()
                    }
                )
            elif set(outputs) != set(added):
                msg = (
                    f"ds.map: {_name(function)} returned columns {sorted(outputs)} from row {start} on, "
                    f"but {sorted(added)} before; every row must give the same columns"
                )
                raise SchemaError(msg)
            yield pa.table({name: _encoded(name, added[name], outputs[name], start) for name in added})

    # the group's features are known from the first batch: peek at it before the version is written
    stream = chunks()
    first = next(stream, None)
    if first is None:  # an empty version: the features must be given
        if given is None:
            msg = "ds.map over a version without rows needs features= (no row shows what the function returns)"
            raise SchemaError(msg)
        added = given
        stream = iter(())
    operation = {"op": "map", "function": _name(function), "columns": list(added or {})}
    assert added is not None

    def everything() -> Iterator[pa.Table]:
        if first is not None:
            yield first
        yield from stream

    source = {"source_fingerprint": plan.fingerprint if decides else None, "source": plan.parts}
    with _progress(origin, progress) as on_rows:
        dataset, info = publish_columns(
            origin,
            added,
            everything(),
            _record(origin, operation, message, **source),
            tag=tag,
            on_rows=on_rows,
            set_latest=set_latest,
        )
    dataset.build_info = f"{why}; {info}{_latest_note(dataset, set_latest)}"
    return dataset


def _saved_view(view: CachedDataset, function: Callable[..., object], *, progress: bool) -> CachedDataset:
    """A view's rows saved as a version of the same dataset, for a map over them (the same rows: the same version).

    ``latest`` stays where it is: the map's own version moves it, when asked.
    """
    from stable_explore.versioning.edits import Draft

    try:
        saved = Draft(view).save(
            message=f"the {len(view)} rows of a view of {view.ref} that {_name(function)} maps",
            progress=progress,
            set_latest=False,
        )
    except SchemaError as exc:  # columns removed, renamed or cast: no stored rows to save
        msg = f"ds.map on this view: {exc}"
        raise SchemaError(msg) from exc
    return saved


def _take_back(saved: CachedDataset) -> None:
    """A view's rows saved for a map that failed: removed again when this call made them and nothing points at them.

    A map that fails saves nothing. In a bucket the version stays until gc takes it (no ref points at it).
    """
    if "identical content" in (saved.build_info or "") or "nothing to save" in (saved.build_info or ""):
        return  # the version was there before this map
    catalog = open_catalog(saved.home)
    name = saved.name
    assert name is not None
    if catalog.store.local_path(name) is None:
        return
    from stable_explore.catalog.publish import remove_version_dir

    with catalog.refs_lock(name):
        if saved.version not in catalog.refs(name).values():
            remove_version_dir(catalog.version_dir(name, saved.version))


def _latest_note(dataset: CachedDataset, set_latest: bool) -> str:
    """What the build info adds when ``latest`` was not moved: where it points, and how to move it."""
    if set_latest:
        return ""
    return (
        f"; latest not moved (se.load({dataset.name!r}) opens {dataset.name}@{dataset.latest_version}): "
        "set_latest=True, or se.tag(ds, 'latest'), makes this the latest"
    )
