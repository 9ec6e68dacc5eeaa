"""accelopt's processes, one room each:

- `cli/`: the `accelopt` command line, each command loaded only when it runs;
- `coordinator/`: the daemon's own process (`accelopt daemon`): watcher, searches, clock,
  portfolio, re-verification, library folder, supervision and the main loop;
- `workers/`: what serves profile jobs on a device, in the daemon and in `accelopt worker`;
- `views/`: the report and the live pages, which only read;
- `bench/`: the benchmarks of the daemon and the fleet, the soak, the scripted LLM server;
- `process/`: what every long-lived process needs (logs, signals, systemd, the allocator).

At the top, only what every command shares: settings, secrets, the one place that opens
backends, task revisions in the log and on disk, and the projections known by name.
"""
