"""Move chains: a statement, then moves applied one after another, each to the sentence the
previous step chose ("broaden, then specify": zoom out from a problem, then into another
instance of the broader idea, in another paper).

One function, :func:`run_chain`, behind ``SearchEngine.chain``, ``ratio.chain``,
``POST /chain``, the MCP tool ``chain`` and the page, so every front end walks a path the same
way and refuses the same input with the same message. A chain is checked whole (moves, picks,
options) before its first search, so a typo costs no ranking; what only a search can tell (a
step with no result, a pick past the results) names the step.

Tested by tests/serve/test_chain.py.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ratio.core.layout import candidate_id
from ratio.corpus.text.normalize import match_form
from ratio.serve.engine import MAX_CHAIN, MAX_K, MOVES
from ratio.serve.pool import ServeError

if TYPE_CHECKING:
    from ratio.serve.engine import SearchEngine

__all__ = ["MAX_CHAIN", "PREFER_OTHER", "ChainError", "run_chain"]

PREFER_OTHER: tuple[str, ...] = ("none", "section", "venue", "year")
# what "another section / venue / year" compares: the section's category (introduction,
# method, ...), since two papers' headings differ in wording even for the same kind of section
_PREFER_FIELD = {"section": "section_category", "venue": "venue", "year": "year"}

Pick = int | str | None


class ChainError(ServeError):
    """A chain that cannot be run. ``field`` names the request field at fault the way the HTTP
    API's validation errors do (``moves``, ``moves.1``, ``picks.0``), and the message starts
    with it, so a person, a program and an agent all learn what to change."""

    status = 422

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


def _check_moves(moves: Sequence[str]) -> list[str]:
    allowed = ", ".join(MOVES)
    if isinstance(moves, str):
        raise ChainError(
            "moves", f"give a list of moves (e.g. ['broaden', 'specify']), not {moves!r}"
        )
    moves = list(moves)
    if not moves:
        raise ChainError("moves", f"the chain is empty: give one move or more ({allowed})")
    if len(moves) > MAX_CHAIN:
        raise ChainError("moves", f"{len(moves)} moves; a chain has at most {MAX_CHAIN}")
    for i, move in enumerate(moves):
        if move not in MOVES:
            raise ChainError(f"moves.{i}", f"unknown move {move!r}; the moves are {allowed}")
    return moves


def _check_picks(picks: Sequence[Pick] | None, n: int) -> list[int | str]:
    """One pick per move (missing ones: rank 1): a 1-based rank or a candidate id."""
    picks = list(picks or [])
    if len(picks) > n:
        raise ChainError("picks", f"{len(picks)} picks for {n} move(s): give at most one per move")
    out: list[int | str] = []
    for i, pick in enumerate(picks + [None] * (n - len(picks))):
        if pick is None:
            pick = 1
        if isinstance(pick, bool) or not isinstance(pick, int | str):
            raise ChainError(f"picks.{i}", f"a rank (1, 2, ...) or a candidate id, not {pick!r}")
        if isinstance(pick, int) and pick < 1:
            raise ChainError(f"picks.{i}", f"rank {pick} is out of range: ranks start at 1")
        if isinstance(pick, str) and not pick.strip():
            raise ChainError(f"picks.{i}", "an empty candidate id")
        out.append(pick.strip() if isinstance(pick, str) else pick)
    return out


def _chosen(hits: list[dict[str, Any]], pick: int | str, step: int, move: str) -> dict[str, Any]:
    where = f"step {step + 1} ({move}) has {len(hits)} result{'s' * (len(hits) != 1)}"
    if isinstance(pick, int):
        if pick > len(hits):
            raise ChainError(f"picks.{step}", f"rank {pick} is out of range: {where}")
        return hits[pick - 1]
    hit = next((h for h in hits if h["candidate_id"] == pick), None)
    if hit is None:
        raise ChainError(f"picks.{step}", f"candidate {pick!r} is not among the results: {where}")
    return hit


def _prefer(hits: list[dict[str, Any]], previous: dict[str, Any] | None, prefer: str) -> list:
    """Hits from another section / venue / year than ``previous`` first, each group in its
    ranked order. A hit whose value is unknown is not known to differ, so it stays behind."""
    field = _PREFER_FIELD.get(prefer)
    if field is None or previous is None or previous.get(field) is None:
        return hits
    ref = previous[field]

    def other(hit: dict[str, Any]) -> bool:
        value = hit.get(field)
        if value is None:
            return False
        return value.lower() != ref.lower() if isinstance(value, str) else value != ref

    return [h for h in hits if other(h)] + [h for h in hits if not other(h)]


def _own_row(engine: SearchEngine, text: str) -> dict[str, Any] | None:
    """The pool row of a statement that is itself a pool sentence (candidate ids hash the
    match form), whose paper is then the statement's own; else None."""
    row = engine.pool.rows_of([candidate_id(match_form(text))])[0]
    return engine.pool.rows([int(row)])[0] if row >= 0 else None


