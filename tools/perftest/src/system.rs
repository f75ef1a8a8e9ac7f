//! Process and thread settings: CPU affinity, SCHED_FIFO priorities and memory locking.

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::mman::{mlockall, MlockAllFlags};
use nix::unistd::Pid;
use thread_priority::unix::{
    set_thread_priority_and_policy, thread_native_id, RealtimeThreadSchedulePolicy,
    ThreadSchedulePolicy,
};
use thread_priority::{ThreadPriority, ThreadPriorityValue};

use crate::error::PerftestError;
use crate::options::Priority;

/// Pins the calling thread to `cores` (no-op for an empty list).
pub fn pin_current_thread(cores: &[usize]) -> Result<(), PerftestError> {
    if cores.is_empty() {
        return Ok(());
    }
    let mut set = CpuSet::new();
    for &c in cores {
        set.set(c).map_err(|source| PerftestError::System {
            what: "setting the CPU affinity (core number too large)",
            source,
        })?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|source| PerftestError::System {
        what: "setting the CPU affinity (-threadCPUAffinity)",
        source,
    })
}

/// Gives the calling thread SCHED_FIFO with the requested priority.
pub fn set_current_thread_priority(p: Priority) -> Result<(), PerftestError> {
    let policy = ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo);
    let (min, max) = (
        ThreadPriority::min_value_for_policy(policy).unwrap_or(1),
        ThreadPriority::max_value_for_policy(policy).unwrap_or(99),
    );
    let value = match p {
        Priority::High => max,
        Priority::Low => min,
        Priority::Normal => (max + min) / 2,
        Priority::Value(v) => v,
    };
    let prio = ThreadPriorityValue::try_from(value.clamp(0, 99) as u8)
        .map(ThreadPriority::Crossplatform)
        .unwrap_or(ThreadPriority::Max);
    let prio = if value >= max {
        ThreadPriority::Max
    } else if value <= min {
        ThreadPriority::Min
    } else {
        prio
    };
    set_thread_priority_and_policy(thread_native_id(), prio, policy).map_err(|_| {
        PerftestError::NotAvailable(
            "-threadPriorities: setting SCHED_FIFO failed (needs CAP_SYS_NICE or root, and an RT budget)",
        )
    })
}

/// Locks all current and future memory of the process (`-pinMemory`, our extension).
pub fn lock_memory() -> Result<(), PerftestError> {
    mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE).map_err(|source| {
        PerftestError::System {
            what: "-pinMemory: mlockall (needs CAP_IPC_LOCK or a large RLIMIT_MEMLOCK)",
            source,
        }
    })
}
