//! Shared-memory payloads (feature `shared-memory`): the participant's loan pool
//! (`ferrodds_transport_shm::LoanPool`, beside its segment and named from the same id) holds
//! large samples that readers on this host copy out themselves (or read in place), and
//! [`Chunks`] reads the chunks other participants' DATA_REF submessages name: the engine's
//! [`ChunkReader`] copies them on receipt, readers set in place view them at take time.
//!
//! A writer whose matched readers are all reached through shared memory puts a serialized
//! sample of at least [`SHARED_PAYLOAD_MIN`] bytes into a chunk (its one copy after
//! serializing) and hands the chunk to the engine, which sends a 20-byte reference instead
//! of the bytes; each reader copies the bytes straight into its sample buffer. A full pool
//! (or a sample above its largest chunk) falls back to the ordinary path. The boxed
//! payload values the engine releases are reused, so a large sample allocates nothing.

use ferrodds_rtps::{ChunkReader, SharedPayload};
use ferrodds_transport_shm::{
    ChunkRef, ChunkView, LoanPool, PoolReadError, PoolReader, SharedChunk,
};

/// Smallest serialized sample put into shared memory: below it the message carries the
/// bytes (a copy of a few KiB costs less than the pool's bookkeeping).
pub(crate) const SHARED_PAYLOAD_MIN: usize = 16 * 1024;

/// A published chunk as the engine's [`SharedPayload`] (`None` once released: the value
/// waits in [`EngineState::spare_chunks`](crate::runtime::EngineState) for the next chunk).
#[derive(Debug)]
pub(crate) struct EngineChunk {
    chunk: Option<SharedChunk>,
    reference: [u8; ChunkRef::ENCODED_LEN],
}

impl SharedPayload for EngineChunk {
    fn bytes(&self) -> &[u8] {
        self.chunk.as_ref().map_or(&[], SharedChunk::bytes)
    }
    fn reference(&self) -> &[u8] {
        &self.reference
    }
    fn release(&mut self) {
        self.chunk = None;
    }
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

/// Most released payload values kept for reuse.
const SPARES_MAX: usize = 256;

/// Copies `bytes` into a chunk of `pool` as an engine payload, reusing a value of `spares`
/// (released payloads of writer `w`, reclaimed from `engine` first); `None` when no chunk is
/// free or large enough.
pub(crate) fn shared_payload(
    pool: &LoanPool,
    engine: &mut ferrodds_rtps::Participant,
    w: ferrodds_rtps::WriterId,
    spares: &mut Vec<Box<dyn SharedPayload>>,
    bytes: &[u8],
) -> Option<Box<dyn SharedPayload>> {
    let mut chunk = pool.alloc(bytes.len())?;
    chunk.as_mut_slice().copy_from_slice(bytes);
    Some(published(chunk, engine, w, spares))
}

/// Publishes a filled chunk as an engine payload, reusing a value of `spares` as
/// [`shared_payload`] does.
pub(crate) fn published(
    chunk: ferrodds_transport_shm::PoolChunk,
    engine: &mut ferrodds_rtps::Participant,
    w: ferrodds_rtps::WriterId,
    spares: &mut Vec<Box<dyn SharedPayload>>,
) -> Box<dyn SharedPayload> {
    let chunk = chunk.publish();
    let reference = chunk.reference().encode();
    engine.reclaim_shared_payloads(w, spares);
    spares.truncate(SPARES_MAX);
    while let Some(mut spare) = spares.pop() {
        if let Some(e) = spare
            .as_any_mut()
            .and_then(|a| a.downcast_mut::<EngineChunk>())
        {
            e.chunk = Some(chunk);
            e.reference = reference;
            return spare;
        }
    }
    Box::new(EngineChunk {
        chunk: Some(chunk),
        reference,
    })
}

/// Other participants' pools as this participant reads them: a [`PoolReader`] shared by the
/// engine's [`EngineChunkReader`] (which copies chunks out on receipt) and the readers that
/// read in place (views at take time). Locked under the engine lock or alone, never the
/// other way round.
#[derive(Debug)]
pub(crate) struct Chunks {
    reader: std::sync::Mutex<PoolReader>,
    /// Largest sample a reference may name (`Config::max_sample_size`).
    max_len: usize,
    /// When a failure was last logged (at most one warning a second).
    logged: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Chunks {
    pub(crate) fn new(reader: PoolReader, max_len: usize) -> Self {
        Self {
            reader: std::sync::Mutex::new(reader),
            max_len,
            logged: std::sync::Mutex::new(None),
        }
    }

    fn reader(&self) -> std::sync::MutexGuard<'_, PoolReader> {
        self.reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The reference a DATA_REF carried, if valid and within `max_len`.
    fn decode(&self, reference: &[u8], max_len: usize) -> Option<ChunkRef> {
        ChunkRef::decode(reference).filter(|r| r.len as usize <= max_len.min(self.max_len))
    }

    /// Replaces `out`'s contents with the bytes `reference` names (false: it cannot).
    pub(crate) fn copy(&self, reference: &[u8], max_len: usize, out: &mut Vec<u8>) -> bool {
        let Some(r) = self.decode(reference, max_len) else {
            return false;
        };
        let result = self.reader().copy(&r, out);
        self.outcome(&r, result).is_some()
    }

    /// Whether the bytes `reference` names can be read now.
    pub(crate) fn check(&self, reference: &[u8], max_len: usize) -> bool {
        let Some(r) = self.decode(reference, max_len) else {
            return false;
        };
        let result = self.reader().check(&r);
        self.outcome(&r, result).is_some()
    }

    /// A view of the bytes `reference` names, in place (`None`: it cannot be read).
    pub(crate) fn view(&self, reference: &[u8]) -> Option<ChunkView> {
        let r = self.decode(reference, usize::MAX)?;
        let result = self.reader().view(&r);
        self.outcome(&r, result)
    }

    fn outcome<T>(&self, r: &ChunkRef, result: Result<T, PoolReadError>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                // A reused chunk is a late reader's loss; a missing or bad pool is worth a word.
                if !matches!(e, PoolReadError::Stale) {
                    let mut logged = self
                        .logged
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if logged.is_none_or(|t| t.elapsed().as_secs() >= 1) {
                        *logged = Some(std::time::Instant::now());
                        tracing::warn!(pool = r.pool, error = %e, "shared-memory sample not readable");
                    }
                }
                if matches!(e, PoolReadError::NotFound) {
                    self.reader().forget(r.pool);
                }
                None
            }
        }
    }
}

/// The engine's reader of other participants' chunks.
#[derive(Debug)]
pub(crate) struct EngineChunkReader {
    chunks: std::sync::Arc<Chunks>,
}

impl EngineChunkReader {
    pub(crate) fn new(chunks: std::sync::Arc<Chunks>) -> Self {
        Self { chunks }
    }
}

impl ChunkReader for EngineChunkReader {
    fn peer_gone(&mut self, shm_locator: &ferrodds_rtps::Locator) {
        // A FerroDDS shared-memory locator's port is the peer's segment and pool id.
        if let Ok(id) = u16::try_from(shm_locator.port) {
            self.chunks.reader().forget(id);
        }
    }

    fn read(&mut self, reference: &[u8], max_len: usize, out: &mut Vec<u8>) -> bool {
        self.chunks.copy(reference, max_len, out)
    }

    fn check(&mut self, reference: &[u8], max_len: usize) -> bool {
        self.chunks.check(reference, max_len)
    }
}
