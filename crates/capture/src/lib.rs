//! Packet capture for FerroDDS: write RTPS datagrams to pcapng (default) or
//! classic pcap files that Wireshark/tshark decode as RTPS, and read UDP
//! datagrams back out of captures (for golden-byte tests).
//!
//! # Contract
//!
//! * Every datagram becomes an Ethernet II frame with synthetic IPv4 and UDP
//!   headers carrying the real addresses and ports (Wireshark derives the
//!   DDS domain and participant from the destination port). The IPv4 header
//!   checksum is always correct; the UDP checksum is correct, or 0 ("none",
//!   legal on IPv4) when a writer is told not to compute it
//!   ([`CaptureWriter::set_udp_checksums`]). Multicast destinations
//!   get the RFC 1112 MAC (`01:00:5e` + low 23 bits of the group), other
//!   addresses a locally administered unicast MAC `02:00:a:b:c:d`.
//! * Payloads up to [`MAX_UNFRAGMENTED_UDP_PAYLOAD`] bytes fit one frame
//!   (with the default MTU of 65535). Larger payloads, up to
//!   [`MAX_UDP_PAYLOAD`] (the UDP length field limit), are written as IPv4
//!   fragments with correct offsets and MF flags, which tshark reassembles.
//!   A smaller MTU can be set to fragment earlier. In pcapng, larger
//!   messages (TCP, shared memory), up to [`MAX_EXPORTED_PDU_PAYLOAD`], are
//!   written as Wireshark exported PDUs (link type 252, dissector `rtps`) on
//!   a companion interface; classic pcap rejects them with
//!   [`CaptureError::DatagramTooLarge`].
//! * Timestamps are nanoseconds since the Unix epoch ([`Timestamp`]), taken
//!   from the caller (`SystemTime`, `Duration` or raw nanoseconds); the
//!   `*_now` methods use [`std::time::SystemTime::now`].
//! * pcapng files ([`CaptureWriter`]) are little-endian, have one interface
//!   block per [`CaptureWriter::add_interface`] call (link type Ethernet,
//!   nanosecond resolution) and record the [`Direction`] in `epb_flags` and
//!   an optional comment in `opt_comment`. Classic pcap ([`PcapWriter`]) uses
//!   the nanosecond magic `0xa1b23c4d`.
//! * A recording thread can encode a datagram's packet block itself
//!   ([`encode_udp_packet_block`], the bytes a writer with UDP checksums off
//!   writes) and leave a writer thread to write runs of them as they are
//!   ([`CaptureWriter::write_encoded_blocks`]).
//! * Writers reuse internal scratch buffers: after the first packet, writing
//!   does not allocate. They do no buffering of their own, so wrap files in a
//!   [`std::io::BufWriter`].
//! * The reader ([`read_udp_payloads`], [`parse_udp_payloads`]) accepts pcap
//!   and pcapng with Ethernet, raw IP, BSD loopback, Linux cooked (v1, v2)
//!   and `rtps` exported-PDU link types, reassembles complete IPv4 fragment sets, reports frames it
//!   cannot use in [`CaptureContents::skipped`], and never panics on
//!   malformed input.
//! * [`remove_user_data`] rewrites an RTPS message for a capture that must not carry the
//!   system's data: user writers' DATA and DATA_FRAG payloads become their length, every
//!   header, inline QoS and other submessage stays, tshark still decodes it.
//! * `testing` (feature `testing`, off by default) runs `tshark` over a
//!   capture and reports per-packet protocol, RTPS submessage, malformed and
//!   expert information; it is test support, not part of the capture path
//!   or of the production API.
//!
//! # Example
//!
//! ```
//! use std::net::{Ipv4Addr, SocketAddrV4};
//! use std::time::SystemTime;
//! use ferrodds_capture::{parse_udp_payloads, CaptureWriter, Direction};
//!
//! let mut w = CaptureWriter::new(Vec::new())?;
//! let udp = w.add_interface("udp4")?;
//! let src = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410);
//! let dst = SocketAddrV4::new(Ipv4Addr::new(239, 255, 0, 1), 7400);
//! let rtps = b"RTPS\x02\x05\x00\x00 (a real message goes here)";
//! w.write_udp(udp, SystemTime::now(), src, dst, rtps, Direction::Outbound, Some("SPDP"))?;
//! let file = w.into_inner()?;
//!
//! let back = parse_udp_payloads(&file)?;
//! assert_eq!(back.datagrams[0].payload, rtps);
//! assert_eq!(back.datagrams[0].dst, dst);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod error;
mod pcap;
mod pcapng;
mod reader;
mod strip;
mod synth;
#[cfg(feature = "testing")]
pub mod testing;
mod time;

pub use error::{CaptureError, ReadError};
pub use pcap::PcapWriter;
pub use pcapng::{
    encode_padding_block, encode_udp_packet_block, encoded_block_at, udp_packet_block_len,
    CaptureWriter, Direction, InterfaceId, MAX_EXPORTED_PDU_PAYLOAD, MIN_PADDING_BLOCK,
};
pub use reader::{
    parse_udp_payloads, read_udp_payloads, read_udp_payloads_from, CaptureContents,
    CapturedDatagram, SkipReason, SkippedFrame,
};
pub use strip::{remove_user_data, UserDataRemoved};
pub use synth::{
    mac_for_ipv4, MAX_IPV4_MTU, MAX_UDP_PAYLOAD, MAX_UNFRAGMENTED_UDP_PAYLOAD, MIN_IPV4_MTU,
};
pub use time::Timestamp;
