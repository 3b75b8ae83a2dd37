"""The simulator: the one master (gcbench/master) on the SimPy cluster (cluster.py) is its event engine, for
every policy, training in it when the scenario asks (training.py); the vectorised synchronous engine
(synchronous.py) is the fast path, held equal to it by tests/test_event_engine.py."""
