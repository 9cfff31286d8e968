"""Class mode's drawings: the join link as a QR code (segno, drawn here, nothing fetched) and the
vote counts as the projector shows them (counts only: nothing marks the right answer)."""

from __future__ import annotations

import io

import segno

from ..core.classroom import Tally

LETTERS = "ABCDEFGH"


def join_qr_png(url: str, scale: int = 8) -> bytes:
    """A PNG of the QR code for ``url`` (error correction M: a projector's glare and a phone's
    angle still read it), with the quiet zone the standard asks for."""
    out = io.BytesIO()
    segno.make(url, error="m", micro=False).save(out, kind="png", scale=scale, border=4)
    return out.getvalue()


def tally_lines(options: tuple[str, ...], tally: Tally) -> list[tuple[str, float]]:
    """One (label, share of the votes) per option, lettered as the projector letters them."""
    total = tally.total or 1
    return [(f"{LETTERS[i]}. {option}: {count} vote{'s' if count != 1 else ''}", count / total)
            for i, (option, count) in enumerate(zip(options, tally.counts))]
