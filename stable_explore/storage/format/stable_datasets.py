"""stable-datasets' cache layouts, as its current reader writes and checks them (no code of it is used).

stable-datasets (our seed project) keeps one split of a dataset in a folder with a ``_metadata.json``
that names its ``format`` and ``layout``:

- ``"arrow"`` / ``"arrow-shards"``: Arrow IPC shards ``shard-NNNNN.arrow``, listed with their row
  counts, exactly stable-datasets' format version 1 plus the two names (so we read them as such a cache);
- ``"lance"`` / ``"lance-rows"``: a Lance dataset (``_versions/``, ``data/``) in the same folder, one
  row per example;
- ``"lance"`` / ``"lance-video-frames"``: one row per decoded video frame (not a row per example).

Neither layout stores class names: its reader takes them from the builder's ``Features``, and checks
that they are the ones the cache was built with through ``schema_fingerprint``: the first 16 hex
digits of the SHA-256 of ``repr`` of the features as a plain dict, each type printed as its
``__repr__`` prints it (``ClassLabel(names=['a', 'b'])``, or ``ClassLabel(num_classes=N)`` past
five names). :func:`schema_fingerprint` reproduces that text from our features, so a cache opened
with ``features=`` is checked the same way, and a copy we export carries the fingerprint its
reader expects.

Examples
--------
>>> from stable_explore import ClassLabel, Features, Value
>>> feature_repr(ClassLabel(names=["a", "b"]))
"ClassLabel(names=['a', 'b'])"
>>> len(schema_fingerprint(Features(x=Value("int32"), label=ClassLabel(names=["a", "b"]))))
16
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from stable_explore.errors import SchemaError
from stable_explore.schema import Array3D, ClassLabel, Feature, Features, Image, Sequence, Value, Video
from stable_explore.schema.fields import Fields

__all__ = [
    "ARROW_LAYOUT",
    "accept_features",
    "FEATURE_FIELD_KEY",
    "LANCE_LAYOUT",
    "LAYOUTS",
    "candidate_fingerprints",
    "feature_repr",
    "fingerprint_text",
    "layout_of",
    "schema_fingerprint",
    "stable_datasets_schema",
]

ARROW_LAYOUT = "arrow-shards"
LANCE_LAYOUT = "lance-rows"
VIDEO_FRAMES_LAYOUT = "lance-video-frames"
LAYOUTS = {ARROW_LAYOUT: "arrow", LANCE_LAYOUT: "lance", VIDEO_FRAMES_LAYOUT: "lance"}
FEATURE_FIELD_KEY = b"stable_datasets.feature"
"""Field metadata its writer puts on each column: the feature type's class name (``b"ClassLabel"``)."""
_IMAGE_ENCODINGS = ("PNG", "JPEG")  # its Image(encode_format=...): the default first
_SHORT_NAMES = 5  # past this many names its ClassLabel prints only the count


def layout_of(raw: Mapping[str, object]) -> str | None:
    """The stable-datasets layout a ``_metadata.json`` names (None when it names none of them)."""
    layout = raw.get("layout")
    if isinstance(layout, str) and LAYOUTS.get(layout) == raw.get("format"):
        return layout
    return None


def feature_repr(feature: Feature, image_encoding: str = "PNG") -> str:
    """How stable-datasets prints the feature type that stores what ``feature`` stores."""
    if isinstance(feature, ClassLabel):
        names = list(feature.names or [str(i) for i in range(feature.num_classes or 0)])
        if len(names) <= _SHORT_NAMES:
            return f"ClassLabel(names={names!r})"
        return f"ClassLabel(num_classes={len(names)})"
    if isinstance(feature, Image):
        return f"Image(encode_format='{image_encoding}')"
    if isinstance(feature, Value):
        return f"Value('{feature.dtype}')"
    if isinstance(feature, Sequence) and feature.length < 0:
        return f"Sequence({feature_repr(feature.feature, image_encoding)})"
    if isinstance(feature, Array3D):
        return f"Array3D(shape={tuple(feature.shape)!r}, dtype='{feature.dtype}')"
    if isinstance(feature, Video):  # its Video is a path string (bytes never inlined)
        return "Video()"
    what = f"a {type(feature).__name__} feature"
    if isinstance(feature, Fields):
        what = "a list of dicts (a Sequence of a dict of features)"
    elif isinstance(feature, Sequence):
        what = f"a fixed-length Sequence (length={feature.length})"
    msg = (
        f"{what} has no counterpart in stable-datasets' cache layouts (Value, ClassLabel, Image, Array3D and "
        "Video and a Sequence without length= have)"
    )
    raise SchemaError(msg)


