"""The `neuron` backend: real Neuron compilers, profilers and a NeuronCore on a Trainium host,
for legacy NKI (SDK 2.29 and older) and current NKI (the `nki` package, SDK 2.29 and later)."""

from nkibench.backends.neuron.backend import NeuronBackend
from nkibench.backends.neuron.detect import (
    CURRENT,
    LEGACY,
    NeuronHost,
    detect_neuron,
    dialect_refusal,
    runnable_dialects,
)

__all__ = [
    "CURRENT",
    "LEGACY",
    "NeuronBackend",
    "NeuronHost",
    "detect_neuron",
    "dialect_refusal",
    "runnable_dialects",
]
