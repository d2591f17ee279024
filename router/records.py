"""A record: a class of typed fields, made at import time for a fraction of a dataclass's cost.

``@record`` gives what ``@dataclass(frozen=True, slots=True)`` gave, and
``@record(frozen=False)`` what ``@dataclass(slots=True)`` did: an ``__init__``
taking the fields in order (positionally or by name) with their defaults and
default factories, ``__eq__`` and (frozen) ``__hash__`` over the compared
fields, a dataclass's ``__repr__``, ``__slots__``, ``__match_args__``, a call
to ``__post_init__``, pickling and copying. mypy reads a record as it reads a
dataclass (``dataclass_transform``), and ``replace`` as ``dataclasses.replace``.

Why not ``dataclasses``: importing it pulls in ``inspect``, ``ast`` and
``tokenize`` (~15 ms), and it writes every method of every class as source text
and compiles it, then remakes the class for its slots: ~1.5 ms a class, and the
start-up of ``teardown``, ``pr-cleanup``, ``new`` or ``status`` makes about a
hundred. Here the methods a record's speed rests on (``__init__``, ``__eq__``,
``__hash__``) are compiled once a process for each number of fields (each
method when first used, ``__init__`` with a line only for the fields that have
a default factory: compiling costs by the line), with placeholder names, and
each class takes a copy renamed to its fields (~1 µs): its instances cost what
a dataclass's do. Standard library only, and no
``typing`` at run time.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform, overload

    _T = TypeVar("_T")
    _C = TypeVar("_C", bound=type)


class _Missing:
    """No default: the field must be given."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FrozenError(AttributeError):
    """A field of a frozen record was assigned or deleted."""


class Field:
    """One field of a record class: its name, default or default factory, and whether it
    takes part in ``==``, ``hash`` and ``repr``."""

    __slots__ = ("compare", "default", "default_factory", "name", "repr")

    def __init__(
        self,
        default: object = MISSING,
        default_factory: Callable[[], object] | Any = MISSING,
        compare: bool = True,
        repr: bool = True,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("a field takes a default or a default_factory, not both")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, compare={self.compare})"


if TYPE_CHECKING:

    @overload
    def field(*, default: _T, compare: bool = True, repr: bool = True) -> _T: ...
    @overload
    def field(
        *, default_factory: Callable[[], _T], compare: bool = True, repr: bool = True
    ) -> _T: ...
    def field(
        *, default: Any = ..., default_factory: Any = ..., compare: bool = True, repr: bool = True
    ) -> Any: ...

else:

    def field(*, default=MISSING, default_factory=MISSING, compare=True, repr=True):
        """A field with a default factory, or one left out of ``==``, ``hash`` and ``repr``."""
        return Field(default, default_factory, compare, repr)


if TYPE_CHECKING:

    @overload
    @dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
    def record(cls: _C, /) -> _C: ...
    @overload
    def record(*, frozen: bool = True) -> Callable[[_C], _C]: ...
    def record(cls: Any = None, /, *, frozen: bool = True) -> Any: ...

else:

    def record(cls=None, /, *, frozen=True):
        """Make ``cls`` a record: frozen unless ``frozen=False`` (see the module's doc)."""
        if cls is None:
            return lambda c: _make(c, frozen)
        return _make(cls, frozen)


def fields(obj: object) -> tuple[Field, ...]:
    """The fields of a record class or of a record, in order."""
    found: tuple[Field, ...] | None = getattr(obj, "__record_fields__", None)
    if found is None:
        raise TypeError(f"{obj!r} is not a record or a record class")
    return found


def values(obj: object) -> tuple[Any, ...]:
    """A record's field values, in order (shallow, unlike ``dataclasses.astuple``)."""
    fields(obj)
    record: Any = obj
    got: tuple[Any, ...] = record.__record_values__()
    return got


