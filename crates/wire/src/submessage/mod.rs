//! Submessages (DDSI-RTPS 2.5 §8.3.7, §9.4.5): header, ids, every standard
//! kind, opaque security/vendor submessages and the [`Encode`] trait.

mod data;
mod entity;
mod info;

pub use data::{
    Data, DataFrag, TimedData, DATA_FRAG_OCTETS_TO_INLINE_QOS, DATA_OCTETS_TO_INLINE_QOS,
};
pub use entity::{
    AckNack, Gap, GapGroupInfo, Heartbeat, HeartbeatFrag, HeartbeatGroupInfo, NackFrag,
};
pub use info::{InfoDst, InfoReply, InfoReplyIp4, InfoSrc, InfoTs, LocatorUdpv4, Pad};

use crate::codec::{check_room, pad4, Endianness, Reader, Writer};
use crate::error::{Result, WireError};

/// Submessage ids (§9.4.5.1.1 and DDS-Security 1.1 §7.3.6).
pub mod id {
    /// PAD.
    pub const PAD: u8 = 0x01;
    /// ACKNACK.
    pub const ACKNACK: u8 = 0x06;
    /// HEARTBEAT.
    pub const HEARTBEAT: u8 = 0x07;
    /// GAP.
    pub const GAP: u8 = 0x08;
    /// INFO_TS.
    pub const INFO_TS: u8 = 0x09;
    /// INFO_SRC.
    pub const INFO_SRC: u8 = 0x0c;
    /// INFO_REPLY_IP4.
    pub const INFO_REPLY_IP4: u8 = 0x0d;
    /// INFO_DST.
    pub const INFO_DST: u8 = 0x0e;
    /// INFO_REPLY.
    pub const INFO_REPLY: u8 = 0x0f;
    /// NACK_FRAG.
    pub const NACK_FRAG: u8 = 0x12;
    /// HEARTBEAT_FRAG.
    pub const HEARTBEAT_FRAG: u8 = 0x13;
    /// DATA.
    pub const DATA: u8 = 0x15;
    /// DATA_FRAG.
    pub const DATA_FRAG: u8 = 0x16;
    /// SEC_BODY (DDS-Security).
    pub const SEC_BODY: u8 = 0x30;
    /// SEC_PREFIX (DDS-Security).
    pub const SEC_PREFIX: u8 = 0x31;
    /// SEC_POSTFIX (DDS-Security).
    pub const SEC_POSTFIX: u8 = 0x32;
    /// SRTPS_PREFIX (DDS-Security).
    pub const SRTPS_PREFIX: u8 = 0x33;
    /// SRTPS_POSTFIX (DDS-Security).
    pub const SRTPS_POSTFIX: u8 = 0x34;

    /// Whether `id` is one of the DDS-Security submessages.
    #[must_use]
    pub const fn is_security(id: u8) -> bool {
        matches!(id, SEC_BODY..=SRTPS_POSTFIX)
    }

    /// Whether `id` is in the vendor-specific range 0x80..=0xff.
    #[must_use]
    pub const fn is_vendor_specific(id: u8) -> bool {
        id >= 0x80
    }
}

/// The 4-byte submessage header: `id | flags | octetsToNextHeader`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubmessageHeader {
    /// Submessage id.
    pub id: u8,
    /// Flags; bit 0x01 (E) selects the byte order of the rest of the submessage.
    pub flags: u8,
    /// Length of the body (0 means "to the end of the message" except for PAD and INFO_TS).
    pub octets_to_next_header: u16,
}

impl SubmessageHeader {
    /// Encoded size.
    pub const SIZE: usize = 4;

    /// Byte order of the body, from the E flag.
    #[must_use]
    #[inline]
    pub const fn endianness(&self) -> Endianness {
        Endianness::from_flags(self.flags)
    }

    /// Whether an `octetsToNextHeader` of 0 means "extends to the end of the message".
    #[must_use]
    #[inline]
    pub const fn zero_means_to_end(&self) -> bool {
        !matches!(self.id, id::PAD | id::INFO_TS)
    }
}

/// Emission of a submessage (header, body, padding to 4) into a caller-owned buffer.
pub trait Encode {
    /// Total encoded size, header and padding included.
    fn encoded_len(&self) -> usize;
    /// Writes the submessage with byte order `endian` (which also sets the E
    /// flag); returns the bytes written, or `BufferTooSmall` if `out` is too small.
    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize>;
}

