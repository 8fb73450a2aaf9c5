"""What every layer shares and nothing above it: errors and atomic I/O (``io``), storage that
may be a URL (``storage``), the run config (``config``), Arrow schemas (``schemas``), typed
records and label vocabularies (``records``), provenance stamps (``provenance``), the run
directory, ids and the benchmark reader (``layout``), and seeded sampling (``sampling``).
Imports nothing else from ``ratio``."""
