"""Offline evaluations of the agent's model turns (BFCL)."""
