"""Tool search: the backend seam and the default BM25 backend."""

from toolscout.search.base import SearchBackend, SearchHit
from toolscout.search.bm25 import BM25Backend

__all__ = ["BM25Backend", "SearchBackend", "SearchHit"]
