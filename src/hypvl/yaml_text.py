"""YAML read through libyaml where PyYAML was built with it: planning reads some thirty YAML files (specs, config,
dataset catalog) on every `snakemake` call, and the C parser reads them about six times faster than PyYAML's
pure-Python one, with the same results for the safe subset. A number that is not finite (`.inf`, `.nan`) is refused
where it is read, naming its line: no setting, spec or manifest of the suite has one. So is a document whose aliases
(and `<<` merges) expand to more than MAX_VALUES values (an alias bomb: nine nested lists of nine aliases are 10^9
values, which whatever walks the document would take minutes and gigabytes to visit); the suite's largest expands to
a few thousand."""

import math

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_VALUES = 1_000_000  # values a document may expand to, its aliases followed


def expanded_size(root, children, limit: int = MAX_VALUES) -> int | None:
    """How many values `root` expands to (itself and, recursively, each of `children(value)`, a shared value counted
    each time it is reached), computed once per distinct value; None once it passes `limit`, where a value holds
    itself (a recursive alias: endless) or where it nests deeper than Python recurses."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()  # the values being sized: a child among them holds its parent

    def size(value) -> int:
        known = sizes.get(id(value))
        if known is not None:
            return known
        if id(value) in open_:
            raise OverflowError
        open_.add(id(value))
        total = 1 + sum(size(child) for child in children(value))
        open_.discard(id(value))
        if total > limit:
            raise OverflowError
        sizes[id(value)] = total
        return total

    try:
        return size(root)
    except (OverflowError, RecursionError):
        return None


def node_children(node) -> list:
    """The nodes a YAML node holds (a mapping's keys and values, a sequence's items)."""
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else ()


def value_children(value) -> list:
    """The values a loaded document's value holds (a dict's, a list's): `expanded_size` of a document another loader
    read (Snakemake's `--configfile`)."""
    if isinstance(value, dict):
        return list(value.values())
    return value if isinstance(value, list) else ()


class SafeLoader(_Loader):
    """The safe loader (libyaml's where available), refusing numbers that are not finite and alias bombs. `load`
    sizes only a document that may hold an alias (a `*` in its text)."""

    may_alias = True

    def construct_document(self, node):
        if self.may_alias and expanded_size(node, node_children) is None:  # no mark: its text is this one line
            raise yaml.constructor.ConstructorError(
                None, None, f"YAML aliases expand to more than {MAX_VALUES} values (an alias bomb?); refused")
        return super().construct_document(node)


def _finite_float(loader, node) -> float:
    value = loader.construct_yaml_float(node)
    if not math.isfinite(value):
        raise yaml.constructor.ConstructorError(None, None, f"{node.value!r} is not a finite number", node.start_mark)
    return value


SafeLoader.add_constructor("tag:yaml.org,2002:float", _finite_float)


def load(text: str, loader=SafeLoader):
    """The document of `text`, read by `loader` (SafeLoader or a subclass)."""
    reader = loader(text)
    reader.may_alias = "*" in text
    try:
        return reader.get_single_data()
    finally:
        reader.dispose()


def safe_load(text: str):
    """`yaml.safe_load`, through libyaml where available, refusing `.inf`, `.nan` and alias bombs."""
    return load(text)


def error_parts(where, error: yaml.YAMLError) -> tuple[str, str]:
    """(`where` with the line of the document, the problem) of a YAML `error`, each one line (str(error) spans
    several)."""
    mark = getattr(error, "problem_mark", None)
    at = f"{where}:{mark.line + 1}" if mark is not None else str(where)
    return at, str(getattr(error, "problem", None) or str(error).splitlines()[0])


def error_line(where, error: yaml.YAMLError) -> str:
    """One line naming `where`, the line and the problem of a YAML `error`."""
    return ": ".join(error_parts(where, error))
