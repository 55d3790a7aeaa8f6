//! Reading `systemctl show` output and comparing its lossy `ExecStart`
//! rendering (`argv[]=` words joined by spaces, unquoted) with the line
//! svc-swap wrote. Pure.

use std::collections::BTreeMap;

use crate::execstart::ExecLine;

/// The properties svc-swap reads.
pub const PROPS: &str = "LoadState,ActiveState,SubState,Result,MainPID,ExecMainCode,\
ExecMainStatus,NRestarts,InvocationID,NeedDaemonReload,ExecStart,FragmentPath,DropInPaths,\
TimeoutStopUSec,ControlGroup";

/// Parse `Key=value` lines of the keys asked for; a line that does not
/// start a known key continues the previous value (argv words may hold
/// newlines).
pub fn parse(out: &str, keys: &str) -> BTreeMap<String, String> {
    let keys: Vec<&str> = keys.split(',').collect();
    let mut map = BTreeMap::new();
    let mut last: Option<String> = None;
    for line in out.lines() {
        let known = line
            .split_once('=')
            .filter(|(k, _)| keys.contains(k) && !map.contains_key(*k));
        if let Some((k, v)) = known {
            map.insert(k.to_string(), v.to_string());
            last = Some(k.to_string());
        } else if let Some(k) = &last {
            let v: &mut String = map.get_mut(k).expect("last key present");
            v.push('\n');
            v.push_str(line);
        }
    }
    map
}

/// The `argv[]=` part of a `systemctl show -p ExecStart` value.
pub fn exec_argv(value: &str) -> Option<&str> {
    let start = value.find("argv[]=")? + "argv[]=".len();
    let rest = &value[start..];
    let end = rest.rfind(" ; ignore_errors=")?;
    Some(&rest[..end])
}

/// Does systemd's rendering `shown` carry `line`? `%%` shows as `%`, `$$`
/// stays as written; other `%` specifiers match any text without spaces.
pub fn carries(shown: &str, line: &ExecLine) -> bool {
    let skip = usize::from(line.prefix.contains('@'));
    let joined = line.words[skip..].join(" ");
    // Split at specifiers into literal pieces that must appear in order.
    let mut pieces = vec![String::new()];
    let mut chars = joined.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('%') => pieces.last_mut().unwrap().push('%'),
                Some(_) => pieces.push(String::new()),
                None => pieces.last_mut().unwrap().push('%'),
            }
        } else {
            pieces.last_mut().unwrap().push(c);
        }
    }
    if pieces.len() == 1 {
        return shown == pieces[0];
    }
    let (first, rest) = pieces.split_first().unwrap();
    let Some(mut s) = shown.strip_prefix(first.as_str()) else {
        return false;
    };
    for (i, p) in rest.iter().enumerate() {
        let last = i + 1 == rest.len();
        let found = if last {
            s.ends_with(p.as_str()).then(|| s.len() - p.len())
        } else {
            s.find(p.as_str())
        };
        match found {
            Some(at) if !s[..at].contains(' ') => s = &s[at + p.len()..],
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execstart::parse as exec;

    #[test]
    fn show_with_newlines_in_argv() {
        let out = "TimeoutStopUSec=1min 30s\nMainPID=0\nExecStart={ path=/bin/s ; argv[]=/bin/s x\ny ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }\nLoadState=loaded\n";
        let m = parse(out, PROPS);
        assert_eq!(m["LoadState"], "loaded");
        assert_eq!(exec_argv(&m["ExecStart"]), Some("/bin/s x\ny"));
        assert!(carries("/bin/s x\ny", &exec("/bin/s \"x\\ny\"").unwrap()));
    }

    #[test]
    fn carries_handles_specifiers_and_dollars() {
        let l = exec("/bin/s --n=%n 50%% $$HOME --k 5").unwrap();
        assert!(carries("/bin/s --n=x.service 50% $$HOME --k 5", &l));
        assert!(!carries("/bin/s --n=x.service 50% $$HOME --k 4", &l));
        assert!(!carries("/bin/s --n=a b 50% $$HOME --k 5", &l));
        let at = exec("@/usr/bin/python3 py -m x").unwrap();
        assert!(carries("py -m x", &at));
    }
}
