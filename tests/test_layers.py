"""The floor plan holds: import-linter's contracts (pyproject.toml) and the page scripts' imports."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def test_import_contracts_are_kept():
    """Layers core → figures → ui, no Streamlit/Plotly/pandas in the core, no cycles, the core's domains
    (engine, rules, serving, scale, lessons, real) import only what their contracts allow: lint-imports passes."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache", str(ROOT / "pyproject.toml")],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_app_and_pages_never_import_the_developer_tools():
    """app.py and pages/*.py use the core, figures and the Streamlit layer, never viz.tools."""
    offenders = {path.name: sorted(m for m in _imports(path) if m == "viz.tools" or m.startswith("viz.tools."))
                 for path in SCRIPTS}
    assert SCRIPTS and not any(offenders.values()), offenders


def test_pages_do_no_tensor_math():
    """Pages render only: they import neither torch nor numpy (numbers come from the core)."""
    offenders = {path.name: sorted(m for m in _imports(path) if m.split(".")[0] in ("torch", "numpy"))
                 for path in SCRIPTS if path.parent.name == "pages"}
    assert not any(offenders.values()), offenders


RUNTIME = [*SCRIPTS, *sorted(p for p in (ROOT / "viz").rglob("*.py") if "tools" not in p.relative_to(ROOT).parts)]


def _streamlit_submodules(path: Path) -> list[str]:
    """The Streamlit modules below the package that ``path`` imports (``streamlit.errors``, ...)."""
    return sorted(m for m in _imports(path) if m.startswith("streamlit."))


def test_the_submodule_check_finds_an_import_below_the_package(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("import streamlit as st\nfrom streamlit.errors import StreamlitAPIException\n"
                      "import streamlit.runtime.scriptrunner\n")
    assert _streamlit_submodules(script) == ["streamlit.errors", "streamlit.runtime.scriptrunner"]


def test_the_app_imports_only_streamlits_documented_package():
    """The runtime (app.py, pages/, viz/ but its developer tools) imports ``streamlit`` itself and
    nothing below it (streamlit.runtime, streamlit.web, streamlit.errors, ...): every call goes
    through ``st.*`` as Streamlit's API reference documents it (issue 30)."""
    assert len(RUNTIME) > 50
    offenders = {str(path.relative_to(ROOT)): _streamlit_submodules(path) for path in RUNTIME}
    assert not any(offenders.values()), {k: v for k, v in offenders.items() if v}


# -- pages only lay results out: no arithmetic over them ------------------------------------------
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
DISPLAYS = (ast.Tuple, ast.List, ast.ListComp, ast.Set, ast.Dict)  # `a + (b,)` joins containers

def _literal(node: ast.AST) -> bool:
    """A number or text written in the page (`1`, `-1`, `2 ** 10`): counting off by one is layout."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    return isinstance(node, ast.BinOp) and _literal(node.left) and _literal(node.right)


def _text(node: ast.AST) -> bool:
    """Text being joined: an f-string, a string literal, or a sum with one of them in it."""
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return True
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and (_text(node.left) or _text(node.right))


def arithmetic(source: str) -> list[str]:
    """Every `+ - * / // % **` in `source` whose two operands are both computed values (`a.x - b.y`),
    leaving out literals (`i + 1`), joined text and joined containers."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, ARITHMETIC):
            continue
        operands = (node.left, node.right)
        if any(_literal(o) or isinstance(o, DISPLAYS) for o in operands):
            continue
        if isinstance(node.op, ast.Add) and any(_text(o) for o in operands):
            continue
        found.append(ast.unparse(node))
    return found


def test_the_arithmetic_check_finds_arithmetic_over_results():
    """The check flags `a.x - b.y` and `f(a) / b` and leaves layout alone: `i + 1`, text and tuples joined."""
    source = ("d = run.a.x - other.b.y\nr = f(a) / b\ni = position - 1\nt = f'{a}' + (f'{b}' if c else '')\n"
              "h = rules + (x,)\nk = 2 ** 10\n")
    assert arithmetic(source) == ["run.a.x - other.b.y", "f(a) / b"]


def test_pages_do_no_arithmetic_over_results():
    """No page computes with results (`a.x - b.y`): every delta, ratio and index is a field of a core
    view, and pure layout arithmetic is a named helper of the Streamlit layer (viz.ui.widgets.grid)."""
    found = sorted((path.name, expr) for path in SCRIPTS if path.parent.name == "pages"
                   for expr in arithmetic(path.read_text()))
    assert not found, f"arithmetic in pages (compute it in the core): {found}"


def core_views(source: str) -> set[str]:
    """The core views a page script calls: functions named ``*_view`` imported from ``viz.core``."""
    tree = ast.parse(source)
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("viz.core") for alias in node.names if alias.name.endswith("_view")}
    return {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id in imported}


