"""Paths that may live in object storage: ``s3://``, ``gs://``, ``memory://``, ``file://`` or plain.

The seam that lets inputs and per-shard outputs live elsewhere while the stages read and
write local files: an input URL is *staged* to a local copy on the worker that reads it,
and an output URL is written locally and *published* in one upload, atomic on object
stores as ``atomic_path`` is on disk. Backends are fsspec's (``s3fs``, ``gcsfs``), with
those libraries' usual credentials.

Tested by tests/runner/test_stages.py, tests/scale/test_scale.py.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ratio.core.io import InputError, RatioError, atomic_path, with_metadata

_WILDCARDS = "*?["
# what names an object's version, by backend (s3, gcs, local/memory)
_VERSION_KEYS = tuple("ETag etag md5Hash crc32c generation LastModified mtime created".split())


def is_url(p: str | os.PathLike) -> bool:
    """True for ``proto://...`` other than ``file://`` (those are local paths)."""
    s = str(p)
    return "://" in s and not s.startswith("file://")


def local_path(p: str | os.PathLike) -> Path | None:
    """The local path of a plain path or ``file://`` URL; None for remote URLs."""
    s = str(p)
    if s.startswith("file://"):
        return Path(s[len("file://") :])
    return None if is_url(s) else Path(s)


def filesystem(url: str) -> tuple[Any, str]:
    """``(fsspec filesystem, path inside it)`` for a URL; a missing backend is a RatioError."""
    import fsspec

    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as e:
        proto = url.split("://", 1)[0]
        hint = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs"}
        pkg = hint.get(proto, f"the fsspec backend for {proto}://")
        raise RatioError(f"{url}: reading {proto}:// needs `pip install {pkg}` ({e})") from e


def join(base: str | os.PathLike, *parts: str) -> str:
    """Join path parts onto a local path or URL (``/`` separators for URLs)."""
    lp = local_path(base)
    if lp is not None:
        return str(lp.joinpath(*parts))
    return posixpath.join(str(base).rstrip("/"), *parts)


def name(p: str | os.PathLike) -> str:
    """The last component of a path or URL."""
    return PurePosixPath(str(p).rstrip("/")).name


def exists(p: str | os.PathLike) -> bool:
    lp = local_path(p)
    if lp is not None:
        return lp.exists()
    fs, path = filesystem(str(p))
    return fs.exists(path)


def read_text(p: str | os.PathLike) -> str:
    lp = local_path(p)
    if lp is not None:
        return lp.read_text(encoding="utf-8")
    fs, path = filesystem(str(p))
    with fs.open(path, "rb") as f:
        return f.read().decode("utf-8")


# --------------------------------------------------------------------------- inputs


def expand_inputs(inputs: Iterable[str], suffixes: tuple[str, ...]) -> list[str]:
    """Expand remote files, folders and globs into sorted URLs of files ending in ``suffixes``.

    A pattern or path that matches nothing raises InputError, like local inputs do.
    """
    found: list[str] = []
    for item in inputs:
        s = str(item)
        fs, path = filesystem(s)
        if any(c in path for c in _WILDCARDS):
            matches = sorted(fs.glob(path))
            if not matches:
                raise InputError(s, None, "no file matches this pattern", "missing_file")
        elif fs.exists(path):
            matches = [path]
        else:
            raise InputError(s, None, "no such file or directory", "missing_file")
        for m in matches:
            if fs.isdir(m):
                found.extend(
                    fs.unstrip_protocol(f) for f in sorted(fs.find(m)) if f.endswith(suffixes)
                )
            else:
                found.append(fs.unstrip_protocol(m))
    return found


