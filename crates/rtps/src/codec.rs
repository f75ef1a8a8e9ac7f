//! The engine's view of the wire layer: a thin adapter over `ferrodds-wire`
//! that turns its submessages into the few the engine acts on, an emitter of
//! little-endian submessages into caller buffers, and the KEY_HASH /
//! STATUS_INFO inline QoS (typed values of the wire crate). Parsing never
//! panics and never allocates.

use ferrodds_wire::submessage::id;
use ferrodds_wire::{
    AckNack, Count, Data, DataFrag, Encode, Endianness, FragmentNumber, FragmentNumberSet, Gap,
    Header, Heartbeat, HeartbeatFrag, InfoDst, InfoTs, KeyHash, MessageView, MessageWriter,
    NackFrag, ParameterList, ParameterListWriter, Parameters, RawSubmessage, RawSubmessages,
    SequenceNumberSet, StatusInfo, Submessage, TimedData, VendorId, WireError,
};

use crate::sn_set::SnSet;
use crate::{EntityId, GuidPrefix, SequenceNumber, Time};

pub(crate) const PID_KEY_HASH: u16 = 0x0070;
pub(crate) const PID_STATUS_INFO: u16 = 0x0071;

/// Our vendor id (the wire crate's unassigned FerroDDS value).
pub(crate) const VENDOR_ID: [u8; 2] = VendorId::FERRODDS.0;

/// FerroDDS's vendor-specific DATA_REF submessage (RTPS 9.4.5.1.1: ids 0x80–0xff are
/// the vendor's, interpreted only in a message whose header names that vendor; 0xfd, the
/// second byte of our vendor id, because Wireshark decodes 0x81 as RTI's DATA_FRAG_SESSION
/// whatever the vendor and warns about its length, and RTI uses the ids after it): a DATA
/// whose serialized payload is a [`crate::SharedPayload::reference`] to a chunk of the
/// writer participant's shared memory, not the sample. Its layout is DATA's (flags E, Q and
/// D; extraFlags, octetsToInlineQos, readerId, writerId, writerSN, inline QoS), so tools
/// that skip vendor submessages by their length read past it. Sent only to FerroDDS readers
/// reached through shared memory.
pub(crate) const DATA_REF: u8 = 0xfd;

/// Why a datagram or submessage was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Malformed {
    Header,
    Version,
    Body,
}

/// The parsed RTPS header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MsgHeader {
    pub(crate) vendor: [u8; 2],
    pub(crate) prefix: GuidPrefix,
    /// The whole header (the initial receiver state derives from it).
    pub(crate) header: Header,
}

/// Checks the RTPS header and returns it with an iterator over the submessages.
pub(crate) fn parse(buf: &[u8]) -> Result<(MsgHeader, SubIter<'_>), Malformed> {
    let view = MessageView::parse(buf).map_err(|e| match e {
        WireError::UnsupportedVersion { .. } => Malformed::Version,
        _ => Malformed::Header,
    })?;
    let h = view.header();
    Ok((
        MsgHeader {
            vendor: h.vendor_id.0,
            prefix: h.guid_prefix,
            header: *h,
        },
        SubIter {
            inner: view.raw_submessages(),
            done: false,
        },
    ))
}

/// A received submessage (only the kinds the engine uses are decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sub<'a> {
    Data(DataSub<'a>),
    /// A DATA_REF ([`DATA_REF`]): `payload` is the reference. Acted on only when the
    /// message is FerroDDS's and came through shared memory.
    DataRef(DataSub<'a>),
    Heartbeat {
        reader_id: EntityId,
        writer_id: EntityId,
        first: i64,
        last: i64,
        count: i32,
        final_flag: bool,
    },
    AckNack {
        reader_id: EntityId,
        writer_id: EntityId,
        set: SnSet,
        count: i32,
        final_flag: bool,
    },
    Gap {
        reader_id: EntityId,
        writer_id: EntityId,
        start: i64,
        list: SnSet,
    },
    /// INFO_TS: the source timestamp of the submessages that follow (`None`: invalidated).
    /// Its own variant, not [`Sub::Info`], because a batch sends one before every DATA:
    /// the small variant keeps the receive loop from moving a whole [`Submessage`].
    InfoTs(Option<Time>),
    /// A submessage that changes the receiver state (INFO_SRC, INFO_DST, INFO_REPLY,
    /// INFO_REPLY_IP4): see [`ferrodds_wire::ReceiverState::apply`].
    Info(Submessage<'a>),
    DataFrag(DataFragSub<'a>),
    NackFrag {
        reader_id: EntityId,
        writer_id: EntityId,
        sn: i64,
        frags: FragmentNumberSet,
        count: i32,
    },
    HeartbeatFrag {
        reader_id: EntityId,
        writer_id: EntityId,
        sn: i64,
        last_frag: u32,
        count: i32,
    },
    /// Padding: nothing to do.
    Pad,
    /// Known but unsupported (DATA_FRAG, ...), or unknown.
    Other(u8),
}

/// A DATA submessage view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DataSub<'a> {
    pub(crate) reader_id: EntityId,
    pub(crate) writer_id: EntityId,
    pub(crate) sn: i64,
    pub(crate) little_endian: bool,
    pub(crate) inline_qos: Option<&'a [u8]>,
    pub(crate) payload: Option<&'a [u8]>,
    pub(crate) key_only: bool,
}

/// Largest sequence number the engine accepts from the wire: far beyond any
/// real writer, and low enough that SN arithmetic can never overflow.
pub(crate) const MAX_SN: i64 = 1 << 62;

fn sn_ok(sn: i64) -> bool {
    sn <= MAX_SN
}

/// A DATA_FRAG submessage view (fragment fields already validated by the
/// wire layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DataFragSub<'a> {
    pub(crate) reader_id: EntityId,
    pub(crate) writer_id: EntityId,
    pub(crate) sn: i64,
    pub(crate) little_endian: bool,
    pub(crate) inline_qos: Option<&'a [u8]>,
    /// Byte offset of `data` within the sample.
    pub(crate) offset: u64,
    /// The fragment bytes.
    pub(crate) data: &'a [u8],
    /// `data` and whatever follows it to the end of the submessage (padding; or, for a
    /// fragment protected on its own as Cyclone DDS 0.10 sends them, the rest of the
    /// protected form, which is longer than the fragment's place in the sample).
    pub(crate) full: &'a [u8],
    pub(crate) sample_size: u32,
    pub(crate) fragment_size: u16,
}

fn sn_set(s: &SequenceNumberSet) -> Option<SnSet> {
    if !sn_ok(s.base().0) {
        return None;
    }
    SnSet::from_wire(s.base().0, s.num_bits(), *s.bitmap())
}

/// Iterator over the submessages of a datagram. Ends after the first error.
///
/// The kinds of the steady-state data path (DATA, HEARTBEAT, ACKNACK,
/// INFO_TS, INFO_DST) are decoded with the wire crate's per-kind parsers
/// straight into [`Sub`]; the others go through [`Submessage::parse`]. Both
/// run the same checks, so what is accepted or rejected is the same.
pub(crate) struct SubIter<'a> {
    inner: RawSubmessages<'a>,
    done: bool,
}

