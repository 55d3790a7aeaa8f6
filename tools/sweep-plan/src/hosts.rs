//! `sweep --hosts`: the pool, read from a file (one host a line) or a
//! comma list. A line is `DEST [NAME=VALUE]... [exec=PREFIX WORDS...]`;
//! each host gets its URL from sweep's `--url` template and an id, the
//! POSIX cksum of its DEST and exec prefix (the name of its origin file
//! and its sshlogin in GNU parallel), so a resumed pool finds its hosts'
//! origins again. A line naming `slot=` or `gpus=` (or every line, split
//! by `--gpus`) is a GPU slot of its machine: its own target (`{slot}`,
//! `{gpus}`, `{port}` filled in the unit, spec or container name), port
//! and GPUs, its id the cksum of DEST, exec prefix and target, so a slot
//! keeps its origin whatever the layout (slots/layout.rs checks them).
//! Every error names the line.

use std::collections::BTreeMap;

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;

use crate::host::cksum;
pub use crate::host::Host;
pub(crate) use crate::host::Line;
use crate::read::read_text;
use crate::slots::layout::{self, SlotError, Split};

/// The templates each host fills: sweep's `--url`, and its target's name
/// (`--unit`, `--spec` or `--container`) when slots may template it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Templates<'a> {
    pub url: &'a str,
    pub target: Option<&'a str>,
}

/// What is wrong with a pool (a usage error naming the line).
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum PoolError {
    #[error("{at}: {why}")]
    Line { at: String, why: LineError },
    #[error("{at}: the same host twice (each host runs one config at a time; for two servers on one machine give each line its own exec=PREFIX, a container each, or make them GPU slots: gpus=LIST and a target per slot)")]
    Twice { at: String },
    #[error("--hosts {what}: no hosts in it")]
    Empty { what: String },
    #[error(transparent)]
    Slots(#[from] SlotError),
}

/// What is wrong with one line of a pool.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("'{0}' is not [USER@]HOST[:PORT] or -")]
    Dest(String),
    #[error("'{0}': expected NAME=VALUE")]
    NameValue(String),
    #[error(
        "{what} {template}: no value for {{{name}}} on this host (add {name}=VALUE to its line)"
    )]
    Unfilled {
        what: &'static str,
        template: String,
        name: String,
    },
    #[error("port={0}: not a port number")]
    Port(String),
    #[error(transparent)]
    Split(#[from] SlotError),
}

/// The pool of `spec` (a file's text, or else a comma list), filling
/// templates `t`, each line split into slots by `split` (`--gpus`).
/// `file`: the file's name, for messages.
pub fn parse(
    spec: &str,
    file: Option<&str>,
    t: &Templates<'_>,
    split: Option<&Split<'_>>,
) -> Result<Vec<Host>, PoolError> {
    let texts: Vec<&str> = match file {
        Some(_) => spec.lines().collect(),
        None => spec.split(',').collect(),
    };
    let mut lines = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let tx = text.trim();
        if tx.is_empty() || tx.starts_with('#') {
            continue;
        }
        let at = match file {
            Some(f) => format!("--hosts {f} line {}", i + 1),
            None => format!("--hosts '{text}'"),
        };
        match line(tx, &at) {
            Ok(l) => lines.push(l),
            Err(why) => return Err(PoolError::Line { at, why }),
        }
    }
    if lines.is_empty() {
        return Err(PoolError::Empty {
            what: file.unwrap_or(spec).into(),
        });
    }
    hosts_of(lines, t, split)
}

/// The hosts of read `lines`: split into slots, numbered, built, checked.
pub(crate) fn hosts_of(
    lines: Vec<Line>,
    t: &Templates<'_>,
    split: Option<&Split<'_>>,
) -> Result<Vec<Host>, PoolError> {
    let lines = match split {
        Some(sp) => layout::split(lines, sp)?,
        None => lines,
    };
    let lines = layout::number(lines);
    let mut hosts: Vec<Host> = Vec::new();
    for l in &lines {
        let h = host(l, hosts.len() + 1, t).map_err(|why| PoolError::Line {
            at: l.at.clone(),
            why,
        })?;
        if let Some(o) = hosts.iter().find(|o| o.id == h.id) {
            match (&o.slot, &h.slot) {
                (Some(_), Some(_)) => return Err(layout::same_target(o, &h).into()),
                _ => return Err(PoolError::Twice { at: l.at.clone() }),
            }
        }
        hosts.push(h);
    }
    layout::check(&hosts)?;
    Ok(hosts)
}

