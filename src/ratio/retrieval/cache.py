"""An on-disk embedding cache so no text is ever encoded twice by the same model setup.

Layout: ``<root>/<model key>/<prefix hash>/`` holds ``meta.json`` (model, prefix, dim) and
shards ``<stem>.vec.npy`` (float32 rows, memory-mapped on load) + ``<stem>.keys.npy``
(16-byte text hashes). The keys file is renamed into place last and a shard counts only
once it exists, so an interrupted encode leaves complete shards the next run reuses.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ratio.core.io import atomic_path, write_text_atomic

KEY_BYTES = 16


def text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=KEY_BYTES).digest()


class EmbeddingCache:
    """Embeddings of one (model, prefix) pair, looked up by the hash of the unprefixed text."""

    def __init__(
        self, root: str | os.PathLike, model_key: str, prefix: str, shard_size: int = 8192
    ):
        prefix_hash = hashlib.sha1(prefix.encode("utf-8")).hexdigest()[:12]
        self.dir = Path(root) / model_key / f"prefix-{prefix_hash}"
        self.model_key = model_key
        self.prefix = prefix
        self.shard_size = shard_size
        self._index: dict[bytes, tuple[int, int]] = {}
        self._shards: list[np.ndarray] = []
        self._seen: set[str] = set()
        self.encoded = 0  # texts this instance sent to the encoder (for tests and logs)
        self.refresh()

    def refresh(self) -> None:
        """Pick up complete shards written since the last look (by us or another process)."""
        if not self.dir.is_dir():
            return
        for keys_file in sorted(self.dir.glob("*.keys.npy")):
            stem = keys_file.name[: -len(".keys.npy")]
            if stem in self._seen:
                continue
            vec_file = self.dir / f"{stem}.vec.npy"
            if not vec_file.exists():
                continue
            keys = np.load(keys_file)
            vecs = np.load(vec_file, mmap_mode="r")
            if len(keys) != len(vecs):
                continue  # inconsistent shard: ignore, its texts get re-encoded
            shard_no = len(self._shards)
            self._shards.append(vecs)
            for row, k in enumerate(keys):
                self._index.setdefault(k.tobytes(), (shard_no, row))
            self._seen.add(stem)

    def __len__(self) -> int:
        return len(self._index)

    def _write_shard(self, keys: list[bytes], vecs: np.ndarray) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / "meta.json"
        if not meta.exists():
            info = {"model": self.model_key, "prefix": self.prefix, "dim": int(vecs.shape[1])}
            write_text_atomic(meta, json.dumps(info))
        stem = f"{len(self._seen):05d}-{uuid.uuid4().hex[:8]}"
        with atomic_path(self.dir / f"{stem}.vec.npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(vecs, dtype=np.float32))
        # uint8 rows, not NumPy "S16": fixed-width bytes strip trailing NULs on read.
        key_arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)
        with atomic_path(self.dir / f"{stem}.keys.npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, key_arr)
        self.refresh()

    def get_or_encode(
        self,
        texts: Sequence[str],
        encode: Callable[[list[str]], np.ndarray],
        progress: bool | None = None,
    ) -> np.ndarray:
        """Embeddings for ``texts`` (unprefixed); encode only those missing, shard by shard.
        ``encode`` receives the *prefixed* texts."""
        keys = [text_key(t) for t in texts]
        # equal keys are equal texts, so the dict keeps each missing text once, in order
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._index}
        if missing:
            # lazy: tqdm.auto probes for Jupyter (~50 ms); only a cache miss needs it
            from tqdm.auto import tqdm

            items = list(missing.items())
            bar = tqdm(
                total=len(items), desc="encode", unit="text", disable=None if progress else True
            )
            for start in range(0, len(items), self.shard_size):
                chunk = items[start : start + self.shard_size]
                vecs = encode([self.prefix + t for _, t in chunk])
                self.encoded += len(chunk)
                self._write_shard([k for k, _ in chunk], np.asarray(vecs, dtype=np.float32))
                bar.update(len(chunk))
            bar.close()
        return self.lookup(keys)

    def lookup(self, keys: Sequence[bytes]) -> np.ndarray:
        if not keys:
            dim = self._shards[0].shape[1] if self._shards else 0
            return np.zeros((0, dim), dtype=np.float32)
        locs = np.array([self._index[k] for k in keys], dtype=np.int64)
        dim = self._shards[locs[0, 0]].shape[1]
        out = np.empty((len(keys), dim), dtype=np.float32)
        for shard_no in np.unique(locs[:, 0]):
            sel = np.nonzero(locs[:, 0] == shard_no)[0]
            rows = locs[sel, 1]
            order = np.argsort(rows)  # sequential reads from the memory map
            out[sel[order]] = self._shards[shard_no][rows[order]]
        return out
