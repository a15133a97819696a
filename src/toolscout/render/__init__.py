"""Presentation for the model: result text (render), listings (TOON or compact JSON), call
signatures, schema summaries, and token counts. Imports nothing of the gateway or the face.
"""
