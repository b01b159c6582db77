"""The analysis package's modules import one another without a cycle, at module level only.

An import cycle hidden by a function-local import is how lhp, waits, reader and trace_replay
used to reach each other's private names; a module-level graph without cycles keeps the layers
readable (contract and names at the bottom, the report and its command line at the top)."""
import ast
import os

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spinlab_report")
# Imports that may stay inside a function: optional dependencies, which a module must be able to
# do without (none in the package today).
OPTIONAL = set()


def modules() -> dict:
    return {f[:-3]: ast.parse(open(os.path.join(PACKAGE, f)).read(), f)
            for f in sorted(os.listdir(PACKAGE)) if f.endswith(".py")}


def sibling_imports(node, names: set) -> set:
    """The package's modules that one import statement names."""
    if isinstance(node, ast.ImportFrom):
        if node.level == 1 and node.module:  # from .x import y
            return {node.module.split(".")[0]} & names
        if node.level == 1:  # from . import x, y
            return {a.name for a in node.names} & names
        if node.module and node.module.startswith("spinlab_report"):
            rest = node.module.split(".")[1:]
            return ({rest[0]} if rest else {a.name for a in node.names}) & names
    if isinstance(node, ast.Import):
        return {a.name.split(".")[1] for a in node.names if a.name.startswith("spinlab_report.")} & names
    return set()


def graph(mods: dict) -> dict:
    names = set(mods)
    return {m: set().union(*(sibling_imports(n, names) for n in ast.walk(tree))) - {m} for m, tree in mods.items()}


def find_cycle(g: dict):
    """One cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(g[m]):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        state[m] = "done"
        stack.pop()
        return None

    for m in sorted(g):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def local_imports(tree) -> list:
    """(function, line, what) of every import inside a function."""
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for n in ast.walk(fn):
                if isinstance(n, (ast.Import, ast.ImportFrom)):
                    what = n.module if isinstance(n, ast.ImportFrom) and n.module else n.names[0].name
                    if what not in OPTIONAL:
                        out.append((getattr(fn, "name", "lambda"), n.lineno, ast.unparse(n)))
    return out


def test_the_package_has_no_import_cycle():
    assert find_cycle(graph(modules())) is None, " -> ".join(find_cycle(graph(modules())))


def test_no_module_imports_inside_a_function():
    found = {m: local_imports(t) for m, t in modules().items()}
    assert not {m: v for m, v in found.items() if v}


def test_the_checks_see_a_cycle_and_a_local_import():
    g = graph({"a": ast.parse("from . import b"), "b": ast.parse("from .c import x"),
               "c": ast.parse("import spinlab_report.a")})
    assert find_cycle(g) == ["a", "b", "c", "a"]
    assert local_imports(ast.parse("def f():\n    from . import lhp\n")) == [("f", 2, "from . import lhp")]
