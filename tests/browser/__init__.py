"""Tier 3: browser tests against the real app (see conftest.py for how to write one).

A package, so a browser test may share its file name with a tier-1/2 test (`test_hostile.py`).
"""
