//! Reading UDP datagrams back out of pcap/pcapng files (test support).
//!
//! Supported link types: Ethernet (1, with 802.1Q tags), BSD loopback
//! (0), raw IP (12, 14, 101), IPv4 (228), Linux cooked v1 (113) and v2
//! (276), and Wireshark exported PDUs (252) for the `rtps` dissector with
//! IPv4 address and port tags. Only IPv4/UDP is extracted; everything else is listed in
//! [`CaptureContents::skipped`] with a reason. IPv4 fragments are
//! reassembled when every fragment of a datagram is present; fragments
//! that never complete are reported as skipped.

use std::collections::HashMap;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgParser};
use pcap_file::PcapError;

use crate::{Direction, ReadError};

const LINKTYPE_WIRESHARK_UPPER_PDU: u32 = 252;

/// One UDP datagram found in a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedDatagram {
    /// 1-based frame number, as tshark's `frame.number`; for a datagram
    /// reassembled from IPv4 fragments, the frame of its last fragment.
    pub frame: u32,
    /// Capture timestamp.
    pub ts: SystemTime,
    /// Source address and port.
    pub src: SocketAddrV4,
    /// Destination address and port.
    pub dst: SocketAddrV4,
    /// The UDP payload (e.g. one RTPS message).
    pub payload: Vec<u8>,
    /// pcapng interface index (0 for classic pcap).
    pub interface: u32,
    /// pcapng `epb_flags` direction, if recorded.
    pub direction: Option<Direction>,
    /// pcapng `opt_comment`, if any.
    pub comment: Option<String>,
}

/// Why a frame produced no datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// The interface's link type is not supported.
    UnsupportedLinkType(u32),
    /// The frame does not carry IPv4 (e.g. IPv6, ARP); the value is the
    /// ethertype or IP version seen.
    NotIpv4(u16),
    /// IPv4 carrying another protocol than UDP (protocol number).
    NotUdp(u8),
    /// The frame is shorter than its headers say (snap length or corruption).
    Truncated,
    /// A header field is invalid (IPv4 header length, UDP length).
    BadHeader,
    /// An IPv4 fragment whose datagram never completed.
    IncompleteFragment,
    /// A packet block refers to an interface that was never described.
    UnknownInterface(u32),
    /// An exported PDU (link type 252) for another dissector than `rtps`.
    UnsupportedExportedPdu,
    /// The timestamp (ticks plus the interface's `if_tsoffset`) is beyond
    /// what [`SystemTime`] can represent.
    BadTimestamp,
}

/// A frame that produced no datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkippedFrame {
    /// 1-based frame number.
    pub frame: u32,
    /// Why it was skipped.
    pub reason: SkipReason,
}

/// Everything [`read_udp_payloads`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureContents {
    /// UDP datagrams in capture order.
    pub datagrams: Vec<CapturedDatagram>,
    /// Frames that yielded no datagram.
    pub skipped: Vec<SkippedFrame>,
}

/// Reads all IPv4/UDP datagrams from a pcap or pcapng file.
pub fn read_udp_payloads(path: impl AsRef<Path>) -> Result<CaptureContents, ReadError> {
    parse_udp_payloads(&std::fs::read(path)?)
}

/// Reads all IPv4/UDP datagrams from a pcap or pcapng stream.
pub fn read_udp_payloads_from(mut reader: impl Read) -> Result<CaptureContents, ReadError> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes)?;
    parse_udp_payloads(&bytes)
}

/// Extracts all IPv4/UDP datagrams from the bytes of a pcap or pcapng file.
///
/// Never panics on malformed input; structural damage is an error, frames it
/// cannot use are listed in [`CaptureContents::skipped`].
pub fn parse_udp_payloads(bytes: &[u8]) -> Result<CaptureContents, ReadError> {
    let magic = match bytes.get(0..4) {
        Some(m) => u32::from_be_bytes([m[0], m[1], m[2], m[3]]),
        None => {
            return Err(ReadError::Truncated {
                offset: 0,
                needed: 4,
                have: bytes.len(),
            })
        }
    };
    let mut ex = Extractor::default();
    match magic {
        0x0A0D_0D0A => parse_pcapng(bytes, &mut ex)?,
        0xA1B2_C3D4 | 0xD4C3_B2A1 | 0xA1B2_3C4D | 0x4D3C_B2A1 => parse_pcap(bytes, &mut ex)?,
        _ => return Err(ReadError::UnknownFormat { magic }),
    }
    Ok(ex.finish())
}

