"""The analysis package's modules import one another without a cycle, at module level only.

An import cycle hidden by a function-local import is how lhp, waits, reader and trace_replay
used to reach each other's private names; a module-level graph without cycles keeps the layers
readable (contract and names at the bottom, the report and its command line at the top)."""
import ast
import os
import re
import subprocess

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


# No file outside the tests edits sys.path (issue 40): a tool finds the packages the way a user's
# Python does, installed (spinlab.pth) or through PYTHONPATH set by whoever starts it (the Makefile,
# scripts/test-all.sh, the spinlab front-end, spinlab-sweep). Tests (a folder named tests or
# *_tests, conftest.py, test_*.py) may.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EDITS_SYS_PATH = re.compile(r"\bsys\.path\s*(?:\.\s*(?:insert|append|extend|remove|pop|clear)\s*\(|\[[^\]]*\]\s*=(?!=)|\+=|=(?!=))"
                            r"|\bsite\.addsitedir\s*\(")


def is_test(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (any(p == "tests" or p.endswith("_tests") for p in parts[:-1]) or name == "conftest.py"
            or name.startswith("test_") and name.endswith(".py"))


def source_files() -> list:
    """The repository's tracked and untracked (not ignored) files, relative to its root; outside a
    git checkout, every file but the build's and the results'."""
    r = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                       capture_output=True)
    if r.returncode == 0:
        return sorted({p for p in r.stdout.decode().split("\0") if p and os.path.isfile(os.path.join(ROOT, p))})
    out = []
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = [x for x in dirs if not (d == ROOT and x in ("build", "results", "shared")) and not x.startswith(".")]
        out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files]
    return sorted(out)


def is_python_or_shell(path: str) -> bool:
    if path.endswith((".py", ".in", ".sh", ".ipynb", ".smk")) or os.path.basename(path) in ("Makefile", "Snakefile"):
        return True
    try:
        with open(os.path.join(ROOT, path), "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and (b"python" in first or b"sh" in first)


def sys_path_edits(path: str) -> list:
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return [f"{path}:{i}: {line.strip()}" for i, line in enumerate(f, 1) if EDITS_SYS_PATH.search(line)]


def test_no_file_outside_the_tests_edits_sys_path():
    found = [hit for p in source_files() if not is_test(p) and is_python_or_shell(p) for hit in sys_path_edits(p)]
    assert not found, "edit sys.path outside the tests (set PYTHONPATH where the tool is started):\n" + "\n".join(found)


def test_the_sys_path_check_sees_every_way_of_editing_it():
    for line in ('sys.path.insert(0, "vm-images")', "sys.path.append(d)", "sys.path[:0] = [d]",
                 "sys.path += [d]", "sys.path = [d] + sys.path", "site.addsitedir(d)"):
        assert EDITS_SYS_PATH.search(line), line
    for line in ("print(sys.path)", "d for d in sys.path if d", "if sys.path == x:", "sys.path[0]"):
        assert not EDITS_SYS_PATH.search(line), line
    assert is_test("analysis/tests/x.py") and is_test("experiments/sweep/slurm_tests/helper.py")
    assert is_test("labs/tests/conftest.py") and not is_test("labs/spinlab_labs/observe.py")
