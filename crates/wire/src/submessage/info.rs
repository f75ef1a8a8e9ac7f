//! Interpreter submessages: INFO_TS (§9.4.5.10), INFO_SRC (§9.4.5.11),
//! INFO_DST (§9.4.5.9), INFO_REPLY (§9.4.5.12), INFO_REPLY_IP4 (§9.4.5.14), PAD (§9.4.5.6).

use core::net::Ipv4Addr;

use super::{id, parse_kind, write_sized, write_submessage, Encode, SubmessageHeader};
use crate::codec::{pad4, Endianness, Reader};
use crate::error::Result;
use crate::types::{GuidPrefix, LocatorList, ProtocolVersion, Time, VendorId, WireType};

const INVALIDATE: u8 = 0x02;
const MULTICAST: u8 = 0x02;

/// INFO_TS: source timestamp for the following submessages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InfoTs {
    /// The timestamp; `None` encodes the I (invalidate) flag with no body.
    pub timestamp: Option<Time>,
}

impl InfoTs {
    /// Decodes an INFO_TS body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the INFO_TS id (same checks, same errors), without the enum.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &[u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, Self::parse_body)
    }

    #[inline]
    pub(crate) fn parse_body(flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            timestamp: if flags & INVALIDATE != 0 {
                None
            } else {
                Some(Time::read(r)?)
            },
        })
    }
}

impl Encode for InfoTs {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + if self.timestamp.is_some() { 8 } else { 0 }
    }

    #[inline]
    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        match &self.timestamp {
            Some(t) => write_sized::<12>(id::INFO_TS, 0, endian, out, |w| t.write(w)),
            None => write_sized::<4>(id::INFO_TS, INVALIDATE, endian, out, |_| Ok(())),
        }
    }
}

/// INFO_DST: destination participant of the following submessages
/// (`GuidPrefix::UNKNOWN` = all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InfoDst {
    /// Destination prefix.
    pub guid_prefix: GuidPrefix,
}

impl InfoDst {
    /// Decodes an INFO_DST body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the INFO_DST id (same checks, same errors), without the enum.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &[u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, Self::parse_body)
    }

    #[inline]
    pub(crate) fn parse_body(_flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            guid_prefix: GuidPrefix::read(r)?,
        })
    }
}

impl Encode for InfoDst {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + 12
    }

    #[inline]
    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        write_sized::<16>(id::INFO_DST, 0, endian, out, |w| self.guid_prefix.write(w))
    }
}

/// INFO_SRC: source participant of the following submessages. The leading
/// `unused` word is ignored on parse and written as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InfoSrc {
    /// Protocol version of the source.
    pub version: ProtocolVersion,
    /// Vendor of the source.
    pub vendor_id: VendorId,
    /// Prefix of the source.
    pub guid_prefix: GuidPrefix,
}

impl InfoSrc {
    /// Decodes an INFO_SRC body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the INFO_SRC id (same checks, same errors), without the enum.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &[u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, Self::parse_body)
    }

    #[inline]
    pub(crate) fn parse_body(_flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        r.u32()?;
        Ok(Self {
            version: ProtocolVersion::read(r)?,
            vendor_id: VendorId::read(r)?,
            guid_prefix: GuidPrefix::read(r)?,
        })
    }
}

impl Encode for InfoSrc {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + 20
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        write_sized::<24>(id::INFO_SRC, 0, endian, out, |w| {
            w.u32(0)?;
            self.version.write(w)?;
            self.vendor_id.write(w)?;
            self.guid_prefix.write(w)
        })
    }
}

/// INFO_REPLY: where replies to the following submessages should go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InfoReply<'a> {
    /// Unicast reply locators.
    pub unicast_locators: LocatorList<'a>,
    /// Multicast reply locators (M flag).
    pub multicast_locators: Option<LocatorList<'a>>,
}

impl<'a> InfoReply<'a> {
    #[inline]
    pub(crate) fn parse_body(flags: u8, r: &mut Reader<'a>) -> Result<Self> {
        let unicast_locators = LocatorList::read(r)?;
        let multicast_locators = if flags & MULTICAST != 0 {
            Some(LocatorList::read(r)?)
        } else {
            None
        };
        Ok(Self {
            unicast_locators,
            multicast_locators,
        })
    }

