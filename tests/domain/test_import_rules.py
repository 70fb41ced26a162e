"""The shape of the code, enforced: who may import what (read from every module's AST, nothing imported).

- kazoo only in core/zk and sandbox/; pyspark only in core/fleet; streamlit only in dashboard/; kafka-python
  (`kafka`) only in core/kafka;
- pure by path: every module at the root of core (model, errors, zkformat, health, plans, ...) and in the
  core.balance and core.topics packages imports no I/O library, opens no file and imports only other pure modules;
  whatever does I/O lives in a package that says so (ADAPTERS: zk, kafka, fleet, audit, policy, cli, cluster), and
  every package of core is one or the other;
- core never imports dashboard; dashboard views import no CLI module; dashboard helpers marked pure import no core.zk;
- what ships (core, dashboard) never imports the sandbox (sandbox/: make run, tests, benches); the sandbox may
  import core; its argparse is all in sandbox/cli.py, but for zkserver's (standard library only);
- no import cycles between modules (function-level imports included: a cycle is a cycle even when deferred);
- no file outside tests over 600 lines.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "dashboard", "sandbox")
PURE_PACKAGES = ("core.balance", "core.topics", "core.security")  # beside every module at the root of core
# The packages that reach the outside world (a pure module imports none of them, even their pure helpers such as
# core.kafka.bootstrap: the path says what a module may do). core.policy holds keel.toml's reader (config), the
# roles (access) and the write gate, which imports core.zk.settings and the audit store.
ADAPTERS = ("core.zk", "core.kafka", "core.fleet", "core.audit", "core.policy", "core.cli", "core.cluster")
ENTRY_POINTS = ("core.__main__",)  # `python -m core`: the CLI's entry, at the root because Python wants it there
IO_MODULES = {"os", "socket", "subprocess", "sqlite3", "shutil", "tempfile", "urllib", "http", "requests",
              "threading", "multiprocessing", "kazoo", "pyspark", "streamlit", "kafka", "pathlib", "time"}
MAX_LINES = 600


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING" or (
        isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")


def imports(path: Path, name: str) -> set[str]:
    """Every module `path` imports, at any depth, except under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - child.level + 1]
                    mod = ".".join(base + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                found.add(mod)
                found.update(f"{mod}.{a.name}" for a in child.names)  # `from core.zk import reader`
            visit(child)
    visit(tree)
    return found


ALL = modules()
IMPORTS = {name: imports(path, name) for name, path in ALL.items()}


def within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def is_pure(name: str) -> bool:
    """Pure by path: the root of core (a module, not a package) and the pure packages."""
    at_root = name.startswith("core.") and name.count(".") == 1 and not ALL[name].name == "__init__.py"
    return (name == "core" or at_root and name not in ENTRY_POINTS) or within(name, PURE_PACKAGES)


PURE = sorted(m for m in ALL if is_pure(m))


def internal(names: set[str]) -> set[str]:
    """Imported names that are modules of ours (a `from pkg import function` resolves to pkg)."""
    out = set()
    for n in names:
        while n and n not in ALL:
            n = n.rsplit(".", 1)[0] if "." in n else ""
        if n:
            out.add(n)
    return out


@pytest.mark.parametrize("library, allowed", [
    ("kazoo", ("core.zk", "sandbox")),
    ("pyspark", ("core.fleet",)),
    ("streamlit", ("dashboard",)),
    ("kafka", ("core.kafka",)),  # kafka-python (tests/ may use it too: only core/, dashboard/, sandbox/ are scanned)
])
def test_third_party_libraries_stay_in_their_package(library, allowed):
    offenders = sorted(m for m, deps in IMPORTS.items()
                       if any(within(d, (library,)) for d in deps) and not within(m, allowed))
    assert offenders == [], f"{library} imported outside {allowed}: {offenders}"


def test_pure_modules_do_no_io():
    offenders = {}
    for m in PURE:
        deps = IMPORTS[m]
        bad = sorted(d for d in deps if d.split(".")[0] in IO_MODULES)
        bad += sorted(d for d in internal(deps) if not is_pure(d))
        calls = [n for n in ast.walk(ast.parse(ALL[m].read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("open", "print", "input")]
        if calls:
            bad.append(f"calls {sorted({c.func.id for c in calls})}")
        if bad:
            offenders[m] = bad
    assert offenders == {}


def test_every_core_package_is_pure_or_an_adapter():
    """A new package of core says which it is: in PURE_PACKAGES (pure) or ADAPTERS (does I/O)."""
    packages = {m for m, p in ALL.items() if within(m, ("core",)) and p.name == "__init__.py" and m != "core"}
    top = {".".join(m.split(".")[:2]) for m in packages}
    assert top - set(PURE_PACKAGES) - set(ADAPTERS) == set()
    assert {"core.model", "core.health", "core.capacity", "core.restarts", "core.logdirs", "core.migration",
            "core.consumer_groups", "core.state_changes", "core.balance.metrics", "core.topics.names"} <= set(PURE)
    assert not {"core.audit.store", "core.policy.config", "core.zk.reader", "core.__main__"} & set(PURE)


def test_core_never_imports_the_dashboard():
    offenders = sorted(m for m, deps in IMPORTS.items() if within(m, ("core",)) and
                       any(within(d, ("dashboard",)) for d in deps))
    assert offenders == []


def test_the_engine_never_imports_the_cli():
    """Every argparse definition of Keel lives in core/cli (issue 25): the engine's packages never import it back.
    (The sandbox's argparse is sandbox/cli.py: not Keel's CLI.)"""
    offenders = sorted(m for m, deps in IMPORTS.items() if within(m, ("core",))
                       and not within(m, ("core.cli", "core.__main__"))
                       and any(within(d, ("core.cli",)) for d in internal(deps)))
    assert offenders == []


def test_what_ships_never_imports_the_sandbox():
    """Keel is core and dashboard (pyproject's packages); the sandbox runs Keel for make run, tests and benches."""
    offenders = sorted(m for m, deps in IMPORTS.items() if within(m, ("core", "dashboard"))
                       and any(within(d, ("sandbox",)) for d in deps))
    assert offenders == []


def test_the_sandbox_argparse_is_in_one_module():
    """Every argparse of the sandbox is in sandbox/cli.py, but for zkserver's own (standard library only: the
    Makefile runs it with the system python before the venv exists)."""
    parsers = sorted(m for m, deps in IMPORTS.items() if within(m, ("sandbox",)) and "argparse" in deps)
    assert parsers == ["sandbox.cli", "sandbox.processes.zkserver"]


def test_zkserver_runs_on_the_standard_library():
    """`$(ZKPY) -m sandbox.processes.zkserver` runs before the venv exists: it, its packages and what it imports
    of ours use the standard library only."""
    chain = ["sandbox", "sandbox.processes", "sandbox.processes.zkserver"]
    seen, todo = set(), list(chain)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for d in IMPORTS[m]:
            if d.split(".")[0] in sys.stdlib_module_names:
                continue
            own = internal({d})
            assert own and all(within(o, ("sandbox.processes",)) for o in own), (m, d)
            todo.extend(own)


def test_views_import_no_cli_and_pure_dashboard_helpers_no_zookeeper():
    views = sorted(m for m, deps in IMPORTS.items() if within(m, ("dashboard",)) and
                   any(within(d, ("core.cli",)) or d.startswith("core.cli_") for d in internal(deps)))
    assert views == [], f"dashboard modules importing CLI code: {views}"
    pure_helpers = [m for m in ALL if m.endswith(".plan_view")]
    offenders = sorted(m for m in pure_helpers if any(within(d, ("core.zk",)) for d in IMPORTS[m]))
    assert offenders == [], f"pure dashboard helpers importing core.zk: {offenders}"


def test_no_import_cycles():
    graph = {m: internal(deps) - {m} for m, deps in IMPORTS.items()}
    # A package's __init__ re-exporting its submodules is not a cycle with them.
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
    cycles, state, stack = [], {}, []

    def dfs(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                dfs(nxt)
        stack.pop()
        state[node] = 2
    for m in sorted(graph):
        if m not in state:
            dfs(m)
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


def test_no_file_outside_tests_is_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in ALL.values() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
