"""One TOML file configures a whole run; this module parses and validates it.

Every table maps to a dataclass below. Unknown keys and wrong types are
rejected with the dotted key path, before any work starts, because a typo in a
config should never silently fall back to a default.

Tested by tests/core/test_layout.py, tests/build/test_split.py, tests/training/test_cli.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from ratio.core.io import RatioError


class ConfigError(RatioError):
    pass


@dataclass
class CorpusConfig:
    inputs: list[str] = field(default_factory=list)  # files, folders or globs
    format: str = "auto"  # a reader name (`ratio formats`), or auto: decided per file
    metadata: str = (
        ""  # sidecar CSV/JSONL: id, title, year or date, venue, url, doi (readers.metadata)
    )


@dataclass
class IngestConfig:
    keep_appendices: bool = True
    min_chars: int = 35
    segmenter: str = "ratio"
    boilerplate_min_papers: int = 25  # a sentence in at least this many papers is boilerplate
    boilerplate_min_fraction: float = 0.005  # ...or in at least this fraction of papers
    strict: bool = False
    workers: int = 2


@dataclass
class LexiconConfig:
    path: str = ""  # empty: the lexicon shipped in the package


@dataclass
class SplitConfig:
    """Half-open year/date ranges; dates are ISO strings or years.

    ``mode = "random"`` splits by paper with ``build.seed`` instead (for undated corpora):
    ``train_fraction`` and ``validation_fraction`` of the papers, the rest test. It has no
    temporal leakage control, and the build report says so.
    """

    train_end: str | int = "2023-12-31"
    validation_end: str | int = "2024-12-31"
    test_end: str | int = "9999-12-31"
    mode: str = "temporal"  # temporal | random
    train_fraction: float = 0.8
    validation_fraction: float = 0.1


@dataclass
class BuildConfig:
    out: str = "runs/neurips"
    seed: int = 13
    executor: str = "local"  # local | ray
    ray_address: str = ""


@dataclass
class SystemConfig:
    name: str = ""
    kind: str = "bm25"  # bm25 | dense | hybrid | instructed
    model: str = ""  # model name in the registry, or a directory
    ngram: int = 1
    prefix: str = "none"  # none | generic | recommended
    index: str = "flat"  # flat | hnsw
    fusion: str = "rrf"  # for hybrid: rrf | score
    components: list[str] = field(default_factory=list)
    max_pool: int = 0  # 0 = full pool; else a seeded sub-pool containing every gold
    max_queries: int = 0  # 0 = all queries; else a seeded sample per relation, stratified by marker
    # the dense encoder: auto | torch | torch-bf16 | static | onnx | onnx-int8 | openvino
    backend: str = "auto"
    # the queries' encoder when not ``backend``: the same model through another runtime, e.g.
    # onnx-int8 queries against an fp32 index (it changes no index, only query speed)
    query_backend: str = ""
    # for instructed: the text put before each query in place of the one dense component's
    # query prefix (a unified model's per-move instruction); it searches that component's index
    instruction: str = ""

    def identity(self) -> dict:
        """The fields that name this system in digests (index folders, provenance): ``backend``
        is left out while ``auto``, ``instruction`` and ``query_backend`` while empty, so systems
        that do not set them keep the digests (and built indexes) they had before those fields."""
        d = dataclasses.asdict(self)
        if d["backend"] == "auto":
            del d["backend"]
        return {k: v for k, v in d.items() if v or k not in ("instruction", "query_backend")}


@dataclass
class EvaluateConfig:
    split: str = "test"
    relations: list[str] = field(default_factory=lambda: ["specify", "address", "broaden"])
    systems: list[SystemConfig] = field(default_factory=list)
    ks: list[int] = field(default_factory=lambda: [1, 10, 100])
    out: str = ""
    oracle: str = "none"  # none | relation | golds (paper Appendix F.2)


@dataclass
class TrainConfig:
    base_model: str = "all-MiniLM-L6-v2"
    grid: list[dict] = field(default_factory=list)
    max_pairs: int = 0
    hard_negatives: bool = False
    prefix: str = "generic"
    out: str = ""
    # added by the training area (ratio.training); see configs/neurips.toml [train]
    seed: int = 13
    trials: list[int] = field(default_factory=list)  # grid rows to run; empty = all
    hard_negatives_k: int = 10  # BM25 depth hard negatives are drawn from
    val_pool: int = 5000  # non-gold candidates in the seeded validation sub-pool
    val_max_queries: int = 0  # seeded cap on validation queries per relation; 0 = all
    # share of the validation split's papers whose pairs are trained on too (the rest validate);
    # 0 = validate on the whole split, train on the train split only
    validation_train_share: float = 0.0
    max_seq_length: int = 128
    eval_batch_size: int = 128
    unified_instruction: str = "short"  # short ("address: ") | sentence (an instruction)
    test_max_queries: int = 0  # `ratio train-eval`: seeded cap on test queries per relation
    test_max_pool: int = 0  # `ratio train-eval`: seeded test sub-pool size; 0 = full pool
    # a checkpoint every N optimizer steps besides each epoch's end (0: epoch ends only), so a
    # run longer than a session resumes mid-epoch
    save_steps: int = 0
    # auto: bf16 autocast where the CPU has bf16 matrix units (AMX, AVX512-BF16) or the GPU
    # supports it, fp32 elsewhere (emulated bf16 is slower) | fp32 | bf16
    precision: str = "auto"
    # mnrl | cached_mnrl (GradCache: the same loss over large batches at mini-batch memory)
    loss: str = "mnrl"
    mini_batch_size: int = 32  # cached_mnrl's forward/backward chunk


@dataclass
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    retriever: str = "auto"  # auto | bm25 | dense | hybrid | trained | a system name
    source: str = "benchmark"  # benchmark pools, or "sentences" (any ingested collection)
    split: str = ""  # one benchmark split; empty = all splits' pools
    candidates: str = ""  # an explicit candidates Parquet file
    model: str = ""  # dense model for the service (registry name or directory)
    index: str = "flat"  # the served dense models' index: flat (exact) | hnsw (approximate, faster)
    backend: str = "auto"  # their encoder: auto | torch | torch-bf16 | onnx | onnx-int8 | openvino
    query_backend: str = ""  # their queries' encoder, when not backend (e.g. onnx-int8)
    index_dir: str = ""  # where the service keeps its indexes
    # the shipped move model `auto` may serve: latest (the newest models/ratio-moves-*-v<N>),
    # a folder name or path, or "none"
    shipped: str = "latest"
    # source = "sentences": only these publication years and section categories (empty: all)
    years: list[int] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    # one benchmark split: serve the seeded sub-pool an [evaluate] system with the same
    # max_pool / max_queries searches (every gold of its sampled queries + random others), so
    # the service reuses the evaluation's vectors; 0 = the whole pool
    max_pool: int = 0
    max_queries: int = 0


@dataclass
class JudgeConfig:
    """LLM judging (``ratio judge``): backend, model, limits, prices and sample sizes."""

    # openai (chat completions over HTTP) | batch (OpenAI Batch API) | llamacpp
    backend: str = "llamacpp"
    model: str = "qwen2.5-1.5b"  # API model name, or a GGUF path / known local name for llamacpp
    # any OpenAI-compatible server (vLLM, Ollama, llama.cpp)
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from this environment variable
    concurrency: int = 4  # parallel HTTP requests (llamacpp in-process is always 1)
    max_retries: int = 3  # extra attempts after a transient error or an invalid response
    timeout_s: float = 120.0
    backoff_s: float = 1.0  # first retry delay; doubles each attempt
    temperature: float = 0.0
    max_tokens: int = 256
    # false: the answer grammar leaves out the "reason"/"rationale" fields (verdicts only):
    # ~2.6x fewer generated tokens, ~1.6x faster on a CPU llama.cpp judge; a separate cache
    # key. Backends without an answer grammar (openai, batch) still get the full prompt.
    reasons: bool = True
    # sample: the verdict is the sampled answer; logprob: the verdict is P(accept) (token
    # probabilities) against the prompt's threshold in `thresholds` (from `ratio judge calibrate`)
    scoring: str = "sample"
    thresholds: dict = field(default_factory=dict)  # prompt id -> P(accept) threshold (0.5)
    extra_body: dict = field(default_factory=dict)  # e.g. {reasoning_effort = "medium"}
    n_ctx: int = 4096  # llamacpp context
    n_threads: int = 0  # llamacpp threads (0 = library default)
    batch_poll_s: float = 30.0
    cache: str = ""  # SQLite judgment cache (default <build.out>/judge/cache.sqlite)
    out: str = ""  # outputs (default <build.out>/judge)
    prices: dict = field(default_factory=dict)  # model -> {input, output} USD per 1M tokens
    prompts: dict = field(default_factory=dict)  # relation -> [two prompt names] (silver/topk)
    silver_n: dict = field(default_factory=dict)  # relation -> sample size (0/absent = all)
    topk_queries: int = 400  # per relation
    topk_depth: int = 10
    pairwise_depth: int = 5


@dataclass
class RunConfig:
    name: str = "ratio"
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    lexicon: LexiconConfig = field(default_factory=LexiconConfig)
    split: SplitConfig = field(default_factory=SplitConfig)
    build: BuildConfig = field(default_factory=BuildConfig)
    evaluate: EvaluateConfig = field(default_factory=EvaluateConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    base_dir: str = ""  # directory of the TOML file; relative paths resolve against it

    def resolve(self, p: str) -> Path:
        if Path(p).is_absolute() or not self.base_dir:
            return Path(p)
        return (Path(self.base_dir) / p).resolve()

    def digest(self, *sections: str) -> str:
        """Stable hash of the named sections, used as a cache key for a stage."""
        data = {s: dataclasses.asdict(getattr(self, s)) for s in sections}
        if "evaluate" in data:
            data["evaluate"]["systems"] = [s.identity() for s in self.evaluate.systems]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("base_dir", None)
        return d


def _build(cls, data, path: str):
    if not isinstance(data, dict):
        raise ConfigError(f"config key '{path}' must be a table")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)} - {"base_dir"}
    unknown = sorted(set(data) - known)
    if unknown:
        where = f"[{path}]" if path else "top level"
        raise ConfigError(
            f"unknown config key(s) {', '.join(repr(u) for u in unknown)} in {where}; "
            f"known keys: {', '.join(sorted(known))}"
        )
    return cls(**{k: _coerce(hints[k], v, f"{path}.{k}" if path else k) for k, v in data.items()})


def _coerce(tp, value, path: str):
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    if origin is list:
        (inner,) = typing.get_args(tp) or (typing.Any,)
        if not isinstance(value, list):
            raise ConfigError(f"config key '{path}' must be a list, got {type(value).__name__}")
        return [_coerce(inner, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin in (typing.Union, types.UnionType) or tp is typing.Any or tp is dict:
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp in (str, int, bool, float) and (
        not isinstance(value, tp) or (tp is int and isinstance(value, bool))
    ):
        raise ConfigError(f"config key '{path}' must be {tp.__name__}, got {value!r}")
    return value


def load_config(path: str | os.PathLike | None = None, overrides: dict | None = None) -> RunConfig:
    """Parse a TOML run config (or defaults when ``path`` is None)."""
    data: dict = {}
    base = ""
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{p}: invalid TOML: {e}") from e
        base = str(p.parent.resolve())
    for key, value in (overrides or {}).items():
        section, _, leaf = key.rpartition(".")
        target = data
        for part in filter(None, section.split(".")):
            target = target.setdefault(part, {})
        target[leaf] = value
    cfg = _build(RunConfig, data, "")
    cfg.base_dir = base
    return cfg
