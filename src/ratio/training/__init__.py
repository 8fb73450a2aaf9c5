"""Contrastive fine-tuning of operation-specific and unified relation-conditioned retrievers.

``train.py`` trains and selects (paper §5.1, Appendix C), ``validation.py`` scores models on
the validation split, ``grids.py`` holds the hyperparameter grids (Table 7), ``data.py`` reads
pairs and validation sets from the benchmark, ``unified.py`` adds the relation-as-instruction
model and the test-split comparison of baseline, specialists and unified model.
"""

from __future__ import annotations

from ratio.training.data import INSTRUCTIONS, TrainingError
from ratio.training.grids import TABLE7, Trial, trials_for

__all__ = ["INSTRUCTIONS", "TABLE7", "Trial", "TrainingError", "trials_for"]
