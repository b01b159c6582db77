# bash completion for spinlab and the spinlab-* tools (installed as
# share/bash-completion/completions/spinlab; the spinlab-* names link to it).
# Subcommands of `spinlab`; then the long options each tool's --help lists; --spec completes the
# installed spec names and files.

_spinlab_options() {  # the --options a tool's --help mentions
    "$1" --help 2>&1 | grep -o -- '--[a-z][a-z0-9.-]*' | sort -u
}

_spinlab() {
    local cur prev tool words_from
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    local bindir
    bindir=$(dirname "$(command -v "${COMP_WORDS[0]}" 2>/dev/null || echo .)")
    if [[ ${COMP_WORDS[0]##*/} == spinlab ]]; then
        if [[ $COMP_CWORD -eq 1 ]]; then
            COMPREPLY=($(compgen -W "run report collect load vm trace selftest sweep lab version help" -- "$cur"))
            return
        fi
        if [[ ${COMP_WORDS[1]} == lab ]]; then  # spinlab lab list|start|check N [RESULTS]
            case $COMP_CWORD in
                2) COMPREPLY=($(compgen -W "list start check" -- "$cur")) ;;
                3) COMPREPLY=($(compgen -W "1 2 3 4 5" -- "$cur")) ;;
                *) COMPREPLY=($(compgen -d -- "$cur")) ;;
            esac
            return
        fi
        tool=$bindir/spinlab-${COMP_WORDS[1]}
        words_from=2
    else
        tool=$bindir/${COMP_WORDS[0]##*/}
        words_from=1
    fi
    [[ -x $tool ]] || return
    if [[ $prev == --spec ]]; then
        local specs=$bindir/../share/spinlab/experiments
        COMPREPLY=($(compgen -W "$(cd "$specs" 2>/dev/null && ls *.ini 2>/dev/null | sed 's/\.ini$//')" -- "$cur")
                   $(compgen -f -- "$cur"))
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_spinlab_options "$tool")" -- "$cur"))
    elif [[ $COMP_CWORD -eq $words_from ]]; then
        # vm, collect, load: their commands are the first word after the tool
        local cmds
        cmds=$("$tool" --help 2>&1 | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' | sort -u)
        COMPREPLY=($(compgen -W "$cmds" -- "$cur") $(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _spinlab spinlab spinlab-run spinlab-report spinlab-collect spinlab-load spinlab-vm \
    spinlab-selftest spinlab-sweep