def test_the_view_check_finds_only_core_views_that_are_called():
    source = ("from viz.core.lessons.decode import decode_view\nfrom viz.ui.other import page_view\n"
              "from viz.core.scale.view import scale_view\nv = decode_view(1)\npage_view()\n")
    assert core_views(source) == {"decode_view"}


def test_every_page_lays_out_a_view_born_in_the_core():
    """Each page calls its core view (one function returning one typed object of every number and sentence
    it shows; one per tab or section where only the open one is computed): docs/design.md, "A view per page"."""
    pages = sorted((ROOT / "pages").glob("*.py"))
    missing = [path.name for path in pages if not core_views(path.read_text(encoding="utf-8"))]
    assert pages and not missing, f"pages that call no core view: {missing}"


# -- figures draw; the core's words modules write the sentences ------------------------------------
FIGURES = sorted((ROOT / "viz" / "figures").glob("*.py"))
PHRASE_WORDS = 20  # the longest title today is 18 words ("Q and K for head '…': Q·K = +d_k where …")
# a sentence's end: a letter and a stop, or a closing bracket, quote or placeholder and a full stop (not
# one opening the text: "{}. option" letters a list), then a space or the end; "0." and "%{y:.4g}" are not
SENTENCE_END = re.compile(r"[^\W\d_][.!?](\s|$)|(?<=.)(\{\}|[)\]'’\"])\.(\s|$)")
MARKDOWN = ("**", "`")  # plotly draws <b>; Markdown is for st.markdown, which shows the core's words


def texts(source: str) -> list[str]:
    """Every string literal and f-string in ``source`` but docstrings, an f-string's placeholders as ``{}``
    (one word) and implicitly joined pieces as one text, as Python parses them."""
    tree = ast.parse(source)
    docstrings, inner = set(), set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            docstrings.add(id(body[0].value))
        if isinstance(node, ast.JoinedStr):  # its pieces and format specs belong to it
            inner |= {id(sub) for sub in ast.walk(node) if sub is not node}
    nodes = sorted((node for node in ast.walk(tree) if id(node) not in docstrings | inner and (
        isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)))),
        key=lambda node: (node.lineno, node.col_offset))  # in the order they are written
    return ["".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            if isinstance(node, ast.JoinedStr) else node.value for node in nodes]


def prose(text: str) -> bool:
    """Text that is a page's prose rather than a figure's phrase: Markdown, a finished sentence, or long."""
    return any(mark in text for mark in MARKDOWN) or bool(SENTENCE_END.search(text)) or len(text.split()) > PHRASE_WORDS


def test_the_prose_check_tells_sentences_from_titles_labels_and_hover_text():
    """Sentences the figures once wrote are caught; a figure's title, axis label, legend and hover line are not."""
    source = ('def reading(s):\n    """A docstring. It may say anything."""\n'
              '    return [f"**Where the cache wins.** At n = {s.n}, one step took {s.r}.",\n'
              '            f"The toy\'s whole cache, {s.t} tokens, takes {s.b}. One token takes {s.c}: {s.x} times as much.",\n'
              '            f"; the {s.c} chunked layers attend within chunks of {s.w} tokens and are counted as transformers "\n'
              '            "keeps them, the last {s.w} (vLLM frees the blocks before the chunk\'s start, so it holds fewer)",\n'
              '            "`DynamicCache(config=...)` built", f"at most {s.a} sequences fit"]\n'
              'TITLE = f"Q and K for head {h}: Q·K = +d_k where the rule holds, −d_k where it does not"\n'
              'HOVER = "batch %{x}: %{y:,.0f} tokens/s, %{customdata}-bound<extra></extra>"\n'
              'LABELS = ["multiply-adds per token", f"{i}. {option}: {n} votes", "[0.,]*0[0.,]*", "0."]\n'
              'SHORT = [f"The step took {t}.", "Keys (every cached one).", f"Next: \'{w}\'. Then more", r"(?:\\s.*)?",\n'
              '         "%{y:.4g} at %{x}", f"{a}.{b}"]\n')
    found = texts(source)
    assert len(found) == 17 and not any(t.startswith("A docstring") for t in found)
    assert found[2].endswith("so it holds fewer)") and found[4] == "at most {} sequences fit"  # pieces joined
    # short sentences ending on a placeholder, a bracket or a quote are sentences too; a regex, a hover are not
    assert [t for t in found if prose(t)] == found[:4] + found[11:14]


