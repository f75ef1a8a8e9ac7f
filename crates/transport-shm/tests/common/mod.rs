//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ferrodds_transport_shm::{ShmConfig, DEFAULT_DIR};

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A private directory for segments, removed on drop.
pub struct TestDir(pub PathBuf);

impl TestDir {
    /// A new directory named after `name`.
    pub fn new(name: &str) -> Self {
        let base = if Path::new(DEFAULT_DIR).is_dir() {
            PathBuf::from(DEFAULT_DIR)
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "ferrodds-itest-{}-{name}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// A configuration for `id` in this directory.
    pub fn config(&self, id: u16, slots: u32, slot_payload: usize) -> ShmConfig {
        ShmConfig {
            dir: self.0.clone(),
            slots,
            slot_payload,
            ..ShmConfig::new(id)
        }
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
