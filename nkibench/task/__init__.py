"""The task format: what a user drops into the watched directory (spec), the safe evaluation
of its formulas (safe_eval), the counts its reference may compute for them (counts), the
operators its reference uses (operators), and the import of AccelOpt's NKIBench trees
(importer). Loading a task never runs its code."""