fn line(text: &str, at: &str) -> Result<Line, LineError> {
    let (dest, mut rest) = text
        .split_once(char::is_whitespace)
        .map_or((text, ""), |(d, r)| (d, r.trim_start()));
    let hostname = host_of(dest).ok_or_else(|| LineError::Dest(dest.into()))?;
    let mut vars = BTreeMap::new();
    let mut exec = String::new();
    while !rest.is_empty() {
        if let Some(e) = rest.strip_prefix("exec=") {
            exec = e.to_string();
            break;
        }
        let (word, r) = rest
            .split_once(char::is_whitespace)
            .map_or((rest, ""), |(w, r)| (w, r.trim_start()));
        let (k, v) = word
            .split_once('=')
            .filter(|(k, _)| is_name(k))
            .ok_or_else(|| LineError::NameValue(word.into()))?;
        vars.insert(k.to_string(), v.to_string());
        rest = r;
    }
    Ok(Line {
        at: at.into(),
        dest: dest.into(),
        hostname,
        vars,
        exec,
    })
}

/// `template` with `{host}`, `{n}` and the line's `{NAME}`s filled in.
fn fill(template: &str, l: &Line, n: usize) -> String {
    let mut u = template
        .replace("{host}", &l.hostname)
        .replace("{n}", &n.to_string());
    for (k, v) in &l.vars {
        u = u.replace(&format!("{{{k}}}"), v);
    }
    u
}

fn host(l: &Line, n: usize, t: &Templates<'_>) -> Result<Host, LineError> {
    let slot = l.is_slot();
    let port = match l.vars.get("port") {
        Some(p) if slot => Some(p.parse().map_err(|_| LineError::Port(p.clone()))?),
        _ => None,
    };
    let template = l.vars.get("url").map_or(t.url, String::as_str);
    let url = fill(template, l, n);
    // A slot's port may come from its target (read by the origin's dry run).
    let pending = |k: &str| slot && port.is_none() && k == "port";
    if let Some(k) = unfilled(&url).filter(|k| !pending(k)) {
        return Err(LineError::Unfilled {
            what: "--url",
            template: t.url.into(),
            name: k.into(),
        });
    }
    let target = match (slot, t.target) {
        (true, Some(tt)) => Some(fill(tt, l, n)),
        _ => None,
    };
    if let (Some(tg), Some(tt)) = (&target, t.target) {
        if let Some(k) = unfilled(tg) {
            return Err(LineError::Unfilled {
                what: "the target",
                template: tt.into(),
                name: k.into(),
            });
        }
    }
    let id = match &target {
        Some(tg) => cksum(format!("{}\n{}\n{tg}\n", l.dest, l.exec).as_bytes()),
        None => cksum(format!("{}\n{}\n", l.dest, l.exec).as_bytes()),
    };
    let base = match l.dest.as_str() {
        "-" if l.exec.is_empty() => "local".to_string(),
        "-" => l.exec.clone(),
        d => d.to_string(),
    };
    let slot_no = l.vars.get("slot").cloned().filter(|_| slot);
    let name = match &slot_no {
        Some(k) => format!("{base} slot {k}"),
        None => base,
    };
    Ok(Host {
        tag: "host",
        n,
        dest: l.dest.clone(),
        exec: l.exec.clone(),
        url,
        id: id.to_string(),
        name,
        slot: slot_no,
        gpus: l.vars.get("gpus").cloned().filter(|_| slot),
        port,
        target,
    })
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// The HOST of `[USER@]HOST[:PORT]` (an IPv6 address in brackets, without
/// them); `-` is localhost; None: not that shape.
fn host_of(dest: &str) -> Option<String> {
    if dest == "-" {
        return Some("localhost".into());
    }
    let rest = match dest.split_once('@') {
        Some((u, r)) if !u.is_empty() && !u.contains(char::is_whitespace) => r,
        Some(_) => return None,
        None => dest,
    };
    let (h, port) = if let Some(r) = rest.strip_prefix('[') {
        let (addr, after) = r.split_once(']')?;
        let ok = !addr.is_empty() && addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':');
        (ok.then_some(addr)?, after)
    } else {
        let end = rest.find(':').unwrap_or(rest.len());
        let h = &rest[..end];
        let ok = h
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        ((ok && !h.is_empty()).then_some(h)?, &rest[end..])
    };
    match port.strip_prefix(':') {
        None if port.is_empty() => Some(h.into()),
        Some(p) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => Some(h.into()),
        _ => None,
    }
}

