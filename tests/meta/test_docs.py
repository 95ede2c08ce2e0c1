"""The documentation says what the code does: every setting, every variable, every id."""

import pathlib
import re

from typer.testing import CliRunner

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text()


def test_configuration_page_holds_the_settings_table_as_the_code_writes_it():
    from service.settings import configuration_table

    section = re.search(r"<!-- settings:begin -->\n(.*?)\n<!-- settings:end -->", CONFIGURATION, re.DOTALL)
    assert section, "docs/configuration.md lost its settings markers"
    assert section.group(1) == configuration_table(), "regenerate the table: python -m service.settings"


def test_every_environment_variable_the_code_reads_is_documented():
    read = set()
    pattern = re.compile(r"""(?:environ(?:\.get|\.setdefault)?\s*[\(\[]|getenv\()\s*["'](MEMTRIAL_[A-Z0-9_]+)""")
    for folder in ("memtrial", "service", "backtest"):
        for path in (ROOT / folder).rglob("*.py"):
            read.update(pattern.findall(path.read_text()))
    from service.settings import Settings

    read.update(field.metadata["env"] for field in Settings.__dataclass_fields__.values())
    assert {"MEMTRIAL_DATA", "MEMTRIAL_TORCH_THREADS", "MEMTRIAL_DATABASE_URL"} <= read  # the scan finds what it must
    missing = sorted(name for name in read if f"`{name}`" not in CONFIGURATION)
    assert missing == []
    # each has a row of its own (a mention inside another variable's row does not say its default)
    rows = set(re.findall(r"^\| `(MEMTRIAL_[A-Z0-9_]+)`", CONFIGURATION, re.MULTILINE))
    assert sorted(read - rows) == []


def test_every_extra_of_the_package_is_documented():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    missing = sorted(name for name in extras if f"`[{name}]`" not in CONFIGURATION)
    assert missing == []


def test_backtest_help_lists_every_regime_and_method_id():
    from backtest.methods.registry import METHOD_IDS
    from backtest.plantedmem import REGIMES
    from memtrial.cli.commands import app

    output = " ".join(CliRunner().invoke(app, ["backtest", "plantedmem", "--help"], terminal_width=400).output.split())
    for name in [*REGIMES, *METHOD_IDS]:
        assert name in output, name


def test_every_method_citation_points_to_a_section_of_the_method_page():
    method = (ROOT / "docs" / "method.md").read_text()
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)[ .]", method, re.MULTILINE))
    assert {"1", "3", "4.2", "4.4", "4.5", "4.6", "4.8", "4.10", "5"} <= sections
    cited = set()
    for path in [
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),  # the site: its guides and results too
        *(p for folder in ("memtrial", "service", "backtest", "tests") for p in (ROOT / folder).rglob("*.py")),
    ]:
        text = path.read_text()
        assert not re.search(r"SPEC \d", text), f"{path} cites a specification the repository does not hold"
        cited.update(re.findall(r"\bmethod (\d+(?:\.\d+)?)\b", text))
    assert cited and cited <= sections, f"cited sections missing from docs/method.md: {sorted(cited - sections)}"


def test_the_licence_file_matches_the_package_metadata():
    licence = (ROOT / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0" in licence
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()


def _resolves(name: str) -> bool:
    """Whether a dotted name is a module, or an attribute reached from the longest module prefix."""
    import importlib

    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_architecture_names_every_core_package_and_only_packages_modules_and_tests_that_exist():
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:memtrial|backtest|service)(?:\.\w+)*)", architecture))
    packages = {f"memtrial.{p.name}" for p in (ROOT / "memtrial").iterdir() if (p / "__init__.py").is_file()}
    assert packages <= named, f"packages missing from docs/architecture.md: {sorted(packages - named)}"
    assert sorted(name for name in named if not _resolves(name)) == []
    tests = set(re.findall(r"`(tests/[\w/]+\.py)`", architecture))
    assert len(tests) >= 15 and sorted(t for t in tests if not (ROOT / t).is_file()) == []
    rows = re.findall(r"^\| [^|]+ \| `(memtrial\.\w+)` \| ([^|]+) \|", architecture, re.MULTILINE)
    assert {package for package, _ in rows} == packages
    for package, modules in rows:
        files = re.findall(r"`(\w+\.py)`", modules)
        folder = ROOT / package.replace(".", "/")
        assert files and sorted(f for f in files if not (folder / f).is_file()) == [], package
