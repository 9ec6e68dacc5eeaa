"""An analytic, engine-level performance model of a NeuronCore, run on nkisim's trace.

Its latencies are estimates, labelled `estimated` everywhere, and carry MODEL_VERSION.
"""

from nkibench.cost.model import MODEL_VERSION, Estimate, estimate
from nkibench.cost.tables import GENERATIONS, Generation

__all__ = ["GENERATIONS", "MODEL_VERSION", "Estimate", "Generation", "estimate"]
