"""The rules results are judged by: correctness (relative L2 per seed), the roofline and % of
peak, the flop and byte counts of a reference, and where every number comes from."""
