"""Other tools' formats, read into rows for a build and written from a dataset, one module each.

Annotation files: ``coco``, ``yolo``. Dataset layouts: ``huggingface`` (``datasets``), ``lance``, ``mds``
(MosaicML streaming; written only) and ``stable_datasets`` (stable-datasets' folders, written here; opening
them is ``storage``'s, as for any cache). A dataset's ``to_*`` methods and ``export`` import these modules
when called.

Reading an annotation file checks the whole input before a row is built (so a bad file publishes
nothing) and raises :class:`~stable_explore.errors.AnnotationError` naming the file, image and annotation.
"""

from __future__ import annotations

from stable_explore.io.coco import read_coco, write_coco
from stable_explore.io.yolo import read_yolo, write_yolo

__all__ = ["read_coco", "read_yolo", "write_coco", "write_yolo"]
