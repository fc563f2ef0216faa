"""End-to-end demo: cache scikit-learn's digits as images, reuse the cache, browse it as pandas, verify it.

Run it twice: the second run is a cache hit that returns in milliseconds.

    python notebooks/demo.py
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_digits

import stable_explore as se

features = se.Features(
    image=se.Image(),
    label=se.ClassLabel(names=["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]),
    ink=se.Value("float32"),
)


def digits(scale: int = 4):
    """The 1,797 8x8 digits, scaled up to 32x32 grey PNGs, keyed by their position in the set."""
    bunch = load_digits()
    for i, (pixels, target) in enumerate(zip(bunch.images, bunch.target, strict=True)):
        grey = (pixels * (255 / 16)).astype(np.uint8)
        big = np.kron(grey, np.ones((scale, scale), dtype=np.uint8))
        yield f"digit-{i:04d}", {"image": big, "label": int(target), "ink": float(pixels.mean())}


def main() -> None:
    started = time.perf_counter()
    ds = se.build(digits, features, description="scikit-learn digits as 32x32 PNGs", license="BSD-3-Clause")
    print(f"{ds!r}\n  {ds.build_info} in {time.perf_counter() - started:.2f} s")

    started = time.perf_counter()
    again = se.build(digits, features, description="scikit-learn digits as 32x32 PNGs", license="BSD-3-Clause")
    print(f"  second call: {again.build_info} in {1000 * (time.perf_counter() - started):.1f} ms")

    print("label counts:", ds.label_counts())
    sevens = ds.filter(label="seven")
    print(f"sevens: {len(sevens)} rows; first keys {sevens.keys()[:3]}")
    frame = sevens[:5].to_pandas(images="thumbnail", thumbnail_size=16)
    print(frame[["label", "ink"]])

    clean = ds.drop([3, 17]).relabel({44: "one"}).save(message="drop two, fix 44")
    print(f"\n{clean!r}\n  {clean.build_info}")
    diff = se.compare(ds, clean)
    print(diff)
    print(se.verify(clean))
    print(se.versions("digits"))


if __name__ == "__main__":
    main()
