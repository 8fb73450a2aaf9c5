"""LLM judging (paper 4.1, 4.3, 5.3-5.5, Appendices C, E, G, H, I).

``llm/`` is the LLM layer (back-ends, cache, prompts, the runner); beside it one module per
analysis: ``silver``, ``calibrate``, ``annotate``, ``topk``, ``pairwise``, ``anaphora``,
``lexicon_llm``, ``agreement``, ``audit`` and ``audit_build`` (the hand precision audit).
See docs/judging.md.
"""

from __future__ import annotations

from ratio.judge.llm.prompts import Prompt, get_prompt, load_prompts
from ratio.judge.llm.runner import Judge, Result, Task, Usage, open_judge

__all__ = ["Judge", "Prompt", "Result", "Task", "Usage", "get_prompt", "load_prompts", "open_judge"]
