//! GPU slots (`sweep --hosts` lines with `gpus=`, or `--gpus LIST
//! --gpus-per-config N`): several configs at once on one machine's GPU
//! subsets, each slot a pool host with its own target, port and GPUs, so
//! GNU parallel runs them as it runs a pool. layout.rs splits and checks
//! the slots; activity.rs keeps what each slot of a machine is doing (a
//! small log its bench reads); bench.rs runs one config's bench under the
//! machine's lock, so loads overlap and benches do not, and adds the slot
//! to each bench record; pool.rs gives sweep.sh a slot's words (its port
//! read from its origin, its bench stage's words, the progress lanes).

pub mod activity;
pub mod bench;
pub mod layout;
#[cfg(test)]
mod layout_tests;
pub mod pool;
