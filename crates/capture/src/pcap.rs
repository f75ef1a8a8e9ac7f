//! Classic pcap writer (nanosecond variant).

use std::io::Write;
use std::net::SocketAddrV4;

use crate::synth::Synthesizer;
use crate::{CaptureError, Timestamp, MAX_IPV4_MTU, MAX_UDP_PAYLOAD, MIN_IPV4_MTU};

/// Magic of nanosecond-resolution pcap files.
const MAGIC_NS: u32 = 0xA1B2_3C4D;
const LINKTYPE_ETHERNET: u32 = 1;
const SNAPLEN: u32 = 262_144;
const TTL: u8 = 64;
const NANOS_PER_SEC: u64 = 1_000_000_000;

/// Writes UDP datagrams to a classic pcap stream (little-endian, nanosecond
/// timestamps, link type Ethernet) with synthetic Ethernet/IPv4/UDP headers.
///
/// Classic pcap has no interfaces, directions or comments; use
/// [`CaptureWriter`](crate::CaptureWriter) (pcapng) when those matter.
/// Timestamps must fall before 2106 (32-bit seconds).
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    synth: Synthesizer,
    record: [u8; 16],
}

impl<W: Write> PcapWriter<W> {
    /// Starts a pcap stream on `out`, writing the 24-byte file header.
    pub fn new(mut out: W) -> Result<Self, CaptureError> {
        let mut hdr = [0u8; 24];
        hdr[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
        hdr[4..6].copy_from_slice(&2u16.to_le_bytes());
        hdr[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0.
        hdr[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        hdr[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&hdr)?;
        Ok(Self {
            out,
            synth: Synthesizer::new(),
            record: [0; 16],
        })
    }

    /// Sets the largest IPv4 packet per frame (default and maximum 65535).
    pub fn set_mtu(&mut self, mtu: u16) -> Result<(), CaptureError> {
        if !(MIN_IPV4_MTU..=MAX_IPV4_MTU).contains(&mtu) {
            return Err(CaptureError::InvalidMtu(mtu));
        }
        self.synth.set_mtu(mtu);
        Ok(())
    }

    /// Writes one UDP datagram; see [`CaptureWriter::write_udp`](crate::CaptureWriter::write_udp).
    pub fn write_udp(
        &mut self,
        ts: impl Into<Timestamp>,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> Result<(), CaptureError> {
        let ts = ts.into();
        let secs = u32::try_from(ts.as_nanos() / NANOS_PER_SEC)
            .map_err(|_| CaptureError::TimestampOutOfRange(ts))?;
        // Always below 10^9, so it fits.
        let nanos = (ts.as_nanos() % NANOS_PER_SEC) as u32;
        if payload.len() > MAX_UDP_PAYLOAD {
            return Err(CaptureError::DatagramTooLarge {
                len: payload.len(),
                max: MAX_UDP_PAYLOAD,
            });
        }
        let Self { out, synth, record } = self;
        synth.frames(src, dst, TTL, payload, |frame| {
            // Frames are at most 14 + 65535 bytes.
            let len = frame.len() as u32;
            record[0..4].copy_from_slice(&secs.to_le_bytes());
            record[4..8].copy_from_slice(&nanos.to_le_bytes());
            record[8..12].copy_from_slice(&len.to_le_bytes());
            record[12..16].copy_from_slice(&len.to_le_bytes());
            out.write_all(&record[..])?;
            out.write_all(frame.headers)?;
            out.write_all(frame.data)?;
            Ok::<(), CaptureError>(())
        })
    }

    /// [`write_udp`](Self::write_udp) stamped with the current wall-clock time.
    pub fn write_udp_now(
        &mut self,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> Result<(), CaptureError> {
        self.write_udp(Timestamp::now(), src, dst, payload)
    }

    /// Flushes the underlying output.
    pub fn flush(&mut self) -> Result<(), CaptureError> {
        self.out.flush()?;
        Ok(())
    }

    /// The underlying output.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Flushes and returns the underlying output.
    pub fn into_inner(mut self) -> Result<W, CaptureError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn header_and_record_layout() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let a = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7400);
        w.write_udp(Timestamp::from_nanos(3_000_000_005), a, a, b"abcd")
            .unwrap();
        let b = w.into_inner().unwrap();
        assert_eq!(&b[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 1);
        let rec = &b[24..];
        assert_eq!(u32::from_le_bytes(rec[0..4].try_into().unwrap()), 3);
        assert_eq!(u32::from_le_bytes(rec[4..8].try_into().unwrap()), 5);
        let len = u32::from_le_bytes(rec[8..12].try_into().unwrap()) as usize;
        assert_eq!(len, 14 + 20 + 8 + 4);
        assert_eq!(rec.len(), 16 + len);
        assert_eq!(&rec[16 + 42..], b"abcd");
    }

    #[test]
    fn timestamp_after_2106_is_rejected() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let a = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7400);
        let ts = Timestamp::from_nanos((u64::from(u32::MAX) + 1) * NANOS_PER_SEC);
        assert!(matches!(
            w.write_udp(ts, a, a, b"x"),
            Err(CaptureError::TimestampOutOfRange(t)) if t == ts
        ));
        assert_eq!(
            w.get_ref().len(),
            24,
            "nothing written for a rejected packet"
        );
    }
}
