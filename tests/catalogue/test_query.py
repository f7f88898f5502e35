"""cartotheca.catalogue.query: parsing and compiling of filter{}, search, sort[], extent, paging."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, create_engine, event, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from cartotheca.catalogue import query
from cartotheca.catalogue.query import Field, FieldMap, FilterTerm
from cartotheca.errors import InvalidQuery

THINGS = Table("things", MetaData(), Column("id", Integer, primary_key=True),
               Column("title", String, nullable=False), Column("made", DateTime, nullable=False),
               Column("size", Integer))
TAGS = Table("tags", MetaData(), Column("thing_id", Integer), Column("name", String))
FIELDS = FieldMap(
    fields={
        "title": Field(THINGS.c.title),
        "made": Field(THINGS.c.made, kind=dt.datetime),
        "size": Field(THINGS.c.size, kind=int),
        "pk": Field(THINGS.c.id, kind=int, nullable=False),
        "tags.name": Field(TAGS.c.name, via=lambda c: THINGS.c.id.in_(select(TAGS.c.thing_id)
                                                                     .where(c)), sortable=False),
    },
    search_fields={"title": THINGS.c.title},
    default_search_fields=("title",),
    default_sort=(THINGS.c.made.desc(),),
    tiebreak=THINGS.c.id,
)


def sql(clause, dialect=None) -> str:
    return str(clause.compile(dialect=dialect or sqlite.dialect(),
                              compile_kwargs={"literal_binds": True}))


def term(key: str, *values: str):
    return query.compile_term(query.filter_terms([(key, v) for v in values])[0], FIELDS)


# -- filter keys -----------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "expected"), [
    ("filter{title}", ("title", "eq", False)),
    ("filter{title.icontains}", ("title", "icontains", False)),
    ("filter{-title.in}", ("title", "in", True)),
    ("filter{owner.username}", ("owner.username", "eq", False)),
    ("filter{owner.username.istartswith}", ("owner.username", "istartswith", False)),
    ("filter{category.identifier.isnull}", ("category.identifier", "isnull", False)),
    # an unknown suffix is read as part of the path (then rejected as an unknown field)
    ("filter{title.nosuchop}", ("title.nosuchop", "eq", False)),
])
def test_parse_filter_key(key, expected):
    assert query.parse_filter_key(key) == expected


@pytest.mark.parametrize("key", ["filter{title", "filter{}", "filter{-}", "filter{.title}",
                                 "filter{title..in}", "filterX"])
def test_malformed_filter_keys(key):
    with pytest.raises(InvalidQuery) as caught:
        query.filter_terms([(key, "x")])
    assert caught.value.code == "parse_error"


def test_filter_terms_group_repeated_keys_and_skip_other_params():
    terms = query.filter_terms([("filter{type.in}", "a"), ("page", "2"), ("filter{type.in}", "b"),
                                ("filter", "cql"), ("filter{-pk}", "3")])
    assert terms == [FilterTerm("filter{type.in}", "type", "in", False, ("a", "b")),
                     FilterTerm("filter{-pk}", "pk", "eq", True, ("3",))]


# -- compiling -------------------------------------------------------------------------------


def test_case_sensitive_operators_never_lower():
    for op in ("contains", "startswith", "endswith"):
        for dialect in (sqlite.dialect(), postgresql.dialect()):
            text = sql(term(f"filter{{title.{op}}}", "Ab"), dialect)
            assert "lower" not in text and "ILIKE" not in text and "LIKE" in text
    assert sql(term("filter{title}", "Ab")) == "things.title = 'Ab'"
    assert sql(term("filter{title.in}", "Ab", "cd")) == "things.title IN ('Ab', 'cd')"


def test_case_insensitive_operators_lower_both_sides():
    assert sql(term("filter{title.iexact}", "AB")) == "lower(things.title) = 'ab'"
    text = sql(term("filter{title.icontains}", "A%b"))
    assert "lower(things.title) LIKE" in text and "/%" in text  # wildcard escaped
    assert "lower" in sql(term("filter{title.istartswith}", "A"))
    assert "lower" in sql(term("filter{title.iendswith}", "A"))


def test_first_value_only_except_in_and_range():
    assert sql(term("filter{title}", "a", "b")) == "things.title = 'a'"
    assert sql(term("filter{size.range}", "1", "5")) == "things.size BETWEEN 1 AND 5"
    assert sql(term("filter{size.range}", "1,5")) == "things.size BETWEEN 1 AND 5"
    assert sql(term("filter{pk.in}", "1,2", "3")) == "things.id IN (1, 2, 3)"


def test_comparisons_convert_values():
    assert sql(term("filter{size.gte}", "7")) == "things.size >= 7"
    assert sql(term("filter{made.lt}", "2020-01-01T02:00:00+02:00")) == \
        "things.made < '2020-01-01 00:00:00.000000'"


def test_negation_keeps_nulls_and_rows_without_relations():
    assert sql(term("filter{-title}", "a")) == "things.title != 'a' OR things.title IS NULL"
    assert sql(term("filter{-pk}", "1")) == "things.id != 1"
    negated = sql(term("filter{-tags.name}", "x"))
    assert negated.startswith("(things.id NOT IN (SELECT tags.thing_id")


def test_isnull():
    assert sql(term("filter{title.isnull}", "true")) == "things.title IS NULL"
    assert sql(term("filter{title.isnull}", "0")) == "things.title IS NOT NULL"
    assert "NOT IN" in sql(term("filter{tags.name.isnull}", "true"))


@pytest.mark.parametrize(("key", "value", "message"), [
    ("filter{nosuch}", "1", "Invalid filter field: nosuch"),
    ("filter{pk}", "abc", "Invalid value for filter{pk}: abc"),
    ("filter{made.gt}", "soon", "Invalid value for filter{made.gt}: soon"),
    ("filter{size.icontains}", "1", "Invalid filter operator for filter{size.icontains}: icontains"),
    ("filter{size.range}", "1", "Invalid value for filter{size.range}: range needs two values"),
    ("filter{title}", "a\x00b", "Invalid value for filter{title}: a\x00b"),
])
def test_bad_terms(key, value, message):
    with pytest.raises(InvalidQuery) as caught:
        term(key, value)
    assert caught.value.message == message


def test_booleans():
    assert [query.to_bool(v) for v in ("0", "false", "FALSE", "", "1", "yes", "x")] == \
        [False, False, False, False, True, True, True]
    assert query.strict_bool("True", "favorite") is True
    assert query.strict_bool("0", "favorite") is False
    with pytest.raises(InvalidQuery):
        query.strict_bool("maybe", "favorite")


# -- search and sort -------------------------------------------------------------------------


def test_search_ands_terms_and_ors_fields():
    fields = FieldMap(fields={}, search_fields={"title": THINGS.c.title, "tag": TAGS.c.name})
    clause = query.compile_search({"search": ["a,b"], "search_fields": ["title", "tag"]}, fields)
    text = sql(clause)
    assert text.count(" AND ") == 1 and text.count(" OR ") == 2
    assert query.compile_search({"search": ["  "], "search_fields": ["title"]}, fields) is None
    with pytest.raises(InvalidQuery, match="Invalid search field: nosuch"):
        query.compile_search({"search": ["a"], "search_fields": ["nosuch"]}, fields)


def test_sort_order_and_tiebreak_direction():
    order = query.compile_sort({"sort[]": ["-title", "size"]}, FIELDS)
    # NULLs placed as PostgreSQL does, on every database; NOT NULL columns need no clause
    assert [sql(o) for o in order] == ["things.title DESC", "things.size ASC NULLS LAST",
                                       "things.id DESC"]
    order = query.compile_sort({"ordering": ["size,-title"]}, FIELDS)
    assert [sql(o) for o in order] == ["things.size ASC NULLS LAST", "things.title DESC",
                                       "things.id ASC"]
    order = query.compile_sort({"sort[]": ["-size"]}, FIELDS)
    assert [sql(o) for o in order] == ["things.size DESC NULLS FIRST", "things.id DESC"]
    order = query.compile_sort({}, FIELDS)
    assert [sql(o) for o in order] == ["things.made DESC", "things.id DESC"]
    with pytest.raises(InvalidQuery, match=r"Invalid filter field: \['tags.name'\]"):
        query.compile_sort({"sort[]": ["tags.name"]}, FIELDS)


# -- extent and paging -----------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "boxes"), [
    (["1,2,3,4"], [(1, 2, 3, 4)]),
    (["1,2,3,4,5,6,7,8"], [(1, 2, 3, 4), (5, 6, 7, 8)]),
    (["1,2,3,4", "5,6,7,8"], [(1, 2, 3, 4), (5, 6, 7, 8)]),
    (["170,-10,-170,10"], [(170, -10, 180, 10), (-180, -10, -170, 10)]),
    (["170,-10,190,10"], [(170, -10, 180, 10), (-180, -10, -170, 10)]),
    (["-200,0,0,1"], [(160, 0, 180, 1), (-180, 0, 0, 1)]),
    (["-190,0,190,1"], [(-180, 0, 180, 1)]),
])
def test_parse_extent(raw, boxes):
    assert query.parse_extent(raw) == boxes


@pytest.mark.parametrize("raw", ["", "1,2,3", "a,b,c,d", "0,10,1,5", "0,-100,1,0", "nan,0,1,1"])
def test_bad_extent(raw):
    with pytest.raises(InvalidQuery):
        query.parse_extent([raw])


def page(**params):
    return query.parse_page({k: [v] for k, v in params.items()}, default_size=20, search_size=10,
                            max_size=1000)


def test_parse_page():
    assert page() == query.Page(1, 20, 20)
    assert page(search="x") == query.Page(1, 10, 10)
    assert page(search="x", page_size="15", page="2") == query.Page(2, 15, 15)
    assert page(page="last").number is None
    assert query.parse_page({}, default_size=0, search_size=10, max_size=1000).size is None
    for bad in ({"page": "0"}, {"page": "x"}, {"page_size": "0"}, {"page_size": "1001"}):
        with pytest.raises(InvalidQuery):
            page(**bad)


@pytest.mark.parametrize(("number", "size", "counted", "walked"), [
    (1, 20, True, True), (50, 20, True, True), (51, 20, False, False), (2, 600, True, False),
])
def test_first_pages_read_the_walked_form_and_counts_never_do(number, size, counted, walked):
    engine = create_engine("sqlite://")
    THINGS.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(THINGS.insert(), [{"title": f"t{i}", "made": dt.datetime(2026, 1, 1), "size": i}
                                       for i in range(1, 1201)])
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute",
                 lambda _c, _cur, statement, *_: seen.append(statement))
    with Session(engine) as session:
        listing = query.page(session, select(THINGS), query.ListQuery(page=query.Page(number, size, size)),
                             FIELDS, where=[THINGS.c.size >= 1], walked_where=[THINGS.c.size > 0],
                             counted=counted)
    assert len(listing.rows) == min(size, 1200 - (number - 1) * size)
    counts = [s for s in seen if "count(" in s]
    pages = [s for s in seen if "count(" not in s]
    assert all(">= ?" in s for s in counts) and len(counts) == (1 if counted else 0)
    assert len(pages) == 1 and ("> ?" in pages[0]) is walked and (">= ?" in pages[0]) is not walked


@pytest.mark.parametrize("counted", [True, False])
def test_narrowing_asked_after_the_filters_comes_after_them_in_the_sql(counted):
    # SQLite drives a query from the first ``id IN (subquery)`` it reads: a wide narrowing (an
    # extent's R*Tree search) must follow the request's filters, not lead them.
    engine = create_engine("sqlite://")
    THINGS.metadata.create_all(engine)
    TAGS.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(THINGS.insert(), [{"title": f"t{i}", "made": dt.datetime(2026, 1, 1), "size": i}
                                       for i in range(1, 41)])
        conn.execute(TAGS.insert(), [{"thing_id": i, "name": "odd" if i % 2 else "even"}
                                     for i in range(1, 41)])
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute",
                 lambda _c, _cur, statement, *_: seen.append(statement))
    wide = THINGS.c.id.in_(select(THINGS.c.id).where(THINGS.c.title.like("t%")))
    tagged = FilterTerm("filter{tags.name}", "tags.name", "eq", False, ("even",))
    wanted = query.ListQuery(filters=(tagged,), sort=(("size", "asc"),), page=query.Page(1, 10, 10))
    with Session(engine) as session:
        listing = query.page(session, select(THINGS), wanted, FIELDS, where=[THINGS.c.size <= 30],
                             counted=counted, where_after_filters=[wide])
    assert list(listing.rows) == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]  # ids, the first column
    assert listing.total == (15 if counted else None)
    assert len(seen) == (2 if counted else 1)
    for statement in seen:
        assert statement.index("FROM tags") < statement.index("LIKE")
