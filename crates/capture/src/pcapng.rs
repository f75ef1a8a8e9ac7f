//! pcapng writer (the default format).

use std::io::Write;
use std::net::SocketAddrV4;

use crate::synth::{
    push_unfragmented_headers, Frame, Synthesizer, ETH_HEADER_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN,
};
use crate::MAX_UNFRAGMENTED_UDP_PAYLOAD;
use crate::{CaptureError, Timestamp, MAX_IPV4_MTU, MAX_UDP_PAYLOAD, MIN_IPV4_MTU};

const SHB_TYPE: u32 = 0x0A0D_0D0A;
const IDB_TYPE: u32 = 0x0000_0001;
const EPB_TYPE: u32 = 0x0000_0006;
const ISB_TYPE: u32 = 0x0000_0005;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const LINKTYPE_ETHERNET: u16 = 1;
const LINKTYPE_WIRESHARK_UPPER_PDU: u16 = 252;
/// Exported-PDU tags (Wireshark `exported_pdu`).
const PDU_TAG_END: u16 = 0;
const PDU_TAG_DISSECTOR_NAME: u16 = 12;
const PDU_TAG_IPV4_SRC: u16 = 20;
const PDU_TAG_IPV4_DST: u16 = 21;
const PDU_TAG_PORT_TYPE: u16 = 24;
const PDU_TAG_SRC_PORT: u16 = 25;
const PDU_TAG_DST_PORT: u16 = 26;
const PDU_PORT_TYPE_UDP: u32 = 3;
/// Bytes of exported-PDU tags written before each message.
const PDU_TAGS_LEN: usize = 8 + 4 * 8 + 4 * 2 + 4;
/// Largest RTPS message written as an exported PDU: tshark refuses frames
/// over 262144 bytes.
pub const MAX_EXPORTED_PDU_PAYLOAD: usize = SNAPLEN as usize - PDU_TAGS_LEN;
/// Snapshot length announced in interface blocks; frames are never truncated.
const SNAPLEN: u32 = 262_144;
const OPT_ENDOFOPT: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
const EPB_FLAGS: u16 = 2;
const TTL: u8 = 64;
/// Most bytes handed to the output at once by [`CaptureWriter::write_encoded_blocks`]
/// (Linux page-cache writes of several MiB at once were seen to cost several times more per
/// byte than 1 MiB writes).
const WRITE_CHUNK: usize = 1 << 20;
const USER_APPL: &str = concat!("ferrodds-capture ", env!("CARGO_PKG_VERSION"));

/// Identifies an interface (IDB) within one [`CaptureWriter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InterfaceId(pub(crate) u32);

impl InterfaceId {
    /// The pcapng interface index (order of `add_interface` calls, from 0).
    pub fn index(self) -> u32 {
        self.0
    }
}

/// Direction of a captured datagram, recorded in the pcapng `epb_flags`
/// option (Wireshark field `frame.packet_flags_direction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Received by the capturing process.
    Inbound,
    /// Sent by the capturing process.
    Outbound,
}

impl Direction {
    /// The two direction bits of `epb_flags` (1 inbound, 2 outbound).
    pub fn epb_flags(self) -> u32 {
        match self {
            Direction::Inbound => 1,
            Direction::Outbound => 2,
        }
    }

    /// Decodes the direction bits of an `epb_flags` value.
    pub fn from_epb_flags(flags: u32) -> Option<Self> {
        match flags & 3 {
            1 => Some(Direction::Inbound),
            2 => Some(Direction::Outbound),
            _ => None,
        }
    }
}

/// Writes RTPS (or any UDP) datagrams to a pcapng stream as Ethernet frames
/// with synthetic IPv4/UDP headers.
///
/// All blocks are little-endian. Each interface block declares link type
/// Ethernet and nanosecond timestamps. The section header is written by
/// [`CaptureWriter::new`]; interfaces may be added at any time. After warm-up
/// a `write_udp` call does not allocate. Wrap files in a
/// [`std::io::BufWriter`]: each packet is handed to `out` in a few pieces.
///
/// Messages too large for UDP (over [`MAX_UDP_PAYLOAD`] bytes, e.g. from a
/// TCP or shared-memory transport) are written as Wireshark exported PDUs
/// (link type 252, dissector `rtps`, with the IPv4 addresses and ports as
/// tags) on a companion interface named `<name> (exported PDU)`, added the
/// first time it is needed; tshark decodes them as RTPS directly.
#[derive(Debug)]
pub struct CaptureWriter<W: Write> {
    out: W,
    synth: Synthesizer,
    block: Vec<u8>,
    /// Interfaces added by the caller, in order.
    interfaces: Vec<Iface>,
    /// Interface blocks written so far (the caller's plus companions).
    idb_count: u32,
    pdu_tags: Vec<u8>,
}