if TYPE_CHECKING:
    # mypy checks the changes against the record's fields and their types, as it does
    # for a dataclass: the record is one to it, and this is that function's contract.
    from dataclasses import replace as replace
else:

    def replace(obj, /, **changes):
        """A copy of record ``obj`` with ``changes`` (field name -> value); TypeError for
        a name that is not a field."""
        cls = obj.__class__
        given = dict(zip(cls.__record_names__, obj.__record_values__(), strict=True))
        given.update(changes)
        return cls(**given)


# -- making a record class ---------------------------------------------------------------


def _make(cls: type, frozen: bool) -> type:
    own = _own_fields(cls)
    # A record's fields follow those of the records it derives from, as a dataclass's do.
    table = {f.name: f for base in cls.__mro__[-1:0:-1] for f in _fields_of(base)}
    slotted = set(table)  # a base record's slots hold those
    table.update((f.name, f) for f in own)
    every = tuple(table.values())
    names = tuple(table)
    _check(cls.__qualname__, every)
    ns = {k: v for k, v in cls.__dict__.items() if k not in table and k not in _REMADE}
    ns["__slots__"] = tuple(f.name for f in own if f.name not in slotted)
    ns["__qualname__"] = cls.__qualname__
    ns["__record_fields__"] = every
    ns["__record_names__"] = names
    ns["__record_shown__"] = tuple(f.name for f in every if f.repr)
    ns.setdefault("__match_args__", names)
    ns["__record_frozen__"] = frozen
    ns["__record_post_init__"] = hasattr(cls, "__post_init__")
    # The compiled methods are made when first looked up: most classes a command imports
    # never make an instance, or are never compared.
    ns.setdefault("__init__", _FirstUse(_made_init))  # a class's own stays, as a dataclass's
    ns["__record_values__"] = _FirstUse(_made_values)
    ns.setdefault("__repr__", _repr)
    ns.setdefault("__eq__", _FirstUse(_made_eq))
    if frozen:
        if ns.get("__hash__") is None:  # a class that defines __eq__ has __hash__ = None
            ns["__hash__"] = _FirstUse(_made_hash)
        ns["__setattr__"] = _frozen_setattr
        ns["__delattr__"] = _frozen_delattr
        ns["__getstate__"] = _getstate
        ns["__setstate__"] = _setstate
    elif cls.__dict__.get("__hash__") is None:
        ns["__hash__"] = None  # a mutable record's hash would change under a dict's feet
    made = type(cls)(cls.__name__, cls.__bases__, ns)
    _point_cells_at(made, cls)
    return made


# What ``type`` makes for a class and makes anew for the slotted one.
_REMADE = frozenset({"__dict__", "__weakref__"})
# The names ``__init__`` uses besides the fields.
_INTERNAL = frozenset({"self", "_set_", "_missing_", "_factories_"})


def _check(qualname: str, every: tuple[Field, ...]) -> None:
    """Refuse, when the class is made, what ``__init__`` could not take."""
    clash = _INTERNAL.intersection(f.name for f in every)
    if clash:
        raise TypeError(f"{qualname}: {sorted(clash)} cannot name a field")
    defaulted = False
    for f in every:
        has = f.default is not MISSING or f.default_factory is not MISSING
        if defaulted and not has:
            raise TypeError(f"{qualname}: field {f.name} without a default follows one with one")
        defaulted = defaulted or has


def _fields_of(base: type) -> tuple[Field, ...]:
    found: tuple[Field, ...] = base.__dict__.get("__record_fields__", ())
    return found


def _own_fields(cls: type) -> list[Field]:
    space = cls.__dict__
    found = []
    for name, annotation in space.get("__annotations__", {}).items():
        text = annotation if type(annotation) is str else repr(annotation)
        if "ClassVar" in text and text.partition("[")[0].endswith("ClassVar"):
            continue  # a class attribute, not a field
        value = space.get(name, MISSING)
        made = value if type(value) is Field else Field(value)
        if type(made.default).__hash__ is None:
            # A list or dict default would be one object shared by every record.
            raise ValueError(f"{cls.__qualname__}.{name}: a mutable default needs default_factory")
        made.name = name
        found.append(made)
    return found


