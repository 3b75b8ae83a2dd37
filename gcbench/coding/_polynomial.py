"""Real polynomial (Reed-Solomon style) constructions on Chebyshev points.

Worker i evaluates, at its point a_i, a vector polynomial f of degree n-s-1
whose top m coefficients are the m slices of the full gradient. Partition j
enters f through polynomials that vanish at every worker not holding j, so a
worker only needs its own partitions, and any n - s evaluations interpolate f
(Halbawi et al., ISIT 2018; Ye & Abbe, ICML 2018).
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import polynomial as P


def chebyshev_points(n: int) -> np.ndarray:
    """n distinct points in (-1, 1), Chebyshev nodes of the first kind."""
    return np.cos(np.pi * (2 * np.arange(n) + 1) / (2 * n))


def top_coefficient_code(n: int, s: int, m: int) -> np.ndarray:
    """C (n x m x n): C[i, u, j] multiplies slice u of partition j in worker i's message.

    Worker i holds partitions i..i+s+m-1 (mod n); any n - s workers decode.
    """
    points = chebyshev_points(n)
    width = s + m
    degree = n - s - 1
    coeffs = np.zeros((n, m, n))
    for j in range(n):
        holders = [(j - t) % n for t in range(width)]
        others = np.delete(points, holders)
        vanish = P.polyfromroots(others)  # monic, degree n - s - m
        # r_u (degree < m) with coef of x^(degree - v) in vanish * r_u equal to [u == v]
        system = np.array([[_coef(vanish, degree - v - t) for t in range(m)] for v in range(m)])
        multipliers = np.linalg.solve(system, np.eye(m))  # column u: coefficients of r_u
        for u in range(m):
            q = P.polymul(vanish, multipliers[:, u])
            coeffs[holders, u, j] = P.polyval(points[holders], q)
    return coeffs


def _coef(poly: np.ndarray, power: int) -> float:
    return float(poly[power]) if 0 <= power < len(poly) else 0.0


def chebyshev_mds(rows: int, cols: int) -> np.ndarray:
    """(rows x cols) real matrix whose every cols x cols submatrix is invertible.

    Chebyshev polynomials T_0..T_{cols-1} at Chebyshev points: a Vandermonde
    matrix in a well-conditioned basis.
    """
    x = chebyshev_points(rows)
    return np.polynomial.chebyshev.chebvander(x, cols - 1)
