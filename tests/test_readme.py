"""The README is a front page: its two set-up commands are where .ci/run and newcomers look for them, it stays
short, and every page it links to exists; the reference lives in docs/, built by MkDocs (.ci/run checks it with
`mkdocs build --strict`)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def command_after(marker: str) -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(marker)
    assert lines[start + 1] == "```bash", f"a ```bash block must follow {marker}"
    return lines[start + 2]


def test_main_command_installs_and_runs_the_main_job():
    command = command_after("<!-- main command -->")
    assert "pip install" in command and command.endswith("gcbench simulate scenarios/stragglers.yaml")


def test_test_command_installs_what_the_tests_need_and_runs_pytest():
    command = command_after("<!-- test command -->")
    assert "pip install -e '.[real,dev]'" in command
    # the whole suite, on two processes (pytest-xdist, a dev dependency), each test module whole on one of them
    assert command.endswith("&& pytest -n 2 --dist loadfile")


def test_ci_runs_the_readme_test_command_and_builds_the_docs_strictly():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test command -->" in ci and "ruff check" in ci and "ruff format --check" in ci
    assert "mkdocs build --strict" in ci


def test_the_readme_is_a_front_page_whose_links_exist():
    import re

    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    links = [link.split("#")[0] for link in re.findall(r"\]\(([^)]+)\)", text) if not link.startswith("http")]
    assert links and all((ROOT / link).exists() for link in links), [
        link for link in links if not (ROOT / link).exists()
    ]


def test_every_docs_page_is_in_the_sites_navigation():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def pages(entry):
        if isinstance(entry, str):
            yield entry
        elif isinstance(entry, dict):
            for value in entry.values():
                yield from pages(value)
        elif isinstance(entry, list):
            for item in entry:
                yield from pages(item)

    listed = set(pages(config["nav"]))
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}, "add the page to mkdocs.yml's nav"
