"""query_tables: SQL over the workspace's tables, named by plain SQL names, read-only, with errors a
model can act on. How each source becomes a table: test_table_catalog.py; the grammar the query is
written under: test_sql_grammar.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.core.cancel import Cancelled, CancelToken
from localagent.tools import tables
from localagent.tools.base import ToolError
from localagent.tools.loading import select_tools
from localagent.tools.table_catalog import workspace_tables
from localagent.tools.tables import TableQuery
from localagent.tools.workspace import Workspace

WARES = """sku,name,category,price,stock
KT-301,Copper ladle,kitchen,8.50,40
KT-302,Cotton oven glove,kitchen,6.00,0
KT-303,Soy wax lantern,home,12.00,15
KT-307,Pine breadboard,kitchen,27.00,9
"""
JULY = """order_id,sku,quantity
1,KT-301,2
2,KT-303,5
3,KT-301,1
"""
TABLES_THERE = "Tables: orders_2023_07 (order_id, sku, quantity); wares (sku, name, category, price, stock)."


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    (tmp_path / "wares.csv").write_text(WARES)
    (tmp_path / "orders").mkdir()
    (tmp_path / "orders" / "2023-07.csv").write_text(JULY)
    (tmp_path / "README.md").write_text("# Shop\n")
    return tmp_path


def query(root: Path, sql: str, cancel: CancelToken | None = None) -> str:
    return TableQuery(Workspace(root)).tool().run({"sql": sql}, cancel or CancelToken())


def test_filters_and_averages_with_numbers_typed(shop: Path) -> None:
    # one row as name = value pairs
    assert (
        query(shop, "SELECT AVG(price) FROM wares WHERE category = 'kitchen'")
        == "AVG(price) = 13.8333333333333"
    )
    # price is numeric, so 8.50 < 12.00 compares as numbers, not as text ('8.50' > '12.00').
    assert query(shop, "SELECT name FROM wares WHERE price < 10 ORDER BY price") == (
        "name\nCotton oven glove\nCopper ladle\n(2 rows)"
    )


def test_tables_are_joined_by_their_plain_names(shop: Path) -> None:
    sql = (
        "SELECT wares.name, SUM(orders_2023_07.quantity) AS units FROM orders_2023_07 JOIN wares "
        "ON orders_2023_07.sku = wares.sku GROUP BY wares.name ORDER BY units DESC"
    )
    assert query(shop, sql) == "name | units\nSoy wax lantern | 5\nCopper ladle | 3\n(2 rows)"


def test_a_path_is_no_table_and_the_error_names_the_tables_there_are(shop: Path) -> None:
    with pytest.raises(ToolError) as by_path:
        query(shop, 'SELECT SUM(quantity) FROM "orders/2023-07.csv"')
    assert str(by_path.value) == f"SQL error: no such table: orders/2023-07.csv. {TABLES_THERE}"
    with pytest.raises(ToolError) as misspelt:
        query(shop, "SELECT nme FROM wares")
    assert str(misspelt.value) == f"SQL error: no such column: nme. {TABLES_THERE}"


def test_the_model_is_shown_the_tables_it_may_query(shop: Path) -> None:
    assert tables.tables_listing(Workspace(shop)) == (
        "- orders_2023_07 (orders/2023-07.csv, 3 rows): order_id, sku (KT-301/KT-303), quantity\n"
        "- wares (wares.csv, 4 rows): sku (KT-301/KT-302/KT-303/KT-307), name (Copper ladle/Cotton oven "
        "glove/Pine breadboard/Soy wax lantern), category (home/kitchen), price, stock"
    )


def test_the_listing_of_many_tables_is_cut(tmp_path: Path) -> None:
    for number in range(tables.TABLES_LISTED + 3):
        (tmp_path / f"bin{number:02d}.csv").write_text("weight\n1\n")
    listed = tables.tables_listing(Workspace(tmp_path)).splitlines()
    assert len(listed) == tables.TABLES_LISTED + 1
    assert listed[-1] == "(and 3 more tables)"


def test_no_rows_is_said_plainly(shop: Path) -> None:
    assert query(shop, "SELECT price FROM wares WHERE name LIKE '%kettle%'") == "No rows."


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM wares",
        "WITH x AS (SELECT 1) DELETE FROM wares",
        "UPDATE wares SET price = 0",
        "INSERT INTO wares VALUES (1, 2, 3, 4, 5)",
        "SELECT 1; DROP TABLE wares",
        "DROP TABLE wares",  # what an API without a grammar may send; nothing but the grammar refuses it
    ],
)
def test_it_only_reads(shop: Path, sql: str) -> None:
    with pytest.raises(ToolError, match=r"^SQL error: "):
        query(shop, sql)
    assert (shop / "wares.csv").read_text() == WARES
    assert query(shop, "SELECT COUNT(*) FROM wares") == "COUNT(*) = 4"


def test_nothing_is_written_outside_the_workspace(
    shop: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "made.sqlite"
    with pytest.raises(ToolError):
        query(shop, f"ATTACH DATABASE '{elsewhere}' AS other")
    assert not elsewhere.exists()


def test_each_query_reads_the_files_as_they_are_now(shop: Path) -> None:
    tool = TableQuery(Workspace(shop)).tool()
    assert tool.run({"sql": "SELECT COUNT(*) AS n FROM wares"}, CancelToken()) == "n = 4"
    (shop / "wares.csv").write_text(WARES + "KT-308,Kettle,kitchen,30.00,2\n")
    assert tool.run({"sql": "SELECT COUNT(*) AS n FROM wares"}, CancelToken()) == "n = 5"


def test_other_delimiters_blank_cells_and_odd_headers(tmp_path: Path) -> None:
    (tmp_path / "people.csv").write_text("\ufeffname;Age;;name\nAna;34;x;A\nEda;;y\n\n")
    assert query(tmp_path, "SELECT * FROM people ORDER BY name") == (
        "name | age | column3 | name_4\nAna | 34 | x | A\nEda | NULL | y | NULL\n(2 rows)"
    )
    assert query(tmp_path, "SELECT SUM(age) AS total FROM people") == "total = 34"


def test_long_results_are_cut(tmp_path: Path) -> None:
    (tmp_path / "n.csv").write_text("n\n" + "".join(f"{i}\n" for i in range(200)))
    shown = query(tmp_path, "SELECT n FROM n").splitlines()
    assert shown[0] == "n"
    assert shown[-1] == f"(the first {tables.ROWS_SHOWN} rows; there are more)"
    assert len(shown) == 2 + tables.ROWS_SHOWN


def test_without_tables_it_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\nNo lists, no tables.\n")
    with pytest.raises(ToolError, match=r"^The workspace has no tables \(.*\)\. Read or search the files"):
        query(tmp_path, "SELECT 1")
    assert TableQuery(Workspace(tmp_path)).tool().turn_spec("How many?").grammar_parameters is None


def test_files_that_hold_no_table_are_left_out(shop: Path) -> None:
    (shop / "empty.csv").write_text("\n")
    (shop / "header_only.csv").write_text("a,b\n")
    (shop / "broken.json").write_text("{")
    (shop / "flags.json").write_text('{"beta": true}')
    assert [table.name for table in workspace_tables(Workspace(shop))] == ["orders_2023_07", "wares"]
    with pytest.raises(ToolError, match=r"^SQL error: no such table: empty\. "):
        query(shop, "SELECT * FROM empty")


RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"


def test_a_runaway_query_is_stopped(shop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "QUERY_SECONDS", 0.2)
    with pytest.raises(ToolError, match="was stopped"):
        query(shop, RUNAWAY)


def test_cancel_stops_a_query(shop: Path) -> None:
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        query(shop, RUNAWAY, cancel)


def test_cache_directories_hold_no_tables_and_a_projects_dot_folders_do(shop: Path) -> None:
    (shop / ".cache").mkdir()
    (shop / ".cache" / "old.csv").write_text("a\n1\n")
    (shop / "node_modules").mkdir()
    (shop / "node_modules" / "x.csv").write_text("a\n1\n")
    (shop / ".seasons").mkdir()
    (shop / ".seasons" / "spring.csv").write_text("a\n1\n")
    assert [(table.name, table.source) for table in workspace_tables(Workspace(shop))] == [
        ("spring", ".seasons/spring.csv"),
        ("orders_2023_07", "orders/2023-07.csv"),
        ("wares", "wares.csv"),
    ]


def test_it_is_a_default_tool_where_there_are_tables(
    shop: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    def names(tools: str | None, root: Path) -> list[str]:
        return [tool.name for tool in select_tools(tools, Workspace(root))]

    assert names(None, shop) == ["list_dir", "read_file", "search_text", "calculator", "query_tables"]
    no_tables = tmp_path_factory.mktemp("prose")
    (no_tables / "story.txt").write_text("Once there was a shop.\n")
    assert names(None, no_tables) == ["list_dir", "read_file", "search_text", "calculator"]
    assert names("default,query_tables", no_tables)[-1] == "query_tables"


def test_with_query_tables_offered_the_calculator_names_it_for_code(shop: Path) -> None:
    calculator = {tool.name: tool for tool in select_tools(None, Workspace(shop))}["calculator"]
    with pytest.raises(ToolError, match="use query_tables"):
        calculator.run({"expression": "sum(wares['price'])"}, CancelToken())


def test_a_folder_of_csv_files_with_the_same_columns_is_one_table(shop: Path) -> None:
    (shop / "orders" / "2023-06.csv").write_text("order_id,sku,quantity\n9,KT-301,4\n")
    (shop / "orders" / "notes.csv").write_text("day,note\nMon,closed\n")  # other columns: not in it
    assert query(shop, "SELECT SUM(quantity) AS ladles FROM orders WHERE sku = 'KT-301'") == "ladles = 7"
    assert query(shop, "SELECT file, COUNT(*) AS n FROM orders GROUP BY file") == (
        "file | n\norders/2023-06.csv | 1\norders/2023-07.csv | 3\n(2 rows)"
    )


def test_a_json_list_of_records_is_a_table(tmp_path: Path) -> None:
    (tmp_path / "makers.json").write_text(
        '{"makers": [{"name": "Hollowbrook Potters", "lead_time_days": 21, "skus": ["KT-303", "KT-304"],'
        ' "contact": {"town": "Eastmere"}},'
        '{"name": "Quillon Weavers", "lead_time_days": 9, "skus": ["KT-301"], "active": false}]}'
    )
    (tmp_path / "flags.json").write_text('{"beta": true}')
    assert query(tmp_path, "SELECT name, active FROM makers WHERE skus LIKE '%KT-301%'") == (
        "name = Quillon Weavers, active = false"
    )
    assert query(tmp_path, "SELECT SUM(lead_time_days) AS days FROM makers") == "days = 30"
    assert query(tmp_path, "SELECT name FROM makers WHERE contact_town = 'Eastmere'") == (
        "name = Hollowbrook Potters"
    )
    with pytest.raises(ToolError) as missing:
        query(tmp_path, "SELECT * FROM flags")
    assert str(missing.value) == (
        "SQL error: no such table: flags. Tables: makers (name, lead_time_days, skus, contact_town, active)."
    )


def test_a_task_list_is_counted_by_a_query(tmp_path: Path) -> None:
    (tmp_path / "todo.md").write_text(
        "# Shop jobs\n\n## Before opening\n- [x] Sweep the floor\n- [ ] Price the lanterns\n\n"
        "## After closing\n- [ ] Count the till\n"
    )
    assert query(tmp_path, "SELECT section, SUM(done = 0) AS open FROM todo GROUP BY section ORDER BY 1") == (
        "section | open\nAfter closing | 1\nBefore opening | 1\n(2 rows)"
    )


def test_windows_line_ends(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_bytes(b'item,price\r\ntea,2.5\r\ncake,"3,5"\r\n')
    assert query(tmp_path, "SELECT item, price FROM prices ORDER BY item") == (
        "item | price\ncake | 3,5\ntea | 2.5\n(2 rows)"
    )


SQL_WORDS_THAT_BREAK = {
    "returning": "CREATE TABLE fails: a syntax error for every query of the workspace",
    "notnull": "CREATE TABLE fails: a syntax error for every query of the workspace",
    "isnull": "CREATE TABLE fails: a syntax error for every query of the workspace",
    "nothing": "CREATE TABLE fails: a syntax error for every query of the workspace",
    "deferrable": "CREATE TABLE fails: a syntax error for every query of the workspace",
    "autoincrement": "CREATE TABLE fails: a syntax error for every query of the workspace",
    "cast": "the column cannot be selected: a syntax error",
    "raise": "the column cannot be selected: a syntax error",
    "current_date": "SELECT current_date is today's date, not the column",
    "current_time": "SELECT current_time is the time now, not the column",
}


@pytest.mark.parametrize(
    "word",
    [
        "order",
        "group",
        "values",
        "offset",
        "key",
        *SQL_WORDS_THAT_BREAK,
    ],
)
def test_a_column_named_by_an_sql_word_can_be_queried(tmp_path: Path, word: str) -> None:
    (tmp_path / "bins.csv").write_text(f"{word},weight\nx,1\ny,2\n")
    (column, _) = workspace_tables(Workspace(tmp_path))[0].columns
    assert query(tmp_path, f"SELECT {column.name} FROM bins WHERE {column.name} = 'x'") == (
        f"{column.name} = x"
    )


def test_one_odd_file_leaves_the_other_tables_queryable(shop: Path) -> None:
    (shop / "loans.csv").write_text("item,returning\nladder,2024-05-01\n")
    assert query(shop, "SELECT COUNT(*) FROM wares") == "COUNT(*) = 4"


@pytest.mark.parametrize(
    ("question", "offered"),
    [
        ("What is the total stock?", True),
        ("What is the average price of the kitchen wares?", True),
        ("Which ware is the most expensive?", True),
        ("How many wares are there?", True),  # the table's rows, counted
        ("How many days does a parcel take to arrive?", False),  # days: no table's rows
        ("Who supplies the copper ladle?", False),
        ("How many open items are left?", True),  # a task list's rows
    ],
)
def test_it_is_offered_to_questions_that_ask_what_a_query_computes(
    shop: Path, question: str, offered: bool
) -> None:
    (shop / "todo.md").write_text("# To do\n\n- [ ] Order wicks\n- [x] Price the kettles\n")
    (tool,) = select_tools("query_tables", workspace=Workspace(shop))
    assert tool.offered(question) is offered


def test_a_maximum_alone_comes_with_the_rows_that_hold_it(shop: Path) -> None:
    assert query(shop, "SELECT MAX(price) FROM wares WHERE category = 'kitchen'") == (
        "MAX(price) = 27.0\nThe row holding it:\nsku | name | category | price | stock\n"
        "KT-307 | Pine breadboard | kitchen | 27.0 | 9"
    )
    assert query(shop, "SELECT MAX(price), name FROM wares") == "MAX(price) = 27.0, name = Pine breadboard"
