//! Who listens on a TCP port of this machine, read from /proc (as `ss
//! -ltnp` does): the LISTEN sockets of /proc/net/tcp and tcp6 with that
//! local port, then the processes holding those socket inodes among their
//! file descriptors. Processes whose fds cannot be read (another user's,
//! without privilege) are not seen.

use std::fs;

use crate::proc_stat::ProcStat;

/// A process holding a listening socket.
#[derive(Debug, Clone, PartialEq)]
pub struct Holder {
    pub pid: u32,
    /// Its command line, words joined by spaces.
    pub command: String,
}

/// The inodes of the sockets listening on `port` in a /proc/net/tcp text.
fn listening_inodes(text: &str, port: u16) -> Vec<String> {
    let want = format!(":{port:04X}");
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            (f.len() > 9 && f[1].ends_with(&want) && f[3] == "0A").then(|| f[9].to_string())
        })
        .filter(|i| i != "0")
        .collect()
}

/// The processes holding a socket that listens on `port`, by PID.
pub fn holders(port: u16) -> Vec<Holder> {
    let mut inodes = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        inodes.extend(listening_inodes(
            &fs::read_to_string(f).unwrap_or_default(),
            port,
        ));
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut out = Vec::new();
    for pid in pids() {
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            fs::read_link(fd.path())
                .is_ok_and(|t| wanted.iter().any(|w| t.as_os_str() == w.as_str()))
        });
        if holds {
            out.push(Holder {
                pid,
                command: command(pid),
            });
        }
    }
    out
}

/// Every PID in /proc, ascending.
fn pids() -> Vec<u32> {
    let mut v: Vec<u32> = fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// `pid`'s command line, NULs as spaces ("" when gone).
pub fn command(pid: u32) -> String {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    words.join(" ")
}

/// `pid` and its ancestors up to (not including) PID 1.
pub fn lineage(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut cur = pid;
    while cur > 1 && out.len() < 64 {
        out.push(cur);
        let stat = fs::read_to_string(format!("/proc/{cur}/stat")).unwrap_or_default();
        let Some(stat) = ProcStat::parse(&stat) else {
            break;
        };
        cur = stat.ppid().unwrap_or(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_is_found_with_its_command() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = holders(port);
        let me = std::process::id();
        assert!(h.iter().any(|h| h.pid == me), "{h:?}");
        assert!(!h[0].command.is_empty());
        assert!(lineage(me).contains(&me));
        drop(l);
        assert!(holders(port).is_empty());
    }

    #[test]
    fn only_listening_sockets_of_the_port_count() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1\n   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4243 1\n";
        assert_eq!(listening_inodes(text, 8080), ["4242"]);
        assert!(listening_inodes(text, 8081).is_empty());
    }
}
