"""The service: settings, the `accelopt` CLI, and (later) watcher, clock, scheduler, workers."""