impl<'a> Iterator for SubIter<'a> {
    type Item = Result<Sub<'a>, Malformed>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let sub = match self.inner.next()? {
            Ok(raw) => decode(&raw),
            Err(_) => None,
        };
        if sub.is_none() {
            self.done = true;
        }
        Some(sub.ok_or(Malformed::Body))
    }
}

/// Decodes one submessage; `None` if it is malformed or out of range.
#[inline]
fn decode<'a>(raw: &RawSubmessage<'a>) -> Option<Sub<'a>> {
    let (h, b, o) = (raw.header, raw.body, raw.offset);
    match h.id {
        id::DATA => data_sub(Data::parse(h, b, o).ok()?),
        DATA_REF => data_ref_sub(h, b, o),
        id::HEARTBEAT => heartbeat_sub(Heartbeat::parse(h, b, o).ok()?),
        id::ACKNACK => acknack_sub(AckNack::parse(h, b, o).ok()?),
        id::DATA_FRAG => data_frag_sub(DataFrag::parse(h, b, o).ok()?, b),
        id::INFO_TS => Some(Sub::InfoTs(InfoTs::parse(h, b, o).ok()?.timestamp)),
        id::INFO_DST => Some(Sub::Info(Submessage::InfoDst(
            InfoDst::parse(h, b, o).ok()?,
        ))),
        _ => convert(raw.parse().ok()?),
    }
}

#[inline]
fn data_sub(d: Data<'_>) -> Option<Sub<'_>> {
    if d.writer_sn.0 < 1 || !sn_ok(d.writer_sn.0) {
        return None;
    }
    Some(Sub::Data(DataSub {
        reader_id: d.reader_id,
        writer_id: d.writer_id,
        sn: d.writer_sn.0,
        little_endian: d
            .inline_qos
            .is_none_or(|q| q.endianness() == Endianness::Little),
        inline_qos: d.inline_qos.map(|q| q.as_bytes()),
        payload: d.serialized_payload,
        key_only: d.key,
    }))
}

/// A DATA_REF: parsed as the DATA it is laid out as; a reference of the right size, or
/// nothing (an unknown submessage of another vendor that reuses the id is skipped as one).
#[cold]
pub(crate) fn data_ref_sub<'a>(
    h: ferrodds_wire::submessage::SubmessageHeader,
    b: &'a [u8],
    o: usize,
) -> Option<Sub<'a>> {
    let h = ferrodds_wire::submessage::SubmessageHeader { id: id::DATA, ..h };
    let parsed = Data::parse(h, b, o).ok().and_then(data_sub);
    match parsed {
        Some(Sub::Data(d))
            if d.payload
                .is_some_and(|r| !r.is_empty() && r.len() <= crate::MAX_CHUNK_REFERENCE)
                && !d.key_only =>
        {
            Some(Sub::DataRef(d))
        }
        _ => Some(Sub::Other(DATA_REF)),
    }
}

/// A DATA_FRAG of submessage body `body`, with [`DataFragSub::full`] reaching the end of it.
pub(crate) fn data_frag_sub<'a>(f: DataFrag<'a>, body: &'a [u8]) -> Option<Sub<'a>> {
    let mut sub = convert(Submessage::DataFrag(f))?;
    if let Sub::DataFrag(d) = &mut sub {
        // Where the fragment bytes start in the body (the parser took them from it).
        let at = (d.data.as_ptr() as usize).wrapping_sub(body.as_ptr() as usize);
        if let Some(full) = body.get(at..).filter(|r| r.len() >= d.data.len()) {
            d.full = full;
        }
    }
    Some(sub)
}

#[inline]
fn heartbeat_sub(h: Heartbeat) -> Option<Sub<'static>> {
    if !sn_ok(h.first_sn.0) || !sn_ok(h.last_sn.0) {
        return None;
    }
    Some(Sub::Heartbeat {
        reader_id: h.reader_id,
        writer_id: h.writer_id,
        first: h.first_sn.0,
        last: h.last_sn.0,
        count: h.count.0,
        final_flag: h.final_flag,
    })
}