def _init(qualname: str, every: tuple[Field, ...], frozen: bool, post_init: bool) -> Any:
    """``__init__`` for these fields: the template for their number, renamed."""
    defaults: list[object] = []
    factories: list[object] = []
    for f in every:
        if f.default is not MISSING:
            defaults.append(f.default)
        elif f.default_factory is not MISSING:
            defaults.append(MISSING)  # the template calls the factory for it
        factories.append(f.default_factory)
    # Only a field with a default factory needs its line that calls the factory: the
    # template for these fields' number says which (compiling costs by the line).
    made_at = tuple(i for i, f in enumerate(every) if f.default_factory is not MISSING)
    template = _template(_init_source, len(every), frozen, post_init, made_at)["__init__"]
    code = _renamed_code(template.__code__, tuple(f.name for f in every), f"{qualname}.__init__")
    cells = {"_set_": object.__setattr__, "_missing_": MISSING, "_factories_": tuple(factories)}
    closure = tuple(_cell(cells[name]) for name in code.co_freevars)
    return _Function(code, template.__globals__, "__init__", tuple(defaults) or None, closure)


def _method(qualname: str, names: tuple[str, ...], name: str) -> Any:
    """``name`` (``__eq__``, ``__hash__`` or the values' tuple) over ``names``: attribute
    by attribute as a dataclass's are, the fastest Python has (faster than
    ``operator.attrgetter``). Each is compiled on its own, when first used: a command
    that only reads a record's values never compiles its __eq__ and __hash__."""
    fn = _template(_KEY_SOURCES[name], len(names), False, False)[name]
    code = _renamed_code(fn.__code__, names, f"{qualname}.{name}")
    return _Function(code, fn.__globals__, name)


def _renamed_code(code: Any, names: tuple[str, ...], qualname: str) -> Any:
    """``code`` of a template with its placeholders ``p0_``, ``p1_`` ... named ``names``."""
    to = dict(zip(_placeholders(len(names)), names, strict=True))
    return code.replace(
        co_varnames=tuple([to.get(n, n) for n in code.co_varnames]),
        co_names=tuple([to.get(n, n) for n in code.co_names]),
        co_consts=tuple([to.get(c, c) if c.__class__ is str else c for c in code.co_consts]),
        co_qualname=qualname,
    )


def _placeholders(count: int) -> list[str]:
    return [f"p{i}_" for i in range(count)]


def _init_source(params: list[str], frozen: bool, post_init: bool, made_at: tuple[int, ...]) -> str:
    # A field left out that has a factory holds the MISSING default: one ``is`` each.
    body = [f"  if {params[i]} is _missing_: {params[i]} = _factories_[{i}]()" for i in made_at]
    body += [f"  _set_(self, {p!r}, {p})" if frozen else f"  self.{p} = {p}" for p in params]
    body += ["  self.__post_init__()"] if post_init else ["  pass"]
    return (
        "def _maker(_set_, _missing_, _factories_):\n"
        f" def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
        " return __init__\n"
        "made = {'__init__': _maker(None, None, None)}\n"
    )


def _eq_source(params: list[str], *_shape: object) -> str:
    mine = "".join(f"self.{p}, " for p in params)
    theirs = "".join(f"other.{p}, " for p in params)
    return (
        "def __eq__(self, other):\n"
        f"  if other.__class__ is self.__class__: return ({mine}) == ({theirs})\n"
        "  return NotImplemented\n"
        "made = {'__eq__': __eq__}\n"
    )


def _hash_source(params: list[str], *_shape: object) -> str:
    mine = "".join(f"self.{p}, " for p in params)
    return f"def __hash__(self): return hash(({mine}))\nmade = {{'__hash__': __hash__}}\n"


