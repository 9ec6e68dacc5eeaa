"""TEST DOUBLE of the `neuronxcc` package (see tests/neuron_double/README.md)."""

__version__ = "0.0.0+testdouble"