/// Computes `octetsToNextHeader` for an unpadded body length.
#[inline]
pub(crate) fn octets_for(body_len: usize) -> Result<u16> {
    let padded = pad4(body_len);
    u16::try_from(padded).map_err(|_| WireError::TooLong {
        length: padded,
        max: 0xfffc,
    })
}

/// Writes a submessage: header, body via `f`, zero padding. `body_len` is the
/// unpadded body length that `f` writes.
#[inline]
pub(crate) fn write_submessage(
    id: u8,
    flags: u8,
    body_len: usize,
    endian: Endianness,
    out: &mut [u8],
    f: impl FnOnce(&mut Writer<'_>) -> Result<()>,
) -> Result<usize> {
    let octets = octets_for(body_len)?;
    let total = SubmessageHeader::SIZE + usize::from(octets);
    check_room(out, total)?;
    let mut w = Writer::new(out, endian);
    w.u8(id)?;
    w.u8((flags & !0x01) | endian.flag())?;
    w.u16(octets)?;
    f(&mut w)?;
    debug_assert_eq!(w.pos(), SubmessageHeader::SIZE + body_len);
    w.pad4()?;
    Ok(total)
}

/// Writes a submessage whose encoded size `N` (header included, a multiple
/// of 4) is known at compile time: one room check, then the header and the
/// fields via `f` into an `N`-byte array, where the writer's own checks fold
/// away. Same output and errors as [`write_submessage`] with body length `N - 4`.
#[inline]
pub(crate) fn write_sized<const N: usize>(
    id: u8,
    flags: u8,
    endian: Endianness,
    out: &mut [u8],
    f: impl FnOnce(&mut Writer<'_>) -> Result<()>,
) -> Result<usize> {
    const { assert!(N >= SubmessageHeader::SIZE && N.is_multiple_of(4) && N - 4 <= 0xfffc) };
    let have = out.len();
    let Some(dst) = out.first_chunk_mut::<N>() else {
        return Err(WireError::BufferTooSmall { needed: N, have });
    };
    let mut w = Writer::new(dst, endian);
    w.u8(id)?;
    w.u8((flags & !0x01) | endian.flag())?;
    w.u16((N - SubmessageHeader::SIZE) as u16)?;
    f(&mut w)?;
    debug_assert_eq!(w.pos(), N);
    Ok(N)
}

/// Runs a kind's body parser over `body` (byte order from the E flag, error
/// offsets relative to the message) and reports running out of body bytes
/// as `BadSubmessageLength`: `octetsToNextHeader` was too small.
#[inline]
pub(crate) fn parse_kind<'a, T>(
    header: SubmessageHeader,
    body: &'a [u8],
    offset: usize,
    f: impl FnOnce(u8, &mut Reader<'a>) -> Result<T>,
) -> Result<T> {
    let mut r = Reader::new(body, offset + SubmessageHeader::SIZE, header.endianness());
    f(header.flags, &mut r).map_err(|e| body_error(e, header, offset))
}

#[cold]
#[inline(never)]
fn body_error(e: WireError, header: SubmessageHeader, offset: usize) -> WireError {
    match e {
        WireError::Truncated { .. } => WireError::BadSubmessageLength {
            offset,
            id: header.id,
            length: header.octets_to_next_header,
        },
        e => e,
    }
}

/// A submessage kept as opaque bytes: security submessages (whose bodies are
/// transformed by the crypto plugin) and unknown or vendor-specific ids.
///
/// An empty body encodes as `octetsToNextHeader` 0, which receivers read as
/// "extends to the end of the message": emit it only as the last submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opaque<'a> {
    /// Submessage id.
    pub id: u8,
    /// Flags as received (the E bit is replaced by the byte order on emit).
    pub flags: u8,
    /// Body bytes.
    pub body: &'a [u8],
}

impl Encode for Opaque<'_> {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + pad4(self.body.len())
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        write_submessage(self.id, self.flags, self.body.len(), endian, out, |w| {
            w.put(self.body)
        })
    }
}

