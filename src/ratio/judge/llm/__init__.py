"""The LLM layer every judging analysis stands on: ``interface`` (the backend protocol and its
errors), ``backends`` (OpenAI-compatible HTTP, the OpenAI Batch API, in-process llama.cpp via
``llamacpp``), ``prompts`` (versioned Appendix I prompts and answer shapes, data in
``prompts/``), ``cache`` (SQLite, resume) and ``runner`` (retries, validation, accounting)."""
