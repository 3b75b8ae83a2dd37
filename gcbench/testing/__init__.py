"""The conformance suite every registered scheme passes (like scikit-learn's estimator checks)."""

from gcbench.testing.scheme_checks import (
    check_approximate_residual,
    check_declared_structure,
    check_decode_exact,
    check_decode_times,
    check_deterministic,
    check_float32_within_bound,
    check_structural_matches_rank,
    check_torch_matches_numpy,
    check_unrecoverable_is_refused,
    partition_gradients,
)
from gcbench.testing.scheme_params import HYPOTHESIS_MAX_N, valid_parameter_sets

__all__ = [
    "HYPOTHESIS_MAX_N",
    "check_approximate_residual",
    "check_declared_structure",
    "check_decode_exact",
    "check_decode_times",
    "check_deterministic",
    "check_float32_within_bound",
    "check_structural_matches_rank",
    "check_torch_matches_numpy",
    "check_unrecoverable_is_refused",
    "partition_gradients",
    "valid_parameter_sets",
]
