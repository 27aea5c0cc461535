"""One line naming the machine a bench ran on: what its tables' numbers belong to.

Timings here depend on the CPU's vector units as much as on the code (the int8 embedder is
about 2x quicker per core with AVX-512 VNNI than with AVX2 alone), so every table says which.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

# The flags that change this project's timings: int8 matrix products (VNNI), wide vectors.
_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


def _cpuinfo() -> tuple[str, set[str]]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine(), set()
    model, flags = platform.machine(), set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model == platform.machine():
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return model, flags


def machine_line() -> str:
    """'AMD EPYC ..., 2 CPUs, avx2 (no avx512f, avx512_vnni ...), load 1.2 0.9 0.6'."""
    model, flags = _cpuinfo()
    has = [f for f in _FLAGS if f in flags]
    lacks = [f for f in _FLAGS if f not in flags]
    vector = ", ".join(has) or "no AVX2"
    if lacks and flags:
        vector += f" (no {', '.join(lacks)})"
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{model}, {os.cpu_count()} CPUs, {vector}, load {load}"


__all__ = ["machine_line"]