impl<W: Write> CaptureWriter<W> {
    /// Starts a pcapng stream on `out`, writing the section header block.
    pub fn new(mut out: W) -> Result<Self, CaptureError> {
        let mut block = Vec::with_capacity(128);
        let appl_opt = opt_len(USER_APPL.len());
        let total = 28 + appl_opt + 4;
        put_u32(&mut block, SHB_TYPE);
        put_u32(&mut block, total as u32);
        put_u32(&mut block, BYTE_ORDER_MAGIC);
        block.extend_from_slice(&1u16.to_le_bytes());
        block.extend_from_slice(&0u16.to_le_bytes());
        block.extend_from_slice(&(-1i64).to_le_bytes());
        put_opt(&mut block, SHB_USERAPPL, USER_APPL.as_bytes());
        put_opt(&mut block, OPT_ENDOFOPT, &[]);
        put_u32(&mut block, total as u32);
        debug_assert_eq!(block.len(), total);
        out.write_all(&block)?;
        Ok(Self {
            out,
            synth: Synthesizer::new(),
            block,
            interfaces: Vec::new(),
            idb_count: 0,
            pdu_tags: Vec::with_capacity(PDU_TAGS_LEN),
        })
    }

    /// Adds an interface description block (link type Ethernet, nanosecond
    /// timestamps) named `name`, e.g. one per transport or participant.
    pub fn add_interface(&mut self, name: &str) -> Result<InterfaceId, CaptureError> {
        let index = self.write_idb(name, LINKTYPE_ETHERNET)?;
        self.interfaces.push(Iface {
            name: name.to_string(),
            index,
            companion: None,
        });
        Ok(InterfaceId(index))
    }

