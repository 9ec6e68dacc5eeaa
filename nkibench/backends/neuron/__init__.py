"""The `neuron` backend: real neuronx-cc and neuron-profile on a Trainium host."""

from nkibench.backends.neuron.backend import NeuronBackend
from nkibench.backends.neuron.detect import NeuronHost, detect_neuron

__all__ = ["NeuronBackend", "NeuronHost", "detect_neuron"]
