"""The evidence put before a question: files cut into passages under their headings, an index of them
that follows the files as they change, the terms of a question, and the first message they end up in."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from localagent.agent import opening_messages
from localagent.core.paths import cache_dir
from localagent.evidence import index as index_module
from localagent.evidence.gathering import EVIDENCE_CHARS, PASSAGES_PER_FILE, gather_evidence
from localagent.evidence.index import WorkspaceIndex
from localagent.evidence.passages import PASSAGE_LINES, Passage, split_passages
from localagent.evidence.question import key_terms, search_terms
from localagent.tools.workspace import Workspace
from localagent.turn import prompts

HIVES = """# Apiary

## North hive
Queen marked blue in April.
Calm, nine frames of brood.

## South hive
Swarmed on 3 June; the swarm went to the ash tree.
"""
JARS = "jar,size,count\nclover,340g,12\n\nheather,227g,5\n"


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The index databases go to a folder of the test's own, not the user's cache."""
    home = tmp_path_factory.mktemp("localagent_home")
    monkeypatch.setenv("LOCALAGENT_HOME", str(home))
    return home


@pytest.fixture
def apiary(tmp_path: Path) -> Path:
    root = tmp_path / "apiary"
    root.mkdir()
    (root / "hives.md").write_text(HIVES)
    (root / "jars.csv").write_text(JARS)
    (root / "visits").mkdir()
    (root / "visits" / "2024-05-inspection.txt").write_text("Varroa count: 4 mites on the board.\n")
    return root


# --- passages ---


def test_markdown_passages_fall_under_their_headings() -> None:
    assert split_passages("hives.md", HIVES) == [
        Passage("hives.md", 1, 1, "", "# Apiary"),
        Passage(
            "hives.md",
            3,
            5,
            "# Apiary",
            "## North hive\nQueen marked blue in April.\nCalm, nine frames of brood.",
        ),
        Passage(
            "hives.md", 7, 8, "# Apiary", "## South hive\nSwarmed on 3 June; the swarm went to the ash tree."
        ),
    ]
    nested = split_passages("log.md", "# Log\n## May\n### Week 1\nFed syrup.\nAdded a super.\n")
    assert nested[-1] == Passage("log.md", 3, 5, "# Log > ## May", "### Week 1\nFed syrup.\nAdded a super.")


def test_a_long_section_is_cut_and_each_part_keeps_its_heading() -> None:
    lines = "\n".join(f"Frame {number}: capped brood." for number in range(1, 10))
    passages = split_passages("frames.md", f"## Brood box\n{lines}\n")
    assert [(p.first_line, p.last_line) for p in passages] == [(1, PASSAGE_LINES), (PASSAGE_LINES + 1, 10)]
    assert passages[1].context == "## Brood box"


def test_csv_rows_are_passages_under_the_header() -> None:
    assert split_passages("jars.csv", JARS) == [
        Passage("jars.csv", 2, 2, "jar,size,count", "clover,340g,12"),
        Passage("jars.csv", 4, 4, "jar,size,count", "heather,227g,5"),
    ]


def test_yaml_blocks_fall_under_the_keys_above_them() -> None:
    text = "apiary:\n  north:\n    queen: blue\n    frames: 9\n  south:\n    queen: red\n"
    assert split_passages("hives.yaml", text) == [
        Passage("hives.yaml", 1, 1, "", "apiary:"),
        Passage("hives.yaml", 2, 4, "apiary:", "  north:\n    queen: blue\n    frames: 9"),
        Passage("hives.yaml", 5, 6, "apiary:", "  south:\n    queen: red"),
    ]


def test_a_json_records_first_field_is_the_context_of_its_later_lines() -> None:
    fields = [f'    "field{number}": {number},' for number in range(PASSAGE_LINES + 1)]
    text = (
        "[\n  {\n"
        + '    "name": "North",\n'
        + "\n".join(fields)
        + '\n    "end": 0\n  },\n  {\n    "name": "South"\n  }\n]\n'
    )
    passages = split_passages("hives.json", text)
    assert passages[0].first_line == 3 and passages[0].context == ""  # it starts with the field itself
    assert passages[1].context == '"name": "North"'
    assert passages[-1] == Passage("hives.json", 14, 14, "", '    "name": "South"')
    assert all("{" not in p.text and "}" not in p.text for p in passages)  # brackets alone are no passage


