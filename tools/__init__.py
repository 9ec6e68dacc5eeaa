"""Tools that are not accelopt, kept beside it: not shipped with the package (setuptools finds
only accelopt's own packages), run from the repository root with `python -m tools.<name>...`."""
