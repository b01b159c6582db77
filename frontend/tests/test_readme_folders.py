"""README.md's folder table is the newcomer's map: every folder it names has a README.md of its
own (README says so), and every top-level folder with code is named there (docs/ is the map
itself, .ci/ the CI entry point). One level down, each folder that holds code (collector/trace/,
experiments/sweep/, kernel-patch/lockstat/...) is named in its top-level folder's README, or has
a README of its own."""
import os
import re
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NOT_IN_TABLE = {"docs", ".ci"}


def table_folders(readme: str) -> list:
    """The `folder/` entries of the table whose header is '| folder | holds |'."""
    lines = readme.splitlines()
    start = lines.index("| folder | holds |")
    out = []
    for line in lines[start + 2:]:
        m = re.match(r"^\| `([^`]+)/` \|", line)
        if not m:
            break
        out.append(m.group(1))
    return out


def test_every_folder_in_the_table_has_a_readme():
    folders = table_folders(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read())
    assert len(folders) >= 9, folders
    missing = [f for f in folders if not os.path.isfile(os.path.join(ROOT, f, "README.md"))]
    assert not missing, f"README.md's folder table names folders without a README.md: {missing}"


def test_every_top_level_folder_is_in_the_table():
    folders = set(table_folders(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()))
    tracked = subprocess.run(["git", "-C", ROOT, "ls-tree", "-d", "--name-only", "HEAD"],
                             capture_output=True, text=True)
    if tracked.returncode != 0:  # an unpacked tarball: the folders on disk
        top = {d for d in os.listdir(ROOT) if os.path.isdir(os.path.join(ROOT, d)) and d not in ("build", "results")
               and not d.startswith(".")}
    else:
        top = set(tracked.stdout.split())
    unnamed = sorted(top - folders - NOT_IN_TABLE)
    assert not unnamed, f"top-level folders missing from README.md's folder table: {unnamed}"


CODE = (".cc", ".h", ".py", ".sh", ".c")


def test_every_second_level_code_folder_is_mapped():
    tracked = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True)
    if tracked.returncode != 0:
        return  # an unpacked tarball: the folder tests above cover it
    sub = {"/".join(f.split("/")[:2]) for f in tracked.stdout.split()
           if f.endswith(CODE) and f.count("/") >= 2}
    unmapped = []
    for folder in sorted(sub):
        top, name = folder.split("/")
        readme = os.path.join(ROOT, top, "README.md")
        text = open(readme, encoding="utf-8").read() if os.path.isfile(readme) else ""
        if f"{name}/" not in text and not os.path.isfile(os.path.join(ROOT, folder, "README.md")):
            unmapped.append(folder)
    assert not unmapped, f"folders with code that their top-level README does not name: {unmapped}"
