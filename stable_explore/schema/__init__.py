"""Feature types: what a column holds, its Arrow type, how to encode and decode it.

A :class:`Features` maps column names to feature types. It round-trips through
JSON (``to_dict`` / ``from_dict``), so every cache carries its full schema
(label names, shapes, dtypes) and opens without the code that built it. Each
feature type lives in a module of its own.

Examples
--------
>>> from stable_explore import Features, ClassLabel, Image, Value
>>> features = Features(image=Image(), label=ClassLabel(names=["cat", "dog"]), path=Value("string"))
>>> features["label"].str2int("dog")
1
>>> Features.from_dict(features.to_dict()) == features
True
"""

from __future__ import annotations

from stable_explore.schema.array3d import Array3D
from stable_explore.schema.base import Feature
from stable_explore.schema.boxes import Boxes, convert_box
from stable_explore.schema.class_label import ClassLabel, class_name
from stable_explore.schema.columns import FEATURES_SCHEMA_KEY, HASH_COLUMN, KEY_COLUMN, RESERVED_COLUMNS
from stable_explore.schema.features import Features, feature_from_dict
from stable_explore.schema.image import Image
from stable_explore.schema.image_codec import decode_image_bytes
from stable_explore.schema.keypoints import Keypoints
from stable_explore.schema.mask import Mask
from stable_explore.schema.sequence import Sequence
from stable_explore.schema.value import Value
from stable_explore.schema.video import Video, VideoFile

__all__ = [
    "Array3D",
    "Boxes",
    "ClassLabel",
    "Feature",
    "Features",
    "Image",
    "Keypoints",
    "Mask",
    "Sequence",
    "Value",
    "Video",
    "VideoFile",
    "FEATURES_SCHEMA_KEY",
    "HASH_COLUMN",
    "KEY_COLUMN",
    "RESERVED_COLUMNS",
    "class_name",
    "convert_box",
    "decode_image_bytes",
    "feature_from_dict",
]
