"""Unit conversions and human formatting, in one place."""
from __future__ import annotations

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000


def fmt_ns(ns: float) -> str:
    """1234 -> '1.23 µs', 1.5e9 -> '1.50 s'."""
    ns = float(ns)
    a = abs(ns)
    if a < NS_PER_US:
        return f"{ns:.0f} ns"
    if a < NS_PER_MS:
        return f"{ns / NS_PER_US:.2f} µs"
    if a < NS_PER_S:
        return f"{ns / NS_PER_MS:.2f} ms"
    return f"{ns / NS_PER_S:.2f} s"


def fmt_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


def fmt_pct(x: float) -> str:
    return f"{x:.1f} %"


def count(n: int, word: str) -> str:
    """"1 step", "30 steps", "0 findings": a count with its noun, never "step(s)" (the app and the CLI alike)."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
