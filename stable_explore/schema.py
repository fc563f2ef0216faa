"""Feature types: what a column holds, its Arrow type, how to encode and decode it.

A :class:`Features` maps column names to feature types. It round-trips through
JSON (``to_dict`` / ``from_dict``), so every cache carries its full schema
(label names, shapes, dtypes) and opens without the code that built it.

Example
-------
>>> from stable_explore import Features, ClassLabel, Image, Value
>>> features = Features(image=Image(), label=ClassLabel(names=["cat", "dog"]), path=Value("string"))
>>> features["label"].str2int("dog")
1
>>> Features.from_dict(features.to_dict()) == features
True
"""

from __future__ import annotations

import contextlib
import difflib
import io
import itertools
import json
import os
from collections.abc import Iterable, Mapping
from collections.abc import Sequence as SequenceABC
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from stable_explore._hashing import fingerprint
from stable_explore._imageformats import SIGNATURES, sniff
from stable_explore.errors import EncodingError, SchemaError

if TYPE_CHECKING:
    from PIL import Image as PILImage

__all__ = ["Array3D", "ClassLabel", "Feature", "Features", "Image", "Sequence", "Value", "Video"]

KEY_COLUMN = "__key__"
HASH_COLUMN = "__row_hash__"
RESERVED_COLUMNS = (KEY_COLUMN, HASH_COLUMN)
FEATURES_SCHEMA_KEY = b"stable_explore.features"

_VALUE_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float16": pa.float16(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "string": pa.string(),
    "large_string": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
}
_VALUE_ALIASES = {"float": "float32", "double": "float64", "int": "int64", "str": "string", "boolean": "bool"}
_ARRAY_DTYPES = (
    *("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    *("float16", "float32", "float64"),
)


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


class Feature:
    """Base class of feature types.

    Subclasses define ``arrow_type``, ``encode_value`` (one Python value to an
    Arrow-compatible one) and ``decode_value`` (the stored value back to what
    users get). ``encode_column`` encodes a whole batch; subclasses override it
    with a vectorised path where one exists.
    """

    _type_name: ClassVar[str]

    @property
    def arrow_type(self) -> pa.DataType:
        raise NotImplementedError

    def encode_value(self, value: Any) -> Any:
        raise NotImplementedError

    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        return value

    def encode_batch(self, values: list[Any]) -> tuple[pa.Array, bool]:
        """Encode one batch; also say whether the stored bytes are exactly ``values`` (then they hash as they are)."""
        return self.encode_column(values), False

    def encode_column(self, values: list[Any]) -> pa.Array:
        """Encode one batch of values. Raises EncodingError with ``index`` = position in ``values``."""
        encoded = self._encode_values(values)
        try:
            return pa.array(encoded, type=self.arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise _first_bad_element(encoded, self.arrow_type, exc) from exc

    def _encode_values(self, values: list[Any], start: int = 0) -> list[Any]:
        """``encode_value`` of each value; an error is located at ``start`` + its position."""
        encoded = []
        for position, value in enumerate(values):
            try:
                encoded.append(self.encode_value(value))
            except EncodingError as exc:
                raise exc.located(index=start + position) from exc.__cause__
        return encoded

    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name}

    def __repr__(self) -> str:
        body = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.init)  # type: ignore[arg-type]
        return f"{type(self).__name__}({body})"


