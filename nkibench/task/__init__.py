"""The task format: what a user drops into the watched directory (spec), the safe evaluation
of its formulas (safe_eval), the operators its reference uses (operators), and the import of
AccelOpt's NKIBench trees (importer). Loading a task never runs its code."""
