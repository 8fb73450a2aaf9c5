"""``neighbors``: corpus spans closest in embedding space to foundational markers.

Paper Appendix A "Embedding discovery": sentence-initial comma-terminated phrases
(≤ 5 words) are embedded and the ten nearest neighbours of each foundational
marker become candidates for validation. The model is loaded from a local
directory (offline); nothing is downloaded.

Tested by tests/lexicon/test_tools.py.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ratio.core.io import RatioError
from ratio.lexicon.model import Lexicon, write_lexicon
from ratio.lexicon.spans import normalize_marker
from ratio.retrieval.models import quiet_offline_hf

DEFAULT_MODEL = Path(__file__).resolve().parents[3] / "models" / "all-MiniLM-L6-v2"


@dataclass(frozen=True, slots=True)
class Neighbor:
    seed: str
    relation: str
    span: str
    score: float
    count: int


def load_encoder(model_dir: str | os.PathLike | None = None):
    """A sentence-transformers model from a local directory, on CPU, offline."""
    path = Path(model_dir) if model_dir is not None else DEFAULT_MODEL
    if not path.is_dir():
        raise RatioError(f"{path}: model directory not found (sentence-transformers format)")
    quiet_offline_hf()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu")


def neighbors(
    seeds: Mapping[str, str],
    spans: Mapping[str, int] | Iterable[str],
    encoder=None,
    k: int = 10,
    max_words: int = 5,
    min_count: int = 1,
    exclude: Lexicon | None = None,
    batch_size: int = 256,
) -> list[Neighbor]:
    """The ``k`` nearest corpus spans (cosine) of each seed marker (seed → relation).

    ``spans`` is a span → count mapping (e.g. ``discover.count_spans``) or a plain
    list. Spans longer than ``max_words``, rarer than ``min_count``, equal to a seed
    or already in ``exclude`` are not candidates.
    """
    counts = Counter(spans) if not isinstance(spans, Mapping) else Counter(dict(spans))
    seed_map = {normalize_marker(s): r for s, r in seeds.items()}
    pool = [
        s
        for s, n in counts.items()
        if n >= min_count
        and 0 < len(s.split()) <= max_words
        and s not in seed_map
        and (exclude is None or s not in exclude)
    ]
    if not pool or not seed_map:
        return []
    enc = encoder if encoder is not None else load_encoder()
    seed_list = list(seed_map)
    kw = {"batch_size": batch_size, "normalize_embeddings": True, "convert_to_numpy": True}
    pe = np.asarray(enc.encode(pool, **kw), dtype=np.float32)
    se = np.asarray(enc.encode(seed_list, **kw), dtype=np.float32)
    sims = se @ pe.T
    kk = min(k, len(pool))
    out: list[Neighbor] = []
    for i, seed in enumerate(seed_list):
        top = np.argpartition(-sims[i], kk - 1)[:kk]
        for j in sorted(top, key=lambda j: -sims[i, j]):
            out.append(Neighbor(seed, seed_map[seed], pool[j], float(sims[i, j]), counts[pool[j]]))
    return out


def write_candidates(found: list[Neighbor], out_tsv: str | os.PathLike) -> int:
    """Write neighbours as a lexicon TSV (``source=embedding``), best score per span."""
    best: dict[str, Neighbor] = {}
    for n in found:
        if n.span not in best or n.score > best[n.span].score:
            best[n.span] = n
    rows = []
    for n in sorted(best.values(), key=lambda n: (n.relation, -n.score)):
        notes = f"neighbour of {n.seed!r}; cos={n.score:.3f}; count={n.count}"
        rows.append((n.span, n.relation, "embedding", notes))
    write_lexicon(out_tsv, rows)
    return len(rows)
