"""The package's layers: no module imports a module above it.

cli → views → eval → api → session → pipeline → the agents and the answer → packing →
records → plan/question → backends → book/library/retrieval → cache/settings → errors. `training/` imports cwread, never the
reverse. Checked on the source (imports inside functions too), so a new arrow back up fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

LAYERS = [
    [
        "cwread.cli",
        "cwread.cli.app",
        "cwread.cli.tools",
        "cwread.cli.options",
        "cwread.cli.chat",
        "cwread.cli.exits",
        "cwread.mcp_server",
    ],
    ["cwread.views.render"],
    ["cwread.views.reading"],
    [
        "cwread.eval",
        "cwread.eval.run",
        "cwread.eval.methods",
        "cwread.eval.rows",
        "cwread.eval.report",
        "cwread.eval.summary",
    ],
    ["cwread.eval.dataset"],
    # one JSON writer, which the eval rows read too
    ["cwread.views.json_output"],
    ["cwread.api"],
    # a question over a library: candidate books, each through its own session
    ["cwread.library_question"],
    ["cwread.session"],
    ["cwread.pipeline"],
    ["cwread.answer.decide"],
    ["cwread.agents.finder", "cwread.agents.interpreter", "cwread.answer.support"],
    [
        "cwread.agents.shared",
        "cwread.packing",
        "cwread.answer.grounding",
        "cwread.answer.extractive",
        "cwread.answer.describe",
        "cwread.answer.span_reader",
        "cwread.answer.reader",
        "cwread.agents.reading_budget",
        "cwread.agents.judge",
    ],
    ["cwread.settings", "cwread.plugins"],
    ["cwread.records", "cwread.agents.model_facts"],
    ["cwread.plan", "cwread.question"],
    [
        "cwread.backends",
        "cwread.backends.select",
        "cwread.backends.ollama",
        "cwread.backends.openai_compat",
        "cwread.backends.embedded",
        "cwread.backends.scripted",
        "cwread.backends.callcache",
        "cwread.backends.provider",
        "cwread.text.tokens",
    ],
    # a library is searched with retrieval's words over books: library → retrieval → book
    ["cwread.library.catalog"],
    ["cwread.library.store"],
    ["cwread.retrieval.fusion"],
    [
        "cwread.retrieval.segments",
        "cwread.retrieval.cast",
        "cwread.retrieval.cast_build",
        "cwread.retrieval.embedders",
        "cwread.retrieval.lexical",
        "cwread.eval.metrics",
    ],
    ["cwread.text.sentences", "cwread.text.descriptions"],
    ["cwread.text.words"],
    # the book package's modules call each other (its format registry reads the model back)
    [
        "cwread.book",
        "cwread.book.load",
        "cwread.book.calibre",
        "cwread.book.folder",
        "cwread.book.formats",
        "cwread.book.formats.base",
        "cwread.book.formats.text",
        "cwread.book.formats.html",
        "cwread.book.formats.epub",
        "cwread.book.formats.pdf",
        "cwread.book.model",
        "cwread.book.chapters",
        "cwread.book.decoding",
        "cwread.book.paragraphs",
    ],
    ["cwread.views.output_files"],
    ["cwread.cache", "cwread.environment", "cwread.agents.modelfiles"],
    # the stages' packages hold only their docstrings
    [
        "cwread.errors",
        "cwread.views.terminal",
        "cwread.progress",
        "cwread",
        "cwread.data",
        "cwread.retrieval",
        "cwread.agents",
        "cwread.answer",
        "cwread.text",
        "cwread.library",
        "cwread.views",
    ],
]
RANK = {module: i for i, layer in enumerate(LAYERS) for module in layer}
# the registries' packages: a new format or backend is one module, its layer its package's
REGISTRIES = ("cwread.book.formats", "cwread.backends")
for path in (REPO / "cwread").rglob("*.py"):
    parts = path.relative_to(REPO).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    package = name.rpartition(".")[0]
    if name not in RANK and package in REGISTRIES:
        RANK[name] = RANK[package]


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every cwread module `path` imports (a `from m import x` counts as m, and m.x if a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.split(".")[0] in ("cwread", "training")
        ):
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] in ("cwread", "training"))
    return names


def test_every_module_has_a_layer():
    modules = {module_name(p) for p in (REPO / "cwread").rglob("*.py")} - {"cwread.__main__"}
    assert modules - set(RANK) == set()


def test_no_module_imports_a_module_above_it():
    upward = []
    for path in (REPO / "cwread").rglob("*.py"):
        here = module_name(path)
        if here == "cwread.__main__":
            continue
        for name in imported(path):
            if name.startswith("training") or (name in RANK and RANK[name] < RANK[here]):
                upward.append(f"{here} imports {name}")
    assert upward == []


ENV_READ = re.compile(
    r"""(?:environ\.get|environ\.setdefault|getenv|env\.get|env_positive)\(\s*["']([A-Z][A-Z0-9_]+)["']"""
    r"""|environ\[\s*["']([A-Z][A-Z0-9_]+)["']\s*\]|envvar\s*=\s*["']([A-Z][A-Z0-9_]+)["']"""
)


def test_each_environment_variable_is_read_in_one_module():
    """A variable read in two places drifts: each is read where the setting is declared."""
    readers: dict[str, set[str]] = {}
    for path in (REPO / "cwread").rglob("*.py"):
        for match in ENV_READ.finditer(path.read_text(encoding="utf-8")):
            name = next(group for group in match.groups() if group)
            readers.setdefault(name, set()).add(module_name(path))
    assert {"OLLAMA_HOST", "OPENAI_API_KEY", "XDG_CACHE_HOME", "CWREAD_GGUF"} <= set(readers)
    assert {name: sorted(mods) for name, mods in readers.items() if len(mods) > 1} == {}


def test_the_pipeline_compares_no_mode_strings():
    """Modes, kinds and sources are types (cwread.plan, cwread.question): a misspelt string
    compared in the pipeline would silently never match."""
    tree = ast.parse((REPO / "cwread" / "pipeline.py").read_text(encoding="utf-8"))
    compared = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(
            isinstance(side, ast.Constant) and isinstance(side.value, str)
            for side in [node.left, *node.comparators]
        )
    ]
    assert compared == []


