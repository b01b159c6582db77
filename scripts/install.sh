#!/usr/bin/env bash
# `make install` / `make uninstall`: scripts/install.sh install|uninstall BUILD_DIR PREFIX
# (DESTDIR from the environment, for packagers and the install test).
#
# install: cmake --install (the rules are in frontend/CMakeLists.txt), spinlab.pth in
#   /usr/bin/python3's site directory under PREFIX (so `import spinlab_report` works), then the list
#   of every file it put there, PREFIX/share/spinlab/install-manifest.txt (paths without DESTDIR). Installing
#   over an older installation removes the files the new one no longer has.
# uninstall: removes the files that list names and nothing else, the bytecode Python cached
#   beside the installed modules (__pycache__/*.pyc under share/spinlab), then the directories
#   under PREFIX/share/spinlab left empty. Shared directories (bin, share/man/man1, ...) stay.
set -euo pipefail
cd "$(dirname "$0")/.."

action=${1:-}
build=${2:-}
prefix=${3:-}
dest=${DESTDIR:-}
if [[ $action != install && $action != uninstall || -z $build || $prefix != /* ]]; then
    echo "usage: scripts/install.sh install|uninstall BUILD_DIR /ABSOLUTE/PREFIX (DESTDIR=... optional)" >&2
    exit 2
fi
prefix=${prefix%/}
manifest=$prefix/share/spinlab/install-manifest.txt

load_manifest() {  # into listed[]: the installed files, each checked to lie under PREFIX
    listed=()
    local f
    while IFS= read -r f || [[ -n $f ]]; do
        [[ -z $f ]] && continue
        if [[ $f != "$prefix"/* || $f == *"/../"* ]]; then
            echo "scripts/install.sh: $dest$manifest lists $f, outside $prefix: refusing to go on" >&2
            exit 1
        fi
        listed+=("$f")
    done <"$dest$manifest"
}

remove_files() {  # paths (without DESTDIR) on stdin
    local f
    while IFS= read -r f || [[ -n $f ]]; do
        rm -f -- "$dest$f"
    done
}

if [[ $action == install ]]; then
    listed=()
    [[ -f $dest$manifest ]] && load_manifest
    old=("${listed[@]}")
    DESTDIR="$dest" cmake --install "$build" --prefix "$prefix" >"$build/install.log"
    new=()
    while IFS= read -r f || [[ -n $f ]]; do
        new+=("${f#"$dest"}")
    done <"$build/install_manifest.txt"
    new+=("$manifest")
    # The analysis package (spinlab_report, its public API) where /usr/bin/python3 looks: a .pth
    # in the first of its site directories under PREFIX (/usr/local: lib/python3.X/dist-packages)
    site=$(/usr/bin/python3 -c 'import sys
p = sys.argv[1].rstrip("/") + "/"
print(next((d for d in sys.path if d.startswith(p) and d.endswith(("dist-packages", "site-packages"))), ""))' "$prefix")
    if [[ -n $site ]]; then
        mkdir -p "$dest$site"
        echo "$prefix/share/spinlab/analysis" >"$dest$site/spinlab.pth"
        new+=("$site/spinlab.pth")
    else
        pth_note="note: /usr/bin/python3 has no site directory under $prefix: to import spinlab_report, PYTHONPATH=$prefix/share/spinlab/analysis"
    fi
    printf '%s\n' "${new[@]}" | sort -u >"$dest$manifest"
    # files of the older installation that this one does not have
    if [[ ${#old[@]} -gt 0 ]]; then
        comm -23 <(printf '%s\n' "${old[@]}" | sort -u) "$dest$manifest" | remove_files
    fi
    echo "installed $(wc -l <"$dest$manifest") files under $dest$prefix (list: $dest$manifest)"
    [[ -z ${pth_note:-} ]] || echo "$pth_note"
    case ":$PATH:" in
        *":$prefix/bin:"*) ;;
        *) [[ -z $dest ]] && echo "note: $prefix/bin is not on your PATH" ;;
    esac
    exit 0
fi

if [[ ! -f $dest$manifest ]]; then
    echo "make uninstall: no spinlab installation in $dest$prefix (no $dest$manifest)" >&2
    exit 1
fi
load_manifest
printf '%s\n' "${listed[@]}" | remove_files
if [[ -d $dest$prefix/share/spinlab ]]; then
    # Python's bytecode caches of the installed modules (written when the tools first ran)
    find "$dest$prefix/share/spinlab" -path '*/__pycache__/*.pyc' -type f -delete
    find "$dest$prefix/share/spinlab" -depth -type d -empty -delete
fi
echo "removed ${#listed[@]} files from $dest$prefix"
