"""Compare sentence splitters on the hand-checked gold set and on real corpus text.

Accuracy: boundary precision / recall / F1 on ``tests/data/segmentation_gold.jsonl`` (a boundary is
the character offset where a sentence other than the first starts). Speed: sentences per second
(counted by the splitter itself) and paragraphs per second over cleaned paragraphs drawn from the
shared NeurIPS corpus, single process.

    .venv/bin/python benchmarks/segmenters.py [--paragraphs 4000] [--only ratio,blingfire]

Prints a Markdown table (copied into docs/segmentation.md).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ratio.corpus.text.segment import SEGMENTERS  # noqa: E402

GOLD = REPO / "tests" / "data" / "segmentation_gold.jsonl"
CORPUS = REPO.parent / "shared" / "corpora" / "neurips"


def load_gold(path: Path = GOLD) -> list[dict]:
    """Gold rows: paper_id, extractor, split (dev/heldout), paragraph, sentences."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def boundaries(paragraph: str, sentences: list[str]) -> set[int]:
    """Start offsets of sentences 2..n, located left to right in the paragraph."""
    text = paragraph.strip()
    out: set[int] = set()
    pos = 0
    for k, sent in enumerate(sentences):
        s = sent.strip()
        if not s:
            continue
        i = text.find(s, pos)
        if i < 0:  # a splitter that rewrote the text: anchor on its first characters
            i = text.find(s[:20], pos)
        if i < 0:
            continue
        if k > 0 and i > 0:
            out.add(i)
        pos = i + 1
    return out


def score(seg: Callable[[str], list[str]], rows: list[dict]) -> dict[str, float]:
    """Micro-averaged boundary precision, recall, F1 (overall and per extractor)."""
    res: dict[str, float] = {}
    subsets = [("all", rows)]
    subsets += [(e, [r for r in rows if r["extractor"] == e]) for e in ("nougat", "docling")]
    subsets += [(s, [r for r in rows if r.get("split", "dev") == s]) for s in ("dev", "heldout")]
    for name, subset in subsets:
        tp = fp = fn = 0
        for r in subset:
            gold = boundaries(r["paragraph"], r["sentences"])
            pred = boundaries(r["paragraph"], seg(r["paragraph"]))
            tp += len(gold & pred)
            fp += len(pred - gold)
            fn += len(gold - pred)
        p = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * p * rec / (p + rec) if p + rec else 0.0
        res[f"{name}_p"], res[f"{name}_r"], res[f"{name}_f1"] = p, rec, f1
        res[f"{name}_fp"], res[f"{name}_fn"] = fp, fn
    return res


# --- real paragraphs for the speed test ---------------------------------------------------

_MATH = re.compile(r"\\\((.+?)\\\)|\$[^$]+\$")
_CIT = re.compile(r"\[\d+(?:\s*[,;\u2013-]\s*\d+)*\]")
_EMPH = re.compile(r"\*\*(.+?)\*\*|(?<![\w\\])_(.+?)_(?!\w)")
_WS = re.compile(r"\s+")


def _approx_clean(p: str) -> str:
    """Stand-in for ratio.corpus.text.clean when it is unavailable: [MATH], [CIT], no emphasis."""
    p = _MATH.sub("[MATH]", p)
    p = _CIT.sub("[CIT]", p)
    p = _EMPH.sub(lambda m: m.group(1) or m.group(2) or "", p)
    return _WS.sub(" ", p).strip()


def corpus_paragraphs(limit: int) -> Iterator[str]:
    """Cleaned prose paragraphs from the first papers of each shard (both extractors)."""
    import zstandard

    clean = _approx_clean
    try:  # the project's cleaner, when present
        from ratio.corpus.text.clean import clean_inline  # type: ignore[attr-defined]

        clean = clean_inline  # noqa: F811
    except Exception:  # noqa: BLE001 - optional dependency between helpers
        pass
    shards = sorted(CORPUS.glob("*.jsonl.zst"))
    per_shard = max(1, limit // max(1, len(shards)))
    for shard in shards:
        n = 0
        with shard.open("rb") as fh:
            reader = io.TextIOWrapper(
                zstandard.ZstdDecompressor().stream_reader(fh), encoding="utf-8"
            )
            for line in reader:
                text = json.loads(line)["text"]
                cut = re.search(r"\n#+\s*(?:References|Bibliography)\b", text)
                text = text[: cut.start()] if cut else text
                for block in re.split(r"\n\s*\n", text):
                    b = block.strip()
                    if len(b) < 200 or b.startswith(("#", "|", "\\[", "<!--", "$$", "\\begin")):
                        continue
                    yield clean(b)
                    n += 1
                    if n >= per_shard:
                        break
                if n >= per_shard:
                    break


def speed(
    seg: Callable[[str], list[str]], paras: list[str], budget_s: float
) -> tuple[float, float]:
    """(sentences/s, MB/s) over ``paras``; stops early after ``budget_s`` for slow splitters."""
    n_sent = n_chars = 0
    t0 = time.perf_counter()
    for p in paras:
        n_sent += len(seg(p))
        n_chars += len(p)
        if time.perf_counter() - t0 > budget_s:
            break
    dt = time.perf_counter() - t0
    return n_sent / dt, n_chars / dt / 1e6


def _spacy_segmenter() -> Callable[[str], list[str]] | None:
    try:
        import spacy
    except ImportError:
        return None
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")

    def seg(p: str) -> list[str]:
        return [s.text.strip() for s in nlp(p).sents if s.text.strip()]

    return seg


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paragraphs", type=int, default=4000, help="corpus paragraphs for speed")
    ap.add_argument("--budget", type=float, default=20.0, help="max seconds per splitter speed run")
    ap.add_argument("--only", default="", help="comma-separated splitter names")
    ap.add_argument("--no-speed", action="store_true")
    args = ap.parse_args(argv)

    segs: dict[str, Callable[[str], list[str]]] = dict(SEGMENTERS)
    sp = _spacy_segmenter()
    if sp is not None:
        segs["spacy-sentencizer"] = sp
    if args.only:
        segs = {k: v for k, v in segs.items() if k in args.only.split(",")}

    rows = load_gold()
    n_b = sum(len(r["sentences"]) - 1 for r in rows)
    paras: list[str] = []
    if not args.no_speed and CORPUS.exists():
        paras = list(corpus_paragraphs(args.paragraphs))
        for f in segs.values():  # warm up imports / lazy models
            f(paras[0])

    print(f"gold: {len(rows)} paragraphs, {n_b} boundaries; speed: {len(paras)} corpus paragraphs")
    print()
    print(
        "| splitter | P | R | F1 | F1 nougat | F1 docling | F1 dev | F1 held-out | FP | FN "
        "| sentences/s | MB/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, f in segs.items():
        s = score(f, rows)
        sps, mbs = speed(f, paras, args.budget) if paras else (float("nan"), float("nan"))
        print(
            f"| {name} | {s['all_p']:.3f} | {s['all_r']:.3f} | {s['all_f1']:.3f} "
            f"| {s['nougat_f1']:.3f} | {s['docling_f1']:.3f} | {s['dev_f1']:.3f} "
            f"| {s['heldout_f1']:.3f} | {s['all_fp']:.0f} | {s['all_fn']:.0f} "
            f"| {sps:,.0f} | {mbs:.2f} |"
        )


if __name__ == "__main__":
    main()
