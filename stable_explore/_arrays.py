"""Small numpy helpers the read and write paths share.

:func:`distinct` is ``np.unique`` without its options: numpy 2.4's ``np.unique`` asks
``np.ma.is_masked`` first, and the first call in a process imports ``numpy.ma`` (20-30 ms,
more than the rest of a first read of 256 random rows).

Examples
--------
>>> distinct(np.array([3, 1, 3, 2, 1])).tolist()
[1, 2, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["complex_refusal", "distinct", "duplicate_names", "holds_complex"]


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a 1-d integer (or boolean) array, as ``np.unique(values)`` gives them."""
    ordered = np.sort(np.asarray(values).reshape(-1))
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    found: np.ndarray = ordered[keep]
    return found


def holds_complex(values: object) -> bool:
    """Whether ``values`` (a numpy array, a pandas Series, a list) holds complex numbers, which no feature stores.

    Examples
    --------
    >>> holds_complex(np.array([1 + 2j])), holds_complex([None, 3j]), holds_complex([1.0])
    (True, True, False)
    """
    dtype = getattr(values, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", None) == "c":
        return True
    if dtype is not None and getattr(dtype, "kind", None) != "O":
        return False
    try:
        return any(isinstance(v, (complex, np.complexfloating)) for v in values)  # type: ignore[attr-defined]
    except TypeError:
        return False


def complex_refusal(column: str) -> str:
    """What to say of a column of complex numbers: not stored, and the two real columns to store instead."""
    return (
        f"column {column!r} holds complex numbers, which are not stored (Arrow has no complex type): store "
        f"the real and imaginary parts as two float columns instead, such as {column + '_real'!r} = "
        f"values.real and {column + '_imag'!r} = values.imag"
    )


def duplicate_names(names: object) -> list[str]:
    """The names that occur more than once in ``names``, in order of first repeat.

    Examples
    --------
    >>> duplicate_names(["a", "b", "a", "c", "b", "a"])
    ['a', 'b']
    """
    seen: set[object] = set()
    repeated: list[str] = []
    for name in names:  # type: ignore[attr-defined]
        if name in seen and str(name) not in repeated:
            repeated.append(str(name))
        seen.add(name)
    return repeated
