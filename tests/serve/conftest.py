"""Fixtures for the serve tests: a tiny real run directory, an engine over it, a live server."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from tests.serve.tinyrun import MODELS, NEURIPS, make_tiny_run

STATIC_MODEL = "potion-mpnet-256"  # a real static embedding model: loads and encodes fast


@pytest.fixture(scope="session")
def tiny_config(tmp_path_factory) -> Path:
    """A run over 3 NeurIPS 2023 papers (split ``train``) and 3 from 2025 (``test``).

    Systems: the built-in ``bm25`` (default) and ``dense`` (the static model, as
    the config's first dense system), plus ``static`` under its own name.
    """
    if not NEURIPS.is_dir():
        pytest.skip(f"shared corpus not found at {NEURIPS}")
    if not (MODELS / STATIC_MODEL).is_dir():
        pytest.skip(f"model {STATIC_MODEL} not found under {MODELS}")
    return make_tiny_run(tmp_path_factory.mktemp("serve"), dense_model=STATIC_MODEL)


@pytest.fixture(scope="session")
def engine(tiny_config):
    from ratio.serve.engine import SearchEngine

    return SearchEngine.open(tiny_config, warm=["bm25"])


@pytest.fixture(scope="session")
def app(engine):
    from ratio.serve.app import create_app

    return create_app(engine)


@pytest.fixture()
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        yield c


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def live_server(app):
    """The app under a real uvicorn on loopback, in a thread; yields its base URL."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
