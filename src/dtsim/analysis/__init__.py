"""Analyses built on the batch path: sweeps (and, later, uncertainty and validation)."""