# the fields that hold a mode, a source, a status or a kind (cwread.plan, cwread.records)
MODE_FIELDS = {
    "answer_mode",
    "mode",
    "evidence",
    "extract",
    "support",
    "status",
    "use",
    "reply",
    "finder",
    "shown",
}


def _strings(node: ast.AST) -> list[str]:
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


def test_no_module_compares_a_mode_to_a_string():
    """Everywhere in cwread, a mode, a source, a status or a question's kind held in a record's
    field is compared with its type's members (or a named constant such as plan.AUTO), never
    with a string written in place: "extractve" or "cliam" would never match, silently."""
    compared = []
    for path in (REPO / "cwread").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            on_mode = any(
                isinstance(side, ast.Attribute)
                and (side.attr in MODE_FIELDS or (side.attr == "kind" and "question" in ast.unparse(side)))
                for side in sides
            )
            if on_mode and any(_strings(side) for side in sides):
                compared.append(f"{module_name(path)}:{node.lineno}: {ast.unparse(node)}")
    assert compared == []


def test_providers_are_registered_one_line_each():
    """A backend is its module's PROVIDER and one registry line (cwread.backends.provider):
    every module of cwread.backends that has a PROVIDER, found by import, is registered."""
    import importlib
    import pkgutil

    import cwread.backends
    from cwread.backends.provider import Provider
    from cwread.backends.select import PROVIDERS

    found = []
    for info in pkgutil.iter_modules(cwread.backends.__path__, "cwread.backends."):
        provider = getattr(importlib.import_module(info.name), "PROVIDER", None)
        # the scripted backend is registered by the tests that use it, never by cwread (its docstring)
        if isinstance(provider, Provider) and info.name != "cwread.backends.scripted":
            found.append(info.name)
            assert PROVIDERS.get(provider.name) is provider, f"{info.name}.PROVIDER is not registered"
    registered = {name for name in PROVIDERS if name != "scripted"}
    assert len(found) == len(registered) >= 3
    select = (REPO / "cwread" / "backends" / "select.py").read_text(encoding="utf-8")
    assert select.count("register(") == len(registered)


def test_no_public_api_function_takes_arbitrary_keywords():
    """Every setting a public function of cwread.api takes is named in its signature: no
    **kwargs passed through, unchecked, to a layer below."""
    import inspect

    from cwread import api

    loose = [
        name
        for name in api.__all__
        if inspect.isfunction(getattr(api, name))
        and any(p.kind == p.VAR_KEYWORD for p in inspect.signature(getattr(api, name)).parameters.values())
    ]
    assert loose == []


def test_no_two_signatures_share_six_parameters():
    """Settings travel as one typed tree or one option group, not re-listed: no two functions
    of cwread take six or more parameters of the same names."""
    from itertools import combinations

    signatures = []
    for path in (REPO / "cwread").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self", "cls"}
                if len(names) >= 6:
                    signatures.append((f"{module_name(path)}.{node.name}", names))
    shared = [
        f"{first} and {second}: {sorted(a & b)}"
        for (first, a), (second, b) in combinations(signatures, 2)
        if len(a & b) >= 6
    ]
    assert shared == []
