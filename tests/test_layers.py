"""The import rule of docs/architecture.md ("Folder map"): a package imports only packages of a
lower layer (or its own), lazy imports inside functions included, so the folders keep showing
the architecture. The graph is read from the source with ``ast``: nothing is imported."""

from __future__ import annotations

import ast
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
