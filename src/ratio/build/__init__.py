"""Benchmark build: mining, dedup, temporal split, leakage check, BEIR export, reports.

``build(config)`` runs the cached pipeline (see :mod:`ratio.build.pipeline`); the
pieces are importable on their own for notebooks and tests.
"""

from __future__ import annotations

from ratio.build.dedup import dedup_files, dedup_table
from ratio.build.export import export_beir, load_beir
from ratio.build.mine import consecutive_pairs, marker_counts, mine_shard
from ratio.build.pipeline import BuildResult, build, export
from ratio.build.split import SPLITS, boundaries, check_leakage, split_pairs

__all__ = [
    "SPLITS",
    "BuildResult",
    "boundaries",
    "build",
    "check_leakage",
    "consecutive_pairs",
    "dedup_files",
    "dedup_table",
    "export",
    "export_beir",
    "load_beir",
    "marker_counts",
    "mine_shard",
    "split_pairs",
]
