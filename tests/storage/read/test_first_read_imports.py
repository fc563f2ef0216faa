"""A fresh process's first random read imports nothing it does not use.

numpy 2.4's ``np.unique`` imports ``numpy.ma`` on its first call (20-30 ms, more than the rest of a
first read of 256 random rows), and pyarrow's first conversion to numpy imports pandas (about 0.3 s).
The read path avoids both; a new call to either on that path fails here. (A build imports pandas
anyway: pyarrow's ``pa.array`` of a Python list does, in pyarrow 26.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

BUILD = """
import io, json, sys
import numpy as np
from PIL import Image as PILImage
import stable_explore as se

def jpeg(i):
    out = io.BytesIO()
    PILImage.fromarray(np.full((8, 8, 3), i % 256, dtype=np.uint8)).save(out, format="JPEG")
    return out.getvalue()

features = se.Features(image=se.Image(), label=se.ClassLabel(names=["a", "b"]), score=se.Value("float32"))
rows = ({"image": jpeg(i), "label": i % 2, "score": i / 3} for i in range(3000))
se.build(rows, features, name="pics", home=HOME, batch_size=500, progress=False)
"""

READ = """
import io, json, sys
import stable_explore as se
ds = se.load("pics", home=HOME).with_format("python")
picked = ds.__getitems__([2999, 7, 1500, 7, 640])
print(json.dumps({"loaded": sorted(sys.modules), "labels": [row["label"] for row in picked],
                  "sizes": [len(row["image"]) for row in picked]}))
"""


def _run(code: str, home: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    script = f"HOME = {str(home)!r}\n{code}"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return done.stdout


def test_a_first_random_read_imports_neither_numpy_ma_nor_pandas(tmp_path: Path) -> None:
    _run(BUILD, tmp_path)
    found = json.loads(_run(READ, tmp_path).strip().splitlines()[-1])
    assert found["labels"] == [1, 1, 0, 1, 0]
    assert all(size > 100 for size in found["sizes"])  # the images themselves, checked by row hash
    assert "numpy.ma" not in found["loaded"]
    assert "pandas" not in found["loaded"]
