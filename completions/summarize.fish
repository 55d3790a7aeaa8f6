complete -c summarize -s m -l metric -d 'Metric to compare: dotted path (ttft_ms.p99) or alias (p99_ttft_ms)' -r
complete -c summarize -l better -d 'Which way the metric improves [default: from its unit: _ms/_s lower]' -r -f -a "higher\t''
lower\t''"
complete -c summarize -s b -l baseline -d 'Config the change in % is against [default: speculation off, if present, else the first config]' -r
complete -c summarize -l objective -d 'How to pick the overall winner [default: slo with --slo, else weighted (every level counts, equal weights unless --weights)]' -r -f -a "max\t'The best single (config, level) cell'
slo\t'The best cell among those meeting every --slo term'
weighted\t'The best config over a weighted mix of levels (--weights)'"
complete -c summarize -l slo -d 'Service levels every pick must meet, and each config\'s capacity (highest concurrency meeting them), e.g. \'p99_ttft_ms<=500\'' -r
complete -c summarize -l weights -d 'Level weights for --objective weighted, e.g. \'c=1:0.5,c=16:0.5\' [default: all levels equal]' -r
complete -c summarize -l param -d 'Ordered parameter for the plateau [default: the one varying numeric parameter]' -r
complete -c summarize -l plateau-threshold -d 'Gain below which further steps of the parameter count as a plateau' -r
complete -c summarize -l tolerance -d 'Scores within this of the best count as a tie; the smaller parameter value wins' -r
complete -c summarize -s f -l format -d 'Output format [default: text, terminal or not; json for scripts]' -r -f -a "text\t'Aligned table and decisions (the default)'
markdown\t'Markdown table and decisions, for pull requests'
csv\t'One row per config and level'
json\t'One summary record, for scripts'"
complete -c summarize -l by -d 'workload: one table and pick per workload, then the best config per workload and level (json: one summary record per workload; without it, json/csv refuse results of several workloads, exit 57)' -r -f -a "workload\t'What was sent (load.workload: prompts, trace digest, block size)'"
complete -c summarize -l plot -d 'Also draw the metric by level and by parameter into this SVG file' -r -F
complete -c summarize -l report -d 'Also write one self-contained HTML report (verdict, table, frontier, capacity, timelines, failures, provenance) to FILE' -r -F
complete -c summarize -l schedule -d 'Print the server\'s own per-load schedule (JSON) from a sweep of one speculative depth at two or more concurrency levels' -r -f -a "vllm\t'vLLM: `--speculative-config` with num_speculative_tokens_per_batch_size'
sglang\t'SGLang: `--speculative-adaptive` with an adaptive config file'"
complete -c summarize -l max-batch -d 'With --schedule: the server\'s max batch, where the last range ends [default: from the records, else vLLM 256, SGLang 48]' -r
complete -c summarize -l max-depth -d 'With --schedule: use depths up to K only, each level getting the best depth <= K by the same pick rule, instead of the cap summarize chooses from the records (see SCHEDULE, Depth cap)' -r
complete -c summarize -l compare -d 'Compare two runs\' results: per config x level x metric the change, its 95% interval and a verdict (see COMPARING RUNS)' -r
complete -c summarize -l compare-by -d 'Compare the two runs of one results file that differ in FIELD, a dotted path (label, server.version); the first value seen is before' -r
complete -c summarize -l metrics -d 'With --compare: the metrics to compare, comma-separated [default: output tok/s, TTFT p50 and p99, TPOT p50, ITL p99, E2E p50]' -r
complete -c summarize -l fail-on -d 'With --compare: exit 59 when a cell got worse beyond both the noise and a term, e.g. \'throughput.output_tok_per_s<-5%,ttft_ms.p99>+10%\'' -r
complete -c summarize -l adaptive-config-file -d 'With --schedule sglang: the path the flags name for the adaptive config (write the record\'s adaptive_config there)' -r
complete -c summarize -l pool-hosts -d 'Rank results from hosts of different hardware together (without it: one table per host, and json/csv refuse, exit 55)'
complete -c summarize -l per-host -d 'One table (json: one summary record) per host, even when the hosts\' hardware is identical'
complete -c summarize -l pareto -d 'Also find the Pareto frontier of interactivity (1000 / TPOT p50, tok/s per user) against output tok/s per GPU; --plot draws it'
complete -c summarize -l trend -d 'Each config x level across several dated runs (one FILE each, in the order they ran): its value per run, the first-to-last change'
complete -c summarize -s h -l help -d 'Print help (see more with \'--help\')'
complete -c summarize -s V -l version -d 'Print version'
