complete -c sweep -l param -d 'Launch flag to vary (speculative-num-steps or --speculative-num-steps); repeatable; A,B: flags that move together, each value of --values then A:B (--values 1:2,2:3)' -r
complete -c sweep -l param-new -d 'Like --param, for a flag the launch line lacks: sweep adds it (a --param the line lacks is refused as a likely typo)' -r
complete -c sweep -l values -d 'Comma-separated values for the --param before it (spaces around each value are dropped); START..END[:STEP] is an inclusive range (1..10, 2..16:2)' -r
complete -c sweep -l results -d 'JSON Lines results, appended as records arrive' -r -F
complete -c sweep -l retries -d 'Run a config again after a transport failure (SSH lost, host unreachable) up to N times, backing off 2s, 4s, 8s...' -r
complete -c sweep -l patience -d 'Values past the best that must show the plateau [default: 2]' -r
complete -c sweep -l noise-margin -d 'Weighted-score gap that counts as a close call until repeats measure the noise [default: 5%]' -r
complete -c sweep -l repeat-budget -d 'Extra config starts for close calls [default: 4]' -r
complete -c sweep -l schedule -d 'After the grid (and any --adaptive search): derive the server\'s per-load schedule (summarize --schedule SERVER), apply it as one more config and benchmark it at every level (one extra restart, one extra pass); if the data cannot support one, say why and keep the static pick' -r -f -a "vllm\t''
sglang\t''"
complete -c sweep -l schedule-max-depth -d 'With --schedule: derive it from depths up to K only (summarize --max-depth K): both servers reserve speculative KV for a schedule\'s deepest depth at every load' -r
complete -c sweep -l hosts -d 'One host per line of FILE, or a comma list: [USER@]HOST[:PORT] (reached over SSH) or - (here), then optional NAME=VALUE words ({NAME} in --url) and exec=PREFIX... (the rest of the line)' -r
complete -c sweep -l drop-after -d 'Stop using a host after N failures blamed on it; its configs go to the other hosts' -r
complete -c sweep -l gpus -d 'Split each machine (every --hosts host, else the --ssh one or this one) into GPU slots that run configs side by side: its GPUs, N to a slot (--gpus-per-config); {slot}, {gpus} and {port} fill the --unit, --spec or --container name and --url' -r
complete -c sweep -l gpus-per-config -d 'GPUs per slot with --gpus' -r
complete -c sweep -l partition -d 'sbatch --partition' -r
complete -c sweep -l account -d 'sbatch --account' -r
complete -c sweep -l gres -d 'sbatch --gres per job (gpu:2); records name the GPUs it gave' -r
complete -c sweep -l gpus-per-node -d 'sbatch --gpus-per-node instead of --gres, for clusters that reject the gres directive' -r
complete -c sweep -l time -d 'sbatch --time per job (MIN, MIN:SEC, H:MM:SS, D-H); its levels are flushed --flush-before ahead of the limit' -r
complete -c sweep -l flush-before -d 'With --time: signal the job this long before its limit, so loadgen writes the levels it measured (sbatch --signal=B:USR1@SECS)' -r
complete -c sweep -l max-jobs -d 'Run at most N configs at once (the array\'s %N throttle)' -r
complete -c sweep -l sbatch-arg -d 'Extra sbatch argument (repeatable, one word each)' -r
complete -c sweep -l queue-timeout -d 'Cancel a job still pending after DUR (recorded, not a result)' -r
complete -c sweep -l unit -d 'systemd unit' -r
complete -c sweep -l spec -d 'Process spec (svc-swap\'s process manager)' -r -F
complete -c sweep -l container -d 'Container to swap (svc-swap --container: re-created per config; wait-ready watches it)' -r
complete -c sweep -l compose -d 'Compose file whose --service to swap (svc-swap --compose)' -r -F
complete -c sweep -l service -d 'The service of --compose FILE' -r
complete -c sweep -l engine -d 'Container engine CLI for --container and --compose (svc-swap, wait-ready) [their default: docker when its daemon answers, else podman]' -r -f -a "docker\t''
podman\t''"
complete -c sweep -l ssh -d 'Reach the unit over SSH' -r
complete -c sweep -l ssh-key -d 'Private key for --ssh (repeatable)' -r -F
complete -c sweep -l known-hosts -d 'Check the host key against FILE' -r -F
complete -c sweep -l exec-prefix -d 'Run far-side commands behind CMD (\'pct exec 129 --\')' -r
complete -c sweep -l ssh-config -d 'OpenSSH client config to read for --ssh and --hosts [default: ~/.ssh/config]' -r -F
complete -c sweep -l ssh-retry -d 'Keep retrying SSH connects and lost sessions for up to DUR (svc-swap, wait-ready) [their default: 30s]' -r
complete -c sweep -l connect-timeout -d 'Limit for SSH connect and authentication [their default: 10s]' -r
complete -c sweep -l url -d 'Server base URL, as reachable from here; with --hosts a template: {host}, {n}, {NAME} per host' -r
complete -c sweep -l server -d 'wait-ready preset [default: probe --url as given]' -r -f -a "sglang\t''
vllm\t''
llama.cpp\t''
openai\t''
llm-sim\t''"
complete -c sweep -l ready-timeout -d 'wait-ready --timeout' -r
complete -c sweep -l concurrency -d 'loadgen -c LIST (closed-loop levels)' -r
complete -c sweep -l report -d 'Write summarize\'s self-contained HTML report of the results to FILE at the end (after Ctrl-C too, with what was measured)' -r -F
complete -c sweep -l compare-to -d 'End with summarize --compare FILE against this run\'s results: an earlier results file of the same grid (a new server version)' -r -F
complete -c sweep -l find-capacity -d 'Per config, search the highest concurrency meeting every term (loadgen --find-capacity TERMS) and rank configs by it (summarize --slo TERMS), e.g. \'p99_ttft_ms<=500\'' -r
complete -c sweep -l validate-on -d 'At the end, replay trace FILE (loadgen --trace) against the pick (and the --schedule beside it) and report its goodput apart' -r -F
complete -c sweep -l slo -d 'With --validate-on: the replay\'s goodput objectives per request (loadgen --slo), e.g. \'ttft_ms<=500,tpot_ms<=50\'' -r
complete -c sweep -l swap-arg -d 'Extra argument for every svc-swap call (repeatable, one word each)' -r
complete -c sweep -l ready-arg -d 'Extra argument for wait-ready' -r
complete -c sweep -l load-arg -d 'Extra argument for loadgen' -r
complete -c sweep -l summarize-arg -d 'Extra argument for summarize' -r
complete -c sweep -l bin-dir -d 'Where the tools are [default: $SWEEPKIT_BIN, beside sweep, PATH, then the repository\'s target/release or debug]' -r -f -a "(__fish_complete_directories)"
complete -c sweep -l resume -d 'Skip configs that already have records in FILE (a config whose last record is a transport failure or an interruption is run again)'
complete -c sweep -l append -d 'Add this run\'s records to a FILE that holds another sweep already (without it, or --resume, such a FILE is refused: the two runs would merge into one config\'s medians)'
complete -c sweep -l keep-winner -d 'Apply summarize\'s pick at the end (default: restore the original config)'
complete -c sweep -l no-restore -d 'Leave the last config running (the original is the one recorded when FILE was first started: its origin record, kept across --resume)'
complete -c sweep -l dry-run -d 'Print the configs and the commands; run nothing'
complete -c sweep -l adaptive -d 'Measure the values of one numeric --param in order and stop at the plateau or a clear peak; re-measure close calls; untried values get skipped records (continues what FILE holds: --resume is implied)'
complete -c sweep -l bench-together -d 'Let a machine\'s slots benchmark at once (default: one bench at a time, while other slots load); each bench record says so'
complete -c sweep -l slurm -d 'Run each config as a Slurm job (a task of one array) that starts the --spec server in its allocation, waits and benchmarks there'
complete -c sweep -l exclusive -d 'sbatch --exclusive: the job has its nodes to itself'
complete -c sweep -l accept-new-host-key -d 'Record an unknown host key (a changed one is refused)'
complete -c sweep -l expect-config -d 'Also check each swept value in the live server\'s arguments (wait-ready --expect-config)'
complete -c sweep -s q -l quiet -d 'No progress lines on stderr'
complete -c sweep -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweep -s V -l version -d 'Print version'
