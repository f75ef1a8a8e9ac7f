//! Removing user data from an RTPS message before it is written to a capture.
//!
//! A capture made to debug a system should not have to carry the system's data: with user
//! data removed, every DATA and DATA_FRAG submessage of a user-defined writer keeps its
//! header, sequence number, fragment numbers and inline QoS, and its serialized payload is
//! replaced by its length. Discovery (builtin writers' DATA) and every other submessage are
//! kept as they are, so the capture still shows who talked to whom, what was acknowledged
//! and what was repaired.

/// Submessage ids this module looks into.
const DATA: u8 = 0x15;
const DATA_FRAG: u8 = 0x16;
/// Submessage flags.
const FLAG_E: u8 = 0x01;
const FLAG_Q: u8 = 0x02;
/// DATA's data (D) and key (K) flags: a serialized payload follows.
const DATA_FLAG_D: u8 = 0x04;
const DATA_FLAG_K: u8 = 0x08;
/// `octetsToInlineQos` counts from the end of this many bytes of the submessage body.
const OTIQ_BASE: usize = 4;
/// Bytes of the submessage body before the inline QoS: DATA and DATA_FRAG.
const DATA_FIXED: usize = 20;
const DATA_FRAG_FIXED: usize = 32;
/// `PID_SENTINEL`, the end of a parameter list.
const PID_SENTINEL: u16 = 0x0001;
/// What a payload is replaced by: an encapsulation header (DATA), then the length.
const ENCAPSULATION_LEN: usize = 4;

/// What [`remove_user_data`] did to one message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserDataRemoved {
    /// DATA and DATA_FRAG submessages whose payload was replaced.
    pub submessages: u32,
    /// Payload bytes removed (not counting the length words put in their place).
    pub bytes: u64,
    /// Bytes dropped from the end of a message that could not be parsed as RTPS
    /// submessages (so that no user data could hide in them); 0 for a well-formed message.
    pub unparsed_tail: u64,
}

impl UserDataRemoved {
    /// Whether anything was removed or dropped.
    pub fn any(&self) -> bool {
        self.submessages > 0 || self.unparsed_tail > 0
    }
}

/// Copies the RTPS message `msg` into `out` (cleared first) with user data removed.
///
/// The serialized payload of each DATA and DATA_FRAG submessage whose writer is not a
/// builtin entity (entity kind `0b11xx_xxxx`) is replaced by its length: a DATA keeps its
/// 4-byte encapsulation header and gets the payload's length after it; a DATA_FRAG's
/// fragment bytes become their length. The length is a 32-bit word in the submessage's
/// byte order; `octetsToNextHeader` is set to the new size (a last submessage that ran to
/// the end of the message keeps 0 only when it still does). Headers, inline QoS, fragment
/// numbers and sample sizes are kept, and so is every other submessage. A message that is
/// not RTPS, or whose submessages stop making sense part way, is kept up to the last whole
/// submessage and its tail counted in [`UserDataRemoved::unparsed_tail`]. Never panics;
/// does not allocate when `out` has the capacity of `msg.len()`.
pub fn remove_user_data(msg: &[u8], out: &mut Vec<u8>) -> UserDataRemoved {
    out.clear();
    let mut removed = UserDataRemoved::default();
    if msg.len() < 20 || &msg[..4] != b"RTPS" {
        removed.unparsed_tail = msg.len() as u64;
        return removed;
    }
    out.extend_from_slice(&msg[..20]);
    let mut pos = 20;
    while pos < msg.len() {
        let Some(header) = msg.get(pos..pos + 4) else {
            break;
        };
        let (id, flags) = (header[0], header[1]);
        let le = flags & FLAG_E != 0;
        let declared = usize::from(u16_at(header, 2, le));
        let body_start = pos + 4;
        let body_len = if declared == 0 && id != 0x01 && id != 0x09 {
            // PAD and INFO_TS may be empty; any other 0 means "to the end".
            msg.len() - body_start
        } else {
            declared
        };
        let Some(body) = msg.get(body_start..body_start + body_len) else {
            break;
        };
        let replaced = match id {
            DATA if flags & (DATA_FLAG_D | DATA_FLAG_K) != 0 => {
                strip_payload(body, flags, le, DATA_FIXED, ENCAPSULATION_LEN)
            }
            DATA_FRAG => strip_payload(body, flags, le, DATA_FRAG_FIXED, 0),
            _ => None,
        };
        match replaced {
            Some((kept, payload_len)) => {
                let new_len = kept + 4;
                let ends_message = declared == 0 && body_start + body_len == msg.len();
                let Ok(new_declared) = u16::try_from(new_len) else {
                    break;
                };
                let new_declared = if ends_message { 0 } else { new_declared };
                out.extend_from_slice(&[id, flags]);
                out.extend_from_slice(&u16_bytes(new_declared, le));
                out.extend_from_slice(&body[..kept]);
                let len32 = u32::try_from(payload_len).unwrap_or(u32::MAX);
                out.extend_from_slice(&if le {
                    len32.to_le_bytes()
                } else {
                    len32.to_be_bytes()
                });
                removed.submessages += 1;
                removed.bytes += payload_len as u64;
            }
            None => out.extend_from_slice(&msg[pos..body_start + body_len]),
        }
        pos = body_start + body_len;
    }
    removed.unparsed_tail = (msg.len() - pos) as u64;
    removed
}

