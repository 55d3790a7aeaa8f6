_llm__sim() {
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
                cmd="llm__sim"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        llm__sim)
            opts="-h -V --host --port --model-name --speculative-num-steps --personality --speculative-algorithm --speculative-eagle-topk --speculative-num-draft-tokens --speculative-adaptive --speculative-adaptive-config --speculative-config --api-key --admin-api-key --ssl-keyfile-password --metrics --enable-metrics --health-probe-time --speculative-accept-rate --speculative-accept-by --speculative-draft-horizon --speculative-kv-per-step --max-running-requests --kv-capacity-tokens --context-length --load-time --warmup-time --step-time --per-seq-time --draft-step-time --prefill-per-token --eos-prob --seed --noise --noise-counter --crash-on-load --crash-after --crash-after-requests --ignore-sigterm --error-rate --cut-stream-rate --malformed-sse-rate --stall-rate --stall --zero-delay --exact-ttft --exact-itl --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-num-steps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --personality)
                    COMPREPLY=($(compgen -W "sglang vllm llama.cpp" -- "${cur}"))
                    return 0
                    ;;
                --speculative-algorithm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-eagle-topk)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-num-draft-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-adaptive-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --api-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --admin-api-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-keyfile-password)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --health-probe-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-accept-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-accept-by)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-draft-horizon)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speculative-kv-per-step)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-running-requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kv-capacity-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --context-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --step-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --per-seq-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --draft-step-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prefill-per-token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --eos-prob)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --noise)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --noise-counter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --crash-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --crash-after-requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ignore-sigterm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --error-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cut-stream-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --malformed-sse-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stall-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stall)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exact-ttft)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exact-itl)
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
    complete -F _llm__sim -o nosort -o bashdefault -o default llm-sim
else
    complete -F _llm__sim -o bashdefault -o default llm-sim
fi