def _first_bad_element(values: list[Any], arrow_type: pa.DataType, exc: BaseException) -> EncodingError:
    """Find which element made a whole-column conversion fail, for the message."""
    for position, value in enumerate(values):
        try:
            pa.array([value], type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as inner:
            return EncodingError(f"expected {arrow_type}, got {_describe(value)}: {inner}", index=position)
    return EncodingError(f"could not build an Arrow {arrow_type} column: {exc}")


@dataclass(frozen=True, repr=False)
class Value(Feature):
    """A scalar: ``bool``, ``int8``..``int64``, ``uint8``..``uint64``, ``float16/32/64``, ``string``, ``binary``.

    Example
    -------
    >>> Value("int64").arrow_type
    DataType(int64)
    """

    dtype: str
    _type_name: ClassVar[str] = "Value"

    def __post_init__(self) -> None:
        dtype = _VALUE_ALIASES.get(self.dtype, self.dtype)
        if dtype not in _VALUE_TYPES:
            msg = f"Value dtype must be one of {sorted(_VALUE_TYPES)}, got {self.dtype!r}"
            raise SchemaError(msg)
        object.__setattr__(self, "dtype", dtype)

    @property
    def arrow_type(self) -> pa.DataType:
        return _VALUE_TYPES[self.dtype]

    def encode_value(self, value: Any) -> Any:
        if hasattr(value, "item") and not isinstance(value, (bytes, str)):
            value = value.item()  # numpy scalar
        if isinstance(value, float) and pa.types.is_integer(self.arrow_type):
            if not value.is_integer():
                msg = f"expected {self.dtype}, got {_describe(value)}, which would be truncated"
                raise EncodingError(msg)
            value = int(value)
        try:
            pa.array([value], type=self.arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            msg = f"expected {self.dtype}, got {_describe(value)}"
            raise EncodingError(msg) from exc
        return value

    def encode_batch(self, values: list[Any]) -> tuple[pa.Array, bool]:
        return self.encode_column(values), self.dtype in _TEXT_AND_BINARY

    def encode_column(self, values: list[Any]) -> pa.Array:
        t = self.arrow_type
        try:
            array = pa.array(values, type=t)
            # A typed conversion would silently truncate 3.5 to 3 in an integer column.
            if pa.types.is_integer(t) and any(issubclass(k, (float, np.floating)) for k in set(map(type, values))):
                self._raise_first_bad(values)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            self._raise_first_bad(values)
            raise
        return array

    def _raise_first_bad(self, values: list[Any]) -> None:
        for position, value in enumerate(values):
            try:
                self.encode_value(value)
            except EncodingError as exc:
                raise exc.located(index=position) from exc.__cause__

    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "dtype": self.dtype}


@dataclass(frozen=True, repr=False, eq=False)
class ClassLabel(Feature):
    """A class label: stored as int64, written as a name or an int, read back as an int.

    Give ``names`` (a list of strings) or ``num_classes`` (names are then
    ``"0"``, ``"1"``, ...).

    Example
    -------
    >>> labels = ClassLabel(names=["cat", "dog"])
    >>> labels.str2int(["dog", "cat"]), labels.int2str(0)
    ([1, 0], 'cat')
    """

    names: list[str] | tuple[str, ...] | None = None
    num_classes: int | None = None
    _type_name: ClassVar[str] = "ClassLabel"
    _lookup: dict[Any, int] = field(default_factory=dict, init=False, compare=False)

    def __post_init__(self) -> None:
        names = self.names
        if names is None:
            if self.num_classes is None:
                msg = "ClassLabel needs names=[...] or num_classes=N"
                raise SchemaError(msg)
            names = [str(i) for i in range(int(self.num_classes))]
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            msg = f"ClassLabel names must be a list of strings, got {names!r}"
            raise SchemaError(msg)
        names = tuple(names)
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            msg = f"ClassLabel names must be unique; repeated: {dupes}"
            raise SchemaError(msg)
        if self.num_classes is not None and int(self.num_classes) != len(names):
            msg = f"ClassLabel got {len(names)} names but num_classes={self.num_classes}"
            raise SchemaError(msg)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "num_classes", len(names))
        lookup: dict[Any, int] = {name: i for i, name in enumerate(names)}
        # Ints map to themselves; checked before names so a class named "3" cannot shadow 3.
        lookup.update({i: i for i in range(len(names))})
        object.__setattr__(self, "_lookup", lookup)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClassLabel) and self.names == other.names

    def __hash__(self) -> int:
        return hash(("ClassLabel", self.names))

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.int64()

    def str2int(self, name: str | Iterable[str]) -> int | list[int]:
        """Class index of a name (or of each name in a list)."""
        if isinstance(name, str):
            return self._index_of_name(name)
        return [self._index_of_name(n) for n in name]

    def int2str(self, index: int | Iterable[int]) -> str | list[str]:
        """Class name of an index (or of each index in a list)."""
        assert self.names is not None
        if isinstance(index, (int, np.integer)):
            return self.names[self._checked_int(int(index))]
        return [self.names[self._checked_int(int(i))] for i in index]

    def _index_of_name(self, name: str) -> int:
        if not isinstance(name, str) or name not in self._lookup:
            raise EncodingError(self._unknown_message(name))
        return self._lookup[name]

    def _checked_int(self, index: int) -> int:
        if not 0 <= index < (self.num_classes or 0):
            msg = f"expected a class index in [0, {self.num_classes}), got {index}"
            raise EncodingError(msg)
        return index

    def _unknown_message(self, value: Any) -> str:
        assert self.names is not None
        shown = list(self.names[:20]) + (["..."] if len(self.names) > 20 else [])
        msg = f"unknown class {_describe(value)}; expected one of {shown} or an int in [0, {self.num_classes})"
        if isinstance(value, str):
            close = difflib.get_close_matches(value, self.names, n=3)
            if close:
                msg += f"; did you mean {' or '.join(repr(c) for c in close)}?"
        return msg

    def encode_value(self, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (bool, np.bool_, float, np.floating)):
            raise EncodingError(self._unknown_message(value))  # 1.0 or True would pass as 1 by hashing
        try:
            return self._lookup[value]
        except (KeyError, TypeError):
            if isinstance(value, (int, np.integer)) and int(value) == -1:
                return -1  # "no label", as in Hugging Face datasets
            raise EncodingError(self._unknown_message(value)) from None

    def encode_column(self, values: list[Any]) -> pa.Array:
        lookup = self._lookup
        # floats and bools would hash like ints (1.0 == True == 1): they take the slow path, which refuses them
        if not set(map(type, values)) <= _LABEL_FAST_TYPES:
            return super().encode_column(values)
        try:
            codes = list(map(lookup.__getitem__, values))
        except KeyError:
            return super().encode_column(values)
        return pa.array(codes, type=pa.int64())

    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "names": list(self.names or ())}

    def __repr__(self) -> str:
        names = list(self.names or ())
        shown = names if len(names) <= 10 else [*names[:10], f"... {len(names) - 10} more"]
        return f"ClassLabel(names={shown!r})"