/// For a DATA or DATA_FRAG body of a user writer: how many bytes to keep (fixed part,
/// inline QoS and `keep_of_payload` bytes of the payload) and the length of what is
/// removed. `None` for a builtin writer or a body that does not parse (kept as it is).
fn strip_payload(
    body: &[u8],
    flags: u8,
    le: bool,
    fixed: usize,
    keep_of_payload: usize,
) -> Option<(usize, usize)> {
    if body.len() < fixed {
        return None;
    }
    // writerId is body[8..12]; its last byte is the entity kind.
    if body[11] & 0xC0 == 0xC0 {
        return None;
    }
    let otiq = usize::from(u16_at(body, 2, le));
    let mut at = OTIQ_BASE.checked_add(otiq)?;
    if at < fixed || at > body.len() {
        return None;
    }
    if flags & FLAG_Q != 0 {
        at = skip_parameter_list(body, at, le)?;
    }
    let payload = body.len() - at;
    let keep = keep_of_payload.min(payload);
    Some((at + keep, payload - keep))
}

/// The offset just past the parameter list starting at `at` (its sentinel included).
fn skip_parameter_list(body: &[u8], mut at: usize, le: bool) -> Option<usize> {
    loop {
        let p = body.get(at..at + 4)?;
        let pid = u16_at(p, 0, le);
        let len = usize::from(u16_at(p, 2, le));
        at += 4;
        if pid == PID_SENTINEL {
            return Some(at);
        }
        at = at.checked_add(len).filter(|&e| e <= body.len())?;
    }
}

fn u16_at(b: &[u8], at: usize, le: bool) -> u16 {
    let v = [b[at], b[at + 1]];
    if le {
        u16::from_le_bytes(v)
    } else {
        u16::from_be_bytes(v)
    }
}

