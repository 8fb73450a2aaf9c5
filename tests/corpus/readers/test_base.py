"""Registry, input discovery, compressed-stream errors and bad-input handling shared by readers."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import zstandard

from ratio.core.io import InputError, RatioError, iter_lines, line_error
from ratio.corpus.readers import DropReport, available_formats, get_reader, iter_papers, list_inputs

JSON_FORMATS = ("s2orc", "s2orc-v2", "unarxive")


# -- registry -----------------------------------------------------------------------------------


def test_all_formats_are_registered():
    assert {"s2orc", "s2orc-v2", "pes2o", "unarxive", "plaintext"} <= set(available_formats())
    assert get_reader("plaintext").folder is True
    assert get_reader("unarxive").folder is False
    assert get_reader("pes2o").fn is get_reader("s2orc-v2").fn
    assert ".json" in get_reader("s2orc").suffixes
    assert ".json.gz" in get_reader("pes2o").suffixes
    assert all(get_reader(f).doc for f in ("s2orc", "s2orc-v2", "unarxive", "plaintext"))


def test_unknown_format_names_the_known_ones():
    with pytest.raises(RatioError, match=r"unknown format 'nope'.*s2orc-v2.*unarxive"):
        get_reader("nope")


# -- list_inputs --------------------------------------------------------------------------------


def test_list_inputs_expands_folders_by_suffix_and_globs(tmp_path):
    for name in ("b.jsonl", "a.jsonl.zst", "sub/c.json.gz", "notes.txt", "d.jsonl.bak"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    found = list_inputs([tmp_path], "s2orc-v2")
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "a.jsonl.zst",
        "b.jsonl",
        "sub/c.json.gz",
    ]
    assert list_inputs([tmp_path / "*.jsonl"], "unarxive") == [tmp_path / "b.jsonl"]
    # a folder corpus stays one input
    assert list_inputs([tmp_path], "plaintext") == [tmp_path]


def test_list_inputs_rejects_missing_paths_and_empty_globs(tmp_path):
    with pytest.raises(InputError, match="no such file") as e:
        list_inputs([tmp_path / "typo.jsonl"], "unarxive")
    assert e.value.kind == "missing_file"
    with pytest.raises(InputError, match="no file matches") as e:
        list_inputs([str(tmp_path / "*.jsonl.zst")], "unarxive")
    assert e.value.kind == "missing_file"


# -- iter_lines: truncation, corruption, encoding -----------------------------------------------


def test_truncated_real_zstd_shard_is_detected(tmp_path, unarxive_shard):
    data = unarxive_shard.read_bytes()
    intact = tmp_path / "intact.jsonl.zst"
    intact.write_bytes(data)
    assert sum(1 for _ in iter_lines(intact)) == 49
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(data[: len(data) // 2])
    seen = []
    with pytest.raises(InputError) as e:
        for lineno, line in iter_lines(cut):
            seen.append(lineno)
            json.loads(line)  # every yielded line is complete: no half line sneaks through
    assert e.value.kind == "truncated_file"
    assert e.value.line == len(seen) + 1
    assert str(cut) in str(e.value) and 0 < len(seen) < 49


def test_corrupt_zstd_and_gzip_and_truncated_gzip(tmp_path):
    payload = b"".join(b'{"i": %d}\n' % i for i in range(2000))
    bad_zst = tmp_path / "bad.jsonl.zst"
    bad_zst.write_bytes(b"this is not zstd at all\n")
    gz = gzip.compress(payload)
    cut_gz = tmp_path / "cut.jsonl.gz"
    cut_gz.write_bytes(gz[: len(gz) - 20])
    not_gz = tmp_path / "plain.jsonl.gz"
    not_gz.write_bytes(payload)
    for path in (bad_zst, cut_gz, not_gz):
        with pytest.raises(InputError) as e:
            list(iter_lines(path))
        assert e.value.kind == "truncated_file", path
        assert str(path) in str(e.value)


def test_multi_frame_zstd_and_gzip_round_trip(tmp_path):
    c = zstandard.ZstdCompressor()
    zst = tmp_path / "frames.jsonl.zst"
    zst.write_bytes(c.compress(b"one\ntw") + c.compress(b"o\nthree\n"))
    assert [t for _, t in iter_lines(zst)] == ["one\n", "two\n", "three\n"]
    gz = tmp_path / "x.jsonl.gz"
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbfa\nb"))
    assert list(iter_lines(gz)) == [(1, "a\n"), (2, "b")]  # BOM dropped, last line without newline


def test_invalid_utf8_line_carries_its_error_and_streaming_goes_on(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xff\xfe"}\n{"c": 3}\n')
    lines = list(iter_lines(path))
    assert [n for n, _ in lines] == [1, 2, 3]
    assert line_error(lines[0][1]) is None
    err = line_error(lines[1][1])
    assert err is not None and err.kind == "invalid_utf8" and err.line == 2
    assert str(err).startswith(f"{path}:2: invalid UTF-8")


def test_missing_and_unreadable_files_raise_input_errors(tmp_path):
    with pytest.raises(InputError) as e:
        list(iter_lines(tmp_path / "gone.jsonl.zst"))
    assert e.value.kind == "missing_file"
    with pytest.raises(InputError) as e:
        list(iter_lines(tmp_path))  # a directory cannot be read as a file
    assert e.value.kind == "unreadable_file"


# -- bad records, per JSON format ---------------------------------------------------------------


def _good(fmt: str, n: int) -> dict:
    text = f"Paper {n} has one sentence. It has a second one too."
    if fmt == "s2orc":
        return {
            "paper_id": f"p{n}",
            "metadata": {"title": f"T{n}", "year": 2020},
            "grobid_parse": {"body_text": [{"text": text, "section": "Intro"}]},
        }
    if fmt == "s2orc-v2":
        return {
            "corpusid": n,
            "content": {
                "text": text,
                "annotations": {
                    "paragraph": json.dumps([{"start": 0, "end": len(text)}]),
                    "sectionheader": None,
                },
            },
        }
    return {
        "paper_id": f"2212.{n:05d}",
        "metadata": {
            "title": f"T{n}",
            "versions": [{"version": "v1", "created": "Thu, 22 Dec 2022 17:01:56 GMT"}],
        },
        "abstract": {"text": ""},
        "body_text": [{"section": "Intro", "sec_number": "1", "text": text}],
    }


def _empty(fmt: str) -> dict:
    rec = _good(fmt, 99)
    if fmt == "s2orc":
        rec["grobid_parse"]["body_text"] = [{"text": "   ", "section": None}]
    elif fmt == "s2orc-v2":
        rec["content"] = {"text": "", "annotations": {"paragraph": None}}
    else:
        rec["body_text"] = []
    return rec


def _no_id(fmt: str) -> dict:
    rec = _good(fmt, 7)
    for key in ("paper_id", "corpusid"):
        rec.pop(key, None)
    if fmt == "unarxive":
        rec["metadata"].pop("id", None)
    return rec


def _bad_file(tmp_path: Path, fmt: str) -> Path:
    lines = [
        json.dumps(_good(fmt, 1)).encode(),  # 1 ok
        b'{"paper_id": "broken", ',  # 2 malformed JSON
        b"[1, 2, 3]",  # 3 not an object
        json.dumps(_no_id(fmt)).encode(),  # 4 no id
        json.dumps(_empty(fmt)).encode(),  # 5 no text
        json.dumps(_good(fmt, 2)).encode().replace(b"second", b"s\xffcond"),  # 6 invalid UTF-8
        b"",  # 7 blank line: ignored
        json.dumps(_good(fmt, 3)).encode(),  # 8 ok
    ]
    path = tmp_path / f"{fmt}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_bad_records_are_counted_and_skipped(tmp_path, fmt):
    path = _bad_file(tmp_path, fmt)
    report = DropReport()
    papers = list(iter_papers([path], fmt, report))
    assert [p.line for p in papers] == [1, 8]
    assert dict(report.counts) == {
        "malformed_json": 1,
        "not_an_object": 1,
        "missing_id": 1,
        "empty_paper": 1,
        "invalid_utf8": 1,
    }
    prefixes = [m.split(": ")[0] for m in report.messages]
    assert prefixes == [f"{path}:{n}" for n in (2, 3, 4, 5, 6)]
    assert "'" in report.messages[3] and "has no text" in report.messages[3]  # names the paper id


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_strict_mode_raises_at_the_first_problem(tmp_path, fmt):
    path = _bad_file(tmp_path, fmt)
    stream = iter_papers([path], fmt, DropReport(strict=True))
    assert next(stream).line == 1
    with pytest.raises(InputError) as e:
        next(stream)
    assert (e.value.kind, e.value.line, e.value.source) == ("malformed_json", 2, str(path))


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_truncated_shard_keeps_earlier_papers_and_reports_once(tmp_path, fmt):
    # hash noise keeps the data incompressible enough to span several zstd blocks
    noise = [hashlib.sha256(str(i).encode()).hexdigest() * 8 for i in range(1, 400)]
    body = b"".join(
        json.dumps({**_good(fmt, i), "noise": noise[i - 1]}).encode() + b"\n" for i in range(1, 400)
    )
    blob = zstandard.ZstdCompressor().compress(body)
    cut = tmp_path / f"cut-{fmt}.jsonl.zst"
    cut.write_bytes(blob[: int(len(blob) * 0.6)])
    report = DropReport()
    papers = list(iter_papers([cut], fmt, report))
    assert 0 < len(papers) < 399
    assert [p.line for p in papers] == list(range(1, len(papers) + 1))
    assert dict(report.counts) == {"truncated_file": 1}
    assert report.messages[0].startswith(f"{cut}:{len(papers) + 1}: truncated")
    with pytest.raises(InputError, match="truncated"):
        list(iter_papers([cut], fmt, DropReport(strict=True)))


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_file_that_vanished_or_cannot_be_read_is_reported(tmp_path, fmt):
    reader = get_reader(fmt)
    for name in ("gone.jsonl", "gone.json", "gone.jsonl.zst"):
        with pytest.raises(InputError) as e:
            list(reader.fn(tmp_path / name, DropReport()))
        assert e.value.kind == "missing_file" and name in str(e.value)
    with pytest.raises(InputError) as e:
        list(reader.fn(tmp_path, DropReport()))
    assert e.value.kind == "unreadable_file"