_MAX_ENCODE_THREADS = 8
_THREADED_MIN_IMAGES = 16  # below this a batch of images is encoded in the calling thread
_ENCODE_CHUNK = 16  # images per task
_THREADED_MIN_PIXEL_BYTES = 4096  # mean bytes of pixels per image (e.g. 37x37 RGB) for threads to pay off
_TEXT_AND_BINARY = frozenset({"string", "large_string", "binary", "large_binary"})
_LABEL_FAST_TYPES = {str, int, np.str_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32}


@dataclass(frozen=True, repr=False)
class Image(Feature):
    """An image, stored as its encoded bytes (large_binary).

    Accepts encoded bytes, a file path, a PIL image, a numpy array (H, W) or
    (H, W, C), or a dict with ``"bytes"`` or ``"path"``. Files and bytes are
    kept byte for byte (a JPEG stays the same JPEG); PIL images keep their
    source format (JPEG re-saved with its own quantisation tables) or become
    PNG when they have no format or have alpha; arrays become PNG.

    Example
    -------
    >>> import numpy as np
    >>> stored = Image().encode_value(np.zeros((4, 4, 3), dtype=np.uint8))
    >>> stored[:4]
    b'\\x89PNG'
    """

    _type_name: ClassVar[str] = "Image"

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.large_binary()

    def encode_value(self, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return self._checked_bytes(bytes(value))
        if isinstance(value, (str, Path)):
            return self._read_file(Path(value))
        if isinstance(value, Mapping):
            if value.get("bytes") is not None:
                return self._checked_bytes(bytes(value["bytes"]))
            if value.get("path") is not None:
                return self._read_file(Path(value["path"]))
            msg = f"expected a dict with 'bytes' or 'path', got keys {sorted(value)}"
            raise EncodingError(msg)
        if isinstance(value, np.ndarray):
            return _encode_array_as_png(value)
        if _is_pil_image(value):
            return _encode_pil(value)
        msg = f"expected image bytes, a path, a PIL image or a numpy array, got {_describe(value)}"
        raise EncodingError(msg)

    def encode_batch(self, values: list[Any]) -> tuple[pa.Array, bool]:
        # Fast path: already-encoded bytes with a known header (the common bulk case).
        try:
            # bytes.startswith as the mapped function keeps the loop in C; non-bytes raise TypeError
            fast = all(map(bytes.startswith, values, itertools.repeat(SIGNATURES)))
        except TypeError:
            fast = False
        if fast:
            return pa.array(values, type=pa.large_binary()), True
        return super().encode_column(values), False

    def encode_column(self, values: list[Any]) -> pa.Array:
        return self.encode_batch(values)[0]

    def _encode_values(self, values: list[Any], start: int = 0) -> list[Any]:
        # Arrays and PIL images are compressed by PIL, which releases the GIL while it works: a batch of
        # them is shared out among threads (about 2x faster for 256-pixel photos on 2 cores). The result
        # is the same bytes, and an error names the first bad row, as in one thread.
        workers = min(_usable_cpus(), _MAX_ENCODE_THREADS)
        arrays = [v for v in values if isinstance(v, np.ndarray)]
        pil_images = [v for v in values if _is_pil_image(v)]
        count = len(arrays) + len(pil_images)
        pixel_bytes = sum(a.nbytes for a in arrays) + sum(i.width * i.height * len(i.getbands()) for i in pil_images)
        shared = len(set(map(id, pil_images))) < len(pil_images)  # one PIL image must not be saved by two threads
        # small images (8x8 digits) encode faster than threads can be handed them
        if workers < 2 or count < _THREADED_MIN_IMAGES or pixel_bytes < count * _THREADED_MIN_PIXEL_BYTES or shared:
            return super()._encode_values(values, start)
        for image in pil_images:
            with contextlib.suppress(Exception):
                image.load()  # lazily opened files are read here, once; a failure is reported by encode_value
        size = min(_ENCODE_CHUNK, -(-len(values) // workers))  # small chunks: Ctrl-C waits for one at most
        encode_part = super()._encode_values  # bound here: zero-argument super() fails inside a comprehension
        with ThreadPoolExecutor(workers, thread_name_prefix="stable-explore-encode") as pool:
            parts = [pool.submit(encode_part, values[i : i + size], start + i) for i in range(0, len(values), size)]
            try:
                return [item for part in parts for item in part.result()]  # the first bad row, in order, raises
            except BaseException:
                for part in parts:
                    part.cancel()
                raise

    @staticmethod
    def _checked_bytes(data: bytes) -> bytes:
        if sniff(data) is not None:
            return data
        from PIL import Image as PILImage
        from PIL import UnidentifiedImageError

        try:
            with PILImage.open(io.BytesIO(data)) as img:
                img.verify()
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            msg = f"bytes are not an image PIL can read (first bytes {data[:8]!r}): {exc}"
            raise EncodingError(msg) from exc
        return data

    def _read_file(self, path: Path) -> bytes:
        try:
            data = path.read_bytes()
        except OSError as exc:
            msg = f"cannot read image file {str(path)!r}: {exc.strerror or exc}"
            raise EncodingError(msg) from exc
        try:
            return self._checked_bytes(data)
        except EncodingError as exc:
            msg = f"file {str(path)!r} is not an image PIL can read"
            raise EncodingError(msg) from exc

    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None or image_format == "bytes":
            return value
        image = decode_image_bytes(value)
        if image_format == "numpy":
            return np.asarray(image)
        return image

    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name}


def _usable_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. under taskset), not all the machine has."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on macOS or Windows
        return os.cpu_count() or 1


def _is_pil_image(value: Any) -> bool:
    module = type(value).__module__
    if not module.startswith("PIL."):
        return False
    from PIL import Image as PILImage

    return isinstance(value, PILImage.Image)


def decode_image_bytes(data: bytes | memoryview) -> PILImage.Image:
    """Open stored image bytes as a PIL image (lazily; PIL's bomb guard applies)."""
    from PIL import Image as PILImage

    return PILImage.open(io.BytesIO(data))


def _encode_pil(image: PILImage.Image) -> bytes:
    fmt = image.format
    buffer = io.BytesIO()
    try:
        if fmt == "JPEG":
            # "keep" reuses the source's quantisation tables: no second generation loss.
            image.save(buffer, format="JPEG", quality="keep", subsampling="keep")
        elif fmt in ("PNG", "WEBP", "GIF", "TIFF"):
            image.save(buffer, format=fmt)
        else:
            image.save(buffer, format="PNG")
    except (OSError, ValueError, KeyError) as exc:
        msg = f"cannot encode PIL image (mode {image.mode}, size {image.size}, format {fmt}): {exc}"
        raise EncodingError(msg) from exc
    return buffer.getvalue()


def _encode_array_as_png(array: np.ndarray) -> bytes:
    from PIL import Image as PILImage

    ok_shape = array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (1, 3, 4))
    if not ok_shape or array.dtype not in (np.uint8, np.bool_, np.uint16):
        msg = (
            "expected a uint8 array of shape (H, W), (H, W, 1), (H, W, 3) or (H, W, 4), "
            f"got {array.dtype} {array.shape}"
        )
        raise EncodingError(msg)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    buffer = io.BytesIO()
    PILImage.fromarray(np.ascontiguousarray(array)).save(buffer, format="PNG")
    return buffer.getvalue()


