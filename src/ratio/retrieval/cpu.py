"""What this CPU can do fast, read once from ``/proc/cpuinfo``: sessions run on AVX-512/AMX
Xeons and on AVX2-only EPYCs, and the fastest correct encoder differs between them, so the
choice is made here at run time, never at build time."""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

# The CPU features that change what runs fast or at all here: AVX2/FMA (the portable builds'
# floor), AVX-512, VNNI (int8 dot products), AMX and AVX512-BF16 (bf16 matrix units).
CPU_FEATURES = {
    "AVX2": ("avx2",),
    "FMA": ("fma",),
    "AVX-512": ("avx512f",),
    "VNNI": ("avx512_vnni", "avx_vnni"),
    "AMX": ("amx_tile",),
    "bf16": ("avx512_bf16", "amx_bf16"),
}


@functools.cache
def cpu_info() -> tuple[str, frozenset[str]]:
    """The CPU's model name and its feature flags (``/proc/cpuinfo``; empty elsewhere)."""
    model, flags = "unknown CPU", frozenset[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return model, flags


def encode_backend(flags: frozenset[str] | set[str]) -> str:
    """The dense encoder this CPU should use for bulk encoding: torch under bf16 autocast where
    the CPU has bf16 matrix units (2.6x fp32 on an AMX Xeon, docs/benchmarks.md), else fp32
    (bf16 without them is emulated and slower)."""
    if flags & {"amx_bf16", "avx512_bf16"}:
        return "torch-bf16"
    return "torch"


def int8_reduce_range(flags: frozenset[str] | set[str], machine: str | None = None) -> bool:
    """Whether int8 weights should use 7 bits. An x86 CPU without VNNI multiplies uint8 by
    int8 with ``vpmaddubsw``, whose int16 pair sums saturate at full range: on the AVX2-only
    EPYC the shipped model's int8 queries had cosine 0.9970 / min 0.988 to fp32 at 8 bits and
    0.9988 / 0.998 at 7, at the same speed (docs/benchmarks.md). With VNNI the sums are int32
    and the 8th bit is pure precision. Other architectures keep their own kernels: 8 bits."""
    machine = (machine or platform.machine()).lower()
    x86 = machine in ("x86_64", "amd64", "i686", "i386")
    return x86 and not flags & set(CPU_FEATURES["VNNI"])


def cpu_summary() -> str:
    """The CPU model, the features that matter here (present +, absent -), and the encode
    back-end it should use."""
    model, flags = cpu_info()
    if not flags:
        return f"{model} (no /proc/cpuinfo flags)"
    have = " ".join(
        ("+" if flags & set(names) else "-") + label for label, names in CPU_FEATURES.items()
    )
    return f"{model}; {os.cpu_count()} cores; {have}; bulk encoding: {encode_backend(flags)}"
