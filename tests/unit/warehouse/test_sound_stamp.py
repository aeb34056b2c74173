"""The publisher stamps the file it built as sound (``warehouse.versions.stamp_sound``): a later
check trusts the stamp while the file is the one stamped, and reads every block again once it changed."""

from __future__ import annotations

import pytest
from support.api_data import publish_signed

from warehouse import versions
from medbench.layout import DataDir


@pytest.fixture
def probes(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = versions.probe
    monkeypatch.setattr(versions, "probe", lambda data, version: seen.append(version) or real(data, version))
    monkeypatch.setattr(versions, "_CHECKED", {})
    return seen


def test_a_stamped_file_is_not_read_again_until_it_changes(tmp_path, probes) -> None:
    data = DataDir(tmp_path / "data")
    version, _ = publish_signed(data)
    assert versions.stamped_sound(data, version)
    assert versions.check(data, version) is None and probes == []
    path = data.version_file(version)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # truncated after the publish
    versions._CHECKED.clear()
    assert not versions.stamped_sound(data, version)
    assert versions.check(data, version) is not None and probes == [version]
