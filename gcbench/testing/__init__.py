"""The conformance suites every registered scheme and every registered cluster pass (like scikit-learn's
estimator checks).

Each scheme declares its own test parameters (``valid_parameter_sets``,
``hypothesis_max_n``); the suite reads them from the registry. Cluster backends
have theirs in one table (``cluster_parameters.py``), with their known
exceptions; the cluster checks (``gcbench.testing.cluster_checks``, imported on their own: they
bring in the master) use the protocol only.
"""

from gcbench.testing.scheme_checks import (
    check_approximate_residual,
    check_declared_structure,
    check_decode_exact,
    check_decode_times,
    check_deterministic,
    check_device_decode_matches_cpu,
    check_float32_within_bound,
    check_reported_variance,
    check_structural_matches_rank,
    check_torch_matches_numpy,
    check_unbiased,
    check_unrecoverable_is_refused,
    encode_all,
    partition_gradients,
    valid_parameter_sets,
)

__all__ = [
    "check_approximate_residual",
    "check_declared_structure",
    "check_decode_exact",
    "check_device_decode_matches_cpu",
    "check_decode_times",
    "check_deterministic",
    "check_float32_within_bound",
    "check_structural_matches_rank",
    "check_reported_variance",
    "check_torch_matches_numpy",
    "check_unbiased",
    "check_unrecoverable_is_refused",
    "encode_all",
    "partition_gradients",
    "valid_parameter_sets",
]
