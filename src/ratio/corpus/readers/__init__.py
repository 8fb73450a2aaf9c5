"""Corpus readers, registered by format name; each yields typed ``Paper`` records.

>>> from ratio.corpus.readers import iter_papers
>>> for paper in iter_papers(["shards/"], "ratio-jsonl"): ...

Add a format by writing a module with a function decorated by
``@register_reader("name", suffixes=(...))`` and importing it below.
"""

# Importing the modules registers their formats.
from ratio.corpus.readers import pdf, plaintext, ratio_jsonl, s2orc, s2orc_v2, unarxive  # noqa: E402,F401
from ratio.corpus.readers.base import (
    DropReport,
    Reader,
    available_formats,
    get_reader,
    iter_papers,
    list_inputs,
    register_reader,
)

__all__ = [
    "DropReport",
    "Reader",
    "available_formats",
    "get_reader",
    "iter_papers",
    "list_inputs",
    "register_reader",
]