def test_figure_modules_write_no_sentences():
    """viz/figures draws: its texts are titles, axis labels, legends and hover lines, never a sentence
    (docs/design.md, "A view per page"). A reading of a plot is the page's words module's (in viz.core),
    carried by the page's view: no text a figure module writes holds Markdown, ends a sentence or runs
    past PHRASE_WORDS words."""
    written = {path.name: texts(path.read_text(encoding="utf-8")) for path in FIGURES}
    assert len(written) >= 10 and sum(map(len, written.values())) > 300  # it read every figure module's texts
    found = sorted((name, text) for name, found in written.items() for text in found if prose(text))
    assert not found, f"sentences in viz/figures (write them in the page's words module in viz.core): {found}"


# -- session keys: each spelled out once -----------------------------------------------------------
KEY = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9{}]+)+")  # a session-state key or its format: serving_step_{}
KEEPERS = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "viz" / "ui").glob("*.py"))]


def session_keys(source: str) -> list[str]:
    """The keys a module declares: its top-level constants `NAME = "some_key"` (tuples of them too)."""
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = (zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple)
                     and isinstance(node.value, ast.Tuple) else [(target, node.value)])
            found += [value.value for name, value in pairs if isinstance(name, ast.Name) and name.id.isupper()
                      and isinstance(value, ast.Constant) and isinstance(value.value, str)
                      and KEY.fullmatch(value.value)]
    return found


def test_the_key_check_reads_constants_and_leaves_other_text_alone():
    """`A = "page_key"` and `B, C = "b_key", "c_key"` are keys; a label, a plain word or a local are not."""
    source = ('A = "page_key"\nB, C = "b_key", "c_{}_key"\nLABEL = "Two words"\nKEEP = "page"\n'
              'def f():\n    D = "local_key"\n')
    assert session_keys(source) == ["page_key", "b_key", "c_{}_key"]


def test_each_session_key_is_spelled_out_in_one_module():
    """A page declares its keys once, at its top; a key two modules need lives in viz/ui/state.py."""
    where: dict[str, list[str]] = {}
    for path in KEEPERS:
        for key in session_keys(path.read_text()):
            where.setdefault(key, []).append(path.name)
    assert len(where) > 100  # every page's and module's keys were read
    twice = {key: files for key, files in where.items() if len(files) > 1}
    assert not twice, f"keys spelled out in more than one module (declare them in viz/ui/state.py): {twice}"


# -- sizes a newcomer can read: modules under about 500 lines, functions under about 60 ------------
MODULE_LINES, FUNCTION_LINES = 550, 66  # "about": the 500 and 60, with a tenth to spare
CODE = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "viz").rglob("*.py"))]


def long_functions(source: str, limit: int = FUNCTION_LINES) -> list[str]:
    """Every function or method in ``source`` longer than ``limit`` lines, with its length."""
    return [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > limit]


def test_the_size_check_measures_functions_from_def_to_last_line():
    """A three-line function is three lines long: over a limit of 2, within a limit of 3."""
    source = "def f(x):\n    y = x\n    return y\n"
    assert long_functions(source, 2) == ["f (3 lines)"] and long_functions(source, 3) == []


def test_modules_and_functions_stay_a_readable_size():
    """No module of the app, the library or the tools over about 500 lines, no function over about 60."""
    assert len(CODE) > 50
    modules = {p.relative_to(ROOT).as_posix(): n for p in CODE if (n := len(p.read_text().splitlines())) > MODULE_LINES}
    functions = {p.relative_to(ROOT).as_posix(): found for p in CODE if (found := long_functions(p.read_text()))}
    assert not modules, f"modules over {MODULE_LINES} lines (split them along a seam): {modules}"
    assert not functions, f"functions over {FUNCTION_LINES} lines (extract named helpers): {functions}"