def fingerprint(p: str | os.PathLike) -> dict:
    """What identifies an input's content cheaply: size plus mtime (local) or ETag/mtime (remote)."""
    lp = local_path(p)
    if lp is not None:
        st = lp.stat()
        return {"path": str(lp.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    fs, path = filesystem(str(p))
    info = fs.info(path)
    version = {k: str(info[k]) for k in _VERSION_KEYS if info.get(k) is not None}
    return {"path": str(p), "size": int(info.get("size") or 0), **version}


@contextlib.contextmanager
def staged(p: str | os.PathLike) -> Iterator[Path]:
    """A local file with the content of ``p``: ``p`` itself when local, else a temporary copy.

    The copy keeps the file name, so readers that pick a decompressor by suffix
    (``.zst``, ``.gz``) behave the same. It is removed on exit.
    """
    lp = local_path(p)
    if lp is not None:
        yield lp
        return
    fs, path = filesystem(str(p))
    tmpdir = Path(tempfile.mkdtemp(prefix="ratio-stage-"))
    local = tmpdir / name(path)
    try:
        try:
            fs.get_file(path, str(local))
        except FileNotFoundError as e:
            raise InputError(str(p), None, "no such file", "missing_file") from e
        except OSError as e:
            raise InputError(str(p), None, f"cannot download: {e}", "unreadable_file") from e
        yield local
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


# --------------------------------------------------------------------------- outputs


@contextlib.contextmanager
def output(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a local temporary path; on success it becomes ``target`` in one step.

    Local targets are renamed into place (``ratio.core.io.atomic_path``); remote ones are
    uploaded in a single put, so readers never see a partial object.
    """
    lp = local_path(target)
    if lp is not None:
        with atomic_path(lp) as tmp:
            yield tmp
        return
    fs, path = filesystem(str(target))
    tmpdir = Path(tempfile.mkdtemp(prefix="ratio-out-"))
    tmp = tmpdir / name(path)
    try:
        yield tmp
        parent = posixpath.dirname(path)
        if parent:
            fs.makedirs(parent, exist_ok=True)
        fs.put_file(str(tmp), path)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def write_text(target: str | os.PathLike, text: str) -> None:
    with output(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_parquet(
    target: str | os.PathLike, table: pa.Table, metadata: dict[str, str] | None = None
) -> None:
    """``ratio.core.io.write_parquet_atomic`` for a local path or URL."""
    with output(target) as tmp:
        pq.write_table(with_metadata(table, metadata), tmp, compression="zstd")


def sha256(p: str | os.PathLike) -> str:
    h = hashlib.sha256()
    lp = local_path(p)
    if lp is not None:
        f = open(lp, "rb")  # noqa: SIM115 - closed below
    else:
        fs, path = filesystem(str(p))
        f = fs.open(path, "rb")
    with f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def sync(src: str | os.PathLike, dst: str | os.PathLike, pattern: str = "*") -> list[str]:
    """Copy every file under ``src`` (recursively) whose name matches ``pattern`` to ``dst``.

    Files already at ``dst`` with the same size and SHA-256 are skipped, so publishing a
    run directory to object storage after a rebuild uploads only what changed.
    Returns the relative paths copied. Temporary files of atomic writes are never copied.
    """
    src_s, dst_s = str(src), str(dst)
    copied: list[str] = []
    for rel in _walk(src_s):
        base = name(rel)
        if base.startswith(".") or not fnmatch.fnmatch(base, pattern):
            continue
        s, d = join(src_s, rel), join(dst_s, rel)
        same_size = exists(d) and fingerprint(s)["size"] == fingerprint(d)["size"]
        if same_size and sha256(s) == sha256(d):
            continue
        with output(d) as tmp, staged(s) as local:
            shutil.copyfile(local, tmp)
        copied.append(rel)
    return copied


def _walk(root: str) -> list[str]:
    lp = local_path(root)
    if lp is not None:
        return sorted(str(q.relative_to(lp)) for q in lp.rglob("*") if q.is_file())
    fs, path = filesystem(root)
    base = path.rstrip("/") + "/"
    return sorted(f[len(base) :] for f in fs.find(path) if f.startswith(base))