def test_ini_sections_are_the_context_of_their_keys() -> None:
    keys = "".join(f"k{number} = {number}\n" for number in range(PASSAGE_LINES + 1))
    passages = split_passages("hive.ini", f"[extractor]\n{keys}")
    assert passages[0].text.startswith("[extractor]") and passages[1].context == "[extractor]"


# --- the index ---


def terms_found(index: WorkspaceIndex, *terms: str) -> list[tuple[str, int]]:
    return [(hit.passage.path, hit.passage.first_line) for hit in index.search(list(terms))]


def test_the_index_finds_a_passage_by_its_words_stemmed(apiary: Path) -> None:
    with WorkspaceIndex(Workspace(apiary)) as index:
        index.refresh()
        assert terms_found(index, "swarming") == [("hives.md", 7)]
        assert terms_found(index, "heather") == [("jars.csv", 4)]
        assert terms_found(index, "nine frames") == [("hives.md", 3)]  # a phrase
        assert terms_found(index, "frames nine") == []
        assert index.holds("varroa") and index.holds("inspection")  # a file's name is searched too
        assert not index.holds("wasp")


def test_the_index_finds_the_new_text_after_its_file_changes(apiary: Path) -> None:
    with WorkspaceIndex(Workspace(apiary)) as index:
        index.refresh()
        assert terms_found(index, "blue") == [("hives.md", 3)]
        (apiary / "hives.md").write_text("# Apiary\n\n## North hive\nQueen marked green in May.\n")
        index.refresh()
        assert terms_found(index, "green") == [("hives.md", 3)]
        assert terms_found(index, "blue") == [] and terms_found(index, "swarm") == []


def test_the_index_forgets_a_deleted_file_and_learns_a_new_one(apiary: Path) -> None:
    with WorkspaceIndex(Workspace(apiary)) as index:
        index.refresh()
        (apiary / "jars.csv").unlink()
        (apiary / "queens.txt").write_text("The north queen is from a local breeder.\n")
        index.refresh()
        assert terms_found(index, "heather") == [] and not index.holds("heather")
        assert terms_found(index, "breeder") == [("queens.txt", 1)]


def test_binary_files_are_not_indexed(apiary: Path) -> None:
    (apiary / "photo.bin").write_bytes(b"\x89PNG\0\0swarm on the ash tree")
    with WorkspaceIndex(Workspace(apiary)) as index:
        index.refresh()
        assert [path for path, _ in terms_found(index, "ash tree")] == ["hives.md"]