fn u16_bytes(v: u16, le: bool) -> [u8; 2] {
    if le {
        v.to_le_bytes()
    } else {
        v.to_be_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &[u8] = b"RTPS\x02\x05\x01\x0f\x01\x0f\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01";

    /// A little-endian DATA from a user writer (entity kind 0x02), with or without inline
    /// QoS, carrying `payload` (encapsulation header included).
    fn data(writer_kind: u8, inline_qos: bool, payload: &[u8], to_end: bool) -> Vec<u8> {
        let mut body = vec![0, 0, 16, 0];
        body.extend_from_slice(&[0, 0, 0, 0x07]);
        body.extend_from_slice(&[0, 0, 1, writer_kind]);
        body.extend_from_slice(&[0, 0, 0, 0, 5, 0, 0, 0]);
        let mut flags = FLAG_E | DATA_FLAG_D;
        if inline_qos {
            flags |= FLAG_Q;
            // PID_KEY_HASH (0x70), 16 bytes, then the sentinel.
            body.extend_from_slice(&[0x70, 0, 16, 0]);
            body.extend_from_slice(&[9; 16]);
            body.extend_from_slice(&[1, 0, 0, 0]);
        }
        body.extend_from_slice(payload);
        let mut s = vec![DATA, flags];
        let len = if to_end { 0 } else { body.len() as u16 };
        s.extend_from_slice(&len.to_le_bytes());
        s.extend_from_slice(&body);
        s
    }

    fn message(subs: &[Vec<u8>]) -> Vec<u8> {
        let mut m = HEADER.to_vec();
        for s in subs {
            m.extend_from_slice(s);
        }
        m
    }

    #[test]
    fn user_data_payload_becomes_its_length() {
        let mut payload = vec![0, 1, 0, 0];
        payload.extend_from_slice(&[0xAB; 100]);
        let heartbeat = vec![0x07, 0x01, 28, 0].into_iter().chain([0; 28]).collect();
        let msg = message(&[data(0x02, true, &payload, false), heartbeat]);
        let mut out = Vec::new();
        let r = remove_user_data(&msg, &mut out);
        assert_eq!(
            r,
            UserDataRemoved {
                submessages: 1,
                bytes: 100,
                unparsed_tail: 0
            }
        );
        assert!(!out.windows(2).any(|w| w == [0xAB, 0xAB]));
        // header + DATA (4 + 20 + 24 inline QoS + 4 encapsulation + 4 length) + HEARTBEAT
        assert_eq!(out.len(), 20 + 56 + 32);
        assert_eq!(u16::from_le_bytes([out[22], out[23]]), 52);
        assert_eq!(&out[20 + 48..20 + 52], &[0, 1, 0, 0]);
        assert_eq!(&out[20 + 52..20 + 56], &100u32.to_le_bytes());
        assert_eq!(out[20 + 56], 0x07);
    }

    #[test]
    fn builtin_writers_and_other_submessages_are_kept() {
        let msg = message(&[data(0xC2, false, &[0, 3, 0, 0, 1, 2, 3, 4], false)]);
        let mut out = Vec::new();
        let r = remove_user_data(&msg, &mut out);
        assert!(!r.any());
        assert_eq!(out, msg);
    }

    #[test]
    fn a_last_submessage_running_to_the_end_still_does() {
        let mut payload = vec![0, 1, 0, 0];
        payload.extend_from_slice(&[0xCD; 33]);
        let msg = message(&[data(0x03, false, &payload, true)]);
        let mut out = Vec::new();
        let r = remove_user_data(&msg, &mut out);
        assert_eq!(r.bytes, 33);
        assert_eq!(&out[22..24], &[0, 0]);
        assert_eq!(out.len(), 20 + 4 + 20 + 8);
    }

    #[test]
    fn data_frag_fragment_bytes_become_their_length() {
        // big-endian DATA_FRAG: fixed part, no inline QoS, 64 fragment bytes
        let mut body = vec![0, 0, 0, 28];
        body.extend_from_slice(&[0, 0, 0, 0x07, 0, 0, 1, 0x02]);
        body.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
        body.extend_from_slice(&[0, 0, 0, 1, 0, 1, 0, 64, 0, 0, 0, 200]);
        body.extend_from_slice(&[0xEE; 64]);
        let mut s = vec![DATA_FRAG, 0];
        s.extend_from_slice(&(body.len() as u16).to_be_bytes());
        s.extend_from_slice(&body);
        let msg = message(&[s]);
        let mut out = Vec::new();
        let r = remove_user_data(&msg, &mut out);
        assert_eq!((r.submessages, r.bytes), (1, 64));
        assert_eq!(out.len(), 20 + 4 + 32 + 4);
        assert_eq!(&out[out.len() - 4..], &64u32.to_be_bytes());
        assert_eq!(u16::from_be_bytes([out[22], out[23]]), 36);
    }

    #[test]
    fn garbage_is_dropped_not_copied() {
        let mut out = Vec::new();
        let r = remove_user_data(b"not rtps at all, definitely not", &mut out);
        assert!(out.is_empty());
        assert_eq!(r.unparsed_tail, 31);
        // a submessage claiming more than there is: the header is kept, the rest dropped
        let mut msg = HEADER.to_vec();
        msg.extend_from_slice(&[DATA, 0x05, 0xFF, 0x00, 1, 2, 3]);
        let r = remove_user_data(&msg, &mut out);
        assert_eq!(out, HEADER);
        assert_eq!(r.unparsed_tail, 7);
    }

    #[test]
    fn never_panics_on_any_prefix_or_corruption() {
        let mut payload = vec![0, 1, 0, 0];
        payload.extend_from_slice(&[0x11; 40]);
        let msg = message(&[data(0x02, true, &payload, false)]);
        let mut out = Vec::new();
        for cut in 0..=msg.len() {
            remove_user_data(&msg[..cut], &mut out);
        }
        for i in 20..msg.len() {
            for x in [0x01, 0x80, 0xFF] {
                let mut m = msg.clone();
                m[i] ^= x;
                let r = remove_user_data(&m, &mut out);
                assert!(out.len() <= m.len() + 4 * r.submessages as usize);
            }
        }
    }
}
