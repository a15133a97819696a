"""`smart` mode's parts below the gateway (spec 004, issue 23): selection.py (each method's score,
their combination, the LLM's pick), extraction.py + spans.py (arguments from plain words without an
LLM), llm.py (the LLM seam), llm_mapping.py (arguments from the LLM, validated and repaired once),
sampling.py (the client's model as the LLM), cache.py and memory.py (caches, learning).

Nothing is imported here: the extractor needs `search.text` (and so numpy), which the face loads
only when smart mode is used."""
