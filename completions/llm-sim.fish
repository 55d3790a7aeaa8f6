complete -c llm-sim -l host -d 'Address to bind (keep it on loopback for tests)' -r
complete -c llm-sim -l port -d 'Port to bind; 0 picks a free one and reports it in the bound line' -r
complete -c llm-sim -l model-name -d 'Model name served in /v1/models, /server_info and responses' -r
complete -c llm-sim -l speculative-num-steps -d 'Draft steps per decode step (sglang: with algorithm and topk)' -r
complete -c llm-sim -l personality -d 'Which real server to imitate' -r -f -a "sglang\t'SGLang (python -m sglang.launch_server)'
vllm\t'vLLM (vllm serve)'
llama.cpp\t'llama.cpp\'s llama-server'"
complete -c llm-sim -l speculative-algorithm -d 'SGLang\'s speculative algorithm (EAGLE, EAGLE3, NEXTN, STANDALONE)' -r
complete -c llm-sim -l speculative-eagle-topk -d 'SGLang\'s draft tree branching factor' -r
complete -c llm-sim -l speculative-num-draft-tokens -d 'SGLang\'s draft tokens verified per step' -r
complete -c llm-sim -l speculative-adaptive-config -d 'SGLang: the adaptive config (JSON keyed by batch size)' -r
complete -c llm-sim -l speculative-config -d 'vLLM\'s speculative settings as JSON (num_speculative_tokens, method)' -r
complete -c llm-sim -l api-key -d 'API key the server requires (and, like SGLang, reports about itself)' -r
complete -c llm-sim -l admin-api-key -d 'SGLang\'s admin API key (reported in /server_info, as SGLang does)' -r
complete -c llm-sim -l ssl-keyfile-password -d 'SGLang\'s TLS key password (reported in /server_info; no TLS)' -r
complete -c llm-sim -l health-probe-time -d 'Time one sglang /health probe takes (SGLang: a token and 1 s)' -r
complete -c llm-sim -l speculative-accept-rate -d 'Probability P that a draft token is accepted (greedy sampling)' -r
complete -c llm-sim -l speculative-accept-by -d 'Acceptance P of prompts starting with WORD, e.g. math=0.9' -r
complete -c llm-sim -l speculative-draft-horizon -d 'Draft positions at P; later positions are accepted with P/6' -r
complete -c llm-sim -l speculative-kv-per-step -d 'KV tokens each running request reserves per speculative step' -r
complete -c llm-sim -l max-running-requests -d 'Most requests decoded at once (default 128; sglang+spec: 48)' -r
complete -c llm-sim -l kv-capacity-tokens -d 'KV cache size in tokens shared by running requests' -r
complete -c llm-sim -l context-length -d 'Longest prompt + max_tokens a request may ask for' -r
complete -c llm-sim -l load-time -d 'Time the port stays closed (simulated weight loading)' -r
complete -c llm-sim -l warmup-time -d 'Time /health answers 503 after the port opens' -r
complete -c llm-sim -l step-time -d 'Base time of one decode step (the target model\'s forward pass)' -r
complete -c llm-sim -l per-seq-time -d 'Extra step time per running sequence' -r
complete -c llm-sim -l draft-step-time -d 'Extra step time per speculative step (the draft model\'s passes)' -r
complete -c llm-sim -l prefill-per-token -d 'Extra step time per prompt token admitted in that step (prefill)' -r
complete -c llm-sim -l eos-prob -d 'Chance that a token after the first is EOS (unless ignore_eos)' -r
complete -c llm-sim -l seed -d 'Seed of every random draw (default: from the clock, logged)' -r
complete -c llm-sim -l noise -d 'Run-to-run noise: each start\'s speed is 1 +/- PCT (see llm-sim(1))' -r
complete -c llm-sim -l noise-counter -d 'Start counter for --noise (read, counted up): each start draws anew' -r -F
complete -c llm-sim -l crash-after -d 'Crash (exit 1) this long after becoming ready' -r
complete -c llm-sim -l crash-after-requests -d 'Crash (exit 1) when the Nth generation request arrives' -r
complete -c llm-sim -l ignore-sigterm -d 'On SIGTERM keep serving for DUR, then exit (SIGKILL ends it sooner)' -r
complete -c llm-sim -l error-rate -d 'Fraction of generation requests answered HTTP 500' -r
complete -c llm-sim -l cut-stream-rate -d 'Fraction of streams whose connection is closed mid-way, no [DONE]' -r
complete -c llm-sim -l malformed-sse-rate -d 'Fraction of streams with one malformed SSE line mid-way' -r
complete -c llm-sim -l stall-rate -d 'Fraction of streams that stop sending for --stall mid-way' -r
complete -c llm-sim -l stall -d 'Length of a stall' -r
complete -c llm-sim -l exact-ttft -d 'Exact time to first token; one token per chunk (client accuracy)' -r
complete -c llm-sim -l exact-itl -d 'Exact gap between token chunks (with --exact-ttft)' -r
complete -c llm-sim -l speculative-adaptive -d 'SGLang: move the draft steps per batch size by accept length'
complete -c llm-sim -l enable-metrics -l metrics -d 'Serve /metrics as sglang and llama.cpp do when asked (vllm always)'
complete -c llm-sim -l crash-on-load -d 'Crash at the end of loading with a CUDA-out-of-memory line, exit 1'
complete -c llm-sim -l zero-delay -d 'No simulated time: answer as fast as possible (client overhead)'
complete -c llm-sim -s h -l help -d 'Print help (see more with \'--help\')'
complete -c llm-sim -s V -l version -d 'Print version'
