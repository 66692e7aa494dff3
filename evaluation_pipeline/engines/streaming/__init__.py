"""The streaming engine: a sorted run read block by block, memory bounded by a block."""
