"""The import rule of docs/architecture.md ("Folder map"): a package imports only packages of a
lower layer (or its own), lazy imports inside functions included, so the folders keep showing
the architecture. The graph is read from the source with ``ast``: nothing is imported.

And tests mirror the package: ``src/ratio/a/b/c.py`` has ``tests/a/b/test_c.py``, or its module
docstring names the tests that cover it on a ``Tested by tests/...py.`` line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# rank of each top-level package of ``ratio``; equal ranks may not import each other
LAYERS: dict[str, int] = {
    "core": 0,
    "runner": 1,
    "corpus": 2,
    "metrics": 2,
    "retrieval": 3,
    "lexicon": 4,
    "build": 5,
    "evaluation": 5,
    "training": 6,
    "judge": 6,
    "mteb": 6,
    "serve": 7,
    "api": 8,
    "cli": 8,
}
TOP_LEVEL = {"__init__.py", "api.py", "py.typed"}


def _package(module: str) -> str | None:
    """``ratio.core.io`` → ``core``; ``ratio`` itself (its ``__version__``) → None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "ratio" else None


def import_edges(src: Path = SRC) -> list[tuple[str, str, str]]:
    """(importing module, its package, imported module) for every import of ``ratio.*``."""
    edges = []
    for path in sorted((src / "ratio").rglob("*.py")):
        module = ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from ratio import api`` names a module; ``from ratio.x import y`` a name in x
                base = node.module
                targets = [f"{base}.{a.name}" if base == "ratio" else base for a in node.names]
            else:
                continue
            edges += [
                (module, _package(module) or "", t) for t in targets if t.startswith("ratio.")
            ]
    return edges


def violations(edges: list[tuple[str, str, str]]) -> list[str]:
    bad = []
    for module, package, target in edges:
        other = _package(target)
        if other is None or other == package or other == "__version__" or not package:
            continue
        if other not in LAYERS or package not in LAYERS:
            bad.append(f"{module} -> {target}: package not in LAYERS")
        elif LAYERS[other] >= LAYERS[package]:
            bad.append(
                f"{module} (layer {LAYERS[package]}) imports {target} (layer {LAYERS[other]})"
            )
    return bad


def test_no_package_imports_one_of_its_layer_or_above():
    edges = import_edges()
    assert len(edges) > 200  # the graph was read
    assert violations(edges) == []


def test_the_check_catches_an_upward_import(tmp_path):
    pkg = tmp_path / "ratio"
    (pkg / "core").mkdir(parents=True)
    (pkg / "serve").mkdir()
    (pkg / "core" / "io.py").write_text("def f():\n    from ratio.serve.engine import Engine\n")
    (pkg / "serve" / "engine.py").write_text("from ratio.core.io import f\n")
    assert violations(import_edges(tmp_path)) == [
        "ratio.core.io (layer 0) imports ratio.serve.engine (layer 7)"
    ]


def test_every_package_has_a_layer_and_the_top_level_is_only_the_entry_points():
    found = {p.name for p in (SRC / "ratio").iterdir() if p.name != "__pycache__"}
    packages = {n for n in found if (SRC / "ratio" / n).is_dir()}
    assert packages == set(LAYERS) - {"api"}
    assert found - packages == TOP_LEVEL


@pytest.mark.parametrize("package", sorted(set(LAYERS) - {"api"}))
def test_every_package_says_what_it_holds(package):
    assert ast.get_docstring(ast.parse((SRC / "ratio" / package / "__init__.py").read_text()))


# -- tests mirror the package --------------------------------------------------------------------

# src/ratio/api.py is the public entry point the service wraps; its tests live with the serve tests
MIRROR_EXCEPTIONS: dict[str, tuple[str, ...]] = {
    "api.py": ("tests/test_api.py", "tests/serve/test_api.py"),
}
# Modules no test exercises yet. The gap stays visible here: a module leaves this list when a test
# covers it (the test below then fails until the entry is removed), and none may join it quietly.
UNTESTED: set[str] = set()
_TESTED_BY = re.compile(r"^Tested by (tests/\S+\.py(?:, tests/\S+\.py)*)\.$", re.MULTILINE)


def mirrored_tests(module: str) -> tuple[str, ...]:
    """``a/b/c.py`` → ``tests/a/b/test_c.py``, or the module's entry in MIRROR_EXCEPTIONS."""
    if module in MIRROR_EXCEPTIONS:
        return MIRROR_EXCEPTIONS[module]
    path = Path(module)
    return ((Path("tests") / path.parent / f"test_{path.name}").as_posix(),)


def named_tests(source: str) -> list[str]:
    """The test files a module's docstring names on its ``Tested by tests/...py.`` line."""
    found = _TESTED_BY.search(ast.get_docstring(ast.parse(source)) or "")
    return found.group(1).split(", ") if found else []


def coverage_gaps(src: Path = SRC, root: Path = SRC.parent) -> list[str]:
    """Each module without a same-name test or a ``Tested by`` line naming existing files."""
    gaps = []
    for path in sorted((src / "ratio").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        module = path.relative_to(src / "ratio").as_posix()
        if any((root / t).is_file() for t in mirrored_tests(module)):
            continue
        named = named_tests(path.read_text())
        missing = [t for t in named if not (root / t).is_file()]
        if missing:
            gaps.append(f"{module}: Tested by names missing {', '.join(missing)}")
        elif not named:
            gaps.append(f"{module}: no tests/.../test_{path.name} and no 'Tested by' line")
    return gaps


def test_every_module_has_a_test():
    gaps = {g.split(":")[0]: g for g in coverage_gaps()}
    assert {m: g for m, g in gaps.items() if m not in UNTESTED} == {}
    assert UNTESTED - set(gaps) == set(), "covered now: remove from UNTESTED"


def test_the_mirror_check_catches_a_module_without_a_test(tmp_path):
    src, tests = tmp_path / "src" / "ratio" / "core", tmp_path / "tests" / "core"
    src.mkdir(parents=True)
    tests.mkdir(parents=True)
    (src / "__init__.py").write_text('"""Core."""\n')
    (tests / "test_io.py").write_text("")
    (tests / "test_other.py").write_text("")
    (src / "io.py").write_text('"""Mirrored."""\n')
    (src / "config.py").write_text(
        '"""Covered elsewhere.\n\nTested by tests/core/test_other.py.\n"""\n'
    )
    (src / "stale.py").write_text('"""Stale.\n\nTested by tests/core/test_gone.py.\n"""\n')
    (src / "bare.py").write_text('"""No test."""\n')
    assert coverage_gaps(tmp_path / "src", tmp_path) == [
        "core/bare.py: no tests/.../test_bare.py and no 'Tested by' line",
        "core/stale.py: Tested by names missing tests/core/test_gone.py",
    ]