fn parse_pcap(bytes: &[u8], ex: &mut Extractor) -> Result<(), ReadError> {
    if bytes.len() < 24 {
        return Err(ReadError::Truncated {
            offset: 0,
            needed: 24,
            have: bytes.len(),
        });
    }
    let (big, nanos) = match [bytes[0], bytes[1], bytes[2], bytes[3]] {
        [0xA1, 0xB2, 0xC3, 0xD4] => (true, false),
        [0xD4, 0xC3, 0xB2, 0xA1] => (false, false),
        [0xA1, 0xB2, 0x3C, 0x4D] => (true, true),
        _ => (false, true),
    };
    let rd = |b: &[u8], off: usize| {
        let a = [b[off], b[off + 1], b[off + 2], b[off + 3]];
        if big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    };
    // The upper bits of the link-type field may carry FCS information.
    let linktype = rd(bytes, 20) & 0x0fff_ffff;
    let mut off = 24;
    while off < bytes.len() {
        let rest = &bytes[off..];
        if rest.len() < 16 {
            return Err(ReadError::Truncated {
                offset: off,
                needed: 16,
                have: rest.len(),
            });
        }
        let secs = u64::from(rd(rest, 0));
        let frac = u64::from(rd(rest, 4));
        let incl = rd(rest, 8) as usize;
        let data = match rest.get(16..16 + incl) {
            Some(d) => d,
            None => {
                return Err(ReadError::Truncated {
                    offset: off,
                    needed: 16 + incl,
                    have: rest.len(),
                })
            }
        };
        let sub = if nanos {
            frac
        } else {
            frac.saturating_mul(1000)
        };
        let ts = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(sub);
        ex.frame(
            linktype,
            data,
            Meta {
                ts,
                interface: 0,
                direction: None,
                comment: None,
            },
        );
        off += 16 + incl;
    }
    Ok(())
}

fn parse_pcapng(bytes: &[u8], ex: &mut Extractor) -> Result<(), ReadError> {
    let malformed = |rest: &[u8], source: PcapError| ReadError::Malformed {
        offset: bytes.len() - rest.len(),
        source,
    };
    let (mut rest, mut parser) = PcapNgParser::new(bytes).map_err(|e| malformed(bytes, e))?;
    while !rest.is_empty() {
        let (next, block) = parser.next_block(rest).map_err(|e| malformed(rest, e))?;
        match block {
            Block::EnhancedPacket(epb) => {
                let mut direction = None;
                let mut comment = None;
                for opt in &epb.options {
                    match opt {
                        EnhancedPacketOption::Flags(f) => direction = Direction::from_epb_flags(*f),
                        EnhancedPacketOption::Comment(c) => comment = Some(c.to_string()),
                        _ => {}
                    }
                }
                // pcap-file stores the raw tick count in `timestamp` as nanoseconds.
                let ticks = u64::try_from(epb.timestamp.as_nanos()).unwrap_or(u64::MAX);
                match parser.interfaces().get(epb.interface_id as usize) {
                    Some(idb) => {
                        let Some(ts) = ticks_to_time(ticks, &idb.options) else {
                            ex.skip(SkipReason::BadTimestamp);
                            rest = next;
                            continue;
                        };
                        let linktype = u32::from(idb.linktype);
                        ex.frame(
                            linktype,
                            &epb.data,
                            Meta {
                                ts,
                                interface: epb.interface_id,
                                direction,
                                comment,
                            },
                        );
                    }
                    None => ex.skip(SkipReason::UnknownInterface(epb.interface_id)),
                }
            }
            Block::SimplePacket(spb) => match parser.interfaces().first() {
                Some(idb) => {
                    let linktype = u32::from(idb.linktype);
                    ex.frame(
                        linktype,
                        &spb.data,
                        Meta {
                            ts: UNIX_EPOCH,
                            interface: 0,
                            direction: None,
                            comment: None,
                        },
                    );
                }
                None => ex.skip(SkipReason::UnknownInterface(0)),
            },
            Block::Packet(pb) => {
                let iface = u32::from(pb.interface_id);
                match parser.interfaces().get(usize::from(pb.interface_id)) {
                    Some(idb) => {
                        let Some(ts) = ticks_to_time(pb.timestamp, &idb.options) else {
                            ex.skip(SkipReason::BadTimestamp);
                            rest = next;
                            continue;
                        };
                        let linktype = u32::from(idb.linktype);
                        ex.frame(
                            linktype,
                            &pb.data,
                            Meta {
                                ts,
                                interface: iface,
                                direction: None,
                                comment: None,
                            },
                        );
                    }
                    None => ex.skip(SkipReason::UnknownInterface(iface)),
                }
            }
            _ => {}
        }
        rest = next;
    }
    Ok(())
}

