"""The backtest fixtures: the project's InvestorBench-format data folder, and the real files where present."""

import pytest


@pytest.fixture(scope="session")
def investorbench_folder(tmp_path_factory):
    """A data folder holding the project's own InvestorBench-format fixture (not the real files)."""
    from backtest.data.fixture import write_investorbench_fixture

    return write_investorbench_fixture(tmp_path_factory.mktemp("data"), seed=0)


@pytest.fixture
def investorbench_fixture(investorbench_folder, monkeypatch):
    """MEMTRIAL_DATA points at the fixture (the only place InvestorBench files are looked for)."""
    from backtest.realdata import load_setting

    monkeypatch.setenv("MEMTRIAL_DATA", str(investorbench_folder))
    load_setting.cache_clear()
    yield investorbench_folder
    load_setting.cache_clear()


@pytest.fixture
def real_investorbench(monkeypatch):
    """The real InvestorBench files, where a data folder holds them; otherwise the test is skipped, loudly."""
    from backtest.data.prices import candidates
    from backtest.realdata import load_setting

    found = next((p for p in candidates("investorbench/hon.json") if p.is_file()), None)
    if found is None:
        pytest.skip(
            "REAL INVESTORBENCH FILES NOT PRESENT: set MEMTRIAL_DATA to a folder holding investorbench/*.json to run this check"
        )
    monkeypatch.setenv("MEMTRIAL_DATA", str(found.parent.parent))
    load_setting.cache_clear()
    yield found.parent
    load_setting.cache_clear()
