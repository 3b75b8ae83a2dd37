"""The coding library: every scheme is a linear code over partition gradients.

Public API::

    available_schemes()                       -> registered names
    make_scheme(name, n=..., s=..., **params) -> a Scheme
    scheme.encode(worker, partition_grads)    -> that worker's messages
    scheme.decode(received)                   -> the full gradient
"""

from gcbench.coding._base import CONDITION_LIMIT, Scheme
from gcbench.coding._builtin import BUILTIN_SCHEMES
from gcbench.coding._conditioning import ConditionReport
from gcbench.coding._errors import NotDecodable, SchemeParameterError, is_integer, is_real, plain
from gcbench.coding._linear import Decoding
from gcbench.coding._registry import available_schemes, make_scheme, register_scheme, scheme_class

__all__ = [
    "BUILTIN_SCHEMES",
    "CONDITION_LIMIT",
    "ConditionReport",
    "Decoding",
    "NotDecodable",
    "Scheme",
    "SchemeParameterError",
    "available_schemes",
    "is_integer",
    "is_real",
    "make_scheme",
    "plain",
    "register_scheme",
    "scheme_class",
]
