"""How well and how fast the agent does: the task suite and its split, BFCL, and `bench`."""
