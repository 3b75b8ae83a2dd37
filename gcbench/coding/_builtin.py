"""The schemes gcbench ships, registered in the order `gcbench schemes` lists them."""

from gcbench.coding._registry import register_scheme
from gcbench.coding.cce import CCECyclic, CCEFractional
from gcbench.coding.cyclic_mds import CyclicMDS
from gcbench.coding.cyclic_repetition import CyclicRepetition
from gcbench.coding.fractional_repetition import FractionalRepetition
from gcbench.coding.ignore_stragglers import IgnoreStragglers
from gcbench.coding.uncoded import Uncoded

BUILTIN_SCHEMES = (
    Uncoded,
    IgnoreStragglers,
    FractionalRepetition,
    CyclicRepetition,
    CyclicMDS,
    CCECyclic,
    CCEFractional,
)

for _cls in BUILTIN_SCHEMES:
    register_scheme(_cls)
