//! `--report FILE.html`: one self-contained page a person opens and
//! understands in a minute, after guidellm's HTML report: the verdict,
//! the table with changes and error bars, the Pareto frontier, throughput
//! and latency by concurrency, capacity under the SLO, each config's
//! timeline, every failure, and the provenance. Inline CSS and SVG only:
//! no script, no network (a Content-Security-Policy of `default-src
//! 'none'` makes the browser refuse any load the page might attempt).
//! The page goes through `sweepkit::redact::text` as a whole.

pub(crate) mod charts;
pub(crate) mod data;
pub(crate) mod server;
pub(crate) mod verdict;

use std::fmt::Write as _;

use sweepkit::redact;

use crate::analysis::Analysis;
use crate::parts::Part;
use crate::plot::chart::esc;
use crate::report::data::Gathered;
use crate::table::{simulated_notice, Table};
use crate::views::Views;

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:24px;max-width:1240px;color:#222}\
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:28px}\
.banner{background:#b00020;color:#fff;font-weight:bold;padding:10px 14px;border-radius:4px}\
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ddd;padding:4px 8px}\
th{background:#f4f4f4;text-align:left}td.num{text-align:right;white-space:nowrap}\
td.best{background:#e6f4ea;font-weight:bold}td.failed{color:#b00020;font-style:italic}\
.chg{color:#555;font-size:11px;margin-left:4px}.mark{color:#a60;font-size:11px}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px}dt{font-weight:bold}\
dd{margin:0}pre{background:#f7f7f7;padding:6px;overflow-x:auto;font-size:12px}\
.charts{display:flex;flex-direction:column;gap:16px}.legend{font-size:12px;color:#555}\
svg.chart{display:block;width:100%;height:auto}h3{font-size:15px}\
.action{font-size:18px;font-weight:bold;background:#eef5ff;padding:8px 12px;border-radius:4px}\
code{overflow-wrap:anywhere}li{margin-bottom:6px}.warn{color:#8a4b00}";

/// The whole page.
pub fn html(
    parts: &[Part],
    texts: &[&str],
    started: std::time::SystemTime,
    validations: &[serde_json::Value],
) -> String {
    let a0 = &parts[0].analysis;
    let g = data::gather(&a0.model, texts);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>sweepkit report: {}</title><style>{CSS}</style></head><body>\n",
        esc(&a0.opts.metric.path)
    );
    if let Some(n) = simulated_notice(&a0.model).or_else(|| {
        g.simulated
            .then(|| "SIMULATED: results came from llm-sim, not a real model".into())
    }) {
        let _ = writeln!(
            out,
            r#"<div id="simulated" class="banner">{}</div>"#,
            esc(&n)
        );
    }
    let _ = writeln!(out, "<h1>sweepkit report</h1>");
    for (i, part) in parts.iter().enumerate() {
        let (a, views) = (&part.analysis, &part.views);
        if let Some(h) = &part.host {
            let _ = writeln!(out, "<h2>host {} ({})</h2>", esc(&h.label), esc(&h.key));
        }
        let sfx = if i == 0 {
            String::new()
        } else {
            format!("-{i}")
        };
        let t = Table::of(a);
        out += &verdict::verdict(a, &t, &sfx);
        out += &crate::export::html::write(&t, &sfx);
        out += &verdict::schedules(a, &sfx);
        if let Some(p) = &views.pareto {
            out += &frontier(a, p, &sfx);
        }
        out += &charts(a, &sfx);
        out += &server::section(a, &t.explained, &sfx);
        if let Some(c) = &views.capacity {
            out += &capacity(a, c, views, &sfx);
        }
        out += &timeline(a, views, &sfx);
        out += &warnings(a, &sfx);
    }
    out += &crate::validation::html(validations);
    out += &failures(&g);
    out += &provenance(a0, &g, started);
    out += "</body></html>\n";
    // The page is escaped HTML by now: a marker the redactor puts in (a
    // key in a log tail, `api_key='...'`) must be escaped too, or the
    // browser reads `<redacted>` as an element and shows `api_key=''`.
    redact::text(&out).replace(redact::REDACTED, &esc(redact::REDACTED))
}

fn frontier(a: &Analysis, p: &crate::views::pareto::Pareto, sfx: &str) -> String {
    let m = &a.model;
    let mut out = format!(
        "<section id=\"frontier{sfx}\"><h2>Pareto frontier</h2>\n<p class=\"legend\">x: \
         interactivity, tok/s per user = 1000 / TPOT p50 (InferenceX); y: {} (vLLM plot_pareto's \
         tokens/s/GPU). A cell is on the frontier when no other is at least as good on both.</p>\n",
        esc(crate::views::pareto::y_name(p))
    );
    for n in &p.notes {
        let _ = writeln!(out, "<p class=\"warn\">{}</p>", esc(n));
    }
    out += &charts::frontier(a, p);
    let _ = writeln!(out, "<ol id=\"frontier-list{sfx}\">");
    for &i in &p.frontier {
        let q = &p.points[i];
        let byc = q.per_user_by_concurrency.map_or_else(String::new, |v| {
            format!(", {} by output/concurrency", crate::wording::num(v))
        });
        let _ = writeln!(
            out,
            "<li>{} at {}: {} tok/s/user{}; {} {}</li>",
            esc(&m.rows[q.row].label),
            esc(&m.levels[q.col].label()),
            crate::wording::num(q.x),
            esc(&byc),
            crate::wording::num(q.y),
            if p.per_gpu {
                "tok/s/GPU"
            } else {
                "tok/s/server"
            }
        );
    }
    out += "</ol><ul>\n";
    for (label, what) in crate::views::pareto::per_config(a, p) {
        let _ = writeln!(out, "<li><b>{}</b>: {}</li>", esc(&label), esc(&what));
    }
    out += "</ul></section>\n";
    out
}

fn charts(a: &Analysis, sfx: &str) -> String {
    let mut out = format!(
        "<section id=\"by-concurrency{sfx}\"><h2>Throughput and latency by concurrency</h2><div class=\"charts\">\n"
    );
    out += &charts::by_level(a, "chart-throughput", "throughput.output_tok_per_s");
    out += &charts::by_level(a, "chart-ttft", "ttft_ms.p99");
    out += &charts::by_level(a, "chart-tpot", "tpot_ms.p50");
    out += "</div></section>\n";
    out
}

fn capacity(
    a: &Analysis,
    caps: &[crate::views::capacity::Capacity],
    v: &Views,
    sfx: &str,
) -> String {
    let terms: Vec<String> = a.opts.slo.iter().map(|t| t.to_string()).collect();
    let mut out = format!(
        "<section id=\"capacity{sfx}\"><h2>Capacity under the SLO <code>{}</code></h2>\n\
         <table id=\"capacity-table{sfx}\"><thead><tr><th>rank</th><th>config</th><th>capacity</th>\
         <th>time to ready</th></tr></thead><tbody>\n",
        esc(&terms.join(","))
    );
    for (i, c) in caps.iter().enumerate() {
        let ready = v.startup.text(c.row);
        let _ = writeln!(
            out,
            "<tr><td>{}</td><th>{}</th><td>{}</td><td>{}</td></tr>",
            i + 1,
            esc(&a.model.rows[c.row].label),
            esc(&crate::views::capacity::describe(a, c)),
            esc(if ready.is_empty() {
                "not recorded"
            } else {
                &ready
            })
        );
    }
    out += "</tbody></table></section>\n";
    out
}

fn timeline(a: &Analysis, v: &Views, sfx: &str) -> String {
    let t = data::timelines(a, &v.startup);
    let mut out = format!(
        "<section id=\"timeline{sfx}\"><h2>Per-config timeline</h2>\n<p class=\"legend\">stop: the \
         old server's stop (swap record); load: start until ready (ready record); bench: the sum of \
         its levels' wall time. Medians over starts.</p>\n"
    );
    out += &charts::timeline(&t);
    out += "</section>\n";
    out
}

fn warnings(a: &Analysis, sfx: &str) -> String {
    if a.warnings.is_empty() {
        return String::new();
    }
    let mut out = format!("<section id=\"warnings{sfx}\"><h2>Warnings</h2><ul>\n");
    for w in &a.warnings {
        let _ = writeln!(out, "<li class=\"warn\">{}</li>", esc(w));
    }
    out += "</ul></section>\n";
    out
}

fn failures(g: &Gathered) -> String {
    let mut out = String::from("<section id=\"failures\"><h2>Failures</h2>\n");
    if g.failures.is_empty() {
        out += "<p id=\"no-failures\">none</p></section>\n";
        return out;
    }
    out += "<ul id=\"failure-list\">\n";
    for f in &g.failures {
        let at = f
            .level
            .as_ref()
            .map_or_else(String::new, |l| format!(" at {l}"));
        let code = f
            .exit_code
            .map_or_else(String::new, |c| format!(", exit {c}"));
        let _ = write!(
            out,
            "<li class=\"failure\" data-class=\"{}\"><b>{}{}</b>: {} (stage {}, class {}{}): {}",
            esc(&f.class),
            esc(&f.config),
            esc(&at),
            esc(&f.kind.replace('_', " ")),
            esc(&f.stage),
            esc(&f.class),
            esc(&code),
            esc(&f.reason)
        );
        if !f.log_tail.is_empty() {
            let _ = write!(out, "<pre>{}</pre>", esc(&f.log_tail.join("\n")));
        }
        out += "</li>\n";
    }
    out += "</ul></section>\n";
    out
}

fn provenance(a: &Analysis, g: &Gathered, started: std::time::SystemTime) -> String {
    let m = &a.model;
    let mut out = String::from("<section id=\"provenance\"><h2>Provenance</h2><dl>\n");
    let list = |xs: &mut dyn Iterator<Item = &String>| {
        let v: Vec<String> = xs.map(|x| esc(x)).collect();
        if v.is_empty() {
            "not recorded".to_string()
        } else {
            v.join("<br>")
        }
    };
    let _ = writeln!(
        out,
        "<dt>hosts and hardware</dt><dd>{}</dd>",
        list(&mut g.hosts.iter())
    );
    let _ = writeln!(
        out,
        "<dt>servers</dt><dd>{}</dd>",
        list(&mut g.servers.iter())
    );
    let varied: Vec<String> = m
        .varying
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mut vals: Vec<&str> = m
                .rows
                .iter()
                .map(|r| crate::analysis::group::Model::value_text(&r.key[i]))
                .collect();
            vals.dedup();
            format!("{k}: {}", vals.join(", "))
        })
        .collect();
    let _ = writeln!(
        out,
        "<dt>flags that differed</dt><dd>{}</dd>",
        list(&mut varied.iter())
    );
    let mut ctx: Vec<String> = m.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if ctx.is_empty() {
        ctx.extend(data::common_words(&g.commands));
    }
    let _ = writeln!(
        out,
        "<dt>same everywhere</dt><dd>{}</dd>",
        list(&mut ctx.iter())
    );
    let cmds: Vec<String> = g
        .commands
        .iter()
        .map(|(l, c)| format!("{l}: {c}"))
        .collect();
    let _ = writeln!(
        out,
        "<dt>launch commands</dt><dd><code>{}</code></dd>",
        list(&mut cmds.iter())
    );
    let _ = writeln!(out, "<dt>tools</dt><dd>{}</dd>", list(&mut g.tools.iter()));
    let when = match (&g.first, &g.last) {
        (Some(f), Some(l)) => format!("{f} to {l}"),
        _ => "not recorded".into(),
    };
    let _ = writeln!(out, "<dt>measured</dt><dd>{}</dd>", esc(&when));
    let _ = writeln!(
        out,
        "<dt>report</dt><dd>summarize {} at {}</dd>",
        esc(sweepkit::VERSION),
        esc(&sweepkit::time::rfc3339(started))
    );
    out += "</dl></section>\n";
    out
}
