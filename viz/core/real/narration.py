"""What the Real model's decode step shows, in one or two sentences (the narration above its figures,
as Decode narrates the toy's steps)."""

from __future__ import annotations

from .loading import piece
from .model import DecodeSession


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def narrate_session(session: DecodeSession) -> str:
    """The step the session is at: what the last step fed in, what the cache holds now and what it
    grew by, and the most likely next token. Plain text (pieces are shown with ␣ and ↵)."""
    real = session.real
    layers = real.shape.layers
    tokens, nbytes, _ = session.history[-1]
    top_id, top_p = session.prediction.top_k(1)[0]
    next_word = f"Most likely next: '{piece(real, top_id)}' (p = {top_p:.2f})."
    if not session.generated:
        return (f"After the prefill: one pass over the prompt's {_plural(tokens, 'token')} filled the cache of "
                f"each of the {layers} layers ({nbytes:,} bytes in all). A step feeds only the newest token. "
                + next_word)
    step = len(session.generated)
    before_bytes = session.history[-2][1]
    picked = piece(real, session.generated[-1])
    return (f"Step {step}: the model picked '{picked}' and fed only that one token; each of its {layers} layers "
            f"appended its key and value to the cache, which now covers {_plural(tokens, 'token')} in "
            f"{nbytes:,} bytes ({nbytes - before_bytes:+,} since the step before). " + next_word)
