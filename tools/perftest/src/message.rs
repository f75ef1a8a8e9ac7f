//! The perftest sample as the test harness sees it, and its raw-transport encoding.
//!
//! A [`TestMessage`] carries the header fields of `TestData_t` plus the `bin_data`
//! length; the payload content is always zeros (the tool never looks at it), so backends
//! keep one preallocated payload buffer and no sample allocates on the hot path.
//!
//! Raw encoding (spec 6): each sample is the 4-byte CDR encapsulation header
//! (little-endian XCDR1) followed by the serialized `TestData_t`, padded to a multiple of
//! four bytes (padding count in the encapsulation options). A datagram holds one or more
//! such samples back to back (application-level batching).

use ferrodds_cdr::types::TestDataLarge;
use ferrodds_cdr::{encode_sample, CdrReader, EncapsulationHeader, Encoding};

use crate::error::PerftestError;

/// Header fields and payload length of one perftest sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TestMessage {
    /// Instance number, little-endian.
    pub key: [u8; 4],
    /// Publisher id (a subscriber id in announcements).
    pub entity_id: i32,
    /// Loop index.
    pub seq_num: u32,
    /// High 32 bits of the sender's microsecond clock.
    pub timestamp_sec: i32,
    /// Low 32 bits of the sender's microsecond clock.
    pub timestamp_usec: u32,
    /// Target subscriber id, -1 when not a ping.
    pub latency_ping: i32,
    /// `bin_data` length (`-dataLen` − 28 for data samples).
    pub size: usize,
}

impl TestMessage {
    /// The instance number from the key bytes.
    pub fn instance(&self) -> u32 {
        u32::from_le_bytes(self.key)
    }
}

/// Serializes [`TestMessage`]s with `ferrodds_cdr` into caller-owned buffers.
#[derive(Debug)]
pub struct Encoder {
    sample: TestDataLarge,
}

impl Encoder {
    /// An encoder whose payload buffer holds up to `max_payload` bytes without growing.
    pub fn new(max_payload: usize) -> Self {
        Encoder {
            sample: TestDataLarge {
                bin_data: Vec::with_capacity(max_payload),
                ..TestDataLarge::default()
            },
        }
    }

    /// Appends the encapsulated, padded sample to `out`; returns the bytes appended.
    pub fn encode(&mut self, m: &TestMessage, out: &mut Vec<u8>) -> Result<usize, PerftestError> {
        let s = &mut self.sample;
        s.key = m.key;
        s.entity_id = m.entity_id;
        s.seq_num = m.seq_num;
        s.timestamp_sec = m.timestamp_sec;
        s.timestamp_usec = m.timestamp_usec;
        s.latency_ping = m.latency_ping;
        s.bin_data.resize(m.size, 0);
        Ok(encode_sample(s, Encoding::XCDR1_LE, out)?)
    }
}

/// Bytes of a serialized `TestData_t` body before `bin_data`'s bytes: the key, five 32-bit
/// members and the sequence length (XCDR1, all 4-byte aligned from the body's start).
pub const BODY_HEADER_LEN: usize = 28;

/// Writes `m`'s header fields and `bin_data` length (`m.size`) at the start of a serialized
/// body (XCDR1 little-endian), as `encode_sample` would; the `bin_data` bytes after them are
/// left as they are. `body` is at least [`BODY_HEADER_LEN`] bytes.
pub fn write_body_header(body: &mut [u8], m: &TestMessage) {
    body[..4].copy_from_slice(&m.key);
    let words = [
        m.entity_id as u32,
        m.seq_num,
        m.timestamp_sec as u32,
        m.timestamp_usec,
        m.latency_ping as u32,
        m.size as u32,
    ];
    for (i, w) in words.iter().enumerate() {
        body[4 + 4 * i..8 + 4 * i].copy_from_slice(&w.to_le_bytes());
    }
}

/// The header fields and `bin_data` length of a serialized body (XCDR1 little-endian, as
/// [`write_body_header`] writes them); `None` if it is shorter than [`BODY_HEADER_LEN`].
pub fn body_message(body: &[u8]) -> Option<TestMessage> {
    let h = body.get(..BODY_HEADER_LEN)?;
    let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    Some(TestMessage {
        key: [h[0], h[1], h[2], h[3]],
        entity_id: word(4) as i32,
        seq_num: word(8),
        timestamp_sec: word(12) as i32,
        timestamp_usec: word(16),
        latency_ping: word(20) as i32,
        size: word(24) as usize,
    })
}

/// The encoded size of a sample with `payload` bytes of `bin_data`.
pub fn encoded_len(payload: usize) -> usize {
    (4 + 28 + payload).div_ceil(4) * 4
}

