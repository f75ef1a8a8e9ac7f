//! Private RTPS message codec used by the engine: a borrowed submessage
//! iterator for received datagrams and an emitter into caller buffers.
//!
//! The engine only needs a handful of submessages, so this small module keeps
//! the engine independent of the pace of the full wire crate; it uses the wire
//! crate's value types. Parsing never panics and never allocates; emission
//! always uses little-endian bodies.

use crate::sn_set::SnSet;
use crate::{EntityId, GuidPrefix, SequenceNumber, Time};

pub(crate) const DATA: u8 = 0x15;
pub(crate) const DATA_FRAG: u8 = 0x16;
pub(crate) const HEARTBEAT: u8 = 0x07;
pub(crate) const ACKNACK: u8 = 0x06;
pub(crate) const GAP: u8 = 0x08;
pub(crate) const INFO_TS: u8 = 0x09;
pub(crate) const INFO_SRC: u8 = 0x0c;
pub(crate) const INFO_DST: u8 = 0x0e;
pub(crate) const PAD: u8 = 0x01;

pub(crate) const PID_SENTINEL: u16 = 0x0001;
pub(crate) const PID_PAD: u16 = 0x0000;
pub(crate) const PID_KEY_HASH: u16 = 0x0070;
pub(crate) const PID_STATUS_INFO: u16 = 0x0071;

/// Our vendor id (unassigned value, see the wire crate).
pub(crate) const VENDOR_ID: [u8; 2] = [0x01, 0xfd];
/// Protocol version we speak.
pub(crate) const PROTOCOL_VERSION: [u8; 2] = [2, 5];

/// Why a datagram or submessage was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Malformed {
    Header,
    Version,
    Length,
    Body,
}

/// The parsed RTPS header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MsgHeader {
    pub(crate) major: u8,
    pub(crate) vendor: [u8; 2],
    pub(crate) prefix: GuidPrefix,
}

pub(crate) fn parse_header(buf: &[u8]) -> Result<(MsgHeader, &[u8]), Malformed> {
    let h = buf.get(..20).ok_or(Malformed::Header)?;
    if &h[..4] != b"RTPS" && &h[..4] != b"RTPX" {
        return Err(Malformed::Header);
    }
    if h[4] != 2 {
        return Err(Malformed::Version);
    }
    let mut prefix = [0u8; 12];
    prefix.copy_from_slice(&h[8..20]);
    Ok((
        MsgHeader {
            major: h[4],
            vendor: [h[6], h[7]],
            prefix: GuidPrefix(prefix),
        },
        &buf[20..],
    ))
}

/// A little bounds-checked reader.
#[derive(Debug, Clone)]
pub(crate) struct Rd<'a> {
    buf: &'a [u8],
    pos: usize,
    le: bool,
}

impl<'a> Rd<'a> {
    pub(crate) fn new(buf: &'a [u8], le: bool) -> Self {
        Self { buf, pos: 0, le }
    }
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub(crate) fn arr<const N: usize>(&mut self) -> Option<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Some(a)
    }
    pub(crate) fn u16(&mut self) -> Option<u16> {
        let a = self.arr::<2>()?;
        Some(if self.le {
            u16::from_le_bytes(a)
        } else {
            u16::from_be_bytes(a)
        })
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let a = self.arr::<4>()?;
        Some(if self.le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        })
    }
    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.u32().map(|v| v as i32)
    }
    pub(crate) fn sn(&mut self) -> Option<SequenceNumber> {
        let high = self.i32()?;
        let low = self.u32()?;
        Some(SequenceNumber(((high as i64) << 32) | i64::from(low)))
    }
    pub(crate) fn entity(&mut self) -> Option<EntityId> {
        self.arr::<4>().map(EntityId)
    }
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
    pub(crate) fn align(&mut self, a: usize) -> Option<()> {
        let pad = (a - self.pos % a) % a;
        self.take(pad).map(|_| ())
    }
    pub(crate) fn sn_set(&mut self) -> Option<SnSet> {
        let base = self.sn()?;
        let num_bits = self.u32()?;
        if num_bits > 256 {
            return None;
        }
        let words = num_bits.div_ceil(32) as usize;
        let mut bits = [0u32; 8];
        for w in bits.iter_mut().take(words) {
            *w = self.u32()?;
        }
        SnSet::from_wire(base.0, num_bits, bits)
    }
}

/// A received submessage (only the kinds the engine uses are decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sub<'a> {
    Data(DataSub<'a>),
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
    InfoTs(Option<Time>),
    InfoSrc(GuidPrefix),
    InfoDst(GuidPrefix),
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

/// Iterator over the submessages after the header. Ends after the first error.
pub(crate) struct SubIter<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> SubIter<'a> {
    pub(crate) fn new(body: &'a [u8]) -> Self {
        Self {
            rest: body,
            failed: false,
        }
    }
}

