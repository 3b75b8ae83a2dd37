"""Why an iteration ended: the one vocabulary of stop reasons.

A synchronous policy names one when its master stops waiting (``stop_now``, and per row in its vectorised
``stop_times``); the asynchronous master gives ``K_RESULTS`` to every update. The results tables' ``stop``
column holds these strings as they are, and summaries and figures read them back, so each value is part of
the results files' format. A leaf like gcbench.errors: policies, masters, results and plots all import it.
"""

ALL_ARRIVED = "all_arrived"  # every message of the iteration arrived
DECODABLE = "decodable"  # the messages received decode
FASTEST_K = "fastest_k"  # the k-th message arrived
DEADLINE = "deadline"  # the deadline came, and what arrived by then decodes
FALLBACK_WAIT = "fallback_wait"  # past the deadline, the master waited until what arrived decoded
FALLBACK_APPROXIMATE = "fallback_approximate"  # what arrived does not decode: decoded approximately
K_RESULTS = "k_results"  # an asynchronous update: k results in

SYNCHRONOUS = (ALL_ARRIVED, DECODABLE, FASTEST_K, DEADLINE, FALLBACK_WAIT, FALLBACK_APPROXIMATE)
ASYNCHRONOUS = (K_RESULTS,)
ALL = SYNCHRONOUS + ASYNCHRONOUS
