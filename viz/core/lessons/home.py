"""Everything the Home page shows, in one typed result (its words are in :mod:`words_home`)."""

from __future__ import annotations

from dataclasses import dataclass

from . import words_home as words


@dataclass(frozen=True)
class HomeView:
    """The Home page's text: its title, its one sentence, the introduction, the three cards and the closing
    line."""

    title: str
    name: str  # the page's name, shorter than its title: presenter mode's first line opens with it
    lead: str  # what the page teaches, in one sentence (presenter mode's first line)
    intro: str
    tour: str
    present: str
    explore: str
    pages: str


def home_view(article_link: str) -> HomeView:
    """The Home page for the article at ``article_link`` (a Markdown link, the app's own text)."""
    return HomeView(title=words.TITLE, name=words.NAME, lead=words.LEAD, intro=words.INTRO.format(article=article_link),
                    tour=words.TOUR, present=words.PRESENT, explore=words.EXPLORE, pages=words.PAGES)
