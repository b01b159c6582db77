#!/usr/bin/python3
"""kernel-patch/layering_test.py [SRC_DIR]: each layer of kernel-patch/ only uses the layers
below it (docs/architecture.md, "The kernel's layers").

The layers are read from the "layer" column of SRC_DIR/README.md's folder table, the one place
they are written down:

    ABI                              0  abi/spinlab/, included as <spinlab/...>; used by all
    (transport), (support)           1  channel/, lib/: they use only the ABI
    N name (1 arch ... 5 sysinfo)    N  folders with the same "N name" are one layer
    kernel                           6  kern/
    tests, programs                  7  selftest/, user/

Every #include that names another folder of the table ("../lockstat/clock.h",
"locktrace/trace_file.h", <spinlab/shm.h>) must name a folder of a lower layer, or of the same
layer (locktrace/ and stackwalk/ are both "4 locktrace"). Test, benchmark and fuzzer sources
follow the same rule. Each breach is printed as FILE:LINE and the exit status is 1; a table
that cannot be read is exit status 2.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*["<]([^">]+)[">]')
ROW = re.compile(r"^\| `([^`]+)/` \| ([^|]+?) \|")
NAMED = {"ABI": 0, "(transport)": 1, "(support)": 1, "kernel": 6, "tests": 7, "programs": 7}


def layers(readme_path):
    """{folder: (rank, layer label)} from the README's '| folder | layer |' table."""
    lines = open(readme_path, encoding="utf-8").read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("| folder | layer |"))
    except StopIteration:
        sys.exit(f"layering_test: {readme_path}: no '| folder | layer |' table")
    out = {}
    for line in lines[start + 2:]:
        m = ROW.match(line)
        if not m:
            break
        folder, label = m.group(1), m.group(2).strip()
        number = re.match(r"^(\d+) ", label)
        if number:
            out[folder] = (int(number.group(1)), label)
        elif label in NAMED:
            out[folder] = (NAMED[label], label)
        else:
            sys.exit(f"layering_test: {readme_path}: folder {folder}/ has an unknown layer {label!r}")
    if out.get("abi/spinlab", (None,))[0] != 0:
        sys.exit(f"layering_test: {readme_path}: no ABI row for abi/spinlab/")
    return out


def breaches(src, table):
    """(file:line, message) for each #include of a folder at or above the includer's layer
    (a folder of the same layer is allowed)."""
    by_name = {("spinlab" if f == "abi/spinlab" else f): f for f in table}
    for folder, (rank, label) in sorted(table.items()):
        root = os.path.join(src, folder)
        if not os.path.isdir(root):
            sys.exit(f"layering_test: {folder}/ is in the table but not in {src}")
        own = "spinlab" if folder == "abi/spinlab" else folder
        for dirpath, _, files in os.walk(root):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = re.sub(r"^(\.\./)+", "", m.group(1))
                        top = target.split("/")[0]
                        if "/" not in target or top == own or top not in by_name:
                            continue
                        t_rank, t_label = table[by_name[top]]
                        if t_rank < rank or t_label == label:
                            continue
                        yield (f"{os.path.relpath(path, src)}:{n}",
                               f"{folder}/ (layer {label}) includes {target} (layer {t_label})")


def main():
    src = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
    table = layers(os.path.join(src, "README.md"))
    found = list(breaches(src, table))
    for where, what in found:
        print(f"{where}: {what}", file=sys.stderr)
    if found:
        print("FAIL: a layer of kernel-patch/ includes a layer above its own "
              "(kernel-patch/README.md's folder table)", file=sys.stderr)
        return 1
    print(f"ok: the #includes of {len(table)} folders of kernel-patch/ name their own layer or one below")
    return 0


if __name__ == "__main__":
    sys.exit(main())
