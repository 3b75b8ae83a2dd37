"""The schemes gcbench ships, registered in the order `gcbench schemes` lists them."""

from gcbench.coding._registry import register_scheme
from gcbench.coding.bcc import BatchedCouponCollector
from gcbench.coding.bgc import BernoulliGradientCode
from gcbench.coding.cce import CCECyclic, CCEFractional
from gcbench.coding.cyclic_mds import CyclicMDS
from gcbench.coding.cyclic_repetition import CyclicRepetition
from gcbench.coding.expander import ExpanderCode
from gcbench.coding.fractional_repetition import FractionalRepetition
from gcbench.coding.frc import ApproximateFractionalRepetition
from gcbench.coding.heterogeneous import HeterogeneousRepetition
from gcbench.coding.ignore_stragglers import IgnoreStragglers
from gcbench.coding.is_gc import IgnoreStragglerGC
from gcbench.coding.multiplexed import MultiplexedSGC
from gcbench.coding.partial import ChunkedCyclicRepetition, PartialCyclicRepetition
from gcbench.coding.pipelined import PipelinedCyclicRepetition, PipelinedFractionalRepetition
from gcbench.coding.sequential import SelectiveRepeatSGC
from gcbench.coding.sgc import StochasticGradientCoding
from gcbench.coding.uncoded import Uncoded

BUILTIN_SCHEMES = (
    Uncoded,
    IgnoreStragglers,
    FractionalRepetition,
    CyclicRepetition,
    CyclicMDS,
    CCECyclic,
    CCEFractional,
    IgnoreStragglerGC,
    ApproximateFractionalRepetition,
    BernoulliGradientCode,
    ExpanderCode,
    StochasticGradientCoding,
    BatchedCouponCollector,
    HeterogeneousRepetition,
    PipelinedCyclicRepetition,
    PipelinedFractionalRepetition,
    PartialCyclicRepetition,
    ChunkedCyclicRepetition,
    SelectiveRepeatSGC,
    MultiplexedSGC,
)

for _cls in BUILTIN_SCHEMES:
    register_scheme(_cls)
