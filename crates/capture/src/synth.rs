//! Synthetic Ethernet/IPv4/UDP framing for captured datagrams.
//!
//! RTPS datagrams are recorded as Ethernet II frames carrying IPv4 and UDP
//! headers built here, with valid IPv4 header checksums and valid UDP
//! checksums, so capture tools decode them like real traffic. Datagrams whose
//! IPv4 packet would exceed the configured MTU are split into IPv4 fragments.

use std::net::{Ipv4Addr, SocketAddrV4};

/// Length of an Ethernet II header (no VLAN tag).
pub(crate) const ETH_HEADER_LEN: usize = 14;
/// Length of an IPv4 header without options.
pub(crate) const IPV4_HEADER_LEN: usize = 20;
/// Length of a UDP header.
pub(crate) const UDP_HEADER_LEN: usize = 8;

/// Largest UDP payload that fits in one unfragmented IPv4 packet (65535 - 20 - 8).
pub const MAX_UNFRAGMENTED_UDP_PAYLOAD: usize = 65_507;
/// Largest UDP payload representable at all: the UDP length field is 16 bits
/// (65535 - 8). Payloads between [`MAX_UNFRAGMENTED_UDP_PAYLOAD`] and this
/// value are written as IPv4 fragments.
pub const MAX_UDP_PAYLOAD: usize = 65_527;
/// Default and maximum IPv4 MTU (largest IPv4 total length per frame).
pub const MAX_IPV4_MTU: u16 = 65_535;
/// Smallest IPv4 MTU accepted (RFC 791 minimum).
pub const MIN_IPV4_MTU: u16 = 68;

const ETHERTYPE_IPV4: u16 = 0x0800;
const IP_PROTO_UDP: u8 = 17;
const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;

/// Ethernet MAC address for an IPv4 address.
///
/// Multicast groups (224.0.0.0/4) map to `01:00:5e` plus the low 23 bits of
/// the group (RFC 1112); the limited broadcast address maps to
/// `ff:ff:ff:ff:ff:ff`; any other address maps to a locally administered
/// unicast MAC `02:00:a:b:c:d` built from the address octets.
pub fn mac_for_ipv4(addr: Ipv4Addr) -> [u8; 6] {
    let o = addr.octets();
    if addr.is_multicast() {
        [0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]]
    } else if addr.is_broadcast() {
        [0xff; 6]
    } else {
        [0x02, 0x00, o[0], o[1], o[2], o[3]]
    }
}