/// Converts an EPB tick count to wall-clock time using `if_tsresol` and
/// `if_tsoffset` (default resolution: microseconds); `None` if the result is
/// beyond what [`SystemTime`] represents (both values come from the file).
fn ticks_to_time(ticks: u64, opts: &[InterfaceDescriptionOption<'_>]) -> Option<SystemTime> {
    let mut resol = 6u8;
    let mut offset_secs = 0u64;
    for o in opts {
        match o {
            InterfaceDescriptionOption::IfTsResol(r) => resol = *r,
            InterfaceDescriptionOption::IfTsOffset(s) => offset_secs = *s,
            _ => {}
        }
    }
    let ticks = u128::from(ticks);
    let nanos: u128 = if resol & 0x80 == 0 {
        let exp = u32::from(resol);
        if exp <= 9 {
            ticks * 10u128.pow(9 - exp)
        } else {
            ticks / 10u128.checked_pow(exp - 9).unwrap_or(u128::MAX)
        }
    } else {
        let exp = u32::from(resol & 0x7f);
        (ticks * 1_000_000_000).checked_shr(exp).unwrap_or(0)
    };
    let nanos = u64::try_from(nanos).unwrap_or(u64::MAX);
    Duration::from_secs(offset_secs)
        .checked_add(Duration::from_nanos(nanos))
        .and_then(|d| UNIX_EPOCH.checked_add(d))
}

struct Meta {
    ts: SystemTime,
    interface: u32,
    direction: Option<Direction>,
    comment: Option<String>,
}

/// Key of an IPv4 datagram under reassembly.
type FragKey = (Ipv4Addr, Ipv4Addr, u16);

/// Fragments collected so far for one IPv4 datagram.
#[derive(Default)]
struct Pending {
    /// (byte offset, data, frame number, more-fragments flag)
    parts: Vec<(usize, Vec<u8>, u32, bool)>,
}

#[derive(Default)]
struct Extractor {
    frame_no: u32,
    out: CaptureContents,
    pending: HashMap<FragKey, Pending>,
}

impl Extractor {
    fn skip(&mut self, reason: SkipReason) {
        self.frame_no += 1;
        self.out.skipped.push(SkippedFrame {
            frame: self.frame_no,
            reason,
        });
    }

    fn frame(&mut self, linktype: u32, data: &[u8], meta: Meta) {
        self.frame_no += 1;
        if let Err(reason) = self.frame_inner(linktype, data, meta) {
            self.out.skipped.push(SkippedFrame {
                frame: self.frame_no,
                reason,
            });
        }
    }

    fn frame_inner(&mut self, linktype: u32, data: &[u8], meta: Meta) -> Result<(), SkipReason> {
        if linktype == LINKTYPE_WIRESHARK_UPPER_PDU {
            return self.exported_pdu(data, meta);
        }
        let ip = link_payload(linktype, data)?;
        let v = ip.first().ok_or(SkipReason::Truncated)? >> 4;
        if v != 4 {
            return Err(SkipReason::NotIpv4(u16::from(v)));
        }
        if ip.len() < 20 {
            return Err(SkipReason::Truncated);
        }
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        if ihl < 20 || total < ihl {
            return Err(SkipReason::BadHeader);
        }
        if ip.len() < total {
            return Err(SkipReason::Truncated);
        }
        if ip[9] != 17 {
            return Err(SkipReason::NotUdp(ip[9]));
        }
        let id = u16::from_be_bytes([ip[4], ip[5]]);
        let flags_frag = u16::from_be_bytes([ip[6], ip[7]]);
        let more = flags_frag & 0x2000 != 0;
        let frag_off = usize::from(flags_frag & 0x1fff) * 8;
        let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        let body = &ip[ihl..total];
        if !more && frag_off == 0 {
            return self.udp(src, dst, body, meta);
        }
        self.fragment((src, dst, id), frag_off, body, more, meta)
    }

    /// An exported PDU for the `rtps` dissector, addressed by IPv4/port tags.
    fn exported_pdu(&mut self, data: &[u8], meta: Meta) -> Result<(), SkipReason> {
        let mut rest = data;
        let mut dissector: &[u8] = &[];
        let (mut src_ip, mut dst_ip) = (None, None);
        let (mut src_port, mut dst_port) = (None, None);
        loop {
            let hdr = rest.get(0..4).ok_or(SkipReason::Truncated)?;
            let code = u16::from_be_bytes([hdr[0], hdr[1]]);
            let len = usize::from(u16::from_be_bytes([hdr[2], hdr[3]]));
            let value = rest.get(4..4 + len).ok_or(SkipReason::Truncated)?;
            rest = &rest[4 + len..];
            let ipv4 = |v: &[u8]| v.get(0..4).map(|a| Ipv4Addr::new(a[0], a[1], a[2], a[3]));
            let port = |v: &[u8]| {
                v.get(0..4)
                    .and_then(|p| u16::try_from(u32::from_be_bytes([p[0], p[1], p[2], p[3]])).ok())
            };
            match code {
                0 => break,
                12 => dissector = value,
                20 => src_ip = ipv4(value),
                21 => dst_ip = ipv4(value),
                25 => src_port = port(value),
                26 => dst_port = port(value),
                _ => {}
            }
        }
        // The name may be NUL-padded.
        let name_end = dissector
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(dissector.len());
        if &dissector[..name_end] != b"rtps" {
            return Err(SkipReason::UnsupportedExportedPdu);
        }
        match (src_ip, dst_ip, src_port, dst_port) {
            (Some(si), Some(di), Some(sp), Some(dp)) => {
                self.push(
                    SocketAddrV4::new(si, sp),
                    SocketAddrV4::new(di, dp),
                    rest,
                    meta,
                );
                Ok(())
            }
            _ => Err(SkipReason::NotIpv4(0)),
        }
    }

    fn push(&mut self, src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8], meta: Meta) {
        self.out.datagrams.push(CapturedDatagram {
            frame: self.frame_no,
            ts: meta.ts,
            src,
            dst,
            payload: payload.to_vec(),
            interface: meta.interface,
            direction: meta.direction,
            comment: meta.comment,
        });
    }

    fn udp(
        &mut self,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        udp: &[u8],
        meta: Meta,
    ) -> Result<(), SkipReason> {
        if udp.len() < 8 {
            return Err(SkipReason::Truncated);
        }
        let sport = u16::from_be_bytes([udp[0], udp[1]]);
        let dport = u16::from_be_bytes([udp[2], udp[3]]);
        let len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
        if len < 8 || len > udp.len() {
            return Err(SkipReason::BadHeader);
        }
        self.push(
            SocketAddrV4::new(src, sport),
            SocketAddrV4::new(dst, dport),
            &udp[8..len],
            meta,
        );
        Ok(())
    }

    fn fragment(
        &mut self,
        key: FragKey,
        offset: usize,
        body: &[u8],
        more: bool,
        meta: Meta,
    ) -> Result<(), SkipReason> {
        let entry = self.pending.entry(key).or_default();
        entry
            .parts
            .push((offset, body.to_vec(), self.frame_no, more));
        // Complete when sorted parts are contiguous from 0 to a last fragment.
        entry.parts.sort_by_key(|p| p.0);
        let mut end = 0usize;
        let mut complete = false;
        for (off, data, _, more) in &entry.parts {
            if *off > end {
                break;
            }
            end = end.max(off + data.len());
            if !more {
                complete = end == off + data.len();
                break;
            }
        }
        if !complete {
            return Ok(());
        }
        let done = self.pending.remove(&key).unwrap_or_default();
        let mut datagram = vec![0u8; end];
        for (off, data, _, _) in &done.parts {
            if let Some(dst) = datagram.get_mut(*off..off + data.len()) {
                dst.copy_from_slice(data);
            }
        }
        self.udp(key.0, key.1, &datagram, meta)
    }

    fn finish(mut self) -> CaptureContents {
        for (_, p) in self.pending.drain() {
            for (_, _, frame, _) in p.parts {
                self.out.skipped.push(SkippedFrame {
                    frame,
                    reason: SkipReason::IncompleteFragment,
                });
            }
        }
        self.out.skipped.sort_by_key(|s| s.frame);
        self.out
    }
}