impl<'a> Iterator for SubIter<'a> {
    type Item = Result<Sub<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        let r = self.parse_one();
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

impl<'a> SubIter<'a> {
    fn parse_one(&mut self) -> Result<Sub<'a>, Malformed> {
        let hdr = self.rest.get(..4).ok_or(Malformed::Length)?;
        let id = hdr[0];
        let flags = hdr[1];
        let le = flags & 1 != 0;
        let len = if le {
            u16::from_le_bytes([hdr[2], hdr[3]])
        } else {
            u16::from_be_bytes([hdr[2], hdr[3]])
        } as usize;
        let after = &self.rest[4..];
        let body_len = if len == 0 && id != PAD && id != INFO_TS {
            after.len()
        } else {
            len
        };
        let body = after.get(..body_len).ok_or(Malformed::Length)?;
        self.rest = &after[body_len..];
        parse_body(id, flags, body).ok_or(Malformed::Body)
    }
}

fn parse_body(id: u8, flags: u8, body: &[u8]) -> Option<Sub<'_>> {
    let le = flags & 1 != 0;
    let mut r = Rd::new(body, le);
    Some(match id {
        DATA => {
            let _extra = r.u16()?;
            let to_qos = r.u16()? as usize;
            let start = r.pos();
            let reader_id = r.entity()?;
            let writer_id = r.entity()?;
            let sn = r.sn()?.0;
            let consumed = r.pos() - start;
            r.take(to_qos.checked_sub(consumed)?)?;
            let inline_qos = if flags & 0x02 != 0 {
                let rest = r.rest();
                let n = param_list_len(rest, le)?;
                r.take(n)
            } else {
                None
            };
            let has_data = flags & 0x04 != 0;
            let has_key = flags & 0x08 != 0;
            if has_data && has_key {
                return None;
            }
            let payload = if has_data || has_key {
                Some(r.rest())
            } else {
                None
            };
            if sn < 1 {
                return None;
            }
            Sub::Data(DataSub {
                reader_id,
                writer_id,
                sn,
                little_endian: le,
                inline_qos,
                payload,
                key_only: has_key,
            })
        }
        HEARTBEAT => {
            let reader_id = r.entity()?;
            let writer_id = r.entity()?;
            let first = r.sn()?.0;
            let last = r.sn()?.0;
            let count = r.i32()?;
            if first < 1 || last < first - 1 {
                return None;
            }
            Sub::Heartbeat {
                reader_id,
                writer_id,
                first,
                last,
                count,
                final_flag: flags & 0x02 != 0,
            }
        }
        ACKNACK => {
            let reader_id = r.entity()?;
            let writer_id = r.entity()?;
            let set = r.sn_set()?;
            let count = r.i32()?;
            Sub::AckNack {
                reader_id,
                writer_id,
                set,
                count,
                final_flag: flags & 0x02 != 0,
            }
        }
        GAP => {
            let reader_id = r.entity()?;
            let writer_id = r.entity()?;
            let start = r.sn()?.0;
            let list = r.sn_set()?;
            if start < 1 {
                return None;
            }
            Sub::Gap {
                reader_id,
                writer_id,
                start,
                list,
            }
        }
        INFO_TS => {
            if flags & 0x02 != 0 {
                Sub::InfoTs(None)
            } else {
                let seconds = r.i32()?;
                let fraction = r.u32()?;
                Sub::InfoTs(Some(Time { seconds, fraction }))
            }
        }
        INFO_SRC => {
            r.take(8)?;
            Sub::InfoSrc(GuidPrefix(r.arr::<12>()?))
        }
        INFO_DST => Sub::InfoDst(GuidPrefix(r.arr::<12>()?)),
        DATA_FRAG => Sub::Other(id),
        other => Sub::Other(other),
    })
}

/// Length in bytes of the parameter list at the start of `buf`, sentinel included.
pub(crate) fn param_list_len(buf: &[u8], le: bool) -> Option<usize> {
    let mut r = Rd::new(buf, le);
    loop {
        let pid = r.u16()?;
        let len = r.u16()? as usize;
        r.take(len)?;
        if pid == PID_SENTINEL {
            return Some(r.pos());
        }
    }
}

/// Iterates `(pid, value)` of a parameter list, stopping at the sentinel.
/// Yields `Err(())` once on a truncated list.
pub(crate) struct Params<'a> {
    r: Rd<'a>,
    done: bool,
}

impl<'a> Params<'a> {
    pub(crate) fn new(buf: &'a [u8], le: bool) -> Self {
        Self {
            r: Rd::new(buf, le),
            done: false,
        }
    }
}

