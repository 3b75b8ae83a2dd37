"""The bridge from real to simulated, and what it answers: decompose a real run's tables into what the simulator
models, fit each part and write the calibrated scenario, judged per variant (calibrate, decompose, fit, evaluate,
verdict; docs/calibration.md); who slowed a run and what it cost (attribution; docs/attribution.md); and which
scheme, s and policy for a cluster, with its advice (candidates, recommend, advice; docs/recommend.md)."""