def run_chain(
    engine: SearchEngine,
    query: str,
    moves: Sequence[str],
    *,
    picks: Sequence[Pick] | None = None,
    k: int = 10,
    retriever: str | None = None,
    exclude_own_paper: bool = True,
    prefer_other: str = "none",
    year_min: int | None = None,
    year_max: int | None = None,
    venue: str | None = None,
    exclude_paper: str | None = None,
) -> dict[str, Any]:
    """Run ``moves`` from ``query``: step 1 searches the statement with ``moves[0]``, each later
    step searches the text of the hit the step before chose (``picks[i]``: a rank, default 1,
    or a candidate id among that step's results).

    ``exclude_own_paper`` (default) keeps every step away from the papers already on the path:
    the statement's own (when the statement is a pool sentence, its paper) and each chosen
    hit's. ``prefer_other`` (``section`` | ``venue`` | ``year``) re-ranks a step so hits from
    another section category / venue / year than the previous step's sentence come first,
    keeping the ranked order within each group (it re-ranks the top ``min(4k, MAX_K)``, so a
    hit from further down can rise into the top ``k``). ``k``, ``retriever`` and the filters
    are :meth:`SearchEngine.search`'s, applied at every step.

    Raises :class:`ChainError` naming the field at fault.
    """
    t0 = time.perf_counter()
    moves = _check_moves(moves)
    chosen_picks = _check_picks(picks, len(moves))
    if prefer_other not in PREFER_OTHER:
        raise ChainError(
            "prefer_other", f"{prefer_other!r}; expected one of {', '.join(PREFER_OTHER)}"
        )
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ChainError("k", f"must be between 1 and {MAX_K}, got {k!r}")
    text = engine.check_query(query)
    start = _own_row(engine, text)
    own_paper = start["paper_id"] if start else None
    on_path = {start["candidate_id"]} if start else set()  # a chain never returns to a sentence
    papers = [own_paper] if exclude_own_paper and own_paper else []
    depth = k if prefer_other == "none" else min(4 * k, MAX_K)
    previous, steps = start, []
    for i, (move, pick) in enumerate(zip(moves, chosen_picks, strict=True)):
        excluded = list(dict.fromkeys([exclude_paper, *papers] if exclude_paper else papers))
        res = engine.search(
            text,
            move,
            min(depth + len(on_path), MAX_K),
            retriever,
            year_min=year_min,
            year_max=year_max,
            venue=venue,
            exclude_paper=excluded or None,
        )
        hits = [h for h in res["results"] if h["candidate_id"] not in on_path]
        hits = [
            {**h, "rank": r} for r, h in enumerate(_prefer(hits, previous, prefer_other)[:k], 1)
        ]
        if not hits:
            raise ChainError(
                f"moves.{i}",
                f"step {i + 1} ({move}) found no result to continue from"
                + (f" (excluded papers: {', '.join(excluded)})" if excluded else ""),
            )
        hit = _chosen(hits, pick, i, move)
        steps.append(
            {
                "step": i + 1,
                "move": move,
                "query": text,
                "retriever": res["retriever"],
                "system": engine.resolve(retriever, move)[1],
                "note": res["note"],
                "excluded_papers": excluded,
                "results": hits,
                "pick": pick,
                "chosen": hit,
                "took_ms": res["took_ms"],
            }
        )
        text, previous = hit["text"], hit
        on_path.add(hit["candidate_id"])
        if exclude_own_paper and hit["paper_id"] and hit["paper_id"] not in papers:
            papers.append(hit["paper_id"])
    return {
        "query": engine.check_query(query),
        "moves": moves,
        "k": k,
        "exclude_own_paper": exclude_own_paper,
        "prefer_other": prefer_other,
        "own_paper": own_paper,
        "steps": steps,
        "took_ms": round((time.perf_counter() - t0) * 1000, 2),
    }
