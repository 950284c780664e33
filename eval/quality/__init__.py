"""What the answers are worth on data other than the replay's: conversations (LoCoMo),
MemoryArena, past fixes in git histories, staleness flags and the experience cards themselves.
"""