@dataclass(frozen=True, repr=False)
class Array3D(Feature):
    """A fixed-shape 3-D array, stored as its C-order bytes; the shape is checked on write.

    Example
    -------
    >>> import numpy as np
    >>> feature = Array3D(shape=(2, 2, 1), dtype="uint8")
    >>> feature.decode_value(feature.encode_value(np.ones((2, 2, 1), dtype=np.uint8))).shape
    (2, 2, 1)
    """

    shape: tuple[int, int, int]
    dtype: str = "float32"
    _type_name: ClassVar[str] = "Array3D"

    def __post_init__(self) -> None:
        shape = tuple(self.shape)
        if len(shape) != 3 or not all(isinstance(d, (int, np.integer)) and d > 0 for d in shape):
            msg = f"Array3D shape must be three positive ints, got {self.shape!r}"
            raise SchemaError(msg)
        object.__setattr__(self, "shape", tuple(int(d) for d in shape))
        if self.dtype not in _ARRAY_DTYPES:
            msg = f"Array3D dtype must be one of {list(_ARRAY_DTYPES)}, got {self.dtype!r}"
            raise SchemaError(msg)

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.large_binary()

    def encode_value(self, value: Any) -> Any:
        if value is None:
            return None
        array = np.asarray(value)
        if array.shape != self.shape:
            msg = f"expected an array of shape {self.shape}, got shape {array.shape}"
            raise EncodingError(msg)
        if not np.can_cast(array.dtype, self.dtype, casting="same_kind"):
            msg = f"expected dtype {self.dtype}, got {array.dtype} (which cannot be cast safely)"
            raise EncodingError(msg)
        return np.ascontiguousarray(array, dtype=self.dtype).tobytes()

    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None:
            return None
        return np.frombuffer(value, dtype=self.dtype).reshape(self.shape)

    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True, repr=False)
