"""The bridge from real to simulated: decompose a real run's tables into what the simulator models, fit each part,
write the calibrated scenario, and judge it (replay, fitted, held-out prediction). docs/calibration.md."""
