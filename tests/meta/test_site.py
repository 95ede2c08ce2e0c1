"""The documentation site: every code block of the quickstart and the guides runs as printed (or says why it
cannot), what the quickstart prints is what it says, and the site builds with ``mkdocs build --strict``.

A block's marker is an HTML comment on the line before its fence:
``<!-- test: server -->`` runs it against a live ``memtrial serve`` on SQLite (``MEMTRIAL_URL``,
``MEMTRIAL_API_KEY``, ``MEMTRIAL_DATABASE_URL`` set), ``<!-- test: example -->`` shows a file of
``examples/`` that ``tests/meta/test_examples.py`` runs, ``<!-- test: json (...) -->`` is parsed,
``<!-- test: skip (why) -->`` is not run and says why; a python block without a marker runs in-process.
"""

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: the pages whose code blocks must run: the quickstart and every guide
PAGES = [
    "quickstart.md",
    *(f"guides/{p.name}" for p in sorted((DOCS / "guides").glob("*.md"))),
    *(p for p in ("typescript.md", "curation.md", "integrations-curation.md", "testing.md") if (DOCS / p).is_file()),
]
FENCE = re.compile(
    r"(?:^<!-- test: (?P<marker>[^\n]*?) -->\n)?^```\{?\.?(?P<lang>[\w-]*)\}?\n(?P<code>.*?)^```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def blocks(page):
    """(page:line, marker kind, language, code) of every fenced block of ``page``."""
    text = (DOCS / page).read_text()
    found = []
    for match in FENCE.finditer(text):
        line = text[: match.start("lang")].count("\n") + 1
        marker = match.group("marker") or ""
        found.append((f"{page}:{line}", marker.split(" ", 1)[0], match.group("lang"), match.group("code"), marker))
    return found


ALL = [block for page in PAGES for block in blocks(page)]


def _of(kind):
    return [pytest.param(b, id=b[0]) for b in ALL if b[1] == kind]


def test_every_block_of_the_quickstart_and_the_guides_runs_or_says_why():
    assert {"quickstart.md", "guides/retrieval.md", "guides/mem0.md", "guides/langgraph.md", "guides/mcp.md"} <= set(
        PAGES
    )
    assert len(ALL) >= 12
    text = "".join((DOCS / page).read_text() for page in PAGES)
    assert text.count("```") == 2 * len(ALL), "a fence the test does not see (a marker not on the line before it?)"
    wrong = []
    for where, kind, lang, _, marker in ALL:
        if kind == "" and lang != "python":
            wrong.append(f"{where}: a {lang or 'plain'} block needs a marker")
        elif kind in ("skip", "json") and not re.fullmatch(r"\w+ \(.{20,}\)", marker):
            wrong.append(f"{where}: `{marker}` must say why, in brackets")
        elif kind not in ("", "server", "example", "skip", "json"):
            wrong.append(f"{where}: unknown marker `{marker}`")
    assert wrong == []


@pytest.mark.parametrize("block", _of("example"))
def test_an_example_shown_on_a_page_is_the_file_the_examples_test_runs(block):
    from test_examples import EXAMPLES

    included = re.fullmatch(r'--8<-- "(examples/[\w.]+\.py)"\n', block[3])
    assert included, f"{block[0]}: an example block includes one file of examples/"
    assert ROOT / included.group(1) in EXAMPLES


@pytest.mark.parametrize("block", _of("json"))
def test_a_json_block_parses(block):
    assert isinstance(json.loads(block[3]), dict)


@pytest.mark.parametrize("block", _of(""))
def test_a_library_block_runs_as_printed(block, capsys):
    exec(compile(block[3], block[0], "exec"), {"__name__": "docs"})
    assert capsys.readouterr().out.strip(), f"{block[0]} prints nothing to check by eye"


def test_the_curation_example_picks_by_similarity_before_any_value_is_learnt(capsys):
    block = next(b for b in ALL if b[0].startswith("curation.md") and "engine.rank" in b[3])
    exec(compile(block[3], block[0], "exec"), {})
    most_similar = ["bonds after a rate shock", "equity momentum", "cash in drawdowns", "gold as a hedge"]
    expected = f"{[(lesson, 'similarity') for lesson in most_similar]} ()"  # the four most similar, none quarantined
    assert capsys.readouterr().out.strip() == expected


def _quickstart(pattern):
    return next(b for b in ALL if b[0].startswith("quickstart.md") and re.search(pattern, b[3]))


# the quickstart blocks with their own checks below; every other server block runs in the generic test
WALKTHROUGH, CLIENT, ASYNC = r"^set -euo pipefail", r"MemtrialClient\(", r"AsyncMemtrialClient"
#: the curation page's shell blocks: one sequence, run in order in one shell by its own test
CURATION = [b for b in ALL if b[0].startswith("curation.md") and b[1] == "server" and b[2] == "bash"]
CHECKED = {_quickstart(p)[0] for p in (WALKTHROUGH, CLIENT, ASYNC)} | {b[0] for b in CURATION}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from live_server import Server
    from support import make_tenant

    url = f"sqlite:///{tmp_path_factory.mktemp('site') / 'site.db'}"
    server = Server(url)
    try:
        yield {"MEMTRIAL_URL": server.url, "MEMTRIAL_API_KEY": make_tenant(url, "site"), "MEMTRIAL_DATABASE_URL": url}
    finally:
        server.stop()


def _run_python(block, env):
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        exec(compile(block[3], block[0], "exec"), {"__name__": "docs"})
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_bash(block, env):
    return subprocess.run(
        ["bash", "-c", block[3]],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow  # a live server
@pytest.mark.parametrize("block", [b for b in _of("server") if b.values[0][0] not in CHECKED])
def test_a_server_block_runs_as_printed(block, live, capsys):
    if block[2] == "python":
        _run_python(block, live)
        assert capsys.readouterr().out.strip()
    else:
        result = _run_bash(block, live)
        assert result.returncode == 0, result.stderr


@pytest.mark.slow  # a live server
def test_the_curation_calls_run_in_order_in_one_shell(live):
    assert len(CURATION) >= 6 and CURATION[0][3].startswith("set -euo pipefail")
    result = _run_bash(("curation.md", "server", "bash", "\n".join(b[3] for b in CURATION), ""), live)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "value_aware"  # the PATCH answers the agent's settings
    ranked = json.loads(lines[1])["items"]  # no value learnt yet: the two most similar, for their similarity
    assert [(r["external_id"], r["reason"], r["value"], r["n"]) for r in ranked] == [
        ("mem-17", "similarity", 0.0, 0),
        ("mem-4", "similarity", 0.0, 0),
    ]
    shown = json.loads(next(b[3] for b in ALL if b[0].startswith("curation.md") and '"score"' in b[3]))
    assert set(ranked[0]) == set(shown["items"][0])  # the answer printed on the page has the real fields
    assert [r["external_id"] for r in json.loads(lines[2])] == ["mem-17", "mem-4", "mem-9", "mem-2"]  # k = 4 of 5
    assert json.loads(lines[3])["items"] == []  # nothing quarantined
    assert json.loads(lines[4])["error"]["code"] == "not_quarantined"


@pytest.mark.slow  # a live server
def test_the_own_retrieval_example_plans_on_the_given_external_ids(live, capsys):
    block = next(b for b in ALL if b[0].startswith("guides/retrieval.md") and b[1] == "server")
    _run_python(block, live)
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["client ['note-42', 'note-17']", "['note-17', 'note-42']"]


@pytest.mark.slow  # a live server
def test_the_budget_example_makes_its_trials_first_and_keeps_to_the_budget(live, capsys):
    block = next(b for b in ALL if b[0].startswith("guides/budgets.md") and b[1] == "server")
    _run_python(block, live)
    calls, mean = capsys.readouterr().out.strip().rsplit("] ", 1)
    plans = [(trial == "True", int(n)) for trial, n in re.findall(r"\((True|False), (\d+)\)", calls)]
    assert len(plans) == 6 and plans[0] == (True, 8), calls  # a trial of the whole design first
    assert all(n >= 1 for _, n in plans) and all(n == 8 for trial, n in plans if trial), calls
    assert float(mean) <= 3.0 and any(not trial for trial, _ in plans), calls


@pytest.mark.slow  # a live server
def test_the_quickstart_walkthrough_works_as_printed(live):
    result = _run_bash(_quickstart(WALKTHROUGH), live)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith('{"ok": true, "n_entries": 2,')
    assert "trust weight 0 from log e-value 0: all on the anchored mixture with q = 1 on the reference" in result.stdout
    assert lines[-2].startswith("contributions in utility per decision, largest first: ")
    named = dict(re.findall(r'"([^"]+)" (-?\d+\.\d{5})', lines[-2]))  # each lesson by its text, not its id
    assert sorted(named) == [
        "Cash protected the book in a volatile m…",
        "Equities fell after a surprise inflatio…",
        "Gold held up during a banking scare.",
        "Long bonds rallied when the central ban…",
    ]
    assert all(float(c) != 0 for c in named.values())  # drafts that differ by subset: every lesson gets a contrast
    assert len(set(named.values())) == 4
    assert not re.search(r"[0-9a-f]{32}", "\n".join(lines[:-1]))  # no opaque id where people read


@pytest.mark.slow  # a live server
def test_the_walkthrough_shows_the_error_when_the_key_is_from_another_database(live, tmp_path):
    result = _run_bash(_quickstart(WALKTHROUGH), {**live, "MEMTRIAL_DATABASE_URL": f"sqlite:///{tmp_path / 'o.db'}"})
    assert result.returncode != 0
    assert 'error: {"code": "unauthorized"' in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == "" and "not_found" not in result.stderr  # it stopped at the first error


@pytest.mark.slow  # a live server
def test_the_quickstart_python_client_example_runs_against_a_live_server(live, capsys):
    _run_python(_quickstart(CLIENT), live)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("gate anytime ") and "trust weight" in printed[0], printed  # the default dial
    assert printed[1].startswith("contributions in utility per decision, largest first: "), printed
    contributions = re.findall(r"\" ([+-]?[0-9.]+)(?:;|$)", printed[1])  # drafts that differ by subset
    assert len(contributions) == 4 and all(float(c) != 0 for c in contributions), printed
    assert printed[2] == "['settled', 'settled', 'settled']"
    values = [
        re.fullmatch(r"([+-][0-9.]+) sd ([0-9.]+) \[([+-][0-9.]+), ([+-][0-9.]+)\] .+", line) for line in printed[3:7]
    ]
    assert all(values), printed
    for mean, sd, lower, upper in (tuple(float(x) for x in match.groups()) for match in values if match):
        assert mean != 0 and sd > 0 and lower < mean < upper, printed
    assert printed[7] == "404 not_found decision_id"


@pytest.mark.slow  # a live server
def test_the_quickstart_async_client_example_runs_against_a_live_server(live, capsys):
    _run_python(_quickstart(ASYNC), live)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("dial {") and printed[1].endswith(" decided")  # the default acts by the dial


def test_the_correction_example_ends_the_log_with_the_correction_and_an_intact_chain(capsys):
    block = next(b for b in ALL if b[0].startswith("guides/corrections.md") and "engine.correct" in b[3])
    exec(compile(block[3], block[0], "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == "['score', 'correction'] True"
    assert printed[0].startswith("{'bonds after a rate shock': ")


def test_the_scored_decision_example_runs(capsys):
    block = next(b for b in ALL if b[0].startswith("guides/scored.md") and "decide_scored" in b[3])
    exec(compile(block[3], block[0], "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("dial {'rate cuts lift stocks': ") and "'earnings beats lift stocks'" in printed


def test_the_quickstart_gives_the_readmes_two_commands_exactly():
    readme = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.DOTALL)
    quickstart = [b[3].strip() for b in blocks("quickstart.md") if b[2] == "bash" and "pip install" in b[3]]
    assert quickstart == [c for c in readme if "pip install" in c][:2] and len(quickstart) == 2


def test_every_page_of_the_site_is_in_its_navigation():
    import yaml

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)

    def pages(node):
        if isinstance(node, dict):
            return [p for value in node.values() for p in pages(value)]
        if isinstance(node, list):
            return [p for item in node for p in pages(item)]
        return [node]

    listed = set(pages(config["nav"]))
    generated = {"reference/rest.md"}  # rendered from the OpenAPI document at build time (docs/hooks.py)
    # a run's own page (results/<run>/results.md) is reached from the results overview, except PlantedForecast's,
    # which has no other page: it is in the navigation
    written = {
        str(p.relative_to(DOCS))
        for p in DOCS.rglob("*.md")
        if not re.match(r"results/\w+/results\.md", str(p.relative_to(DOCS)))
        or str(p.relative_to(DOCS)) == "results/forecast/results.md"
    }
    assert sorted(written - listed) == [] and sorted(listed - written - generated) == []
    # and each run's own page is linked from a page of the site (a link in markdown, relative to its page)
    links = {
        (page.parent / target).resolve()
        for page in DOCS.rglob("*.md")
        for target in re.findall(r"\]\(([^)#\s]+\.md)", page.read_text(encoding="utf-8"))
    }
    unlinked = [str(p.relative_to(DOCS)) for p in DOCS.glob("results/*/results.md") if p.resolve() not in links]
    assert unlinked == []


@pytest.mark.slow  # builds the whole site: the REST reference from the app, the Python API from the docstrings
def test_the_site_builds_strict_with_memtrial_docs(tmp_path):
    """`memtrial docs --build` runs `mkdocs build --strict`: a broken link, a missing page or a stale anchor fails."""
    result = subprocess.run(
        [sys.executable, "-m", "memtrial.cli", "docs", "--build", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    site = tmp_path / "site"
    rest = (site / "reference" / "rest" / "index.html").read_text()
    assert "/v1/agents/{agent_id}/decisions/{decision_id}/settle" in rest and 'id="schema-settlerequest"' in rest
    python = (site / "reference" / "python" / "index.html").read_text()
    assert 'id="memtrial.MemTrial.plan"' in python and 'id="client-create_decision"' in python
    assert 'id="memtrial.EngineConfig"' in python
    # every method of both clients, their arguments, and a docstring's cross-references read as names
    for client in ("MemtrialClient", "AsyncMemtrialClient"):
        for method in ("iter_agents", "iter_experiences", "iter_decisions", "iter_log"):
            assert f'id="service.client.{client}.{method}"' in python
    assert "in_progress_wait" in python and "Bases:" not in python
    assert re.findall(r":(?:class|meth|func|mod|data|attr):<code>", python) == []
    assert "client.create_decision(agent_id: str, decision_time: dt.datetime | str" in html.unescape(
        re.sub(r"<[^>]+>", "", python)
    )
    pages = list(site.rglob("*.html"))
    assert len(pages) >= 25
    loaded = re.compile(r'<(?:script|img|link|iframe)\b[^>]*\b(?:src|href)="(https?:[^"]*|//[^"]*)"')
    remote = sorted({url for page in pages for url in loaded.findall(page.read_text())})
    assert remote == []  # offline: no script, style sheet, font or image from the network (links to read are fine)


@pytest.mark.slow  # serves the site over HTTP
def test_memtrial_docs_serves_the_site_locally(tmp_path):
    import signal
    import time

    import httpx
    from live_server import free_port

    port = free_port()
    log = tmp_path / "docs.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "memtrial.cli", "docs", "--port", str(port)],
            cwd=tmp_path,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # mkdocs runs in a child: the test stops the whole group
        )
    try:
        deadline, answer = time.monotonic() + 240, None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/quickstart/", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(1)
        assert answer is not None and answer.status_code == 200, log.read_text()[-2000:]
        assert "Install and serve" in answer.text
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def test_the_rest_reference_renders_every_operation_and_schema_with_links_that_resolve():
    from service.reference import client_operations, openapi_document, rest_reference

    document = openapi_document()
    page = rest_reference(document)
    for path, item in document["paths"].items():
        for method in item:
            assert f"### `{method.upper()} {path}`" in page
    anchors = set(re.findall(r"\{#([\w-]+)\}", page))
    assert {f"schema-{name.lower()}" for name in document["components"]["schemas"]} <= anchors
    assert set(re.findall(r"\]\(#([\w-]+)\)", page)) <= anchors  # every type links to a schema on the page
    assert "| `horizon` | integer | no |" in page  # a body field with its type and whether it is required
    operations = client_operations()
    from service.operations import Operation, Operations

    named = [name for name, value in vars(Operations).items() if isinstance(value, Operation)]
    assert len(named) >= 25 and all(f"{{#client-{name}}}" in operations for name in named)
    assert set(re.findall(r"\(rest\.md#([\w-]+)\)", operations)) <= anchors  # answers link into the REST page


def test_every_test_the_docs_cite_exists():
    """A page that names `tests/...py::test_name` as its evidence names a test that is there."""
    pages = [ROOT / "README.md", *DOCS.rglob("*.md")]
    cited = {
        (str(page.relative_to(ROOT)), path, name)
        for page in pages
        for path, name in re.findall(r"(tests/[\w/]+\.py)::(\w+)", page.read_text(encoding="utf-8"))
    }
    assert cited, "the pattern finds the docs' citations"
    missing = [
        f"{page}: {path}::{name}"
        for page, path, name in sorted(cited)
        if not (ROOT / path).is_file()
        or not re.search(rf"^(async )?def {name}\b", (ROOT / path).read_text(encoding="utf-8"), re.M)
    ]
    assert missing == []
