//! `sweep --hosts`: the pool, read from a file (one host a line) or a
//! comma list. A line is `DEST [NAME=VALUE]... [exec=PREFIX WORDS...]`;
//! each host gets its URL from sweep's `--url` template and an id, the
//! POSIX cksum of its DEST and exec prefix (the name of its origin file
//! and its sshlogin in GNU parallel), so a resumed pool finds its hosts'
//! origins again. Every error names the line.

use std::collections::BTreeMap;

use anyhow::anyhow;
use serde::Serialize;
use sweepkit::exit;
use sweepkit::exit::Exit;

use crate::read::read_text;

/// One host of the pool, as `hosts` answers.
#[derive(Debug, Serialize, PartialEq)]
pub struct Host {
    #[serde(rename = "type")]
    tag: &'static str,
    /// Its place in the pool, from 1.
    pub n: usize,
    /// `[USER@]HOST[:PORT]`, or `-` (this machine).
    pub dest: String,
    /// The exec prefix (empty: none).
    pub exec: String,
    pub url: String,
    pub id: String,
    /// How messages name it.
    pub name: String,
}

/// What is wrong with a pool (a usage error naming the line).
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum PoolError {
    #[error("{at}: {why}")]
    Line { at: String, why: LineError },
    #[error("{at}: the same host twice (each host runs one config at a time; for two servers on one machine give each line its own exec=PREFIX, a container each)")]
    Twice { at: String },
    #[error("--hosts {what}: no hosts in it")]
    Empty { what: String },
}

/// What is wrong with one line of a pool.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("'{0}' is not [USER@]HOST[:PORT] or -")]
    Dest(String),
    #[error("'{0}': expected NAME=VALUE")]
    NameValue(String),
    #[error("--url {url}: no value for {{{name}}} on this host (add {name}=VALUE to its line)")]
    Unfilled { url: String, name: String },
}

/// The pool of `spec` (a file's text, or else a comma list), its URLs
/// from `url`. `file`: the file's name, for messages.
pub fn parse(spec: &str, file: Option<&str>, url: &str) -> Result<Vec<Host>, PoolError> {
    let lines: Vec<&str> = match file {
        Some(_) => spec.lines().collect(),
        None => spec.split(',').collect(),
    };
    let mut hosts: Vec<Host> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let at = match file {
            Some(f) => format!("--hosts {f} line {}", i + 1),
            None => format!("--hosts '{line}'"),
        };
        let h = match host(t, hosts.len() + 1, url) {
            Ok(h) => h,
            Err(why) => return Err(PoolError::Line { at, why }),
        };
        if hosts.iter().any(|o| o.id == h.id) {
            return Err(PoolError::Twice { at });
        }
        hosts.push(h);
    }
    if hosts.is_empty() {
        return Err(PoolError::Empty {
            what: file.unwrap_or(spec).into(),
        });
    }
    Ok(hosts)
}

fn host(line: &str, n: usize, url: &str) -> Result<Host, LineError> {
    let (dest, mut rest) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(d, r)| (d, r.trim_start()));
    let hostname = host_of(dest).ok_or_else(|| LineError::Dest(dest.into()))?;
    let mut var = BTreeMap::new();
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
        var.insert(k.to_string(), v.to_string());
        rest = r;
    }
    let mut u = var.get("url").map_or(url, String::as_str).to_string();
    u = u
        .replace("{host}", &hostname)
        .replace("{n}", &n.to_string());
    for (k, v) in &var {
        u = u.replace(&format!("{{{k}}}"), v);
    }
    if let Some(k) = unfilled(&u) {
        return Err(LineError::Unfilled {
            url: url.into(),
            name: k.into(),
        });
    }
    let id = cksum(format!("{dest}\n{exec}\n").as_bytes()).to_string();
    let name = match dest {
        "-" if exec.is_empty() => "local".to_string(),
        "-" => exec.clone(),
        d => d.to_string(),
    };
    Ok(Host {
        tag: "host",
        n,
        dest: dest.into(),
        exec,
        url: u,
        id,
        name,
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

/// POSIX cksum(1): CRC-32 (polynomial 0x04C11DB7) over the bytes, then
/// their length, complemented; the ids of earlier pools were cksum's.
pub fn cksum(data: &[u8]) -> u32 {
    let step = |crc: u32, b: u8| {
        let mut c = crc ^ (u32::from(b) << 24);
        for _ in 0..8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04C1_1DB7
            } else {
                c << 1
            };
        }
        c
    };
    let mut crc = data.iter().fold(0, |c, &b| step(c, b));
    let mut len = data.len();
    while len > 0 {
        crc = step(crc, (len & 0xff) as u8);
        len >>= 8;
    }
    !crc
}

/// The pool of `--hosts` (a file, or else a comma list), its URLs from
/// the `url` template; a bad line is a usage error naming it.
pub(crate) fn pool(hosts: &str, url: &str) -> Result<Vec<Host>, Exit> {
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
    parse(&text, file.then_some(hosts), url).map_err(|e| Exit::new(exit::USAGE, anyhow!(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let h = parse(text, Some("pool"), "http://{host}:{port}")
            .unwrap_err()
            .to_string();
        assert_eq!(
            h,
            "--hosts pool line 4: --url http://{host}:{port}: no value for {port} on this host (add port=VALUE to its line)"
        );
        let h = parse(
            &text.replace("[::1]\n", ""),
            Some("pool"),
            "http://{host}:{port}",
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
        let e = |s: &str, f| parse(s, f, u).unwrap_err().to_string();
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
