"""Figures and reports from results directories (reads results files only, never an engine)."""
