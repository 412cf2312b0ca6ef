"""The package's layers: no package imports a package above it, and no module is in an import
cycle.

The faces (the CLI, then chat, MCP and the reading room) → eval → views → api → a question's run
(cwread.run: the session, the plan carried out, a question over a library) → the answer → the
agents → the settings and plug-ins → the records of a run (cwread.records: the plan, the
question, the trace) → backends, retrieval, library → book → text → base (cache, errors,
progress): two packages of one layer would hide a cycle between them (book imported text while
text's grounding imported book). `training/` imports cwread, never the reverse. Checked on the
source (imports inside functions and relative ones too), so a new arrow back up fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

LAYERS = [
    ["cwread.cli"],
    ["cwread.chat", "cwread.mcp", "cwread.web"],
    ["cwread.eval"],
    ["cwread.views"],
    ["cwread.api"],
    ["cwread.run"],
    ["cwread.answer"],
    ["cwread.agents"],
    ["cwread.settings", "cwread.plugins"],
    ["cwread.records"],
    ["cwread.backends", "cwread.retrieval", "cwread.library"],
    ["cwread.book"],
    ["cwread.text"],
    ["cwread.cache", "cwread.environment", "cwread.progress", "cwread.errors", "cwread.data", "cwread"],
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in (REPO / "cwread").rglob("*.py")} | {
    module_name(p): p for p in (REPO / "training").rglob("*.py")
}


def unit_of(module: str) -> str:
    """The layer's unit a module belongs to: its package under cwread, or itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def imported(path: Path) -> set[str]:
    """Every cwread or training module `path` imports (see `imported_by`)."""
    return imported_by(module_name(path), path.read_text(encoding="utf-8"), path.name == "__init__.py")


def imported_by(module: str, source: str, is_package: bool = False) -> set[str]:
    """Every cwread or training module `source` (of `module`) imports: `from m import x`
    counts as m.x where that is a module, else as m; a relative import is resolved against
    the module's package."""
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] not in ("cwread", "training"):
                continue
            subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
            names.update(subs)
            if len(subs) < len(node.names):
                names.add(base)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] in ("cwread", "training"))
    return names


def test_every_package_has_a_layer():
    units = {unit_of(m) for m in MODULES if m.startswith("cwread")} - {"cwread.__main__"}
    assert units - set(RANK) == set()


def test_no_package_imports_a_package_above_it():
    upward = []
    for module, path in MODULES.items():
        if not module.startswith("cwread") or module == "cwread.__main__":
            continue
        for name in imported(path):
            if name.startswith("training") or RANK[unit_of(name)] < RANK[unit_of(module)]:
                upward.append(f"{module} imports {name}")
    assert upward == []


