"""The daemon's and the fleet's benchmarks, the soak, and the scripted LLM server they use.
Only `accelopt bench` (daemon.cli.bench) and the tests import them."""
