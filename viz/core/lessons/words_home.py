"""The Home page's words: what kvlab is, its three ways in and the pages in lesson order.

Data only (no torch). Fixed text, no visitor text: the page shows it as Markdown as it stands.
"""

from __future__ import annotations

TITLE = "kvlab: from prompt to prediction"
NAME = "kvlab"  # presenter mode's first line opens with it in bold (the title is the screen readers' h1)
# the one sentence of what the page teaches: presenter mode's first line (after NAME), one line beside
# the sidebar's hint at 1280 px
LEAD = ("How a language model reads a prompt in one pass, adds one word at a time, and why the KV cache "
        "makes that cheap.")

# the two paragraphs are one element (a first view pays for each); the article's link goes in {article}
INTRO = ("How does a language model turn a prompt into its next word, and why does it keep a **KV "
         "cache**? kvlab runs a tiny transformer you can read cell by cell: the parallel **prefill** "
         "pass over the prompt, the token-by-token **decode** loop, and the cache that saves decode from "
         "computing every key and value again. Every number on screen is computed live by PyTorch.\n\n"
         "It follows the worked example of the article {article}: the same four-token prompt, "
         "four hand-written attention heads and the same numbers, so you can check each one.")

# each card's heading is part of its text (one element per card)
TOUR = ("### Take the tour\n\n"
        "Eight short steps through the article's example, then an optional epilogue of two about "
        "servers. Most steps ask you to predict a number or a word before they show it; your score is at "
        "the end. "
        "About 15 minutes.")
PRESENT = ("### Present in class\n\n"
           "Large type for a projector, editors folded away, ← and → to step. Show decode step by "
           "step, or run the tour as a class vote: question, vote, Reveal.")
EXPLORE = ("### Explore\n\n"
           "Change the prompt, the heads' rules and the vocabulary in the sidebar (» at the top left opens "
           "it on a phone or a projector) and watch prefill, "
           "decode, the cache's cost and memory respond. Share the view with its link.")

PAGES = ("The pages, in lesson order: the guided tour; Prefill and Decode, the two phases; Cost, Memory and "
         "At scale, what the cache costs and saves; Real model and Serving, the same ideas in a real model "
         "and a server. The example and its numbers are the article's; kvlab's text and code are its own.")
