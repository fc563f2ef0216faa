"""Other tools' annotation formats, read into rows for a build and written from a dataset: COCO, YOLO.

One module per format, each reading and writing side by side. Reading checks the whole input before
a row is built (so a bad file publishes nothing) and raises
:class:`~stable_explore.errors.AnnotationError` naming the file, image and annotation.
"""

from __future__ import annotations

from stable_explore.io.coco import read_coco, write_coco
from stable_explore.io.yolo import read_yolo, write_yolo

__all__ = ["read_coco", "read_yolo", "write_coco", "write_yolo"]
