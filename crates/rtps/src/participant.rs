//! The participant: entity tables, discovery, writer/reader machines.

use crate::api::*;
use crate::{Guid, GuidPrefix, Locator, SequenceNumber};

/// A DomainParticipant's protocol state (sans-IO).
#[derive(Debug)]
pub struct Participant {
    config: ParticipantConfig,
    stats: Stats,
}

impl Participant {
    /// Creates a participant; the first SPDP announcement is due at `now`.
    pub fn new(config: ParticipantConfig, now: Timestamp) -> Self {
        let _ = now;
        Self {
            config,
            stats: Stats::default(),
        }
    }

    /// Our GUID prefix.
    pub fn guid_prefix(&self) -> GuidPrefix {
        self.config.guid_prefix
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Creates a user writer and announces it through SEDP.
    pub fn create_writer(
        &mut self,
        attrs: WriterAttributes,
        now: Timestamp,
    ) -> Result<WriterId, EngineError> {
        let _ = (attrs, now);
        Err(EngineError::TooManyEntities)
    }

    /// Creates a user reader and announces it through SEDP.
    pub fn create_reader(
        &mut self,
        attrs: ReaderAttributes,
        now: Timestamp,
    ) -> Result<ReaderId, EngineError> {
        let _ = (attrs, now);
        Err(EngineError::TooManyEntities)
    }

    /// Deletes a writer (announces a dispose through SEDP).
    pub fn delete_writer(&mut self, w: WriterId, now: Timestamp) -> Result<(), EngineError> {
        let _ = (w, now);
        Err(EngineError::UnknownWriter)
    }

    /// Deletes a reader (announces a dispose through SEDP).
    pub fn delete_reader(&mut self, r: ReaderId, now: Timestamp) -> Result<(), EngineError> {
        let _ = (r, now);
        Err(EngineError::UnknownReader)
    }

    /// GUID of a live writer.
    pub fn writer_guid(&self, w: WriterId) -> Option<Guid> {
        let _ = w;
        None
    }

    /// GUID of a live reader.
    pub fn reader_guid(&self, r: ReaderId) -> Option<Guid> {
        let _ = r;
        None
    }

    /// Adds a change to the writer's history and queues its transmission
    /// (`poll_transmit` yields it at once).
    pub fn write(
        &mut self,
        w: WriterId,
        change: WriteRequest<'_>,
        now: Timestamp,
    ) -> Result<SequenceNumber, WriteError> {
        let _ = (w, change, now);
        Err(WriteError::UnknownWriter)
    }

    /// True when every matched reliable reader acknowledged everything written so far.
    pub fn is_acknowledged_by_all(&self, w: WriterId) -> bool {
        let _ = w;
        true
    }

    /// Processes one received datagram. `src` is the sender's locator, if known.
    pub fn handle_datagram(&mut self, now: Timestamp, src: Option<Locator>, datagram: &[u8]) {
        let _ = (now, src, datagram);
        self.stats.received_datagrams += 1;
    }

    /// Runs timers that are due at `now`.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// When `handle_timeout` should next be called.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }

    /// Writes the next datagram into `buf` (len >= max_message_size) and says
    /// where to send it.
    pub fn poll_transmit(&mut self, now: Timestamp, buf: &mut [u8]) -> Option<Transmit> {
        let _ = (now, buf);
        None
    }

    /// Next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        None
    }

    /// Next sample for this reader, in delivery order (reliable: per-writer SN
    /// order, exactly once).
    pub fn take_sample(&mut self, r: ReaderId) -> Option<Sample> {
        let _ = r;
        None
    }

    /// Number of readers matched with this writer.
    pub fn matched_reader_count(&self, w: WriterId) -> usize {
        let _ = w;
        0
    }

    /// Number of writers matched with this reader.
    pub fn matched_writer_count(&self, r: ReaderId) -> usize {
        let _ = r;
        0
    }
}
