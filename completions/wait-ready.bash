_wait__ready() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="wait__ready"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        wait__ready)
            opts="-q -v -h -V --server --deep --timeout --attempt-timeout --interval --backoff --max-interval --unreachable-after --unresolved-after --not-found-after --expect-status --expect-json --expect-body --method --header --body --api-key --pid --log --log-offset --fatal-regex --unit --container --engine --ssh --ssh-config --ssh-key --known-hosts --accept-new-host-key --exec-prefix --connect-timeout --ssh-retry --expect-config --expect-file --invert --no-stdin --pipeline-config --quiet --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --server)
                    COMPREPLY=($(compgen -W "sglang vllm llama.cpp openai llm-sim" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attempt-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backoff)
                    COMPREPLY=($(compgen -W "none linear exponential" -- "${cur}"))
                    return 0
                    ;;
                --max-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --unreachable-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --unresolved-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --not-found-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-status)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-body)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --method)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --body)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --api-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-offset)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fatal-regex)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --unit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --container)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --engine)
                    COMPREPLY=($(compgen -W "docker podman" -- "${cur}"))
                    return 0
                    ;;
                --ssh)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssh-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssh-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --known-hosts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exec-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssh-retry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pipeline-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _wait__ready -o nosort -o bashdefault -o default wait-ready
else
    complete -F _wait__ready -o bashdefault -o default wait-ready
fi