def test_no_module_is_in_an_import_cycle():
    """Within a layer too: two modules that import each other (a package's `__init__` that
    gathers its modules aside) are one job split badly, or a record in the wrong place."""
    edges = {
        module: {n for n in imported(path) if n in MODULES and not module.startswith(n + ".")}
        for module, path in MODULES.items()
        if module.startswith("cwread")
    }
    cycles, index, low, stack, done = [], {}, {}, [], set()

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w not in done:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                done.add(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in edges:
        if module not in index:
            visit(module)
    assert cycles == []


def test_relative_imports_are_resolved():
    """The probe that found relative imports passing unseen: each names the module it means."""
    source = "from ..book import grounding\nfrom . import extractive\nfrom .decide import Grounds\n"
    assert imported_by("cwread.answer.decide", source) == {
        "cwread.book.grounding",
        "cwread.answer.extractive",
        "cwread.answer.decide",
    }
    assert imported_by("cwread.answer", "from .. import api\n", is_package=True) == {"cwread.api"}


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
    # read at the faces or where a face resolves it, never by an agent as it runs (#90)
    assert sorted(m for mods in readers.values() for m in mods if m.startswith(("cwread.agents", "cwread.run"))) == []


def test_the_pipeline_compares_no_mode_strings():
    """Modes, kinds and sources are types (cwread.records.plan, cwread.records.question): a misspelt string
    compared in the pipeline would silently never match."""
    tree = ast.parse((REPO / "cwread" / "run" / "pipeline.py").read_text(encoding="utf-8"))
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


# the fields that hold a mode, a source, a status or a kind (cwread.records.plan, cwread.records)
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


def _on_mode(side: ast.AST) -> bool:
    """Whether `side` holds a mode: a field of MODE_FIELDS (a question's `kind` too), read off a
    record or held in a plain name."""
    if isinstance(side, ast.Attribute):
        return side.attr in MODE_FIELDS or (side.attr == "kind" and "question" in ast.unparse(side))
    return isinstance(side, ast.Name) and side.id in MODE_FIELDS


def compared_modes(source: str) -> list[str]:
    """Where `source` compares a mode with a string written in place: `==`, `in`, or a
    `match` on it with a string case."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_on_mode(side) for side in sides) and any(_strings(side) for side in sides):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Match) and _on_mode(node.subject):
            for case in node.cases:
                values = [p for p in ast.walk(case.pattern) if isinstance(p, ast.MatchValue)]
                if any(isinstance(v.value, ast.Constant) and isinstance(v.value.value, str) for v in values):
                    found.append(f"{case.pattern.lineno}: case {ast.unparse(case.pattern)}")
    return found


def test_no_module_compares_a_mode_to_a_string():
    """Everywhere in cwread, a mode, a source, a status or a question's kind held in a record's
    field or a name is compared with its type's members (or a named constant such as
    plan.AUTO), never with a string written in place: "extractve" or "cliam" would never
    match, silently."""
    compared = []
    for path in (REPO / "cwread").rglob("*.py"):
        compared += [f"{module_name(path)}:{line}" for line in compared_modes(path.read_text(encoding="utf-8"))]
    assert compared == []


def test_the_probes_that_passed_are_caught():
    """A mode on a plain name, and a `match` with a string case, were not caught before."""
    assert compared_modes('if mode == "extractive":\n    pass\n')
    assert compared_modes('match trace.status:\n    case "answered":\n        pass\n')
    assert not compared_modes("match trace.status:\n    case Status.ANSWERED:\n        pass\n")


BUDGET_SHARED = 4  # of Budget's fields, what another record or signature may not list again


def repeated_budgets(source: str) -> list[str]:
    """Records (classes) of `source` that declare BUDGET_SHARED or more of Budget's values
    again, rather than holding a Budget."""
    from cwread.retrieval.segments import BUDGET_VALUES

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name != "Budget":
            names = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            if len(names & set(BUDGET_VALUES)) >= BUDGET_SHARED:
                found.append(f"{node.lineno}: {node.name} {sorted(names & set(BUDGET_VALUES))}")
    return found


def test_no_record_repeats_the_budget():
    """Budget's values are declared once (cwread.retrieval.segments.Budget): a record that
    repeats them drifts when one is added; the API's constructor and the CLI's options name
    exactly them."""
    import inspect

    from cwread.retrieval.segments import BUDGET_VALUES, make_budget
    from cwread.settings import knob_names

    repeated = []
    for path in (REPO / "cwread").rglob("*.py"):
        repeated += [f"{module_name(path)}:{line}" for line in repeated_budgets(path.read_text(encoding="utf-8"))]
    assert repeated == []
    assert repeated_budgets("class Copy:\n    anchors: int\n    read: int\n    n_e: int\n    b_c: int\n")
    assert [k for k in knob_names() if k.startswith("budget.")] == [f"budget.{v}" for v in ("preset", *BUDGET_VALUES)]
    assert list(inspect.signature(make_budget).parameters) == ["preset", *BUDGET_VALUES]


def test_each_stage_setting_is_its_records_field_and_the_backends_options_theirs():
    """A run's settings are its stages' records' fields, by name ("stage.field": a field added to
    a record is a setting, and needs its line of help, or this fails); the CLI sets them with
    --set, four of them by shortcut flags too. The backend's options are BackendSettings'
    fields; its shortcut flags (--gguf...) and --backend-option fill its `own` settings."""
    from dataclasses import fields

    from cwread.backends.provider import BackendSettings
    from cwread.cli import settings_groups
    from cwread.settings import KNOB_HELP, AnswerSettings, FinderSettings, knob_names

    def names(record) -> set[str]:
        return {f.name for f in fields(record)}

    assert list(KNOB_HELP) == knob_names()
    assert {k.removeprefix("finder.") for k in knob_names() if k.startswith("finder.")} == names(FinderSettings)
    answer = {k.removeprefix("answer.") for k in knob_names() if k.startswith("answer.")}
    assert {n.removeprefix("answer_") for n in names(AnswerSettings)} == answer
    backend = set(settings_groups.BACKEND_OPTIONS) | set(settings_groups.SERVER_OPTIONS) | set(settings_groups.SERVING_OPTIONS)
    assert backend - names(BackendSettings) == {*settings_groups.SHORTCUTS, "backend_option"}
    assert names(BackendSettings) - backend == {"own", "environment_read"}


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
