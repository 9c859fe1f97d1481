"""Fault profiles and injection files: the same list document, with the same one-line errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tracevals.harness.attacks import InjectionError, load_injections
from tracevals.harness.faults import FaultProfileError, load_fault_profile

LOADERS = [
    pytest.param(load_fault_profile, FaultProfileError, "faults", "fault rules", "fault profile", id="faults"),
    pytest.param(load_injections, InjectionError, "injections", "injections", "injections file", id="injections"),
]


@pytest.mark.parametrize(("load", "error", "key", "items", "what"), LOADERS)
def test_what_is_no_list_says_so_in_one_line(
    tmp_path: Path, load: Callable[[Path], list[Any]], error: type[Exception], key: str, items: str, what: str
) -> None:
    path = tmp_path / "doc.yaml"
    for empty in ("[]\n", f"{key}: []\n"):  # a list, or a mapping with the list under its key
        path.write_text(empty)
        assert load(path) == []
    path.write_text(f"{key}: 3\n")
    with pytest.raises(error) as caught:
        load(path)
    assert str(caught.value) == f"{path}: expected a list of {items} (or a mapping with '{key}:')"
    with pytest.raises(error) as caught:
        load(tmp_path / "none.yaml")
    assert str(caught.value) == f"{tmp_path / 'none.yaml'}: no such {what}"
    path.write_text(f"{key}: [{{}}]\n")
    with pytest.raises(error) as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}: {key}[0]")
