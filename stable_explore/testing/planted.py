"""A digits dataset with known problems planted in it, to measure how well the signals find them.

scikit-learn's 1,797 handwritten digits (8x8, bundled: no download), drawn as 32x32 grey PNGs, then:
exact copies (the same bytes under a new key), near copies (resized, re-encoded as JPEG, or cropped a
little, each under a new key), flipped labels, noise images (outliers) and blurred images. The truth
travels with the rows, so a test or a notebook can score what a signal found.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stable_explore.schema import ClassLabel, Features, Image

NEAR_KINDS = ("resize", "jpeg", "crop")


@dataclass
class PlantedDigits:
    """The rows to build and what was planted in them (positions are rows of the built dataset)."""

    rows: list[dict[str, Any]]
    features: Features
    true_labels: np.ndarray
    exact: list[tuple[int, int]] = field(default_factory=list)  # (original, byte-identical copy)
    near: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # kind -> (original, altered copy)
    flipped: list[int] = field(default_factory=list)  # rows whose label was changed
    noise: list[int] = field(default_factory=list)  # rows of random noise (outliers)
    blurred: list[int] = field(default_factory=list)  # rows blurred in place

    def duplicate_pairs(self, kinds: tuple[str, ...] = ("exact", *NEAR_KINDS)) -> set[tuple[int, int]]:
        """Every pair of rows that show the same digit image (copies of one original, between themselves too)."""
        families: dict[int, set[int]] = {}
        pairs = list(self.exact) if "exact" in kinds else []
        pairs += [pair for kind in NEAR_KINDS if kind in kinds for pair in self.near.get(kind, [])]
        for original, copy in pairs:
            families.setdefault(original, {original}).add(copy)
        return {(a, b) for family in families.values() for a in family for b in family if a < b}


def _png(pixels: np.ndarray) -> bytes:
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def planted_digits(
    *,
    seed: int = 0,
    exact: int = 40,
    near: int = 40,
    flipped: int = 60,
    noise: int = 5,
    blurred: int = 10,
) -> PlantedDigits:
    """scikit-learn's digits with ``exact`` + 3 x ``near`` copies, ``flipped`` labels, noise and blur planted.

    Examples
    --------
    >>> planted = planted_digits(exact=2, near=1, flipped=3, noise=1, blurred=1)
    >>> len(planted.rows), len(planted.duplicate_pairs()), len(planted.flipped)
    (1803, 5, 3)
    """
    from PIL import Image as PILImage
    from PIL import ImageFilter
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(seed)
    names = [str(d) for d in range(10)]
    images = [
        np.asarray(PILImage.fromarray((d * (255 / 16)).astype(np.uint8)).resize((32, 32), PILImage.Resampling.BILINEAR))
        for d in digits.images
    ]
    count = len(images)
    encoded = [_png(im) for im in images]
    labels = digits.target.astype(np.int64).copy()
    picks = rng.permutation(count)
    used = 0

    def take(n: int) -> np.ndarray:
        nonlocal used
        chosen = picks[used : used + n]
        used += n
        return chosen

    features = Features(image=Image(), label=ClassLabel(names=names))
    planted = PlantedDigits(rows=[], features=features, true_labels=labels)
    for row in take(blurred):  # blurred in place
        pil = PILImage.fromarray(images[row]).filter(ImageFilter.GaussianBlur(3))
        encoded[row] = _png(np.asarray(pil))
        planted.blurred.append(int(row))
    extra: list[tuple[bytes, int]] = []
    for original in take(exact):
        planted.exact.append((int(original), count + len(extra)))
        extra.append((encoded[original], int(labels[original])))
    for kind in NEAR_KINDS:
        planted.near[kind] = []
        for original in take(near):
            pil = PILImage.fromarray(images[original])
            if kind == "resize":
                data = _png(np.asarray(pil.resize((48, 48), PILImage.Resampling.BICUBIC)))
            elif kind == "jpeg":
                buffer = io.BytesIO()
                pil.save(buffer, format="JPEG", quality=70)
                data = buffer.getvalue()
            else:  # crop a pixel off the left and top (3% of each side)
                data = _png(np.asarray(pil.crop((1, 1, 32, 32))))
            planted.near[kind].append((int(original), count + len(extra)))
            extra.append((data, int(labels[original])))
    for _ in range(noise):  # few, so that each one's nearest neighbours are mostly digits
        planted.noise.append(count + len(extra))
        extra.append((_png(rng.integers(0, 256, size=(32, 32), dtype=np.uint8)), int(rng.integers(0, 10))))
    all_images = encoded + [data for data, _ in extra]
    true_labels = np.concatenate([labels, np.array([label for _, label in extra], dtype=np.int64)])
    given = true_labels.copy()
    for row in take(flipped):
        given[row] = (true_labels[row] + int(rng.integers(1, 10))) % 10
        planted.flipped.append(int(row))
    planted.true_labels = true_labels
    planted.rows = [{"image": data, "label": int(label)} for data, label in zip(all_images, given, strict=True)]
    return planted
