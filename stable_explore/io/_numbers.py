"""Numbers as exports write them: a stored float32 as the shortest decimal that reads back as it."""

from __future__ import annotations

__all__ = ["float_text"]


def float_text(value: float) -> float:
    """A stored float32 as the shortest float that reads back as it (10.3, not 10.300000190734863).

    Examples
    --------
    >>> import numpy as np
    >>> float(np.float32(10.3)), float_text(np.float32(10.3))
    (10.300000190734863, 10.3)
    """
    import numpy as np

    return float(np.format_float_positional(np.float32(value), unique=True, trim="-"))
