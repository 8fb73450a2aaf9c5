"""Evaluation: the harness (systems x relations -> runs, metrics, tables), oracle pool
filtering, lexical overlap analysis and table formatting."""

from __future__ import annotations

from ratio.evaluation.harness import EvaluationError, EvaluationResults, evaluate_systems

__all__ = ["EvaluationError", "EvaluationResults", "evaluate_systems"]
