# bash completion for sweep (scripts/sweep.sh), which has no clap definition
# to generate one from: the options are read from `sweep --help` when asked,
# so a new option completes without editing this file.
# shellcheck shell=bash

_sweep() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  COMPREPLY=()
  case $prev in
    --results | --spec | --ssh-key | --known-hosts)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
    --bin-dir)
      mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      return
      ;;
    --server)
      mapfile -t COMPREPLY < <(compgen -W 'sglang vllm llama.cpp openai llm-sim' -- "$cur")
      return
      ;;
  esac
  if [[ $cur == -* ]]; then
    local opts
    opts=$("${COMP_WORDS[0]}" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
  fi
}
complete -F _sweep -o bashdefault -o default sweep
