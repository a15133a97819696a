"""`smart` mode: plain words to the right tool, its arguments and the result (spec 004, issue 23)."""

from toolscout.smart.extraction import Evidence, Extraction, extract_arguments

__all__ = ["Evidence", "Extraction", "extract_arguments"]
