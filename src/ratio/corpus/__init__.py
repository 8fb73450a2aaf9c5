"""From raw papers to sentences: ``readers`` (one per input format), the ``text`` pipeline
(cleanup, sections, segmentation, normalization), the ingest stage and its statistics, and
``slices`` (small real slices of the shared corpus for tests and benchmarks)."""
