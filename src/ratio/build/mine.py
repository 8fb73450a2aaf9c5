"""Mining: consecutive sentence pairs whose second sentence opens with a lexicon marker.

Paper §4: for consecutive sentences ``(s_i, s_i+1)`` inside one paragraph, when
``s_i+1 = marker ⊕ g`` the tuple ``(s_i, marker, g)`` is a pair of the marker's
relation; a distractor marker's remainder becomes a candidate with no query.
``mine_shard`` is a pure function of one sentence table and a matcher, so any
executor can run it per shard. Pairing is vectorized (numpy over sorted
columns); only the sentences that could open with a marker (a comma near the
start) reach the Python matcher.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.build._text import (
    capitalize_first,
    clean_gold_prefix,
    match_form,
    strip_intro_clause,
    too_short,
)
from ratio.build.validity import failed_rule
from ratio.core import schemas
from ratio.core.io import RatioError, write_parquet_atomic
from ratio.core.provenance import stamp
from ratio.core.records import RELATIONS
from ratio.lexicon import MarkerMatcher, load_lexicon
from ratio.runner.stages import digest

_RELATIONS = frozenset(RELATIONS)


def _ranks(col: pa.Array) -> np.ndarray:
    """Integer codes of a string column ordered like the strings (null is -1)."""
    enc = pc.dictionary_encode(col)
    rank = np.empty(len(enc.dictionary), dtype=np.int64)
    rank[pc.array_sort_indices(enc.dictionary).to_numpy()] = np.arange(len(enc.dictionary))
    idx = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(idx >= 0, rank[np.maximum(idx, 0)], -1)


def consecutive_pairs(sentences: pa.Table) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Return ``(table, first, second)``: row indices of consecutive sentence pairs.

    ``second[k]`` is the next sentence after ``first[k]`` in the same paragraph: same
    paper, section and paragraph, and ``sentence_idx`` exactly one more. A gap in
    ``sentence_idx`` (a sentence dropped by cleaning) breaks the pair, since the two
    were not adjacent in the text. Pairs come in (paper_id, paragraph, sentence) order;
    indices refer to the returned table (the input with its chunks combined), so only
    the rows that matter are ever copied.
    """
    t = sentences.combine_chunks()
    n = t.num_rows
    if n < 2:
        return t, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    paper = _ranks(t["paper_id"].chunk(0))
    section = _ranks(t["section"].chunk(0))
    para = t["paragraph_idx"].to_numpy().astype(np.int64)
    sidx = t["sentence_idx"].to_numpy().astype(np.int64)
    order = np.lexsort((sidx, para, paper))
    paper, section, para, sidx = paper[order], section[order], para[order], sidx[order]
    mask = (
        (paper[:-1] == paper[1:])
        & (section[:-1] == section[1:])
        & (para[:-1] == para[1:])
        & (sidx[1:] == sidx[:-1] + 1)
    )
    k = np.flatnonzero(mask)
    return t, order[k], order[k + 1]