def test_the_index_on_disk_is_reused_and_only_changed_files_are_read_again(
    apiary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with WorkspaceIndex(Workspace(apiary)) as first:
        first.refresh()
    assert len(list(cache_dir("index").glob("*.sqlite"))) == 1
    read: list[str] = []
    real_text = index_module._text
    monkeypatch.setattr(index_module, "_text", lambda path: read.append(path.name) or real_text(path))
    (apiary / "jars.csv").write_text(JARS + "borage,340g,2\n")
    with WorkspaceIndex(Workspace(apiary)) as second:
        assert terms_found(second, "swarm") == [("hives.md", 7)]  # found before any refresh: it was kept
        second.refresh()
        assert read == ["jars.csv"]
        assert terms_found(second, "borage") == [("jars.csv", 5)]
    assert len(list(cache_dir("index").glob("*.sqlite"))) == 1


def test_without_the_disk_the_index_is_in_memory(apiary: Path) -> None:
    with WorkspaceIndex(Workspace(apiary), on_disk=False) as index:
        index.refresh()
        assert terms_found(index, "swarm") == [("hives.md", 7)]
    assert not cache_dir("index").exists()


def test_a_cache_folder_that_cannot_be_written_leaves_the_index_in_memory(
    apiary: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = own_cache / "blocked"
    blocked.write_text("a file where the cache folder should be\n")
    monkeypatch.setenv("LOCALAGENT_HOME", str(blocked))
    with WorkspaceIndex(Workspace(apiary)) as index:
        index.refresh()
        assert terms_found(index, "swarm") == [("hives.md", 7)]
    assert blocked.read_text() == "a file where the cache folder should be\n"


def test_a_damaged_database_leaves_the_index_in_memory(apiary: Path) -> None:
    with WorkspaceIndex(Workspace(apiary)) as first:
        first.refresh()
    (database,) = cache_dir("index").glob("*.sqlite")
    database.write_bytes(b"not a database at all" * 100)
    with WorkspaceIndex(Workspace(apiary)) as index:
        index.refresh()
        assert terms_found(index, "swarm") == [("hives.md", 7)]
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(database).execute("PRAGMA user_version").fetchone()


# --- the terms of a question ---


@pytest.mark.parametrize(
    ("question", "keys"),
    [
        ("What colour is the north queen?", []),
        ("When did the South hive swarm?", ["South"]),
        ("Where is the Osprey hive's queen from?", ["Osprey"]),
        ("Osprey hive: how many frames?", []),  # a capital that starts a sentence names nothing
        ("What is in hives.md about the North hive?", ["hives.md", "North"]),
        ('What does "late swarm" mean here?', ["late swarm"]),
        ("What was the status of HV-204 on Monday 3 June?", ["HV-204"]),
        ("How many frames in the MiniNuc box?", ["MiniNuc"]),
    ],
)
def test_key_terms_name_one_particular_thing(question: str, keys: list[str]) -> None:
    assert key_terms(question) == keys


def test_search_terms_are_the_words_worth_looking_up() -> None:
    assert search_terms("How many jars of heather honey did we sell?") == ["jars", "heather", "honey", "sell"]
    assert search_terms("What is the status of HV-204?") == ["HV-204", "status"]
    # a date written in words is looked up as files write it too
    assert search_terms("What happened on 11 March?")[0] == "03-11"
    assert search_terms("What was sold in March 2024?")[:1] == ["2024-03"]
    assert search_terms("the THE The") == []


# --- gathering the evidence ---


def test_the_evidence_is_the_best_passages(apiary: Path) -> None:
    with WorkspaceIndex(Workspace(apiary)) as index:
        index.refresh()
        found = gather_evidence(index, "When did the South hive swarm?")
    assert found.absent == ()
    assert found.passages[0] == Passage(
        "hives.md", 7, 8, "# Apiary", "## South hive\nSwarmed on 3 June; the swarm went to the ash tree."
    )


def test_a_question_naming_what_no_file_holds_gets_those_terms_instead(apiary: Path) -> None:
    with WorkspaceIndex(Workspace(apiary)) as index:
        index.refresh()
        absent = gather_evidence(index, "How many mites did the Osprey hive have?")
        assert absent.passages == () and absent.absent == ("Osprey",)
        assert absent  # something to say
        # An instruction may name something new: it gets passages, never a note
        instruction = gather_evidence(index, "Add a line about the Osprey hive to hives.md.")
        assert instruction.absent == ()
        assert "hives.md" in [passage.path for passage in instruction.passages]
        assert not gather_evidence(index, "Say hello.")  # no words the files hold: nothing at all


def test_the_evidence_keeps_to_its_budget_and_a_few_passages_a_file(tmp_path: Path) -> None:
    lines = "".join(f"Frame {number} of the Dadant box holds capped brood.\n\n" for number in range(40))
    (tmp_path / "frames.md").write_text(lines)
    (tmp_path / "other.md").write_text("The Dadant box was moved.\n")
    with WorkspaceIndex(Workspace(tmp_path)) as index:
        index.refresh()
        found = gather_evidence(index, "Which frames of the Dadant box hold capped brood?")
        small = gather_evidence(index, "Which frames of the Dadant box hold capped brood?", budget=120)
    assert sum(passage.path == "frames.md" for passage in found.passages) == PASSAGES_PER_FILE
    assert sum(len(passage.text) for passage in found.passages) <= EVIDENCE_CHARS
    assert len(small.passages) == 1


def test_neighbouring_passages_of_a_file_are_shown_as_one(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text(
        "".join(f"Day {n}: inspected the Warré hive.\n" for n in range(1, PASSAGE_LINES + 1))
        + "Day 7: inspected the Warré hive again.\n"
    )
    with WorkspaceIndex(Workspace(tmp_path)) as index:
        index.refresh()
        (joined,) = gather_evidence(index, "When was the Warré hive inspected?").passages
    assert (joined.first_line, joined.last_line) == (1, PASSAGE_LINES + 1)
    assert joined.text.count("\n") == PASSAGE_LINES


# --- the first message ---


def test_the_evidence_block_names_each_passage_by_file_lines_and_heading() -> None:
    block = prompts.evidence_block(
        [
            Passage("hives.md", 7, 8, "# Apiary", "## South hive\nSwarmed."),
            Passage("jars.csv", 4, 4, "", "heather"),
        ],
        (),
    )
    assert block == (
        "Lines of the files that hold what the question names:\n"
        "hives.md, lines 7-8 (under '# Apiary'):\n7: ## South hive\n8: Swarmed.\n"
        "jars.csv, line 4:\n4: heather"
    )
    assert prompts.evidence_block([], ["Osprey", "HV-204"]) == (
        "Note: no file in the workspace mentions 'Osprey' or 'HV-204' (a search of every file's text and "
        "name found nothing)."
    )
    assert prompts.evidence_block([], []) == ""


def test_the_opening_message_holds_the_listing_tables_evidence_and_question(apiary: Path) -> None:
    with WorkspaceIndex(Workspace(apiary)) as index:
        (system, first) = opening_messages("When did the South hive swarm?", apiary, index=index, tables=True)
    assert system.content == prompts.SYSTEM_PROMPT
    listing, tables, evidence, question = _parts(first.content)
    assert listing.startswith("Files in the workspace:\nhives.md: # Apiary\n")
    assert tables == (
        "Tables for query_tables:\n- jars (jars.csv, 2 rows): jar (clover/heather), size (227g/340g), count"
    )
    assert evidence.startswith("Lines of the files that hold what the question names:\nhives.md, lines 7-8")
    assert question == "Question: When did the South hive swarm?"
    assert prompts.question_of(first.content) == "When did the South hive swarm?"


def _parts(message: str) -> tuple[str, str, str, str]:
    listing_and_tables, evidence, question = message.split("\n\n")
    listing, tables = listing_and_tables.split("\nTables for query_tables:\n")
    return listing, "Tables for query_tables:\n" + tables, evidence, question


def test_without_an_index_or_tables_the_question_follows_the_listing(apiary: Path) -> None:
    (_, first) = opening_messages("When did the South hive swarm?", apiary)
    assert "Tables for query_tables" not in first.content and "Lines of the files" not in first.content
    assert first.content.endswith("\n\nWhen did the South hive swarm?")
    assert prompts.question_of(first.content) == "When did the South hive swarm?"


@pytest.mark.parametrize(
    "message",
    [
        "How many jars?",
        "Files in the workspace:\njars.csv: jar,size\n\nHow many jars?",
        "Files in the workspace:\njars.csv: jar,size\n\nNote: no file in the workspace mentions 'X'.\n\n"
        "Question: How many jars?",
        "Lines of the files that hold what the question names:\njars.csv, line 2:\n2: clover\n\n"
        "Question: How many jars?",
    ],
)
def test_question_of_strips_the_listing_and_the_evidence(message: str) -> None:
    assert prompts.question_of(message) == "How many jars?"


def test_a_question_that_only_looks_like_evidence_is_kept_whole() -> None:
    task = "Note: the shed is locked.\nWho has the key?"
    assert prompts.question_of(prompts.first_task(task, "shed.md: # Shed")) == task


def test_the_runs_own_transcript_is_no_evidence(apiary: Path) -> None:
    transcript = apiary / "run.jsonl"
    transcript.write_text(
        '{"role": "user", "content": "When did the South hive swarm?"}\n'
        '{"role": "assistant", "content": "Final Answer: The South hive swarmed in May."}\n'
    )
    with WorkspaceIndex(Workspace(apiary)) as index:
        (_, first) = opening_messages(
            "When did the South hive swarm?", apiary, hidden=[transcript], index=index
        )
    assert "run.jsonl" not in first.content