/// Strips the link-layer header, returning the network-layer packet.
fn link_payload(linktype: u32, data: &[u8]) -> Result<&[u8], SkipReason> {
    let proto_ok = |proto: u16, rest: &'_ [u8]| -> Result<(), SkipReason> {
        if proto == 0x0800 {
            Ok(())
        } else if proto == 0x86dd {
            Err(SkipReason::NotIpv4(6))
        } else if rest.is_empty() {
            Err(SkipReason::Truncated)
        } else {
            Err(SkipReason::NotIpv4(proto))
        }
    };
    let be16 = |d: &[u8], off: usize| {
        d.get(off..off + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or(SkipReason::Truncated)
    };
    match linktype {
        // Ethernet, skipping 802.1Q / 802.1ad tags.
        1 => {
            let mut off = 12;
            let mut ty = be16(data, off)?;
            while ty == 0x8100 || ty == 0x88a8 {
                off += 4;
                ty = be16(data, off)?;
            }
            let rest = &data[off + 2..];
            proto_ok(ty, rest)?;
            Ok(rest)
        }
        // BSD loopback: 4-byte address family in the writer's byte order.
        0 => {
            let fam = data.get(0..4).ok_or(SkipReason::Truncated)?;
            let le = u32::from_le_bytes([fam[0], fam[1], fam[2], fam[3]]);
            let be = u32::from_be_bytes([fam[0], fam[1], fam[2], fam[3]]);
            if le == 2 || be == 2 {
                Ok(&data[4..])
            } else {
                Err(SkipReason::NotIpv4(le.min(be).min(0xffff) as u16))
            }
        }
        12 | 14 | 101 | 228 => Ok(data),
        // Linux cooked capture v1: protocol at bytes 14..16.
        113 => {
            let ty = be16(data, 14)?;
            let rest = &data[16..];
            proto_ok(ty, rest)?;
            Ok(rest)
        }
        // Linux cooked capture v2: protocol at bytes 0..2, 20-byte header.
        276 => {
            let ty = be16(data, 0)?;
            let rest = data.get(20..).ok_or(SkipReason::Truncated)?;
            proto_ok(ty, rest)?;
            Ok(rest)
        }
        other => Err(SkipReason::UnsupportedLinkType(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CaptureWriter, PcapWriter, Timestamp};

    fn sa(a: [u8; 4], p: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::from(a), p)
    }

    #[test]
    fn pcapng_round_trip_with_metadata() {
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        let _unused = w.add_interface("udp0").unwrap();
        let i = w.add_interface("udp1").unwrap();
        let ts = Timestamp::from_nanos(1_700_000_000_987_654_321);
        w.write_udp(
            i,
            ts,
            sa([127, 0, 0, 1], 40000),
            sa([239, 255, 0, 1], 7400),
            b"RTPS-a",
            Direction::Outbound,
            Some("note"),
        )
        .unwrap();
        w.write_udp(
            i,
            ts,
            sa([127, 0, 0, 2], 7410),
            sa([127, 0, 0, 1], 7411),
            b"RTPS-b",
            Direction::Inbound,
            None,
        )
        .unwrap();
        let c = parse_udp_payloads(&w.into_inner().unwrap()).unwrap();
        assert!(c.skipped.is_empty());
        assert_eq!(c.datagrams.len(), 2);
        let a = &c.datagrams[0];
        assert_eq!(a.frame, 1);
        assert_eq!(a.ts, ts.to_system_time());
        assert_eq!(a.src, sa([127, 0, 0, 1], 40000));
        assert_eq!(a.dst, sa([239, 255, 0, 1], 7400));
        assert_eq!(a.payload, b"RTPS-a");
        assert_eq!(a.interface, 1);
        assert_eq!(a.direction, Some(Direction::Outbound));
        assert_eq!(a.comment.as_deref(), Some("note"));
        let b = &c.datagrams[1];
        assert_eq!(b.frame, 2);
        assert_eq!(b.direction, Some(Direction::Inbound));
        assert_eq!(b.comment, None);
        assert_eq!(b.payload, b"RTPS-b");
    }

    #[test]
    fn pcap_round_trip_and_fragment_reassembly() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.set_mtu(1500).unwrap();
        let big: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
        let ts = Timestamp::from_nanos(1_600_000_000_000_000_001);
        w.write_udp(ts, sa([127, 0, 0, 1], 1), sa([127, 0, 0, 1], 2), &big)
            .unwrap();
        w.write_udp(ts, sa([127, 0, 0, 1], 3), sa([127, 0, 0, 1], 4), b"small")
            .unwrap();
        let c = parse_udp_payloads(&w.into_inner().unwrap()).unwrap();
        assert!(c.skipped.is_empty(), "{:?}", c.skipped);
        assert_eq!(c.datagrams.len(), 2);
        assert_eq!(c.datagrams[0].payload, big);
        // 5008 bytes in 1480-byte fragments: frames 1..=4.
        assert_eq!(c.datagrams[0].frame, 4);
        assert_eq!(c.datagrams[0].ts, ts.to_system_time());
        assert_eq!(c.datagrams[1].frame, 5);
        assert_eq!(c.datagrams[1].payload, b"small");
    }

    #[test]
    fn missing_fragment_is_reported() {
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        let i = w.add_interface("lo").unwrap();
        w.set_mtu(576).unwrap();
        let a = sa([127, 0, 0, 1], 9);
        w.write_udp(
            i,
            Timestamp::from_nanos(1),
            a,
            a,
            &[1u8; 1200],
            Direction::Inbound,
            None,
        )
        .unwrap();
        let bytes = w.into_inner().unwrap();
        // Drop the second of three EPBs by re-writing the file without it.
        let mut blocks = Vec::new();
        let mut off = 0;
        while off < bytes.len() {
            let len = u32::from_le_bytes(bytes[off + 4..off + 8].try_into().unwrap()) as usize;
            blocks.push(&bytes[off..off + len]);
            off += len;
        }
        assert_eq!(blocks.len(), 2 + 3);
        let cut: Vec<u8> = [blocks[0], blocks[1], blocks[2], blocks[4]].concat();
        let c = parse_udp_payloads(&cut).unwrap();
        assert!(c.datagrams.is_empty());
        assert_eq!(
            c.skipped,
            vec![
                SkippedFrame {
                    frame: 1,
                    reason: SkipReason::IncompleteFragment
                },
                SkippedFrame {
                    frame: 2,
                    reason: SkipReason::IncompleteFragment
                },
            ]
        );
    }

    #[test]
    fn link_types() {
        // An IPv4/UDP packet taken from a synthesized Ethernet frame.
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let a = sa([10, 1, 2, 3], 7400);
        w.write_udp(Timestamp::from_nanos(0), a, a, b"xyz").unwrap();
        let file = w.into_inner().unwrap();
        let eth = &file[24 + 16..];
        let ip = &eth[14..];
        assert_eq!(link_payload(1, eth).unwrap(), ip);
        assert_eq!(link_payload(101, ip).unwrap(), ip);
        let mut sll = vec![0u8; 14];
        sll.extend_from_slice(&[0x08, 0x00]);
        sll.extend_from_slice(ip);
        assert_eq!(link_payload(113, &sll).unwrap(), ip);
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend_from_slice(&[0u8; 18]);
        sll2.extend_from_slice(ip);
        assert_eq!(link_payload(276, &sll2).unwrap(), ip);
        let mut null = 2u32.to_le_bytes().to_vec();
        null.extend_from_slice(ip);
        assert_eq!(link_payload(0, &null).unwrap(), ip);
        let mut vlan = eth[..12].to_vec();
        vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        vlan.extend_from_slice(&eth[12..]);
        assert_eq!(link_payload(1, &vlan).unwrap(), ip);
        let mut v6 = eth.to_vec();
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(link_payload(1, &v6), Err(SkipReason::NotIpv4(6)));
        assert_eq!(
            link_payload(147, eth),
            Err(SkipReason::UnsupportedLinkType(147))
        );
        assert_eq!(link_payload(113, &sll[..10]), Err(SkipReason::Truncated));
    }

    #[test]
    fn exported_pdu_for_other_dissectors_is_skipped() {
        let mut pdu = Vec::new();
        for (code, val) in [(12u16, &b"rtpsvt\0\0"[..]), (0, &[][..])] {
            pdu.extend_from_slice(&code.to_be_bytes());
            pdu.extend_from_slice(&(val.len() as u16).to_be_bytes());
            pdu.extend_from_slice(val);
        }
        pdu.extend_from_slice(b"RTPS");
        let mut ex = Extractor::default();
        ex.frame(
            252,
            &pdu,
            Meta {
                ts: UNIX_EPOCH,
                interface: 0,
                direction: None,
                comment: None,
            },
        );
        // Truncated tag list.
        ex.frame(
            252,
            &pdu[..6],
            Meta {
                ts: UNIX_EPOCH,
                interface: 0,
                direction: None,
                comment: None,
            },
        );
        let c = ex.finish();
        assert!(c.datagrams.is_empty());
        assert_eq!(
            c.skipped.iter().map(|s| s.reason).collect::<Vec<_>>(),
            vec![SkipReason::UnsupportedExportedPdu, SkipReason::Truncated]
        );
    }

    #[test]
    fn tsresol_conversion() {
        let us = [InterfaceDescriptionOption::IfTsResol(6)];
        assert_eq!(
            ticks_to_time(1_500_000, &us),
            Some(UNIX_EPOCH + Duration::from_millis(1500))
        );
        assert_eq!(
            ticks_to_time(3, &[]),
            Some(UNIX_EPOCH + Duration::from_micros(3))
        );
        let bin = [InterfaceDescriptionOption::IfTsResol(0x80 | 10)];
        assert_eq!(
            ticks_to_time(1024, &bin),
            Some(UNIX_EPOCH + Duration::from_secs(1))
        );
        let off = [
            InterfaceDescriptionOption::IfTsResol(9),
            InterfaceDescriptionOption::IfTsOffset(10),
        ];
        assert_eq!(
            ticks_to_time(5, &off),
            Some(UNIX_EPOCH + Duration::new(10, 5))
        );
    }

    /// A pcapng file whose interface block carries an `if_tsoffset` (or
    /// ticks) too large for `SystemTime`.
    fn pcapng_with_ts_offset(offset_secs: u64, ticks: u64) -> Vec<u8> {
        use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
        use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
        use pcap_file::pcapng::PcapNgWriter;
        use pcap_file::DataLink;
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let a = sa([10, 1, 2, 3], 7400);
        w.write_udp(Timestamp::from_nanos(0), a, a, b"xyz").unwrap();
        let frame = w.into_inner().unwrap()[24 + 16..].to_vec();
        let mut ng = PcapNgWriter::new(Vec::new()).unwrap();
        ng.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![
                InterfaceDescriptionOption::IfTsResol(9),
                InterfaceDescriptionOption::IfTsOffset(offset_secs),
            ],
        })
        .unwrap();
        ng.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_nanos(ticks),
            original_len: frame.len() as u32,
            data: frame.into(),
            options: vec![],
        })
        .unwrap();
        ng.into_inner()
    }

    #[test]
    fn out_of_range_timestamps_are_skipped_not_a_panic() {
        let ok = parse_udp_payloads(&pcapng_with_ts_offset(10, 5)).unwrap();
        assert_eq!(ok.datagrams.len(), 1);
        assert_eq!(ok.datagrams[0].ts, UNIX_EPOCH + Duration::new(10, 5));
        for (offset, ticks) in [(u64::MAX, 0), (u64::MAX / 2, u64::MAX), (1 << 63, 0)] {
            let c = parse_udp_payloads(&pcapng_with_ts_offset(offset, ticks)).unwrap();
            assert!(c.datagrams.is_empty(), "{offset} {ticks}");
            assert_eq!(
                c.skipped,
                vec![SkippedFrame {
                    frame: 1,
                    reason: SkipReason::BadTimestamp
                }]
            );
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(matches!(
            parse_udp_payloads(b"ab"),
            Err(ReadError::Truncated { .. })
        ));
        assert!(matches!(
            parse_udp_payloads(b"abcdefgh"),
            Err(ReadError::UnknownFormat { magic: 0x6162_6364 })
        ));
        let mut pcap = PcapWriter::new(Vec::new()).unwrap().into_inner().unwrap();
        pcap.extend_from_slice(&[0u8; 10]);
        assert!(matches!(
            parse_udp_payloads(&pcap),
            Err(ReadError::Truncated { offset: 24, .. })
        ));
        let mut ng = CaptureWriter::new(Vec::new())
            .unwrap()
            .into_inner()
            .unwrap();
        ng.extend_from_slice(&[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        assert!(matches!(
            parse_udp_payloads(&ng),
            Err(ReadError::Malformed { .. })
        ));
    }
}
