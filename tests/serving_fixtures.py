"""A fixture the Serving tests share: import ``one_thread`` into a test module to use it there."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread, as the app runs each script: small tensor ops on a busy 2-core machine crawl with two."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
