"""The toy engine: scenarios, the one-layer transformer, its caches, sampling, share links and the work budget.

Imports the rule language and the core's shared helpers (``text``, ``limits``, ``device``, ``timing``);
never serving, scale, lessons or the real model.
"""