/// A parsed submessage. Small fixed-layout kinds are owned `Copy` values;
/// DATA, DATA_FRAG, INFO_REPLY and opaque kinds borrow the message bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submessage<'a> {
    /// DATA.
    Data(Data<'a>),
    /// DATA_FRAG.
    DataFrag(DataFrag<'a>),
    /// HEARTBEAT.
    Heartbeat(Heartbeat),
    /// HEARTBEAT_FRAG.
    HeartbeatFrag(HeartbeatFrag),
    /// ACKNACK.
    AckNack(AckNack),
    /// NACK_FRAG.
    NackFrag(NackFrag),
    /// GAP.
    Gap(Gap),
    /// INFO_TS.
    InfoTs(InfoTs),
    /// INFO_DST.
    InfoDst(InfoDst),
    /// INFO_SRC.
    InfoSrc(InfoSrc),
    /// INFO_REPLY.
    InfoReply(InfoReply<'a>),
    /// INFO_REPLY_IP4.
    InfoReplyIp4(InfoReplyIp4),
    /// PAD.
    Pad(Pad),
    /// SEC_BODY, SEC_PREFIX, SEC_POSTFIX, SRTPS_PREFIX, SRTPS_POSTFIX.
    Security(Opaque<'a>),
    /// Any other id (reserved or vendor-specific); skip unless the vendor is known.
    Unknown(Opaque<'a>),
}

impl<'a> Submessage<'a> {
    /// Parses a submessage body. `body` is exactly the body (after the header,
    /// `octetsToNextHeader` already resolved); `offset` is the position of the
    /// submessage header in the message, used in errors.
    pub fn parse(header: SubmessageHeader, body: &'a [u8], offset: usize) -> Result<Self> {
        let (h, b, o) = (header, body, offset);
        Ok(match header.id {
            id::DATA => Submessage::Data(Data::parse(h, b, o)?),
            id::DATA_FRAG => Submessage::DataFrag(DataFrag::parse(h, b, o)?),
            id::HEARTBEAT => Submessage::Heartbeat(Heartbeat::parse(h, b, o)?),
            id::HEARTBEAT_FRAG => Submessage::HeartbeatFrag(HeartbeatFrag::parse(h, b, o)?),
            id::ACKNACK => Submessage::AckNack(AckNack::parse(h, b, o)?),
            id::NACK_FRAG => Submessage::NackFrag(NackFrag::parse(h, b, o)?),
            id::GAP => Submessage::Gap(Gap::parse(h, b, o)?),
            id::INFO_TS => Submessage::InfoTs(InfoTs::parse(h, b, o)?),
            id::INFO_DST => Submessage::InfoDst(InfoDst::parse(h, b, o)?),
            id::INFO_SRC => Submessage::InfoSrc(InfoSrc::parse(h, b, o)?),
            id::INFO_REPLY => Submessage::InfoReply(parse_kind(h, b, o, |flags, r| {
                InfoReply::parse_body(flags, r)
            })?),
            id::INFO_REPLY_IP4 => Submessage::InfoReplyIp4(parse_kind(h, b, o, |flags, r| {
                InfoReplyIp4::parse_body(flags, r)
            })?),
            id::PAD => Submessage::Pad(Pad {
                length: header.octets_to_next_header,
            }),
            other => {
                let o = Opaque {
                    id: other,
                    flags: header.flags,
                    body,
                };
                if id::is_security(other) {
                    Submessage::Security(o)
                } else {
                    Submessage::Unknown(o)
                }
            }
        })
    }

    /// The submessage id this value encodes to.
    #[must_use]
    pub fn id(&self) -> u8 {
        match self {
            Submessage::Data(_) => id::DATA,
            Submessage::DataFrag(_) => id::DATA_FRAG,
            Submessage::Heartbeat(_) => id::HEARTBEAT,
            Submessage::HeartbeatFrag(_) => id::HEARTBEAT_FRAG,
            Submessage::AckNack(_) => id::ACKNACK,
            Submessage::NackFrag(_) => id::NACK_FRAG,
            Submessage::Gap(_) => id::GAP,
            Submessage::InfoTs(_) => id::INFO_TS,
            Submessage::InfoDst(_) => id::INFO_DST,
            Submessage::InfoSrc(_) => id::INFO_SRC,
            Submessage::InfoReply(_) => id::INFO_REPLY,
            Submessage::InfoReplyIp4(_) => id::INFO_REPLY_IP4,
            Submessage::Pad(_) => id::PAD,
            Submessage::Security(o) | Submessage::Unknown(o) => o.id,
        }
    }

    fn as_encode(&self) -> &dyn Encode {
        match self {
            Submessage::Data(s) => s,
            Submessage::DataFrag(s) => s,
            Submessage::Heartbeat(s) => s,
            Submessage::HeartbeatFrag(s) => s,
            Submessage::AckNack(s) => s,
            Submessage::NackFrag(s) => s,
            Submessage::Gap(s) => s,
            Submessage::InfoTs(s) => s,
            Submessage::InfoDst(s) => s,
            Submessage::InfoSrc(s) => s,
            Submessage::InfoReply(s) => s,
            Submessage::InfoReplyIp4(s) => s,
            Submessage::Pad(s) => s,
            Submessage::Security(s) | Submessage::Unknown(s) => s,
        }
    }
}

impl Encode for Submessage<'_> {
    fn encoded_len(&self) -> usize {
        self.as_encode().encoded_len()
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        self.as_encode().write(endian, out)
    }
}

macro_rules! impl_from {
    ($($variant:ident($ty:ty)),* $(,)?) => {$(
        impl<'a> From<$ty> for Submessage<'a> {
            fn from(s: $ty) -> Self {
                Submessage::$variant(s)
            }
        }
    )*};
}

impl_from!(
    Data(Data<'a>),
    DataFrag(DataFrag<'a>),
    Heartbeat(Heartbeat),
    HeartbeatFrag(HeartbeatFrag),
    AckNack(AckNack),
    NackFrag(NackFrag),
    Gap(Gap),
    InfoTs(InfoTs),
    InfoDst(InfoDst),
    InfoSrc(InfoSrc),
    InfoReply(InfoReply<'a>),
    InfoReplyIp4(InfoReplyIp4),
    Pad(Pad),
);

#[cfg(test)]
pub(crate) mod test_util {
    //! Golden-byte helpers shared by the submessage tests.
    use super::*;

    /// Parses `bytes` as one complete submessage (header included).
    pub(crate) fn parse_one(bytes: &[u8]) -> Result<Submessage<'_>> {
        let mut r = Reader::new(bytes, 0, Endianness::Big);
        let sid = r.u8()?;
        let flags = r.u8()?;
        r.endian = Endianness::from_flags(flags);
        let len = r.u16()?;
        let h = SubmessageHeader {
            id: sid,
            flags,
            octets_to_next_header: len,
        };
        let body = bytes
            .get(4..4 + usize::from(len))
            .ok_or(WireError::Truncated {
                offset: 4,
                needed: len.into(),
                have: bytes.len().saturating_sub(4),
            })?;
        Submessage::parse(h, body, 0)
    }

    /// Asserts `bytes` parses to `expected` and re-emits to `bytes`.
    pub(crate) fn golden(bytes: &[u8], expected: Submessage<'_>) {
        let got = parse_one(bytes).unwrap();
        assert_eq!(got, expected);
        let endian = Endianness::from_flags(bytes[1]);
        let mut out = [0u8; 512];
        let n = expected.write(endian, &mut out).unwrap();
        assert_eq!(n, expected.encoded_len());
        assert_eq!(&out[..n], bytes);
        // too-small buffers are reported, never panic
        assert!(matches!(
            expected.write(endian, &mut out[..n - 1]),
            Err(WireError::BufferTooSmall { .. })
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    #[test]
    fn opaque_security_and_vendor() {
        // SEC_PREFIX, E=1, length 4, body 01 02 03 04
        let b = [0x31, 0x01, 0x04, 0x00, 1, 2, 3, 4];
        golden(
            &b,
            Submessage::Security(Opaque {
                id: 0x31,
                flags: 0x01,
                body: &[1, 2, 3, 4],
            }),
        );
        // vendor 0x81 (Cyclone ADLINK_MSG_LEN), BE, flags 0x80 kept
        let b = [0x81, 0x80, 0x00, 0x04, 0, 0, 0, 28];
        golden(
            &b,
            Submessage::Unknown(Opaque {
                id: 0x81,
                flags: 0x80,
                body: &[0, 0, 0, 28],
            }),
        );
    }

    #[test]
    fn pad_golden() {
        golden(
            &[0x01, 0x00, 0x00, 0x00],
            Submessage::Pad(Pad { length: 0 }),
        );
        golden(
            &[0x01, 0x01, 0x04, 0x00, 0, 0, 0, 0],
            Submessage::Pad(Pad { length: 4 }),
        );
    }
}