    fn body_len(&self) -> usize {
        self.unicast_locators.encoded_len() + self.multicast_locators.map_or(0, |m| m.encoded_len())
    }
}

impl Encode for InfoReply<'_> {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + pad4(self.body_len())
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let flags = if self.multicast_locators.is_some() {
            MULTICAST
        } else {
            0
        };
        write_submessage(id::INFO_REPLY, flags, self.body_len(), endian, out, |w| {
            self.unicast_locators.write(w)?;
            if let Some(m) = &self.multicast_locators {
                m.write(w)?;
            }
            Ok(())
        })
    }
}

/// The compact UDPv4 locator of INFO_REPLY_IP4 (`LocatorUDPv4_t`: address as
/// a u32, port as a u32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocatorUdpv4 {
    /// IPv4 address as a host-order integer (e.g. 0x7f000001 for 127.0.0.1).
    pub address: u32,
    /// Port.
    pub port: u32,
}

impl LocatorUdpv4 {
    /// From an address and port.
    #[must_use]
    pub fn new(addr: Ipv4Addr, port: u16) -> Self {
        Self {
            address: u32::from(addr),
            port: u32::from(port),
        }
    }

    /// The IPv4 address.
    #[must_use]
    pub fn ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.address)
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            address: r.u32()?,
            port: r.u32()?,
        })
    }
}

/// INFO_REPLY_IP4: compact INFO_REPLY with one UDPv4 locator (+ multicast).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InfoReplyIp4 {
    /// Unicast reply locator.
    pub unicast_locator: LocatorUdpv4,
    /// Multicast reply locator (M flag).
    pub multicast_locator: Option<LocatorUdpv4>,
}

impl InfoReplyIp4 {
    #[inline]
    pub(crate) fn parse_body(flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        let unicast_locator = LocatorUdpv4::read(r)?;
        let multicast_locator = if flags & MULTICAST != 0 {
            Some(LocatorUdpv4::read(r)?)
        } else {
            None
        };
        Ok(Self {
            unicast_locator,
            multicast_locator,
        })
    }

    fn body_len(&self) -> usize {
        if self.multicast_locator.is_some() {
            16
        } else {
            8
        }
    }
}

impl Encode for InfoReplyIp4 {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + self.body_len()
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let flags = if self.multicast_locator.is_some() {
            MULTICAST
        } else {
            0
        };
        write_submessage(
            id::INFO_REPLY_IP4,
            flags,
            self.body_len(),
            endian,
            out,
            |w| {
                for l in core::iter::once(&self.unicast_locator).chain(&self.multicast_locator) {
                    w.u32(l.address)?;
                    w.u32(l.port)?;
                }
                Ok(())
            },
        )
    }
}

/// PAD: filler of `length` bytes (written as zeros; contents ignored on parse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pad {
    /// Body length (`octetsToNextHeader`).
    pub length: u16,
}

impl Encode for Pad {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + pad4(usize::from(self.length))
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let n = usize::from(self.length);
        write_submessage(id::PAD, 0, n, endian, out, |w| w.zeros(n))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::Submessage;
    use super::*;
    use crate::types::Locator;

    #[test]
    fn info_ts_golden() {
        let t = Time {
            seconds: 0x5f00_0001,
            fraction: 0x8000_0000,
        };
        let s = Submessage::InfoTs(InfoTs { timestamp: Some(t) });
        golden(
            &[
                0x09, 0x00, 0x00, 0x08, // INFO_TS, length 8
                0x5f, 0x00, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00, // seconds, fraction
            ],
            s,
        );
        golden(
            &[
                0x09, 0x01, 0x08, 0x00, // INFO_TS, E, length 8
                0x01, 0x00, 0x00, 0x5f, 0x00, 0x00, 0x00, 0x80, // seconds, fraction
            ],
            s,
        );
        // I flag, zero length (0 does not mean "to end" for INFO_TS)
        golden(
            &[0x09, 0x03, 0x00, 0x00],
            Submessage::InfoTs(InfoTs { timestamp: None }),
        );
        golden(
            &[0x09, 0x02, 0x00, 0x00],
            Submessage::InfoTs(InfoTs { timestamp: None }),
        );
    }

