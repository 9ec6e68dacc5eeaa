"""The live pages: the report following the log, its JSON API and Prometheus /metrics."""
