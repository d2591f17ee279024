"""router.records: the one record mechanism, held to what our code relied on dataclasses for."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import pytest

from router.records import FrozenError, field, fields, record, replace, values


@record
class Point:
    """A frozen record with a plain default, a factory and a field left out of ==."""

    x: int
    y: str = "north"
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", compare=False, repr=False)

    def label(self) -> str:
        return f"{self.x}{self.y}"


@record(frozen=False)
class Counter:
    name: str
    seen: int = 0


@record
class Checked:
    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low above high")


@record
class Empty:
    pass


def test_construction_is_positional_or_by_keyword_in_field_order():
    assert Point(1, "east", ["a"]) == Point(tags=["a"], y="east", x=1)
    assert (Point(1).x, Point(1).y) == (1, "north")
    assert Point.__match_args__ == ("x", "y", "tags", "note")
    with pytest.raises(TypeError, match=r"Point.__init__\(\) missing 1 required positional"):
        Point()
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)
    with pytest.raises(TypeError, match="takes from 2 to 5 positional arguments but 6"):
        Point(1, "a", [], "n", 5)


def test_a_default_factory_makes_a_new_value_for_each_record():
    first, second = Point(1), Point(2)
    assert first.tags == [] and first.tags is not second.tags
    given = ["kept"]
    assert Point(1, tags=given).tags is given


def test_a_frozen_record_refuses_assignment_and_deletion():
    p = Point(1)
    with pytest.raises(FrozenError, match="cannot assign to field 'x' of a frozen Point"):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.y
    with pytest.raises(AttributeError):
        p.other = 1
    assert p == Point(1)


def test_a_mutable_record_takes_assignment_and_is_unhashable():
    c = Counter("a")
    c.seen += 1
    assert c == Counter("a", 1)
    assert Counter.__hash__ is None
    with pytest.raises(TypeError, match="unhashable"):
        hash(c)


def test_equality_and_hash_follow_the_compared_fields_of_the_same_class():
    assert Point(1, note="a") == Point(1, note="b")
    assert hash(Point(1, "y", ())) == hash(Point(1, "y", ()))
    assert Point(1) != Point(2)
    assert Point(1) != (1, "north", [], "")  # a tuple of the same values is no Point
    assert Counter("a") != Point(1)
    assert Empty() == Empty() and hash(Empty()) == hash(())
    assert len({Point(1, "y", ()), Point(1, "y", ()), Point(2, "y", ())}) == 2


def test_repr_names_the_fields_shown():
    assert repr(Point(1, tags=["t"], note="hidden")) == "Point(x=1, y='north', tags=['t'])"
    assert repr(Counter("a")) == "Counter(name='a', seen=0)"
    assert repr(Empty()) == "Empty()"


def test_a_record_has_slots_and_no_instance_dict():
    assert Point.__slots__ == ("x", "y", "tags", "note")
    assert not hasattr(Point(1), "__dict__")
    assert not hasattr(Counter("a"), "__dict__")
    assert Point(1).label() == "1north"  # methods survive the remade class


def test_replace_copies_with_changes_and_refuses_an_unknown_field():
    p = Point(1, tags=["a"], note="n")
    moved = replace(p, y="south")
    assert (moved, moved.note, p.y) == (Point(1, "south", ["a"]), "n", "north")
    assert moved.tags is p.tags  # shallow, as dataclasses.replace
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        replace(p, z=1)


def test_fields_and_values_read_a_record_in_order():
    assert [(f.name, f.default, f.compare) for f in fields(Point)] == [
        ("x", fields(Point)[0].default, True),
        ("y", "north", True),
        ("tags", fields(Point)[0].default, True),
        ("note", "", False),
    ]
    assert fields(Point(1)) == fields(Point)
    assert values(Point(1, tags=["t"])) == (1, "north", ["t"], "")
    with pytest.raises(TypeError, match="not a record"):
        fields(object())


def test_post_init_runs_after_the_fields_are_set():
    assert Checked(1, 2).high == 2
    with pytest.raises(ValueError, match="low above high"):
        Checked(3, 2)


def test_pickle_and_copy_give_an_equal_record():
    p = Point(1, tags=["a"], note="n")
    for again in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p)):
        assert (again, again.note) == (p, "n")
    assert copy.deepcopy(p).tags is not p.tags


def test_a_class_the_record_cannot_make_is_refused_when_defined():
    with pytest.raises(TypeError, match="field b without a default follows one with one"):

        @record
        class Bad:
            a: int = 0
            b: int

    with pytest.raises(ValueError, match="a mutable default needs default_factory"):

        @record
        class Shared:
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(ValueError, match="a default or a default_factory, not both"):
        field(default=1, default_factory=int)


def test_a_record_may_derive_from_a_record_and_call_super():
    @record
    class Base:
        a: int

        def describe(self) -> str:
            return f"a={self.a}"

    @record
    class Derived(Base):
        b: str = ""

        def describe(self) -> str:
            return super().describe() + f" b={self.b}"

    d = Derived(1, "x")
    assert (d.describe(), Derived.__slots__, d == Derived(1, "x")) == ("a=1 b=x", ("b",), True)
    assert d != Base(1)


def test_making_a_record_class_costs_a_tenth_of_a_dataclass():
    # The figure is CPU time of 50 classes, in a fresh interpreter: import time is
    # what records are for (DESIGN §15's start-up budgets).
    code = (
        "import time, sys\n"
        "from router.records import record\n"
        "src = 'class C:\\n a: str\\n b: int\\n c: str\\n d: tuple\\n e: str = \"\"\\n f: int = 0\\n'\n"
        "bodies = []\n"
        "for i in range(50):\n"
        "    ns = {}\n"
        "    exec(src, ns)\n"
        "    bodies.append(ns['C'])\n"
        "t = time.process_time()\n"
        "for b in bodies: record(b)\n"
        "print((time.process_time() - t) / 50)\n"
    )
    best = min(
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(3)
    )
    assert best < 0.0002, f"{best * 1000:.3f} ms a class"


def test_only_what_a_record_uses_is_compiled_for_it():
    # Compiling costs by the line (~90,000 instructions a field): a field without a
    # default factory gets no line that calls one, and reading a record's values
    # compiles neither its __eq__ nor its __hash__. 21 fields: no other record here has
    # as many, so nothing compiled for another test is seen.
    from router import records

    wide = record(type("Wide", (), {"__annotations__": {f"f{i}": "int" for i in range(21)}}))
    made = wide(*range(21))
    assert values(made) == tuple(range(21))
    assert "_factories_" not in type(made).__init__.__code__.co_freevars
    compiled = [set(funcs) for key, funcs in records._TEMPLATES.items() if key[1] == 21]
    assert sorted(map(sorted, compiled)) == [["__init__"], ["__record_values__"]]
    assert made == wide(*range(21)) and hash(made) == hash(wide(*range(21)))
    with_factory = Point(1)
    assert "_factories_" in type(with_factory).__init__.__code__.co_freevars
    assert with_factory.tags == [] and Point(2).tags is not with_factory.tags


def test_a_record_method_made_on_first_use_is_the_one_of_the_class_it_was_found_on():
    """A subclass's own ``__init__`` or ``__eq__`` calling its base's through ``super()``
    gets the base's, made for the base's fields, and stays the subclass's own."""

    @record
    class Base:
        a: int
        b: int = field(default=2, compare=False)

    @record
    class Custom(Base):
        c: int = 3

        def __init__(self, a: int) -> None:
            super().__init__(a, 20)  # the base's fields
            object.__setattr__(self, "c", 30)

        def __eq__(self, other: object) -> bool:
            return super().__eq__(other)  # the base compares ``a`` alone

        __hash__ = Base.__hash__

    first, second = Custom(1), Custom(5)
    assert (values(first), values(second)) == ((1, 20, 30), (5, 20, 30))
    other = Custom(1)
    object.__setattr__(other, "c", 99)
    assert first == other and hash(first) == hash(other)
    assert Custom(1) != Custom(2)
    assert values(Custom(6)) == (6, 20, 30)
    assert Custom.__init__.__qualname__.endswith("<locals>.Custom.__init__")  # still its own
    assert Base(1, 2) == Base(1, 9) and Base(1) != Base(2)
