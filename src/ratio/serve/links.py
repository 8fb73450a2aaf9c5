"""Links out: the page where a reader opens a hit's paper.

A result is a sentence; a researcher who wants to follow it needs the paper. In order:

1. the ``url`` column of the user's metadata file (``ratio ingest --metadata``), which knows
   best where its papers live;
2. its ``doi``, resolved through https://doi.org/;
3. for papers of the shared NeurIPS corpus, the OpenReview forum page. Its records are keyed by
   OpenReview id (ten letters, digits, ``-`` or ``_``), and ingest records each paper's shard
   name (``neurips-2025-00.jsonl.zst``); a link is built only when both say OpenReview, so a
   look-alike id from another corpus never gets a link that leads to someone else's paper.

Anything else has no ``url`` (null), never a guessed one.

Tested by tests/serve/test_links.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa

from ratio.corpus.readers.metadata import metadata_lookup, row_for

DOI_RESOLVER = "https://doi.org/"
OPENREVIEW_FORUM = "https://openreview.net/forum?id="
OPENREVIEW_ID = re.compile(r"[A-Za-z0-9_-]{10}")
# the shard names of the shared corpus (../shared/corpora/neurips), as ingest records them
NEURIPS_SHARD = re.compile(r"neurips-\d{4}-\d{2}\.jsonl(?:\.zst|\.gz)?")


def doi_url(doi: str) -> str:
    """The doi.org link of a bare DOI; characters a URL cannot carry as they are (``#``, ``?``,
    ``%``, spaces) are percent-encoded, as doi.org asks."""
    return DOI_RESOLVER + quote(doi, safe="/:;()")


def openreview_url(paper_id: str, source: str | None) -> str | None:
    """The OpenReview forum of a paper of the shared NeurIPS corpus, else None."""
    if source and NEURIPS_SHARD.fullmatch(source) and OPENREVIEW_ID.fullmatch(paper_id):
        return OPENREVIEW_FORUM + paper_id
    return None


def paper_url(paper_id: str, source: str | None, meta: dict | None) -> str | None:
    """Where to read one paper: its metadata row's url, else its DOI, else OpenReview."""
    if meta is not None:
        if meta.get("url"):
            return meta["url"]
        if meta.get("doi"):
            return doi_url(meta["doi"])
    return openreview_url(paper_id, source)


def paper_urls(papers: pa.Table, metadata: Path | None) -> pa.Array:
    """The url of each row of an ingest ``papers`` table (``paper_id``, ``source``), with
    ``metadata`` the checked sidecar ingest wrote (``ingest/metadata.parquet``), if any."""
    lookup = metadata_lookup(metadata) if metadata is not None else {}
    ids = papers.column("paper_id").to_pylist()
    sources = papers.column("source").to_pylist()
    urls = [
        paper_url(pid, src, row_for(pid, lookup) if lookup else None)
        for pid, src in zip(ids, sources, strict=True)
    ]
    return pa.array(urls, pa.string())
