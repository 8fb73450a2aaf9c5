"""The HTTP API and web page: inspiration search for people (the page) and programs (JSON).

Searches are plain ``def`` handlers, so FastAPI runs them in its threadpool and one slow query
never blocks the event loop. Every client mistake is a 4xx whose body is
``{"error": "...", "detail": [...]}`` with a message a person can act on.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
import numpy as np
import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ratio import __version__
from ratio.core.io import RatioError
from ratio.retrieval.dense import available_cores
from ratio.serve.chain import PREFER_OTHER, ChainError
from ratio.serve.engine import (
    BLANK,
    MAX_CHAIN,
    MAX_K,
    MAX_QUERY_CHARS,
    QUERY_PATTERN,
    SearchEngine,
    ServeError,
)

STATIC = Path(__file__).parent / "static"
Move = Literal["address", "broaden", "specify"]
PreferOther = Literal[PREFER_OTHER]  # type: ignore[valid-type]


def _json_integer(v: Any) -> Any:
    """JSON Schema's integer: 3 and 3.0 yes; true, "3" and 3.5 no (pydantic's lax mode
    would coerce the first two, its strict mode would refuse 3.0)."""
    if isinstance(v, bool | str | bytes):
        raise ValueError("Input should be a valid integer")
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
OptJsonInt = Annotated[int | None, BeforeValidator(_json_integer)]
Rank = Annotated[int, BeforeValidator(_json_integer), Field(ge=1, le=MAX_K)]
CandidateId = Annotated[str, Field(min_length=1, max_length=200)]


class _Filters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        ...,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="A research statement: a problem, claim, observation or objective.",
        examples=["Reward models trained on human preferences are easy to over-optimize."],
        json_schema_extra={"pattern": QUERY_PATTERN},  # not blank; checked by _not_blank
    )
    k: JsonInt = Field(10, ge=1, le=MAX_K, description="How many results to return.")
    retriever: str | None = Field(
        None,
        max_length=200,
        description="'auto' (per move, the validation winner among BM25, the untuned base "
        "model, the move's trained specialist and the unified model; with nothing trained, the "
        "default), 'bm25', 'dense', 'hybrid', 'trained' (the move's specialist), 'unified', or "
        "a system named in the run config.",
    )
    year_min: OptJsonInt = Field(None, ge=0, le=9999, description="Earliest paper year.")
    year_max: OptJsonInt = Field(None, ge=0, le=9999, description="Latest paper year.")
    venue: str | None = Field(None, max_length=200, description="Only papers from this venue.")
    exclude_paper: str | None = Field(
        None, max_length=200, description="Leave out this paper (e.g. the query's own)."
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip(BLANK):
            raise ValueError("query is empty: give a research statement to search with")
        return v

    def filters(self) -> dict[str, Any]:
        return self.model_dump(include={"year_min", "year_max", "venue", "exclude_paper"})


class SearchRequest(_Filters):
    move: Move = Field(
        "address",
        description="address: approaches to a stated problem; broaden: more general "
        "formulations; specify: concrete instances.",
    )


class ChainRequest(_Filters):
    moves: list[Move] = Field(
        ...,
        min_length=1,
        max_length=MAX_CHAIN,
        description="The moves in order; each after the first searches the sentence the step "
        f"before chose. At most {MAX_CHAIN}.",
        examples=[["broaden", "specify"]],
    )
    picks: list[Rank | CandidateId | None] | None = Field(
        None,
        max_length=MAX_CHAIN,
        description="Per step, the result that continues the chain: its rank (default 1) or "
        "its candidate_id. At most one per move.",
    )
    exclude_own_paper: Annotated[bool, Field(strict=True)] = Field(
        True,
        description="Leave out the papers already on the path: the statement's own (when it "
        "is a sentence of the pool) and each chosen result's.",
    )
    prefer_other: PreferOther = Field(
        "none",
        description="Rank results from another section category / venue / year than the "
        "previous step's sentence first, keeping their order otherwise.",
    )


class Context(BaseModel):
    prev: str | None = Field(None, description="The sentence before, same paragraph.")
    next: str | None = Field(None, description="The sentence after, same paragraph.")


class Hit(BaseModel):
    rank: int
    candidate_id: str
    text: str
    paper_id: str | None
    title: str | None
    year: int | None
    venue: str | None
    url: str | None = Field(
        None, description="Where to read the paper (metadata url, DOI, OpenReview)."
    )
    section: str | None
    section_category: str | None
    context: Context
    score: float
    retriever: str


class SearchResponse(BaseModel):
    query: str
    move: Move
    retriever: str
    k: int
    results: list[Hit]
    took_ms: float
    note: str | None = None


class MovesResponse(BaseModel):
    query: str
    k: int
    moves: dict[str, SearchResponse]
    took_ms: float


class ChainStep(BaseModel):
    step: int
    move: Move
    query: str = Field(
        description="The text this step searched: the statement, then each chosen hit's."
    )
    retriever: str
    system: str = Field(description="The system that ranked, e.g. 'shipped@broaden', 'bm25'.")
    note: str | None = None
    excluded_papers: list[str]
    results: list[Hit]
    pick: int | str
    chosen: Hit
    took_ms: float


class ChainResponse(BaseModel):
    query: str
    moves: list[Move]
    k: int
    exclude_own_paper: bool
    prefer_other: PreferOther
    own_paper: str | None
    steps: list[ChainStep]
    took_ms: float


class ErrorResponse(BaseModel):
    error: str
    detail: list[dict[str, Any]] | None = None


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "Malformed request body."},
    422: {
        "model": ErrorResponse,
        "description": "Invalid field (empty query, bad move, k...; for /chain also a pick "
        "past a step's results, or a step with no result).",
    },
    503: {"model": ErrorResponse, "description": "A retriever could not be loaded."},
}


class MarkdownResponse(PlainTextResponse):
    media_type = "text/markdown"


class Metrics:
    """Request counts and recent latencies per route, for ``GET /metrics``."""

    def __init__(self, window: int = 10_000) -> None:
        self.counts: Counter[tuple[str, int]] = Counter()
        self.latencies: dict[str, deque[float]] = {}
        self.window, self.lock, self.started = window, threading.Lock(), time.time()

    def record(self, route: str, status: int, ms: float) -> None:
        with self.lock:
            self.counts[(route, status)] += 1
            self.latencies.setdefault(route, deque(maxlen=self.window)).append(ms)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            counts = dict(self.counts)
            lats = {r: np.array(d) for r, d in self.latencies.items()}
        routes: dict[str, Any] = {}
        for (route, status), n in sorted(counts.items()):
            routes.setdefault(route, {"requests": 0, "by_status": {}})
            routes[route]["requests"] += n
            routes[route]["by_status"][str(status)] = n
        for route, a in lats.items():  # a route's deque is made with its first latency
            p50, p95, p99 = np.percentile(a, [50, 95, 99])
            stats = {"p50": p50, "p95": p95, "p99": p99, "mean": a.mean()}
            latency = {name: round(float(v), 3) for name, v in stats.items()}
            routes[route]["latency_ms"] = {**latency, "window": len(a)}
        return {
            "uptime_s": round(time.time() - self.started, 1),
            "requests": sum(counts.values()),
            "routes": routes,
        }


def _error_message(errors: list[dict[str, Any]]) -> str:
    parts = []
    for e in errors:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts) or "invalid request"


def _json(data: dict[str, Any]) -> Response:
    """Serialize with orjson, skipping FastAPI's response-model pass (it cost more than the
    search itself); the OpenAPI test checks every response against the declared model."""
    return Response(orjson.dumps(data), media_type="application/json")


# the page loads only its own files: no CDN, no inline script
_PAGE_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


class _Measure:
    """Records each request's route, status and latency, and sets the security headers. A plain
    ASGI middleware: Starlette's ``BaseHTTPMiddleware`` runs every request through an extra task
    and stream, a measurable share of a search's CPU."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500  # what the client gets when the app raises before answering

        def path() -> str:  # the matched route's template, known once the router ran
            return getattr(scope.get("route"), "path", None) or "other"

        async def send_with_headers(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = MutableHeaders(scope=message)
                headers["X-Content-Type-Options"] = "nosniff"
                p = path()
                if p == "/" or p.startswith("/static"):
                    headers["Content-Security-Policy"] = _PAGE_CSP
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            ms = (time.perf_counter() - t0) * 1000
            self.metrics.record(f"{scope['method']} {path()}", status, ms)


@asynccontextmanager
async def _search_threads(app: FastAPI) -> AsyncIterator[None]:
    """Searches run in threads; as many at once as cores, plus one whose Python parts
    overlap the others' native work. anyio's default (40) lets 8 clients share 2 cores
    8 ways, which stretches every request's latency (p95) for no throughput."""
    anyio.to_thread.current_default_thread_limiter().total_tokens = available_cores() + 1
    yield


def create_app(engine: SearchEngine) -> FastAPI:
    """The FastAPI app over an opened engine (one engine per process, shared by all threads)."""
    app = FastAPI(
        title="Ratio inspiration search",
        lifespan=_search_threads,
        docs_url=None,  # Swagger/ReDoc pages load scripts from a CDN; the service works offline
        redoc_url=None,
        version=__version__,
        description=(
            "Retrieve sentences from scientific papers that suggest an ideation move for a "
            "research statement: Address (approaches to a problem), Broaden (more general "
            "formulations), Specify (concrete instances)."
        ),
    )
    app.state.engine = engine
    app.state.metrics = metrics = Metrics()
    app.add_middleware(_Measure, metrics=metrics)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in exc.errors()]
        for e in errors:
            e["loc"] = [str(x) for x in e.get("loc", ())]
        if any(e.get("type") == "json_invalid" for e in errors):
            message = f"malformed JSON body: {_error_message(errors)}"
            return JSONResponse({"error": message, "detail": errors}, 400)
        return JSONResponse({"error": _error_message(errors), "detail": errors}, 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        # e.g. a body that is not even text; keep the one error shape for every 4xx
        return JSONResponse({"error": str(exc.detail)}, exc.status_code, headers=exc.headers)

    @app.exception_handler(ServeError)
    async def _serve_error(request: Request, exc: ServeError):
        return JSONResponse({"error": str(exc)}, exc.status)

    @app.exception_handler(ChainError)
    async def _chain_error(request: Request, exc: ChainError):
        # the shape of a validation error, so a client reads a bad pick like a bad k
        detail = [{"loc": exc.field.split("."), "msg": exc.reason, "type": "chain"}]
        return JSONResponse({"error": str(exc), "detail": detail}, exc.status)

    @app.exception_handler(RatioError)
    async def _ratio_error(request: Request, exc: RatioError):
        return JSONResponse({"error": f"retriever unavailable: {exc}"}, 503)

    # The retriever field lists this engine's retrievers, so the schema says what is valid.
    names = Literal[tuple(engine.retriever_names())]  # type: ignore[valid-type]
    retriever_field: tuple[Any, Any] = (
        names | None,
        Field(None, description=_Filters.model_fields["retriever"].description),
    )
    search_model = create_model("SearchRequest", __base__=SearchRequest, retriever=retriever_field)
    moves_model = create_model("MovesRequest", __base__=_Filters, retriever=retriever_field)
    chain_model = create_model("ChainRequest", __base__=ChainRequest, retriever=retriever_field)

    def search(req: SearchRequest) -> Response:
        """Top-k inspirations for one statement and one ideation move."""
        return _json(engine.search(req.query, req.move, req.k, req.retriever, **req.filters()))

    def moves(req: _Filters) -> Response:
        """Address, Broaden and Specify side by side for one statement."""
        return _json(engine.moves(req.query, req.k, req.retriever, **req.filters()))

    def chain(req: ChainRequest) -> Response:
        """Moves one after another, each from the result the step before chose."""
        options = req.model_dump(include={"picks", "exclude_own_paper", "prefer_other"})
        return _json(
            engine.chain(
                req.query, req.moves, k=req.k, retriever=req.retriever, **options, **req.filters()
            )
        )

    # real classes, not the strings `from __future__ import annotations` leaves behind
    search.__annotations__ = {"req": search_model, "return": Response}
    moves.__annotations__ = {"req": moves_model, "return": Response}
    chain.__annotations__ = {"req": chain_model, "return": Response}
    app.post("/search", response_model=SearchResponse, responses=ERRORS, tags=["search"])(search)
    app.post("/moves", response_model=MovesResponse, responses=ERRORS, tags=["search"])(moves)
    app.post("/chain", response_model=ChainResponse, responses=ERRORS, tags=["search"])(chain)

    @app.get("/info", tags=["service"])
    def info() -> dict[str, Any]:
        """The pool, the moves, and the retrievers a request may choose."""
        return engine.info()

    shipped = next(iter(engine.shipped.values()), None)
    if shipped is not None and shipped.card is not None:  # no model, no card route
        card_file = shipped.card

        @app.get("/card", tags=["service"], response_class=MarkdownResponse)
        def card() -> MarkdownResponse:
            """The model card (Markdown) of the shipped model the service may answer with."""
            return MarkdownResponse(card_file.read_text(encoding="utf-8"))

    @app.get("/health", tags=["service"])
    def health() -> dict[str, Any]:
        """Liveness: the pool is open and how long the server has been up."""
        return {
            "status": "ok",
            "version": __version__,
            "candidates": engine.pool.n,
            "uptime_s": round(time.time() - metrics.started, 1),
        }

    @app.get("/metrics", tags=["service"])
    def get_metrics() -> dict[str, Any]:
        """Request counts by route and status, latency percentiles over the last requests."""
        return metrics.snapshot()

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def serve(engine: SearchEngine, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_app(engine), host=host, port=port, log_level="warning")
