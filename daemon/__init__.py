"""The service: settings, the `accelopt` CLI (daemon.cli), the daemon and its parts (service,
supervisor, watcher, workers, portfolio, reverify, status, lock, health), and the one place
that opens backends (backends)."""
