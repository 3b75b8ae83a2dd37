"""The coding library: every scheme is a linear code over partition gradients.

Public API::

    available_schemes()                       -> registered names
    make_scheme(name, n=..., s=..., **params) -> a Scheme
    scheme.encode(worker, partition_grads)    -> that worker's messages
    scheme.decode(received)                   -> the full gradient

For writing a scheme (a ``Scheme`` subclass returning a ``Layout``) and checking
one: ``register_scheme`` / ``unregister_scheme``, ``least_squares_weights``,
``EXACT_RTOL`` (what "exact" means), ``RANK_RTOL`` (the singular values a decode
keeps) and ``kth_smallest`` (order statistics of arrivals).
"""

from gcbench.coding._amplification import AmplificationReport
from gcbench.coding._base import CONDITION_LIMIT, Layout, Scheme, kth_smallest
from gcbench.coding._builtin import BUILTIN_SCHEMES
from gcbench.coding._conditioning import ConditionReport
from gcbench.coding._errors import NotDecodable, SchemeParameterError, is_integer, is_real, plain
from gcbench.coding._linear import EXACT_RTOL, RANK_RTOL, Decoding, least_squares_weights
from gcbench.coding._registry import available_schemes, make_scheme, register_scheme, scheme_class, unregister_scheme

__all__ = [
    "BUILTIN_SCHEMES",
    "CONDITION_LIMIT",
    "EXACT_RTOL",
    "RANK_RTOL",
    "AmplificationReport",
    "ConditionReport",
    "Decoding",
    "Layout",
    "NotDecodable",
    "Scheme",
    "SchemeParameterError",
    "available_schemes",
    "is_integer",
    "is_real",
    "kth_smallest",
    "least_squares_weights",
    "make_scheme",
    "plain",
    "register_scheme",
    "scheme_class",
    "unregister_scheme",
]
