"""The processes: the `accelopt` CLI (daemon.cli); the daemon, its parts and its clock (service,
supervisor, watcher, workers, devices, portfolio, reverify, status, lock, health); the fleet's
worker process (fleet); the report and the live pages (report, web); the benchmarks and the
soak (benchmark, fleet_bench, soak, scripted_llm); and what every command shares (settings,
secrets, logs, the one place that opens backends)."""
