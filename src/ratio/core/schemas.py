"""Arrow schemas of every Parquet table Ratio writes (see docs/architecture.md).

Tested by tests/build/test_mine.py, tests/corpus/test_ingest.py, tests/core/test_layout.py.
"""

from __future__ import annotations

import pyarrow as pa

SENTENCES = pa.schema(
    [
        ("paper_id", pa.string()),
        ("year", pa.int16()),
        ("date", pa.string()),
        ("venue", pa.string()),
        ("section", pa.string()),
        ("section_category", pa.string()),
        ("is_appendix", pa.bool_()),
        ("paragraph_idx", pa.int32()),
        ("sentence_idx", pa.int32()),
        ("text", pa.string()),
        ("match", pa.string()),
        # the sentence ends a paragraph that led into a display equation the cleanup removed
        # (null in runs ingested before the column existed: read as false)
        ("math_after", pa.bool_()),
    ]
)

PAPERS = pa.schema(
    [
        ("paper_id", pa.string()),
        ("title", pa.string()),
        ("year", pa.int16()),
        ("date", pa.string()),
        ("venue", pa.string()),
        ("source", pa.string()),
        ("n_sections", pa.int32()),
        ("n_paragraphs", pa.int32()),
        ("n_sentences", pa.int32()),
    ]
)

PAIRS = pa.schema(
    [
        ("relation", pa.string()),
        ("marker", pa.string()),
        ("query", pa.string()),
        ("gold", pa.string()),
        ("query_match", pa.string()),
        ("gold_match", pa.string()),
        ("paper_id", pa.string()),
        ("year", pa.int16()),
        ("date", pa.string()),
        ("section_category", pa.string()),
        ("paragraph_idx", pa.int32()),
        ("sentence_idx", pa.int32()),
    ]
)

QUERIES = pa.schema(
    [
        ("query_id", pa.string()),
        ("text", pa.string()),
        ("relation", pa.string()),
        ("marker", pa.string()),
        ("paper_id", pa.string()),
        ("year", pa.int16()),
        ("section_category", pa.string()),
        ("gold_id", pa.string()),
    ]
)

CANDIDATES = pa.schema(
    [
        ("candidate_id", pa.string()),
        ("text", pa.string()),
        ("paper_id", pa.string()),
        ("year", pa.int16()),
        ("section_category", pa.string()),
        ("origin", pa.string()),
        ("marker", pa.string()),
        # where the sentence sits in its paper, so a reader can be shown its context
        ("paragraph_idx", pa.int32()),
        ("sentence_idx", pa.int32()),
    ]
)

QRELS = pa.schema(
    [("query_id", pa.string()), ("candidate_id", pa.string()), ("relevance", pa.int8())]
)

METADATA = pa.schema(
    [
        ("id", pa.string()),
        ("title", pa.string()),
        ("year", pa.int16()),
        ("date", pa.string()),
        ("venue", pa.string()),
        ("url", pa.string()),
        ("doi", pa.string()),
        ("line", pa.int32()),
    ]
)
"""``ingest/metadata.parquet``: the checked metadata sidecar (``ratio.corpus.readers.metadata``)."""

JUDGMENTS = pa.schema(
    [
        ("query_id", pa.string()),
        ("candidate_id", pa.string()),
        ("prompt_id", pa.string()),
        ("prompt_version", pa.string()),
        ("tag", pa.string()),
        ("accepted", pa.bool_()),
        ("valid", pa.bool_()),
        ("parsed", pa.string()),
        ("raw", pa.string()),
        ("error", pa.string()),
        ("backend", pa.string()),
        ("model", pa.string()),
        ("attempts", pa.int32()),
        ("input_tokens", pa.int32()),
        ("output_tokens", pa.int32()),
        ("cached", pa.bool_()),
        ("p_accept", pa.float64()),
    ]
)
"""Every judgment a command made, valid or not, with its raw answer."""

RANKING = pa.schema(
    [
        ("query_id", pa.string()),
        ("candidate_id", pa.string()),
        ("rank", pa.int32()),
        ("score", pa.float64()),
    ]
)
"""Long form of a ranking (one row per retrieved candidate, ``rank`` 1-based)."""

POOL = pa.schema(
    [
        ("candidate_id", pa.string()),
        ("text", pa.string()),
        ("paper_id", pa.string()),
        ("title", pa.string()),
        ("year", pa.int16()),
        ("venue", pa.string()),
        ("url", pa.string()),  # where to read the paper (ratio.serve.links)
        ("section", pa.string()),
        ("section_category", pa.string()),
        ("origin", pa.string()),
        ("marker", pa.string()),
        ("paragraph_idx", pa.int32()),
        ("sentence_idx", pa.int32()),
        ("prev", pa.string()),
        ("next", pa.string()),
    ]
)
"""``serve/<pool>/pool.arrow``: a candidate with everything a search result shows."""
