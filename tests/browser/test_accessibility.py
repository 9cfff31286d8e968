"""Tier 3 (browser): axe-core over every page, in normal and presenter mode: no serious or critical
finding. axe-playwright-python bundles axe.min.js, so the check runs offline."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

BLOCKING = ("serious", "critical")


def findings(app) -> list[str]:
    """Every serious or critical axe finding on the page as it is now, one line each."""
    results = Axe().run(app.page)
    lines = []
    for violation in results.response["violations"]:
        if violation["impact"] not in BLOCKING:
            continue
        for node in violation["nodes"]:
            lines.append(f"{violation['impact']} {violation['id']}: {node['target']} · "
                         f"{node.get('failureSummary', '').splitlines()[-1:]}")
    return lines


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_no_serious_accessibility_findings(app, registered_page, presenter):
    """axe-core finds nothing serious or critical on the page (colour contrast, names, labels)."""
    if presenter:
        app.open(registered_page.url_path, present="1")
    else:
        app.open(registered_page.url_path)
    app.assert_no_exception()
    found = findings(app)
    assert not found, f"{len(found)} serious or critical findings:\n" + "\n".join(found[:25])
