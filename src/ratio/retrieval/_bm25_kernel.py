"""A numba kernel scoring a batch of queries against bm25s's CSC score matrix and
selecting each query's top k, touching only the documents that share a term.

Compiled with ``cache=True`` so the JIT cost is paid once per machine, not once
per process as with bm25s's own numba backend.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def retrieve_topk(indptr, indices, data, num_docs, q_ptr, q_ids, k, out_idx, out_val):  # pragma: no cover - jitted
    scores = np.zeros(num_docs, dtype=np.float32)
    seen = np.zeros(num_docs, dtype=np.bool_)
    touched = np.empty(num_docs, dtype=np.int64)
    for i in range(len(q_ptr) - 1):
        m = 0
        for a in range(q_ptr[i], q_ptr[i + 1]):
            t = q_ids[a]
            for j in range(indptr[t], indptr[t + 1]):
                d = indices[j]
                scores[d] += data[j]
                if not seen[d]:
                    seen[d] = True
                    touched[m] = d
                    m += 1
        cand = touched[:m]
        # drop zero scores (a term may carry a zero weight)
        n_pos = 0
        for x in range(m):
            if scores[cand[x]] > 0:
                cand[n_pos] = cand[x]
                n_pos += 1
        kk = min(k, n_pos)
        if kk > 0:
            pos = cand[:n_pos].copy()
            vals = np.empty(n_pos, dtype=np.float32)
            for x in range(n_pos):
                vals[x] = scores[pos[x]]
            if n_pos > kk:
                thr = np.partition(vals, n_pos - kk)[n_pos - kk]
                sel = np.empty(n_pos, dtype=np.int64)
                c = 0
                for x in range(n_pos):
                    if scores[pos[x]] >= thr:
                        sel[c] = pos[x]
                        c += 1
                pos = sel[:c]
            pos = np.sort(pos)  # ties: lower document index first
            v = np.empty(len(pos), dtype=np.float32)
            for x in range(len(pos)):
                v[x] = -scores[pos[x]]
            order = np.argsort(v, kind="mergesort")
            for r in range(kk):
                out_idx[i, r] = pos[order[r]]
                out_val[i, r] = -v[order[r]]
        for x in range(m):
            scores[touched[x]] = 0.0
            seen[touched[x]] = False
