"""The LLM side of accelopt: client, roles (planner, executor, summarizer, fixer), beam
search and the optimization memory. Depends on `events` and on `nkibench` result types only."""
