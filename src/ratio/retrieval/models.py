"""Known embedding models, their recommended prefixes, and where their files live.

The paper evaluates each model under three input setups (Appendix C): no prefix, a generic
``query: `` / ``document: `` pair, and the prefix or instruction the model's authors recommend.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ratio.core.io import RatioError
from ratio.retrieval.shipped import RECORD, is_shipped, latest, verify

REPO_ROOT = Path(__file__).resolve().parents[3]

PREFIX_SETUPS = ("none", "generic", "recommended")
GENERIC_PREFIXES = ("query: ", "document: ")

STELLA_S2P = (
    "Instruct: Given a web search query, retrieve relevant passages that answer the query.\nQuery: "
)
NOMIC = ("search_query: ", "search_document: ")
E5 = ("query: ", "passage: ")
BGE = ("Represent this sentence for searching relevant passages: ", "")


class ModelNotFoundError(RatioError):
    pass


@dataclass(frozen=True)
class ModelSpec:
    """What we know about a model: where it comes from and how to prefix its inputs."""

    name: str
    hf_id: str = ""
    query_prefix: str = ""  # the authors' recommended query prefix or instruction
    doc_prefix: str = ""
    static: bool = False  # a model2vec static embedding model (no transformer)


KNOWN_MODELS: dict[str, ModelSpec] = {
    s.name: s
    for s in [
        ModelSpec("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2"),
        ModelSpec("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"),
        ModelSpec("potion-mpnet-256", "", static=True),
        ModelSpec("potion-base-8M", "minishlab/potion-base-8M", static=True),
        ModelSpec("potion-retrieval-32M", "minishlab/potion-retrieval-32M", static=True),
        ModelSpec("modernbert-embed-large", "lightonai/modernbert-embed-large", *NOMIC),
        ModelSpec("modernbert-embed-base", "nomic-ai/modernbert-embed-base", *NOMIC),
        ModelSpec("nomic-embed-text-v1.5", "nomic-ai/nomic-embed-text-v1.5", *NOMIC),
        ModelSpec("stella_en_1.5B_v5", "NovaSearch/stella_en_1.5B_v5", STELLA_S2P, ""),
        ModelSpec("stella_en_400M_v5", "NovaSearch/stella_en_400M_v5", STELLA_S2P, ""),
        ModelSpec("e5-base-v2", "intfloat/e5-base-v2", *E5),
        ModelSpec("e5-large-v2", "intfloat/e5-large-v2", *E5),
        ModelSpec("bge-base-en-v1.5", "BAAI/bge-base-en-v1.5", *BGE),
        ModelSpec("bge-large-en-v1.5", "BAAI/bge-large-en-v1.5", *BGE),
    ]
}


OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
"""Keeps the Hugging Face libraries off the (unreachable) hub: every model is a local folder.
The one place these variables are named; a child process gets them by ``{**os.environ,
**OFFLINE_ENV}``."""


def offline_hf() -> None:
    """Set :data:`OFFLINE_ENV` in this process unless the user chose otherwise (before anything
    imports ``huggingface_hub``: it reads them once, at import)."""
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)


def quiet_offline_hf() -> None:
    """Before loading a model: never reach for the hub (:func:`offline_hf`), and keep the
    libraries' load reports and weight-loading bars out of the user's terminal (our own
    progress bars say what is happening; a real load failure still raises)."""
    offline_hf()
    for name in ("transformers", "sentence_transformers"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # static models only: nothing to quiet
        return
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


# ``model = "shipped"``: the newest shipped move model (models/ratio-moves-*-v<N>)
SHIPPED_ALIAS = "shipped"


def models_dirs() -> list[Path]:
    """Directories searched for a model by name: ``$RATIO_MODELS`` then the repo's ``models/``."""
    env = os.environ.get("RATIO_MODELS", "")
    return [*(Path(p) for p in env.split(os.pathsep) if p), REPO_ROOT / "models"]


def resolve_model(name_or_path: str) -> tuple[Path, ModelSpec]:
    """Find a model's directory (already on disk) from a registry name, a directory name or a
    path."""
    if not name_or_path:
        raise ModelNotFoundError("no model given for a dense system (set `model = ...`)")
    if name_or_path == SHIPPED_ALIAS:  # configs name the newest version, not one number
        newest = latest(models_dirs())
        if newest is None:
            raise ModelNotFoundError(
                f"model {SHIPPED_ALIAS!r}: no models/ratio-moves-*-v<N> folder in "
                f"{', '.join(str(d) for d in models_dirs())} (git checkout -- models/)"
            )
        name_or_path = str(newest)
    spec = KNOWN_MODELS.get(name_or_path)
    candidates: list[Path] = []
    direct = Path(name_or_path).expanduser()
    if direct.is_absolute() or name_or_path.startswith((".", "~")) or "/" in name_or_path:
        candidates.append(direct)
    names = [name_or_path] + ([spec.hf_id.split("/")[-1]] if spec and spec.hf_id else [])
    for d in models_dirs():
        candidates += [d / n for n in names]
    for c in candidates:
        if c.is_dir() and any(
            (c / f).exists() for f in ("modules.json", "config.json", "model.safetensors")
        ):
            c = c.resolve()
            if is_shipped(c):  # its manifest is checked at every load, never skipped
                verify(c)
            if spec is None:
                spec = KNOWN_MODELS.get(c.name) or ModelSpec(c.name, static=is_static(c))
            return c, spec
    searched = ", ".join(str(c) for c in candidates)
    raise ModelNotFoundError(
        f"model {name_or_path!r} not found (looked in: {searched}); download it into "
        f"$RATIO_MODELS or models/, or give a directory path"
    )


def is_static(path: Path) -> bool:
    """model2vec directories have a config with ``model_type: model2vec``."""
    try:
        data = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return data.get("model_type") == "model2vec"


def prefixes(spec: ModelSpec, setup: str) -> tuple[str, str]:
    """(query prefix, document prefix) for a prefix setup."""
    if setup == "none":
        return "", ""
    if setup == "generic":
        return GENERIC_PREFIXES
    if setup == "recommended":
        return spec.query_prefix, spec.doc_prefix
    raise RatioError(f"unknown prefix setup {setup!r}; expected one of {', '.join(PREFIX_SETUPS)}")


def model_key(path: Path) -> str:
    """A cache key for a model: its directory name plus a hash of its files. Weight files are
    hashed by content (two fine-tunes of one backbone have equal sizes but must never share
    cached embeddings); other files by name and size."""
    h = hashlib.sha1()
    for f in sorted(path.rglob("*")):
        if not f.is_file() or "checkpoint-" in str(f.relative_to(path)):
            continue
        if f.suffix in {".safetensors", ".bin", ".onnx"}:
            with open(f, "rb") as fh:
                for chunk in iter(partial(fh.read, 1 << 22), b""):
                    h.update(chunk)
        elif f.name == RECORD:
            continue  # a shipped model's record (its card's numbers), not what encodes
        elif f.suffix in {".json", ".txt", ".model"}:
            h.update(f"{f.relative_to(path)}:{f.stat().st_size}\n".encode())
    return f"{path.name}-{h.hexdigest()[:12]}"