fn acknack_sub(a: AckNack) -> Option<Sub<'static>> {
    Some(Sub::AckNack {
        reader_id: a.reader_id,
        writer_id: a.writer_id,
        set: sn_set(&a.reader_sn_state)?,
        count: a.count.0,
        final_flag: a.final_flag,
    })
}

pub(crate) fn convert(sub: Submessage<'_>) -> Option<Sub<'_>> {
    Some(match sub {
        Submessage::Data(d) => return data_sub(d),
        Submessage::DataFrag(f) => {
            if f.writer_sn.0 < 1 || !sn_ok(f.writer_sn.0) {
                return None;
            }
            Sub::DataFrag(DataFragSub {
                reader_id: f.reader_id,
                writer_id: f.writer_id,
                sn: f.writer_sn.0,
                little_endian: f
                    .inline_qos
                    .is_none_or(|q| q.endianness() == Endianness::Little),
                inline_qos: f.inline_qos.map(|q| q.as_bytes()),
                offset: f.sample_offset(),
                data: f.serialized_payload,
                full: f.serialized_payload,
                sample_size: f.sample_size,
                fragment_size: f.fragment_size,
            })
        }
        Submessage::NackFrag(n) => {
            if !sn_ok(n.writer_sn.0) {
                return None;
            }
            Sub::NackFrag {
                reader_id: n.reader_id,
                writer_id: n.writer_id,
                sn: n.writer_sn.0,
                frags: n.fragment_number_state,
                count: n.count.0,
            }
        }
        Submessage::HeartbeatFrag(h) => {
            if !sn_ok(h.writer_sn.0) {
                return None;
            }
            Sub::HeartbeatFrag {
                reader_id: h.reader_id,
                writer_id: h.writer_id,
                sn: h.writer_sn.0,
                last_frag: h.last_fragment_num.0,
                count: h.count.0,
            }
        }
        Submessage::Heartbeat(h) => return heartbeat_sub(h),
        Submessage::AckNack(a) => return acknack_sub(a),
        Submessage::Gap(g) => {
            if g.gap_start.0 < 1 || !sn_ok(g.gap_start.0) {
                return None;
            }
            Sub::Gap {
                reader_id: g.reader_id,
                writer_id: g.writer_id,
                start: g.gap_start.0,
                list: sn_set(&g.gap_list)?,
            }
        }
        Submessage::InfoTs(i) => Sub::InfoTs(i.timestamp),
        info @ (Submessage::InfoSrc(_)
        | Submessage::InfoDst(_)
        | Submessage::InfoReply(_)
        | Submessage::InfoReplyIp4(_)) => Sub::Info(info),
        Submessage::Pad(_) => Sub::Pad,
        other => Sub::Other(other.id()),
    })
}

/// Decoded inline QoS of interest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct InlineQos {
    pub(crate) key_hash: Option<[u8; 16]>,
    pub(crate) status_info: u32,
}

pub(crate) fn parse_inline_qos(buf: &[u8], le: bool) -> Option<InlineQos> {
    let endian = if le {
        Endianness::Little
    } else {
        Endianness::Big
    };
    let mut q = InlineQos::default();
    for p in Parameters::new(buf, endian) {
        let p = p.ok()?;
        match p.pid {
            PID_KEY_HASH => q.key_hash = Some(p.decode::<KeyHash>(endian).ok()?.0),
            // STATUS_INFO is big-endian regardless of the list's byte order.
            PID_STATUS_INFO => q.status_info = p.decode::<StatusInfo>(endian).ok()?.0,
            _ => {}
        }
    }
    Some(q)
}

/// Builds the KEY_HASH / STATUS_INFO inline QoS list in `qos` (`None` when
/// there is neither).
#[inline]
fn inline_qos<'q>(
    qos: &'q mut [u8; 36],
    key_hash: Option<&[u8; 16]>,
    status_info: u32,
) -> Result<Option<ParameterList<'q>>, WireError> {
    if key_hash.is_none() && status_info == 0 {
        return Ok(None);
    }
    let mut w = ParameterListWriter::new(qos, Endianness::Little);
    if let Some(k) = key_hash {
        w.push(PID_KEY_HASH, &KeyHash(*k))?;
    }
    if status_info != 0 {
        w.push(PID_STATUS_INFO, &StatusInfo(status_info))?;
    }
    Ok(Some(ParameterList::new(w.finish()?, Endianness::Little)))
}

/// Builds one RTPS message (little-endian submessages) into a caller buffer;
/// every `push_*` returns false (and writes nothing) if the submessage does
/// not fit.
pub(crate) struct Emitter<'b> {
    w: MessageWriter<'b>,
    /// Bytes kept free after each writer or reader submessage pushed from now on (DDS
    /// Security submessage protection replaces it with a larger one later).
    sec: usize,
    /// Bytes kept free so far for the submessages pushed.
    reserved: usize,
    /// The source timestamp a receiver holds at this point of the message (RTPS 8.3.4:
    /// an INFO_TS applies to every submessage after it in the message; `None`, as at the
    /// start of a message, means none). A change with the same timestamp as the one
    /// before it in the message gets no INFO_TS of its own.
    ts: u64,
}

/// [`Emitter`]'s record of a source timestamp: seconds and fraction in one word, or
/// [`NO_TS`] for none.
#[inline(always)]
fn ts_word(ts: Option<Time>) -> u64 {
    ts.map_or(NO_TS, |t| {
        (u64::from(t.seconds as u32) << 32) | u64::from(t.fraction)
    })
}

/// No timestamp (the word of `TIME_INVALID`, which means the same).
const NO_TS: u64 = u64::MAX;

