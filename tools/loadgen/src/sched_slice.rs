//! Ask the kernel to run loadgen's threads soon after they wake: a short
//! scheduler slice for the calling thread (Linux 6.12+ EEVDF), so a send
//! time is not missed by milliseconds when the client shares its cores.
//!
//! Why: on a busy machine (the server under test, a compiler) a woken
//! thread can wait for the running task's slice to end, up to a few ms:
//! a trace replay at 200 req/s on 2 busy cores measured send lag p99 of
//! 3.5 to 5.1 ms, the late sends after quiet gaps, not in bursts, and
//! `perf sched` showed the same waits as scheduling delay. Under EEVDF a
//! task's virtual deadline is its eligible time plus its slice, and a
//! waking task with the earlier deadline preempts the running one (kernel
//! `sched/fair.c`, `PREEMPT_SHORT`). `sched_setattr` with `sched_runtime`
//! sets that slice for a SCHED_OTHER thread (clamped to 0.1..100 ms;
//! kernel 6.12, "sched/eevdf: Allow shorter slices to wait less"); it
//! needs no privilege and changes neither the nice value nor the share of
//! CPU. Older kernels ignore it; a refusal is ignored too: it only costs
//! latency, which the record reports as send lag.

/// The slice asked for: the kernel's minimum.
#[cfg(target_os = "linux")]
const SLICE_NS: u64 = 100_000;

/// Give the calling thread a short slice (best effort, see the module).
pub fn shorten_current_thread() {
    #[cfg(target_os = "linux")]
    set_slice(SLICE_NS);
}

/// The calling thread's slice in ns as the kernel holds it (0 on a kernel
/// without custom slices or where the call fails; tests and diagnosis).
pub fn current_slice_ns() -> u64 {
    #[cfg(target_os = "linux")]
    if let Some(a) = get_attr() {
        return a.sched_runtime;
    }
    0
}

#[cfg(target_os = "linux")]
fn get_attr() -> Option<libc::sched_attr> {
    // SAFETY: sched_attr is plain data; the kernel fills at most `size`
    // bytes of it (pid 0: the calling thread).
    let mut a: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
    let r = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut a, size, 0) };
    (r == 0).then_some(a)
}

#[cfg(target_os = "linux")]
fn set_slice(ns: u64) {
    // Only the normal policies take a slice; a thread someone gave a
    // real-time policy keeps it.
    let Some(mut a) = get_attr().filter(|a| {
        a.sched_policy == libc::SCHED_OTHER as u32 || a.sched_policy == libc::SCHED_BATCH as u32
    }) else {
        return;
    };
    a.size = std::mem::size_of::<libc::sched_attr>() as u32;
    a.sched_flags = 0;
    a.sched_runtime = ns;
    // SAFETY: `a` is a valid sched_attr of the size it declares; the
    // policy and nice value are the thread's own, read just above.
    unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a, 0) };
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The kernel's release as (major, minor), from uname.
    fn kernel() -> (u32, u32) {
        // SAFETY: utsname is plain data that uname fills.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::uname(&mut u) }, 0);
        let rel: String = u
            .release
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8 as char)
            .collect();
        let mut v = rel
            .split(|c: char| !c.is_ascii_digit())
            .map(|x| x.parse().unwrap_or(0));
        (v.next().unwrap_or(0), v.next().unwrap_or(0))
    }

    /// The slice is set on the calling thread only, and a kernel with
    /// custom slices (6.12+) reports it back.
    #[test]
    fn shortens_the_calling_thread_only() {
        let untouched = current_slice_ns();
        let shortened = std::thread::spawn(|| {
            shorten_current_thread();
            current_slice_ns()
        })
        .join()
        .unwrap();
        assert_eq!(current_slice_ns(), untouched, "another thread was changed");
        if kernel() >= (6, 12) {
            assert_eq!(shortened, SLICE_NS, "kernel {:?}", kernel());
        }
    }
}
