"""Real mode: the scenario's schemes and policies training a network on Ray (or one process)."""
