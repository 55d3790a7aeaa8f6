//! SHA-256, for the checksum of a file svc-swap copies to the far side and
//! wait-ready checks there against `sha256sum` (coreutils). The digest is
//! the RustCrypto `sha2` crate's.

use sha2::{Digest, Sha256};

/// The digest of `data` as 64 lowercase hex digits (`sha256sum`'s form).
pub fn hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::hex;

    /// FIPS 180-4 examples (one block, two blocks) and the empty message.
    #[test]
    fn fips_180_4_vectors() {
        assert_eq!(
            hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    /// Lengths around the padding boundary agree with coreutils sha256sum.
    #[test]
    fn agrees_with_sha256sum_around_block_edges() {
        for n in [55usize, 56, 63, 64, 65, 1000] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
            let mut c = std::process::Command::new("sha256sum")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("sha256sum (coreutils)");
            use std::io::Write;
            c.stdin.take().unwrap().write_all(&data).unwrap();
            let out = c.wait_with_output().unwrap();
            let want = String::from_utf8(out.stdout).unwrap();
            assert_eq!(hex(&data), want.split_whitespace().next().unwrap(), "n={n}");
        }
    }
}
