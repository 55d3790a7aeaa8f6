//! A sampler on a thread of its own, off the request path: one sample when
//! it starts (on the caller's thread, before the level's first request),
//! one every interval, and one when it is told to finish (after the
//! level's last request). Samples never queue up behind a slow one: the
//! next is due an interval after the last was due, or now if that passed.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most samples kept per level (28 hours at 1 s); past it the newest
/// replaces the last kept, so the end stays the end.
pub const MAX_SAMPLES: usize = 100_000;

/// What a sampler collected: its samples in order, and the tries that
/// failed.
pub struct Collected<T> {
    pub samples: Vec<T>,
    pub errors: u64,
}

impl<T> Collected<T> {
    fn add(&mut self, x: Option<T>) {
        match x {
            Some(x) if self.samples.len() >= MAX_SAMPLES => {
                if let Some(last) = self.samples.last_mut() {
                    *last = x;
                }
            }
            Some(x) => self.samples.push(x),
            None => self.errors += 1,
        }
    }
}

/// A running sampler.
pub struct Poller<T: Send + 'static> {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: JoinHandle<Collected<T>>,
}

impl<T: Send + 'static> Poller<T> {
    /// Sample now with `take` (None: the try failed), then every `every`
    /// on a new thread until [`Poller::finish`].
    pub fn start<F>(mut take: F, every: Duration) -> Poller<T>
    where
        F: FnMut() -> Option<T> + Send + 'static,
    {
        let mut got = Collected {
            samples: Vec::new(),
            errors: 0,
        };
        got.add(take());
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut due = Instant::now() + every;
            loop {
                let last = wait_until(&flag, due);
                got.add(take());
                if last {
                    return got;
                }
                let now = Instant::now();
                due = if due + every > now {
                    due + every
                } else {
                    now + every
                };
            }
        });
        Poller { stop, handle }
    }

    /// Take the last sample now and return them all.
    pub fn finish(self) -> Collected<T> {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        self.handle.join().unwrap_or(Collected {
            samples: Vec::new(),
            errors: 1,
        })
    }
}

/// Sleep until `due` or until told to stop; true when told to stop.
fn wait_until(flag: &(Mutex<bool>, Condvar), due: Instant) -> bool {
    let (lock, cv) = flag;
    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if *stopped {
            return true;
        }
        let now = Instant::now();
        if now >= due {
            return false;
        }
        stopped = cv
            .wait_timeout(stopped, due - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_at_start_every_interval_and_at_the_end() {
        let mut n = 0u32;
        let p = Poller::start(
            move || {
                n += 1;
                (n != 3).then_some(n)
            },
            Duration::from_millis(20),
        );
        std::thread::sleep(Duration::from_millis(110));
        let t = Instant::now();
        let got = p.finish();
        // Told to finish, it takes its last sample at once.
        assert!(t.elapsed() < Duration::from_millis(50));
        assert_eq!(got.samples[0], 1);
        assert_eq!(got.errors, 1, "the third try failed");
        assert!((4..=8).contains(&got.samples.len()), "{:?}", got.samples);
        let mut sorted = got.samples.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, got.samples);
    }
}
