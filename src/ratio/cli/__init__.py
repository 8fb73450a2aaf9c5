"""The ``ratio`` command: a thin Typer layer over the library API.

Each area registers its commands from its own module here, so a command's
code lives next to nothing but argument parsing.
"""

from __future__ import annotations

import importlib
import sys

import typer

from ratio.core.io import RatioError

app = typer.Typer(
    name="ratio",
    help="Retrieval Across Typed Ideation Operations: build, evaluate, train and serve.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

# Each module's ``register(app)`` is the one place that names its commands. A missing module
# is skipped so the core commands keep working; any other import error (a missing extra)
# surfaces. `ratio --help` imports every module here, so a command imports a costly area
# (ratio.build, the harness, training, serving; ~2.4 s together) in its body, with a `# lazy:` note.
_AREAS = [
    "ratio.cli.ingest",
    "ratio.cli.lexicon",
    "ratio.cli.build",
    "ratio.cli.evaluate",
    "ratio.cli.train",
    "ratio.cli.model",
    "ratio.cli.judge",
    "ratio.cli.serve",
    "ratio.cli.doctor",
]

for _mod in _AREAS:
    try:
        importlib.import_module(_mod).register(app)
    except ModuleNotFoundError as e:  # area not built yet, or its extra not installed
        if not e.name or not e.name.startswith("ratio.cli"):
            raise


def main() -> None:
    try:
        app()
    except RatioError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