/// The first `{NAME}` left in a URL.
fn unfilled(u: &str) -> Option<&str> {
    let mut s = u;
    while let Some(i) = s.find('{') {
        let r = &s[i + 1..];
        if let Some(j) = r.find('}') {
            if is_name(&r[..j]) {
                return Some(&r[..j]);
            }
        }
        s = r;
    }
    None
}

/// The pool of `--hosts` (a file, or else a comma list; `None`: the one
/// machine `here` names, for `--gpus` alone), its URLs and slot targets
/// from templates `t`, split into slots by `split`; a bad line is a usage
/// error naming it.
pub(crate) fn pool(
    hosts: Option<&str>,
    here: &Line,
    t: &Templates<'_>,
    split: Option<&Split<'_>>,
) -> Result<Vec<Host>, Exit> {
    let usage = |e: PoolError| Exit::new(exit::USAGE, anyhow!(e));
    let Some(hosts) = hosts else {
        return hosts_of(vec![here.clone()], t, split).map_err(usage);
    };
    let file = std::path::Path::new(hosts).is_file();
    if !file && hosts.contains('/') {
        return Err(Exit::new(
            exit::USAGE,
            anyhow!("--hosts {hosts}: no such file"),
        ));
    }
    let text = if file {
        read_text(hosts, false)?
    } else {
        hosts.to_string()
    };
    parse(&text, file.then_some(hosts), t, split).map_err(usage)
}

/// The machine sweep's own options name (`--ssh`, `--exec-prefix`), as a
/// pool line: what `--gpus` splits without `--hosts`.
pub(crate) fn here(ssh: Option<&str>, exec: Option<&str>) -> Line {
    let dest = ssh.unwrap_or("-");
    Line {
        at: "--gpus".into(),
        dest: dest.into(),
        hostname: host_of(dest).unwrap_or_else(|| dest.into()),
        vars: BTreeMap::new(),
        exec: exec.unwrap_or_default().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(url: &str) -> Templates<'_> {
        Templates { url, target: None }
    }

    #[test]
    fn cksum_is_posix_cksum() {
        // printf 'a\n\n' | cksum; printf '' | cksum
        assert_eq!(cksum(b"a\n\n"), CKSUM_A);
        assert_eq!(cksum(b""), 4_294_967_295);
    }
    const CKSUM_A: u32 = 853_898_590;

    #[test]
    fn a_pool_file_with_vars_exec_prefixes_and_urls() {
        let text = "# two\n- port=8001 exec=pct exec 129 --\nroot@gpu2:2222 url=http://10.0.0.2:30000\n[::1]\n";
        let h = parse(text, Some("pool"), &urls("http://{host}:{port}"), None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            h,
            "--hosts pool line 4: --url http://{host}:{port}: no value for {port} on this host (add port=VALUE to its line)"
        );
        let h = parse(
            &text.replace("[::1]\n", ""),
            Some("pool"),
            &urls("http://{host}:{port}"),
            None,
        )
        .unwrap();
        assert_eq!(h[0].url, "http://localhost:8001");
        assert_eq!(h[0].exec, "pct exec 129 --");
        assert_eq!(h[0].name, "pct exec 129 --");
        assert_eq!(h[1].url, "http://10.0.0.2:30000");
        assert_eq!((h[1].n, h[1].name.as_str()), (2, "root@gpu2:2222"));
        assert_eq!(h[0].id, cksum(b"-\npct exec 129 --\n").to_string());
    }

    #[test]
    fn bad_pools_name_the_line() {
        let u = "http://{host}:8000";
        let e = |s: &str, f| parse(s, f, &urls(u), None).unwrap_err().to_string();
        assert!(e("a b=1\n\nc oops\n", Some("p")).ends_with("line 3: 'oops': expected NAME=VALUE"));
        assert!(e("a,a", None).contains("the same host twice"));
        assert!(e("-,-", None).contains("its own exec=PREFIX"));
        assert!(e("a,b c", None).contains("'b c'"));
        assert!(e("x@", None).contains("is not [USER@]HOST[:PORT] or -"));
        assert!(e("h:port", None).contains("is not"));
        assert_eq!(e("# none\n", Some("p")), "--hosts p: no hosts in it");
        assert_eq!(host_of("u@[fe80::1]:22").unwrap(), "fe80::1");
    }
}
