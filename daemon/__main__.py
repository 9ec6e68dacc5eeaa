"""`python -m daemon ...`: accelopt from a source checkout that was never installed."""

from daemon.cli import main

main()