    #[test]
    fn info_dst_and_src_golden() {
        let p = GuidPrefix([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        let dst = Submessage::InfoDst(InfoDst { guid_prefix: p });
        golden(
            &[
                0x0e, 0x01, 0x0c, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
            ],
            dst,
        );
        golden(
            &[
                0x0e, 0x00, 0x00, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
            ],
            dst,
        );
        let src = Submessage::InfoSrc(InfoSrc {
            version: ProtocolVersion::V2_3,
            vendor_id: VendorId::RUSTDDS,
            guid_prefix: p,
        });
        let be = [
            0x0c, 0x00, 0x00, 0x14, // INFO_SRC, length 20
            0, 0, 0, 0, // unused
            2, 3, 0x01, 0x12, // version 2.3, vendor RustDDS
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, // prefix
        ];
        golden(&be, src);
        let mut le = be;
        le[1] = 0x01;
        le[2] = 0x14;
        le[3] = 0x00;
        golden(&le, src);
    }

    #[test]
    fn info_reply_golden() {
        let uc = [Locator::udpv4(Ipv4Addr::new(127, 0, 0, 1), 7411)];
        let mc = [Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7401)];
        let s = Submessage::InfoReply(InfoReply {
            unicast_locators: LocatorList::from_slice(&uc),
            multicast_locators: Some(LocatorList::from_slice(&mc)),
        });
        let le = [
            0x0f, 0x03, 0x38, 0x00, // INFO_REPLY, E|M, length 56
            0x01, 0x00, 0x00, 0x00, // 1 unicast locator
            0x01, 0x00, 0x00, 0x00, 0xf3, 0x1c, 0x00, 0x00, // UDPv4, port 7411
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1, // address
            0x01, 0x00, 0x00, 0x00, // 1 multicast locator
            0x01, 0x00, 0x00, 0x00, 0xe9, 0x1c, 0x00, 0x00, // UDPv4, port 7401
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 239, 255, 0, 1, // address
        ];
        golden(&le, s);
        let Submessage::InfoReply(p) = parse_one(&le).unwrap() else {
            panic!()
        };
        assert_eq!(p.unicast_locators.iter().next(), Some(uc[0]));
        let be = [
            0x0f, 0x00, 0x00, 0x1c, // INFO_REPLY, length 28
            0x00, 0x00, 0x00, 0x01, // 1 unicast locator
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x1c, 0xf3, // UDPv4, port 7411
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1, // address
        ];
        golden(
            &be,
            Submessage::InfoReply(InfoReply {
                unicast_locators: LocatorList::from_slice(&uc),
                multicast_locators: None,
            }),
        );
        // a locator count larger than the body is rejected without allocating
        let mut bad = be;
        bad[4] = 0x7f;
        assert!(matches!(
            parse_one(&bad),
            Err(crate::WireError::BadSubmessageLength { .. })
        ));
    }

    #[test]
    fn info_reply_ip4_golden() {
        let s = Submessage::InfoReplyIp4(InfoReplyIp4 {
            unicast_locator: LocatorUdpv4::new(Ipv4Addr::new(10, 0, 0, 2), 7411),
            multicast_locator: Some(LocatorUdpv4::new(Ipv4Addr::new(239, 255, 0, 1), 7401)),
        });
        golden(
            &[
                0x0d, 0x02, 0x00, 0x10, // INFO_REPLY_IP4, M, length 16
                10, 0, 0, 2, 0x00, 0x00, 0x1c, 0xf3, // 10.0.0.2:7411
                239, 255, 0, 1, 0x00, 0x00, 0x1c, 0xe9, // 239.255.0.1:7401
            ],
            s,
        );
        golden(
            &[
                0x0d, 0x03, 0x10, 0x00, // INFO_REPLY_IP4, E|M, length 16
                2, 0, 0, 10, 0xf3, 0x1c, 0x00, 0x00, // 10.0.0.2:7411
                1, 0, 255, 239, 0xe9, 0x1c, 0x00, 0x00, // 239.255.0.1:7401
            ],
            s,
        );
    }
}
