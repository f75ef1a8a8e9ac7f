//! The 20-byte RTPS message header (DDSI-RTPS 2.5 §8.3.3, §9.4.4).

use crate::codec::{check_room, Endianness, Reader, Writer};
use crate::error::{Result, WireError};
use crate::types::{GuidPrefix, ProtocolVersion, VendorId, WireType};

/// The RTPS message header: `"RTPS" | version | vendorId | guidPrefix`.
///
/// Parsing also accepts the magic `RTPX` (as Wireshark does) and any 2.x minor
/// version; emitting always writes `RTPS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// Protocol version of the sender.
    pub version: ProtocolVersion,
    /// Vendor of the sender.
    pub vendor_id: VendorId,
    /// GUID prefix of the sending participant.
    pub guid_prefix: GuidPrefix,
}

impl Header {
    /// Encoded size in bytes.
    pub const SIZE: usize = 20;

    /// A header with FerroDDS's version and vendor id.
    #[must_use]
    pub const fn new(guid_prefix: GuidPrefix) -> Self {
        Self {
            version: ProtocolVersion::CURRENT,
            vendor_id: VendorId::FERRODDS,
            guid_prefix,
        }
    }

    /// Parses the first 20 bytes of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        // A complete header is decoded from a 20-byte block, where none of
        // the reads can fail (the compiler drops their checks); a short
        // input is read field by field to report where it ends. The checks,
        // and so the errors, are the same on both paths.
        match bytes.first_chunk::<{ Self::SIZE }>() {
            Some(block) => Self::read_fields(Reader::new(block, 0, Endianness::Big)),
            None => Self::read_fields(Reader::new(bytes, 0, Endianness::Big)),
        }
    }

    #[inline(always)]
    fn read_fields(mut r: Reader<'_>) -> Result<Self> {
        let magic: [u8; 4] = r.array()?;
        if &magic != b"RTPS" && &magic != b"RTPX" {
            return Err(WireError::BadMagic);
        }
        let version = ProtocolVersion::read(&mut r)?;
        if version.major != 2 {
            return Err(WireError::UnsupportedVersion {
                major: version.major,
                minor: version.minor,
            });
        }
        let vendor_id = VendorId::read(&mut r)?;
        let guid_prefix = GuidPrefix::read(&mut r)?;
        Ok(Self {
            version,
            vendor_id,
            guid_prefix,
        })
    }

    /// Writes the header into `out`; returns 20.
    #[inline]
    pub fn write(&self, out: &mut [u8]) -> Result<usize> {
        check_room(out, Self::SIZE)?;
        // Into a 20-byte block: the field writes need no further checks.
        let have = out.len();
        let block = out
            .first_chunk_mut::<{ Self::SIZE }>()
            .ok_or(WireError::BufferTooSmall {
                needed: Self::SIZE,
                have,
            })?;
        let mut w = Writer::new(block, Endianness::Big);
        w.put(b"RTPS")?;
        self.version.write(&mut w)?;
        self.vendor_id.write(&mut w)?;
        self.guid_prefix.write(&mut w)?;
        Ok(Self::SIZE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // "RTPS" | 2.1 | vendor 01 10 | prefix 01..0c
    const GOLDEN: [u8; 20] = [
        0x52, 0x54, 0x50, 0x53, // RTPS
        0x02, 0x01, // version 2.1
        0x01, 0x10, // Cyclone DDS
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, // prefix
    ];

    #[test]
    fn golden_header() {
        let h = Header::parse(&GOLDEN).unwrap();
        assert_eq!(h.version, ProtocolVersion::V2_1);
        assert_eq!(h.vendor_id, VendorId::CYCLONE_DDS);
        assert_eq!(h.guid_prefix.0[11], 0x0c);
        let mut out = [0u8; 20];
        assert_eq!(h.write(&mut out).unwrap(), 20);
        assert_eq!(out, GOLDEN);
    }

    #[test]
    fn magic_and_version_checks() {
        let mut b = GOLDEN;
        b[3] = b'X';
        assert!(Header::parse(&b).is_ok());
        b[3] = b'Y';
        assert_eq!(Header::parse(&b), Err(WireError::BadMagic));
        let mut b = GOLDEN;
        b[4] = 3;
        b[5] = 0;
        assert_eq!(
            Header::parse(&b),
            Err(WireError::UnsupportedVersion { major: 3, minor: 0 })
        );
        b[4] = 2;
        b[5] = 9;
        assert!(Header::parse(&b).is_ok());
        for cut in 0..20 {
            assert!(matches!(
                Header::parse(&GOLDEN[..cut]),
                Err(WireError::Truncated { .. })
            ));
        }
        let mut small = [0u8; 19];
        assert_eq!(
            Header::new(GuidPrefix::UNKNOWN).write(&mut small),
            Err(WireError::BufferTooSmall {
                needed: 20,
                have: 19
            })
        );
    }
}
