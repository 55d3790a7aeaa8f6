complete -c svc-swap -l unit -d 'systemd unit to swap (".service" is added when NAME has no suffix)' -r
complete -c svc-swap -l container -d 'Container to swap: re-created with the edited command, the old one kept stopped as NAME.sweepkit-prev (see CONTAINERS in svc-swap(1))' -r
complete -c svc-swap -l compose -d 'Compose file whose --service to swap: its command: is edited in the file (backed up), then `compose up -d --no-deps --force-recreate`' -r
complete -c svc-swap -l service -d 'The service of --compose FILE to swap' -r
complete -c svc-swap -l engine -d 'Container engine CLI on the far side (default: docker when its daemon answers, else podman)' -r -f -a "docker\t'Docker (the daemon must answer `docker version`)'
podman\t'Podman (daemonless)'"
complete -c svc-swap -l spec -d 'Process spec of a server svc-swap supervises itself (no systemd); relative to the current directory; absolute with --ssh or --exec-prefix' -r
complete -c svc-swap -l manager -d 'Service manager (default: systemd with --unit, process with --spec)' -r -f -a "systemd\t'A systemd service (--unit)'
process\t'A server svc-swap supervises from a process spec (--spec)'
container\t'A Docker or podman container (--container)'
compose\t'A Docker Compose or podman-compose service (--compose, --service)'"
complete -c svc-swap -l set -d 'Set a launch flag (replace or add); FLAG alone makes a bare switch' -r
complete -c svc-swap -l set-file -d 'Set FLAG to a copy of local file PATH on the far side (checked there by size and SHA-256; see FILES in svc-swap(1))' -r
complete -c svc-swap -l file-dir -d 'Far-side directory for --set-file copies (default: /var/lib/sweepkit-swap/files; SPEC.sweepkit-files with --spec; with --container, required: a directory on one of its bind mounts)' -r
complete -c svc-swap -l unset -d 'Remove a launch flag (and its value)' -r
complete -c svc-swap -l apply-from -d 'Apply the config of a record from FILE or - (a summary\'s best_config, with its best_unset keys removed)' -r
complete -c svc-swap -l port -d 'TCP port that must be free before the new instance starts' -r
complete -c svc-swap -l wait -d 'How long to wait for old PIDs, port and GPU after the stop' -r
complete -c svc-swap -l resend-term-after -d 'Send SIGTERM again every DUR while the old server outlives it (a vLLM that is still loading loses the first); 0 never re-sends' -r
complete -c svc-swap -l stop-timeout -d 'SIGTERM grace before SIGKILL (process spec; default TimeoutStopSec)' -r
complete -c svc-swap -l start-timeout -d 'Bound on the start (systemctl start waits for ExecStartPost)' -r
complete -c svc-swap -l ready-cmd -d 'After the start, run CMD with sh -c locally (e.g. \'wait-ready ...\')' -r
complete -c svc-swap -l ready-timeout -d 'Bound on --ready-cmd' -r
complete -c svc-swap -l max-load -d 'The highest concurrency the server will serve: pre-flight\'s note of a request cap at or above N is left out (sweep gives its top level)' -r
complete -c svc-swap -l keep-backups -d 'Keep the newest N backups of the edited file, delete older ones (0 keeps all)' -r
complete -c svc-swap -l reattach -d 'Follow swap job ID (a run that lost its session) to its end and write its record: which config runs now' -r
complete -c svc-swap -l ssh -d 'Run far-side commands over SSH; HOST may be a Host alias of the ssh config (HostName, User, Port, IdentityFile, ProxyJump, ...); the user defaults to the config\'s, then the local one' -r
complete -c svc-swap -l ssh-config -d 'OpenSSH client config to read for --ssh [default: ~/.ssh/config]' -r -F
complete -c svc-swap -l ssh-key -d 'Private key for --ssh (or the upstream record\'s SSH target), after agent keys (repeatable) [default: the config\'s IdentityFile, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa]' -r -F
complete -c svc-swap -l known-hosts -d 'Check the host key against FILE, for every ProxyJump hop too [default: the config\'s UserKnownHostsFile, else ~/.ssh/known_hosts]' -r -F
complete -c svc-swap -l exec-prefix -d 'Run every far-side command behind this prefix, e.g. \'pct exec 129 --\' (also with --ssh)' -r
complete -c svc-swap -l connect-timeout -d 'Limit for SSH connect and authentication' -r
complete -c svc-swap -l ssh-retry -d 'Keep retrying SSH connects that are refused, reset or time out, and sessions lost mid-command (re-checkable steps only), for up to DUR with backoff; 0 for one attempt' -r
complete -c svc-swap -l in-place -d 'Edit the unit file itself (timestamped backup) instead of a drop-in'
complete -c svc-swap -l dry-run -d 'Print the diff on stderr and a dry-run record; change nothing'
complete -c svc-swap -l restore -d 'Put the previous config back (latest backup, or drop-in removal)'
complete -c svc-swap -l gpu -d 'Wait until no old PID holds GPU memory (nvidia-smi)'
complete -c svc-swap -l force-kill -d 'SIGKILL the service\'s own PIDs when a graceful stop did not end them'
complete -c svc-swap -l rollback-on-fail -d 'Restore and restart the old config when the new one fails to start or --ready-cmd fails (exit 25)'
complete -c svc-swap -l no-preflight -d 'Skip the pre-flight of SGLang\'s speculative flags (exit 26): let the server itself refuse a bad config, after its model load'
complete -c svc-swap -l quiet-preflight -d 'Keep pre-flight notes off stderr: they stay in the swap record\'s preflight field (sweep says each one once per sweep)'
complete -c svc-swap -l force-restart -d 'Restart even when the live instance already runs the requested config (by default such a swap is a no-op, recorded as noop: true)'
complete -c svc-swap -l accept-new-host-key -d 'Record an unknown host\'s key (OpenSSH\'s accept-new, also set by StrictHostKeyChecking in the config); a changed key is still refused'
complete -c svc-swap -s h -l help -d 'Print help (see more with \'--help\')'
complete -c svc-swap -s V -l version -d 'Print version'
