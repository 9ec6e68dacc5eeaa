"""nki.isa's instructions by engine; nkibench.nkisim.current.isa is the namespace kernels see."""
