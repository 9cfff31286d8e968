"""Serving many requests on the toy engine: paged blocks, prefix caching, scheduling, speculative
decoding, FlashAttention tiles and smaller caches (eviction, quantisation).
"""
