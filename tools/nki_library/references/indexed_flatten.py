"""nki-library core/subkernels/indexed_flatten, run without an SPMD grid (LNC1); the entry fixes
f_len = 16 and output_len = 4096.

out = full(output_len, -1); for each row e, its T // f_len blocks of f_len go to block positions
row_offsets[e] + p (positions past the end are skipped). Offsets here do not overlap."""

import numpy as np

E = 4
T = 512
F_LEN = 16
OUTPUT_LEN = 4096


def get_inputs():
    x = np.random.randint(0, 10000, size=(E, T)).astype(np.int32)
    blocks = T // F_LEN
    total = OUTPUT_LEN // F_LEN
    # non-overlapping row placements, the last one running past the end (skipped blocks)
    starts = np.sort(np.random.choice(total // blocks - 1, size=E - 1, replace=False)) * blocks
    starts = np.append(starts, total - blocks // 2)
    return [x, starts.astype(np.int32)]


def forward(x, row_offsets):
    e_rows, t = x.shape
    blocks = t // F_LEN
    out = np.full((OUTPUT_LEN // F_LEN, F_LEN), -1, dtype=x.dtype)
    for e in range(e_rows):
        for p in range(blocks):
            b = int(row_offsets[e]) + p
            if b < out.shape[0]:
                out[b] = x[e, p * F_LEN : (p + 1) * F_LEN]
    return out.reshape(-1)
