"""LLM judging (paper 4.1, 4.3, 5.3-5.5, Appendices C, E, G, H, I).

``backends`` (OpenAI-compatible HTTP, OpenAI Batch API, in-process llama.cpp), ``cache``
(SQLite, resume), ``prompts`` (versioned Appendix I prompts and answer shapes),
``runner`` (retries, validation, accounting) and one module per use: ``silver``,
``calibrate``, ``annotate``, ``topk``, ``pairwise``, ``anaphora``, ``lexicon_llm``.
See docs/judging.md.
"""

from __future__ import annotations

from ratio.judge.prompts import Prompt, get_prompt, load_prompts
from ratio.judge.runner import Judge, Result, Task, Usage, open_judge

__all__ = ["Judge", "Prompt", "Result", "Task", "Usage", "get_prompt", "load_prompts", "open_judge"]
