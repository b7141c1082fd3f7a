"""The workspace's data as SQL tables: each kind of source becomes the table a query needs, with plain
SQL names, the kind of each column, the few values of a text column, and its date columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.tools.table_catalog import (
    DATA_FILE_LIMIT,
    FEW_VALUES,
    Column,
    DataTable,
    sql_name,
    workspace_tables,
)
from localagent.tools.tables import tables_listing
from localagent.tools.workspace import Workspace


def tables_of(root: Path, files: dict[str, str]) -> dict[str, DataTable]:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return {table.name: table for table in workspace_tables(Workspace(root))}


def test_a_csv_file_is_a_table_of_plain_names_and_typed_columns(tmp_path: Path) -> None:
    (plots,) = tables_of(
        tmp_path,
        {
            "Plot list.csv": "Plot,Holder,Area (m2),Beds,Soil,Since\n"
            "P1,Orla,12.5,3,loam,2019-04-01\n"
            "P2,Bram,20,4,clay,2021-03-15 09:30\n"
            "P3,Yusra,8,,loam,2022-05-30\n"
        },
    ).values()
    assert plots.name == "plot_list"
    assert plots.source == "Plot list.csv"
    assert plots.columns == (
        Column("plot", "TEXT", ("P1", "P2", "P3")),
        Column("holder", "TEXT", ("Bram", "Orla", "Yusra")),
        Column("area_m2", "REAL"),
        Column("beds", "INTEGER"),
        Column("soil", "TEXT", ("clay", "loam")),
        Column("since", "TEXT", (), dates=True),
    )
    assert plots.rows[1] == ("P2", "Bram", 20.0, 4, "clay", "2021-03-15 09:30")
    assert plots.rows[2][3] is None  # a blank cell is NULL, not 0 or ''
    assert plots.column("soil") == plots.columns[4] and plots.column("Soil") is None


def test_numbers_as_people_write_them_are_numbers(tmp_path: Path) -> None:
    (costs,) = tables_of(
        tmp_path, {"costs.tsv": 'item\tprice\tshare\ntwine\t"1,234.50"\t12%\nnetting\t€12\t3.5%\n'}
    ).values()
    assert [column.kind for column in costs.columns] == ["TEXT", "REAL", "REAL"]
    assert costs.rows == (("twine", 1234.5, 12.0), ("netting", 12.0, 3.5))


def test_only_a_column_of_few_safe_values_lists_them(tmp_path: Path) -> None:
    many = "".join(f"seed {at}\n" for at in range(FEW_VALUES + 1))
    tables = tables_of(
        tmp_path,
        {
            "many.csv": "variety\n" + many,
            "quoted.csv": "remark\nfine\nit's dry\n",
            "long.csv": "remark\nshort\n" + "a" * 41 + "\n",
            "few.csv": "variety\n" + "".join(f"seed {at}\n" for at in range(FEW_VALUES)),
        },
    )
    assert tables["many"].columns[0].values == ()
    assert tables["quoted"].columns[0].values == ()  # a quote could not be written in the grammar
    assert tables["long"].columns[0].values == ()
    assert len(tables["few"].columns[0].values) == FEW_VALUES


def test_a_task_list_is_a_table_of_items_done_or_not_under_their_section(tmp_path: Path) -> None:
    chores = tables_of(
        tmp_path,
        {
            "chores.md": "# Chores\n\n## Spring\n- [x] Turn the compost\n- [ ] Mend the shed door\n\n"
            "## Summer\n- [X] Water the seedlings\n* [ ] Net the berries\n1. [ ] Order mulch\n"
            "- not a task\n"
        },
    )["chores"]
    assert chores.source == "chores.md (its task list, a row per item)"
    assert [column.name for column in chores.columns] == ["item", "done", "section", "line"]
    assert [column.kind for column in chores.columns] == ["TEXT", "INTEGER", "TEXT", "INTEGER"]
    assert chores.rows == (
        ("Turn the compost", 1, "Spring", 4),
        ("Mend the shed door", 0, "Spring", 5),
        ("Water the seedlings", 1, "Summer", 8),
        ("Net the berries", 0, "Summer", 9),
        ("Order mulch", 0, "Summer", 10),
    )


def test_pipe_tables_are_named_by_the_heading_they_fall_under(tmp_path: Path) -> None:
    tables = tables_of(
        tmp_path,
        {
            "docs/rota.md": "# Rota\n\n## Watering\n\n| Day | Who | Litres |\n|-----|:---:|-------:|\n"
            "| Mon | **Orla** | 40 |\n| Tue | `Bram` | 35 |\n\n## Tools\n\n| Tool | Count |\n| --- | --- |\n"
            "| spade | 3 |\n| rake |\n",
            "prices.md": "Tool | Price\n--- | ---\nspade | 14.5\n",
        },
    )
    assert list(tables) == ["rota_watering", "rota_tools", "prices"]
    watering = tables["rota_watering"]
    assert watering.source == "docs/rota.md (the table under 'Watering')"
    assert [(column.name, column.kind) for column in watering.columns] == [
        ("day", "TEXT"),
        ("who", "TEXT"),
        ("litres", "INTEGER"),
    ]
    assert watering.rows == (("Mon", "Orla", 40), ("Tue", "Bram", 35))  # emphasis and code marks off
    assert tables["rota_tools"].rows == (("spade", 3), ("rake", None))
    # one table without a heading, and no task list: the file's own name
    assert tables["prices"].source == "prices.md (the table)"
    assert tables["prices"].rows == (("spade", 14.5),)


def test_a_file_with_a_task_list_and_a_table_has_both(tmp_path: Path) -> None:
    tables = tables_of(tmp_path, {"plan.md": "- [ ] Sow peas\n\n| Bed | Crop |\n|---|---|\n| 1 | peas |\n"})
    assert {name: table.rows for name, table in tables.items()} == {
        "plan_tasks": (("Sow peas", 0, None, 1),),  # under no heading
        "plan_1": ((1, "peas"),),
    }


def test_bibtex_entries_are_rows(tmp_path: Path) -> None:
    (sources,) = tables_of(
        tmp_path,
        {
            "sources.bib": '@book{hill1999,\n  title = {The {Allotment} Handbook},\n  author = "Ada Hill",\n'
            "  year = 1999,\n}\n@comment{not an entry}\n"
            "@Article{moss2010, title={Soil and\n    Worms}, year={2010}, journal={Garden Notes}}\n"
        },
    ).values()
    assert sources.name == "sources" and sources.source == "sources.bib (a row per entry)"
    assert [(column.name, column.kind) for column in sources.columns] == [
        ("key", "TEXT"),
        ("type", "TEXT"),
        ("title", "TEXT"),
        ("author", "TEXT"),
        ("year", "INTEGER"),
        ("journal", "TEXT"),
    ]
    assert sources.rows == (
        ("hill1999", "book", "The Allotment Handbook", "Ada Hill", 1999, None),
        ("moss2010", "article", "Soil and Worms", None, 2010, "Garden Notes"),
    )


def test_json_records_have_their_nested_fields_as_columns(tmp_path: Path) -> None:
    tables = tables_of(
        tmp_path,
        {
            "members.json": '{"updated": "2024-05-01", "members": ['
            '{"name": "Orla", "contact": {"email": "o@example.org", "phone": {"home": "555-0101"}}, '
            '"paid": true, "crops": ["beans", "kale"]},'
            '{"name": "Bram", "contact": {"email": "b@example.org"}, "paid": false, "dues": 7.5}]}',
            "settings.json": '{"theme": "dark"}',
        },
    )
    assert list(tables) == ["members"]  # an object of settings holds no records
    members = tables["members"]
    assert [column.name for column in members.columns] == [
        "name",
        "contact_email",
        "contact_phone_home",
        "paid",
        "crops",
        "dues",
    ]
    assert members.rows == (
        ("Orla", "o@example.org", "555-0101", "true", '["beans", "kale"]', None),
        ("Bram", "b@example.org", None, "false", None, 7.5),
    )


def test_a_folder_of_csv_files_with_the_same_columns_is_one_table_too(tmp_path: Path) -> None:
    header = "day,crop,kg\n"
    tables = tables_of(
        tmp_path,
        {
            "harvests/june.csv": header + "2024-06-02,beans,1.5\n2024-06-09,kale,0.75\n",
            "harvests/july.csv": header + "2024-07-01,beans,2\n",
            "harvests/notes.csv": "day,note\n2024-06-02,rain\n",  # other columns: not in it
            "weighings/may.csv": header + "2024-05-30,kale,1\n",  # alone in its folder
        },
    )
    assert list(tables) == ["harvests", "july", "june", "notes", "may"]
    harvests = tables["harvests"]
    assert harvests.source == "the 2 files of harvests/ in one, with a column file"
    assert [column.name for column in harvests.columns] == ["file", "day", "crop", "kg"]
    assert harvests.columns[0].values == ("harvests/july.csv", "harvests/june.csv")
    assert harvests.rows == (
        ("harvests/july.csv", "2024-07-01", "beans", 2.0),
        ("harvests/june.csv", "2024-06-02", "beans", 1.5),
        ("harvests/june.csv", "2024-06-09", "kale", 0.75),
    )


def test_files_with_a_file_column_are_not_joined_into_one(tmp_path: Path) -> None:
    tables = tables_of(tmp_path, {"logs/a.csv": "file,size\nx,1\n", "logs/b.csv": "file,size\ny,2\n"})
    assert list(tables) == ["a", "b"]


def test_names_that_collide_or_are_sql_words_are_told_apart(tmp_path: Path) -> None:
    tables = tables_of(
        tmp_path,
        {
            "2024.csv": "Order,Group,2nd bed,Name,name,\n1,g,3,p,q,r\n",
            "order.csv": "v\n1\n",
            "shop/order.csv": "v\n2\n",
            "north/beds.csv": "v\n3\n",
            "south/beds.csv": "v,w\n4,5\n",
            "sheds/2023-07.csv": "v\n6\n",
        },
    )
    assert {name: table.source for name, table in tables.items()} == {
        "t_2024": "2024.csv",
        "beds": "north/beds.csv",
        "t_order": "order.csv",
        "shop_order": "shop/order.csv",
        "sheds_2023_07": "sheds/2023-07.csv",
        "south_beds": "south/beds.csv",
    }
    names = [column.name for column in tables["t_2024"].columns]
    assert names[:3] == ["order_", "group_", "c_2nd_bed"]
    assert names[3] == "name" and names[4] != "name" and names[4].startswith("name_")
    assert names[5] == "column6"


@pytest.mark.parametrize(
    ("text", "name"),
    [("Unit price", "unit_price"), ("orders/2023-07", "orders_2023_07"), ("Größe", "gr_e"), ("--", "")],
)
def test_sql_name(text: str, name: str) -> None:
    assert sql_name(text) == name


def test_the_catalog_sees_a_changed_added_or_deleted_file(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    (tmp_path / "beds.csv").write_text("bed,crop\n1,peas\n")
    first = workspace_tables(workspace)
    assert workspace_tables(workspace) is first  # nothing changed: not read again
    (tmp_path / "beds.csv").write_text("bed,crop\n1,peas\n2,leeks\n")
    (beds,) = workspace_tables(workspace)
    assert beds.rows == ((1, "peas"), (2, "leeks"))
    assert beds.columns[1].values == ("leeks", "peas")
    (tmp_path / "tools.csv").write_text("tool\nhoe\n")
    assert [table.name for table in workspace_tables(workspace)] == ["beds", "tools"]
    (tmp_path / "beds.csv").unlink()
    assert [table.name for table in workspace_tables(workspace)] == ["tools"]


def test_the_listing_names_each_table_with_its_source_and_columns(tmp_path: Path) -> None:
    tables_of(tmp_path, {"beds.csv": "bed,crop,sown\n1,peas,2024-03-02\n2,leeks,2024-04-10\n"})
    assert tables_listing(Workspace(tmp_path)) == "- beds (beds.csv, 2 rows): bed, crop (leeks/peas), sown"
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.md").write_text("# Beds\n\nPeas first.\n")
    assert tables_listing(Workspace(tmp_path / "empty")) == ""


def test_many_markdown_notes_without_tables_hide_no_data_file(tmp_path: Path) -> None:
    notes = {
        f"journal/day{number:03d}.md": f"# Day {number}\n\nQuiet.\n" for number in range(DATA_FILE_LIMIT + 5)
    }
    assert list(tables_of(tmp_path, {**notes, "sales.csv": "item,price\njam,3\n"})) == ["sales"]