impl<'a> Iterator for Params<'a> {
    type Item = Result<(u16, &'a [u8]), ()>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = (|| {
            let pid = self.r.u16()?;
            let len = self.r.u16()? as usize;
            let v = self.r.take(len)?;
            Some((pid, v))
        })();
        match item {
            None => {
                self.done = true;
                Some(Err(()))
            }
            Some((PID_SENTINEL, _)) => {
                self.done = true;
                None
            }
            Some((PID_PAD, _)) => self.next(),
            Some(p) => Some(Ok(p)),
        }
    }
}

/// Decoded inline QoS of interest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct InlineQos {
    pub(crate) key_hash: Option<[u8; 16]>,
    pub(crate) status_info: u32,
}

pub(crate) fn parse_inline_qos(buf: &[u8], le: bool) -> Option<InlineQos> {
    let mut q = InlineQos::default();
    for p in Params::new(buf, le) {
        let (pid, v) = p.ok()?;
        match pid {
            PID_KEY_HASH => {
                let mut k = [0u8; 16];
                k.copy_from_slice(v.get(..16)?);
                q.key_hash = Some(k);
            }
            PID_STATUS_INFO => {
                let b = v.get(..4)?;
                // STATUS_INFO is big-endian regardless of the E flag.
                q.status_info = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            }
            _ => {}
        }
    }
    Some(q)
}

/// Builds one RTPS message into a caller buffer; every `push_*` returns false
/// (and writes nothing) if the submessage does not fit within `limit`.
pub(crate) struct Emitter<'b> {
    buf: &'b mut [u8],
    len: usize,
    limit: usize,
}

