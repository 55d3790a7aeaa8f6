complete -c wait-ready -l server -d 'Server preset: picks the readiness endpoint and knows its traps' -r -f -a "sglang\t''
vllm\t''
llama.cpp\t''
openai\t''
llm-sim\t''"
complete -c wait-ready -l timeout -d 'Overall time limit (humantime: 90s, 10m); then exit 124' -r
complete -c wait-ready -l attempt-timeout -d 'Limit for one probe (connect plus response) [default: 25s with --server sglang, whose /health generates a token and may take 20 s; else 2s]' -r
complete -c wait-ready -l interval -d 'First pause between probes; also the pause after any change seen' -r
complete -c wait-ready -l backoff -d 'How the pause grows while nothing changes' -r -f -a "none\t'Always --interval'
linear\t'Grows by --interval each probe'
exponential\t'Grows by half each probe'"
complete -c wait-ready -l max-interval -d 'Cap on the pause between probes' -r
complete -c wait-ready -l unreachable-after -d 'Fail fast: a target that never accepted a connection for this long is unreachable (exit 12), refused ones only with nothing watched (no --pid, --unit, --log). By default a refused port is a server still starting, probed until --timeout: exit 12 if it never opened' -r
complete -c wait-ready -l unresolved-after -d 'A target whose host name has not resolved for this long is unreachable (exit 12): a typo, as a rule. Raise it where names appear late (Compose, Kubernetes); `never` waits until --timeout. Over --ssh the far side resolves names: one it cannot resolve reads as refused' -r
complete -c wait-ready -l not-found-after -d 'A listening server that answers HTTP 404 or 405 (no such path) for this long is probed at the wrong path (exit 14): a loading server refuses or answers 503. `never` waits until --timeout' -r
complete -c wait-ready -l expect-status -d 'Accepted HTTP statuses: codes, ranges and classes (200,204 2xx 200-399). Default 2xx' -r
complete -c wait-ready -l expect-json -d 'Require a JSON value in the body: `.status=ok`, `.data[0].id` (PATH alone: must exist). Repeatable' -r
complete -c wait-ready -l expect-body -d 'Require the body to match this regular expression' -r
complete -c wait-ready -l method -d 'HTTP method of the probes' -r
complete -c wait-ready -l header -d 'Extra request header `Name: value`. Repeatable' -r
complete -c wait-ready -l body -d 'Request body of the probes' -r
complete -c wait-ready -l api-key -d 'Bearer token for the probes; never printed. Prefer the environment (OPENAI_API_KEY is also read with --server openai)' -r
complete -c wait-ready -l pid -d 'Watch this process: its exit ends the wait as crashed (exit 10)' -r
complete -c wait-ready -l log -d 'Watch this log file: fatal lines (OOM, Traceback) end the wait' -r
complete -c wait-ready -l log-offset -d 'Read --log from this byte offset: where this instance\'s output begins [default: the swap record\'s start.log_offset, else the file\'s size when the wait starts]' -r
complete -c wait-ready -l fatal-regex -d 'Extra regular expression for fatal log lines. Repeatable' -r
complete -c wait-ready -l unit -d 'Watch this systemd unit (failed: crashed; restarts: restart loop)' -r
complete -c wait-ready -l container -d 'Watch this container (exited: crashed, with its exit code and log tail; OOMKilled: oom; restarted by its engine: restart loop) [default: the swap record\'s container]' -r
complete -c wait-ready -l engine -d 'Container engine CLI for --container [default: the swap record\'s, else docker when its daemon answers, else podman]' -r -f -a "docker\t'Docker (the daemon must answer `docker version`)'
podman\t'Podman (daemonless)'"
complete -c wait-ready -l ssh -d 'Run far-side commands over SSH; HOST may be a Host alias of the ssh config (HostName, User, Port, IdentityFile, ProxyJump, ...); the user defaults to the config\'s, then the local one' -r
complete -c wait-ready -l ssh-config -d 'OpenSSH client config to read for --ssh [default: ~/.ssh/config]' -r -F
complete -c wait-ready -l ssh-key -d 'Private key for --ssh (or the upstream record\'s SSH target), after agent keys (repeatable) [default: the config\'s IdentityFile, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa]' -r -F
complete -c wait-ready -l known-hosts -d 'Check the host key against FILE, for every ProxyJump hop too [default: the config\'s UserKnownHostsFile, else ~/.ssh/known_hosts]' -r -F
complete -c wait-ready -l exec-prefix -d 'Run every far-side command behind this prefix, e.g. \'pct exec 129 --\' (also with --ssh)' -r
complete -c wait-ready -l connect-timeout -d 'Limit for SSH connect and authentication' -r
complete -c wait-ready -l ssh-retry -d 'Keep retrying SSH connects that are refused, reset or time out, and sessions lost mid-command (re-checkable steps only), for up to DUR with backoff; 0 for one attempt' -r
complete -c wait-ready -l expect-config -d 'Once ready, require the live server argument KEY to equal VALUE (dashes or underscores). Repeatable. Mismatch: exit 13' -r
complete -c wait-ready -l expect-file -d 'Once ready, require far-side file PATH to have this SHA-256 (the swap record\'s copied files are checked too). Mismatch: exit 13' -r
complete -c wait-ready -l pipeline-config -d 'Run as a pipeline stage for this config (repeatable; sweep passes it): with no upstream record on stdin, measure nothing, write a failure record with this config and exit 4' -r
complete -c wait-ready -l deep -d 'With --server sglang: also require /health_generate (one token)'
complete -c wait-ready -l accept-new-host-key -d 'Record an unknown host\'s key (OpenSSH\'s accept-new, also set by StrictHostKeyChecking in the config); a changed key is still refused'
complete -c wait-ready -l invert -d 'Wait until the targets fail (server down) instead'
complete -c wait-ready -l no-stdin -d 'Never read an upstream record from stdin'
complete -c wait-ready -s q -l quiet -d 'Write no record on stdout, not even a passed-through failure (the stderr reason line stays)'
complete -c wait-ready -s v -l verbose -d 'Print each change of state on stderr'
complete -c wait-ready -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wait-ready -s V -l version -d 'Print version'
