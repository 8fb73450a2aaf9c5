"""Precision audit of mined (query, gold) pairs: draw a seeded sample per relation, score labels.

Why: the marker lexicons are distant supervision; the only way to know how often a mined pair
really holds its relation is to read a random sample against the paper's definitions (section 3,
Appendix I.2). ``sample`` writes a JSONL file to be labelled by hand (``label`` true/false, ``note``
on every false); ``score`` prints per-relation precision with a Wilson 95% interval and
per-marker error counts. ``tiers`` turns the labelled files into per-marker precision and
writes the lexicon's precision tiers (``ratio.lexicon.tiers``): markers below their
relation's stated precision threshold go to ``needs_validation``. ``impact`` reads a built
benchmark and says, per relation, how many test queries a tiers file would hold back
compared with the build, and the estimated precision of the test queries still published.
``calibration`` turns labelled passes over one sample (two independent passes and their
adjudication) into the items and labels CSVs ``ratio judge calibrate`` reads: one item per
audited pair, its gold as the candidate (ids and texts from the build), one label row per
pass and pair. See docs/precision-audit.md; the readers of a sample label it by
docs/annotation-guideline.md (``sample`` says so when it writes one). The library code is
``ratio.judge.audit`` (sample, score, agree, tiers) and ``ratio.judge.audit_build`` (impact,
calibration); this is their command line.

    .venv/bin/python scripts/precision_audit.py sample --run runs/neurips --n 50 --seed 7 --out F
    .venv/bin/python scripts/precision_audit.py sample --split test --include-pending ... # raw test
    .venv/bin/python scripts/precision_audit.py score F
    .venv/bin/python scripts/precision_audit.py agree F_A F_B   # two passes: percent, kappa
    .venv/bin/python scripts/precision_audit.py tiers --threshold 0.9 --threshold broaden=0.8 \\
        --min-audited 10 --out src/ratio/lexicon/data/tiers.tsv \\
        tests/data/precision_audit_round3_adjudicated.jsonl \\
        tests/data/precision_audit_round1.jsonl tests/data/precision_audit.jsonl
    .venv/bin/python scripts/precision_audit.py impact --run runs/neurips-v2 \\
        --tiers src/ratio/lexicon/data/tiers.tsv FILES...
    .venv/bin/python scripts/precision_audit.py calibration --run runs/neurips-v2 \\
        --items tests/data/calibration/round3_items.csv \\
        --labels tests/data/calibration/round3_labels.csv   # default: the round-3 passes
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ratio.core.layout import BenchmarkDir
from ratio.judge.audit import (
    DEFAULT_MIN_AUDITED,
    FIELDS,
    SPLITS,
    agreement,
    draw_sample,
    format_agreement,
    format_report,
    format_tiers,
    load_pairs,
    marker_precision,
    read_labelled,
    reading_instructions,
    score,
    tiers_markdown,
)
from ratio.judge.audit_build import (
    DEFAULT_CALIBRATION_RUN,
    DEFAULT_PASSES,
    calibration_set,
    format_calibration,
    impact_markdown,
    parse_pass,
    raw_test_markers,
    tier_impact,
    write_calibration,
)
from ratio.lexicon import load_lexicon
from ratio.lexicon.tiers import load_tiers, parse_thresholds


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("sample", help="draw a seeded sample per relation into a JSONL file")
    sp.add_argument("--run", type=Path, default=Path("runs/neurips"))
    sp.add_argument("--n", type=int, default=50)
    sp.add_argument("--seed", type=int, default=7)
    sp.add_argument("--out", type=Path, required=True)
    sp.add_argument(
        "--split", choices=SPLITS, action="append", help="only this split (repeatable; default all)"
    )
    sp.add_argument(
        "--include-pending",
        action="store_true",
        help="also draw from pending_queries.parquet (needs_validation test queries): the raw split",
    )
    sc = sub.add_parser("score", help="print per-relation precision of a labelled file")
    sc.add_argument("file", type=Path)
    ag = sub.add_parser("agree", help="agreement (percent, Cohen's kappa) of two labelled passes")
    ag.add_argument("file_a", type=Path)
    ag.add_argument("file_b", type=Path)
    ti = sub.add_parser("tiers", help="per-marker precision and the lexicon's precision tiers")
    ti.add_argument("files", type=Path, nargs="+", help="labelled audit files (JSONL)")
    ti.add_argument(
        "--threshold",
        action="append",
        metavar="[RELATION=]T",
        help="precision threshold: T for every relation, RELATION=T for one (repeatable; "
        "default 0.85)",
    )
    ti.add_argument("--min-audited", type=int, default=DEFAULT_MIN_AUDITED)
    ti.add_argument("--lexicon", type=Path, default=None, help="default: the shipped lexicon")
    ti.add_argument("--out", type=Path, help="write the tiers file here")
    ti.add_argument("--markdown", action="store_true", help="print the docs table")
    im = sub.add_parser(
        "impact", help="test queries a tiers file holds back in a build, and published precision"
    )
    im.add_argument("files", type=Path, nargs="+", help="labelled audit files (JSONL)")
    im.add_argument("--run", type=Path, required=True, help="a built run (reads benchmark/test)")
    im.add_argument("--tiers", type=Path, required=True, help="the tiers file to compare")
    im.add_argument("--lexicon", type=Path, default=None, help="default: the shipped lexicon")
    ca = sub.add_parser(
        "calibration",
        help="items and labels CSVs for `ratio judge calibrate` from labelled audit passes",
    )
    ca.add_argument(
        "--pass",
        dest="passes",
        action="append",
        metavar="FILE=NAME",
        help="a labelled audit file and its annotator name (repeatable; default: "
        + ", ".join(f"{f}={n}" for f, n in DEFAULT_PASSES)
        + ")",
    )
    ca.add_argument(
        "--run",
        type=Path,
        default=DEFAULT_CALIBRATION_RUN,
        help="the build the pairs were drawn from: query and gold ids and texts "
        f"(default {DEFAULT_CALIBRATION_RUN})",
    )
    ca.add_argument("--items", type=Path, required=True, help="the items CSV to write")
    ca.add_argument("--labels", type=Path, required=True, help="the labels CSV to write")
    args = ap.parse_args(argv)

    if args.cmd == "calibration":
        try:
            passes = [parse_pass(p) for p in args.passes] if args.passes else DEFAULT_PASSES
        except ValueError as e:
            ap.error(f"--pass: {e}")
        cal = calibration_set([(Path(f), n) for f, n in passes], args.run)
        write_calibration(cal, args.items, args.labels)
        print(format_calibration(cal))
        print(f"wrote {args.items} and {args.labels}", file=sys.stderr)
        return 0

    if args.cmd == "tiers":
        try:
            thresholds = parse_thresholds(" ".join(args.threshold or ["0.85"]))
        except ValueError as e:
            ap.error(f"--threshold: {e}")
        rows = [r for f in args.files for r in read_labelled(f)]
        stats = marker_precision(rows, load_lexicon(args.lexicon))
        text = format_tiers(stats, thresholds, args.min_audited, [str(f) for f in args.files])
        if args.out:
            args.out.write_text(text, encoding="utf-8")
            print(f"wrote {len(stats)} markers to {args.out}", file=sys.stderr)
        print(tiers_markdown(stats, thresholds, args.min_audited) if args.markdown else text)
        return 0

    if args.cmd == "impact":
        test = BenchmarkDir(args.run / "benchmark").split("test")
        if not test.queries.exists():
            print(f"no test queries at {test.queries}", file=sys.stderr)
            return 2
        tiers = load_tiers(args.tiers)
        rows = [r for f in args.files for r in read_labelled(f)]
        stats = marker_precision(rows, load_lexicon(args.lexicon))
        counts, held_now = raw_test_markers(test.queries, test.held_queries)
        print(impact_markdown(tier_impact(counts, held_now, tiers, stats)))
        return 0

    if args.cmd == "agree":
        stats, dis = agreement(read_labelled(args.file_a), read_labelled(args.file_b))
        print(format_agreement(stats, dis))
        return 0

    if args.cmd == "sample":
        splits = args.split or SPLITS
        pairs = load_pairs(args.run, splits, args.include_pending)
        if not pairs:
            where = f"{args.run}/benchmark ({', '.join(splits)})"
            print(f"no benchmark queries under {where}", file=sys.stderr)
            return 2
        sample = draw_sample(pairs, args.n, args.seed)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            for row in sample:
                fh.write(json.dumps({k: row[k] for k in FIELDS}, ensure_ascii=False) + "\n")
        print(f"wrote {len(sample)} pairs to {args.out}: {Counter(r['relation'] for r in sample)}")
        print(reading_instructions(), file=sys.stderr)
        return 0
    print(format_report(score(read_labelled(args.file))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