impl<'b> Emitter<'b> {
    /// Starts a message with the RTPS header, using at most `limit` bytes of
    /// `buf`; `None` if that is too small for the header.
    pub(crate) fn new(buf: &'b mut [u8], limit: usize, prefix: GuidPrefix) -> Option<Self> {
        let limit = limit.min(buf.len());
        let buf = buf.get_mut(..limit)?;
        MessageWriter::new(buf, &Header::new(prefix))
            .ok()
            .map(|w| Self {
                w,
                sec: 0,
                reserved: 0,
                ts: NO_TS,
            })
    }

    /// Keeps `overhead` bytes free for each writer or reader submessage pushed from now on
    /// (INFO_* excluded), so that protecting each of them still fits the limit; 0 stops.
    pub(crate) fn protect_each(&mut self, overhead: usize) {
        self.sec = overhead;
    }

    pub(crate) fn len(&self) -> usize {
        self.w.len()
    }

    /// True if nothing but the header was written.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.w.is_empty()
    }

    /// Bytes left for the next submessage (with its protection's room kept free).
    pub(crate) fn room(&self) -> usize {
        self.w.remaining().saturating_sub(self.reserved + self.sec)
    }

    /// Pushes a writer or reader submessage, keeping [`Emitter::protect_each`]'s room free.
    #[inline]
    fn push<S: Encode>(&mut self, s: &S) -> bool {
        self.push_keeping(s, self.sec)
    }

    /// Pushes an INFO_* submessage (never protected alone).
    #[inline]
    fn push_info<S: Encode>(&mut self, s: &S) -> bool {
        self.push_keeping(s, 0)
    }

    /// Pushes `s` if, with `sec` more bytes reserved for it, the room reserved so far stays
    /// free.
    #[inline(always)]
    fn push_keeping<S: Encode>(&mut self, s: &S, sec: usize) -> bool {
        let before = self.w.len();
        if self.w.push(s, Endianness::Little).is_err() {
            return false;
        }
        if self.reserved + sec != 0 {
            return self.keep_reserved(before, sec);
        }
        true
    }

    /// The slow path of [`Self::push_keeping`] (protection on).
    #[cold]
    fn keep_reserved(&mut self, before: usize, sec: usize) -> bool {
        if self.w.remaining() < self.reserved + sec {
            self.w.truncate(before);
            return false;
        }
        self.reserved += sec;
        true
    }

    pub(crate) fn info_dst(&mut self, prefix: GuidPrefix) -> bool {
        self.push_info(&InfoDst {
            guid_prefix: prefix,
        })
    }

    /// Bytes [`Emitter::info_ts`] would write for `ts` now.
    pub(crate) fn info_ts_len(&self, ts: Option<Time>) -> usize {
        match ts {
            _ if ts_word(ts) == self.ts => 0,
            Some(_) => 12,
            None => 4,
        }
    }

    /// Makes `ts` the source timestamp of the submessages pushed next: an INFO_TS when the
    /// receiver's one differs (an invalidating one for `None` after a timestamp), nothing
    /// when it is already `ts`.
    pub(crate) fn info_ts(&mut self, ts: Option<Time>) -> bool {
        let word = ts_word(ts);
        if word == self.ts {
            return true;
        }
        if !self.push_info(&InfoTs { timestamp: ts }) {
            return false;
        }
        self.ts = word;
        true
    }

    /// Size of a DATA submessage with these parts.
    pub(crate) fn data_len(key_hash: bool, status_info: bool, payload: usize) -> usize {
        let qos = if key_hash || status_info {
            4 + if key_hash { 20 } else { 0 } + if status_info { 8 } else { 0 }
        } else {
            0
        };
        4 + 20 + qos + payload.div_ceil(4) * 4
    }

    /// Size of a DATA_FRAG submessage carrying `bytes` fragment bytes.
    pub(crate) fn data_frag_len(key_hash: bool, status_info: bool, bytes: usize) -> usize {
        Self::data_len(key_hash, status_info, bytes) + 12
    }

    /// DATA_FRAG with one fragment (`frag`, 1-based) of a sample of
    /// `sample_size` bytes; inline QoS as for [`Emitter::data`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn data_frag(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        sn: i64,
        key_hash: Option<&[u8; 16]>,
        status_info: u32,
        frag: u32,
        fragment_size: u16,
        sample_size: u32,
        bytes: &[u8],
        key_only: bool,
    ) -> bool {
        let mut qos = [0u8; 36];
        let Ok(inline_qos) = inline_qos(&mut qos, key_hash, status_info) else {
            return false;
        };
        self.push(&DataFrag {
            extra_flags: 0,
            octets_to_inline_qos: ferrodds_wire::submessage::DATA_FRAG_OCTETS_TO_INLINE_QOS,
            reader_id,
            writer_id,
            writer_sn: SequenceNumber(sn),
            fragment_starting_num: FragmentNumber(frag),
            fragments_in_submessage: 1,
            fragment_size,
            sample_size,
            inline_qos,
            serialized_payload: bytes,
            key: key_only,
            non_standard_payload: false,
        })
    }

    /// DATA with optional KEY_HASH / STATUS_INFO inline QoS. An empty payload
    /// is sent without D/K flag.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn data(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        sn: i64,
        key_hash: Option<&[u8; 16]>,
        status_info: u32,
        payload: &[u8],
        key_only: bool,
    ) -> bool {
        let mut qos = [0u8; 36];
        let Ok(inline_qos) = inline_qos(&mut qos, key_hash, status_info) else {
            return false;
        };
        let mut d = Data::new(
            reader_id,
            writer_id,
            SequenceNumber(sn),
            (!payload.is_empty()).then_some(payload),
        );
        d.inline_qos = inline_qos;
        d.key = key_only;
        self.push(&d)
    }

    /// Size of a DATA_REF submessage with these parts.
    pub(crate) fn data_ref_len(key_hash: bool, status_info: bool, reference: usize) -> usize {
        Self::data_len(key_hash, status_info, reference)
    }

    /// DATA_REF ([`DATA_REF`]) naming a shared-memory payload by `reference`: a DATA
    /// carrying the reference, with its submessage id changed.
    pub(crate) fn data_ref(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        sn: i64,
        key_hash: Option<&[u8; 16]>,
        status_info: u32,
        reference: &[u8],
    ) -> bool {
        let before = self.w.len();
        if !self.data(
            reader_id,
            writer_id,
            sn,
            key_hash,
            status_info,
            reference,
            false,
        ) {
            return false;
        }
        // Re-push the DATA just written with the DATA_REF id (it is at most
        // 4 + 20 + 36 + MAX_CHUNK_REFERENCE bytes).
        let mut sub = [0u8; 4 + 20 + 36 + crate::MAX_CHUNK_REFERENCE];
        let written = self.w.as_bytes().get(before..).unwrap_or(&[]);
        let Some(copy) = sub.get_mut(..written.len()) else {
            self.w.truncate(before);
            return false;
        };
        copy.copy_from_slice(written);
        copy[0] = DATA_REF;
        self.w.truncate(before);
        self.w.push_bytes(copy).is_ok()
    }

    /// Whether no room is kept free for DDS Security's transforms (then
    /// [`Emitter::timed_data`] may be used).
    pub(crate) fn unprotected(&self) -> bool {
        self.reserved + self.sec == 0
    }

    /// INFO_TS (when `ts` differs from the timestamp the receiver holds at this point of
    /// the message) and a DATA without inline QoS (an alive change without key hash):
    /// what [`Emitter::info_ts`] then [`Emitter::data`] write, in one push
    /// (the batched path writes this pair per sample). Only when
    /// [`Emitter::unprotected`].
    #[inline]
    pub(crate) fn timed_data(
        &mut self,
        ts: Option<Time>,
        reader_id: EntityId,
        writer_id: EntityId,
        sn: i64,
        payload: &[u8],
    ) -> bool {
        debug_assert!(self.unprotected());
        let word = ts_word(ts);
        let timestamp = match ts {
            _ if word == self.ts => None,
            Some(_) => ts,
            // Back to no timestamp after one: INFO_TS with its invalidate flag first.
            None => {
                if !self.invalidate_ts() {
                    return false;
                }
                None
            }
        };
        let t = TimedData {
            timestamp,
            reader_id,
            writer_id,
            writer_sn: SequenceNumber(sn),
            serialized_payload: payload,
        };
        if self.w.push(&t, Endianness::Little).is_err() {
            return false;
        }
        self.ts = word;
        true
    }

    /// An INFO_TS with the invalidate flag (out of line: rare, and it keeps
    /// [`Emitter::timed_data`] small enough to inline its push).
    #[cold]
    #[inline(never)]
    fn invalidate_ts(&mut self) -> bool {
        self.info_ts(None)
    }

    pub(crate) fn heartbeat(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        first: i64,
        last: i64,
        count: i32,
        final_flag: bool,
    ) -> bool {
        self.push(&Heartbeat {
            reader_id,
            writer_id,
            first_sn: SequenceNumber(first),
            last_sn: SequenceNumber(last),
            count: Count(count),
            final_flag,
            liveliness: false,
            group_info: None,
        })
    }

    /// HEARTBEAT_FRAG: fragments 1..=`last_frag` of `sn` are available.
    pub(crate) fn heartbeat_frag(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        sn: i64,
        last_frag: u32,
        count: i32,
    ) -> bool {
        self.push(&HeartbeatFrag {
            reader_id,
            writer_id,
            writer_sn: SequenceNumber(sn),
            last_fragment_num: FragmentNumber(last_frag),
            count: Count(count),
        })
    }

    /// NACK_FRAG for `sn`: fragments `base + i` for every set bit `i` of
    /// `bits` (MSB first, `num_bits` bits).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn nack_frag(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        sn: i64,
        base: u32,
        bits: [u32; 8],
        num_bits: u32,
        count: i32,
    ) -> bool {
        let Some(set) = FragmentNumberSet::from_parts(FragmentNumber(base), num_bits, bits) else {
            return false;
        };
        self.push(&NackFrag {
            reader_id,
            writer_id,
            writer_sn: SequenceNumber(sn),
            fragment_number_state: set,
            count: Count(count),
        })
    }

    fn wire_set(s: &SnSet) -> Option<SequenceNumberSet> {
        let mut bits = [0u32; 8];
        for (d, w) in bits.iter_mut().zip(s.words()) {
            *d = *w;
        }
        SequenceNumberSet::from_parts(SequenceNumber(s.base()), s.num_bits(), bits)
    }

    pub(crate) fn acknack(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        set: &SnSet,
        count: i32,
        final_flag: bool,
    ) -> bool {
        let Some(reader_sn_state) = Self::wire_set(set) else {
            return false;
        };
        self.push(&AckNack {
            reader_id,
            writer_id,
            reader_sn_state,
            count: Count(count),
            final_flag,
        })
    }

    pub(crate) fn gap(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        start: i64,
        list: &SnSet,
    ) -> bool {
        let Some(gap_list) = Self::wire_set(list) else {
            return false;
        };
        self.push(&Gap {
            reader_id,
            writer_id,
            gap_start: SequenceNumber(start),
            gap_list,
            group_info: None,
            filtered_count: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: GuidPrefix = GuidPrefix([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const R: EntityId = EntityId([0, 0, 1, 7]);
    const W: EntityId = EntityId([0, 0, 2, 2]);

    #[test]
    fn emit_then_parse_round_trip() {
        let mut buf = [0u8; 512];
        let mut e = Emitter::new(&mut buf, 512, P).unwrap();
        assert!(e.info_dst(P));
        assert!(e.info_ts(Some(Time {
            seconds: 5,
            fraction: 7
        })));
        assert!(e.data(
            R,
            W,
            0x1_0000_0002,
            Some(&[9; 16]),
            1,
            &[0, 1, 0, 0, 42],
            false
        ));
        assert!(e.heartbeat(EntityId::UNKNOWN, W, 1, 3, 4, false));
        let mut set = SnSet::new(2);
        set.insert(2);
        set.insert(40);
        assert!(e.acknack(R, W, &set, 9, true));
        assert!(e.gap(R, W, 3, &SnSet::new(5)));
        let n = e.len();
        let (h, subs) = parse(&buf[..n]).unwrap();
        assert_eq!(h.prefix, P);
        assert_eq!(h.vendor, VENDOR_ID);
        let subs: Vec<_> = subs.collect::<Result<_, _>>().unwrap();
        assert_eq!(subs.len(), 6);
        assert_eq!(
            subs[0],
            Sub::Info(Submessage::InfoDst(InfoDst { guid_prefix: P }))
        );
        assert_eq!(
            subs[1],
            Sub::InfoTs(Some(Time {
                seconds: 5,
                fraction: 7
            }))
        );
        match &subs[2] {
            Sub::Data(d) => {
                assert_eq!(d.sn, 0x1_0000_0002);
                assert_eq!(d.payload, Some(&[0, 1, 0, 0, 42, 0, 0, 0][..]));
                let q = parse_inline_qos(d.inline_qos.unwrap(), true).unwrap();
                assert_eq!(q.key_hash, Some([9; 16]));
                assert_eq!(q.status_info, 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            subs[3],
            Sub::Heartbeat {
                first: 1,
                last: 3,
                count: 4,
                final_flag: false,
                ..
            }
        ));
        match &subs[4] {
            Sub::AckNack {
                set: s,
                count: 9,
                final_flag: true,
                ..
            } => assert_eq!(s.iter().collect::<Vec<_>>(), vec![2, 40]),
            other => panic!("{other:?}"),
        }
        assert!(matches!(subs[5], Sub::Gap { start: 3, .. }));
    }

    /// Reads `msg` as a receiver does (an INFO_TS holds until the next one) and returns
    /// each DATA's sequence number with its source timestamp, and the INFO_TS count.
    fn stamped(msg: &[u8]) -> (Vec<(i64, Option<Time>)>, usize) {
        let (_, subs) = parse(msg).unwrap();
        let (mut ts, mut out, mut infos) = (None, Vec::new(), 0);
        for s in subs {
            match s.unwrap() {
                Sub::InfoTs(t) => {
                    ts = t;
                    infos += 1;
                }
                Sub::Data(d) => out.push((d.sn, ts)),
                _ => {}
            }
        }
        (out, infos)
    }

    /// DATA_REF: a DATA laid out as usual under the vendor submessage id 0xfd, read back as a
    /// `Sub::DataRef` with its reference and inline QoS; one whose "reference" is empty or
    /// longer than `MAX_CHUNK_REFERENCE` is another vendor's submessage (skipped as unknown),
    /// and the submessages after it are still read.
    #[test]
    fn data_ref_round_trips_and_odd_ones_are_skipped() {
        let reference = [7u8; 20];
        let key = [3u8; 16];
        let mut buf = [0u8; 512];
        let mut e = Emitter::new(&mut buf, 512, GuidPrefix([1; 12])).unwrap();
        let (r, w) = (EntityId([0, 0, 1, 4]), EntityId([0, 0, 1, 2]));
        assert!(e.data_ref(r, w, 9, Some(&key), 0, &reference));
        let one = e.len() - 20;
        assert_eq!(one, Emitter::data_ref_len(true, false, 20));
        assert!(e.data(r, w, 10, None, 0, &[0, 1, 0, 0, 5, 5, 5, 5], false));
        let n = e.len();
        let (_, subs) = parse(&buf[..n]).unwrap();
        let subs: Vec<_> = subs.map(Result::unwrap).collect();
        assert_eq!(buf[20], DATA_REF);
        match &subs[..] {
            [Sub::DataRef(d), Sub::Data(next)] => {
                assert_eq!(
                    (d.sn, d.payload, d.key_only),
                    (9, Some(&reference[..]), false)
                );
                let iq = parse_inline_qos(d.inline_qos.unwrap(), true).unwrap();
                assert_eq!(iq.key_hash, Some(key));
                assert_eq!(next.sn, 10);
            }
            other => panic!("{other:?}"),
        }
        // A "reference" longer than the engine sends.
        let mut buf = [0u8; 512];
        let mut e = Emitter::new(&mut buf, 512, GuidPrefix([1; 12])).unwrap();
        assert!(e.data(
            r,
            w,
            9,
            None,
            0,
            &[1u8; crate::MAX_CHUNK_REFERENCE + 4],
            false
        ));
        assert!(e.data(r, w, 10, None, 0, &[0, 1, 0, 0], false));
        let n = e.len();
        buf[20] = DATA_REF;
        let (_, subs) = parse(&buf[..n]).unwrap();
        let subs: Vec<_> = subs.map(Result::unwrap).collect();
        assert!(
            matches!(&subs[..], [Sub::Other(DATA_REF), Sub::Data(d)] if d.sn == 10),
            "{subs:?}"
        );
    }

    /// Changes with the timestamp of the change before them in the message get no INFO_TS
    /// of their own; a change without a timestamp after one with a timestamp gets an
    /// invalidating INFO_TS. A receiver reads every change's own timestamp either way, on
    /// both DATA paths (`timed_data` for batches, `info_ts` + `data` otherwise).
    #[test]
    fn repeated_timestamps_share_one_info_ts() {
        let t1 = Some(Time {
            seconds: 5,
            fraction: 7,
        });
        let t2 = Some(Time {
            seconds: 5,
            fraction: 8,
        });
        let plan = [
            (1, t1),
            (2, t1),
            (3, t1),
            (4, None),
            (5, None),
            (6, t2),
            (7, t1),
        ];
        for timed in [true, false] {
            let mut buf = [0u8; 1024];
            let mut e = Emitter::new(&mut buf, 1024, P).unwrap();
            for (sn, ts) in plan {
                let need = e.info_ts_len(ts);
                let before = e.len();
                if timed {
                    assert!(e.timed_data(ts, R, W, sn, &[0, 1, 0, 0, 1, 2, 3, 4]));
                } else {
                    assert!(e.info_ts(ts));
                    assert!(e.data(R, W, sn, None, 0, &[0, 1, 0, 0, 1, 2, 3, 4], false));
                }
                // INFO_TS bytes as announced, then the DATA (24 + 8 bytes).
                assert_eq!(e.len() - before, need + 32, "sn {sn}");
            }
            let n = e.len();
            let (got, infos) = stamped(&buf[..n]);
            assert_eq!(got, plan.to_vec());
            // t1, invalidate, t2, t1: four INFO_TS for seven changes.
            assert_eq!(infos, 4, "timed {timed}");
        }
    }

    #[test]
    fn truncation_and_corruption_never_panic() {
        let mut buf = [0u8; 256];
        let mut e = Emitter::new(&mut buf, 256, P).unwrap();
        e.data(R, W, 1, Some(&[1; 16]), 0, &[0, 1, 0, 0, 1, 2, 3, 4], false);
        let mut set = SnSet::new(1);
        set.insert(3);
        e.acknack(R, W, &set, 1, false);
        let n = e.len();
        for cut in 0..n {
            if let Ok((_, subs)) = parse(&buf[..cut]) {
                for s in subs {
                    let _ = s;
                }
            }
        }
        for i in 20..n {
            let mut b = buf;
            b[i] = 0xff;
            if let Ok((_, subs)) = parse(&b[..n]) {
                for s in subs {
                    let _ = s;
                }
            }
        }
    }

    /// The direct per-kind decoding of the hot kinds agrees with decoding
    /// through the generic `Submessage` for valid, truncated and corrupted input.
    #[test]
    fn direct_decode_matches_generic_decode() {
        let mut buf = [0u8; 256];
        let mut e = Emitter::new(&mut buf, 256, P).unwrap();
        assert!(e.info_dst(P));
        assert!(e.info_ts(Some(Time {
            seconds: 1,
            fraction: 2
        })));
        assert!(e.data(R, W, 7, Some(&[3; 16]), 1, &[0, 1, 0, 0, 5, 6], false));
        assert!(e.heartbeat(EntityId::UNKNOWN, W, 1, 7, 3, false));
        let mut set = SnSet::new(4);
        set.insert(6);
        assert!(e.acknack(R, W, &set, 2, true));
        let n = e.len();
        let check = |bytes: &[u8]| {
            let Ok(view) = MessageView::parse(bytes) else {
                return;
            };
            for raw in view.raw_submessages() {
                let Ok(raw) = raw else { break };
                let generic = raw.parse().ok().and_then(convert);
                assert_eq!(decode(&raw), generic, "{bytes:02x?}");
            }
        };
        check(&buf[..n]);
        for cut in 0..n {
            check(&buf[..cut]);
        }
        for i in 20..n {
            for v in [0x00, 0x01, 0x7f, 0xff] {
                let mut b = buf;
                b[i] = v;
                check(&b[..n]);
            }
        }
    }

    #[test]
    fn rejects_bad_header_and_version() {
        assert_eq!(parse(b"RTPQ").err(), Some(Malformed::Header));
        let mut h = [0u8; 20];
        h[..4].copy_from_slice(b"RTPS");
        h[4] = 3;
        assert_eq!(parse(&h).err(), Some(Malformed::Version));
    }

    #[test]
    fn bad_numbits_is_malformed() {
        let mut buf = [0u8; 128];
        let mut e = Emitter::new(&mut buf, 128, P).unwrap();
        e.acknack(R, W, &SnSet::new(1), 1, false);
        let n = e.len();
        // numBits lives after sub header (4) + ids (8) + base (8).
        buf[20 + 4 + 16..20 + 4 + 20].copy_from_slice(&300u32.to_le_bytes());
        let (_, mut subs) = parse(&buf[..n]).unwrap();
        assert_eq!(subs.next(), Some(Err(Malformed::Body)));
    }

    #[test]
    fn absurd_sequence_numbers_are_malformed() {
        let mut buf = [0u8; 256];
        let mut e = Emitter::new(&mut buf, 256, P).unwrap();
        e.data(R, W, i64::MAX, None, 0, &[0, 1, 0, 0], false);
        let n = e.len();
        let (_, mut subs) = parse(&buf[..n]).unwrap();
        assert_eq!(subs.next(), Some(Err(Malformed::Body)));
        let mut e = Emitter::new(&mut buf, 256, P).unwrap();
        e.heartbeat(R, W, 1, MAX_SN + 1, 1, false);
        let n = e.len();
        let (_, mut subs) = parse(&buf[..n]).unwrap();
        assert_eq!(subs.next(), Some(Err(Malformed::Body)));
    }

    #[test]
    fn data_frag_round_trip() {
        let mut buf = [0u8; 256];
        let mut e = Emitter::new(&mut buf, 256, P).unwrap();
        assert!(e.data_frag(R, W, 3, Some(&[2; 16]), 0, 2, 100, 250, &[5; 100], false));
        assert_eq!(e.len() - 20, Emitter::data_frag_len(true, false, 100));
        let n = e.len();
        let (_, mut subs) = parse(&buf[..n]).unwrap();
        match subs.next() {
            Some(Ok(Sub::DataFrag(f))) => {
                assert_eq!(
                    (f.sn, f.offset, f.sample_size, f.fragment_size),
                    (3, 100, 250, 100)
                );
                assert_eq!(f.data, &[5; 100][..]);
                assert!(f.inline_qos.is_some());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn emitter_respects_limit() {
        let mut buf = [0u8; 100];
        let mut e = Emitter::new(&mut buf, 60, P).unwrap();
        assert!(!e.data(R, W, 1, None, 0, &[0u8; 40], false));
        assert!(e.is_empty());
        assert!(e.heartbeat(R, W, 1, 1, 1, false));
        assert_eq!(e.len(), 52);
        assert!(Emitter::new(&mut buf, 10, P).is_none());
    }

    #[test]
    fn data_len_matches_emitted_size() {
        for (k, st, len) in [
            (false, false, 0),
            (true, false, 5),
            (true, true, 8),
            (false, true, 3),
        ] {
            let mut buf = [0u8; 256];
            let mut e = Emitter::new(&mut buf, 256, P).unwrap();
            let payload = vec![1u8; len];
            assert!(e.data(
                R,
                W,
                1,
                k.then_some(&[1; 16]),
                u32::from(st),
                &payload,
                false
            ));
            assert_eq!(e.len() - 20, Emitter::data_len(k, st, len));
        }
    }

    /// Inline QoS (KEY_HASH, big-endian STATUS_INFO, SENTINEL) of DATA and DATA_FRAG,
    /// pinned byte for byte.
    #[test]
    fn inline_qos_golden() {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let mut buf = [0u8; 256];
        let mut e = Emitter::new(&mut buf, 256, P).unwrap();
        // DATA: KEY_HASH + STATUS_INFO 3, payload padded to 4.
        assert!(e.data(R, W, 5, Some(&[0xab; 16]), 3, &[0, 1, 0, 0, 7], false));
        // DATA without payload: STATUS_INFO only, no D/K flag.
        assert!(e.data(R, W, 6, None, 1, &[], true));
        // DATA_FRAG: KEY_HASH only.
        assert!(e.data_frag(R, W, 7, Some(&[0xcd; 16]), 0, 2, 4, 9, &[1, 2, 3, 4], false));
        let n = e.len();
        let want = [
            "15073c00000010000000010700000202000000000500000070001000abababab",
            "abababababababababababab7100040000000003010000000001000007000000",
            "1503200000001000000001070000020200000000060000007100040000000001",
            "0100000016033c0000001c000000010700000202000000000700000002000000",
            "010004000900000070001000cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd01000000",
            "01020304",
        ]
        .concat();
        assert_eq!(hex(&buf[20..n]), want);
        let (_, subs) = parse(&buf[..n]).unwrap();
        let qos: Vec<InlineQos> = subs
            .map(|s| match s.unwrap() {
                Sub::Data(d) => parse_inline_qos(d.inline_qos.unwrap(), true).unwrap(),
                Sub::DataFrag(f) => parse_inline_qos(f.inline_qos.unwrap(), true).unwrap(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            qos,
            vec![
                InlineQos {
                    key_hash: Some([0xab; 16]),
                    status_info: 3
                },
                InlineQos {
                    key_hash: None,
                    status_info: 1
                },
                InlineQos {
                    key_hash: Some([0xcd; 16]),
                    status_info: 0
                },
            ]
        );
    }
}

/// Instruction-count probe of the ping-pong hot path (not a test: run under
/// callgrind with `cargo test --release -p ferrodds-rtps --lib probe -- --ignored`).
#[cfg(test)]
mod probe {
    use super::*;
    use std::hint::black_box;

    const P: GuidPrefix = GuidPrefix([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const R: EntityId = EntityId([0, 0, 1, 7]);
    const W: EntityId = EntityId([0, 0, 2, 2]);

    #[inline(never)]
    fn emit_data(buf: &mut [u8], payload: &[u8], sn: i64) -> usize {
        let mut e = Emitter::new(buf, 1400, P).unwrap();
        e.info_dst(P);
        e.info_ts(Some(Time {
            seconds: 5,
            fraction: 7,
        }));
        e.data(R, W, sn, None, 0, payload, false);
        e.heartbeat(EntityId::UNKNOWN, W, 1, sn, 4, false);
        e.len()
    }

    #[inline(never)]
    fn emit_ack(buf: &mut [u8], sn: i64) -> usize {
        let mut e = Emitter::new(buf, 1400, P).unwrap();
        e.info_dst(P);
        e.acknack(R, W, &SnSet::new(sn), 9, true);
        e.len()
    }

    #[inline(never)]
    fn parse_all(buf: &[u8]) -> usize {
        let (_, subs) = parse(buf).unwrap();
        let mut n = 0;
        for s in subs {
            black_box(&s);
            n += 1;
        }
        n
    }

    #[test]
    #[ignore = "instruction-count probe"]
    fn probe_ping_pong() {
        let payload = [7u8; 36];
        let mut a = [0u8; 1400];
        let mut b = [0u8; 1400];
        for i in 1..=10_000 {
            let na = emit_data(black_box(&mut a), black_box(&payload), i);
            let nb = emit_ack(black_box(&mut b), i + 1);
            assert_eq!(parse_all(black_box(&a[..na])), 4);
            assert_eq!(parse_all(black_box(&b[..nb])), 2);
        }
    }
}
