"""`accelopt bench soak`: the daemon under weeks' worth of churn, compressed into minutes, and
whether anything in it grows. The rooms: the churn (churn.py), the scripted agents
(script.py), the sampler (sampler.py), the growth arithmetic (growth.py, report.py), the
audit after the stop (audit.py) and the run (run.py: `accelopt daemon` itself, its clock
periods shortened through its own options)."""

from daemon.bench.soak.run import SoakConfig, run_soak_benchmark

__all__ = ["SoakConfig", "run_soak_benchmark"]
