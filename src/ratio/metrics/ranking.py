"""Compact ``Ranking`` and ``Qrels`` containers and their alignment into relevance matrices.

A ranking of 10k queries x 100 candidates is a million (query, doc, score) triples; as
nested dicts it is slow to build, sort and evaluate. Here a ranking is a vocabulary of doc
ids, a ``(n_queries, depth)`` int32 matrix of indices into it (``-1`` pads short
lists) and the matching float64 scores, so every metric is a numpy reduction.

Two orders exist for equal scores, and a ranking records which one it holds. A
retriever's ranking (:meth:`Ranking.from_ranked`) keeps the retriever's own tie order: that is
what a user is shown and what rank fusion consumes. Metrics and TREC files use
trec_eval's order: score descending, ties by doc id *descending* in byte order
(``strcmp``; verified against pytrec_eval-terrier 0.5.11: ``{"a": 1, "b": 1}`` ranks
``b`` first, ``"9"`` ranks above ``"10"``). Python's ``str`` order equals UTF-8 byte order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ratio.core.io import RatioError
from ratio.core.schemas import RANKING


class RankingError(RatioError):
    """A ranking or qrels that cannot be evaluated (duplicates, NaN scores, bad shapes)."""


def _as_str_array(ids: Iterable[str] | np.ndarray) -> np.ndarray:
    arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids))
    if arr.size == 0:
        return np.asarray([], dtype="<U1")
    if arr.dtype.kind not in "UO":
        arr = arr.astype(str)
    return arr


def _encode(ids: list[str] | np.ndarray | pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """``vocab[codes] == ids``, vocab in first-appearance order, plus vocab as Arrow.

    pyarrow's dictionary encoding is several times faster than ``np.unique`` (which
    sorts strings) on a million ids.
    """
    arr = ids if isinstance(ids, pa.Array) else pa.array(ids, pa.string())
    if len(arr) == 0:
        return np.asarray([], dtype=object), np.zeros(0, dtype=np.int64), pa.array([], pa.string())
    if arr.null_count:
        raise RankingError("null doc id")
    enc = arr.dictionary_encode()
    vocab = enc.dictionary.to_numpy(zero_copy_only=False)
    return vocab, enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary


def _ragged_to_matrix(
    rows: np.ndarray, codes: np.ndarray, scores: np.ndarray, n_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Place flat triples, already grouped by row, into ``-1``-padded matrices."""
    counts = np.bincount(rows, minlength=n_rows) if rows.size else np.zeros(n_rows, np.int64)
    depth = int(counts.max()) if n_rows and rows.size else 0
    if n_rows and rows.size == n_rows * depth:  # equal-length lists: a plain reshape
        return codes.reshape(n_rows, depth), scores.reshape(n_rows, depth)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    pos = np.arange(rows.size) - starts[rows] if rows.size else rows
    idx = np.full((n_rows, depth), -1, dtype=np.int64)
    sc = np.full((n_rows, depth), -np.inf, dtype=np.float64)
    idx[rows, pos] = codes
    sc[rows, pos] = scores
    return idx, sc