/// Adds `data` as big-endian 16-bit words to a ones'-complement accumulator.
///
/// An odd trailing byte is padded with zero on the right, as RFC 1071 says;
/// callers only pass odd-length slices as the final piece of a sum.
pub(crate) fn sum_be_words(data: &[u8], mut acc: u64) -> u64 {
    // Eight bytes per step, as two native little-endian 32-bit words and without byte
    // swaps: the ones'-complement sum does not depend on the word size (2^16 = 1 modulo
    // 2^16 - 1), and the sum of little-endian words, folded to 16 bits, is the big-endian
    // sum with its bytes swapped (RFC 1071 §2(B)). No overflow: each step adds < 2^33, so
    // 2^31 steps (16 GiB) fit.
    let mut wide = data.chunks_exact(8);
    let mut le = 0u64;
    for c in &mut wide {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let w = u64::from_le_bytes(w);
        le += (w & 0xffff_ffff) + (w >> 32);
    }
    while le >> 16 != 0 {
        le = (le & 0xffff) + (le >> 16);
    }
    acc += u64::from((le as u16).swap_bytes());
    let mut pairs = wide.remainder().chunks_exact(2);
    for c in &mut pairs {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [b] = pairs.remainder() {
        acc += u64::from(*b) << 8;
    }
    acc
}

/// Folds a ones'-complement accumulator and returns the complemented checksum.
pub(crate) fn fold_checksum(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    // The loop above leaves at most 16 significant bits.
    !(acc as u16)
}

/// IPv4 header checksum of a 20-byte header whose checksum field is zero or
/// already filled (a header with a valid checksum sums to 0).
pub(crate) fn ipv4_header_checksum(header: &[u8]) -> u16 {
    fold_checksum(sum_be_words(header, 0))
}

/// UDP checksum over the IPv4 pseudo header, the UDP header (with checksum
/// field zero) and the payload. A computed zero is sent as `0xffff`.
pub(crate) fn udp_checksum(src: Ipv4Addr, dst: Ipv4Addr, udp_header: &[u8], payload: &[u8]) -> u16 {
    let udp_len = (udp_header.len() + payload.len()) as u64;
    let mut acc = sum_be_words(&src.octets(), 0);
    acc = sum_be_words(&dst.octets(), acc);
    acc += u64::from(IP_PROTO_UDP) + udp_len;
    acc = sum_be_words(udp_header, acc);
    acc = sum_be_words(payload, acc);
    match fold_checksum(acc) {
        0 => 0xffff,
        c => c,
    }
}

/// Largest amount of IPv4 payload per fragment for an MTU: `mtu - 20`,
/// rounded down to a multiple of 8 (fragment offsets count 8-byte units).
pub(crate) fn fragment_data_len(mtu: u16) -> usize {
    (usize::from(mtu) - IPV4_HEADER_LEN) & !7
}

/// One frame (an Ethernet frame carrying a whole IPv4 packet or a fragment)
/// produced by [`Synthesizer::frames`].
pub(crate) struct Frame<'a> {
    /// Ethernet + IPv4 header, plus the UDP header for the first frame.
    pub(crate) headers: &'a [u8],
    /// The slice of the caller's payload carried after `headers`.
    pub(crate) data: &'a [u8],
    /// Whether this is the last frame of the datagram.
    pub(crate) last: bool,
}

impl Frame<'_> {
    /// Total frame length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.headers.len() + self.data.len()
    }
}

/// Builds synthetic headers into a reused scratch buffer.
#[derive(Debug)]
pub(crate) struct Synthesizer {
    scratch: Vec<u8>,
    ip_id: u16,
    mtu: u16,
    /// Compute UDP checksums (otherwise 0: none, legal on IPv4).
    pub(crate) udp_checksums: bool,
}

impl Synthesizer {
    pub(crate) fn new() -> Self {
        Self {
            scratch: Vec::with_capacity(ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN),
            ip_id: 0,
            mtu: MAX_IPV4_MTU,
            udp_checksums: true,
        }
    }

    pub(crate) fn mtu(&self) -> u16 {
        self.mtu
    }

    /// Sets the MTU; the caller has validated the range.
    pub(crate) fn set_mtu(&mut self, mtu: u16) {
        self.mtu = mtu;
    }

