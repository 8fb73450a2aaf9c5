"""Assemble the folder of text papers that docs/own-corpus.md measures its commands on.

The 60 ACL Anthology Network papers of ../shared/corpora/samples/aan (plain text from PDF
extraction, copied as they are) and the bodies of the 49 unarXive papers of
../shared/corpora/samples/unarxive written out as plain text: one line per section title
("3.1 Setup"), paragraphs separated by blank lines, unarXive's citation and formula
placeholders removed (a plain-text export has no LaTeX). One metadata.csv covers both:
id, title, year, venue (AAN: year from the ACL id; arXiv: first version's year).

    python scripts/own_corpus_sample.py /tmp/own-corpus
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import sys
from pathlib import Path

import zstandard

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "corpora" / "samples"
_PLACEHOLDER = re.compile(r"\{\{(?:cite|formula|figure|table|ref):[^}]*\}\}")


def main(out: Path) -> None:
    papers = out / "papers"
    papers.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(SHARED / "aan" / "metadata.csv", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            shutil.copyfile(SHARED / "aan" / f"{r['id']}.txt", papers / f"{r['id']}.txt")
            rows.append({"id": r["id"], "title": "", "year": r["year"], "venue": r["venue"]})
    shard = SHARED / "unarxive" / "arXiv_src_2212_086.jsonl.zst"
    with zstandard.open(shard, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            meta = rec["metadata"]
            lines, last = [], None
            for p in rec["body_text"]:
                head = " ".join(filter(None, [p.get("sec_number"), p.get("section")]))
                if head and head != last:
                    lines += ["", head, ""]
                    last = head
                text = " ".join(_PLACEHOLDER.sub("", p["text"]).split())
                if text:
                    lines += [text, ""]
            (papers / f"{rec['paper_id']}.txt").write_text("\n".join(lines), encoding="utf-8")
            year = meta["versions"][0]["created"].split()[3]  # "Thu, 22 Dec 2022 17:01:56 GMT"
            rows.append(
                {"id": rec["paper_id"], "title": meta["title"], "year": year, "venue": "arXiv"}
            )
    with open(out / "metadata.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["id", "title", "year", "venue"])
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} papers in {papers}, metadata in {out / 'metadata.csv'}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/own-corpus"))