def _rank_matrix(
    idx: np.ndarray, scores: np.ndarray, vocab: np.ndarray, check_duplicates: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row: score descending, ties by doc id descending; padding last.

    Only the strings of tied docs are ranked; continuous scores sort no strings at all.
    """
    if idx.size == 0:
        return idx.astype(np.int32), scores
    pad = idx < 0
    if np.isnan(scores[~pad]).any():
        raise RankingError("ranking contains NaN scores; trec_eval cannot rank them")
    if check_duplicates:  # not needed for dict input: keys are unique per query
        srt = np.sort(np.where(pad, -1, idx), axis=1)
        if ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).any():
            raise RankingError("a query lists the same doc id twice")
    neg = np.where(pad, np.inf, -scores)
    order = np.argsort(neg, axis=1, kind="stable")
    idx = np.take_along_axis(idx, order, axis=1)
    neg = np.take_along_axis(neg, order, axis=1)
    pad = idx < 0
    eq = (neg[:, 1:] == neg[:, :-1]) & ~pad[:, 1:]
    tied = np.zeros(idx.shape, dtype=bool)
    tied[:, 1:] |= eq
    tied[:, :-1] |= eq
    if tied.any():
        rows = np.nonzero(tied.any(axis=1))[0]
        sub_idx, sub_neg, sub_tied = idx[rows], neg[rows], tied[rows]
        used = np.unique(sub_idx[sub_tied])
        strings = np.asarray(vocab[used], dtype=str)
        rank_of_used = np.empty(used.size, dtype=np.int64)
        rank_of_used[np.argsort(strings, kind="stable")] = np.arange(used.size)
        key = np.zeros(sub_idx.shape, dtype=np.int64)
        key[sub_tied] = rank_of_used[np.searchsorted(used, sub_idx[sub_tied])]
        o2 = np.lexsort((-key, sub_neg), axis=-1)
        idx[rows] = np.take_along_axis(sub_idx, o2, axis=1)
        neg[rows] = np.take_along_axis(sub_neg, o2, axis=1)
    width = int((idx >= 0).sum(axis=1).max())
    out_scores = np.where(idx >= 0, -neg, -np.inf)[:, :width]
    return idx[:, :width].astype(np.int32), out_scores


@dataclass(frozen=True, eq=False)
class Ranking:
    """Ranked candidates per query: the one ranked-list type retrievers, fusion,
    metrics and TREC files share.

    ``indices[i, j]`` indexes ``vocab`` (unique ids, any order, possibly unretrieved
    ones) for the doc at rank ``j + 1`` of ``query_ids[i]``; ``-1`` pads a short list.
    Build one with a ``from_*`` constructor; ``trec_order`` says whether ties are in
    trec_eval's order.
    """

    query_ids: list[str]
    vocab: np.ndarray
    indices: np.ndarray
    scores: np.ndarray
    name: str = "run"
    trec_order: bool = True

    @classmethod
    def from_dict(cls, ranking: Mapping[str, Mapping[str, float]], name: str = "run") -> Ranking:
        """From ``{qid: {docid: score}}`` (the pytrec_eval / ranx shape)."""
        qids = [str(q) for q in ranking]
        lens = np.fromiter((len(d) for d in ranking.values()), dtype=np.int64, count=len(qids))
        rows = np.repeat(np.arange(len(qids), dtype=np.int64), lens)
        vocab, codes, arrow = _encode(list(chain.from_iterable(ranking.values())))
        vals = np.asarray(
            list(chain.from_iterable(d.values() for d in ranking.values())), np.float64
        )
        idx, sc = _ragged_to_matrix(rows, codes, vals, len(qids))
        indices, scores = _rank_matrix(idx, sc, vocab, check_duplicates=False)
        return cls(qids, vocab, indices, scores, name)._with_arrow(arrow)

    @classmethod
    def from_arrays(
        cls,
        query_ids: Sequence[str],
        candidate_ids: Sequence[str] | np.ndarray,
        indices: np.ndarray,
        scores: np.ndarray,
        name: str = "run",
    ) -> Ranking:
        """:meth:`from_ranked`, re-ranked with the trec_eval convention (rows need not be sorted)."""
        return cls.from_ranked(query_ids, candidate_ids, indices, scores, name).in_trec_order()

    @classmethod
    def from_ranked(
        cls,
        query_ids: Sequence[str],
        candidate_ids: Sequence[str] | np.ndarray,
        indices: np.ndarray,
        scores: np.ndarray,
        name: str = "run",
    ) -> Ranking:
        """From a ranker's output in its own tie order: ``indices[i, j]`` points into
        ``candidate_ids`` (``-1`` pads, as faiss does); the vocabulary is the retrieved subset.
        """
        indices = np.asarray(indices)
        scores = np.asarray(scores, dtype=np.float64)
        if indices.ndim != 2 or indices.shape != scores.shape:
            raise RankingError(
                f"indices {indices.shape} and scores {scores.shape} must be equal 2-D shapes"
            )
        if indices.shape[0] != len(query_ids):
            raise RankingError(f"{len(query_ids)} query ids for {indices.shape[0]} rows")
        if len(set(query_ids)) != len(query_ids):
            raise RankingError("query_ids contains duplicates")
        cands = _as_str_array(candidate_ids)
        if indices.size and indices.max() >= len(cands):
            raise RankingError(
                f"index {int(indices.max())} out of range for {len(cands)} candidates"
            )
        # string work only on what was retrieved; the int work is O(pool) for a big ranking (a
        # whole evaluation) and O(retrieved) for a small one (a served query of an 820k pool)
        valid = indices >= 0
        if indices.size * 16 < len(cands):
            used, codes = np.unique(indices[valid], return_inverse=True)
            local = np.full(indices.shape, -1, dtype=np.int64)
            local[valid] = codes
        else:
            seen = np.zeros(len(cands), dtype=bool)
            seen[indices[valid]] = True
            used = np.flatnonzero(seen)
            remap = np.full(len(cands) + 1, -1, dtype=np.int64)
            remap[used] = np.arange(used.size)
            local = remap[indices]
        vocab = cands[used]
        arrow = pa.array(vocab, pa.string())
        if used.size and len(pc.unique(arrow)) != used.size:
            raise RankingError("candidate_ids contains duplicate ids")
        qids = [str(q) for q in query_ids]
        ranking = cls(qids, vocab, local.astype(np.int32), scores, name, trec_order=False)
        return ranking._with_arrow(arrow)

    @classmethod
    def from_table(cls, table: pa.Table, name: str = "run") -> Ranking:
        """From the long form (:data:`ratio.core.schemas.RANKING`; ``rank`` is ignored, scores decide)."""
        qvocab, qcodes, _ = _encode(table.column("query_id").combine_chunks())
        order = np.argsort(qcodes, kind="stable")
        vocab, codes, arrow = _encode(table.column("candidate_id").combine_chunks())
        scores = table.column("score").to_numpy().astype(np.float64)
        idx, sc = _ragged_to_matrix(qcodes[order], codes[order], scores[order], len(qvocab))
        indices, out_scores = _rank_matrix(idx, sc, vocab)
        return cls([str(q) for q in qvocab], vocab, indices, out_scores, name)._with_arrow(arrow)

    @property
    def depth(self) -> int:
        return int(self.indices.shape[1])

    def __len__(self) -> int:
        return len(self.query_ids)

    @cached_property
    def row_of(self) -> dict[str, int]:
        return {q: i for i, q in enumerate(self.query_ids)}

    def ranked(self, query_id: str) -> list[tuple[str, float]]:
        """``[(docid, score), ...]`` of one query in rank order."""
        i = self.row_of[query_id]
        keep = self.indices[i] >= 0
        docs = self.vocab[self.indices[i][keep]].tolist()
        return list(zip(docs, self.scores[i][keep].tolist(), strict=True))

    def doc_ids(self) -> np.ndarray:
        """``(n_queries, depth)`` array of doc ids in rank order (``""`` for padding)."""
        if not self.vocab.size:
            return np.full(self.indices.shape, "", dtype="<U1")
        return np.where(self.indices >= 0, self.vocab[np.maximum(self.indices, 0)], "")

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, inserted in rank order."""
        return {q: dict(self.ranked(q)) for q in self.query_ids}

    def to_table(self) -> pa.Table:
        """Long form, one row per retrieved doc (:data:`ratio.core.schemas.RANKING`)."""
        valid = self.indices >= 0
        rows, cols = np.nonzero(valid)
        return pa.table(
            {
                "query_id": pa.array(np.asarray(self.query_ids, dtype=object)[rows], pa.string()),
                "candidate_id": pa.array(self.vocab[self.indices[valid]], pa.string()),
                "rank": pa.array(cols + 1, pa.int32()),
                "score": pa.array(self.scores[valid], pa.float64()),
            },
            schema=RANKING,
        )

    def truncate(self, k: int) -> Ranking:
        """The top ``k`` of each list (what a metric at cutoff ``k`` sees)."""
        return self._derive(self.indices[:, :k], self.scores[:, :k], self.trec_order)

    def in_trec_order(self) -> Ranking:
        """This ranking with ties in trec_eval's order (itself when already so)."""
        if self.trec_order:
            return self
        return self._derive(*_rank_matrix(self.indices.astype(np.int64), self.scores, self.vocab))

    def _derive(self, indices: np.ndarray, scores: np.ndarray, trec_order: bool = True) -> Ranking:
        out = Ranking(self.query_ids, self.vocab, indices, scores, self.name, trec_order)
        return out._with_arrow(self.vocab_arrow)

    def _with_arrow(self, arrow: pa.Array) -> Ranking:
        self.__dict__["vocab_arrow"] = arrow  # seed the cached_property below
        return self

    @cached_property
    def vocab_arrow(self) -> pa.Array:
        return pa.array(self.vocab, pa.string())


@dataclass(frozen=True, eq=False)
class Qrels:
    """Judged docs per query in CSR form: ``doc_ids[offsets[i]:offsets[i+1]]`` for query ``i``.

    Relevance levels are integers; ``>= 1`` counts as relevant (trec_eval's
    default ``relevance_level``), and nDCG uses ``max(rel, 0)`` as gain.
    """

    query_ids: list[str]
    offsets: np.ndarray
    doc_ids: np.ndarray
    relevance: np.ndarray

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]]) -> Qrels:
        """From ``{qid: {docid: relevance}}``."""
        return cls._build([(str(q), list(d.items())) for q, d in qrels.items()])

    @classmethod
    def from_table(cls, table: pa.Table) -> Qrels:
        """From a ``schemas.QRELS`` table (``query_id``, ``candidate_id``, ``relevance``)."""
        grouped: dict[str, list[tuple[str, int]]] = {}
        columns = (table.column(c).to_pylist() for c in ("query_id", "candidate_id", "relevance"))
        for q, d, r in zip(*columns, strict=True):
            grouped.setdefault(q, []).append((d, r))
        return cls._build(list(grouped.items()))

    @classmethod
    def _build(cls, judged: list[tuple[str, list[tuple[str, int]]]]) -> Qrels:
        qids = [q for q, _ in judged]
        if len(set(qids)) != len(qids):
            raise RankingError("qrels list a query id twice")
        rel = np.asarray([r for _, pairs in judged for _, r in pairs])
        if rel.size and (rel.dtype.kind not in "iub" and not np.all(np.mod(rel, 1) == 0)):
            raise RankingError("qrels relevance levels must be integers")
        lens = np.asarray([len(pairs) for _, pairs in judged], dtype=np.int64)
        doc_arr = _as_str_array([d for _, pairs in judged for d, _ in pairs])
        if doc_arr.size > 1:
            _, codes, _ = _encode(doc_arr)
            key = np.repeat(np.arange(len(qids)), lens) * (int(codes.max()) + 1) + codes
            if np.unique(key).size != key.size:
                raise RankingError("qrels list the same doc twice for one query")
        offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
        return Qrels(qids, offsets, doc_arr, rel.astype(np.int64))

    def __len__(self) -> int:
        return len(self.query_ids)

    @cached_property
    def row_of(self) -> dict[str, int]:
        return {q: i for i, q in enumerate(self.query_ids)}

    def judged(self, query_id: str) -> dict[str, int]:
        """``{docid: relevance}`` of one query (empty if it has none)."""
        i = self.row_of.get(query_id)
        if i is None:
            return {}
        s, e = self.offsets[i], self.offsets[i + 1]
        return dict(zip(self.doc_ids[s:e].tolist(), self.relevance[s:e].tolist(), strict=True))

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {q: self.judged(q) for q in self.query_ids}

    def to_table(self) -> pa.Table:
        qids = np.repeat(np.asarray(self.query_ids, dtype=object), np.diff(self.offsets))
        return pa.table(
            {
                "query_id": pa.array(qids, pa.string()),
                "candidate_id": pa.array(self.doc_ids, pa.string()),
                "relevance": pa.array(self.relevance, pa.int8()),
            }
        )

    @cached_property
    def n_relevant(self) -> np.ndarray:
        """Relevant (``rel >= 1``) docs per query."""
        rows = np.repeat(np.arange(len(self)), np.diff(self.offsets))
        return np.bincount(rows[self.relevance >= 1], minlength=len(self))

    @property
    def evaluated_query_ids(self) -> list[str]:
        """Queries a metric is averaged over: those with at least one relevant doc."""
        return [q for q, n in zip(self.query_ids, self.n_relevant, strict=True) if n > 0]


