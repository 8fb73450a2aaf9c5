"""Ratio: Retrieval Across Typed Ideation Operations."""

__version__ = "0.1.0"

__all__ = ["__version__", "chain", "moves", "search"]


def __getattr__(name):
    # lazy: every ``import ratio.x`` runs this file; ratio.api loads the search engine (~0.9 s)
    if name in ("search", "moves", "chain"):
        from ratio import api

        return getattr(api, name)
    raise AttributeError(f"module 'ratio' has no attribute {name!r}")