impl<'b> Emitter<'b> {
    /// Starts a message with the RTPS header; `None` if the buffer is too small.
    pub(crate) fn new(buf: &'b mut [u8], limit: usize, prefix: GuidPrefix) -> Option<Self> {
        let limit = limit.min(buf.len());
        if limit < 20 {
            return None;
        }
        buf[..4].copy_from_slice(b"RTPS");
        buf[4..6].copy_from_slice(&PROTOCOL_VERSION);
        buf[6..8].copy_from_slice(&VENDOR_ID);
        buf[8..20].copy_from_slice(&prefix.0);
        Some(Self {
            buf,
            len: 20,
            limit,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True if nothing but the header was written.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 20
    }

    pub(crate) fn room(&self) -> usize {
        self.limit - self.len
    }

    fn begin(&mut self, id: u8, flags: u8, body_len: usize) -> Option<usize> {
        let total = 4 + body_len;
        if total > self.room() || body_len > usize::from(u16::MAX) {
            return None;
        }
        let at = self.len;
        self.buf[at] = id;
        self.buf[at + 1] = flags | 1;
        self.buf[at + 2..at + 4].copy_from_slice(&(body_len as u16).to_le_bytes());
        self.len += 4;
        Some(at)
    }

    fn put(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    fn put_sn(&mut self, sn: i64) {
        self.put(&((sn >> 32) as i32).to_le_bytes());
        self.put(&(sn as u32).to_le_bytes());
    }

    fn put_set(&mut self, s: &SnSet) {
        self.put_sn(s.base());
        self.put(&s.num_bits().to_le_bytes());
        for w in s.words() {
            self.put(&w.to_le_bytes());
        }
    }

    pub(crate) fn info_dst(&mut self, prefix: GuidPrefix) -> bool {
        if self.begin(INFO_DST, 0, 12).is_none() {
            return false;
        }
        self.put(&prefix.0);
        true
    }

    pub(crate) fn info_ts(&mut self, t: Time) -> bool {
        if self.begin(INFO_TS, 0, 8).is_none() {
            return false;
        }
        self.put(&t.seconds.to_le_bytes());
        self.put(&t.fraction.to_le_bytes());
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

    /// DATA with optional KEY_HASH / STATUS_INFO inline QoS.
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
        let total = Self::data_len(key_hash.is_some(), status_info != 0, payload.len());
        let mut flags = 0u8;
        if key_hash.is_some() || status_info != 0 {
            flags |= 0x02;
        }
        if !payload.is_empty() {
            flags |= if key_only { 0x08 } else { 0x04 };
        }
        if self.begin(DATA, flags, total - 4).is_none() {
            return false;
        }
        self.put(&0u16.to_le_bytes());
        self.put(&16u16.to_le_bytes());
        self.put(&reader_id.0);
        self.put(&writer_id.0);
        self.put_sn(sn);
        if flags & 0x02 != 0 {
            if let Some(k) = key_hash {
                self.put(&PID_KEY_HASH.to_le_bytes());
                self.put(&16u16.to_le_bytes());
                self.put(k);
            }
            if status_info != 0 {
                self.put(&PID_STATUS_INFO.to_le_bytes());
                self.put(&4u16.to_le_bytes());
                self.put(&status_info.to_be_bytes());
            }
            self.put(&PID_SENTINEL.to_le_bytes());
            self.put(&0u16.to_le_bytes());
        }
        self.put(payload);
        let pad = payload.len().div_ceil(4) * 4 - payload.len();
        self.put(&[0u8; 3][..pad]);
        true
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
        let flags = if final_flag { 0x02 } else { 0 };
        if self.begin(HEARTBEAT, flags, 28).is_none() {
            return false;
        }
        self.put(&reader_id.0);
        self.put(&writer_id.0);
        self.put_sn(first);
        self.put_sn(last);
        self.put(&count.to_le_bytes());
        true
    }

    pub(crate) fn acknack(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        set: &SnSet,
        count: i32,
        final_flag: bool,
    ) -> bool {
        let flags = if final_flag { 0x02 } else { 0 };
        let body = 8 + 12 + 4 * set.words().len() + 4;
        if self.begin(ACKNACK, flags, body).is_none() {
            return false;
        }
        self.put(&reader_id.0);
        self.put(&writer_id.0);
        self.put_set(set);
        self.put(&count.to_le_bytes());
        true
    }

    pub(crate) fn gap(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        start: i64,
        list: &SnSet,
    ) -> bool {
        let body = 8 + 8 + 12 + 4 * list.words().len();
        if self.begin(GAP, 0, body).is_none() {
            return false;
        }
        self.put(&reader_id.0);
        self.put(&writer_id.0);
        self.put_sn(start);
        self.put_set(list);
        true
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
        assert!(e.info_ts(Time {
            seconds: 5,
            fraction: 7
        }));
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
        let (h, body) = parse_header(&buf[..n]).unwrap();
        assert_eq!(h.prefix, P);
        let subs: Vec<_> = SubIter::new(body).collect::<Result<_, _>>().unwrap();
        assert_eq!(subs.len(), 6);
        assert_eq!(subs[0], Sub::InfoDst(P));
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

    #[test]
    fn truncation_never_panics() {
        let mut buf = [0u8; 256];
        let mut e = Emitter::new(&mut buf, 256, P).unwrap();
        e.data(R, W, 1, Some(&[1; 16]), 0, &[0, 1, 0, 0, 1, 2, 3, 4], false);
        let mut set = SnSet::new(1);
        set.insert(3);
        e.acknack(R, W, &set, 1, false);
        let n = e.len();
        for cut in 0..n {
            if let Ok((_, body)) = parse_header(&buf[..cut]) {
                for s in SubIter::new(body) {
                    let _ = s;
                }
            }
        }
        // Corrupt lengths too.
        for i in 20..n {
            let mut b = buf;
            b[i] = 0xff;
            if let Ok((_, body)) = parse_header(&b[..n]) {
                for s in SubIter::new(body) {
                    let _ = s;
                }
            }
        }
    }

    #[test]
    fn rejects_bad_header_and_big_numbits() {
        assert_eq!(parse_header(b"RTPQ").unwrap_err(), Malformed::Header);
        let mut h = [0u8; 20];
        h[..4].copy_from_slice(b"RTPS");
        h[4] = 3;
        assert_eq!(parse_header(&h).unwrap_err(), Malformed::Version);
        // ACKNACK with numBits 300
        let mut body = vec![];
        body.extend_from_slice(&[0; 8]);
        body.extend_from_slice(&0i32.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&300u32.to_le_bytes());
        assert_eq!(parse_body(ACKNACK, 1, &body), None);
    }

    #[test]
    fn zero_length_means_rest_of_message() {
        let mut buf = [0u8; 128];
        let mut e = Emitter::new(&mut buf, 128, P).unwrap();
        e.heartbeat(R, W, 1, 0, 1, true);
        let n = e.len();
        buf[22] = 0;
        buf[23] = 0;
        let (_, body) = parse_header(&buf[..n]).unwrap();
        let subs: Vec<_> = SubIter::new(body).collect();
        assert_eq!(subs.len(), 1);
        assert!(subs[0].is_ok());
    }

    #[test]
    fn emitter_respects_limit() {
        let mut buf = [0u8; 100];
        let mut e = Emitter::new(&mut buf, 60, P).unwrap();
        assert!(!e.data(R, W, 1, None, 0, &[0u8; 40], false));
        assert!(e.is_empty());
        assert!(e.heartbeat(R, W, 1, 1, 1, false));
        assert_eq!(e.len(), 52);
    }
}
