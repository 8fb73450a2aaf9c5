"""`ratio doctor` as a user runs it: the CPU line, one row per check, exit 1 only on FAIL."""

from __future__ import annotations

from typer.testing import CliRunner

from ratio.cli import app


def test_doctor_reports_the_cpu_and_the_check_it_was_asked_for():
    result = CliRunner().invoke(app, ["doctor", "faiss"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("cpu: ")
    assert len(lines) == 2 and "faiss" in lines[1] and lines[1].split()[0] == "ok"


def test_doctor_names_an_unknown_check_and_the_known_ones():
    result = CliRunner().invoke(app, ["doctor", "no-such-check"])
    assert result.exit_code != 0
    assert "no-such-check" in result.output and "faiss" in result.output
