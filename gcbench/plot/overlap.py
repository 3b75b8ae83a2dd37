"""Curves that lie on an earlier one are drawn dashed and hollow, on top of it drawn wide, and say so.

CR and cyclic-MDS, for example, have the same support and decoding rule, so their simulated times are
identical; drawn plainly, the later line covers the earlier one exactly and one variant seems missing.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

# Closer than this fraction of the axis span is one line at figure size.
TOLERANCE = 0.002
DASHES = ((0, (3, 2)), (0, (1, 1.5)), (0, (5, 2, 1, 2)), (0, (2, 3)))
UNDER_WIDTH = 2.5  # the covered curve is drawn this much wider than the lines on it


def hidden_under(curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, str]:
    """For each curve that lies on an earlier one at every point, the earliest such curve."""
    xs = np.concatenate([np.asarray(x, float) for x, _ in curves.values()] or [np.zeros(1)])
    ys = np.concatenate([np.asarray(y, float) for _, y in curves.values()] or [np.zeros(1)])
    x_tol, y_tol = TOLERANCE * _span(xs), TOLERANCE * _span(ys)
    names, found = list(curves), {}
    for i, name in enumerate(names):
        x, y = (np.asarray(a, float) for a in curves[name])
        for other in names[:i]:
            ox, oy = (np.asarray(a, float) for a in curves[other])
            if len(x) == len(ox) and len(x) and _close(x, ox, x_tol) and _close(y, oy, y_tol):
                found[name] = found.get(other, other)
                break
    return found


def _span(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.max() - finite.min()) if len(finite) else 0.0


def _close(a: np.ndarray, b: np.ndarray, tolerance: float) -> bool:
    return bool(np.allclose(a, b, rtol=0, atol=tolerance, equal_nan=True))


def restyle(styles: dict[str, dict], hidden: dict[str, str], note: str = "same curve as {}") -> dict[str, dict]:
    """A copy of the styles in which each hidden curve is dashed (one dash per layer), hollow, on top, and labelled."""
    out = {name: dict(style) for name, style in styles.items()}
    width = plt.rcParams["lines.linewidth"]
    layers: dict[str, int] = {}
    for name, under in hidden.items():
        layer = layers.get(under, 0)
        layers[under] = layer + 1
        out[under]["linewidth"] = UNDER_WIDTH * width  # a wide band of its colour around the dashes on it
        out[name].update(
            linewidth=width,
            linestyle=DASHES[layer % len(DASHES)],
            markerfacecolor="none",
            zorder=3 + layer,
            label=f"{styles[name]['label']} ({note.format(under)})",
        )
    return out


def styles_for(
    styles: dict[str, dict], curves: dict[str, tuple[np.ndarray, np.ndarray]], note: str = "same curve as {}"
) -> dict[str, dict]:
    """The styles to draw these curves with, hidden ones restyled."""
    return restyle(styles, hidden_under(curves), note)
