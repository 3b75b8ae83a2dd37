"""Cyclic-MDS / Reed-Solomon gradient codes (Raviv et al., ICML 2018; Halbawi et al., ISIT 2018)."""

from __future__ import annotations

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._polynomial import top_coefficient_code
from gcbench.coding.cyclic_repetition import cyclic_support, rows_as_layout


def real_cyclic_mds_rows(n: int, s: int) -> np.ndarray:
    """Circulant B whose rows are shifts of a real codeword of the cyclic MDS code with s zeros.

    The zeros are s consecutive n-th roots of unity centred on -1, a set closed
    under conjugation (so the code is real) that excludes 1 (so 1 is a codeword);
    this needs n - s odd.
    """
    first = (n - s + 1) // 2
    roots = np.exp(2j * np.pi * np.arange(first, first + s) / n)
    generator = np.atleast_1d(np.poly(roots))[::-1].real  # coefficients of x^0..x^s
    b = np.zeros((n, n))
    for i, support in enumerate(cyclic_support(n, s + 1)):
        b[i, list(support)] = generator
    return b


class CyclicMDS(Scheme):
    """Same support as cr (worker i holds i..i+s mod n), deterministic and better conditioned.

    - tolerates: any s stragglers
    - load: s + 1 partitions per worker
    - upload: 1 gradient per worker
    - decoding: solve for n - s weights of a real MDS code; refused when ill-conditioned
    - reference: Raviv et al., ICML 2018 (real cyclic MDS, n - s odd);
      Halbawi et al., ISIT 2018 (Reed-Solomon on Chebyshev points, n - s even)
    """

    name = "cyclic_mds"
    reference = "Raviv et al., ICML 2018; Halbawi et al., ISIT 2018"
    facts = {"tolerates": "any s", "load": "s + 1", "upload": "1", "decoding": "n - s weights (deterministic)"}
    checks_conditioning = True

    @property
    def construction(self) -> str:
        if (self.n - self.s) % 2:
            return "real cyclic MDS code, zeros centred on -1 (Raviv et al., ICML 2018)"
        return "Reed-Solomon code on Chebyshev points (Halbawi et al., ISIT 2018)"

    def _layout(self) -> Layout:
        if (self.n - self.s) % 2:
            return rows_as_layout(real_cyclic_mds_rows(self.n, self.s), self.s + 1)
        return rows_as_layout(top_coefficient_code(self.n, self.s, 1)[:, 0, :], self.s + 1)
