"""The pages app.py registers, read from its source: what ``registered_page`` and ``app_pages`` give."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from streamlit.source_util import page_icon_and_name

from viz.tools.server import ROOT


@dataclass(frozen=True)
class RegisteredPage:
    """One ``st.Page`` from app.py, as a visitor reaches it."""

    title: str  # shown in the sidebar navigation
    script: str  # e.g. "pages/decode.py"
    url_path: str  # "/" for the default page, else "/decode"
    editors: bool = True  # the sidebar shows the scenario editors (app.py's EDITOR_PAGES)

    @property
    def name(self) -> str:
        """A file-name-safe id: the script's stem ("decode")."""
        return Path(self.script).stem


def registered_pages(app_file: Path = ROOT / "app.py") -> list[RegisteredPage]:
    """Every ``st.Page("pages/….py", …)`` call in app.py, read with ``ast`` (app.py is not run)."""
    pages = []
    tree = ast.parse(app_file.read_text(encoding="utf-8"))
    editor_pages: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "EDITOR_PAGES" for t in node.targets):
            editor_pages = set(ast.literal_eval(node.value))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Page"):
            continue
        try:
            script = ast.literal_eval(node.args[0])
            options = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        except (IndexError, ValueError) as err:
            raise ValueError(f"app.py line {node.lineno}: st.Page needs literal arguments here") from err
        _, inferred = page_icon_and_name(Path(script))  # Streamlit's own name-from-file rule
        title = options.get("title") or inferred.replace("_", " ")
        if options.get("default"):
            url_path = "/"
        else:
            url_path = "/" + (options.get("url_path") or inferred).strip("/")
        pages.append(RegisteredPage(title, script, url_path, url_path.strip("/") in editor_pages))
    if not pages:
        raise ValueError("app.py registers no st.Page")
    return pages
