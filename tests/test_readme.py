"""The README's two set-up commands are where .ci/run and newcomers look for them."""

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


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test command -->" in ci and "ruff check" in ci and "ruff format --check" in ci