/// Decodes one sample at the start of `buf`; returns it and the bytes it occupies.
pub fn decode_one(buf: &[u8]) -> Result<(TestMessage, usize), PerftestError> {
    let (header, body) = EncapsulationHeader::parse(buf)?;
    let mut r = CdrReader::new(body, header.representation.encoding());
    let key_bytes = r.read_raw(4)?;
    let mut key = [0u8; 4];
    key.copy_from_slice(key_bytes);
    let entity_id = r.read_i32()?;
    let seq_num = r.read_u32()?;
    let timestamp_sec = r.read_i32()?;
    let timestamp_usec = r.read_u32()?;
    let latency_ping = r.read_i32()?;
    // Borrowed view: the length is checked against the input, nothing is allocated.
    let payload = r.read_bytes()?;
    let consumed = 4 + r.offset() + header.padding();
    if consumed > buf.len() {
        return Err(PerftestError::Malformed("padding beyond the datagram"));
    }
    Ok((
        TestMessage {
            key,
            entity_id,
            seq_num,
            timestamp_sec,
            timestamp_usec,
            latency_ping,
            size: payload.len(),
        },
        consumed,
    ))
}

/// Walks a datagram of back-to-back samples, calling `f` for each. Returns the number of
/// samples; stops at the first malformed one with an error (samples before it were
/// delivered).
pub fn decode_datagram(
    mut buf: &[u8],
    f: &mut dyn FnMut(&TestMessage),
) -> Result<usize, PerftestError> {
    let mut n = 0;
    while !buf.is_empty() {
        let (m, used) = decode_one(buf)?;
        f(&m);
        n += 1;
        buf = &buf[used..];
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(size: usize, seq: u32) -> TestMessage {
        TestMessage {
            key: 7u32.to_le_bytes(),
            entity_id: 3,
            seq_num: seq,
            timestamp_sec: -2,
            timestamp_usec: 0xdead_beef,
            latency_ping: -1,
            size,
        }
    }

    /// The header a loan's body gets is what `encode_sample` writes before the payload.
    #[test]
    fn body_header_matches_the_encoder() {
        let m = msg(6, 41);
        let mut e = Encoder::new(10);
        let mut buf = Vec::new();
        e.encode(&m, &mut buf).unwrap();
        let mut body = vec![0xaa; BODY_HEADER_LEN + 6];
        write_body_header(&mut body, &m);
        assert_eq!(body[..BODY_HEADER_LEN], buf[4..4 + BODY_HEADER_LEN]);
        assert_eq!(
            body[BODY_HEADER_LEN..],
            [0xaa; 6],
            "bin_data left as it was"
        );
        assert_eq!(body_message(&body), Some(m));
        assert_eq!(body_message(&body[..BODY_HEADER_LEN - 1]), None);
    }

    #[test]
    fn round_trip_and_layout() {
        let mut e = Encoder::new(100);
        let mut buf = Vec::new();
        let n = e.encode(&msg(5, 9), &mut buf).unwrap();
        assert_eq!(n, encoded_len(5));
        assert_eq!(n, 40); // 4 + 28 + 5 = 37, padded to 40
        assert_eq!(&buf[..4], &[0x00, 0x01, 0x00, 0x03]); // CDR_LE, 3 padding bytes
        assert_eq!(&buf[4..8], &[7, 0, 0, 0]);
        assert_eq!(&buf[8..12], &3i32.to_le_bytes());
        let (m, used) = decode_one(&buf).unwrap();
        assert_eq!(used, 40);
        assert_eq!(m, msg(5, 9));
        assert_eq!(m.instance(), 7);
    }

    #[test]
    fn batches_walk() {
        let mut e = Encoder::new(100);
        let mut buf = Vec::new();
        for (i, size) in [0usize, 1, 2, 3, 4, 72].into_iter().enumerate() {
            e.encode(&msg(size, i as u32), &mut buf).unwrap();
        }
        let mut seen = Vec::new();
        let n = decode_datagram(&buf, &mut |m| seen.push((m.seq_num, m.size))).unwrap();
        assert_eq!(n, 6);
        assert_eq!(seen, vec![(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 72)]);
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        let mut e = Encoder::new(100);
        let mut buf = Vec::new();
        e.encode(&msg(64, 1), &mut buf).unwrap();
        for cut in 0..buf.len() {
            let mut count = 0;
            let r = decode_datagram(&buf[..cut], &mut |_| count += 1);
            assert!(cut == 0 || r.is_err(), "cut {cut}");
            assert_eq!(count, 0);
        }
        // A huge length field must be rejected without allocating.
        let mut bad = buf.clone();
        bad[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_datagram(&bad, &mut |_| {}).is_err());
        // Garbage encapsulation id.
        let mut bad = buf.clone();
        bad[1] = 0x77;
        assert!(decode_datagram(&bad, &mut |_| {}).is_err());
        // Every byte pattern of a short prefix: never panics.
        for b in 0..=255u8 {
            let junk = [
                0, 1, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b,
                b, b, b, b,
            ];
            let _ = decode_datagram(&junk, &mut |_| {});
        }
    }
}
