"""Lexical overlap between queries and what a retriever returns (paper Appendix F.1, Figure 4).

If tuning only taught a model to find lexically similar sentences, its top-k would
overlap *more* with the query than the gold does. The paper measures the opposite:
query-candidate Jaccard at each rank next to query-gold Jaccard, plus the Spearman
correlation between rank and overlap. Tokens are BM25's stemmed unigrams without
stopwords (:class:`ratio.retrieval.bm25.Bm25Tokenizer`); Jaccard is over their sets.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ratio.core.io import RatioError, atomic_path
from ratio.metrics.ranking import Qrels, Ranking
from ratio.retrieval.bm25 import Bm25Tokenizer

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)


class StemmedTokenSets:
    """Text -> frozenset of its BM25 unigram tokens (one tokenizer, so one stem cache)."""

    def __init__(self) -> None:
        self._tokenizer = Bm25Tokenizer()

    def __call__(self, texts: Iterable[str]) -> list[frozenset[str]]:
        return [frozenset(t) for t in self._tokenizer.tokenize(list(texts))]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``; 0 when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@dataclass(frozen=True)
class OverlapResult:
    """Overlap of one system on one query set.

    ``per_rank[i, j]``: Jaccard of query ``i`` with its rank-``j+1`` candidate (NaN past
    a short list's end). ``topk[k]``: mean over queries of the mean over the top ``k``.
    """

    query_ids: list[str]
    per_rank: np.ndarray
    gold_per_query: np.ndarray
    ks: tuple[int, ...]
    spearman_rho: float
    spearman_p: float
    topk: dict[int, float] = field(default_factory=dict)

    @property
    def gold(self) -> float:
        return float(np.nanmean(self.gold_per_query)) if self.gold_per_query.size else float("nan")

    @property
    def by_rank(self) -> np.ndarray:
        """Mean Jaccard at each rank 1..max(ks)."""
        with np.errstate(all="ignore"):
            return np.nanmean(self.per_rank, axis=0) if self.per_rank.size else np.zeros(0)

    def delta(self, k: int) -> float:
        """Top-k overlap minus gold overlap (negative: retrieved less lexically similar)."""
        return self.topk[k] - self.gold

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_queries": len(self.query_ids),
            "topk": {str(k): v for k, v in self.topk.items()},
            "gold": self.gold,
            "delta": {str(k): self.delta(k) for k in self.ks},
            "by_rank": self.by_rank.tolist(),
            "spearman_rho": self.spearman_rho,
            "spearman_p": self.spearman_p,
        }


def texts_by_id(table: pa.Table, id_column: str, text_column: str = "text") -> dict[str, str]:
    """``{id: text}`` from a QUERIES or CANDIDATES table."""
    columns = table.column(id_column).to_pylist(), table.column(text_column).to_pylist()
    return dict(zip(*columns, strict=True))


def lexical_overlap(
    query_texts: Mapping[str, str] | pa.Table,
    candidate_texts: Mapping[str, str] | pa.Table,
    ranking: Ranking,
    qrels: Qrels,
    ks: Sequence[int] = DEFAULT_KS,
    tokenizer: StemmedTokenSets | None = None,
) -> OverlapResult:
    """Query-candidate Jaccard over ranks ``1..max(ks)`` vs query-gold Jaccard.

    Texts are ``{id: text}`` mappings or QUERIES / CANDIDATES tables. Queries: those of
    ``qrels`` with a relevant doc that ``ranking`` contains. A list shorter than ``k`` is
    averaged over what it has; the Spearman ρ pairs every (rank, Jaccard) of every query.
    """
    from scipy.stats import spearmanr

    if isinstance(query_texts, pa.Table):
        query_texts = texts_by_id(query_texts, "query_id")
    if isinstance(candidate_texts, pa.Table):
        candidate_texts = texts_by_id(candidate_texts, "candidate_id")
    ks = tuple(sorted({int(k) for k in ks}))
    if not ks or ks[0] < 1:
        raise RatioError(f"overlap ks must be positive integers, got {ks}")
    depth = ks[-1]
    tok = tokenizer or StemmedTokenSets()
    ranking = ranking.in_trec_order()
    qids = [q for q in qrels.evaluated_query_ids if q in ranking.row_of]
    missing = [q for q in qids if q not in query_texts]
    if missing:
        raise RatioError(f"{len(missing)} evaluated queries have no text, e.g. {missing[0]!r}")
    rows = np.asarray([ranking.row_of[q] for q in qids], dtype=np.int64)
    ranked = ranking.indices[rows, :depth] if rows.size else np.zeros((0, 0), np.int32)
    needed = np.unique(ranked[ranked >= 0])
    golds = {q: [c for c, r in qrels.judged(q).items() if r >= 1] for q in qids}
    cand_ids = list(
        dict.fromkeys([*ranking.vocab[needed].tolist(), *(c for g in golds.values() for c in g)])
    )
    absent = [c for c in cand_ids if c not in candidate_texts]
    if absent:
        raise RatioError(f"{len(absent)} candidates have no text, e.g. {absent[0]!r}")
    cand_sets = dict(zip(cand_ids, tok(candidate_texts[c] for c in cand_ids), strict=True))
    q_sets = tok(query_texts[q] for q in qids)

    per_rank = np.full((len(qids), depth), np.nan)
    gold_pq = np.full(len(qids), np.nan)
    for i, (q, qs) in enumerate(zip(qids, q_sets, strict=True)):
        for j, code in enumerate(ranked[i].tolist()):
            if code >= 0:
                per_rank[i, j] = jaccard(qs, cand_sets[ranking.vocab[code]])
        if golds[q]:
            gold_pq[i] = float(np.mean([jaccard(qs, cand_sets[c]) for c in golds[q]]))

    topk = {}
    with np.errstate(all="ignore"):
        for k in ks:
            per_q = np.nanmean(per_rank[:, :k], axis=1)
            topk[k] = float(np.nanmean(per_q)) if np.isfinite(per_q).any() else float("nan")
    ok = np.isfinite(per_rank)
    ranks = np.broadcast_to(np.arange(1, depth + 1), per_rank.shape)[ok]
    vals = per_rank[ok]
    if vals.size > 2 and np.unique(vals).size > 1 and np.unique(ranks).size > 1:
        res = spearmanr(ranks, vals)
        rho, p = float(res.statistic), float(res.pvalue)
    else:
        rho, p = float("nan"), float("nan")
    return OverlapResult(qids, per_rank, gold_pq, ks, rho, p, topk)


def plot_overlap(
    panels: Mapping[str, Mapping[str, OverlapResult]],
    path: str | os.PathLike,
    title: str | None = None,
) -> None:
    """Figure-4-style PNG: per relation (``panels`` key), top-k Jaccard over k per system;
    a dashed line in the system's colour is its query-gold reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not panels:
        raise RatioError("nothing to plot: no overlap results")
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.4), sharey=True, squeeze=False)
    for ax, (panel, systems) in zip(axes[0], panels.items(), strict=True):
        for ci, (label, res) in enumerate(systems.items()):
            legend = f"{label} (ρ={res.spearman_rho:+.2f})"
            ax.plot(res.ks, [res.topk[k] for k in res.ks], marker="o", color=f"C{ci}", label=legend)
            ax.axhline(res.gold, color=f"C{ci}", linestyle="--", linewidth=1, alpha=0.8)
        ax.plot([], [], color="grey", linestyle="--", label="query–gold")
        ax.set_title(panel)
        ax.set_xlabel("top-k")
        ax.set_xticks(list(next(iter(systems.values())).ks) if systems else [])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("mean Jaccard (stemmed, no stopwords)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=150)
    plt.close(fig)
