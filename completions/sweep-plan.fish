# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_sweep_plan_global_optspecs
    string join \n field= shell h/help V/version
end

function __fish_sweep_plan_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_sweep_plan_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_sweep_plan_using_subcommand
    set -l cmd (__fish_sweep_plan_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -s V -l version -d 'Print version'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "configs" -d 'Each config of the grid, in run order, with its state in RESULTS and whether to run it (--resume skips those with a result)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "args" -d 'One config\'s arguments for a tool, one word per line'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "verdict" -d 'What one run of a config (or of --schedule\'s step) left in RESULTS: its state and how many bench records it wrote (other configs\' records are not counted); with --exits, what sweep makes of it (tally, usage_exit, interrupted, refused, warning, note)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "tally" -d 'A single-host sweep\'s end from the tally file `verdict --tally FILE` and `step --tally FILE` appended to: the `done` line sweep says and its exit status (41 every config failed, 40 some, else 0)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "origin" -d 'Before sweep\'s first stop: read the target\'s launch line as the run would (svc-swap --dry-run with config 1\'s words, changing nothing), refuse what would fail every config alike (`sweep: error:`, exit 2), then keep the original once per results file (and pool host): the origin record every restore puts back'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "end" -d 'The end of a sweep, one swap at a time: with --keep-winner the schedule when it wins by the objective, else summarize\'s pick; else (or when that fails) the original config, a transport failure retried. Each answer: `swap` with svc-swap\'s and wait-ready\'s words and the lines to say, or `done` with the error and exit status (42: the last swap did not end with a ready server)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "validation" -d 'Mark loadgen\'s records on stdin as sweep --validate-on\'s replay (a `validation` object), for the results file: never one of the sweep\'s results'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "restore" -d 'svc-swap\'s words that put ORIGIN\'s original config back, one per line; every swept key must be in it'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "host-dropped" -d 'The record of a host the fleet dropped for REASON; ORIGIN is that host\'s origin record (may be missing)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "next" -d 'The adaptive search\'s next step along the one --param: measure a value, or done (and why, what it cost)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "step" -d 'Which step sweep\'s loop runs next, with each tool\'s words for it: the grid\'s next config after the one it ran last (resumed: one whose last record is not a result), or the adaptive search\'s next value (as `next`; a finished search\'s untried values get skipped records in RESULTS), then the schedule step; `done` when none is left, with how many were skipped, or `fail` with the error and the exit status'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "outcome" -d 'How a pool\'s grid ended (sweep --hosts): configs measured, failed and left without a result, hosts dropped, whether a job\'s tool rejected its arguments (usage), the exit status sweep(1) documents, and what sweep says at the end (error, warning, done, refusal), whether the restores apply the winner (keep_winner)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "hosts" -d 'The pool of `sweep --hosts`, one answer per host: its place (n), dest, exec prefix, URL (from the --url template), id and name, and a GPU slot\'s slot, GPUs and target; a bad line or two clashing slots: a usage error naming them'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "fleet-step" -d 'One try of config N on one pool host: the try\'s record (it names the host, for fleet-watch) with the job\'s next step and its exit status for GNU parallel (0: the result stands, 1: another host tries it through --retries, 130: interrupted)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "fleet-watch" -d 'Read the pool\'s tries (fleet-step\'s records) on stdin till parallel ends; keep each host\'s blame, and drop a host charged N times (a warning, a host_dropped record appended to RESULTS, the sshlogin file SLF rewritten without it: parallel re-reads it)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "slot-bench" -d 'Run loadgen (LOADGEN ARGS...) on the ready record on stdin once no other slot of the machine is benchmarking (--lock), marking the slot\'s activity in the machine\'s log and adding the slot to each bench record; exits with loadgen\'s status (130: interrupted while waiting)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "schedule" -d 'The last schedule record for SERVER in RESULTS, where its step stands (derive, run or done, its records\' state) and the words wait-ready takes for it; with --emit-record the record itself (as svc-swap --apply-from reads it). sweep\'s loop asks `step`'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "progress" -d 'Where the sweep stands before config N runs, and its ETA: the mean load and bench time of the config starts in RESULTS so far, times the configs without a result, over the configs that run at once (`--field line`: the human line)'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "progress-end" -d 'Give a terminal\'s bottom row back after `progress --show` (the whole screen scrolls again, the row is cleared); off a terminal, nothing. sweep(1) runs it at exit, signals included'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "options" -d 'Parse sweep(1)\'s own arguments (after --) with its one option definition; print its settings as bash assignments, every value single-quoted (sweep.sh evals them); a bad one: `sweep: error:`, 2'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "dry-run" -d 'sweep(1) --dry-run: refuse what the run would refuse before its first stop (reading the launch line as it would, changing nothing), then print the plan for sweep\'s arguments (after --): with --hosts each host and its URL, then each config\'s pipe as a command to copy, the tools at the paths given'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "slurm" -d 'Run `sweep --slurm`: each config a Slurm job (sweep(1), SLURM), the table at its end; with --dry-run in ARGV print the batch script and the sbatch line. Either refuses first what a sweep without Slurm refuses before its first stop'
complete -c sweep-plan -n "__fish_sweep_plan_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand configs" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand configs" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand configs" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand configs" -l resume -d 'Skip configs whose last record is a result (complete, or a failure of their own)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand configs" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand configs" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand args" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand args" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand args" -l index -d 'The config\'s place in the grid (1-based, as `configs` numbers)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand args" -l for -d 'Which tool\'s words' -r -f -a "swap\t'svc-swap: `--set FLAG=VALUE` per swept flag'
expect\t'wait-ready: `--expect-config KEY=VALUE` per swept flag'
stage\t'wait-ready and loadgen: `--pipeline-config KEY=VALUE`'"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand args" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand args" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand args" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l index -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l schedule -d 'The schedule step\'s run for SERVER instead of a config: counted only when it failed (it adds no config to the measured count)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l tally -d 'Append the verdict of a finished run (one not to be retried) to FILE, for `tally --from FILE`' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l since -d 'Only the records after this many lines (the file\'s length before the run)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l exits -d 'The run\'s exit statuses: svc-swap\'s, wait-ready\'s, loadgen\'s' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l retries -d 'sweep\'s --retries (a transport failure runs again this often)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l attempt -d 'Which try this was, from 0 (with --exits: retry_in_s and retry_note say whether and when to run it again)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l say -d 'Say on stderr after PREFIX each pre-flight note of the run\'s swap record that no verdict in the --tally FILE said yet' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand verdict" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand tally" -l from -d 'The tally file (missing: nothing counted)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand tally" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand tally" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand tally" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand origin" -l tools -d 'svc-swap\'s, wait-ready\'s and loadgen\'s paths' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand origin" -l summarize -d 'summarize\'s path: `slurm` scores the --adaptive search and derives the --schedule with it' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand origin" -l host -d 'Pool host ID\'s target (sweep --hosts); its original is kept in RESULTS.fleet/origin-ID.jsonl too' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand origin" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand origin" -l only-refusals -d 'Refuse only: a launch line that cannot be read is no error here (exit 0, nothing said: the host\'s first job reads it again)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand origin" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand origin" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l origin -d 'The file holding the origin record' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l schedule -d 'The sweep ran the SERVER schedule step (its own flags are undone with the pick or the original)' -r -f -a "vllm\t''
sglang\t''"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l summarize -d 'Run summarize (this path) once, into DIR/summary: its summary record of RESULTS (`--format json`) for --keep-winner and --validate-on' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l sum-arg -d 'An argument for --summarize (repeatable)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l validate-on -d 'sweep --validate-on: replay trace FILE against the pick (and the schedule) before the rest of the end' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l slo -d 'sweep --slo: loadgen --slo for the replay' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l validate-load -d 'loadgen\'s words for the replay (repeatable)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l after -d 'The swap that ran last (none: the first is asked for)' -r -f -a "winner\t'--keep-winner\'s: the schedule or summarize\'s pick'
original\t'The original config'
pick-to-validate\t'--validate-on\'s: the pick applied to be validated'
validated-pick\t'--validate-on\'s: the trace replayed against the pick'
schedule-to-validate\t'--validate-on\'s: the schedule applied to be validated'
validated-schedule\t'--validate-on\'s: the trace replayed against the schedule'"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l attempt -d 'Which try of the original that was, from 0' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l exits -d 'svc-swap\'s and wait-ready\'s exit statuses in it' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l retries -d 'sweep\'s --retries (a transport failure restores again this often)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l work -d 'Where the schedule record for svc-swap --apply-from is written' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l interrupted -d '1: the sweep was interrupted, so the original\'s wait is bounded by the first time to ready RESULTS measured, plus a margin' -r -f -a "true\t''
false\t''"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l keep-winner -d 'Apply the winner last (the schedule when it wins, else summarize\'s pick)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand end" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand validation" -l of -d 'What was validated' -r -f -a "pick\t''
schedule\t''"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand validation" -l trace -d 'The trace replayed' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand validation" -l slo -d 'The objectives loadgen judged goodput by' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand validation" -l config -d 'The config replayed against (a JSON object), for records whose own `config` is empty (loadgen ran with no upstream)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand validation" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand validation" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand validation" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand restore" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand restore" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand restore" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand restore" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand restore" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand host-dropped" -l reason -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand host-dropped" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand host-dropped" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand host-dropped" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l patience -d 'Stop after K further values past the best showed the plateau' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l noise-margin -d 'Weighted-score gap that counts as a close call (and a drop that counts as a clear peak) until repeats measure the noise' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l repeat-budget -d 'Extra config starts allowed for re-measuring close calls' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l summary -d 'summarize\'s summary record of RESULTS (`summarize --format json --objective weighted --pool-hosts RESULTS`); - is stdin; empty: nothing measured yet' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l emit-skipped -d 'Write a skipped record for each untried value of a finished search (none twice), instead of the answer'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand next" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l patience -d 'Stop after K further values past the best showed the plateau' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l noise-margin -d 'Weighted-score gap that counts as a close call (and a drop that counts as a clear peak) until repeats measure the noise' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l repeat-budget -d 'Extra config starts allowed for re-measuring close calls' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l after -d 'The config the loop ran last (0: none yet)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l index -d 'Config N itself (a pool job\'s), with its words' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l schedule -d 'After the configs, the schedule step for SERVER (sweep --schedule): derive it (summarize --schedule), run it, or done' -r -f -a "vllm\t''
sglang\t''"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l derived -d 'The derive ran (summarize --schedule, its record appended to RESULTS) and exited RC: run the schedule (0), keep the static pick (56, refused), or fail' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l retries -d 'sweep\'s --retries (for the adaptive search\'s transport stop)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l work -d 'Where the schedule record for svc-swap --apply-from is written' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l adaptive -d 'The adaptive search, from summarize\'s summary record of RESULTS (as `next --summary`)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l summarize -d 'Run summarize (this path) where the step needs it: with --adaptive for the scores (its summary record of RESULTS, kept in SUMMARY; an exit other than 0, 1 or 3 fails the step), with --schedule to derive the schedule (its record appended to RESULTS) rather than answer `derive`' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l sum-arg -d 'An argument for --summarize (repeatable)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l schedule-max-depth -d 'With --summarize: derive the schedule from depths up to K only (summarize --max-depth K)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l say -d 'Say the answer\'s notes (the configs skipped, the search\'s reasons, its end and cost) on stderr, each after PREFIX' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l tally -d 'Append the answer (its skipped count) to FILE, for `tally --from FILE`; a loop that asked to run more steps than 4 per config plus 40 there is stuck: `fail`' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l scheduled -d 'The schedule step ran: done'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l expect-config -d 'A config\'s wait-ready words check the live server runs it (--expect-config per swept flag)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l resume -d 'Skip configs whose last record is a result'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l all -d 'Every config left to run at once (`pending`), for a pool'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand step" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l since -d 'Count the host_dropped records after this many lines (the file\'s length when the pool started)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l joblog -d 'GNU parallel\'s --joblog of the pool: a job that exited 2 (a usage error) is one (missing: none ran)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l tries -d 'fleet-watch\'s --tries file: with --joblog, the jobs that ended well without a try record (unstarted: none of sweep\'s job ran)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l summarize -d 'summarize\'s path, for --keep-winner' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l sum-arg -d 'An argument for --summarize (repeatable)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l interrupted -d 'The pool was interrupted: exit 130 (a usage error stays 2)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l keep-winner -d 'sweep --keep-winner: refused when summarize (--summarize) finds hosts of different hardware or server version (one pick would compare the hosts): exit 42, the refusal to say, and no winner applied'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand outcome" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand hosts" -l hosts -d 'A pool file, or a comma list of hosts' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand hosts" -l url -d 'sweep\'s --url template ({host}, {n}, {NAME} of the line)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand hosts" -l target -d 'sweep\'s --unit, --spec or --container name: a GPU slot\'s own, templated alike ({slot}, {gpus}, {port})' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand hosts" -l gpus -d 'sweep\'s --gpus: split each host into GPU slots' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand hosts" -l gpus-per-config -d 'sweep\'s --gpus-per-config' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand hosts" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand hosts" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand hosts" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l index -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l host -d 'The host\'s id (its sshlogin)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l state -d 'The try\'s verdict (`verdict --field state`)' -r -f -a "pending\t'No record of it yet'
complete\t'Bench records, the last one whole'
failed\t'A failure of the config\'s own (crash, OOM, mismatch...): a result'
transport\t'Only a transient failure so far: run it again'
incomplete\t'Cut short by an interrupt, or stopped by the command\'s mistake (a `usage` failure): run it again'"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l swap-exit -d 'svc-swap\'s exit status in the try' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l origin-failed -d 'The host\'s config could not be read (nothing ran): blame it'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l suspect -d 'The config already failed on another host in this run'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-step" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-watch" -l drop-after -d 'Failures charged to a host before it is dropped' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-watch" -l host -d 'A host of the pool (repeatable, in --hosts order)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-watch" -l slf -d 'parallel\'s --slf file, written here' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-watch" -l origins -d 'The directory of the hosts\' origin-ID.jsonl records' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-watch" -l tries -d 'Append each try\'s record here too (the pool\'s per-try log)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-watch" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-watch" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand fleet-watch" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slot-bench" -l activity -d 'The machine\'s activity log (one line per change of a slot)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slot-bench" -l lock -d 'The machine\'s bench lock; absent: benches run together (sweep --bench-together)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slot-bench" -l machine -d 'The machine\'s name, for the records' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slot-bench" -l slot -d 'This slot' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slot-bench" -l gpus -d 'This slot\'s GPUs' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slot-bench" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slot-bench" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slot-bench" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand schedule" -l server -d 'The server the schedule is for' -r -f -a "vllm\t''
sglang\t''"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand schedule" -l words -d 'Print one tool\'s words one per line instead: expect (wait-ready --expect-config) or stage (--pipeline-config)' -r -f -a "expect\t''
stage\t''"
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand schedule" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand schedule" -l resume -d 'Keep a schedule RESULTS holds (without: always derive anew)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand schedule" -l emit-record -d 'Print the last schedule record instead of the answer; none: exit 3'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand schedule" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand schedule" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l param -d 'Launch flag to vary (repeatable); A,B: flags that move together' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l values -d 'Comma-separated values of the --param at the same place (with A,B: each value A:B); START..END[:STEP] is an inclusive range' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l index -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l show -d 'Show the line on stderr, after PREFIX, instead of answering on stdout: kept on the bottom row of a terminal, else a plain line' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l lanes -d 'Configs that run at once (a pool\'s hosts and GPU slots)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l bench-lanes -d 'Of those, configs that may bench at once (a machine\'s slots take turns)' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l plain -d 'With --show: a plain line even on a terminal'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress-end" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress-end" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand progress-end" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand options" -l host -d 'Only pool host ID\'s own settings: the stages\' target, ready and load words, its origin_file and say_prefix' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand options" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand options" -l pool -d 'Only the pool\'s hosts: h_id and h_name, in --hosts order'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand options" -l start -d 'A sweep starts (not a pool\'s job): also refuse a results file that holds another sweep, unless --resume or --append'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand options" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand options" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand dry-run" -l tools -d 'svc-swap\'s, wait-ready\'s and loadgen\'s paths' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand dry-run" -l summarize -d 'summarize\'s path: `slurm` scores the --adaptive search and derives the --schedule with it' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand dry-run" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand dry-run" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand dry-run" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slurm" -l tools -d 'svc-swap\'s, wait-ready\'s and loadgen\'s paths' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slurm" -l summarize -d 'summarize\'s path: `slurm` scores the --adaptive search and derives the --schedule with it' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slurm" -l field -d 'Print these fields of each answer, one per line (arrays: the elements joined by spaces; absent: an empty line), not JSON' -r
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slurm" -l shell -d 'Print each answer as bash assignments instead, one field a line (NAME=\'text\', arrays NAME=(\'a\' \'b\')), every value single-quoted so sweep(1) can eval them; with --field only those fields'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand slurm" -s h -l help -d 'Print help'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "configs" -d 'Each config of the grid, in run order, with its state in RESULTS and whether to run it (--resume skips those with a result)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "args" -d 'One config\'s arguments for a tool, one word per line'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "verdict" -d 'What one run of a config (or of --schedule\'s step) left in RESULTS: its state and how many bench records it wrote (other configs\' records are not counted); with --exits, what sweep makes of it (tally, usage_exit, interrupted, refused, warning, note)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "tally" -d 'A single-host sweep\'s end from the tally file `verdict --tally FILE` and `step --tally FILE` appended to: the `done` line sweep says and its exit status (41 every config failed, 40 some, else 0)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "origin" -d 'Before sweep\'s first stop: read the target\'s launch line as the run would (svc-swap --dry-run with config 1\'s words, changing nothing), refuse what would fail every config alike (`sweep: error:`, exit 2), then keep the original once per results file (and pool host): the origin record every restore puts back'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "end" -d 'The end of a sweep, one swap at a time: with --keep-winner the schedule when it wins by the objective, else summarize\'s pick; else (or when that fails) the original config, a transport failure retried. Each answer: `swap` with svc-swap\'s and wait-ready\'s words and the lines to say, or `done` with the error and exit status (42: the last swap did not end with a ready server)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "validation" -d 'Mark loadgen\'s records on stdin as sweep --validate-on\'s replay (a `validation` object), for the results file: never one of the sweep\'s results'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "restore" -d 'svc-swap\'s words that put ORIGIN\'s original config back, one per line; every swept key must be in it'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "host-dropped" -d 'The record of a host the fleet dropped for REASON; ORIGIN is that host\'s origin record (may be missing)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "next" -d 'The adaptive search\'s next step along the one --param: measure a value, or done (and why, what it cost)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "step" -d 'Which step sweep\'s loop runs next, with each tool\'s words for it: the grid\'s next config after the one it ran last (resumed: one whose last record is not a result), or the adaptive search\'s next value (as `next`; a finished search\'s untried values get skipped records in RESULTS), then the schedule step; `done` when none is left, with how many were skipped, or `fail` with the error and the exit status'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "outcome" -d 'How a pool\'s grid ended (sweep --hosts): configs measured, failed and left without a result, hosts dropped, whether a job\'s tool rejected its arguments (usage), the exit status sweep(1) documents, and what sweep says at the end (error, warning, done, refusal), whether the restores apply the winner (keep_winner)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "hosts" -d 'The pool of `sweep --hosts`, one answer per host: its place (n), dest, exec prefix, URL (from the --url template), id and name, and a GPU slot\'s slot, GPUs and target; a bad line or two clashing slots: a usage error naming them'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "fleet-step" -d 'One try of config N on one pool host: the try\'s record (it names the host, for fleet-watch) with the job\'s next step and its exit status for GNU parallel (0: the result stands, 1: another host tries it through --retries, 130: interrupted)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "fleet-watch" -d 'Read the pool\'s tries (fleet-step\'s records) on stdin till parallel ends; keep each host\'s blame, and drop a host charged N times (a warning, a host_dropped record appended to RESULTS, the sshlogin file SLF rewritten without it: parallel re-reads it)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "slot-bench" -d 'Run loadgen (LOADGEN ARGS...) on the ready record on stdin once no other slot of the machine is benchmarking (--lock), marking the slot\'s activity in the machine\'s log and adding the slot to each bench record; exits with loadgen\'s status (130: interrupted while waiting)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "schedule" -d 'The last schedule record for SERVER in RESULTS, where its step stands (derive, run or done, its records\' state) and the words wait-ready takes for it; with --emit-record the record itself (as svc-swap --apply-from reads it). sweep\'s loop asks `step`'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "progress" -d 'Where the sweep stands before config N runs, and its ETA: the mean load and bench time of the config starts in RESULTS so far, times the configs without a result, over the configs that run at once (`--field line`: the human line)'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "progress-end" -d 'Give a terminal\'s bottom row back after `progress --show` (the whole screen scrolls again, the row is cleared); off a terminal, nothing. sweep(1) runs it at exit, signals included'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "options" -d 'Parse sweep(1)\'s own arguments (after --) with its one option definition; print its settings as bash assignments, every value single-quoted (sweep.sh evals them); a bad one: `sweep: error:`, 2'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "dry-run" -d 'sweep(1) --dry-run: refuse what the run would refuse before its first stop (reading the launch line as it would, changing nothing), then print the plan for sweep\'s arguments (after --): with --hosts each host and its URL, then each config\'s pipe as a command to copy, the tools at the paths given'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "slurm" -d 'Run `sweep --slurm`: each config a Slurm job (sweep(1), SLURM), the table at its end; with --dry-run in ARGV print the batch script and the sbatch line. Either refuses first what a sweep without Slurm refuses before its first stop'
complete -c sweep-plan -n "__fish_sweep_plan_using_subcommand help; and not __fish_seen_subcommand_from configs args verdict tally origin end validation restore host-dropped next step outcome hosts fleet-step fleet-watch slot-bench schedule progress progress-end options dry-run slurm help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
