complete -c loadgen -l url -d 'Server base URL (same as the positional URL)' -r
complete -c loadgen -l model -d 'Model name; default: the first model /v1/models lists' -r
complete -c loadgen -l api-key -d 'API key sent as a Bearer token (never printed); SWEEPKIT_API_KEY, as wait-ready reads it, when neither this nor OPENAI_API_KEY is set' -r
complete -c loadgen -l endpoint -d 'Which API to call' -r -f -a "completions\t'/v1/completions'
chat\t'/v1/chat/completions'
generate\t'SGLang\'s native /generate (per-request acceptance from meta_info)'"
complete -c loadgen -s c -l concurrency -d 'Closed loop: requests in flight, one level per value' -r
complete -c loadgen -s r -l rate -d 'Open loop: arrival rate in requests/s, one level per value' -r
complete -c loadgen -l burstiness -d 'Open loop: gamma shape of inter-arrival times (1 = Poisson; lower is burstier)' -r
complete -c loadgen -l max-inflight -d 'Open loop: most requests in flight; later arrivals wait in the client (queue time)' -r
complete -c loadgen -l warmup -d 'Requests per level before measuring (not counted)' -r
complete -c loadgen -s n -l requests -l max-requests -d 'Measured requests per level [default: max(16, 8 x concurrency); open loop: max(16, 10 x rate)]; with --until-stable, the most (--max-requests) [default: 10 times that]' -r
complete -c loadgen -l until-stable -d 'End a level once its steady-state output throughput is known to within PCT percent (5 or 5%): 95% interval by batch means over completed requests (see man loadgen); bounded by --max-requests or --duration' -r
complete -c loadgen -l min-requests -d 'With --until-stable: the fewest measured requests before a level may stop [default: max(20, the level\'s default request count)]' -r
complete -c loadgen -s d -l duration -d 'Measure each level for this long instead of a request count' -r
complete -c loadgen -l repeat -d 'Run each level N times in a row, one record each (run-to-run variance; summarize treats them as repeats of one cell)' -r
complete -c loadgen -l max-tokens -d 'Output tokens asked for per request' -r
complete -c loadgen -l temperature -d 'Sampling temperature (default: the server\'s)' -r
complete -c loadgen -l input-tokens -d 'Synthetic prompts of this many tokens' -r
complete -c loadgen -l prompts-file -d 'Prompts from a file instead of synthetic ones' -r -F
complete -c loadgen -l prompts-format -d 'Format of --prompts-file' -r -f -a "auto\t'By content: a JSON array is ShareGPT, else JSONL'
jsonl\t'One {"prompt": .., "output_tokens": ..} object per line'
sharegpt\t'ShareGPT JSON: first human turn, reply length as output length'"
complete -c loadgen -l trace -d 'Replay a request trace at its recorded times: Mooncake JSONL (timestamp ms, input_length, output_length, hash_ids) or JSONL with timestamp and prompt or messages; one level per --speed' -r -F
complete -c loadgen -l speed -d 'Send the trace at X times its recorded pace, one level per value' -r
complete -c loadgen -l trace-start -d 'Replay from this time on the trace\'s clock (e.g. 10m)' -r
complete -c loadgen -l trace-end -d 'Replay up to (not including) this time on the trace\'s clock' -r
complete -c loadgen -l block-size -d 'Tokens each Mooncake hash id stands for: the trace\'s block size' -r
complete -c loadgen -l sessions -d 'Multi-turn sessions: ShareGPT or JSONL conversations, or JSONL turns with a session_id (timestamp or delay ms); each turn sends the history with the replies received; see man loadgen, SESSIONS' -r -F
complete -c loadgen -l think-time -d 'Think time of a turn that records none: its wait after the previous reply ended (over --speed)' -r
complete -c loadgen -l cancel-rate -d 'Cancel this share of requests (0 to 1), each --cancel-after its send; counted apart (counts.cancelled), never as errors or tokens' -r
complete -c loadgen -l cancel-after -d 'With --cancel-rate: how long after its send a request is cancelled' -r
complete -c loadgen -l seed -d 'Seed for prompts and the arrival schedule' -r
complete -c loadgen -l extra-body -d 'Extra JSON fields merged into every request body (they win)' -r
complete -c loadgen -l slo -d 'Goodput objectives per request, e.g. \'ttft_ms<=200,tpot_ms<=50\' (summarize\'s syntax; ttft=200ms also works)' -r
complete -c loadgen -l request-timeout -d 'Longest time one request may take' -r
complete -c loadgen -l idle-timeout -d 'Longest silence between bytes of a response (a stalled stream)' -r
complete -c loadgen -l level-timeout -d 'Longest time one level may take, warmup and drain included' -r
complete -c loadgen -l client-threads -d 'Threads for the client\'s event loop. One keeps every timestamp on one clock with no cross-thread wakeups and serves tens of thousands of chunks a second; raise it only when the run warns that the client was the bottleneck' -r
complete -c loadgen -l scrape-interval -d 'Sample the server\'s /metrics this often during each level (KV cache, queue, preemptions: loadgen(1) SERVER METRICS)' -r
complete -c loadgen -l gpu-metrics -d 'GPU power, energy and memory during each level: a DCGM exporter\'s URL (http://HOST:9400/metrics) or nvidia-smi' -r
complete -c loadgen -l gpu-metrics-cmd -d 'Run --gpu-metrics nvidia-smi under this command, e.g. \'ssh gpu1\'' -r
complete -c loadgen -l format -d 'Output format on stdout' -r -f -a "json\t'One JSON bench record per level, written when the level ends'
csv\t'CSV (dotted column names), written after the last level'
markdown\t'A Markdown table for people, written after the last level'"
complete -c loadgen -l requests-out -d 'Write one JSON line per request to FILE' -r -F
complete -c loadgen -l label -d 'Name this run in every bench record (`label`), e.g. a server version: summarize --compare-by label compares two runs of one file' -r
complete -c loadgen -l find-capacity -d 'Search the highest concurrency whose level meets every term, e.g. \'p99_ttft_ms<=500\' (a level\'s figure, as summarize --slo): double from --concurrency (default 1) until a level misses, then bisect' -r
complete -c loadgen -l max-concurrency -d 'With --find-capacity: the highest concurrency to try' -r
complete -c loadgen -l level-budget -d 'With --find-capacity: the most levels the search may run' -r
complete -c loadgen -l pipeline-config -d 'Run as a pipeline stage for this config (repeatable; sweep passes it): with no upstream record on stdin, measure nothing, write a failure record with this config and exit 4' -r
complete -c loadgen -l no-stream -d 'Ask for whole responses instead of a stream (no TTFT or ITL)'
complete -c loadgen -l ignore-eos -d 'Ask the server to ignore end-of-sequence (full-length outputs)'
complete -c loadgen -l no-tokenize -d 'Do not call the server\'s /tokenize (approximate input lengths)'
complete -c loadgen -l no-continuous-usage -d 'Do not ask for per-chunk usage (stream_options.continuous_usage_stats)'
complete -c loadgen -l no-scrape -d 'Do not read the server\'s /metrics, capacity and /server_info'
complete -c loadgen -l no-upstream -d 'Do not read an upstream record from stdin'
complete -c loadgen -s q -l quiet -d 'No progress bar or level lines on stderr'
complete -c loadgen -s h -l help -d 'Print help (see more with \'--help\')'
complete -c loadgen -s V -l version -d 'Print version'
