"""Text pipeline: Markdown structure and cleanup, section categories, inline cleanup.

``segment`` (sentence splitting) and ``normalize`` (Appendix B.1) live alongside.
"""

from ratio.corpus.text.clean import clean_inline
from ratio.corpus.text.markdown import parse_markdown
from ratio.corpus.text.sections import categorize

__all__ = ["categorize", "clean_inline", "parse_markdown"]
