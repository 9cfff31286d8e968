"""The rule language: a head's attention rule, parsed, type-checked, bounded and compiled to torch.

Imports only the core's shared helpers; the engine compiles rules, never the other way round.
"""
