"""Smart mode's parts below the gateway: choosing a tool, reading its arguments, asking an LLM.

selection.py scores each method and combines them, with the LLM's pick; extraction.py reads
arguments from plain words without an LLM; llm.py is the LLM seam, its two sources (an
OpenAI-compatible endpoint, the client's model through sampling) and the arguments mapped by it;
memory.py keeps what smart mode learnt and its caches; confirmation.py signs and redeems the ids that
confirm a destructive call.

Nothing is imported here: the extractor needs `search.text` (and so numpy), which the face loads
only when smart mode is used.
"""
