"""How a stage runs: ``stages`` decides what is up to date, writes markers and manifests, and
hands per-shard work to ``executors``, which maps a pure function over shards locally or on
Ray. Imports only ``ratio.core``."""