def mine_shard(
    sentences: pa.Table,
    matcher,
    min_chars: int = 35,
    stats: dict | None = None,
) -> pa.Table:
    """Mined pairs (schemas.PAIRS) of one sentence table; distractor markers yield candidate
    rows with a null query.

    The query is the first sentence without its introductory clause, the gold the rest after
    the marker (list prefix cleaned, first letter capitalized). Rows with a query or gold
    shorter than ``min_chars`` are dropped, and so are relation pairs failing a validity rule
    (``ratio.build.validity``). ``stats``, when given, receives the counts.
    """
    t, first, second = consecutive_pairs(sentences)
    counts: Counter = Counter()
    fired: Counter = Counter()
    kept: Counter = Counter()
    invalid: dict[str, Counter] = {}  # rule -> relation -> pairs
    texts2 = t["text"].take(pa.array(second)).combine_chunks()
    # A marker ends at a comma near the start; the rest cannot match, so skip them cheaply.
    limit = getattr(matcher, "_max_chars", 10_000) + 32
    comma = pc.find_substring(pc.fill_null(texts2, ""), ",").to_numpy(zero_copy_only=False)
    cand = np.flatnonzero((comma >= 0) & (comma <= limit))
    cand_texts = texts2.take(pa.array(cand)).to_pylist()
    texts1 = t["text"].take(pa.array(first[cand])).to_pylist()
    if "math_after" in t.column_names:  # sentence shards ingested before it existed lack it
        math2 = pc.fill_null(t["math_after"].take(pa.array(second[cand])), False).to_pylist()
    else:
        math2 = [False] * len(cand)

    # (index into `second`, relation, marker, query, gold, query_match, gold_match)
    rows: list[tuple] = []
    match = matcher.match
    for k, text in enumerate(cand_texts):
        m = match(text)
        if m is None:
            continue
        fired[m.marker] += 1
        gold = capitalize_first(clean_gold_prefix(text[m.start_of_rest :]))
        if too_short(gold, min_chars):
            counts["dropped_short_gold"] += 1
            continue
        q = None
        if m.relation in _RELATIONS:
            raw_q = texts1[k] or ""
            q = strip_intro_clause(raw_q)
            q = capitalize_first(q) if q != raw_q else q.strip()
            if too_short(q, min_chars):
                counts["dropped_short_query"] += 1
                continue
            rule = failed_rule(m.relation, q, gold, math2[k])
            if rule is not None:
                invalid.setdefault(rule, Counter())[m.relation] += 1
                continue
        kept[m.marker] += 1
        qm = None if q is None else match_form(q)
        rows.append((int(cand[k]), m.relation, m.marker, q, gold, qm, match_form(gold)))

    if stats is not None:
        stats.update(
            sentences=t.num_rows,
            consecutive_pairs=len(first),
            fired=dict(sorted(fired.items())),
            kept=dict(sorted(kept.items())),
            dropped_short_query=counts["dropped_short_query"],
            dropped_short_gold=counts["dropped_short_gold"],
            dropped_invalid={r: dict(sorted(c.items())) for r, c in sorted(invalid.items())},
        )
    if not rows:
        return schemas.PAIRS.empty_table()
    src, *cols = zip(*rows, strict=True)
    take = pa.array(second[np.asarray(src, dtype=np.int64)])
    meta = t.select(
        ["paper_id", "year", "date", "section_category", "paragraph_idx", "sentence_idx"]
    ).take(take)
    names = ("relation", "marker", "query", "gold", "query_match", "gold_match")
    return pa.table(
        {
            **{name: pa.array(col, pa.string()) for name, col in zip(names, cols, strict=True)},
            **{name: meta[name] for name in meta.column_names},
        }
    ).cast(schemas.PAIRS)


def marker_counts(pairs: pa.Table) -> dict[str, int]:
    """Rows per marker (Table 2's "Data" column counts markers with at least one)."""
    if pairs.num_rows == 0:
        return {}
    g = pairs.group_by("marker").aggregate([("marker", "count")])
    return dict(sorted(zip(g["marker"].to_pylist(), g["marker_count"].to_pylist(), strict=True)))


# --------------------------------------------------------------------------- one shard file


@lru_cache(maxsize=4)
def _matcher(lexicon_path: str, version: str) -> MarkerMatcher:
    """The compiled matcher, loaded once per worker process and lexicon version."""
    matcher = MarkerMatcher(load_lexicon(lexicon_path or None))
    if matcher.version != version:
        raise RatioError(
            f"lexicon changed during the build ({version} -> {matcher.version}); rerun"
        )
    return matcher


def mine_file(
    sentences_path: str, out_path: str, lexicon_path: str, min_chars: int, key: dict
) -> dict:
    """Mine one sentence shard file into ``out_path``; the step of the build's mine stage
    (any executor). Returns the shard's counts, which its completion marker records."""
    matcher = _matcher(lexicon_path, key["lexicon_version"])
    # shards ingested before a column existed (math_after) are read without it
    names = set(pq.read_schema(sentences_path).names)
    table = pq.read_table(
        sentences_path, columns=[c for c in schemas.SENTENCES.names if c in names]
    )
    stats: dict = {}
    pairs = mine_shard(table, matcher, min_chars=min_chars, stats=stats)
    meta = stamp("mine", digest(key), matcher.version, shard=Path(sentences_path).stem)
    write_parquet_atomic(out_path, pairs, meta)
    return {
        "rows": pairs.num_rows,
        "sentences": stats["sentences"],
        "consecutive_pairs": stats["consecutive_pairs"],
        "fired": sum(stats["fired"].values()),
        "dropped_short_query": stats["dropped_short_query"],
        "dropped_short_gold": stats["dropped_short_gold"],
        "dropped_invalid": stats["dropped_invalid"],
        "fired_by_marker": stats["fired"],
        "kept_by_marker": stats["kept"],
    }