    /// Calls `emit` once per frame of the datagram, in order.
    ///
    /// The caller has checked `payload.len() <= MAX_UDP_PAYLOAD`.
    pub(crate) fn frames<E>(
        &mut self,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        ttl: u8,
        payload: &[u8],
        mut emit: impl FnMut(Frame<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        debug_assert!(payload.len() <= MAX_UDP_PAYLOAD);
        let udp_len = UDP_HEADER_LEN + payload.len();
        let mut udp = [0u8; UDP_HEADER_LEN];
        udp[0..2].copy_from_slice(&src.port().to_be_bytes());
        udp[2..4].copy_from_slice(&dst.port().to_be_bytes());
        // Fits: payload.len() <= MAX_UDP_PAYLOAD.
        udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        let csum = if self.udp_checksums {
            udp_checksum(*src.ip(), *dst.ip(), &udp, payload)
        } else {
            0
        };
        udp[6..8].copy_from_slice(&csum.to_be_bytes());

        let id = self.ip_id;
        self.ip_id = self.ip_id.wrapping_add(1);
        let fragmented = IPV4_HEADER_LEN + udp_len > usize::from(self.mtu);
        let chunk = if fragmented {
            fragment_data_len(self.mtu)
        } else {
            udp_len
        };

        // `offset` indexes the UDP datagram (header + payload).
        let mut offset = 0usize;
        while offset < udp_len {
            let end = (offset + chunk).min(udp_len);
            let last = end == udp_len;
            let flags_frag = if fragmented {
                (if last { 0 } else { FLAG_MF }) | ((offset / 8) as u16)
            } else {
                FLAG_DF
            };
            self.scratch.clear();
            push_eth(&mut self.scratch, *src.ip(), *dst.ip());
            // end - offset <= fragment size <= mtu - 20, so this fits in u16.
            push_ipv4(
                &mut self.scratch,
                *src.ip(),
                *dst.ip(),
                (IPV4_HEADER_LEN + end - offset) as u16,
                id,
                flags_frag,
                ttl,
            );
            let data = if offset == 0 {
                self.scratch.extend_from_slice(&udp);
                &payload[..end - UDP_HEADER_LEN]
            } else {
                &payload[offset - UDP_HEADER_LEN..end - UDP_HEADER_LEN]
            };
            emit(Frame {
                headers: &self.scratch,
                data,
                last,
            })?;
            offset = end;
        }
        Ok(())
    }
}

/// Appends the Ethernet, IPv4 and UDP headers of a datagram of `payload_len` bytes
/// (at most [`MAX_UNFRAGMENTED_UDP_PAYLOAD`]) sent whole, as [`Synthesizer::frames`] builds
/// them with UDP checksums off.
pub(crate) fn push_unfragmented_headers(
    buf: &mut Vec<u8>,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    ttl: u8,
    id: u16,
    payload_len: usize,
) {
    debug_assert!(payload_len <= MAX_UNFRAGMENTED_UDP_PAYLOAD);
    let udp_len = (UDP_HEADER_LEN + payload_len) as u16;
    push_eth(buf, *src.ip(), *dst.ip());
    push_ipv4(
        buf,
        *src.ip(),
        *dst.ip(),
        IPV4_HEADER_LEN as u16 + udp_len,
        id,
        FLAG_DF,
        ttl,
    );
    buf.extend_from_slice(&src.port().to_be_bytes());
    buf.extend_from_slice(&dst.port().to_be_bytes());
    buf.extend_from_slice(&udp_len.to_be_bytes());
    buf.extend_from_slice(&[0, 0]);
}

fn push_eth(buf: &mut Vec<u8>, src: Ipv4Addr, dst: Ipv4Addr) {
    buf.extend_from_slice(&mac_for_ipv4(dst));
    buf.extend_from_slice(&mac_for_ipv4(src));
    buf.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
}

fn push_ipv4(
    buf: &mut Vec<u8>,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    total_len: u16,
    id: u16,
    flags_frag: u16,
    ttl: u8,
) {
    let start = buf.len();
    buf.extend_from_slice(&[0x45, 0x00]);
    buf.extend_from_slice(&total_len.to_be_bytes());
    buf.extend_from_slice(&id.to_be_bytes());
    buf.extend_from_slice(&flags_frag.to_be_bytes());
    buf.extend_from_slice(&[ttl, IP_PROTO_UDP, 0, 0]);
    buf.extend_from_slice(&src.octets());
    buf.extend_from_slice(&dst.octets());
    let csum = ipv4_header_checksum(&buf[start..]);
    buf[start + 10..start + 12].copy_from_slice(&csum.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{Ipv4HeaderSlice, UdpHeader};

    fn addr(a: [u8; 4], port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::from(a), port)
    }

    fn collect(
        syn: &mut Synthesizer,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> Vec<(Vec<u8>, bool)> {
        let mut frames = Vec::new();
        syn.frames::<()>(src, dst, 64, payload, |f| {
            let mut v = f.headers.to_vec();
            v.extend_from_slice(f.data);
            frames.push((v, f.last));
            Ok(())
        })
        .unwrap();
        frames
    }

    #[test]
    fn multicast_mac_uses_low_23_bits() {
        assert_eq!(
            mac_for_ipv4(Ipv4Addr::new(239, 255, 0, 1)),
            [0x01, 0x00, 0x5e, 0x7f, 0x00, 0x01]
        );
        // The top bit of the second octet is dropped.
        assert_eq!(
            mac_for_ipv4(Ipv4Addr::new(224, 128, 2, 3)),
            [0x01, 0x00, 0x5e, 0x00, 0x02, 0x03]
        );
    }

    #[test]
    fn unicast_mac_is_locally_administered_unicast() {
        let mac = mac_for_ipv4(Ipv4Addr::new(127, 0, 0, 1));
        assert_eq!(mac, [0x02, 0x00, 127, 0, 0, 1]);
        assert_eq!(mac[0] & 0x01, 0, "group bit must be clear");
        assert_eq!(mac[0] & 0x02, 0x02, "locally administered bit must be set");
        assert_eq!(mac_for_ipv4(Ipv4Addr::BROADCAST), [0xff; 6]);
    }

    #[test]
    fn ipv4_checksum_matches_rfc_example() {
        // Well-known example header (checksum field zeroed): checksum 0xb861.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_header_checksum(&hdr), 0xb861);
        let mut filled = hdr;
        filled[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(ipv4_header_checksum(&filled), 0);
    }

    /// RFC 1071's definition, two bytes at a time.
    fn reference_sum(data: &[u8], mut acc: u64) -> u64 {
        for c in data.chunks(2) {
            acc += u64::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)]));
        }
        acc
    }

    proptest::proptest! {
        #[test]
        fn fast_sum_folds_like_the_definition(
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..3000),
            acc in 0u64..(1 << 40),
        ) {
            proptest::prop_assert_eq!(
                fold_checksum(sum_be_words(&data, acc)),
                fold_checksum(reference_sum(&data, acc))
            );
        }
    }

    #[test]
    fn fast_sum_of_extremes() {
        for data in [
            vec![0xffu8; 65_536],
            vec![0u8; 64],
            vec![0xff, 0xff, 0, 0, 0xff, 0xff, 0, 1],
        ] {
            assert_eq!(
                fold_checksum(sum_be_words(&data, 0)),
                fold_checksum(reference_sum(&data, 0))
            );
        }
    }

    #[test]
    fn odd_length_checksum_pads_right() {
        assert_eq!(sum_be_words(&[0x12], 0), 0x1200);
        assert_eq!(sum_be_words(&[0x12, 0x34, 0x56], 0), 0x1234 + 0x5600);
        let long: Vec<u8> = (0..=20u8).collect();
        let naive: u64 = long
            .chunks(2)
            .map(|c| u64::from(c[0]) << 8 | u64::from(*c.get(1).unwrap_or(&0)))
            .sum();
        assert_eq!(sum_be_words(&long, 0), naive);
    }

    #[test]
    fn single_frame_headers_agree_with_etherparse() {
        let mut syn = Synthesizer::new();
        let src = addr([127, 0, 0, 1], 7410);
        let dst = addr([239, 255, 0, 1], 7400);
        let payload: Vec<u8> = (0..301u32).map(|i| (i * 7) as u8).collect();
        let frames = collect(&mut syn, src, dst, &payload);
        assert_eq!(frames.len(), 1);
        let (frame, last) = &frames[0];
        assert!(last);
        assert_eq!(frame.len(), 14 + 20 + 8 + payload.len());
        assert_eq!(&frame[0..6], &[0x01, 0x00, 0x5e, 0x7f, 0x00, 0x01]);
        assert_eq!(&frame[12..14], &[0x08, 0x00]);
        let ip = Ipv4HeaderSlice::from_slice(&frame[14..]).unwrap();
        assert_eq!(usize::from(ip.total_len()), 20 + 8 + payload.len());
        assert!(ip.dont_fragment());
        assert!(!ip.more_fragments());
        assert_eq!(ip.header_checksum(), ip.to_header().calc_header_checksum());
        let (udp, rest) = UdpHeader::from_slice(&frame[34..]).unwrap();
        assert_eq!(udp.source_port, 7410);
        assert_eq!(udp.destination_port, 7400);
        assert_eq!(usize::from(udp.length), 8 + payload.len());
        assert_eq!(rest, &payload[..]);
        let expected = udp
            .calc_checksum_ipv4_raw(ip.source(), ip.destination(), &payload)
            .unwrap();
        assert_eq!(udp.checksum, expected);
        assert_ne!(udp.checksum, 0);
    }

    #[test]
    fn fragment_math() {
        assert_eq!(fragment_data_len(1500), 1480);
        assert_eq!(fragment_data_len(68), 48);
        assert_eq!(fragment_data_len(65535), 65512);
        assert_eq!(fragment_data_len(100), 80);
    }

    #[test]
    fn fragments_cover_datagram_with_correct_offsets() {
        let mut syn = Synthesizer::new();
        syn.set_mtu(1500);
        let src = addr([127, 0, 0, 1], 40000);
        let dst = addr([127, 0, 0, 1], 7411);
        let payload: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
        let frames = collect(&mut syn, src, dst, &payload);
        // 4008 bytes of UDP datagram in 1480-byte pieces: 1480 + 1480 + 1048.
        assert_eq!(frames.len(), 3);
        let mut reassembled = Vec::new();
        let mut ids = Vec::new();
        for (i, (frame, last)) in frames.iter().enumerate() {
            let ip = Ipv4HeaderSlice::from_slice(&frame[14..]).unwrap();
            assert_eq!(ip.header_checksum(), ip.to_header().calc_header_checksum());
            assert_eq!(usize::from(ip.total_len()), frame.len() - 14);
            assert!(!ip.dont_fragment());
            assert_eq!(ip.more_fragments(), i < 2);
            assert_eq!(*last, i == 2);
            assert_eq!(
                usize::from(ip.fragments_offset().value()) * 8,
                reassembled.len()
            );
            ids.push(ip.identification());
            reassembled.extend_from_slice(&frame[34..]);
        }
        assert!(ids.iter().all(|&id| id == ids[0]));
        assert_eq!(frames[0].0.len(), 14 + 20 + 1480);
        assert_eq!(frames[2].0.len(), 14 + 20 + 1048);
        let (udp, rest) = UdpHeader::from_slice(&reassembled).unwrap();
        assert_eq!(usize::from(udp.length), 8 + payload.len());
        assert_eq!(rest, &payload[..]);
        let expected = udp
            .calc_checksum_ipv4_raw([127, 0, 0, 1], [127, 0, 0, 1], &payload)
            .unwrap();
        assert_eq!(udp.checksum, expected);
    }

    #[test]
    fn ip_id_changes_per_datagram() {
        let mut syn = Synthesizer::new();
        let a = addr([127, 0, 0, 1], 1);
        let f1 = collect(&mut syn, a, a, b"one");
        let f2 = collect(&mut syn, a, a, b"two");
        assert_ne!(f1[0].0[18..20], f2[0].0[18..20]);
    }

    #[test]
    fn max_payload_fragments_at_default_mtu() {
        let mut syn = Synthesizer::new();
        let a = addr([127, 0, 0, 1], 7400);
        let payload = vec![0xa5u8; MAX_UDP_PAYLOAD];
        let frames = collect(&mut syn, a, a, &payload);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].0.len(), 14 + 20 + 65512);
        assert_eq!(frames[1].0.len(), 14 + 20 + (8 + MAX_UDP_PAYLOAD - 65512));
        let exactly = vec![0u8; MAX_UNFRAGMENTED_UDP_PAYLOAD];
        assert_eq!(collect(&mut syn, a, a, &exactly).len(), 1);
        let over = vec![0u8; MAX_UNFRAGMENTED_UDP_PAYLOAD + 1];
        assert_eq!(collect(&mut syn, a, a, &over).len(), 2);
    }
}
