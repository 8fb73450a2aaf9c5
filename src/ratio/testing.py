"""Small real slices of JSONL shards, for tests and benchmarks that must not read a whole corpus."""

from __future__ import annotations

import io
from pathlib import Path


def first_lines(path: Path | str, n: int) -> list[bytes]:
    """The first ``n`` raw lines of a ``.zst`` JSONL shard."""
    import zstandard

    out: list[bytes] = []
    with open(path, "rb") as fh:
        for line in io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(fh)):
            out.append(line)
            if len(out) >= n:
                break
    return out


def write_zst(path: Path, lines: list[bytes]) -> Path:
    """Write raw JSONL lines as one zstd frame; returns ``path``."""
    import zstandard

    path.write_bytes(zstandard.ZstdCompressor().compress(b"".join(lines)))
    return path
