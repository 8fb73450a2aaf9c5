"""The three move tasks as ``mteb`` retrieval tasks (imports ``mteb``: the ``mteb`` extra).

A task's data is a :class:`ratio.mteb.data.MoveData`, read from the run directory when the task
is made; ``load_data`` only wraps it in the ``datasets`` tables mteb 2 reads (corpus ``id`` /
``text``, queries ``id`` / ``text``, ``relevant_docs`` ``{query: {doc: relevance}}``), so
nothing is fetched from the Hugging Face hub.

Tested by tests/mteb/test_tasks.py.
"""

from __future__ import annotations

from typing import Any

from datasets import Dataset
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata

from ratio.mteb.data import MoveData

PAPER = "Ratio: A Benchmark for Retrieval Across Typed Ideation Operations in Scientific Literature"
BIBTEX = (
    "@misc{ratio,\n"
    f"  title = {{{PAPER}}},\n"
    "  note = {Retrieval Across Typed Ideation Operations (Ratio)},\n"
    "}\n"
)
# the paper's relation definitions (Section 3)
DEFINITIONS = {
    "address": "the query states a problem; retrieve an approach or insight that can help "
    "address it",
    "broaden": "retrieve a reformulation of the query at a broader scope or greater generality",
    "specify": "retrieve a statement that instantiates the query through a concrete case, "
    "mechanism or example",
}
# MRR@10 is the paper's primary metric (Appendix: "MRR@10 is therefore primary")
MAIN_SCORE = "mrr_at_10"


def task_name(data: MoveData) -> str:
    """``Ratio<Move>``, plus what differs from the full pool and every query, so mteb's result
    cache never mixes a sub-pool's numbers with the full pool's."""
    name = f"Ratio{data.relation.capitalize()}"
    if data.oracle != "none":
        name += f"-oracle-{data.oracle}"
    if data.max_pool:
        name += f"-max{data.max_pool}"
    if data.max_queries:
        name += f"-q{data.max_queries}"
    if data.max_pool or data.max_queries:
        name += f"-seed{data.seed}"
    return name


def task_metadata(data: MoveData) -> TaskMetadata:
    """The task's mteb metadata (validated by pydantic when made)."""
    n_rel = sum(1 for d in data.qrels.values() for v in d.values() if v > 0)
    description = (
        f"Ratio {data.relation.capitalize()} move: {DEFINITIONS[data.relation]}. "
        f"Sentences from scientific papers; split {data.split!r} of the Ratio benchmark at "
        f"{data.benchmark}: {len(data.query_ids):,} queries ({n_rel:,} relevant pairs, mined "
        f"by discourse markers), {data.pool_description}. The paper: {PAPER}."
    )
    date = (f"{data.years[0]}-01-01", f"{data.years[1]}-12-31") if data.years else None
    return TaskMetadata(
        name=task_name(data),
        description=description,
        # a local run directory, not a hub dataset: the benchmark folder and the build's
        # split key digest (``benchmark/manifest.json``) name the data
        dataset={"path": data.benchmark, "revision": data.revision},
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        reference=None,  # the paper has no public URL yet; it is named in the description
        eval_splits=[data.split],
        eval_langs=["eng-Latn"],
        main_score=MAIN_SCORE,
        date=date,
        domains=["Academic", "Written"],
        task_subtypes=None,
        license="not specified",
        annotations_creators="derived",
        dialect=[],
        sample_creation="found",
        bibtex_citation=BIBTEX,
    )


class RatioMoveTask(AbsTaskRetrieval):
    """One ideation move (Address, Broaden or Specify) on one split of a built Ratio run.

    Made by :func:`move_task`: mteb reads ``metadata`` from the class (``unload_data`` drops
    an instance's own), so each task is a subclass named after it that carries its metadata.
    """

    metadata: TaskMetadata

    def __init__(self, data: MoveData, **kwargs: Any) -> None:
        self.data = data
        super().__init__(**kwargs)

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        d = self.data
        self.dataset = {
            "default": {
                d.split: {
                    "corpus": Dataset.from_dict({"id": d.corpus_ids, "text": d.corpus_texts}),
                    "queries": Dataset.from_dict({"id": d.query_ids, "text": d.query_texts}),
                    "relevant_docs": {q: dict(docs) for q, docs in d.qrels.items()},
                    "top_ranked": None,
                }
            }
        }
        self.data_loaded = True


def move_task(data: MoveData) -> RatioMoveTask:
    """The task over ``data``: an instance of a ``RatioMoveTask`` subclass named after the task
    (``RatioAddress``, ...), whose class attribute ``metadata`` describes this data."""
    metadata = task_metadata(data)
    cls = type(
        metadata.name.replace("-", "_"),
        (RatioMoveTask,),
        {"metadata": metadata, "__module__": __name__, "__doc__": metadata.description},
    )
    return cls(data)


def make_tasks(data: dict[str, MoveData]) -> list[RatioMoveTask]:
    return [move_task(d) for d in data.values()]