    /// Writes an interface description block; returns its pcapng index.
    fn write_idb(&mut self, name: &str, linktype: u16) -> Result<u32, CaptureError> {
        if name.len() > usize::from(u16::MAX) {
            return Err(CaptureError::OptionTooLong {
                what: "interface name",
                len: name.len(),
            });
        }
        let total = 16 + opt_len(name.len()) + opt_len(1) + 4 + 4;
        let b = &mut self.block;
        b.clear();
        put_u32(b, IDB_TYPE);
        put_u32(b, total as u32);
        b.extend_from_slice(&linktype.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        put_u32(b, SNAPLEN);
        put_opt(b, IF_NAME, name.as_bytes());
        put_opt(b, IF_TSRESOL, &[9]);
        put_opt(b, OPT_ENDOFOPT, &[]);
        put_u32(b, total as u32);
        debug_assert_eq!(b.len(), total);
        self.out.write_all(b)?;
        let index = self.idb_count;
        self.idb_count += 1;
        Ok(index)
    }

    /// Sets the largest IPv4 packet per frame (default and maximum 65535).
    ///
    /// Datagrams whose IPv4 packet is larger are written as IPv4 fragments.
    pub fn set_mtu(&mut self, mtu: u16) -> Result<(), CaptureError> {
        if !(MIN_IPV4_MTU..=MAX_IPV4_MTU).contains(&mtu) {
            return Err(CaptureError::InvalidMtu(mtu));
        }
        self.synth.set_mtu(mtu);
        Ok(())
    }

    /// The current IPv4 MTU.
    pub fn mtu(&self) -> u16 {
        self.synth.mtu()
    }

    /// Whether the synthetic UDP headers carry a computed checksum (default) or 0 ("no
    /// checksum", legal on IPv4, as Cyclone DDS writes them). Off saves a pass over every
    /// payload, and matches the blocks of [`encode_udp_packet_block`].
    pub fn set_udp_checksums(&mut self, on: bool) {
        self.synth.udp_checksums = on;
    }

    /// Writes blocks made by [`encode_udp_packet_block`] for this writer's interfaces, as
    /// they are (one write of the whole run: no per-packet work). Refused, writing nothing,
    /// if `blocks` is not a whole number of enhanced packet blocks.
    pub fn write_encoded_blocks(&mut self, blocks: &[u8]) -> Result<(), CaptureError> {
        let mut at = 0;
        while at < blocks.len() {
            match encoded_block_at(blocks, at) {
                Some((total, _)) => at += total,
                None => return Err(CaptureError::MalformedBlocks { offset: at }),
            }
        }
        for chunk in blocks.chunks(WRITE_CHUNK) {
            self.out.write_all(chunk)?;
        }
        Ok(())
    }

    /// Writes one UDP datagram from `src` to `dst` with `payload` as seen on
    /// interface `iface` at time `ts`.
    ///
    /// Payloads up to [`MAX_UNFRAGMENTED_UDP_PAYLOAD`](crate::MAX_UNFRAGMENTED_UDP_PAYLOAD)
    /// bytes (with the default MTU) give one frame; larger ones, up to
    /// [`MAX_UDP_PAYLOAD`], are split into IPv4 fragments that share `ts`
    /// and `dir`; `comment` goes on the last fragment (where Wireshark shows
    /// the reassembled datagram). Larger messages, up to
    /// [`MAX_EXPORTED_PDU_PAYLOAD`], become one exported-PDU frame on the
    /// interface's companion (see the type docs).
    #[allow(clippy::too_many_arguments)] // mirrors the fields of a captured datagram
    pub fn write_udp(
        &mut self,
        iface: InterfaceId,
        ts: impl Into<Timestamp>,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
        dir: Direction,
        comment: Option<&str>,
    ) -> Result<(), CaptureError> {
        let slot = self
            .interface_slot(iface)
            .ok_or(CaptureError::UnknownInterface(iface.0))?;
        if payload.len() > MAX_EXPORTED_PDU_PAYLOAD {
            return Err(CaptureError::DatagramTooLarge {
                len: payload.len(),
                max: MAX_EXPORTED_PDU_PAYLOAD,
            });
        }
        if let Some(c) = comment {
            if c.len() > usize::from(u16::MAX) {
                return Err(CaptureError::OptionTooLong {
                    what: "comment",
                    len: c.len(),
                });
            }
        }
        let ts = ts.into().as_nanos();
        if payload.len() > MAX_UDP_PAYLOAD {
            return self.write_exported_pdu(slot, ts, src, dst, payload, dir, comment);
        }
        let Self {
            out, synth, block, ..
        } = self;
        synth.frames(src, dst, TTL, payload, |frame| {
            let comment = if frame.last { comment } else { None };
            write_epb(out, block, iface.0, ts, &frame, dir, comment)
        })
    }

    /// Index into `interfaces` for an id returned by `add_interface`.
    fn interface_slot(&self, iface: InterfaceId) -> Option<usize> {
        self.interfaces.iter().position(|i| i.index == iface.0)
    }

    /// Writes a message as one exported-PDU frame on the companion
    /// interface of `interfaces[slot]`, adding the companion if needed.
    #[allow(clippy::too_many_arguments)] // write_udp's arguments, resolved
    fn write_exported_pdu(
        &mut self,
        slot: usize,
        ts: u64,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
        dir: Direction,
        comment: Option<&str>,
    ) -> Result<(), CaptureError> {
        let companion = match self.interfaces[slot].companion {
            Some(c) => c,
            None => {
                let name = format!("{} (exported PDU)", self.interfaces[slot].name);
                let c = self.write_idb(&name, LINKTYPE_WIRESHARK_UPPER_PDU)?;
                self.interfaces[slot].companion = Some(c);
                c
            }
        };
        let t = &mut self.pdu_tags;
        t.clear();
        put_pdu_tag(t, PDU_TAG_DISSECTOR_NAME, b"rtps");
        put_pdu_tag(t, PDU_TAG_IPV4_SRC, &src.ip().octets());
        put_pdu_tag(t, PDU_TAG_IPV4_DST, &dst.ip().octets());
        put_pdu_tag(t, PDU_TAG_PORT_TYPE, &PDU_PORT_TYPE_UDP.to_be_bytes());
        put_pdu_tag(t, PDU_TAG_SRC_PORT, &u32::from(src.port()).to_be_bytes());
        put_pdu_tag(t, PDU_TAG_DST_PORT, &u32::from(dst.port()).to_be_bytes());
        put_pdu_tag(t, PDU_TAG_END, &[]);
        debug_assert_eq!(t.len(), PDU_TAGS_LEN);
        let frame = Frame {
            headers: t,
            data: payload,
            last: true,
        };
        write_epb(
            &mut self.out,
            &mut self.block,
            companion,
            ts,
            &frame,
            dir,
            comment,
        )
    }

    /// [`write_udp`](Self::write_udp) stamped with the current wall-clock time.
    pub fn write_udp_now(
        &mut self,
        iface: InterfaceId,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
        dir: Direction,
        comment: Option<&str>,
    ) -> Result<(), CaptureError> {
        self.write_udp(iface, Timestamp::now(), src, dst, payload, dir, comment)
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

    /// The underlying output, to write blocks to it directly (whole blocks only: what is
    /// written there must keep the stream a sequence of pcapng blocks, e.g. runs checked
    /// with [`encoded_block_at`] and [`encode_padding_block`]s).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the underlying output.
    pub fn into_inner(mut self) -> Result<W, CaptureError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// An interface added with `add_interface`.
#[derive(Debug)]
struct Iface {
    name: String,
    /// Its pcapng interface index.
    index: u32,
    /// pcapng index of its exported-PDU companion, once written.
    companion: Option<u32>,
}

/// Appends an exported-PDU tag (big-endian code and length, value padded to 4;
/// the length includes the padding).
fn put_pdu_tag(b: &mut Vec<u8>, code: u16, value: &[u8]) {
    let pad = pad4(value.len());
    b.extend_from_slice(&code.to_be_bytes());
    // Tag values here are at most 4 bytes.
    b.extend_from_slice(&((value.len() + pad) as u16).to_be_bytes());
    b.extend_from_slice(value);
    b.extend_from_slice(&[0u8; 3][..pad]);
}

fn write_epb<W: Write>(
    out: &mut W,
    block: &mut Vec<u8>,
    iface: u32,
    ts: u64,
    frame: &Frame<'_>,
    dir: Direction,
    comment: Option<&str>,
) -> Result<(), CaptureError> {
    let caplen = frame.len();
    let pad = pad4(caplen);
    let opts = opt_len(4) + comment.map_or(0, |c| opt_len(c.len())) + 4;
    let total = 28 + caplen + pad + opts + 4;
    block.clear();
    put_u32(block, EPB_TYPE);
    // Frames are at most 14 + 65535 bytes and comments at most 65535 bytes.
    put_u32(block, total as u32);
    put_u32(block, iface);
    put_u32(block, (ts >> 32) as u32);
    put_u32(block, ts as u32);
    put_u32(block, caplen as u32);
    put_u32(block, caplen as u32);
    out.write_all(block)?;
    out.write_all(frame.headers)?;
    out.write_all(frame.data)?;
    block.clear();
    block.extend_from_slice(&[0u8; 3][..pad]);
    put_opt(block, EPB_FLAGS, &dir.epb_flags().to_le_bytes());
    if let Some(c) = comment {
        put_opt(block, OPT_COMMENT, c.as_bytes());
    }
    put_opt(block, OPT_ENDOFOPT, &[]);
    put_u32(block, total as u32);
    out.write_all(block)?;
    Ok(())
}

/// Bytes of the enhanced packet block [`encode_udp_packet_block`] appends for a payload of
/// `len` bytes.
pub fn udp_packet_block_len(len: usize) -> usize {
    let caplen = ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN + len;
    28 + caplen + pad4(caplen) + opt_len(4) + 4 + 4
}

/// Appends to `out` the enhanced packet block [`CaptureWriter::write_udp`] writes for a
/// datagram sent whole, without a comment, on interface `iface`, at `ts` nanoseconds since
/// the Unix epoch, with IPv4 identification `ip_id` and UDP checksum 0 (as a writer with
/// [`CaptureWriter::set_udp_checksums`] off). For recording threads that encode what a
/// writer thread then writes with [`CaptureWriter::write_encoded_blocks`]. Returns `false`,
/// appending nothing, if the payload needs IPv4 fragments or an exported PDU (over
/// [`MAX_UNFRAGMENTED_UDP_PAYLOAD`] bytes).
#[allow(clippy::too_many_arguments)] // the fields of a captured datagram
pub fn encode_udp_packet_block(
    out: &mut Vec<u8>,
    iface: InterfaceId,
    ts: u64,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    ip_id: u16,
    payload: &[u8],
    dir: Direction,
) -> bool {
    if payload.len() > MAX_UNFRAGMENTED_UDP_PAYLOAD {
        return false;
    }
    let caplen = ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN + payload.len();
    let total = udp_packet_block_len(payload.len());
    put_u32(out, EPB_TYPE);
    // At most 28 + 65535 + 3 + 16 bytes.
    put_u32(out, total as u32);
    put_u32(out, iface.0);
    put_u32(out, (ts >> 32) as u32);
    put_u32(out, ts as u32);
    put_u32(out, caplen as u32);
    put_u32(out, caplen as u32);
    push_unfragmented_headers(out, src, dst, TTL, ip_id, payload.len());
    out.extend_from_slice(payload);
    out.extend_from_slice(&[0u8; 3][..pad4(caplen)]);
    put_opt(out, EPB_FLAGS, &dir.epb_flags().to_le_bytes());
    put_opt(out, OPT_ENDOFOPT, &[]);
    put_u32(out, total as u32);
    true
}

/// The block of [`encode_udp_packet_block`] at `at` in `blocks`: its total length and its
/// UDP payload's length (`None`: not such a block, or cut short).
pub fn encoded_block_at(blocks: &[u8], at: usize) -> Option<(usize, usize)> {
    let word = |o: usize| -> Option<usize> {
        let b = blocks.get(at + o..at + o + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let total = word(4)?;
    let caplen = word(20)?;
    let headers = ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;
    let ok = word(0)? == EPB_TYPE as usize
        && (headers..=headers + MAX_UNFRAGMENTED_UDP_PAYLOAD).contains(&caplen)
        && total == udp_packet_block_len(caplen - headers)
        && word(total - 4)? == total;
    ok.then(|| (total, caplen - headers))
}

/// Smallest [`encode_padding_block`].
pub const MIN_PADDING_BLOCK: usize = 36;

/// The text of a padding block's comment (then spaces to its length).
const PADDING_COMMENT: &[u8] = b"padding (FerroDDS capture: aligns the next block for direct I/O)";

/// Appends a block of exactly `len` bytes that readers skip: an interface statistics block
/// of interface 0 with no statistics, only a comment of spaces (Wireshark shows no frame
/// for it). For a writer that needs the next block at a given file offset (direct I/O);
/// the stream must have interface 0. `false`, appending nothing, unless `len` is a
/// multiple of 4 from [`MIN_PADDING_BLOCK`] to 65,568.
pub fn encode_padding_block(out: &mut Vec<u8>, len: usize) -> bool {
    // Block header (8), interface and time (12), comment option header (4) and value,
    // end of options (4), trailing length (4).
    let comment = len.wrapping_sub(32);
    if !len.is_multiple_of(4) || len < MIN_PADDING_BLOCK || comment > usize::from(u16::MAX) {
        return false;
    }
    put_u32(out, ISB_TYPE);
    put_u32(out, len as u32);
    put_u32(out, 0);
    put_u32(out, 0);
    put_u32(out, 0);
    out.extend_from_slice(&OPT_COMMENT.to_le_bytes());
    out.extend_from_slice(&(comment as u16).to_le_bytes());
    let text = PADDING_COMMENT.get(..comment).unwrap_or(PADDING_COMMENT);
    out.extend_from_slice(text);
    out.resize(out.len() + comment - text.len(), b' ');
    out.extend_from_slice(&OPT_ENDOFOPT.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    put_u32(out, len as u32);
    true
}

fn pad4(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// Bytes taken by an option with a value of `len` bytes.
fn opt_len(len: usize) -> usize {
    4 + len + pad4(len)
}

fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// Appends an option; the caller has checked `value.len() <= 65535`.
fn put_opt(b: &mut Vec<u8>, code: u16, value: &[u8]) {
    b.extend_from_slice(&code.to_le_bytes());
    b.extend_from_slice(&(value.len() as u16).to_le_bytes());
    b.extend_from_slice(value);
    b.extend_from_slice(&[0u8; 3][..pad4(value.len())]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn sa(port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)
    }

    fn u32_at(b: &[u8], off: usize) -> u32 {
        u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
    }

    /// Walks the blocks, checking that leading and trailing lengths agree.
    fn blocks(b: &[u8]) -> Vec<(u32, &[u8])> {
        let mut out = Vec::new();
        let mut off = 0;
        while off < b.len() {
            let ty = u32_at(b, off);
            let len = u32_at(b, off + 4) as usize;
            assert_eq!(len % 4, 0, "block length must be 4-aligned");
            assert_eq!(u32_at(b, off + len - 4) as usize, len, "trailing length");
            out.push((ty, &b[off..off + len]));
            off += len;
        }
        assert_eq!(off, b.len());
        out
    }

    #[test]
    fn layout_of_section_interface_and_packet_blocks() {
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        let i0 = w.add_interface("udp").unwrap();
        let i1 = w.add_interface("tcp").unwrap();
        assert_eq!((i0.index(), i1.index()), (0, 1));
        w.write_udp(
            i1,
            Timestamp::from_nanos(0x0000_0001_0000_0002),
            sa(1000),
            sa(7400),
            b"RTPS12345",
            Direction::Outbound,
            Some("hi"),
        )
        .unwrap();
        let bytes = w.into_inner().unwrap();
        let bl = blocks(&bytes);
        assert_eq!(
            bl.iter().map(|b| b.0).collect::<Vec<_>>(),
            vec![SHB_TYPE, IDB_TYPE, IDB_TYPE, EPB_TYPE]
        );
        assert_eq!(u32_at(bl[0].1, 8), BYTE_ORDER_MAGIC);
        let epb = bl[3].1;
        assert_eq!(u32_at(epb, 8), 1, "interface id");
        assert_eq!(u32_at(epb, 12), 1, "timestamp high");
        assert_eq!(u32_at(epb, 16), 2, "timestamp low");
        let caplen = u32_at(epb, 20) as usize;
        assert_eq!(caplen, 14 + 20 + 8 + 9);
        assert_eq!(u32_at(epb, 24) as usize, caplen);
        assert_eq!(&epb[28 + 42..28 + 51], b"RTPS12345");
        // Options after the padded data: flags (2, len 4, value 2), comment, end.
        let opts = &epb[28 + caplen + pad4(caplen)..];
        assert_eq!(&opts[0..4], &[2, 0, 4, 0]);
        assert_eq!(u32_at(opts, 4), 2);
        assert_eq!(&opts[8..12], &[1, 0, 2, 0]);
        assert_eq!(&opts[12..14], b"hi");
        assert_eq!(&opts[16..20], &[0, 0, 0, 0]);
    }

    #[test]
    fn rejects_unknown_interface_and_oversized_payload() {
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        let err = w
            .write_udp(
                InterfaceId(0),
                Timestamp::from_nanos(1),
                sa(1),
                sa(2),
                b"x",
                Direction::Inbound,
                None,
            )
            .unwrap_err();
        assert!(matches!(err, CaptureError::UnknownInterface(0)));
        let i = w.add_interface("lo").unwrap();
        let big = vec![0u8; MAX_EXPORTED_PDU_PAYLOAD + 1];
        let err = w
            .write_udp(
                i,
                Timestamp::from_nanos(1),
                sa(1),
                sa(2),
                &big,
                Direction::Inbound,
                None,
            )
            .unwrap_err();
        assert!(matches!(err, CaptureError::DatagramTooLarge { len, .. } if len == big.len()));
        assert!(matches!(w.set_mtu(67), Err(CaptureError::InvalidMtu(67))));
        w.set_mtu(1500).unwrap();
        assert_eq!(w.mtu(), 1500);
    }

    #[test]
    fn fragments_share_timestamp_and_comment_goes_last() {
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        let i = w.add_interface("lo").unwrap();
        w.set_mtu(576).unwrap();
        let payload = vec![7u8; 2000];
        w.write_udp(
            i,
            Timestamp::from_nanos(42),
            sa(1),
            sa(2),
            &payload,
            Direction::Inbound,
            Some("big"),
        )
        .unwrap();
        let bytes = w.into_inner().unwrap();
        let bl = blocks(&bytes);
        let epbs: Vec<&[u8]> = bl.iter().filter(|b| b.0 == EPB_TYPE).map(|b| b.1).collect();
        // 2008 bytes in 552-byte fragments: 4 frames.
        assert_eq!(epbs.len(), 4);
        for (n, epb) in epbs.iter().enumerate() {
            assert_eq!(u32_at(epb, 16), 42);
            let has_comment = epb.windows(3).any(|w| w == b"big");
            assert_eq!(has_comment, n == 3);
        }
    }

    #[test]
    fn direction_flag_round_trip() {
        for d in [Direction::Inbound, Direction::Outbound] {
            assert_eq!(Direction::from_epb_flags(d.epb_flags()), Some(d));
        }
        assert_eq!(Direction::from_epb_flags(0), None);
        assert_eq!(Direction::from_epb_flags(0xff00_0003), None);
    }

    /// Blocks encoded by a recording thread are byte for byte what the writer writes for
    /// the same datagrams with UDP checksums off; runs of them are written as they are,
    /// and anything else is refused.
    #[test]
    fn encoded_blocks_are_the_writers_own() {
        use crate::MAX_UNFRAGMENTED_UDP_PAYLOAD;
        let src = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), 7411);
        let dst = SocketAddrV4::new(Ipv4Addr::new(239, 255, 0, 1), 7401);
        let sizes = [0usize, 1, 2, 3, 4, 32, 8192, MAX_UNFRAGMENTED_UDP_PAYLOAD];
        let mut plain = CaptureWriter::new(Vec::new()).unwrap();
        plain.set_udp_checksums(false);
        let mut encoded = CaptureWriter::new(Vec::new()).unwrap();
        let ip = plain.add_interface("a").unwrap();
        let ie = encoded.add_interface("a").unwrap();
        let mut run = Vec::new();
        for (i, n) in sizes.iter().enumerate() {
            let payload: Vec<u8> = (0..*n).map(|k| (k + i) as u8).collect();
            let ts = 1_700_000_000_000_000_000 + i as u64;
            let dir = if i % 2 == 0 {
                Direction::Inbound
            } else {
                Direction::Outbound
            };
            plain
                .write_udp(
                    ip,
                    std::time::Duration::from_nanos(ts),
                    src,
                    dst,
                    &payload,
                    dir,
                    None,
                )
                .unwrap();
            let before = run.len();
            assert!(encode_udp_packet_block(
                &mut run, ie, ts, src, dst, i as u16, &payload, dir
            ));
            assert_eq!(run.len() - before, udp_packet_block_len(*n));
            assert_eq!(
                encoded_block_at(&run, before),
                Some((run.len() - before, *n))
            );
        }
        let too_big = vec![0u8; MAX_UNFRAGMENTED_UDP_PAYLOAD + 1];
        let before = run.len();
        assert!(!encode_udp_packet_block(
            &mut run,
            ie,
            1,
            src,
            dst,
            0,
            &too_big,
            Direction::Inbound
        ));
        assert_eq!(run.len(), before);
        // Half a run, or garbage, is refused and nothing is written.
        let len_before = encoded.get_ref().len();
        for bad in [&run[..run.len() - 1], &run[4..], &[0u8; 64][..]] {
            assert!(matches!(
                encoded.write_encoded_blocks(bad),
                Err(CaptureError::MalformedBlocks { .. })
            ));
        }
        assert_eq!(encoded.get_ref().len(), len_before);
        encoded.write_encoded_blocks(&run).unwrap();
        assert_eq!(encoded.into_inner().unwrap(), plain.into_inner().unwrap());
    }
}
