"""What made an output: code version, config digest and lexicon version.

Every Parquet file and report Ratio writes carries this, so a number in a
table can be traced back to the exact run that produced it.

Tested by tests/corpus/test_ingest.py, tests/runner/test_stages.py, tests/build/test_pipeline.py.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

from ratio import __version__


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Package version plus the git commit when running from a checkout.

    ``RATIO_CODE_VERSION`` (set by the executors for their workers) wins, so every
    shard of one build carries the driver's version even if a commit lands mid-run.
    """
    if os.environ.get("RATIO_CODE_VERSION"):
        return os.environ["RATIO_CODE_VERSION"]
    root = Path(__file__).resolve().parents[2]

    def git(*args: str, check: bool = True) -> str:
        run = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5, check=check
        )
        return run.stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "src", check=False)
        return f"{__version__}+g{commit}{'.dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return __version__


def stamp(
    stage: str, config_digest: str = "", lexicon_version: str = "", **extra
) -> dict[str, str]:
    """Metadata for an output file; values are strings so Parquet can hold them."""
    meta = {
        "ratio.stage": stage,
        "ratio.code_version": code_version(),
        "ratio.config_digest": config_digest,
        "ratio.lexicon_version": lexicon_version,
    }
    for k, v in extra.items():
        meta[f"ratio.{k}"] = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
    return meta
