"""Load YAML safely and within limits: size after alias expansion, depth, no duplicate keys.

``yaml.safe_load`` refuses unsafe tags but shares aliased nodes, so ten lines of anchors
("billion laughs") describe a document of 10^9 values that every consumer walks in full;
deep nesting makes PyYAML's recursive composer, and every recursive walk after it, overflow
the Python stack; and a repeated key silently keeps its last value. ``load_yaml`` counts the
expanded size and the depth of every node *while composing*, before anything is built, so an
oversized document fails within the size of its text, and reports duplicate keys by name.

No jax import (this module is on the path of every spec and manifest).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import yaml

from jaxinspect.errors import SpecError, UsageError

#: Default bound on the values of a document after alias expansion (each scalar, list and
#: mapping counts one). A 1,000-layer model with a dozen parameters per layer needs ~50,000.
DEFAULT_MAX_NODES = 1_000_000
#: Default bound on nesting depth (a deep pytree is ~10 levels).
DEFAULT_MAX_DEPTH = 100
#: Environment variables that change the bounds.
MAX_NODES_ENV = "JAXINSPECT_MAX_SPEC_NODES"
MAX_DEPTH_ENV = "JAXINSPECT_MAX_SPEC_DEPTH"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_UNKNOWN_TAG = re.compile(r"constructor for the tag '([^']*)'")


@dataclass(frozen=True, slots=True)
class YamlLimits:
    """Bounds on one document: values after alias expansion, and nesting depth."""

    max_nodes: int = DEFAULT_MAX_NODES
    max_depth: int = DEFAULT_MAX_DEPTH


def limits_from_env() -> YamlLimits:
    """The default limits, or those set by ``JAXINSPECT_MAX_SPEC_NODES``/``..._DEPTH``.

    Raises:
        UsageError: A variable is set to something other than a positive integer.
    """
    return YamlLimits(
        max_nodes=_env_int(MAX_NODES_ENV, DEFAULT_MAX_NODES),
        max_depth=_env_int(MAX_DEPTH_ENV, DEFAULT_MAX_DEPTH),
    )


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"environment variable {name}={raw!r}: expected a positive integer")
    return value


class _LimitError(yaml.YAMLError):
    """A document over a limit, or with a duplicate key; carries where, like PyYAML's errors."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class _LimitedLoader(yaml.SafeLoader):
    """``SafeLoader`` that measures each composed node's expanded size and height."""

    def __init__(self, text: str, limits: YamlLimits) -> None:
        super().__init__(text)
        self.limits = limits
        self.depth = 0
        # id(node) -> (values after expansion, height); present once the node is complete,
        # so an alias to a node without an entry points into the node being composed.
        self.measured: dict[int, tuple[int, int]] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        is_alias = isinstance(event, yaml.AliasEvent)
        if self.depth >= self.limits.max_depth:
            raise _LimitError(
                f"nested deeper than {self.limits.max_depth} levels", event.start_mark
            )
        self.depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        if is_alias:
            known = self.measured.get(id(node))
            if known is None:
                raise _LimitError(
                    f"alias *{event.anchor} refers to a node that contains it (a cycle)",
                    event.start_mark,
                )
            size, height = known
        else:
            size, height = self._measure(node)
        if self.depth + height > self.limits.max_depth:
            raise _LimitError(
                f"nested deeper than {self.limits.max_depth} levels once aliases are expanded",
                event.start_mark,
            )
        if size > self.limits.max_nodes:
            raise _LimitError(
                f"more than {self.limits.max_nodes:,} values once aliases are expanded",
                event.start_mark,
            )
        return node

    def _measure(self, node: Any) -> tuple[int, int]:
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        else:
            children = []
        size, height = 1, 1
        for child in children:
            child_size, child_height = self.measured[id(child)]
            size += child_size
            height = max(height, child_height + 1)
        self.measured[id(node)] = (size, height)
        return size, height

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            _check_duplicate_keys(self, node)
        return super().construct_mapping(node, deep=deep)


def _check_duplicate_keys(loader: _LimitedLoader, node: Any) -> None:
    # Checked before merge keys (<<) are flattened: a key may override a merged one.
    first: dict[Any, Any] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            earlier = first.setdefault(key, key_node)
        except TypeError:
            continue  # an unhashable key: PyYAML's own error follows
        if earlier is not key_node:
            raise _LimitError(
                f"duplicate key {key!r} (first at line {earlier.start_mark.line + 1})",
                key_node.start_mark,
            )


def load_yaml(
    text: str, *, source: str, limits: YamlLimits | None = None, syntax_hint: str | None = None
) -> object:
    """Load one YAML document with safe tags, within ``limits``, refusing duplicate keys.

    Args:
        text: The document.
        source: Names it in errors (a path, or ``manifest PATH``).
        limits: Bounds; the defaults or the environment's when ``None``.
        syntax_hint: Advice added to YAML syntax errors (not to tag, key or limit errors).

    Raises:
        SpecError: The text is not valid YAML, uses an unsafe tag, repeats a key, or is over
            a limit; the message names the line and column.
    """
    limits = limits or limits_from_env()
    loader = None
    try:
        loader = _LimitedLoader(text, limits)  # reads the text: may raise a ReaderError
        return loader.get_single_data()
    except (yaml.scanner.ScannerError, yaml.parser.ParserError) as exc:
        raise SpecError(
            f"{_where(source, exc)}: YAML syntax error: {_problem(exc)}", hint=syntax_hint
        ) from None
    except _LimitError as exc:
        hint = None
        if "values" in exc.problem:
            hint = f"Set {MAX_NODES_ENV} to allow more."
        elif "deeper" in exc.problem:
            hint = f"Set {MAX_DEPTH_ENV} to allow more."
        raise SpecError(f"{_where(source, exc)}: {exc.problem}", hint=hint) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{_where(source, exc)}: {_problem(exc)}") from None
    except (ValueError, OverflowError, TypeError) as exc:
        # Values PyYAML resolves but cannot build: 2001-02-30, an integer of 5,000 digits.
        raise SpecError(f"{source}: invalid YAML value: {exc}") from None
    finally:
        if loader is not None:
            loader.dispose()


def _where(source: str, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source


def _problem(exc: yaml.YAMLError) -> str:
    problem = str(getattr(exc, "problem", None) or str(exc).splitlines()[0])
    tag = _UNKNOWN_TAG.search(problem)
    if tag is not None:  # PyYAML's "could not determine a constructor for the tag ..."
        name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        return f"YAML tag {name} is not allowed (only plain data: no tags that build objects)"
    return problem
