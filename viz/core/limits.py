"""Every limit on what a visitor can send, in one place: the scenario loader, the rule compiler,
share links, the CLI and the tests all name these numbers.

:mod:`viz.core.engine.scenario` re-exports them (``from viz.core.engine.scenario import MAX_TOKENS`` keeps working);
they live here so that :mod:`viz.core.rules.language` can use them without importing the scenario.
"""

from __future__ import annotations

MAX_TOKENS = 512  # prompt tokens
MAX_TOKEN_CHARS = 40  # characters in one token or vocabulary word
MAX_HEADS = 16
MAX_VOCAB = 64
MAX_NAME_CHARS = 40
MAX_PROMPT_CHARS = 20_000
MAX_TEXT_CHARS = 2_000  # description
MAX_TITLE_CHARS = 3 * MAX_NAME_CHARS
MAX_D_K = 1024
MAX_ABS_NUMBER = 1e6  # token values, vocabulary values and weights
MAX_TEMPERATURE = 100.0
MAX_JSON_BYTES = 100_000
MAX_DECODE_STEPS = 256  # predictions per run
MAX_SEED = 2**63 - 1

# The rule language (see viz.core.rules.language).
MAX_RULE_CHARS = 400  # longer texts are refused before parsing
MAX_RULE_NODES = 200  # syntax-tree nodes after parsing
MAX_RULE_DEPTH = 24  # nesting depth of the syntax tree
MAX_LITERAL_CHARS = 100  # length of one string literal
MAX_INT_LITERAL = 10**15  # whole-number literals
# The largest position (and n) a rule is ever evaluated at. The app stops at MAX_TOKENS +
# MAX_DECODE_STEPS = 768, the benchmark at 16,384; the rule compiler proves whole-number arithmetic
# cannot leave 64 bits for every position up to this bound.
MAX_POSITION = 2**16
INT64_MAX = 2**63 - 1

assert MAX_TOKENS + MAX_DECODE_STEPS <= MAX_POSITION
