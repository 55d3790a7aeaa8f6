//! Bounded retry of far-side commands across a lost SSH session: the Ssh
//! transport opens a fresh session on the call after a failure, so waiting
//! and calling again is a reconnect. Every command svc-swap runs while a
//! job is in flight is safe to repeat (reads, the verdict file, and a
//! launch the job's own lock makes once-only).

use std::time::{Duration, Instant};

use sweepkit::transport::{CmdOutput, Stream, Transport, TransportError};

/// How long svc-swap keeps trying to reach the far side again.
pub const BUDGET: Duration = Duration::from_secs(30);

pub struct Retrying {
    inner: Box<dyn Transport>,
    budget: Duration,
}

impl Retrying {
    pub fn new(inner: Box<dyn Transport>, budget: Duration) -> Self {
        Retrying { inner, budget }
    }
}

impl Transport for Retrying {
    fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<CmdOutput, TransportError> {
        let t0 = Instant::now();
        let mut delay = Duration::from_millis(200);
        let mut said = false;
        loop {
            match self.inner.run(argv, stdin, timeout) {
                Err(e) if e.is_transient() && t0.elapsed() + delay < self.budget => {
                    if !said {
                        sweepkit::report::warning(
                            "svc-swap",
                            format!("{e}; reconnecting (up to {:?})", self.budget),
                        );
                        said = true;
                    }
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(4));
                }
                other => return other,
            }
        }
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn connect_tcp(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Box<dyn Stream>, TransportError> {
        self.inner.connect_tcp(host, port, timeout)
    }

    fn forward(&self, host: &str, port: u16) -> Result<std::net::SocketAddr, TransportError> {
        self.inner.forward(host, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Flaky(AtomicU32);
    impl Transport for Flaky {
        fn run(
            &self,
            _: &[String],
            _: Option<&[u8]>,
            _: Duration,
        ) -> Result<CmdOutput, TransportError> {
            if self.0.fetch_add(1, Ordering::SeqCst) < 2 {
                return Err(TransportError::Connect("session lost".into()));
            }
            Ok(CmdOutput {
                status: Some(0),
                ..Default::default()
            })
        }
        fn describe(&self) -> String {
            "flaky".into()
        }
    }

    #[test]
    fn lost_sessions_are_retried_within_the_budget() {
        let t = Retrying::new(Box::new(Flaky(AtomicU32::new(0))), Duration::from_secs(5));
        assert!(t
            .run(&["x".into()], None, Duration::from_secs(1))
            .unwrap()
            .success());
        let t = Retrying::new(
            Box::new(Flaky(AtomicU32::new(0))),
            Duration::from_millis(100),
        );
        assert!(matches!(
            t.run(&["x".into()], None, Duration::from_secs(1)),
            Err(TransportError::Connect(_))
        ));
    }
}
