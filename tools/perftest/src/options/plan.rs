//! The run plan: policy derived from the options (effective defaults, sizes, batching
//! decision, samples per batch, initial burst).

use crate::transport::Backend;

use super::model::{Options, Role, DEFAULT_BATCH_SIZE, MAX_BOUNDED_SEQ_SIZE, OVERHEAD_BYTES};

/// Why batching is off although batching could be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchingState {
    /// Batching with this many bytes.
    On(u64),
    /// Not requested (raw default, or `-batchSize 0`).
    Off,
    /// Turned off by the tool, with the reason line.
    Disabled(&'static str),
    /// The middleware cannot batch.
    Unavailable,
}

impl Options {
    /// The backend selected by the options (`-rawTransport` or DDS).
    pub fn backend(&self) -> Backend {
        if self.raw && matches!(self.transport.as_deref(), Some("TCP" | "TLS")) {
            Backend::RawTcp
        } else if self.raw && self.transport.as_deref() == Some("SHMEM") {
            Backend::RawShm
        } else if self.raw {
            Backend::Raw
        } else {
            Backend::Dds
        }
    }

    /// The sizes of the run: the `-scan` list, or just `-dataLen`.
    pub fn sizes(&self) -> Vec<u64> {
        self.scan.clone().unwrap_or_else(|| vec![self.data_len])
    }

    /// `-numIter` or its default.
    pub fn effective_num_iter(&self) -> u64 {
        self.num_iter.unwrap_or(if self.latency_test {
            10_000_000
        } else {
            100_000_000
        })
    }

    /// `-latencyCount` or its default.
    pub fn effective_latency_count(&self) -> u64 {
        self.latency_count
            .unwrap_or(if self.latency_test { 1 } else { 10_000 })
    }

    /// `-sendQueueSize` or 50.
    pub fn effective_send_queue_size(&self) -> u64 {
        self.send_queue_size.unwrap_or(50)
    }

    /// `-instances` or 1.
    pub fn effective_instances(&self) -> u64 {
        self.instances.unwrap_or(1)
    }

    /// Payload (`bin_data`) length.
    pub fn payload_len(&self) -> usize {
        (self.data_len - OVERHEAD_BYTES) as usize
    }

    /// Whether shared memory is among the transports (the default UDPv4 + SHMEM,
    /// `-transport SHMEM`, or `-enableSharedMemory`).
    pub fn uses_shared_memory(&self) -> bool {
        !self.raw
            && (matches!(self.transport.as_deref(), None | Some("SHMEM"))
                || self.enable_shared_memory)
    }

    /// Whether `-zeroCopy` / `-loaningSendReceive` samples of 16 KiB or more go by reference
    /// through shared memory (shared memory among the transports, no DDS Security, no flow
    /// controller: FerroDDS sends protected or paced samples as bytes).
    pub fn by_reference(&self) -> bool {
        (self.zero_copy || self.loaning)
            && self.uses_shared_memory()
            && self.secure.is_none()
            && !self.asynchronous
    }

    /// Whether the unbounded ("Large") type is used.
    pub fn large_data(&self) -> bool {
        self.unbounded || self.data_len > OVERHEAD_BYTES + MAX_BOUNDED_SEQ_SIZE
    }

    /// The batching decision of spec 4 / 6 (`dds_batching` says whether the backend can batch).
    pub fn batching(&self, dds_batching: bool) -> BatchingState {
        if self.role != Role::Publisher {
            return BatchingState::Off;
        }
        let explicit = self.batch_size;
        if self.latency_test {
            return if explicit.is_some_and(|b| b > 0) || !self.raw {
                BatchingState::Disabled("BatchSize disabled for a Latency Test")
            } else {
                BatchingState::Off
            };
        }
        if self.zero_copy {
            // As RTI's (-zeroCopy implies FlatData there): no batching; an explicit size
            // was refused by the option checks.
            return if explicit == Some(0) {
                BatchingState::Off
            } else {
                BatchingState::Disabled("BatchSize cannot be used with FlatData and/or Zero-Copy.")
            };
        }
        if self.loaning {
            return if explicit == Some(0) {
                BatchingState::Off
            } else {
                BatchingState::Disabled("BatchSize cannot be used with -loaningSendReceive.")
            };
        }
        let size = match (explicit, self.raw) {
            (Some(0), _) => return BatchingState::Off,
            (Some(b), _) => b,
            (None, true) => return BatchingState::Off,
            (None, false) => DEFAULT_BATCH_SIZE,
        };
        if !self.raw && self.large_data() {
            return BatchingState::Disabled("BatchSize cannot be used with Fragmented Samples.");
        }
        if size < 2 * self.data_len && self.scan.is_none() {
            return BatchingState::Disabled("BatchSize is smaller than 2 times the sample size.");
        }
        if !self.raw && explicit.is_none() && self.pub_rate.is_some() {
            return BatchingState::Disabled("BatchSize disabled when using -pubRate.");
        }
        if !self.raw && !dds_batching {
            return BatchingState::Unavailable;
        }
        BatchingState::On(size)
    }

    /// Samples per batch (1 without batching).
    pub fn samples_per_batch(&self, batching: BatchingState) -> u64 {
        match batching {
            BatchingState::On(b) if b > self.data_len => b / self.data_len,
            _ => 1,
        }
    }

    /// The initial burst size of spec 1.6.
    pub fn initial_burst(&self, batching: BatchingState) -> u64 {
        if let Some(n) = self.initial_burst_size {
            return n;
        }
        let instances = self.effective_instances();
        if self.raw {
            return instances;
        }
        let sq = self.effective_send_queue_size();
        match batching {
            BatchingState::On(_) => (sq * self.samples_per_batch(batching))
                .max(sq)
                .max(instances),
            _ => sq.max(instances),
        }
    }
}
