"""README.md's table of boot options is the kernel's table (kernel-patch/kern/bootopts.cc,
kOptions): a row for every option the kernel accepts and for none it refuses, and for an option
that chooses a word (lock=, clock=, bench=, timing=, ...) exactly the kernel's words, the default
first as the table's header says. lock= and clock= take their words from the ABI's enum tables
(kernel-patch/abi/spinlab/enum_names.h: SPINLAB_LOCK_ALGORITHMS, SPINLAB_CLOCK_SOURCES), read
here from the source, so a new algorithm fails this test until the README names it.
Numbers (defaults, ranges) are not compared: the README writes them for people (2^34, 10^6)."""
import glob
import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
KERNEL = os.path.join(ROOT, "kernel-patch")
BOOTOPTS = os.path.join(KERNEL, "kern", "bootopts.cc")
README = os.path.join(ROOT, "README.md")
README_HEADER = "| option | values (default first) | what |"

# One kOptions row: {{"key", Kind::kX, CHOICES, MIN, MAX, "help" "help"...}, DEFAULT, [](...
ROW = re.compile(r'\{\{"(?P<key>[^"]+)",\s*Kind::k(?P<kind>\w+),\s*(?P<choices>nullptr|"[^"]*"|\w+\.text),'
                 r'\s*[^,]+,\s*[^,]+,\s*(?:"(?:[^"\\]|\\.)*"\s*)+\},\s*(?P<default>[^,]+?),\s*\[\]')


def read(path: str) -> str:
    return open(path, encoding="utf-8").read()


def enum_table_names(names_array: str) -> list:
    """The names of the ABI enum whose name table is `names_array` (kLockAlgorithmNames), in value
    order: the rows X(kId, value, "name") of its SPINLAB_<ENUM>(X) table."""
    for header in sorted(glob.glob(os.path.join(KERNEL, "abi", "spinlab", "*.h"))):
        text = read(header)
        m = re.search(r"SPINLAB_(?:DENSE_)?ENUM\(\s*\w+,\s*\w+,\s*(\w+),\s*" + names_array + r"\b", text)
        if not m:
            continue
        lines = text[text.index(f"#define {m.group(1)}(X)"):].splitlines()
        body = []
        for line in lines:
            body.append(line)
            if not line.rstrip().endswith("\\"):
                break
        rows = re.findall(r'X\(\s*\w+,\s*(\d+),\s*"([^"]+)"\)', "\n".join(body))
        assert [int(v) for v, _ in rows] == list(range(len(rows))), f"{m.group(1)}: values 0, 1, ..."
        return [name for _, name in rows]
    raise AssertionError(f"no SPINLAB_ENUM table declares {names_array} in kernel-patch/abi/spinlab/")


def enum_value(expr: str) -> int:
    """The value of `...Enum::kMember` from its `enum class Enum` in kernel-patch/."""
    m = re.search(r"(\w+)::(k\w+)", expr)
    assert m, f"cannot read the default {expr!r} of a boot option: teach this test"
    enum, member = m.groups()
    for path in glob.glob(os.path.join(KERNEL, "**", "*.h"), recursive=True):
        body = re.search(r"enum class " + enum + r"\b[^{]*\{(.*?)\};", read(path), re.S)
        if body:
            v = re.search(r"\b" + member + r"\s*=\s*(\d+)", body.group(1))
            assert v, f"{enum}::{member} has no explicit value in {path}"
            return int(v.group(1))
    raise AssertionError(f"enum class {enum} not found in kernel-patch/")


def code_options() -> dict:
    """{key: (kind, [choice words] or None, index of the default word or None)} from kOptions."""
    src = read(BOOTOPTS)
    start = src.index("const Option kOptions[] = {")
    block = src[start:src.index("\n};", start)]
    rows = list(ROW.finditer(block))
    assert len(rows) == block.count('{{"'), "a kOptions row this test's pattern does not read"
    out = {}
    for r in rows:
        words = None
        choices = r.group("choices")
        if choices.startswith('"'):
            words = choices.strip('"').split("|")
        elif choices != "nullptr":  # kLockChoices.text: join_names of an ABI name table
            var = choices[:-len(".text")]
            m = re.search(r"constexpr auto " + var + r"\s*=.*?\(\s*spinlab::(\w+),\s*'\|'\)", src, re.S)
            assert m, f"{var}: not a join_names of an ABI name table"
            words = enum_table_names(m.group(1))
        default = r.group("default").strip()
        index = None
        if words is not None and default != "kUnset":
            index = int(default) if re.fullmatch(r"\d+", default) else enum_value(default)
        out[r.group("key")] = (r.group("kind"), words, index)
    return out


def readme_options() -> dict:
    """{key: values cell} of README.md's boot-option table."""
    lines = read(README).splitlines()
    start = lines.index(README_HEADER)
    out = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        m = re.fullmatch(r"`([a-z-]+)=`", cells[0])
        assert m and len(cells) == 3, f"README.md boot-option row not '| `key=` | values | what |': {line}"
        assert m.group(1) not in out, f"README.md names {m.group(1)}= twice"
        out[m.group(1)] = cells[1]
    return out


def test_the_code_table_is_read():
    code = code_options()
    assert {"lock", "clock", "bench", "timing", "pvqspin-spin", "pvqspin-kick", "init"} <= set(code)
    assert code["lock"][1][:3] == ["tas", "ticket", "mcs"] and "pvqspin" in code["lock"][1]
    assert code["timing"] == ("Choice", ["contended", "all"], 0)
    assert code["stackprobe"][2] == 1 and code["bench"][2] is None


def test_readme_has_a_row_for_every_boot_option_and_no_other():
    code, readme = code_options(), readme_options()
    missing = sorted(set(code) - set(readme))
    unknown = sorted(set(readme) - set(code))
    bad = []
    if missing:
        bad.append(f"lacks {', '.join(k + '=' for k in missing)} (kern/bootopts.cc has them)")
    if unknown:
        bad.append(f"names {', '.join(k + '=' for k in unknown)}, which kern/bootopts.cc does not accept")
    assert not bad, "README.md's boot-option table " + "; ".join(bad)


def test_readme_lists_every_choice_of_each_option_default_first():
    code, readme = code_options(), readme_options()
    bad = []
    for key, (kind, words, default) in code.items():
        if words is None or key not in readme:
            continue
        listed = re.findall(r"`([^`]+)`", readme[key])
        if set(listed) != set(words):
            bad.append(f"{key}=: README lists {listed}, the kernel accepts {words}")
        elif default is not None and listed[0] != words[default]:
            bad.append(f"{key}=: README lists {listed[0]} first, the kernel's default is {words[default]}")
    assert not bad, "README.md's boot-option table: " + "; ".join(bad)
