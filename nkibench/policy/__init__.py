"""The rules results are judged by: correctness (relative L2 per seed), the roofline and % of
peak, the flop and byte counts of a reference, and where every number comes from; and the
dialect-specific rules of what kernel code may use (triton_code, nkisim_code), which the
dialects' records carry to the static check."""
