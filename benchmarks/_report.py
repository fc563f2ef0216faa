"""Formatting shared by the benchmark reports."""

from __future__ import annotations

MB = 1024 * 1024


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms"


def mb(nbytes: float) -> str:
    return f"{nbytes / MB:,.1f} MB"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def rule(title: str) -> None:
    print()
    print(title)
    print("-" * len(title))
