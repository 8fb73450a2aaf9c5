"""File plumbing shared by every stage: compressed line streams and atomic writes.

Readers never load a whole shard: ``iter_lines`` streams decompressed lines and
reports truncated or undecodable input as :class:`InputError` naming the file
and line, so callers can count and skip (or stop under ``--strict``).

Tested by tests/corpus/readers/test_base.py, tests/metrics/test_trec.py, tests/build/test_dedup.py.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard


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

    def __reduce__(self):  # picklable, so it crosses process and Ray worker boundaries
        return (type(self), (self.source, self.line, self.reason, self.kind))


class _TruncatedStream(OSError):
    """A compressed stream ended in the middle of a frame (a cut-off download)."""


class _ZstdRawReader(io.RawIOBase):
    """Streams a (multi-frame) zstd file and notices when its last frame is cut off.

    ``zstandard``'s own ``stream_reader`` returns the data decoded so far and
    stops silently at a truncated frame, which would hand a half line to the
    reader as if it were real; decoding frame by frame lets us see ``eof``.
    """

    _CHUNK = 1 << 18

    def __init__(self, raw: io.BufferedIOBase):
        self._raw = raw
        self._dobj = zstandard.ZstdDecompressor().decompressobj()
        self._in_frame = False  # bytes of the current frame have been fed
        self._pending = b""
        self._pos = 0  # read position inside ``_pending`` (avoids re-slicing big buffers)
        self._done = False

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        while self._pos >= len(self._pending) and not self._done:
            self._pending, self._pos = b"", 0
            chunk = self._raw.read(self._CHUNK)
            if not chunk:
                self._done = True
                if self._in_frame and not self._dobj.eof:
                    raise _TruncatedStream("zstd stream ends inside a frame (file cut off?)")
                return
            while chunk:
                if self._dobj.eof:  # next frame of a multi-frame file
                    self._dobj = zstandard.ZstdDecompressor().decompressobj()
                    self._in_frame = False
                try:
                    out = self._dobj.decompress(chunk)
                except zstandard.ZstdError as e:
                    raise _TruncatedStream(f"corrupt zstd data: {e}") from e
                self._in_frame = True
                self._pending = self._pending + out if self._pending else out
                chunk = self._dobj.unused_data if self._dobj.eof else b""

    def readinto(self, buffer) -> int:
        self._fill()
        n = min(len(buffer), len(self._pending) - self._pos)
        buffer[:n] = self._pending[self._pos : self._pos + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def _open_binary(path: Path) -> io.BufferedIOBase:
    """Open ``path`` for binary reading, decompressing ``.gz``/``.zst`` on the fly."""
    name = path.name
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller's context
    if name.endswith(".zst"):
        return io.BufferedReader(_ZstdRawReader(raw), buffer_size=1 << 20)
    if name.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw)
    return raw


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for a plain, ``.gz`` or ``.zst`` text file.

    A line that is not valid UTF-8 comes back as a placeholder carrying its
    :class:`InputError` (see :func:`line_error`), so the caller may skip it and
    keep streaming. A missing file, an unreadable one, and a truncated or
    corrupt compressed stream raise :class:`InputError` (the partial last line
    of a cut-off stream is never yielded).
    """
    p = Path(path)
    try:
        stream = _open_binary(p)
    except FileNotFoundError as e:
        raise InputError(p, None, "no such file", "missing_file") from e
    except OSError as e:
        raise InputError(p, None, f"cannot open: {e.strerror or e}", "unreadable_file") from e
    lineno = 0
    with contextlib.closing(stream):
        while True:
            try:
                raw = stream.readline()
            except (EOFError, zlib.error, _TruncatedStream, gzip.BadGzipFile) as e:
                # gzip: EOFError when cut off, BadGzipFile/zlib.error when corrupt
                raise InputError(
                    p, lineno + 1, f"truncated or corrupt compressed stream ({e})", "truncated_file"
                ) from e
            except OSError as e:
                raise InputError(p, lineno + 1, f"read error: {e}", "unreadable_file") from e
            if not raw:
                return
            lineno += 1
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark is not part of the data
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield lineno, _BadLine(p, lineno, f"invalid UTF-8 at byte {e.start}")
                continue
            yield lineno, text


class _BadLine(str):
    """A placeholder line that carries its decoding error; readers check ``isinstance``."""

    error: InputError

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
        if tmp_path.exists():
            os.chmod(tmp_path, 0o644)  # mkstemp makes 0600; outputs are meant to be shared
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(target: str | os.PathLike, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def with_metadata(table: pa.Table, metadata: dict[str, str] | None) -> pa.Table:
    """``table`` with ``metadata`` merged into its schema metadata (provenance travels in the file)."""
    if not metadata:
        return table
    merged = dict(table.schema.metadata or {})
    merged.update({k.encode(): v.encode() for k, v in metadata.items()})
    return table.replace_schema_metadata(merged)


def write_parquet_atomic(
    target: str | os.PathLike, table: pa.Table, metadata: dict[str, str] | None = None
) -> None:
    """Write ``table`` to ``target`` atomically, attaching provenance metadata."""
    with atomic_path(target) as tmp:
        pq.write_table(with_metadata(table, metadata), tmp, compression="zstd")


def read_parquet_metadata(path: str | os.PathLike) -> dict[str, str]:
    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if not k.startswith(b"ARROW")}
