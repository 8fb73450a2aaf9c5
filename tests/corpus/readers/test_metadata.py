"""The metadata sidecar: checked rows, bad ones reported by file and line, the rest used."""

from __future__ import annotations

import pytest

from ratio.core.io import InputError, RatioError
from ratio.core.records import Paper
from ratio.corpus.readers import DropReport
from ratio.corpus.readers.metadata import (
    apply_metadata,
    load_metadata,
    metadata_lookup,
    write_metadata,
)

CSV = """id,title,year,date,venue,pages
C08-1021,KnowNet,2008,,COLING,8
D07-1109,A Topic Model,07,,EMNLP,10
P05-3021,,2005,2005-06,ACL,
C08-1021,Duplicate,2009,,,
W06-3804,,,June 2006,,
P06-4007,,2006,2007-01-02,,
,,2010,,,
"""


def test_csv_rows_and_reasons(tmp_path):
    path = tmp_path / "metadata.csv"
    path.write_text(CSV, encoding="utf-8")
    report = DropReport()
    rows = {r.id: r for r in load_metadata(path, report)}
    assert list(rows) == ["C08-1021", "D07-1109", "P05-3021", "W06-3804", "P06-4007"]
    assert (rows["C08-1021"].title, rows["C08-1021"].year, rows["C08-1021"].venue) == (
        "KnowNet",
        2008,
        "COLING",
    )
    assert rows["D07-1109"].year is None and rows["D07-1109"].venue == "EMNLP"
    assert (rows["P05-3021"].year, rows["P05-3021"].date) == (2005, "2005-06")
    assert rows["W06-3804"].date is None
    assert (rows["P06-4007"].year, rows["P06-4007"].date) == (2007, "2007-01-02")
    assert dict(report.counts) == {
        "metadata_bad_year": 2,
        "metadata_duplicate_id": 1,
        "metadata_bad_date": 1,
        "metadata_missing_id": 1,
    }
    assert f"{path}:3: id 'D07-1109': year '07' is not a year; year left empty" in report.messages
    assert f"{path}:5: duplicate id 'C08-1021' (first on line 2); row ignored" in report.messages
    assert any(m.startswith(f"{path}:8: row has no id") for m in report.messages)


def test_strict_stops_at_the_first_bad_row(tmp_path):
    path = tmp_path / "metadata.csv"
    path.write_text(CSV, encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_metadata(path, DropReport(strict=True))
    assert (e.value.line, e.value.kind) == (3, "metadata_bad_year")


def test_jsonl_sidecar_and_matching_by_stem(tmp_path):
    path = tmp_path / "meta.jsonl"
    path.write_text(
        '{"id": "paper-1", "year": 2021, "venue": "X"}\n{"paper_id": "2", "date": "2022-03-04"}\n',
        encoding="utf-8",
    )
    rows = load_metadata(path, DropReport())
    write_metadata(rows, tmp_path / "m.parquet")
    lookup = metadata_lookup(tmp_path / "m.parquet")
    paper = Paper(id="2021/paper-1", title=None, year=None, sections=[])
    assert apply_metadata(paper, lookup) and (paper.year, paper.venue) == (2021, "X")
    other = Paper(id="2", title="Kept", year=1999, sections=[])
    assert apply_metadata(other, lookup)
    assert (other.title, other.year, other.date) == ("Kept", 2022, "2022-03-04")
    assert not apply_metadata(Paper(id="3", title=None, year=None, sections=[]), lookup)


def test_unusable_files(tmp_path):
    with pytest.raises(RatioError, match="metadata file not found"):
        load_metadata(tmp_path / "none.csv", DropReport())
    bad = tmp_path / "bad.csv"
    bad.write_text("name,year\na,2020\n", encoding="utf-8")
    with pytest.raises(RatioError, match=r"bad.csv:1: the header row needs an 'id' column"):
        load_metadata(bad, DropReport())


def test_links_are_checked_and_kept_out_of_the_digest(tmp_path):
    path = tmp_path / "metadata.csv"
    path.write_text(
        "id,year,url,doi\n"
        "a,2020,https://aclanthology.org/N18-3011/,\n"
        "b,2020,,https://doi.org/10.18653/v1/N18-3011\n"
        "c,2020,ftp://example.org/c.pdf,DOI: 10.1000/xyz\n"
        "d,2020,www.example.org,10.1000\n",
        encoding="utf-8",
    )
    report = DropReport()
    rows = {r.id: r for r in load_metadata(path, report)}
    assert (rows["a"].url, rows["a"].doi) == ("https://aclanthology.org/N18-3011/", None)
    assert (rows["b"].url, rows["b"].doi) == (None, "10.18653/v1/N18-3011")
    assert (rows["c"].url, rows["c"].doi) == (None, "10.1000/xyz")
    assert (rows["d"].url, rows["d"].doi, rows["d"].year) == (None, None, 2020)
    assert dict(report.counts) == {"metadata_bad_url": 2, "metadata_bad_doi": 1}
    assert (
        f"{path}:4: id 'c': url 'ftp://example.org/c.pdf' is not an http(s) URL; url left empty"
        in report.messages
    )
    assert f"{path}:5: id 'd': doi '10.1000' is not a DOI (10.xxxx/...); doi left empty" in (
        report.messages
    )
    digest = write_metadata(list(rows.values()), tmp_path / "m.parquet")
    lookup = metadata_lookup(tmp_path / "m.parquet")
    assert lookup["b"]["doi"] == "10.18653/v1/N18-3011" and lookup["a"]["url"].endswith("3011/")
    # a link changes no sentence: the same rows without links give the ingest key's digest
    for r in rows.values():
        r.url = r.doi = None
    assert write_metadata(list(rows.values()), tmp_path / "bare.parquet") == digest
