"""Reading a YAML document strictly (no repeated key) and listing its schema violations by dotted key path; the
replication specs and their claims are read this way."""

from pathlib import Path

import jsonschema
import yaml

from hypvl.errors import InputError
from hypvl.yaml_text import SafeLoader, error_line, load


class _UniqueKeyLoader(SafeLoader):
    """A YAML loader that rejects a key repeated within one mapping (PyYAML keeps the last).

    Keys merged in with `<<: *anchor` may be overridden; only keys written out are checked.
    """

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> dict:
    """Parse a YAML file; InputError names the file and line of a syntax error or duplicate key."""
    try:
        return load(Path(path).read_text(encoding="utf-8"), _UniqueKeyLoader)
    except FileNotFoundError:
        raise InputError(f"{path}: replication spec not found") from None
    except yaml.YAMLError as error:
        raise InputError(error_line(path, error)) from None


def schema_problems(schema: dict, document, prefix: str = "") -> list[str]:
    """Every violation of `schema` by `document`, sorted, each as `<prefix><dotted key path>: <message>` (e.g.
    `tables.table1.columns.imagenet: ...`); empty when the document is valid."""
    validator = jsonschema.Draft202012Validator(schema)
    problems = sorted(_describe(error) for error in validator.iter_errors(document))
    return [f"{prefix}{_key_path(where)}: {message}" for where, message in problems]


def _key_path(parts) -> str:
    """Dotted key path of a schema error location, e.g. `tables.table1.columns.imagenet`."""
    return ".".join(str(part) for part in parts) or "<top level>"


def _describe(error) -> tuple[list[str], str]:
    """(key path, message) of one schema error; for a oneOf, those of the closest alternative's complaint."""
    if error.validator == "oneOf" and error.context:
        error = max(error.context, key=lambda sub: (len(sub.absolute_path), sub.validator != "type"))
    return [str(part) for part in error.absolute_path], error.message
