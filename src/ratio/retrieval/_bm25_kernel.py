"""A numba kernel scoring a batch of queries against bm25s's CSC score matrix and
selecting each query's top k with a bounded heap over only the documents that
share a query term (bm25s's own kernel heaps over every document).

Compiled with ``cache=True`` so the JIT cost is paid once per machine, not once
per process as with bm25s's numba backend. Ties rank the lower document index first.

Tested by tests/retrieval/test_bm25.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _worse(v1, d1, v2, d2):  # pragma: no cover - jitted
    """Is (v1, d1) ranked below (v2, d2)? Lower score, or equal score and higher doc index."""
    return v1 < v2 or (v1 == v2 and d1 > d2)


@njit(cache=True, nogil=True)
def _sift_down(hv, hd, pos, n):  # pragma: no cover - jitted
    """Restore the min-heap (worst at the root) below ``pos``."""
    v, d = hv[pos], hd[pos]
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        right = child + 1
        if right < n and _worse(hv[right], hd[right], hv[child], hd[child]):
            child = right
        if _worse(hv[child], hd[child], v, d):
            hv[pos], hd[pos] = hv[child], hd[child]
            pos = child
        else:
            break
    hv[pos], hd[pos] = v, d


@njit(cache=True, nogil=True)
def _sift_up(hv, hd, pos):  # pragma: no cover - jitted
    v, d = hv[pos], hd[pos]
    while pos > 0:
        parent = (pos - 1) >> 1
        if _worse(v, d, hv[parent], hd[parent]):
            hv[pos], hd[pos] = hv[parent], hd[parent]
            pos = parent
        else:
            break
    hv[pos], hd[pos] = v, d


@njit(cache=True, nogil=True)
def retrieve_topk(
    indptr, indices, data, num_docs, q_ptr, q_ids, k, out_idx, out_val
):  # pragma: no cover - jitted
    # All weights are > 0 (checked by the caller), so a zero score marks an untouched doc.
    scores = np.zeros(num_docs, dtype=np.float32)
    touched = np.empty(num_docs, dtype=np.int64)
    hv = np.empty(max(k, 1), dtype=np.float32)
    hd = np.empty(max(k, 1), dtype=np.int64)
    for i in range(len(q_ptr) - 1):
        m = 0
        for a in range(q_ptr[i], q_ptr[i + 1]):
            t = q_ids[a]
            for j in range(indptr[t], indptr[t + 1]):
                d = indices[j]
                if scores[d] == 0:
                    touched[m] = d
                    m += 1
                scores[d] += data[j]
        n = 0
        for x in range(m):
            d = touched[x]
            v = scores[d]
            scores[d] = 0.0
            if n < k:
                hv[n], hd[n] = v, d
                _sift_up(hv, hd, n)
                n += 1
            elif _worse(hv[0], hd[0], v, d):
                hv[0], hd[0] = v, d
                _sift_down(hv, hd, 0, n)
        # pop worst-first into the output from the back
        for r in range(n - 1, -1, -1):
            out_val[i, r], out_idx[i, r] = hv[0], hd[0]
            hv[0], hd[0] = hv[r], hd[r]
            _sift_down(hv, hd, 0, r)
