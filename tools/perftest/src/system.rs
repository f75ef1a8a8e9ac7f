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

/// The SCHED_FIFO priority range and the value `p` selects in it (h max, l min, n middle).
fn fifo_priority(p: Priority) -> (i32, i32, i32) {
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
    (min, max, value)
}

/// Gives the calling thread SCHED_FIFO with the requested priority.
pub fn set_current_thread_priority(p: Priority) -> Result<(), PerftestError> {
    let policy = ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo);
    let (min, max, value) = fifo_priority(p);
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

/// What a FerroDDS thread is to `-threadPriorities` / `-threadCPUAffinity` (RTI: X/A the main
/// and asynchronous publisher threads, Y/B the receive threads, Z/D the event thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadRole {
    /// `ferrodds-publisher` (asynchronous publishing).
    Main,
    /// `ferrodds-rx*`, `ferrodds-shm-rx`, `ferrodds-tcp-rx`.
    Receive,
    /// `ferrodds-timer` (heartbeats, acknowledgements, resends, deadlines).
    Event,
}

/// The role of a middleware thread named `comm`, `None` for other threads.
pub fn middleware_thread_role(comm: &str) -> Option<ThreadRole> {
    match comm {
        "ferrodds-publisher" => Some(ThreadRole::Main),
        "ferrodds-timer" => Some(ThreadRole::Event),
        "ferrodds-shm-rx" | "ferrodds-tcp-rx" => Some(ThreadRole::Receive),
        c if c.starts_with("ferrodds-rx") => Some(ThreadRole::Receive),
        _ => None,
    }
}

/// Every thread of this process: thread id and name (from /proc/self/task).
fn all_threads() -> Result<Vec<(i32, String)>, PerftestError> {
    let dir = std::fs::read_dir("/proc/self/task")
        .map_err(PerftestError::io("listing /proc/self/task"))?;
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Ok(tid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(comm) = std::fs::read_to_string(e.path().join("comm")) else {
            continue; // the thread ended meanwhile
        };
        out.push((tid, comm.trim_end().to_string()));
    }
    out.sort();
    Ok(out)
}

/// The FerroDDS threads of this process: thread id, name and role. A new thread names
/// itself once it runs (until then it carries the process's name), so threads still named
/// like the main thread are waited for, at most `NAMING_WAIT`.
pub fn middleware_threads() -> Result<Vec<(i32, String, ThreadRole)>, PerftestError> {
    const NAMING_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
    let main_tid = std::process::id() as i32;
    let end = std::time::Instant::now() + NAMING_WAIT;
    let mut threads = all_threads()?;
    loop {
        let main_name = threads
            .iter()
            .find(|t| t.0 == main_tid)
            .map(|t| t.1.clone());
        let unnamed = threads
            .iter()
            .any(|t| t.0 != main_tid && Some(&t.1) == main_name.as_ref());
        if !unnamed || std::time::Instant::now() >= end {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        threads = all_threads()?;
    }
    Ok(threads
        .into_iter()
        .filter_map(|(tid, comm)| middleware_thread_role(&comm).map(|r| (tid, comm, r)))
        .collect())
}

/// Pins thread `tid` of this process to `cores` (no-op for an empty list).
pub fn pin_thread(tid: i32, cores: &[usize]) -> Result<(), PerftestError> {
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
    sched_setaffinity(Pid::from_raw(tid), &set).map_err(|source| PerftestError::System {
        what: "setting a middleware thread's CPU affinity (-threadCPUAffinity)",
        source,
    })
}

/// Gives thread `tid` of this process SCHED_FIFO with priority `p`, through util-linux's
/// `chrt` (the priority calls of the thread library take pthread handles, which threads the
/// middleware started do not give out).
pub fn set_thread_priority(tid: i32, p: Priority) -> Result<(), PerftestError> {
    let (min, max, value) = fifo_priority(p);
    let value = value.clamp(min, max);
    let out = std::process::Command::new("chrt")
        .args(["-f", "-p", &value.to_string(), &tid.to_string()])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(PerftestError::io(
            "-threadPriorities: running chrt (util-linux) for a middleware thread",
        ))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(PerftestError::NotAvailable(
            "-threadPriorities: setting SCHED_FIFO on a middleware thread failed (needs CAP_SYS_NICE or root, and an RT budget)",
        ))
    }
}

/// Applies the receive and event parts of `-threadCPUAffinity` and `-threadPriorities` (and
/// the main part to the asynchronous publisher thread) to FerroDDS's threads; returns the
/// names of the threads changed.
pub fn apply_to_middleware_threads(
    affinity: Option<&crate::options::CpuAffinity>,
    priorities: Option<crate::options::ThreadPriorities>,
) -> Result<Vec<String>, PerftestError> {
    let mut changed = Vec::new();
    if affinity.is_none() && priorities.is_none() {
        return Ok(changed);
    }
    for (tid, comm, role) in middleware_threads()? {
        if let Some(a) = affinity {
            let cores = match role {
                ThreadRole::Main => &a.main,
                ThreadRole::Receive => &a.receive,
                ThreadRole::Event => &a.event,
            };
            pin_thread(tid, cores)?;
        }
        if let Some(p) = priorities {
            let prio = match role {
                ThreadRole::Main => p.main,
                ThreadRole::Receive => p.receive,
                ThreadRole::Event => p.event,
            };
            set_thread_priority(tid, prio)?;
        }
        changed.push(comm);
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_roles_by_name() {
        assert_eq!(
            middleware_thread_role("ferrodds-rx0"),
            Some(ThreadRole::Receive)
        );
        assert_eq!(
            middleware_thread_role("ferrodds-rx12"),
            Some(ThreadRole::Receive)
        );
        assert_eq!(
            middleware_thread_role("ferrodds-shm-rx"),
            Some(ThreadRole::Receive)
        );
        assert_eq!(
            middleware_thread_role("ferrodds-tcp-rx"),
            Some(ThreadRole::Receive)
        );
        assert_eq!(
            middleware_thread_role("ferrodds-timer"),
            Some(ThreadRole::Event)
        );
        assert_eq!(
            middleware_thread_role("ferrodds-publisher"),
            Some(ThreadRole::Main)
        );
        assert_eq!(middleware_thread_role("ferrodds-capture"), None);
        assert_eq!(middleware_thread_role("perftest"), None);
    }
}
