# fish completion for sweep (scripts/sweep.sh), which has no clap definition
# to generate one from: the options are read from `sweep --help`, so a new
# option completes without editing this file.
for opt in (sweep --help 2>/dev/null | string match -ar -- '--[a-z][a-z-]+' | sort -u)
    complete -c sweep -l (string replace -- '--' '' $opt)
end
complete -c sweep -l server -x -a 'sglang vllm llama.cpp openai llm-sim'
complete -c sweep -l results -r -F
complete -c sweep -l spec -r -F
complete -c sweep -l ssh-key -r -F
complete -c sweep -l known-hosts -r -F
complete -c sweep -l bin-dir -x -a '(__fish_complete_directories)'
