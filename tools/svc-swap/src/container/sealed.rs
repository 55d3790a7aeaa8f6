//! Secret values in the definition svc-swap keeps on disk (issue 37): the
//! command's `--api-key X`, `--api-key=X` or `HF_TOKEN=X` is written as
//! `<secret FINGERPRINT>`, a 48-bit prefix of the value's SHA-256, never
//! the value. The engine keeps the value in the containers that need it;
//! `--restore` fills it back from theirs, picking by fingerprint, so a
//! file in /run/sweepkit-swap never holds a key. Pure: no I/O.

use std::collections::BTreeMap;

use sweepkit::redact::is_secret_key;

const OPEN: &str = "<secret ";

/// Where `argv` holds secret values: (word index, byte offset of the value
/// in it). The word after a secret flag (`--api-key X`), the part after
/// `=` of `--api-key=X` or `HF_TOKEN=X`; the words `sweepkit::redact::argv`
/// hides in a record.
fn spots(argv: &[String]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut after_flag = false;
    for (i, w) in argv.iter().enumerate() {
        if std::mem::take(&mut after_flag) && !w.starts_with("--") {
            out.push((i, 0));
            continue;
        }
        match w.split_once('=') {
            Some((k, v)) if is_secret_key(k) && !v.is_empty() => out.push((i, k.len() + 1)),
            Some(_) => {}
            None => after_flag = w.starts_with('-') && is_secret_key(w),
        }
    }
    out
}

fn fingerprint(value: &str) -> String {
    sweepkit::sha256::hex(value.as_bytes())[..12].to_string()
}

/// `argv` with each secret value replaced by its fingerprint.
pub fn seal(argv: &[String]) -> Vec<String> {
    let mut out = argv.to_vec();
    for (i, at) in spots(argv) {
        let (head, value) = argv[i].split_at(at);
        if !value.starts_with(OPEN) {
            out[i] = format!("{head}{OPEN}{}>", fingerprint(value));
        }
    }
    out
}

/// A sealed value that no container holds any more, by its flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the secret value of {flag} in it is held by no container now (svc-swap keeps no secret on disk); give it again with --set")]
pub struct Unheld {
    pub flag: String,
}

/// `sealed` with each fingerprint replaced by the value of the same
/// fingerprint in one of `holders` (the live container's argv, the kept
/// one's).
pub fn unseal(sealed: &[String], holders: &[&[String]]) -> Result<Vec<String>, Unheld> {
    let mut known = BTreeMap::new();
    for argv in holders {
        for (i, at) in spots(argv) {
            let v = &argv[i][at..];
            known.insert(fingerprint(v), v.to_string());
        }
    }
    let mut out = sealed.to_vec();
    for (i, at) in spots(sealed) {
        let (head, value) = sealed[i].split_at(at);
        let Some(fp) = value.strip_prefix(OPEN).and_then(|v| v.strip_suffix('>')) else {
            continue;
        };
        let Some(v) = known.get(fp) else {
            let flag = if at == 0 { &sealed[i - 1] } else { head };
            return Err(Unheld {
                flag: flag.trim_end_matches('=').to_string(),
            });
        };
        out[i] = format!("{head}{v}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn secrets_become_fingerprints_and_come_back_from_a_holder() {
        let argv = words(
            "sim --api-key sk-live-1 --port 8000 HF_TOKEN=hf_x --admin-api-key=adm9 --max-tokens 5",
        );
        let s = seal(&argv);
        let text = s.join(" ");
        for secret in ["sk-live-1", "hf_x", "adm9"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("--port 8000") && text.contains("--max-tokens 5"));
        assert!(s[2].starts_with("<secret ") && s[6].starts_with("--admin-api-key=<secret "));
        assert_eq!(seal(&s), s, "sealing twice changes nothing");
        // The live container holds another key: the right one is picked
        // from the holder that has it.
        let live = words("sim --api-key sk-other --port 8000");
        assert_eq!(unseal(&s, &[&live, &argv]).unwrap(), argv);
        let e = unseal(&s, &[&live]).unwrap_err().to_string();
        assert!(
            e.contains("of --api-key in it is held by no container"),
            "{e}"
        );
        // A flag with no value after it is left alone.
        let bare = words("sim --api-key --port 1");
        assert_eq!(seal(&bare), bare);
    }
}
