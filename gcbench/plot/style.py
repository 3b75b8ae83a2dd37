"""One look for every figure: seaborn, a colour-blind-safe palette, one colour per scheme everywhere."""

from __future__ import annotations

import zlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from gcbench.results.schema import DEFAULT_POLICY  # noqa: E402
from gcbench.results.summary import variant_kinds  # noqa: E402

# Registry order, so a scheme keeps its colour across figures and runs.
SCHEMES = ("uncoded", "ignore_stragglers", "fr", "cr", "cyclic_mds", "cce_cr", "cce_fr", "is_gc", "frc", "bgc")
_PALETTE = sns.color_palette("colorblind", 10)
# The palette has ten colours and there are more schemes: the rest share one, chosen so that a pipelined code
# has its base code's colour and the others a scheme they are rarely drawn beside. variant_styles gives the
# second variant of a colour another dash and marker, so shared colours stay distinguishable.
SHARED_COLOUR = {
    "pipelined_fr": "fr",
    "pipelined_cr": "cr",
    "bcc": "cyclic_mds",
    "expander": "cce_cr",
    "sgc": "cce_fr",
    "heterogeneous": "is_gc",
    "partial_cr": "frc",
    "chunked_cr": "bgc",
}
# A scheme curated in neither (one registered after these lists were written) still gets a look of its own: a
# colour of a second palette, darker than every curated one, picked by a stable hash of its name so it keeps it
# across figures and runs. Two such schemes may share one; variant_styles tells them apart as above.
_UNCURATED_PALETTE = sns.color_palette("dark", 10)
_COLOURS = (*_PALETTE, *_UNCURATED_PALETTE)
POLICY_STYLES = {
    "wait_all": "-",
    "decodable": "-",
    "fastest_k": "--",
    "deadline": ":",
    "k_async": "-.",
    "k_batch_async": (0, (3, 1, 1, 1)),
    "async": (0, (1, 1)),
}
COLUMN_WIDTH = 3.5  # inches: one column of a two-column paper
FULL_WIDTH = 7.0


def apply() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette=_PALETTE, font_scale=1.0)
    plt.rcParams.update({"figure.dpi": 150, "savefig.dpi": 300, "savefig.bbox": "tight", "legend.fontsize": 7})
    plt.rcParams["svg.hashsalt"] = "gcbench"  # fixed element ids: the same figure gives the same SVG bytes


def scheme_colour(scheme: str):
    """The scheme's colour: its curated one, else one of the uncurated palette's (never a curated colour)."""
    return _COLOURS[_colour_index(scheme)]


def _colour_index(scheme: str) -> int:
    scheme = SHARED_COLOUR.get(scheme, scheme)
    if scheme in SCHEMES:
        return SCHEMES.index(scheme)
    # crc32, not hash(): str hashes change between processes, colours must not
    return len(_PALETTE) + zlib.crc32(scheme.encode()) % len(_UNCURATED_PALETTE)


def policy_style(policy: str):
    return POLICY_STYLES.get(policy, "-")


MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_EXTRA_DASHES = ((0, (5, 2)), (0, (2, 2)), (0, (6, 2, 2, 2)), (0, (1, 2)))


def variant_styles(iterations) -> dict[str, dict]:
    """Colour from the variant's scheme; dash from its policy; marker (and dash) tell apart the variants of one
    colour (one scheme's, or schemes sharing a colour)."""
    styles, seen = {}, {}
    for row in iterations[["variant", "scheme", "policy"]].drop_duplicates("variant").itertuples():
        colour = _colour_index(row.scheme)
        rank = seen.get(colour, 0)
        seen[colour] = rank + 1
        dash = policy_style(row.policy) if rank == 0 else _EXTRA_DASHES[(rank - 1) % len(_EXTRA_DASHES)]
        styles[row.variant] = {
            "color": scheme_colour(row.scheme),
            "linestyle": dash,
            "marker": MARKERS[rank % 7],
            "label": legend_label(row.variant, row.scheme, row.policy),
        }
    if {"exact", "staleness", "stop", "point"} <= set(iterations.columns):
        mark_kinds(styles, variant_kinds(iterations))
    return styles


# An approximate variant's marker is an x, a stale one's a +: shapes no exact variant uses (hollow circles are
# curves drawn on an identical one: gcbench/plot/overlap.py), and its legend entry says which it is, so a fast
# curve is never read as an exact one.
KIND_MARKERS = {"approximate": "x", "stale": "+"}


def mark_kinds(styles: dict[str, dict], kinds: dict[str, str]) -> None:
    """Mark the approximate and stale variants' styles in place (``kinds``: gcbench.results.summary.variant_kinds)."""
    for variant, kind in kinds.items():
        if kind in KIND_MARKERS and variant in styles:
            styles[variant]["marker"] = KIND_MARKERS[kind]
            styles[variant]["markeredgewidth"] = 1.2
            styles[variant]["label"] = f"{styles[variant]['label']} [{kind}]"


# For uncoded training, waiting for all is the same rule as the default policy (it decodes from every message
# only), so neither is worth a word in a legend.
SAME_AS_DEFAULT = {"uncoded": ("wait_all",)}


def legend_label(variant: str, scheme: str, policy: str) -> str:
    """The variant's label, plus its scheme and a non-default policy where the label does not already name them."""
    squashed = variant.lower().replace("-", "").replace("_", "").replace(" ", "")
    named = [scheme] if policy == DEFAULT_POLICY or policy in SAME_AS_DEFAULT.get(scheme, ()) else [scheme, policy]
    missing = [name for name in named if name.replace("_", "") not in squashed]
    return f"{variant} · {' / '.join(missing)}" if missing else variant