def _values_source(params: list[str], *_shape: object) -> str:
    mine = "".join(f"self.{p}, " for p in params)
    return (
        f"def __record_values__(self): return ({mine})\n"
        "made = {'__record_values__': __record_values__}\n"
    )


_KEY_SOURCES = {"__eq__": _eq_source, "__hash__": _hash_source, "__record_values__": _values_source}


_TEMPLATES: dict[tuple[Any, int, bool, bool, tuple[int, ...]], dict[str, Any]] = {}


def _template(
    source: Any, count: int, frozen: bool, post_init: bool, made_at: tuple[int, ...] = ()
) -> dict[str, Any]:
    """The functions ``source`` writes for ``count`` fields named ``p0_``, ``p1_`` ...
    (``made_at``: those with a default factory): compiled once a process for each
    shape, since compiling costs ~0.2 ms."""
    key = (source, count, frozen, post_init, made_at)
    if key not in _TEMPLATES:
        space: dict[str, Any] = {}
        exec(source(_placeholders(count), frozen, post_init, made_at), space)
        _TEMPLATES[key] = space["made"]
    return _TEMPLATES[key]


def _cell(value: object) -> Any:
    def read() -> object:
        return value

    closure: Any = read.__closure__
    return closure[0]


_Function: Any = type(_cell)


def _point_cells_at(made: type, old: type) -> None:
    # A method that calls super() or names __class__ holds the class in a cell:
    # point it at the remade class, or super() would refuse the record.
    for value in old.__dict__.values():
        fn = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
        code = getattr(fn, "__code__", None)
        if code is not None and "__class__" in code.co_freevars:
            cell = fn.__closure__[code.co_freevars.index("__class__")]
            if cell.cell_contents is old:
                cell.cell_contents = made


# -- the compiled methods, made on first use ---------------------------------------------


class _FirstUse:
    """A record method made when it is first looked up, for the class it was set on.

    Each class has its own: a subclass's own method calling its base's through
    ``super()`` finds the base's, made for the base's fields (the class of the
    instance would name the subclass, whose own method it would then replace).
    """

    __slots__ = ("make", "name", "owner")

    def __init__(self, make: Callable[[Any], Any]) -> None:
        self.make = make
        self.owner: Any = None
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner, self.name = owner, name

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        made = self.make(self.owner)
        setattr(self.owner, self.name, made)  # looked up directly from now on
        return made if obj is None else made.__get__(obj, objtype)


def _made_init(owner: Any) -> Any:
    return _init(
        owner.__qualname__,
        owner.__record_fields__,
        owner.__record_frozen__,
        owner.__record_post_init__,
    )


def _made_values(owner: Any) -> Any:
    return _method(owner.__qualname__, owner.__record_names__, "__record_values__")


def _made_eq(owner: Any) -> Any:
    return _method(owner.__qualname__, _compared(owner), "__eq__")


def _made_hash(owner: Any) -> Any:
    return _method(owner.__qualname__, _compared(owner), "__hash__")


def _compared(owner: Any) -> tuple[str, ...]:
    return tuple(f.name for f in owner.__record_fields__ if f.compare)


# -- the methods every record shares ------------------------------------------------------


def _repr(self: Any) -> str:
    shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in self.__record_shown__])
    return f"{self.__class__.__qualname__}({shown})"


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenError(f"cannot assign to field {name!r} of a frozen {type(self).__qualname__}")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenError(f"cannot delete field {name!r} of a frozen {type(self).__qualname__}")


def _getstate(self: Any) -> tuple[object, ...]:
    got: tuple[object, ...] = self.__record_values__()
    return got


def _setstate(self: Any, state: tuple[object, ...]) -> None:
    # pickle and copy set the fields of a new instance: past the frozen __setattr__.
    for name, value in zip(self.__record_names__, state, strict=True):
        object.__setattr__(self, name, value)