@dataclass(frozen=True)
class Relevance:
    """A ranking aligned to qrels, the one input every metric kernel needs.

    ``gains[i, j]``: relevance (``max(rel, 0)``) of the doc at rank ``j + 1`` for
    ``query_ids[i]``; ``n_rel[i]``: relevant docs in qrels; ``ideal[i, j]``: the
    qrels gains sorted descending (the ideal ranking for nDCG). Queries without a
    relevant doc are absent; queries the ranking lacks have all-zero gains.
    """

    query_ids: list[str]
    gains: np.ndarray
    n_rel: np.ndarray
    ideal: np.ndarray


def relevance_matrix(qrels: Qrels, ranking: Ranking, depth: int) -> Relevance:
    """Align ``ranking`` (in trec_eval's order) to ``qrels`` up to ``depth`` ranks, vectorised.

    The ranking's vocabulary is probed against the hashed judged ids (Arrow ``index_in``);
    only retrieved cells judged for *some* query are then matched on the int64 key
    ``query_row * (U + 1) + judged_index`` with one ``searchsorted``.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    ranking = ranking.in_trec_order()
    nrel_all = qrels.n_relevant
    eval_rows = np.nonzero(nrel_all > 0)[0]
    n = eval_rows.size
    qids = [qrels.query_ids[i] for i in eval_rows]

    # ranking rows of the evaluated queries (-1 = query absent from the ranking)
    rows_of = np.fromiter((ranking.row_of.get(q, -1) for q in qids), dtype=np.int64, count=n)
    ind = np.full((n, depth), -1, dtype=np.int64)
    d = min(depth, ranking.depth)
    present = rows_of >= 0
    if d:
        ind[present, :d] = ranking.indices[rows_of[present], :d]
    # qrels triples of the evaluated queries, positive gain only
    lens = np.diff(qrels.offsets)
    qpos_all = np.full(len(qrels), -1, dtype=np.int64)
    qpos_all[eval_rows] = np.arange(n)
    trip_q = np.repeat(qpos_all, lens)
    gain_all = np.maximum(qrels.relevance, 0).astype(np.float64)
    sel = (trip_q >= 0) & (gain_all > 0)
    tq, tdoc, tgain = trip_q[sel], qrels.doc_ids[sel], gain_all[sel]
    gains = np.zeros((n, depth), dtype=np.float64)
    if ranking.vocab.size and tq.size:
        # hash the (few) judged ids and probe the ranking's vocabulary with them:
        # vocab entry -> index among the judged ids, or -1
        udocs, tcode, uarrow = _encode(tdoc)
        probe = pc.index_in(ranking.vocab_arrow, value_set=uarrow)
        vmap = np.append(probe.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64), -1)
        cell = vmap[ind]  # ind == -1 picks the appended -1
        r, c = np.nonzero(cell >= 0)
        if r.size:
            u = udocs.size + 1
            qkeys = tq * u + tcode
            order = np.argsort(qkeys)
            qkeys, qgain = qkeys[order], tgain[order]
            rkeys = r * u + cell[r, c]
            pos = np.minimum(np.searchsorted(qkeys, rkeys), qkeys.size - 1)
            match = qkeys[pos] == rkeys
            gains[r[match], c[match]] = qgain[pos[match]]
    # ideal ranking: qrels gains sorted descending, per query
    ideal = np.zeros((n, depth), dtype=np.float64)
    if tq.size:
        order = np.lexsort((-tgain, tq))
        sq, sg = tq[order], tgain[order]
        counts = np.bincount(sq, minlength=n)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        pos = np.arange(sq.size) - starts[sq]
        keep = pos < depth
        ideal[sq[keep], pos[keep]] = sg[keep]
    return Relevance(qids, gains, nrel_all[eval_rows].astype(np.int64), ideal)


def per_query(
    from_relevance: Callable[[Relevance, int], np.ndarray],
) -> Callable[[Qrels, Ranking, int], np.ndarray]:
    """A metric module's typed wrapper: ``metric(qrels, ranking, k)`` -> per-query scores.

    Rows follow ``qrels.evaluated_query_ids``: queries missing from ``ranking`` score 0,
    queries without a relevant doc are skipped. Take ``.mean()`` for the reported number.
    """

    def metric(qrels: Qrels, ranking: Ranking, k: int) -> np.ndarray:
        return from_relevance(relevance_matrix(qrels, ranking, k), k)

    return metric