class Sequence(Feature):
    """A variable-length list (or fixed, with ``length``) of another feature.

    Example
    -------
    >>> Sequence(Value("float32")).arrow_type
    ListType(list<item: float>)
    """

    feature: Feature
    length: int = -1
    _type_name: ClassVar[str] = "Sequence"

    def __post_init__(self) -> None:
        if not isinstance(self.feature, Feature):
            msg = f"Sequence needs a feature type such as Value('int64'), got {self.feature!r}"
            raise SchemaError(msg)

    @property
    def arrow_type(self) -> pa.DataType:
        if self.length >= 0:
            return pa.list_(self.feature.arrow_type, self.length)
        return pa.list_(self.feature.arrow_type)

    def encode_value(self, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (SequenceABC, np.ndarray)):
            msg = f"expected a list or 1-D array, got {_describe(value)}"
            raise EncodingError(msg)
        if self.length >= 0 and len(value) != self.length:
            msg = f"expected a sequence of length {self.length}, got length {len(value)}"
            raise EncodingError(msg)
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        encoded = []
        for position, item in enumerate(items):
            try:
                encoded.append(self.feature.encode_value(item))
            except EncodingError as exc:
                msg = f"item {position}: {exc.reason}"
                raise EncodingError(msg) from exc
        return encoded

    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None:
            return None
        return [self.feature.decode_value(v, image_format=image_format) for v in value]

    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "feature": self.feature.to_dict(), "length": self.length}


