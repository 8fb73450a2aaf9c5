"""Ratio: Retrieval Across Typed Ideation Operations."""

__version__ = "0.1.0"

__all__ = ["__version__", "moves", "search"]


def __getattr__(name):
    # Lazy: ``import ratio`` stays cheap; the search engine loads models on first use.
    if name in ("search", "moves"):
        from ratio import api

        return getattr(api, name)
    raise AttributeError(f"module 'ratio' has no attribute {name!r}")
