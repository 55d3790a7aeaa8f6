complete -c summarize -s m -l metric -d 'Metric to compare: dotted path (ttft_ms.p99) or alias (p99_ttft_ms)' -r
complete -c summarize -l better -d 'Which way the metric improves [default: from its unit: _ms/_s lower]' -r -f -a "higher\t''
lower\t''"
complete -c summarize -s b -l baseline -d 'Config the change in % is against [default: speculation off, if present, else the first config]' -r
complete -c summarize -l objective -d 'How to pick the overall winner [default: slo with --slo, else weighted (every level counts, equal weights unless --weights)]' -r -f -a "max\t'The best single (config, level) cell'
slo\t'The best cell among those meeting every --slo term'
weighted\t'The best config over a weighted mix of levels (--weights)'"
complete -c summarize -l slo -d 'Service levels every pick must meet, e.g. \'p99_e2e_ms<=2000,p99_ttft_ms<=500\'' -r
complete -c summarize -l weights -d 'Level weights for --objective weighted, e.g. \'c=1:0.5,c=16:0.5\' [default: all levels equal]' -r
complete -c summarize -l param -d 'Ordered parameter for the plateau [default: the one varying numeric parameter]' -r
complete -c summarize -l plateau-threshold -d 'Gain below which further steps of the parameter count as a plateau' -r
complete -c summarize -l tolerance -d 'Scores within this of the best count as a tie; the smaller parameter value wins' -r
complete -c summarize -s f -l format -d 'Output format [default: text on a terminal, else json]' -r -f -a "text\t'Aligned table and decisions (default on a terminal)'
markdown\t'Markdown table and decisions, for pull requests'
csv\t'One row per config and level'
json\t'One summary record (default when stdout is not a terminal)'"
complete -c summarize -l plot -d 'Also draw the metric by level and by parameter into this SVG file' -r -F
complete -c summarize -l config-states -d 'For sweep(1): print each config\'s state (complete, failed, transport, incomplete), a TAB and KEY=VALUE per comma-separated KEY' -r
complete -c summarize -l origin -d 'For sweep(1): print the restore arguments of the input\'s origin record, one per line (nothing when it has none)'
complete -c summarize -l new-origin -d 'For sweep(1): read a dry-run swap record, write an origin record'
complete -c summarize -s h -l help -d 'Print help (see more with \'--help\')'
complete -c summarize -s V -l version -d 'Print version'
