"""How well and how fast the agent does: the task suite and its split, peer agents on it, BFCL, and
`bench`."""