def fingerprint_text(features: Features, image_encoding: str = "PNG") -> str:
    """The text stable-datasets' ``Features.fingerprint_data()`` gives for features that store what these do."""
    parts = []
    for name, feature in features.items():
        try:
            parts.append(f"{name!r}: {feature_repr(feature, image_encoding)}")
        except SchemaError as error:
            msg = f"column {name!r}: {error}"
            raise SchemaError(msg) from None
    return "{" + ", ".join(parts) + "}"


def schema_fingerprint(features: Features, image_encoding: str = "PNG") -> str:
    """The ``schema_fingerprint`` stable-datasets' reader expects for these features."""
    text = fingerprint_text(features, image_encoding)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def candidate_fingerprints(features: Features) -> set[str]:
    """Every fingerprint these features may have been built with (its images' ``encode_format`` is not stored)."""
    return {schema_fingerprint(features, encoding) for encoding in _IMAGE_ENCODINGS}


def stable_datasets_schema(features: Features) -> pa.Schema:
    """The Arrow schema stable-datasets' writer gives these features (its field metadata included)."""
    fields = []
    for name, feature in features.items():
        kind = "Sequence" if isinstance(feature, Sequence) else type(feature).__name__
        arrow_type = pa.string() if isinstance(feature, Video) else feature.arrow_type  # its Video: the path
        fields.append(pa.field(name, arrow_type, metadata={FEATURE_FIELD_KEY: kind.encode()}))
    return pa.schema(fields)


_THEIR_TYPES = ("Value", "ClassLabel", "Image", "Sequence", "Array3D", "Video")


def _our_feature(name: str, feature: Any) -> Feature:
    """One of stable-datasets' feature types (read by its class name and public attributes) as ours."""
    if isinstance(feature, Feature):
        return feature
    kind = type(feature).__name__
    try:
        if kind == "Value":
            return Value(str(feature.dtype))
        if kind == "ClassLabel":
            return ClassLabel(names=[str(n) for n in feature.names])
        if kind == "Image":
            return Image()
        if kind == "Sequence":
            return Sequence(_our_feature(name, feature.feature))
        if kind == "Array3D":
            return Array3D(shape=tuple(int(n) for n in feature.shape), dtype=str(feature.dtype))  # type: ignore[arg-type]
        if kind == "Video":
            return Video()
    except AttributeError as exc:
        msg = f"column {name!r}: a {kind} without the attribute {exc.name!r} its type has; pass our Features instead"
        raise SchemaError(msg) from None
    msg = (
        f"column {name!r}: {kind} is not a feature type stable-explore reads (ours, or stable-datasets' "
        f"{', '.join(_THEIR_TYPES)}); pass our Features with the column's type"
    )
    raise SchemaError(msg)


def accept_features(features: object) -> Features | None:
    """``features`` as ours: ours as they are, stable-datasets' ``Features`` converted.

    stable-datasets' object (or any mapping of column -> its feature types) is recognised by its
    types' class names and public attributes, without importing it. Its ``Image`` becomes ours
    (decoded to PIL on read), ``ClassLabel`` keeps its names in order, ``Sequence``, ``Array3D``,
    ``Value`` and ``Video`` keep their parameters.

    Examples
    --------
    >>> class ClassLabel:  # stands in for stable-datasets' type: the class name and .names are what count
    ...     def __init__(self, names): self.names = names
    >>> accept_features({"label": ClassLabel(["cat", "dog"])})["label"]
    ClassLabel(names=['cat', 'dog'])
    """
    if features is None or isinstance(features, Features):
        return features
    if not isinstance(features, Mapping):
        msg = f"features must be a Features (ours, stable-datasets' or Hugging Face's), got {type(features).__name__}"
        raise SchemaError(msg)
    return Features({str(name): _our_feature(str(name), feature) for name, feature in features.items()})