@dataclass(frozen=True, repr=False)
class Video(Feature):
    """A reference to a video file, stored as its path (a string)."""

    _type_name: ClassVar[str] = "Video"

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.string()

    def encode_value(self, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, (str, Path)):
            msg = f"expected a video file path, got {_describe(value)}"
            raise EncodingError(msg)
        return str(value)


_FEATURE_TYPES: dict[str, type[Feature]] = {
    cls._type_name: cls for cls in (Value, ClassLabel, Image, Array3D, Sequence, Video)
}


def class_name(feature: Any, value: Any) -> Any:
    """A label's class name where ``feature`` is a ClassLabel and ``value`` a valid index; else ``value``."""
    if isinstance(feature, ClassLabel) and isinstance(value, int) and 0 <= value < (feature.num_classes or 0):
        return feature.int2str(value)
    return value


def feature_from_dict(data: Mapping[str, Any]) -> Feature:
    """Rebuild one feature type from its ``to_dict()`` form."""
    if not isinstance(data, Mapping) or "_type" not in data:
        msg = f"a feature must be a dict with a '_type' key, got {data!r}"
        raise SchemaError(msg)
    kind = data["_type"]
    args = {k: v for k, v in data.items() if k != "_type"}
    try:
        if kind == "Sequence":
            return Sequence(feature_from_dict(args["feature"]), length=int(args.get("length", -1)))
        if kind == "Array3D":
            return Array3D(shape=tuple(args["shape"]), dtype=args.get("dtype", "float32"))
        return _FEATURE_TYPES[kind](**args)
    except SchemaError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"cannot rebuild feature {dict(data)!r}: {exc}"
        raise SchemaError(msg) from exc


