"""File plumbing shared by every stage: compressed line streams and atomic writes.

Readers never load a whole shard: ``iter_lines`` streams decompressed lines and
reports truncated or undecodable input as :class:`InputError` naming the file
and line, so callers can count and skip (or stop under ``--strict``).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


class RatioError(Exception):
    """An error a user can act on; the CLI prints it without a traceback."""


class InputError(RatioError):
    """Bad input at a known place: ``source`` and (when known) ``line``."""

    def __init__(self, source: str | os.PathLike, line: int | None, reason: str, kind: str):
        self.source = str(source)
        self.line = line
        self.reason = reason
        self.kind = kind  # short machine-readable reason, used as a drop counter key
        where = f"{self.source}:{line}" if line else self.source
        super().__init__(f"{where}: {reason}")


def _open_binary(path: Path) -> io.BufferedIOBase:
    name = path.name
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller's context
    if name.endswith(".zst"):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
    if name.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    return raw


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for a plain, ``.gz`` or ``.zst`` text file.

    Invalid UTF-8 in one line raises :class:`InputError` for that line only after
    the line has been read, so the caller may skip it and keep streaming.
    """
    p = Path(path)
    try:
        stream = _open_binary(p)
    except OSError as e:
        raise InputError(p, None, f"cannot open: {e.strerror or e}", "unreadable_file") from e
    lineno = 0
    with contextlib.closing(stream):
        buffered = io.BufferedReader(stream, buffer_size=1 << 20)  # type: ignore[arg-type]
        while True:
            try:
                raw = buffered.readline()
            except (EOFError, OSError) as e:  # gzip raises EOFError, zstd raises ZstdError(OSError)
                raise InputError(p, lineno + 1, f"truncated or corrupt compressed stream ({e})", "truncated_file") from e
            except Exception as e:  # zstandard.ZstdError is not always an OSError subclass
                if type(e).__name__ == "ZstdError":
                    raise InputError(p, lineno + 1, f"truncated or corrupt compressed stream ({e})", "truncated_file") from e
                raise
            if not raw:
                return
            lineno += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield lineno, _BadLine(p, lineno, f"invalid UTF-8 at byte {e.start}")
                continue
            yield lineno, text


class _BadLine(str):
    """A placeholder line that carries its decoding error; readers check ``isinstance``."""

    def __new__(cls, path: Path, lineno: int, reason: str):
        obj = super().__new__(cls, "")
        obj.error = InputError(path, lineno, reason, "invalid_utf8")
        return obj


def line_error(line: str) -> InputError | None:
    """The decoding error carried by a line from :func:`iter_lines`, if any."""
    return line.error if isinstance(line, _BadLine) else None


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling path; rename it onto ``target`` only on success.

    A crash or exception leaves ``target`` untouched (old good output survives)
    and removes the temporary file.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(target: str | os.PathLike, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_parquet_atomic(
    target: str | os.PathLike, table: pa.Table, metadata: dict[str, str] | None = None
) -> None:
    """Write ``table`` to ``target`` atomically, attaching provenance metadata."""
    if metadata:
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode(): v.encode() for k, v in metadata.items()})
        table = table.replace_schema_metadata(merged)
    with atomic_path(target) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_parquet_metadata(path: str | os.PathLike) -> dict[str, str]:
    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if not k.startswith(b"ARROW")}
