"""What the comparison child spends on one large output, on this tree's code or an older
one's (it uses only what both have): SiLU's output at full shapes (8192 x 14336 bfloat16,
235 MB) and its float32 reference (470 MB) read back from their array files and judged, five
times; the median in seconds, and the verdict (which must not change from tree to tree):

    PYTHONPATH=TREE python3 bench/compare_outputs.py LABEL [ELEMENTS]

The files are written once under /tmp/accelopt-compare-ELEMENTS.
"""

import statistics
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from nkibench.policy.correctness import compare_outputs
from nkibench.sandbox.arrays import load_array, save_array


def main() -> None:
    label = sys.argv[1]
    elements = int(sys.argv[2]) if len(sys.argv) > 2 else 8192 * 14336
    folder = Path(f"/tmp/accelopt-compare-{elements}")
    if not (folder / "out.npy").exists():
        folder.mkdir(exist_ok=True)
        reference = np.random.default_rng(0).standard_normal(elements, dtype=np.float32)
        save_array(folder / "ref.npy", reference)
        save_array(folder / "out.npy", reference.astype(ml_dtypes.bfloat16))
    seconds = []
    for _ in range(5):
        began = time.perf_counter()
        out = load_array(folder, "out.npy", limit=elements * 16)
        reference = load_array(folder, "ref.npy", limit=elements * 16)
        verdict = compare_outputs(out, reference, 2e-2)
        seconds.append(time.perf_counter() - began)
    print(
        f"{label}: median {statistics.median(seconds):.3f} s "
        f"({', '.join(f'{s:.3f}' for s in seconds)}); correct {verdict.correct}, "
        f"relative L2 {verdict.max_rel_l2!r}"
    )


main()