class Features(dict[str, Feature]):
    """An ordered mapping of column name -> feature type: the schema of a dataset.

    Example
    -------
    >>> from stable_explore import Features, ClassLabel, Value
    >>> features = Features(label=ClassLabel(names=["cat", "dog"]), score=Value("float32"))
    >>> features.to_arrow_schema().names
    ['label', 'score']
    >>> features.encode_example({"label": "dog", "score": 0.5})
    {'label': 1, 'score': 0.5}
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, feature in self.items():
            if not isinstance(name, str) or not name:
                msg = f"feature names must be non-empty strings, got {name!r}"
                raise SchemaError(msg)
            if name in RESERVED_COLUMNS:
                msg = f"the column name {name!r} is reserved for stable-explore's row keys and hashes"
                raise SchemaError(msg)
            if not isinstance(feature, Feature):
                msg = f"feature {name!r} must be a feature type such as Value('int64'), got {feature!r}"
                raise SchemaError(msg)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; ``Features.from_dict`` inverts it exactly."""
        return {name: feature.to_dict() for name, feature in self.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Features:
        """Rebuild features from ``to_dict()`` output (or its JSON)."""
        if not isinstance(data, Mapping):
            msg = f"features must be a dict of name -> feature dict, got {type(data).__name__}"
            raise SchemaError(msg)
        return cls({name: feature_from_dict(spec) for name, spec in data.items()})

    def fingerprint(self) -> str:
        """Hash of the canonical JSON: changes when a class is renamed, a shape changes or columns move."""
        return fingerprint({"columns": list(self), "features": self.to_dict()})

    def to_json(self) -> str:
        """Compact JSON that keeps the column order (``from_dict(json.loads(...))`` inverts it)."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    def to_arrow_schema(self, *, with_row_columns: bool = False, key_type: pa.DataType | None = None) -> pa.Schema:
        """The Arrow schema of the stored columns (optionally with the key and row-hash columns)."""
        fields = [pa.field(name, feature.arrow_type) for name, feature in self.items()]
        if with_row_columns:
            fields.append(pa.field(KEY_COLUMN, key_type or pa.int64()))
            fields.append(pa.field(HASH_COLUMN, pa.uint64()))
        return pa.schema(fields, metadata={FEATURES_SCHEMA_KEY: self.to_json().encode()})

    @classmethod
    def from_arrow_schema(cls, schema: pa.Schema) -> Features:
        """Features stored in a schema's metadata, or inferred from its types."""
        stored = (schema.metadata or {}).get(FEATURES_SCHEMA_KEY)
        if stored:
            return cls.from_dict(json.loads(stored))
        inferred: dict[str, Feature] = {}
        for arrow_field in schema:
            if arrow_field.name in RESERVED_COLUMNS:
                continue
            inferred[arrow_field.name] = _infer_feature(arrow_field.type)
        return cls(inferred)

    def first_of(self, kind: type[Feature] | tuple[type[Feature], ...]) -> str | None:
        """The name of the first column of a feature type (``features.first_of(ClassLabel)``), or None."""
        return next((name for name, feature in self.items() if isinstance(feature, kind)), None)

    def check_columns(self, example: Mapping[str, Any]) -> str | None:
        """A message naming missing or extra fields of ``example``, or None if it fits."""
        if example.keys() == self.keys():
            return None
        missing = [name for name in self if name not in example]
        extra = [name for name in example if name not in self]
        parts = []
        if missing:
            parts.append(f"missing field(s) {missing}")
        if extra:
            parts.append(f"unexpected field(s) {extra} (not in features)")
        return "; ".join(parts) + f"; features are {list(self)}"

    def encode_example(self, example: Mapping[str, Any]) -> dict[str, Any]:
        """Encode one example dict; raises EncodingError naming the field."""
        problem = self.check_columns(example)
        if problem:
            raise EncodingError(problem)
        encoded = {}
        for name, feature in self.items():
            try:
                encoded[name] = feature.encode_value(example[name])
            except EncodingError as exc:
                raise EncodingError(exc.reason, field=name) from exc
        return encoded

    def decode_example(self, row: Mapping[str, Any], *, image_format: str = "pil") -> dict[str, Any]:
        """Decode a stored row: images to PIL, arrays to ndarrays, labels stay ints."""
        return {
            name: self[name].decode_value(value, image_format=image_format) if name in self else value
            for name, value in row.items()
        }

    def __repr__(self) -> str:
        body = ", ".join(f"{name}={feature!r}" for name, feature in self.items())
        return f"Features({body})"


def _infer_feature(arrow_type: pa.DataType) -> Feature:
    for dtype, candidate in _VALUE_TYPES.items():
        if arrow_type == candidate:
            return Value(dtype)
    if pa.types.is_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        length = arrow_type.list_size if pa.types.is_fixed_size_list(arrow_type) else -1
        return Sequence(_infer_feature(arrow_type.value_type), length=length)
    msg = f"cannot map Arrow type {arrow_type} to a feature type; pass features= explicitly"
    raise SchemaError(msg)
